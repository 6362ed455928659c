"""The progress store: live counters of a running job, kept in its folder, and the reader of a job folder.

The driver's `JobWriter` already counts every row of every shard as batches arrive; `LiveProgress`
saves a snapshot of those counters (done and still-open shards together) to `_progress.json`, at
most every half second, with a thinned time series for throughput charts. Everything else a status
needs is already in the folder: `events.jsonl` tells the run and its phase, `_shards/` the shards
done, `stats.json` the final word, `train/metrics.jsonl` the training curve. The reader
(`JobFolder`) only re-reads what changed, so a service can poll many jobs cheaply, and a restarted
service loses nothing.

Training metrics: `<job>/train/metrics.jsonl`, one JSON object per step, appended by the trainer
(`pipelines.train`): `step` (int) and `loss` (number) are required; `loss_smoothed`, `lr`, `grad_norm`,
`tokens`, `tokens_per_s`, `val_loss`, `time` and others are shown when present; `spike` is the reason
a step was flagged (null or absent otherwise; `true` is accepted too), with `spike_loss` when the
flagged batch was skipped and `documents` (ids of the batch's documents, maybe capped). The trainer's
`<job>/train/spikes.jsonl` (`step`, `loss`, `reason`, `action`, `rows`, `documents`: all of them) is
preferred for a spike's documents; a spike may instead name packed rows as
`batch: {"shard": "shards/<file>.arrow", "rows": [...]}`, resolved through their `doc_ids`.
A rewritten file (a resumed run drops the steps after its checkpoint) is read again from the start.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from curation import schema, storage
from curation.job import SHARDS, JobWriter, empty_counters, funnel, merge_counters

PROGRESS = "_progress.json"
EVENTS = "events.jsonl"
STATS = "stats.json"
MANIFEST = "manifest.json"
TRAIN_METRICS = "train/metrics.jsonl"
TRAIN_SPIKES = "train/spikes.jsonl"
SERIES_COLUMNS = ["time", "records", "documents", "shards_done"]
SERIES_POINTS = 512
RECENT_SECONDS = 10.0  # window of the "current" rate: long enough to smooth batches, short enough to react
FINAL_STEP = "final documents"
MAX_READ = 16 << 20  # bytes of a JSON-lines file one poll reads: a 2 GB file is read across polls, never at once
MAX_LINE = 4 << 20  # a line longer than this is no event or metrics line: skipped
MAX_JSON_BYTES = 64 << 20  # a stats.json or _progress.json larger than this is unreadable, not read
MAX_INT_DIGITS = 19


class LiveProgress:
    """Snapshots of a `JobWriter`'s counters in `<job>/_progress.json`, written atomically and throttled.

    The first snapshot is written at once: a rerun's must replace the one an earlier driver left.
    """

    def __init__(self, job_dir: str, writer: JobWriter, *, interval: float | None = None) -> None:
        self.uri = storage.join(job_dir, PROGRESS)
        self.writer = writer
        # Each write to an object store is a request and costs money: far fewer there.
        self.interval = interval if interval is not None else (5.0 if storage.is_remote(job_dir) else 0.5)
        self.started = time.time()
        self.last_write = 0.0
        self.gap = self.interval  # least time between series points; doubles whenever the series is thinned
        self.series: list[list[float]] = []
        self.done_total: dict[str, dict[str, Any]] = {}
        self.merged: set[str] = set()
        self.update(force=True)

    def update(self, *, force: bool = False) -> None:
        """Save the writer's counters, unless one was saved less than `interval` ago (and not `force`)."""
        writer = self.writer
        now = time.time()
        if not force and now - self.last_write < self.interval:
            return
        self.last_write = now
        # Done shards never change again: merge each once, so a snapshot costs the open shards only.
        for name, record in writer.done.items():
            if name not in self.merged:
                merge_counters(self.done_total, record["counters"])
                self.merged.add(name)
        totals = empty_counters(writer.stages)
        merge_counters(totals, self.done_total)
        for shard in writer.open.values():
            merge_counters(totals, shard.counters)
        records = totals["read"]["docs_in"]
        documents = totals[writer.stages[-1]]["docs_out"]
        self._point([round(now, 3), records, documents, len(writer.done)])
        snapshot = {
            "pid": os.getpid(), "host": socket.gethostname(), "started": round(self.started, 3),
            "updated": round(now, 3), "shards_done": len(writer.done), "shards_open": len(writer.open),
            "records": records, "documents": documents,
            "stages": funnel(totals),
            "series": {"columns": SERIES_COLUMNS, "points": self.series},
        }
        storage.write_json_atomic(self.uri, snapshot, indent=None)

    def _point(self, point: list[float]) -> None:
        if self.series and point[0] - self.series[-1][0] < self.gap:
            self.series[-1] = point  # the latest point always reflects the latest counts
            return
        self.series.append(point)
        if len(self.series) > SERIES_POINTS:
            self.series = [*self.series[:-1:2], self.series[-1]]
            self.gap *= 2


