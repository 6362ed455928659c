"""Pack tokenized documents into fixed rows of `seq_len + 1` tokens, with boundaries and provenance.

Documents are taken in the given order; each one's tokens are followed by one EOS token and the
results are concatenated into a single stream, which is cut into rows of exactly `seq_len + 1`
tokens (a trainer takes `tokens[:-1]` as inputs and `tokens[1:]` as labels). A document longer
than the rest of a row continues at the start of the next row(s). The last, partial row is padded
and marked by `valid`; it is never dropped.

Arrow schema of one packed row (one table row; shards are Arrow IPC files of such tables)::

    tokens:            fixed_size_list<uint16>[seq_len + 1]   (uint32 when vocab_size > 65536)
    valid:             int32        tokens before padding; seq_len + 1 except in the final row.
                                    Loss mask: position i is real iff i < valid; label i (tokens[i+1])
                                    counts iff i + 1 < valid.
    doc_starts:        list<int32>  offsets in the row where a document's first token lies.
                                    Position 0 is always a segment start as well (it may hold the
                                    continuation of a document begun in an earlier row), so the
                                    attention segments of a row are [0] + doc_starts, each running
                                    to the next start (or to `valid`); padding is its own segment.
    doc_ids:           list<string> provenance, one entry per piece of a document in this row, in
                                    row order: the document's id;
    doc_offsets:       list<int32>  ... where the piece starts in the row;
    doc_lengths:       list<int32>  ... how many tokens of the row it covers;
    doc_token_offsets: list<int32>  ... where the piece starts in the document's own token sequence.

A document's own token sequence is its tokens followed by the EOS token, so every document (even
an empty one) covers at least one position, and the pieces of a document across rows, in order,
concatenate to exactly `tokens(document) + [eos]`. The four provenance lists have equal lengths
per row and the pieces of a row tile `[0, valid)` without gaps. Schema metadata (`seq_len`,
`eos_id`, `pad_id`, `dtype`) is stored as UTF-8 strings under those keys.

Example (without this package)::

    import pyarrow.ipc as ipc
    table = ipc.open_file("shard-00000.arrow").read_all()
    tokens = table.column("tokens").combine_chunks().flatten().to_numpy().reshape(len(table), -1)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

UINT16_VOCAB = 1 << 16


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab_size <= 65536), else uint32: halves shard size and I/O."""
    return np.dtype(np.uint16) if vocab_size <= UINT16_VOCAB else np.dtype(np.uint32)


def packed_schema(seq_len: int, dtype: np.dtype | type = np.uint16, eos_id: int = -1, pad_id: int = -1) -> pa.Schema:
    """The Arrow schema of packed rows (see the module docstring), with its metadata."""
    value_type = pa.from_numpy_dtype(np.dtype(dtype))
    fields = [
        pa.field("tokens", pa.list_(value_type, seq_len + 1), nullable=False),
        pa.field("valid", pa.int32(), nullable=False),
        pa.field("doc_starts", pa.list_(pa.int32()), nullable=False),
        pa.field("doc_ids", pa.list_(pa.string()), nullable=False),
        pa.field("doc_offsets", pa.list_(pa.int32()), nullable=False),
        pa.field("doc_lengths", pa.list_(pa.int32()), nullable=False),
        pa.field("doc_token_offsets", pa.list_(pa.int32()), nullable=False),
    ]
    metadata = {"seq_len": str(seq_len), "eos_id": str(eos_id), "pad_id": str(pad_id), "dtype": np.dtype(dtype).name}
    return pa.schema(fields, metadata=metadata)


