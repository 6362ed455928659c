"""WARC and WET files through fastwarc (resiliparse): gzip, lz4, zstd or plain, local or remote."""

from __future__ import annotations

import bisect
import contextlib
import functools
import io
import re
import zlib
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import brotli
import pyarrow as pa
from fastwarc.stream_io import BrotliReader, GzipReader, ZstdReader
from fastwarc.warc import ArchiveIterator, WarcRecord, WarcRecordType

from curation import storage
from curation.readers.base import (
    BudgetedStream,
    DecompressionBombError,
    ForwardStream,
    InflateBudget,
    Reader,
    Record,
    is_io_error,
)
from curation.readers.salvage import SalvagingStream
from curation.readers.sniff import binary_body

HTML_TYPES = ("text/html", "application/xhtml+xml")
_SKIPPED = {
    "warcinfo": "skipped:warcinfo",
    "request": "skipped:request",
    "revisit": "skipped:revisit",
    "metadata": "skipped:metadata",
    "continuation": "skipped:continuation",
}


def _open(uri: str, offset: int, budget: InflateBudget | None, codec: str | None, raw: Any = None,
          lf_only: bool = False) -> object:
    """The file from `offset` on (`raw`, where it is open already): a path for a local file read from its
    start, else a seekable file; gzip inflated here (`_Inflating`), so that records' offsets in the file as
    stored and inside their gzip member, which resyncing needs, are known; with a `budget`, lz4 and zstd through a
    stream that counts what they inflate to (by Arrow, read from the start only, as their frames are never resynced
    to), else fastwarc detects and reads them. `lf_only`: the stream with its header lines given CRLFs."""
    if lf_only:
        if codec is not None:  # inflated here: fastwarc reads the CRLFs' stream, not the file
            budget = budget if budget is not None else InflateBudget(None, 0)
        stream = _open(uri, offset, budget, codec, raw) if codec is not None else raw or _open_at(uri, offset)
        return _CrlfHeaders(stream, offset)
    if codec == "gzip":  # inflated here always: a record's offset inside its member is known (resyncing needs it)
        return _Inflating(raw if raw is not None else _open_at(uri, offset), offset, budget or InflateBudget(None, 0))
    if budget is not None and codec is not None:
        raw = raw if raw is not None else _open_at(uri, offset)
        return budget.counting(SalvagingStream(raw, codec))  # from the start: the records before a break kept
    if offset == 0 and not storage.is_remote(uri):
        if raw is not None:
            raw.close()
        return storage.canonical(uri)
    return raw if raw is not None else _open_at(uri, offset)


