"""Corpus stages of a job: `corpus_stages` runs them in order, the runners here spread them over Ray.

Each corpus stage (`curation.dedup.corpus_stage.CorpusStage`) names its runner (`runner`): the
module of this package that computes its `CorpusResult` with Ray Data shuffles, through
`removals(files, name, stage, earlier)`. `exact` is one shuffle by key, `minhash` several (buckets,
verification, connected components, survivors), `bloom` one per filter shard. `runner(name)` imports
the module only where it runs, so a job without shuffles never imports Ray.

Adding a corpus stage: its class in `curation/dedup/` and its recipe name in `curation.stages.registry`; if it
needs shuffles, a runner module here named by its `runner`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, cast

import pyarrow as pa
import pyarrow.parquet as pq

from curation import storage
from curation.dedup.corpus_stage import CorpusResult, CorpusStage


class Runner(Protocol):
    def removals(self, files: list[str], name: str, stage: CorpusStage, earlier: pa.Table) -> CorpusResult:
        """`stage`'s result over the documents of `files` (Parquet) less the ids of `earlier`, on Ray."""
        ...


def runner(name: str) -> Runner:
    """The runner module a corpus stage names."""
    return cast("Runner", importlib.import_module(f"{__name__}.{name}"))


def stage_columns(files: list[str], stage: CorpusStage) -> list[str]:
    """The columns of `files` (Parquet, one schema: a job's documents) that `stage` reads."""
    if not files:
        return stage.readable_columns([])
    fs, path = storage.resolve(files[0])
    return stage.readable_columns(pq.read_schema(path, filesystem=fs).names)


@contextmanager
def sort_shuffle() -> Iterator[None]:
    """Shuffle by Ray Data's sort-based (task) strategy while a corpus stage builds and runs its datasets.

    Measured on 2 CPUs: the default hash shuffle starts fresh aggregator actors for every `groupby`,
    2-8 s each (and ~4 s for a `Dataset.sum`), which a loop of component rounds pays a dozen times;
    the sort-based strategy runs tasks on pooled workers, ~0.1 s per small shuffle. Groups stay whole
    either way (equal keys always fall in one range).
    """
    from ray.data.context import DataContext, ShuffleStrategy  # ~100 MB and 0.6 s: only where a job shuffles

    context = DataContext.get_current()
    before = context.shuffle_strategy
    context.shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    try:
        yield
    finally:
        context.shuffle_strategy = before
