"""MinHash-LSH near-duplicate removal (`minhash_dedup`): the corpus stage and its engine-free steps.

The algorithms live in `curation.dedup.minhash` and `.components` (signatures, LSH bands, candidate
pairs, connected components) and `.exact` (the survivor rule); this module is the stage a recipe
names: its parameters and the small per-batch and per-partition functions that
`pipelines.dedup.minhash` runs as Ray Data maps and shuffles. Each step depends only on the set of
rows it is given, never on their order, so the survivors do not change with the number of workers,
partitions or the order of input shards.

Steps (what runs where is `pipelines.dedup.minhash`):

1. `signed(documents)`: per document its node (`node_ids`), score and LSH band keys.
2. `band_rows(signed)`: one (`key`, `id`) row per document and band, shuffled by `key`;
   `bucket_pairs` turns complete buckets into candidate pairs.
3. verification (`verify`): `exact` compares the documents' shingle sets (`payload` = each
   document's distinct shingle hashes, computed once per document and brought to both ends of every
   pair), `estimate` compares their signatures, `none` keeps every candidate.
4. connected components of the verified pairs (`curation.dedup.components`), then per component the
   survivor by `choose_survivors`: highest `score_column` value, then the smallest id.

Languages (FineWeb-2's choices): word shingles are n-grams of each document's language's
words (segmented words for Chinese, Japanese, Thai..., `curation.dedup.minhash.language_tokens`;
English and documents without a `lang` keep the words they always had, bit for bit); `by_language`
pairs only documents of the same `lang`, across the whole corpus (band keys salted by language); with
`cluster_size`, every kept document gets `minhash_cluster_size`, the size of its duplicate cluster (1
without duplicates), which the mixture can up-sample by (`rehydrate`, `curation.mixture`).

Every removed document gets reason `near_duplicate` and the detail `kept <survivor id> (cluster
<16 hex digits>)`, where the cluster is the component's smallest node (`node_ids` of one of its
members) as unsigned hex, the same for all members of a cluster. `parse_detail` reads it back, so a
notebook can put a reject beside its survivor and group a cluster.

Defaults and where they come from:

- `threshold` 0.8 over word 5-gram shingles (`ngram` 5, `unit` word): the near-duplicate definition of
  Lee et al. 2022, "Deduplicating Training Data Makes Language Models Better" (MinHash over 5-grams,
  Jaccard >= 0.8); Gopher (Rae et al. 2021, appendix A) uses the same 0.8 on 13-grams and NeMo
  Curator's fuzzy dedup the same 0.8 on character n-grams; datatrove's MinHash (FineWeb) shingles
  word 5-grams, of each language's words in FineWeb-2.
- `num_perm` 128 and `seed` 1: datasketch's `MinHash` defaults (our signatures equal datasketch's
  bit for bit, `curation.dedup.minhash`); standard error of an estimate sqrt(J(1-J)/128) = 0.035 at 0.8.
- bands and rows: datasketch's `MinHashLSH` optimisation of the false positive and negative areas
  (`optimal_bands`), weighted 0.9 towards false negatives because candidates are verified anyway;
  measured by `benchmarks/dedup_quality.py` on the real README history (unverified candidates
  reach only about P 0.78 / R 0.92 at 0.8; with these bands and exact verification P 1.0 / R >= 0.95).
- `verify` exact: an estimate's 0.035 error near the threshold costs precision and recall (~0.93 /
  0.89 at 0.8 in the same benchmark); exact Jaccard of the shingle sets does not.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curation.dedup.components import node_ids
from curation.dedup.corpus_stage import REMOVALS, REWRITES, CorpusResult, CorpusStage
from curation.dedup.exact import TextColumn, as_string_array, choose_survivors
from curation.dedup.exact_dedup import DUPLICATE
from curation.dedup.minhash import (
    MinHasher,
    Shingles,
    band_keys,
    by_language,
    estimated_jaccard,
    fuzzy_duplicates,
    has_shingles,
    hasher_of,
    lsh_of,
    lsh_parameters,
    pairs_jaccard,
    signature_column,
    signatures_from_column,
)
from curation.lang.mixed import PARAGRAPHS, language_groups
from curation.mixture import CLUSTER_SIZE
from curation.stages.base import StageParams
from curation.stages.languages import LANG
from curation.text.columns import combined

REASON = "near_duplicate"
DETAIL = re.compile(r"^kept (?P<survivor>.+) \(cluster (?P<cluster>[0-9a-f]{16})\)$")
SIGNED = pa.schema([("id", pa.string()), ("node", pa.int64()), ("score", pa.float64()), ("usable", pa.bool_()),
                    ("keys", pa.list_(pa.uint64()))])


class MinhashDedupParams(StageParams):
    threshold: float = Field(0.8, gt=0, lt=1, description="Jaccard similarity of the shingle sets at which two "
                             "documents are near-duplicates (Lee et al. 2022; Gopher). Near-duplicates form clusters "
                             "(connected components, as in datatrove and FineWeb) that keep one document: in a chain "
                             "of copies each edited from the last, the first and last may be less alike.")
    num_perm: int = Field(128, ge=2, le=1024, description="MinHash permutations per signature (datasketch's default).")
    ngram: int = Field(5, ge=1, description="Shingle length in units (words or characters).")
    unit: Literal["word", "char"] = Field(
        "word", description="Shingle unit: words of each document's language (its `lang`, else its script: "
        "Chinese, Japanese, Thai, Khmer, Lao, Burmese, Tibetan segmented into words, as FineWeb-2), punctuation "
        "dropped; or characters (short text).")
    by_language: bool = Field(
        False, description="Deduplicate each language on its own, across the whole corpus (FineWeb-2): only "
        "documents of the same `lang` are near-duplicates (documents without one form one group; a mixed document, "
        "labelled per paragraph, is in the group of its languages, `ar+en`, whichever holds more).")
    cluster_size: bool = Field(
        False, description=f"Give every kept document `{CLUSTER_SIZE}`: the size of its cluster of near-duplicates "
        "(1 without any; the exact copies an `exact_dedup` before it removed count too), FineWeb-2's column, which "
        "the mixture's `rehydrate` up-samples by.")
    bands: int | None = Field(None, ge=1, description="LSH bands; default: chosen with `rows` from the threshold "
                              "(datasketch's optimisation, false negatives weighted 0.9).")
    rows: int | None = Field(None, ge=1, description="Signature values per band; default: chosen from the threshold.")
    verify: Literal["exact", "estimate", "none"] = Field(
        "exact", description="Check candidate pairs: exact Jaccard of the shingle sets, the signature estimate, "
        "or not at all (every pair sharing a bucket counts).")
    score_column: str | None = Field(
        None, description="Per cluster keep the document with the highest value of this column (then the smallest "
        "id); without it the smallest id.")
    seed: int = Field(1, ge=0, lt=2**32, description="Seed of the MinHash permutations (datasketch's default).")

    @model_validator(mode="after")
    def _bands_fit(self) -> MinhashDedupParams:
        bands, rows = lsh_parameters(self.threshold, self.num_perm, self.bands, self.rows) if (
            self.bands or self.rows) else (1, 1)
        if bands < 1 or rows < 1 or bands * rows > self.num_perm:
            msg = f"bands x rows = {bands} x {rows} does not fit num_perm = {self.num_perm}"
            raise ValueError(msg)
        return self


class MinhashDedup(CorpusStage):
    """Near-duplicate removal by MinHash-LSH: one survivor per cluster, reason `near_duplicate`.

    On a cluster it runs as several shuffles (`pipelines.dedup.minhash`); in one process its
    signatures, most of the work, can be computed a task per file first.
    """

    name = "minhash_dedup"
    Params = MinhashDedupParams
    runner = "minhash"
    signed_per_file = True
    optional_columns = (LANG, PARAGRAPHS)

    def hasher(self) -> MinHasher:
        return hasher_of(self.params)

    def lsh(self) -> tuple[int, int]:
        """(bands, rows) of the LSH index: as given, else optimised for the threshold."""
        return lsh_of(self.params)

    def scores(self, documents: pa.Table) -> pa.Array:
        """The survivor score of each document (float64; null without `score_column`)."""
        column = self.params.score_column
        if column is None:
            return pa.nulls(documents.num_rows, pa.float64())
        return documents.column(column).cast(pa.float64()).combine_chunks()

    def signed(self, documents: pa.Table) -> pa.Table:
        """Per document: `id`, `node`, `score`, `usable` (has a shingle) and its LSH band `keys`.

        Documents without a shingle (empty text) stay (they were seen) but get no keys: in LSH
        they would all share every bucket.
        """
        ids = as_string_array(documents.column("id"))
        langs = languages(documents)
        sigs = self.hasher().signatures(documents.column("text"), langs)
        usable = has_shingles(sigs)
        bands, rows = self.lsh()
        keys = band_keys(sigs, bands, rows)
        if self.params.by_language:
            keys = by_language(keys, language_groups_of(documents))
        keys[~usable] = 0
        offsets = pa.array(np.arange(0, (len(ids) + 1) * bands, bands, dtype=np.int32))
        lists = pa.ListArray.from_arrays(offsets, pa.array(keys.reshape(-1)))
        return pa.table([ids, pa.array(node_ids(ids)), self.scores(documents), pa.array(usable), lists],
                        schema=SIGNED)

    def payload_type(self) -> pa.DataType:
        """What verification brings to both ends of a pair: a shingle set or a signature."""
        if self.params.verify == "estimate":
            return pa.list_(pa.uint32(), self.params.num_perm)
        return pa.list_(pa.uint64())

    def payload(self, texts: TextColumn, langs: TextColumn | None = None) -> pa.Array:
        """Per document what `similarity` compares: its distinct shingle hashes (exact) or its signature."""
        hasher = self.hasher()
        if self.params.verify == "estimate":
            return signature_column(hasher.signatures(texts, langs))
        return shingle_sets(hasher.shingles(texts, langs))

    def similarity(self, a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Row-wise similarity of two payload columns, compared with `threshold` as `fuzzy_duplicates` does."""
        if self.params.verify == "estimate":
            # float32, as bucket_pairs rounds its estimates: the same pairs pass for any num_perm
            return estimated_jaccard(signatures_from_column(a), signatures_from_column(b)).astype(np.float32)
        return shingle_sets_jaccard(a, b)

    def signatures(self, documents: pa.Table) -> np.ndarray:
        return self.hasher().signatures(documents.column("text"), languages(documents))

    def result(self, documents: pa.Table, signatures: np.ndarray | None = None) -> CorpusResult:
        """Near-duplicates among `documents` (`id`, `text`, score column, `lang` where present): what the Ray
        plan must equal."""
        score = self.scores(documents) if self.params.score_column else None
        removed, _ = fuzzy_duplicates(documents.column("id"), documents.column("text"), score, settings=self.params,
                                      langs=languages(documents), signatures=signatures,
                                      groups=language_groups_of(documents))
        removals = near_duplicate_removals(removed.column("id"), removed.column("survivor_id"),
                                           removed.column("cluster"))
        return CorpusResult(removals, documents.num_rows, REWRITES.empty_table(), {})

    def added_columns(self) -> dict[str, pa.Scalar]:
        return {CLUSTER_SIZE: pa.scalar(1, pa.int64())} if self.params.cluster_size else {}

    def added_values(self, removals: pa.Table, earlier: pa.Table) -> pa.Table:
        """Each survivor of a cluster and the cluster's size: itself and the documents removed for it, each with the
        exact copies `exact_dedup` removed before (FineWeb-2, which has no exact stage, counts them: a text three
        times verbatim was a cluster of 1, rehydrated as one copy where a near pair was two)."""
        copies = earlier.filter(pc.equal(earlier.column("reason"), DUPLICATE))
        exact = Counter(pc.extract_regex(copies.column("detail"), r"^kept (?P<survivor>.+)$").combine_chunks()
                        .field("survivor").to_pylist())
        survivors = pc.extract_regex(removals.column("detail"), DETAIL.pattern).combine_chunks().field("survivor")
        sizes = {kept: 1 + n for kept, n in exact.items()}  # each document's own: itself and its exact copies
        for removed, kept in zip(removals.column("id").to_pylist(), survivors.to_pylist(), strict=True):
            sizes[kept] = sizes.get(kept, 1) + sizes.pop(removed, 1)
        ids = sorted(sizes)
        return pa.table({"id": pa.array(ids, pa.string()), CLUSTER_SIZE: pa.array([sizes[i] for i in ids], pa.int64())})