class _Inflating(BudgetedStream):
    """A gzip WARC inflated here rather than by fastwarc, so that what fastwarc reads is counted as it reads
    it: past the budget, `read` raises `DecompressionBombError`, which fastwarc passes on (fastwarc reads
    64 kB at a time, and inflating a whole member of a bomb in one call would skip nothing). Records'
    offsets, which resyncing needs in the file as stored, come from `stored_offset`: the start of the gzip
    member holding a record (its own member, in a WARC written one member per record)."""

    def __init__(self, raw: Any, start: int, budget: InflateBudget) -> None:
        super().__init__(raw, budget)
        self.stored = start  # offset in the file of the next compressed byte to inflate
        self.members = [(0, start)]  # (inflated offset, stored offset) of each gzip member's start
        self.inflater: Any = zlib.decompressobj(31)
        self.compressed = b""  # read from the file, not inflated yet
        self.inflated = b""  # inflated, not given yet
        self.ended = False
        self.broken: OSError | None = None  # bytes that are not gzip: raised once what came before is read

    def read(self, size: int = -1) -> bytes:
        want = size if size > 0 else 1 << 16
        while len(self.inflated) < want and not self.ended:
            self._inflate()
        data, self.inflated = self.inflated[:want], self.inflated[want:]
        if not data and self.broken is not None:
            raise self.broken
        self.given += len(data)
        self.budget.spend(len(data))
        return data

    def _inflate(self) -> None:
        if not self.compressed:
            self.compressed = self.stream.read(1 << 16)
            if not self.compressed:  # the end (of a member cut short too: fastwarc sees its records end)
                self.inflated += self.inflater.flush()  # what a full output buffer held back
                self.ended = True
                return
        before = self.inflater.copy()
        try:
            out = self.inflater.decompress(self.compressed, _SCAN)
        except zlib.error as exc:  # as fastwarc would: a break to resync from, once what inflates before it is given
            self.inflated += _up_to_break(before, self.compressed)
            self.broken, self.ended = OSError(f"gzip data broken after byte {self.stored}: {exc}"), True
            return
        rest = self.inflater.unused_data if self.inflater.eof else self.inflater.unconsumed_tail
        self.stored += len(self.compressed) - len(rest)
        self.compressed = rest
        self.inflated += out
        if self.inflater.eof:
            self.inflater = zlib.decompressobj(31)
            self.members.append((self.given + len(self.inflated), self.stored))

    def stored_offset(self, offset: int) -> int:
        """The offset in the file of the gzip member holding inflated offset `offset`."""
        return self.position(offset)[0]

    def position(self, offset: int) -> tuple[int, int]:
        """Inflated offset `offset` as (the offset in the file of the gzip member holding it, its offset inside
        that member's inflated bytes)."""
        inflated, stored = self.members[bisect.bisect_right(self.members, (offset, 1 << 62)) - 1]
        return stored, offset - inflated

    def resume_at_record(self, after: int) -> int | None:
        """Read on to the first `WARC/1.` line of this stream's first gzip member starting at or after inflated
        offset `after` in it, and give from there on: offsets then count from that line, which is returned. None
        where the member holds none (or breaks off first): what follows is the next member's to find. The bytes
        before `after` were spent from the budget when first read: inflated again, they are not spent twice."""
        self.budget.inflated -= after
        pending, base = b"", 0  # inflated bytes of the member not searched yet, from offset `base` in it
        while True:
            try:
                chunk = self.read(_SCAN)
            except OSError:  # the member breaks (a `DecompressionBombError` is no OSError: it ends the file)
                return None
            end = self.members[1][0] if len(self.members) > 1 else None  # where the first member ended
            pending += chunk
            at = pending.find(b"\n" + _PLAIN, max(after - 1 - base, 0))
            if at >= 0 and (end is None or base + at + 1 < end):
                line = base + at + 1
                self.inflated = pending[at + 1 :] + self.inflated  # given again, from the line on
                self.given = 0
                self.members = [(inflated - line, stored) for inflated, stored in self.members]
                return line
            if not chunk or (end is not None and base + len(pending) >= end):
                return None
            base, pending = base + len(pending) - len(_PLAIN), pending[-len(_PLAIN) :]


