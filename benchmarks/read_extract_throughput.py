"""Read+extract throughput of the pipeline against a plain trafilatura loop, per core.

Measured in one run, on the same ~1,160 real pages:
  (a) plain loop: `trafilatura.extract(html_bytes)` with its defaults for every page, one core,
      pages read from their .html.gz files beforehand (only the extraction is timed);
  (b) our pipeline, `pipelines.run.run` of a read+extract recipe over a WARC corpus of those pages
      (8 .warc.gz files), embedded Ray with `ray.num_cpus: 1`;
  (c) the same with `ray.num_cpus: 2`.
For (b) and (c), docs/s is the extract stage's documents-in over the wall time of `run()` less
Ray's start-up and shutdown (both timed here, around the calls `run()` makes). The ratio to the
plain loop is (ours per core) / (plain per core); "Ray overhead per core" is 1 - ratio.
The issue's target: overhead under 15% per core.

    python benchmarks/read_extract_throughput.py [--files 8] [--pages N] [--cpus 1,2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

try:  # python benchmarks/read_extract_throughput.py puts benchmarks/ on sys.path
    from _results import code_version, figure, write_results
    from warc_corpus import DataMissing, build_warc_corpus, real_pages
except ImportError:  # python -m benchmarks.read_extract_throughput
    from benchmarks._results import code_version, figure, write_results
    from benchmarks.warc_corpus import DataMissing, build_warc_corpus, real_pages

TARGET_OVERHEAD = 0.15

RECIPE = """\
name: bench-read-extract
output: {output}
ray: {{num_cpus: {cpus}}}
sources:
  - {{name: web, format: warc, paths: ["{corpus}/*.warc.gz"]}}
stages:
  - extract: {{}}
"""


@dataclass
class Result:
    config: str
    cores: int
    docs: int
    seconds: float
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.docs / self.seconds

    @property
    def per_core(self) -> float:
        return self.rate / self.cores


def plain_loop(limit: int | None) -> Result:
    """(a): trafilatura.extract with defaults on every page's bytes, one core, extraction timed only."""
    import trafilatura

    pages = [p.html() for p in real_pages(limit=limit)]
    texts = 0
    elapsed = cpu = 0.0
    for html in pages:
        started, started_cpu = time.perf_counter(), time.process_time()
        text = trafilatura.extract(html)
        elapsed += time.perf_counter() - started
        cpu += time.process_time() - started_cpu
        texts += bool(text and text.strip())
    notes = {"with text": texts, "cpu seconds": {"driver": cpu}, "load average after": round(os.getloadavg()[0], 2)}
    return Result("plain trafilatura loop", 1, len(pages), elapsed, notes)


def _plain_share(args: tuple[int | None, int, int]) -> tuple[float, int]:
    """One process's share of the pages (every `step`-th from `start`): extraction seconds, pages."""
    import trafilatura

    limit, start, step = args
    pages = [p.html() for p in real_pages(limit=limit)][start::step]
    started = time.perf_counter()
    for html in pages:
        trafilatura.extract(html)
    return time.perf_counter() - started, len(pages)


def plain_loops_at_once(limit: int | None, processes: int) -> Result:
    """(a'): the plain loop in `processes` processes at the same time, every core busy as in a Ray run.

    Cores that all work share caches, memory bandwidth and clock boost; this is the per-core rate a
    pipeline using every core can hope for, beside the one-busy-core rate of (a).
    """
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        shares = pool.map(_plain_share, [(limit, i, processes) for i in range(processes)])
    return Result(f"plain loop, {processes} processes at once", processes, sum(n for _, n in shares),
                  max(s for s, _ in shares), {"load average after": round(os.getloadavg()[0], 2)})


@contextmanager
def timed_executor(run_module: Any, into: dict[str, float], *, started: Callable[[], None] | None = None,
                   stopping: Callable[[], None] | None = None) -> Iterator[None]:
    """Time `run()`'s executor start-up (`into["start"]`: Ray's, or a local pool's) and its close
    (`into["close"]`), calling `started` just after the first and `stopping` just before the second."""
    original = run_module.start_executor

    def start(*args: Any, **kwargs: Any) -> Any:
        begun = time.perf_counter()
        executor = original(*args, **kwargs)
        into["start"] = into.get("start", 0.0) + time.perf_counter() - begun
        if started:
            started()
        close = executor.close

        def closing() -> None:
            if stopping:
                stopping()
            begun = time.perf_counter()
            close()
            into["close"] = into.get("close", 0.0) + time.perf_counter() - begun

        executor.close = closing
        return executor

    run_module.start_executor = start
    try:
        yield
    finally:
        run_module.start_executor = original


