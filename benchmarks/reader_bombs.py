"""Blank-line floods and decompression bombs: how fast each reader gets through them, beside zlib alone.

Issue 18 item 8: a 1 MB `.jsonl.gz` of 1 GB of blank lines was read at ~4 MB/s (over four minutes). Each
file here is a document, a gzip member of `--mib` MiB of blank lines (~1 kB compressed per MiB) and a second
document. Figures are decompressed MB per second of wall time, the fastest of `--repeat` passes, beside
`zlib` inflating the same member in 1 MiB reads (the limit no reader can beat): the ratio is reader / zlib.
A last table gives the time to a `decompression_bomb` reject when `max_decompressed_bytes` is set to
`--bomb-mib` MiB, i.e. what a bound costs before the reader gives up on a file.

    python benchmarks/reader_bombs.py [--mib 1024] [--warc-mib 64] [--bomb-mib 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support, beside curation

from benchmarks._results import figure, write_results
from curation import schema
from curation.readers import JsonlReader, WarcReader, read_shard
from curation.readers.base import Reader
from tests.conftest import warc_response
from tests.support.fuzzing import blank_member

MiB = 1 << 20
T = TypeVar("T")


def best_seconds(work: Callable[[], T], repeat: int) -> tuple[float, T]:
    """The fastest of `repeat` passes, and what the last one returned."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times), result


def inflate(member: bytes) -> None:
    inflater, rest = zlib.decompressobj(31), member
    while rest:  # 1 MiB out per call, as a reader takes it
        inflater.decompress(rest, MiB)
        rest = inflater.unconsumed_tail


def outcome(reader: Reader, path: Path) -> Counter:
    reasons: Counter = Counter()
    for batch in read_shard(reader, str(path), source="s", shard="shard-0"):
        for reason in batch.column(schema.REASON).to_pylist():
            if reason != schema.END_OF_SHARD:
                reasons["doc" if reason is None else reason] += 1
    return reasons


def jsonl_line(key: str) -> bytes:
    return f'{{"text": "the text of {key}", "url": "https://x.example/{key}"}}\n'.encode()


def page(key: str) -> bytes:
    return f"<html><body><p>The page of {key}.</p></body></html>".encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024, help="blank lines in the JSON Lines file")
    parser.add_argument("--warc-mib", type=int, default=64, help="blank lines in the WARC file")
    parser.add_argument("--bomb-mib", type=int, default=64, help="max_decompressed_bytes of the bomb rows")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        jsonl, warc = folder / "blank.jsonl.gz", folder / "blank.warc.gz"
        jsonl.write_bytes(gzip.compress(jsonl_line("before"), mtime=0) + blank_member(args.mib)
                          + gzip.compress(jsonl_line("after"), mtime=0))
        warc.write_bytes(warc_response("https://x.example/before", page("before")) + blank_member(args.warc_mib)
                         + warc_response("https://x.example/after", page("after")))
        rows = [("jsonl", jsonl, args.mib, JsonlReader), ("warc", warc, args.warc_mib, WarcReader)]
        figures = []
        print(f"{'reader':<6} {'file':>10} {'inflated':>9} {'reader MB/s':>12} {'zlib MB/s':>10} {'ratio':>6}  outcome")
        for name, path, mib, reader in rows:
            member = blank_member(mib)
            zlib_s, _ = best_seconds(lambda member=member: inflate(member), args.repeat)
            reader_s, found = best_seconds(lambda reader=reader, path=path: outcome(reader(), path), args.repeat)
            print(f"{name:<6} {path.stat().st_size / 1e3:>8.0f}kB {mib:>5} MiB {mib * MiB / 1e6 / reader_s:>12.0f} "
                  f"{mib * MiB / 1e6 / zlib_s:>10.0f} {zlib_s / reader_s:>6.2f}  {dict(found)}")
            figures.append(figure(f"{name} through {mib} MiB of blank lines", mib * MiB / 1e6 / reader_s, "MB/s",
                                  "zlib alone", mib * MiB / 1e6 / zlib_s, note=f"outcome {dict(found)}"))
        print(f"\nmax_decompressed_bytes = {args.bomb_mib} MiB: time to the reject")
        bound = args.bomb_mib * MiB
        for name, path, _mib, reader in rows:
            seconds, found = best_seconds(
                lambda reader=reader, path=path: outcome(reader(max_decompressed_bytes=bound), path), args.repeat)
            print(f"{name:<6} {seconds:>6.2f} s  {dict(found)}")
            figures.append(figure(f"{name}: time to the reject at {args.bomb_mib} MiB", seconds, "s",
                                  note=f"outcome {dict(found)}"))
    print(f"\nwhole command: {time.perf_counter() - started:.1f} s wall (building the files and every pass)")
    write_results("reader_bombs", figures)


if __name__ == "__main__":
    main()