class _CrlfHeaders(ForwardStream):
    """A WARC whose header lines end in LF alone (the standard says CRLF; some writers, and warcio, which
    datatrove reads with, do without), given to fastwarc with CRLFs: fastwarc takes such a file for one
    header that never ends. Blocks pass as stored (Content-Length counts them), and a record's offset in the
    stream below, which resyncing needs, comes from `stored_offset`."""

    def __init__(self, below: Any, start: int) -> None:
        super().__init__(below)
        self.start = start
        self.pending, self.pending_at = b"", 0  # read from below, not given on yet; its offset there
        self.out = b""  # given on, not read yet
        self.block = 0  # bytes of a block still to pass as they are
        self.header: int | None = None  # the Content-Length of the header block being read (-1: none yet)
        self.starts = [(0, 0)]  # (offset given, offset below) of each record's `WARC/` line
        self.ended = False

    def read(self, size: int = -1) -> bytes:
        want = size if size > 0 else 1 << 16
        while len(self.out) < want and (self.pending or not self.ended):
            self._step()
        data, self.out = self.out[:want], self.out[want:]
        self.given += len(data)
        return data

    def _step(self) -> None:
        if self.block and self.pending:
            size = min(self.block, len(self.pending))
            self.block -= size
            self._give(self.pending[:size], size)
            return
        end = -1 if self.block else self.pending.find(b"\n")
        if end < 0:
            if not self.ended and len(self.pending) < _SCAN:
                data = self.stream.read(1 << 16)
                self.ended = not data
                self.pending += data
            else:  # the end, or no line end in a MiB: given as it is (fastwarc says what is wrong with it)
                self._give(self.pending, len(self.pending))
            return
        line, header = self.pending[: end + 1].rstrip(b"\r\n"), self.header
        if header is None and line.startswith(b"WARC/"):
            self.starts.append((self.given + len(self.out), self.pending_at))
            self.header = -1
        elif header is not None and not line:  # the header block's end: its block follows
            self.block, self.header = max(header, 0), None
        elif header is not None and line[:15].lower() == b"content-length:" and line[15:].strip().isdigit():
            self.header = int(line[15:])
        # header lines and blank lines get CRLFs; anything else between records is fastwarc's to report as it is
        self._give(line + b"\r\n" if self.header is not None or header is not None or not line
                   else self.pending[: end + 1], end + 1)

    def _give(self, data: bytes, used: int) -> None:
        self.out += data
        self.pending, self.pending_at = self.pending[used:], self.pending_at + used

    def stored_offset(self, offset: int) -> int:
        """The offset in the file of the record whose `WARC/` line is at `offset` in what was given."""
        below = self.starts[bisect.bisect_right(self.starts, (offset, 1 << 62)) - 1][1]
        return self.stream.stored_offset(below) if hasattr(self.stream, "stored_offset") else self.start + below


def _lf_only(head: bytes, codec: str | None) -> bool:
    """Whether a file starting with `head` (as stored) is a WARC whose first line ends in LF alone."""
    if codec is not None:
        with contextlib.suppress(OSError, pa.ArrowException):  # a head that is no such stream: not one
            head = pa.CompressedInputStream(pa.BufferReader(head), codec).read(64)
    first = head.split(b"\n", 1)[0] if b"\n" in head else b""
    return first.startswith(b"WARC/") and not first.endswith(b"\r")


def _up_to_break(inflater: Any, data: bytes) -> bytes:
    """What `data` inflates to before the byte where it breaks, fed a byte at a time (a read of 64 KiB that
    breaks gives nothing: in a WARC gzipped as one stream, the records in it before the break)."""
    out = []
    with contextlib.suppress(zlib.error):
        for i in range(len(data)):
            out.append(inflater.decompress(data[i : i + 1]))
            if inflater.eof:
                break
    return b"".join(out)


def _target_uri(value: str | None) -> str | None:
    """WARC-Target-URI as a URL: WARC/1.0 writes it in angle brackets (`<https://...>`), WARC/1.1 bare."""
    if value is None:
        return None
    value = value.strip()
    return value[1:-1].strip() if value.startswith("<") and value.endswith(">") else value


def _looks_like_html(body: bytes) -> bool:
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head


