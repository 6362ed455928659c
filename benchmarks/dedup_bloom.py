"""Bloom-filter dedup: adds/s, memory per million keys and realised false-positive rate (pybloom-live).

Keys are 128-bit content hashes (what exact and paragraph dedup feed the filter), all distinct, so
every key that reads as "seen" is a false positive. Contenders, all at the same error rate:

- `BloomShard(capacity=N, scalable=False)`: one fixed `BloomFilter` sized for N,
- `BloomShard(capacity=N)`: `ScalableBloomFilter(initial_capacity=N)` (our default),
- the peer/limit: `ScalableBloomFilter()` with the library's default start (100 keys), as most code uses it.

Realised rate: distinct keys that read as seen while adding (false positives on the way in) and, after
all adds, the share of 200,000 fresh random keys that read as present; beside the rate the filter's
fill predicts. Memory: bytes of the bit arrays per million keys added. Also: paragraph dedup
throughput (`ParagraphDedup`) on real documents.

    .venv/bin/python benchmarks/dedup_bloom.py [--items 1000000] [--error-rate 0.001]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time

import numpy as np
import xxhash
from pybloom_live import ScalableBloomFilter

from curation.dedup.bloom import BloomShard, ParagraphDedup, bytes_per_million, shard_of

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _data import data_root
    from _results import LOAD_AT_START, figure, write_results
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._data import data_root
    from benchmarks._results import LOAD_AT_START, figure, write_results


def keys_128(n: int, seed: int) -> np.ndarray:
    """n distinct 128-bit keys as Python ints (object array), like xxh3-128 content hashes."""
    return np.array([xxhash.xxh3_128_intdigest(f"{seed}:{i}".encode()) for i in range(n)], dtype=object)


def run(name: str, shard: BloomShard, keys: np.ndarray, probes: int) -> tuple[float, float, float]:
    """(adds/s per core, MB per million keys, false-positive rate probed after all adds)."""
    chunk = 100_000
    t0 = time.process_time()
    new = np.concatenate([shard.add_if_new(keys[i:i + chunk].tolist()) for i in range(0, len(keys), chunk)])
    seconds = time.process_time() - t0
    stats = shard.stats(probes=probes)
    per_million = stats["memory_bytes"] / (len(keys) / 1e6)
    print(f"{name:46} {len(keys) / seconds:10,.0f} {per_million / 1e6:10.2f} {1 - new.mean():10.4%} "
          f"{stats['measured_false_positive_rate']:10.4%} {stats['expected_false_positive_rate']:10.4%}")
    return len(keys) / seconds, per_million / 1e6, stats["measured_false_positive_rate"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--error-rate", type=float, default=0.001)
    parser.add_argument("--probes", type=int, default=200_000)
    args = parser.parse_args()
    n, rate = args.items, args.error_rate
    print(f"load average at start: {LOAD_AT_START:.2f}; {n:,} distinct keys, asked error rate {rate:.3%}")
    keys = keys_128(n, 0)
    print(f"\n{'':46} {'adds/s':>10} {'MB/1M':>10} {'FP adding':>10} {'FP probed':>10} {'FP by fill':>10}")
    fixed = run("BloomShard fixed BloomFilter(capacity=N)", BloomShard(n, rate, scalable=False), keys, args.probes)
    ours = run("BloomShard scalable (initial_capacity=N)", BloomShard(n, rate), keys, args.probes)
    peer = BloomShard(n, rate)
    peer.filter = ScalableBloomFilter(error_rate=rate, mode=ScalableBloomFilter.LARGE_SET_GROWTH)
    default = run("peer: ScalableBloomFilter() default start 100", peer, keys, args.probes)
    ideal = 1.44 * np.log2(1 / rate) / 8
    print(f"\nlimit: an ideal Bloom filter needs 1.44 x log2(1/p) bits per key = "
          f"{ideal:.2f} MB per million at p={rate}; pybloom-live fixed filter sized "
          f"for 1M: {bytes_per_million(rate) / 1e6:.2f} MB")
    print("STACK-NOTES: default start 23k adds/s and 0.67% FP (asked 0.1%); initial_capacity=1M: 126k adds/s, 0.097%")
    spread = np.bincount(shard_of(np.array([k >> 64 for k in keys[:100_000]], dtype=np.uint64), 8), minlength=8)
    print(f"shard_of over 8 shards, 100k keys: min {spread.min()} max {spread.max()} per shard")

    default_peer = "ScalableBloomFilter(), default start"
    figures = [
        figure(f"scalable shard, {n:,} keys: adds/s per core", ours[0], "adds/s", default_peer, default[0]),
        figure(f"scalable shard, {n:,} keys: memory per million keys", ours[1], "MB", "ideal Bloom filter", ideal),
        figure(f"fixed shard, {n:,} keys: memory per million keys", fixed[1], "MB", "ideal Bloom filter", ideal),
        figure(f"scalable shard, {n:,} keys: false positives probed", ours[2], "share", "asked error rate", rate,
               target=f"<= {rate} (asked)", met=bool(ours[2] <= rate)),
        figure(f"{default_peer}: false positives probed", default[2], "share", "asked error rate", rate),
    ]
    root = data_root()
    files = sorted((root / "webtext" / "dolma_ccnet").glob("*.jsonl.gz"))
    readme = sorted((root / "neardup" / "readme_history_requests").glob("*")) if root.is_dir() else []
    if files:
        texts = []
        for f in files:
            with gzip.open(f, "rt", encoding="utf-8") as lines:
                texts += [json.loads(line)["text"] for line in lines if line.strip()]
        texts += [p.read_text(encoding="utf-8", errors="replace") for p in readme]
        ids = [f"{i:06d}" for i in range(len(texts))]
        dedup = ParagraphDedup(capacity=200_000, error_rate=rate, n_shards=4)
        t0 = time.process_time()
        _, drop, share = dedup.process(ids, texts)
        seconds = time.process_time() - t0
        lines = sum(t.count("\n") + 1 for t in texts)
        print(f"\nparagraph dedup on {len(texts)} real documents ({lines:,} lines; 329 are README versions): "
              f"{len(texts) / seconds:,.0f} docs/s, {lines / seconds:,.0f} lines/s per core; "
              f"{int(drop.sum())} documents dropped (> 50% of text repeated), mean removed share {share.mean():.2f}")
        figures.append(figure(f"paragraph dedup, {len(texts)} real documents: lines/s per core", lines / seconds,
                              "lines/s"))
    write_results("dedup_bloom", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
