"""Streaming dedup with Bloom filters (pybloom-live), sharded by key prefix, and dolma-style paragraph dedup.

A Bloom filter answers "seen before?" in ~1.8 bytes per item at a 0.1% false-positive rate, so
document- and paragraph-level dedup can stream without a sort. The filter is split into shards by
the key's leading bits (`shard_of`), one `BloomShard` per Ray task, so capacity grows with the
cluster and every key always meets the same shard.

"Seen before" depends on arrival order. To make the survivors reproducible each shard must see its
keys in a canonical order: `BloomDedup.repeated` sorts a shard's units by (document id, line) and
`ParagraphDedup` sorts its batch by id for that reason. False positives drop genuinely new
paragraphs at the realised rate that `BloomShard.stats` reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pybloom_live import BloomFilter, ScalableBloomFilter

from curation.dedup.exact import TextColumn, as_string_array, hash_strings_128
from curation.text.columns import combined

Keys = np.ndarray | pa.Array | pa.ChunkedArray | Sequence[int]


def _key_ints(keys: Keys) -> list[int]:
    """Keys as Python ints, the cheapest form pybloom-live hashes (it stringifies anything but `str`)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = combined(keys)
    if isinstance(keys, pa.Array):
        if pa.types.is_fixed_size_binary(keys.type) or pa.types.is_binary(keys.type):
            return [int.from_bytes(k, "big") for k in keys.to_pylist()]
        keys = keys.to_numpy(zero_copy_only=False)
    if isinstance(keys, np.ndarray):
        return keys.astype(np.uint64).tolist()
    return [int(k) for k in keys]


def _prefix64(keys: Keys) -> np.ndarray:
    """The leading 64 bits of each key: binary keys' first 8 bytes (big-endian), integer keys as they are."""
    if isinstance(keys, pa.ChunkedArray):
        keys = combined(keys)
    if isinstance(keys, pa.Array) and (pa.types.is_fixed_size_binary(keys.type) or pa.types.is_binary(keys.type)):
        prefix = [int.from_bytes(k[:8].ljust(8, b"\0"), "big") for k in keys.to_pylist()]
        return np.array(prefix, dtype=np.uint64)
    if isinstance(keys, pa.Array):
        keys = keys.to_numpy(zero_copy_only=False)
    return np.asarray(keys).astype(np.uint64)


def shard_of(keys: Keys, n_shards: int) -> np.ndarray:
    """Shard of each key from its leading bits: (top 32 bits of the 64-bit prefix) mod `n_shards`, int32.

    Keys are hashes already, so their top bits are uniform; the Bloom filter hashes the whole key
    again, so picking the shard by prefix does not bias a shard's own false-positive rate.
    """
    if n_shards < 1:
        msg = f"n_shards must be at least 1, got {n_shards}"
        raise ValueError(msg)
    return ((_prefix64(keys) >> np.uint64(32)) % np.uint64(n_shards)).astype(np.int32)