class WarcReader(Reader):
    """Responses and resources that hold HTML become documents with their raw bytes for `extract`.

    Requests, revisits, metadata and warcinfo records are skipped and counted; non-HTML payloads,
    clipped records, undecodable transfer encodings and records over `max_record_bytes` are rejects.
    Only a complete 2xx response is a document: 206 (a part) and a status line without a code (`-1`) are
    `skipped:http_status`. A body that is binary by its own bytes whatever its Content-Type says (a PDF, an
    image, random bytes; `curation.readers.sniff`), and a WET conversion of such bytes, is `skipped:binary`.
    A record's `raw_bytes` (the read stage's bytes_in) are the bytes its block really had: a record whose
    Content-Length (10^15) runs past the end is a `truncated_record` of the bytes up to the end of the file,
    and the records it swallowed are read again after it (below).
    """

    format: ClassVar[str] = "warc"

    def records(self, uri: str) -> Iterator[Record]:
        """Records in file order. A break in the stream (a lying Content-Length, a header block over
        fastwarc's 32 KiB, garbage between records) becomes one `unreadable_input` reject, and reading
        resumes at the next record start: the next `WARC/1.` line in what the rest of the record's gzip member
        inflates to (all of a WARC gzipped as one stream: inflated again from that member's start), else in the
        raw file (the next gzip member of a per-record .warc.gz, the next `WARC/1.` line of a plain WARC), so the
        records after it are not lost. A file
        cut short ends with one `truncated_input` (or `truncated_record`) reject, wherever the cut is.

        A compressed file is read through a stream that counts what it inflates to (`_open`): past
        `max_decompressed_bytes`, or `max_decompression_ratio` times its size beyond 4 GiB (the default),
        one `decompression_bomb` reject ends it. fastwarc steps over blank lines between records at only
        ~7 MB/s (1 GB of them from a 1 MB gzip member: 2.5 minutes), so a bomb must be cut off before
        fastwarc reads it. Inflating gzip in Python costs ~1.5x fastwarc's own read (~190 MB/s), well
        under 1% of a run that extracts pages; `max_decompression_ratio: null` leaves lz4 and zstd to fastwarc
        (gzip is inflated here always, unbounded then, for its offsets)."""
        raw, budget, codec, lf_only = self._opened(uri)
        position, start, stream = 0, 0, _open(uri, 0, budget, codec, raw, lf_only)
        resumed = f"byte {start}"  # where the stream begins, in words
        inside: tuple[int, int] | None = (0, 0) if isinstance(stream, _Inflating) else None  # (member, offset in it)
        broken: Record | None = None  # a break, reported when reading resumes after it or the file ends
        while True:
            last, clipped, misframed = None, False, False
            try:
                for rec in ArchiveIterator(stream, parse_http=False):
                    if broken is not None:
                        broken.detail = f"{broken.detail}; reading resumed at {resumed}"[:500]
                        yield broken
                        broken = None
                    # absolute offset (of its gzip member) in the file
                    last = stream.stored_offset(rec.stream_pos) if hasattr(stream, "stored_offset") else rec.stream_pos
                    if isinstance(stream, _Inflating):
                        inside = stream.position(rec.stream_pos)
                    record = self._record(position, rec)
                    clipped = record.reason in ("truncated_record", "truncated_input")
                    yield record
                    position += 1
                    if misframed := record.reason == "bad_warc_header":
                        break  # where fastwarc reads on is no record's start: resync to the next one
            except OSError as exc:  # fastwarc: "Invalid WARC header", "Maximum header length exceeded", ...
                if is_io_error(exc):  # the storage's fault, not the content's: read_shard reads it again
                    raise
                if broken is None:  # else a restart that failed at once: still the same break
                    message = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else ""
                    reason = "truncated_input" if "truncat" in message.lower() else "unreadable_input"  # as read_shard
                    broken = Record(position=position, reason=reason, detail=f"{type(exc).__name__}: {message}")
                    position += 1
            offset = start if last is None else last
            # a clipped record may have swallowed later records with a too long Content-Length: look for them too
            resync = broken is not None or clipped or misframed
            if resync and inside is not None and not lf_only:  # first in the rest of the record's gzip member (a
                member, at = inside  # WARC gzipped as one stream is one member: the raw bytes hold no record start)
                again = _Inflating(_open_at(uri, member), member, budget or InflateBudget(None, 0))
                line = again.resume_at_record(at + 1)
                if line is not None:
                    stream, start, inside = again, member, (member, line)
                    resumed = f"byte {line} of the gzip member at byte {member}"
                    continue
            found = _next_record_start(uri, offset + 1) if resync else None
            if found is not None:
                start, found_codec = found
                if found_codec != codec:  # a gzip member after plain bytes: inflated within the budget as well
                    codec, budget = found_codec, self.inflate_budget(uri) if found_codec else None
                stream = _open(uri, start, budget, codec, lf_only=lf_only)
                resumed = f"byte {start}"
                inside = (start, 0) if isinstance(stream, _Inflating) else None
                continue
            cut = _cut_gzip_member(uri, offset)  # fastwarc ends quietly where a gzip member breaks off early
            if broken is not None:
                broken.reason = "truncated_input" if cut is not None else broken.reason
                ending = "no record start after it" if cut is None else f"gzip member at byte {cut} breaks off"
                broken.detail = f"{broken.detail}; {ending}"[:500]
                yield broken
            elif cut is not None and not clipped:
                detail = f"gzip member at byte {cut} breaks off: the file is cut short"
                yield Record(position=position, reason="truncated_input", detail=detail)
            return

    def _opened(self, uri: str) -> tuple[Any, InflateBudget | None, str | None, bool]:
        """The file, open at its start (opened once: each open may meet a storage fault), what it may inflate
        to (None: no bound, or a plain file), its codec and whether its header lines end in LF alone."""
        raw = _open_at(uri, 0)
        compressed, head = raw.size(), raw.read(_SCAN)
        raw.seek(0)
        codec = next((name for name, magic in _MAGIC.items() if head.startswith(magic)), None)
        budget = self.inflate_budget(uri, compressed) if codec else None
        return raw, (budget if budget is not None and budget.limit is not None else None), codec, _lf_only(head, codec)

    def _record(self, position: int, rec: WarcRecord) -> Record:
        kind = str(rec.record_type)
        url = _target_uri(rec.headers.get("WARC-Target-URI"))
        meta = {"warc_record_id": rec.headers.get("WARC-Record-ID"), "warc_date": rec.headers.get("WARC-Date")}
        base = Record(position=position, url=url, meta=meta)
        # Content-Length is mandatory: without one, fastwarc yielded what it had of a header block cut off by
        # the end of the file (and would report nothing at all)
        declared = (rec.headers.get("Content-Length") or "").strip()
        if not declared:
            base.reason, base.detail = "truncated_input", "header block ends without Content-Length"
            return base
        if not (declared.isascii() and declared.isdigit()) or int(declared) != rec.content_length:
            # there, and no length fastwarc reads (a sign, Arabic-Indic digits, 10^30): a bad header, no cut
            base.reason, base.detail = "bad_warc_header", f"Content-Length {declared[:50]!r} is no length"
            return base
        documents = kind in ("response", "resource", "conversion")
        too_large = documents and rec.content_length > self.max_record_bytes
        if too_large or not documents:
            # read past, not kept, to count what is there: a Content-Length of 10^15 is not 10^15 bytes
            base.raw_bytes, whole = _drain(rec.reader)
            if whole and base.raw_bytes < rec.content_length:
                return _clipped(base, rec.content_length)
        if too_large:
            base.reason, base.detail = "too_large", f"{rec.content_length} bytes > {self.max_record_bytes}"
            return base
        if kind in _SKIPPED:
            base.reason = _SKIPPED[kind]
            return base
        if not documents:
            base.reason, base.detail = "skipped:unknown_record_type", kind
            return base
        block = rec.reader.read()
        base.raw_bytes = len(block)
        if len(block) < rec.content_length:
            return _clipped(base, rec.content_length)
        if (inside := _RECORD_INSIDE.search(block)) is not None:
            # a Content-Length too long: the block holds the next record, which `records` resyncs to (kept, it was
            # read twice: inside this page, then as itself)
            base.reason = "bad_warc_header"
            base.detail = (f"Content-Length {rec.content_length} runs into the next record (a WARC header at byte "
                           f"{inside.start() + inside.group().index(b'WARC/')} of the block)")
            return base
        if kind == "conversion":
            return self._conversion(base, block)
        if kind == "resource" or _bare(rec, block):
            content_type, charset, body, undecoded = rec.headers.get("Content-Type"), None, block, None
        else:
            try:
                status, content_type, charset, body, undecoded = _http_payload(block, self.max_record_bytes)
            except OSError as exc:
                base.reason, base.detail = "bad_http", str(exc)[:300]
                return base
            if status is None and not _http(block):  # a page the record says is an HTTP message, and is not
                base.reason, base.detail = "bad_http", f"no HTTP status line: {_status_line(status, block)}"
                return base
            if not _complete(status):
                base.reason, base.detail = "skipped:http_status", _status_line(status, block)
                return base
            if len(body) > self.max_record_bytes:  # a Content-Encoding bomb: only limit + 1 bytes were inflated
                base.reason, base.detail = "too_large", f"decoded payload over {self.max_record_bytes} bytes"
                return base
        mime = (content_type or "").split(";")[0].strip().lower()
        if mime not in HTML_TYPES and not (not mime and _looks_like_html(body)):
            base.reason, base.detail = "skipped:not_html", mime or "unknown"
            return base
        if charset is None and content_type and "charset=" in content_type.lower():
            charset = content_type.lower().split("charset=")[1].split(";")[0].strip(" \"'")
        if (binary := binary_body(body, charset)) is not None:
            if undecoded:  # a content encoding that did not decode: the page is there, unread
                base.reason, base.detail = "bad_content_encoding", undecoded
            else:
                base.reason, base.detail = "skipped:binary", f"{binary}, labelled {mime or 'unknown'}"
            return base
        base.html = body
        base.meta["http_charset"] = charset
        return base

    def _conversion(self, base: Record, body: bytes) -> Record:
        if (binary := binary_body(body)) is not None:  # WET is UTF-8 text: random bytes are no conversion
            base.reason, base.detail = "skipped:binary", binary
            return base
        try:
            base.text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.reason != "unexpected end of data":  # not a character cut by a truncated record's end: no UTF-8
                base.reason, base.detail = "invalid_utf8", str(exc)[:300]
                return base
            base.text = body[: exc.start].decode("utf-8")
        return base


