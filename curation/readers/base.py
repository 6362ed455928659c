"""What every reader shares: one input file is one shard, read as a stream of Arrow batches.

A reader yields one `Record` per input record. `read_shard` turns them into batches of the
read schema, makes every fault of the *content* a counted reject instead of an exception, and
ends the shard with a marker row that says how many rows the shard produced, so the writer
knows when a shard is complete. A fault of the *storage* (the file gone, a permission, a network
or NFS error) is no verdict on the content: the file is opened again and read on past the
records already given, and when every attempt failed the shard fails with `InputReadError`,
without its marker, so that it is never recorded as done and a rerun reads it.
"""

from __future__ import annotations

import io
import json
import math
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation import schema, storage
from curation.storage import is_io_error

_FATAL = (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError)
# errors of the reading code itself, not of what it reads: the shard fails (and says why), as a storage fault does;
# as a reject each made a whole file `unreadable_input` and its shard done (a reader broken mid-edit did it to all)
_CODE_ERRORS = (NameError, AttributeError, ImportError, AssertionError, NotImplementedError, SyntaxError)

# Past this many decompressed bytes a file is judged by its ratio too: a file of one 2 GiB record (which
# `max_record_bytes` rejects without holding it) must not lose the records after it by default.
DECOMPRESSION_FLOOR = 4 << 30


class InputReadError(OSError):
    """An input that could not be opened or read to its end for an I/O reason, after every attempt, or that the
    reading code failed on (an `AttributeError`...).

    Not a verdict on its content: the shard fails (it gets no end-of-shard marker, so it is never
    recorded as done) and a rerun reads it again."""

    def __init__(self, uri: str, attempts: int, last_error: str) -> None:
        self.uri, self.attempts, self.last_error = uri, attempts, last_error
        super().__init__(f"{uri}: could not be read in {attempts} attempt{'s' * (attempts != 1)}: {last_error}")

    def __reduce__(self) -> tuple[type[InputReadError], tuple[str, int, str]]:  # pickled across processes (Ray)
        return type(self), (self.uri, self.attempts, self.last_error)


class DecompressionBombError(ValueError):
    """A compressed input inflating past its bound (`max_decompressed_bytes`, `max_decompression_ratio`):
    bad content, one `decompression_bomb` reject; the rest of the file is not read."""


@dataclass
class InflateBudget:
    """The decompressed bytes a compressed file may still give; `spend` raises `DecompressionBombError` past it."""

    limit: int | None  # None: no bound
    compressed: int
    inflated: int = 0

    def spend(self, size: int) -> None:
        self.inflated += size
        if self.limit is not None and self.inflated > self.limit:
            msg = (f"over {self.limit} bytes decompressed from a file of {self.compressed} bytes "
                   "(max_decompressed_bytes, max_decompression_ratio): the rest of the file is not read")
            raise DecompressionBombError(msg)

    def counting(self, stream: Any) -> BudgetedStream:
        """`stream` (decompressed bytes) with every read spent from this budget."""
        return BudgetedStream(stream, self)


