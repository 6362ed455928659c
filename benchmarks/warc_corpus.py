"""A WARC corpus of real web pages for the benchmarks.

Every real HTML page of the test data (trafilatura's cache and eval pages, mozilla/readability's
source pages: about 1,160) is wrapped as a WARC/1.1 `response` record holding an HTTP/1.1 200
response with `Content-Type: text/html` and no charset, so the pipeline's charset detection runs
as it does on a real crawl. Each record is its own gzip member (the standard for .warc.gz).
The page bytes are the original ones, in the page's own encoding.

    python benchmarks/warc_corpus.py OUT [--copies K] [--files N] [--pages P]

Import it from another benchmark with `from warc_corpus import build_warc_corpus` (the script's folder
is on sys.path when a benchmark runs as `python benchmarks/<name>.py`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from fastwarc.stream_io import GzipWriter
from fastwarc.warc import WarcRecord, WarcRecordType

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _data import data_root
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._data import data_root

WARC_DATE = "2024-01-01T00:00:00Z"  # fixed, so that the same corpus is byte-identical at every build


class DataMissing(RuntimeError):
    """The real test data is not on this machine."""


@dataclass(frozen=True)
class Page:
    path: Path  # a gzip-compressed HTML file
    url: str  # the page's real URL where the test data records it, else a stable made-up one

    def html(self) -> bytes:
        with gzip.open(self.path, "rb") as f:
            return f.read()


def html_root() -> Path:
    """The data root (`_data.data_root`); DataMissing if it has no HTML pages."""
    root = data_root()
    if not (root / "html").is_dir():
        raise DataMissing(f"no real test data under {root}/html (set CURATION_TESTDATA to its folder)")
    return root


def real_pages(root: Path | None = None, limit: int | None = None) -> list[Page]:
    """Every real page, in a stable order; `limit` takes an evenly spread subset of that many."""
    root = root or html_root()
    html = root / "html"
    known: dict[str, str] = {}
    evaldata = html / "trafilatura" / "evaldata.json"
    if evaldata.is_file():
        for url, entry in json.loads(evaldata.read_text(encoding="utf-8")).items():
            known[f"{entry['file']}.gz"] = clean_url(url)
    pages: list[Page] = []
    for folder in ("cache", "eval"):
        for path in sorted((html / "trafilatura" / folder).glob("*.html.gz")):
            url = known.get(path.name, f"https://trafilatura-{folder}.pages.example/{path.name[:-8]}")
            pages.append(Page(path, url))
    for path in sorted((html / "readability" / "pages").glob("*/source.html.gz")):
        pages.append(Page(path, f"https://readability.pages.example/{path.parent.name}/"))
    if not pages:
        raise DataMissing(f"no *.html.gz pages under {html}")
    if limit is not None and limit < len(pages):
        step = len(pages) / limit
        pages = [pages[int(i * step)] for i in range(limit)]
    return pages


def clean_url(url: str) -> str:
    """A URL as a WARC header can hold it: trimmed, spaces and non-ASCII characters percent-encoded."""
    return quote(url.strip(), safe=":/?#[]@!$&'()*+,;=%~")


def copy_url(url: str, copy: int) -> str:
    """The URL of copy `copy` of a page: the page's own for copy 0, then `?copy=k` (or `&copy=k`)."""
    if copy == 0:
        return url
    return f"{url}{'&' if '?' in url else '?'}copy={copy}"


def http_response(body: bytes) -> bytes:
    """An HTTP/1.1 200 response block around an HTML body, with no charset in its Content-Type."""
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode("ascii") + body


def warc_record(url: str, body: bytes) -> WarcRecord:
    """A WARC/1.1 response record for `url` whose block is the HTTP response around `body`."""
    record = WarcRecord()
    record.init_headers(WarcRecordType.response, f"uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}".encode())
    record.headers["WARC-Date"] = WARC_DATE
    record.headers["WARC-Target-URI"] = url
    record.headers["Content-Type"] = "application/http; msgtype=response"
    record.set_bytes_content(http_response(body))
    return record


def _records(pages: list[Page], copies: int) -> Iterator[tuple[str, bytes]]:
    for page in pages:
        body = page.html()
        for copy in range(copies):
            yield copy_url(page.url, copy), body


def build_warc_corpus(
    out_dir: str | Path, copies: int = 1, files: int = 8, *, pages: int | None = None, verify: bool = True
) -> list[Path]:
    """Write the real pages (`pages` of them, default all) `copies` times over `files` .warc.gz files.

    Records go to the files round-robin, so every file holds a similar mix of pages; a page's
    copies have distinct URLs. With `verify`, every file is read back with the pipeline's own
    WarcReader and each record must come back as one HTML document with the URL it was given.
    """
    if copies < 1 or files < 1:
        raise ValueError("copies and files must be at least 1")
    chosen = real_pages(limit=pages)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"pages-{i:05d}.warc.gz" for i in range(min(files, len(chosen) * copies))]
    writers = [GzipWriter(str(p), compression_level=6) for p in paths]
    expected: list[dict[str, int]] = [{} for _ in paths]
    try:
        for n, (url, body) in enumerate(_records(chosen, copies)):
            i = n % len(paths)
            warc_record(url, body).write(writers[i], checksum_data=True)
            writers[i].finish()  # end the gzip member: one member per record
            expected[i][url] = len(body)
    finally:
        for w in writers:
            w.close()
    if verify:
        verify_corpus(paths, expected)
    return paths


def verify_corpus(paths: list[Path], expected: list[dict[str, int]]) -> None:
    """Every written record reads back through WarcReader as an HTML document of the same size."""
    from curation.readers import WarcReader

    reader = WarcReader()
    for path, want in zip(paths, expected, strict=True):
        got: dict[str, int] = {}
        for record in reader.records(str(path)):
            if record.html is None:
                why = f"{record.reason}: {record.detail}"
                raise AssertionError(f"{path}: record {record.position} came back without html ({why})")
            got[str(record.url)] = len(record.html)
        if got != want:
            missing = sorted(set(want) ^ set(got))[:3]
            msg = f"{path}: {len(got)} HTML records read back, {len(want)} written; differing e.g. {missing}"
            raise AssertionError(msg)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="folder for the .warc.gz files")
    p.add_argument("--copies", type=int, default=1, help="each page this many times, with distinct URLs")
    p.add_argument("--files", type=int, default=8, help="number of .warc.gz files")
    p.add_argument("--pages", type=int, default=None, help="an evenly spread subset of this many pages")
    p.add_argument("--no-verify", action="store_true", help="skip reading the files back")
    args = p.parse_args(argv)
    try:
        verify = not args.no_verify
        paths = build_warc_corpus(args.out, args.copies, args.files, pages=args.pages, verify=verify)
    except DataMissing as exc:
        print(f"corpus: {exc}; nothing built")
        return 0
    size = sum(p.stat().st_size for p in paths)
    n = len(real_pages(limit=args.pages)) * args.copies
    check = "" if args.no_verify else ", all read back as HTML documents"
    print(f"{n} records in {len(paths)} files under {args.out} ({size / 1e6:.1f} MB gzip){check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
