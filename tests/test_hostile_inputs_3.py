"""Hostile inputs: each file is built here, next to good records.

A readable head is kept before a corrupt tail (gzip, zstd, Parquet row groups); a WARC record that claims
10^15 bytes neither hides the record after it nor counts 10^15 bytes read; a tar member whose name is not
UTF-8 is read; a body labelled text/html that is a PDF, an image or random bytes (a WET conversion too) is a
`skipped:binary` (and none of the extraction gold sets' 1,298 real pages is); only complete 2xx responses are
documents; NaN and the infinities are null in `meta`. The last test runs a job (`executor: local`) and reads the
counts its shards were recorded with.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import random
import tarfile
import uuid
import zlib
from pathlib import Path

import brotli
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fastwarc.stream_io import ZstdReader

from curation import schema
from curation.readers import CodeReader, JsonlReader, ParquetReader, WarcReader, WetReader
from curation.readers.sniff import binary_body
from curation.recipe import parse_recipe
from pipelines.run import run
from tests.test_hostile_inputs import details, good_url, jsonl_line, outcome, page, prose, read, warc_record

pytestmark = pytest.mark.timeout(120, method="thread")

BIN = schema.metric_column("bin", "read")


def documents(table: pa.Table, column: str = "text") -> list:
    return [v for v, r in zip(table.column(column).to_pylist(), table.column(schema.REASON).to_pylist(), strict=True)
            if r is None]


def compressed(data: bytes, codec: str) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, codec) as stream:
        stream.write(data)
    return sink.getvalue().to_pybytes()


def damaged(data: bytes, share: float, size: int = 64) -> bytes:
    """`data` with `size` bytes flipped from `share` of its length on."""
    at = int(len(data) * share)
    return data[:at] + bytes(b ^ 0x55 for b in data[at : at + size]) + data[at + size :]


def zcat(data: bytes) -> bytes:
    """What gzip members decode to before a break, fed a byte at a time (as zcat writes it before it fails)."""
    out, inflater = [], zlib.decompressobj(31)
    for i in range(len(data)):
        try:
            out.append(inflater.decompress(data[i : i + 1]))
        except zlib.error:
            break
        if inflater.eof:
            if not inflater.unused_data and i + 1 < len(data) and data[i + 1 : i + 3] != b"\x1f\x8b":
                break  # what follows is no gzip member
            inflater = zlib.decompressobj(31)
    return b"".join(out)


def notes(n: int) -> list[bytes]:
    return [jsonl_line(f"note-{i}") for i in range(n)]


# -- a readable head before a corrupt tail --------------------------------------------------------------


def test_gzip_jsonl_with_trailing_garbage_keeps_all_its_records(tmp_path: Path):
    lines = notes(20)
    path = tmp_path / "tail.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(lines), mtime=0) + b"\x00garbage after the member" * 4)
    table = read(JsonlReader(), path)
    assert outcome(table) == {"doc": 20, "unreadable_input": 1}
    assert documents(table) == [json.loads(line)["text"] for line in lines]
    (detail,) = details(table)["unreadable_input"]
    assert detail.startswith(f"OSError: gzip data broken after {len(b''.join(lines))} decompressed bytes")


def test_a_last_line_without_its_newline_before_the_garbage_is_kept_and_a_cut_one_is_not(tmp_path: Path):
    """The whole last record, decoded but not ended by a newline, was counted into the break's reject."""
    lines = notes(3)
    whole, cut = tmp_path / "whole.jsonl.gz", tmp_path / "cut.jsonl.gz"
    whole.write_bytes(gzip.compress(b"".join(lines).rstrip(b"\n"), mtime=0) + b"\x00garbage" * 4)
    cut.write_bytes(gzip.compress(b"".join(lines)[:-8], mtime=0) + b"\x00garbage" * 4)
    table = read(JsonlReader(), whole)
    assert outcome(table) == {"doc": 3, "unreadable_input": 1}
    assert documents(table) == [json.loads(line)["text"] for line in lines]
    assert outcome(read(JsonlReader(), cut)) == {"doc": 2, "unreadable_input": 1}  # the third is no record


