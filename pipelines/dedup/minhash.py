"""`minhash_dedup` on Ray: signatures in batches, then buckets, verification and components as shuffles.

Every shuffle is the same move: rows get a `part` column (`node_partition` of a hash key; P
partitions, 4 per CPU or one per 50,000 documents, whichever is more) and
`groupby("part").map_groups(fn)` hands `fn` a whole partition as one Arrow table, so Python runs once
per partition: never per bucket, pair or node. Ray Data's sort-based shuffle runs them
(`pipelines.dedup.sort_shuffle` says why not the hash shuffle). The steps (functions of
`curation.dedup.minhash_dedup` and `curation.dedup` do the work):

1. signatures: `map_batches` over the curated documents -> `MinhashDedup.signed` (id, node, score,
   band keys); materialised: its row count is the number of documents seen.
2. buckets: one row per (document, band) partitioned by band key; `bucket_pairs` per partition gives
   candidate pairs (a pair sharing several bands comes out of several partitions).
3. candidates: the driver collects the distinct nodes (int64) of documents in some candidate pair, to
   select the documents whose payload travels (8 bytes per candidate, never the pairs themselves).
4. verification (`verify: exact | estimate`): pairs and payload rows (a candidate's distinct shingle
   hashes, or its signature) partitioned by `id_a`: pairs are deduplicated (every copy of a pair has
   the same `id_a`) and get `payload_a`; then partitioned by `id_b`, they get `payload_b` and the
   similarity decides. `verify: none` only deduplicates.
5. connected components: large-star and small-star rounds (`curation.dedup.components`), each reduce
   a shuffle by node whose output is already mapped for the next one; a round ends with the sum of
   the partitions' changes and the loop stops when a large-star and the small-star after it change
   nothing (every component is then a star around its smallest node).
6. survivors: per node its label (the smallest node of its closed neighbourhood in the stars) joined
   with the members' (node, id, score) rows, then partitioned by cluster: `choose_survivors`.

The answer is the set computed by `curation.dedup.minhash.fuzzy_duplicates` in one process, for any
number of workers, partitions or input order.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray

from curation.dedup.components import (
    large_star_map,
    large_star_reduce,
    node_ids,
    node_partition,
    small_star_map,
    small_star_reduce,
)
from curation.dedup.corpus_stage import REMOVALS, REWRITES, CorpusResult
from curation.dedup.minhash import bucket_pairs
from curation.dedup.minhash_dedup import MinhashDedup, band_rows, languages, survivors
from pipelines.dedup import sort_shuffle, stage_columns

if TYPE_CHECKING:
    from ray.data import Dataset

PARTITIONS_PER_CPU = 4
DOCUMENTS_PER_PARTITION = 50_000  # ~700k band rows (~25 MB) per partition call at 14 bands
MAX_ROUNDS = 64  # O(log^2 n) rounds suffice: 15 for a 4,000-node path (tests/dedup/test_components.py)
PART = "part"
EDGES = pa.schema([(PART, pa.int64()), ("key", pa.int64()), ("value", pa.int64()), ("changes", pa.int64())])
MEMBERS = pa.schema([(PART, pa.int64()), ("node", pa.int64()), ("neighbour", pa.int64()), ("id", pa.string()),
                     ("score", pa.float64())])

log = logging.getLogger(__name__)


@dataclass
class FuzzyReport:
    """What one fuzzy dedup did: its removals and the size of every intermediate."""

    removals: pa.Table
    seen: int = 0
    bands: int = 0
    rows: int = 0
    band_rows: int = 0
    candidate_pairs: int = 0  # distinct pairs sharing a bucket
    verified_pairs: int = 0
    rounds: int = 0
    clustered: int = 0  # documents in a cluster of two or more
    seconds: dict[str, float] = field(default_factory=dict)


def removals(files: list[str], name: str, stage: MinhashDedup, earlier: pa.Table) -> CorpusResult:
    """The near-duplicates `stage` removes among `files`; `earlier` holds the ids removed by earlier stages."""
    report = fuzzy_dedup(files, stage, earlier.column("id").combine_chunks())
    log.info("%s: %d seen, %d candidate pairs, %d verified, %d rounds, %d removed", name, report.seen,
             report.candidate_pairs, report.verified_pairs, report.rounds, report.removals.num_rows)
    return CorpusResult(report.removals, report.seen, REWRITES.empty_table(), {})


def fuzzy_dedup(files: list[str], stage: MinhashDedup, removed: pa.Array | None = None, *,
                partitions: int | None = None) -> FuzzyReport:
    """The whole fuzzy dedup of the documents in `files` (Parquet: id, text, source, score column).

    `removed`: ids to leave out (removed by earlier stages); `partitions`: hash partitions of every
    shuffle (default: 4 per CPU of the cluster, more for large corpora); the result is the same for any number.
    """
    with sort_shuffle():
        return _fuzzy_dedup(files, stage, removed, partitions)


def _fuzzy_dedup(files: list[str], stage: MinhashDedup, removed: pa.Array | None,
                 partitions: int | None) -> FuzzyReport:
    removed = pa.array([], pa.string()) if removed is None else removed
    bands, rows = stage.lsh()
    report = FuzzyReport(REMOVALS.empty_table(), bands=bands, rows=rows)
    clock = _Clock(report.seconds)
    columns = stage_columns(files, stage)
    signed = ray.data.read_parquet(files).select_columns(columns).map_batches(
        _sign, batch_size=4096, batch_format="pyarrow", fn_kwargs={"stage": stage, "removed": removed}).materialize()
    report.seen = signed.count()
    clock("signatures")
    if not report.seen:
        return report
    partitions = partitions or _partitions(report.seen)
    keyed = signed.map_batches(_band_rows, batch_format="pyarrow", fn_kwargs={"partitions": partitions})
    pairs = _shuffle(keyed, _bucket_pairs, partitions).materialize()
    report.band_rows = _sum(pairs, "band_rows")
    nodes = _candidate_nodes(pairs)
    clock("buckets")
    if not len(nodes):
        return report
    edges = _verified_edges(files, columns, stage, removed, pairs, nodes, partitions).materialize()
    report.candidate_pairs, report.verified_pairs = _sum(edges, "candidates"), _sum(edges, "verified")
    clock("verification")
    if not report.verified_pairs:
        return report
    edges, report.rounds = _components(edges.select_columns(EDGES.names), partitions)
    clock("components")
    report.removals, report.clustered = _survivors(edges, signed, nodes, partitions)
    clock("survivors")
    return report


def _partitions(documents: int) -> int:
    """Enough partitions to keep every CPU busy and each partition call small, whatever the corpus size."""
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return max(cpus * PARTITIONS_PER_CPU, -(-documents // DOCUMENTS_PER_PARTITION))


class _Clock:
    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds, self.last = seconds, time.perf_counter()

    def __call__(self, step: str) -> None:
        now = time.perf_counter()
        self.seconds[step] = round(now - self.last, 3)
        self.last = now


# --------------------------------------------------------------------------------------------- plumbing


def _shuffle(ds: Dataset, fn: Any, partitions: int, **kwargs: Any) -> Dataset:
    """All rows of each `part` value in one call of `fn` (whole partitions: one Python call each)."""
    return ds.groupby(PART, num_partitions=partitions).map_groups(fn, batch_format="pyarrow", fn_kwargs={
        "partitions": partitions, **kwargs})


def _sum(ds: Dataset, column: str) -> int:
    """Sum of a tally column: a map over the blocks, not `Dataset.sum` (a 200-partition shuffle, ~4 s)."""
    sums = ray.get(ds.map_batches(_column_sum, batch_size=None, batch_format="pyarrow",
                                  fn_kwargs={"column": column}).to_arrow_refs())
    return sum(_sum_column(t, column) for t in sums if t.num_rows)


def _column_sum(block: pa.Table, column: str) -> pa.Table:
    return pa.table({column: [_sum_column(block, column)]})


def _part(nodes: np.ndarray, partitions: int) -> pa.Array:
    return pa.array(node_partition(nodes, partitions), pa.int64())


def _tally(table: pa.Table, **counts: int) -> pa.Table:
    """Counters ride along as columns: the value on the first row, zeros below (summed by `_sum`).

    A partition with counts but no rows gets one row of nulls (partition 0) to carry them; every
    step skips rows whose key is null.
    """
    if not table.num_rows and any(counts.values()):
        table = pa.Table.from_pylist([{PART: 0}], schema=table.schema)
    for name, count in counts.items():
        values = np.zeros(table.num_rows, dtype=np.int64)
        if table.num_rows:
            values[0] = count
        table = table.append_column(name, pa.array(values))
    return table


def _member(node: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Mask of `node` values present in the sorted array `nodes`."""
    if not len(nodes):
        return np.zeros(len(node), dtype=bool)
    at = np.minimum(np.searchsorted(nodes, node), len(nodes) - 1)
    return nodes[at] == node


