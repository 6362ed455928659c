"""`bloom_dedup` on Ray: units hash-partitioned to a fixed number of Bloom shards, then outcomes.

Each Bloom shard runs in one task over all units routed to it (so capacity grows with the cluster: a
task per shard, spread over the nodes); the documents with repeated units are then rewritten or
dropped in parallel. Only the repeated units and per-shard statistics reach the driver.
`BloomDedup.result` runs the same steps in one process.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import ray

from curation.dedup.bloom_dedup import BloomDedup
from curation.dedup.corpus_stage import REMOVALS, REWRITES, CorpusResult
from pipelines.dedup import stage_columns

_OUT = pa.schema([("id", pa.string()), ("index", pa.int32()), ("stats", pa.string())])
_OUTCOME = pa.schema([("id", pa.string()), ("reason", pa.string()), ("detail", pa.string()), ("text", pa.string())])


def _units(batch: pa.Table, stage: BloomDedup, removed: pa.Array) -> pa.Table:
    return stage.units(stage.sees(batch, removed))


def _repeated(units: pa.Table, stage: BloomDedup) -> pa.Table:
    shard = units.column("shard")[0].as_py()
    repeated, stats = stage.repeated(units.drop_columns(["shard"]), shard)
    stats_row = pa.table({"id": [None], "index": pa.array([None], pa.int32()), "stats": [json.dumps(stats)]},
                         schema=_OUT)
    rows = repeated.append_column("stats", pa.nulls(repeated.num_rows, pa.string())).cast(_OUT)
    return pa.concat_tables([rows, stats_row])


def _outcome(batch: pa.Table, stage: BloomDedup, removed: pa.Array, repeated: pa.Table) -> pa.Table:
    batch = stage.sees(batch, removed)
    batch = batch.filter(pc.is_in(batch.column("id"), repeated.column("id")))
    removals, rewrites = stage.outcome(batch, repeated)
    return pa.concat_tables([
        removals.append_column("text", pa.nulls(removals.num_rows, pa.string())).cast(_OUTCOME),
        pa.table({"id": rewrites.column("id"), "reason": pa.nulls(rewrites.num_rows, pa.string()),
                  "detail": pa.nulls(rewrites.num_rows, pa.string()), "text": rewrites.column("text")},
                 schema=_OUTCOME),
    ])


def removals(files: list[str], name: str, stage: BloomDedup, earlier: pa.Table) -> CorpusResult:
    """Removals, rewrites (id, text) and filter statistics summed over shards (`report["bloom"]`)."""
    removed = earlier.column("id").combine_chunks()
    docs = ray.data.read_parquet(files).select_columns(stage_columns(files, stage))
    seen = docs.map_batches(stage.sees, batch_format="pyarrow", fn_kwargs={"removed": removed}).count()
    units = docs.map_batches(_units, batch_format="pyarrow", fn_kwargs={"stage": stage, "removed": removed})
    shards = units.groupby("shard", num_partitions=stage.params.shards).map_groups(
        _repeated, batch_format="pyarrow", fn_kwargs={"stage": stage})
    out = pa.concat_tables([t.cast(_OUT) for t in ray.get(shards.to_arrow_refs())] or [_OUT.empty_table()])
    is_stats = pc.is_valid(out.column("stats"))
    shard_stats = [json.loads(s) for s in out.filter(is_stats).column("stats").to_pylist()]
    repeated = out.filter(pc.invert(is_stats)).select(["id", "index"])
    report = {"bloom": stage.report(shard_stats, repeated.num_rows)}
    if repeated.num_rows == 0:
        return CorpusResult(REMOVALS.empty_table(), seen, REWRITES.empty_table(), report)
    tables = docs.map_batches(_outcome, batch_format="pyarrow",
                              fn_kwargs={"stage": stage, "removed": removed, "repeated": repeated})
    table = pa.concat_tables([t.cast(_OUTCOME) for t in ray.get(tables.to_arrow_refs())])
    dropped = pc.is_valid(table.column("reason"))
    return CorpusResult(table.filter(dropped).select(REMOVALS.names).cast(REMOVALS).sort_by("id"), seen,
                        table.filter(pc.invert(dropped)).select(REWRITES.names).cast(REWRITES).sort_by("id"), report)
