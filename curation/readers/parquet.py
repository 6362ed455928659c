"""Parquet files, read one row group at a time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from curation import storage
from curation.readers.base import InflateBudget, Record, is_io_error
from curation.readers.jsonl import JsonlReader


class ParquetReader(JsonlReader):
    """Rows become documents exactly as JSONL objects do: other columns are kept in `meta`.

    A row whose string holds bytes that are not UTF-8 is an `invalid_utf8` reject (the other rows of
    its batch are read as usual); a text over `max_record_bytes` is `too_large`. Text and URL columns
    of a binary type are decoded row by row, so only a row whose bytes are not UTF-8 is lost. Row
    groups whose uncompressed size passes the file's bound end in one `decompression_bomb` reject. A row
    group that cannot be read (a corrupt page) is one `unreadable_input` reject at its first row; the
    groups after it are read, their rows keeping their positions. NaN and infinite floats are null in `meta`.
    """

    format: ClassVar[str] = "parquet"

    def records(self, uri: str) -> Iterator[Record]:
        fs, path = storage.resolve(uri)
        with fs.open_input_file(path) as f:
            budget = self.inflate_budget(uri, f.size())
            raw = (self.html_field,) if self.html_field else ()  # a page's bytes: its charset is extract's to find
            for position, obj, invalid in parquet_rows(f, budget=budget, raw=raw):
                if obj is None:
                    yield Record(position, reason=invalid.reason, detail=invalid.detail)
                    continue
                content = self.html_field or self.text_field  # a page's raw HTML stays bytes, for `extract`
                size = _size(obj.get(content), self.max_record_bytes)
                if size > self.max_record_bytes:
                    yield Record(position, reason="too_large", detail=f"{size} bytes", raw_bytes=size)
                    continue
                decoded = (self.url_field,) if self.html_field else (self.text_field, self.url_field)
                if (bad := decode_binary(obj, decoded)) is not None:
                    yield Record(position, reason="invalid_utf8", detail=bad, raw_bytes=size)
                    continue
                yield self.from_mapping(position, obj, size)


def _size(text: object, limit: int) -> int:
    """Bytes of a text value (str or binary); a str is measured exactly only when it may pass `limit`."""
    if isinstance(text, bytes):
        return len(text)
    if not isinstance(text, str):
        return 0
    if len(text) > limit // 4:  # characters: 1 to 4 bytes each; measure only big ones
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text)


def decode_binary(row: dict[str, Any], names: tuple[str, ...]) -> str | None:
    """Decodes, in place, the values of `names` that are bytes (a binary column) as UTF-8; why one cannot be."""
    for name in names:
        value = row.get(name)
        if isinstance(value, bytes):
            try:
                row[name] = value.decode("utf-8")
            except UnicodeDecodeError as exc:
                return f"column {name!r}: {exc}"[:300]
    return None


@dataclass(frozen=True)
class Unread:
    """Why a row (`invalid_utf8`) or the rest of a row group (`unreadable_input`) could not be read."""

    reason: str
    detail: str


def parquet_rows(file: Any, batch_size: int = 1024, budget: InflateBudget | None = None, raw: tuple[str, ...] = (),
                 ) -> Iterator[tuple[int, dict[str, Any], None] | tuple[int, None, Unread]]:
    """(position, row, None) per row of a Parquet file (its position: its index in the file), or
    (position, None, why) for a row with a string that is not UTF-8 and for the rows of a row group that
    cannot be read (a corrupt page: one `unreadable_input` at the first of them, the next group read on).

    Parquet writers do not all validate UTF-8, and one bad value makes a whole batch's `to_pylist`
    raise: then that batch is read again with its string columns as bytes, decoded row by row, so
    only the rows holding bad bytes are lost. Each row group's uncompressed size (from the footer) is
    spent from `budget` before the group is read.
    """
    parquet = pq.ParquetFile(file)
    first = 0
    for group in range(parquet.num_row_groups):
        rows_in_group = parquet.metadata.row_group(group).num_rows
        if budget is not None:
            budget.spend(parquet.metadata.row_group(group).total_byte_size)
        position = first
        try:
            for batch in parquet.iter_batches(batch_size=batch_size, row_groups=[group]):
                try:
                    rows = batch.to_pylist()
                except UnicodeDecodeError:
                    for row, invalid in _salvage(batch, raw):
                        yield (position, row, None) if row is not None else (position, None, invalid)
                        position += 1
                    continue
                for row in rows:
                    yield position, row, None
                    position += 1
        except (OSError, ValueError) as exc:  # a corrupt page ("Corrupt snappy compressed data"): this group only
            if is_io_error(exc):
                raise
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            last = first + rows_in_group - 1
            detail = f"row group {group} (rows {position}-{last}) cannot be read: {type(exc).__name__}: {message}"[:500]
            yield position, None, Unread("unreadable_input", detail)
        first += rows_in_group


def _salvage(batch: pa.RecordBatch, raw: tuple[str, ...]) -> Iterator[tuple[dict[str, Any] | None, Unread | None]]:
    """The rows of a batch whose strings did not all decode: each row's decoded, a row with bytes that are not UTF-8
    an `invalid_utf8` reason, but in the `raw` columns, whose bytes are handed on as they are (raw pages, whose
    charset `extract` finds)."""
    binary = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary()}
    strings = [f.name for f in batch.schema if f.type in binary]
    columns = [c.cast(binary[c.type]) if c.type in binary else c for c in batch.columns]  # no validation
    for row in _rows_one_by_one(pa.RecordBatch.from_arrays(columns, names=batch.schema.names)):
        if isinstance(row, str):
            yield None, Unread("invalid_utf8", row)
            continue
        try:
            for name in strings:
                if row[name] is not None:
                    try:
                        row[name] = row[name].decode("utf-8")
                    except UnicodeDecodeError:
                        if name not in raw:  # a page's bytes go on as they are
                            raise
        except UnicodeDecodeError as exc:
            yield None, Unread("invalid_utf8", f"column {name!r}: {exc}"[:300])
        else:
            yield row, None


def _rows_one_by_one(batch: pa.RecordBatch) -> Iterator[dict[str, Any] | str]:
    """The rows of a batch, or for a row with bad bytes in a string inside a list or struct, why."""
    try:
        yield from batch.to_pylist()
    except UnicodeDecodeError:
        for i in range(batch.num_rows):
            row: dict[str, Any] = {}
            try:
                for name, column in zip(batch.schema.names, batch.slice(i, 1).columns, strict=True):
                    (row[name],) = column.to_pylist()
            except UnicodeDecodeError as exc:
                yield f"column {name!r}: {exc}"[:300]
            else:
                yield row
