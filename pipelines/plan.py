"""A recipe as tasks: one task per input shard runs every document stage on its batches.

Fusing the stages into the shard's task keeps a batch in one process from its WARC record to the
driver: no copy between stages, no pool of stage actors holding CPUs that reading needs, and as
many extractions at once as there are CPUs. A stage's `setup` (a model load) runs once per worker
process, which reuses the stage for every later batch and task there, as an actor would. Each task
is a generator: its batches reach the driver (and the job folder) as they are made. On Ray, plain
tasks rather than a Ray Data read: Ray Data adds nothing to a plan of independent shard tasks but
its two coordinator actors (~2.6 CPU-s and ~260 MB a job, measured on the FineWeb recipe). The plan
never looks inside a stage: only at its declared resources.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from curation.apply import run_stage
from curation.corpus import CorpusStage
from curation.readers import read_shard
from curation.recipe import CORPUS_STAGES, Recipe, Source
from curation.shards import Shard
from curation.stages import STAGES, Stage
from pipelines.executor import Executor

_READY: dict[str, Stage] = {}  # per worker process: a stage is set up once and reused by later tasks


def _ready(name: str, stage: Stage) -> Stage:
    key = f"{type(stage).__module__}.{type(stage).__qualname__}:{name}:{stage.params.model_dump_json()}"
    if key not in _READY:
        stage.setup()
        _READY[key] = stage
    return _READY[key]


def shard_batches(work: tuple[Shard, Source], batch_rows: int, stages: list[tuple[str, Stage]],
                  rejects_sample: float) -> Iterator[pa.Table]:
    """One shard's batches after every document stage (a task of its own)."""
    shard, source = work
    ready = [(name, _ready(name, stage)) for name, stage in stages]
    for batch in read_shard(source.reader(), shard.uri, source=source.name, shard=shard.name, batch_rows=batch_rows):
        for name, stage in ready:
            batch = run_stage(stage, batch, name=name, rejects_sample=rejects_sample)
        # Nothing after the stages keeps raw pages (documents and rejects hold text): not shipped. One
        # chunk per column: each stage's split and concatenation leave ~5, each deserialized apart.
        yield (batch.drop_columns(["html"]) if "html" in batch.column_names else batch).combine_chunks()


def recipe_stages(recipe: Recipe) -> list[tuple[str, Stage]]:
    """Document stages as (unique name, stage) in recipe order; set up where they run, not here."""
    return [(name, STAGES[kind].from_params(params)) for name, kind, params in recipe.stage_specs() if kind in STAGES]


def recipe_corpus_stages(recipe: Recipe) -> list[tuple[str, CorpusStage]]:
    """Corpus stages (deduplication) as (unique name, stage), which run after all document stages."""
    return [(name, CORPUS_STAGES[kind].from_params(params))
            for name, kind, params in recipe.stage_specs() if kind in CORPUS_STAGES]


def stream(recipe: Recipe, shards: list[Shard], stages: list[tuple[str, Stage]], executor: Executor, *,
           read_batch_rows: int = 128) -> Iterator[pa.Table]:
    """Every shard's batches after the document stages, in the order they are made (shards mixed)."""
    need = max([s.resources.cpus for _, s in stages], default=1.0)  # the most demanding stage's CPUs
    # Largest first: a large shard started last would keep one CPU busy while the others idle.
    sources = {s.name: s for s in recipe.sources}
    todo = [(shard, sources[shard.source]) for shard in sorted(shards, key=lambda shard: -shard.size)]
    return executor.stream(shard_batches, todo, read_batch_rows, stages, recipe.rejects.sample, cpus=need)
