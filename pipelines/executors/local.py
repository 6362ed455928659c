"""This machine's processes, no Ray.

`LocalExecutor` is datatrove's local executor's counterpart, for a laptop, a notebook or a job that
fits one machine: no cluster's fixed cost (an idle embedded Ray holds ~590 MB and takes ~2-3 s to
start). With one worker everything runs in the calling process; with more, a process pool whose
workers share the pages of the stages' modules, imported once (a stage's `setup` runs once per worker,
as on Ray). The workers fork from the calling process where it runs no other Python thread and no Ray or
gRPC (as in `curate run`): they start at once and share its pages too. A caller with such threads (Ray's
in a notebook that also uses Ray, a status server) is not forked, as a thread holding a lock at the fork
leaves it held forever in the child: the workers fork from a forkserver that imports `PRELOAD` first
(~0.5 s with one core idle, ~80 MB more PSS at 2 workers, measured on the FineWeb-like benchmark).
Its corpus stages run in one process (the same functions Ray's shuffles spread out, so the same
removals; `minhash_dedup`'s signatures a task per file, started as each shard is written), so their
memory grows with the corpus: past one machine's worth of documents, use Ray.

A worker that dies while streaming (the kernel killing it for its memory, say) takes the pool with
it: a new pool starts, up to `REPLACEMENTS` times, and each unfinished item runs again, skipping the
outputs the caller already has (a shard's batches are the same every time it is read), so nothing
is lost or taken twice. Elsewhere (corpus stages, tokens) a dead worker fails the run; a rerun
resumes it from the job folder.

The workers die with the run, whatever ends it: each asks the kernel for SIGKILL when its parent dies
(`PR_SET_PDEATHSIG`; the parent is the caller's only thread, or the forkserver, which exits when the
caller's end of its pipe closes), and leaves SIGINT (a terminal's Ctrl-C reaches the whole process group)
to the caller, which stops them at once on an interrupt (`abort`) rather than after their shards.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import logging
import multiprocessing
import os
import pickle
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curation import storage
from curation.progress import pid_alive
from curation.recipe import Recipe
from pipelines.executors.base import BATCHES_AHEAD, Executor, ItemFailed, item_name, stalled

REPLACEMENTS = 3  # times the local pool is replaced after a worker died in `stream` (Ray retries a task 3 times)
# Imported once by the forkserver, before any worker forks from it: every worker shares these pages.
PRELOAD = ["pyarrow", "curation.stages", "curation.readers", "curation.apply", "curation.tokens.buckets", "trafilatura"]


log = logging.getLogger(__name__)
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that made it ends


_QUEUE: Any = None  # in a local worker: where its shard tasks announce their outputs
_SPOOL = ""  # ... and the folder the outputs themselves are written to
# ... and where each says it started: a SimpleQueue, written at once (a Queue's feeder thread might not have
# sent it yet when the process is stopped, and a task never heard of is never seen to stall)
_STARTS: Any = None


def _worker_init(announcements: Any, spool: str, caller: int, starts: Any) -> None:
    global _QUEUE, _SPOOL, _STARTS
    _QUEUE, _SPOOL, _STARTS = announcements, spool, starts
    _release_forkserver()
    _die_with_parent(caller)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller stops its workers (`abort`); no traceback each
    # SIGTERM ends a worker at once (how the pool stops the others when one died), whatever handler a forked
    # worker inherited (`curate run`'s turns it into an exception, which a worker might catch and go on).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _die_with_parent(caller: int) -> None:
    """SIGKILL this worker when its parent (the caller, or the forkserver) dies, however it dies: nothing else
    would stop a worker whose parent was killed, left running under init (~180 MB each). A caller that died
    before the request was made is seen by its pid."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d): this worker may outlive its caller",
                        ctypes.get_errno())
    if not pid_alive(caller):
        os._exit(1)


def _release_forkserver() -> None:
    """Close this worker's copy of the pipe end whose closing tells the forkserver that its caller is gone:
    multiprocessing hands one to every process it starts, so the forkserver (and, through PDEATHSIG, its
    workers) would live as long as any of them: forever, once the caller was killed."""
    from multiprocessing import forkserver

    server = forkserver._forkserver  # the process's only one (no public handle)
    if server._forkserver_alive_fd is not None:
        os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = None


