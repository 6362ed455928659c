"""Connected components of the duplicate graph without one process holding all edges.

The distributed algorithm is large-star / small-star (Kiveris et al., "Connected Components in
MapReduce and Beyond", SoCC 2014): O(log^2 n) rounds, each round a map over edges and a group-by on
a node key. Every function below is pure over numpy arrays and needs only the rows of the keys it
is given, so the Ray layer runs a step as: `*_map` on every block of edges, a shuffle that puts all
rows of one key in one place (hash partitioning or `groupby(key)`), `*_reduce` per partition, and
sums the `changes` of all partitions. When a large-star and the small-star after it both change
nothing, every component is a star around its smallest node and `star_labels` reads the labels off.

Nodes are int64 (`node_ids` maps document ids to them). Labels are the smallest node of each
component, so they do not depend on partitioning, order or round count. `union_find_components` is
the single-process reference (numpy, vectorised hooking with pointer jumping).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import xxhash

from curation.dedup.exact import TextColumn, as_string_array

Edges = tuple[np.ndarray, np.ndarray]


def node_ids(ids: TextColumn) -> np.ndarray:
    """int64 node of each document id: its xxh3-64 hash, so any worker maps an id the same way.

    Two of n ids share a node with probability ~n^2 / 2^65 (1e-8 for a million documents, 3e-4 for
    a hundred million); keep the (id, node) pairs to join labels back to documents.
    """
    digest = xxhash.xxh3_64_intdigest
    ids = as_string_array(ids).cast(pa.binary())
    return np.fromiter((digest(i) for i in ids.to_pylist()), dtype=np.uint64, count=len(ids)).view(np.int64)


def _as_int64(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def _unique_pairs(key: np.ndarray, value: np.ndarray) -> Edges:
    """Distinct (key, value) rows, sorted by key then value."""
    if not len(key):
        return key, value
    order = np.lexsort((value, key))
    key, value = key[order], value[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = (key[1:] != key[:-1]) | (value[1:] != value[:-1])
    return key[first], value[first]


def _segment_min(key: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For key-sorted rows: per-row index of its key's segment, the segment starts and each segment's min value."""
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    segment = np.cumsum(np.concatenate([[True], key[1:] != key[:-1]])) - 1
    return segment, starts, np.minimum.reduceat(value, starts)


def drop_self_loops(src: np.ndarray, dst: np.ndarray) -> Edges:
    keep = src != dst
    return _as_int64(src[keep]), _as_int64(dst[keep])


# ------------------------------------------------------------------------------------------- large star


def large_star_map(src: np.ndarray, dst: np.ndarray) -> Edges:
    """Both directions of every edge, as (key, neighbour): each node sees all its neighbours."""
    src, dst = drop_self_loops(src, dst)
    return np.concatenate([src, dst]), np.concatenate([dst, src])


