"""The status service under load while a job runs: requests/s, latency, errors, and the job's slowdown.

A real job (the real pages of `warc_corpus.py`, `copies` times, through extract, length and exact_dedup)
runs as `curate run` in its own process, three times on fresh output folders:

1. without load: the job's own time;
2. **paced**: `clients` dashboards each polling one status endpoint a second (a refresh interval
   like the dashboard's), for `seconds`, against a `curate serve` process;
3. **closed loop**: the same clients each sending its next request as soon as the last answered:
   the most the service serves, and what queueing does to latency then;

and then both loads again once no job runs, to tell the service's own cost from the job's.

4. **concurrency**: once no job runs, closed loops of 200 and 1,000 clients (`--concurrency`) on the
   status endpoints and on `/healthz`, beside the same loads on two reference servers in their own
   processes, with the service's uvicorn settings: a trivial FastAPI route and a bare ASGI app
   answering a constant (the most uvicorn itself serves). The ratio printed is the service's req/s to
   each reference's at the same concurrency. Here the load comes from `--client-procs` generator
   processes (clients split among them), so that one Python process is not what bounds 1,000 clients.
   Every load is bounded in time (`--seconds`) and in requests (`--max-requests` each).
   `--concurrency-only` skips the job runs and loads a job folder written here instead (a finished
   job's files as `curate run` leaves them; the service reads only these few files).

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
                                                [--client-loop uvloop|asyncio] [--concurrency 200 1000]
                                                [--client-procs 2] [--max-requests 200000] [--concurrency-only]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pipelines.net import free_port

try:  # python benchmarks/service_load.py puts benchmarks/ on sys.path
    from _results import code_version, figure, write_results
except ImportError:  # python -m benchmarks.service_load
    from benchmarks._results import code_version, figure, write_results

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

ENDPOINTS = ["/api/jobs", "/api/jobs/{job}", "/api/jobs/{job}/funnel", "/api/jobs/{job}/throughput",
             "/api/jobs/{job}/train"]


# -- the load generator (runs in its own process) ---------------------------------------------------


async def _client(session, url: str, paths: list[str], until: float, most: int, paced: bool, out: list,
                  errors: list) -> None:
    rng = random.Random()
    i = rng.randrange(len(paths))
    next_at = time.perf_counter() + (rng.random() if paced else 0.0)  # dashboards are not in step
    for _ in range(most):
        if paced:
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
            next_at += 1.0
        started = time.perf_counter()
        if started >= until:
            return
        path = paths[i % len(paths)]
        i += 1
        try:
            async with session.get(url + path) as response:
                await response.read()
                if response.status != 200:
                    errors.append(f"{response.status} {path}")
        except Exception as exc:  # every failure is a counted error, never a crash of the load
            errors.append(f"{type(exc).__name__} {path}")
        out.append(time.perf_counter() - started)


async def _load(url: str, paths: list[str], clients: int, seconds: float, most: int, paced: bool,
                start_at: float) -> dict:
    """One generator's raw figures: every latency (s), errors, its window and its own CPU over it."""
    import aiohttp

    latencies: list[float] = []
    errors: list[str] = []
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await asyncio.sleep(max(0.0, start_at - time.time()))  # generator processes start together
        started = time.perf_counter()
        cpu_started = time.process_time()  # the generator's own CPU, over the same window as its requests
        until = started + seconds
        per_client = max(1, most // clients)
        await asyncio.gather(*(_client(session, url, paths, until, per_client, paced, latencies, errors)
                               for _ in range(clients)))
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    return {"latencies": latencies, "errors": errors, "elapsed": elapsed, "cpu": cpu}


def summary(parts: list[dict]) -> dict:
    """The figures of one load, from its generators' raw figures."""
    latencies = sorted(x for part in parts for x in part["latencies"])
    errors = [e for part in parts for e in part["errors"]]
    elapsed = max(part["elapsed"] for part in parts)
    cpu = sum(part["cpu"] for part in parts)

    def pct(q: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")

    return {"requests": len(latencies), "rps": len(latencies) / elapsed, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "max_ms": 1000 * latencies[-1] if latencies else float("nan"), "errors": len(errors),
            "error_kinds": sorted(set(errors))[:5], "client_cpu_ms_per_request": 1000 * cpu / max(len(latencies), 1),
            "client_cores": cpu / elapsed}


def run_load(url: str, paths: list[str], clients: int, seconds: float, most: int, paced: bool, client_loop: str,
             start_at: float) -> dict:
    """The load on uvloop where asked and installed (uvicorn[standard] brings it): the same requests on the
    same connections, at ~1/5 less client CPU per request, which on a 2-core machine is CPU the job and
    the service get back."""
    load = _load(url, paths, clients, seconds, most, paced, start_at)
    if client_loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return {**uvloop.run(load), "client_loop": "uvloop"}
    return {**asyncio.run(load), "client_loop": "asyncio"}


# -- the reference servers (run in their own processes) ----------------------------------------------

REFERENCE_BODY = b'{"status":"ok"}'


async def bare_asgi(scope: dict, receive, send) -> None:
    """The least an ASGI app can do: a constant JSON answer to everything."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"15")]})
    await send({"type": "http.response.body", "body": REFERENCE_BODY})


def serve_reference(kind: str, port: int) -> None:
    """A trivial endpoint under uvicorn with the service's own settings (`pipelines.service.server`)."""
    import uvicorn

    app = bare_asgi
    if kind == "fastapi":
        from fastapi import FastAPI

        app = FastAPI()

        @app.get("/healthz")
        async def healthz() -> dict[str, str]:
            return {"status": "ok"}

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, backlog=4096,
                timeout_keep_alive=30)


# -- the driver -------------------------------------------------------------------------------------



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
def serving(out: Path | None, reference: str | None = None) -> Iterator[tuple[subprocess.Popen, str]]:
    """`curate serve` over `out` (or the `reference` server) on a free port, healthy: (its process, its URL);
    stopped at the end."""
    port = free_port()
    command = ([__file__, "--reference", reference, str(port)] if reference else
               ["-m", "pipelines.cli", "serve", "--jobs", str(out), "--port", str(port)])
    server = subprocess.Popen([sys.executable, *command], cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
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


def _measured_load(server: subprocess.Popen, url: str, job: str, args: argparse.Namespace, paced: bool, *,
                   clients: int | None = None, paths: str = "status", procs: int = 1) -> dict:
    """The load generators' figures, with the CPU time the service spent answering: unlike latency, that
    does not depend on what else the machine runs. `clients` split among `procs` generator processes."""
    import psutil

    clients = clients or args.clients
    service = psutil.Process(server.pid)
    start_at = time.time() + 1.0 + 0.2 * procs  # past every generator's imports
    shares = [clients // procs + (i < clients % procs) for i in range(procs)]
    with tempfile.TemporaryDirectory(prefix="service-load-generators-") as folder:
        results = [Path(folder) / f"{i}.json" for i in range(procs)]  # files: nothing else a process prints mixes in
        generators = [subprocess.Popen([sys.executable, __file__, "--load", url, job, str(share), str(args.seconds),
                                        "paced" if paced else "closed", args.client_loop, paths,
                                        str(args.max_requests // procs), str(start_at), str(result)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT)
                      for share, result in zip(shares, results, strict=True)]
        time.sleep(max(0.0, start_at - time.time()))
        before = sum(service.cpu_times()[:2])
        machine_before = _busy_seconds()
        errors = [g.communicate(timeout=args.seconds + 120)[1] for g in generators]
        cpu = sum(service.cpu_times()[:2]) - before
        busy = _busy_seconds() - machine_before
        if any(g.returncode != 0 for g in generators):
            raise SystemExit("\n".join(err[-3000:] for err in errors))
        parts = [json.loads(result.read_text()) for result in results]
    figures = {**summary(parts), "client_loop": parts[0]["client_loop"]}
    window = max(part["elapsed"] for part in parts)
    figures["service_cpu_ms_per_request"] = 1000 * cpu / max(figures["requests"], 1)
    figures["service_cores"] = cpu / window
    figures["machine_cores"] = busy / window
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


def write_finished_job(jobs: Path) -> str:
    """A finished job's folder as `curate run` leaves it (what the status endpoints read), without running one."""
    job = jobs / "loaded-0123456789"
    (job / "_shards").mkdir(parents=True)
    (job / "train").mkdir()
    (job / "recipe.yaml").write_text("name: loaded\nsources: [{name: web, format: warc, paths: [x.warc.gz]}]\n"
                                     "stages:\n  - length: {min_words: 50}\n  - exact_dedup: {}\n")
    stages = [{"stage": s, "docs_in": 3500, "docs_out": 3000 - 100 * i, "dropped": {"too_short": 500 + 100 * i},
               "skipped": {}, "counts": {}, "bytes_in": 10**7, "bytes_out": 9 * 10**6, "seconds": 12.5}
              for i, s in enumerate(("read", "length", "exact_dedup"))]
    events = [{"time": 100.0, "event": "job_started", "shards": 16, "already_done": 0}]
    events += [{"time": 100.0 + i, "event": "shard_done", "shard": f"crawl-{i}"} for i in range(16)]
    events += [{"time": 117.0, "event": "corpus_stages_started", "stages": ["exact_dedup"]},
               {"time": 118.0, "event": "corpus_step_done", "step": "exact_dedup"},
               {"time": 120.0, "event": "job_done"}]
    (job / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    for i in range(16):
        (job / "_shards" / f"crawl-{i}.json").write_text(json.dumps({"counters": {}}))
    points = [[100.0 + t, 175 * t, 150 * t, t * 16 // 20] for t in range(21)]
    (job / "_progress.json").write_text(json.dumps({
        "pid": 0, "host": "elsewhere", "started": 100.0, "updated": 120.0, "shards_done": 16, "records": 3500,
        "documents": 2800, "stages": stages, "series": {"columns": ["time", "records", "documents", "shards_done"],
                                                          "points": points}}))
    (job / "stats.json").write_text(json.dumps({"wall_seconds": 20.0, "shards": {"total": 16},
                                                "documents": {"records_read": 3500, "out": 2800}, "stages": stages}))
    (job / "train" / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "loss": 3.0 - s / 200, "lr": 3e-4, "spike": None}) + "\n" for s in range(1, 301)))
    return job.name


def concurrency_loads(out: Path, args: argparse.Namespace) -> list[tuple[str, int, dict]]:
    """(server, clients, figures): closed loops on the service and the reference servers at each concurrency."""
    job = next(p.name for p in out.iterdir() if p.is_dir())
    rows = []
    servers = (("service: status endpoints", None, "status"), ("service: /healthz", None, "healthz"),
               ("trivial FastAPI route", "fastapi", "healthz"), ("bare uvicorn ASGI app", "asgi", "healthz"))
    for name, reference, paths in servers:
        with serving(out, reference) as (server, url):
            for clients in args.concurrency:
                figures = _measured_load(server, url, job, args, False, clients=clients, paths=paths,
                                         procs=args.client_procs)
                rows.append((name, clients, figures))
    return rows


def print_concurrency(rows: list[tuple[str, int, dict]], args: argparse.Namespace) -> None:
    print(f"\nconcurrency: closed loops for {args.seconds:.0f} s (at most {args.max_requests:,} requests each), "
          f"clients split among {args.client_procs} generator processes; no job running")
    print(f"{'server':<28} {'clients':>7} {'req/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} {'service':>7} "
          f"{'generator':>9} {'all':>5}  {'req/s vs trivial':>16} {'req/s vs bare':>13} {'CPU/req vs bare':>15}")
    print(f"{'':<28} {'':>7} {'':>7} {'':>8} {'':>8} {'':>6} {'ms/req':>7} {'ms/req':>9} {'cores':>5}  "
          f"{'FastAPI':>16} {'ASGI':>13} {'ASGI':>15}")
    by = {(name, clients): f for name, clients, f in rows}
    for name, clients, f in rows:
        fastapi, asgi = by[("trivial FastAPI route", clients)], by[("bare uvicorn ASGI app", clients)]
        cpu = f["service_cpu_ms_per_request"] / asgi["service_cpu_ms_per_request"]
        print(f"{name:<28} {clients:>7} {f['rps']:>7.0f} {f['p50_ms']:>8.1f} {f['p99_ms']:>8.1f} {f['errors']:>6} "
              f"{f['service_cpu_ms_per_request']:>7.3f} {f['client_cpu_ms_per_request']:>9.3f} "
              f"{f['machine_cores']:>5.2f}  {f['rps'] / fastapi['rps']:>15.2f}x {f['rps'] / asgi['rps']:>12.2f}x "
              f"{cpu:>14.2f}x")
        if f["error_kinds"]:
            print(f"   errors seen: {', '.join(f['error_kinds'])}")
    print("ms/req: CPU per request of the server (service or reference) and of the load generators; when the "
          "generators need more per request than the server, they bound the closed loop, not the server. On a busy "
          "machine req/s and latency follow the CPU each process gets; CPU per request does not")


def concurrency_figures(rows: list[tuple[str, int, dict]]) -> list[dict]:
    """The service's req/s in the closed loops, against the bare uvicorn ASGI app at the same clients."""
    bare = {clients: f for name, clients, f in rows if name == "bare uvicorn ASGI app"}
    return [figure(f"{name}, {clients} clients, closed loop", f["rps"], "req/s", "bare uvicorn ASGI app",
                   bare[clients]["rps"], note=f"p99 {f['p99_ms']:.1f} ms, {f['errors']} errors, "
                                              f"{f['service_cpu_ms_per_request']:.3f} ms service CPU per request")
            for name, clients, f in rows if name not in ("bare uvicorn ASGI app", "trivial FastAPI route")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--copies", type=int, default=2, help="each real page this many times (default 2)")
    parser.add_argument("--files", type=int, default=16, help="input shards (default 16)")
    parser.add_argument("--client-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="the load generator's event loop (default uvloop where installed)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[200, 1000],
                        help="clients of the closed loops of the concurrency section (default 200 1000)")
    parser.add_argument("--client-procs", type=int, default=max(2, min(4, os.cpu_count() or 1)),
                        help="generator processes of the concurrency section (default: 2 to 4, by CPUs)")
    parser.add_argument("--max-requests", type=int, default=200_000, help="at most this many requests per load")
    parser.add_argument("--concurrency-only", action="store_true",
                        help="only the concurrency section, on a job folder written here (no job runs)")
    parser.add_argument("--load", nargs=10, help=argparse.SUPPRESS,
                        metavar=("URL", "JOB", "CLIENTS", "SECONDS", "MODE", "LOOP", "PATHS", "MOST", "START", "OUT"))
    parser.add_argument("--reference", nargs=2, metavar=("KIND", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        url, job, clients, seconds, mode, loop, paths, most, start_at, out = args.load
        chosen = ["/healthz"] if paths == "healthz" else [e.format(job=job) for e in ENDPOINTS]
        figures = run_load(url, chosen, int(clients), float(seconds), int(most), mode == "paced", loop, float(start_at))
        Path(out).write_text(json.dumps(figures))
        return
    if args.reference:
        serve_reference(args.reference[0], int(args.reference[1]))
        return

    try:  # python benchmarks/service_load.py puts benchmarks/ on sys.path
        from warc_corpus import DataMissing, build_warc_corpus
    except ImportError:  # python -m benchmarks.service_load
        from benchmarks.warc_corpus import DataMissing, build_warc_corpus

    load1, load5, _ = os.getloadavg()
    print(f"{code_version()}; load average before: {load1:.2f} / {load5:.2f} (1 / 5 min), {os.cpu_count()} CPUs")
    if args.concurrency_only:
        with tempfile.TemporaryDirectory(prefix="service-load-") as tmp:
            write_finished_job(Path(tmp))
            concurrency = concurrency_loads(Path(tmp), args)
            print_concurrency(concurrency, args)
        load1, load5, _ = os.getloadavg()
        print(f"load average after: {load1:.2f} / {load5:.2f}")
        write_results("service_load", concurrency_figures(concurrency))
        return
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
        concurrency = concurrency_loads(tmp / "closed", args)
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
    print_concurrency(concurrency, args)
    load1, load5, _ = os.getloadavg()
    print(f"load average after: {load1:.2f} / {load5:.2f}; cores: CPU seconds per second of load, of the service, "
          f"the load generator and the whole machine ({os.cpu_count()} CPUs)")
    results = []
    for paced, f, job_s, _ in rows:
        mode = "paced, 1 request/s per client" if paced else "closed loop"
        context = f"{args.clients} clients, {mode}, during a job"
        results += [figure(f"p99 latency, {context}", f["p99_ms"], "ms", "limit", 100.0, target="< 100 ms",
                           met=f["p99_ms"] < 100, note=f"{f['rps']:.0f} req/s, p50 {f['p50_ms']:.1f} ms"),
                    figure(f"errors, {context}", f["errors"], "requests", target="0", met=f["errors"] == 0),
                    figure(f"job wall time, {context}", job_s, "s", "no load", base_s)]
    write_results("service_load", results + concurrency_figures(concurrency))


if __name__ == "__main__":
    main()
