"""Reader faults: lone surrogates, binary Parquet columns, decompression bombs, WARC/1.0 target URIs,
and storage faults told from bad content.

Every input is built here, in tmp_path; storage faults come from a local filesystem wrapped to fail its first
opens or reads the way NFS or an object store does (an OSError with an errno, an S3 503), put in place of
`curation.storage.resolve`.
"""

from __future__ import annotations

import errno
import gzip
import json
import pickle
import random
import tarfile
import time
import uuid
import zipfile
import zlib
from collections import Counter
from io import BytesIO
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import brotli
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from curation import schema, storage
from curation.readers import (
    CodeOptions,
    CodeReader,
    DecompressionBombError,
    InputReadError,
    JsonlReader,
    ParquetReader,
    WarcReader,
    WetReader,
    is_io_error,
    read_shard,
)
from curation.readers.base import DECOMPRESSION_FLOOR, Reader
from curation.recipe import Source
from curation.shards import list_shards, shard_name
from tests.conftest import warc_response
from tests.support.fuzzing import blank_member

pytestmark = pytest.mark.timeout(120, method="thread")

MiB = 1 << 20
FAST = {"read_attempts": 3, "read_backoff_s": 0.001}


# -- helpers -----------------------------------------------------------------------------------------------------


def read(reader: Reader, path: Path | str) -> pa.Table:
    return pa.concat_tables(read_shard(reader, str(path), source="s", shard="shard-0"))


def outcome(table: pa.Table) -> Counter:
    """Rows per reason ("doc" for documents), the end-of-shard marker left out."""
    reasons = table.column(schema.REASON).to_pylist()
    return Counter("doc" if r is None else r for r in reasons if r != schema.END_OF_SHARD)


def details(table: pa.Table) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in table.select([schema.REASON, schema.DETAIL]).to_pylist():
        if row[schema.REASON] not in (None, schema.END_OF_SHARD):
            out.setdefault(row[schema.REASON], []).append(row[schema.DETAIL])
    return out


def documents(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.select(["id", "url", "text", "meta", schema.REASON]).to_pylist()
    return [r for r in rows if r[schema.REASON] is None]


def jsonl_line(key: str, **extra: Any) -> bytes:
    return json.dumps({"text": f"the text of {key}", "url": f"https://good.example/{key}", **extra}).encode() + b"\n"


def page(key: str) -> bytes:
    return f"<html><head><title>{key}</title></head><body><p>The page of {key}.</p></body></html>".encode()


def warc10_record(url_field: str, body: bytes, kind: str = "response") -> bytes:
    """A WARC/1.0 record, its WARC-Target-URI written as given (in angle brackets, as the 1.0 spec has it)."""
    if kind == "response":
        body = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + body
        content_type = "application/http; msgtype=response"
    else:
        content_type = "text/plain"
    head = (f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
            f"WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Target-URI: {url_field}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return gzip.compress(head + body + b"\r\n\r\n", mtime=0)


# -- a lone surrogate costs its own record only -----------------------------------------------------------


def test_a_lone_surrogate_anywhere_in_a_jsonl_record_rejects_that_record_only(tmp_path: Path):
    lines = [
        jsonl_line("first"),
        b'{"text": "bad \\ud800 text", "url": "https://x.example/1"}\n',  # escaped in the text
        b'{"text": "fine", "url": "https://x.example/\\udfff"}\n',  # in the url
        b'{"text": "fine", "url": "https://x.example/3", "lang": "\\ud83d"}\n',  # in another field (meta)
        b'{"text": "fine", "url": "https://x.example/4", "\\udc80key": 1}\n',  # in a key of meta
        b'{"text": "raw \xed\xa0\x80 bytes", "url": "https://x.example/5"}\n',  # raw ED A0 80: json decodes it
        jsonl_line("last", lang="en"),
    ]
    path = tmp_path / "surrogates.jsonl"
    path.write_bytes(b"".join(lines))
    table = read(JsonlReader(), path)
    assert outcome(table) == {"doc": 2, "invalid_utf8": 5}
    assert details(table)["invalid_utf8"] == [
        "field 'text': surrogates not allowed at character 4",
        "field 'url': surrogates not allowed at character 18",
        "field 'meta.lang': surrogates not allowed at character 0",
        "field 'meta key \\udc80key': surrogates not allowed at character 0",
        "field 'text': surrogates not allowed at character 4",
    ]
    assert [d["text"] for d in documents(table)] == ["the text of first", "the text of last"]
    assert json.loads(documents(table)[1]["meta"])["lang"] == "en"
    urls = table.filter(pa.compute.equal(table.column(schema.REASON), "invalid_utf8")).column("url").to_pylist()
    assert urls[1] == "https://x.example/\\udfff"  # the reject keeps its url, the surrogate spelled out
    assert table.column(schema.SHARD_ROWS).to_pylist()[-1] == table.num_rows == 8  # and the shard ends


def test_a_surrogate_in_a_compressed_jsonl_and_in_a_reject_detail_does_not_stop_the_shard(tmp_path: Path):
    path = tmp_path / "surrogates.jsonl.gz"
    lines = [jsonl_line("a"), b'["\\ud800"]\n', b'{"text": 1, "\\ud800": 2}\n', jsonl_line("b")]
    path.write_bytes(gzip.compress(b"".join(lines)))
    table = read(JsonlReader(), path)
    assert outcome(table) == {"doc": 2, "not_an_object": 1, "no_text_field": 1}


def test_a_file_name_that_is_not_utf8_is_a_reject_not_a_crash(tmp_path: Path):
    import os

    name = os.fsencode(tmp_path) + b"/notes-\xed\xa0\x80.jsonl"
    with open(name, "wb") as f:
        f.write(jsonl_line("a"))
    (uri,) = storage.expand(f"{tmp_path}/*.jsonl")
    table = read(JsonlReader(), uri)
    assert outcome(table) == {"unreadable_input": 1}  # pyarrow cannot open such a name
    assert json.loads(table.column("meta")[0].as_py())["source_uri"] == f"{tmp_path}/notes-\\xed\\xa0\\x80.jsonl"


# -- Parquet binary columns are decoded row by row ----------------------------------------------------------


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary()])
def test_a_binary_parquet_text_column_loses_only_rows_that_are_not_utf8(tmp_path: Path, kind: pa.DataType):
    texts = [b"plain ascii", "caf\u00e9 na\u00efve".encode(), b"bad \xff byte", b"surrogate \xed\xa0\x80", None]
    urls = [b"https://x.example/0", b"https://x.example/\xc3\xa9", b"https://x.example/2", b"https://x.example/3",
            b"https://x.example/4"]
    path = tmp_path / "binary.parquet"
    pq.write_table(pa.table({"text": pa.array(texts, kind), "url": pa.array(urls, kind), "n": [0, 1, 2, 3, 4]}), path)
    table = read(ParquetReader(), path)
    assert outcome(table) == {"doc": 2, "invalid_utf8": 2, "no_text_field": 1}
    assert [(d["text"], d["url"]) for d in documents(table)] == [
        ("plain ascii", "https://x.example/0"), ("caf\u00e9 na\u00efve", "https://x.example/\u00e9")]
    assert [d.split(":")[0] for d in details(table)["invalid_utf8"]] == ["column 'text'", "column 'text'"]


