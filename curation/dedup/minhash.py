"""MinHash signatures, LSH band keys and candidate pairs, vectorised over a batch with numpy.

Why not datasketch's `MinHash.update` per shingle: it costs one Python call, one hash and one
numpy op per shingle (~120 documents/s on 2,000-character documents). Here a batch is tokenized
with pyarrow, each distinct word is hashed once, n-gram hashes are combined with numpy, and all
permutations of all shingles of a block of documents are one uint32 matrix operation followed by a
segmented minimum.

The permutations are datasketch's (>= 2.0) default "affine32" scheme, bit for bit: for the same
32-bit shingle hashes and seed, a signature equals `datasketch.MinHash(num_perm, seed,
hashfunc=...)` fed the same values, so signatures interoperate with datasketch's LSH classes.

Word shingles follow each document's language (`language_tokens`): languages written with spaces, and documents
without a language, are split into `word_tokens`; Chinese, Japanese, Thai, Khmer, Lao, Burmese and Tibetan, where a
whitespace tokenizer sees a whole clause as one "word", are segmented into words first
(`curation.lang.words`, FineWeb-2's choice: datatrove's MinHash shingles each language's words).

Flow for a corpus (each step a pure function, so the Ray layer can run it as a map or a group-by):
`MinHasher.signatures(texts)` -> `band_keys(sigs, bands, rows)` -> `band_table(ids, keys)` rows are
shuffled by `key` -> `bucket_pairs(rows)` per group of buckets -> verified pairs
(`estimated_jaccard` on signatures, or `exact_jaccard` on texts) -> `curation.dedup.components`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curation.dedup.exact import WHITESPACE, TextColumn, as_string_array, fmix64
from curation.lang.words import SPACES, segmenters, split, with_unspaced_runs
from curation.text.columns import code_points, combined, normalized

Unit = Literal["word", "char"]
FALSE_NEGATIVE_WEIGHT = 0.9  # measured in benchmarks/dedup_quality.py: recall first, verification restores precision

WORD_SEPARATORS = r"[^\p{L}\p{M}\p{N}]+"  # what is not part of a word, combining marks included
_EMPTY32 = np.uint32(0xFFFFFFFF)  # a signature slot no shingle reached (datasketch's empty value)
_POLY = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier combining the token hashes of an n-gram
_BLOCK_SHINGLES = 4096  # rows of the (shingles x num_perm) matrix computed at once: ~2 MB at 128 perms


# --------------------------------------------------------------------------------------------- shingles


@dataclass(frozen=True)
class Shingles:
    """64-bit shingle hashes of a batch: document i owns `hashes[offsets[i]:offsets[i + 1]]`.

    A document may repeat a shingle (MinHash ignores repeats); `unique_sets` removes them.
    """

    hashes: np.ndarray  # uint64
    offsets: np.ndarray  # int64, len = documents + 1

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def of(self, i: int) -> np.ndarray:
        return self.hashes[self.offsets[i]:self.offsets[i + 1]]

    def unique_sets(self) -> Shingles:
        """Each document's distinct shingles, sorted: the sets whose Jaccard similarity MinHash estimates."""
        doc = np.repeat(np.arange(len(self)), self.counts())
        order = np.lexsort((self.hashes, doc))
        h, d = self.hashes[order], doc[order]
        keep = np.ones(len(h), dtype=bool)
        keep[1:] = (h[1:] != h[:-1]) | (d[1:] != d[:-1])
        counts = np.bincount(d[keep], minlength=len(self))
        return Shingles(h[keep], np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))


# Shingles are read composed ("café" typed decomposed is "café"). Not NFKC, which folds full-width letters but
# splits spacing accents (`It´s` became `it` and a combining mark stuck to `s`: copies fell under 0.8) and normalized
# nearly every Chinese text (full-width punctuation fails its quick check), doubling Chinese's shingling time
FORM = "NFC"


