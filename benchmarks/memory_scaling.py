"""Peak memory of a read+extract run as its input grows 10x.

Each run is `python -m pipelines.cli run RECIPE --quiet` in a fresh subprocess with an embedded
Ray (`ray.num_cpus: 2`). Every 0.2 s the whole process tree is sampled with psutil: the driver and
all its descendants, which with an embedded Ray are every Ray process (gcs_server, raylet, the
dashboard/runtime-env agents, monitor and log_monitor, and the worker processes, children of the
raylet). Any process whose command line names the run's Ray session folder but is not a descendant
would be counted too, and reported. Per sample the RSS, PSS and USS of those processes are summed;
RSS double-counts shared pages (libraries, the object store's shared memory mapped into several
processes), PSS shares them out, USS counts only private pages. /dev/shm in use (where the Ray
object store lives) is sampled as well.

Inputs: 1x = an evenly spread subset of the real pages (120 by default) as WARC records; 10x = the
same pages ten times with distinct URLs, laid out either as 10x as many files of the same size
("more files") or as the same number of files each 10x larger ("larger files").
The target: the 10x peak at most 1.3x the 1x peak.

    python benchmarks/memory_scaling.py [--pages 120] [--files 4] [--full-extract]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

try:  # python benchmarks/memory_scaling.py puts benchmarks/ on sys.path
    from _results import code_version, figure, write_results
    from warc_corpus import DataMissing, build_warc_corpus, real_pages
except ImportError:  # python -m benchmarks.memory_scaling
    from benchmarks._results import code_version, figure, write_results
    from benchmarks.warc_corpus import DataMissing, build_warc_corpus, real_pages

TARGET_RATIO = 1.3
INTERVAL_S = 0.2
MB = 1 << 20
METRICS = ("rss", "pss", "uss")
WORKERS = ("default_worker.py", "ray::")  # a worker's process title becomes ray::IDLE, ray::MapBatches(...)
NOT_WORKERS = ("Agent", "agent.py", "agent/main.py")  # the dashboard and runtime-env agents are also ray::

RECIPE = """\
name: bench-memory
output: {output}
ray: {{num_cpus: 2}}
sources:
  - {{name: web, format: warc, paths: ["{corpus}/*.warc.gz"]}}
stages:
  - extract: {{fast: {fast}}}
"""


@dataclass
class Peak:
    """Peaks of one run's process tree; `at_peak` splits the RSS peak over process groups."""

    label: str
    records: int
    files: int
    seconds: float = 0.0
    peak: dict[str, int] = field(default_factory=lambda: dict.fromkeys(METRICS, 0))
    at_peak: dict[str, int] = field(default_factory=dict)
    shm_peak: int = 0
    processes_max: int = 0
    processes_seen: int = 0
    outside_tree: list[str] = field(default_factory=list)
    object_store_bytes: int | None = None
    stats: dict = field(default_factory=dict)


def _group(proc: psutil.Process, driver: int, cmdline: str) -> str:
    if proc.pid == driver:
        return "driver"
    if any(w in cmdline for w in WORKERS) and not any(a in cmdline for a in NOT_WORKERS):
        return "ray workers"
    return "ray daemons"


