"""A vocabulary the corpus cannot support, through `curate run` and `curate ablate` on small real corpora in
Chinese and English (the Leipzig sentences of the test data), and tokens per character measured on held-out
documents. Jobs run in this process (`executor: local`), no Ray.

Too small (fewer pieces than the sample's alphabet needs): refused in one line naming
`tokenizer.train.vocab_size` and the least size that works, which does. Too large (more than a few hundred
sentences can fill): refused in one line with `hard_vocab_limit` (the default), else lowered with a warning.
Before, both ended in a sentencepiece traceback, and tokens per character were counted on every document,
the tokenizer's own training sample included.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm
import yaml

from curation.ablate.tokenizer import train_union_tokenizer
from curation.tokens.config import TrainTokenizer
from curation.tokens.tokenizer import held_out_documents
from curation.tokens.vocabulary import MIN_PIECE_USES, VocabularyError, merged_pieces, piece_uses
from pipelines.cli import main
from tests.conftest import ROOT

SENTENCES_PER_DOCUMENT = 3
HELD_OUT, VALIDATION = 0.2, 0.1


@pytest.fixture(scope="module")
def corpus(testdata, tmp_path_factory) -> Path:
    """zh.jsonl and en.jsonl: each language's 100 sentences, three to a document."""
    root = tmp_path_factory.mktemp("vocab-corpus")
    for lang in ("zh", "en"):
        lines = (testdata / "langid" / "sentences" / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
        docs = ["\n".join(lines[k:k + SENTENCES_PER_DOCUMENT]) for k in range(0, len(lines), SENTENCES_PER_DOCUMENT)]
        (root / f"{lang}.jsonl").write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs),
                                            encoding="utf-8")
    return root


def recipe(corpus: Path, folder: Path, langs: tuple[str, ...], tokenizer: dict) -> Path:
    body = {"name": f"vocab-{'-'.join(langs)}", "output": str(folder / "jobs"), "executor": "local",
            "local": {"workers": 1}, "seed": 1,
            "sources": [{"name": lang, "format": "jsonl", "paths": [str(corpus / f"{lang}.jsonl")]} for lang in langs],
            "stages": [{"langid": {"keep": ["zh", "en"]}}],
            "tokenizer": tokenizer, "pack": {"seq_len": 64, "shard_rows": 16, "validation": VALIDATION}}
    path = folder / f"recipe-{len(list(folder.glob('recipe-*')))}.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(body, allow_unicode=True), encoding="utf-8")
    return path


def trained(vocab_size: int, hard_vocab_limit: bool = True) -> dict:
    return {"train": {"vocab_size": vocab_size, "hard_vocab_limit": hard_vocab_limit, "held_out": HELD_OUT}}