def word_tokens(texts: TextColumn, *, lowercase: bool = True) -> tuple[pa.Array, np.ndarray]:
    """Words of each text (runs of letters, combining marks and digits; punctuation dropped), flattened, with
    offsets, composed (`FORM`).

    Splitting on anything that is not a letter, a mark or a digit makes "end." and "end" the same token
    and works for any script that separates words with spaces or punctuation. Combining marks belong to words:
    Devanagari, Tamil, Thai write vowels with them, Arabic its harakat (split at them, "हिन्दी" was three tokens,
    and Hindi's लड़का and लड़के one shingle).
    """
    texts = normalized(as_string_array(texts), FORM)
    if lowercase:
        texts = pc.utf8_lower(texts)
    lists = pc.split_pattern_regex(texts, WORD_SEPARATORS)
    flat = lists.flatten()
    offsets = lists.offsets.to_numpy().astype(np.int64)
    offsets -= offsets[0]
    nonempty = pc.greater(pc.binary_length(flat), 0).to_numpy(zero_copy_only=False)
    kept = np.concatenate([[0], np.cumsum(nonempty)]).astype(np.int64)
    return flat.filter(pa.array(nonempty)), kept[offsets]


def language_tokens(texts: TextColumn, langs: TextColumn | None = None, *,
                    lowercase: bool = True) -> tuple[pa.Array, np.ndarray]:
    """`word_tokens` of each text in its language (`langs`: lid.176 codes; null or None: by the text's script).

    Languages written with spaces, and documents without a language, get `word_tokens` itself (a batch of them:
    the same arrays, bit for bit). Languages written without spaces are segmented (`curation.lang.words`, one
    batched call) and each segmented word split the same way, as if the words were written with spaces between
    them: punctuation words vanish and the Latin words of a Chinese page are tokens as in an English one. So is a
    text of a spaced language, or of none, that holds letters of a script written without spaces (by its segmenter,
    `with_unspaced_runs`): a Chinese-English page has the same tokens whichever of the two it is labelled.
    """
    texts = normalized(as_string_array(texts), FORM)
    langs = None if langs is None else _codes(langs)
    kinds = with_unspaced_runs(texts, segmenters(texts, langs))  # a mixed page's Chinese is words, however labelled
    segmented = kinds != SPACES
    if not segmented.any():
        return word_tokens(texts, lowercase=lowercase)
    parts = []
    for is_segmented in np.unique(segmented).tolist():
        docs = np.flatnonzero(segmented == is_segmented)
        subset = texts.take(pa.array(docs))
        if is_segmented:  # each by its segmenter (whose names are the codes of its languages: zh, ja, th...)
            parts.append((docs, *_segmented_tokens(subset, pa.array(kinds[docs], pa.string()), lowercase)))
        else:
            parts.append((docs, *word_tokens(subset, lowercase=lowercase)))
    return _in_document_order(parts, len(texts))


def _codes(langs: TextColumn) -> pa.Array:
    """Language codes as one string array, nulls kept (`as_string_array` makes them empty)."""
    langs = combined(langs) if isinstance(langs, pa.Array | pa.ChunkedArray) else pa.array(list(langs), pa.string())
    return langs.cast(pa.string())


def _segmented_tokens(texts: pa.Array, langs: pa.Array | None, lowercase: bool) -> tuple[pa.Array, np.ndarray]:
    """`word_tokens` of each segmented word, split once per distinct word of the batch."""
    words = split(texts, langs)
    if not len(words.ids):
        return pa.array([], pa.string()), np.zeros(len(texts) + 1, np.int64)
    distinct, inverse = np.unique(words.ids, return_inverse=True)
    vocab = words.splitter.vocab
    tokens, per_word = word_tokens(pa.array([vocab[i] for i in distinct.tolist()], pa.string()), lowercase=lowercase)
    counts = np.diff(per_word)[inverse]  # tokens of each word of the batch
    before = np.cumsum(counts) - counts
    positions = np.arange(int(counts.sum())) - np.repeat(before - per_word[:-1][inverse], counts)
    per_doc = np.bincount(words.doc_index, weights=counts, minlength=len(texts)).astype(np.int64)
    return tokens.take(pa.array(positions)), np.concatenate([[0], np.cumsum(per_doc)]).astype(np.int64)