class BloomShard:
    """One shard of a sharded Bloom filter: `add_if_new` marks keys not seen before and remembers them.

    `scalable=True` (default) grows by adding filters (pybloom-live's `ScalableBloomFilter`, each new
    filter 4x larger at 0.9x the error rate) so it never refuses a key; `capacity` is its first
    filter's size. Give a realistic `capacity` (expected keys / shards): the library's default start
    of 100 is 5x slower and overshoots the asked error rate (0.67% for 0.1% at 1M keys).
    `scalable=False` is one fixed `BloomFilter`, the smallest for a known count; it raises
    `IndexError` past `capacity`.
    """

    def __init__(self, capacity: int, error_rate: float = 0.001, *, scalable: bool = True) -> None:
        if capacity < 1 or not 0.0 < error_rate < 1.0:
            msg = f"need capacity >= 1 and 0 < error_rate < 1, got {capacity}, {error_rate}"
            raise ValueError(msg)
        self.capacity, self.error_rate, self.scalable = capacity, error_rate, scalable
        self.filter: BloomFilter | ScalableBloomFilter = (
            ScalableBloomFilter(initial_capacity=capacity, error_rate=error_rate,
                                mode=ScalableBloomFilter.LARGE_SET_GROWTH)
            if scalable else BloomFilter(capacity=capacity, error_rate=error_rate)
        )
        self.added = 0
        self.seen = 0

    def add_if_new(self, keys: Keys) -> np.ndarray:
        """True for each key not seen before (it is added), in the given order: a key repeated within
        `keys` is new only the first time. False positives read as seen (and are counted as such)."""
        add = self.filter.add
        new = np.fromiter((not add(k) for k in _key_ints(keys)), dtype=bool)
        added = int(new.sum())
        self.added += added
        self.seen += len(new) - added
        return new

    def contains(self, keys: Keys) -> np.ndarray:
        """Membership without adding."""
        f = self.filter
        return np.fromiter((k in f for k in _key_ints(keys)), dtype=bool)

    def _filters(self) -> list[BloomFilter]:
        return list(self.filter.filters) if self.scalable else [self.filter]

    @property
    def memory_bytes(self) -> int:
        """Bytes of the bit arrays (the Python objects around them add a few hundred bytes)."""
        return sum(f.num_bits for f in self._filters()) // 8

    def expected_false_positive_rate(self) -> float:
        """Chance that a new key reads as seen now, from each filter's fill: 1 - prod(1 - fill^k).

        pybloom-live splits each filter into k slices of equal size, one bit set per slice per key.
        """
        miss = 1.0
        for f in self._filters():
            fill = f.bitarray.count() / f.num_bits
            miss *= 1.0 - fill ** f.num_slices
        return 1.0 - miss

    def measure_false_positive_rate(self, probes: int = 100_000, seed: int = 0) -> float:
        """Realised rate: the share of random keys never added (2^-64 chance of being real) that read as seen."""
        rng = np.random.default_rng(seed)
        keys = rng.integers(0, 2**63, size=probes, dtype=np.int64).astype(np.uint64) | np.uint64(1 << 63)
        return float(self.contains(keys).mean())

    def stats(self, probes: int = 0) -> dict[str, float | int]:
        """What a job reports: keys added, repeats seen, memory, bits per item and error rates."""
        out: dict[str, float | int] = {
            "added": self.added,
            "seen": self.seen,
            "memory_bytes": self.memory_bytes,
            "bits_per_item": 8 * self.memory_bytes / max(self.added, 1),
            "error_rate": self.error_rate,
            "expected_false_positive_rate": self.expected_false_positive_rate(),
        }
        if probes:
            out["measured_false_positive_rate"] = self.measure_false_positive_rate(probes)
        return out


def bytes_per_million(error_rate: float) -> int:
    """Bit-array bytes of a fixed pybloom-live filter sized for one million keys at `error_rate`."""
    return BloomFilter(capacity=1_000_000, error_rate=error_rate).num_bits // 8