def curate(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def job_dir(root: Path) -> Path:
    (found,) = [p for p in (root / "jobs").iterdir() if (p / "manifest.json").is_file()]
    return found


def one_line(err: str, pattern: str) -> re.Match:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    found = re.fullmatch(pattern, lines[0])
    assert found, lines[0]
    return found


def test_a_vocabulary_smaller_than_the_alphabet_is_refused_naming_the_least_size(corpus, tmp_path, capsys):
    code, _, err = curate(capsys, "run", str(recipe(corpus, tmp_path / "small", ("zh",), trained(1000))), "--quiet")
    assert code == 1  # the job ends `failed` (exit 1), its documents kept
    least = one_line(err, r"curate run: tokenizer\.train\.vocab_size: 1,000 is too small for this sample: its "
                          r"alphabet at character_coverage 0\.98 and the special and byte pieces take ([\d,]+) "
                          r"pieces; set it to at least \1")
    least = int(least.group(1).replace(",", ""))
    assert 1000 < least < 2000  # a few hundred Chinese sentences hold over a thousand characters
    # the least size named works, one fewer does not
    code, _, err = curate(capsys, "run", str(recipe(corpus, tmp_path / "less", ("zh",), trained(least - 1))),
                          "--quiet")
    assert code == 1 and f"set it to at least {least:,}" in err
    code, _, _ = curate(capsys, "run", str(recipe(corpus, tmp_path / "least", ("zh",), trained(least))), "--quiet")
    assert code == 0
    manifest = json.loads((job_dir(tmp_path / "least") / "manifest.json").read_text())
    assert manifest["vocab_size"] == least


def test_a_job_whose_stages_keep_nothing_fails_in_one_line_before_training_a_tokenizer(corpus, tmp_path, capsys):
    """Every document dropped: sentencepiece's `[!sentences_.empty()]` ended the run in three tracebacks."""
    path = recipe(corpus, tmp_path / "none", ("zh",), trained(1000))
    body = yaml.safe_load(path.read_text(encoding="utf-8"))
    body["stages"] = [{"langid": {"keep": ["ja"]}}]  # Chinese documents, Japanese kept
    path.write_text(yaml.safe_dump(body, allow_unicode=True), encoding="utf-8")
    code, _, err = curate(capsys, "run", str(path), "--quiet")
    assert code == 1
    one_line(err, r"curate run: tokens: no document is left to tokenize and pack; the job folder's rejects/ holds "
                  r"those dropped, each with its stage and reason")
    (folder,) = (tmp_path / "none" / "jobs").iterdir()
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "job_failed" and "NothingToPack" in events[-1]["error"]


def test_a_validation_split_taking_every_document_fails_in_one_line(tmp_path, capsys):
    """Two documents, both drawn into the validation split: sentencepiece's `[!sentences_.empty()]` in a traceback."""
    data = tmp_path / "tiny.jsonl"
    data.write_text("".join(json.dumps({"text": f"a short note number {i} about nothing"}) + "\n" for i in (1, 7)))
    body = {"name": "tiny", "output": str(tmp_path / "jobs"), "executor": "local", "local": {"workers": 1},
            "sources": [{"name": "s", "format": "jsonl", "paths": [str(data)]}],
            "tokenizer": trained(300), "pack": {"seq_len": 16, "shard_rows": 4, "validation": 0.99}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    code, _, err = curate(capsys, "run", str(path), "--quiet")
    assert code == 1
    one_line(err, r"curate run: tokenizer\.train: no text is left for the tokenizer's sample: the validation "
                  r"split \(pack\.validation\) and the held-out share took every document; lower them, or give more "
                  r"documents")


def test_a_vocabulary_too_large_is_refused_with_the_hard_limit(corpus, tmp_path, capsys):
    code, _, err = curate(capsys, "run", str(recipe(corpus, tmp_path, ("zh", "en"), trained(64000))), "--quiet")
    assert code == 1
    found = one_line(err, r"curate run: tokenizer\.train\.vocab_size: 64,000 is more than this sample supports: "
                          r"sentencepiece can make at most ([\d,]+) pieces of it and ([\d,]+) of \1 pieces are used "
                          rf"fewer than {MIN_PIECE_USES} times in its own tokenization \(memorised phrases; ([\d,]+) "
                          r"pieces leave at most 5% so\); set it to at most \3, raise sample_bytes, or set "
                          r"hard_vocab_limit: false to lower it so")
    possible, memorised, supported = (int(g.replace(",", "")) for g in found.groups())
    assert supported < possible < 64000 and memorised > 0.05 * possible
    # the size named is what the sample supports: asked for, it trains with the hard limit, and warns of nothing
    code, out, err = curate(capsys, "run", str(recipe(corpus, tmp_path, ("zh", "en"), trained(supported))))
    assert code == 0 and "warning: tokenizer" not in out + err
    manifest = json.loads((job_dir(tmp_path) / "manifest.json").read_text())
    assert manifest["vocab_size"] == supported and manifest["tokenizer_training"]["vocabulary"]["warning"] is None


def test_a_vocabulary_too_large_is_lowered_with_a_warning_and_fertility_is_held_out(corpus, tmp_path, capsys):
    code, out, err = curate(capsys, "run", str(recipe(corpus, tmp_path / "run", ("zh", "en"),
                                                      trained(64000, hard_vocab_limit=False))))
    assert code == 0
    job = job_dir(tmp_path / "run")
    manifest = json.loads((job / "manifest.json").read_text())
    sizing = manifest["tokenizer_training"]["vocabulary"]
    lowered = sizing["supported"]
    assert manifest["vocab_size"] == lowered < sizing["possible"] < 64000
    warning = f"tokenizer.train.vocab_size: lowered from 64,000 to {lowered:,}: sentencepiece can make at most"
    assert sizing["warning"].startswith(warning)
    assert f"warning: {warning}" in " ".join((out + err).split())  # said while it ran and in the summary

    sp = spm.SentencePieceProcessor(model_file=str(job / "tokenizer.model"))
    docs = pq.read_table(job / "documents", columns=["id", "lang", "text"]).to_pylist()
    unseen = held_out_documents([d["id"] for d in docs], HELD_OUT, VALIDATION)
    seen_lines = [line for d, out_ in zip(docs, unseen, strict=True) if not out_ for line in d["text"].split("\n")]
    # the lowered vocabulary: few pieces left that its sample uses once or twice
    rare = piece_uses(sp, seen_lines)[merged_pieces(sp)] < MIN_PIECE_USES
    assert rare.sum() < 0.05 * lowered < sizing["memorised"]

    assert manifest["fertility_measured_on"]["documents"] == "held_out"
    fertility = manifest["fertility"]
    assert set(fertility) == {"zh", "en"}
    for lang in ("zh", "en"):
        held = [d["text"] for d, out_ in zip(docs, unseen, strict=True) if out_ and d["lang"] == lang]
        seen = [d["text"] for d, out_ in zip(docs, unseen, strict=True) if not out_ and d["lang"] == lang]
        assert held and seen
        tokens = sum(map(len, sp.encode(held)))
        assert fertility[lang] == {"documents": len(held), "characters": sum(map(len, held)), "tokens": tokens,
                                   "tokens_per_char": round(tokens / sum(map(len, held)), 4)}
        # text it trained on takes fewer tokens a character than text it never saw
        assert sum(map(len, sp.encode(seen))) / sum(map(len, seen)) < fertility[lang]["tokens_per_char"]
    stats = json.loads((job / "stats.json").read_text())["tokens"]
    assert stats["fertility"] == fertility and stats["warnings"] == [sizing["warning"]]
    assert "tokens per character by language, on held-out documents" in " ".join(out.split())

    # the same model given as a file: it trained on none of this corpus' documents, as far as the job knows
    given = recipe(corpus, tmp_path / "given", ("zh", "en"), {"model": str(job / "tokenizer.model")})
    code, _, _ = curate(capsys, "run", str(given), "--quiet")
    manifest = json.loads((job_dir(tmp_path / "given") / "manifest.json").read_text())
    assert code == 0 and manifest["fertility_measured_on"]["documents"] == "all"
    assert sum(f["documents"] for f in manifest["fertility"].values()) == len(docs)
    # given with the share it was trained without (as `curate ablate`'s packing jobs give its tokenizer)
    given = recipe(corpus, tmp_path / "given-held-out", ("zh", "en"),
                   {"model": str(job / "tokenizer.model"), "held_out": HELD_OUT})
    code, _, _ = curate(capsys, "run", str(given), "--quiet")
    again = json.loads((job_dir(tmp_path / "given-held-out") / "manifest.json").read_text())
    assert code == 0 and again["fertility"] == fertility
    assert again["fertility_measured_on"]["held_out_share"] == HELD_OUT


def ablation(folder: Path, corpus: Path, tokenizer: dict) -> Path:
    base = yaml.safe_load(recipe(corpus, folder, ("zh",), trained(2000)).read_text(encoding="utf-8"))
    (folder / "base.yaml").write_text(yaml.safe_dump(base, allow_unicode=True), encoding="utf-8")
    spec = {"name": "vocab", "recipe": str(folder / "base.yaml"), "output": str(folder / "ablations"),
            "jobs": str(folder / "jobs"), "variants": {"no-langid": {"remove": ["langid"]}},
            "tokenizer": tokenizer, "pack": {"seq_len": 64, "shard_rows": 16},
            "training": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 64},
                         "tokens": 1024, "batch_size": 4, "seeds": [0], "eval_every": 4},
            "evaluation": {"sets": [{"name": "held-out", "path": str(ROOT / "recipes" / "eval" / "held-out.jsonl")}]}}
    path = folder / "ablation.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_curate_ablate_refuses_a_vocabulary_too_small_in_one_line(corpus, tmp_path, capsys):
    code, _, err = curate(capsys, "ablate", str(ablation(tmp_path, corpus, trained(1000))), "--quiet")
    assert code == 2
    one_line(err, r"curate ablate: tokenizer\.train\.vocab_size: 1,000 is too small for this sample: .* set it to "
                  r"at least [\d,]+")