def _lookup(keys: pa.ChunkedArray, docs: pa.Table, key: str, value: str) -> pa.ChunkedArray:
    """`docs[value]` at the row whose `docs[key]` equals each of `keys` (a vectorised join)."""
    at = pc.index_in(keys, value_set=docs.column(key).combine_chunks())
    if at.null_count:
        msg = f"{at.null_count} pair ends have no document row in their partition"
        raise RuntimeError(msg)
    return docs.column(value).take(at)


# --------------------------------------------------------------------------------------------- steps 1-3


def _sign(batch: pa.Table, stage: MinhashDedup, removed: pa.Array) -> pa.Table:
    return stage.signed(stage.sees(batch, removed))


def _band_rows(signed: pa.Table, partitions: int) -> pa.Table:
    rows = band_rows(signed)
    part = _part(rows.column("key").to_numpy().view(np.int64), partitions)
    return rows.append_column(PART, part)


def _bucket_pairs(rows: pa.Table, partitions: int) -> pa.Table:
    """Candidate pairs of the complete buckets of one partition, partitioned by `id_a` for the next step."""
    pairs = bucket_pairs(rows.select(["key", "id"]))
    return _tally(pairs.append_column(PART, _part(node_ids(pairs.column("id_a")), partitions)),
                  band_rows=rows.num_rows)


