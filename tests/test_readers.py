"""Readers on the bundled sample, on real third-party WARC files and on hostile JSONL/Parquet."""

from __future__ import annotations

import codecs
import gzip
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation import schema, storage
from curation.readers import JsonlReader, ParquetReader, WarcReader, WetReader, read_shard
from curation.readers.base import binary_column
from curation.recipe import parse_recipe
from curation.shards import list_shards
from tests.conftest import SAMPLE


def read_all(reader, uri: str) -> pa.Table:
    return pa.concat_tables(read_shard(reader, uri, source="s", shard="x", batch_rows=4))


def outcome(table: pa.Table) -> Counter:
    rows = table.select([schema.REASON, "html", "text"]).to_pylist()
    return Counter(r[schema.REASON] or ("html" if r["html"] else "text") for r in rows)


def test_sample_crawl_records_become_documents_skips_and_rejects():
    table = read_all(WarcReader(), str(SAMPLE / "crawl-00001.warc.gz"))
    assert outcome(table) == {
        "html": 6, "skipped:request": 6, "truncated_record": 1, schema.END_OF_SHARD: 1
    }
    marker = table.filter(pa.compute.equal(table.column(schema.REASON), schema.END_OF_SHARD))
    assert marker.column(schema.SHARD_ROWS).to_pylist() == [table.num_rows]
    first = read_all(WarcReader(), str(SAMPLE / "crawl-00000.warc.gz"))
    assert outcome(first) == {
        "html": 3, "skipped:request": 5, "skipped:warcinfo": 1, "skipped:not_html": 1,
        "skipped:http_status": 1, "skipped:revisit": 1, schema.END_OF_SHARD: 1,
    }


def test_ids_are_stable_unique_and_independent_of_spelling(monkeypatch):
    uri = str(SAMPLE / "crawl-00000.warc.gz")
    a = read_all(WarcReader(), uri).column("id").to_pylist()
    monkeypatch.chdir(SAMPLE)
    b = read_all(WarcReader(), "crawl-00000.warc.gz").column("id").to_pylist()
    c = read_all(WarcReader(), "file://" + uri).column("id").to_pylist()
    assert a == b == c
    assert len(set(a)) == len(a)


def test_meta_keeps_provenance_and_http_charset():
    table = read_all(WarcReader(), str(SAMPLE / "crawl-00001.warc.gz"))
    docs = table.filter(pa.compute.is_valid(table.column("html"))).to_pylist()
    meta = json.loads(docs[0]["meta"])
    assert meta["source_uri"].endswith("crawl-00001.warc.gz")
    assert meta["warc_record_id"].startswith("<urn:uuid:")
    charsets = {d["url"].rsplit("/", 1)[-1]: json.loads(d["meta"])["http_charset"] for d in docs}
    assert charsets["canal-cafes"] is None  # undeclared: left to detection at extraction
    assert charsets["tide-pools"] == "utf-8"


def test_real_warc_files_malformed_ones_become_rejects(testdata: Path):
    warc = testdata / "warc"
    expect = {
        "resiliparse/warcfile.warc.gz": {"html": 16, "skipped:request": 17, "skipped:metadata": 16},
        "resiliparse/clipped.warc.gz": {"truncated_record": 1},
        "resiliparse/clueweb-quirk.warc.gz": {"html": 29},  # LF-only HTTP headers, decoded payloads
        "warcio/example.arc": {"unreadable_input": 1},  # ARC is not WARC
        "warcio/example-trunc.warc": {"html": 1, "unreadable_input": 1},
        "dolma/sample-0001.warc.gz": {"html": 15, "skipped:not_html": 2},
    }
    for name, wanted in expect.items():
        got = outcome(read_all(WarcReader(), str(warc / name)))
        assert {k: got[k] for k in wanted} == wanted, name
    detail = read_all(WarcReader(), str(warc / "warcio/example.arc")).column(schema.DETAIL).to_pylist()
    assert "Invalid WARC header" in detail[0]


def test_wet_conversion_records_are_text_documents(testdata: Path):
    table = read_all(WetReader(), str(testdata / "warc/commoncrawl_whirlwind/whirlwind.warc.wet.gz"))
    docs = table.filter(pa.compute.is_null(table.column(schema.REASON))).to_pylist()
    assert len(docs) == 1
    assert docs[0]["url"] == "https://an.wikipedia.org/wiki/Escopete"
    assert "Escopete" in docs[0]["text"] and docs[0]["html"] is None


