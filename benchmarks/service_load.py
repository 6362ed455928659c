"""The status service under load while a job runs: requests/s, latency, errors, and the job's slowdown.

A real job (the real pages of `corpus.py`, `copies` times, through extract, length and exact_dedup)
runs as `curate run` in its own process, three times on fresh output folders:

1. without load: the job's own time;
2. **paced**: `clients` dashboards each polling one status endpoint a second (a refresh interval
   like the dashboard's), for `seconds`, against a `curate serve` process;
3. **closed loop**: the same clients each sending its next request as soon as the last answered:
   the most the service serves, and what queueing does to latency then;

and then both loads again once no job runs, to tell the service's own cost from the job's.

The status endpoints are taken in turn: job list, one job, funnel, throughput, training curve.
The load comes from a separate process (aiohttp on uvloop, one keep-alive connection per client;
`--client-loop asyncio` for the plain asyncio loop of earlier figures), so on a small machine the job
shares its cores with both the service and the load generator: the slowdown printed is what one
machine running all three sees. Job time is `stats.json`'s wall_seconds.

CPU is printed per process, as CPU seconds per second of load ("cores"): the service's, the load
generator's (its own process time) and the whole machine's (busy time of all CPUs, whoever used it),
with ms per request for the first two. When the generator needs more CPU per request than the
service, it is the generator that bounds a closed loop on a small machine, not the service.

    .venv/bin/python benchmarks/service_load.py [--clients 200] [--seconds 20] [--copies 2] [--files 16]
                                                [--client-loop uvloop|asyncio]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

ENDPOINTS = ["/api/jobs", "/api/jobs/{job}", "/api/jobs/{job}/funnel", "/api/jobs/{job}/throughput",
             "/api/jobs/{job}/train"]


# -- the load generator (runs in its own process) ---------------------------------------------------


async def _client(session, url: str, job: str, until: float, paced: bool, out: list, errors: list) -> None:
    rng = random.Random()
    i = rng.randrange(len(ENDPOINTS))
    next_at = time.perf_counter() + (rng.random() if paced else 0.0)  # dashboards are not in step
    while True:
        if paced:
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
            next_at += 1.0
        started = time.perf_counter()
        if started >= until:
            return
        path = ENDPOINTS[i % len(ENDPOINTS)].format(job=job)
        i += 1
        try:
            async with session.get(url + path) as response:
                await response.read()
                if response.status != 200:
                    errors.append(f"{response.status} {path}")
        except Exception as exc:  # every failure is a counted error, never a crash of the load
            errors.append(f"{type(exc).__name__} {path}")
        out.append(time.perf_counter() - started)


async def _load(url: str, job: str, clients: int, seconds: float, paced: bool) -> dict:
    import aiohttp

    latencies: list[float] = []
    errors: list[str] = []
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = time.perf_counter()
        cpu_started = time.process_time()  # the generator's own CPU, over the same window as its requests
        until = started + seconds
        await asyncio.gather(*(_client(session, url, job, until, paced, latencies, errors) for _ in range(clients)))
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    latencies.sort()

    def pct(q: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")

    return {"requests": len(latencies), "rps": len(latencies) / elapsed, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "max_ms": 1000 * latencies[-1] if latencies else float("nan"), "errors": len(errors),
            "error_kinds": sorted(set(errors))[:5], "client_cpu_ms_per_request": 1000 * cpu / max(len(latencies), 1),
            "client_cores": cpu / elapsed}


def run_load(url: str, job: str, clients: int, seconds: float, paced: bool, client_loop: str) -> dict:
    """The load on uvloop where asked and installed (uvicorn[standard] brings it): the same requests on the
    same connections, at ~1/5 less client CPU per request, which on a 2-core machine is CPU the job and
    the service get back."""
    load = _load(url, job, clients, seconds, paced)
    if client_loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return {**uvloop.run(load), "client_loop": "uvloop"}
    return {**asyncio.run(load), "client_loop": "asyncio"}


# -- the driver -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_recipe(folder: Path, corpus: Path) -> Path:
    recipe = folder / "recipe.yaml"
    recipe.write_text(f"""