# -- reading -------------------------------------------------------------------------------------


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


# How a job folder's reader reaches a file by its path: a context giving the name to read it by, or None where it
# must read as absent. `by_name` reads the path itself; the service's reader checks what it opened (`ServedJob`).
Opener = Callable[..., AbstractContextManager[Path | None]]


@contextlib.contextmanager
def by_name(path: Path, *, folder: bool = False) -> Iterator[Path | None]:  # an `Opener`
    yield path


class Unreadable(ValueError):
    """A job file whose content no answer can hold: JSON nested too deep, a number out of range, not JSON."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: inf, which no JSON answer can carry
        msg = f"number out of range: {text[:40]}"
        raise Unreadable(msg)
    return value


def _not_a_number(text: str) -> float:
    msg = f"{text} is not a JSON number"
    raise Unreadable(msg)


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:  # a counter past 2**63 is no counter; a float of it would overflow
        msg = f"number out of range: {text[:40]}... ({len(text)} digits)"
        raise Unreadable(msg)
    return int(text)


def loads(data: str | bytes) -> Any:
    """JSON a job folder holds, as a job wrote it or refused (`Unreadable`): only finite numbers, nesting no
    deeper than the parser's recursion allows."""
    try:
        return json.loads(data, parse_float=_finite, parse_int=_bounded_int, parse_constant=_not_a_number)
    except RecursionError:
        msg = "JSON nested too deeply"
        raise Unreadable(msg) from None


class _Lines:
    """A JSON-lines file read incrementally: only appended complete lines are parsed, at most `MAX_READ` bytes
    a read. A line longer than `MAX_LINE` (a file without newlines) is skipped, as read, to its end: where a
    read stopped is kept either way, so no byte is read twice however often the file is polled."""

    def __init__(self, path: Path, opener: Opener = by_name) -> None:
        self.path, self.opener, self.offset, self.rows, self.inode = path, opener, 0, [], None
        self.skipping = False  # within an overlong line: the bytes up to its newline are passed over

    def read(self) -> list[dict[str, Any]]:
        with self.opener(self.path) as named:
            try:
                if named is None:
                    raise FileNotFoundError(self.path)
                with named.open("rb") as f:
                    self._read_from(f)
            except OSError:  # absent, or not to be read: no rows until it is there again
                self.offset, self.rows = 0, []
        return self.rows

    def _read_from(self, f: Any) -> None:
        st = os.fstat(f.fileno())
        size = st.st_size
        if size < self.offset or st.st_ino != self.inode:  # replaced by a rename, or rewritten shorter
            self.offset, self.rows, self.inode, self.skipping = 0, [], st.st_ino, False
        budget = MAX_READ
        while size > self.offset and budget > 0:
            f.seek(self.offset)
            chunk = f.read(min(size - self.offset, budget, MAX_LINE))
            if not chunk:
                return
            budget -= len(chunk)
            if self.skipping:
                newline = chunk.find(b"\n")
                self.skipping = newline < 0
                self.offset += len(chunk) if newline < 0 else newline + 1
                continue
            end = chunk.rfind(b"\n") + 1  # a line still being written waits for the next read
            if end == 0:
                if len(chunk) < MAX_LINE:
                    return
                self.skipping = True  # no newline in MAX_LINE bytes: no line, whatever follows
                self.offset += len(chunk)
                continue
            self._parse(chunk[:end])
            self.offset += end

    def _parse(self, lines: bytes) -> None:
        for line in lines.splitlines():
            try:
                row = loads(line)
            except ValueError:
                continue  # a damaged line must not hide the others
            if isinstance(row, dict):
                self.rows.append(row)