def test_jsonl_gzip_keeps_other_fields_and_rejects_bad_lines():
    table = read_all(JsonlReader(), str(SAMPLE / "notes.jsonl.gz"))
    got = outcome(table)
    assert got == {"text": 4, "bad_json": 1, "no_text_field": 1, schema.END_OF_SHARD: 1}
    doc = table.filter(pa.compute.is_null(table.column(schema.REASON))).to_pylist()[0]
    assert doc["url"] == "https://notes.example.org/day-1"
    assert json.loads(doc["meta"])["author"] == "field team"


def test_an_input_field_named_as_the_provenance_keeps_its_value_beside_it(tmp_path: Path):
    """A JSONL or Parquet field named `position` or `source_uri` overwrote where the record was read."""
    (tmp_path / "a.jsonl").write_text(json.dumps({"text": "t", "position": 99, "source_uri": "elsewhere"}) + "\n")
    doc = read_all(JsonlReader(), str(tmp_path / "a.jsonl")).to_pylist()[0]
    assert json.loads(doc["meta"]) == {"position": 0, "source_uri": str(tmp_path / "a.jsonl"), "input_position": 99,
                                       "input_source_uri": "elsewhere"}


def test_jsonl_zstd_and_truncated_gzip(tmp_path: Path):
    lines = b"".join(json.dumps({"text": f"doc {i}", "n": i}).encode() + b"\n" for i in range(10000))
    with pa.CompressedOutputStream(str(tmp_path / "a.jsonl.zst"), "zstd") as out:
        out.write(lines)
    got = outcome(read_all(JsonlReader(), str(tmp_path / "a.jsonl.zst")))
    assert got["text"] == 10000
    (tmp_path / "UPPER.JSONL.GZ").write_bytes(gzip.compress(lines))  # its extension in capitals: plain, it was
    assert outcome(read_all(JsonlReader(), str(tmp_path / "UPPER.JSONL.GZ")))["text"] == 10000
    whole = gzip.compress(lines)
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    table = read_all(JsonlReader(), str(tmp_path / "cut.jsonl.gz"))
    got = outcome(table)
    assert got["truncated_input"] + got["unreadable_input"] == 1  # the rest of the file, counted once
    assert 1000 < got["text"] < 10000


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_jsonl_in_utf16_or_utf32_is_read_as_text(tmp_path: Path, codec: str):
    """Windows tools write text as UTF-16 with its mark (PowerShell's Out-File); read as UTF-8, such a file was one
    line of NULs (18 of 20 lines invalid_utf8, the rest bad_json). Marked or not, compressed or not, it is read."""
    rows = [{"text": f"文档 {i} 😀 é", "n": i} for i in range(2000)]  # past one read: characters cut between reads
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode(codec)
    (tmp_path / "a.jsonl").write_bytes(data)
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(data))
    for name in ("a.jsonl", "a.jsonl.gz"):
        table = read_all(JsonlReader(), str(tmp_path / name))
        assert outcome(table) == {"text": 2000, schema.END_OF_SHARD: 1}
        assert table.column("text").to_pylist()[:2] == ["文档 0 😀 é", "文档 1 😀 é"]


def test_a_utf16_jsonl_line_with_half_a_character_is_a_reject_of_its_own(tmp_path: Path):
    good = [json.dumps({"text": f"line {i}"}) + "\n" for i in range(3)]
    data = b"".join(line.encode("utf-16-le") for line in good[:1])
    data += '{"text": "x'.encode("utf-16-le") + b"\x3d\xd8" + '"}\n'.encode("utf-16-le")  # half a surrogate pair
    data += b"".join(line.encode("utf-16-le") for line in good[1:]) + b"A"  # and an odd last byte
    (tmp_path / "a.jsonl").write_bytes(codecs.BOM_UTF16_LE + data)
    got = outcome(read_all(JsonlReader(), str(tmp_path / "a.jsonl")))
    assert got["text"] == 3 and got["invalid_utf8"] == 1 + 1  # the lone half (read on) and the byte


