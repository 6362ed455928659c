"""A job's corpus stages, in recipe order over all curated documents, then the final documents.

Runs after the document stages have written every shard to `_work/documents/`. Each stage's
`CorpusResult` (removals, rewrites, documents seen, report) is written to `_work/removed/<stage>.parquet`
(and `_work/rewritten/`) once complete, so a rerun reuses it; later stages see only the survivors of
earlier ones. Finally every shard is rewritten to `documents/` without the removed documents, which go
to `rejects/` with their detail (such as the survivor's id).

Columns a stage gives the kept documents (`CorpusStage.added`, such as `minhash_cluster_size`) are read
off its removals, fresh or stored, and every final shard gets them.

Where a stage runs: on an executor with shuffles (Ray), a large corpus (over `SINGLE_TASK_DOCUMENTS`),
or any corpus for a stage that is `always_shuffled`, goes to the stage's runner (`pipelines.dedup`);
otherwise one task computes the same result with `CorpusStage.result`. A stage `signed_per_file`
(`minhash_dedup`) first gets its signatures a task per file, in parallel; as the first corpus stage,
each shard's are asked for as soon as the shard is written (`EarlySignatures`).
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

from curation import storage
from curation.apply import BYPASSED
from curation.dedup.corpus_stage import REMOVALS, REWRITES, AddedColumns, CorpusResult, CorpusStage
from curation.job import WORK_DOCUMENTS, document_files, finalize_shard, finalized
from pipelines.dedup import runner, sort_shuffle, stage_columns
from pipelines.executors import Executor

# Up to this many documents a stage runs in one task: a shuffle's fixed cost (tasks, object-store
# round trips: 5-26 s for minhash_dedup on 200 documents on 2 CPUs) exceeds the work (0.4 s there).
SINGLE_TASK_DOCUMENTS = 20_000

log = logging.getLogger(__name__)


def _documents(files: list[str]) -> int:
    return sum(pq.read_metadata(path, filesystem=fs).num_rows for fs, path in map(storage.resolve, files))


def _seen(files: list[str], stage: CorpusStage, earlier: pa.Table) -> pa.Table:
    """The documents of `files` that `stage` sees, in file order."""
    columns = stage_columns(files, stage)
    documents = pa.concat_tables([storage.read_parquet(file, columns) for file in files])
    return stage.sees(documents, earlier.column("id"))


def _signatures(file: str, stage: CorpusStage, earlier: pa.Table) -> np.ndarray:
    return stage.signatures(_seen([file], stage, earlier))


def _in_one_task(files: list[str], stage: CorpusStage, earlier: pa.Table,
                 signatures: np.ndarray | None = None) -> CorpusResult:
    """A small corpus's result in one process: the same answer as the shuffles, without their fixed cost."""
    result = stage.result(_seen(files, stage, earlier), signatures)
    return result._replace(removals=result.removals.cast(REMOVALS))


class EarlySignatures:
    """The signatures of each shard's documents, asked for as soon as the shard is written, where the first
    corpus stage is `signed_per_file` (`minhash_dedup`) and runs without shuffles: queued behind the shards
    still to read, they run on the workers the document stages' last shards leave idle, instead of after them."""

    def __init__(self, job_dir: str, stages: list[tuple[str, CorpusStage]], executor: Executor) -> None:
        first = stages[0][1] if stages else None
        self.stage = first if first is not None and first.signed_per_file and not executor.shuffles else None
        self.job_dir, self.executor = job_dir, executor
        self.tasks: dict[str, Any] = {}  # documents file -> the task signing it

    def start(self, shard: str) -> None:
        file = storage.join(self.job_dir, WORK_DOCUMENTS, f"{shard}.parquet")
        if self.stage is not None and storage.exists(file):  # a shard that kept nothing has no file
            self.tasks[file] = self.executor.submit(_signatures, file, self.stage, nothing_removed())


def nothing_removed() -> pa.Table:
    return pa.table({"id": pa.array([], pa.string()), "stage": pa.array([], pa.string()),
                     "reason": pa.array([], pa.string()), "detail": pa.array([], pa.string())})