name: loaded
ray: {{num_cpus: 2}}
sources: [{{name: web, format: warc, paths: ["{corpus}/*.warc.gz"]}}]
stages:
  - extract: {{timeout_s: 2}}
  - length: {{min_words: 50}}
  - exact_dedup: {{}}
""")
    return recipe


def run_job(recipe: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipelines.cli", "run", str(recipe), "--output", str(out),
                             "--quiet"], cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen, out: Path) -> dict:
    _, err = proc.communicate(timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"the job failed:\n{err.decode()[-3000:]}")
    job = next(out.iterdir())
    return json.loads((job / "stats.json").read_text())


@contextlib.contextmanager
def serving(out: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    """`curate serve` over `out` on a free port, healthy: (its process, its URL); stopped at the end."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "serve", "--jobs", str(out), "--port",
                               str(port)], cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, server)
        yield server, url
    finally:
        server.kill()
        server.wait()


def loaded_run(recipe: Path, out: Path, args: argparse.Namespace, paced: bool) -> tuple[dict, dict, float]:
    """(load figures, job stats, seconds of the load window the job was still running)."""
    out.mkdir()
    with serving(out) as (server, url):
        proc = run_job(recipe, out)
        job_id = _wait_job(out, proc)
        started = time.time()
        figures = _measured_load(server, url, job_id, args, paced)
        stats = finish(proc, out)
        overlap = min(args.seconds, _events_end(out) - started)
        return figures, stats, overlap


def idle_load(out: Path, args: argparse.Namespace, paced: bool) -> dict:
    """The load against a finished job's folder: what the service costs without a job beside it."""
    with serving(out) as (server, url):
        return _measured_load(server, url, next(out.iterdir()).name, args, paced)


def _measured_load(server: subprocess.Popen, url: str, job: str, args: argparse.Namespace, paced: bool) -> dict:
    """The load generator's figures, with the CPU time the service spent answering: unlike latency, that
    does not depend on what else the machine runs."""
    import psutil

    service = psutil.Process(server.pid)
    before = sum(service.cpu_times()[:2])
    machine_before = _busy_seconds()
    load = subprocess.run([sys.executable, __file__, "--load", url, job, str(args.clients), str(args.seconds),
                           "paced" if paced else "closed", args.client_loop], capture_output=True, text=True,
                          cwd=PROJECT_ROOT)
    if load.returncode != 0:
        raise SystemExit(load.stderr[-3000:])
    figures = json.loads(load.stdout)
    cpu = sum(service.cpu_times()[:2]) - before
    figures["service_cpu_ms_per_request"] = 1000 * cpu / max(figures["requests"], 1)
    figures["service_cores"] = cpu / args.seconds
    # Includes the generator's start (~0.3 s of imports): a little above the other columns' sum.
    figures["machine_cores"] = (_busy_seconds() - machine_before) / args.seconds
    return figures


def _busy_seconds() -> float:
    """CPU seconds all CPUs spent not idle, by any process (the job's Ray workers included)."""
    import psutil

    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def _wait_healthy(url: str, server: subprocess.Popen) -> None:
    import urllib.request

    for _ in range(300):
        if server.poll() is not None:
            raise SystemExit(server.stderr.read().decode()[-2000:])
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("curate serve did not start")


def _wait_job(out: Path, proc: subprocess.Popen) -> str:
    """The job's id once its first progress snapshot exists (the job is starting Ray, then reading)."""
    while True:
        jobs = [p for p in out.iterdir() if (p / "_progress.json").is_file()] if out.is_dir() else []
        if jobs:
            return jobs[0].name
        if proc.poll() is not None:
            raise SystemExit(proc.stderr.read().decode()[-3000:])
        time.sleep(0.05)


