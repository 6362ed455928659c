"""A seeded mutator over real input files, and the promises every reader keeps whatever it is given.

Seeds are real files: WARC/WET crawls and JSON Lines of `../shared/data` (or `$CURATION_TESTDATA`) and
`recipes/sample/`, Parquet made from those JSON Lines' rows, and repository archives, folders and The-Stack-like
JSON Lines made from a package installed in this environment. A case is one integer: it picks a seed and one to
three mutations (truncation, bit flips, invalid UTF-8 and surrogates, huge lines, deep JSON nesting, bombs, links,
format-aware ones such as a lying WARC Content-Length, a symbolic-link member of an archive or a binary Parquet
text column), applied to the stored bytes or to what they decompress to. The same integer always builds the same
case: `describe(case)` is its reproducer.

What is checked (`shard_problems`, `read_case`, `job_problems`): the read ends and raises nothing; every row is a
document, a counted skip or a reject with a reason, the end-of-shard marker counts them; no id is both kept and
rejected; strings are valid UTF-8; no URL is left in WARC's angle brackets; a plain JSON Lines file gives one
record per line that is not blank (no bad line costs the lines after it); nothing a link points at outside the
input comes through; and at job level `records_read == kept + dropped + skipped` with the ids in `documents/` and
`rejects/` disjoint.
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import os
import random
import re
import sysconfig
import tarfile
import time
import traceback
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from curation import schema
from curation.readers import read_shard
from tests.support import fuzz_hostile

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ("warc", "wet", "jsonl", "parquet", "code")
SECRET = "FUZZ-SECRET-never-read-through-a-link"  # the text of every file a link points at
MAX_RECORD_BYTES = 256 << 10  # small, so huge lines and big records cost little
MAX_FILE_BYTES = 64 << 10  # the code reader's bound, small for the same reason
BREAKS = {"truncated_record", "truncated_input", "unreadable_input"}  # reasons that give up the rest of a file
HOSTILE_SHARE = 0.3  # cases of `fuzz_hostile`'s kinds (corrupt tails, lying lengths, binary bodies...)
INVALID_UTF8 = (b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xe2\x82", b"\xf0\x28\x8c\x28", b"\xc0\xaf", b"\x80\x80\x80")
SURROGATE_BYTES = (b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\xb2\x80")  # CESU-8 / WTF-8 lone surrogates
SURROGATE_ESCAPES = (b"\\ud800", b"\\udfff", b"\\ud83d", b"\\ud800\\ud800")


def testdata() -> Path | None:
    """The shared real data folder, if present."""
    folder = Path(os.environ.get("CURATION_TESTDATA") or ROOT.parent / "shared" / "data")
    return folder if folder.is_dir() else None


# -- seeds -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    format: str
    name: str  # its file name (the extension says the codec), or a folder name for code folders
    data: bytes = b""
    files: tuple[tuple[str, bytes], ...] = ()  # code folders and archives: (path in the repository, bytes)


def _jsonl_rows(data: bytes) -> list[dict[str, Any]]:
    """The objects of a JSON Lines seed (a sample may hold deliberately bad lines: those are left out)."""
    rows = []
    for line in gzip.decompress(data).split(b"\n"):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        rows += [row] if isinstance(row, dict) else []
    return rows


def _parquet(rows: list[dict[str, Any]], *, binary_text: bool = False) -> bytes:
    table = pa.Table.from_pylist([{"text": r.get("text"), "url": r.get("url") or r.get("id"),
                                   "id": str(r.get("id"))} for r in rows])
    if binary_text:
        table = table.set_column(0, "text", table.column("text").cast(pa.binary()))
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=8)
    return sink.getvalue()


def _package_files(limit: int = 8) -> tuple[tuple[str, bytes], ...]:
    """A small real repository: a few files of an installed package and its licence."""
    site = Path(sysconfig.get_paths()["purelib"])
    for package in ("idna", "yaml", "click", "requests"):
        folder = site / package
        if not folder.is_dir():
            continue
        files = sorted(p for p in folder.glob("*.py") if p.stat().st_size < 40_000)[:limit]
        licences = sorted(site.glob(f"{package}-*.dist-info/licen[cs]es/*")) + sorted(
            site.glob(f"{package}-*.dist-info/LICEN[CS]E*"))
        out = [(f"{package}/{p.name}", p.read_bytes()) for p in files]
        out += [("LICENSE", licences[0].read_bytes())] if licences else []
        return tuple(out)
    return (("pkg/a.py", b"def a():\n    return 1\n"),)


def load_seeds() -> dict[str, list[Seed]]:
    """Seed files per format (an empty list where the shared data is absent and nothing else stands in)."""
    seeds: dict[str, list[Seed]] = {f: [] for f in FORMATS}
    sample = ROOT / "recipes" / "sample"
    warcs = sorted(sample.glob("crawl-*.warc.gz"))
    jsonls = [sample / "notes.jsonl.gz"]
    data = testdata()
    if data is not None:
        warcs += [data / "warc" / p for p in (
            "resiliparse/block-sized-records.warc.gz", "resiliparse/clipped.warc.gz", "resiliparse/warcfile.warc.gz",
            "commoncrawl_whirlwind/whirlwind.warc.gz", "warcio/example.warc.gz", "warcio/example.warc",
            "warcio/example-iana.org-chunked.warc", "warcio/example-trunc.warc", "warcio/example-resource.warc.gz",
            "warcio/example-wget-bad-target-uri.warc.gz", "warcio/example-space-in-target-uri.warc.gz")]
        seeds["wet"] += [Seed("wet", "whirlwind.warc.wet.gz",
                              (data / "warc/commoncrawl_whirlwind/whirlwind.warc.wet.gz").read_bytes())]
        jsonls += sorted((data / "webtext" / "dolma_ccnet").glob("*.jsonl.gz"))
    seeds["warc"] += [Seed("warc", p.name, p.read_bytes()) for p in warcs if p.is_file()]
    for path in jsonls:
        raw = path.read_bytes()
        seeds["jsonl"] += [Seed("jsonl", path.name, raw), Seed("jsonl", path.name.removesuffix(".gz"),
                                                              gzip.decompress(raw))]
        rows = _jsonl_rows(raw)
        seeds["parquet"] += [Seed("parquet", path.name.replace(".jsonl.gz", ".parquet"), _parquet(rows)),
                             Seed("parquet", path.name.replace(".jsonl.gz", "-binary.parquet"),
                                  _parquet(rows, binary_text=True))]
        if not seeds["wet"]:  # WET records made from the same real texts
            seeds["wet"].append(Seed("wet", "texts.warc.wet.gz", _wet(rows[:6])))
    files = _package_files()
    stack = b"".join(json.dumps({"content": data.decode("utf-8", "replace"), "path": path, "repo": "org/repo",
                                 "license": ["MIT"], "language": None}).encode() + b"\n" for path, data in files)
    seeds["code"] += [Seed("code", "repo.tar.gz", files=files), Seed("code", "repo.zip", files=files),
                      Seed("code", "repo", files=files), Seed("code", "stack.jsonl", stack),
                      Seed("code", "stack.jsonl.gz", gzip.compress(stack, mtime=0))]
    return seeds


def _wet(rows: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    for i, row in enumerate(rows):
        body = str(row.get("text") or "").encode()
        head = (f"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: https://example.org/{i}\r\n"
                f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{i:012d}>\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        out.write(gzip.compress(head + body + b"\r\n\r\n"))
    return out.getvalue()


# -- mutations ---------------------------------------------------------------------------------------------------


def _at(rng: random.Random, data: bytes) -> int:
    return rng.randrange(len(data) + 1)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: _at(rng, data)]


def bit_flips(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.choice((1, 2, 8, 64))):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def invalid_utf8(rng: random.Random, data: bytes) -> bytes:
    i = _at(rng, data)
    return data[:i] + rng.choice(INVALID_UTF8 + SURROGATE_BYTES) + data[i:]


def surrogate_escape(rng: random.Random, data: bytes) -> bytes:
    """A JSON `\\ud800` escape inside a string value (after a quote, where JSON Lines hold their text)."""
    quotes = [i for i in range(len(data)) if data[i : i + 1] == b'"'][:5000]
    i = rng.choice(quotes) + 1 if quotes else _at(rng, data)
    return data[:i] + rng.choice(SURROGATE_ESCAPES) + data[i:]


def huge_line(rng: random.Random, data: bytes) -> bytes:
    i = _at(rng, data)
    filler = rng.choice((b"a", b"\xff", b"{", b" ", b"\xed\xa0\x80"))
    return data[:i] + filler * (MAX_RECORD_BYTES * rng.choice((1, 2, 4)) // len(filler) + 1) + data[i:]


def splice(rng: random.Random, data: bytes) -> bytes:
    """A piece of the file copied elsewhere in it (a repeated or overlapping record)."""
    if len(data) < 2:
        return data
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.randrange(1, 4096))
    i = _at(rng, data)
    return data[:i] + data[a:b] + data[i:]


def blank_lines(rng: random.Random, data: bytes) -> bytes:
    i = _at(rng, data)
    return data[:i] + rng.choice((b"\n", b"\r\n", b" \n")) * rng.choice((10, 10_000)) + data[i:]


def nul_bytes(rng: random.Random, data: bytes) -> bytes:
    i = _at(rng, data)
    return data[:i] + b"\0" * rng.choice((1, 16, 9000)) + data[i:]


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    """A line of JSON nested far deeper than a recursive parser goes (still under MAX_RECORD_BYTES)."""
    i = data.find(b"\n", _at(rng, data)) + 1 or len(data)
    depth = rng.choice((1_000, 100_000))
    nested = b"[" * depth + b"]" * depth if rng.random() < 0.5 else b'{"a":' * depth + b"1" + b"}" * depth
    return data[:i] + b'{"text": ' + nested + b"}\n" + data[i:]


def content_length_lie(rng: random.Random, data: bytes) -> bytes:
    """A WARC record's Content-Length changed: shorter, longer, zero or far past the end of the file."""
    found = list(re.finditer(rb"Content-Length: *(\d+)", data))
    if not found:
        return data
    m = rng.choice(found)
    n = int(m.group(1))
    lie = rng.choice((0, max(n - rng.randrange(1, 64), 0), n + rng.randrange(1, 4096), 10**12))
    return data[: m.start(1)] + str(lie).encode() + data[m.end(1) :]


