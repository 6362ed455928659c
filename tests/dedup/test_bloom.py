"""Sharded Bloom filters: exact on repeats, false positives within bounds; dolma-style paragraph dedup."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from curation.dedup.bloom import (
    BloomShard,
    ParagraphDedup,
    ShardedBloom,
    bytes_per_million,
    paragraph_outcome,
    shard_of,
    split_paragraphs,
)
from curation.dedup.exact import content_hash


def test_add_if_new_marks_first_occurrences_only():
    shard = BloomShard(capacity=1000)
    keys = np.array([5, 7, 5, 9, 7, 5], dtype=np.uint64)
    assert shard.add_if_new(keys).tolist() == [True, True, False, True, False, False]
    assert shard.add_if_new(np.array([9, 11], dtype=np.uint64)).tolist() == [False, True]
    assert shard.contains(np.array([11, 12], dtype=np.uint64)).tolist() == [True, False]
    assert shard.added == 4 and shard.seen == 4
    hashes = content_hash(["a", "b", "a"])
    assert BloomShard(10).add_if_new(hashes).tolist() == [True, True, False]


@pytest.mark.parametrize("scalable", [True, False])
def test_false_positive_rate_within_bounds(scalable):
    n, rate = 20_000, 0.01
    shard = BloomShard(capacity=n, error_rate=rate, scalable=scalable)
    keys = np.random.default_rng(0).integers(0, 2**62, n, dtype=np.int64).astype(np.uint64)
    new = shard.add_if_new(keys)
    assert new.mean() > 1 - 2 * rate  # a false positive reads a new key as seen
    measured = shard.measure_false_positive_rate(20_000)
    expected = shard.expected_false_positive_rate()
    assert measured <= 1.5 * rate and expected <= rate
    assert abs(measured - expected) < 0.004
    stats = shard.stats()
    assert 8 <= stats["bits_per_item"] <= 13  # ~9.6 bits per key at 1%
    if not scalable:
        with pytest.raises(IndexError):
            shard.add_if_new(np.arange(2**40, 2**40 + 1000, dtype=np.uint64))


def test_memory_per_million_follows_the_error_rate():
    assert 1_700_000 < bytes_per_million(0.001) < 1_900_000  # 1.44 log2(1/p) bits per key
    assert bytes_per_million(0.01) < bytes_per_million(0.001)


def test_shards_route_by_prefix_and_agree_with_one_filter():
    keys = content_hash([f"doc {i % 700}" for i in range(2000)])
    shard = shard_of(keys, 4)
    assert shard.dtype == np.int32 and set(shard.tolist()) == {0, 1, 2, 3}
    assert (shard_of(keys, 4) == shard).all()
    assert (ShardedBloom(4, 2000).add_if_new(keys) == BloomShard(2000).add_if_new(keys)).all()
    assert shard_of(np.array([2**63, 1], dtype=np.uint64), 2).tolist() == [0, 0]
    assert shard_of(np.array([(2**32) * 3], dtype=np.uint64), 2).tolist() == [1]


def test_paragraph_dedup_removes_repeated_lines_and_drops_mostly_repeated_documents():
    dedup = ParagraphDedup(capacity=1000, max_removed_share=0.5)
    texts = [
        "Navigation menu\nA first article about owls.\n\nShare this page",
        "Navigation menu\nA second article, about bats, which is longer.\nShare this page",
        "Navigation menu\nA first article about owls.\nShare this page",
        "Fresh\nFresh",
    ]
    out, drop, share = dedup.process(["a", "b", "c", "d"], texts)
    assert out.to_pylist()[:2] == [texts[0], "A second article, about bats, which is longer."]
    assert drop.tolist() == [False, False, True, False]  # c repeats all of a
    assert share[2] == 1.0 and 0.3 < share[1] < 0.5
    assert out.to_pylist()[3] == "Fresh" and share[3] == 0.5  # a line repeated within a document goes too


def test_paragraph_dedup_is_order_independent_within_a_batch():
    rng = np.random.default_rng(3)
    lines = [f"line number {i}" for i in range(40)]
    texts = ["\n".join(rng.choice(lines, 6)) for _ in range(60)]
    ids = [f"id{i:02d}" for i in range(60)]
    ref = ParagraphDedup(1000, n_shards=3).process(ids, texts)
    perm = rng.permutation(60)
    got = ParagraphDedup(1000, n_shards=2).process([ids[i] for i in perm], [texts[i] for i in perm])
    back = np.argsort(perm)
    assert got[0].take(pa.array(back)).equals(ref[0])
    assert (got[1][back] == ref[1]).all() and np.allclose(got[2][back], ref[2])


def test_split_and_outcome_are_the_distributed_halves():
    paragraphs = split_paragraphs(["x\n\n  y  \nlong enough line", "y"], min_chars=2)
    assert paragraphs.doc.tolist() == [0, 0, 0, 0, 1]
    assert paragraphs.key.null_count == 4  # blank line and the 1-character lines are exempt
    new = np.array([True, True, True, False, True])
    texts, drop, share = paragraph_outcome(2, paragraphs, new)
    assert texts.to_pylist() == ["x\n\n  y  ", "y"] and drop.tolist() == [True, False] and share.tolist() == [1.0, 0.0]
