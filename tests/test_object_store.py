"""s3:// inputs and outputs, against a local S3 server (moto) on the loopback interface."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, SAMPLE
from tests.support.s3 import local_s3

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with local_s3() as (fs, env):
        fs.create_dir("corpus")
        fs.create_dir("jobs")
        for path in sorted(SAMPLE.glob("*.gz")):
            with fs.open_output_stream(f"corpus/sample/{path.name}", compression=None) as out:
                out.write(path.read_bytes())
        yield fs, env


def test_recipe_reads_and_writes_object_storage(s3, tmp_path):
    fs, env = s3
    recipe = tmp_path / "s3.yaml"
    recipe.write_text("""
name: on-s3
output: s3://jobs/curated
ray: {num_cpus: 2}
sources:
  - {name: web, format: warc, paths: ["s3://corpus/sample/crawl-*.warc.gz"]}
  - {name: notes, format: jsonl, paths: ["s3://corpus/sample/*.jsonl.gz"]}
stages:
  - extract: {only: [web]}
  - length: {min_words: 50}
""")
    out = subprocess.run([sys.executable, "-m", "pipelines.cli", "run", str(recipe), "--quiet"],
                         cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "10 documents kept of 31 records read from 3 shards" in out.stdout, out.stdout
    jobs = [i.path for i in fs.get_file_info(pafs.FileSelector("jobs/curated")) if i.type == pafs.FileType.Directory]
    assert len(jobs) == 1
    job = jobs[0]
    with fs.open_input_stream(f"{job}/stats.json") as f:
        stats = json.loads(f.read())
    assert stats["documents"]["out"] == 10
    docs = pq.read_table(f"{job}/documents", filesystem=fs)
    assert docs.num_rows == 10
    files = [i.path for i in fs.get_file_info(pafs.FileSelector(job, recursive=True)) if i.type == pafs.FileType.File]
    assert not [f for f in files if f.endswith(".tmp")]
    assert any("/rejects/stage=length/reason=too_few_words/" in f for f in files)
    with fs.open_input_stream(f"{job}/events.jsonl") as f:
        events = [json.loads(line)["event"] for line in f.read().decode().splitlines()]
    assert events[0] == "job_started" and events[-1] == "job_done"


def test_object_store_files_are_keyed_below_their_patterns_root(s3, monkeypatch):
    """As local files are: ids and shard names do not depend on the bucket or prefix the data lies under."""
    from curation.recipe import parse_recipe
    from curation.shards import list_shards

    for name, value in s3[1].items():
        monkeypatch.setenv(name, value)
    recipe = parse_recipe("""
name: keys
sources:
  - {name: web, format: warc, paths: ["s3://corpus/sample/crawl-*.warc.gz"]}
  - {name: notes, format: jsonl, paths: ["s3://corpus/sample/*.jsonl.gz"]}
stages: [extract: {}]
""")
    keys = {(s.source, s.key) for s in list_shards(recipe)}
    assert keys == {("web", p.name) for p in SAMPLE.glob("crawl-*.warc.gz")} | {
        ("notes", p.name) for p in SAMPLE.glob("*.jsonl.gz")}


def test_workers_are_not_forked_from_a_process_holding_an_object_store_client():
    """Forked local workers shared the driver's S3 connection: each read the other's responses, and 6 of 9 runs of
    a two-worker job kept documents whose text was not their record's, ending `done`. A process that opened one
    starts its workers from the forkserver."""
    check = ("from curation import storage\nfrom pipelines.executors.local import _may_fork\n"
             "assert _may_fork()\nstorage.resolve('s3://bucket/notes.jsonl')\nassert not _may_fork()\n"
             "storage.resolve('/tmp')\nassert not _may_fork()\n")
    env = {**os.environ, "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "x",
           "AWS_SECRET_ACCESS_KEY": "y", "AWS_EC2_METADATA_DISABLED": "true"}
    out = subprocess.run([sys.executable, "-c", check], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
