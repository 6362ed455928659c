"""JSON Lines, plain or compressed (.gz, .zst, .bz2, .lz4 detected from the file name)."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any, ClassVar

from curation import storage
from curation.readers.base import DecompressionBombError, Reader, Record
from curation.readers.salvage import open_salvaging
from curation.readers.sniff import SNIFF_BYTES, byte_order_mark, utf16_unmarked


class JsonlReader(Reader):
    """One document per line; fields other than `text_field` and `url_field` are kept in `meta`.

    `NaN`, `Infinity`, `-Infinity` (which Python's json accepts, and strict JSON readers refuse) and numbers
    past a float's range (`1e999`) are kept in `meta` as null: the record is read, `meta` stays strict JSON.
    As the text they are no string: a `no_text_field` reject. A compressed file that breaks off or holds
    garbage keeps every line decoded before the break (`SalvagingStream`), then the rest is one
    `unreadable_input` (or `truncated_input`) reject. A file in UTF-16 or UTF-32 (by its byte-order mark, or
    UTF-16 by its NULs), as Windows tools write text, is read as such (`_Utf8`)."""

    format: ClassVar[str] = "jsonl"

    def records(self, uri: str) -> Iterator[Record]:
        """One record per line that is not blank. A compressed file that inflates past its bound ends in
        `DecompressionBombError` (one `decompression_bomb` reject); blank lines cost next to nothing."""
        with open_salvaging(uri) as raw:
            stream = _Utf8(self.inflate_budget(uri).counting(raw) if storage.codec(uri) else raw)
            # The line being read is kept as pieces, joined once at its end (joining at every read is
            # quadratic: a 200 MB line took hours), and only up to max_record_bytes: past that its bytes
            # are counted, not kept, so a huge line or a gzip bomb without newlines costs no memory.
            pieces: list[bytes] = []
            size = position = 0
            broken: BaseException | None = None

            def read() -> bytes:
                """The next bytes; b"" at the end, or where the content breaks off (the break kept in `broken`)."""
                nonlocal broken
                try:
                    return stream.read(len(_NEWLINES))  # small reads salvage more of a truncated file
                except (OSError, ValueError, EOFError) as exc:
                    if storage.is_io_error(exc) or isinstance(exc, DecompressionBombError):
                        raise
                    broken = exc
                    return b""

            while chunk := read():
                first = chunk.find(b"\n")
                if first >= 0:
                    if (record := self._line(position, pieces, chunk[:first], size + first)) is not None:
                        yield record
                    last = chunk.rfind(b"\n")
                    newlines_only = _NEWLINES.startswith(chunk)  # a bomb of blank lines: no scan per byte
                    if not newlines_only and not chunk.isspace():  # else blank lines only: none to read
                        for index, line in _filled_lines(chunk, first + 1, last):
                            yield self.parse(position + 1 + index, line)
                    inner = last - first - 1 if newlines_only else chunk.count(b"\n", first + 1, last)
                    position += 1 + (inner + 1 if last > first else 0)  # the line ended at `first`, then the others
                    pieces, size, chunk = [], 0, chunk[last + 1 :]
                size += len(chunk)
                if size <= self.max_record_bytes:
                    pieces.append(chunk)
                else:
                    pieces.clear()
            # the last line, without its newline: at a break, a whole record (it parses) that the garbage followed
            last = self._line(position, pieces, b"", size) if size else None
            if last is not None and (broken is None or last.reason is None):
                yield last
            if broken is not None:
                raise broken

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
        except RecursionError as exc:  # nested deeper than the parser recurses ([[[[...): this line only
            return Record(position, reason="bad_json", detail=f"nested too deep: {exc}"[:300], raw_bytes=size)
        return self.from_mapping(position, obj, size)

    def from_mapping(self, position: int, obj: Any, size: int) -> Record:
        if not isinstance(obj, dict):
            return Record(position, reason="not_an_object", detail=type(obj).__name__, raw_bytes=size)
        if self.html_field is not None:  # a page: its raw HTML, for `extract`, as a WARC record's
            html = obj.pop(self.html_field, _MISSING)
            if not isinstance(html, str | bytes):
                detail = f"field {self.html_field!r} is {_kind(html)}"
                return Record(position, reason="no_html_field", detail=detail, raw_bytes=size)
            url = obj.pop(self.url_field, None)
            # a JSON string is text already: UTF-8 whatever its page's <meta> says, a lone surrogate (a cut emoji) a
            # U+FFFD (with its bytes kept as they were, the page was no UTF-8 and its legacy meta charset made mojibake)
            body = _LONE_SURROGATE.sub("\ufffd", html).encode() if isinstance(html, str) else html
            return Record(position, url=None if url is None else str(url), html=body, meta=obj, raw_bytes=size)
        text = obj.pop(self.text_field, _MISSING)
        if not isinstance(text, str):
            detail = f"field {self.text_field!r} is {_kind(text)}"
            return Record(position, reason="no_text_field", detail=detail, raw_bytes=size)
        url = obj.pop(self.url_field, None)
        return Record(position, url=None if url is None else str(url), text=text, meta=obj, raw_bytes=size)


_MISSING = object()


class _Utf8:
    """A stream of UTF-16 or UTF-32 text read as UTF-8 bytes, for the line splitter and `json.loads` (which read
    a UTF-16 file as one UTF-8 line of NULs). Half a surrogate pair becomes bytes no UTF-8 decoder takes: its
    line alone is an `invalid_utf8` reject, and so is a last odd byte. The first read sniffs the encoding (in
    `read`, whose caller keeps what a damaged compressed file gave before its break)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.decoder: codecs.IncrementalDecoder | None = None
        self.sniffed = False

    def read(self, size: int) -> bytes:
        data = self.stream.read(max(size, SNIFF_BYTES) if not self.sniffed else size)
        if not self.sniffed:
            self.sniffed = True
            bom, codec = byte_order_mark(data) or (b"", utf16_unmarked(data))
            if codec is not None and codec != "utf-8":  # json.loads reads UTF-8's mark itself
                data = data[len(bom):]
                self.decoder = codecs.getincrementaldecoder(codec)("surrogatepass")
        if self.decoder is None:
            return data
        while True:
            try:
                text = self.decoder.decode(data, final=not data)
            except UnicodeDecodeError:  # the file ends inside a character: its last line is no text
                self.decoder.reset()
                return b"\xff"
            if text or not data:
                return text.encode("utf-8", "surrogatepass")
            data = self.stream.read(size)



def _kind(value: object) -> str:
    """What a field that holds no text holds: `missing`, `null`, or its type."""
    return "missing" if value is _MISSING else "null" if value is None else type(value).__name__


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_BLANKS = re.compile(rb"\s*")  # the bytes `bytes.strip` removes: a line of only these is blank
_NEWLINES = b"\n" * (1 << 14)


def _filled_lines(buffer: bytes, start: int, stop: int) -> Iterator[tuple[int, bytes]]:
    """(index, line) of each line of `buffer[start:stop]` (split at newlines) holding more than whitespace.

    Runs of blank lines are stepped over by one regex match, in C: 1 GB of blank lines split into
    lines one by one in Python took minutes."""
    index = 0
    while start < stop:
        filled = _BLANKS.match(buffer, start, stop).end()  # type: ignore[union-attr]  # `\s*` always matches
        if filled == stop:
            return
        line_start = buffer.rfind(b"\n", start, filled) + 1 or start
        index += buffer.count(b"\n", start, line_start)
        line_end = buffer.find(b"\n", filled, stop)
        line_end = stop if line_end < 0 else line_end
        yield index, buffer[line_start:line_end]
        index += 1
        start = line_end + 1