class ForwardStream:
    """A stream over `stream` read from start to end through `read` only (what fastwarc and `tarfile` in stream mode
    ask of one): `given` counts what it gave."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.given = stream, 0

    def tell(self) -> int:
        return self.given

    def seek(self, offset: int, whence: int = 0) -> int:
        """Only where it is already (fastwarc asks): the stream is read from start to end."""
        if (offset, whence) not in ((self.given, 0), (0, 1)):
            msg = f"a {type(self).__name__} is read from start to end"
            raise io.UnsupportedOperation(msg)
        return self.given

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> ForwardStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BudgetedStream(ForwardStream):
    """A decompressing stream whose reads are spent from an `InflateBudget` (for a reader that hands the
    stream to a library, e.g. `tarfile` in stream mode, which reads it through `read` only)."""

    def __init__(self, stream: Any, budget: InflateBudget) -> None:
        super().__init__(stream)
        self.budget = budget

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.given += len(data)
        self.budget.spend(len(data))
        return data


@dataclass
class Record:
    """One input record: a document (text or html) or, with `reason`, a skip or a reject."""

    position: int
    url: str | None = None
    text: str | None = None
    html: bytes | None = None
    title: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None  # "skipped:<why>" counts only; anything else is a reject
    detail: str | None = None
    raw_bytes: int = 0


class Reader:
    """Reads one input file; subclasses implement `records`."""

    format: ClassVar[str]
    extensions: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *, text_field: str = "text", url_field: str = "url", max_record_bytes: int = 10 << 20,
                 max_decompressed_bytes: int | None = None, max_decompression_ratio: float | None = 100.0,
                 read_attempts: int = 3, read_backoff_s: float = 0.5, html_field: str | None = None) -> None:
        self.text_field = text_field
        self.url_field = url_field
        self.html_field = html_field  # JSONL and Parquet: a field of raw pages, which `extract` makes text of
        self.max_record_bytes = max_record_bytes
        self.max_decompressed_bytes = max_decompressed_bytes
        self.max_decompression_ratio = max_decompression_ratio
        self.read_attempts = read_attempts
        self.read_backoff_s = read_backoff_s

    def records(self, uri: str) -> Iterator[Record]:
        raise NotImplementedError

    def options(self) -> dict[str, Any]:
        """The keyword arguments this reader was made with (for a reader that delegates to another)."""
        names = ("text_field", "url_field", "max_record_bytes", "max_decompressed_bytes", "max_decompression_ratio",
                 "read_attempts", "read_backoff_s", "html_field")
        return {name: getattr(self, name) for name in names}

    def inflate_budget(self, uri: str, compressed: int | None = None) -> InflateBudget:
        """What the compressed file at `uri` (`compressed` bytes, else its size is looked up) may inflate to:
        `max_decompressed_bytes`, and `max_decompression_ratio` times its size once past `DECOMPRESSION_FLOOR`."""
        if compressed is None:
            fs, path = storage.resolve(uri)
            compressed = fs.get_file_info(path).size or 0
        bounds = [] if self.max_decompressed_bytes is None else [self.max_decompressed_bytes]
        if self.max_decompression_ratio is not None:
            bounds.append(max(DECOMPRESSION_FLOOR, int(self.max_decompression_ratio * compressed)))
        return InflateBudget(min(bounds, default=None), compressed)

    def link(self, path: str) -> Record:
        """The record of a symbolic link met while walking a folder or matching a wildcard: a counted `link`
        skip, the link never opened (what it names may lie anywhere)."""
        return Record(0, reason="skipped:link", detail=f"{path} -> {link_target(path)}"[:500])


def link_target(path: str) -> str:
    """What a symbolic link names, as written in it ("?" where it cannot be read)."""
    try:
        return str(Path(path).readlink())
    except OSError:
        return "?"


def _row(record: Record, source: str, uri: str, shard: str, key: str) -> dict[str, Any]:
    """The row of a record; a document holding a string that cannot be UTF-8 (a lone surrogate, from a JSON
    escape like "\\ud800" or from raw bytes ED A0 80) becomes an `invalid_utf8` reject instead: Arrow
    cannot hold it, and one such record must cost only itself."""
    # where the record was read wins: a field of the input named so keeps its value beside it (`input_position`)
    provenance = {"source_uri": _spelled(uri), "position": record.position}
    meta = {**{f"input_{k}" if k in provenance else k: v for k, v in record.meta.items()}, **provenance}
    row = {
        "id": schema.document_id(f"{source}/{key}", record.position),
        "source": source,
        "url": record.url,
        "title": record.title,
        "text": record.text,
        "html": record.html,
        "meta": _meta_json(meta),
        schema.SHARD: shard,
        schema.STAGE: "read" if record.reason else None,
        schema.REASON: record.reason,
        schema.DETAIL: record.detail,
        schema.SHARD_ROWS: None,
    }
    try:
        sizes = {name: _utf8_size(row[name]) for name in _STRINGS}
    except UnicodeEncodeError:
        if record.reason is None:
            field, exc = _unencodable(record, row)
            detail = f"field '{field}': {exc.reason} at character {exc.start}"
            reject = Record(record.position, url=record.url, reason="invalid_utf8", detail=detail,
                            raw_bytes=record.raw_bytes)
            return _row(reject, source, uri, shard, key)
        for name in _STRINGS:  # a reject's own fields: kept, with their surrogates spelled out
            if isinstance(row[name], str):
                row[name] = row[name].encode("utf-8", "backslashreplace").decode("utf-8")
        sizes = {"text": 0}
    out = len(record.html) if record.html is not None else sizes["text"]
    row[schema.metric_column("bout", "read")] = out if record.reason is None else 0
    return row


_STRINGS = ("text", "url", "title", "meta", schema.DETAIL)


def _meta_json(meta: dict[str, Any]) -> str:
    """`meta` as strict JSON: NaN and the infinities (which Python's json reads from `NaN`, `Infinity` or
    `1e999`, and a Parquet float column holds) become null, as JavaScript's JSON.stringify writes them;
    `json.dumps` would write `NaN`, which strict readers (DuckDB, jq, browsers) refuse."""
    try:
        return json.dumps(meta, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # out of range: only then is every value looked at
        return json.dumps(_finite(meta), ensure_ascii=False, default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _spelled(text: str) -> str:
    """`text`, where it holds lone surrogates (a file name that is not UTF-8) with its bad bytes spelled out."""
    return text if text.isascii() else schema.utf8_or_raw(text).decode("utf-8", "backslashreplace")


def _utf8_size(value: str | None) -> int:
    """Bytes of a string in UTF-8 (raises UnicodeEncodeError on a lone surrogate)."""
    if value is None:
        return 0
    return len(value) if value.isascii() else len(value.encode("utf-8"))  # isascii: a flag, no scan


def _unencodable(record: Record, row: dict[str, Any]) -> tuple[str, UnicodeEncodeError]:
    """The first field of a row that cannot be UTF-8 and why: in `meta`, the input's own key (`meta.<key>`) and
    the character of its value (of the key itself, `meta key <key>`, where the key is the bad string)."""
    for name in _STRINGS:
        try:
            _utf8_size(row[name])
        except UnicodeEncodeError as exc:
            return (_unencodable_meta(record) or (name, exc)) if name == "meta" else (name, exc)
    msg = "every field is UTF-8"
    raise AssertionError(msg)


def _unencodable_meta(record: Record) -> tuple[str, UnicodeEncodeError] | None:
    for key, value in record.meta.items():
        shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
        try:
            _utf8_size(str(key))
        except UnicodeEncodeError as exc:
            return f"meta key {shown}", exc
        try:
            _utf8_size(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
        except UnicodeEncodeError as exc:
            return f"meta.{shown}", exc
    return None


READ_BATCH_SCHEMA = schema.READ_SCHEMA.append(pa.field(schema.metric_column("sec", "read"), pa.float64())).append(
    pa.field(schema.metric_column("bin", "read"), pa.int64())
).append(pa.field(schema.metric_column("bout", "read"), pa.int64()))


_HTML = READ_BATCH_SCHEMA.get_field_index("html")
_BUT_HTML = READ_BATCH_SCHEMA.remove(_HTML)


def binary_column(values: list[bytes | None]) -> pa.Array:
    """`pa.array(values, pa.binary())` from one joined buffer: pyarrow's builder grows its buffer by doubling,
    copying and faulting in a batch of raw pages several times (4.6 ms for 4 MB of pages, 1 ms this way)."""
    lengths = np.fromiter((len(v) if v is not None else 0 for v in values), np.int64, len(values))
    if lengths.sum() >= 1 << 31:  # past binary's 32-bit offsets: let pyarrow say so
        return pa.array(values, pa.binary())
    offsets = np.zeros(len(values) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    nulls = [v is None for v in values]
    validity = pc.invert(pa.array(nulls)).buffers()[1] if any(nulls) else None
    data = pa.py_buffer(b"".join(v for v in values if v is not None))
    return pa.Array.from_buffers(pa.binary(), len(values), [validity, pa.py_buffer(offsets), data],
                                 null_count=sum(nulls))


def _table(rows: list[dict[str, Any]], seconds: float) -> pa.Table:
    share = seconds / max(len(rows), 1)
    for row in rows:
        row[schema.metric_column("sec", "read")] = share
    html = binary_column([row.pop("html") for row in rows])
    return pa.Table.from_pylist(rows, schema=_BUT_HTML).add_column(_HTML, READ_BATCH_SCHEMA.field("html"), html)


def read_shard(
    reader: Reader, uri: str, *, source: str, shard: str, key: str | None = None, batch_rows: int = 64,
    max_batch_bytes: int = 32 << 20, listed: bool = False,
) -> Iterator[pa.Table]:
    """Batches of one input shard, ending with the end-of-shard marker; never raises on bad input.

    Raises `InputReadError` (after the batches read until then, and without the marker) where the input
    could not be read for an I/O reason in `reader.read_attempts` attempts in a row. A symbolic link met in a
    folder (which `curation.shards` spells `file://<link>`: `storage.canonical` keeps it, where it resolves a
    plain path, as a link named in `paths` is) is one `link` skip, never opened. Ids hash the `source` name,
    the file's `key` (`Shard.key`: its path below its source's root; default: its whole path) and each record's
    position. `listed`: `uri` is a file a listing found (`curation.shards`: its real path, no link on it), so a link
    that has appeared anywhere on it since (a file or folder swapped for one while the job ran) is such a skip too."""
    swapped = _link_on(uri) if listed else None
    odd = _not_a_file(uri) if listed and swapped is None else None
    uri = storage.canonical(uri)
    key = uri if key is None else key
    rows: list[dict[str, Any]] = []
    size = 0
    emitted = 0
    started = time.perf_counter()
    if swapped is not None:
        records = iter([Record(0, reason="skipped:link", detail=f"{swapped[0]} -> {swapped[1]}"[:500])])
    elif odd is not None:
        records = iter([Record(0, reason="skipped:not_a_file", detail=odd)])
    else:
        records = iter([reader.link(uri)]) if _is_link(uri) else _attempts(reader, uri)
    position = -1
    while True:
        try:
            record = next(records)
        except StopIteration:
            break
        except (*_FATAL, InputReadError):
            raise
        except _CODE_ERRORS as exc:
            why = f"{type(exc).__name__}: {exc} (an error of the reading code, not of the file: please report it)"
            raise InputReadError(uri, 1, why[:500]) from exc
        except BaseException as exc:  # fastwarc raises Rust panics as BaseException
            rows.append(_row(_failure(position + 1, exc), source, uri, shard, key))
            break
        position = record.position
        row = _row(record, source, uri, shard, key)
        row[schema.metric_column("bin", "read")] = record.raw_bytes
        rows.append(row)
        size += record.raw_bytes
        if len(rows) >= batch_rows or size >= max_batch_bytes:
            emitted += len(rows)
            yield _table(rows, time.perf_counter() - started)
            rows, size, started = [], 0, time.perf_counter()
    if position == -1 and not rows and _empty(uri):  # a zero-byte file (a failed copy?) is a reject, not silence
        empty = Record(0, reason="unreadable_input", detail="empty file (0 bytes)")
        rows.append(_row(empty, source, uri, shard, key))
    marker = {c: None for c in READ_BATCH_SCHEMA.names}
    marker.update(
        {
            "id": f"{shard}/end",
            "source": source,
            schema.SHARD: shard,
            schema.STAGE: "read",
            schema.REASON: schema.END_OF_SHARD,
            schema.SHARD_ROWS: emitted + len(rows) + 1,
            schema.metric_column("bout", "read"): 0,
        }
    )
    rows.append(marker)
    yield _table(rows, time.perf_counter() - started)


def _attempts(reader: Reader, uri: str) -> Iterator[Record]:
    """`reader.records(uri)`, opened again after an I/O failure and read on past the records already given
    (a reader gives the same records in the same order on every read, so none is lost or doubled), waiting
    `read_backoff_s`, then twice that... between attempts; `InputReadError` once `read_attempts` attempts in
    a row failed. Any other exception is the content's: it goes to the caller at once."""
    given = failed = 0
    while True:
        try:
            for seen, record in enumerate(reader.records(uri), 1):
                if seen > given:
                    given, failed = seen, 0
                    yield record
            return
        except _FATAL:
            raise
        except BaseException as exc:
            if not is_io_error(exc):
                raise
            failed += 1
            if failed >= reader.read_attempts:
                raise InputReadError(uri, failed, f"{type(exc).__name__}: {exc}"[:500]) from exc
            time.sleep(reader.read_backoff_s * 2 ** (failed - 1))