def _flatten(token_lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """All tokens of a batch as one int64 array, plus each document's length (one pass, no per-token
    Python loop: numpy arrays are concatenated, lists are read through a C-level chain)."""
    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
    total = int(lengths.sum())
    if token_lists and all(isinstance(t, np.ndarray) for t in token_lists):
        flat = np.concatenate(token_lists).astype(np.int64, copy=False)
    else:
        flat = np.fromiter(itertools.chain.from_iterable(token_lists), dtype=np.int64, count=total)
    return flat, lengths


class Packer:
    """Streaming packer: `add` batches of documents, get finished rows back, `finish` for the rest.

    Only less than one row of tokens (and its provenance) is carried between batches, so memory
    does not grow with the number of documents. Each batch is handled with array arithmetic: the
    batch is concatenated once, rows are a reshape of the stream, and document pieces are split at
    row boundaries with `repeat`/`cumsum`, never a Python loop over tokens.
    """

    def __init__(self, seq_len: int, eos_id: int, pad_id: int | None = None, vocab_size: int = UINT16_VOCAB) -> None:
        if seq_len < 1:
            msg = f"seq_len must be >= 1, not {seq_len}"
            raise ValueError(msg)
        if eos_id < 0:
            msg = "the tokenizer has no EOS id; pass eos_id explicitly"
            raise ValueError(msg)
        self.seq_len = seq_len
        self.width = seq_len + 1
        self.eos_id = eos_id
        self.pad_id = eos_id if pad_id is None or pad_id < 0 else pad_id
        self.dtype = token_dtype(vocab_size)
        self.max_id = int(np.iinfo(self.dtype).max)
        self.schema = packed_schema(seq_len, self.dtype, self.eos_id, self.pad_id)
        self.rows = 0
        self.documents = 0
        self.tokens = 0  # real (non-padding) tokens emitted, EOS included
        self._finished = False
        self._reset_carry()

    @classmethod
    def for_tokenizer(cls, sp: Any, seq_len: int, eos_id: int | None = None, pad_id: int | None = None) -> Packer:
        """A packer for a sentencepiece processor: its EOS, its pad (else EOS), its vocabulary size."""
        eos = sp.eos_id() if eos_id is None else eos_id
        pad = sp.pad_id() if pad_id is None else pad_id
        return cls(seq_len, eos_id=eos, pad_id=pad, vocab_size=sp.get_piece_size())

    def _reset_carry(self, tokens: np.ndarray | None = None, ids: pa.Array | None = None,
                     starts: np.ndarray | None = None, lengths: np.ndarray | None = None,
                     doc_offsets: np.ndarray | None = None) -> None:
        empty = np.zeros(0, dtype=np.int64)
        self._tokens = empty if tokens is None else tokens
        self._ids = pa.array([], pa.string()) if ids is None else ids
        self._starts = empty if starts is None else starts
        self._lengths = empty if lengths is None else lengths
        self._doc_offsets = empty if doc_offsets is None else doc_offsets

    def add(self, doc_ids: Sequence[str], token_lists: Sequence[Sequence[int] | np.ndarray]) -> pa.Table:
        """Append documents (in order) and return the rows they completed (possibly zero rows)."""
        if len(doc_ids) != len(token_lists):
            msg = f"{len(doc_ids)} document ids for {len(token_lists)} token lists"
            raise ValueError(msg)
        return self.add_flat(doc_ids, *_flatten(token_lists))

    def add_flat(self, doc_ids: Sequence[str] | pa.Array, flat: np.ndarray, lengths: np.ndarray) -> pa.Table:
        """`add` for documents already concatenated: `flat` holds their tokens back to back, `lengths`
        how many belong to each (as an Arrow list column's values and offsets give them)."""
        if self._finished:
            msg = "Packer.add after finish"
            raise RuntimeError(msg)
        if len(doc_ids) != len(lengths) or int(np.sum(lengths)) != flat.size:
            msg = f"{len(doc_ids)} ids, {len(lengths)} lengths and {flat.size} tokens do not match"
            raise ValueError(msg)
        if not len(doc_ids):
            return self.schema.empty_table()
        flat = flat.astype(np.int64, copy=False)
        lengths = np.asarray(lengths, dtype=np.int64)
        if flat.size and (int(flat.min()) < 0 or int(flat.max()) > self.max_id):
            msg = f"token ids outside [0, {self.max_id}] for {self.dtype.name} rows"
            raise ValueError(msg)
        self.documents += len(doc_ids)
        # Each document becomes its tokens + EOS; place both with one boolean mask.
        spans = lengths + 1
        ends = np.cumsum(spans)
        new = np.empty(int(ends[-1]), dtype=np.int64)
        is_eos = np.zeros(new.size, dtype=bool)
        is_eos[ends - 1] = True
        new[is_eos] = self.eos_id
        new[~is_eos] = flat
        base = self._tokens.size
        stream = np.concatenate([self._tokens, new])
        new_ids = doc_ids if isinstance(doc_ids, pa.Array) else pa.array(list(doc_ids), pa.string())
        ids = pa.concat_arrays([self._ids, new_ids.cast(pa.string())])
        starts = np.concatenate([self._starts, base + ends - spans])
        piece_lengths = np.concatenate([self._lengths, spans])
        doc_offsets = np.concatenate([self._doc_offsets, np.zeros(len(doc_ids), dtype=np.int64)])
        n_rows = stream.size // self.width
        return self._emit(stream, n_rows, ids, starts, piece_lengths, doc_offsets, keep_rest=True)

    def finish(self) -> pa.Table:
        """Return the final partial row, padded with `pad_id` and with `valid` < seq_len + 1
        (zero rows when the stream ended exactly on a row boundary). The packer is closed after."""
        if self._finished:
            return self.schema.empty_table()
        self._finished = True
        rest = self._tokens.size
        if rest == 0:
            return self.schema.empty_table()
        stream = np.full(self.width, self.pad_id, dtype=np.int64)
        stream[:rest] = self._tokens
        table = self._emit(stream, 1, self._ids, self._starts, self._lengths, self._doc_offsets,
                           keep_rest=False, valid_last=rest)
        self._reset_carry()
        return table

    def _emit(self, stream: np.ndarray, n_rows: int, ids: pa.Array, starts: np.ndarray, lengths: np.ndarray,
              doc_offsets: np.ndarray, *, keep_rest: bool, valid_last: int | None = None) -> pa.Table:
        w = self.width
        # Split every piece at row boundaries: piece p covers rows first[p]..last[p].
        first = starts // w
        last = (starts + lengths - 1) // w
        counts = last - first + 1
        owner = np.repeat(np.arange(starts.size), counts)
        k = np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)
        row = first[owner] + k
        sub_start = np.maximum(starts[owner], row * w)
        sub_end = np.minimum(starts[owner] + lengths[owner], (row + 1) * w)
        sub_doc_offset = doc_offsets[owner] + (sub_start - starts[owner])
        done = row < n_rows
        if keep_rest:
            rest = ~done
            cut = n_rows * w
            self._reset_carry(
                tokens=stream[cut:].copy(),
                ids=ids.take(pa.array(owner[rest])),
                starts=sub_start[rest] - cut,
                lengths=(sub_end - sub_start)[rest],
                doc_offsets=sub_doc_offset[rest],
            )
        if n_rows == 0:
            return self.schema.empty_table()
        owner, row, sub_start, sub_end, sub_doc_offset = (
            a[done] for a in (owner, row, sub_start, sub_end, sub_doc_offset)
        )
        in_row = (sub_start - row * w).astype(np.int32)
        bounds = np.searchsorted(row, np.arange(n_rows + 1)).astype(np.int32)
        is_start = sub_doc_offset == 0
        start_bounds = np.concatenate([[0], np.cumsum(np.bincount(row[is_start], minlength=n_rows))]).astype(np.int32)
        valid = np.full(n_rows, w, dtype=np.int32)
        if valid_last is not None:
            valid[-1] = valid_last
        tokens = stream[: n_rows * w].astype(self.dtype)
        self.rows += n_rows
        self.tokens += int(valid.sum())

        def lists(values: np.ndarray | pa.Array, offsets: np.ndarray) -> pa.ListArray:
            return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)

        columns = [
            pa.FixedSizeListArray.from_arrays(pa.array(tokens), w),
            pa.array(valid, pa.int32()),
            lists(pa.array(in_row[is_start], pa.int32()), start_bounds),
            lists(ids.take(pa.array(owner)), bounds),
            lists(pa.array(in_row, pa.int32()), bounds),
            lists(pa.array((sub_end - sub_start).astype(np.int32)), bounds),
            lists(pa.array(sub_doc_offset.astype(np.int32)), bounds),
        ]
        return pa.Table.from_arrays(columns, schema=self.schema)
