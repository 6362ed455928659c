"""`curate status`: the jobs (or one job and its funnel) as the status service reports them."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from rich.console import Console
from rich.table import Table

from pipelines.console import funnel_table


class ServiceError(Exception):
    pass


def fetch(url: str, path: str, timeout: float = 10.0) -> Any:
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = json.loads(exc.read() or b"{}").get("detail", exc.reason)
        msg = f"{exc.code}: {detail}"
        raise ServiceError(msg) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:  # ValueError: no URL at all (`--url notaurl`)
        msg = f"no status service at {url} ({exc}); start one with `curate serve --jobs DIR`"
        raise ServiceError(msg) from None


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _rate(job: dict[str, Any]) -> str:
    recent, mean = job["rate"]["records_per_s"], job["rate"]["mean_records_per_s"]
    rate = recent if recent is not None else mean
    return "-" if rate is None else f"{rate:,.1f}"


def jobs_table(jobs: list[dict[str, Any]]) -> Table:
    table = Table(title="jobs", title_justify="left")
    for column in ("job", "state", "phase", "done", "shards", "records", "kept", "records/s", "ETA"):
        table.add_column(column, justify="left" if column in ("job", "state", "phase") else "right",
                         no_wrap=column == "job")  # ids are copied from here: never cut them
    for j in jobs:
        shards = f"{j['shards']['done']}/{j['shards']['total']}"
        table.add_row(j["id"], j["state"], j["phase"], f"{j['percent']:.1f}%", shards, f"{j['records']:,}",
                      f"{j['documents']:,}", _rate(j), _duration(j["eta_seconds"]))
    return table


def job_funnel_table(job: dict[str, Any], funnel: dict[str, Any]) -> Table:
    """`curate run`'s funnel table, of a job the service shows (skips and what went by unjudged too)."""
    final = "final" if funnel["final"] else "live"
    return funnel_table(f"{job['id']}: {job['state']}, {job['phase']}, {job['percent']:.1f}% ({final} funnel)",
                        funnel["stages"])


class NoSuchJob(ServiceError):
    """No job's id is or starts with the one asked for (yet: a run just started writes its folder soon)."""


def resolve(url: str, job: str) -> str:
    """The job id `job` names: itself, or the one job whose id starts with it."""
    ids = [j["id"] for j in fetch(url, "/api/jobs")["jobs"]]
    if job in ids:
        return job
    matches = [i for i in ids if i.startswith(job)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        msg = f"no job {job!r}"
        raise NoSuchJob(msg)
    msg = f"{job!r} names several jobs: {', '.join(matches)}"
    raise ServiceError(msg)


def _awaited(url: str, job: str, watch: float, console: Console) -> str:
    """`resolve`, waiting for the job to appear: `status --watch` started with the run it watches exited at once."""
    said = False
    while True:
        try:
            return resolve(url, job)
        except NoSuchJob:
            if not said:
                console.print(f"no job {job!r} yet: waiting for it (Ctrl-C stops)", highlight=False)
                said = True
            time.sleep(watch)


def show(url: str, job: str | None, console: Console) -> bool:
    """Print once; True when there is nothing left to watch (the job, or every job, has ended)."""
    if job is None:
        jobs = fetch(url, "/api/jobs")["jobs"]
        console.print(jobs_table(jobs))
        return all(j["state"] != "running" for j in jobs)
    quoted = urllib.parse.quote(job, safe="")
    status = fetch(url, f"/api/jobs/{quoted}")
    console.print(job_funnel_table(status, fetch(url, f"/api/jobs/{quoted}/funnel")))
    console.print(f"records read {status['records']:,}, documents kept {status['documents']:,}, "
                  f"{_rate(status)} records/s, ETA {_duration(status['eta_seconds'])}, "
                  f"elapsed {_duration(status['elapsed_seconds'])}")
    if status["error"]:
        console.print(f"error: {status['error']}", highlight=False)
    return status["state"] != "running"


def status(url: str, job: str | None = None, watch: float | None = None, console: Console | None = None) -> int:
    console = console or Console(width=None if Console().is_terminal else 160)
    try:
        job = (_awaited(url, job, watch, console) if watch else resolve(url, job)) if job else None
        while True:
            if watch:
                console.clear()
            ended = show(url, job, console)
            if not watch or ended:
                return 0
            time.sleep(watch)
    except ServiceError as exc:
        console.print(f"curate status: {exc}", style="red", highlight=False)
        return 2
    except KeyboardInterrupt:
        return 0
