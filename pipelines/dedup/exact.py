"""`exact_dedup` on Ray: one shuffle by key.

Each batch of documents becomes (id, key, score) rows (`ExactDedup.keys`), hash-partitioned by key so
that every copy of a key meets in one partition, where `ExactDedup.removals` names the documents to
remove. Partitions follow the key's leading bits (`shard_of`, the rule that routes Bloom units too:
the keys are hashes already).
"""

from __future__ import annotations

import pyarrow as pa
import ray

from curation.dedup.bloom import shard_of
from curation.dedup.corpus_stage import REMOVALS, REWRITES, CorpusResult
from curation.dedup.exact_dedup import ExactDedup
from pipelines.dedup import stage_columns

PARTITIONS_PER_CPU = 4


def _keys(batch: pa.Table, stage: ExactDedup, partitions: int, removed: pa.Array) -> pa.Table:
    keys = stage.keys(stage.sees(batch, removed))
    return keys.append_column("partition", pa.array(shard_of(keys.column("key"), partitions), pa.int32()))


def _removals(rows: pa.Table, stage: ExactDedup) -> pa.Table:
    return stage.removals(rows.drop_columns(["partition"]))


def removals(files: list[str], name: str, stage: ExactDedup, earlier: pa.Table) -> CorpusResult:
    """The duplicates `stage` removes among `files`; `earlier` holds the ids removed by earlier stages."""
    cpus = int(ray.cluster_resources().get("CPU", 1))
    columns = stage_columns(files, stage)
    ds = ray.data.read_parquet(files).select_columns(columns)
    partitions = cpus * PARTITIONS_PER_CPU
    keyed = ds.map_batches(_keys, batch_format="pyarrow", fn_kwargs={
        "stage": stage, "partitions": partitions, "removed": earlier.column("id").combine_chunks()})
    keyed = keyed.materialize()  # small rows (id, key, score); counted and shuffled without a second read
    seen = keyed.count()
    removed = keyed.groupby("partition", num_partitions=partitions).map_groups(
        _removals, batch_format="pyarrow", fn_kwargs={"stage": stage})
    tables = [t for t in ray.get(removed.to_arrow_refs()) if t.num_rows]
    table = pa.concat_tables(tables).cast(REMOVALS) if tables else REMOVALS.empty_table()
    return CorpusResult(table.sort_by("id"), seen, REWRITES.empty_table(), {})
