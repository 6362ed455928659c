"""The run's tasks on Ray: an embedded local Ray, or a cluster joined by address.

A shard task's input that cannot be read is no task failure: the task yields `ItemFailed` (see
`pipelines.plan`), so Ray neither retries it nor stops the others. A worker that dies is a system
failure, which Ray retries (3 times) as for any task.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

import ray

from curation.recipe import RayConfig, Recipe
from pipelines.executors.base import BATCHES_AHEAD, Executor, RayUnreachable

QUEUED = 4  # streaming tasks submitted beyond twice the cluster's CPUs


def _start_ray(config: RayConfig, address: str | None) -> bool:
    """Start an embedded Ray (or join a cluster); True when this call started it."""
    if ray.is_initialized():
        return False
    # "local" starts a new embedded Ray even where another one runs on this machine (plain
    # ray.init() would join that one, and then refuse num_cpus); RAY_ADDRESS joins a cluster as usual.
    address = address or config.address or os.environ.get("RAY_ADDRESS") or "local"
    kwargs: dict[str, Any] = {"address": address, "logging_level": "WARNING", "log_to_driver": True}
    if address == "local":
        kwargs.update(num_cpus=config.num_cpus, include_dashboard=False)
        # Embedded Ray is private to this process: its token-auth notice says nothing to act on.
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    join_ray(kwargs)
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "bars disabled": we did that
    return True


def join_ray(options: dict[str, Any]) -> None:
    """`ray.init(**options)`; a Ray that cannot be reached (the Ray client gives up after ~30 s, `auto` finds
    none) raises `RayUnreachable` naming the address."""
    try:
        with warnings.catch_warnings():  # the client's "connection timed out" warning: the error says it
            warnings.filterwarnings("ignore", message="Ray Client connection timed out")
            ray.init(**options)
    except ConnectionError as exc:
        msg = f"the Ray at {options.get('address')} could not be joined: {exc}"
        raise RayUnreachable(msg) from exc


def _cluster_cpus() -> int:
    """Asked each time: an autoscaled cluster grows."""
    return int(ray.cluster_resources().get("CPU", 0))


@functools.cache
def _task(fn: Callable[..., Any]) -> Any:
    return ray.remote(num_cpus=1)(fn)


@functools.cache
def _streaming_task(fn: Callable[..., Iterator[Any]]) -> Any:
    return ray.remote(num_returns="streaming", _generator_backpressure_num_objects=BATCHES_AHEAD)(fn)


class RayExecutor(Executor):
    shuffles = True

    def __init__(self, recipe: Recipe | None = None, address: str | None = None) -> None:
        """Join the Ray this process runs, else start or join the recipe's (default: an embedded one)."""
        # ray.init makes SIGTERM `sys.exit` the driver, a crash to its caller: a handler of the caller's own stays
        # (`curate run`'s ends the job `interrupted`).
        caller = signal.getsignal(signal.SIGTERM)
        main = threading.current_thread() is threading.main_thread()
        try:
            self._started = _start_ray(recipe.ray if recipe else RayConfig(), address)
        except SystemExit as exc:  # ray.init's own handler: SIGTERM came while it started Ray
            if callable(caller) and main and exc.code == signal.SIGTERM:
                signal.signal(signal.SIGTERM, caller)
                caller(signal.SIGTERM, None)  # the caller's way to stop (`curate run`: `interrupted`)
            raise
        if callable(caller) and main:
            signal.signal(signal.SIGTERM, caller)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> ray.ObjectRef:
        return _task(fn).remote(*args, **kwargs)

    def wait(self, pending: list[Any], timeout: float) -> tuple[list[Any], list[Any]]:
        return ray.wait(pending, num_returns=1, timeout=timeout)

    def result(self, handle: ray.ObjectRef) -> Any:
        return ray.get(handle)

    def share(self, value: Any) -> ray.ObjectRef:
        return ray.put(value)

    def stream(self, fn: Callable[..., Iterator[Any]], items: Iterable[Any], *shared: Any,
               cpus: float = 1.0) -> Iterator[Any]:
        # A task asks for `cpus`, never more than the cluster has (a task asking more would never start;
        # a cluster with no CPUs yet gets the demand an autoscaler acts on).
        have = _cluster_cpus()
        task = _streaming_task(fn).options(num_cpus=min(have, cpus) if have else cpus)
        # In the object store once, not serialized into every task; scalars stay plain arguments (nothing to save).
        shared = tuple(value if isinstance(value, int | float | str) else ray.put(value) for value in shared)
        todo = iter(items)
        running: list[ray.ObjectRefGenerator] = []

        def submit() -> None:
            # Twice the cluster's CPUs and a few more: the next tasks wait queued when one ends (and an
            # autoscaler sees demand beyond what it has) while the driver waits on a short list however
            # many items there are. Asked again as tasks end: the cluster may have grown.
            window = 2 * _cluster_cpus() + QUEUED
            running.extend(task.remote(item, *shared) for item in islice(todo, max(0, window - len(running))))

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

    def close(self) -> None:
        if self._started:  # an embedded Ray: its workers, and the tasks they run, end with it
            ray.shutdown()
            self._started = False
