"""`bloom_dedup`: units hash-partitioned to a fixed number of Bloom shards, then outcomes.

On Ray each Bloom shard runs in one task over all units routed to it (so capacity grows with the
cluster: a task per shard, spread over the nodes); the documents with repeated units are then
rewritten or dropped in parallel. Only the repeated units and per-shard statistics reach the driver.
Without shuffles (`executor: local`) one task runs the same steps over the whole corpus.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curation import io
from curation.bloomdedup import REWRITES, BloomDedup
from curation.corpus import REMOVALS

_OUT = pa.schema([("id", pa.string()), ("index", pa.int32()), ("stats", pa.string())])
_OUTCOME = pa.schema([("id", pa.string()), ("reason", pa.string()), ("detail", pa.string()), ("text", pa.string())])


def _live(batch: pa.Table, stage: BloomDedup, removed: pa.Array) -> pa.Table:
    only = stage.params.only
    if only is not None:
        batch = batch.filter(pc.is_in(batch.column("source"), pa.array(only, pa.string())))
    return batch.filter(pc.invert(pc.is_in(batch.column("id"), removed)))


def _units(batch: pa.Table, stage: BloomDedup, removed: pa.Array) -> pa.Table:
    return stage.units(_live(batch, stage, removed))


def _repeated(units: pa.Table, stage: BloomDedup) -> pa.Table:
    shard = units.column("shard")[0].as_py()
    repeated, stats = stage.repeated(units.drop_columns(["shard"]), shard)
    stats_row = pa.table({"id": [None], "index": pa.array([None], pa.int32()), "stats": [json.dumps(stats)]},
                         schema=_OUT)
    rows = repeated.append_column("stats", pa.nulls(repeated.num_rows, pa.string())).cast(_OUT)
    return pa.concat_tables([rows, stats_row])


def _outcome(batch: pa.Table, stage: BloomDedup, removed: pa.Array, repeated: pa.Table) -> pa.Table:
    batch = _live(batch, stage, removed)
    batch = batch.filter(pc.is_in(batch.column("id"), repeated.column("id")))
    removals, rewrites = stage.outcome(batch, repeated)
    return pa.concat_tables([
        removals.append_column("text", pa.nulls(removals.num_rows, pa.string())).cast(_OUTCOME),
        pa.table({"id": rewrites.column("id"), "reason": pa.nulls(rewrites.num_rows, pa.string()),
                  "detail": pa.nulls(rewrites.num_rows, pa.string()), "text": rewrites.column("text")},
                 schema=_OUTCOME),
    ])


def removals(files: list[str], stage: BloomDedup, earlier: pa.Table) -> tuple[pa.Table, int, pa.Table, dict[str, Any]]:
    """(removals, documents seen, rewrites (id, text), filter statistics summed over shards), on Ray."""
    import ray  # Ray Data's shuffle: imported only where it runs

    removed = earlier.column("id").combine_chunks()
    docs = ray.data.read_parquet(files).select_columns(sorted({"id", "text", "source"}))
    seen = docs.map_batches(_live, batch_format="pyarrow", fn_kwargs={"stage": stage, "removed": removed}).count()
    units = docs.map_batches(_units, batch_format="pyarrow", fn_kwargs={"stage": stage, "removed": removed})
    shards = units.groupby("shard", num_partitions=stage.params.shards).map_groups(
        _repeated, batch_format="pyarrow", fn_kwargs={"stage": stage})
    out = pa.concat_tables([t.cast(_OUT) for t in ray.get(shards.to_arrow_refs())] or [_OUT.empty_table()])

    def outcome(repeated: pa.Table) -> pa.Table:
        tables = docs.map_batches(_outcome, batch_format="pyarrow",
                                  fn_kwargs={"stage": stage, "removed": removed, "repeated": repeated})
        return pa.concat_tables([t.cast(_OUTCOME) for t in ray.get(tables.to_arrow_refs())])

    return _result(out, seen, outcome, stage)


def removals_in_one_task(files: list[str], stage: BloomDedup,
                         earlier: pa.Table) -> tuple[pa.Table, int, pa.Table, dict[str, Any]]:
    """What `removals` returns, computed in this process over the whole corpus."""
    removed = earlier.column("id").combine_chunks()
    docs = pa.concat_tables([pq.read_table(path, columns=sorted({"id", "text", "source"}), filesystem=fs)
                             for fs, path in map(io.resolve, files)])
    units = _units(docs, stage, removed)
    column = units.column("shard")
    out = pa.concat_tables([_OUT.empty_table()] + [_repeated(units.filter(pc.equal(column, shard)), stage).cast(_OUT)
                                                   for shard in pc.unique(column).to_pylist()])
    return _result(out, _live(docs, stage, removed).num_rows,
                   lambda repeated: _outcome(docs, stage, removed, repeated).cast(_OUTCOME), stage)


def _result(out: pa.Table, seen: int, outcome: Callable[[pa.Table], pa.Table],
            stage: BloomDedup) -> tuple[pa.Table, int, pa.Table, dict[str, Any]]:
    """Removals, rewrites and statistics from the shards' output (`out`) and `outcome` of the repeated units."""
    is_stats = pc.is_valid(out.column("stats"))
    shard_stats = [json.loads(s) for s in out.filter(is_stats).column("stats").to_pylist()]
    repeated = out.filter(pc.invert(is_stats)).select(["id", "index"])
    stats = {
        "units": sum(s["added"] + s["seen"] for s in shard_stats),
        "units_repeated": repeated.num_rows,
        "filter_memory_bytes": sum(s["memory_bytes"] for s in shard_stats),
        "error_rate_asked": stage.params.error_rate,
        "false_positive_rate_measured": max((s["measured_false_positive_rate"] for s in shard_stats), default=0.0),
        "shards": len(shard_stats),
    }
    if repeated.num_rows == 0:
        return REMOVALS.empty_table(), seen, REWRITES.empty_table(), stats
    table = outcome(repeated)
    dropped = pc.is_valid(table.column("reason"))
    removals_table = table.filter(dropped).select(REMOVALS.names).cast(REMOVALS).sort_by("id")
    rewrites = table.filter(pc.invert(dropped)).select(REWRITES.names).cast(REWRITES).sort_by("id")
    return removals_table, seen, rewrites, stats
