"""WARC and WET files through fastwarc (resiliparse): gzip, lz4, zstd or plain, local or remote."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from fastwarc.stream_io import GzipReader, Lz4Reader, ZstdReader
from fastwarc.warc import ArchiveIterator, WarcRecord, WarcRecordType

from curation import io
from curation.readers.base import Reader, Record

HTML_TYPES = ("text/html", "application/xhtml+xml")
_SKIPPED = {
    "warcinfo": "skipped:warcinfo",
    "request": "skipped:request",
    "revisit": "skipped:revisit",
    "metadata": "skipped:metadata",
    "continuation": "skipped:continuation",
}


_CODECS = {".gz": GzipReader, ".lz4": Lz4Reader, ".zst": ZstdReader, ".zstd": ZstdReader}


def _open(uri: str) -> object:
    """A path for local files (fastwarc detects the codec); a decoding reader over a remote file."""
    if not io.is_remote(uri):
        return io.canonical(uri)
    fs, path = io.resolve(uri)
    file = fs.open_input_file(path)  # fastwarc needs a seekable file
    codec = next((c for ext, c in _CODECS.items() if path.endswith(ext)), None)
    return codec(file) if codec else file


def _looks_like_html(body: bytes) -> bool:
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head


class WarcReader(Reader):
    """Responses and resources that hold HTML become documents with their raw bytes for `extract`.

    Requests, revisits, metadata and warcinfo records are skipped and counted; non-HTML payloads,
    clipped records, undecodable transfer encodings and records over `max_record_bytes` are rejects.
    """

    format: ClassVar[str] = "warc"

    def records(self, uri: str) -> Iterator[Record]:
        stream = _open(uri)
        for position, rec in enumerate(ArchiveIterator(stream, parse_http=False)):
            yield self._record(position, rec)

    def _record(self, position: int, rec: WarcRecord) -> Record:
        kind = str(rec.record_type)
        url = rec.headers.get("WARC-Target-URI")
        meta = {"warc_record_id": rec.headers.get("WARC-Record-ID"), "warc_date": rec.headers.get("WARC-Date")}
        base = Record(position=position, url=url, meta=meta, raw_bytes=rec.content_length)
        if kind in _SKIPPED:
            base.reason = _SKIPPED[kind]
            return base
        if kind == "conversion":
            return self._conversion(base, rec)
        if kind not in ("response", "resource"):
            base.reason, base.detail = "skipped:unknown_record_type", kind
            return base
        if rec.content_length > self.max_record_bytes:
            base.reason, base.detail = "too_large", f"{rec.content_length} bytes > {self.max_record_bytes}"
            return base
        block = rec.reader.read()
        if len(block) < rec.content_length:
            base.reason, base.detail = "truncated_record", f"{len(block)} of {rec.content_length} bytes"
            return base
        if kind == "resource":
            content_type, charset, body = rec.headers.get("Content-Type"), None, block
        else:
            try:
                status, content_type, charset, body = _http_payload(block)
            except OSError as exc:
                base.reason, base.detail = "bad_http", str(exc)[:300]
                return base
            if status is not None and not 200 <= status < 300:
                base.reason, base.detail = "skipped:http_status", str(status)
                return base
        mime = (content_type or "").split(";")[0].strip().lower()
        if mime not in HTML_TYPES and not (not mime and _looks_like_html(body)):
            base.reason, base.detail = "skipped:not_html", mime or "unknown"
            return base
        if charset is None and content_type and "charset=" in content_type.lower():
            charset = content_type.lower().split("charset=")[1].split(";")[0].strip(" \"'")
        base.html = body
        base.meta["http_charset"] = charset
        return base

    def _conversion(self, base: Record, rec: WarcRecord) -> Record:
        body = rec.reader.read()
        base.text = body.decode("utf-8", errors="replace")
        return base


class WetReader(WarcReader):
    """Common Crawl WET: `conversion` records already hold the extracted text."""

    format: ClassVar[str] = "wet"


def _http_payload(block: bytes) -> tuple[int | None, str | None, str | None, bytes]:
    """Status, content type, charset and payload with transfer and content encodings undone.

    Some crawls (ClueWeb) store payloads already decompressed but keep `Content-Encoding`:
    then only the transfer encoding is undone.
    """
    try:
        return _parse_http(block, "all")
    except OSError:
        return _parse_http(block, "transfer")


def _parse_http(block: bytes, decode: str) -> tuple[int | None, str | None, str | None, bytes]:
    record = WarcRecord()
    record.init_headers(WarcRecordType.response)
    record.set_bytes_content(block)
    record.is_http = True
    record.parse_http(auto_decode=decode, quirks_mode=True)  # quirks: LF-only header lines (ClueWeb)
    body = record.reader.read()
    return record.http_headers.status_code, record.http_content_type, record.http_charset, body
