"""Recipes run end to end through the session's local Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from curation import schema
from curation.readers import WarcReader, read_shard
from curation.recipe import load_recipe, parse_recipe
from curation.shards import list_shards
from curation.stages.build import build_stages
from pipelines import plan
from pipelines.executors import LocalExecutor
from pipelines.run import run
from tests.conftest import ROOT, warc_response
from tests.support.stages import ShardLog

pytestmark = pytest.mark.ray


def documents(job_dir: str) -> list[str]:
    files = sorted(Path(job_dir, "documents").glob("*.parquet"))
    return sorted(i for f in files for i in pq.read_table(f, columns=["id"]).column("id").to_pylist())


def stage(stats: dict, name: str) -> dict:
    return next(s for s in stats["stages"] if s["stage"] == name)


@pytest.fixture(scope="module")
def quickstart(ray_session, tmp_path_factory):
    out = tmp_path_factory.mktemp("jobs")
    recipe = load_recipe(ROOT / "recipes" / "quickstart.yaml")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)  # the recipe's paths are relative to where `curate` runs, as in the README
        result = run(recipe, output=str(out), quiet=True)
    return recipe, out, result


def test_quickstart_funnel_and_job_folder(quickstart):
    recipe, _, result = quickstart
    stats = json.loads(Path(result.job_dir, "stats.json").read_text())
    assert stats == result.stats
    assert stats["documents"] == {"records_read": 31, "in": 13, "out": 10}
    assert stage(stats, "read")["skipped"] == {"request": 11, "warcinfo": 1, "not_html": 1, "http_status": 1,
                                               "revisit": 1}
    assert stage(stats, "read")["dropped"] == {"truncated_record": 1, "bad_json": 1, "no_text_field": 1}
    assert stage(stats, "extract")["docs_in"] == 9 and stage(stats, "extract")["seconds"] > 0
    assert stage(stats, "length") == {**stage(stats, "length"), "docs_in": 13, "docs_out": 10,
                                      "dropped": {"too_few_words": 3}}
    job = Path(result.job_dir)
    assert job.name == f"quickstart-{recipe.fingerprint()[:10]}"
    as_run = (job / "recipe.yaml").read_text()
    assert "# ray: " in as_run and "# trafilatura: " in as_run and "seed: 42" in as_run
    events = [json.loads(line)["event"] for line in (job / "events.jsonl").read_text().splitlines()]
    assert events[0] == "job_started" and events[-1] == "job_done" and events.count("shard_done") == 3
    rejects = pads.dataset(job / "rejects", format="parquet", partitioning="hive").to_table()
    assert Counter(rejects.column("reason").to_pylist()) == {"too_few_words": 3, "truncated_record": 1,
                                                             "bad_json": 1, "no_text_field": 1}
    docs = pq.read_table(job / "documents")
    assert set(docs.column_names) >= {"id", "source", "url", "title", "text", "meta"}
    assert "Café culture along the old canal" in " ".join(t or "" for t in docs.column("title").to_pylist())
    assert len(documents(result.job_dir)) == 10


def test_rerun_skips_done_shards_and_redoes_a_lost_one(quickstart, monkeypatch):
    recipe, out, first = quickstart
    monkeypatch.chdir(ROOT)
    before = documents(first.job_dir)
    again = run(recipe, output=str(out), quiet=True)
    assert again.shards_skipped == 3 and again.finished == []
    assert documents(again.job_dir) == before
    assert again.stats["stages"] == first.stats["stages"]
    # A shard whose completion record is lost (a crash before it was written) is done again, once.
    lost = next(Path(first.job_dir, "_shards").glob("web-crawl-00001*.json"))
    lost.unlink()
    third = run(recipe, output=str(out), quiet=True)
    assert third.shards_skipped == 2 and third.finished == [lost.stem]
    assert documents(third.job_dir) == before  # same ids, nothing doubled
    assert third.stats["documents"] == first.stats["documents"]


def test_real_warc_files_every_html_response_is_accounted_for(ray_session, testdata, tmp_path):
    text = f"""
name: shared-warc
sources:
  - {{name: web, format: warc, paths: ["{testdata}/warc/**/*.warc*", "{testdata}/warc/**/*.arc*"]}}
stages:
  - extract: {{timeout_s: 5}}
