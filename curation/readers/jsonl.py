"""JSON Lines, plain or compressed (.gz, .zst, .bz2, .lz4 detected from the file name)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

from curation import io
from curation.readers.base import Reader, Record


class JsonlReader(Reader):
    """One document per line; fields other than `text_field` and `url_field` are kept in `meta`."""

    format: ClassVar[str] = "jsonl"

    def records(self, uri: str) -> Iterator[Record]:
        with io.open_text_stream(uri) as stream:
            # The line being read is kept as pieces, joined once at its end (joining at every read is
            # quadratic: a 200 MB line took hours), and only up to max_record_bytes: past that its bytes
            # are counted, not kept, so a huge line or a gzip bomb without newlines costs no memory.
            pieces: list[bytes] = []
            size = position = 0
            while chunk := stream.read(1 << 14):  # small reads salvage more of a truncated file
                *ends, rest = chunk.split(b"\n")
                for end in ends:
                    if (record := self._line(position, pieces, end, size + len(end))) is not None:
                        yield record
                    position += 1
                    pieces, size = [], 0
                size += len(rest)
                if size <= self.max_record_bytes:
                    pieces.append(rest)
                else:
                    pieces.clear()
            if size and (record := self._line(position, pieces, b"", size)) is not None:
                yield record

    def _line(self, position: int, pieces: list[bytes], end: bytes, size: int) -> Record | None:
        """The record of a complete line (its kept pieces, then `end`, `size` bytes in all); None if blank."""
        if size > self.max_record_bytes:
            return Record(position, reason="too_large", detail=f"{size} bytes", raw_bytes=size)
        line = b"".join([*pieces, end])
        return self.parse(position, line) if line.strip() else None

    def parse(self, position: int, line: bytes) -> Record:
        size = len(line)
        if size > self.max_record_bytes:
            return Record(position, reason="too_large", detail=f"{size} bytes", raw_bytes=size)
        try:
            obj = json.loads(line)
        except UnicodeDecodeError as exc:  # before ValueError, its base: bytes that are not UTF-8
            return Record(position, reason="invalid_utf8", detail=str(exc)[:300], raw_bytes=size)
        except ValueError as exc:  # JSONDecodeError
            return Record(position, reason="bad_json", detail=str(exc)[:300], raw_bytes=size)
        return self.from_mapping(position, obj, size)

    def from_mapping(self, position: int, obj: Any, size: int) -> Record:
        if not isinstance(obj, dict):
            return Record(position, reason="not_an_object", detail=type(obj).__name__, raw_bytes=size)
        text = obj.pop(self.text_field, None)
        if not isinstance(text, str):
            detail = f"field {self.text_field!r} is {'missing' if text is None else type(text).__name__}"
            return Record(position, reason="no_text_field", detail=detail, raw_bytes=size)
        url = obj.pop(self.url_field, None)
        return Record(position, url=None if url is None else str(url), text=text, meta=obj, raw_bytes=size)