def _in_document_order(parts: list[tuple[np.ndarray, pa.Array, np.ndarray]],
                       n_docs: int) -> tuple[pa.Array, np.ndarray]:
    """Tokens of subsets of the documents (each: document indices, tokens, offsets) put back in document order."""
    counts = np.zeros(n_docs, np.int64)
    for docs, _, offsets in parts:
        counts[docs] = np.diff(offsets)
    out_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    source = np.empty(int(out_offsets[-1]), np.int64)  # position in the concatenated parts of each output token
    base = 0
    for docs, tokens, offsets in parts:
        c = np.diff(offsets)
        source[np.arange(len(tokens)) + np.repeat(out_offsets[docs] - offsets[:-1], c)] = base + np.arange(len(tokens))
        base += len(tokens)
    flat = pa.concat_arrays([tokens.cast(pa.string()) for _, tokens, _ in parts])
    return flat.take(pa.array(source)), out_offsets


def hash_tokens(tokens: pa.Array) -> np.ndarray:
    """xxh3-64 of each string, hashing each distinct string once (a batch repeats most words)."""
    if len(tokens) == 0:
        return np.zeros(0, dtype=np.uint64)
    encoded = pc.dictionary_encode(tokens)
    digest = xxhash.xxh3_64_intdigest
    distinct = np.fromiter((digest(s) for s in encoded.dictionary.cast(pa.binary()).to_pylist()), dtype=np.uint64,
                           count=len(encoded.dictionary))
    return distinct[encoded.indices.to_numpy(zero_copy_only=False)]


def char_tokens(texts: TextColumn, *, lowercase: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Code points of each text, in `FORM`, after whitespace is collapsed to single spaces, flattened, with
    offsets."""
    texts = normalized(as_string_array(texts), FORM)
    if lowercase:
        texts = pc.utf8_lower(texts)
    texts = pc.utf8_trim_whitespace(pc.replace_substring_regex(texts, WHITESPACE, " "))
    points, lengths = code_points(texts)
    return points, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def ngram_hashes(token_hashes: np.ndarray, offsets: np.ndarray, n: int) -> Shingles:
    """64-bit hashes of every window of `n` consecutive tokens of each document.

    A document with fewer than `n` (but some) tokens gets one shingle of all of them, so short
    documents still have a signature; its length is mixed in, so it never equals an `n`-gram.
    """
    if n < 1:
        msg = f"n-gram size must be at least 1, got {n}"
        raise ValueError(msg)
    lengths = np.diff(offsets)
    counts = np.where(lengths >= n, lengths - n + 1, (lengths > 0).astype(np.int64))
    out_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    doc = np.repeat(np.arange(len(lengths)), counts)
    start = offsets[:-1][doc] + (np.arange(out_offsets[-1]) - out_offsets[:-1][doc])
    window = np.minimum(lengths[doc], n)
    tokens = token_hashes.astype(np.uint64, copy=False)
    h = np.zeros(len(start), dtype=np.uint64)
    if len(start):
        full = bool((window == n).all())
        last = len(tokens) - 1
        for k in range(n):
            if full:
                h = h * _POLY + tokens[start + k]
            else:
                inside = k < window
                h = np.where(inside, h * _POLY + tokens[np.minimum(start + k, last)], h)
    return Shingles(fmix64(h ^ window.astype(np.uint64)), out_offsets)


def shingle_hashes(texts: TextColumn, *, ngram: int = 5, unit: Unit = "word", lowercase: bool = True,
                   langs: TextColumn | None = None) -> Shingles:
    """Hashed shingles of each text: n-grams of its language's words (punctuation dropped; `langs` as
    `language_tokens` reads them) or character n-grams."""
    if unit == "word":
        tokens, offsets = language_tokens(texts, langs, lowercase=lowercase)
        return ngram_hashes(hash_tokens(tokens), offsets, ngram)
    if unit == "char":
        points, offsets = char_tokens(texts, lowercase=lowercase)
        return ngram_hashes(fmix64(points.astype(np.uint64) + np.uint64(0x632BE59BD9B4E019)), offsets, ngram)
    msg = f"shingle unit must be 'word' or 'char', got {unit!r}"
    raise ValueError(msg)


# --------------------------------------------------------------------------------------------- signatures


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer (datasketch applies it to each input hash before permuting)."""
    h = h.astype(np.uint32, copy=True)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


