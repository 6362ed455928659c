"""Tokens per character on the tokenizer's own sample against held-out text, and the vocabulary a sample supports.

Issue 31: the summary's tokens per character were counted on every document, the tokenizer's training sample
included (0.27 for Chinese there, 0.43-0.68 on unseen Chinese text), and 64,000 pieces trained on a small
corpus memorise whole phrases. On real Chinese comments (COLD, `toxicity/cold/train.csv`) and, with `--en`,
Leipzig's English sentences beside them, documents held out by a hash of the id as a job holds them out
(`held_out_documents`), for each vocab_size asked:

* `as asked`: sentencepiece with its soft limit (what `hard_vocab_limit: false` gave before): its pieces, tokens
  per character on the sample it trained on (the old report) and on the held-out documents (the new one), and
  their ratio;
* `sized`: `train_sized` (the rule of `curation.tokens.vocabulary`): the size the sample supports, the same two
  figures, and its held-out tokens per character against `as asked`'s (what lowering the size costs on unseen
  text; 1.0: nothing).

    .venv/bin/python benchmarks/tokenizer_vocab.py [--documents 4000] [--en] [--sizes 8000,16000,32000,64000]
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._data import data_root
from benchmarks._results import LOAD_AT_START, figure, git_commit, write_results
from curation.tokens.config import TrainTokenizer
from curation.tokens.tokenizer import held_out_documents, load_tokenizer, train_sized, train_tokenizer

HELD_OUT = 0.2


def documents(root: Path, n: int, english: bool) -> list[tuple[str, str]]:
    with (root / "toxicity" / "cold" / "train.csv").open(encoding="utf-8") as f:
        docs = [(f"zh-{i}", row["TEXT"]) for i, row in enumerate(csv.DictReader(f)) if i < n]
    if english:
        lines = (root / "langid" / "sentences" / "en.txt").read_text(encoding="utf-8").splitlines()
        docs += [(f"en-{k}", "\n".join(lines[k:k + 3])) for k in range(0, len(lines), 3)]
    return docs


def per_char(sp, texts: list[str]) -> float:
    return sum(map(len, sp.encode(texts))) / max(1, sum(map(len, texts)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=4000, help="COLD comments (Chinese) to use")
    parser.add_argument("--en", action="store_true", help="and Leipzig's 100 English sentences, 3 a document")
    parser.add_argument("--sizes", default="8000,16000,32000,64000", help="vocab_size values asked for")
    args = parser.parse_args()
    root = data_root()
    if not (root / "toxicity" / "cold" / "train.csv").is_file():
        print(f"no test data at {root} (set CURATION_TESTDATA)")
        return 0
    print(f"commit {git_commit()['sha']}, load average {LOAD_AT_START:.2f}")
    docs = documents(root, args.documents, args.en)
    unseen = held_out_documents([d for d, _ in docs], HELD_OUT, 0.0)
    train = [t for (_, t), out in zip(docs, unseen, strict=True) if not out]
    held = [t for (_, t), out in zip(docs, unseen, strict=True) if out]
    lines = [line for t in train for line in t.split("\n") if line.strip()]
    print(f"{len(train):,} documents ({sum(map(len, train)):,} characters) train, {len(held):,} held out")
    print(f"{'asked':>7} | {'as asked: pieces':>16} {'sample':>7} {'held-out':>8} {'ratio':>6} | "
          f"{'sized: pieces':>13} {'sample':>7} {'held-out':>8} {'ratio':>6} | held-out sized/as asked")
    figures = []
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            plain = load_tokenizer(train_tokenizer(lines, Path(tmp) / "plain", size, "bpe", 0,
                                                   character_coverage=0.9995, hard_vocab_limit=False,
                                                   split_digits=True))
            settings = TrainTokenizer(vocab_size=size, model_type="bpe", character_coverage=0.9995,
                                      hard_vocab_limit=False, split_digits=True)
            model, _, sizing = train_sized(lambda: lines, settings, 0)
            (Path(tmp) / "sized.model").write_bytes(model)
            sized = load_tokenizer(Path(tmp) / "sized.model")
        rows = []
        for sp in (plain, sized):
            on_sample, on_held = per_char(sp, train), per_char(sp, held)
            rows.append((sp.get_piece_size(), on_sample, on_held, on_held / on_sample))
        (n0, s0, h0, r0), (n1, s1, h1, r1) = rows
        print(f"{size:>7,} | {n0:>16,} {s0:>7.3f} {h0:>8.3f} {r0:>6.2f} | {n1:>13,} {s1:>7.3f} {h1:>8.3f} {r1:>6.2f} | "
              f"{h1 / h0:.3f}  ({sizing.memorised:,} memorised pieces)")
        figures.append(figure(f"held-out tokens per character, vocab_size {size:,} asked: train_sized", h1,
                              "tokens/char", "sentencepiece as asked", h0,
                              note=f"{n1:,} pieces sized, {n0:,} as asked; {sizing.memorised:,} memorised"))
    write_results("tokenizer_vocab", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
