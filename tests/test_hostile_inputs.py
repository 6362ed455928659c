"""Hostile inputs: each becomes a counted reject or skip with its reason, or a recipe error before work starts.

One corpus of hostile files, each with good records planted beside it, runs through one `run(...)` on the
session's Ray (extract, length, a trained tokenizer and packing, default `max_record_bytes` of 10 MB): every
record is accounted for per file, the good ones come out (and into the packed shards), the Ray workers'
memory stays bounded. Reader- and stage-level tests without Ray pin reasons and details precisely and show
the bounds at small sizes; recipe tests pin key, line and message of bad recipes.
"""

from __future__ import annotations

import functools
import gzip
import io
import itertools
import json
import random
import struct
import tarfile
import tempfile
import threading
import time
import uuid
import zlib
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from curation import schema
from curation.apply import run_stage
from curation.readers import CodeReader, JsonlReader, ParquetReader, WarcReader, read_shard
from curation.recipe import RecipeError, parse_recipe
from curation.stages.extract import Extract
from pipelines.run import run
from tests.conftest import warc_response

# Per test. The thread method also ends a hang inside C code (a parser, a decompressor), which a signal
# cannot interrupt, and leaves SIGALRM to the extract stage's own per-page time limit.
pytestmark = pytest.mark.timeout(120, method="thread")

MiB = 1 << 20
BOMB_MIB = 2048  # every bomb here inflates to 2 GiB from about 2 MB
LONG_LINE_MIB = 200
BIG_PAGE_BYTES = 50_000_000
WORDS = ("river", "stone", "light", "garden", "paper", "window", "market", "winter", "silver", "number", "answer",
         "reason", "harbour", "lantern", "meadow", "orchard", "valley", "signal", "engine", "bridge", "ladder",
         "mirror", "pocket", "ribbon", "saddle", "timber", "violet")


# -- building hostile files ------------------------------------------------------------------------------------


def prose(key: str, words: int = 90) -> str:
    """Plain English-looking sentences, different for every key (so no two good documents are alike)."""
    rng = random.Random(key)
    sentences = []
    while sum(len(s.split()) for s in sentences) < words:
        picked = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12)))
        sentences.append(f"The {picked} of {key} stood there.")
    return " ".join(sentences)


def page(key: str) -> bytes:
    paragraphs = "".join(f"<p>{prose(f'{key}-{i}')}</p>" for i in range(2))
    return f"<html><head><title>{key}</title></head><body><article>{paragraphs}</article></body></html>".encode()


def good_url(key: str) -> str:
    return f"https://good.example/{key}"


def good_record(key: str) -> bytes:
    return warc_response(good_url(key), page(key))


def warc_record(url: str, body: bytes, *, lie: int = 0, warc_headers: str = "", http_headers: str = "",
                gz: bool = True) -> bytes:
    """A WARC response record whose Content-Length can lie by `lie` bytes, with extra header lines."""
    http = (f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n{http_headers}\r\n").encode() + body
    head = (f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>\r\n"
            f"WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n{warc_headers}"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http) + lie}\r\n\r\n")
    raw = head.encode() + http + b"\r\n\r\n"
    return gzip.compress(raw, compresslevel=1, mtime=0) if gz else raw


@functools.cache
def zeros_member(mib: int) -> bytes:
    """One gzip member of `mib` MiB of NUL bytes, about 1 kB per MiB: a gzip bomb (valid, CRC included).

    Every MiB ends in a full flush, so all but the first compress to the same bytes: built in a second."""
    chunk = bytes(MiB)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    same = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = functools.reduce(lambda c, _: zlib.crc32(chunk, c), range(mib), 0)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first + same * (mib - 1) + deflate.flush()
            + struct.pack("<II", crc, (mib * MiB) & 0xFFFFFFFF))


