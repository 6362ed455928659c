"""Crafted job folders against the status service: no route of another job affected, bounded memory.

Beside a few good job folders (a finished job's files as `curate run` leaves them, `service_load.py`'s), it
builds many crafted ones, each a good job with one file replaced by something hostile: JSON nested 100,000
deep, numbers out of range (1e999, NaN, a 5,000-digit integer), values of the wrong type (also in the progress
snapshot of a job still running, which its status is made of), huge files (a 2 GiB
events.jsonl without a newline, sparse; a 1 GiB stats.json), links (out of the jobs folder, to /dev/zero, a
loop, a FIFO), a recipe.yaml of YAML aliases (billion laughs) and binary garbage. A real `curate serve`
process serves them; every route of every job is asked `--rounds` times (a 2 GiB file is read across polls).

Printed: the cases, the requests, the failures (an answer about a good job, or a whole-service route, that
differs, status or body, from what a service over the good jobs alone answers), the crafted jobs' answers by
status code, and the service's peak RSS beside the good-only service's and beside `--rss-limit-mib`.

    .venv/bin/python benchmarks/service_fuzz.py [--rounds 3] [--good 3] [--rss-limit-mib 400] [--only deep inf]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import figure, write_results
from service_load import serving, write_finished_job  # a sibling script, not a package

DEEP = 100_000
GIB = 1 << 30
JOB_ROUTES = ["", "/funnel", "/stages/read", "/stages/length", "/throughput", "/rejects", "/dedup", "/train",
              "/manifest", "/stats"]
SERVICE_ROUTES = ["/api/jobs", "/healthz", "/metrics"]


def _sparse(path: Path, size: int, head: bytes = b"") -> None:
    with path.open("wb") as f:
        f.write(head)
        f.truncate(size)


def _append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def _still_running(job: Path) -> None:
    """The job without its last word: its status comes from the live progress snapshot, not stats.json."""
    lines = (job / "events.jsonl").read_text().splitlines()
    (job / "events.jsonl").write_text("".join(f"{line}\n" for line in lines if '"job_done"' not in line))


def _rewrite(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def _laughs(levels: int = 9, width: int = 9) -> str:
    lines = ["a0: &a0 [lol]"] + [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * width)}]" for k in range(1, levels + 1)]
    return "name: laughs\n" + "\n".join(lines) + f"\nsources: *a{levels}\n"


def cases(outside: Path) -> dict[str, Callable[[Path], None]]:
    """{case: what it does to a good job folder}."""
    deep = "[" * DEEP + "]" * DEEP
    fifo = outside / "fifo"
    os.mkfifo(fifo)
    (outside / "secret.json").write_text(json.dumps({"secret": "SECRET"}))
    out: dict[str, Callable[[Path], None]] = {}
    for name in ("stats.json", "_progress.json", "manifest.json", "_shards/crawl-0.json"):
        key = name.replace("/", "_").replace(".", "_")
        out[f"deep-{key}"] = lambda job, n=name: (job / n).write_text(deep)
        out[f"inf-{key}"] = lambda job, n=name: (job / n).write_text('{"records": 1e999, "shards": {"total": 1e999}}')
        out[f"nan-{key}"] = lambda job, n=name: (job / n).write_text('{"records": NaN, "documents": -Infinity}')
        out[f"digits-{key}"] = lambda job, n=name: (job / n).write_text('{"records": ' + "9" * 5000 + "}")
        out[f"types-{key}"] = lambda job, n=name: (job / n).write_text(
            '{"records": "x", "stages": {"a": 1}, "shards": [], "series": {"points": [["a", {}, null, 1]]},'
            ' "splits": 7, "documents": {"out": "many"}}')
        out[f"garbage-{key}"] = lambda job, n=name: (job / n).write_bytes(os.urandom(4096))
        out[f"link-out-{key}"] = lambda job, n=name: ((job / n).unlink(missing_ok=True),
                                                      (job / n).symlink_to(outside / "secret.json"))
        out[f"fifo-{key}"] = lambda job, n=name: ((job / n).unlink(missing_ok=True), (job / n).symlink_to(fifo))
    for name in ("events.jsonl", "train/metrics.jsonl"):
        key = name.replace("/", "_").replace(".", "_")
        out[f"deep-line-{key}"] = lambda job, n=name: _append(job / n, deep + "\n")
        out[f"huge-numbers-{key}"] = lambda job, n=name: _append(
            job / n, '{"time": 1e999, "event": "job_started", "shards": 1e999, "step": 1, "loss": 1e999}\n')
        out[f"2gib-no-newline-{key}"] = lambda job, n=name: _sparse(job / n, 2 * GIB, b'{"event": "')
        out[f"dev-zero-{key}"] = lambda job, n=name: ((job / n).unlink(), (job / n).symlink_to("/dev/zero"))
        out[f"loop-{key}"] = lambda job, n=name: ((job / n).unlink(), (job / n).symlink_to(job / n))
    out["running-inf-progress"] = lambda job: (_still_running(job), _rewrite(job / "_progress.json", "3500", "1e999"))
    out["running-digits-progress"] = lambda job: (_still_running(job), _rewrite(job / "_progress.json", "3500",
                                                                                "9" * 5000))
    out["running-types-progress"] = lambda job: (_still_running(job), _rewrite(job / "_progress.json", "3500",
                                                                               '"many"'))
    out["1gib-stats"] = lambda job: _sparse(job / "stats.json", GIB, b'{"a": "')
    out["laughs-recipe"] = lambda job: (job / "recipe.yaml").write_text(_laughs())
    out["deep-recipe"] = lambda job: (job / "recipe.yaml").write_text("a: " + "[" * DEEP + "]" * DEEP + "\n")
    out["garbage-recipe"] = lambda job: (job / "recipe.yaml").write_bytes(os.urandom(4096))
    out["rejects-link-out"] = lambda job: ((job / "rejects").mkdir(), (job / "rejects" / "stage=x").symlink_to("/"))
    out["train-is-dev-zero"] = lambda job: (shutil.rmtree(job / "train"), (job / "train").symlink_to("/dev"))
    return out


def build(folder: Path, good: int, crafted: dict[str, Callable[[Path], None]] | None) -> list[str]:
    """`good` finished jobs (and a crafted one per case); the good jobs' ids."""
    template = folder.parent / f"{folder.name}-template"
    template.mkdir()
    source = template / write_finished_job(template)
    folder.mkdir()
    ids = []
    for i in range(good):
        ids.append(f"good{i}-0123456789")
        shutil.copytree(source, folder / ids[-1], symlinks=True)
    for case, harm in (crafted or {}).items():
        job = folder / f"{case}-0123456789"
        shutil.copytree(source, job, symlinks=True)
        harm(job)
    return ids


