"""Write tokenized documents as a Megatron-LM indexed dataset (`<prefix>.bin` + `<prefix>.idx`).

This is the format that Megatron-LM core (`megatron/core/datasets/indexed_dataset.py`,
`IndexedDataset`, formerly `MMapIndexedDataset`) and NeMo read with `--data-path <prefix>`, so a
curated corpus can go to those trainers without their `preprocess_data.py`.

`<prefix>.bin` is every sequence's tokens back to back, little-endian, in the dataset's dtype, with
no header. `<prefix>.idx` is, all little-endian::

    magic              9 bytes   b"MMIDIDX\\x00\\x00"
    version            uint64    1
    dtype code         uint8     Megatron's DType enum: uint8=1 int8=2 int16=3 int32=4 int64=5
                                 float64=6 float32=7 uint16=8 (we write 8 or 4)
    sequence count     uint64    S
    document count     uint64    D + 1: the length of the document index array below
    sequence lengths   int32[S]  tokens per sequence
    sequence pointers  int64[S]  byte offset of each sequence in the .bin
    document indices   int64[D+1] 0, then for each document the index of the sequence after its last

Here one document is one sequence, so the document indices are 0..S. Megatron's GPTDataset joins
documents into its own samples, so documents are written whole (not as packed rows); with `eod_id`
each one ends with that token, as `preprocess_data.py --append-eod` does, which is what lets a
trainer find document boundaries inside a sample.

Both files are written under temporary names and renamed at `close()`, the `.idx` last (after any
old `.idx` at the target is removed), so a crash never leaves a `.idx` that describes another
`.bin`: a reader sees the previous complete pair, no dataset, or the new complete pair.
"""

from __future__ import annotations

import array
import os
import struct
from pathlib import Path
from types import TracebackType

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}
MAX_SEQUENCE = (1 << 31) - 1  # sequence lengths are int32 in the index
_CHUNK = 1 << 20  # index entries written per slice, so close() never holds a second full copy