@lru_cache(maxsize=16)
def affine32_permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's affine32 parameters for (num_perm, seed): odd `a` and any `b`, uint32."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def minhash_signatures(hashes32: np.ndarray, offsets: np.ndarray, num_perm: int = 128, seed: int = 1) -> np.ndarray:
    """(documents x num_perm) uint32 signatures of 32-bit shingle hashes grouped by `offsets`.

    Each block of shingles is one broadcast `a * fmix32(h) + b` (uint32 wrap-around is the modulus)
    into a (num_perm x shingles) buffer and one `np.minimum.reduceat` along its rows over the
    documents' segments (reducing along the contiguous axis is ~20x faster than along columns); a
    document spanning blocks takes the minimum of its parts. Documents without shingles keep 0xFFFFFFFF everywhere.
    """
    a, b = affine32_permutations(num_perm, seed)
    a, b = a[:, None], b[:, None]
    n_docs = len(offsets) - 1
    out = np.full((num_perm, n_docs), _EMPTY32, dtype=np.uint32)  # transposed: reductions run along rows
    mixed = fmix32(hashes32)
    counts = np.diff(offsets)
    total = int(offsets[-1]) if n_docs else 0
    block = np.empty((num_perm, _BLOCK_SHINGLES), dtype=np.uint32)
    for lo in range(0, total, _BLOCK_SHINGLES):
        hi = min(lo + _BLOCK_SHINGLES, total)
        first = int(np.searchsorted(offsets, lo, side="right")) - 1
        last = int(np.searchsorted(offsets, hi, side="left"))
        docs = np.arange(first, last)
        docs = docs[counts[docs] > 0]
        seg = np.maximum(offsets[docs], lo) - lo
        view = block[:, : hi - lo]
        np.multiply(a, mixed[None, lo:hi], out=view)
        np.add(view, b, out=view)
        mins = np.minimum.reduceat(view, seg, axis=1)
        out[:, docs] = np.minimum(out[:, docs], mins)
    return np.ascontiguousarray(out.T)


class MinHasher:
    """Signatures of a batch of texts; parameters are the recipe's `ngram`, `unit`, `num_perm`, `seed`.

    Word 5-grams (the default; each document's language's words, `langs`) suit prose; character
    n-grams suit short text.
    """

    def __init__(self, num_perm: int = 128, ngram: int = 5, unit: Unit = "word", seed: int = 1,
                 lowercase: bool = True) -> None:
        if num_perm < 1:
            msg = f"num_perm must be positive, got {num_perm}"
            raise ValueError(msg)
        self.num_perm, self.ngram, self.unit, self.seed, self.lowercase = num_perm, ngram, unit, seed, lowercase

    def shingles(self, texts: TextColumn, langs: TextColumn | None = None) -> Shingles:
        return shingle_hashes(texts, ngram=self.ngram, unit=self.unit, lowercase=self.lowercase, langs=langs)

    def signatures(self, texts: TextColumn, langs: TextColumn | None = None) -> np.ndarray:
        """(len(texts) x num_perm) uint32; an empty text's row is all 0xFFFFFFFF (see `has_shingles`).
        `langs`: each text's language (None: by its script)."""
        return self.signatures_of(self.shingles(texts, langs))

    def signatures_of(self, shingles: Shingles) -> np.ndarray:
        low32 = (shingles.hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return minhash_signatures(low32, shingles.offsets, self.num_perm, self.seed)


def has_shingles(signatures: np.ndarray) -> np.ndarray:
    """False for documents that produced no shingle (empty text): leave them out of LSH, or all collide."""
    return ~(signatures == _EMPTY32).all(axis=1)


def signature_column(signatures: np.ndarray) -> pa.FixedSizeListArray:
    """Signatures as an Arrow column (fixed_size_list<uint32>), to carry them through a shuffle."""
    n, p = signatures.shape
    return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(signatures).reshape(n * p)), p)