"""
    recipe = parse_recipe(text)
    result = run(recipe, output=str(tmp_path), quiet=True)
    html = 0
    for path in sorted((testdata / "warc").glob("**/*.warc*")):
        for batch in read_shard(WarcReader(), str(path), source="web", shard="x"):
            html += batch.column("html").drop_null().length()
    extract = stage(result.stats, "extract")
    assert extract["docs_in"] == html > 100
    assert extract["docs_out"] + sum(extract["dropped"].values()) == html
    read = stage(result.stats, "read")
    assert read["dropped"]["unreadable_input"] >= 4  # the ARC files and the truncated WARC
    assert read["dropped"]["truncated_record"] == 1  # the clipped record
    assert result.stats["shards"]["done"] == result.stats["shards"]["total"] == 26
    assert len(documents(result.job_dir)) == result.stats["documents"]["out"] == extract["docs_out"] + 1  # + WET


def test_timeout_holds_inside_ray_workers(ray_session, tmp_path):
    heavy = ("<html><body>" + "".join(
        f"<div><p>Paragraph {i} with words.</p><table><tr><td>cell {i}</td></tr></table></div>" for i in range(6000)
    ) + "</body></html>").encode()
    good = b"<html><body><article><p>" + b"An ordinary paragraph of prose. " * 30 + b"</p></article></body></html>"
    path = tmp_path / "in.warc.gz"
    path.write_bytes(warc_response("https://x/heavy", heavy) + warc_response("https://x/good", good))
    recipe = parse_recipe(f"""
name: slow
sources: [{{name: web, format: warc, paths: ["{path}"]}}]
stages: [{{extract: {{timeout_s: 0.1}}}}]
""")
    result = run(recipe, output=str(tmp_path / "out"), quiet=True)
    assert stage(result.stats, "extract")["dropped"] == {"timeout": 1}
    assert result.stats["documents"]["out"] == 1


def test_cli_run_prints_the_funnel(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "run", "recipes/quickstart.yaml", "--output", str(tmp_path), "--quiet"],
        capture_output=True, text=True, cwd=ROOT, timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "quickstart: funnel" in out.stdout
    assert "too_few_words 3" in out.stdout
    assert "10 documents kept of 31 records read from 3 shards" in out.stdout
    assert f"output: {tmp_path}" in out.stdout
    assert schema.END_OF_SHARD not in out.stdout


def test_stateful_stage_is_set_up_once_per_worker_process(ray_session, tmp_path, monkeypatch):
    from tests.support.stages import SetupCounter

    monkeypatch.chdir(ROOT)
    recipe = load_recipe(ROOT / "recipes" / "quickstart.yaml")
    log = tmp_path / "setups.log"
    stages = [*build_stages(recipe), ("counter", SetupCounter(log=str(log)))]
    result = run(recipe, output=str(tmp_path), quiet=True, stages=stages)
    setups = log.read_text().split()
    pids = set(pq.read_table(Path(result.job_dir, "documents")).column("worker_pid").to_pylist())
    assert stage(result.stats, "counter")["docs_in"] == 10
    assert len(setups) == len(set(setups))  # never twice in one worker process
    assert pids <= {int(p) for p in setups}  # every batch went through a process that set it up
    assert len(setups) <= 2  # at most one per CPU of the session's Ray, not one per task (3 shards)
    assert int(setups[0]) != os.getpid()


def test_exact_dedup_across_shards_is_deterministic_and_resumable(ray_session, tmp_path):
    para = "Paragraph {i} of a document that is long enough to pass the length filter without trouble. " * 8
    texts = [para.format(i=i) for i in range(6)]
    shard_a = [{"text": t, "url": f"https://a/{i}"} for i, t in enumerate(texts)]
    shard_b = [{"text": texts[i].upper() if i % 2 else texts[i], "url": f"https://b/{i}"} for i in range(0, 6, 2)]
    shard_b.append({"text": texts[1], "url": "https://b/1"})
    for name, rows in (("a", shard_a), ("b", shard_b)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def dedup_run(paths: str, out: str):
        recipe = parse_recipe(f"""