def _events_end(out: Path) -> float:
    job = next(out.iterdir())
    last = (job / "events.jsonl").read_text().splitlines()[-1]
    return json.loads(last)["time"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--copies", type=int, default=2, help="each real page this many times (default 2)")
    parser.add_argument("--files", type=int, default=16, help="input shards (default 16)")
    parser.add_argument("--client-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="the load generator's event loop (default uvloop where installed)")
    parser.add_argument("--load", nargs=6, metavar=("URL", "JOB", "CLIENTS", "SECONDS", "MODE", "LOOP"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        url, job, clients, seconds, mode, loop = args.load
        print(json.dumps(run_load(url, job, int(clients), float(seconds), mode == "paced", loop)))
        return

    try:  # python benchmarks/service_load.py puts benchmarks/ on sys.path
        from corpus import DataMissing, build_warc_corpus, code_version
    except ImportError:  # python -m benchmarks.service_load
        from benchmarks.corpus import DataMissing, build_warc_corpus, code_version

    load1, load5, _ = os.getloadavg()
    print(f"{code_version()}; load average before: {load1:.2f} / {load5:.2f} (1 / 5 min), {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="service-load-") as tmp:
        tmp = Path(tmp)
        try:
            build_warc_corpus(tmp / "corpus", copies=args.copies, files=args.files, verify=False)
        except DataMissing as exc:
            print(f"skipped: {exc}")
            return
        recipe = write_recipe(tmp, tmp / "corpus")
        baseline_out = tmp / "baseline"
        baseline = finish(run_job(recipe, baseline_out), baseline_out)
        base_s = baseline["wall_seconds"]
        print(f"job: {baseline['documents']['records_read']:,} pages in {args.files} shards, "
              f"{baseline['documents']['out']:,} kept; without load {base_s:.1f} s")
        rows = []
        for paced in (True, False):
            figures, stats, overlap = loaded_run(recipe, tmp / ("paced" if paced else "closed"), args, paced)
            rows.append((paced, figures, stats["wall_seconds"], overlap))
        idle = [(paced, idle_load(tmp / "closed", args, paced)) for paced in (True, False)]
    loops = sorted({f.get("client_loop", "?") for _, f, _, _ in rows} | {f.get("client_loop", "?") for _, f in idle})
    print(f"\n{args.clients} clients for {args.seconds:.0f} s against {', '.join(ENDPOINTS)} "
          f"(load generator on {'/'.join(loops)})")
    print(f"{'':<32} {'':>7} {'':>7} {'':>7} {'':>7} {'':>6} {'service':>11} {'generator':>11} {'all':>5}")
    print(f"{'mode':<32} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'errors':>6} "
          f"{'ms/req':>6} {'cores':>5} {'ms/req':>6} {'cores':>5} {'cores':>5} {'job s':>6} {'vs no load':>10} "
          f"{'load in job':>11}")
    print(f"{'no load':<32} {'':>7} {'':>7} {'':>7} {'':>7} {'':>6} {'':>6} {'':>5} {'':>6} {'':>5} {'':>5} "
          f"{base_s:>6.1f} {'1.00x':>10}")

    def figures(f: dict) -> str:
        return (f"{f['rps']:>7.0f} {f['p50_ms']:>7.1f} {f['p99_ms']:>7.1f} {f['max_ms']:>7.0f} {f['errors']:>6} "
                f"{f['service_cpu_ms_per_request']:>6.3f} {f['service_cores']:>5.2f} "
                f"{f['client_cpu_ms_per_request']:>6.3f} {f['client_cores']:>5.2f} {f['machine_cores']:>5.2f}")

    for paced, f, job_s, overlap in rows:
        mode = "paced: 1 request/s per client" if paced else "closed loop: back to back"
        print(f"{mode:<32} {figures(f)} {job_s:>6.1f} {job_s / base_s:>9.2f}x {overlap:>9.1f} s")
        if f["error_kinds"]:
            print(f"   errors seen: {', '.join(f['error_kinds'])}")
    for paced, f in idle:
        print(f"{'paced, after the job' if paced else 'closed loop, after the job':<32} {figures(f)}")
    load1, load5, _ = os.getloadavg()
    print(f"load average after: {load1:.2f} / {load5:.2f}; cores: CPU seconds per second of load, of the service, "
          f"the load generator and the whole machine ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
