"""A recipe as tasks: one task per input shard runs every document stage on its batches.

Fusing the stages into the shard's task keeps a batch in one process from its WARC record to the
driver: no copy between stages, no pool of stage actors holding CPUs that reading needs, and as
many extractions at once as there are CPUs. A stage's `setup` (a model load) runs once per worker
process, which reuses the stage for every later batch and task there, as an actor would
(`curation.stages.build.set_up`). Each task is a generator: its batches reach the driver (and the job
folder) as they are made; a shard whose input cannot be read (after the reader's retries) ends with an
`ItemFailed` instead, and the others go on. On Ray, plain tasks rather than a Ray Data read: Ray Data
adds nothing to a plan of independent shard tasks but its two coordinator actors (~2.6 CPU-s and
~260 MB a job, measured on the FineWeb recipe). The plan never looks inside a stage: only at its
declared resources.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from curation.apply import run_shard
from curation.readers.base import InputReadError
from curation.recipe import Recipe, Source
from curation.shards import Shard
from curation.stages import Stage
from curation.stages.build import set_up
from pipelines.allocator import lean_allocator
from pipelines.executors import Executor, ItemFailed


def shard_batches(work: tuple[Shard, Source], batch_rows: int, stages: list[tuple[str, Stage]],
                  rejects_sample: float) -> Iterator[pa.Table | ItemFailed]:
    """One shard's batches after every document stage (a task of its own: `curation.apply.run_shard`), or,
    where its input cannot be read to its end, the batches already made and then `ItemFailed` (the caller
    discards those)."""
    lean_allocator()  # in every worker process, whichever executor started it
    shard, source = work
    ready = set_up(stages)
    try:
        yield from run_shard(shard, source, ready, batch_rows=batch_rows, rejects_sample=rejects_sample)
    except InputReadError as exc:  # the storage's fault, not the content's: the shard fails, not the run
        yield ItemFailed(shard.name, f"{type(exc).__name__}: {exc}")


def stream(recipe: Recipe, shards: list[Shard], stages: list[tuple[str, Stage]], executor: Executor, *,
           read_batch_rows: int = 128) -> Iterator[pa.Table | ItemFailed]:
    """Every shard's batches after the document stages, in the order they are made (shards mixed), and an
    `ItemFailed` for each shard whose input could not be read."""
    need = max([s.resources.cpus for _, s in stages], default=1.0)  # the most demanding stage's CPUs
    # Largest first: a large shard started last would keep one CPU busy while the others idle.
    sources = {s.name: s for s in recipe.sources}
    todo = [(shard, sources[shard.source]) for shard in sorted(shards, key=lambda shard: -shard.size)]
    return executor.stream(shard_batches, todo, read_batch_rows, stages, recipe.rejects.sample, cpus=need)
