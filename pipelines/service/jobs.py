"""The jobs folder as the service sees it: safe lookup of a job by id, and short-lived answer caches.

A request names a job, a stage or a reason; none of these is ever joined into a path. Job ids must
look like a folder name and resolve to a folder directly inside the jobs folder (symbolic links
leading elsewhere are refused); stages and reasons are looked up among the names found on disk.
Answers are cached for `ttl` seconds, as the JSON bytes sent, so two hundred dashboards polling one
job cost about one read of its folder per `ttl`; that a job's folder exists is also checked once per `ttl`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from curation.progress import JobFolder, list_jobs

JOB_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$"
NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.:=+-]{0,199}$"  # stage and reason names
MAX_CACHED = 512


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), default=str, allow_nan=False).encode()


class Jobs:
    def __init__(self, root: str | Path, *, ttl: float = 0.5, clock: Callable[[], float] = time.monotonic) -> None:
        self.root = Path(root).resolve()
        self.ttl = ttl
        self.clock = clock  # tests step a clock of their own through the ttl
        # Each job's reader, with when its folder was last seen to exist: checked again at most every `ttl`
        # seconds, not on every poll (two stats and path building were a tenth of a cached poll's CPU).
        self.folders: dict[str, tuple[float, JobFolder]] = {}
        self.answers: OrderedDict[tuple[Any, ...], tuple[float, Any]] = OrderedDict()
        self.lock = threading.Lock()

    def ids(self) -> list[str]:
        return self.cached(("ids",), lambda: [p.name for p in list_jobs(self.root) if self._inside(p)])

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve().parent == self.root
        except OSError:
            return False

    def get(self, job_id: str) -> JobFolder | None:
        """The job's folder reader, or None when no such job is inside the jobs folder (as of at most `ttl` ago)."""
        now = self.clock()
        hit = self.folders.get(job_id)
        if hit is not None:
            seen, folder = hit
            if now - seen < self.ttl:
                return folder
            if folder.exists():
                self.folders[job_id] = (now, folder)
                return folder
        path = self.root / job_id
        if "/" in job_id or job_id in (".", "..") or not self._inside(path) or not path.is_dir():
            return None
        folder = JobFolder(path)
        if not folder.exists():
            return None
        with self.lock:  # one reader per job, whichever request made it first
            kept = self.folders.get(job_id)
            folder = folder if kept is None else kept[1]
            self.folders[job_id] = (now, folder)
            return folder

    def cached(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """`compute()`, reused for `ttl` seconds per key (a bounded number of keys)."""
        now = self.clock()
        with self.lock:
            hit = self.answers.get(key)
        if hit is not None and now - hit[0] < self.ttl:
            return hit[1]
        value = compute()
        with self.lock:
            self.answers[key] = (now, value)
            self.answers.move_to_end(key)
            while len(self.answers) > MAX_CACHED:
                self.answers.popitem(last=False)
        return value