def signatures_from_column(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    column = combined(column)
    p = column.type.list_size
    return column.flatten().to_numpy(zero_copy_only=False).reshape(len(column), p).astype(np.uint32, copy=False)


# --------------------------------------------------------------------------------------------- LSH bands


def _false_positive_area(threshold: float, bands: np.ndarray, rows: np.ndarray, grid: int) -> np.ndarray:
    s = np.linspace(0.0, threshold, grid)[:, None]
    return _simpson(1.0 - (1.0 - s ** rows) ** bands, threshold / (grid - 1))


def _false_negative_area(threshold: float, bands: np.ndarray, rows: np.ndarray, grid: int) -> np.ndarray:
    s = np.linspace(threshold, 1.0, grid)[:, None]
    return _simpson((1.0 - s ** rows) ** bands, (1.0 - threshold) / (grid - 1))


def _simpson(y: np.ndarray, dx: float) -> np.ndarray:
    """Composite Simpson rule over axis 0 (odd number of samples)."""
    return dx / 3.0 * (y[0] + y[-1] + 4.0 * y[1:-1:2].sum(axis=0) + 2.0 * y[2:-1:2].sum(axis=0))


def optimal_bands(threshold: float, num_perm: int, false_positive_weight: float = 0.5,
                  false_negative_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) minimising the weighted areas of false positives and negatives around `threshold`.

    The same objective as datasketch's `MinHashLSH` (`datasketch.lsh._optimal_param`, a private
    function, hence re-implemented): the area under the S-curve `1 - (1 - s^r)^b` below the
    threshold and above it, integrated here with Simpson's rule over all (b, r) at once instead of
    one `scipy.integrate.quad` per pair. Raise `false_negative_weight` to favour recall when
    candidates are verified afterwards.
    """
    if not 0.0 < threshold < 1.0:
        msg = f"threshold must be in (0, 1), got {threshold}"
        raise ValueError(msg)
    pairs = np.array([(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)], dtype=np.float64)
    bands, rows = pairs[:, 0][None, :], pairs[:, 1][None, :]
    grid = 2001
    error = (false_positive_weight * _false_positive_area(threshold, bands, rows, grid)
             + false_negative_weight * _false_negative_area(threshold, bands, rows, grid))
    best = int(np.argmin(error))  # first minimum, in datasketch's (b, r) enumeration order
    return int(pairs[best, 0]), int(pairs[best, 1])


def candidate_probability(similarity: float | np.ndarray, bands: int, rows: int) -> float | np.ndarray:
    """Chance that two documents of this Jaccard similarity share at least one band bucket."""
    return 1.0 - (1.0 - np.asarray(similarity, dtype=np.float64) ** rows) ** bands


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(documents x bands) uint64 bucket keys; the band index is mixed in, so keys of all bands share one space.

    Two documents share key j exactly when their signatures agree on all `rows` values of band j
    (up to 64-bit hash collisions, which verification removes).
    """
    n, num_perm = signatures.shape
    if bands * rows > num_perm:
        msg = f"bands x rows = {bands * rows} exceeds num_perm = {num_perm}"
        raise ValueError(msg)
    values = signatures[:, : bands * rows].reshape(n, bands, rows).astype(np.uint64)
    keys = np.broadcast_to(fmix64(np.arange(bands, dtype=np.uint64) + np.uint64(0x5851F42D4C957F2D)), (n, bands))
    for j in range(rows):
        keys = fmix64(keys ^ values[:, :, j])
    return keys


def by_language(keys: np.ndarray, langs: TextColumn | None) -> np.ndarray:
    """Band keys salted with each document's language (null and None: one group of no language), so that
    documents of different languages never share a bucket: dedup per language over the whole corpus."""
    if langs is None:
        return keys
    encoded = pc.dictionary_encode(as_string_array(langs).cast(pa.string()))
    digest = xxhash.xxh3_64_intdigest
    salts = np.fromiter((digest(code.encode()) for code in encoded.dictionary.to_pylist()), np.uint64,
                        count=len(encoded.dictionary))
    return fmix64(keys ^ salts[encoded.indices.to_numpy(zero_copy_only=False)][:, None])


