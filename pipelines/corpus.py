"""Corpus stages: a shuffle by key over all curated documents, then the final documents.

Runs after the document stages have written every shard to `_work/documents/`. Each corpus stage
maps documents to (id, key, score) rows, hash-partitions them by key so that every copy of a key
meets in one partition, and asks the stage which documents to remove. Its removals are written to
`_work/removed/<stage>.parquet` once complete (a rerun reuses them); later stages see only the
survivors of earlier ones. Finally every shard is rewritten to `documents/` without the removed
documents, which go to `rejects/` with the survivor's id as their detail. A small corpus
(`SINGLE_TASK_DOCUMENTS`), or any corpus on an executor without shuffles (`executor: local`), skips
the shuffle: one task computes the same removals (for `minhash_dedup`, from signatures computed a
task per file, in parallel; as the first corpus stage, each shard's are asked for as soon as the
shard is written: `EarlySignatures`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curation import io
from curation.bloomdedup import REWRITES, BloomDedup
from curation.corpus import REMOVALS, CorpusStage, select_documents
from curation.dedup.bloom import shard_of as partition_of
from curation.fuzzy import MinhashDedup
from curation.job import WORK_DOCUMENTS, document_files, finalize_shard
from pipelines import bloom
from pipelines.executor import Executor

PARTITIONS_PER_CPU = 4
# Up to this many documents a stage runs in one task: a shuffle's fixed cost (tasks, object-store
# round trips: 5-26 s for minhash_dedup on 200 documents on 2 CPUs) exceeds the work (0.4 s there).
SINGLE_TASK_DOCUMENTS = 20_000

log = logging.getLogger(__name__)


def _keys(batch: pa.Table, stage: CorpusStage, partitions: int, removed: pa.Array) -> pa.Table:
    keys = stage.keys(select_documents(batch, getattr(stage.params, "only", None), removed))
    return keys.append_column("partition", pa.array(partition_of(keys.column("key"), partitions), pa.int32()))


def _removals(rows: pa.Table, stage: CorpusStage) -> pa.Table:
    return stage.removals(rows.drop_columns(["partition"]))


def removals(files: list[str], name: str, stage: CorpusStage, earlier: pa.Table) -> tuple[pa.Table, int]:
    """(id, reason, detail) of the documents `stage` removes among `files`, and how many it saw."""
    import ray  # the shuffles run on Ray only

    cpus = int(ray.cluster_resources().get("CPU", 1))
    columns = sorted({*stage.columns(), "source"})
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
    return table.sort_by("id"), seen


def _documents(files: list[str]) -> int:
    return sum(pq.read_metadata(path, filesystem=fs).num_rows for fs, path in map(io.resolve, files))


def _seen(files: list[str], stage: CorpusStage, earlier: pa.Table) -> pa.Table:
    """The documents of `files` that `stage` sees, in file order."""
    columns = sorted({*stage.columns(), "source"})
    documents = pa.concat_tables([pq.read_table(path, columns=columns, filesystem=fs)
                                  for fs, path in map(io.resolve, files)])
    return select_documents(documents, getattr(stage.params, "only", None), earlier.column("id"))


def _signatures(file: str, stage: MinhashDedup, earlier: pa.Table) -> np.ndarray:
    return stage.hasher().signatures(_seen([file], stage, earlier).column("text"))


def _removals_in_one_task(files: list[str], stage: CorpusStage, earlier: pa.Table,
                          signatures: np.ndarray | None = None) -> tuple[pa.Table, int]:
    """A small corpus's removals in one process: the same answer as the shuffles, without their fixed cost."""
    documents = _seen(files, stage, earlier)
    removals = stage.reference(documents) if signatures is None else stage.reference(documents, signatures)
    return removals.cast(REMOVALS), documents.num_rows


class EarlySignatures:
    """`minhash_dedup`'s signatures of each shard's documents, asked for as soon as the shard is written, where
    it is the first corpus stage and runs without shuffles: queued behind the shards still to read, they run
    on the workers the document stages' last shards leave idle, instead of after them."""

    def __init__(self, job_dir: str, stages: list[tuple[str, CorpusStage]], executor: Executor) -> None:
        first = stages[0][1] if stages else None
        self.stage = first if isinstance(first, MinhashDedup) and not executor.shuffles else None
        self.job_dir, self.executor = job_dir, executor
        self.tasks: dict[str, Any] = {}  # documents file -> the task signing it

    def start(self, shard: str) -> None:
        file = io.join(self.job_dir, WORK_DOCUMENTS, f"{shard}.parquet")
        if self.stage is not None and io.exists(file):  # a shard that kept nothing has no file
            self.tasks[file] = self.executor.submit(_signatures, file, self.stage, nothing_removed())


def nothing_removed() -> pa.Table:
    return pa.table({"id": pa.array([], pa.string()), "stage": pa.array([], pa.string()),
                     "reason": pa.array([], pa.string()), "detail": pa.array([], pa.string())})


def _signed(files: list[str], stage: MinhashDedup, removed: pa.Table, executor: Executor,
            early: dict[str, Any]) -> np.ndarray:
    """The signatures of `files`' documents, a task per file, taking the early ones that succeeded (a worker
    that died during the document stages took the pool, and the tasks queued on it, with it)."""
    tasks = {file: early.get(file) or executor.submit(_signatures, file, stage, removed) for file in files}
    parts = []
    for file in files:
        try:
            parts.append(executor.result(tasks[file]))
        except (BrokenProcessPool, CancelledError):
            if file not in early:
                raise
            log.warning("signing %s again: its early task was lost with a worker", file)
            parts.append(executor.result(executor.submit(_signatures, file, stage, removed)))
    return np.concatenate(parts)