@contextmanager
def timed(
    owner: Any, name: str, into: dict[str, float], *, before: Callable[[], None] | None = None,
    after: Callable[[], None] | None = None,
) -> Iterator[None]:
    """Time every call of `owner.name` (summed into `into[name]`) while the block runs.

    `before` runs just before each call and `after` just after it, both outside the time.
    """
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before:
            before()
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into[name] = into.get(name, 0.0) + time.perf_counter() - started
            if after:
                after()

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _group(proc: psutil.Process) -> str:
    if proc.pid == os.getpid():
        return "driver"
    cmdline = " ".join(proc.cmdline())
    agent = any(a in cmdline for a in ("Agent", "agent.py", "agent/main.py"))
    return "Ray workers" if ("default_worker.py" in cmdline or "ray::" in cmdline) and not agent else "Ray daemons"


def cpu_seconds() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) so far of this process and each descendant (the embedded Ray's)."""
    me = psutil.Process()
    out = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            out[proc.pid] = (_group(proc), t.user + t.system)
        except psutil.Error:
            continue
    return out


def cpu_used(start: dict[int, tuple[str, float]], end: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per process group between two snapshots (processes born in between count from 0)."""
    used: dict[str, float] = {}
    for pid, (group, seconds) in end.items():
        used[group] = used.get(group, 0.0) + seconds - start.get(pid, (group, 0.0))[1]
    return used


def pipeline(corpus: Path, output: Path, cpus: int) -> Result:
    """(b)/(c): `run()` of read+extract with an embedded Ray of `cpus` CPUs, start-up excluded."""
    import ray

    import pipelines.run as run_module
    from curation.job import JobWriter
    from curation.recipe import parse_recipe

    if ray.is_initialized():
        raise RuntimeError("a Ray already runs in this process: run() would not start (and time) its own")
    recipe = parse_recipe(RECIPE.format(output=output, cpus=cpus, corpus=corpus), check_paths=True)
    spent: dict[str, float] = {}
    cpu: dict[str, dict[int, tuple[str, float]]] = {}  # snapshots when Ray is up and before shutdown
    moments: dict[str, float] = {}

    def snapshot(key: str) -> Callable[[], None]:
        def take() -> None:
            moments.setdefault(key, time.perf_counter())
            cpu.setdefault(key, cpu_seconds())

        return take

    with (
        timed_executor(run_module, spent, started=snapshot("started"), stopping=snapshot("stopping")),
        timed(JobWriter, "add", spent, before=lambda: moments.setdefault("first batch", time.perf_counter())),
    ):
        started = time.perf_counter()
        result = run_module.run(recipe, output=str(output), quiet=True)
        total = time.perf_counter() - started
    if ray.is_initialized():
        raise RuntimeError("run() left its embedded Ray running")
    stats = result.stats
    stages = {row["stage"]: row for row in stats["stages"]}
    extract = stages["extract"]
    net = total - spent.get("start", 0.0) - spent.get("close", 0.0)
    notes = {
        "run() total s": round(total, 2),
        "ray start s": round(spent.get("start", 0.0), 2),
        "ray shutdown s": round(spent.get("close", 0.0), 2),
        "first batch s": round(moments["first batch"] - moments["started"], 2),
        "writer s": round(spent.get("add", 0.0), 2),
        "stats wall_seconds": stats["wall_seconds"],
        "extract stage s (sum over workers)": round(extract["seconds"], 2),
        "read stage s (sum over workers)": round(stages["read"]["seconds"], 2),
        "cpu seconds": cpu_used(cpu["started"], cpu["stopping"]),
        "load average after": round(os.getloadavg()[0], 2),
        "kept": extract["docs_out"],
        "dropped": extract["dropped"],
    }
    return Result(f"ours, read+extract, ray.num_cpus={cpus}", cpus, extract["docs_in"], net, notes)


def table(results: list[Result], plain: Result) -> str:
    head = ("config", "docs", "seconds", "docs/s", "docs/s per core", "ratio to plain loop")
    rows = [head]
    for r in results:
        ratio = r.per_core / plain.per_core
        cells = (f"{r.seconds:.2f}", f"{r.rate:.1f}", f"{r.per_core:.1f}", f"{ratio:.3f}")
        rows.append((r.config, str(r.docs), *cells))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]

    def line(row: tuple[str, ...]) -> str:
        cells = [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        return " | ".join([row[0].ljust(widths[0]), *cells])

    lines = [line(row) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=8, help="number of .warc.gz files (shards) of the corpus")
    p.add_argument("--pages", type=int, default=None, help="use an evenly spread subset of this many pages")
    p.add_argument("--cpus", default="1,2", help="ray.num_cpus values to run, comma-separated")
    p.add_argument("--copies", type=int, default=1,
                   help="repeat the pages this many times (distinct URLs) for the pipeline runs, so that worker "
                   "start-up weighs as it does on a real crawl; the plain loop's rate is measured on one copy")
    args = p.parse_args(argv)
    try:
        real_pages()
    except DataMissing as exc:
        print(f"read_extract_throughput: {exc}; skipped")
        return 0
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; code {code_version()}")
    with tempfile.TemporaryDirectory(prefix="bench-read-extract-") as tmp:
        corpus = Path(tmp) / "corpus"
        started = time.perf_counter()
        paths = build_warc_corpus(corpus, copies=args.copies, files=args.files, pages=args.pages)
        size = sum(p.stat().st_size for p in paths) / 1e6
        print(f"corpus: {len(real_pages(limit=args.pages))} real pages as WARC responses in {len(paths)} "
              f"files, {size:.1f} MB gzip (built and verified in {time.perf_counter() - started:.1f} s)")
        plain = plain_loop(args.pages)
        cpus_list = [int(c) for c in args.cpus.split(",")]
        busy = plain_loops_at_once(args.pages, max(cpus_list)) if max(cpus_list) > 1 else None
        results = [plain]
        for cpus in cpus_list:
            results.append(pipeline(corpus, Path(tmp) / f"out-{cpus}", cpus))
    print()
    print(table(results, plain))
    print()
    plain_cpu = plain.notes["cpu seconds"]["driver"]
    print(f"plain loop: {plain.notes['with text']} of {plain.docs} pages gave text; "
          f"{1000 * plain.seconds / plain.docs:.1f} ms per page wall, {1000 * plain_cpu / plain.docs:.1f} ms CPU; "
          f"load average after {plain.notes['load average after']}")
    figures = []
    for r in results[1:]:
        n = r.notes
        ratio = r.per_core / plain.per_core
        verdict = "meets" if 1 - ratio < TARGET_OVERHEAD else "misses"
        print(f"{r.config}:")
        print(f"  seconds above = run() {n['run() total s']} s - Ray start-up {n['ray start s']} s "
              f"- Ray shutdown {n['ray shutdown s']} s")
        print(f"  stats.json wall_seconds = {n['stats wall_seconds']} s (includes Ray start-up and shutdown)")
        print(f"  first batch reached the driver {n['first batch s']} s after Ray was up; "
              f"the driver's JobWriter.add took {n['writer s']} s in all")
        print(f"  extract: {r.docs} in, {n['kept']} kept, dropped {n['dropped'] or 'none'}")
        in_stage, read = n["extract stage s (sum over workers)"], n["read stage s (sum over workers)"]
        print(f"  time inside the extract stage: {in_stage} s ({1000 * in_stage / r.docs:.1f} ms per page, "
              f"plain loop {1000 * plain.seconds / plain.docs:.1f}); read stage {read} s; "
              f"core-seconds available {r.seconds * r.cores:.1f}")
        used = n["cpu seconds"]
        total = sum(used.values())
        parts = ", ".join(f"{g} {v:.1f}" for g, v in sorted(used.items()))
        print(f"  CPU seconds from Ray up to Ray shutdown: {total:.1f} ({parts}); "
              f"{1000 * total / r.docs:.1f} ms CPU per page, plain loop {1000 * plain_cpu / plain.docs:.1f} "
              f"(CPU efficiency ratio {(plain_cpu / plain.docs) / (total / r.docs):.3f}); "
              f"load average after {n['load average after']}")
        target = f"{verdict} the target of under {TARGET_OVERHEAD:.0%}"
        print(f"  Ray overhead per core: {1 - ratio:.1%} ({target})")
        figures.append(figure(f"{r.config}: read + extract, {r.docs} pages", r.per_core, "docs/s per core",
                              "plain trafilatura loop", plain.per_core, target=f"< {TARGET_OVERHEAD:.0%} overhead",
                              met=1 - ratio < TARGET_OVERHEAD,
                              note=f"{1000 * total / r.docs:.1f} ms CPU per page, plain loop "
                                   f"{1000 * plain_cpu / plain.docs:.1f}"))
        if busy is not None and r.cores == busy.cores:
            print(f"  beside {busy.config} ({busy.per_core:.1f} docs/s per core, every core busy): "
                  f"overhead {1 - r.per_core / busy.per_core:.1%}")
    write_results("read_extract_throughput", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