def angle_uri(rng: random.Random, data: bytes) -> bytes:
    """WARC/1.0's `WARC-Target-URI: <https://...>` spelling (1.1 dropped the brackets)."""
    found = list(re.finditer(rb"WARC-Target-URI: *([^\r\n<>]+)", data))
    if not found:
        return data
    m = rng.choice(found)
    return data[: m.start(1)] + b"<" + m.group(1) + b">" + data[m.end(1) :]


BYTE_MUTATIONS = {f.__name__: f for f in (truncate, bit_flips, invalid_utf8, surrogate_escape, huge_line, splice,
                                          blank_lines, nul_bytes, deep_nesting, content_length_lie, angle_uri)}


def _codec(name: str) -> str | None:
    return "gzip" if name.endswith((".gz", ".tgz")) else "bz2" if name.endswith(".bz2") else None


def _decompress(name: str, data: bytes) -> bytes:
    """What a compressed seed holds, as far as it can be read (a seed may be cut short on purpose)."""
    codec = _codec(name)
    if codec == "bz2":
        return bz2.decompress(data)
    return data if codec is None else fuzz_hostile.inflate_gzip(data)


def _compress(name: str, data: bytes) -> bytes:
    codec = _codec(name)
    return (gzip.compress(data, compresslevel=1, mtime=0) if codec == "gzip" else
            bz2.compress(data) if codec == "bz2" else data)