class WetReader(WarcReader):
    """Common Crawl WET: `conversion` records already hold the extracted text."""

    format: ClassVar[str] = "wet"


def _bare(rec: WarcRecord, block: bytes) -> bool:
    """A response whose block is the payload itself, no HTTP message (its Content-Type not `application/http`, no
    status line): read as a resource is (it was `skipped:http_status`, the page lost)."""
    content_type = (rec.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    return content_type not in ("", "application/http") and not _http(block)


def _http(block: bytes) -> bool:
    return block.lstrip()[:5].upper() == b"HTTP/"


def _complete(status: int | None) -> bool:
    """Whether an HTTP status says the payload is the whole resource: 2xx, but not 206 (a part of it).
    None: a status line fastwarc could not read (`HTTP/1.1 -1`, no code at all)."""
    return status is not None and 200 <= status < 300 and status != 206


def _status_line(status: int | None, block: bytes) -> str:
    if status is not None:
        return str(status)
    line = block[:200].split(b"\n", 1)[0].strip()[:80].decode("utf-8", "backslashreplace")
    return f"no status code in {line!r}"


def _drain(reader: Any) -> tuple[int, bool]:
    """Bytes left in a record's block, read and let go a MiB at a time, and whether it was read to its end:
    not past a decompression bomb, which the next read (fastwarc's, after this record) meets again."""
    size = 0
    try:
        while chunk := reader.read(1 << 20):
            size += len(chunk)
    except DecompressionBombError:
        return size, False
    return size, True


def _clipped(base: Record, claimed: int) -> Record:
    """A record whose block ends before its Content-Length: the stream ended first (a file cut short, or a
    length that lies past the end, swallowing the records after it, which `records` then resyncs to)."""
    base.reason, base.detail = "truncated_record", f"{base.raw_bytes} of {claimed} bytes"
    return base


# Content-Encoding decoders: fastwarc's streaming readers, which inflate only what is read
_DECODERS: dict[str, Callable[[object], object]] = {
    "gzip": GzipReader, "x-gzip": GzipReader, "deflate": functools.partial(GzipReader, zlib=True),
    "br": BrotliReader, "zstd": ZstdReader,
}


def _parsed(block: bytes, decode: str) -> WarcRecord:
    record = WarcRecord()
    record.init_headers(WarcRecordType.response)
    record.set_bytes_content(block)
    record.is_http = True
    record.parse_http(auto_decode=decode, quirks_mode=True)  # quirks: LF-only header lines (ClueWeb)
    return record


def _http_payload(block: bytes, limit: int) -> tuple[int | None, str | None, str | None, bytes, str | None]:
    """Status, content type, charset and payload with transfer and content encodings undone, and why a content
    encoding could not be undone (None: it was, or there was none).

    Some crawls (ClueWeb) store payloads already decompressed but keep `Content-Encoding`, and some crawlers (a
    requests-based one, writing what it received) payloads already de-chunked but keep `Transfer-Encoding: chunked`:
    then the bytes are kept as stored. At most `limit + 1` payload bytes are decoded, so a small gzip that inflates to
    gigabytes (a gzip bomb) costs no more than a record over the limit (fastwarc's `auto_decode="all"` would inflate
    all of it into memory first).
    """
    try:
        record = _parsed(block, "transfer")
        body = record.reader.read()  # no larger than the record's block
    except OSError:  # a chunk header fastwarc does not read: none (stored de-chunked), or with an extension
        record = _parsed(block, "none")
        body = _dechunked(record.reader.read())
    given = record.http_headers.get("Content-Encoding") or ""
    codings = [c.strip().lower() for c in given.split(",") if c.strip().lower() not in ("", "identity")]
    failed = None
    if codings and all(c in _DECODERS for c in codings):
        body, failed = _decoded(body, codings, limit)
    return record.http_headers.status_code, record.http_content_type, record.http_charset, body[: limit + 1], failed


_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}[ \t]*(?:;[^\r\n]*)?\r?\n")