def band_table(ids: TextColumn, keys: np.ndarray, signatures: np.ndarray | None = None) -> pa.Table:
    """One row per (document, band): `key` (uint64), `id` (string) and optionally `signature`.

    This is what the Ray layer shuffles by `key`. Carrying `signature` lets `bucket_pairs` verify
    pairs inside the group-by (no join), at the cost of num_perm x 4 bytes per row.
    """
    ids = as_string_array(ids)
    n, bands = keys.shape
    rows = np.repeat(np.arange(n), bands)
    table = {"key": pa.array(keys.reshape(n * bands)), "id": ids.take(pa.array(rows))}
    if signatures is not None:
        table["signature"] = signature_column(signatures[rows])
    return pa.table(table)


def _pairs_of_buckets(starts: np.ndarray, sizes: np.ndarray, max_bucket: int, anchors: int) -> np.ndarray:
    """Row-index pairs (i < j in key-then-id order) within each bucket.

    A bucket of up to `max_bucket` members gives all its pairs; a larger one (boilerplate shared by
    thousands of pages) pairs every member with its `anchors` smallest-id members only, which keeps
    the cost linear and still connects the bucket (with verification, a member similar to none of
    the anchors loses that bucket's link).
    """
    out = []
    small = sizes <= max_bucket
    for k in np.unique(sizes[small & (sizes >= 2)]):
        first = starts[small & (sizes == k)]
        i, j = np.triu_indices(int(k), 1)
        out.append(np.stack([(first[:, None] + i).ravel(), (first[:, None] + j).ravel()], axis=1))
    for first, k in zip(starts[~small], sizes[~small], strict=True):
        j = np.arange(1, k)
        i = np.arange(min(anchors, k))
        ii, jj = np.meshgrid(i, j, indexing="ij")
        keep = ii < jj
        out.append(np.stack([first + ii[keep], first + jj[keep]], axis=1))
    return np.concatenate(out) if out else np.zeros((0, 2), dtype=np.int64)


def bucket_pairs(rows: pa.Table, *, threshold: float | None = None, max_bucket: int = 256,
                 anchors: int = 8) -> pa.Table:
    """Candidate pairs from band rows holding complete buckets (a group-by on `key` gives that).

    Input columns: `key`, `id` and, to verify here, `signature`. Output: distinct pairs `id_a` <
    `id_b` (string order), with `similarity` (estimated Jaccard) when signatures are present; with
    `threshold` set, only pairs whose estimate reaches it. The result depends only on the set of
    rows, not their order. Pairs repeat across calls when they share several buckets: deduplicate
    on (`id_a`, `id_b`) before counting them.
    """
    keys = rows.column("key").combine_chunks()
    ids = as_string_array(rows.column("id"))
    empty = {"id_a": pa.array([], pa.string()), "id_b": pa.array([], pa.string())}
    if "signature" in rows.column_names:
        empty["similarity"] = pa.array([], pa.float32())
    if rows.num_rows < 2:
        return pa.table(empty)
    table = pa.table({"key": keys, "id": ids})
    order = pc.sort_indices(table, sort_keys=[("key", "ascending"), ("id", "ascending")]).to_numpy()
    sorted_keys = keys.to_numpy()[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, len(order)))
    pairs = order[_pairs_of_buckets(starts, sizes, max_bucket, anchors)]
    if not len(pairs):
        return pa.table(empty)
    # One pair per document pair, whatever bucket it came from.
    encoded = pc.dictionary_encode(ids)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    code_pairs = np.sort(codes[pairs], axis=1)  # dictionary order is arbitrary; fixed below by string order
    distinct = code_pairs[:, 0] != code_pairs[:, 1]  # the same id twice in a bucket is not a pair
    pairs, code_pairs = pairs[distinct], code_pairs[distinct]
    _, first = np.unique(code_pairs[:, 0] * (len(encoded.dictionary) + 1) + code_pairs[:, 1], return_index=True)
    pairs = pairs[np.sort(first)]
    id_a, id_b = ids.take(pa.array(pairs[:, 0])), ids.take(pa.array(pairs[:, 1]))
    swap = pc.greater(id_a, id_b)
    out = {"id_a": pc.if_else(swap, id_b, id_a), "id_b": pc.if_else(swap, id_a, id_b)}
    if "signature" in rows.column_names:
        sigs = signatures_from_column(rows.column("signature"))
        sim = estimated_jaccard(sigs[pairs[:, 0]], sigs[pairs[:, 1]]).astype(np.float32)
        out["similarity"] = pa.array(sim)
        result = pa.table(out)
        if threshold is not None:
            result = result.filter(pa.array(sim >= threshold))
    else:
        result = pa.table(out)
    return result.take(pc.sort_indices(result, sort_keys=[("id_a", "ascending"), ("id_b", "ascending")]))


