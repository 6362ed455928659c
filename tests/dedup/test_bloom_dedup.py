"""Bloom dedup without Ray: units, first-seen order, outcomes."""

from __future__ import annotations

import pyarrow as pa

from curation.dedup.bloom_dedup import BloomDedup


def docs(texts: list[str]) -> pa.Table:
    return pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts})


def run_all(stage: BloomDedup, table: pa.Table) -> tuple[pa.Table, pa.Table]:
    units = stage.units(table)
    repeated = [stage.repeated(units.filter(pa.compute.equal(units.column("shard"), s)), s)[0]
                for s in range(stage.params.shards)]
    return stage.outcome(table, pa.concat_tables(repeated))


def test_paragraphs_seen_before_are_removed_and_mostly_repeated_documents_dropped():
    boiler = "Subscribe to our newsletter for more stories like this one."
    table = docs([
        f"First article opens here.\n{boiler}\nIts own closing words.",
        f"Second article, different body text.\n{boiler}\nAnother unique ending line.",
        f"First article opens here.\n{boiler}",
    ])
    stage = BloomDedup(shards=4)
    removals, rewrites = run_all(stage, table)
    assert removals.to_pylist() == [{"id": "d2", "reason": "duplicate_paragraphs",
                                     "detail": "100% of the text was seen before"}]
    rewritten = "Second article, different body text.\nAnother unique ending line."
    assert rewrites.to_pylist() == [{"id": "d1", "text": rewritten}]


def test_a_removed_paragraph_leaves_no_run_of_blank_lines_and_none_at_the_ends():
    boiler = "Subscribe to our newsletter for more stories like this one."
    body, end = "The second article says something of its own at length. " * 3, "And it ends in its own words. " * 2
    table = docs([f"First article.\n\n{boiler}", f"{boiler}\n\n{body}\n\n{boiler}\n\n{end}\n\n{boiler}"])
    _, rewrites = run_all(BloomDedup(shards=2), table)
    assert rewrites.to_pylist() == [{"id": "d1", "text": f"{body}\n\n{end}"}]


def test_document_level_and_independence_from_shard_order():
    table = docs(["same text", "other text", "same text", "same text"])
    stage = BloomDedup(level="document", shards=3)
    removals, rewrites = run_all(stage, table)
    assert removals.column("id").to_pylist() == ["d2", "d3"] and rewrites.num_rows == 0
    shuffled = table.take([3, 1, 2, 0])
    assert sorted(run_all(stage, shuffled)[0].column("id").to_pylist()) == ["d2", "d3"]


def test_filter_statistics_are_reported():
    stage = BloomDedup(shards=1, capacity=10_000)
    units = stage.units(docs([f"line {i}\nline {i + 1}" for i in range(100)]))
    repeated, stats = stage.repeated(units, 0)
    assert repeated.num_rows == 99  # every "line i+1" but the last reappears as the next document's first line
    assert stats["added"] == 101 and stats["seen"] == 99 and stats["memory_bytes"] > 0
    assert 0 <= stats["measured_false_positive_rate"] < 0.01