def _dechunked(data: bytes) -> bytes:
    """A chunked body's data (RFC 9112: chunk extensions ignored), or `data` as it is when it holds no chunk."""
    parts, at = [], 0
    while found := _CHUNK_SIZE.match(data, at):
        size = int(found.group().split(b";")[0], 16)
        if size == 0:
            return b"".join(parts)
        parts.append(data[found.end() : found.end() + size])
        at = found.end() + size
        at += 2 if data.startswith(b"\r\n", at) else data.startswith(b"\n", at)
    return b"".join([*parts, data[at:]]) if parts else data


def _decoded(body: bytes, codings: list[str], limit: int) -> tuple[bytes, str | None]:
    """The payload with its content codings undone (at most `limit + 1` bytes), and why they could not be."""
    stream: object = io.BytesIO(body)
    for coding in reversed(codings):  # the last coding applied is undone first
        stream = _DECODERS[coding](stream)
    try:
        # nothing from many bytes: the decoder gave up without a word (fastwarc's brotli on random bytes)
        return stream.read(limit + 1) or (b"" if len(body) <= _EMPTY_ENCODED else body), None  # type: ignore[attr-defined]
    except OSError as exc:
        if codings == ["deflate"]:  # raw deflate, without zlib's header: what old IIS sent, and browsers read
            with contextlib.suppress(zlib.error):
                return zlib.decompressobj(-15).decompress(body, limit + 1), None
        if codings == ["br"]:  # cut short: the page up to the cut, as a browser shows it and a cut gzip reads
            with contextlib.suppress(brotli.error):
                if partial := brotli.Decompressor().process(body, output_buffer_limit=limit + 1):
                    return partial[: limit + 1], None
        return body, f"{', '.join(codings)}: {exc}"[:300]  # not encoded after all (stored decoded), or broken