@pytest.mark.parametrize(("codec", "extension"), [("gzip", "gz"), ("zstd", "zst"), ("bz2", "bz2"), ("lz4", "lz4")])
def test_a_whole_file_is_all_documents_in_any_codec_and_streams_joined_too(tmp_path: Path, codec: str,
                                                                           extension: str):
    """Every whole `.jsonl.bz2` ended in a `truncated_input` reject: at its end a new decompressor was made for a
    next stream that was not there, and its not having ended was read as a cut."""
    lines = notes(300)
    for name, data in (("one", compressed(b"".join(lines), codec)),
                       ("joined", compressed(b"".join(lines[:150]), codec) + compressed(b"".join(lines[150:]), codec))):
        path = tmp_path / f"{name}.jsonl.{extension}"
        path.write_bytes(data)
        table = read(JsonlReader(), path)
        assert outcome(table) == {"doc": 300}, (name, details(table))


@pytest.mark.parametrize(("codec", "extension"), [("gzip", "gz"), ("zstd", "zst"), ("bz2", "bz2"), ("lz4", "lz4")])
def test_garbage_after_the_stream_costs_no_record_in_any_codec(tmp_path: Path, codec: str, extension: str):
    lines = notes(300)
    path = tmp_path / f"tail.jsonl.{extension}"
    path.write_bytes(compressed(b"".join(lines), codec) + b"\x07not compressed\xfe" * 8)
    table = read(JsonlReader(), path)
    assert outcome(table) == {"doc": 300, "unreadable_input": 1}
    assert documents(table) == [json.loads(line)["text"] for line in lines]
    assert details(table)["unreadable_input"][0].startswith(
        f"OSError: {codec} data broken after {len(b''.join(lines))} decompressed bytes")


def test_zstd_jsonl_damaged_at_70_percent_keeps_every_record_before_the_damaged_block(tmp_path: Path):
    lines = notes(1000)
    data = damaged(compressed(b"".join(lines), "zstd"), 0.7)
    path = tmp_path / "damaged.jsonl.zst"
    path.write_bytes(data)
    table = read(JsonlReader(), path)
    readable = b""  # what another zstd decoder (fastwarc's) gives before the damage
    reader = ZstdReader(io.BytesIO(data))
    with pytest.raises(OSError, match="corruption"):
        while chunk := reader.read(4096):
            readable += chunk
    kept = readable.count(b"\n")
    assert kept > 500  # the whole first 128 KiB block
    assert outcome(table) == {"doc": kept, "unreadable_input": 1}
    assert documents(table) == [json.loads(line)["text"] for line in lines[:kept]]
    assert "zstd data broken after" in details(table)["unreadable_input"][0]


def test_gzip_jsonl_damaged_at_70_percent_keeps_what_zcat_decodes(tmp_path: Path):
    lines = notes(1000)
    data = damaged(compressed(b"".join(lines), "gzip"), 0.7, size=16)
    path = tmp_path / "damaged.jsonl.gz"
    path.write_bytes(data)
    table = read(JsonlReader(), path)
    readable = zcat(data)
    assert 0 < len(readable) < len(b"".join(lines))
    whole = [line for line in readable.split(b"\n")[:-1] if line.strip()]  # the line cut by the break is lost
    assert len(table) - 1 == len(whole) + 1  # one record per whole line, then the break
    intact = next(i for i, line in enumerate([*whole, b""]) if i == len(lines) or line + b"\n" != lines[i])
    assert documents(table)[:intact] == [json.loads(line)["text"] for line in lines[:intact]]
    assert intact > 600
    assert outcome(table)["unreadable_input"] == 1


def corrupt_row_group(path: Path, rows: int = 1000, group_rows: int = 100, bad: int = 4) -> None:
    table = pa.table({"text": [prose(f"row-{i}", 12) for i in range(rows)], "url": [good_url(f"row-{i}")
                                                                                      for i in range(rows)]})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=group_rows, compression="snappy")
    data = bytearray(sink.getvalue())
    column = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(bad).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    data[start + 20 : start + column.total_compressed_size - 4] = b"\xab" * (column.total_compressed_size - 24)
    path.write_bytes(bytes(data))


