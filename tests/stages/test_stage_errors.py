"""A stage that raises on some rows: those rows become `stage_error` rejects, the others go on."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.dataset as pads

from curation import schema
from curation.apply import STAGE_ERROR, run_stage
from curation.recipe import parse_recipe
from pipelines.run import run
from tests.support.stages import Poisoned


def batch(texts: list[str]) -> pa.Table:
    n = len(texts)
    return pa.table({
        "id": [f"{i:08x}" for i in range(n)], "text": texts, "source": ["s"] * n,
        schema.STAGE: pa.nulls(n, pa.string()), schema.REASON: pa.nulls(n, pa.string()),
        schema.DETAIL: pa.nulls(n, pa.string()),
    })


def test_poisoned_rows_become_rejects_and_the_rest_is_processed():
    texts = [f"doc {i}" for i in range(37)]
    texts[5] = texts[30] = "a POISON pill"
    out = run_stage(Poisoned(), batch(texts))
    reasons = out.column(schema.REASON).to_pylist()
    assert [i for i, r in enumerate(reasons) if r] == [5, 30]
    assert {reasons[5], reasons[30]} == {STAGE_ERROR}
    assert out.column(schema.DETAIL)[5].as_py() == "RuntimeError: cannot handle POISON"
    assert out.column("checked").to_pylist() == [None if i in (5, 30) else True for i in range(37)]
    assert out.num_rows == 37 and sorted(out.column("id").to_pylist()) == sorted(batch(texts).column("id").to_pylist())


def test_an_actor_raising_on_one_record_does_not_stop_the_job(ray_session, tmp_path):
    rows = [{"text": f"an ordinary note number {i} " * 5, "url": f"https://n/{i}"} for i in range(40)]
    rows[17]["text"] = "this record is POISON for the stage"
    (tmp_path / "notes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    source = f"{{name: notes, format: jsonl, paths: ['{tmp_path}/notes.jsonl']}}"
    recipe = parse_recipe(f"name: poison\nsources: [{source}]\n")
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True, stages=[("poisoned", Poisoned())])
    funnel = {s["stage"]: s for s in result.stats["stages"]}
    assert funnel["poisoned"]["dropped"] == {STAGE_ERROR: 1} and funnel["poisoned"]["docs_out"] == 39
    rejects = pads.dataset(f"{result.job_dir}/rejects", partitioning="hive").to_table()
    assert rejects.column("text").to_pylist() == ["this record is POISON for the stage"]
    assert rejects.column("reason").to_pylist() == [STAGE_ERROR]