def base62(i: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = digits[i % 62]
    while i := i // 62:
        out = digits[i % 62] + out
    return out


def many_attributes(n: int) -> bytes:
    """A page with one tag of `n` distinct attributes (1e6 of them in 4.8 MB: under every size limit)."""
    attributes = " ".join(base62(i) for i in range(n)).encode()
    return b"<html><body><div " + attributes + b"><p>" + prose("attributes").encode() + b"</p></div></body></html>"


def nested(depth: int) -> bytes:
    return b"<html><body>" + b"<div>" * depth + prose("nested").encode() + b"</div>" * depth + b"</body></html>"


def invalid_utf8_page(key: str) -> bytes:
    text = prose(key).encode().replace(b" of ", b" \xff\xfe of ").replace(b"stood", b"st\xc3\x28od")
    head = f"<html><head><title>{key}</title></head><body><article><p>".encode()
    return head + text + b"</p></article></body></html>"


def string_column(values: list[bytes]) -> pa.Array:
    """A string column holding these bytes as they are, valid UTF-8 or not (as some writers produce)."""
    offsets = pa.array([0, *itertools.accumulate(map(len, values))], pa.int32())
    return pa.Array.from_buffers(pa.string(), len(values), [None, offsets.buffers()[1], pa.py_buffer(b"".join(values))])


def jsonl_line(key: str) -> bytes:
    return json.dumps({"text": prose(key), "url": good_url(key)}).encode() + b"\n"


def repository(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"repo/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def code_file(name: str) -> bytes:
    body = "\n".join(f"    total += {w}_{i}  # {prose(f'{name}-{i}', 8)}" for i, w in enumerate(WORDS[:12]))
    return f"def {name}(total):\n{body}\n    return total\n".encode()


def read(reader, path: Path | str) -> pa.Table:
    """Every row of one shard, end-of-shard marker included."""
    return pa.concat_tables(read_shard(reader, str(path), source="s", shard="x", batch_rows=16))


def outcome(table: pa.Table) -> Counter:
    """Rows per outcome: "doc" for documents, else the reason, without the end-of-shard marker."""
    reasons = table.column(schema.REASON).to_pylist()
    return Counter(r or "doc" for r in reasons if r != schema.END_OF_SHARD)


def details(table: pa.Table) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for reason, detail in zip(table.column(schema.REASON).to_pylist(), table.column(schema.DETAIL).to_pylist(),
                              strict=True):
        if reason and reason != schema.END_OF_SHARD:
            out.setdefault(reason, []).append(detail)
    return out


def first_cut(records: list[bytes], last: bytes, why: str) -> int:
    """The shortest prefix of `last` after `records` whose reading ends in a reject whose detail has `why`."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "cut.warc.gz")
        for end in range(1, len(last)):
            path.write_bytes(b"".join(records) + last[:end])
            if any(why in (d or "") for d in read(WarcReader(), path).column(schema.DETAIL).to_pylist()):
                return end
    raise AssertionError(why)


class Corpus:
    """The hostile files: `expected[file]` is what reading it gives (documents: "doc", then reasons as the
    read stage counts them), `good` the urls (or code paths) that must come out as documents."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.expected: dict[str, Counter] = {}
        self.good: set[str] = set()
        self.seconds = 0.0

    def add(self, name: str, data: bytes, expected: dict[str, int], good: tuple[str, ...] = ()) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.expected[name] = Counter(expected)
        self.good.update(good)
        return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    started = time.perf_counter()
    c = Corpus(tmp_path_factory.mktemp("hostile"))
    bomb = zeros_member(BOMB_MIB)
    keys = [f"web-{i}" for i in range(40)]
    g = iter(keys)

    def goods(n: int) -> tuple[list[bytes], tuple[str, ...]]:
        chosen = [next(g) for _ in range(n)]
        return [good_record(k) for k in chosen], tuple(good_url(k) for k in chosen)

    records, urls = goods(3)
    c.add("web/good.warc.gz", b"".join(records), {"doc": 3}, urls)
    # truncated gzip: the third record's gzip member cut before any of it inflates (fastwarc then ends
    # quietly: the reader checks the last member itself), in its header block, and in its payload
    cut = good_record("cut")
    for name, why in (("member", "breaks off"), ("header", "without Content-Length"), ("payload", " of ")):
        records, urls = goods(2)
        c.add(f"web/truncated-{name}.warc.gz", b"".join(records) + cut[: first_cut(records, cut, why)],
              {"doc": 2, "truncated_record" if name == "payload" else "truncated_input": 1}, urls)
    # lying Content-Length: too long (reads into the next record), too short (the rest of its block is taken
    # for the next header), and past the end of the file (swallows the records after it). A liar whose block holds
    # the next record is a bad header (kept, that record was read twice: inside it, then as itself), and reading
    # resyncs to the record it swallowed, one reject in all; a short one keeps what its length says, and the break
    # after it is one reject; reading resumes at the next record start.
    for name, lie, gz, expect in (("long", 500, True, {"doc": 3, "bad_warc_header": 1}),
                                  ("short", -300, True, {"doc": 4, "unreadable_input": 1}),
                                  ("plain-long", 500, False, {"doc": 3, "bad_warc_header": 1}),
                                  ("past-end", 50_000, True, {"doc": 3, "truncated_record": 1})):
        keys4 = [next(g) for _ in range(4)]
        body = [warc_record(good_url(k), page(k), lie=lie if i == 1 else 0, gz=gz) for i, k in enumerate(keys4)]
        liar = () if expect.get("truncated_record") or expect.get("bad_warc_header") else (good_url(keys4[1]),)
        c.add(f"web/lie-{name}.warc{'.gz' if gz else ''}", b"".join(body), expect,
              (good_url(keys4[0]), *liar, good_url(keys4[2]), good_url(keys4[3])))
    records, urls = goods(2)
    big = b"<html><body><p>" + b"a big page " * (BIG_PAGE_BYTES // 11) + b"</p></body></html>"
    c.add("web/big-page.warc.gz", records[0] + warc_response("https://hostile.example/big", big) + records[1],
          {"doc": 2, "too_large": 1}, urls)
    records, urls = goods(1)
    c.add("web/nested.warc.gz", warc_response("https://hostile.example/nested", nested(100_000)) + records[0],
          {"doc": 2}, urls)
    records, urls = goods(1)
    c.add("web/attributes.warc.gz", warc_response("https://hostile.example/attributes", many_attributes(10**6))
          + records[0], {"doc": 2}, urls)
    records, urls = goods(1)
    c.add("web/invalid-utf8.warc.gz", warc_response(good_url("utf8"), invalid_utf8_page("utf8")) + records[0],
          {"doc": 2}, (*urls, good_url("utf8")))
    records, urls = goods(2)
    huge_header = warc_record("https://hostile.example/header", page("header"),
                              warc_headers="".join(f"X-Hostile-{i}: {'v' * 60}\r\n" for i in range(20_000)))
    c.add("web/huge-header.warc.gz", records[0] + huge_header + records[1], {"doc": 2, "unreadable_input": 1}, urls)
    records, urls = goods(2)
    http_bomb = warc_record("https://hostile.example/http-bomb", bomb, http_headers="Content-Encoding: gzip\r\n")
    c.add("web/http-bomb.warc.gz", records[0] + http_bomb + records[1], {"doc": 2, "too_large": 1}, urls)
    records, urls = goods(2)
    head = (f"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
            f"WARC-Target-URI: https://hostile.example/warc-bomb\r\nContent-Type: text/html\r\n"
            f"Content-Length: {BOMB_MIB * MiB}\r\n\r\n").encode()
    warc_bomb = gzip.compress(head) + bomb + gzip.compress(b"\r\n\r\n")  # one record over three members
    c.add("web/warc-bomb.warc.gz", records[0] + warc_bomb + records[1], {"doc": 2, "too_large": 1}, urls)
    c.add("web/empty.warc.gz", b"", {"unreadable_input": 1})  # a failed copy? said, not silent

    c.add("notes/good.jsonl", jsonl_line("note-0") + jsonl_line("note-1"), {"doc": 2},
          (good_url("note-0"), good_url("note-1")))
    c.add("notes/invalid-utf8.jsonl", jsonl_line("note-2") + b'{"text": "caf\xe9 \xff"}\n' + jsonl_line("note-3"),
          {"doc": 2, "invalid_utf8": 1}, (good_url("note-2"), good_url("note-3")))
    path = c.add("notes/long-line.jsonl", b"", {"doc": 2, "too_large": 1}, (good_url("note-4"), good_url("note-5")))
    with path.open("wb") as f:
        f.write(jsonl_line("note-4") + b'{"text": "')
        for _ in range(LONG_LINE_MIB):
            f.write(b"long line " * (MiB // 10) + b"padding.")
        f.write(b'"}\n' + jsonl_line("note-5").rstrip(b"\n"))  # and the last line ends without a newline
    c.add("notes/bomb.jsonl.gz", gzip.compress(jsonl_line("note-6") + b'{"text": "') + bomb
          + gzip.compress(b'"}\n' + jsonl_line("note-7")), {"doc": 2, "too_large": 1},
          (good_url("note-6"), good_url("note-7")))
    whole = gzip.compress(b"".join(jsonl_line(f"cut-{i}") for i in range(200)))
    path = c.add("notes/truncated.jsonl.gz", whole[: len(whole) // 2], {})
    table = read(JsonlReader(), path)  # how many lines come before the break depends on the decoder's buffering
    kept = table.filter(pa.compute.is_null(table.column(schema.REASON)))
    assert 50 < kept.num_rows < 200
    c.expected["notes/truncated.jsonl.gz"] = outcome(table)
    c.good.update(kept.column("url").to_pylist())
    c.add("notes/empty.jsonl", b"", {"unreadable_input": 1})

    rows = [f"{prose(f'row-{i}', 30)}".encode() if i % 100 != 50 else b"caf\xe9 \xff\xfe bytes" for i in range(300)]
    table = pa.table({"text": string_column(rows), "url": [good_url(f"row-{i}") for i in range(300)]})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=100)
    c.add("table/invalid-utf8.parquet", sink.getvalue(), {"doc": 297, "invalid_utf8": 3},
          tuple(good_url(f"row-{i}") for i in range(300) if i % 100 != 50))
    c.add("table/empty.parquet", b"", {"unreadable_input": 1})

    c.add("code/repo.tar.gz", repository({
        "LICENSE": b"MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy of "
                   b"this software and associated documentation files (the Software), to deal in the Software "
                   b"without restriction, including without limitation the rights to use, copy and modify it.\n",
        "tally.py": code_file("tally"), "count.py": code_file("count"),
        "native.so": b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 64,  # NUL bytes: binary
        "blob.txt": b"looks like text\x00\x00\x00then binary",  # a binary by content under a text name
        "logo.png": b"\x89PNG\r\n\x1a\n" + bytes(500),  # binary by name
        "latin1.py": "caf\xe9 = 'not utf-8'\n".encode("latin-1"),
    }), {"doc": 3, "skipped:binary": 3, "skipped:undecodable": 1}, ("LICENSE", "tally.py", "count.py"))
    c.add("code/empty.tar.gz", b"", {"unreadable_input": 1})
    c.seconds = time.perf_counter() - started
    return c


# -- everything at once, through Ray --------------------------------------------------------------------------


class PeakRss:
    """Samples resident memory while a block runs: of this process's descendants (the raylet and Ray workers),
    or of this process itself (`children=False`, where `baseline` is its memory when the block began)."""

    def __init__(self, children: bool = True, every_s: float = 0.05) -> None:
        import psutil

        self.psutil, self.children, self.every_s = psutil, children, every_s
        self.baseline, self.peak, self.peak_name = 0, 0, ""
        self._stop = threading.Event()

    def _processes(self) -> list:
        me = self.psutil.Process()
        return me.children(recursive=True) if self.children else [me]

    def _sample(self) -> None:
        while not self._stop.is_set():
            for proc in self._processes():
                try:
                    rss = proc.memory_info().rss
                    if rss > self.peak:
                        self.peak, self.peak_name = rss, " ".join(proc.cmdline()[:2])[:80]
                except self.psutil.Error:
                    continue
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakRss:
        if not self.children:
            self.baseline = self.peak = self.psutil.Process().memory_info().rss
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="module")
def hostile_run(ray_session, corpus: Corpus, tmp_path_factory):
    root = corpus.root
    recipe = parse_recipe(f"""
name: hostile
seed: 7
sources:
  - {{name: web, format: warc, paths: ["{root}/web/*"]}}
  - {{name: notes, format: jsonl, paths: ["{root}/notes/*"]}}
  - {{name: table, format: parquet, paths: ["{root}/table/*"]}}
  - {{name: code, format: code, paths: ["{root}/code/*"]}}
stages:
  - extract: {{timeout_s: 10, only: [web]}}
  - length: {{min_words: 20}}
tokenizer: {{train: {{vocab_size: 400, hard_vocab_limit: false}}}}
pack: {{seq_len: 128, shard_rows: 256}}
""")
    assert all(s.max_record_bytes == 10 << 20 for s in recipe.sources)  # the default bounds every bomb
    started = time.perf_counter()
    with PeakRss() as memory:
        result = run(recipe, output=str(tmp_path_factory.mktemp("out")), quiet=True)
    return result, memory, time.perf_counter() - started


def stage_row(stats: dict, name: str) -> dict:
    return next(s for s in stats["stages"] if s["stage"] == name)


def test_every_hostile_record_is_counted_in_its_shard_with_its_reason(hostile_run, corpus: Corpus):
    from curation.shards import shard_name

    result, _, _ = hostile_run
    for name, expected in corpus.expected.items():
        source, key = name.split("/", 1)  # each source is named after its folder, its root
        shard = shard_name(source, key)
        record = json.loads(Path(result.job_dir, "_shards", f"{shard}.json").read_text())
        read = record["counters"]["read"]
        got = Counter({"doc": read["docs_out"], **read["dropped"]})
        got.update({f"skipped:{k}": v for k, v in read["skipped"].items()})
        assert +got == +expected, name
        assert read["docs_in"] == sum(expected.values()), name
    assert result.stats["shards"] == {"total": len(corpus.expected), "done": len(corpus.expected),
                                      "skipped_already_done": 0}
    assert result.stats["documents"]["records_read"] == sum(sum(e.values()) for e in corpus.expected.values())


def test_funnel_adds_up_and_every_drop_is_in_rejects_with_a_detail(hostile_run):
    result, _, _ = hostile_run
    stats = result.stats
    for row in stats["stages"]:  # documents in = out + rejects + skipped, at every stage
        assert row["docs_in"] == row["docs_out"] + sum(row["dropped"].values()) + sum(row["skipped"].values()), row
    read, extract, length = (stage_row(stats, n) for n in ("read", "extract", "length"))
    assert extract["dropped"] == {"too_many_attributes": 1, "no_text": 1}  # 1e6 attributes; 100,000 nested divs
    assert length["docs_in"] == read["docs_out"] - sum(extract["dropped"].values())  # extract: web rows only
    assert stats["documents"]["out"] == length["docs_out"] == stats["documents"]["in"] - 2 - sum(
        length["dropped"].values())
    rejects = pads.dataset(Path(result.job_dir, "rejects"), format="parquet", partitioning="hive").to_table()
    got = Counter(zip(rejects.column("stage").to_pylist(), rejects.column("reason").to_pylist(), strict=True))
    wanted = Counter({(row["stage"], reason): n for row in stats["stages"] for reason, n in row["dropped"].items()})
    assert got == wanted
    for stage, reason, detail in zip(*(rejects.column(c).to_pylist() for c in ("stage", "reason", "detail")),
                                     strict=True):
        assert detail or (stage, reason) == ("extract", "no_text"), (stage, reason)  # every other drop says why
    assert {"too_large", "invalid_utf8", "unreadable_input", "truncated_input", "truncated_record"} <= set(
        read["dropped"])
    assert read["skipped"] == {"binary": 3, "undecodable": 1}


def test_good_records_beside_hostile_ones_come_through_to_the_packed_shards(hostile_run, corpus: Corpus):
    result, _, _ = hostile_run
    job = Path(result.job_dir)
    docs = pq.read_table(job / "documents", columns=["id", "source", "url", "meta"])
    names = {u if s != "code" else json.loads(m)["path"]
             for s, u, m in zip(*(docs.column(c).to_pylist() for c in ("source", "url", "meta")), strict=True)}
    assert names == corpus.good
    assert docs.num_rows == len(corpus.good) == result.stats["documents"]["out"]
    manifest = json.loads((job / "manifest.json").read_text())
    packed_docs = sum(n for split in manifest["splits"].values() for n in split["documents_per_source"].values())
    assert packed_docs == docs.num_rows  # no mixture: every document packed once
    ids = set()
    for split in manifest["splits"].values():
        for shard in split["shards"]:
            with pa.memory_map(str(job / shard["file"])) as source:
                ids.update(pa.ipc.open_stream(source).read_all().column("doc_ids").combine_chunks().flatten()
                           .to_pylist())
    assert ids == set(docs.column("id").to_pylist())


def test_memory_and_time_stay_bounded(hostile_run, corpus: Corpus):
    result, memory, seconds = hostile_run
    # Three 2 GiB bombs, a 200 MB line and a 50 MB page: none is ever held whole. A worker that inflated a
    # bomb into memory would pass 2 GiB; a Ray worker with trafilatura loaded stays well under one.
    assert 0 < memory.peak < 1536 * MiB, f"{memory.peak / MiB:.0f} MiB in {memory.peak_name}"
    print(f"\nhostile corpus: {len(corpus.expected)} files written in {corpus.seconds:.1f} s; run {seconds:.1f} s "
          f"(job {result.stats['wall_seconds']:.1f} s); peak RSS of a Ray process {memory.peak / MiB:.0f} MiB "
          f"({memory.peak_name})")


# -- readers, without Ray -------------------------------------------------------------------------------------


def test_a_gzip_warc_cut_anywhere_ends_in_exactly_one_counted_reject():
    records = [good_record(k) for k in ("cut-a", "cut-b")]
    last = good_record("cut-c")
    seen = Counter()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "cut.warc.gz")
        for end in range(1, len(last)):  # every byte of the last record's gzip member
            path.write_bytes(b"".join(records) + last[:end])
            got = outcome(read(WarcReader(), path))
            breaks = got["truncated_input"] + got["truncated_record"]
            # cut in the gzip trailer, the record itself is whole: then the cut is still said
            assert breaks == 1 and got["doc"] in (2, 3) and sum(got.values()) == got["doc"] + 1, (end, got)
            seen.update(r for r in got if r != "doc")
    assert set(seen) == {"truncated_input", "truncated_record"}


@pytest.mark.parametrize(("name", "message"), [("lie-long.warc.gz", None),
                                               ("lie-short.warc.gz", "Invalid WARC header"),
                                               ("lie-plain-long.warc", None),
                                               ("huge-header.warc.gz", "Maximum header length exceeded")])
def test_a_record_that_breaks_the_stream_costs_only_itself(corpus: Corpus, name: str, message: str | None):
    """A break is one reject, where reading resumes at the next record start; a Content-Length that runs into the
    next record is its record's `bad_warc_header` alone (it was that and an `unreadable_input` for the break after it,
    two rejects for one record)."""
    path = corpus.root / "web" / name
    table = read(WarcReader(), path)
    assert outcome(table) == corpus.expected[f"web/{name}"]
    if message is not None:
        (detail,) = details(table)["unreadable_input"]
        assert detail.startswith(f"OSError: {message}; reading resumed at byte ")
        at = int(detail.rsplit(" ", 1)[1])
        data = path.read_bytes()
        start = zlib.decompressobj(31).decompress(data[at : at + 4096], 5) if name.endswith(".gz") else data[at:][:5]
        assert start == b"WARC/"  # where the next record really starts
    rows = table.slice(0, table.num_rows - 1).to_pylist()  # all but the end-of-shard marker
    assert [json.loads(r["meta"])["position"] for r in rows] == list(range(len(rows)))  # stable ids, none reused
    assert len({r["id"] for r in rows}) == len(rows)
    urls = [r["url"] for r in rows if r[schema.REASON] is None]
    assert urls == sorted(urls, key=lambda u: int(u.rsplit("-", 1)[1])) and len(urls) == len(set(urls))


def test_a_lying_content_length_past_the_end_keeps_the_records_it_swallowed(corpus: Corpus):
    table = read(WarcReader(), corpus.root / "web" / "lie-past-end.warc.gz")
    assert outcome(table) == {"doc": 3, "truncated_record": 1}
    (detail,) = details(table)["truncated_record"]
    assert detail.endswith(" bytes") and " of " in detail  # what was there of what it claimed


def test_bombs_inflate_no_further_than_max_record_bytes(tmp_path: Path):
    bomb, limit = zeros_member(256), 1 * MiB
    jsonl = tmp_path / "bomb.jsonl.gz"
    jsonl.write_bytes(gzip.compress(jsonl_line("before")) + bomb + gzip.compress(b"\n" + jsonl_line("after")))
    warc = tmp_path / "bomb.warc.gz"
    warc.write_bytes(good_record("before") + warc_record("https://hostile.example/bomb", bomb,
                                                         http_headers="Content-Encoding: gzip\r\n")
                     + good_record("after"))
    for reader, path, detail in ((JsonlReader(max_record_bytes=limit), jsonl, f"{256 * MiB} bytes"),
                                 (WarcReader(max_record_bytes=limit), warc, f"decoded payload over {limit} bytes")):
        with PeakRss(children=False, every_s=0.005) as memory:
            started = time.perf_counter()
            table = read(reader, path)
        assert outcome(table) == {"doc": 2, "too_large": 1}
        assert details(table)["too_large"] == [detail]
        assert memory.peak - memory.baseline < 64 * MiB, (path.name, (memory.peak - memory.baseline) / MiB)
        assert time.perf_counter() - started < 20


def test_a_200_mb_line_costs_one_pass_and_no_memory(tmp_path: Path):
    import tracemalloc

    path = tmp_path / "long.jsonl"
    with path.open("wb") as f:
        f.write(jsonl_line("before") + b'{"text": "')
        for _ in range(LONG_LINE_MIB):
            f.write(b"x" * MiB)
        f.write(b'"}\n' + jsonl_line("after") + b"   \n" + jsonl_line("last").rstrip())
    started = time.perf_counter()
    tracemalloc.start()
    try:
        records = list(JsonlReader().records(str(path)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 20  # joining the line at every read was quadratic: hours
    assert peak < 32 * MiB  # nothing of the long line is kept past max_record_bytes (10 MB)
    assert [(r.position, r.reason) for r in records] == [(0, None), (1, "too_large"), (2, None), (4, None)]
    assert records[1].detail == f"{LONG_LINE_MIB * MiB + 12} bytes" == f"{records[1].raw_bytes} bytes"
    assert json.loads(jsonl_line("last"))["text"] == records[3].text  # a last line without its newline


def test_invalid_utf8_loses_only_its_own_rows(corpus: Corpus, tmp_path: Path):
    table = read(ParquetReader(), corpus.root / "table" / "invalid-utf8.parquet")
    assert outcome(table) == {"doc": 297, "invalid_utf8": 3}  # not the rest of the batch or the file
    assert all(d.startswith("column 'text': 'utf-8' codec can't decode") for d in details(table)["invalid_utf8"])
    table = read(JsonlReader(), corpus.root / "notes" / "invalid-utf8.jsonl")
    assert outcome(table) == {"doc": 2, "invalid_utf8": 1}
    contents = [b"def f():\n    return 1\n", b"caf\xe9 = 1\n", b"x = 2\n"]  # The-Stack-like table, one bad row
    pq.write_table(pa.table({"content": string_column(contents), "path": ["a.py", "b.py", "c.py"]}),
                   tmp_path / "stack.parquet")
    table = read(CodeReader(), tmp_path / "stack.parquet")
    assert outcome(table) == {"doc": 2, "skipped:undecodable": 1}  # the code reader's word for it, as for files


def test_a_50_mb_record_is_too_large_in_every_format(corpus: Corpus, tmp_path: Path):
    table = read(WarcReader(), corpus.root / "web" / "big-page.warc.gz")
    (detail,) = details(table)["too_large"]  # refused by its Content-Length: never read
    assert int(detail.split()[0]) > BIG_PAGE_BYTES and detail.endswith(f" bytes > {10 << 20}")
    pq.write_table(pa.table({"text": ["small", "y" * BIG_PAGE_BYTES, "small too"]}), tmp_path / "big.parquet")
    table = read(ParquetReader(), tmp_path / "big.parquet")
    assert outcome(table) == {"doc": 2, "too_large": 1}
    assert details(table)["too_large"] == [f"{BIG_PAGE_BYTES} bytes"]


@pytest.mark.parametrize(("reader", "name", "detail"), [
    (WarcReader(), "empty.warc.gz", "empty file (0 bytes)"),
    (WarcReader(), "empty.warc", "empty file (0 bytes)"),
    (JsonlReader(), "empty.jsonl", "empty file (0 bytes)"),
    (JsonlReader(), "empty.jsonl.gz", "empty file (0 bytes)"),
    (ParquetReader(), "empty.parquet", "ArrowInvalid: Parquet file size is 0 bytes"),
    (CodeReader(), "empty.tar.gz", "ReadError: empty file"),
])
def test_a_zero_byte_file_is_one_counted_reject(tmp_path: Path, reader, name: str, detail: str):
    path = tmp_path / name
    path.write_bytes(b"")
    table = read(reader, path)
    assert details(table) == {"unreadable_input": [detail]}
    assert table.column(schema.SHARD_ROWS).to_pylist()[-1] == table.num_rows == 2  # the reject and the marker


def test_binaries_in_a_code_shard_are_counted_skips(corpus: Corpus):
    table = read(CodeReader(), corpus.root / "code" / "repo.tar.gz")
    assert outcome(table) == corpus.expected["code/repo.tar.gz"]
    assert sorted(details(table)["skipped:binary"]) == ["blob.txt", "logo.png", "native.so"]
    assert details(table)["skipped:undecodable"] == ["latin1.py: invalid continuation byte at byte 3"]


# -- the extract stage, without Ray ---------------------------------------------------------------------------


def pages_batch(pages: list[bytes]) -> pa.Table:
    rows = [{"id": f"{i:032x}", "source": "web", "url": f"https://x/{i}", "title": None, "text": None, "html": p,
             "meta": "{}", schema.SHARD: "s", schema.STAGE: None, schema.REASON: None, schema.DETAIL: None,
             schema.SHARD_ROWS: None} for i, p in enumerate(pages)]
    return pa.Table.from_pylist(rows, schema=schema.READ_SCHEMA)


def extracted(stage: Extract, pages: list[bytes]) -> list[tuple[str | None, str | None]]:
    out = run_stage(stage, pages_batch(pages))
    return list(zip(out.column(schema.REASON).to_pylist(), out.column(schema.DETAIL).to_pylist(), strict=True))


def test_a_tag_with_a_million_attributes_is_dropped_before_the_parser_sees_it():
    # lxml compares each attribute with all before it, in C: 40,000 of them took 13 s, beyond timeout_s's reach
    stage = Extract(timeout_s=2)
    started = time.perf_counter()
    assert extracted(stage, [many_attributes(10**6)]) == [
        ("too_many_attributes", "a tag at character 12 has over 1000 attributes")]
    assert time.perf_counter() - started < 3

    names = [base62(i).encode() for i in range(300_000)]
    evasions = {  # ways to spell many attributes that a naive scan would miss
        "slashes": b"<div " + b"/".join(names) + b">",
        "quote in a name": b'<div x"  ' + b" ".join(names) + b'">',
        "> in values": b"<div " + b" ".join(n + b'=">"' for n in names) + b">",
        "no spaces after values": b"<div " + b"".join(n + b'="v"' for n in names) + b">",
        "< in names": b"<div " + b" ".join(b"<" + n for n in names) + b">",
        "end tag": b"</div " + b" ".join(names) + b">",
        "script tag": b"<script " + b" ".join(names) + b"></script>",
        "after text with a quote": b'it said x="  <p ' + b" ".join(names) + b">",
    }
    for name, html in evasions.items():
        assert extracted(stage, [b"<html><body>" + html + b"</body></html>"])[0][0] == "too_many_attributes", name
    ordinary = {  # long, but not one crowded tag: parsed as usual
        "svg path": b'<svg><path d="' + b" ".join(b"L%d %d" % (i, i) for i in range(100_000)) + b'"/></svg>',
        "script": b"<script>for (i = 0; i <n; i++) {" + b" x = y + 1;" * 50_000 + b"}</script>",
        "commented out": b"<!-- <div " + b" ".join(names[:5000]) + b"> -->",
        "1000 attributes": b"<div " + b" ".join(names[:1000]) + b">x</div>",
    }
    for name, html in ordinary.items():
        body = b"<html><body>" + html + b"<article><p>" + prose(name).encode() + b"</p></article></body></html>"
        assert extracted(stage, [body])[0][0] is None, name
    assert extracted(Extract(max_tag_attributes=10), [b"<div " + b" ".join(names[:11]) + b">"])[0][0] == \
        "too_many_attributes"


def test_deep_nesting_and_huge_pages_end_as_rejects_in_bounded_time():
    stage = Extract(timeout_s=5)
    started = time.perf_counter()
    (nest,) = extracted(stage, [nested(100_000)])
    assert nest[0] in ("no_text", "timeout")  # libxml2 stops at its depth limit: nothing left to extract
    big = b"<html><body><p>" + b"a big page " * (BIG_PAGE_BYTES // 11) + b"</p></body></html>"
    assert extracted(stage, [big]) == [("too_large", f"{len(big)} bytes")]  # never parsed
    assert time.perf_counter() - started < 10


def test_invalid_utf8_in_a_page_is_decoded_not_dropped():
    (result,) = extracted(Extract(timeout_s=5), [invalid_utf8_page("utf8")])
    assert result == (None, None)


# -- recipes: refused before any work starts, with key, line and what was expected ---------------------------


def recipe_problems(text: str) -> list[tuple[str, int, str]]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, "hostile.yaml")
    return [(p.path, p.line, p.message) for p in caught.value.problems]


def test_files_in_a_compression_their_reader_does_not_undo_are_refused(tmp_path: Path):
    """An `.xz` JSONL was read as text (one `invalid_utf8` reject), a `.bz2` WARC as "Invalid WARC header"."""
    import bz2
    import lzma

    (tmp_path / "a.jsonl.xz").write_bytes(lzma.compress(b'{"text": "hello"}\n'))
    (tmp_path / "b.warc.bz2").write_bytes(bz2.compress(b"WARC/1.0\r\n"))
    (tmp_path / "c.jsonl.bz2").write_bytes(bz2.compress(b'{"text": "hello"}\n'))
    problems = recipe_problems(f"""\
name: packed
sources:
  - {{name: notes, format: jsonl, paths: ["{tmp_path}/*.jsonl.*"]}}
  - {{name: web, format: warc, paths: ["{tmp_path}/*.warc.bz2"]}}
stages: [extract: {{}}]
""")
    assert problems == [
        ("sources[0].paths[0]", 3, f"'{tmp_path}/*.jsonl.*' matches '{tmp_path}/a.jsonl.xz': .xz files are not read "
                                   "as jsonl (compressed with gzip, zstd, bz2 or lz4, or not); decompress them, or "
                                   "compress them so"),
        ("sources[1].paths[0]", 4, f"'{tmp_path}/*.warc.bz2' matches '{tmp_path}/b.warc.bz2': .bz2 files are not "
                                   "read as warc (compressed with gzip, zstd or lz4, or not); decompress them, or "
                                   "compress them so"),
    ]


def test_a_10_gb_seq_len_is_refused(corpus: Corpus):
    problems = recipe_problems(f"""\
name: huge
sources: [{{name: notes, format: jsonl, paths: ["{corpus.root}/notes/good.jsonl"]}}]
tokenizer: {{train: {{vocab_size: 1000}}}}
pack: {{seq_len: 10000000000}}
""")
    assert problems == [("pack.seq_len", 4, "Input should be less than or equal to 1048576")]


def test_wrong_types_are_each_named_with_key_and_line(corpus: Corpus):
    problems = recipe_problems(f"""\
name: typed
seed: forty-two
sources:
  - name: web
    format: warc
    paths: {corpus.root}/web/*.warc.gz
    max_record_bytes: lots
stages:
  - length: {{min_words: many}}
  - extract: {{timeout_s: [1]}}
rejects: {{sample: 2}}
tokenizer: {{train: {{vocab_size: 1e12}}}}
pack: {{seq_len: 2048.5, shard_rows: -1}}
""")
    assert problems == [
        ("seed", 2, "Input should be a valid integer, unable to parse string as an integer, got 'forty-two'"),
        ("sources[0].paths", 6, f"Input should be a valid list, got '{corpus.root}/web/*.warc.gz'"),
        ("sources[0].max_record_bytes", 7,
         "Input should be a valid integer, unable to parse string as an integer, got 'lots'"),
        ("stages[0].length.min_words", 9,
         "Input should be a valid integer, unable to parse string as an integer, got 'many'"),
        ("stages[1].extract.timeout_s", 10, "Input should be a valid number, got [1]"),
        ("rejects.sample", 11, "Input should be less than or equal to 1"),
        ("tokenizer.train.vocab_size", 12,  # YAML reads 1e12 as a string
         "Input should be a valid integer, unable to parse string as an integer, got '1e12'"),
        ("pack.seq_len", 13, "Input should be a valid integer, got a number with a fractional part"),
        ("pack.shard_rows", 13, "Input should be greater than or equal to 1"),
    ]


def test_missing_paths_are_refused_before_any_work(corpus: Corpus):
    problems = recipe_problems(f"""\
name: missing
sources:
  - {{name: web, format: warc, paths: ["{corpus.root}/web/*.warc.gz", "/nonexistent/crawl/*.warc.gz"]}}
  - {{name: notes, format: jsonl, paths: ["/nonexistent/notes.jsonl"]}}
stages: [extract: {{}}]
tokenizer: {{model: /nonexistent/tokenizer.model}}
pack: {{seq_len: 2048}}
""")
    assert problems == [
        ("sources[0].paths[1]", 3, "no file matches '/nonexistent/crawl/*.warc.gz'"),
        ("sources[1].paths[0]", 4, "no file matches '/nonexistent/notes.jsonl'"),
        ("tokenizer.model", 6, "no tokenizer model at '/nonexistent/tokenizer.model'"),
    ]


@pytest.mark.parametrize(("text", "expected"), [
    ("- a list, not a recipe\n", ("", 1, "YAML mapping (name:, sources:, stages: ...)")),
    ("name: x\nsources: [{name: w\n", ("", 3, "not valid YAML: expected ',' or '}', but got '<stream end>'")),
    ("name: x\nsources: {name: w, format: jsonl, paths: [a]}\n",
     ("sources", 2, "Input should be a valid list, got {'name': 'w', 'format': 'jsonl', 'paths': ['a']}")),
    ("name: x\nsources: [{name: w, format: jsonl, paths: [a], max_record_bytes: 0}]\n",
     ("sources[0].max_record_bytes", 2, "Input should be greater than 0")),
])
def test_malformed_recipes_say_where(text: str, expected: tuple[str, int, str]):
    path, line, message = recipe_problems(text)[0]
    assert (path, line) == expected[:2] and expected[2] in message


def test_curate_run_refuses_a_bad_recipe_and_writes_nothing(corpus: Corpus, tmp_path: Path, capsys):
    from pipelines.cli import main

    recipe = tmp_path / "huge.yaml"
    recipe.write_text(f"""\
name: huge
sources: [{{name: notes, format: jsonl, paths: ["{corpus.root}/notes/good.jsonl"]}}]
tokenizer: {{train: {{vocab_size: 1000}}}}
pack: {{seq_len: 10000000000}}
""")
    out = tmp_path / "out"
    assert main(["run", str(recipe), "--output", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{recipe}:4:17: pack.seq_len: Input should be less than or equal to 1048576" in err
    assert "nothing was run" in err and not out.exists()
