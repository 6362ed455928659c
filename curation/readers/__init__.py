"""Readers: one input file is one shard; each format turns records into document rows."""

from __future__ import annotations

from curation.readers.base import DecompressionBombError, InputReadError, Reader, Record, is_io_error, read_shard
from curation.readers.code import CodeOptions, CodeReader
from curation.readers.jsonl import JsonlReader
from curation.readers.parquet import ParquetReader
from curation.readers.warc import WarcReader, WetReader

READERS: dict[str, type[Reader]] = {
    r.format: r for r in (WarcReader, WetReader, JsonlReader, ParquetReader, CodeReader)
}

__all__ = [
    "READERS", "CodeOptions", "CodeReader", "DecompressionBombError", "InputReadError", "JsonlReader", "ParquetReader",
    "Reader", "Record", "WarcReader", "WetReader", "is_io_error", "read_shard",
]
