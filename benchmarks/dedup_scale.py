"""Fuzzy dedup at scale: time and peak memory of `minhash_dedup` on Ray as the corpus grows.

What runs: the corpus-stage part of a job only. For each size the generated documents are written as
Parquet shards into a fresh job's `_work/documents/` (what the document stages leave behind), then
`pipelines.dedup.minhash.fuzzy_dedup`, the Ray runner a job's `minhash_dedup` calls, finds the removals with the
recipe defaults (threshold 0.8, 128 permutations, word 5-grams, 14 bands x 9 rows, exact verification); the
rewrite of the shards to `documents/` and `rejects/` is not timed. Each size runs in its own process with its own
embedded Ray (`num_cpus=2` by default), so one size's memory does not carry over to the next.

Documents: `--words` random words (vocabulary of 50,000 `w<i>` tokens, ~6 characters each) per
document. A known share (`--share`, default 20%) are near-copies: each shard's last rows copy a
random original of the previous shard (so every duplicate crosses shards) with one word replaced
(Jaccard ~0.93 of the 5-gram sets). Originals are unrelated, so the expected removals are exactly the
copies; the table prints what was removed beside that.

Measured:

- time: wall seconds of `fuzzy_dedup` (Ray already started, data already written), and the
  seconds of each step inside the stage (signatures, buckets, verification, components, survivors);
- memory: peak of the summed RSS of this process and all its descendants (raylet, GCS, every Ray
  worker), sampled every 0.2 s with psutil, and the same before the run (Ray idle, data written).
  Summed RSS counts pages of Ray's shared-memory object store once per process that maps them, so it
  overstates the physical peak; it is the figure asked for and comparable across sizes.
- growth: exponent = log(time ratio) / log(size ratio) between consecutive sizes and first to last
  (1.0 is linear), and the same for peak memory above the idle baseline.

    .venv/bin/python benchmarks/dedup_scale.py [--sizes 100000,300000,1000000] [--share 0.2] [--cpus 2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _results import LOAD_AT_START, code_version, figure, write_results
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._results import LOAD_AT_START, code_version, figure, write_results

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = 50_000


# --------------------------------------------------------------------------------------------- documents


def _word_ids(shard: int, rows: int, words: int, seed: int) -> np.ndarray:
    return np.random.default_rng([seed, shard]).integers(0, VOCABULARY, (rows, words), dtype=np.int32)


def _texts(matrix: np.ndarray, vocabulary: pa.Array) -> pa.Array:
    rows, words = matrix.shape
    offsets = pa.array(np.arange(0, rows * words + 1, words, dtype=np.int32))
    return pc.binary_join(pa.ListArray.from_arrays(offsets, vocabulary.take(pa.array(matrix.reshape(-1)))), " ")


def shard_table(shard: int, shards: int, rows: int, words: int, share: float, seed: int) -> pa.Table:
    """One shard: originals, then near-copies (one word changed) of originals of the previous shard."""
    vocabulary = pa.array([f"w{i}" for i in range(VOCABULARY)])
    copies = round(rows * share)
    originals = rows - copies
    matrix = _word_ids(shard, rows, words, seed)
    previous = _word_ids((shard - 1) % shards, rows, words, seed)[:originals]
    rng = np.random.default_rng([seed, shard, 1])
    copied = previous[rng.integers(0, originals, copies)]
    copied[np.arange(copies), rng.integers(0, words, copies)] = rng.integers(0, VOCABULARY, copies)
    matrix[originals:] = copied
    ids = pa.array([f"{shard:04d}-{i:07d}" for i in range(rows)])
    n = pa.nulls(rows, pa.string())
    return pa.table({"id": ids, "source": pa.array(["gen"] * rows), "url": n, "title": n,
                     "text": _texts(matrix, vocabulary), "meta": n})


# --------------------------------------------------------------------------------------------- memory


class PeakRss:
    """Peak summed RSS of this process and its descendants, sampled on a thread."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def now() -> int:
        me = psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.now())
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.now())


# --------------------------------------------------------------------------------------------- one size


