"""Columnar helpers for text columns: Arrow string arrays in, per-document numpy counts out.

The document stages score a whole batch at once: a text column becomes one contiguous array
(`as_array`), lists of its parts (lines, words) become flat values with offsets (`list_offsets`), and
per-document totals are sums over those offsets (`segment_sum`). Line breaks and character classes are
RE2 patterns because Arrow's regex kernels speak RE2.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Python's str.splitlines() boundaries, as an RE2 pattern for Arrow's regex kernels.
LINE_BREAK_RE2 = r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x{85}\x{2028}\x{2029}]"


def normalized(texts: pa.Array | pa.ChunkedArray, form: str) -> pa.Array:
    """`texts` in Unicode normalization `form` (NFC, NFKC...), nulls kept. Only the texts not already in it are
    normalized: Python's quick check reads a text ten times faster than Arrow's `utf8_normalize` rewrites it, and
    nearly all text is composed already (Arrow's on every text was a fifth of decontamination's time)."""
    texts = combined(texts)
    values = texts.to_pylist()
    todo = [i for i, text in enumerate(values) if text and not unicodedata.is_normalized(form, text)]
    if not todo:
        return texts
    mask = np.zeros(len(values), bool)
    mask[todo] = True
    return pc.replace_with_mask(texts, pa.array(mask), pa.array([unicodedata.normalize(form, values[i]) for i in todo],
                                                                 texts.type))


def re2_class(chars: Iterable[str]) -> str:
    """An RE2 character class matching exactly `chars` (every character escaped by code point)."""
    return "[" + "".join(f"\\x{{{ord(c):x}}}" for c in sorted(set(chars))) + "]"


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of values[offsets[i]:offsets[i + 1]] for every i (empty segments give 0)."""
    cs = np.concatenate([[0], np.cumsum(values, dtype=np.float64 if values.dtype.kind == "f" else np.int64)])
    return cs[offsets[1:]] - cs[offsets[:-1]]


def code_points(texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """All texts' code points, one flat uint32 array (nulls as empty texts), and each text's length in them."""
    texts = pc.fill_null(combined(texts), "")
    lengths = pc.utf8_length(texts).to_numpy(zero_copy_only=False).astype(np.int64)
    points = np.frombuffer("".join(texts.to_pylist()).encode("utf-32-le"), dtype=np.uint32)
    return points, lengths


def list_offsets(lists: pa.ListArray | pa.LargeListArray) -> np.ndarray:
    """Offsets of a list array's values, rebased to 0 (int64)."""
    offsets = lists.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    return offsets - offsets[0]


def combined(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array: a ChunkedArray's chunks combined (none: an empty array of its type)."""
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def as_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous large_string array (one type for every kernel downstream), nulls as ""."""
    return pc.fill_null(combined(column).cast(pa.large_string()), "")


ETHIOPIC_WORDSPACE = "\u1361"  # traditional Ethiopic writing separates words with it, not with a space


def split_whitespace(texts: pa.Array | pa.ChunkedArray) -> pa.ListArray:
    """`utf8_split_whitespace`, the Ethiopic wordspace counted as the space it stands for."""
    return pc.utf8_split_whitespace(pc.replace_substring(as_array(texts), ETHIOPIC_WORDSPACE, " "))


def whitespace_words(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Whitespace-separated words of each text (int64; null, empty and blank texts have 0).

    Not the list lengths of `utf8_split_whitespace`: it gives an empty piece for an empty text and
    at each end of a text that starts or ends with whitespace ("" is 1 piece, "   " 3, " a " 3).
    """
    pieces = split_whitespace(texts)
    words = pc.greater(pc.binary_length(pieces.flatten()), 0).to_numpy(zero_copy_only=False)
    return segment_sum(words.astype(np.int64), list_offsets(pieces))