def test_a_binary_parquet_url_that_is_not_utf8_rejects_its_row(tmp_path: Path):
    path = tmp_path / "binary-url.parquet"
    pq.write_table(pa.table({"text": ["one", "two"], "url": pa.array([b"https://x.example/\xff", b"https://ok/"])}),
                   path)
    table = read(ParquetReader(), path)
    assert outcome(table) == {"doc": 1, "invalid_utf8": 1}
    assert details(table)["invalid_utf8"][0].startswith("column 'url': 'utf-8' codec can't decode byte 0xff")


def test_bad_bytes_in_a_nested_parquet_string_lose_only_their_row(tmp_path: Path):
    good = pa.array([["a", "b"], ["c"], ["d"]], pa.list_(pa.binary()))
    values = pa.array([b"a", b"b", b"\xed\xa0\x80", b"d"], pa.binary()).view(pa.string())  # no validation
    nested = pa.ListArray.from_arrays(good.offsets, values)
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"text": ["one", "two", "three"], "tags": nested}), path)
    table = read(ParquetReader(), path)
    assert outcome(table) == {"doc": 2, "invalid_utf8": 1}
    assert details(table)["invalid_utf8"][0].startswith("column 'tags': 'utf-8' codec can't decode")
    assert [d["text"] for d in documents(table)] == ["one", "three"]


# -- WARC/1.0 target URIs in angle brackets -------------------------------------------------------------


def test_warc_1_0_target_uris_lose_their_angle_brackets(tmp_path: Path):
    warc = tmp_path / "old.warc.gz"
    warc.write_bytes(warc10_record("<https://old.example/a>", page("a"))
                     + warc10_record("https://new.example/b", page("b")))
    table = read(WarcReader(), warc)
    assert [d["url"] for d in documents(table)] == ["https://old.example/a", "https://new.example/b"]
    wet = tmp_path / "old.warc.wet.gz"
    wet.write_bytes(warc10_record("< https://old.example/c >", b"Some text.", kind="conversion"))
    table = read(WetReader(), wet)
    assert [(d["url"], d["text"]) for d in documents(table)] == [("https://old.example/c", "Some text.")]


# -- decompression bombs and blank lines -----------------------------------------------------------------


def test_a_gzip_of_blank_lines_is_read_fast_and_keeps_every_position(tmp_path: Path):
    path = tmp_path / "blank.jsonl.gz"
    path.write_bytes(gzip.compress(jsonl_line("before")) + blank_member(128)
                     + gzip.compress(b" \r\n\t\n" + jsonl_line("after")))
    records = list(JsonlReader().records(str(path)))  # its speed: benchmarks/reader_bombs.py
    assert [(r.position, r.text) for r in records] == [(0, "the text of before"), (128 * MiB + 3, "the text of after")]