def test_a_parquet_file_with_one_corrupt_row_group_keeps_the_others(tmp_path: Path):
    path = tmp_path / "groups.parquet"
    corrupt_row_group(path)
    table = read(ParquetReader(), path)
    assert outcome(table) == {"doc": 900, "unreadable_input": 1}
    expected = [good_url(f"row-{i}") for i in range(1000) if not 400 <= i < 500]
    assert documents(table, "url") == expected
    (detail,) = details(table)["unreadable_input"]
    assert detail.startswith("row group 4 (rows 400-499) cannot be read: OSError: Corrupt snappy")
    positions = [json.loads(m)["position"] for m in documents(table, "meta")]
    assert positions == [i for i in range(1000) if not 400 <= i < 500]  # ids after the group do not move


def test_a_code_table_with_a_corrupt_row_group_keeps_the_others(tmp_path: Path):
    rows = 30
    table = pa.table({"content": [f"def f{i}():\n    return {i}\n" for i in range(rows)],
                      "path": [f"f{i}.py" for i in range(rows)], "repo": ["org/repo"] * rows})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=10, compression="snappy")
    data = bytearray(sink.getvalue())
    column = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(1).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    data[start + 20 : start + column.total_compressed_size - 4] = b"\xab" * (column.total_compressed_size - 24)
    path = tmp_path / "stack.parquet"
    path.write_bytes(bytes(data))
    read_back = read(CodeReader(), path)
    assert outcome(read_back) == {"doc": 20, "unreadable_input": 1}
    assert documents(read_back, "title") == [f"f{i}.py" for i in (*range(10), *range(20, 30))]