class ShardedBloom:
    """`n_shards` BloomShards in one process, routed by `shard_of`: what the Ray layer spreads over tasks."""

    def __init__(self, n_shards: int, capacity: int, error_rate: float = 0.001, *, scalable: bool = True) -> None:
        per_shard = max(1, -(-capacity // n_shards))
        self.shards = [BloomShard(per_shard, error_rate, scalable=scalable) for _ in range(n_shards)]

    def add_if_new(self, keys: Keys) -> np.ndarray:
        keys = _prefix_and_ints(keys)
        shard = shard_of(keys[0], len(self.shards))
        new = np.zeros(len(shard), dtype=bool)
        ints = np.array(keys[1], dtype=object)
        for s in np.unique(shard):
            rows = np.flatnonzero(shard == s)
            new[rows] = self.shards[s].add_if_new(ints[rows].tolist())
        return new


def _prefix_and_ints(keys: Keys) -> tuple[np.ndarray, list[int]]:
    return _prefix64(keys), _key_ints(keys)


# ------------------------------------------------------------------------------------------- paragraphs


@dataclass(frozen=True)
class Paragraphs:
    """Lines of a batch of texts (dolma splits on newlines). `doc[i]` owns line i; `key` is null for
    lines too short to dedup (blank lines, and lines under `min_chars`): they are always kept."""

    lines: pa.Array  # string, the line without its newline
    doc: np.ndarray  # int64 row of the text the line belongs to
    key: pa.Array  # binary(16) xxh3-128 of the line, null if exempt
    chars: np.ndarray  # int64 characters of the line (after stripping) that count towards the share


def split_paragraphs(texts: TextColumn, *, min_chars: int = 1) -> Paragraphs:
    """Split on "\\n"; each line's key is the hash of its stripped text, so re-indented copies match."""
    texts = as_string_array(texts)
    lists = pc.split_pattern(texts, "\n")
    lines = lists.flatten()
    offsets = lists.offsets.to_numpy().astype(np.int64)
    doc = np.repeat(np.arange(len(texts)), np.diff(offsets))
    stripped = pc.utf8_trim_whitespace(lines)
    chars = pc.utf8_length(stripped).to_numpy(zero_copy_only=False).astype(np.int64)
    exempt = chars < max(min_chars, 1)
    key = pc.if_else(pa.array(exempt), pa.nulls(len(lines), pa.binary(16)), hash_strings_128(stripped))
    return Paragraphs(lines, doc, key, np.where(exempt, 0, chars))


def paragraph_outcome(
    n_docs: int, paragraphs: Paragraphs, new: np.ndarray, *, max_removed_share: float = 0.5
) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(texts without repeated lines, drop mask, removed share) from each line's `new` verdict.

    `new` is per line (exempt lines are ignored). The share is removed characters over the
    characters of all non-exempt lines; a document above `max_removed_share` is dropped whole
    (an exact duplicate loses everything: share 1.0). Kept documents keep their blank lines.
    """
    exempt = pc.is_null(paragraphs.key).to_numpy(zero_copy_only=False)
    keep_line = exempt | new
    removed = np.bincount(paragraphs.doc, weights=np.where(keep_line, 0, paragraphs.chars), minlength=n_docs)
    total = np.bincount(paragraphs.doc, weights=paragraphs.chars, minlength=n_docs)
    share = np.divide(removed, total, out=np.zeros(n_docs), where=total > 0)
    kept_lines = paragraphs.lines.filter(pa.array(keep_line))
    counts = np.bincount(paragraphs.doc[keep_line], minlength=n_docs)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    texts = pc.binary_join(pa.ListArray.from_arrays(offsets, kept_lines), "\n")
    return texts, share > max_removed_share, share


class ParagraphDedup:
    """dolma-style paragraph dedup in one process: lines seen before (in any earlier document, or
    earlier in the same one) are removed; a document losing more than `max_removed_share` of its
    text is dropped. The Ray layer does the same with `split_paragraphs` -> `shard_of(key)` ->
    `BloomShard.add_if_new` in the shard's task -> `paragraph_outcome`.
    """

    def __init__(self, capacity: int, error_rate: float = 0.001, *, n_shards: int = 1,
                 max_removed_share: float = 0.5, min_chars: int = 1) -> None:
        self.bloom = ShardedBloom(n_shards, capacity, error_rate)
        self.max_removed_share, self.min_chars = max_removed_share, min_chars

    def process(self, ids: TextColumn, texts: TextColumn) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """(new texts, drop mask, removed share) per row, in the input's row order.

        Rows are fed to the filter in id order, so a batch gives the same answer however it is shuffled.
        """
        ids, texts = as_string_array(ids), as_string_array(texts)
        order = pc.sort_indices(ids).to_numpy()
        paragraphs = split_paragraphs(texts.take(pa.array(order)), min_chars=self.min_chars)
        exempt = pc.is_null(paragraphs.key).to_numpy(zero_copy_only=False)
        new = np.ones(len(exempt), dtype=bool)
        rows = np.flatnonzero(~exempt)
        new[rows] = self.bloom.add_if_new(paragraphs.key.filter(pa.array(~exempt)))
        out_texts, drop, share = paragraph_outcome(len(order), paragraphs, new,
                                                   max_removed_share=self.max_removed_share)
        back = np.argsort(order)
        return out_texts.take(pa.array(back)), drop[back], share[back]
