"""The stage wrapper and the job writer, without Ray: marking, sampling, counting, atomic shards."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curation import schema
from curation.apply import run_stage, sampled
from curation.job import JobWriter
from curation.readers import JsonlReader, WarcReader, read_shard
from curation.stages import Extract, Length
from tests.conftest import SAMPLE


def shard_batches(name: str = "notes", batch_rows: int = 2) -> list[pa.Table]:
    return list(read_shard(JsonlReader(), str(SAMPLE / "notes.jsonl.gz"), source="notes", shard=name,
                           batch_rows=batch_rows))


def test_run_stage_marks_drops_and_passes_earlier_drops_through():
    table = pa.concat_tables(shard_batches())
    out = run_stage(Length(min_words=50, keep_scores=True), table)
    assert out.num_rows == table.num_rows  # nothing disappears: drops are marked
    rows = {r["id"]: r for r in out.to_pylist()}
    before = {r["id"]: r for r in table.to_pylist()}
    for rid, row in rows.items():
        if before[rid][schema.REASON] is not None:  # read-stage drops are untouched
            assert row[schema.STAGE] == "read" and row["_sec:length"] is None
    short = [r for r in rows.values() if r[schema.STAGE] == "length"]
    assert [r[schema.REASON] for r in short] == ["too_few_words"]
    assert short[0]["n_words"] == 4
    kept = [r for r in rows.values() if r[schema.REASON] is None]
    assert len(kept) == 3 and all(r["n_words"] >= 50 for r in kept)


def test_an_extracting_stage_keeps_earlier_drops_as_they_were_without_their_pages():
    (pages,) = read_shard(WarcReader(), str(SAMPLE / "crawl-00001.warc.gz"), source="web", shard="w", batch_rows=100)
    reasons = pages.column(schema.REASON).to_pylist()
    page = next(i for i, html in enumerate(pages.column("html").to_pylist()) if html and reasons[i] is None)
    reasons[page] = "lang_not_kept"  # as html_langid drops a page before extraction
    at = pages.schema.get_field_index(schema.REASON)
    earlier = pages.set_column(at, schema.REASON, pa.array(reasons, pa.string()))
    out = run_stage(Extract(), earlier, name="extract")
    assert "html" not in out.column_names and out.num_rows == pages.num_rows
    rows = {r["id"]: r for r in out.to_pylist()}
    first = rows[pages.column("id")[page].as_py()]
    assert first[schema.REASON] == "lang_not_kept" and first["_sec:extract"] is None  # passed by, untouched
    everyone = {r["id"]: r for r in run_stage(Extract(), pages, name="extract").to_pylist()}
    for rid, row in rows.items():  # every other page extracted as when no row was dropped before
        if rid != first["id"]:
            assert (row["text"], row[schema.REASON]) == (everyone[rid]["text"], everyone[rid][schema.REASON])


def test_only_limits_a_stage_to_named_sources():
    table = pa.concat_tables(shard_batches())
    out = run_stage(Length(min_words=10_000, only=["web"]), table)
    assert pc.sum(pc.equal(out.column(schema.STAGE), "length")).as_py() in (None, 0)


def test_a_filters_score_columns_are_written_with_keep_scores_only():
    """Without keep_scores every score was a column of nulls in each document and reject written (about 40 in a
    Chinese-English job's), and a notebook showed `n_words = NaN` beside a detail of `n_words=4`."""
    table = pa.concat_tables(shard_batches())
    plain = run_stage(Length(min_words=10), table)
    assert "n_words" not in plain.column_names and "n_chars" not in plain.column_names
    scored = run_stage(Length(min_words=10, keep_scores=True), table)
    assert scored.column("n_words").to_pylist()[:4] == [77, 73, 4, 74]  # the reader's rejects are not judged


def test_rejects_sampling_is_deterministic_and_forgets_text():
    ids = pa.array([schema.document_id("file", i) for i in range(2000)])
    a, b = sampled(ids, 0.25), sampled(ids, 0.25)
    assert (a == b).all() and 0.2 < a.mean() < 0.3
    table = pa.concat_tables(shard_batches())
    out = run_stage(Length(min_words=10_000), table, rejects_sample=0.0)
    dropped = out.filter(pc.equal(out.column(schema.STAGE), "length"))
    assert dropped.num_rows == 4 and dropped.column("text").null_count == 4


def test_writer_commits_a_shard_only_when_all_rows_arrived(tmp_path: Path):
    stage = Length(min_words=50, keep_scores=True)
    batches = [run_stage(stage, b) for b in shard_batches(batch_rows=2)]
    writer = JobWriter(str(tmp_path), ["length"])
    for batch in reversed(batches[1:]):  # out of order, the marker first
        assert writer.add(batch) == []
    assert not (tmp_path / "documents").exists() or not list((tmp_path / "documents").glob("*.parquet"))
    assert list(tmp_path.rglob("*.tmp"))  # written so far under temporary names only
    assert writer.add(batches[0]) == ["notes"]
    assert not list(tmp_path.rglob("*.tmp"))
    docs = pq.read_table(tmp_path / "documents" / "notes.parquet")
    assert docs.num_rows == 3
    assert not [c for c in docs.column_names if c.startswith("_")]
    record = json.loads((tmp_path / "_shards" / "notes.json").read_text())
    counters = record["counters"]
    assert counters["read"]["docs_in"] == 6 and counters["read"]["docs_out"] == 4
    assert counters["read"]["dropped"] == {"bad_json": 1, "no_text_field": 1}
    assert counters["length"] == {**counters["length"], "docs_in": 4, "docs_out": 3, "dropped": {"too_few_words": 1}}
    rejects = pq.read_table(tmp_path / "rejects" / "stage=length" / "reason=too_few_words" / "notes.parquet")
    assert rejects.column("text").to_pylist() == ["Too short to keep."]
    read_rejects = pq.read_table(tmp_path / "rejects" / "stage=read" / "reason=bad_json" / "notes.parquet")
    assert "Unterminated string" in read_rejects.column("detail")[0].as_py()
    # zstd on texts only, no dictionaries: a zstd context and a dictionary per column chunk were most of the
    # cost of the many small files a job writes
    chunks = pq.ParquetFile(tmp_path / "documents" / "notes.parquet").metadata.row_group(0)
    kinds = {chunks.column(i).path_in_schema: chunks.column(i) for i in range(chunks.num_columns)}
    assert kinds["text"].compression == "ZSTD" and kinds["id"].compression == "ZSTD"
    assert kinds["n_words"].compression == "UNCOMPRESSED"
    assert not any(c.has_dictionary_page for c in kinds.values())


def test_resume_forgets_half_written_files_and_knows_done_shards(tmp_path: Path):
    stage = Length(min_words=50)
    writer = JobWriter(str(tmp_path), ["length"])
    for batch in shard_batches("done"):
        writer.add(run_stage(stage, batch))
    half = shard_batches("half")
    writer.add(run_stage(stage, half[0]))  # a crash here leaves temporaries behind
    assert list(tmp_path.rglob("*.tmp"))
    again = JobWriter(str(tmp_path), ["length"])
    assert set(again.resume()) == {"done"}
    assert not list(tmp_path.rglob("*.tmp"))
    assert again.totals()["length"]["docs_out"] == 3


def test_rejects_are_capped_per_reason_and_shard(tmp_path: Path):
    writer = JobWriter(str(tmp_path), ["length"], rejects_max_per_reason=1)
    for batch in shard_batches():
        writer.add(run_stage(Length(min_words=10_000), batch))
    rejects = pq.read_table(tmp_path / "rejects" / "stage=length" / "reason=too_few_words" / "notes.parquet")
    assert rejects.num_rows == 1
    assert writer.totals()["length"]["dropped"]["too_few_words"] == 4  # counted in full all the same


def test_stage_tallies_are_summed_into_stats(tmp_path: Path):
    import numpy as np

    from curation.stages import Processed, Stage

    class CountVowels(Stage):
        name = "vowels"
        count_keys = ("a", "e")

        def process(self, batch: pa.Table) -> Processed:
            texts = batch.column("text").to_pylist()
            return Processed(batch, pa.nulls(batch.num_rows, pa.string()),
                             counts={"a": np.array([t.count("a") for t in texts]),
                                     "e": np.array([t.count("e") for t in texts])})

    writer = JobWriter(str(tmp_path), ["vowels"])
    batches = shard_batches()
    for batch in batches:
        writer.add(run_stage(CountVowels(), batch))
    texts = [t for b in batches for t, r in zip(b.column("text").to_pylist(), b.column(schema.REASON).to_pylist(),
                                                   strict=True) if r is None]
    counts = writer.totals()["vowels"]["counts"]
    assert counts == {"a": sum(t.count("a") for t in texts), "e": sum(t.count("e") for t in texts)}
    assert counts["e"] > 50
    docs = pq.read_table(tmp_path / "documents" / "notes.parquet")
    assert not [c for c in docs.column_names if c.startswith("_n:")]
