"""Parquet files, read one row group at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pyarrow.parquet as pq

from curation import io
from curation.readers.base import Record
from curation.readers.jsonl import JsonlReader


class ParquetReader(JsonlReader):
    """Rows become documents exactly as JSONL objects do: other columns are kept in `meta`."""

    format: ClassVar[str] = "parquet"

    def records(self, uri: str) -> Iterator[Record]:
        fs, path = io.resolve(uri)
        with fs.open_input_file(path) as f:
            position = 0
            for batch in pq.ParquetFile(f).iter_batches(batch_size=1024):
                for obj in batch.to_pylist():
                    size = len(obj.get(self.text_field) or "") if isinstance(obj.get(self.text_field), str) else 0
                    yield self.from_mapping(position, obj, size)
                    position += 1