def _spool(out: Any, name: str) -> str:
    """`out` pickled into a file of the spool; only its path goes through the queue: a message that short
    is written to the pipe at once, so a worker that dies cannot leave half of one there (the reader
    would wait forever for the rest), and a half-written file is never announced."""
    path = Path(_SPOOL, name)
    path.write_bytes(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
    return str(path)


def _unspool(path: str) -> Any:
    """An output of this run's own workers (pickle: nothing from elsewhere is ever read here)."""
    spooled = Path(path)
    out = pickle.loads(spooled.read_bytes())
    spooled.unlink()
    return out


def _into_queue(fn: Callable[..., Iterator[Any]], index: int, skip: int, item: Any, *shared: Any) -> int:
    """Put (index, output) for each output of `fn(item, *shared)` past the first `skip` (already taken by
    the caller before a worker died); return how many it made."""
    pid = os.getpid()
    _STARTS.put((index, pid))  # from now on, its silence counts (`stall_s`)
    made = 0
    for out in fn(item, *shared):
        if isinstance(out, ItemFailed):  # the item's last output, handed over even where a rerun failed sooner
            _QUEUE.put((index, _spool(out, f"{pid}-{index}-failed")))
            return max(made, skip) + 1
        if made >= skip:
            _QUEUE.put((index, _spool(out, f"{pid}-{index}-{made}")))
        made += 1
    return made


class LocalExecutor(Executor):
    shuffles = False

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._replacements = REPLACEMENTS
        self._pool: ProcessPoolExecutor | None = None
        self._aborted = False
        self.start_method: str | None = None  # the workers': fork or forkserver (None: in this process)
        # In-process, a task runs when it is first waited on, not when submitted: results are folded one at a
        # time and progress shows between tasks, as with a pool.
        self._later: dict[Future, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {}
        self._sent: dict[Future, tuple[Any, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {}
        if workers > 1:
            self._start()

    def _start(self) -> None:
        self.start_method = "fork" if _may_fork() else "forkserver"
        context = multiprocessing.get_context(self.start_method)
        if self.start_method == "fork":
            for name in PRELOAD:  # imported once, here: the workers share the pages
                importlib.import_module(name)
        else:
            context.set_forkserver_preload(PRELOAD)
        self._batches = context.Queue(maxsize=BATCHES_AHEAD * self._workers)
        self._starts = context.SimpleQueue()
        self._spool = _new_spool()
        self._pool = ProcessPoolExecutor(self._workers, mp_context=context, initializer=_worker_init,
                                         initargs=(self._batches, self._spool, os.getpid(), self._starts))
        if self.start_method == "fork":  # every worker forks now, before the pool's threads (or the caller's) start
            try:
                self._pool.submit(os.getpid).result()
            except BrokenProcessPool as broken:  # one died as it started, with nothing of the job's: new workers
                self._replace(broken)

    def _replace(self, broken: BrokenProcessPool) -> None:
        """A worker died (killed by the kernel for its memory, say): the pool terminated the others. Start
        a new pool and queue (the dead one may have held the queue's lock), at most REPLACEMENTS times."""
        if self._replacements == 0:
            raise broken
        self._replacements -= 1
        log.warning("a worker process died (%s); starting new workers, %d replacements left", broken,
                    self._replacements)
        self.close()
        self._start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if self._pool is not None:
            try:
                future = self._pool.submit(fn, *args, **kwargs)
            except BrokenProcessPool as broken:  # a worker died between tasks, losing none: new workers
                self._replace(broken)
                future = self._pool.submit(fn, *args, **kwargs)
            self._sent[future] = (self._pool, fn, args, kwargs)
            return future
        future = Future()
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
        sent = self._sent.pop(handle, None)
        try:
            return handle.result()
        except BrokenProcessPool as broken:
            # a worker died with the task pending (one dying as the pool started, which `_start` may not have seen
            # yet): the task again, on new workers (once per pool, for all the tasks the broken one held)
            if sent is None:
                raise
            pool, fn, args, kwargs = sent
            if pool is self._pool:
                self._replace(broken)
            return self.result(self.submit(fn, *args, **kwargs))

    def stream(self, fn: Callable[..., Iterator[Any]], items: Iterable[Any], *shared: Any,
               cpus: float = 1.0) -> Iterator[Any]:
        if self._pool is None:
            for item in items:
                yield from fn(item, *shared)
            return
        items = list(items)
        taken = [0] * len(items)  # outputs of each item the caller has: a task started again skips them
        made: dict[int, int] = {}  # outputs of each item whose task ended
        given_up: set[int] = set()  # items whose task stalled: failed, never run again
        while todo := [i for i in range(len(items)) if i not in given_up and made.get(i) != taken[i]]:
            for i in todo:
                made.pop(i, None)
            tasks: dict[int, Future] = {}
            try:
                for i in todo:
                    tasks[i] = self._pool.submit(_into_queue, fn, i, taken[i], items[i], *shared)
                for i, out in self._outputs(tasks, taken, made):
                    if isinstance(out, _Stalled):
                        given_up.add(i)
                        yield ItemFailed(item_name(items[i]), stalled(out.seconds, f"local worker {out.pid}"))
                        continue
                    taken[i] += 1
                    yield out
            except BrokenProcessPool as broken:
                self._replace(broken)
            except (KeyboardInterrupt, SystemExit):  # an interrupt: the workers stop now, not after their shards
                self.abort()
                raise
            finally:  # also when the caller stops early (its own error): no task may stay blocked on a full queue
                self._abandon(list(tasks.values()))

    def _outputs(self, tasks: dict[int, Future], taken: list[int], made: dict[int, int]) -> Iterator[tuple[int, Any]]:
        """(item index, output) as they arrive, until every task has ended and all it made was taken; (index,
        `_Stalled`) for a task silent for `stall_s`, whose worker is killed (the pool is then replaced)."""
        heard: dict[int, tuple[float, int]] = {}  # item -> (when its task last handed over something, its pid)
        while True:
            while not self._starts.empty():
                index, pid = self._starts.get()
                heard[index] = (time.monotonic(), pid)
            try:
                index, path = self._batches.get(timeout=0.1)
                if index in heard:
                    heard[index] = (time.monotonic(), heard[index][1])
                yield index, _unspool(path)
                continue
            except queue.Empty:
                pass
            silent = self._silent(tasks, heard)
            if silent is not None:
                _, pid = heard.pop(silent)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)  # a stopped process too; its pool breaks, and is replaced
                yield silent, _Stalled(self.stall_s or 0.0, pid)
                continue
            failed = next((t for t in tasks.values() if t.done() and t.exception() is not None), None)
            if failed is not None:
                raise failed.exception()
            made.update({i: t.result() for i, t in tasks.items() if t.done()})
            if any(taken[i] > n for i, n in made.items()):  # a task made fewer outputs than it gave: never wait
                msg = "a local task handed over more outputs than it made (one was taken twice)"
                raise RuntimeError(msg)
            # A task's count can arrive before its last outputs (the queue's feeder thread sends them).
            if all(made.get(i) == taken[i] for i in tasks):
                return

    def _silent(self, tasks: dict[int, Future], heard: dict[int, tuple[float, int]]) -> int | None:
        """An item whose running task has handed over nothing for `stall_s` seconds, if any."""
        if self.stall_s is None:
            return None
        now = time.monotonic()
        return next((i for i, (last, _) in heard.items()
                     if now - last > self.stall_s and i in tasks and not tasks[i].done()), None)

    def _abandon(self, tasks: list[Future]) -> None:
        """Cancel the tasks not started and let the running ones end, taking what they still put."""
        for task in tasks:
            task.cancel()
        while not self._aborted and not all(t.done() for t in tasks):
            with contextlib.suppress(queue.Empty):
                self._batches.get(timeout=0.1)

    def close(self) -> None:
        if self._pool is not None and not self._aborted:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._batches.close()
            self._starts.close()
            shutil.rmtree(self._spool, ignore_errors=True)

    def abort(self) -> None:
        if self._pool is None or self._aborted:
            return
        self._aborted = True
        for process in list((self._pool._processes or {}).values()):  # no public way to stop a running task
            process.kill()
        self._pool.shutdown(wait=True, cancel_futures=True)  # its workers are gone: returns at once
        self._batches.close()
        self._batches.cancel_join_thread()
        self._starts.close()
        shutil.rmtree(self._spool, ignore_errors=True)


@dataclass(frozen=True)
class _Stalled:
    """What `_outputs` hands over for a task that stalled: how long it was silent, and its (killed) worker."""

    seconds: float
    pid: int


SPOOL_PREFIX = "curate-local-"


def _new_spool() -> str:
    """A spool folder named after this process, after removing those of callers that are gone: a caller killed
    (SIGKILL) never removes its own, which may hold spooled batches."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SPOOL_PREFIX}*-*"):
        pid = folder.name[len(SPOOL_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{os.getpid()}-")


def _may_fork() -> bool:
    """Whether the workers may fork from this process: it runs no Python thread but this one, neither Ray
    nor gRPC (whose threads hold locks a fork would leave held) is in it, and it has opened no S3 or GCS filesystem
    (whose connections a forked worker would share: two workers read each other's objects). The native threads
    numpy's OpenBLAS and pyarrow's jemalloc start handle forks themselves (the forkserver forks with them too)."""
    ray = sys.modules.get("ray")
    ray_running = ray is not None and ray.is_initialized()
    return (threading.active_count() == 1 and not ray_running and "grpc" not in sys.modules
            and not storage.remote_opened())


def local_workers(recipe: Recipe) -> int:
    return recipe.local.workers or len(os.sched_getaffinity(0))