# a record's end, then a WARC header line and a field: inside a block, a Content-Length that ran past the record
_RECORD_INSIDE = re.compile(rb"\r?\n\r?\nWARC/1\.[01]\r?\n[A-Za-z-]+: ")
_EMPTY_ENCODED = 32  # bytes an encoded empty payload takes at most (gzip: 20, brotli: 1)
_GZIP, _PLAIN = b"\x1f\x8b\x08", b"WARC/1."
_MAGIC = {"gzip": _GZIP, "zstd": b"\x28\xb5\x2f\xfd", "lz4": b"\x04\x22\x4d\x18"}  # as Arrow names the codecs
_SCAN = 1 << 20


def _open_at(uri: str, offset: int) -> object:
    """The raw file positioned at `offset`; fastwarc detects the codec there and reports absolute offsets."""
    fs, path = storage.resolve(uri)
    file = fs.open_input_file(path)
    file.seek(offset)
    return file


def _cut_gzip_member(uri: str, offset: int, max_inflate: int = 64 << 20) -> int | None:
    """The offset of a gzip member at or after `offset` (the last record's) that breaks off unfinished;
    None when every member ends (or the file is not gzip, or checking would inflate over `max_inflate`)."""
    fs, path = storage.resolve(uri)
    with fs.open_input_file(path) as f:
        if not f.read(len(_GZIP)).startswith(_GZIP):
            return None
        f.seek(offset)
        at, member, inflater, fed, inflated, data = offset, offset, zlib.decompressobj(31), False, 0, b""
        while data or (data := f.read(_SCAN)):
            try:
                inflated += len(inflater.decompress(data, _SCAN))
            except zlib.error:
                return None  # not gzip: garbage after the records is fastwarc's to report
            if inflated > max_inflate:
                return None
            fed = True
            rest = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
            at += len(data) - len(rest)
            data = rest
            if inflater.eof:  # the next member starts here
                member, inflater, fed = at, zlib.decompressobj(31), False
        return member if fed else None


