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
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeVar

import ray

from curation.recipe import RayConfig, Recipe
from pipelines.executors.base import BATCHES_AHEAD, Executor, ItemFailed, RayUnreachable, item_name, stalled

log = logging.getLogger(__name__)
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
    if options.get("address") not in (None, "local"):  # `auto` joins whichever Ray runs here: say which
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        print(f"joined the Ray cluster at {ray.get_runtime_context().gcs_address} ({len(nodes)} node(s), "
              f"{_cluster_cpus()} CPUs)", file=sys.stderr)


def _cluster_cpus() -> int:
    """Asked each time: an autoscaled cluster grows."""
    return int(ray.cluster_resources().get("CPU", 0))


STALL_RETRIES = 3  # a stalled task runs again this many times, as Ray retries a task whose worker died
_STARTED = "curation:task-started"  # the first output of every streaming task: from then on its silence counts


def _announced(fn: Callable[..., Iterator[Any]], *args: Any) -> Iterator[Any]:
    """`fn(*args)`'s outputs after `_STARTED`: a task still queued for a CPU is not stalled."""
    yield _STARTED
    yield from fn(*args)


@dataclass
class _Task:
    """A streaming task's item and what it handed over."""

    index: int
    skip: int  # outputs to pass over: the stalled attempt before this one handed them over already
    tries: int  # attempts before this one
    taken: int = 0  # outputs of the item the caller has (of this attempt and those before)
    seen: int = 0  # outputs of this attempt, its start marker first
    started: bool = False
    heard: float = field(default_factory=time.monotonic)


@functools.cache
def _task(fn: Callable[..., Any]) -> Any:
    return ray.remote(num_cpus=1)(fn)


@functools.cache
def _streaming_task(fn: Callable[..., Iterator[Any]]) -> Any:
    return ray.remote(num_returns="streaming", _generator_backpressure_num_objects=BATCHES_AHEAD)(fn)


T = TypeVar("T")


def keeping_sigterm(start: Callable[[], T]) -> T:
    """`start()`, which starts or joins Ray, with the caller's SIGTERM handler kept: ray.init makes SIGTERM
    `sys.exit` the driver (a crash to its caller), while the caller's own handler stops its work and says how it
    ended (`curate run`'s ends the job `interrupted`)."""
    caller = signal.getsignal(signal.SIGTERM)
    main = threading.current_thread() is threading.main_thread()
    try:
        started = start()
    except SystemExit as exc:  # ray.init's own handler: SIGTERM came while it started Ray
        if callable(caller) and main and exc.code == signal.SIGTERM:
            signal.signal(signal.SIGTERM, caller)
            caller(signal.SIGTERM, None)  # the caller's way to stop
        raise
    if callable(caller) and main:
        signal.signal(signal.SIGTERM, caller)
    return started


class RayExecutor(Executor):
    shuffles = True

    def __init__(self, recipe: Recipe | None = None, address: str | None = None) -> None:
        """Join the Ray this process runs, else start or join the recipe's (default: an embedded one)."""
        self._started = keeping_sigterm(lambda: _start_ray(recipe.ray if recipe else RayConfig(), address))

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
        task = _streaming_task(_announced).options(num_cpus=min(have, cpus) if have else cpus)
        # In the object store once, not serialized into every task; scalars stay plain arguments (nothing to save).
        shared = tuple(value if isinstance(value, int | float | str) else ray.put(value) for value in shared)
        todo = enumerate(items)
        listed: list[Any] = []  # items by index, as submitted
        running: dict[ray.ObjectRefGenerator, _Task] = {}

        def start(index: int, skip: int = 0, tries: int = 0) -> None:
            running[task.remote(fn, listed[index], *shared)] = _Task(index, skip, tries, taken=skip)

        def submit() -> None:
            # Twice the cluster's CPUs and a few more: the next tasks wait queued when one ends (and an
            # autoscaler sees demand beyond what it has) while the driver waits on a short list however
            # many items there are. Asked again as tasks end: the cluster may have grown.
            window = 2 * _cluster_cpus() + QUEUED
            for index, item in islice(todo, max(0, window - len(running))):
                listed.append(item)
                start(index)

        submit()
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=None if self.stall_s is None else 1.0)
            if not ready:
                yield from self._restart_stalled(running, listed, start)
                continue
            generator, state = ready[0], running[ready[0]]
            try:
                ref = next(generator)
            except StopIteration:
                del running[generator]
                submit()
                continue
            state.heard = time.monotonic()
            state.seen += 1
            if state.seen == 1:  # its start marker (`_announced`), not fetched
                state.started = True
                continue
            if state.seen - 1 <= state.skip:  # handed over by the stalled attempt before: the caller has it
                continue
            state.taken += 1
            yield ray.get(ref)

    def _restart_stalled(self, running: dict[ray.ObjectRefGenerator, _Task], listed: list[Any],
                         start: Callable[[int, int, int], None]) -> Iterator[Any]:
        """Cancel each started task silent for `stall_s` and run it again (its outputs so far are skipped: a
        shard reads the same every time), or, after `STALL_RETRIES`, hand over its item's `ItemFailed`."""
        now = time.monotonic()
        for generator, state in list(running.items()):
            if not state.started or now - state.heard <= (self.stall_s or 0.0):
                continue
            ray.cancel(generator, force=True)  # kills the worker process, stopped or not
            del running[generator]
            if state.tries >= STALL_RETRIES:
                yield ItemFailed(item_name(listed[state.index]), stalled(self.stall_s or 0.0, f"Ray, {state.tries + 1} "
                                                                          "attempts"))
                continue
            log.warning("a task of %s handed over nothing for %g s: running it again", item_name(listed[state.index]),
                        self.stall_s)
            start(state.index, state.taken, state.tries + 1)

    def close(self) -> None:
        if self._started:  # an embedded Ray: its workers, and the tasks they run, end with it
            ray.shutdown()
            self._started = False