def megatron_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits, else int32: Megatron has no uint32 (its own `optimal_dtype` switches
    at 65,500, a conservative cut; ids up to 65,535 are exact in uint16 and every reader takes
    the dtype from the index header)."""
    if vocab_size < 1:
        msg = f"vocab_size must be >= 1, not {vocab_size}"
        raise ValueError(msg)
    if vocab_size <= 1 << 16:
        return np.dtype(np.uint16)
    if vocab_size <= 1 << 31:
        return np.dtype(np.int32)
    msg = f"vocab_size {vocab_size} does not fit Megatron's int32 tokens"
    raise ValueError(msg)


class MegatronWriter:
    """Stream documents into `<prefix>.bin`; `close()` (or leaving the `with`) writes `<prefix>.idx`.

    Leaving the `with` on an exception aborts instead: the temporary files are removed and nothing
    at `prefix` changes. Only the per-document lengths (4 bytes each) are kept in memory.
    """

    def __init__(self, prefix: Path | str, vocab_size: int, eod_id: int | None = None) -> None:
        self.prefix = Path(prefix)
        self.vocab_size = int(vocab_size)
        self.dtype = megatron_dtype(self.vocab_size)
        self._disk = self.dtype.newbyteorder("<")  # the format is little-endian whatever the host
        if eod_id is not None and not 0 <= eod_id < self.vocab_size:
            msg = f"eod_id {eod_id} outside the vocabulary [0, {self.vocab_size})"
            raise ValueError(msg)
        self.eod_id = eod_id
        self.bin_path = self.prefix.with_name(self.prefix.name + ".bin")
        self.idx_path = self.prefix.with_name(self.prefix.name + ".idx")
        # pid in the temp names: two writers aimed at one prefix must not share a half file
        self._bin_tmp = self.bin_path.with_name(f"{self.bin_path.name}.tmp-{os.getpid()}")
        self._idx_tmp = self.idx_path.with_name(f"{self.idx_path.name}.tmp-{os.getpid()}")
        self.prefix.parent.mkdir(parents=True, exist_ok=True)
        self._bin = open(self._bin_tmp, "wb")  # noqa: SIM115  (held open across add_* calls until close)
        self._lengths = array.array("i")  # C int: int32 on every platform numpy supports
        self.tokens = 0
        self.closed = False

    @property
    def documents(self) -> int:
        return len(self._lengths)

    def __enter__(self) -> MegatronWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _check(self, tokens: np.ndarray) -> None:
        if self.closed:
            msg = "MegatronWriter is closed"
            raise RuntimeError(msg)
        if tokens.size and tokens.dtype.kind not in "iu":  # np.asarray([]) is float64: let empties in
            msg = f"token arrays must hold integers, not {tokens.dtype}"
            raise ValueError(msg)
        if tokens.size and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            msg = f"token ids outside [0, {self.vocab_size})"
            raise ValueError(msg)

    def add_document(self, tokens: np.ndarray) -> None:
        """Append one document (a 1-D integer array; it may be empty)."""
        tokens = np.asarray(tokens)
        if tokens.ndim != 1:
            msg = f"a document is a 1-D array, not {tokens.ndim}-D"
            raise ValueError(msg)
        self._check(tokens)
        if self.eod_id is not None:
            tokens = np.append(tokens, self.eod_id)
        if tokens.size > MAX_SEQUENCE:
            msg = f"a document of {tokens.size} tokens exceeds Megatron's int32 sequence length"
            raise ValueError(msg)
        self._bin.write(np.ascontiguousarray(tokens, dtype=self._disk).data)  # the buffer itself, no bytes copy
        self._lengths.append(tokens.size)
        self.tokens += tokens.size

    def add_documents(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        """Append many documents at once: `flat` is their tokens concatenated, `lengths` their sizes
        (zeros allowed). One write and no Python loop, whatever the number of documents."""
        flat = np.asarray(flat)
        lengths = np.asarray(lengths)
        if flat.ndim != 1 or lengths.ndim != 1:
            msg = "flat and lengths must be 1-D arrays"
            raise ValueError(msg)
        if lengths.size and (lengths.dtype.kind not in "iu" or int(lengths.min()) < 0):
            msg = "lengths must be non-negative integers"
            raise ValueError(msg)
        lengths = lengths.astype(np.int64)
        if int(lengths.sum()) != flat.size:
            msg = f"lengths add up to {int(lengths.sum())} tokens but flat holds {flat.size}"
            raise ValueError(msg)
        self._check(flat)
        if self.eod_id is not None:
            # insert before each document's end offset puts the EOD right after its last token
            flat = np.insert(flat.astype(self._disk), np.cumsum(lengths), self.eod_id)
            lengths = lengths + 1
        if lengths.size and int(lengths.max()) > MAX_SEQUENCE:
            msg = f"a document of {int(lengths.max())} tokens exceeds Megatron's int32 sequence length"
            raise ValueError(msg)
        self._bin.write(np.ascontiguousarray(flat, dtype=self._disk).data)
        self._lengths.frombytes(lengths.astype(np.intc).tobytes())
        self.tokens += flat.size

    def close(self) -> None:
        """Finish the `.bin`, write the `.idx`, and move both into place (idempotent)."""
        if self.closed:
            return
        self.closed = True
        try:
            self._bin.flush()
            os.fsync(self._bin.fileno())
            self._bin.close()
            self._write_index()
            self.idx_path.unlink(missing_ok=True)
            self._bin_tmp.replace(self.bin_path)
            self._idx_tmp.replace(self.idx_path)
        except BaseException:
            self._remove_temps()
            raise

    def abort(self) -> None:
        """Drop what was written; files already at `prefix` stay as they were."""
        self.closed = True
        self._remove_temps()

    def _remove_temps(self) -> None:
        if not self._bin.closed:
            self._bin.close()
        self._bin_tmp.unlink(missing_ok=True)
        self._idx_tmp.unlink(missing_ok=True)

    def _write_index(self) -> None:
        lengths = np.frombuffer(self._lengths, dtype=np.intc)
        count = lengths.size
        itemsize = self.dtype.itemsize
        with open(self._idx_tmp, "wb") as f:
            f.write(MAGIC)
            f.write(struct.pack("<Q", VERSION))
            f.write(struct.pack("<B", DTYPE_CODES[self.dtype]))
            f.write(struct.pack("<Q", count))
            f.write(struct.pack("<Q", count + 1))
            f.write(lengths.astype("<i4").tobytes())
            pointer = 0  # running byte offset across slices
            for start in range(0, count, _CHUNK):
                sizes = lengths[start:start + _CHUNK].astype(np.int64) * itemsize
                ends = np.cumsum(sizes) + pointer
                f.write((ends - sizes).astype("<i8").tobytes())
                pointer = int(ends[-1])
            for start in range(0, count + 1, _CHUNK):
                f.write(np.arange(start, min(start + _CHUNK, count + 1), dtype="<i8").tobytes())
            f.flush()
            os.fsync(f.fileno())
