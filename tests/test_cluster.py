"""Several Ray nodes: a recipe spread over a head and two workers, and a worker node removed in the
middle of a run, with the output (document ids, packed shard bytes) identical to an undisturbed run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, warc_response
from tests.support.pages import slow_page

pytestmark = pytest.mark.subprocess  # the cluster job runs in a process of its own

SHARDS = 8


@pytest.fixture(scope="module")
def cluster_report(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("cluster")
    for s in range(SHARDS):
        pages = [warc_response(f"https://nodes.example/{s}/{p}", slow_page(s * 10 + p, rows=800)) for p in range(3)]
        pages.append(warc_response(f"https://nodes.example/{s}/copy", slow_page(0, rows=800)))  # duplicates of 0/0
        (folder / f"part-{s}.warc.gz").write_bytes(b"".join(pages))
    recipe = folder / "recipe.yaml"
    recipe.write_text(f"""
name: nodes
sources: [{{name: web, format: warc, paths: ["{folder}/*.warc.gz"]}}]
stages: [{{extract: {{timeout_s: 30}}}}, {{length: {{min_words: 10}}}}, {{exact_dedup: {{}}}}]
tokenizer: {{train: {{vocab_size: 400, hard_vocab_limit: false}}}}
pack: {{seq_len: 512, shard_rows: 32}}
""")
    # A separate process: it starts its own multi-node cluster, which cannot share a process with
    # the test session's Ray.
    out = subprocess.run([sys.executable, "-m", "tests.support.cluster_job", str(recipe), str(folder / "jobs")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_work_spreads_over_the_nodes(cluster_report):
    assert cluster_report["nodes"] == 3
    assert cluster_report["nodes_used_calm"] >= 2
    assert cluster_report["documents_calm"] == SHARDS * 3  # the copies of page 0/0 are removed by exact_dedup


def test_a_worker_node_removed_mid_run_loses_and_doubles_nothing(cluster_report):
    r = cluster_report
    assert r["removed_after_shards"] is not None and 0 < r["removed_after_shards"] < r["shards_total"]
    assert r["alive_nodes_after"] == 2
    assert r["lost"] == 0 and r["doubled"] == 0 and r["extra"] == 0
    assert r["documents_disturbed"] == r["documents_calm"] and r["same_stats"]
    assert r["same_shards"] and r["packed_shards"] > 0
    Path(ROOT / ".pytest_cache").mkdir(exist_ok=True)
    (ROOT / ".pytest_cache" / "cluster_report.json").write_text(json.dumps(r, indent=1))