class TreeSampler:
    """Sums the memory of a driver process and every process of its Ray session."""

    def __init__(self, driver: int) -> None:
        self.driver = psutil.Process(driver)
        self.known: dict[int, tuple[psutil.Process, str, str]] = {}  # pid -> (process, group, first cmdline)
        self.session: str | None = None
        self.outside: set[str] = set()
        self.last_scan = 0.0

    def _track(self, proc: psutil.Process) -> None:
        if proc.pid in self.known:
            return
        try:
            cmdline = " ".join(proc.cmdline())
        except psutil.Error:
            return
        if self.session is None and (m := re.search(r"(session_\d{4}-[\d_-]+)", cmdline)):
            self.session = m.group(1)
        self.known[proc.pid] = (proc, _group(proc, self.driver.pid, cmdline), cmdline)

    def processes(self) -> list[psutil.Process]:
        try:
            tree = [self.driver, *self.driver.children(recursive=True)]
        except psutil.Error:
            tree = []
        for proc in tree:
            self._track(proc)
        pids = {p.pid for p in tree}
        if self.session and time.monotonic() - self.last_scan > 1.0:  # Ray processes outside the tree?
            self.last_scan = time.monotonic()
            for proc in psutil.process_iter():
                if proc.pid in pids or proc.pid == os.getpid():
                    continue
                try:
                    cmdline = " ".join(proc.cmdline())
                except psutil.Error:
                    continue
                if self.session in cmdline:
                    self._track(proc)
                    self.outside.add(f"{proc.pid} {cmdline[:120]}")
                    tree.append(proc)
        return tree

    def sample(self) -> tuple[dict[str, int], dict[str, int], int]:
        """(summed rss/pss/uss, rss per group, number of processes) of the tree right now."""
        total = dict.fromkeys(METRICS, 0)
        groups: dict[str, int] = {}
        n = 0
        for proc in self.processes():
            try:
                mem = proc.memory_full_info()
            except psutil.Error:
                continue
            n += 1
            for m in METRICS:
                total[m] += getattr(mem, m)
            group = self.known[proc.pid][1] if proc.pid in self.known else "unknown"
            groups[group] = groups.get(group, 0) + mem.rss
        return total, groups, n

    def object_store_bytes(self) -> int | None:
        for _, _, cmdline in self.known.values():
            if m := re.search(r"--object_store_memory=(\d+)", cmdline):
                return int(m.group(1))
        return None


def shm_used() -> int:
    try:
        return shutil.disk_usage("/dev/shm").used
    except OSError:
        return 0


def measure(label: str, corpus: Path, out: Path, records: int, files: int, fast: bool) -> Peak:
    """Run the recipe over `corpus` in a fresh `curate run` subprocess and sample its process tree."""
    recipe = out / "recipe.yaml"
    out.mkdir(parents=True)
    recipe.write_text(RECIPE.format(output=out / "jobs", corpus=corpus, fast=str(fast).lower()))
    result = Peak(label, records, files)
    shm_base = shm_used()
    log = out / "curate.log"
    started = time.perf_counter()
    with log.open("w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "run", str(recipe), "--quiet"],
                                stdout=f, stderr=subprocess.STDOUT)
        sampler = TreeSampler(proc.pid)
        while proc.poll() is None:
            total, groups, n = sampler.sample()
            if total["rss"] > result.peak["rss"]:
                result.at_peak = groups
            for m in METRICS:
                result.peak[m] = max(result.peak[m], total[m])
            result.processes_max = max(result.processes_max, n)
            result.shm_peak = max(result.shm_peak, shm_used() - shm_base)
            time.sleep(INTERVAL_S)
    result.seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{label}: curate run failed ({proc.returncode}):\n{log.read_text()[-3000:]}")
    result.processes_seen = len(sampler.known)
    result.outside_tree = sorted(sampler.outside)
    result.object_store_bytes = sampler.object_store_bytes()
    result.stats = json.loads(next((out / "jobs").glob("*/stats.json")).read_text())
    _wait_gone([p for p, _, _ in sampler.known.values()])
    return result


def _wait_gone(procs: list[psutil.Process], timeout: float = 30.0) -> None:
    """Let the previous run's Ray processes exit before the next run starts."""
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    if alive:
        print(f"warning: {len(alive)} processes of the previous run still alive: {[p.pid for p in alive]}")


