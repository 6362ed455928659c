"""Trainer-side loader throughput: rows/s and tokens/s per core of `PackedDataset`, beside a raw memmap read.

Builds a packed job in a temporary folder (random documents packed by `curation.tokens.Packer` into
seq_len 2048 uint16 rows, written as Arrow IPC stream shards of `--shard-mb` MB each) and, from the
same rows, a flat `tokens.bin` (rows of seq_len + 1 uint16, nanoGPT-style). Both files are read once
beforehand, so the page cache is warm and the figures are CPU cost, not disk.

- **ours**: iterate `PackedDataset(job, batch_size=8)` over one epoch in this process (shuffled
  rows; each batch: int64 input_ids, labels with padding masked, position_ids, segment_ids, index);
- **raw memmap** (the limit): the same rows in the same order gathered from `numpy.memmap` of
  `tokens.bin`, widened to int64 inputs and targets (`x = rows[:, :-1]`, `y = rows[:, 1:]`) and
  handed to torch, which is what a minimal nanoGPT-style loader does per batch.

Per core = CPU seconds of this process (`time.process_time`), tokens = rows x seq_len (the model's
input positions). Target: ours >= 5 million tokens/s per core. With `--workers N` it also times
`PackedLoader(num_workers=N)` by wall clock (its CPU is in the worker processes).

    .venv/bin/python benchmarks/loader_throughput.py [--shard-mb 200] [--shards 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from curation.tokens import Packer
from curation.train.loader import PackedDataset, PackedLoader, permute

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _results import LOAD_AT_START, code_version, figure, write_results
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._results import LOAD_AT_START, code_version, figure, write_results
TARGET = 5e6


def build(job: Path, seq_len: int, shard_mb: float, shards: int, seed: int) -> int:
    """Pack random documents (log-normal lengths around 1k tokens) into `shards` stream shards and
    append the same rows to tokens.bin; returns the number of rows."""
    rng = np.random.default_rng(seed)
    width = seq_len + 1
    rows_per_shard = int(shard_mb * 1e6 // (2 * width))
    packer = Packer(seq_len, eos_id=2, pad_id=0, vocab_size=32000)
    (job / "shards").mkdir(parents=True)
    entries, n = [], 0
    with (job / "tokens.bin").open("wb") as flat:
        for k in range(shards):
            name, rows = f"shards/train-{k:05d}.arrow", 0
            with pa.OSFile(str(job / name), "wb") as sink, pa.ipc.new_stream(sink, packer.schema) as writer:
                while rows < rows_per_shard:
                    lengths = np.minimum(rng.lognormal(6.5, 1.0, size=2000).astype(np.int64), 50_000)
                    tokens = rng.integers(3, 32000, size=int(lengths.sum()), dtype=np.uint16)
                    docs = np.split(tokens, np.cumsum(lengths)[:-1])
                    table = packer.add([f"doc-{n}-{i}" for i in range(len(docs))], docs)
                    table = table.slice(0, rows_per_shard - rows)
                    for batch in table.to_batches(max_chunksize=4096):
                        writer.write_batch(batch)
                    flat.write(table.column("tokens").combine_chunks().flatten().to_numpy().tobytes())
                    rows += table.num_rows
            entries.append({"file": name, "rows": rows, "tokens": rows * width})
            n += rows
    manifest = {"format": "curation.packed/1", "seq_len": seq_len, "dtype": "uint16", "eos_id": 2, "pad_id": 0,
                "vocab_size": 32000, "tokenizer": {"file": "tokenizer.model", "sha256": "0" * 64}, "seed": seed,
                "splits": {"train": {"rows": n, "tokens": n * width, "shards": entries}}}
    (job / "manifest.json").write_text(json.dumps(manifest))
    return n


def warm(path: Path) -> None:
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass


def timed(batches) -> tuple[int, float, float]:
    rows, cpu, wall = 0, time.process_time(), time.perf_counter()
    for batch in batches:
        rows += len(batch["index"])
    return rows, time.process_time() - cpu, time.perf_counter() - wall


def raw_batches(job: Path, n: int, seq_len: int, batch_size: int, seed: int):
    data = np.memmap(job / "tokens.bin", dtype=np.uint16, mode="r").reshape(n, seq_len + 1)
    for lo in range(0, n, batch_size):
        index = permute(np.arange(lo, min(lo + batch_size, n)), n, seed, 0)
        rows = data[index]
        yield {"input_ids": torch.from_numpy(rows[:, :-1].astype(np.int64)),
               "labels": torch.from_numpy(rows[:, 1:].astype(np.int64)), "index": torch.from_numpy(index)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--shard-mb", type=float, default=200)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0, help="also time PackedLoader with this many workers")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"load average at start: {LOAD_AT_START:.2f}; {os.cpu_count()} CPUs; commit {code_version()}")
    with tempfile.TemporaryDirectory(prefix="loader-bench-") as tmp:
        job = Path(tmp)
        t0 = time.perf_counter()
        n = build(job, args.seq_len, args.shard_mb, args.shards, args.seed)
        size = sum(p.stat().st_size for p in (job / "shards").iterdir())
        print(f"built {n:,} rows x {args.seq_len + 1} uint16 in {args.shards} shards ({size / 1e6:,.0f} MB) "
              f"in {time.perf_counter() - t0:.1f} s; batch size {args.batch_size}")
        for path in [*(job / "shards").iterdir(), job / "tokens.bin"]:
            warm(path)

        ds = PackedDataset(job, batch_size=args.batch_size, seed=args.seed)
        t0 = time.process_time()
        ds.batch([0])  # opens (maps) every shard
        print(f"opening the shards: {1e3 * (time.process_time() - t0):.1f} ms CPU")
        results = {"ours (PackedDataset)": timed(ds),
                   "raw numpy.memmap": timed(raw_batches(job, n, args.seq_len, args.batch_size, args.seed))}
        print(f"\n{'':24}{'rows':>10}{'CPU s':>8}{'rows/s/core':>14}{'tokens/s/core':>16}{'wall tokens/s':>16}")
        rate = {}
        for name, (rows, cpu, wall) in results.items():
            rate[name] = rows * args.seq_len / cpu
            print(f"{name:24}{rows:>10,}{cpu:>8.2f}{rows / cpu:>14,.0f}{rate[name]:>16,.0f}"
                  f"{rows * args.seq_len / wall:>16,.0f}")
        ours, raw = rate.values()
        print(f"\nratio ours / raw memmap: {ours / raw:.2f}; target >= {TARGET / 1e6:.0f}M tokens/s per core: "
              f"{'met' if ours >= TARGET else 'NOT met'} ({ours / 1e6:.1f}M)")
        figures = [figure(f"PackedDataset, {n:,} rows of {args.seq_len + 1} tokens", ours, "tokens/s per core",
                          "raw numpy.memmap gather", raw, target=f">= {TARGET / 1e6:.0f}M tokens/s per core",
                          met=ours >= TARGET)]
        if args.workers:
            rows, _, wall = timed(PackedLoader(PackedDataset(job, batch_size=args.batch_size), args.workers))
            print(f"PackedLoader, {args.workers} workers: {rows:,} rows in {wall:.2f} s wall = "
                  f"{rows * args.seq_len / wall:,.0f} tokens/s (all workers)")
            figures.append(figure(f"PackedLoader, {args.workers} workers", rows * args.seq_len / wall,
                                  "tokens/s wall"))
    write_results("loader_throughput", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
