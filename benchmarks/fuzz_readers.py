"""Fuzzing every reader: tens of thousands of mutated real files, cases per second and failures (goal: 0).

The cases are `tests/support/fuzzing.py`'s (the test suite runs a few hundred of them): a case number picks a
real seed file (WARC/WET/JSON Lines of `../shared/data` and `recipes/sample/`, Parquet made from their rows,
archives and folders of an installed package) and one to three mutations (truncation, bit flips, invalid UTF-8
and surrogates, huge lines, deep JSON nesting, bombs, links, lying WARC lengths, symbolic-link archive members,
binary Parquet text...). 30% of the cases are `tests/support/fuzz_hostile.py`'s (issue 32): corrupt tails in every
codec (gzip, zstd, bz2, lz4), a garbage Parquet row group, a record claiming 10^15 bytes, bodies labelled text/html
that are a PDF, a PNG or random bytes (brotli too), 206 and -1 statuses, WET noise, tar names that are not UTF-8,
NaN and Infinity; each is checked against what it must give (the records before the damage, the rows of the input
without it plus what it adds). Each case is read through `read_shard`; `--jobs` whole `executor: local` jobs (one
case of every format each) check the job-level funnel (`records_read == kept + dropped + skipped`, documents and
rejects disjoint). Cases run in `--workers` processes; one past `--timeout` seconds is a failure (a hang) and its
process is replaced. The default is a run of a few minutes on two cores; `--cases 30000 --jobs 60` is the full one.

    .venv/bin/python benchmarks/fuzz_readers.py [--cases 3000] [--jobs 10] [--workers N] [--start 0]
                                                 [--bomb-mib 4] [--timeout 60]
    .venv/bin/python benchmarks/fuzz_readers.py --case N     # one reader case again, its report in full
    .venv/bin/python benchmarks/fuzz_readers.py --job N      # one job again

Prints cases/s and failures per format and per round-three kind, each failure with its reproducer; exits 1 when
any case failed.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support, beside curation

from benchmarks._results import figure, write_results
from tests.support import fuzz_hostile, fuzzing


def run_task(seeds: dict[str, list[fuzzing.Seed]], task: tuple[str, int], bomb_mib: int, folder: Path,
             ) -> tuple[str, str, list[str], float]:
    """(format, description, problems, seconds) of one reader case or job."""
    kind, number = task
    started = time.perf_counter()
    if kind == "case":
        case = fuzzing.make_case(seeds, number, bomb_mib=bomb_mib)
        outcome = fuzzing.read_case(case, folder)
        return case.format, case.describe(), outcome.problems, outcome.seconds
    cases = fuzzing.job_cases(seeds, number, bomb_mib=bomb_mib)
    problems = fuzzing.run_job(cases, folder)
    return "job", f"job {number}: " + "; ".join(c.describe() for c in cases), problems, time.perf_counter() - started


def _worker(tasks: Any, results: Any, current: Any, since: Any, bomb_mib: int, scratch: str) -> None:
    import pipelines.run  # noqa: F401  (imported before the clock of a first case or job starts)

    seeds = fuzzing.load_seeds()
    while (task := tasks.get()) is not None:
        current.value, since.value = (task[1] if task[0] == "case" else -1 - task[1]), time.time()
        with tempfile.TemporaryDirectory(dir=scratch) as folder:
            outcome = run_task(seeds, task, bomb_mib, Path(folder))
        since.value = 0.0
        results.put((task, *outcome))
    results.put(None)


class Pool:
    """Worker processes taking tasks from one queue; a worker stuck on a task past `timeout` is replaced."""

    def __init__(self, workers: int, timeout: float, bomb_mib: int, scratch: str) -> None:
        self.ctx = mp.get_context("spawn")  # a clean interpreter per worker: no lock inherited from a fork
        self.tasks, self.results = self.ctx.Queue(), self.ctx.Queue()
        self.timeout, self.bomb_mib, self.scratch = timeout, bomb_mib, scratch
        self.workers = [self._start() for _ in range(workers)]

    def _start(self) -> tuple[Any, Any, Any]:
        current, since = self.ctx.Value("q", 0), self.ctx.Value("d", 0.0)
        process = self.ctx.Process(target=_worker, args=(self.tasks, self.results, current, since, self.bomb_mib,
                                                         self.scratch), daemon=True)
        process.start()
        return process, current, since

    def run(self, tasks: list[tuple[str, int]]) -> Any:
        for task in tasks:
            self.tasks.put(task)
        for _ in self.workers:
            self.tasks.put(None)
        running = len(self.workers)
        while running:
            try:
                result = self.results.get(timeout=1.0)
            except queue.Empty:
                yield from self._hangs()
                continue
            if result is None:
                running -= 1
            else:
                yield result

    def _hangs(self) -> Any:
        for i, (process, current, since) in enumerate(self.workers):
            if since.value and time.time() - since.value > self.timeout and process.is_alive():
                process.kill()
                process.join()
                number = current.value
                task = ("case", number) if number >= 0 else ("job", -1 - number)
                hang = [f"still running after {self.timeout:g} s: a hang"]
                yield task, "job" if task[0] == "job" else "(hang)", f"{task[0]} {task[1]}", hang, self.timeout
                self.workers[i] = self._start()  # takes the killed worker's end marker in its turn


def _kind(problem: str) -> str:
    """A problem without its numbers and counters, so that failures of one cause are counted together."""
    line = problem.strip().splitlines()[-1] if problem.startswith("raised") else problem
    return re.sub(r"\d+", "N", re.sub(r"\{[^}]*\}", "", line))[:160]


def report(results: list[tuple], seconds: float) -> int:
    per: dict[str, Counter] = defaultdict(Counter)
    failed = []
    for task, fmt, described, problems, took in results:
        per[fmt]["cases"] += 1
        per[fmt]["seconds"] += took
        if problems:
            per[fmt]["failures"] += 1
            failed.append((task, described, problems))
    total = sum(c["cases"] for c in per.values())
    print(f"{'format':<8} {'cases':>7} {'failures':>8} {'cases/s (one process)':>22}")
    for fmt in sorted(per):
        c = per[fmt]
        print(f"{fmt:<8} {c['cases']:>7} {c['failures']:>8} {c['cases'] / max(c['seconds'], 1e-9):>22.1f}")
    print(f"all: {total} cases in {seconds:.1f} s: {total / max(seconds, 1e-9):.1f} cases/s, "
          f"{len(failed)} failures (goal: 0)")
    write_results("fuzz_readers", [
        figure(f"failures in {total} cases", len(failed), "cases", target="0", met=not failed),
        figure("cases/s, all formats", total / max(seconds, 1e-9), "cases/s",
               note="; ".join(f"{fmt} {c['cases'] / max(c['seconds'], 1e-9):.1f}/s in one process"
                              for fmt, c in sorted(per.items()))),
    ])
    kinds: dict[str, Counter] = defaultdict(Counter)
    for _task, _fmt, described, problems, _took in results:
        for kind in fuzz_hostile.KINDS:
            if f"'{kind}" in described or f'"{kind}' in described:  # a mutation: a quoted string, its kind first
                kinds[kind]["cases"] += 1
                kinds[kind]["failures"] += bool(problems)
    print("round three (issue 32): " + ", ".join(f"{k} {c['cases']} ({c['failures']} failed)"
                                                  for k, c in sorted(kinds.items())))
    reasons = Counter(_kind(p) for _, _, problems in failed for p in problems)
    for reason, n in reasons.most_common(20):
        print(f"  {n:>6} x {reason}")
    for (kind, number), described, problems in failed[:50]:
        print(f"\nFAILED {described}\n  reproduce: .venv/bin/python benchmarks/fuzz_readers.py --{kind} {number}")
        for problem in problems[:3]:
            print("  " + problem.strip().replace("\n", "\n  ")[-1500:])
    return 1 if failed else 0


def one(kind: str, number: int, bomb_mib: int) -> int:
    """One case or job again, in this process, with its whole report."""
    seeds = fuzzing.load_seeds()
    with tempfile.TemporaryDirectory() as folder:
        fmt, described, problems, seconds = run_task(seeds, (kind, number), bomb_mib, Path(folder))
    print(f"{described} ({fmt}, {seconds:.2f} s): {'OK' if not problems else 'FAILED'}")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=3_000, help="reader cases (30000: the full run)")
    parser.add_argument("--jobs", type=int, default=10, help="whole jobs (one case of every format each)")
    parser.add_argument("--start", type=int, default=0, help="first case (and job) number")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--bomb-mib", type=int, default=4, help="what a decompression bomb inflates to")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds after which a case is a hang")
    parser.add_argument("--case", type=int, help="run this one reader case and print its report")
    parser.add_argument("--job", type=int, help="run this one job and print its report")
    args = parser.parse_args()
    if args.case is not None or args.job is not None:
        return one("case" if args.case is not None else "job", args.case if args.case is not None else args.job,
                   args.bomb_mib)
    tasks = [("case", n) for n in range(args.start, args.start + args.cases)]
    tasks += [("job", n) for n in range(args.start, args.start + args.jobs)]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        pool = Pool(args.workers, args.timeout, args.bomb_mib, scratch)
        results = []
        for result in pool.run(tasks):
            results.append(result)
            if len(results) % 1000 == 0:
                print(f"  {len(results)} of {len(tasks)} ({time.perf_counter() - started:.0f} s)", flush=True)
    return report(results, time.perf_counter() - started)


if __name__ == "__main__":
    sys.exit(main())
