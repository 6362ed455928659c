"""The jobs folder as the service sees it: safe lookup of a job by id, and short-lived answer caches.

A request names a job, a stage or a reason; none of these is ever joined into a path. Job ids must
look like a folder name and resolve to a folder directly inside the jobs folder (symbolic links
leading elsewhere are refused); stages and reasons are looked up among the names found on disk.
Inside a job, only regular files whose real path lies inside that job's own folder are read
(`ServedJob`): a `stats.json` linked to a file elsewhere, a `reason=` folder linked to another job's
rejects, a FIFO named `events.jsonl` are all as absent. Not the jobs folder as the bound: a link to
another job's files would show them as this job's. A file is checked as opened (`pinned`: the real path
of the open descriptor) and read through that descriptor, so a link swapped in between is not followed.
Answers are cached for `ttl` seconds, as the JSON bytes sent, so two hundred dashboards polling one
job cost about one read of its folder per `ttl`; that a job's folder exists is also checked once per `ttl`.
One thread computes a missing answer while the others asking for it wait for it (not a thousand threads
reading the same folder), and the event loop asks in `cached_only` mode: what needs the disk raises
`NotCached` there, and is asked again on a worker thread.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from curation.progress import EVENTS, MANIFEST, TRAIN_METRICS, JobFolder, list_jobs

_DESCRIPTORS = Path("/proc/self/fd")  # Linux: an open file named by its descriptor
JOB_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$"
JOB_ID_RE = re.compile(JOB_ID)  # use fullmatch: `$` alone lets "id\n" through
NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.:=+-]{0,199}$"  # stage and reason names
MAX_CACHED = 512


class NotCached(Exception):
    """The answer needs the disk, and was asked for in `cached_only` mode."""


_CACHED_ONLY = contextvars.ContextVar("cached_only", default=False)


@contextlib.contextmanager
def cached_only() -> Iterator[None]:
    """Within: `Jobs` answers from memory or raises `NotCached` (for the event loop: never a blocking read)."""
    token = _CACHED_ONLY.set(True)
    try:
        yield
    finally:
        _CACHED_ONLY.reset(token)


def _needs_disk() -> None:
    if _CACHED_ONLY.get():
        raise NotCached


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), default=str, allow_nan=False).encode()


def _within(real: str, folder: str) -> bool:
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def holds(root: Path, real_root: str, path: str | Path, *, folder: bool = False) -> bool:
    """Whether `path` (relative to `root`, or a path under it) is a regular file, or with `folder` a folder,
    whose real path lies inside `real_root` (the real path of `root`, taken once)."""
    real = os.path.realpath(root / path)
    if not _within(real, real_root):
        return False
    try:
        mode = Path(real).stat().st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)


@contextlib.contextmanager
def pinned(root: Path, real_root: str, path: str | Path, *, folder: bool = False) -> Iterator[Path | None]:
    """`path` (relative to `root`, or a path under it) opened once and named by its descriptor
    (`/proc/self/fd/N`) for the block, if what was opened is a regular file (or with `folder` a folder) whose
    real path lies inside `real_root`; else None. Whatever replaces the name meanwhile, what is read through
    that descriptor is what was checked. Where there is no /proc (not Linux), `path` itself once `holds`."""
    if not holds(root, real_root, path, folder=folder):  # first: no open of a FIFO or a device behind a link
        yield None
        return
    if not _DESCRIPTORS.is_dir():
        yield root / path
        return
    try:
        fd = os.open(root / path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | (os.O_DIRECTORY if folder else 0))
    except OSError:
        yield None
        return
    try:
        named = _DESCRIPTORS / str(fd)
        mode = os.fstat(fd).st_mode
        kind = stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)
        yield named if kind and _within(str(named.readlink()), real_root) else None
    finally:
        os.close(fd)


def each_pinned(root: Path, real_root: str, paths: Iterable[str | Path]) -> Iterator[Path]:
    """The held ones of `paths`, each `pinned` until the next is asked for (one descriptor open at a time)."""
    for path in paths:
        with pinned(root, real_root, path) as named:
            if named is not None:
                yield named


@contextlib.contextmanager
def all_pinned(root: Path, real_root: str, paths: Iterable[str | Path]) -> Iterator[list[Path]]:
    """The held ones of `paths`, all `pinned` for the block (an `explore.Pin`)."""
    with contextlib.ExitStack() as stack:
        yield [named for path in paths if (named := stack.enter_context(pinned(root, real_root, path)))]


class ServedJob(JobFolder):
    """A job folder as the service reads it: through links only to regular files (and folders) that lie
    inside the job's own folder, whose real path is taken once, when the service first meets the job.

    `JobFolder` reads what it finds; here every file it reads is `pinned` (a real path, a stat, an open: a
    few microseconds, once per file change or answer ttl), and what fails reads as absent.
    """

    def __init__(self, path: str | Path) -> None:
        self.real = os.path.realpath(path)
        super().__init__(path)

    def opened(self, path: Path, *, folder: bool = False) -> contextlib.AbstractContextManager[Path | None]:
        return pinned(self.path, self.real, path, folder=folder)

    def pinned_each(self, paths: Iterable[str | Path]) -> Iterator[Path]:
        return each_pinned(self.path, self.real, paths)

    def pinned_all(self, paths: Iterable[str | Path]) -> contextlib.AbstractContextManager[list[Path]]:
        return all_pinned(self.path, self.real, paths)

    def holds(self, path: str | Path, *, folder: bool = False) -> bool:
        """Whether `path` (relative to the job folder, or a path under it) is a regular file, or with `folder`
        a folder, whose real path lies inside the job's folder."""
        return holds(self.path, self.real, path, folder=folder)

    def folder_held(self, relative: str) -> bool:
        """Whether a folder of the job is absent, or held with every entry held: it can be read whole."""
        if not os.path.lexists(self.path / relative):
            return True
        return self.holds(relative, folder=True) and self._entries_held(self.path / relative)

    def held(self, files: list[Path]) -> list[Path]:
        return [f for f in files if self.holds(f)]

    def _entries_held(self, folder: Path) -> bool:
        """No entry of `folder` is a link out of the job or something other than a file or a folder."""
        with os.scandir(folder) as entries:
            return all(e.is_file(follow_symlinks=False) or e.is_dir(follow_symlinks=False) or self.holds(e.path)
                       for e in entries)

    def _load(self, name: str, relative: str, loader: Any, *, folder: bool = False) -> Any:
        return super()._load(name, relative, self._if_entries_held(loader) if folder else loader, folder=folder)

    def _if_entries_held(self, loader: Callable[[Path], Any]) -> Callable[[Path], Any]:
        def load(folder: Path) -> Any:
            return loader(folder) if self._entries_held(folder) else None

        return load

    def exists(self) -> bool:
        return self.holds(EVENTS) or self.holds("recipe.yaml")

    def _status(self) -> dict[str, Any]:
        status = super()._status()
        status["has"] = {**status["has"], "manifest": self.holds(MANIFEST), "train": self.holds(TRAIN_METRICS),
                         "rejects": self.holds("rejects", folder=True)}
        return status


