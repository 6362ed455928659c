"""A recipe as Ray tasks: one task per input shard runs every document stage on its batches.

Fusing the stages into the shard's task keeps a batch in one process from its WARC record to the
driver: no object-store copy between stages, no actor pool holding CPUs that reading needs, and
as many extractions at once as there are CPUs. A stage's `setup` (a model load) runs once per
worker process, which reuses the stage for every later batch and task there, as an actor would.
Each task is a streaming generator: its batches reach the driver (and the job folder) as they are
made. Plain Ray tasks rather than a Ray Data read: Ray Data adds nothing to a plan of independent
shard tasks but its two coordinator actors (~2.6 CPU-s and ~260 MB a job, measured on the
FineWeb recipe). The plan never looks inside a stage: only at its declared resources.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

import pyarrow as pa
import ray

from curation.apply import run_stage
from curation.corpus import CorpusStage
from curation.readers import read_shard
from curation.recipe import CORPUS_STAGES, Recipe, Source
from curation.shards import Shard
from curation.stages import STAGES, Stage

# A task runs ahead of the driver by at most this many batches: what waits in the object store.
BATCHES_AHEAD = 8
QUEUED = 4  # shard tasks submitted beyond twice the cluster's CPUs
_READY: dict[str, Stage] = {}  # per worker process: a stage is set up once and reused by later tasks


def _ready(name: str, stage: Stage) -> Stage:
    key = f"{type(stage).__module__}.{type(stage).__qualname__}:{name}:{stage.params.model_dump_json()}"
    if key not in _READY:
        stage.setup()
        _READY[key] = stage
    return _READY[key]


@ray.remote(num_returns="streaming", _generator_backpressure_num_objects=BATCHES_AHEAD)
def _shard_batches(shard: Shard, source: Source, batch_rows: int, stages: list[tuple[str, Stage]],
                   rejects_sample: float) -> Iterator[pa.Table]:
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


def stream(
    recipe: Recipe, shards: list[Shard], stages: list[tuple[str, Stage]] | None = None, *, read_batch_rows: int = 128
) -> Iterator[pa.Table]:
    """Every shard's batches after the document stages, in the order they are made (shards mixed)."""
    sources = {s.name: s for s in recipe.sources}
    stages = recipe_stages(recipe) if stages is None else stages
    # A task asks for its most demanding stage's CPUs, never more than the cluster has (a task
    # asking more would never start; a cluster with no CPUs yet gets the demand an autoscaler acts on).
    cpus = ray.cluster_resources().get("CPU", 0.0)
    need = max([s.resources.cpus for _, s in stages], default=1.0)
    task = _shard_batches.options(num_cpus=min(cpus, need) if cpus else need)
    stages_ref = ray.put(stages)
    # Largest first: a large shard started last would keep one CPU busy while the others idle.
    todo = iter(sorted(shards, key=lambda shard: -shard.size))
    running: list[ray.ObjectRefGenerator] = []

    def submit() -> None:
        # Twice the cluster's CPUs and a few more: the next tasks wait queued when one ends (and an
        # autoscaler sees demand beyond what it has) while the driver waits on a short list however
        # many shards there are. Asked again as tasks end: the cluster may have grown.
        window = 2 * int(ray.cluster_resources().get("CPU", 0)) + QUEUED
        running.extend(task.remote(shard, sources[shard.source], read_batch_rows, stages_ref, recipe.rejects.sample)
                       for shard in islice(todo, max(0, window - len(running))))

    submit()
    while running:
        ready, _ = ray.wait(running, num_returns=1)
        try:
            ref = next(ready[0])
        except StopIteration:
            running.remove(ready[0])
            submit()
            continue
        yield ray.get(ref)