def large_star_reduce(key: np.ndarray, neighbour: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Per node u: link every larger neighbour to m(u), the smallest of u and its neighbours.

    Needs all rows of each key it sees. Returns edges (larger node, m(u)) and how many differ from
    the input edge (v, u), i.e. the rows where u was not its own neighbourhood's minimum.
    """
    key, neighbour = _unique_pairs(_as_int64(key), _as_int64(neighbour))
    if not len(key):
        return key, neighbour, 0
    segment, _, seg_min = _segment_min(key, neighbour)
    m = np.minimum(seg_min[segment], key)
    larger = neighbour > key
    changes = int(np.count_nonzero(larger & (m < key)))
    return neighbour[larger], m[larger], changes


# ------------------------------------------------------------------------------------------- small star


def small_star_map(src: np.ndarray, dst: np.ndarray) -> Edges:
    """Every edge once, keyed by its larger end: (larger, smaller)."""
    src, dst = drop_self_loops(src, dst)
    return np.maximum(src, dst), np.minimum(src, dst)


def small_star_reduce(key: np.ndarray, neighbour: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Per node u with smaller neighbours N: link u and all of N to m = min(N).

    Needs all rows of each key it sees. A node with one smaller neighbour keeps its edge; one with
    k >= 2 rewires them, counted as k - 1 changes.
    """
    key, neighbour = _unique_pairs(_as_int64(key), _as_int64(neighbour))
    if not len(key):
        return key, neighbour, 0
    segment, starts, seg_min = _segment_min(key, neighbour)
    sizes = np.diff(np.append(starts, len(key)))
    m = seg_min[segment]
    # Edges (v, m) for every smaller neighbour v != m, plus (u, m) once per node.
    others = neighbour != m
    src = np.concatenate([neighbour[others], key[starts]])
    dst = np.concatenate([m[others], seg_min])
    changes = int(np.sum(sizes[sizes > 1] - 1))
    return src, dst, changes


# ------------------------------------------------------------------------------------------- labels


def star_labels(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, label) of every node of converged star edges (leaf, centre): the centre labels itself."""
    src, dst = drop_self_loops(src, dst)
    leaves = np.stack([src, dst], axis=1)
    centres = np.unique(dst)
    pairs = np.concatenate([leaves, np.stack([centres, centres], axis=1)])
    node, label = _unique_pairs(pairs[:, 0], pairs[:, 1])
    if len(node) and (node[1:] == node[:-1]).any():
        msg = "edges are not converged stars: a node has two labels"
        raise ValueError(msg)
    return node, label


def node_partition(key: np.ndarray, n_partitions: int) -> np.ndarray:
    """Hash partition of int64 nodes (what a shuffle by node does), used by `star_components` to prove
    locality and by the Ray layer's shuffles by node, pair end or cluster."""
    from curation.dedup.exact import fmix64

    return (fmix64(_as_int64(key).view(np.uint64)) % np.uint64(n_partitions)).astype(np.int64)


def _shuffled_reduce(
    reduce: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, int]],
    key: np.ndarray, value: np.ndarray, n_partitions: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Run `reduce` on each hash partition separately and concatenate, as a shuffle would."""
    if n_partitions <= 1:
        return reduce(key, value)
    part = node_partition(key, n_partitions)
    srcs, dsts, changes = [], [], 0
    for p in range(n_partitions):
        mask = part == p
        s, d, c = reduce(key[mask], value[mask])
        srcs.append(s)
        dsts.append(d)
        changes += c
    return np.concatenate(srcs), np.concatenate(dsts), changes


def star_components(src: np.ndarray, dst: np.ndarray, *, n_partitions: int = 1,
                    max_rounds: int = 100) -> tuple[np.ndarray, np.ndarray, int]:
    """(node, label, rounds) by alternating large-star and small-star, each reduce run per hash partition.

    The single-process driver of the distributed algorithm: the Ray layer replaces the loop body by
    its shuffles. Only nodes on some edge get a label (singletons are not duplicates of anything).
    """
    src, dst = drop_self_loops(_as_int64(src), _as_int64(dst))
    for rounds in range(1, max_rounds + 1):
        src, dst, large_changes = _shuffled_reduce(large_star_reduce, *large_star_map(src, dst), n_partitions)
        src, dst, small_changes = _shuffled_reduce(small_star_reduce, *small_star_map(src, dst), n_partitions)
        if large_changes == 0 and small_changes == 0:
            node, label = star_labels(src, dst)
            return node, label, rounds
    msg = f"connected components did not converge in {max_rounds} rounds"
    raise RuntimeError(msg)


# ------------------------------------------------------------------------------------------- reference


def union_find_components(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, label = smallest node of its component) in one process: the reference for tests.

    Vectorised union-find: hook each edge's larger root under its smaller root (`np.minimum.at`),
    then pointer-jump until every node points at a root; repeat until no edge joins two roots.
    """
    src, dst = _as_int64(src), _as_int64(dst)
    nodes, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
    a, b = inverse[: len(src)], inverse[len(src):]
    parent = np.arange(len(nodes))  # nodes are sorted, so a smaller index is a smaller node
    while True:
        ra, rb = parent[a], parent[b]
        differ = ra != rb
        if not differ.any():
            break
        lo, hi = np.minimum(ra[differ], rb[differ]), np.maximum(ra[differ], rb[differ])
        np.minimum.at(parent, hi, lo)
        while True:
            jumped = parent[parent]
            if (jumped == parent).all():
                break
            parent = jumped
    return nodes, nodes[parent]
