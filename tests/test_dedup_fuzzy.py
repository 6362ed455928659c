"""The whole fuzzy dedup without Ray: one survivor per near-duplicate group, identical for any
shard order and partition count (what the Ray layer must reproduce)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curation.dedup.minhash import MinHasher, fuzzy_duplicates, signature_column, signatures_from_column

VOCAB = [f"w{i}" for i in range(20_000)]


def corpus(seed: int = 11) -> tuple[list[str], list[str], np.ndarray, dict[str, int]]:
    """40 groups of 4 near-copies (~1% of words changed) and 200 unrelated documents."""
    rng = np.random.default_rng(seed)
    ids, texts, group = [], [], {}
    for g in range(40):
        base = rng.integers(0, len(VOCAB), 300)
        for v in range(4):
            words = base.copy()
            if v:
                pos = rng.choice(300, 3, replace=False)
                words[pos] = rng.integers(0, len(VOCAB), 3)
            doc_id = f"{rng.integers(1 << 40):011x}"
            ids.append(doc_id)
            texts.append(" ".join(VOCAB[w] for w in words))
            group[doc_id] = g
    for _ in range(200):
        ids.append(f"{rng.integers(1 << 40):011x}")
        texts.append(" ".join(VOCAB[w] for w in rng.integers(0, len(VOCAB), 300)))
    scores = rng.choice([0.2, 0.5, 0.8], len(ids))
    return ids, texts, scores, group


def test_one_survivor_per_group_with_the_best_score():
    ids, texts, scores, group = corpus()
    removed, pairs = fuzzy_duplicates(ids, texts, scores, threshold=0.7)
    assert pairs.num_rows > 0
    score = dict(zip(ids, scores, strict=True))
    survivors = set(removed.column("survivor_id").to_pylist())
    assert len(survivors) == 40 and removed.num_rows == 120
    for row in removed.to_pylist():
        assert group[row["id"]] == group[row["survivor_id"]]
        assert (-score[row["survivor_id"]], row["survivor_id"]) < (-score[row["id"]], row["id"])
    clusters = {}
    for row in removed.to_pylist():
        clusters.setdefault(row["cluster"], set()).add(row["survivor_id"])
    assert all(len(s) == 1 for s in clusters.values())


def test_same_survivors_for_any_shard_order_and_partition_count():
    ids, texts, scores, _ = corpus(3)
    reference, _ = fuzzy_duplicates(ids, texts, scores, threshold=0.8)
    for seed, partitions in ((1, 2), (2, 3), (3, 1)):
        order = np.random.default_rng(seed).permutation(len(ids))
        got, _ = fuzzy_duplicates([ids[i] for i in order], [texts[i] for i in order], scores[order],
                                  threshold=0.8, n_partitions=partitions)
        assert got.equals(reference)
    estimate, _ = fuzzy_duplicates(ids, texts, scores, threshold=0.8, verify="estimate", n_partitions=2)
    assert set(estimate.column("id").to_pylist()) == set(reference.column("id").to_pylist())


def test_signatures_survive_an_arrow_round_trip():
    sigs = MinHasher(num_perm=16).signatures(["a b c d e f", "x y z"])
    column = signature_column(sigs)
    assert column.type == pa.list_(pa.uint32(), 16)
    assert (signatures_from_column(pa.chunked_array([column])) == sigs).all()
