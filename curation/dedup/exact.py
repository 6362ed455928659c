"""Exact dedup: a content hash of normalized text, and the survivor rule every dedup kind shares.

The hash is a key for a shuffle: documents with equal keys are duplicates, wherever they were read.
Normalization is columnar (pyarrow compute); only the final 128-bit hash is one C call per row
(xxh3-128), because Arrow exposes no string hash kernel.

The survivor rule is what makes dedup reproducible: "keep the first seen" depends on the order in
which shards arrive, so instead each group keeps its highest-scored member, ties broken by the
smallest id. Any worker holding a complete group computes the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curation.text.columns import combined, normalized

# Unicode whitespace (RE2's `\s` is ASCII only).
WHITESPACE = r"[\s\p{Z}]+"
PUNCTUATION = r"[\p{P}\p{S}]+"

HASH_TYPE = pa.binary(16)

TextColumn = pa.Array | pa.ChunkedArray | Sequence[str | None]


def as_string_array(texts: TextColumn) -> pa.Array:
    """One contiguous string array, nulls as empty strings: every function here accepts what a batch holds."""
    texts = combined(texts) if isinstance(texts, pa.Array | pa.ChunkedArray) else pa.array(list(texts), pa.string())
    if pa.types.is_large_string(texts.type) or pa.types.is_string_view(texts.type):
        texts = texts.cast(pa.string())
    return pc.fill_null(texts, "")


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: a bijection that spreads structured inputs over all 64 bits."""
    h = h.astype(np.uint64, copy=True)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


def normalize_text(
    texts: TextColumn,
    *,
    lowercase: bool = True,
    collapse_whitespace: bool = True,
    strip_punctuation: bool = False,
) -> pa.Array:
    """The text a content hash sees.

    Always composed (NFC). Defaults: lowercase, runs of Unicode whitespace become one space, ends trimmed, so that
    re-wrapped or re-cased copies are duplicates. `strip_punctuation` also removes punctuation and
    symbols (then "Hello, world!" equals "hello world"); off by default because code and tables
    differ in punctuation only.
    """
    out = normalized(as_string_array(texts), "NFC")  # a copy typed decomposed ("café") is the same text
    if lowercase:
        out = pc.utf8_lower(out)
    if strip_punctuation:
        out = pc.replace_substring_regex(out, PUNCTUATION, " ")
    if collapse_whitespace or strip_punctuation:
        out = pc.utf8_trim_whitespace(pc.replace_substring_regex(out, WHITESPACE, " "))
    return out


def hash_strings_128(strings: pa.Array) -> pa.Array:
    """xxh3-128 of each string's UTF-8 bytes, as `binary(16)` (big-endian digest).

    128 bits: a billion documents collide with probability ~1e-21, so a key match means equal text.
    """
    digest = xxhash.xxh3_128_digest
    return pa.array([digest(s) for s in strings.cast(pa.binary()).to_pylist()], HASH_TYPE)


def content_hash(
    texts: TextColumn,
    *,
    lowercase: bool = True,
    collapse_whitespace: bool = True,
    strip_punctuation: bool = False,
) -> pa.Array:
    """The exact-dedup key of each document: xxh3-128 of its normalized text, `binary(16)`."""
    normalized = normalize_text(
        texts, lowercase=lowercase, collapse_whitespace=collapse_whitespace, strip_punctuation=strip_punctuation
    )
    return hash_strings_128(normalized)


def _group_starts(sorted_keys: pa.Array) -> np.ndarray:
    """Boolean per row of a key-sorted array: True where a new group begins."""
    n = len(sorted_keys)
    starts = np.ones(n, dtype=bool)
    if n > 1:
        same = pc.equal(sorted_keys.slice(1), sorted_keys.slice(0, n - 1))
        starts[1:] = ~pc.fill_null(same, False).to_numpy(zero_copy_only=False)
        # Null keys never group with anything: each null is its own group.
        nulls = pc.is_null(sorted_keys).to_numpy(zero_copy_only=False)
        starts |= nulls
    return starts


def choose_survivors(
    keys: pa.Array | pa.ChunkedArray | np.ndarray,
    ids: TextColumn,
    scores: pa.Array | pa.ChunkedArray | np.ndarray | None = None,
) -> pa.Table:
    """Within each group of equal `keys`, keep the highest score, then the smallest id; list the others.

    Returns one row per removed document: `id`, `survivor_id` (the kept member of its group) and
    `key` (the group key, e.g. the content hash or the cluster id). Rows whose key is null are never
    removed. Null or NaN scores rank below every number. The answer depends only on the set of
    rows, never on their order, so any worker holding complete groups computes the same result.
    """
    keys = _as_arrow(keys)
    ids = as_string_array(ids)
    n = len(ids)
    if n == 0:
        return pa.table({"id": pa.array([], pa.string()), "survivor_id": pa.array([], pa.string()),
                         "key": pa.array([], keys.type)})
    if scores is None:
        score = np.zeros(n)
    else:
        score = np.asarray(_as_arrow(scores).cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
        score = np.where(np.isnan(score), -np.inf, score)
    table = pa.table({"key": keys, "neg_score": -score, "id": ids})
    sort_keys = [("key", "ascending"), ("neg_score", "ascending"), ("id", "ascending")]
    order = pc.sort_indices(table, sort_keys=sort_keys)
    sorted_keys = keys.take(order)
    starts = _group_starts(sorted_keys)
    group = np.cumsum(starts) - 1
    first_row = np.flatnonzero(starts)[group]  # per sorted row: the position of its group's survivor
    removed = ~starts
    order_np = order.to_numpy()
    removed_rows = order_np[removed]
    survivor_rows = order_np[first_row[removed]]
    return pa.table({
        "id": ids.take(pa.array(removed_rows)),
        "survivor_id": ids.take(pa.array(survivor_rows)),
        "key": keys.take(pa.array(removed_rows)),
    })


def _as_arrow(values: pa.Array | pa.ChunkedArray | np.ndarray | Sequence) -> pa.Array:
    return combined(values) if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(values)