def test_a_tar_gz_cut_short_keeps_the_members_before_the_cut(tmp_path: Path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for i in range(40):
            data = f'"""Module {i}: {prose(f"m{i}", 30)}"""\n'.encode()
            info = tarfile.TarInfo(f"repo/m{i:02}.py")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive = buffer.getvalue()
    path = tmp_path / "cut.tar.gz"
    path.write_bytes(archive[: len(archive) * 7 // 10])
    table = read(CodeReader(), path)
    members = []  # the members tarfile reads from what zcat decodes
    decoded = io.BytesIO(zcat(archive[: len(archive) * 7 // 10]))
    with tarfile.open(fileobj=decoded, mode="r|") as tar, contextlib.suppress(tarfile.TarError):
        members += [m.name.removeprefix("repo/") for m in tar if tar.extractfile(m).read() is not None]
    kept = documents(table, "title")
    assert kept == [f"m{i:02}.py" for i in range(len(kept))]
    assert len(kept) >= len(members) - 1 > 20  # the member the cut falls in may be lost
    assert sum(outcome(table).values()) == len(kept) + 1


# -- a lying Content-Length --------------------------------------------------------------------------


def lying(kind: str, url: str, gz: bool) -> bytes:
    body = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" if kind == "request" else page("liar")
    record = warc_record(url, body, gz=False)
    claimed = record.split(b"Content-Length: ")[1].split(b"\r\n")[0]
    record = record.replace(b"Content-Length: " + claimed, b"Content-Length: " + str(10**15).encode(), 1)
    record = record.replace(b"WARC-Type: response", f"WARC-Type: {kind}".encode(), 1)
    return gzip.compress(record, mtime=0) if gz else record


@pytest.mark.parametrize("gz", [True, False], ids=["gzip-per-record", "plain"])
@pytest.mark.parametrize("kind", ["response", "request"])
def test_a_content_length_of_10_15_loses_no_record_after_it(tmp_path: Path, gz: bool, kind: str):
    records = [warc_record(good_url("before"), page("before"), gz=gz), lying(kind, good_url("liar"), gz),
               warc_record(good_url("after"), page("after"), gz=gz)]
    path = tmp_path / ("lie.warc.gz" if gz else "lie.warc")
    path.write_bytes(b"".join(records))
    table = read(WarcReader(), path)
    assert outcome(table) == {"doc": 2, "truncated_record": 1}
    assert documents(table, "url") == [good_url("before"), good_url("after")]
    (detail,) = details(table)["truncated_record"]
    assert detail.endswith(f" of {10**15} bytes")
    inflated = len(b"".join(gzip.decompress(r) if gz else r for r in records))
    read_bytes = pc.sum(table.column(BIN)).as_py()
    assert read_bytes < 2 * inflated  # bytes there (the liar's block runs to the end), never the 10^15 claimed


# -- a tar member whose name is not UTF-8 ------------------------------------------------------------


def test_a_tar_member_named_in_bytes_that_are_not_utf8_is_read(tmp_path: Path):
    files = {b"repo/ok.py": b"def ok():\n    return 1\n", b"repo/bad\xff\xfe.py": b"def bad():\n    return 2\n"}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name.decode("utf-8", "surrogateescape"))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path = tmp_path / "names.tar.gz"
    path.write_bytes(buffer.getvalue())
    table = read(CodeReader(), path)
    assert outcome(table) == {"doc": 2}
    assert documents(table, "title") == ["ok.py", "bad\ufffd\ufffd.py"]
    assert documents(table) == ["def ok():\n    return 1\n", "def bad():\n    return 2\n"]
    assert json.loads(documents(table, "meta")[1])["path"] == "bad\ufffd\ufffd.py"


# -- what a response's bytes and status say ----------------------------------------------------


def response(url: str, body: bytes, *, status: str = "200 OK", content_type: str = "text/html",
             headers: str = "") -> bytes:
    http = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{headers}\r\n".encode() + body
    head = (f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>\r\n"
            f"WARC-Target-URI: {url}\r\nContent-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n")
    return gzip.compress(head.encode() + http + b"\r\n\r\n", mtime=0)


PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + random.Random(1).randbytes(3000)
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + random.Random(2).randbytes(3000)
RANDOM = random.Random(3).randbytes(150_000)
SHORT_RANDOM = random.Random(8).randbytes(512)  # fastwarc's brotli decodes it to b"" and says nothing


def test_binary_bodies_labelled_html_are_skipped_as_binary_and_text_is_not(tmp_path: Path):
    russian = "<html><body><p>Привет, мир: это страница в кодировке windows-1251.</p></body></html>"
    bodies = {
        "page": (page("page"), ""),
        "pdf": (PDF, ""),
        "png": (PNG, ""),
        "random": (RANDOM, ""),
        "random-br": (RANDOM, "Content-Encoding: br\r\n"),
        "short-random-br": (SHORT_RANDOM, "Content-Encoding: br\r\n"),
        "pdf-br": (brotli.compress(PDF), "Content-Encoding: br\r\n"),
        "utf16": ("\ufeff<html><body><p>a page in UTF-16</p></body></html>".encode("utf-16-le"), ""),
        "utf16-unmarked": ("<html><body><p>北京市今天发布了新的交通政策。</p></body></html>".encode("utf-16-be"), ""),
        "cp1251": (russian.encode("cp1251"), ""),
    }
    path = tmp_path / "bodies.warc.gz"
    path.write_bytes(b"".join(response(good_url(k), body, headers=h) for k, (body, h) in bodies.items()))
    table = read(WarcReader(), path)
    # random bytes that brotli refuses are no page in brotli; those it reads as nothing are kept as they were stored
    assert outcome(table) == {"doc": 4, "skipped:binary": 5, "bad_content_encoding": 1}
    assert documents(table, "url") == [good_url(k) for k in ("page", "utf16", "utf16-unmarked", "cp1251")]
    skipped = details(table)["skipped:binary"]
    assert skipped[:2] == ["a PDF by its first bytes, labelled text/html",
                           "a PNG by its first bytes, labelled text/html"]
    assert all(d.endswith(" bytes are control characters, labelled text/html") for d in skipped[2:4])
    assert skipped[4] == "a PDF by its first bytes, labelled text/html"  # decoded from br first
    assert details(table)["bad_content_encoding"][0].startswith("br: ")


def test_no_real_page_is_taken_for_binary(testdata: Path):
    pages = sorted((testdata / "html").rglob("*.htm*"))
    bodies = [gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes() for p in pages]
    assert len(bodies) > 1000  # the extraction gold sets' pages, in many languages and encodings
    assert [p.name for p, body in zip(pages, bodies, strict=True) if binary_body(body) is not None] == []


def test_a_wet_conversion_of_random_bytes_is_skipped_as_binary(tmp_path: Path):
    def conversion(url: str, body: bytes) -> bytes:
        head = (f"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: {url}\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        return gzip.compress(head + body + b"\r\n\r\n", mtime=0)

    path = tmp_path / "texts.warc.wet.gz"
    path.write_bytes(conversion(good_url("text"), prose("text").encode()) + conversion(good_url("noise"), RANDOM))
    table = read(WetReader(), path)
    assert outcome(table) == {"doc": 1, "skipped:binary": 1}
    assert documents(table) == [prose("text")]
    assert details(table)["skipped:binary"][0].endswith("% of its first 4096 bytes are control characters")


def test_only_complete_2xx_responses_become_documents(tmp_path: Path):
    statuses = ["200 OK", "203 Non-Authoritative Information", "206 Partial Content", "-1 Unknown", "404 Not Found",
                "abc"]
    path = tmp_path / "statuses.warc.gz"
    path.write_bytes(b"".join(response(good_url(f"s{i}"), page(f"s{i}"), status=s) for i, s in enumerate(statuses)))
    table = read(WarcReader(), path)
    assert outcome(table) == {"doc": 2, "skipped:http_status": 4}
    assert documents(table, "url") == [good_url("s0"), good_url("s1")]
    assert details(table)["skipped:http_status"] == [
        "206", "no status code in 'HTTP/1.1 -1 Unknown'", "404", "no status code in 'HTTP/1.1 abc'"]


# -- NaN and the infinities --------------------------------------------------------------------------


def strict(text: str) -> object:
    def refuse(constant: str) -> None:
        msg = f"{constant} is no JSON"
        raise ValueError(msg)

    return json.loads(text, parse_constant=refuse)


def test_nan_and_infinity_are_null_in_meta(tmp_path: Path):
    path = tmp_path / "numbers.jsonl"
    path.write_text('{"text": "a", "score": NaN, "x": [Infinity, -Infinity, 1e999, 1.5], "y": {"z": NaN}}\n'
                    '{"text": NaN, "score": 1}\n{"text": "b", "score": 0.25}\n')
    table = read(JsonlReader(), path)
    assert outcome(table) == {"doc": 2, "no_text_field": 1}
    metas = [strict(m) for m in documents(table, "meta")]
    assert [(m["score"], m.get("x"), m.get("y")) for m in metas] == [
        (None, [None, None, None, 1.5], {"z": None}), (0.25, None, None)]
    assert details(table)["no_text_field"] == ["field 'text' is float"]  # NaN: a number, no text


def test_nan_floats_of_a_parquet_column_are_null_in_meta(tmp_path: Path):
    path = tmp_path / "floats.parquet"
    pq.write_table(pa.table({"text": ["a", "b", "c"], "score": [float("nan"), float("inf"), 0.5]}), path)
    table = read(ParquetReader(), path)
    assert [strict(m)["score"] for m in documents(table, "meta")] == [None, None, 0.5]


# -- the shard is recorded with those counts, through a real run ---------------------------------------------


def test_a_run_records_each_damaged_shard_with_its_kept_and_rejected_counts(tmp_path: Path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "tail.jsonl.gz").write_bytes(gzip.compress(b"".join(notes(20)), mtime=0) + b"garbage" * 8)
    corrupt_row_group(inputs / "groups.parquet")
    (inputs / "lie.warc.gz").write_bytes(warc_record(good_url("before"), page("before"))
                                         + lying("response", good_url("liar"), True)
                                         + warc_record(good_url("after"), page("after")))
    recipe = parse_recipe(f"""\
name: round-three
output: {tmp_path}/jobs
executor: local
local: {{workers: 1}}
sources:
  - {{name: notes, format: jsonl, paths: ["{inputs}/*.jsonl.gz"]}}
  - {{name: rows, format: parquet, paths: ["{inputs}/*.parquet"]}}
  - {{name: web, format: warc, paths: ["{inputs}/*.warc.gz"]}}
stages:
  - extract: {{only: [web]}}
  - length: {{min_words: 1}}
rejects: {{sample: 1.0}}
""")
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    job = Path(result.job_dir)
    shards = {}
    for record in (job / "_shards").glob("*.json"):
        data = json.loads(record.read_text())
        shards[data["shard"]] = data["counters"]["read"]
    by_source = {name.split("/")[0].split("-")[0]: counters for name, counters in shards.items()}
    assert len(shards) == 3, sorted(shards)
    found = {}
    for counters in shards.values():
        found[(counters["docs_out"], tuple(sorted(counters["dropped"].items())))] = counters["bytes_in"]
    assert set(found) == {(20, (("unreadable_input", 1),)), (900, (("unreadable_input", 1),)),
                          (2, (("truncated_record", 1),))}, by_source
    assert max(found.values()) < 1_000_000  # bytes read, never the 10^15 a record claims
    stats = json.loads((job / "stats.json").read_text())
    assert stats["documents"]["records_read"] == 20 + 1 + 900 + 1 + 2 + 1
    files = (job / "rejects" / "stage=read").rglob("*.parquet")
    rejected = sorted((p.parent.name, pq.read_table(p).num_rows) for p in files)
    assert rejected == [("reason=truncated_record", 1), ("reason=unreadable_input", 1),
                        ("reason=unreadable_input", 1)]


@pytest.mark.parametrize("length", ["-5", "abc"])
def test_a_content_length_that_is_no_length_is_a_bad_header_not_a_cut(tmp_path: Path, length: str):
    """`Content-Length: -5` was called `truncated_input: header block ends without Content-Length`: nothing was cut."""
    from tests.test_hostile_inputs import warc_record

    records = [warc_record(f"https://x.example/{i}", page(f"k{i}")) for i in range(3)]
    records[1] = gzip.compress(gzip.decompress(records[1]).replace(b"Content-Length: ", f"Content-Length: {length}"
                                                                   .encode() + b"\r\nX-Was: ", 1), mtime=0)
    path = tmp_path / "odd.warc.gz"
    path.write_bytes(b"".join(records))
    table = read(WarcReader(), path)
    assert details(table)["bad_warc_header"] == [f"Content-Length '{length}' is no length"]
    assert "truncated_input" not in outcome(table) and outcome(table)["doc"] >= 2


def _gzipped(plain: list[bytes], form: str) -> bytes:
    """Four records as a WARC file: plain, gzip a member per record, the second and third in one member, or one
    gzip stream."""
    if form == "plain":
        return b"".join(plain)
    if form == "gzip-members":
        return b"".join(gzip.compress(p, mtime=0) for p in plain)
    if form == "gzip-shared-member":
        return b"".join(gzip.compress(b"".join(part), mtime=0) for part in (plain[:1], plain[1:3], plain[3:]))
    return gzip.compress(b"".join(plain), mtime=0)


FORMS = ["plain", "gzip-members", "gzip-shared-member", "gzip-one-stream"]


@pytest.mark.parametrize("form", FORMS)
def test_a_content_length_that_runs_into_the_next_record_doubles_nothing(tmp_path: Path, form: str):
    """A plain WARC whose record b declares 4 bytes, the next record c and 10 bytes of d more than it holds: b was
    kept with c inside its page, and reading resumed at c, read again: c's text twice, one page of garbage. Gzipped as
    one stream (or b and c in one gzip member), c and d were lost without a word: the raw bytes after b's member hold
    no record start; reading now resumes at the next `WARC/1.` line inside the member."""
    plain = [gzip.decompress(response(f"https://x.example/{tag}", page(tag))) for tag in ("aaa", "bbb", "ccc", "ddd")]
    header_end = plain[1].index(b"\r\n\r\n") + 4
    declared = len(plain[1]) - header_end - 4
    plain[1] = plain[1].replace(f"Content-Length: {declared}".encode(),
                                f"Content-Length: {declared + 4 + len(plain[2]) + 10}".encode(), 1)
    (tmp_path / "swallow.warc").write_bytes(_gzipped(plain, form))
    table = read(WarcReader(), tmp_path / "swallow.warc")
    urls = [u for u, r in zip(table.column("url").to_pylist(), table.column(schema.REASON).to_pylist(), strict=True)
            if r is None]
    assert urls == ["https://x.example/aaa", "https://x.example/ccc", "https://x.example/ddd"]
    assert details(table)["bad_warc_header"][0].startswith("Content-Length ")


@pytest.mark.parametrize("form", FORMS)
def test_records_after_a_bad_header_are_read_in_every_gzip_form(tmp_path: Path, form: str):
    """A record with `Content-Length: -5` then two good ones: gzipped as one stream, both were lost, uncounted."""
    plain = [gzip.decompress(response(f"https://x.example/{tag}", page(tag))) for tag in ("aaa", "bbb", "ccc", "ddd")]
    declared = plain[1].split(b"Content-Length: ")[1].split(b"\r\n")[0]
    plain[1] = plain[1].replace(b"Content-Length: " + declared, b"Content-Length: -5", 1)
    (tmp_path / "bad.warc.gz").write_bytes(_gzipped(plain, form))
    table = read(WarcReader(), tmp_path / "bad.warc.gz")
    assert outcome(table) == {"doc": 3, "bad_warc_header": 1}
    kept = [u for u, r in zip(table.column("url").to_pylist(), table.column(schema.REASON).to_pylist(), strict=True)
            if r is None]
    assert kept == ["https://x.example/aaa", "https://x.example/ccc", "https://x.example/ddd"]


def _lf_only(record: bytes) -> bytes:
    """A record with its WARC header lines ended by LF alone (its block, which Content-Length counts, as it is)."""
    plain = gzip.decompress(record)
    header_end = plain.index(b"\r\n\r\n")
    return plain[:header_end].replace(b"\r\n", b"\n") + b"\n\n" + plain[header_end + 4 : -4] + b"\n\n"


@pytest.mark.parametrize("form", ["plain", "gzip-members", "gzip-one-stream", "zstd"])
def test_a_warc_whose_header_lines_end_in_lf_alone_is_read(tmp_path: Path, form: str):
    """fastwarc took a WARC with LF-only header lines for one header block that never ends: each of its records
    was `truncated_input: header block ends without Content-Length` (warcio, which datatrove reads with, reads them)."""
    urls = [f"https://x.example/{tag}" for tag in ("aaa", "bbb", "ccc")]
    plain = [_lf_only(response(url, page(url[-3:]))) for url in urls]
    data = {"plain": b"".join(plain), "gzip-members": b"".join(gzip.compress(p, mtime=0) for p in plain),
            "gzip-one-stream": gzip.compress(b"".join(plain), mtime=0), "zstd": compressed(b"".join(plain), "zstd")}
    path = tmp_path / "lf.warc"
    path.write_bytes(data[form])
    table = read(WarcReader(), path)
    assert outcome(table) == {"doc": 3}
    assert table.column("url").to_pylist()[:3] == urls
    assert [b"aaa" in html for html in table.column("html").to_pylist()[:3]] == [True, False, False]


def test_an_lf_only_warc_with_a_content_length_too_long_resyncs_to_the_record_it_swallowed(tmp_path: Path):
    plain = [_lf_only(response(f"https://x.example/{tag}", page(tag))) for tag in ("aaa", "bbb", "ccc", "ddd")]
    declared = int(plain[1].split(b"Content-Length: ")[1].split(b"\n")[0])
    plain[1] = plain[1].replace(f"Content-Length: {declared}".encode(), f"Content-Length: {declared + 60}".encode())
    (tmp_path / "long.warc").write_bytes(b"".join(plain))
    table = read(WarcReader(), tmp_path / "long.warc")
    assert outcome(table) == {"doc": 3, "bad_warc_header": 1}
    assert table.column("url").to_pylist()[:4] == [f"https://x.example/{tag}" for tag in ("aaa", "bbb", "ccc", "ddd")]


def test_a_warc_gzipped_as_one_stream_keeps_every_record_that_inflates_before_a_break(tmp_path: Path):
    """A read of 64 KiB that met the break gave nothing: the records inflated from it, before the break, were lost
    (a WARC gzipped as one stream whose checksum is wrong, met at its end, lost its last 8 of 120 records)."""
    rng = random.Random(5)
    plain = [gzip.decompress(response(f"https://x.example/{i}", " ".join(
        "".join(rng.choices("abcdefghijklmnop", k=rng.randint(2, 9))) for _ in range(300)).encode()))
        for i in range(120)]
    stream = gzip.compress(b"".join(plain), mtime=0)
    path = tmp_path / "one.warc.gz"
    path.write_bytes(stream[:-8] + bytes(b ^ 0x55 for b in stream[-8:-4]) + stream[-4:])  # CRC32 wrong
    table = read(WarcReader(), path)
    assert outcome(table) == {"doc": 120, "unreadable_input": 1}
    assert "incorrect data check" in details(table)["unreadable_input"][0]


@pytest.mark.parametrize("head", ["damaged first line", "garbage before", "byte order mark", "gzip magic lost",
                                  "junk before gzip"])
def test_a_bad_start_of_the_file_costs_only_itself(tmp_path: Path, head: str):
    """Reading resumed at the next record start only where a file began with `WARC/1.` or gzip's magic: a file
    whose first record was damaged, or with bytes before it, was one `unreadable_input` and none of its records."""
    urls = [f"https://x.example/{tag}" for tag in ("aaa", "bbb", "ccc", "ddd")]
    members = [response(url, page(url[-3:])) for url in urls]
    plain = [gzip.decompress(m) for m in members]
    data, docs = {
        "damaged first line": (b"WARX" + b"".join(plain)[4:], urls[1:]),
        "garbage before": (b"hello garbage\r\n" + b"".join(plain), urls),
        "byte order mark": (b"\xef\xbb\xbf" + b"".join(plain), urls),
        "gzip magic lost": (b"\x00\x00" + b"".join(members)[2:], urls[1:]),
        "junk before gzip": (b"junk\n" + b"".join(members), urls),
    }[head]
    path = tmp_path / "head.warc"
    path.write_bytes(data)
    table = read(WarcReader(), path)
    assert outcome(table) == {"doc": len(docs), "unreadable_input": 1}
    got = [u for u, r in zip(table.column("url").to_pylist(), table.column(schema.REASON).to_pylist(), strict=True)
           if r is None]
    assert got == docs


@pytest.mark.parametrize("length", ["1000000000000000000000000000000", "\u0667\u0667\u0663"])
def test_a_content_length_fastwarc_cannot_read_is_one_bad_header(tmp_path: Path, length: str):
    """10^30 or Arabic-Indic digits passed `isdigit`, fastwarc read some other length: the page became
    `skipped:http_status` (a skip, not a reject) and the break after it one more reject."""
    plain = [gzip.decompress(response(f"https://x.example/{tag}", page(tag))) for tag in ("aaa", "bbb", "ccc")]
    declared = plain[1].split(b"Content-Length: ")[1].split(b"\r\n")[0]
    plain[1] = plain[1].replace(b"Content-Length: " + declared, f"Content-Length: {length}".encode())
    (tmp_path / "cl.warc").write_bytes(b"".join(plain))
    table = read(WarcReader(), tmp_path / "cl.warc")
    assert outcome(table) == {"doc": 2, "bad_warc_header": 1}
    assert details(table)["bad_warc_header"] == [f"Content-Length {length!r} is no length"]


def test_a_response_whose_block_is_the_page_itself_is_read_and_one_that_lies_is_bad_http(tmp_path: Path):
    """A response record holding bare HTML was `skipped:http_status` (a skip): under `Content-Type: text/html` it is
    the page, as a resource's block is; under `application/http` it is an HTTP message that is none, a reject."""
    html = page("bare")
    blocks = []
    for content_type in ("text/html", "application/http; msgtype=response"):
        head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
                f"WARC-Target-URI: https://x.example/{content_type[:4]}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(html)}\r\n\r\n")
        blocks.append(head.encode() + html + b"\r\n\r\n")
    (tmp_path / "bare.warc").write_bytes(b"".join(blocks))
    table = read(WarcReader(), tmp_path / "bare.warc")
    assert outcome(table) == {"doc": 1, "bad_http": 1}
    assert table.column("html").to_pylist()[0] == html
    assert details(table)["bad_http"][0].startswith("no HTTP status line")
