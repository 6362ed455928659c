"""What a body holds by its own bytes, whatever its headers say: a binary format, or not text at all.

A crawl labels PDFs, images and arbitrary bytes `text/html` often enough (a misconfigured server, a
content-encoding it did not apply); decoded as a page or as WET text they become documents of garbage
(154k characters of it from one 150 kB random body). A body is binary when it starts with the magic
bytes of a binary format, or when more than `MAX_CONTROL_SHARE` of its first `SNIFF_BYTES` bytes are
control characters, which no text in any 8-bit or multi-byte encoding holds (random bytes: 11%; text:
none but tab, newlines, form feed and the escape of ISO-2022). UTF-16 and UTF-32 (by their byte-order
mark or a declared charset), where every other byte of ASCII is NUL, are text, and so is UTF-16 without
either that decodes strictly into text.
"""

from __future__ import annotations

import codecs

SNIFF_BYTES = 4096
UTF16_NULS_MIN = 8  # NUL bytes of a sample that may be UTF-16 without its mark, and 1% of it at least
MAX_CONTROL_SHARE = 0.05

# (offset, magic, format): formats a server may serve as text/html; short magics that prose may start
# with ("MZ", "BZh") are left out
_MAGIC = (
    (0, b"%PDF-", "PDF"), (0, b"\x89PNG\r\n\x1a\n", "PNG"), (0, b"GIF87a", "GIF"), (0, b"GIF89a", "GIF"),
    (0, b"\xff\xd8\xff", "JPEG"), (0, b"PK\x03\x04", "ZIP"), (0, b"\x1f\x8b\x08", "gzip"),
    (0, b"\x28\xb5\x2f\xfd", "zstd"), (0, b"7z\xbc\xaf\x27\x1c", "7z"), (0, b"Rar!\x1a\x07", "RAR"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "OLE (doc, xls)"), (0, b"\x7fELF", "ELF"), (0, b"wOFF", "WOFF"),
    (0, b"wOF2", "WOFF2"), (0, b"OggS", "Ogg"), (0, b"ID3", "MP3"), (0, b"\x1a\x45\xdf\xa3", "WebM"),
    (0, b"%!PS", "PostScript"), (0, b"II*\x00", "TIFF"), (0, b"MM\x00*", "TIFF"), (0, b"\x00\x00\x01\x00", "ICO"),
    (8, b"WEBP", "WebP"), (8, b"WAVE", "WAV"), (8, b"AVI ", "AVI"), (4, b"ftyp", "MP4"),
)
# Byte-order marks and the codec of the text after them (UTF-32's little-endian mark starts as UTF-16's: it comes first)
BYTE_ORDER_MARKS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
                    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_WIDE_BOMS = tuple(bom for bom, codec in BYTE_ORDER_MARKS if codec != "utf-8")
_WIDE = ("utf-16", "utf16", "utf-32", "utf32", "ucs-2", "ucs2", "ucs-4")
_CONTROL = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_CONTROL_CHARS = dict.fromkeys(_CONTROL)  # str.translate's table: delete them


def binary_body(body: bytes, declared: str | None = None) -> str | None:
    """Why `body` is not text (its format, or its share of control characters); None for text. `declared`:
    the charset or Content-Type its headers give (UTF-16 and UTF-32 are text whatever their NULs)."""
    head = body[:16]
    for offset, magic, name in _MAGIC:
        if head.startswith(magic, offset):
            return f"a {name} by its first bytes"
    stripped = body[:64].lstrip(b" \t\r\n")
    if stripped[:5] == b"%PDF-":  # servers emit whitespace before a PDF too
        return "a PDF by its first bytes"
    if body.startswith(_WIDE_BOMS) or any(wide in (declared or "").lower() for wide in _WIDE):
        return None
    sample = body[:SNIFF_BYTES]
    control = len(sample) - len(sample.translate(None, _CONTROL))
    if sample and control > MAX_CONTROL_SHARE * len(sample) and not _utf16(sample):  # UTF-16 without its mark
        return f"{control / len(sample):.0%} of its first {len(sample)} bytes are control characters"
    return None



def byte_order_mark(data: bytes) -> tuple[bytes, str] | None:
    """(the mark, the codec of what follows it) where `data` starts with a byte-order mark, else None."""
    return next(((bom, codec) for bom, codec in BYTE_ORDER_MARKS if data.startswith(bom)), None)


def utf16_unmarked(body: bytes) -> str | None:
    """The UTF-16 codec of a page written in UTF-16 without a byte-order mark, else None: its first bytes hold NULs,
    nearly all on one side of their pairs (the high bytes of its ASCII markup: a Russian page's letters have none, and
    NULs are valid UTF-8, so this comes first), and it reads as UTF-16 text (`_utf16`)."""
    sample = body[: SNIFF_BYTES & ~1]
    nuls = sample.count(0)
    if nuls < max(UTF16_NULS_MIN, len(sample) // 100):
        return None
    one_side = max(sample[0::2].count(0), sample[1::2].count(0))
    return _utf16(sample) if one_side >= 0.9 * nuls else None


def _utf16(sample: bytes) -> str | None:
    """The UTF-16 codec (the byte order whose high bytes hold most NULs first) that decodes `sample` strictly
    into no more control characters than text holds; None when neither does. Random bytes fail: one in 32 of
    their 16-bit units is half of a surrogate pair, which must come paired."""
    orders = ["utf-16-le", "utf-16-be"]
    if sample[0::2].count(0) > sample[1::2].count(0):
        orders.reverse()
    for codec in orders:
        try:
            text = codecs.getincrementaldecoder(codec)().decode(sample, final=False)  # a cut last pair waits
        except UnicodeDecodeError:
            continue
        if text and len(text) - len(text.translate(_CONTROL_CHARS)) <= MAX_CONTROL_SHARE * len(text):
            return codec
    return None