def test_parquet_reader_row_positions_and_meta(tmp_path: Path):
    pq.write_table(pa.table({"content": ["a b c", None, "d e"], "lang": ["en", "de", "fr"]}), tmp_path / "p.parquet")
    table = read_all(ParquetReader(text_field="content"), str(tmp_path / "p.parquet"))
    assert outcome(table) == {"text": 2, "no_text_field": 1, schema.END_OF_SHARD: 1}
    metas = [json.loads(m) for m in table.column("meta").to_pylist()[:3]]
    assert [m["position"] for m in metas] == [0, 1, 2]
    assert metas[2]["lang"] == "fr"


def test_glob_expansion_local_and_uri(tmp_path: Path):
    for rel in ("a/x.warc.gz", "a/b/y.warc.gz", "a/b/z.jsonl", "c.warc.gz"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    assert [Path(p).name for p in storage.expand(f"{tmp_path}/**/*.warc.gz")] == ["y.warc.gz", "x.warc.gz", "c.warc.gz"]
    assert [Path(p).name for p in storage.expand(f"{tmp_path}/a/*.warc.gz")] == ["x.warc.gz"]
    assert [Path(p).name for p in storage.expand(f"file://{tmp_path}/a/b/*")] == ["y.warc.gz", "z.jsonl"]
    assert len(storage.expand(str(tmp_path / "a"))) == 3  # a folder means everything under it
    assert storage.expand(f"{tmp_path}/nothing/*.gz") == []
    # a file named with brackets is that file, not the files its brackets match (`x 2.jsonl` was read instead)
    (tmp_path / "d").mkdir()
    for name in ("x [2].jsonl", "x 2.jsonl", "x 3.jsonl"):
        (tmp_path / "d" / name).write_bytes(b"")
    assert [Path(p).name for p in storage.expand(f"{tmp_path}/d/x [2].jsonl")] == ["x [2].jsonl"]
    assert [Path(p).name for p in storage.expand(f"{tmp_path}/d/x [[]2].jsonl")] == ["x [2].jsonl"]  # glob's escape
    assert [Path(p).name for p in storage.expand(f"{tmp_path}/d/x [!2].jsonl")] == ["x 3.jsonl"]  # glob's negation


def test_shards_carry_the_listed_file_size(tmp_path: Path):
    for name, size in (("a.jsonl", 10), ("b.jsonl", 300), ("c.jsonl", 0)):
        (tmp_path / name).write_bytes(b"x" * size)
    assert storage.expand_sized(f"{tmp_path}/*.jsonl") == [(f"{tmp_path}/{n}", s) for n, s in
                                                      (("a.jsonl", 10), ("b.jsonl", 300), ("c.jsonl", 0))]
    recipe = parse_recipe(f"name: sized\nsources: [{{name: s, format: jsonl, paths: ['{tmp_path}/*.jsonl']}}]\n")
    assert [(Path(s.uri).name, s.size) for s in list_shards(recipe)] == [("a.jsonl", 10), ("b.jsonl", 300),
                                                                          ("c.jsonl", 0)]


@pytest.mark.parametrize("payload", [b"", b"\x00\x01garbage" * 100, gzip.compress(b"WARC/1.1\r\nbroken")],
                         ids=["empty", "binary", "cut_gzip_warc"])  # ids: gzip's header holds the time
def test_garbage_files_never_raise(tmp_path: Path, payload: bytes):
    path = tmp_path / "bad.warc.gz"
    path.write_bytes(payload)
    table = read_all(WarcReader(), str(path))
    reasons = set(table.column(schema.REASON).to_pylist())
    assert schema.END_OF_SHARD in reasons
    assert reasons <= {schema.END_OF_SHARD, "unreadable_input", "truncated_input", "skipped:unknown_record_type"}


@pytest.mark.parametrize("values", [[b"<p>a</p>", None, b"", "é".encode() * 70_000], [], [None, None], [b"x"]])
def test_a_batch_of_raw_pages_is_one_joined_buffer_equal_to_pyarrows_own(values):
    column = binary_column(values)
    column.validate(full=True)
    assert column.equals(pa.array(values, pa.binary())) and column.null_count == values.count(None)


def test_a_file_whose_name_holds_a_newline_is_listed(tmp_path: Path):
    """A folder pattern (`checkouts/*/`, each folder a repository) did not reach it: the file was neither read nor
    counted."""
    from curation import storage

    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "new\nline.py").write_text("x = 1\n")
    assert storage.expand(f"{tmp_path}/*/") == [f"{tmp_path}/repo/src/new\nline.py"]
