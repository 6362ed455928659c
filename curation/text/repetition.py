"""Repetition statistics of a batch of documents: repeated parts (lines, paragraphs) and repeated
word n-grams, per document, as Gopher's repetition rules count them (columnar, exact, no hashing)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.text.columns import list_offsets, segment_sum
from curation.text.splitter import Words


def duplicate_parts(parts: pa.ListArray | pa.LargeListArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per list (document): number of parts, how many repeat an earlier part of the same list, and
    the characters of those repeats (Gopher's duplicate line/paragraph counts)."""
    offsets = list_offsets(parts)
    values = parts.flatten()
    n_parts = np.diff(offsets)
    if len(values) == 0:
        zeros = np.zeros(len(n_parts), np.int64)
        return n_parts, zeros, zeros
    encoded = pc.dictionary_encode(values)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    doc = np.repeat(np.arange(len(n_parts), dtype=np.int64), n_parts)
    _, first = np.unique(doc * (len(encoded.dictionary) + 1) + codes, return_index=True)
    repeat = np.ones(len(codes), bool)
    repeat[first] = False
    lengths = pc.utf8_length(values).to_numpy(zero_copy_only=False).astype(np.int64)
    return n_parts, segment_sum(repeat.astype(np.int64), offsets), segment_sum(lengths * repeat, offsets)


def ngram_repetition(
    words: Words, top: Sequence[int], dup: Sequence[int]
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Per document, Gopher's n-gram repetition in characters (Rae et al. 2021, appendix A, as
    datatrove computes it):

    - `top[n]`: characters of the most frequent n-gram (words joined by single spaces) times its
      count; ties go to the n-gram seen first; 0 where none occurs twice, -1 where the document has fewer than n
      words;
    - `dup[n]`: characters (words concatenated) of n-grams that repeat an earlier one, scanning left
      to right and jumping past each repeat, so overlapping repeats count once.

    Exact equality of word-id sequences (no hashing): n-gram ids are built level by level from the
    (n-1)-gram id and the next word, only where both overlapping (n-1)-grams occur twice or more.
    """
    ids, offsets = words.ids, words.offsets
    n_docs, size = len(offsets) - 1, len(ids)
    doc = words.doc_index
    end = offsets[1:][doc] if size else np.zeros(0, np.int64)
    chars = np.concatenate([[0], np.cumsum(words.feature("length"))])
    top_out = {n: np.full(n_docs, -1, np.int64) for n in top}
    dup_out = {n: np.zeros(n_docs, np.int64) for n in dup}
    if size == 0:
        return top_out, dup_out
    vocab = int(ids.max()) + 1
    _, group, count = np.unique(doc * vocab + ids, return_inverse=True, return_counts=True)
    group = group.reshape(-1).astype(np.int64)
    counts = count[group]
    positions = np.arange(size)
    previous = group
    for n in range(1, max([*top, *dup]) + 1):
        if n > 1:
            valid = positions + n <= end
            cand = positions[valid & (counts > 1)]
            cand = cand[counts[cand + 1] > 1]
            group = np.full(size, -1, np.int64)
            new_counts = np.ones(size, np.int64)
            if len(cand):
                keys = previous[cand] * vocab + ids[cand + n - 1]
                _, inv, cnt = np.unique(keys, return_inverse=True, return_counts=True)
                inv = inv.reshape(-1)
                new_counts[cand] = cnt[inv]
                group[cand] = inv
            counts = new_counts
            counts[~valid] = 0
        previous = group
        if n in top:
            top_out[n] = _top_ngram(n, counts, doc, offsets, chars)
        if n in dup:
            dup_out[n] = _dup_ngram(n, counts, group, doc, n_docs, chars)
    return top_out, dup_out


def _top_ngram(n: int, counts: np.ndarray, doc: np.ndarray, offsets: np.ndarray, chars: np.ndarray) -> np.ndarray:
    n_docs = len(offsets) - 1
    starts = offsets[:-1]
    has = offsets[1:] - starts >= n
    # no n-gram repeats: none is repeated text (datatrove counts the first, once: a comment of five words was
    # `top_2gram`, 0.57 of its characters in "the most common" 2-gram, which it said once)
    result = np.full(n_docs, -1, np.int64)
    result[has] = 0
    rep = np.flatnonzero(counts > 1)
    if len(rep):
        order = np.lexsort((rep, -counts[rep], doc[rep]))
        rep = rep[order]
        docs, take = np.unique(doc[rep], return_index=True)
        best = rep[take]
        result[docs] = (chars[best + n] - chars[best] + (n - 1)) * counts[best]
    return result


def _dup_ngram(n: int, counts: np.ndarray, group: np.ndarray, doc: np.ndarray, n_docs: int,
               chars: np.ndarray) -> np.ndarray:
    result = np.zeros(n_docs, np.int64)
    rep = np.flatnonzero(counts > 1)
    if not len(rep):
        return result
    seen: set[int] = set()
    idx = -1
    # group ids are per document, so one `seen` serves the whole batch; a jump never crosses a
    # document's end because every listed n-gram lies inside its document.
    for p, g in zip(rep.tolist(), group[rep].tolist(), strict=True):
        if p < idx:
            continue
        if g in seen:
            result[doc[p]] += chars[p + n] - chars[p]
            idx = p + n
        else:
            seen.add(g)
            idx = p + 1
    return result
