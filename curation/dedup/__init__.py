"""Corpus-level dedup and decontamination algorithms, engine-free (numpy, pyarrow; never Ray).

Each kind is a set of pure functions over Arrow/numpy columns that `pipelines` runs as maps and
shuffles; the survivor rule (`choose_survivors`) is shared, so every kind is deterministic:

- `exact`: content hash of normalized text; `choose_survivors(keys, ids, scores)`.
- `minhash`: vectorised MinHash signatures (datasketch-compatible), LSH band keys, candidate pairs,
  Jaccard verification.
- `components`: connected components by large-star/small-star rounds (partition-friendly), and a
  single-process union-find reference.
- `bloom`: sharded Bloom filters (pybloom-live) and dolma-style paragraph dedup.
- `decontam`: benchmark n-gram index and lookup.
"""

from curation.dedup.bloom import BloomShard, ParagraphDedup, ShardedBloom, paragraph_outcome, shard_of, split_paragraphs
from curation.dedup.components import (
    large_star_map,
    large_star_reduce,
    node_ids,
    small_star_map,
    small_star_reduce,
    star_components,
    star_labels,
    union_find_components,
)
from curation.dedup.decontam import NgramIndex
from curation.dedup.exact import choose_survivors, content_hash, normalize_text
from curation.dedup.minhash import (
    MinHasher,
    band_keys,
    band_table,
    bucket_pairs,
    estimated_jaccard,
    exact_jaccard,
    has_shingles,
    optimal_bands,
    shingle_hashes,
)

__all__ = [
    "BloomShard", "MinHasher", "NgramIndex", "ParagraphDedup", "ShardedBloom", "band_keys", "band_table",
    "bucket_pairs", "choose_survivors", "content_hash", "estimated_jaccard", "exact_jaccard", "has_shingles",
    "large_star_map", "large_star_reduce", "node_ids", "normalize_text", "optimal_bands", "paragraph_outcome",
    "shard_of", "shingle_hashes", "small_star_map", "small_star_reduce", "split_paragraphs", "star_components",
    "star_labels", "union_find_components",
]