def _end_nodes(pairs: pa.Table) -> pa.Table:
    pairs = pairs.filter(pc.is_valid(pairs.column("id_a")))
    ends = pa.concat_arrays([pairs.column("id_a").combine_chunks(), pairs.column("id_b").combine_chunks()])
    return pa.table({"node": np.unique(node_ids(ends))})


def _candidate_nodes(pairs: Dataset) -> np.ndarray:
    """Sorted distinct nodes of all documents in a candidate pair, gathered on the driver (8 bytes each)."""
    tables = ray.get(pairs.map_batches(_end_nodes, batch_format="pyarrow").to_arrow_refs())
    nodes = [t.column("node").to_numpy() for t in tables if t.num_rows]
    return np.unique(np.concatenate(nodes)) if nodes else np.zeros(0, dtype=np.int64)


# --------------------------------------------------------------------------------------------- step 4


def _payload_rows(batch: pa.Table, stage: MinhashDedup, removed: pa.Array, nodes: np.ndarray,
                  partitions: int) -> pa.Table:
    """(part by id, id, payload) of the candidate documents of a batch."""
    batch = stage.sees(batch, removed)
    node = node_ids(batch.column("id"))
    keep = _member(node, nodes)
    batch = batch.filter(pa.array(keep))
    return pa.table({PART: _part(node[keep], partitions), "id": batch.column("id"),
                     "payload": stage.payload(batch.column("text"), languages(batch))})


def _first_schema(payload: pa.DataType) -> pa.Schema:
    return pa.schema([(PART, pa.int64()), ("id_a", pa.string()), ("id_b", pa.string()), ("payload_a", payload)])


def _pair_schema(payload: pa.DataType) -> pa.Schema:
    return _first_schema(payload).append(pa.field("payload_b", payload))


def _second_schema(payload: pa.DataType) -> pa.Schema:
    """Rows of the second verification shuffle: pairs carry the `candidates` tally of the first."""
    return _pair_schema(payload).append(pa.field("candidates", pa.int64()))


def _pairs_for_first(pairs: pa.Table, payload: pa.DataType) -> pa.Table:
    pairs = pairs.filter(pc.is_valid(pairs.column("id_a")))
    return pa.table({PART: pairs.column(PART), "id_a": pairs.column("id_a"), "id_b": pairs.column("id_b"),
                     "payload_a": pa.nulls(pairs.num_rows, payload)}, schema=_first_schema(payload))


def _docs_for_first(docs: pa.Table, payload: pa.DataType) -> pa.Table:
    return pa.table({PART: docs.column(PART), "id_a": docs.column("id"), "id_b": pa.nulls(docs.num_rows, pa.string()),
                     "payload_a": docs.column("payload")}, schema=_first_schema(payload))


