"""datatrove's side of `peer_fineweb.py`: runs INSIDE datatrove's own venv (never the project's).

Two modes:

    python _datatrove_fineweb.py train-tokenizer TEXTS.jsonl OUT.json VOCAB
        A byte-level BPE `tokenizer.json` (Hugging Face `tokenizers`) trained on the `text` of every
        line of TEXTS.jsonl, with `<|endoftext|>` as its one special token (datatrove's
        DocumentTokenizer takes a local tokenizer.json).

    python _datatrove_fineweb.py run CONFIG.json
        datatrove's FineWeb example pipeline (examples/fineweb.py of datatrove) on a folder of
        .warc.gz files with LocalPipelineExecutor, `tasks` tasks on `tasks` workers:
          1. WarcReader -> Trafilatura(favour_precision=True) -> LanguageFilter(en) ->
             GopherRepetitionFilter -> GopherQualityFilter -> C4QualityFilter(filter_no_terminal_punct=False)
             -> FineWebQualityFilter -> JsonlWriter; each filter with its exclusion JsonlWriter, as in the example;
          2. MinhashDedupSignature, 3. MinhashDedupBuckets (14 tasks: one per bucket),
          4. MinhashDedupCluster (one task), 5. MinhashDedupFilter -> JsonlWriter -> DocumentTokenizer.
        Writes CONFIG's `result` JSON: wall seconds per executor, datatrove's merged stats per step,
        the URLs kept and, per dropped URL, the step that dropped it and why (the exclusion writers'
        `filter_reason`).

    python _datatrove_fineweb.py alpha OUTPUT RESULT.json
        After a run, untimed: url -> the share of words with a letter, as GopherQualityFilter counts it,
        of every page of the run's OUTPUT folder that reached that filter.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import time
from pathlib import Path


def train_tokenizer(texts: str, out: str, vocab: int) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    def lines():
        with open(texts, encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)["text"]

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(lines(), trainer=trainer)
    tok.save(out)


def _documents(folder: Path):
    """The documents (dicts) of a folder of JSONL.gz files."""
    for path in sorted(folder.rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)


def _urls(folder: Path, texts: dict[str, str] | None = None, reasons: dict[str, str] | None = None) -> list[str]:
    """URLs of the documents in a folder of JSONL.gz files; `texts` gets url -> sha1 of each text, `reasons`
    url -> the `filter_reason` an exclusion writer recorded."""
    urls = []
    for doc in _documents(folder):
        url = doc["metadata"].get("url")
        urls.append(url)
        if texts is not None:
            texts.setdefault(url, hashlib.sha1(doc["text"].encode()).hexdigest())
        if reasons is not None and doc["metadata"].get("filter_reason"):
            reasons.setdefault(url, doc["metadata"]["filter_reason"])
    return urls


def alpha_shares(folders: list[Path]) -> dict[str, float]:
    """url -> GopherQualityFilter's share of words with at least one letter (its `max_non_alpha_words_ratio`
    test, its English word tokenizer) in the text of every document of `folders` (the filter reads the text
    as extracted; later filters' exclusions and the kept documents hold it after C4's line removals)."""
    from datatrove.utils.text import split_into_words

    shares = {}
    for folder in folders:
        for doc in _documents(folder):
            words = split_into_words(doc["text"])  # the filter's default language, English
            if words:
                shares[doc["metadata"].get("url")] = sum(any(c.isalpha() for c in w) for w in words) / len(words)
    return shares


def run(config_path: str) -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.pipeline.writers.jsonl import JsonlWriter
    from datatrove.utils.hashing import HashConfig

    cfg = json.loads(Path(config_path).read_text())
    out, tasks = Path(cfg["output"]), int(cfg["tasks"])
    removed = out / "removed"
    language = LanguageFilter(languages=["en"], language_threshold=cfg["lang_threshold"],
                              exclusion_writer=JsonlWriter(str(removed / "2_langid")))
    # The model is otherwise downloaded (lid.176.bin); an instance attribute travels with the
    # pickled pipeline to forkserver workers, a class attribute would not.
    language.model.MODEL_URL = cfg["lid_model"]
    minhash = MinhashConfig(n_grams=cfg["minhash_ngram"], num_buckets=cfg["minhash_buckets"],
                            hashes_per_bucket=cfg["minhash_rows"], hash_config=HashConfig(precision=64))
    signatures, buckets, remove_ids = (str(out / "minhash" / d) for d in ("signatures", "buckets", "remove_ids"))
    filtered, deduped = str(out / "filtered"), str(out / "deduped")
    logs = out / "logs"

    def executor(name: str, pipeline: list, n_tasks: int) -> LocalPipelineExecutor:
        return LocalPipelineExecutor(pipeline=pipeline, tasks=n_tasks, workers=min(tasks, n_tasks),
                                     logging_dir=str(logs / name), skip_completed=False)

    stages = [
        ("filter", executor("filter", [
            WarcReader(cfg["corpus"], glob_pattern="*.warc.gz"),
            Trafilatura(favour_precision=True, timeout=cfg["timeout_s"]),
            language,
            GopherRepetitionFilter(exclusion_writer=JsonlWriter(str(removed / "3_gopher_rep"))),
            GopherQualityFilter(exclusion_writer=JsonlWriter(str(removed / "4_gopher_qual"))),
            C4QualityFilter(filter_no_terminal_punct=False, exclusion_writer=JsonlWriter(str(removed / "5_c4"))),
            FineWebQualityFilter(exclusion_writer=JsonlWriter(str(removed / "6_fineweb_qual"))),
            JsonlWriter(filtered),
        ], tasks)),
        ("minhash_signature", executor("minhash_signature", [
            JsonlReader(filtered), MinhashDedupSignature(output_folder=signatures, config=minhash)], tasks)),
        ("minhash_buckets", executor("minhash_buckets", [
            MinhashDedupBuckets(input_folder=signatures, output_folder=buckets, config=minhash)],
            minhash.num_buckets)),
        ("minhash_cluster", executor("minhash_cluster", [
            MinhashDedupCluster(input_folder=buckets, output_folder=remove_ids, config=minhash)], 1)),
        ("minhash_filter_tokenize", executor("minhash_filter_tokenize", [
            JsonlReader(filtered),
            MinhashDedupFilter(input_folder=remove_ids, exclusion_writer=JsonlWriter(str(removed / "7_minhash"))),
            JsonlWriter(deduped),
            DocumentTokenizer(output_folder=str(out / "tokens"), tokenizer_name_or_path=cfg["tokenizer"],
                              local_working_dir=str(out / "tokens-work"), eos_token="<|endoftext|>",
                              seed=cfg["seed"]),
        ], tasks)),
    ]
    result: dict = {"tasks": tasks, "executors": [], "window": [time.time(), 0.0]}
    for name, ex in stages:
        started = time.perf_counter()
        stats = ex.run()
        wall = time.perf_counter() - started
        steps = json.loads(stats.to_json()) if stats is not None else []
        result["executors"].append({"name": name, "wall_s": wall, "tasks": ex.world_size, "steps": steps})
        print(f"datatrove {name}: {wall:.1f} s", file=sys.stderr, flush=True)
    result["window"][1] = time.time()
    texts: dict[str, str] = {}  # url -> sha1 of its text where it was kept or dropped (after a filter's edits)
    result["kept_urls"] = _urls(Path(deduped), texts)
    reasons: dict[str, str] = {}
    result["dropped"] = {str(step.name): _urls(step, texts, reasons) for step in sorted(removed.iterdir())
                         if step.is_dir()}
    result["reasons"] = reasons
    result["texts"] = texts
    Path(cfg["result"]).write_text(json.dumps(result))


def alpha(output: str, result: str) -> None:
    """url -> GopherQualityFilter's share of words with a letter of every page that reached it in a run's
    `output` folder (its exclusions from there on, and the documents it passed), as JSON in `result`."""
    out = Path(output)
    judged = [out / "removed" / step for step in ("4_gopher_qual", "5_c4", "6_fineweb_qual")] + [out / "filtered"]
    Path(result).write_text(json.dumps(alpha_shares([folder for folder in judged if folder.is_dir()])))


if __name__ == "__main__":
    if sys.argv[1] == "train-tokenizer":
        train_tokenizer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "run":
        run(sys.argv[2])
    elif sys.argv[1] == "alpha":
        alpha(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown mode {sys.argv[1]!r}: train-tokenizer, run or alpha")
