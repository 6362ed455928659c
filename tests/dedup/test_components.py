"""Connected components: large-star/small-star over hash partitions equals union-find (and scipy)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from curation.dedup.components import (
    large_star_map,
    large_star_reduce,
    node_ids,
    node_partition,
    small_star_map,
    small_star_reduce,
    star_components,
    star_labels,
    union_find_components,
)


def random_graph(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 2000))
    nodes = rng.choice(2**62, n, replace=False).astype(np.int64) - 2**61  # negative ones too
    e = int(rng.integers(1, 2 * n))
    return nodes[rng.integers(0, n, e)], nodes[rng.integers(0, n, e)]


def on_edges(src: np.ndarray, dst: np.ndarray, node: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Restrict (node, label) to nodes on a non-loop edge (star_components labels only those)."""
    loop = src == dst
    keep = np.isin(node, np.concatenate([src[~loop], dst[~loop]]))
    return node[keep], label[keep]


@pytest.mark.parametrize("seed", range(12))
def test_star_components_equal_union_find_for_any_partitioning(seed):
    src, dst = random_graph(seed)
    ref_node, ref_label = on_edges(src, dst, *union_find_components(src, dst))
    for partitions in (1, 2, 5):
        node, label, _ = star_components(src, dst, n_partitions=partitions)
        assert (node == ref_node).all() and (label == ref_label).all()
    # The reference itself agrees with scipy on the number of components.
    nodes, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
    k = len(src)
    count, _ = connected_components(coo_matrix((np.ones(k), (inverse[:k], inverse[k:])), shape=(len(nodes),) * 2),
                                    directed=False)
    assert len(np.unique(union_find_components(src, dst)[1])) == count


def test_labels_are_the_smallest_member_and_long_chains_converge_fast():
    rng = np.random.default_rng(0)
    perm = rng.permutation(4000)
    src, dst = perm[:-1], perm[1:]  # one path through 4,000 nodes in random order
    node, label, rounds = star_components(src, dst, n_partitions=3)
    assert (label == 0).all() and len(node) == 4000
    assert rounds <= 15  # O(log^2 n) rounds, not O(diameter)


def test_edge_order_and_direction_do_not_matter():
    src, dst = random_graph(99)
    node, label, _ = star_components(src, dst)
    order = np.random.default_rng(1).permutation(len(src))
    node2, label2, _ = star_components(dst[order], src[order], n_partitions=4)
    assert (node == node2).all() and (label == label2).all()


def test_one_round_by_hand_reports_changes():
    # Path 3-1-2 plus edge 5-4: large-star links 3 and 2 to 1 (no change), keeps 5-4.
    src, dst = np.array([3, 1, 5]), np.array([1, 2, 4])
    s, d, changes = large_star_reduce(*large_star_map(src, dst))
    assert sorted(zip(s.tolist(), d.tolist(), strict=True)) == [(2, 1), (3, 1), (5, 4)] and changes == 0
    s, d, changes = small_star_reduce(*small_star_map(s, d))
    assert changes == 0
    node, label = star_labels(s, d)
    assert dict(zip(node.tolist(), label.tolist(), strict=True)) == {1: 1, 2: 1, 3: 1, 4: 4, 5: 4}
    # Star 1-2-3 seen from 3: 3 has two smaller neighbours, small-star rewires them (one change).
    s, d, changes = small_star_reduce(*small_star_map(np.array([3, 3]), np.array([1, 2])))
    assert changes == 1 and sorted(zip(s.tolist(), d.tolist(), strict=True)) == [(2, 1), (3, 1)]


def test_star_labels_rejects_unconverged_edges():
    with pytest.raises(ValueError, match="converged"):
        star_labels(np.array([3, 3]), np.array([1, 2]))


def test_node_ids_are_stable_and_spread():
    ids = [f"doc{i}" for i in range(10_000)]
    nodes = node_ids(ids)
    assert nodes.dtype == np.int64 and len(np.unique(nodes)) == len(ids)
    assert (node_ids(ids[::-1])[::-1] == nodes).all()
    assert np.bincount(node_partition(nodes, 4)).min() > 2300