# --------------------------------------------------------------------------------------------- verification


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Row-wise share of equal signature slots: the MinHash estimate of Jaccard similarity.

    Standard error sqrt(J(1-J)/num_perm): 0.035 at J = 0.8 with 128 permutations.
    """
    return (sig_a == sig_b).mean(axis=1)


def pairs_jaccard(sets: Shingles, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact Jaccard similarity of the shingle sets of document pairs (a[k], b[k]); `sets` from `unique_sets`."""
    out = np.zeros(len(a), dtype=np.float64)
    for k, (i, j) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        x, y = sets.of(i), sets.of(j)
        union = len(x) + len(y)
        if union:
            inter = len(np.intersect1d(x, y, assume_unique=True))
            out[k] = inter / (union - inter)
    return out


def exact_jaccard(texts_a: TextColumn, texts_b: TextColumn, *, ngram: int = 5, unit: Unit = "word",
                  lowercase: bool = True, langs: TextColumn | None = None) -> np.ndarray:
    """Row-wise exact Jaccard similarity of the shingle sets of two text columns (the verification step).

    Exact up to 64-bit shingle-hash collisions; same shingles as `MinHasher` with the same parameters.
    `langs`: the languages of `texts_a` then `texts_b` (2 x len; None: by their script).
    """
    a, b = as_string_array(texts_a), as_string_array(texts_b)
    sets = shingle_hashes(pa.concat_arrays([a, b]), ngram=ngram, unit=unit, lowercase=lowercase,
                          langs=langs).unique_sets()
    n = len(a)
    return pairs_jaccard(sets, np.arange(n), np.arange(n, 2 * n))


# --------------------------------------------------------------------------------------------- reference