def _read_json(path: Path) -> Any:
    """A job's JSON file, None where absent or not to be read; `Unreadable` where its content is hostile."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_JSON_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_JSON_BYTES:
        msg = f"larger than {MAX_JSON_BYTES >> 20} MiB"
        raise Unreadable(msg)
    try:
        value = loads(data)
    except Unreadable:
        raise
    except ValueError:
        return None  # half written by a tool that writes in place, or damaged: as absent, as it always was
    return value if isinstance(value, dict) else None  # every file a job writes holds an object: `[1, 2]` is damage


def pid_alive(pid: int) -> bool:
    """Whether a process of this machine has that pid (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _rate(points: list[list[float]], column: int, window: float) -> float | None:
    if len(points) < 2:
        return None
    last = points[-1]
    first = next((p for p in points if last[0] - p[0] <= window), points[-2])
    if first is last:
        first = points[-2]
    dt = last[0] - first[0]
    return (last[column] - first[column]) / dt if dt > 0 else None



def job_name(folder: str) -> str:
    """A job's name from its folder's (`<name>-<hash of the recipe>`); a folder named otherwise, its whole name."""
    name, _, suffix = folder.rpartition("-")
    hashed = len(suffix) == schema.JOB_HASH_CHARS and all(c in "0123456789abcdef" for c in suffix)
    return name if name and hashed else folder


class JobFolder:
    """What a job folder says about its job, re-read only where files changed. Thread-safe."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.id = self.path.name
        self.lock = threading.Lock()
        self.events = _Lines(self.path / EVENTS, self.opened)
        self.metrics = _Lines(self.path / TRAIN_METRICS, self.opened)
        self.spike_log = _Lines(self.path / TRAIN_SPIKES, self.opened)
        self.seen: dict[str, Any] = {}
        self.cache: dict[str, Any] = {}
        self.unreadable: dict[str, str] = {}  # file (relative) -> why its content cannot be shown

    def opened(self, path: Path, *, folder: bool = False) -> AbstractContextManager[Path | None]:
        """The name to read `path` (a file, or with `folder` a folder) by, or None: every read goes through it."""
        return by_name(path, folder=folder)

    def _json(self, path: Path) -> Any:
        with self.opened(path) as named:
            return None if named is None else _read_json(named)

    def _load(self, name: str, relative: str, loader: Any, *, folder: bool = False) -> Any:
        """`loader(name to read by)`, recomputed only when the file's mtime or size changed."""
        path = self.path / relative
        key = _stat(path)
        if name not in self.cache or self.seen.get(name) != key:
            self.seen[name] = key
            self.cache[name] = None
            self.unreadable.pop(relative, None)
            if key is not None:
                with self.opened(path, folder=folder) as named:
                    try:
                        self.cache[name] = None if named is None else loader(named)
                    except (Unreadable, RecursionError) as exc:  # recorded: the status says so
                        self.unreadable[relative] = str(exc) or "JSON nested too deeply"
        return self.cache[name]

    def _plan(self) -> dict[str, list[str]]:
        """Document and corpus stage names, from the recipe as run (empty when it cannot be read)."""

        def parse(path: Path) -> dict[str, list[str]]:
            from curation.recipe import RecipeError, parse_recipe
            from curation.stages.registry import CORPUS_STAGES

            try:
                recipe = parse_recipe(path.read_text(encoding="utf-8"), str(path), check_paths=False)
            except (RecipeError, OSError, ValueError):
                return {"document": [], "corpus": [], "packing": False}
            specs = recipe.stage_specs()
            return {"document": [n for n, kind, _ in specs if kind not in CORPUS_STAGES],
                    "corpus": [n for n, kind, _ in specs if kind in CORPUS_STAGES],
                    "packing": getattr(recipe, "pack", None) is not None}

        return self._load("plan", "recipe.yaml", parse) or {"document": [], "corpus": [], "packing": False}

    def _shards_done(self) -> int:
        def count(path: Path) -> int:
            return sum(1 for p in path.iterdir() if p.suffix == ".json")

        return self._load("shards", SHARDS, count, folder=True) or 0

    def _shard_totals(self) -> list[dict[str, Any]]:
        """Counters summed over `_shards/` records: for folders without a progress snapshot."""

        def total(path: Path) -> list[dict[str, Any]]:
            totals: dict[str, dict[str, Any]] = {}
            for p in sorted(path.glob("*.json")):
                record = self._json(p)
                if record:
                    merge_counters(totals, record.get("counters", {}))
            return funnel(totals)

        return self._load("shard_totals", SHARDS, total, folder=True) or []

    def _run_events(self) -> list[dict[str, Any]]:
        """Events of the latest run (a rerun appends a new `job_started`)."""
        rows = self.events.read()
        start = max((i for i, e in enumerate(rows) if e.get("event") == "job_started"), default=0)
        return rows[start:]

    # -- public ----------------------------------------------------------------------------------
    def exists(self) -> bool:
        return (self.path / EVENTS).is_file() or (self.path / "recipe.yaml").is_file()

    def stats(self) -> dict[str, Any] | None:
        with self.lock:
            return self._load("stats", STATS, _read_json)

    def manifest(self) -> dict[str, Any] | None:
        with self.lock:
            return self._load("manifest", MANIFEST, _read_json)

    def progress(self) -> dict[str, Any] | None:
        with self.lock:
            return self._load("progress", PROGRESS, _read_json)

    def status(self) -> dict[str, Any]:
        """State, phase, percent done, rates and ETA of the job's latest run; `unreadable`, naming the file and
        why, where a file holds what no answer can carry (so that one crafted folder costs only its own status)."""
        with self.lock:
            try:
                status = self._status()
                _check_status(status)
            except Exception as exc:  # anything the content of the folder makes of the status
                return self._unreadable_status(f"{type(exc).__name__}: {exc}")
            if self.unreadable:
                file, why = next(iter(sorted(self.unreadable.items())))
                return self._unreadable_status(f"{file}: {why}")
            return status

    def _unreadable_status(self, error: str) -> dict[str, Any]:
        return {
            "id": self.id, "name": job_name(self.id), "state": "unreadable", "phase": "unreadable",
            "error": error.splitlines()[0][:500] if error else "unreadable", "started": None, "finished": None,
            "updated": None, "elapsed_seconds": None, "percent": 0.0, "eta_seconds": None,
            "shards": {"total": 0, "done": 0, "already_done": 0}, "corpus_steps": {"total": 0, "done": 0},
            "records": 0, "documents": 0, "rate": {"records_per_s": None, "mean_records_per_s": None},
            "stages": {"document": [], "corpus": []},
            "has": {"stats": False, "manifest": False, "train": False, "rejects": False}}

    def _status(self) -> dict[str, Any]:
        events = self._run_events()
        stats = self._load("stats", STATS, _read_json)
        progress = self._load("progress", PROGRESS, _read_json) or {}
        plan = self._plan()
        first = events[0] if events and events[0].get("event") == "job_started" else {}
        last = events[-1] if events else {}
        shards_total = first.get("shards") or (stats or {}).get("shards", {}).get("total") or 0
        shards_done = max(self._shards_done(), progress.get("shards_done", 0))
        shards_done = min(shards_done, shards_total) if shards_total else shards_done
        corpus = next((e.get("stages") for e in events if e.get("event") == "corpus_stages_started"), plan["corpus"])
        steps = [e.get("step") for e in events if e.get("event") == "corpus_step_done"]
        steps_done = len([s for s in steps if s in corpus]) + (FINAL_STEP in steps) if corpus else 0
        state, error = _state(events, progress)
        phase = _phase(state, events, corpus, steps)
        packing = plan.get("packing") or any(e.get("event") == "packing_started" for e in events)
        packed = any(e.get("event") == "packing_done" for e in events)
        units = shards_total + (len(corpus) + 1 if corpus else 0) + packing
        done_units = shards_done + steps_done + packed
        percent = 100.0 if state == "done" else round(100.0 * done_units / units, 2) if units else 0.0
        started = first.get("time") or progress.get("started")
        finished = last.get("time") if state in ("done", "failed", "interrupted") else None
        elapsed = max((finished or time.time()) - started, 1e-9) if started else None
        final = (stats or {}).get("documents", {}) if state == "done" else {}
        records = final.get("records_read", progress.get("records", 0))
        running = state == "running"
        rate = _rate((progress.get("series") or {}).get("points") or [], 1, RECENT_SECONDS) if running else None
        already = first.get("already_done", 0)
        # a rerun that found every shard done read nothing: the job's records over its milliseconds are no rate
        this_run = records - first.get("records_already_read", 0)  # a resumed run's: not the shards done before
        mean = this_run / elapsed if elapsed and not (shards_total and already >= shards_total) else None
        eta = None
        if running and phase == "documents" and elapsed and shards_done > already:
            eta = round((shards_total - shards_done) * elapsed / (shards_done - already), 1)
        return {
            "id": self.id, "name": job_name(self.id), "state": state, "phase": phase, "error": error,
            "started": started, "finished": finished, "updated": progress.get("updated", last.get("time")),
            "elapsed_seconds": round(elapsed, 3) if elapsed else None, "percent": percent, "eta_seconds": eta,
            "shards": {"total": shards_total, "done": shards_done, "already_done": already},
            "corpus_steps": {"total": len(corpus) + 1 if corpus else 0, "done": steps_done},
            "records": records, "documents": final.get("out", progress.get("documents", 0)),
            "rate": {"records_per_s": None if rate is None else round(rate, 2),
                     "mean_records_per_s": None if mean is None else round(mean, 2)},
            "stages": {"document": plan["document"], "corpus": list(corpus)},
            "has": {"stats": stats is not None, "manifest": (self.path / MANIFEST).is_file(),
                    "train": (self.path / TRAIN_METRICS).is_file(), "rejects": (self.path / "rejects").is_dir()},
        }

    def funnel(self) -> list[dict[str, Any]]:
        """Per-stage counters in pipeline order: stats.json once written, else the live ones; none where the
        folder holds what no counter can be (its status says `unreadable`)."""
        try:
            rows = self._funnel()
            _check_rows(rows)
        except Exception:  # anything the content of the folder makes of the counters
            return []
        return [] if self.unreadable else rows

    def _funnel(self) -> list[dict[str, Any]]:
        with self.lock:
            stats = self._load("stats", STATS, _read_json)
            plan = self._plan()
            events = self._run_events()
            corpus_names = set(plan["corpus"])
            if stats and any(e.get("event") == "job_done" for e in events):
                rows = [dict(r) for r in stats.get("stages", [])]
            else:
                progress = self._load("progress", PROGRESS, _read_json)
                rows = [dict(r) for r in (progress or {}).get("stages") or self._shard_totals()]
                empty = empty_counters(["x"])["x"]
                for e in events:
                    if e.get("event") == "corpus_step_done" and e.get("step") != FINAL_STEP:
                        rows.append({"stage": e["step"], **empty,
                                     **{k: v for k, v in e.items() if k not in ("time", "event", "step")}})
            for e in events:
                if e.get("event") == "corpus_stages_started":
                    corpus_names |= set(e.get("stages", []))
        for row in rows:
            row["kind"] = "read" if row["stage"] == "read" else "corpus" if row["stage"] in corpus_names else "document"
            row["kept_percent"] = round(100.0 * row["docs_out"] / row["docs_in"], 2) if row.get("docs_in") else None
        return rows

    def throughput(self) -> dict[str, Any]:
        """Time series of records read, documents kept and shards done, with rates between points; none where
        the snapshot's points are not numbers."""
        try:
            series = self._throughput()
            json.dumps(series, allow_nan=False)
        except Exception:  # anything the content of the snapshot makes of the series
            return {"started": None, "points": []}
        return series

    def _throughput(self) -> dict[str, Any]:
        progress = self.progress() or {}
        points = (progress.get("series") or {}).get("points") or []
        out = []
        for before, point in zip([None, *points], points, strict=False):
            dt = point[0] - before[0] if before else 0
            out.append({"time": point[0], "records": point[1], "documents": point[2], "shards_done": point[3],
                        "records_per_s": round((point[1] - before[1]) / dt, 2) if before and dt > 0 else None,
                        "documents_per_s": round((point[2] - before[2]) / dt, 2) if before and dt > 0 else None})
        return {"started": progress.get("started"), "points": out}

    def train_metrics(self) -> list[dict[str, Any]]:
        """Every valid line of `train/metrics.jsonl` (each with an int `step` and a number `loss`)."""
        with self.lock:
            rows = self.metrics.read()
        return [r for r in rows if isinstance(r.get("step"), int) and isinstance(r.get("loss"), int | float)]

    def train_spikes(self) -> list[dict[str, Any]]:
        """Flagged steps: the trainer's spikes.jsonl entries where it writes one, else the flagged metrics lines."""
        with self.lock:
            logged = [r for r in self.spike_log.read() if isinstance(r.get("step"), int)]
        if logged:
            return logged
        return [{**r, "reason": r["spike"] if isinstance(r["spike"], str) else None}
                for r in self.train_metrics() if r.get("spike")]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_status(status: dict[str, Any]) -> None:
    """Raise unless every count and time of a status is a number (or, where it may be, None) and the whole
    of it can be sent as JSON: what a crafted file puts there must not reach an answer or a metric."""
    counts = [status["percent"], status["records"], status["documents"], *status["shards"].values(),
              *status["corpus_steps"].values()]
    times = [status[k] for k in ("started", "finished", "updated", "elapsed_seconds", "eta_seconds")]
    if not all(map(_is_number, counts)) or not all(t is None or _is_number(t) for t in [*times,
                                                                                         *status["rate"].values()]):
        msg = "a count or a time of the job that is no number"
        raise TypeError(msg)
    json.dumps(status, allow_nan=False, default=str)  # finite numbers only


def _check_rows(rows: list[dict[str, Any]]) -> None:
    """Raise unless each funnel row names its stage and counts in numbers, as `curate run` writes them."""
    for row in rows:
        tallies = [row.get(k) or 0 for k in ("docs_in", "docs_out", "bytes_in", "bytes_out", "seconds")]
        reasons = [(row.get(k) or {}) for k in ("dropped", "skipped", "bypassed")]
        if not isinstance(row.get("stage"), str) or not all(map(_is_number, tallies)) or not all(
                isinstance(r, dict) and all(isinstance(k, str) and _is_number(n) for k, n in r.items())
                for r in reasons):
            msg = f"a funnel row of the wrong shape: {str(row)[:100]}"
            raise TypeError(msg)
    json.dumps(rows, allow_nan=False, default=str)


KNOWN_EVENTS = {"job_started", "shard_done", "shard_failed", "corpus_stages_started", "corpus_step_done", "job_done",
                "job_failed", "job_interrupted"}


def _state(events: list[dict[str, Any]], progress: dict[str, Any]) -> tuple[str, str | None]:
    """(state, error) of a run from its events, and from whether its driver still lives."""
    names = {e.get("event") for e in events}
    if "job_done" in names:
        return "done", None
    if "job_failed" in names:
        return "failed", next(e.get("error") for e in events if e.get("event") == "job_failed")
    if "job_interrupted" in names:  # stopped by a signal (SIGTERM, Ctrl-C): what is done is kept
        return "interrupted", None
    if not events:
        return "pending", None
    if progress.get("host") == socket.gethostname() and not pid_alive(progress.get("pid", 0)):
        return "interrupted", None  # its driver is gone without a last word (killed, machine crash)
    return "running", None


def _phase(state: str, events: list[dict[str, Any]], corpus: list[str], steps: list[str]) -> str:
    if state == "done":
        return "done"
    if not events:
        return "pending"
    last = str(events[-1].get("event"))
    if last not in KNOWN_EVENTS:  # a later phase (packing, ...) names itself by its events
        return last.removesuffix("_started") if last.endswith("_started") else last.replace("_", " ")
    if FINAL_STEP in steps or (corpus and len(steps) >= len(corpus)):
        return FINAL_STEP
    if any(e.get("event") == "corpus_stages_started" for e in events):
        return f"corpus:{corpus[len(steps)]}"
    return "documents"


def list_jobs(root: str | Path) -> list[Path]:
    """Job folders directly under `root`, newest first."""
    root = Path(root)
    try:
        children = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))]
    except OSError:
        return []
    jobs = [p for p in children if (p / EVENTS).is_file() or (p / "recipe.yaml").is_file()]
    return sorted(jobs, key=lambda p: (p / EVENTS).stat().st_mtime if (p / EVENTS).is_file() else 0, reverse=True)
