"""Where a run's tasks execute: Ray (`ray`) or this machine's processes, no Ray (`local`).

A run hands its phases (the document stages of each shard, the corpus stages, tokens and packing)
to an executor (`base.Executor`) as plain functions; only the executor knows how they are spread.
Both give the same output: the functions, their inputs and the job folder are the same.

Adding an executor: a module here with an `Executor` subclass, and its name in `start_executor`,
the one place that chooses between them (the implementations import `base`, never this package).
"""

from __future__ import annotations

from curation.recipe import Recipe
from pipelines.executors.base import Executor, ItemFailed
from pipelines.executors.local import LocalExecutor, local_workers

__all__ = ["Executor", "ItemFailed", "LocalExecutor", "start_executor"]


def start_executor(recipe: Recipe, address: str | None = None, kind: str | None = None) -> Executor:
    """The recipe's executor (`kind` overrides it); `address` is Ray's, as `curate run --address`."""
    if (kind or recipe.executor) == "local":
        executor: Executor = LocalExecutor(local_workers(recipe))
    else:
        from pipelines.executors.ray import RayExecutor  # Ray is imported only where it runs

        executor = RayExecutor(recipe, address)
    executor.stall_s = recipe.stall_timeout_s
    return executor