# --------------------------------------------------------------------------------------------- steps


def languages(documents: pa.Table) -> pa.ChunkedArray | None:
    """The documents' `lang` column, None where they have none (no `langid` stage)."""
    return documents.column(LANG) if LANG in documents.column_names else None


def language_groups_of(documents: pa.Table) -> pa.Array | None:
    """`by_language`'s group of each document: its language, a mixed one's languages (`language_groups`)."""
    if LANG not in documents.column_names:
        return None
    spans = documents.column(PARAGRAPHS) if PARAGRAPHS in documents.column_names else None
    return language_groups(documents.column(LANG), spans, documents.column("text"))


def band_rows(signed: pa.Table) -> pa.Table:
    """One (`key`, `id`) row per usable document and band: the rows the bucket shuffle moves."""
    usable = signed.filter(signed.column("usable"))
    keys = pc.list_flatten(usable.column("keys").combine_chunks())
    lengths = pc.list_value_length(usable.column("keys")).to_numpy(zero_copy_only=False)
    rows = np.repeat(np.arange(usable.num_rows), lengths)
    return pa.table({"key": keys, "id": as_string_array(usable.column("id")).take(pa.array(rows))})


def shingle_sets(shingles: Shingles) -> pa.ListArray:
    """Each document's distinct shingle hashes, sorted, as a list column (the exact-verification payload)."""
    sets = shingles.unique_sets()
    return pa.ListArray.from_arrays(pa.array(sets.offsets.astype(np.int32)), pa.array(sets.hashes))