def _docs_for_second(docs: pa.Table, payload: pa.DataType) -> pa.Table:
    n = docs.num_rows
    return pa.table({PART: docs.column(PART), "id_a": pa.nulls(n, pa.string()), "id_b": docs.column("id"),
                     "payload_a": pa.nulls(n, payload), "payload_b": docs.column("payload"),
                     "candidates": pa.array(np.zeros(n, dtype=np.int64))}, schema=_second_schema(payload))


def _distinct_pairs(rows: pa.Table) -> pa.Table:
    pairs = rows.filter(pc.is_valid(rows.column("id_b")))
    return pairs.select(["id_a", "id_b"]).group_by(["id_a", "id_b"]).aggregate([])


def _attach_first(rows: pa.Table, stage: MinhashDedup, partitions: int) -> pa.Table:
    """One partition by `id_a`: distinct pairs with `payload_a`, partitioned by `id_b` for `_attach_second`."""
    pairs = _distinct_pairs(rows)
    docs = rows.filter(pc.is_null(rows.column("id_b")))
    payload = stage.payload_type()
    out = pa.table({PART: _part(node_ids(pairs.column("id_b")), partitions), "id_a": pairs.column("id_a"),
                    "id_b": pairs.column("id_b"), "payload_a": _lookup(pairs.column("id_a"), docs, "id_a", "payload_a"),
                    "payload_b": pa.nulls(pairs.num_rows, payload)}, schema=_pair_schema(payload))
    return _tally(out, candidates=pairs.num_rows)


def _attach_second(rows: pa.Table, stage: MinhashDedup, partitions: int) -> pa.Table:
    """One partition by `id_b`: the pairs' `payload_b`, their similarity, and the verified edges."""
    is_doc = pc.is_null(rows.column("id_a"))
    docs, pairs = rows.filter(is_doc), rows.filter(pc.invert(is_doc))
    similarity = stage.similarity(pairs.column("payload_a"), _lookup(pairs.column("id_b"), docs, "id_b", "payload_b"))
    verified = pairs.filter(pa.array(similarity >= stage.params.threshold))
    edges = _edges(node_ids(verified.column("id_a")), node_ids(verified.column("id_b")), partitions)
    return _tally(edges, candidates=_sum_column(rows, "candidates"), verified=verified.num_rows)


def _dedup_only(rows: pa.Table, partitions: int) -> pa.Table:
    """`verify: none`: one partition by `id_a`, every distinct candidate pair is an edge."""
    pairs = _distinct_pairs(rows)
    edges = _edges(node_ids(pairs.column("id_a")), node_ids(pairs.column("id_b")), partitions)
    return _tally(edges, candidates=pairs.num_rows, verified=pairs.num_rows)


def _sum_column(table: pa.Table, column: str) -> int:
    return int(pc.sum(table.column(column)).as_py() or 0)


def _verified_edges(files: list[str], columns: list[str], stage: MinhashDedup, removed: pa.Array, pairs: Dataset,
                    nodes: np.ndarray, partitions: int) -> Dataset:
    """Verified pairs as first-round large-star rows, with `candidates` and `verified` tallies."""
    if stage.params.verify == "none":
        return _shuffle(pairs, _dedup_only, partitions)
    payload = stage.payload_type()
    docs = ray.data.read_parquet(files).select_columns(columns).map_batches(
        _payload_rows, batch_size=4096, batch_format="pyarrow",
        fn_kwargs={"stage": stage, "removed": removed, "nodes": nodes, "partitions": partitions}).materialize()
    first = pairs.map_batches(_pairs_for_first, batch_format="pyarrow", fn_kwargs={"payload": payload}).union(
        docs.map_batches(_docs_for_first, batch_format="pyarrow", fn_kwargs={"payload": payload}))
    second = _shuffle(first, _attach_first, partitions, stage=stage).union(
        docs.map_batches(_docs_for_second, batch_format="pyarrow", fn_kwargs={"payload": payload}))
    return _shuffle(second, _attach_second, partitions, stage=stage)


# --------------------------------------------------------------------------------------------- step 5


def _edges(src: np.ndarray, dst: np.ndarray, partitions: int) -> pa.Table:
    """Edges mapped for the first large-star reduce: both directions, keyed and partitioned by node."""
    key, value = large_star_map(src, dst)
    return _edge_rows(key, value, partitions, 0)


def _edge_rows(key: np.ndarray, value: np.ndarray, partitions: int, changes: int) -> pa.Table:
    table = pa.table({PART: _part(key, partitions), "key": pa.array(key, pa.int64()),
                      "value": pa.array(value, pa.int64())})
    return _tally(table, changes=changes)