def measure(n: int, shards: int, words: int, share: float, cpus: int, seed: int) -> dict:
    import ray

    import pipelines  # noqa: F401  (Ray Data environment before Ray starts)
    from curation.dedup.minhash_dedup import MinhashDedup
    from curation.job import WORK_DOCUMENTS
    from pipelines.dedup import minhash

    with tempfile.TemporaryDirectory(prefix="dedup_scale_") as job:
        t0 = time.perf_counter()
        names, rows = [], n // shards
        (Path(job) / WORK_DOCUMENTS).mkdir(parents=True)
        for k in range(shards):
            names.append(f"gen-{k:04d}")
            table = shard_table(k, shards, rows, words, share, seed)
            pq.write_table(table, Path(job, WORK_DOCUMENTS, f"{names[-1]}.parquet"))
        written = time.perf_counter() - t0
        chars = pq.read_table(Path(job, WORK_DOCUMENTS, f"{names[0]}.parquet"), columns=["text"]).column("text")
        mean_chars = float(pc.mean(pc.utf8_length(chars)).as_py())
        ray.init(num_cpus=cpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        idle = PeakRss.now()
        with PeakRss() as rss:
            t0 = time.perf_counter()
            # the Ray runner itself, in the driver as `run_corpus_stages` calls it, for its step breakdown
            report = minhash.fuzzy_dedup([str(Path(job, WORK_DOCUMENTS, f"{name}.parquet")) for name in names],
                                         MinhashDedup())
            seconds = time.perf_counter() - t0
        ray.shutdown()
    return {"documents": rows * shards, "expected_removed": shards * round(rows * share), "mean_chars": mean_chars,
            "write_seconds": written, "seconds": seconds, "idle_rss": idle, "peak_rss": rss.peak,
            "removed": report.removals.num_rows,
            "steps": report.seconds, "candidate_pairs": report.candidate_pairs,
            "verified_pairs": report.verified_pairs, "rounds": report.rounds}


# --------------------------------------------------------------------------------------------- report


def exponent(a: float, b: float, n_a: int, n_b: int) -> float:
    return math.log(b / a) / math.log(n_b / n_a) if a > 0 and b > 0 else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--shards", type=int, default=20)
    parser.add_argument("--words", type=int, default=150)
    parser.add_argument("--share", type=float, default=0.2)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per size (then skipped)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.shards, args.words, args.share, args.cpus, args.seed)))
        return 0
    print(f"load average at start: {LOAD_AT_START:.2f}; commit {code_version()}; "
          f"{args.cpus} CPUs for Ray; {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB")
    print(f"documents: {args.words} random words each, {args.share:.0%} near-copies (1 word changed) across "
          f"{args.shards} shards; minhash_dedup defaults (threshold 0.8, 128 perms, 14x9 bands, exact verify)")
    print(f"{'docs':>9} {'chars':>6} {'seconds':>8} {'docs/s':>7} {'peak RSS':>9} {'idle RSS':>9} "
          f"{'removed':>8} {'expected':>8} {'cand.':>8} {'verif.':>8} {'rounds':>6}  steps (s)")
    results, figures = [], []
    for n in [int(s) for s in args.sizes.split(",")]:
        cmd = [sys.executable, __file__, "--one", str(n), "--shards", str(args.shards), "--words", str(args.words),
               "--share", str(args.share), "--cpus", str(args.cpus), "--seed", str(args.seed)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, cwd=PROJECT_ROOT)
        except subprocess.TimeoutExpired:
            print(f"{n:>9,} did not finish within {args.timeout:.0f} s: skipped")
            break
        if out.returncode:
            print(f"{n:>9,} failed:\n{out.stderr[-3000:]}")
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(r)
        figures.append(figure(f"minhash_dedup through Ray, {r['documents']:,} documents", r["seconds"], "s",
                              note=f"peak RSS {r['peak_rss'] / 2**30:.2f} GiB; removed {r['removed']:,} of "
                                   f"{r['expected_removed']:,} expected"))
        steps = " ".join(f"{k} {v:.1f}" for k, v in r["steps"].items())
        rate = r["documents"] / r["seconds"]
        print(f"{r['documents']:>9,} {r['mean_chars']:>6.0f} {r['seconds']:>8.1f} {rate:>7,.0f} "
              f"{r['peak_rss'] / 2**30:>8.2f}G {r['idle_rss'] / 2**30:>8.2f}G {r['removed']:>8,} "
              f"{r['expected_removed']:>8,} {r['candidate_pairs']:>8,} {r['verified_pairs']:>8,} {r['rounds']:>6}  "
              f"{steps}", flush=True)
    pairs = list(itertools.pairwise(results))
    if len(results) > 2:
        pairs.append((results[0], results[-1]))
    for a, b in pairs:
        t = exponent(a["seconds"], b["seconds"], a["documents"], b["documents"])
        m = exponent(a["peak_rss"] - a["idle_rss"], b["peak_rss"] - b["idle_rss"], a["documents"], b["documents"])
        print(f"{a['documents']:,} -> {b['documents']:,} documents (x{b['documents'] / a['documents']:.1f}): "
              f"time x{b['seconds'] / a['seconds']:.2f}, exponent {t:.2f}; peak RSS above idle "
              f"x{(b['peak_rss'] - b['idle_rss']) / (a['peak_rss'] - a['idle_rss']):.2f}, exponent {m:.2f}")
        figures.append(figure(f"time growth exponent, {a['documents']:,} -> {b['documents']:,} documents", t, "",
                              "linear", 1.0, target="<= 1 (linear)", met=t <= 1,
                              note=f"peak RSS above idle: exponent {m:.2f}"))
    write_results("dedup_scale", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