def _stage_result(job_dir: str, files: list[str], name: str, stage: CorpusStage, removed: pa.Table,
                  executor: Executor, early: dict[str, Any] | None = None) -> tuple[pa.Table, int, pa.Table,
                                                                                    dict[str, Any]]:
    """(removals, documents seen, rewrites, extra counters) of one corpus stage: computed once, then
    read back from `_work/` by every rerun. `early`: signing tasks of `EarlySignatures` (first stage only)."""
    out, rewrites_out = (io.join(job_dir, "_work", folder, f"{name}.parquet") for folder in ("removed", "rewritten"))
    fs, path = io.resolve(out)
    if io.exists(out):
        meta = pq.read_metadata(path, filesystem=fs).metadata
        rewrites = pq.read_table(io.resolve(rewrites_out)[1], filesystem=fs) if io.exists(rewrites_out) else None
        return (pq.read_table(path, filesystem=fs), int(meta[b"documents_seen"]),
                rewrites if rewrites is not None else REWRITES.empty_table(), json.loads(meta[b"extra"]))
    extra: dict[str, Any] = {}
    rewrites = REWRITES.empty_table()
    if not files:
        table, seen = REMOVALS.empty_table(), 0
    elif executor.shuffles and (isinstance(stage, BloomDedup) or _documents(files) > SINGLE_TASK_DOCUMENTS):
        from pipelines import fuzzy  # Ray Data's shuffles: imported only where they run

        with fuzzy.sort_shuffle():
            if isinstance(stage, BloomDedup):
                table, seen, rewrites, bloom_stats = bloom.removals(files, stage, removed)
                extra = {"bloom": bloom_stats}
            elif isinstance(stage, MinhashDedup):  # several shuffles
                table, seen = fuzzy.removals(files, name, stage, removed)
            else:
                table, seen = removals(files, name, stage, removed)
    elif isinstance(stage, BloomDedup):
        table, seen, rewrites, bloom_stats = executor.result(
            executor.submit(bloom.removals_in_one_task, files, stage, removed))
        extra = {"bloom": bloom_stats}
    elif isinstance(stage, MinhashDedup):  # signatures (most of the work) a task per file, then the rest in one
        signatures = _signed(files, stage, removed, executor, early or {})
        table, seen = executor.result(executor.submit(_removals_in_one_task, files, stage, removed, signatures))
    else:
        table, seen = executor.result(executor.submit(_removals_in_one_task, files, stage, removed))
    if rewrites.num_rows:  # written first: the removals file marks the stage as done
        with io.temp_path(rewrites_out) as tmp:
            pq.write_table(rewrites, tmp, filesystem=fs)
    table = table.replace_schema_metadata({"documents_seen": str(seen), "extra": json.dumps(extra)})
    with io.temp_path(out) as tmp:
        pq.write_table(table, tmp, filesystem=fs)
    return table, seen, rewrites, extra


def run_corpus_stages(job_dir: str, stages: list[tuple[str, CorpusStage]], shards: list[str], executor: Executor, *,
                      rejects_sample: float, max_rejects: int,
                      on_done: Callable[[str, dict[str, Any]], None] | None = None,
                      early: EarlySignatures | None = None) -> dict[str, dict[str, Any]]:
    """Run every corpus stage, then write the final documents; return the stages' counters.

    `on_done(step, counters)` hears of each finished stage and of the final documents (progress).
    """
    recorded = document_files(job_dir, WORK_DOCUMENTS)  # some shards keep nothing: no file
    shards = [s for s in shards if s in recorded]
    files = [recorded[s] for s in shards]
    removed = nothing_removed()
    counters: dict[str, dict[str, Any]] = {}
    rewrites = REWRITES.empty_table()
    for k, (name, stage) in enumerate(stages):
        started = time.perf_counter()
        signing = early.tasks if early is not None and k == 0 else None
        table, seen, rewritten, extra = _stage_result(job_dir, files, name, stage, removed, executor, signing)
        rewrites = pa.concat_tables([rewrites, rewritten])
        reasons = dict(zip(*np.unique(table.column("reason").to_pylist(), return_counts=True), strict=True))
        counters[name] = {"docs_in": seen, "docs_out": seen - table.num_rows,
                          "dropped": {str(k): int(v) for k, v in reasons.items()}, "skipped": {},
                          "counts": {"rewritten": rewritten.num_rows} if isinstance(stage, BloomDedup) else {},
                          "bytes_in": 0, "bytes_out": 0, "seconds": time.perf_counter() - started, **extra}
        if on_done:
            on_done(name, counters[name])
        stage_column = pa.array([name] * table.num_rows, pa.string())
        removed = pa.concat_tables([removed, table.append_column("stage", stage_column).select(removed.column_names)])
    pending = [s for s in shards if not io.exists(io.join(job_dir, "_work", "final", f"{s}.json"))]
    removed, rewrites = executor.share(removed), executor.share(rewrites)
    written = [executor.result(task) for task in [
        executor.submit(finalize_shard, job_dir, s, removed, rewrites, sample=rejects_sample, cap=max_rejects)
        for s in pending]]
    if on_done:
        on_done("final documents", {"shards": len(written), "documents": sum(r["documents"] for r in written)})
    return counters