class AnswerCache:
    """Answers by key, each reused for `ttl` seconds (see `cached`)."""

    def __init__(self, *, ttl: float = 0.5, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock  # tests step a clock of their own through the ttl
        self.answers: OrderedDict[tuple[Any, ...], tuple[float, Any]] = OrderedDict()
        self.lock = threading.Lock()
        # A lock per answer being computed, with how many threads hold or wait for it. Answers computing
        # other answers (the job list, its ids) always nest the same way, so these never deadlock.
        self.computing: dict[tuple[Any, ...], tuple[threading.Lock, list[int]]] = {}

    def cached(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """`compute()`, reused for `ttl` seconds per key (a bounded number of keys); computed by one thread
        at a time per key, the others taking its answer when it is at most `ttl` older than their request."""
        asked = self.clock()
        hit = self._fresh(key, asked)
        if hit is not None:
            return hit[1]
        _needs_disk()
        with self.lock:
            lock, users = self.computing.setdefault(key, (threading.Lock(), [0]))
            users[0] += 1
        try:
            with lock:
                hit = self._fresh(key, asked)  # computed while this thread waited
                if hit is not None:
                    return hit[1]
                started = self.clock()  # what the answer says is as of this time, however long it takes
                value = compute()
                with self.lock:
                    self.answers[key] = (started, value)
                    self.answers.move_to_end(key)
                    while len(self.answers) > MAX_CACHED:
                        self.answers.popitem(last=False)
                return value
        finally:
            with self.lock:
                users[0] -= 1
                if not users[0]:
                    del self.computing[key]

    def _fresh(self, key: tuple[Any, ...], asked: float) -> tuple[float, Any] | None:
        with self.lock:
            hit = self.answers.get(key)
        return hit if hit is not None and asked - hit[0] < self.ttl else None


class Jobs(AnswerCache):
    def __init__(self, root: str | Path, *, ttl: float = 0.5, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(ttl=ttl, clock=clock)
        self.root = Path(root).resolve()
        # Each job's reader, with when its folder was last seen to exist: checked again at most every `ttl`
        # seconds, not on every poll (two stats and path building were a tenth of a cached poll's CPU).
        self.folders: dict[str, tuple[float, ServedJob]] = {}

    def ids(self) -> list[str]:
        # only the folders a job's path can name: `sp ace` was listed, then every request for it was a 422
        return self.cached(("ids",), lambda: [p.name for p in list_jobs(self.root)
                                              if self._inside(p) and JOB_ID_RE.fullmatch(p.name)])

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve().parent == self.root
        except OSError:
            return False

    def get(self, job_id: str) -> ServedJob | None:
        """The job's folder reader, or None when no such job is inside the jobs folder (as of at most `ttl` ago)."""
        now = self.clock()
        hit = self.folders.get(job_id)
        if hit is not None:
            seen, folder = hit
            if now - seen < self.ttl:
                return folder
            _needs_disk()
            if folder.exists():
                self.folders[job_id] = (now, folder)
                return folder
        _needs_disk()
        path = self.root / job_id
        if "/" in job_id or job_id in (".", "..") or not self._inside(path) or not path.is_dir():
            return None
        folder = ServedJob(path)
        if not folder.exists():
            return None
        with self.lock:  # one reader per job, whichever request made it first
            kept = self.folders.get(job_id)
            folder = folder if kept is None else kept[1]
            self.folders[job_id] = (now, folder)
            return folder