def bomb(rng: random.Random, name: str, mib: int) -> bytes:
    """A small compressed file inflating to `mib` MiB: zeros, blank lines or one line without an end."""
    unit = rng.choice((b"\0", b"\n", b"a", b" \n"))
    return gzip.compress(unit * ((mib << 20) // len(unit)), compresslevel=9, mtime=0)


def blank_member(mib: int, line: bytes = b"\n") -> bytes:
    """One gzip member of `mib` MiB of blank lines, ~1 kB per MiB (a full flush after every MiB, so each
    compresses to the same bytes): built in well under a second."""
    chunk = line * ((1 << 20) // len(line))
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    same = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(chunk, crc)
    trailer = crc.to_bytes(4, "little") + ((mib * len(chunk)) & 0xFFFFFFFF).to_bytes(4, "little")
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first + same * (mib - 1) + deflate.flush() + trailer



# -- cases -------------------------------------------------------------------------------------------------------


@dataclass
class Case:
    seed: int
    format: str
    seed_name: str
    mutations: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # relative path in the case folder -> bytes
    links: dict[str, str] = field(default_factory=dict)  # relative path of a link -> format of its outside target
    pattern: str = "*"  # what the source's `paths` names inside the case folder
    expect: fuzz_hostile.Expect | None = None  # what the read must give, where it can be known

    def describe(self) -> str:
        return f"case {self.seed}: {self.format} seed {self.seed_name!r}, mutations {self.mutations}"


def case_numbers(seeds: dict[str, list[Seed]], fmt: str, count: int, start: int = 0) -> list[int]:
    """`count` case numbers of one format (`make_case` takes the format from the number)."""
    formats = [f for f in FORMATS if seeds[f]]
    return [(start + i) * len(formats) + formats.index(fmt) for i in range(count)]


def make_case(seeds: dict[str, list[Seed]], seed: int, *, bomb_mib: int = 4) -> Case:
    """The case numbered `seed`: always the same files for the same number."""
    rng = random.Random(seed)
    formats = [f for f in FORMATS if seeds[f]]
    fmt = formats[seed % len(formats)]
    picked = rng.choice(seeds[fmt])
    case = Case(seed, fmt, picked.name)
    hostile = random.Random(f"round three {seed}")  # apart: the other cases stay what they were
    if not (hostile.random() < HOSTILE_SHARE and fuzz_hostile.hostile_case(
            hostile, case, picked, _decompress(picked.name, picked.data), MAX_RECORD_BYTES)):
        if picked.files:  # a repository: archive or folder
            _code_case(rng, case, picked)
        else:
            case.files[picked.name] = _mutate_file(rng, case, picked.name, picked.data, bomb_mib)
    if rng.random() < 0.15:  # a link among the inputs, to a file outside them holding a secret
        name = f"linked{_suffix(picked.name)}" if fmt != "code" else "linked.py"
        case.links[f"{picked.name}/{name}" if case.pattern.endswith("/**") else name] = fmt
        case.mutations.append(f"link {name}")
    return case


def _suffix(name: str) -> str:
    for ext in (".warc.wet.gz", ".jsonl.gz", ".warc.gz", ".tar.gz", ".parquet", ".jsonl", ".warc", ".zip", ".py"):
        if name.endswith(ext):
            return ext
    return "." + name.rsplit(".", 1)[-1]


def _mutate_file(rng: random.Random, case: Case, name: str, data: bytes, bomb_mib: int) -> bytes:
    if rng.random() < 0.04:
        case.mutations.append("empty")
        return b""
    if _codec(name) and rng.random() < 0.06:
        case.mutations.append(f"bomb({bomb_mib} MiB)")
        return bomb(rng, name, bomb_mib)
    if case.format == "parquet":  # its values mostly: a byte changed in a Parquet file most often loses the footer
        for _ in range(rng.choice((1, 1, 2))):
            data = _parquet_values(rng, case, data)
        if rng.random() < 0.7:
            return data
    inner = _codec(name) is not None and rng.random() < 0.7  # mutate what the codec holds, then recompress
    if inner:
        data = _decompress(name, data)
    for _ in range(rng.choice((1, 1, 2, 3))):
        mutation = rng.choice(list(BYTE_MUTATIONS))
        data = BYTE_MUTATIONS[mutation](rng, data)
        case.mutations.append(("inner " if inner else "") + mutation)
    return _compress(name, data) if inner else data


def _parquet_values(rng: random.Random, case: Case, data: bytes) -> bytes:
    """Values a Parquet writer may store: invalid UTF-8 in a string column, binary text, nulls, numbers."""
    table = pq.read_table(io.BytesIO(data))
    kind = rng.choice(("invalid_utf8", "surrogate", "null_text", "int_text", "huge_text", "binary_text"))
    case.mutations.append(f"parquet {kind}")
    text = table.column("text")
    texts: list[Any] = (text.cast(pa.binary()) if text.type in (pa.string(), pa.binary()) else
                        pa.array([str(v).encode() for v in text.to_pylist()])).to_pylist()  # no UTF-8 check
    i = rng.randrange(len(texts)) if texts else 0
    if texts:
        if kind in ("invalid_utf8", "surrogate"):
            bad = rng.choice(INVALID_UTF8 if kind == "invalid_utf8" else SURROGATE_BYTES)
            texts[i] = (texts[i] or b"") + bad
        elif kind == "null_text":
            texts[i] = None
        elif kind == "huge_text":
            texts[i] = b"word " * (MAX_RECORD_BYTES // 4)
    if kind == "int_text":
        column = pa.array(list(range(len(texts))), pa.int64())
    else:
        column = pa.array(texts, pa.binary())
        if kind != "binary_text":
            column = column.view(pa.string())  # unvalidated: as a writer that does not check UTF-8 stores it
    table = table.set_column(table.schema.get_field_index("text"), "text", column)
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=rng.choice((2, 8, 64)))
    return sink.getvalue()


def _code_case(rng: random.Random, case: Case, seed: Seed) -> None:
    files = dict(seed.files)
    for _ in range(rng.choice((1, 2, 3))):
        path = rng.choice(sorted(files))
        kind = rng.choice(("bytes", "bytes", "nul", "huge", "empty", "traversal", "vcs", "binary_name"))
        if kind == "bytes":
            mutation = rng.choice(list(BYTE_MUTATIONS))
            files[path] = BYTE_MUTATIONS[mutation](rng, files[path])
            case.mutations.append(f"file {path}: {mutation}")
            continue
        case.mutations.append(f"file {path}: {kind}")
        if kind == "nul":
            files[path] = nul_bytes(rng, files[path])
        elif kind == "huge":
            files[path] = b"x = 1\n" * (MAX_FILE_BYTES // 6 + 10)
        elif kind == "empty":
            files[path] = b""
        elif kind == "traversal":
            files[f"../../{path.rsplit('/', 1)[-1]}" if seed.name.endswith((".zip", ".tar.gz")) else
                  f"sub/{path}"] = files.pop(path)
        elif kind == "vcs":
            files[".git/config"] = b"[core]\n\tbare = false\n"
        else:
            files[path.rsplit(".", 1)[0] + ".pyc"] = files.pop(path)
    if seed.name.endswith(".tar.gz"):
        case.files[seed.name] = _tar(rng, case, files)
    elif seed.name.endswith(".zip"):
        case.files[seed.name] = _zip(rng, case, files)
    else:
        case.pattern = f"{seed.name}/**"
        case.files.update({f"{seed.name}/{p}": data for p, data in files.items() if not p.startswith("../")})
        return
    if rng.random() < 0.5:  # and the archive's own bytes
        mutation = rng.choice(["truncate", "bit_flips", "splice"])
        case.files[seed.name] = BYTE_MUTATIONS[mutation](rng, case.files[seed.name])
        case.mutations.append(f"archive: {mutation}")


def _tar(rng: random.Random, case: Case, files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(f"repo/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if rng.random() < 0.4:
            kind, target = rng.choice(((tarfile.SYMTYPE, "/etc/passwd"), (tarfile.LNKTYPE, f"repo/{next(iter(files))}"),
                                       (tarfile.SYMTYPE, "../../.."), (tarfile.FIFOTYPE, ""), (tarfile.CHRTYPE, "")))
            member = tarfile.TarInfo(f"repo/special{kind.decode()}.py")
            member.type, member.linkname = kind, target
            tar.addfile(member)
            case.mutations.append(f"tar member type {kind!r} -> {target!r}")
    return buffer.getvalue()


def _zip(rng: random.Random, case: Case, files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(f"repo/{path}", data)
        if rng.random() < 0.4:
            link = zipfile.ZipInfo("repo/passwd.py")
            link.create_system, link.external_attr = 3, (0o120777 << 16)
            archive.writestr(link, "../../../../etc/passwd")
            case.mutations.append("zip symlink entry")
    return buffer.getvalue()


def _secret_bytes(fmt: str, name: str) -> bytes:
    """The outside file a link points at: a valid input of the format whose only text is SECRET."""
    if fmt in ("warc", "wet"):
        kind = "response" if fmt == "warc" else "conversion"
        body = (f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><p>{SECRET}</p></body></html>"
                if fmt == "warc" else SECRET).encode()
        head = (f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Target-URI: https://secret.example/\r\n"
                f"WARC-Record-ID: <urn:uuid:11111111-1111-1111-1111-111111111111>\r\n"
                f"Content-Type: {'application/http; msgtype=response' if fmt == 'warc' else 'text/plain'}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        return _compress(name, head + body + b"\r\n\r\n")
    if fmt == "parquet":
        return _parquet([{"text": SECRET, "url": "https://secret.example/", "id": "secret"}])
    if fmt == "jsonl":
        return _compress(name, json.dumps({"text": SECRET}).encode() + b"\n")
    return (SECRET + "\n").encode()


def write_case(case: Case, folder: Path) -> Path:
    """The case's files under `folder/input`, its links' targets under `folder/outside`; returns the glob."""
    inputs, outside = folder / "input", folder / "outside"
    for path, data in case.files.items():
        target = inputs / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    inputs.mkdir(parents=True, exist_ok=True)
    for path, fmt in case.links.items():
        secret = outside / f"secret{_suffix(path)}"
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_bytes(_secret_bytes(fmt, secret.name))
        (inputs / path).parent.mkdir(parents=True, exist_ok=True)
        (inputs / path).symlink_to(secret)
    return inputs / case.pattern


# -- what every read must keep ---------------------------------------------------------------------------------


def source_yaml(fmt: str, glob: Path) -> str:
    """The recipe source reading a case: small record and file bounds, so that huge lines cost little."""
    code = f", code: {{max_file_bytes: {MAX_FILE_BYTES}}}" if fmt == "code" else ""
    return f"{{name: {fmt}, format: {fmt}, paths: ['{glob}'], max_record_bytes: {MAX_RECORD_BYTES}{code}}}"


def shard_problems(tables: list[pa.Table]) -> list[str]:
    """What is wrong with one shard's batches (empty: nothing)."""
    if not tables:
        return ["no batch at all (not even the end-of-shard marker)"]
    problems = []
    table = pa.concat_tables(tables)
    try:
        table.validate(full=True)  # every string valid UTF-8, offsets sound
    except pa.ArrowInvalid as exc:
        problems.append(f"invalid batch: {exc}")
    reasons = table.column(schema.REASON).to_pylist()
    markers = [i for i, r in enumerate(reasons) if r == schema.END_OF_SHARD]
    if markers != [table.num_rows - 1]:
        problems.append(f"end-of-shard markers at rows {markers} of {table.num_rows}")
    elif table.column(schema.SHARD_ROWS)[-1].as_py() != table.num_rows:
        problems.append(f"marker counts {table.column(schema.SHARD_ROWS)[-1].as_py()} rows, {table.num_rows} came")
    ids = Counter(table.column("id").to_pylist()[:-1])
    if twice := [i for i, n in ids.items() if n > 1]:
        problems.append(f"{len(twice)} ids on more than one row (kept and rejected?)")
    for row in table.slice(0, max(table.num_rows - 1, 0)).to_pylist():
        if row[schema.REASON] is None and not isinstance(row["text"], str) and not isinstance(row["html"], bytes):
            problems.append(f"a document without text or html at {row['meta'][:120]}")
        if row[schema.REASON] == "":
            problems.append("a reject without a reason")
        if row[schema.REASON] is None and (row["url"] or "").startswith("<") and (row["url"] or "").endswith(">"):
            problems.append(f"a URL still in angle brackets: {row['url'][:120]}")
        if row["meta"] is not None and (why := fuzz_hostile.strict_json(row["meta"])) is not None:
            problems.append(f"meta is no strict JSON ({why}): {row['meta'][:120]}")
        seen = " ".join(str(row[c]) for c in ("text", "html", "meta", "url", "title", schema.DETAIL))
        if SECRET in seen:
            problems.append(f"a link was followed out of the input: {row[schema.REASON] or 'document'}")
    return problems


def expected_records(case: Case) -> int | None:
    """Records a plain JSON Lines case must give, whatever its lines hold: one per line that is not blank (or
    too large to look at), so that no bad line costs the lines after it; None where it cannot be known."""
    if case.format not in ("jsonl", "code") or len(case.files) != 1 or not next(iter(case.files)).endswith("l"):
        return None
    (name, data), = case.files.items()
    if _codec(name):
        return None
    links = len(case.links)  # each its own shard of one `link` skip, in every format
    if not data:
        return 1 + links  # the empty-file reject
    return links + sum(1 for line in data.split(b"\n") if len(line) > MAX_RECORD_BYTES or line.strip())


@dataclass
class Outcome:
    case: Case
    problems: list[str]
    seconds: float
    rows: Counter


def read_case(case: Case, folder: Path) -> Outcome:
    """Lists the case's input as a job would (links included) and reads each shard through `read_shard`."""
    from curation.recipe import Source
    from curation.shards import list_shards

    glob = write_case(case, folder)
    started = time.perf_counter()
    problems: list[str] = []
    rows: Counter = Counter()
    breaks: list[str] = []  # why the rest of a file was given up
    titles: list[str] = []
    bytes_in = 0
    try:
        source = Source.model_validate(yaml.safe_load(source_yaml(case.format, glob)))
        for shard in list_shards(SimpleNamespace(sources=[source])):  # all a recipe gives the listing
            tables = list(read_shard(source.reader(), shard.uri, source=case.format, shard=shard.name))
            problems += shard_problems(tables)
            for table in tables:
                reasons = table.column(schema.REASON).to_pylist()
                rows.update(r or "document" for r in reasons)
                breaks += [d for r, d in zip(reasons, table.column(schema.DETAIL).to_pylist(), strict=True)
                           if r in ("unreadable_input", "truncated_input")]
                titles += [t for r, t in zip(reasons, table.column("title").to_pylist(), strict=True)
                           if r is None and t]
                bytes_in += pc.sum(table.column(schema.metric_column("bin", "read"))).as_py() or 0
    except BaseException as exc:  # a fuzz failure, whatever it is
        if isinstance(exc, KeyboardInterrupt):
            raise
        problems.append("raised: " + "".join(traceback.format_exception(exc)[-6:]))
    if not problems and rows["skipped:link"] < len(case.links):
        problems.append(f"{len(case.links)} links in the input, {rows['skipped:link']} `link` skips: {dict(rows)}")
    expected, records = expected_records(case), sum(rows.values()) - rows[schema.END_OF_SHARD]
    if expected is not None and not problems and records != expected:
        problems.append(f"{records} records from {expected} lines that are not blank: {dict(rows)}; {breaks}")
    if case.expect is not None and not problems:
        problems += _unmet(case, folder, rows, titles, bytes_in)
    return Outcome(case, problems, time.perf_counter() - started, rows)


def _unmet(case: Case, folder: Path, rows: Counter, titles: list[str], bytes_in: int) -> list[str]:
    """What a case of `fuzz_hostile` was to give and did not (links, each its own shard, left aside)."""
    expect = case.expect
    assert expect is not None
    own = Counter({r: n for r, n in rows.items() if r not in (schema.END_OF_SHARD, "skipped:link")})
    problems = []
    if expect.records is not None and sum(own.values()) not in expect.records:
        problems.append(f"{sum(own.values())} records, expected {sorted(expect.records)}: {dict(own)}")
    if expect.baseline is not None:
        plain = read_case(Case(case.seed, case.format, case.seed_name, files=expect.baseline), folder / "baseline")
        wanted = Counter({r: n for r, n in plain.rows.items() if r != schema.END_OF_SHARD}) + expect.plus
        merged = expect.merges_last_break and bool(BREAKS & set(plain.rows)) and \
            own["document"] == wanted["document"] and sum(own.values()) == sum(wanted.values()) - 1
        if plain.problems or (own != wanted and not merged):
            problems.append(f"rows {dict(own)}, expected {dict(wanted)} (the input without it, and "
                            f"{dict(expect.plus)}){plain.problems}")
    if expect.title_has is not None and not any(expect.title_has in t for t in titles):
        problems.append(f"no document title holds {expect.title_has!r}: {titles[:20]}")
    if expect.max_bytes_in is not None and bytes_in > expect.max_bytes_in:
        problems.append(f"bytes_in {bytes_in} over {expect.max_bytes_in}")
    return problems


# -- a whole job ---------------------------------------------------------------------------------------------------


def job_recipe(globs: dict[str, Path], output: Path) -> str:
    sources = ", ".join(source_yaml(fmt, glob) for fmt, glob in globs.items())
    web = [f for f in globs if f == "warc"]
    stages = (f"  - extract: {{engine: fast, only: [{', '.join(web)}]}}\n" if web else "") + \
        "  - length: {min_words: 5}\n"
    return (f"name: fuzz\noutput: {output}\nexecutor: local\nlocal: {{workers: 1}}\nsources: [{sources}]\n"
            f"stages:\n{stages}rejects: {{sample: 1.0, max_per_reason: 1000000}}\n")


def job_problems(job_dir: Path) -> list[str]:
    """The job-level promises: the funnel adds up, documents and rejects are disjoint and all written."""
    problems = []
    stats = json.loads((job_dir / "stats.json").read_text())
    stages = stats["stages"]
    kept = stats["documents"]["out"]
    dropped = sum(sum(s["dropped"].values()) for s in stages)
    skipped = sum(sum(s["skipped"].values()) for s in stages)
    if stats["documents"]["records_read"] != kept + dropped + skipped:
        problems.append(f"records_read {stats['documents']['records_read']} != kept {kept} + dropped {dropped} "
                        f"+ skipped {skipped}")
    documents = [pq.read_table(p, columns=["id", "text", "meta"]) for p in (job_dir / "documents").glob("*.parquet")]
    rejects = [pq.read_table(p, columns=["id"]) for p in sorted((job_dir / "rejects").rglob("*.parquet"))]
    kept_ids = [i for t in documents for i in t.column("id").to_pylist()]
    rejected_ids = [i for t in rejects for i in t.column("id").to_pylist()]
    if len(kept_ids) != kept or len(set(kept_ids)) != kept:
        problems.append(f"documents/ holds {len(kept_ids)} rows ({len(set(kept_ids))} ids), stats say {kept}")
    if len(rejected_ids) != dropped:
        problems.append(f"rejects/ holds {len(rejected_ids)} rows, stats say {dropped} dropped")
    if both := set(kept_ids) & set(rejected_ids):
        problems.append(f"{len(both)} documents both kept and rejected")
    if any(SECRET in str(v) for t in documents for c in ("text", "meta") for v in t.column(c).to_pylist()):
        problems.append("a link was followed out of the input: its text is in documents/")
    return problems


JOB_CASES_START = 1_000_000  # job cases are numbered apart from the reader cases


def job_cases(seeds: dict[str, list[Seed]], job: int, *, bomb_mib: int = 4) -> list[Case]:
    """The cases of job number `job`: one of each format."""
    formats = [f for f in FORMATS if seeds[f]]
    first = JOB_CASES_START + job * len(formats)
    return [make_case(seeds, first + k, bomb_mib=bomb_mib) for k in range(len(formats))]


def run_job(cases: list[Case], folder: Path) -> list[str]:
    """One job over several cases (one source per format, each case's input beside its links)."""
    from curation.recipe import parse_recipe
    from pipelines.run import run

    globs = {case.format: write_case(case, folder / case.format) for case in cases}
    try:
        recipe = parse_recipe(job_recipe(globs, folder / "jobs"), check_paths=False)
        result = run(recipe, output=str(folder / "jobs"), quiet=True, kind="local")
        return job_problems(Path(result.job_dir))
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return ["raised: " + "".join(traceback.format_exception(exc)[-6:])]