class PeakRss:
    """The most resident memory a process held, sampled every 20 ms."""

    def __init__(self, pid: int) -> None:
        self.process, self.peak, self.done = psutil.Process(pid), 0, threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.wait(0.02):
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.Error:
                return

    def stop(self) -> int:
        self.done.set()
        self.thread.join()
        return self.peak


def ask(client: httpx.Client, url: str, path: str) -> tuple[int, str]:
    try:
        response = client.get(url + path, timeout=10)
    except httpx.HTTPError as exc:
        return -1, f"{type(exc).__name__}: {exc}"
    return response.status_code, response.text


def comparable(path: str, body: str, good: list[str]) -> object:
    """An answer as compared across the two services: the job list only for the good jobs; /metrics only the
    lines of the good jobs; /healthz without its jobs folder."""
    if path == "/metrics":
        return sorted(line for line in body.splitlines() if any(f'job="{g}"' in line for g in good))
    data = json.loads(body)
    if path == "/api/jobs":
        return [j for j in data["jobs"] if j["id"] in good]
    if path == "/healthz":
        return {k: v for k, v in data.items() if k != "jobs_dir"}
    return data


def answers(folder: Path, good: list[str], every: list[str], rounds: int
            ) -> tuple[dict[str, list[object]], Counter, int, int, float]:
    """(every answer to each good path, crafted answers by status, requests, peak RSS, seconds). Each round
    asks the service routes first (a fresh service's first `/api/jobs` reads every folder), then the crafted
    jobs' routes, then the good jobs' and the service routes again."""
    good_paths = [f"/api/jobs/{g}{r}" for g in good for r in JOB_ROUTES] + SERVICE_ROUTES
    crafted_paths = [f"/api/jobs/{j}{r}" for j in every if j not in good for r in JOB_ROUTES]
    seen: dict[str, list[object]] = {}
    crafted: Counter = Counter()
    requests = 0
    with serving(folder) as (server, url), httpx.Client() as client:
        rss = PeakRss(server.pid)
        started = time.perf_counter()
        for _ in range(rounds):
            for path in SERVICE_ROUTES + crafted_paths + good_paths:
                status, body = ask(client, url, path)
                requests += 1
                if path in crafted_paths:
                    crafted[status] += 1
                else:
                    seen.setdefault(path, []).append(
                        (status, comparable(path, body, good) if status == 200 else body[:300]))
            time.sleep(0.6)  # past the answers' ttl (0.5 s): the next round reads the folders again
        seconds = time.perf_counter() - started
        peak = rss.stop()
    return seen, crafted, requests, peak, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="times every route of every job is asked")
    parser.add_argument("--good", type=int, default=3, help="good job folders beside the crafted ones")
    parser.add_argument("--rss-limit-mib", type=float, default=400.0, help="the service's peak RSS limit")
    parser.add_argument("--only", nargs="+", help="only the cases whose name holds one of these (a reproducer)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="service-fuzz-") as tmp:
        base = Path(tmp)
        outside = base / "outside"
        outside.mkdir()
        crafted = {name: harm for name, harm in cases(outside).items()
                   if not args.only or any(part in name for part in args.only)}
        good = build(base / "good", args.good, None)
        build(base / "fuzz", args.good, crafted)
        every = sorted(p.name for p in (base / "fuzz").iterdir())
        alone, _, _, alone_peak, _ = answers(base / "good", good, [], args.rounds)
        beside, by_status, requests, peak, seconds = answers(base / "fuzz", good, every, args.rounds)
    expected = {path: given[-1] for path, given in alone.items()}
    failures = {path: next(a for a in beside.get(path, [None]) if a != expected[path]) for path in expected
                if any(a != expected[path] for a in beside.get(path, [None]))}
    print(f"cases: {len(crafted)} crafted job folders beside {args.good} good ones; {requests:,} requests in "
          f"{seconds:.1f} s ({args.rounds} rounds of {len(JOB_ROUTES)} job routes per job and "
          f"{len(SERVICE_ROUTES)} service routes)")
    print(f"crafted jobs' answers by status: {dict(sorted(by_status.items()))} (-1: no answer in 10 s)")
    print(f"failures (good jobs' or service routes' answers differing from a service over the good jobs alone): "
          f"{len(failures)} of {len(alone)} paths")
    for path, answer in list(failures.items())[:20]:
        print(f"  {path}: {str(answer)[:200]}")
    mib = 1 << 20
    verdict = "within" if peak / mib <= args.rss_limit_mib else "OVER"
    print(f"service peak RSS: {peak / mib:.0f} MiB with the crafted folders, {alone_peak / mib:.0f} MiB over the good "
          f"ones alone ({peak / max(alone_peak, 1):.2f}x); limit {args.rss_limit_mib:.0f} MiB: {verdict}")
    write_results("service_fuzz", [
        figure(f"good answers changed by {len(crafted)} crafted job folders", len(failures), "paths", target="0",
               met=not failures, note=f"of {len(alone)} paths; {requests:,} requests"),
        figure("service peak RSS with the crafted folders", peak / mib, "MiB", "limit", args.rss_limit_mib,
               target=f"<= {args.rss_limit_mib:.0f} MiB", met=verdict == "within"),
    ])
    sys.exit(1 if failures or verdict == "OVER" else 0)


if __name__ == "__main__":
    main()
