"""A recipe as a Ray Data plan: one read task per input shard runs every document stage on its batches.

Fusing the stages into the read task keeps a batch in one process from its WARC record to the
driver: no object-store copy between stages, no actor pool holding CPUs that reading needs, and
as many extractions at once as there are CPUs. A stage's `setup` (a model load) runs once per
worker process, which reuses the stage for every later batch and task there, as an actor would.
The plan never looks inside a stage: only at its declared resources.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import ray
from ray.data import Dataset
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from curation.apply import run_stage
from curation.corpus import CorpusStage
from curation.readers import read_shard
from curation.recipe import CORPUS_STAGES, Recipe, Source
from curation.shards import Shard
from curation.stages import STAGES, Stage

_READY: dict[str, Stage] = {}  # per worker process: a stage is set up once and reused by later tasks


def _ready(name: str, stage: Stage) -> Stage:
    key = f"{type(stage).__module__}.{type(stage).__qualname__}:{name}:{stage.params.model_dump_json()}"
    if key not in _READY:
        stage.setup()
        _READY[key] = stage
    return _READY[key]


class ShardSource(Datasource):
    """One read task per input shard, streaming its Arrow batches through every document stage."""

    def __init__(self, shards: list[Shard], sources: dict[str, Source], batch_rows: int,
                 stages: list[tuple[str, Stage]], rejects_sample: float) -> None:
        self.shards, self.sources, self.batch_rows = shards, sources, batch_rows
        self.stages, self.rejects_sample = stages, rejects_sample

    def estimate_inmemory_data_size(self) -> int | None:
        return None

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        return [self._task(shard) for shard in self.shards]

    def _task(self, shard: Shard) -> ReadTask:
        spec, batch_rows, stages, sample = self.sources[shard.source], self.batch_rows, self.stages, self.rejects_sample

        def read() -> Iterator[pa.Table]:
            ready = [(name, _ready(name, stage)) for name, stage in stages]
            for batch in read_shard(spec.reader(), shard.uri, source=spec.name, shard=shard.name,
                                    batch_rows=batch_rows):
                for name, stage in ready:
                    batch = run_stage(stage, batch, name=name, rejects_sample=sample)
                yield batch

        return ReadTask(read, BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None, input_files=(shard.uri,)))


def recipe_stages(recipe: Recipe) -> list[tuple[str, Stage]]:
    """Document stages as (unique name, stage) in recipe order; set up where they run, not here."""
    return [(name, STAGES[kind].from_params(params)) for name, kind, params in recipe.stage_specs() if kind in STAGES]


def recipe_corpus_stages(recipe: Recipe) -> list[tuple[str, CorpusStage]]:
    """Corpus stages (deduplication) as (unique name, stage), which run after all document stages."""
    return [(name, CORPUS_STAGES[kind].from_params(params))
            for name, kind, params in recipe.stage_specs() if kind in CORPUS_STAGES]


def build(
    recipe: Recipe, shards: list[Shard], stages: list[tuple[str, Stage]] | None = None, *, read_batch_rows: int = 32
) -> Dataset:
    sources = {s.name: s for s in recipe.sources}
    stages = recipe_stages(recipe) if stages is None else stages
    # A task asks for its most demanding stage's CPUs, never more than the cluster has (a task
    # asking more would never start).
    cpus = ray.cluster_resources().get("CPU", 1.0)
    task_cpus = min(cpus, max([stage.resources.cpus for _, stage in stages], default=1.0))
    source = ShardSource(shards, sources, read_batch_rows, stages, recipe.rejects.sample)
    return ray.data.read_datasource(source, override_num_blocks=len(shards), num_cpus=task_cpus)