def test_a_jsonl_bomb_is_one_decompression_bomb_reject_and_the_rest_is_not_read(tmp_path: Path):
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(jsonl_line("before")) + blank_member(64) + gzip.compress(jsonl_line("after")))
    table = read(JsonlReader(max_decompressed_bytes=8 * MiB), path)
    assert outcome(table) == {"doc": 1, "decompression_bomb": 1}
    (detail,) = details(table)["decompression_bomb"]
    assert detail == (f"DecompressionBombError: over {8 * MiB} bytes decompressed from a file of {path.stat().st_size} "
                      "bytes (max_decompressed_bytes, max_decompression_ratio): the rest of the file is not read")
    plain = tmp_path / "plain.jsonl"  # nothing inflates: no bound
    plain.write_bytes(jsonl_line("a") + b"\n" * (9 * MiB) + jsonl_line("b"))
    assert outcome(read(JsonlReader(max_decompressed_bytes=8 * MiB), plain)) == {"doc": 2}


@pytest.mark.parametrize("line", [b"\n", b"\r\n"])
def test_a_warc_bomb_of_blank_lines_is_one_decompression_bomb_reject(tmp_path: Path, line: bytes):
    path = tmp_path / "bomb.warc.gz"
    path.write_bytes(warc_response("https://x.example/before", page("before")) + blank_member(64, line)
                     + warc_response("https://x.example/after", page("after")))
    table = read(WarcReader(max_decompressed_bytes=4 * MiB), path)
    assert outcome(table) == {"doc": 1, "decompression_bomb": 1}
    assert documents(table)[0]["url"] == "https://x.example/before"


def test_a_warc_record_inflating_past_the_bound_is_a_decompression_bomb(tmp_path: Path):
    zeros = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = (b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: https://x.example/zeros\r\n"
            b"Content-Type: text/html\r\nContent-Length: " + str(64 * MiB).encode() + b"\r\n\r\n")
    member = zeros.compress(head + bytes(64 * MiB) + b"\r\n\r\n") + zeros.flush()
    path = tmp_path / "zeros.warc.gz"
    path.write_bytes(warc_response("https://x.example/before", page("before")) + member
                     + warc_response("https://x.example/after", page("after")))
    bounded = read(WarcReader(max_decompressed_bytes=8 * MiB), path)
    assert outcome(bounded) == {"doc": 1, "too_large": 1, "decompression_bomb": 1}  # refused, then skipped past
    # under the default bound (the ratio, judged beyond 4 GiB) the record is refused by its size and the one
    # after it read
    assert outcome(read(WarcReader(max_record_bytes=MiB), path)) == {"doc": 2, "too_large": 1}


def test_a_default_reader_bounds_a_gzip_warc_by_its_ratio(tmp_path: Path, monkeypatch):
    import curation.readers.base as base

    monkeypatch.setattr(base, "DECOMPRESSION_FLOOR", 2 * MiB)  # the ratio is judged beyond 4 GiB: made cheap here
    path = tmp_path / "bomb.warc.gz"
    path.write_bytes(warc_response("https://x.example/before", page("before")) + blank_member(64)
                     + warc_response("https://x.example/after", page("after")))
    assert outcome(read(WarcReader(), path)) == {"doc": 1, "decompression_bomb": 1}