def lsh_parameters(threshold: float, num_perm: int, bands: int | None = None, rows: int | None = None,
                   false_negative_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows): as given, or `optimal_bands` for the threshold (given one, the other fills num_perm)."""
    if bands and rows:
        return bands, rows
    if bands:
        return bands, num_perm // bands
    if rows:
        return num_perm // rows, rows
    return optimal_bands(threshold, num_perm, 1.0 - false_negative_weight, false_negative_weight)


class MinhashSettings(Protocol):
    """What the MinHash-LSH dedup reads of its validated config (`curation.dedup.minhash_dedup.MinhashDedupParams`,
    which this module, below the stages, does not import)."""

    threshold: float
    num_perm: int
    ngram: int
    unit: Unit
    seed: int
    bands: int | None
    rows: int | None
    verify: Literal["estimate", "exact", "none"]
    by_language: bool


def hasher_of(settings: MinhashSettings) -> MinHasher:
    return MinHasher(num_perm=settings.num_perm, ngram=settings.ngram, unit=settings.unit, seed=settings.seed)


def lsh_of(settings: MinhashSettings) -> tuple[int, int]:
    """(bands, rows) of the LSH index: as given, else optimised for the threshold, false negatives weighted
    `FALSE_NEGATIVE_WEIGHT`."""
    return lsh_parameters(settings.threshold, settings.num_perm, settings.bands, settings.rows, FALSE_NEGATIVE_WEIGHT)


def fuzzy_duplicates(
    ids: TextColumn,
    texts: TextColumn,
    scores: np.ndarray | pa.Array | None = None,
    *,
    settings: MinhashSettings,
    langs: TextColumn | None = None,
    signatures: np.ndarray | None = None,
    n_partitions: int = 1,
    groups: TextColumn | None = None,
) -> tuple[pa.Table, pa.Table]:
    """The whole MinHash-LSH dedup in one process: (removed, pairs).

    The config's defaults are the measured ones (benchmarks/dedup_quality.py): bands weighted towards recall
    (false negatives 0.9) and candidates verified by exact Jaccard reach P 1.0 / R >= 0.95 on real
    near-duplicates; verifying by the signature estimate is cheaper but its 0.035 standard error
    costs precision and recall near the threshold (~0.93 / 0.89 at 0.8).

    `removed`: `id`, `survivor_id`, `cluster` (hex of the component's smallest node) per removed
    document. `pairs`: the verified candidate pairs (`id_a`, `id_b`). It is the reference for the
    Ray layer's result and what the quality benchmark measures; `n_partitions` runs the bucket and
    component steps per hash partition, as the shuffles do; `signatures` are `hasher_of(settings).signatures(texts,
    langs)` where already computed. `langs`: each document's language, for its words and, with the config's
    `by_language`, to pair only documents of the same language (`groups`, where given: of the same group,
    `curation.lang.mixed.language_groups`).
    """
    from curation.dedup.components import node_ids, node_partition, star_components
    from curation.dedup.exact import choose_survivors

    hasher, threshold, verify = hasher_of(settings), settings.threshold, settings.verify
    ids, texts = as_string_array(ids), as_string_array(texts)
    b, r = lsh_of(settings)
    sigs = hasher.signatures(texts, langs) if signatures is None else signatures
    if sigs.shape != (len(ids), hasher.num_perm):
        msg = f"signatures of shape {sigs.shape} for {len(ids)} documents and {hasher.num_perm} permutations"
        raise ValueError(msg)
    usable = np.flatnonzero(has_shingles(sigs))
    keys = band_keys(sigs[usable], b, r)
    if settings.by_language:
        grouped = langs if groups is None else groups
        keys = by_language(keys, None if grouped is None else as_string_array(grouped).take(pa.array(usable)))
    table = band_table(ids.take(pa.array(usable)), keys, sigs[usable] if verify == "estimate" else None)
    part = (table.column("key").to_numpy() % np.uint64(max(n_partitions, 1))).astype(np.int64)
    pieces = [bucket_pairs(table.filter(pa.array(part == p)), threshold=threshold if verify == "estimate" else None)
              for p in range(max(n_partitions, 1))]
    pairs = pa.concat_tables(pieces).select(["id_a", "id_b"])
    pairs = pairs.group_by(["id_a", "id_b"]).aggregate([]).sort_by([("id_a", "ascending"), ("id_b", "ascending")])
    if verify == "exact" and pairs.num_rows:
        position = {d: i for i, d in enumerate(ids.to_pylist())}
        a = pa.array([position[d] for d in pairs.column("id_a").to_pylist()])
        c = pa.array([position[d] for d in pairs.column("id_b").to_pylist()])
        similarity = pairs_jaccard(hasher.shingles(texts, langs).unique_sets(), a.to_numpy(), c.to_numpy())
        pairs = pairs.filter(pa.array(similarity >= threshold))
    partitions = max(n_partitions, 1)
    node, label, _ = star_components(node_ids(pairs.column("id_a")), node_ids(pairs.column("id_b")),
                                     n_partitions=partitions)
    # Labels back to documents: `node` is sorted, so each document's node is found by binary search.
    doc_nodes = node_ids(ids)
    position = np.minimum(np.searchsorted(node, doc_nodes), max(len(node) - 1, 0))
    members = np.flatnonzero(node[position] == doc_nodes) if len(node) else np.zeros(0, dtype=np.int64)
    cluster = label[position[members]]
    cluster_hex = pa.array([f"{c:016x}" for c in cluster.view(np.uint64).tolist()], pa.string())
    member_ids = ids.take(pa.array(members))
    member_scores = None
    if scores is not None:
        score_array = scores if isinstance(scores, pa.Array) else pa.array(np.asarray(scores, dtype=np.float64))
        member_scores = score_array.take(pa.array(members))
    # Survivors per cluster, each partition of clusters on its own (a shuffle by cluster).
    cluster_part = node_partition(cluster, partitions)
    removed = []
    for p in range(partitions):
        mask = pa.array(cluster_part == p)
        removed.append(choose_survivors(cluster_hex.filter(mask), member_ids.filter(mask),
                                        None if member_scores is None else member_scores.filter(mask)))
    out = pa.concat_tables(removed).rename_columns(["id", "survivor_id", "cluster"]).sort_by("id")
    return out, pairs
