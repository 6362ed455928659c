"""A driver killed mid-run, then run again, or a worker killed mid-shard: no document lost, none doubled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curation.recipe import load_recipe, parse_recipe
from pipelines.run import run
from tests.conftest import ROOT, warc_response
from tests.support.pages import slow_page
from tests.support.stages import CrashOnce

pytestmark = pytest.mark.ray


def make_corpus(folder: Path, shards: int = 6, pages: int = 3) -> Path:
    folder.mkdir()
    for s in range(shards):
        records = b"".join(warc_response(f"https://slow.example/{s}/{p}", slow_page(s * 100 + p)) for p in range(pages))
        (folder / f"part-{s}.warc.gz").write_bytes(records)
    recipe = folder / "recipe.yaml"
    recipe.write_text(f"""
name: killed
ray: {{num_cpus: 2}}
sources: [{{name: web, format: warc, paths: ["{folder}/*.warc.gz"]}}]
stages: [{{extract: {{timeout_s: 30}}}}, {{length: {{min_words: 10}}}}]
""")
    return recipe


def ids_and_rows(job_dir: str) -> tuple[list[str], int]:
    ids = [i for f in sorted(Path(job_dir, "documents").glob("*.parquet"))
           for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()]
    return sorted(ids), len(ids)


def test_sigkill_mid_run_then_rerun_loses_and_doubles_nothing(ray_session, tmp_path):
    recipe_path = make_corpus(tmp_path / "in")
    recipe = load_recipe(recipe_path)
    clean = run(recipe, output=str(tmp_path / "clean"), quiet=True)

    out = tmp_path / "killed"
    job = Path(recipe.job_dir(str(out)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "run", str(recipe_path), "--output", str(out), "--quiet"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    deadline = time.time() + 180
    events = job / "events.jsonl"
    try:
        while time.time() < deadline:
            if events.is_file() and '"shard_done"' in events.read_text():
                break
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the embedded Ray it started
    finally:
        proc.wait(timeout=60)
    done_before = len(list((job / "_shards").glob("*.json")))
    assert 0 < done_before < 6, "the kill should land in the middle of the run"
    assert "job_done" not in events.read_text()

    resumed = run(recipe, output=str(out), quiet=True)
    assert resumed.shards_skipped == done_before
    assert len(resumed.finished) == 6 - done_before
    ids, rows = ids_and_rows(resumed.job_dir)
    assert rows == len(set(ids))  # nothing doubled
    assert ids == ids_and_rows(clean.job_dir)[0]  # nothing lost: the same documents as a clean run
    assert not list(job.rglob("*.tmp"))
    assert resumed.stats["documents"] == clean.stats["documents"]
    lines = [json.loads(x)["event"] for x in events.read_text().splitlines()]
    assert lines.count("job_started") == 2 and lines[-1] == "job_done"


def test_a_worker_killed_mid_shard_is_retried_without_losing_or_doubling(ray_session, tmp_path):
    # 300 records: the shard's first batches reach the driver before the worker dies on record 250.
    rows = [{"text": f"note {i} " + ("CRASH" if i == 250 else "calm"), "url": f"https://n/{i}"} for i in range(300)]
    (tmp_path / "notes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    source = f"{{name: notes, format: jsonl, paths: ['{tmp_path}/notes.jsonl']}}"
    recipe = parse_recipe(f"name: crash\nsources: [{source}]\n")
    flag = tmp_path / "crashed"
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True, stages=[("crash", CrashOnce(flag=str(flag)))])
    assert flag.exists(), "the worker should have died once"
    ids, n = ids_and_rows(result.job_dir)
    assert n == 300 and len(set(ids)) == 300
    assert result.stats["documents"] == {"records_read": 300, "in": 300, "out": 300}