name: dedup
sources: [{{name: docs, format: jsonl, paths: {paths}}}]
stages: [{{length: {{min_words: 20}}}}, {{exact_dedup: {{}}}}]
""")
        return run(recipe, output=str(tmp_path / out), quiet=True)

    first = dedup_run(f'["{tmp_path}/a.jsonl", "{tmp_path}/b.jsonl"]', "one")
    assert stage(first.stats, "exact_dedup") == {**stage(first.stats, "exact_dedup"), "docs_in": 10, "docs_out": 6,
                                                 "dropped": {"duplicate": 4}}
    assert first.stats["documents"]["out"] == 6 == len(documents(first.job_dir))
    rejects = pq.read_table(Path(first.job_dir, "rejects", "stage=exact_dedup", "reason=duplicate"))
    assert rejects.num_rows == 4 and all(d.startswith("kept ") for d in rejects.column("detail").to_pylist())
    kept = set(documents(first.job_dir))
    assert {d.removeprefix("kept ") for d in rejects.column("detail").to_pylist()} <= kept
    events = [json.loads(line) for line in Path(first.job_dir, "events.jsonl").read_text().splitlines()]
    steps = [(e["step"], e.get("docs_out", e.get("documents"))) for e in events if e["event"] == "corpus_step_done"]
    assert steps == [("exact_dedup", 6), ("final documents", 6)]
    swapped = dedup_run(f'["{tmp_path}/b.jsonl", "{tmp_path}/a.jsonl"]', "two")
    assert documents(swapped.job_dir) == documents(first.job_dir)  # shard order does not matter
    again = dedup_run(f'["{tmp_path}/a.jsonl", "{tmp_path}/b.jsonl"]', "one")
    assert again.shards_skipped == 2 and documents(again.job_dir) == documents(first.job_dir)
    assert again.stats["documents"] == first.stats["documents"]


def test_web_recipe_on_real_warc_files_shows_real_rejects_per_reason(ray_session, testdata, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    recipe = load_recipe(ROOT / "recipes" / "web-en.yaml", check_paths=False)
    warcs = [f"{testdata}/warc/**/*.warc.gz"]
    recipe = recipe.model_copy(update={"sources": [recipe.sources[0].model_copy(update={"paths": warcs})]})
    result = run(recipe, output=str(tmp_path), quiet=True)
    stats = result.stats
    for name in ("html_langid", "extract", "normalize", "langid", "gopher_repetition", "gopher_quality", "c4",
                 "fineweb", "toxicity", "pii", "exact_dedup", "minhash_dedup", "bloom_dedup"):
        assert stage(stats, name)["docs_in"] > 0, name
    # the crawl is mostly not English: most of it is seen before extraction, the rest after
    assert stage(stats, "html_langid")["dropped"]["lang_not_kept"] > 10
    assert stage(stats, "extract")["docs_in"] == stage(stats, "html_langid")["docs_out"]
    rejects = pads.dataset(Path(result.job_dir, "rejects"), format="parquet", partitioning="hive").to_table()
    by_reason = Counter(zip(rejects.column("stage").to_pylist(), rejects.column("reason").to_pylist(), strict=True))
    for name in ("html_langid", "langid"):
        assert by_reason[(name, "lang_not_kept")] == stage(stats, name)["dropped"].get("lang_not_kept", 0)
    examples = rejects.filter(pa.compute.equal(rejects.column("reason"), "lang_not_kept")).to_pylist()
    assert all(e["text"] and e["detail"] and not e["detail"].startswith("en ") for e in examples)
    kept = pq.read_table(Path(result.job_dir, "documents"))
    assert set(kept.column("lang").to_pylist()) == {"en"}
    assert kept.num_rows == stats["documents"]["out"] > 0
    assert set(stage(stats, "pii")["counts"]) == {"email", "ip", "phone", "national_id", "card", "messenger"}


def test_bloom_dedup_removes_repeated_paragraphs_through_ray(ray_session, tmp_path):
    boiler = "Subscribe to our newsletter to get more stories like this one every single week."
    body = "This is article {i} and its body has enough words of its own to be worth keeping around."
    rows = [{"text": f"{body.format(i=i)}\n{boiler}\nClosing words of article {i}, written just for it."}
            for i in range(8)]
    rows.append({"text": f"{body.format(i=0)}\n{boiler}"})  # all of it seen before
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = parse_recipe(f"""
name: bloom
sources: [{{name: docs, format: jsonl, paths: ["{tmp_path}/docs.jsonl"]}}]
stages: [{{exact_dedup: {{}}}}, {{bloom_dedup: {{shards: 4, capacity: 10000}}}}]
""")
    result = run(recipe, output=str(tmp_path / "out"), quiet=True)
    bloom = stage(result.stats, "bloom_dedup")
    assert bloom["dropped"] == {"duplicate_paragraphs": 1} and bloom["counts"] == {"rewritten": 7}
    assert bloom["bloom"]["units_repeated"] == 9 and bloom["bloom"]["false_positive_rate_measured"] < 0.01
    texts = pq.read_table(Path(result.job_dir, "documents")).column("text").to_pylist()
    assert len(texts) == 8 and sum(boiler in t for t in texts) == 1  # kept once: in the first article by id
    again = run(recipe, output=str(tmp_path / "out"), quiet=True)
    assert pq.read_table(Path(again.job_dir, "documents")).column("text").to_pylist() == texts
    assert stage(again.stats, "bloom_dedup")["bloom"] == bloom["bloom"]


def test_paragraph_labels_follow_the_paragraphs_bloom_dedup_removes(tmp_path):
    boiler = "Subscribe to our newsletter to get more stories like this one every single week."
    rows = [{"text": f"This is article {i} and its body has enough words of its own to be worth keeping.\n{boiler}\n"
                     f"Closing words of article {i}, written just for it and for nobody else."} for i in range(4)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = parse_recipe(f"""