def shingle_sets_jaccard(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Row-wise Jaccard similarity of two columns of distinct-hash lists (`shingle_sets`).

    `pairs_jaccard` itself, so the same pairs pass as in `fuzzy_duplicates`: one `np.intersect1d` per
    pair (~12 us for 1,000-shingle sets). A single sort over all pairs measured ~20x slower: it
    throws away that every set is sorted already.
    """
    a, b = combined(a), combined(b)
    n = len(a)
    hashes = np.concatenate([pc.list_flatten(a).to_numpy(), pc.list_flatten(b).to_numpy()]).astype(np.uint64)
    sizes = np.concatenate([pc.list_value_length(a).to_numpy(zero_copy_only=False),
                            pc.list_value_length(b).to_numpy(zero_copy_only=False)]).astype(np.int64)
    sets = Shingles(hashes, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    return pairs_jaccard(sets, np.arange(n), np.arange(n, 2 * n))


def cluster_names(labels: np.ndarray) -> pa.Array:
    """A component's label (its smallest node, int64) as the 16 hex digits of its unsigned value."""
    return pa.array([f"{c:016x}" for c in np.asarray(labels, dtype=np.int64).view(np.uint64).tolist()], pa.string())


def survivors(cluster: np.ndarray, ids: TextColumn, scores: pa.Array | pa.ChunkedArray) -> pa.Table:
    """REMOVALS of complete clusters (int64 labels): all but the highest score, then smallest id, per cluster."""
    removed = choose_survivors(pa.array(np.asarray(cluster, dtype=np.int64)), ids, scores)
    return near_duplicate_removals(removed.column("id"), removed.column("survivor_id"),
                                   cluster_names(removed.column("key").to_numpy()))


def near_duplicate_removals(ids: TextColumn, survivor_ids: TextColumn, clusters: TextColumn) -> pa.Table:
    """REMOVALS rows: reason `near_duplicate`, detail `kept <survivor id> (cluster <hex>)`."""
    ids, survivor_ids, clusters = as_string_array(ids), as_string_array(survivor_ids), as_string_array(clusters)
    detail = pc.binary_join_element_wise("kept ", survivor_ids, " (cluster ", clusters, ")", "")
    return pa.table({"id": ids, "reason": pa.array([REASON] * len(ids), pa.string()), "detail": detail},
                    schema=REMOVALS)


def parse_detail(detail: str) -> tuple[str, str]:
    """(survivor id, cluster) of a `near_duplicate` reject's detail."""
    match = DETAIL.match(detail)
    if match is None:
        msg = f"not a near_duplicate detail: {detail!r}"
        raise ValueError(msg)
    return match["survivor"], match["cluster"]
