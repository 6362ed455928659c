"""Hostile fuzzing cases: each kind with what its read must give, exactly where it can be known.

Corrupt tails in every codec (gzip, zstd, bz2, lz4: garbage after the stream, a cut, flipped bytes), a Parquet
row group whose pages are garbage, a WARC record claiming 10^15 bytes, bodies labelled text/html that are a PDF,
a PNG or random bytes (brotli-encoded too), HTTP statuses that are no complete response (206, -1), a WET
conversion of random bytes, a tar member named in bytes that are not UTF-8, NaN and the infinities in JSON.

A kind fills the case's files and its `Expect`: the records the read gives (from the lines a reference decoder
reads: `zcat` for gzip), or the rows of a `baseline` (the same input without the hostile part) plus what it adds.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import tarfile
import uuid
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import brotli
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from tests.support.fuzzing import Case, Seed

CODECS = {"gzip": ".gz", "zstd": ".zst", "bz2": ".bz2", "lz4": ".lz4"}
GARBAGE = b"\x07 not a compressed stream \xfe\x01" * 4
KINDS = ("tail", "nan", "parquet row group", "parquet nan", "lying length", "binary body", "http status",
         "wet binary", "tar name")


@dataclass
class Expect:
    records: set[int] | None = None  # how many records (not counting end-of-shard markers): one of these
    baseline: dict[str, bytes] | None = None  # files read the same way: their rows plus `plus` must come
    plus: Counter = field(default_factory=Counter)
    title_has: str | None = None  # a document's title holds this
    max_bytes_in: int | None = None  # the read stage's bytes_in (sum of `_bin:read`) stays under this
    # garbage after a baseline that ends in a break of its own (a record cut off by the end of the file, which the
    # garbage now fills): that break and the garbage's may be one reject, never a document less
    merges_last_break: bool = False


def compress(data: bytes, codec: str) -> bytes:
    if codec == "gzip":
        return gzip.compress(data, compresslevel=1, mtime=0)
    if codec == "bz2":
        return bz2.compress(data)
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, codec) as stream:
        stream.write(data)
    return sink.getvalue().to_pybytes()


def zcat(data: bytes) -> tuple[bytes, bool]:
    """What gzip members decode to fed a byte at a time, and whether a break (bad bytes, a cut) ended it."""
    out, inflater, fed = [], zlib.decompressobj(31), False
    for i in range(len(data)):
        try:
            out.append(inflater.decompress(data[i : i + 1]))
        except zlib.error:
            return b"".join(out), True
        fed = True
        if inflater.eof:
            inflater, fed = zlib.decompressobj(31), False
    return b"".join(out), fed


def line_records(data: bytes, limit: int) -> int:
    """Records a JSON Lines reader gives for the complete lines of `data` (blank ones give none)."""
    return sum(1 for line in data.split(b"\n")[:-1] if len(line) > limit or line.strip())


def hostile_case(rng: random.Random, case: Case, seed: Seed, inner: bytes, limit: int) -> bool:
    """Makes `case` one of this module's kinds for `seed` (`inner`: its bytes decompressed); False where none
    fits the seed (a repository folder)."""
    if case.format == "jsonl" or (case.format == "code" and not seed.files):
        if rng.random() < 0.7 or case.format == "code":
            _tail(rng, case, seed.name, inner, limit)
        else:
            _nan(rng, case, seed.name, inner)
    elif case.format == "parquet":
        (_row_group if rng.random() < 0.7 else _parquet_nan)(rng, case, seed)
    elif case.format in ("warc", "wet"):
        kinds = [_lying_length, _binary_bodies, _statuses, _warc_tail] if case.format == "warc" else \
            [_lying_length, _wet_binary, _warc_tail]
        rng.choice(kinds)(rng, case, seed)
    elif seed.name.endswith(".tar.gz"):
        _tar_name(rng, case, seed)
    else:
        return False
    return True


def _stem(name: str) -> str:
    for ext in CODECS.values():
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def _tail(rng: random.Random, case: Case, name: str, inner: bytes, limit: int) -> None:
    codec, damage = rng.choice(list(CODECS)), rng.choice(("garbage", "cut", "flip"))
    data = compress(inner, codec)
    if damage == "garbage":
        data += GARBAGE
    elif damage == "cut":
        data = data[: rng.randrange(len(data) + 1)]
    else:
        at = rng.randrange(len(data))
        data = data[:at] + bytes(b ^ 0x55 for b in data[at : at + rng.choice((1, 16, 64))]) + data[at + 64 :]
    case.mutations.append(f"tail: {codec} {damage}")
    case.files[_stem(name) + CODECS[codec]] = data
    if damage == "garbage":
        case.expect = Expect(records={line_records(inner, limit) + 1})
    elif codec == "gzip":
        decoded, broken = zcat(data)
        case.expect = Expect(records={line_records(decoded, limit) + broken + (not broken and _unended(decoded))})


def _unended(decoded: bytes) -> bool:
    """A whole stream whose last line has no newline: that line is a record too."""
    return bool(decoded) and not decoded.endswith(b"\n") and bool(decoded.rsplit(b"\n", 1)[-1].strip())


def _nan(rng: random.Random, case: Case, name: str, inner: bytes) -> None:
    lines = inner.split(b"\n")
    for _ in range(rng.choice((1, 3))):
        value = rng.choice((b"NaN", b"Infinity", b"-Infinity", b"1e999", b"[NaN, {\"x\": -Infinity}]"))
        lines.insert(rng.randrange(len(lines) + 1), b'{"text": "numbers out of range", "score": ' + value + b"}")
        case.mutations.append(f"nan: {value.decode()}")
    data = b"\n".join(lines)
    case.files[name] = gzip.compress(data, mtime=0) if name.endswith(".gz") else data


def _row_group(rng: random.Random, case: Case, seed: Seed) -> None:
    table = pq.read_table(io.BytesIO(seed.data))
    group_rows = max(1, table.num_rows // rng.choice((2, 3, 5, 8)))
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=group_rows, compression=rng.choice(("snappy", "zstd", "gzip")))
    data = bytearray(sink.getvalue())
    meta = pq.ParquetFile(io.BytesIO(bytes(data))).metadata
    bad = rng.randrange(meta.num_row_groups)
    column = meta.row_group(bad).column(rng.randrange(meta.num_columns))
    start = column.dictionary_page_offset or column.data_page_offset
    end = start + column.total_compressed_size
    skip = rng.choice((0, 8, 20))
    data[start + skip : end] = bytes(rng.getrandbits(8) for _ in range(end - start - skip))
    case.files[seed.name] = bytes(data)
    case.mutations.append(f"parquet row group {bad} of {meta.num_row_groups}: garbage from byte {skip}")
    rows = meta.row_group(bad).num_rows
    case.expect = Expect(records={table.num_rows, table.num_rows - rows + 1})


def _parquet_nan(rng: random.Random, case: Case, seed: Seed) -> None:
    table = pq.read_table(io.BytesIO(seed.data))
    values = [rng.choice((float("nan"), float("inf"), float("-inf"), 0.5)) for _ in range(table.num_rows)]
    sink = io.BytesIO()
    pq.write_table(table.append_column("score", pa.array(values, pa.float64())), sink)
    case.files[seed.name] = sink.getvalue()
    case.mutations.append("parquet nan")
    case.expect = Expect(records={table.num_rows})


def _record(kind: str, url: str, block: bytes, content_type: str, length: int | None = None) -> bytes:
    head = (f"WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>\r\n"
            f"WARC-Target-URI: {url}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(block) if length is None else length}\r\n\r\n")
    return head.encode() + block + b"\r\n\r\n"


def _response(url: str, body: bytes, status: str = "200 OK", headers: str = "") -> bytes:
    http = f"HTTP/1.1 {status}\r\nContent-Type: text/html\r\n{headers}\r\n".encode() + body
    return _record("response", url, http, "application/http; msgtype=response")


def _prepend(case: Case, seed: Seed, records: list[bytes], plus: Counter, **expect: Any) -> None:
    """The seed with `records` before its first (each its own gzip member in a .gz), against the seed alone."""
    gz = seed.name.endswith(".gz")
    head = b"".join(gzip.compress(r, mtime=0) if gz else r for r in records)
    case.files[seed.name] = head + seed.data
    case.expect = Expect(baseline={seed.name: seed.data}, plus=plus, **expect)


def _lying_length(rng: random.Random, case: Case, seed: Seed) -> None:
    kind = rng.choice(("response", "request", "metadata") if case.format == "warc" else ("conversion", "warcinfo"))
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><p>liar</p></html>"
    record = _record(kind, "https://liar.example/", block, "application/http; msgtype=response", 10**15)
    case.mutations.append(f"lying length: a {kind} claiming 10^15 bytes")
    inflated = len(_inflated(seed)) + len(record)
    # the liar's block runs to the end of the file, and the seed's own clipped records may too: a few times the
    # file's bytes, never the 10^15 claimed
    _prepend(case, seed, [record], Counter({"truncated_record": 1}), max_bytes_in=4 * inflated + (64 << 10))


def _warc_tail(rng: random.Random, case: Case, seed: Seed) -> None:
    """Garbage after the last record: of the seed as it is (gzip members, or plain), or of its records in one zstd
    or lz4 stream; the records before it all read, then one reject."""
    codec = rng.choice(("as is", "zstd", "lz4"))
    data = seed.data if codec == "as is" else compress(_inflated(seed), codec)
    name = seed.name if codec == "as is" else _stem(seed.name) + CODECS[codec]
    case.mutations.append(f"tail: warc {codec} garbage")
    case.files[name] = data + GARBAGE
    case.expect = Expect(baseline={name: data}, plus=Counter({"unreadable_input": 1}), merges_last_break=True)


def inflate_gzip(data: bytes) -> bytes:
    """What gzip members hold, as far as they can be read (a seed may be cut short on purpose)."""
    out = []
    while data:
        member = zlib.decompressobj(31)
        try:
            out.append(member.decompress(data))
        except zlib.error:
            break
        if not member.eof:
            break
        data = member.unused_data
    return b"".join(out)


def _inflated(seed: Seed) -> bytes:
    return inflate_gzip(seed.data) if seed.name.endswith(".gz") else seed.data


def binary_bodies(rng: random.Random) -> dict[str, tuple[bytes, str]]:
    """Bodies a server labels text/html that are not text (name -> (body, extra HTTP headers))."""
    noise = rng.randbytes(rng.choice((512, 4096, 60_000)))
    pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + rng.randbytes(2000)
    return {"pdf": (pdf, ""), "png": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rng.randbytes(2000), ""),
            "random": (noise, ""), "random br": (noise, "Content-Encoding: br\r\n"),
            "pdf br": (brotli.compress(pdf), "Content-Encoding: br\r\n")}


def _binary_bodies(rng: random.Random, case: Case, seed: Seed) -> None:
    bodies = binary_bodies(rng)
    picked = rng.sample(sorted(bodies), rng.choice((1, 2, 3)))
    case.mutations += [f"binary body: {name}" for name in picked]
    records = [_response(f"https://binary.example/{i}", bodies[name][0], headers=bodies[name][1])
               for i, name in enumerate(picked)]
    _prepend(case, seed, records, Counter({"skipped:binary": len(picked)}))


def _statuses(rng: random.Random, case: Case, seed: Seed) -> None:
    picked = rng.sample(["206 Partial Content", "-1 Unknown", "abc", "302 Found"], rng.choice((1, 2)))
    case.mutations += [f"http status: {status}" for status in picked]
    page = b"<html><body><p>" + b"a page that is not all there " * 20 + b"</p></body></html>"
    records = [_response(f"https://status.example/{i}", page, status) for i, status in enumerate(picked)]
    _prepend(case, seed, records, Counter({"skipped:http_status": len(picked)}))


def _wet_binary(rng: random.Random, case: Case, seed: Seed) -> None:
    body = rng.randbytes(rng.choice((1024, 150_000)))
    case.mutations.append(f"wet binary: {len(body)} random bytes")
    _prepend(case, seed, [_record("conversion", "https://noise.example/", body, "text/plain")],
             Counter({"skipped:binary": 1}))


def _tar_name(rng: random.Random, case: Case, seed: Seed) -> None:
    files = dict(seed.files)
    renamed = rng.choice(sorted(p for p in files if p.endswith(".py")))
    bad = rng.choice((b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\x80"))
    stem = renamed.removesuffix(".py")
    case.mutations.append(f"tar name: {renamed} with {bad!r}")
    case.files[seed.name] = _tar({**{p: d for p, d in files.items() if p != renamed},
                                  stem.encode() + bad + b".py": files[renamed]})
    case.expect = Expect(baseline={seed.name: _tar(files)}, title_has="\ufffd")


def _tar(files: dict[Any, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1, format=tarfile.GNU_FORMAT) as tar:
        for path, data in files.items():
            name = path if isinstance(path, str) else path.decode("utf-8", "surrogateescape")
            info = tarfile.TarInfo(f"repo/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def strict_json(text: str) -> str | None:
    """Why `text` is not strict JSON (NaN, Infinity), None where it is."""
    def refuse(constant: str) -> None:
        raise ValueError(constant)

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        return str(exc)[:80]
    return None
