"""Parquet files, read one row group at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from curation import io
from curation.readers.base import Record
from curation.readers.jsonl import JsonlReader


class ParquetReader(JsonlReader):
    """Rows become documents exactly as JSONL objects do: other columns are kept in `meta`.

    A row whose string holds bytes that are not UTF-8 is an `invalid_utf8` reject (the other rows of
    its batch are read as usual); a text over `max_record_bytes` is `too_large`.
    """

    format: ClassVar[str] = "parquet"

    def records(self, uri: str) -> Iterator[Record]:
        fs, path = io.resolve(uri)
        with fs.open_input_file(path) as f:
            for position, (obj, invalid) in enumerate(parquet_rows(f)):
                if obj is None:
                    yield Record(position, reason="invalid_utf8", detail=invalid)
                    continue
                text = obj.get(self.text_field)
                size = len(text) if isinstance(text, str) else 0
                if size > self.max_record_bytes // 4:  # characters: 1 to 4 bytes each; measure only big ones
                    size = len(text.encode("utf-8", "surrogatepass"))
                if size > self.max_record_bytes:
                    yield Record(position, reason="too_large", detail=f"{size} bytes", raw_bytes=size)
                    continue
                yield self.from_mapping(position, obj, size)


def parquet_rows(file: Any, batch_size: int = 1024) -> Iterator[tuple[dict[str, Any] | None, str | None]]:
    """(row, None) per row of a Parquet file, or (None, why) for a row with a string that is not UTF-8.

    Parquet writers do not all validate UTF-8, and one bad value makes a whole batch's `to_pylist`
    raise: then that batch is read again with its string columns as bytes, decoded row by row, so
    only the rows holding bad bytes are lost.
    """
    for batch in pq.ParquetFile(file).iter_batches(batch_size=batch_size):
        try:
            rows = batch.to_pylist()
        except UnicodeDecodeError:
            yield from _salvage(batch)
            continue
        for row in rows:
            yield row, None


def _salvage(batch: pa.RecordBatch) -> Iterator[tuple[dict[str, Any] | None, str | None]]:
    binary = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary()}
    strings = [f.name for f in batch.schema if f.type in binary]
    columns = [c.cast(binary[c.type]) if c.type in binary else c for c in batch.columns]  # no validation
    for row in pa.RecordBatch.from_arrays(columns, names=batch.schema.names).to_pylist():
        try:
            for name in strings:
                if row[name] is not None:
                    row[name] = row[name].decode("utf-8")
        except UnicodeDecodeError as exc:
            yield None, f"column {name!r}: {exc}"[:300]
        else:
            yield row, None