def report(runs: list[Peak], fast: bool) -> list[dict]:
    """Prints the table; its figures: each larger input's peak summed RSS against the 1x run's."""
    base = runs[0]
    figures = []
    print()
    print(f"extract stage: fast={str(fast).lower()} "
          f"({'fast: true, to save time: no fallback extractors' if fast else 'trafilatura defaults'})")
    head = (f"{'input':<24} {'records':>7} {'files':>5} {'run s':>6} {'peak RSS MB':>11} {'peak PSS MB':>11} "
            f"{'peak USS MB':>11} {'/dev/shm MB':>11} {'procs':>5}")
    print(head)
    print("-" * len(head))
    for r in runs:
        docs = r.stats["documents"]
        if docs["records_read"] != r.records:
            print(f"warning: {r.label}: {docs['records_read']} records read, {r.records} written")
        print(f"{r.label:<24} {r.records:>7} {r.files:>5} {r.seconds:>6.1f} {r.peak['rss'] / MB:>11.0f} "
              f"{r.peak['pss'] / MB:>11.0f} {r.peak['uss'] / MB:>11.0f} {r.shm_peak / MB:>11.0f} "
              f"{r.processes_max:>5}")
    print()
    print("RSS at the RSS peak, by process group (MB):")
    for r in runs:
        parts = ", ".join(f"{g} {v / MB:.0f}" for g, v in sorted(r.at_peak.items()))
        print(f"  {r.label:<22} {parts}")
    print()
    for r in runs[1:]:
        ratios = {m: r.peak[m] / base.peak[m] for m in METRICS}
        verdict = "meets" if ratios["rss"] <= TARGET_RATIO else "misses"
        grew = {m: (r.peak[m] - base.peak[m]) / MB for m in METRICS}
        print(f"{r.label} / {base.label}: RSS {ratios['rss']:.2f}x, PSS {ratios['pss']:.2f}x, "
              f"USS {ratios['uss']:.2f}x ({verdict} the target of at most {TARGET_RATIO}x on summed RSS); "
              f"peaks grew: RSS {grew['rss']:+.0f} MB, PSS {grew['pss']:+.0f} MB, USS {grew['uss']:+.0f} MB")
        figures.append(figure(f"peak summed RSS, {r.label} ({r.records} records, fast={str(fast).lower()})",
                              r.peak["rss"] / MB, "MB", f"1x ({base.records} records)", base.peak["rss"] / MB,
                              target=f"<= {TARGET_RATIO}x", met=ratios["rss"] <= TARGET_RATIO,
                              note=f"PSS {ratios['pss']:.2f}x, USS {ratios['uss']:.2f}x"))
    print()
    store = ", ".join(
        f"{r.label} {'unknown' if r.object_store_bytes is None else f'{r.object_store_bytes / 1e9:.2f} GB'}"
        for r in runs
    )
    print(f"Ray object store configured size (raylet --object_store_memory; Ray's default, 30% of the memory "
          f"available at start): {store}; machine memory {psutil.virtual_memory().total / 1e9:.1f} GB")
    counted = max(r.processes_seen for r in runs)
    outside = [p for r in runs for p in r.outside_tree]
    print(f"counted: the driver and all its descendants (up to {counted} distinct processes in a run); "
          f"Ray processes outside that tree: {outside or 'none found'}")
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, default=120, help="pages in the 1x corpus (an evenly spread subset)")
    p.add_argument("--files", type=int, default=4, help="files of the 1x corpus")
    p.add_argument("--factor", type=int, default=10, help="growth factor of the larger corpus")
    p.add_argument("--layouts", default="more-files,larger-files", help="how the larger corpus is laid out")
    p.add_argument("--full-extract", action="store_true", help="extract with trafilatura defaults, not fast")
    args = p.parse_args(argv)
    try:
        real_pages()
    except DataMissing as exc:
        print(f"memory_scaling: {exc}; skipped")
        return 0
    fast = not args.full_extract
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; "
          f"sampling every {INTERVAL_S} s; code {code_version()}")
    k = args.factor
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        plans = [("1x", 1, args.files)]
        layouts = args.layouts.split(",")
        if "more-files" in layouts:
            plans.append((f"{k}x, more files", k, args.files * k))
        if "larger-files" in layouts:
            plans.append((f"{k}x, larger files", k, args.files))
        runs = []
        for i, (label, copies, files) in enumerate(plans):
            corpus = Path(tmp) / f"corpus-{i}"
            paths = build_warc_corpus(corpus, copies=copies, files=files, pages=args.pages)
            records = len(real_pages(limit=args.pages)) * copies
            run = measure(label, corpus, Path(tmp) / f"run-{i}", records, len(paths), fast)
            print(f"{label}: {records} records in {len(paths)} files, run {run.seconds:.1f} s, "
                  f"peak RSS {run.peak['rss'] / MB:.0f} MB", flush=True)
            runs.append(run)
    write_results("memory_scaling", report(runs, fast))
    return 0


if __name__ == "__main__":
    sys.exit(main())