def _link_on(path: str) -> tuple[str, str] | None:
    """(the path, where its links lead) where a local path that was listed as a real path now leads elsewhere."""
    if storage.is_remote(path) or path.startswith("file://"):
        return None
    absolute = str(Path(path).absolute())
    real = str(Path(absolute).resolve())
    return (absolute, real) if real != absolute else None


def _not_a_file(path: str) -> str | None:
    """What a local path that was listed as a file is now where it is no regular file: a FIFO (opening it blocks
    until someone writes to it: a worker hung, a one-worker run with it), a socket, a device. None otherwise."""
    if storage.is_remote(path) or path.startswith("file://"):
        return None
    try:
        mode = Path(path).stat().st_mode
    except OSError:  # gone: opening it says so, and is retried
        return None
    if stat.S_ISREG(mode):
        return None
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device" if (
        stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else "a folder" if stat.S_ISDIR(mode) else "no regular file"
    return f"{path} is {kind} now, no file"


def _is_link(uri: str) -> bool:
    """`storage.is_link`, False where the file cannot even be looked at (opening it meets that fault, and retries)."""
    try:
        return storage.is_link(uri)
    except OSError:
        return False


def _empty(uri: str) -> bool:
    """Whether the file has no bytes at all (as the Parquet and archive readers say too)."""
    try:
        fs, path = storage.resolve(uri)
        return fs.get_file_info(path).size == 0
    except OSError:
        return False


def _failure(position: int, exc: BaseException) -> Record:
    """The rest of a file that cannot be read becomes one reject saying why."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, DecompressionBombError):
        reason = "decompression_bomb"
    elif isinstance(exc, EOFError) or "truncat" in message.lower():
        reason = "truncated_input"
    else:
        reason = "unreadable_input"
    return Record(position=position, reason=reason, detail=f"{type(exc).__name__}: {message}"[:500])