def _large_star(rows: pa.Table, partitions: int) -> pa.Table:
    rows = rows.filter(pc.is_valid(rows.column("key")))  # rows that only carry tallies
    src, dst, changes = large_star_reduce(rows.column("key").to_numpy(), rows.column("value").to_numpy())
    return _edge_rows(*small_star_map(src, dst), partitions, changes)


def _small_star(rows: pa.Table, partitions: int) -> pa.Table:
    src, dst, changes = small_star_reduce(rows.column("key").to_numpy(), rows.column("value").to_numpy())
    return _edge_rows(*large_star_map(src, dst), partitions, changes)


def _components(edges: Dataset, partitions: int) -> tuple[Dataset, int]:
    """Large-star/small-star rounds until one changes nothing: converged star edges (both directions), rounds."""
    for rounds in range(1, MAX_ROUNDS + 1):
        large = _shuffle(edges, _large_star, partitions).materialize()
        small = _shuffle(large.drop_columns(["changes"]), _small_star, partitions).materialize()
        if _sum(large, "changes") == 0 and _sum(small, "changes") == 0:
            return small, rounds
        edges = small.drop_columns(["changes"])
    msg = f"connected components did not converge in {MAX_ROUNDS} rounds"
    raise RuntimeError(msg)


# --------------------------------------------------------------------------------------------- step 6


def _star_rows(rows: pa.Table) -> pa.Table:
    n = rows.num_rows
    return pa.table({PART: rows.column(PART), "node": rows.column("key"), "neighbour": rows.column("value"),
                     "id": pa.nulls(n, pa.string()), "score": pa.nulls(n, pa.float64())}, schema=MEMBERS)


def _member_rows(signed: pa.Table, nodes: np.ndarray, partitions: int) -> pa.Table:
    node = signed.column("node").to_numpy()
    keep = _member(node, nodes)
    signed = signed.filter(pa.array(keep))
    return pa.table({PART: _part(node[keep], partitions), "node": signed.column("node"),
                     "neighbour": pa.nulls(signed.num_rows, pa.int64()), "id": signed.column("id"),
                     "score": signed.column("score")}, schema=MEMBERS)


def _label(rows: pa.Table, partitions: int) -> pa.Table:
    """One partition by node: each node's label (smallest of itself and its star neighbours) onto its document."""
    is_doc = pc.is_valid(rows.column("id"))
    docs, stars = rows.filter(is_doc), rows.filter(pc.invert(is_doc))
    nearest = stars.group_by("node").aggregate([("neighbour", "min")])
    label = np.minimum(nearest.column("node").to_numpy(), nearest.column("neighbour_min").to_numpy())
    at = pc.index_in(docs.column("node"), value_set=nearest.column("node").combine_chunks())
    docs = docs.filter(pc.is_valid(at))  # candidates whose pairs all failed verification are in no cluster
    cluster = label[pc.drop_null(at).to_numpy(zero_copy_only=False)]
    return pa.table({PART: _part(cluster, partitions), "cluster": pa.array(cluster, pa.int64()),
                     "id": docs.column("id"), "score": docs.column("score")})


def _choose(rows: pa.Table, partitions: int) -> pa.Table:
    """One partition by cluster: every member but the survivor, as REMOVALS with a `clustered` tally."""
    out = survivors(rows.column("cluster").to_numpy(), rows.column("id"), rows.column("score"))
    return _tally(out, clustered=rows.num_rows)


def _survivors(edges: Dataset, signed: Dataset, nodes: np.ndarray, partitions: int) -> tuple[pa.Table, int]:
    members = signed.map_batches(_member_rows, batch_format="pyarrow",
                                 fn_kwargs={"nodes": nodes, "partitions": partitions})
    labelled = _shuffle(edges.map_batches(_star_rows, batch_format="pyarrow").union(members), _label, partitions)
    tables = [t for t in ray.get(_shuffle(labelled, _choose, partitions).to_arrow_refs()) if t.num_rows]
    if not tables:
        return REMOVALS.empty_table(), 0
    table = pa.concat_tables(tables)
    clustered = _sum_column(table, "clustered")
    table = table.filter(pc.is_valid(table.column("id")))
    return table.drop_columns(["clustered"]).cast(REMOVALS).sort_by("id"), clustered
