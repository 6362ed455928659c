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

from curation.apply import run_stage
from curation.readers import read_shard
from curation.recipe import Recipe, Source
from curation.shards import Shard
from curation.stages import STAGES, Stage, StageParams

_STAGE_CACHE: dict[str, Stage] = {}  # per worker process: tasks reuse a stage across batches


def _stage(name: str, kind: str, params: StageParams) -> Stage:
    key = f"{name}:{params.model_dump_json()}"
    if key not in _STAGE_CACHE:
        stage = STAGES[kind].from_params(params)
        stage.setup()
        _STAGE_CACHE[key] = stage
    return _STAGE_CACHE[key]


def read_batches(batch: dict[str, Any], sources: dict[str, Source], batch_rows: int) -> Iterator[pa.Table]:
    for uri, source, shard in zip(batch["uri"], batch["source"], batch["shard"], strict=True):
        spec = sources[str(source)]
        yield from read_shard(spec.reader(), str(uri), source=spec.name, shard=str(shard), batch_rows=batch_rows)


def stage_task(batch: pa.Table, name: str, kind: str, params: StageParams, rejects_sample: float) -> pa.Table:
    return run_stage(_stage(name, kind, params), batch, name=name, rejects_sample=rejects_sample)


class StageActor:
    """A stateful stage in an actor pool: its model is loaded once, in `__init__`."""

    def __init__(self, name: str, kind: str, params: StageParams, rejects_sample: float) -> None:
        self.name, self.rejects_sample = name, rejects_sample
        self.stage = STAGES[kind].from_params(params)
        self.stage.setup()

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_stage(self.stage, batch, name=self.name, rejects_sample=self.rejects_sample)


def build(recipe: Recipe, shards: list[Shard], *, read_batch_rows: int = 32) -> Dataset:
    items = [{"uri": s.uri, "source": s.source, "shard": s.name} for s in shards]
    ds = ray.data.from_items(items, override_num_blocks=max(len(items), 1))
    sources = {s.name: s for s in recipe.sources}
    ds = ds.map_batches(
        read_batches, batch_size=1, batch_format="numpy", fn_kwargs={"sources": sources, "batch_rows": read_batch_rows}
    )
    cpus = ray.available_resources().get("CPU", 1.0)
    for name, kind, params in recipe.stage_specs():
        res = STAGES[kind].resources
        args = {"name": name, "kind": kind, "params": params, "rejects_sample": recipe.rejects.sample}
        if res.stateful:
            ds = ds.map_batches(
                StageActor,
                fn_constructor_kwargs=args,
                # one CPU stays free for the read tasks: a pool that takes every CPU starves them and hangs
                compute=ActorPoolStrategy(min_size=1, max_size=max(1, int((cpus - 1) // res.cpus))),
                num_cpus=res.cpus,
                batch_size=res.batch_rows,
                batch_format="pyarrow",
            )
        else:
            ds = ds.map_batches(
                stage_task, fn_kwargs=args, num_cpus=res.cpus, batch_size=res.batch_rows, batch_format="pyarrow"
            )
    return ds
