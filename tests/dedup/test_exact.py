"""Exact dedup keys and the shared survivor rule: equal texts meet, survivors never depend on order."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curation.dedup.exact import choose_survivors, content_hash, normalize_text


def test_normalization_makes_recased_and_rewrapped_copies_equal():
    texts = ["Hello,   World!\n", "hello, world!", "HELLO,\tWORLD!", "Hello World", None, ""]
    keys = content_hash(texts).to_pylist()
    assert keys[0] == keys[1] == keys[2]
    assert keys[3] != keys[0]  # punctuation counts by default
    assert keys[4] == keys[5]  # a missing text hashes as the empty one
    loose = content_hash(texts, strip_punctuation=True).to_pylist()
    assert loose[0] == loose[3]
    assert normalize_text(["  A\u00a0 b\u2003C  "]).to_pylist() == ["a b c"]
    assert content_hash(["Größe"]).type == pa.binary(16)
    assert content_hash(["Größe"]) != content_hash(["Grosse"])
    # a copy typed decomposed (NFD: o + U+0308) is the same text
    assert content_hash(["Gro\u0308ße"]).to_pylist() == content_hash(["Größe"]).to_pylist()


def test_survivor_is_best_score_then_smallest_id():
    keys = ["k1", "k1", "k1", "k2", "k2", "k3"]
    ids = ["d", "b", "c", "x", "a", "solo"]
    scores = [0.5, 0.9, 0.9, None, 0.1]
    out = choose_survivors(pa.array(keys), ids, pa.array([*scores, 1.0]))
    got = {r["id"]: (r["survivor_id"], r["key"]) for r in out.to_pylist()}
    # k1: b and c tie on 0.9, b is smaller; k2: a null score ranks below 0.1.
    assert got == {"c": ("b", "k1"), "d": ("b", "k1"), "x": ("a", "k2")}
    without_scores = choose_survivors(pa.array(keys), ids)
    assert set(without_scores.column("survivor_id").to_pylist()) == {"b", "a"}


def test_survivors_identical_in_any_row_order_and_split():
    rng = np.random.default_rng(7)
    n = 5000
    keys = content_hash([f"text {k}" for k in rng.integers(0, 800, n)])
    ids = [f"id{i:05d}" for i in rng.permutation(n)]
    scores = rng.choice([0.1, 0.5, 0.9, np.nan], n)
    reference = choose_survivors(keys, ids, scores).sort_by("id")
    assert reference.num_rows == n - len(set(keys.to_pylist()))
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(n)
        shuffled = choose_survivors(keys.take(pa.array(perm)), [ids[i] for i in perm], scores[perm])
        assert shuffled.sort_by("id").equals(reference)
    # Groups split across workers by key give the same union (what a shuffle by key does).
    part = np.array([k[0] % 3 for k in keys.to_pylist()])
    pieces = [choose_survivors(keys.filter(pa.array(part == p)), [i for i, q in zip(ids, part, strict=True) if q == p],
                               scores[part == p]) for p in range(3)]
    assert pa.concat_tables(pieces).sort_by("id").equals(reference)


def test_null_keys_are_never_grouped():
    out = choose_survivors(pa.array([None, None, 1, 1], pa.int64()), ["a", "b", "c", "d"])
    assert out.to_pylist() == [{"id": "d", "survivor_id": "c", "key": 1}]
