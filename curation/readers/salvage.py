"""A compressed file decompressed so that a break keeps every byte that decodes before it.

Arrow's `CompressedInputStream` fails a whole `read` at a break: the bytes that call had decompressed are
lost, and with them every record of a small file (a gzip JSON Lines file with trailing garbage gave 0 of
its 20 records; a zstd one damaged at 70%, 0 of 1,000). `SalvagingStream` reads through Arrow as before
and, at a break, reads the file once more up to it, in single bytes and single-byte reads, so that it
gives what the codec can decode before the damage (to the byte in gzip; to the block in zstd, lz4 and bz2,
whose blocks decode whole or not at all) and then raises the break. bz2 is Python's: Arrow's gives garbage
fed a byte at a time. A damage that still decodes (flipped bits in deflate, lz4 without checksums) gives
garbage before the break is seen: those lines are rejects of their own (`bad_json`...).
"""

from __future__ import annotations

import bz2
from typing import Any

import pyarrow as pa

from curation import storage
from curation.storage import is_io_error

PIECE = 1 << 16  # compressed bytes handed to Arrow at a time
EXACT_BYTES = 4 << 20  # decompressed bytes read one at a time before a break
MAX_SALVAGED = 64 << 20


class _Pieces:
    """The raw file as Arrow reads it, `piece` bytes at most per read, from `slow_from` on one byte a time;
    remembers where each piece started and how much the reader had been given then."""

    def __init__(self, raw: Any, owner: SalvagingStream, slow_from: int | None = None) -> None:
        self.raw, self.owner, self.slow_from = raw, owner, slow_from
        self.offset = 0
        self.last: tuple[int, int] = (0, 0)  # (offset of the last piece, bytes given when it was read)
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        want = PIECE if size is None or size < 0 else min(size, PIECE)
        if self.slow_from is not None and self.offset >= self.slow_from:
            want = min(want, 1)
        self.last = (self.offset, self.owner.given)
        data = self.raw.read(want)
        self.offset += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:  # the file is the stream's to close: it is read again after a break
        self.closed = True


def _decompressing(pieces: _Pieces, codec: str) -> Any:
    """Arrow's decompressor over `pieces`; bz2 Python's (Arrow's bz2 gives garbage fed one byte at a time)."""
    return _Bz2(pieces) if codec == "bz2" else pa.CompressedInputStream(pa.PythonFile(pieces, mode="r"), codec)


class _Bz2:
    """Concatenated bz2 streams (as `pbzip2` writes them) decompressed from `pieces`."""

    def __init__(self, pieces: _Pieces) -> None:
        self.pieces, self.decompressor, self.out, self.ended = pieces, bz2.BZ2Decompressor(), b"", False
        self.fed = False  # whether the stream being decompressed has had bytes: one that has not cannot be cut

    def read(self, size: int = -1) -> bytes:
        while (size is None or size < 0 or len(self.out) < size) and not self.ended:
            data = b""
            if self.decompressor.eof:  # the next stream, if any bytes follow: a fresh decompressor not yet fed
                data, self.decompressor, self.fed = self.decompressor.unused_data, bz2.BZ2Decompressor(), False
            data = data or self.pieces.read(PIECE)
            if not data:
                self.ended = True
                if self.fed and not self.decompressor.eof:
                    msg = "bz2 stream ends early (truncated)"
                    raise EOFError(msg)
                break
            self.fed = True
            self.out += self.decompressor.decompress(data)
        cut = len(self.out) if size is None or size < 0 else size
        data, self.out = self.out[:cut], self.out[cut:]
        return data

    def close(self) -> None:
        self.pieces.close()


class SalvagingStream:
    """`codec`-compressed bytes of the seekable file `raw`, read from its start; see the module doc."""

    def __init__(self, raw: Any, codec: str) -> None:
        self.raw, self.codec = raw, codec
        self.given = 0
        self.pieces = _Pieces(raw, self)
        self.stream = _decompressing(self.pieces, codec)
        self.salvaged = b""
        self.broken: OSError | None = None

    def read(self, size: int = -1) -> bytes:
        if self.salvaged or self.broken is not None:
            return self._after_break(size)
        try:
            data = self.stream.read(size)
        except (ValueError, OSError, EOFError) as exc:  # ArrowInvalid is a ValueError
            if is_io_error(exc):
                raise
            self._salvage(exc)
            return self._after_break(size)
        self.given += len(data)
        return data

    def _after_break(self, size: int) -> bytes:
        if not self.salvaged:
            raise self.broken  # type: ignore[misc]  # set whenever nothing salvaged is left
        cut = len(self.salvaged) if size is None or size < 0 else size
        data, self.salvaged = self.salvaged[:cut], self.salvaged[cut:]
        self.given += len(data)
        return data

    def _salvage(self, exc: BaseException) -> None:
        """Reads the file again: in big reads up to where the piece holding the break was read, then a byte at a
        time (pieces and reads), keeping what comes after what was already given, until the break. Past
        `EXACT_BYTES` of that (a piece of a bomb inflates 1,000 to 40,000 times) reads are big again, and no
        more than `MAX_SALVAGED` bytes are kept: the break is then reported there."""
        piece, safe = self.pieces.last
        self.stream.close()
        self.raw.seek(0)  # not opened again: this is no retry of a storage fault
        stream = _decompressing(_Pieces(self.raw, self, slow_from=piece), self.codec)
        kept, at = bytearray(), 0
        try:
            while at < safe and (data := stream.read(min(PIECE, safe - at))):
                at += len(data)
            while len(kept) < MAX_SALVAGED and (data := stream.read(1 if at - safe < EXACT_BYTES else PIECE)):
                kept += data[max(self.given - at, 0) :]
                at += len(data)
        except (ValueError, OSError, EOFError) as again:
            if is_io_error(again):
                raise
        finally:
            stream.close()
        self.salvaged = bytes(kept)
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        self.broken = OSError(f"{self.codec} data broken after {at} decompressed bytes: {message}")

    def close(self) -> None:
        self.stream.close()
        self.raw.close()

    def __enter__(self) -> SalvagingStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_salvaging(uri: str) -> Any:
    """A sequential stream of a file's bytes, decompressed by its extension (`storage.codec`) through a
    `SalvagingStream`: a plain file as it is."""
    fs, path = storage.resolve(uri)
    codec = storage.codec(path)
    if codec is None:
        return fs.open_input_stream(path, compression=None)
    return SalvagingStream(fs.open_input_file(path), codec)
