"""Where a run's tasks execute: Ray (`pipelines.ray_executor`) or this machine's processes, no Ray.

A run hands its phases (the document stages of each shard, the corpus stages, tokens and packing)
to an executor as plain functions; only the executor knows how they are spread. Both give the same
output: the functions, their inputs and the job folder are the same.

`LocalExecutor` is datatrove's local executor's counterpart, for a laptop, a notebook or a job that
fits one machine: no cluster's fixed cost (an idle embedded Ray holds ~590 MB and takes ~2-3 s to
start). With one worker everything runs in the calling process; with more, a process pool whose
workers fork from a forkserver that imported the stages once (their pages are shared, and a stage's
`setup` runs once per worker, as on Ray). Not forked from the calling process: that saves ~80 MB of
PSS at 2 workers but copies whatever threads it runs (Ray's gRPC in a notebook that also uses Ray, a
status server), a known source of hangs in forked children. Its corpus stages run in one process (the same functions
Ray's shuffles spread out, so the same removals), so their memory grows with the corpus: past one
machine's worth of documents, use Ray. A worker that dies fails the run; a rerun resumes it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from curation.recipe import Recipe

BATCHES_AHEAD = 8  # batches a shard task may make before the driver takes them: what waits in memory
# Imported once by the forkserver, before any worker forks from it: every worker shares these pages.
PRELOAD = ["pyarrow", "curation.stages", "curation.readers", "curation.apply", "curation.tokens.corpus"]


class Executor:
    """What a run asks of an executor. Handles are opaque (Ray object refs, futures)."""

    shuffles: bool  # corpus stages may run as shuffles over the cluster (else in one task)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Start `fn(*args, **kwargs)` on one CPU; return its handle."""
        raise NotImplementedError

    def wait(self, pending: list[Any], timeout: float) -> tuple[list[Any], list[Any]]:
        """(finished, still pending) after at most `timeout` seconds, or as soon as one finishes."""
        raise NotImplementedError

    def result(self, handle: Any) -> Any:
        raise NotImplementedError

    def share(self, value: Any) -> Any:
        """A large argument many tasks take, shipped once where the executor can."""
        return value

    def stream(self, fn: Callable[..., Iterator[Any]], items: Iterable[Any], *shared: Any,
               cpus: float = 1.0) -> Iterator[Any]:
        """Everything `fn(item, *shared)` yields for every item, in the order it is made (items mixed)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor started."""


_QUEUE: Any = None  # in a local worker: where its shard tasks put their batches


def _worker_init(batches: Any) -> None:
    global _QUEUE
    _QUEUE = batches


def _into_queue(fn: Callable[..., Iterator[Any]], item: Any, *shared: Any) -> int:
    made = 0
    for out in fn(item, *shared):
        _QUEUE.put(out)
        made += 1
    return made


class LocalExecutor(Executor):
    shuffles = False

    def __init__(self, workers: int) -> None:
        self._pool: ProcessPoolExecutor | None = None
        # In-process, a task runs when it is first waited on, not when submitted: results are folded one at a
        # time and progress shows between tasks, as with a pool.
        self._later: dict[Future, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {}
        if workers > 1:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            self._batches = context.Queue(maxsize=BATCHES_AHEAD * workers)
            self._pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init,
                                             initargs=(self._batches,))

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if self._pool is not None:
            return self._pool.submit(fn, *args, **kwargs)
        future: Future = Future()
        self._later[future] = (fn, args, kwargs)
        return future

    def _run(self, future: Future) -> None:
        fn, args, kwargs = self._later.pop(future)
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # handed over as the pool would: raised by `result`
            future.set_exception(exc)

    def wait(self, pending: list[Any], timeout: float) -> tuple[list[Any], list[Any]]:
        if self._pool is None and not any(f.done() for f in pending):
            self._run(pending[0])
        done, rest = wait(pending, timeout, return_when=FIRST_COMPLETED)
        return [f for f in pending if f in done], [f for f in pending if f in rest]

    def result(self, handle: Future) -> Any:
        if handle in self._later:
            self._run(handle)
        return handle.result()

    def stream(self, fn: Callable[..., Iterator[Any]], items: Iterable[Any], *shared: Any,
               cpus: float = 1.0) -> Iterator[Any]:
        if self._pool is None:
            for item in items:
                yield from fn(item, *shared)
            return
        tasks = [self._pool.submit(_into_queue, fn, item, *shared) for item in items]
        try:
            yield from self._batches_of(tasks)
        finally:  # also when the caller stops early (its own error): no task may stay blocked on a full queue
            self._abandon(tasks)

    def _batches_of(self, tasks: list[Future]) -> Iterator[Any]:
        taken = 0
        while True:
            try:
                yield self._batches.get(timeout=0.1)
                taken += 1
                continue
            except queue.Empty:
                pass
            failed = next((t for t in tasks if t.done() and t.exception() is not None), None)
            if failed is not None:
                raise failed.exception()
            # A task's count can arrive before its last batches (the queue's feeder thread sends them).
            if all(t.done() for t in tasks) and taken == sum(t.result() for t in tasks):
                return

    def _abandon(self, tasks: list[Future]) -> None:
        """Cancel the tasks not started and let the running ones end, taking what they still put."""
        for task in tasks:
            task.cancel()
        while not all(t.done() for t in tasks):
            with contextlib.suppress(queue.Empty):
                self._batches.get(timeout=0.1)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._batches.close()


def local_workers(recipe: Recipe) -> int:
    return recipe.local.workers or len(os.sched_getaffinity(0))


def start_executor(recipe: Recipe, address: str | None = None, kind: str | None = None) -> Executor:
    """The recipe's executor (`kind` overrides it); `address` is Ray's, as `curate run --address`."""
    if (kind or recipe.executor) == "local":
        return LocalExecutor(local_workers(recipe))
    from pipelines.ray_executor import RayExecutor  # Ray is imported only where it runs

    return RayExecutor(recipe, address)
