"""A worker killed mid-shard: no document lost, none doubled (a driver killed, then run again: test_fault_matrix)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curation.recipe import parse_recipe
from pipelines.run import run
from tests.support.stages import CrashOnce

pytestmark = pytest.mark.ray


def ids_and_rows(job_dir: str) -> tuple[list[str], int]:
    ids = [i for f in sorted(Path(job_dir, "documents").glob("*.parquet"))
           for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()]
    return sorted(ids), len(ids)


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