def test_the_ablations_union_tokenizer_is_sized_as_a_jobs(corpus, tmp_path):
    path = tmp_path / "docs.parquet"
    texts = [json.loads(line)["text"] for lang in ("zh", "en")
             for line in (corpus / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()]
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts}), path)
    settings = TrainTokenizer(vocab_size=64000, hard_vocab_limit=False, held_out=HELD_OUT)
    model, warning = train_union_tokenizer([str(path)], settings, seed=1)
    pieces = spm.SentencePieceProcessor(model_proto=model).get_piece_size()
    assert warning.startswith(f"tokenizer.train.vocab_size: lowered from 64,000 to {pieces:,}: ")
    with pytest.raises(VocabularyError, match=r"^tokenizer\.train\.vocab_size: 64,000 is more than this sample"):
        train_union_tokenizer([str(path)], settings.model_copy(update={"hard_vocab_limit": True}), seed=1)


def test_a_given_tokenizer_that_cannot_spell_the_corpus_is_warned_about_and_counted(corpus, tmp_path, capsys):
    """An English model without byte fallback turns every Chinese character into `<unk>` (lost from the shards); the
    run said nothing. Now the manifest counts the `<unk>` tokens and the summary warns; a trained tokenizer (byte
    fallback) has none."""
    english = (corpus / "en.jsonl").read_text(encoding="utf-8")
    texts = [json.loads(line)["text"] for line in english.splitlines()]
    (tmp_path / "en.txt").write_text("\n".join(texts), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(tmp_path / "en.txt"), model_prefix=str(tmp_path / "en"), vocab_size=400,
                                   minloglevel=2)
    path = recipe(corpus, tmp_path / "given", ("zh", "en"), {"model": str(tmp_path / "en.model")})
    code, out, _ = curate(capsys, "run", str(path))
    assert code == 0
    unknown = json.loads((job_dir(tmp_path / "given") / "manifest.json").read_text())["unknown_tokens"]
    assert unknown["tokens"] > 100 and 0.03 < unknown["share"] < 1, unknown  # a run of unknown characters is one
    assert f"warning: {unknown['tokens']:,} of the " in out and "are <unk>" in out
    assert "tokens of the train split's documents, before the mixture" in out  # not the packed tokens it says
    path = recipe(corpus, tmp_path / "trained", ("zh", "en"), trained(1500, hard_vocab_limit=False))
    assert curate(capsys, "run", str(path), "--quiet")[0] == 0
    manifest = json.loads((job_dir(tmp_path / "trained") / "manifest.json").read_text())
    assert manifest["unknown_tokens"] == {"tokens": 0, "share": 0.0, "warning": None}
