"""A recipe as a Ray Data plan: read shards, then one `map_batches` per stage.

Stateless stages run as tasks; stateful ones (a model to load) as an actor pool whose actors
call `setup` once. The plan never looks inside a stage: only at its declared resources.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import ray
from ray.data import ActorPoolStrategy, Dataset
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from curation.apply import run_stage
from curation.corpus import CorpusStage
from curation.readers import read_shard
from curation.recipe import CORPUS_STAGES, Recipe, Source
from curation.shards import Shard
from curation.stages import STAGES, Stage

_READY: dict[str, Stage] = {}  # per worker process: tasks set a stage up once and reuse it


def _ready(name: str, stage: Stage) -> Stage:
    key = f"{type(stage).__module__}.{type(stage).__qualname__}:{name}:{stage.params.model_dump_json()}"
    if key not in _READY:
        stage.setup()
        _READY[key] = stage
    return _READY[key]


class ShardSource(Datasource):
    """One read task per input shard, streaming its Arrow batches: a shard is never split or merged."""

    def __init__(self, shards: list[Shard], sources: dict[str, Source], batch_rows: int) -> None:
        self.shards, self.sources, self.batch_rows = shards, sources, batch_rows

    def estimate_inmemory_data_size(self) -> int | None:
        return None

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        return [self._task(shard) for shard in self.shards]

    def _task(self, shard: Shard) -> ReadTask:
        spec, batch_rows = self.sources[shard.source], self.batch_rows

        def read() -> Iterator[pa.Table]:
            yield from read_shard(spec.reader(), shard.uri, source=spec.name, shard=shard.name, batch_rows=batch_rows)

        return ReadTask(read, BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None, input_files=(shard.uri,)))


def stage_task(batch: pa.Table, name: str, stage: Stage, rejects_sample: float) -> pa.Table:
    return run_stage(_ready(name, stage), batch, name=name, rejects_sample=rejects_sample)


class StageActor:
    """A stateful stage in an actor pool: its model is loaded once per actor, in `__init__`."""

    def __init__(self, name: str, stage: Stage, rejects_sample: float) -> None:
        self.name, self.stage, self.rejects_sample = name, stage, rejects_sample
        self.stage.setup()

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_stage(self.stage, batch, name=self.name, rejects_sample=self.rejects_sample)


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
    cpus = ray.available_resources().get("CPU", 1.0)
    stages = recipe_stages(recipe) if stages is None else stages
    # Every actor pool keeps at least one actor alive for the whole run; a task that asks for more
    # than the CPUs left beside them would never start (e.g. `ray.num_cpus: 1` with a 0.5-CPU model
    # stage), so tasks ask for at most what is left.
    reserved = sum(stage.resources.cpus for _, stage in stages if stage.resources.stateful)
    task_cpus = max(0.1, min(1.0, cpus - reserved))
    ds = ray.data.read_datasource(ShardSource(shards, sources, read_batch_rows), override_num_blocks=len(shards),
                                  num_cpus=task_cpus)
    for name, stage in stages:
        res = stage.resources
        args = {"name": name, "stage": stage, "rejects_sample": recipe.rejects.sample}
        if res.stateful:
            ds = ds.map_batches(
                StageActor,
                fn_constructor_kwargs=args,
                # one task's CPUs stay free for the read tasks: a pool that takes every CPU starves them
                compute=ActorPoolStrategy(min_size=1, max_size=max(1, int((cpus - task_cpus) // res.cpus))),
                num_cpus=res.cpus,
                batch_size=None,
                batch_format="pyarrow",
            )
        else:
            ds = ds.map_batches(stage_task, fn_kwargs=args, num_cpus=min(res.cpus, task_cpus), batch_size=None,
                                batch_format="pyarrow")
    return ds
