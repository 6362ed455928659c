"""Corpus-level dedup and decontamination, engine-free (numpy, pyarrow; never Ray).

The algorithms are pure functions over Arrow/numpy columns that `pipelines` runs as maps and
shuffles; the survivor rule (`choose_survivors`) is shared, so every kind is deterministic:

- `exact`: content hash of normalized text; `choose_survivors(keys, ids, scores)`.
- `minhash`: vectorised MinHash signatures (datasketch-compatible) of each language's words
  (`language_tokens`), LSH band keys (salted `by_language` where asked), candidate pairs, Jaccard
  verification.
- `components`: connected components by large-star/small-star rounds (partition-friendly), and a
  single-process union-find reference.
- `bloom`: sharded Bloom filters (pybloom-live) and dolma-style paragraph dedup.
- `decontam`: benchmark n-gram index and lookup (the `decontaminate` document stage's).

Beside them, the corpus stages a recipe names, on the contract of `corpus_stage` (`CorpusStage`,
`CorpusResult`): `exact_dedup`, `minhash_dedup` and `bloom_dedup`, each run on a cluster by its
runner in `pipelines/dedup/`. They are not imported here: they build on `curation.stages.base`, whose
package imports `decontam` for the `decontaminate` stage, and this package must load without it.
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
    by_language,
    estimated_jaccard,
    exact_jaccard,
    has_shingles,
    language_tokens,
    optimal_bands,
    shingle_hashes,
)

__all__ = [
    "BloomShard", "MinHasher", "NgramIndex", "ParagraphDedup", "ShardedBloom", "band_keys", "band_table",
    "bucket_pairs", "by_language", "choose_survivors", "content_hash", "estimated_jaccard", "exact_jaccard",
    "has_shingles", "language_tokens", "large_star_map", "large_star_reduce", "node_ids", "normalize_text",
    "optimal_bands", "paragraph_outcome", "shard_of", "shingle_hashes", "small_star_map", "small_star_reduce",
    "split_paragraphs", "star_components", "star_labels", "union_find_components",
]