def _next_record_start(uri: str, offset: int) -> tuple[int, str | None] | None:
    """The first offset >= `offset` where a record starts, and its codec: a gzip member that inflates to `WARC/`
    (one member per record, as crawlers write them), or a `WARC/1.` line not in gzip, whatever the file's first bytes
    (a first record whose start is damaged, or bytes before it, hid all the records after it); None when there is
    none or the file is lz4 or zstd (their frames are not searched)."""
    fs, path = storage.resolve(uri)
    with fs.open_input_file(path) as f:
        if f.read(4).startswith((_MAGIC["zstd"], _MAGIC["lz4"])):
            return None
        size, first = f.size(), offset
        offset = max(offset - 1, 0)  # the newline before a `WARC/1.` line
        while offset < size:
            f.seek(offset)
            window = f.read(_SCAN + 4096)  # overlapping windows: a marker and its first bytes are never split
            for at in sorted(_starts(window, offset == 0)):
                if at >= _SCAN:
                    break
                if offset + at < first:
                    continue
                if window.startswith(_PLAIN, at):
                    return offset + at, None
                try:
                    if zlib.decompressobj(31).decompress(window[at : at + 4096], 8).startswith(b"WARC/"):
                        return offset + at, "gzip"
                except zlib.error:
                    pass
            offset += _SCAN
    return None


def _starts(window: bytes, at_file_start: bool) -> list[int]:
    """Where a gzip member, or a `WARC/1.` line after a newline (or after a byte order mark at the file's start),
    may start in `window`."""
    found = [m.start() for m in re.finditer(re.escape(_GZIP), window)]
    found += [m.start() + 1 for m in re.finditer(b"\n" + re.escape(_PLAIN), window)]
    return found + ([3] if at_file_start and window.startswith(b"\xef\xbb\xbf" + _PLAIN) else [])