def _framed(tmp_path: Path, name: str, codec: str, data: bytes) -> Path:
    path = tmp_path / name
    with pa.CompressedOutputStream(str(path), codec) as out:
        out.write(data)
    return path


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_a_zstd_or_lz4_warc_is_bounded_and_read_whole_or_called_truncated(tmp_path: Path, codec: str):
    from tests.test_hostile_inputs import warc_record

    good = b"".join(warc_record(f"https://x.example/{i}", page(str(i)), gz=False) for i in range(3))
    clean = _framed(tmp_path, f"good.warc.{codec}", codec, good)
    assert _rows(read(WarcReader(), clean)) == _rows(read(WarcReader(max_decompression_ratio=None), clean))
    assert outcome(read(WarcReader(), clean)) == {"doc": 3}
    cut = tmp_path / f"cut.warc.{codec}"
    cut.write_bytes(clean.read_bytes()[:-40])  # one frame: nothing of it can be trusted (fastwarc: unreadable)
    assert outcome(read(WarcReader(), cut)) == {"truncated_input": 1}
    bomb = _framed(tmp_path, f"bomb.warc.{codec}", codec, good[: len(good) // 3] + b"\r\n" * (32 * MiB) + good)
    table = read(WarcReader(max_decompressed_bytes=4 * MiB), bomb)
    assert outcome(table) == {"doc": 1, "decompression_bomb": 1}


def _warc_variants(tmp_path: Path) -> list[Path]:
    """Gzip WARCs that break in the ways resyncing handles: cut anywhere, lying lengths, garbage, a huge header."""
    from tests.test_hostile_inputs import good_record, warc_record

    records = [good_record(f"v-{i}") for i in range(3)]
    last = good_record("v-last")
    liar = warc_record("https://hostile.example/liar", page("liar"), lie=500)
    short = warc_record("https://hostile.example/short", page("short"), lie=-300)
    huge = gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\nX-Huge: " + b"h" * (40 << 10) + b"\r\n\r\n")
    variants = {"good": b"".join(records), "liar": records[0] + liar + records[1],
                "short": records[0] + short + records[1],
                "garbage": records[0] + b"\x00garbage" * 50 + records[1], "huge": records[0] + huge + records[1],
                "past-end": records[0] + warc_record("https://hostile.example/end", page("end"), lie=9000) + records[1]}
    for end in range(1, len(last), 23):
        variants[f"cut-{end}"] = b"".join(records) + last[:end]
    paths = []
    for name, data in variants.items():
        paths.append(tmp_path / f"{name}.warc.gz")
        paths[-1].write_bytes(data)
    return paths


def test_counting_what_a_warc_inflates_to_reads_what_fastwarc_alone_reads(tmp_path: Path):
    for path in _warc_variants(tmp_path):
        alone = read(WarcReader(max_decompression_ratio=None), path)  # no bound: fastwarc inflates
        counted = read(WarcReader(max_decompressed_bytes=1 << 30), path)
        assert _rows(counted) == _rows(alone), path.name
        assert [d.split(":")[0] for d in counted.column(schema.DETAIL).to_pylist() if d] == [
            d.split(":")[0] for d in alone.column(schema.DETAIL).to_pylist() if d], path.name


def test_a_parquet_row_group_inflating_past_the_bound_is_a_decompression_bomb(tmp_path: Path):
    path = tmp_path / "bomb.parquet"
    texts = [f"small {i}" for i in range(10)] + ["a" * MiB] * 10
    pq.write_table(pa.table({"text": texts}), path, row_group_size=10, compression="zstd",
                   use_dictionary=False)
    assert path.stat().st_size < MiB
    table = read(ParquetReader(max_decompressed_bytes=4 * MiB), path)
    assert outcome(table) == {"doc": 10, "decompression_bomb": 1}
    assert outcome(read(ParquetReader(), path)) == {"doc": 20}


def test_the_bound_is_the_absolute_one_or_the_ratio_past_the_floor():
    def limit(compressed: int, **options: Any) -> int | None:
        return Reader(**options).inflate_budget("unused", compressed).limit

    assert limit(MiB) == DECOMPRESSION_FLOOR  # a 1 MB file may give 4 GiB (the 2 GiB records of real crawls)
    assert limit(100 * MiB) == 100 * 100 * MiB
    assert limit(100 * MiB, max_decompressed_bytes=5 * MiB) == 5 * MiB
    assert limit(100 * MiB, max_decompression_ratio=None) is None
    with pytest.raises(DecompressionBombError):
        Reader(max_decompressed_bytes=10).inflate_budget("unused", 1).spend(11)


def test_the_recipe_keys_reach_the_reader():
    source = Source(name="s", format="jsonl", paths=["x.jsonl"], max_decompressed_bytes=1000,
                    max_decompression_ratio=20, read_attempts=5, read_backoff_s=0.25)
    reader = source.reader()
    assert (reader.max_decompressed_bytes, reader.max_decompression_ratio, reader.read_attempts,
            reader.read_backoff_s) == (1000, 20, 5, 0.25)
    defaults = Source(name="s", format="warc", paths=["x.warc.gz"]).reader()
    assert (defaults.max_decompressed_bytes, defaults.read_attempts) == (None, 3)


# -- reader side: storage faults are retried, then fail the shard; bad content stays a reject ---------------


class _Breaking:
    """A file whose read raises `error` once it would go past `after` bytes read (a storage fault mid-read)."""

    def __init__(self, inner: pa.NativeFile, after: int, error: OSError) -> None:
        self.inner, self.after, self.error, self.given = inner, after, error, 0

    def read(self, size: int = -1) -> bytes:
        if self.given + (size if size >= 0 else self.inner.size()) > self.after:  # a read that fails, not a short one
            raise self.error
        data = self.inner.read(size)
        self.given += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.inner.seek(offset, whence)

    def tell(self) -> int:
        return self.inner.tell()

    def size(self) -> int:
        return self.inner.size()

    def close(self) -> None:
        self.inner.close()

    @property
    def closed(self) -> bool:
        return self.inner.closed


class FlakyFileSystem:
    """The local filesystem, but its first `fail_opens` opens raise `error`, and the `break_reads` opens after them
    give files that raise it after `after` bytes. `opens` counts every open."""

    def __init__(self, error: OSError, fail_opens: int = 0, break_reads: int = 0, after: int = 0) -> None:
        self.local = pafs.LocalFileSystem()
        self.error, self.fail_opens, self.break_reads, self.after = error, fail_opens, break_reads, after
        self.opens = 0

    def get_file_info(self, path: str) -> pafs.FileInfo:
        return self.local.get_file_info(path)

    def _opened(self, file: pa.NativeFile) -> Any:
        self.opens += 1
        if self.opens <= self.fail_opens:
            file.close()
            raise self.error
        if self.opens <= self.fail_opens + self.break_reads:
            return pa.PythonFile(_Breaking(file, self.after, self.error), mode="r")
        return file

    def open_input_stream(self, path: str, compression: str | None = None) -> Any:
        return self._opened(self.local.open_input_stream(path, compression=compression))

    def open_input_file(self, path: str) -> Any:
        return self._opened(self.local.open_input_file(path))


EIO = OSError(errno.EIO, "Input/output error")
S3_503 = OSError("AWS Error SERVICE_UNAVAILABLE during GetObject operation: Service Unavailable (HTTP status 503)")


@pytest.fixture
def flaky(monkeypatch):
    """Installs a FlakyFileSystem for every local path and URI (WARC files are then opened through it too)."""

    def install(fs: FlakyFileSystem) -> FlakyFileSystem:
        monkeypatch.setattr(storage, "resolve", lambda uri: (fs, str(Path(uri.removeprefix("file://")).resolve())))
        monkeypatch.setattr(storage, "is_remote", lambda uri: True)
        return fs

    return install


def _inputs(tmp_path: Path) -> list[tuple[Reader, Path]]:
    jsonl = tmp_path / "notes.jsonl.gz"
    jsonl.write_bytes(gzip.compress(b"".join(jsonl_line(f"note-{i}") for i in range(300))))
    parquet = tmp_path / "table.parquet"
    pq.write_table(pa.table({"text": [f"row {i} " * 20 for i in range(3000)]}), parquet, row_group_size=500)
    warc = tmp_path / "crawl.warc.gz"
    warc.write_bytes(b"".join(warc_response(f"https://x.example/{i}", page(f"p{i}") * 20) for i in range(60)))
    return [(JsonlReader(**FAST), jsonl), (ParquetReader(**FAST), parquet), (WarcReader(**FAST), warc)]


def _rows(table: pa.Table) -> list[tuple]:
    return list(zip(*(table.column(c).to_pylist() for c in ("id", "url", "text", "html", schema.REASON)), strict=True))


@pytest.mark.parametrize("error", [EIO, S3_503, ConnectionResetError(errno.ECONNRESET, "reset by peer")],
                         ids=["eio", "s3-503", "reset"])
def test_a_storage_fault_mid_read_is_retried_and_loses_or_doubles_nothing(tmp_path: Path, flaky, error: OSError):
    for reader, path in _inputs(tmp_path):
        undisturbed = read(reader, path)
        size = path.stat().st_size
        fs = flaky(FlakyFileSystem(error, fail_opens=1, break_reads=1, after=size // 2))
        disturbed = read(reader, path)
        assert fs.opens >= 3, path.name  # failed to open, broke off half way, then read to the end
        assert _rows(disturbed) == _rows(undisturbed), path.name
        assert len(set(disturbed.column("id").to_pylist())) == disturbed.num_rows
        assert disturbed.column(schema.REASON).to_pylist()[-1] == schema.END_OF_SHARD
        assert outcome(undisturbed)["doc"] > 0 and set(outcome(undisturbed)) == {"doc"}


def test_a_storage_fault_past_the_attempts_fails_the_shard_without_its_marker(tmp_path: Path, flaky):
    for reader, path in _inputs(tmp_path):
        fs = flaky(FlakyFileSystem(EIO, fail_opens=1, break_reads=5, after=path.stat().st_size // 2))
        batches = []
        with pytest.raises(InputReadError) as raised:
            for batch in read_shard(reader, str(path), source="s", shard="shard-0", batch_rows=8):
                batches.append(batch)
        assert fs.opens == 3, path.name  # read_attempts
        assert raised.value.uri == str(path) and raised.value.attempts == 3
        assert str(raised.value) == f"{path}: could not be read in 3 attempts: OSError: [Errno 5] Input/output error"
        reasons = [r for b in batches for r in b.column(schema.REASON).to_pylist()]
        assert schema.END_OF_SHARD not in reasons and "unreadable_input" not in reasons, path.name


def test_a_file_gone_when_its_shard_runs_fails_the_shard_and_is_read_when_it_is_back(tmp_path: Path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"".join(jsonl_line(f"note-{i}") for i in range(12)))
    kept = path.read_bytes()
    path.unlink()
    for reader in (JsonlReader(**FAST), ParquetReader(**FAST), WarcReader(**FAST)):
        with pytest.raises(InputReadError, match=r"could not be read in 3 attempts: FileNotFoundError"):
            list(read_shard(reader, str(path), source="s", shard="shard-0"))
    path.write_bytes(kept)
    assert outcome(read(JsonlReader(**FAST), path)) == {"doc": 12}


def test_the_wait_between_attempts_doubles(tmp_path: Path, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    with pytest.raises(InputReadError):
        list(read_shard(JsonlReader(read_attempts=4, read_backoff_s=0.5), str(tmp_path / "gone.jsonl"),
                        source="s", shard="shard-0"))
    assert waits == [0.5, 1.0, 2.0]


def test_bad_content_is_a_reject_at_the_first_attempt(tmp_path: Path, flaky):
    data = gzip.compress(b"".join(jsonl_line(f"note-{i}") for i in range(2000)))
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(data[: len(data) // 2])
    corrupt = tmp_path / "corrupt.parquet"
    pq.write_table(pa.table({"text": ["x" * 100] * 1000}), corrupt)
    body = corrupt.read_bytes()
    corrupt.write_bytes(body[:100] + bytes(len(body) - 200) + body[-100:])
    fs = flaky(FlakyFileSystem(EIO))  # never fails: counts the opens
    for reader, path, reason in ((JsonlReader(**FAST), truncated, "truncated_input"),
                                 (ParquetReader(**FAST), corrupt, "unreadable_input")):
        fs.opens = 0
        table = read(reader, path)
        assert details(table).keys() == {reason}, path.name
        assert fs.opens == 1, path.name
    empty = tmp_path / "empty.jsonl"  # a zero-byte file is content too
    empty.write_bytes(b"")
    assert details(read(JsonlReader(**FAST), empty)) == {"unreadable_input": ["empty file (0 bytes)"]}


@pytest.mark.parametrize(("error", "storage"), [
    (FileNotFoundError(errno.ENOENT, "No such file or directory"), True),
    (PermissionError(errno.EACCES, "Permission denied"), True),
    (OSError(errno.ESTALE, "Stale file handle"), True),
    (EIO, True),
    (S3_503, True),
    (OSError("When reading information for key 'x': AWS Error NETWORK_CONNECTION: curlCode: 28, Timeout"), True),
    (FileNotFoundError("No such file or directory (os error 2)"), True),  # fastwarc's words
    (TimeoutError("timed out"), True),
    (OSError("Truncated compressed stream"), False),  # pyarrow's words for content
    (OSError("zlib inflate failed: invalid distance too far back"), False),
    (OSError("Couldn't deserialize thrift: don't know what type"), False),
    (OSError("Invalid WARC header"), False),  # fastwarc
    (OSError("gzip data broken after byte 503: invalid block type"), False),  # the WARC reader's own words
    (OSError("When reading 'x': HTTP response code: 502"), True),
    (gzip.BadGzipFile("Not a gzipped file (b'xx')"), False),
    (EOFError("Compressed file ended before the end-of-stream marker was reached"), False),
    (zlib.error("Error -3 while decompressing data"), False),
    (pa.ArrowInvalid("Parquet magic bytes not found in footer"), False),
    (IsADirectoryError(errno.EISDIR, "Is a directory"), False),
    (ValueError("bad"), False),
])
def test_storage_faults_are_told_from_bad_content(error: BaseException, storage: bool):
    assert is_io_error(error) is storage


def test_input_read_error_survives_pickling():
    error = InputReadError("s3://bucket/x.jsonl", 3, "OSError: 503")
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.uri, again.attempts, str(again)) == (InputReadError, error.uri, 3, str(error))
    assert isinstance(again, OSError)


# -- follow-ups: deep JSON nesting, the code reader's bounds and retries, non-UTF-8 names at planning ---------------


@pytest.mark.parametrize("nested", [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000],
                         ids=["arrays", "objects"])
def test_a_json_line_nested_too_deep_is_one_bad_json_and_the_lines_after_are_read(tmp_path: Path, nested: bytes):
    path = tmp_path / "deep.jsonl"
    path.write_bytes(jsonl_line("a") + b'{"text": ' + nested + b"}\n" + jsonl_line("b") + jsonl_line("c"))
    table = read(JsonlReader(), path)
    assert outcome(table) == {"doc": 3, "bad_json": 1}
    assert table.column(schema.REASON).to_pylist()[:4] == [None, "bad_json", None, None]
    assert details(table)["bad_json"][0].startswith("nested too deep: maximum recursion depth exceeded")
    stack = tmp_path / "stack.jsonl"  # the code format's tables parse their lines the same way
    stack.write_bytes(b'{"content": "x = 1\\n", "path": "a.py"}\n{"content": ' + nested + b"}\n"
                      b'{"content": "y = 2\\n", "path": "b.py"}\n')
    assert outcome(read(CodeReader(code=CodeOptions(layout="tables")), stack)) == {"doc": 2, "bad_json": 1}


def _source(seed: int, kib: int = 20) -> bytes:
    """Python source that does not compress (hex of random bytes), `kib` KiB of it."""
    return f"DATA = {random.Random(seed).randbytes(kib * 512).hex()!r}\n".encode()


def tar_archive(path: Path, members: list[tuple[str, bytes]]) -> Path:
    mode = {".gz": "w:gz", ".xz": "w:xz", ".bz2": "w:bz2"}.get(path.suffix, "w:gz")  # else a forced layout
    with tarfile.open(path, mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, BytesIO(data))
    return path


def zip_archive(path: Path, members: list[tuple[str, bytes]], kind: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", kind) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return path


BOMB = [("repo/ok.py", b"print('ok')\n"), ("repo/zeros.py", bytes(8 * MiB)), ("repo/after.py", b"x = 1\n")]


@pytest.mark.parametrize("name", ["r.tar.gz", "r.tar.xz", "r.tar.bz2", "r.zip", "forced.bin"])
def test_a_code_archive_bomb_is_one_decompression_bomb_reject_after_the_documents_before_it(tmp_path: Path,
                                                                                             name: str):
    path = tmp_path / name
    (zip_archive if name.endswith(".zip") else tar_archive)(path, BOMB)
    assert path.stat().st_size < 64 * 1024  # 8 MiB of zeros
    options = {"code": CodeOptions(layout="archives")}
    table = read(CodeReader(max_decompressed_bytes=MiB, **options), path)
    # a tar member's header comes before its bytes (too large: skipped, inflated to step over it); a zip member's
    # declared size is spent before it is opened; after.py is not read either way
    middle = [] if name.endswith(".zip") else ["skipped:too_large"]
    assert table.column(schema.REASON).to_pylist()[:-1] == [None, *middle, "decompression_bomb"]
    assert documents(table)[0]["text"] == "print('ok')\n"
    assert details(table)["decompression_bomb"][0].startswith(f"DecompressionBombError: over {MiB} bytes decompressed")
    unbounded = read(CodeReader(**options), path)  # 8 MiB is no bomb by the default ratio: a file too large to keep
    assert outcome(unbounded) == {"doc": 2, "skipped:too_large": 1}


def test_a_code_table_inflating_past_the_bound_is_a_decompression_bomb(tmp_path: Path):
    parquet = tmp_path / "stack.parquet"
    contents = [f"x = {i}\n" * 1000 for i in range(400)]  # distinct: no dictionary to shrink them to one
    pq.write_table(pa.table({"content": contents, "path": ["a.py"] * 400}), parquet, row_group_size=100)
    assert outcome(read(CodeReader(max_decompressed_bytes=4 * MiB), parquet)) == {"doc": 400}  # 3.1 MB in all
    table = read(CodeReader(max_decompressed_bytes=MiB), parquet)
    assert outcome(table) == {"doc": 100, "decompression_bomb": 1}  # the second row group passes the bound
    stack = tmp_path / "stack.jsonl.gz"
    line = json.dumps({"content": "x = 1\n" * 1000, "path": "a.py"}).encode() + b"\n"
    stack.write_bytes(gzip.compress(line * 400))
    table = read(CodeReader(max_decompressed_bytes=MiB), stack)
    assert outcome(table) == {"doc": MiB // len(line), "decompression_bomb": 1}  # the lines inflated within it


def _archives(tmp_path: Path) -> list[Path]:
    members = [(f"repo/m{i}.py", _source(i)) for i in range(24)]
    return [tar_archive(tmp_path / "r.tar.gz", members), zip_archive(tmp_path / "r.zip", members, zipfile.ZIP_STORED)]


def test_a_storage_fault_reading_a_code_archive_is_retried_then_fails_the_shard(tmp_path: Path, flaky):
    paths = _archives(tmp_path)
    undisturbed = [read(CodeReader(**FAST), path) for path in paths]
    assert [outcome(t) for t in undisturbed] == [{"doc": 24}] * 2
    for path, expected in zip(paths, undisturbed, strict=True):
        fs = flaky(FlakyFileSystem(EIO, fail_opens=1, break_reads=1, after=path.stat().st_size // 2))
        disturbed = read(CodeReader(**FAST), path)
        assert fs.opens >= 3, path.name
        assert _rows(disturbed) == _rows(expected), path.name
        fs = flaky(FlakyFileSystem(EIO, break_reads=9, after=path.stat().st_size // 2))
        with pytest.raises(InputReadError, match=r"could not be read in 3 attempts: OSError: \[Errno 5\]"):
            list(read_shard(CodeReader(**FAST), str(path), source="s", shard="shard-0"))
        assert fs.opens == 3, path.name


def test_bad_content_in_a_code_archive_is_still_a_reject_at_the_first_attempt(tmp_path: Path, flaky):
    tar, zipped = _archives(tmp_path)
    data = tar.read_bytes()
    tar.write_bytes(data[: len(data) // 2])  # cut short
    body = bytearray(zipped.read_bytes())
    at = body.index(b"DATA", body.index(b"repo/m5.py"))  # a stored member's text: its CRC no longer matches
    body[at] ^= 0xFF
    zipped.write_bytes(bytes(body))
    fs = flaky(FlakyFileSystem(EIO))  # never fails: counts the opens
    table = read(CodeReader(**FAST), tar)
    assert fs.opens == 2  # the licence pass and the documents pass, no retry
    assert set(outcome(table)) == {"doc", "truncated_input"} and outcome(table)["truncated_input"] == 1
    fs.opens = 0
    table = read(CodeReader(**FAST), zipped)
    assert fs.opens == 1
    assert outcome(table) == {"doc": 23, "unreadable_member": 1}
    assert details(table)["unreadable_member"] == ["m5.py: BadZipFile: Bad CRC-32 for file 'repo/m5.py'"]


def test_a_folder_holding_a_file_name_that_is_not_utf8_plans_and_reads_it_as_one_reject(tmp_path: Path):
    import os

    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_bytes(jsonl_line("a"))
    with open(os.fsencode(data) + b"/b-\xff\xfe.jsonl", "wb") as f:
        f.write(jsonl_line("b"))
    source = Source.model_validate({"name": "src", "format": "jsonl", "paths": [str(data)]})
    shards = list_shards(SimpleNamespace(sources=[source]))
    assert [s.uri for s in shards] == [f"{data}/a.jsonl", f"{data}/b-\udcff\udcfe.jsonl"]
    assert [s.name.rsplit("-", 1)[0] for s in shards] == ["src-a.jsonl", "src-b-_.jsonl"]
    assert shards[1].key == "b-\udcff\udcfe.jsonl"
    assert shard_name("src", shards[1].key) == shards[1].name  # stable: the name's bytes on disk, hashed
    tables = [read(JsonlReader(), s.uri) for s in shards]
    assert [outcome(t) for t in tables] == [{"doc": 1}, {"unreadable_input": 1}]  # pyarrow cannot open such a name


class LicenceFaults(FlakyFileSystem):
    """The local filesystem, but opening a licence file fails as FlakyFileSystem's opens do."""

    def open_input_file(self, path: str) -> Any:
        if path.endswith("/LICENSE"):
            return super().open_input_file(path)
        return self.local.open_input_file(path)


def test_a_licence_file_that_cannot_be_read_is_read_again_not_taken_as_absent(tmp_path: Path, flaky):
    from curation.code import repository
    from tests.test_links import MIT

    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo" / "LICENSE").write_text(MIT)
    app = tmp_path / "repo" / "src" / "app.py"
    app.write_text("def main() -> None:\n    print('hello')\n")

    def licences() -> list[str | None]:
        for cached in (repository.folder_licenses, repository.folder_root, repository._listing):
            cached.cache_clear()
        table = read(CodeReader(**FAST), app)
        rows = zip(table.column("meta").to_pylist(), table.column(schema.REASON).to_pylist(), strict=True)
        return [json.loads(meta)["license"] for meta, reason in rows if not reason]

    assert licences() == ["MIT"]
    fs = flaky(LicenceFaults(EIO, fail_opens=1))
    assert licences() == ["MIT"] and fs.opens == 2  # failed once, then read
    flaky(LicenceFaults(EIO, fail_opens=10))
    with pytest.raises(InputReadError, match="could not be read in 3 attempts"):
        licences()


def test_http_codings_as_home_made_crawlers_store_them(tmp_path: Path):
    """A body stored de-chunked under `Transfer-Encoding: chunked` (a requests-based crawler writes what it received),
    chunks with extensions (RFC 9112) and raw deflate without zlib's header (old IIS) were `bad_http` or
    `skipped:binary`: browsers read all three. A content coding that does not decode says so."""
    from tests.test_hostile_inputs import warc_record

    body = page("codings")
    long_body = b"<html><body>" + b"".join(b"<p>Paragraph %d of a long page, cut in transit.</p>" % i
                                           for i in range(400)) + b"</body></html>"
    raw_deflate = zlib.compressobj(wbits=-15)
    chunked = b"".join(f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n" for part in (body[:100], body[100:]))
    records = {
        "dechunked": warc_record("https://x.example/dechunked", body, http_headers="Transfer-Encoding: chunked\r\n"),
        "extensions": warc_record("https://x.example/extensions", chunked + b"0\r\n\r\n",
                                  http_headers="Transfer-Encoding: chunked\r\n"),
        "raw-deflate": warc_record("https://x.example/raw-deflate", raw_deflate.compress(body) + raw_deflate.flush(),
                                   http_headers="Content-Encoding: deflate\r\n"),
        "broken-gzip": warc_record("https://x.example/broken-gzip", b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4,
                                   http_headers="Content-Encoding: gzip\r\n"),
        "cut-brotli": warc_record("https://x.example/cut-brotli", brotli.compress(long_body)[:-40],
                                  http_headers="Content-Encoding: br\r\n"),
        "cut-gzip": warc_record("https://x.example/cut-gzip", gzip.compress(long_body)[:-40],
                                http_headers="Content-Encoding: gzip\r\n"),
    }
    path = tmp_path / "codings.warc.gz"
    path.write_bytes(b"".join(records.values()))
    rows = read(WarcReader(), path).to_pylist()
    assert [r["html"] for r in rows[:3]] == [body] * 3
    assert rows[3][schema.REASON] == "bad_content_encoding" and rows[3][schema.DETAIL].startswith("gzip: ")
    # a payload cut short is read up to the cut, in brotli as in gzip (brotli's was refused whole)
    for cut in rows[4:6]:
        assert cut[schema.REASON] is None and 1000 < len(cut["html"]) < len(long_body)
        assert long_body.startswith(cut["html"])


def test_a_wet_conversion_that_is_not_utf8_is_a_reject_and_a_cut_character_is_left_out(tmp_path: Path):
    """WET is UTF-8 text: GBK bytes in a conversion record became a document of U+FFFD, where JSONL and Parquet reject
    such a record. A character cut by a truncated record's end is left out; the text before it is kept."""
    text = "北京今天天气晴朗，气温回升。"

    def conversion(url: str, block: bytes) -> bytes:
        head = (f"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>"
                f"\r\nWARC-Target-URI: {url}\r\nContent-Type: text/plain\r\nContent-Length: {len(block)}\r\n\r\n")
        return gzip.compress(head.encode() + block + b"\r\n\r\n")

    path = tmp_path / "mixed.warc.wet.gz"
    path.write_bytes(conversion("https://x.example/utf8", text.encode()) + conversion("https://x.example/gbk", (
        text * 3).encode("gbk")) + conversion("https://x.example/cut", text.encode() + "晴".encode()[:2]))
    rows = [r for r in read(WetReader(), path).to_pylist() if r[schema.REASON] != schema.END_OF_SHARD]
    assert [(r["text"], r[schema.REASON]) for r in rows] == [(text, None), (None, "invalid_utf8"), (text, None)]


def test_an_error_of_the_reading_code_fails_the_shard_and_is_no_reject(tmp_path: Path, monkeypatch):
    """A reader's own bug (here an AttributeError) made the whole file one `unreadable_input` reject and its shard
    done: a reader broken mid-edit turned every WARC of a job into a reject, and the job ended `done`."""
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"".join(jsonl_line(f"note-{i}") for i in range(3)))

    def broken(self, uri):
        yield from ()
        raise AttributeError("'NoneType' object has no attribute 'read'")

    monkeypatch.setattr(JsonlReader, "records", broken)
    with pytest.raises(InputReadError, match=r"in 1 attempt: AttributeError: .* \(an error of the reading code"):
        list(read_shard(JsonlReader(**FAST), str(path), source="s", shard="shard-0"))
