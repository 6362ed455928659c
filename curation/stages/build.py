"""A recipe's stages built from its keys, and set up once per process where they run.

Every runner builds stages here (the executors' plan, `curation.explore.explain`, classifier training
data read through a recipe) and sets them up through `set_up`: a stage's `setup` (a model load) runs
once per worker process, which reuses the set-up stage for every later batch and task there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, TypeVar

from curation.dedup.corpus_stage import CorpusStage
from curation.stages.base import Configured, Stage, StageParams
from curation.stages.registry import CORPUS_STAGES, DOCUMENT_STAGES


class StageSpecs(Protocol):
    """What building reads of a recipe (`curation.recipe.Recipe`), which this layer below it does not import."""

    def stage_specs(self) -> list[tuple[str, str, StageParams]]: ...


Kind = TypeVar("Kind", bound=Configured)

_SET_UP: dict[str, Stage] = {}  # per process: each stage set up once, reused by later tasks


def build_stages(recipe: StageSpecs) -> list[tuple[str, Stage]]:
    """Document stages as (unique name, stage) in recipe order, not set up: `set_up` does that where they run."""
    return _built(recipe, DOCUMENT_STAGES)


def build_corpus_stages(recipe: StageSpecs) -> list[tuple[str, CorpusStage]]:
    """Corpus stages (deduplication) as (unique name, stage), which run after all document stages."""
    return _built(recipe, CORPUS_STAGES)


def _built(recipe: StageSpecs, kinds: Mapping[str, type[Kind]]) -> list[tuple[str, Kind]]:
    return [(name, kinds[kind].from_params(params)) for name, kind, params in recipe.stage_specs() if kind in kinds]


def set_up(stages: list[tuple[str, Stage]]) -> list[tuple[str, Stage]]:
    """`stages` ready to run: each one set up (`Stage.ready`) the first time this process meets its kind, name
    and params, and that set-up stage given back every later time."""
    ready = []
    for name, stage in stages:
        key = f"{type(stage).__module__}.{type(stage).__qualname__}:{name}:{stage.params.model_dump_json()}"
        if key not in _SET_UP:
            _SET_UP[key] = stage.ready()
        ready.append((name, _SET_UP[key]))
    return ready
