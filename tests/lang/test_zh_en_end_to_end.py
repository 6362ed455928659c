"""Chinese and English end to end: `recipes/web-zh-en.yaml`, reduced, from real pages to a few training steps.

The recipe runs as written (its stages, mixture and tokenizer defaults) on the real Chinese pages of the test
data (written as WARC by `recipes/sample/make_pages.py`, as a user would) and the real English pages of
dolma's test WARCs, with a smaller vocabulary and rows, in this process (`executor: local`, one worker); then
the reference decoder trains on the packed shards for a few steps (`run_worker` on a gloo group of one: what
`curate train` runs on each Ray Train worker, without Ray's start-up).
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm
import torch
import yaml

from curation.recipe import parse_recipe
from curation.tokens.tokenizer import held_out_documents
from curation.train.config import parse_train_recipe
from curation.train.loop import METRICS, read_jsonl, run_worker
from pipelines.run import run

from ..conftest import ROOT, SAMPLE

SEQ_LEN, VOCAB, STEPS = 128, 2000, 8
HELD_OUT = 0.3  # of a few dozen documents: some of each language, the tokens per character are measured on them


def make_pages():
    spec = importlib.util.spec_from_file_location("make_pages", SAMPLE / "make_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def job(testdata, tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("zh-en")
    written = make_pages().write(testdata, root / "pages", only_chinese=True)
    assert written["zh.warc.gz"] >= 8
    recipe = yaml.safe_load((ROOT / "recipes" / "web-zh-en.yaml").read_text(encoding="utf-8"))
    recipe["sources"] = [
        {"name": "zh", "format": "warc", "paths": [str(root / "pages" / "zh.warc.gz")]},
        {"name": "en", "format": "warc", "paths": [str(testdata / "warc" / "dolma" / "sample-000*.warc.gz")]},
    ]
    recipe["stages"] = [{"extract": {"timeout_s": 300}} if "extract" in s else s for s in recipe["stages"]]
    recipe |= {"output": str(root / "jobs"), "executor": "local", "local": {"workers": 1}}
    recipe["tokenizer"]["train"] |= {"vocab_size": VOCAB, "held_out": HELD_OUT}
    recipe["pack"] = {"seq_len": SEQ_LEN, "shard_rows": 16, "validation": 0.05}
    result = run(parse_recipe(yaml.safe_dump(recipe, allow_unicode=True)), quiet=True, kind="local")
    job_dir = Path(result.job_dir)
    return job_dir, json.loads((job_dir / "manifest.json").read_text())


def documents(job_dir: Path) -> pa.Table:
    return pa.concat_tables(pq.read_table(f, columns=["id", "source", "lang", "text"])
                            for f in sorted((job_dir / "documents").glob("*.parquet")))


def test_chinese_pages_are_kept_and_judged_as_chinese(job):
    job_dir, _ = job
    docs = documents(job_dir).to_pylist()
    chinese = [d for d in docs if d["source"] == "zh"]
    assert len(chinese) >= 5  # of 9 pages: song lyrics in pinyin, an encyclopedia's tables and a list page go
    assert {d["lang"] for d in chinese} == {"zh"}
    assert all(sum("\u4e00" <= c <= "\u9fff" for c in d["text"]) > 0.5 * len(d["text"].replace(" ", ""))
               for d in chinese)
    assert {d["lang"] for d in docs if d["source"] == "en"} == {"en"}


def test_a_notebook_looks_at_one_language_s_documents_and_rejects(job):
    """`explore` by language: what a Chinese-English team reads first is its Chinese rejects."""
    from curation import explore

    job_dir, _ = job
    kept = explore.documents(job_dir, n=100, lang="zh-CN")  # any spelling of Chinese: zh-CN is zh in Simplified
    assert len(kept) >= 5 and set(kept["lang"]) == {"zh"} and set(kept["lang_script"]) == {"Hans"}
    assert set(explore.documents(job_dir, n=100, lang="en")["lang"]) == {"en"}
    english = explore.rejects(job_dir, lang="en")
    assert len(english) and set(english["lang"]) == {"en"}  # of the stages after langid only
    assert len(english) == sum(explore.rejects(job_dir)["lang"] == "en")
    assert set(explore.samples(job_dir, lang="eng")["id"]) <= set(english["id"])
    with pytest.raises(ValueError, match=r"is no language code.*did you mean zh"):
        explore.documents(job_dir, lang="chinese please")


def test_mixture_gives_chinese_and_english_their_shares(job):
    _, manifest = job
    mixture = manifest["mixture"]
    for source in ("zh", "en"):
        assert mixture[source]["target_share"] == pytest.approx(0.5)
        assert abs(mixture[source]["achieved_share"] - 0.5) < 0.05
    assert mixture["zh"]["achieved_tokens"] > 1000


def test_tokenizer_settings_for_a_cjk_heavy_sample(job):
    job_dir, manifest = job
    trained = manifest["tokenizer_training"]
    assert trained["split_digits"] and trained["byte_fallback"]
    choice = trained["character_coverage_choice"]
    assert choice["rule"].startswith("CJK-heavy sample")
    # the sample has the mixture's shares: half its bytes Chinese (3 a character), a quarter of its letters
    assert 0.2 < choice["cjk_share"] < 0.4
    assert choice["character_coverage"] == trained["character_coverage"]
    # 2,000 pieces: the alphabet at 0.9995 would take most of them, so the coverage is lowered
    assert 0.98 <= trained["character_coverage"] < 0.9995 and "lowered from 0.9995" in choice["rule"]
    sp = spm.SentencePieceProcessor(model_file=str(job_dir / "tokenizer.model"))
    pieces = [sp.id_to_piece(i).lstrip("\u2581") for i in range(sp.get_piece_size())
              if not (sp.is_byte(i) or sp.is_control(i) or sp.is_unknown(i))]
    assert all(len(p) == 1 for p in pieces if any(c.isdigit() for c in p))  # digits split
    assert sp.encode("2024年3月15日", out_type=str).count("2") == 2


def test_fertility_per_language_is_reported_and_measured(job):
    job_dir, manifest = job
    sp = spm.SentencePieceProcessor(model_file=str(job_dir / "tokenizer.model"))
    docs = documents(job_dir).to_pylist()
    unseen = held_out_documents([d["id"] for d in docs], HELD_OUT, manifest["validation_share"])
    fertility = manifest["fertility"]
    assert set(fertility) == {"zh", "en"} and manifest["fertility_measured_on"]["documents"] == "held_out"
    for lang in ("zh", "en"):  # on the documents the tokenizer did not train on
        texts = [d["text"] for d, out in zip(docs, unseen, strict=True) if out and d["lang"] == lang]
        tokens = sum(len(t) for t in sp.encode(texts))
        assert fertility[lang] == {"documents": len(texts), "characters": sum(map(len, texts)), "tokens": tokens,
                                   "tokens_per_char": round(tokens / sum(map(len, texts)), 4)}
    # Chinese: most characters are a word or part of one (a token per 1-2 characters), but held-out text has
    # characters the sample had not (spelt in 3 byte pieces each, ~1.3 tokens a character with 2,000 pieces);
    # English: 3-6 characters a token
    assert 0.4 < fertility["zh"]["tokens_per_char"] < 2.0
    assert 0.12 < fertility["en"]["tokens_per_char"] < 0.6
    stats = json.loads((job_dir / "stats.json").read_text())
    assert stats["tokens"]["fertility"] == fertility


def test_packed_rows_hold_the_chinese_documents_tokens(job):
    job_dir, manifest = job
    sp = spm.SentencePieceProcessor(model_file=str(job_dir / "tokenizer.model"))
    texts = {d["id"]: d["text"] for d in documents(job_dir).to_pylist() if d["source"] == "zh"}
    seen = 0
    for shard in manifest["splits"]["train"]["shards"]:
        with pa.memory_map(str(job_dir / shard["file"])) as source:
            table = pa.ipc.open_stream(source).read_all()
        tokens = table.column("tokens").combine_chunks().flatten().to_numpy().reshape(len(table), SEQ_LEN + 1)
        for r, row in enumerate(table.select(["doc_ids", "doc_offsets", "doc_lengths", "doc_token_offsets"])
                                .to_pylist()):
            for doc, offset, length, doc_offset in zip(*row.values(), strict=True):
                if doc in texts:
                    expected = [*sp.encode(texts[doc]), sp.eos_id()][doc_offset:doc_offset + length]
                    assert tokens[r, offset:offset + length].tolist() == expected
                    seen += 1
    assert seen >= len(texts)


@pytest.fixture
def process_group(tmp_path):
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this test process")
    threads = torch.get_num_threads()
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    yield
    dist.destroy_process_group()
    torch.set_num_threads(threads)


def test_a_short_training_run_on_the_shards(job, process_group, tmp_path):
    job_dir, _ = job
    recipe = parse_train_recipe(json.dumps({
        "job": str(job_dir), "train_dir": str(tmp_path / "train"), "seed": 7, "steps": STEPS, "batch_size": 4,
        "workers": 1, "tensorboard": False, "model": {"d_model": 32, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2,
                                                      "ffn_hidden": 64},
        "optim": {"lr": 1e-2, "warmup_steps": 2, "weight_decay": 0.0}, "spike": {"window": 10, "min_steps": 8},
    }))
    run_worker(recipe, 0, 1, torch.device("cpu"))
    losses = [row["loss"] for row in read_jsonl(tmp_path / "train" / METRICS)]
    assert len(losses) == STEPS and all(math.isfinite(x) for x in losses)
    assert losses[0] == pytest.approx(math.log(VOCAB), rel=0.15)  # starts near uniform over the vocabulary
    assert np.mean(losses[-3:]) < losses[0]