def _signed(files: list[str], stage: CorpusStage, removed: pa.Table, executor: Executor,
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


def _compute(files: list[str], name: str, stage: CorpusStage, removed: pa.Table, executor: Executor,
             early: dict[str, Any]) -> CorpusResult:
    """One corpus stage's result: by its runner's shuffles, or in one task."""
    if not files:
        return CorpusResult(REMOVALS.empty_table(), 0, REWRITES.empty_table(), {})
    if executor.shuffles and stage.runner and (stage.always_shuffled or _documents(files) > SINGLE_TASK_DOCUMENTS):
        with sort_shuffle():
            return runner(stage.runner).removals(files, name, stage, removed)
    signatures = _signed(files, stage, removed, executor, early) if stage.signed_per_file else None
    return executor.result(executor.submit(_in_one_task, files, stage, removed, signatures))


def _stage_result(job_dir: str, files: list[str], name: str, stage: CorpusStage, removed: pa.Table,
                  executor: Executor, early: dict[str, Any] | None = None) -> CorpusResult:
    """One corpus stage's result: computed once, then read back from `_work/` by every rerun. `early`: signing
    tasks of `EarlySignatures` (first stage only)."""
    out, rewrites_out = (storage.join(job_dir, "_work", folder, f"{name}.parquet")
                         for folder in ("removed", "rewritten"))
    fs, path = storage.resolve(out)
    if storage.exists(out):
        try:
            meta = pq.read_metadata(path, filesystem=fs).metadata
            rewrites = (pq.read_table(storage.resolve(rewrites_out)[1], filesystem=fs)
                        if storage.exists(rewrites_out) else None)
            return CorpusResult(pq.read_table(path, filesystem=fs), int(meta[b"documents_seen"]),
                                rewrites if rewrites is not None else REWRITES.empty_table(),
                                json.loads(meta[b"extra"]))
        except (ValueError, KeyError, TypeError):  # cut or replaced since (ArrowInvalid is a ValueError): again
            fs.delete_file(path)
    table, seen, rewrites, report = _compute(files, name, stage, removed, executor, early or {})
    if rewrites.num_rows:  # written first: the removals file marks the stage as done
        with storage.temp_path(rewrites_out) as tmp:
            pq.write_table(rewrites, tmp, filesystem=fs)
    table = table.replace_schema_metadata({"documents_seen": str(seen), "extra": json.dumps(report)})
    with storage.temp_path(out) as tmp:
        pq.write_table(table, tmp, filesystem=fs)
    return CorpusResult(table, seen, rewrites, report)


def run_corpus_stages(job_dir: str, stages: list[tuple[str, CorpusStage]], shards: list[str], executor: Executor, *,
                      rejects_sample: float, rejects_max_per_reason: int,
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
    added: list[AddedColumns] = []  # columns the stages give the final documents, in stage order
    documents = _documents(files) if any(stage.params.only is not None for _, stage in stages) else 0
    for k, (name, stage) in enumerate(stages):
        started = time.perf_counter()
        signing = early.tasks if early is not None and k == 0 else None
        table, seen, rewritten, report = _stage_result(job_dir, files, name, stage, removed, executor, signing)
        rewrites = pa.concat_tables([rewrites, rewritten])
        if (columns := stage.added(table, removed)) is not None:
            added.append(columns)
        reasons = dict(zip(*np.unique(table.column("reason").to_pylist(), return_counts=True), strict=True))
        # the documents of the sources outside `only` went by it, as they go by a document stage
        bypassed = documents - removed.num_rows - seen if stage.params.only is not None else 0
        counts = {"rewritten": rewritten.num_rows} if stage.may_rewrite else {}
        counters[name] = {"docs_in": seen, "docs_out": seen - table.num_rows,
                          "dropped": {str(k): int(v) for k, v in reasons.items()}, "skipped": {},
                          "counts": {**counts, **({f"{BYPASSED}:only": bypassed} if bypassed else {})},
                          "bytes_in": 0, "bytes_out": 0, "seconds": time.perf_counter() - started, **report}
        if on_done:
            on_done(name, counters[name])
        stage_column = pa.array([name] * table.num_rows, pa.string())
        removed = pa.concat_tables([removed, table.append_column("stage", stage_column).select(removed.column_names)])
    finished = finalized(job_dir, shards)
    pending = [s for s in shards if s not in finished]
    removed, rewrites = executor.share(removed), executor.share(rewrites)
    shared_added = executor.share(added) if added else ()
    written = [executor.result(task) for task in [
        executor.submit(finalize_shard, job_dir, s, removed, rewrites, sample=rejects_sample,
                        max_per_reason=rejects_max_per_reason, added=shared_added)
        for s in pending]]
    if on_done:
        on_done("final documents", {"shards": len(written), "documents": sum(r["documents"] for r in written)})
    return counters


