"""Corpus stages without Ray: keys, survivors and their independence from input order."""

from __future__ import annotations

import random

import pyarrow as pa

from curation.dedup.exact_dedup import ExactDedup, removals_from_survivors


def docs(texts: list[str], scores: list[float] | None = None) -> pa.Table:
    columns = {"id": [f"d{i:03d}" for i in range(len(texts))], "text": texts}
    if scores is not None:
        columns["q"] = scores
    return pa.table(columns)


def test_exact_dedup_keeps_one_copy_per_normalized_text():
    table = docs(["Hello  World", "hello world", "Other text", "HELLO WORLD\n", "other text", "unique"])
    stage = ExactDedup()
    removed = stage.removals(stage.keys(table)).to_pylist()
    assert {r["id"]: r["detail"] for r in removed} == {
        "d001": "kept d000", "d003": "kept d000", "d004": "kept d002"}
    assert {r["reason"] for r in removed} == {"duplicate"}
    strict = ExactDedup(normalize=False)
    assert strict.removals(strict.keys(table)).num_rows == 0


def test_survivor_is_highest_score_then_smallest_id_whatever_the_order():
    table = docs(["same"] * 5 + ["x", "x"], scores=[0.1, 0.9, 0.9, None, 0.5, 0.2, 0.2])
    stage = ExactDedup(score_column="q")
    keys = stage.keys(table)
    expected = stage.removals(keys).sort_by("id").to_pylist()
    assert {r["id"]: r["detail"] for r in expected} == {
        "d000": "kept d001", "d002": "kept d001", "d003": "kept d001", "d004": "kept d001", "d006": "kept d005"}
    for seed in range(5):
        order = list(range(keys.num_rows))
        random.Random(seed).shuffle(order)
        assert stage.removals(keys.take(order)).sort_by("id").to_pylist() == expected


def test_removals_on_empty_and_single_rows():
    empty = pa.table({"id": pa.array([], pa.string()), "key": pa.array([], pa.string()),
                      "score": pa.array([], pa.float64())})
    assert removals_from_survivors(empty, "duplicate").num_rows == 0
    one = pa.table({"id": ["a"], "key": ["k"], "score": pa.array([None], pa.float64())})
    assert removals_from_survivors(one, "duplicate").num_rows == 0