name: bloom-paragraphs
executor: local
sources: [{{name: docs, format: jsonl, paths: ["{tmp_path}/docs.jsonl"]}}]
stages: [{{langid: {{per_paragraph: true}}}}, {{bloom_dedup: {{shards: 2, capacity: 1000}}}}]
""")
    result = run(recipe, output=str(tmp_path / "out"), quiet=True)
    assert stage(result.stats, "bloom_dedup")["counts"] == {"rewritten": 3}
    table = pq.read_table(Path(result.job_dir, "documents"))
    for text, spans in zip(table.column("text").to_pylist(), table.column("lang_paragraphs").to_pylist(),
                           strict=True):
        assert [text[s["start"]:s["end"]] for s in spans] == text.split("\n")  # each label on its paragraph
    assert sum(len(spans) for spans in table.column("lang_paragraphs").to_pylist()) == 4 * 3 - 3


def test_a_job_that_keeps_or_drops_nothing_has_its_documents_and_rejects_folders(tmp_path):
    """A job that kept nothing had no `documents/`, and one that dropped nothing no `rejects/`: the README's
    `ds.dataset(".../rejects", partitioning="hive")` raised FileNotFoundError on a folder its summary named."""
    (tmp_path / "docs.jsonl").write_text(json.dumps({"text": "two words"}) + "\n")
    for name, words in (("none-kept", 5), ("none-dropped", 1)):
        recipe = parse_recipe(f"name: {name}\nexecutor: local\nlocal: {{workers: 1}}\n"
                              f"sources: [{{name: s, format: jsonl, paths: ['{tmp_path}/docs.jsonl']}}]\n"
                              f"stages: [{{length: {{min_words: {words}}}}}]\n")
        job = Path(run(recipe, output=str(tmp_path / "out"), quiet=True).job_dir)
        kept = pads.dataset(job / "documents").to_table().num_rows
        dropped = pads.dataset(job / "rejects", partitioning="hive").to_table().num_rows
        assert (kept, dropped) == ((0, 1) if name == "none-kept" else (1, 0))


class Recording(LocalExecutor):
    """In-process, and keeps the order in which shards were handed over to run."""

    def __init__(self) -> None:
        super().__init__(1)
        self.order: list[str] = []

    def stream(self, fn, items, *shared, cpus=1.0):
        items = list(items)
        self.order += [shard.name.split("-")[1] for shard, _ in items]
        return super().stream(fn, items, *shared, cpus=cpus)


def test_the_largest_shards_are_handed_over_first(tmp_path):
    # Listed smallest first: a large shard started last would leave the other CPUs idle while it runs.
    # Both executors start tasks in the order they get them (Ray: a window of tasks, submitted in order).
    for name, n in (("a", 5), ("b", 400), ("c", 800)):
        notes = "".join(json.dumps({"text": f"note {i} of shard {name}"}) + "\n" for i in range(n))
        (tmp_path / f"{name}.jsonl").write_text(notes)
    log = tmp_path / "batches.log"
    recipe = parse_recipe(f"name: order\nsources: [{{name: s, format: jsonl, paths: ['{tmp_path}/*.jsonl']}}]\n")
    executor = Recording()
    batches = list(plan.stream(recipe, list_shards(recipe), [("log", ShardLog(log=str(log)))], executor))
    assert executor.order == ["c.jsonl", "b.jsonl", "a.jsonl"]
    assert sum(b.num_rows for b in batches) == 5 + 400 + 800 + 3  # every row, and each shard's end marker
    assert log.read_text().splitlines()[0].split("-")[1] == "c.jsonl"  # in-process: run in that order
