"""`code_filters` on real installed code: hand-written libraries kept, protobuf-generated and minified files dropped.

Each package is packed as a repository archive (its folder plus its `.dist-info`) and read by the
`code` reader, so the filter sees what a job would. Then each rule on a small constructed file.
No Ray.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import sysconfig
import tarfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from curation import schema
from curation.apply import run_stage
from curation.readers import CodeOptions, CodeReader, read_shard
from curation.stages.code_filters import CodeFilters

SITE = Path(sysconfig.get_paths()["purelib"])
HAND_WRITTEN = ["requests", "yaml", "click", "jinja2", "flask", "itsdangerous", "packaging", "urllib3", "httpx",
                "starlette", "werkzeug", "attr", "fastapi"]
MINIFIED = ["plotly/package_data/*.js", "plotly/labextension/static/*.js", "ray/dashboard/client/build/**/*.js",
            "ray/dashboard/client/build/**/*.css"]


def _no_cache(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if "__pycache__" in info.name else info


def pack(out: Path, files: dict[str, Path], folders: dict[str, Path] | None = None) -> Path:
    with tarfile.open(out, "w") as tar:  # uncompressed: the gzip path is tested with the reader
        for name, path in (folders or {}).items():
            tar.add(path, arcname=name, filter=_no_cache)
        for name, path in files.items():
            tar.add(path, arcname=name)
    return out


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def dist_info(package: str) -> dict[str, Path]:
    """The installed `.dist-info` folder(s) of the distribution(s) that provide a top-level package."""
    names = {n.lower().replace("-", "_") for n in _distributions().get(package, [])}
    return {f"repo/{d.name}": d for d in SITE.glob("*.dist-info") if d.name.split("-")[0].lower() in names}


def read_and_filter(archive: Path, **options: object) -> tuple[pa.Table, pa.Table]:
    """(the read batch with skips, the documents after `code_filters` with reasons)."""
    read = pa.concat_tables(read_shard(CodeReader(code=CodeOptions(**options)), str(archive), source="code",
                                       shard=archive.name, batch_rows=64))
    docs = read.filter(pa.compute.is_null(read.column(schema.REASON)))
    return read, run_stage(CodeFilters(), docs)


def summary(filtered: pa.Table) -> tuple[int, Counter]:
    reasons = Counter(filtered.column(schema.REASON).to_pylist())
    return filtered.num_rows, reasons


@pytest.fixture(scope="module")
def hand_written(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    tmp = tmp_path_factory.mktemp("hand")
    outs = []
    for package in HAND_WRITTEN:
        archive = pack(tmp / f"{package}.tar", {}, {f"repo/{package}": SITE / package, **dist_info(package)})
        outs.append(read_and_filter(archive)[1])
    pyarrow_files = {f"repo/pyarrow/{p.name}": p for p in (SITE / "pyarrow").glob("*.py")}
    outs.append(read_and_filter(pack(tmp / "pyarrow.tar", pyarrow_files, dist_info("pyarrow")))[1])
    return pa.concat_tables(outs, promote_options="permissive")


def test_hand_written_libraries_are_kept(hand_written: pa.Table):
    meta = [json.loads(m) for m in hand_written.column("meta").to_pylist()]
    python = [m["language"] == "python" for m in meta]
    reasons = [r for r, is_py in zip(hand_written.column(schema.REASON).to_pylist(), python, strict=True) if is_py]
    details = [d for d, is_py in zip(hand_written.column(schema.DETAIL).to_pylist(), python, strict=True) if is_py]
    kept = reasons.count(None) / len(reasons)
    assert len(reasons) >= 300
    dropped = Counter(r for r in reasons if r)
    print(f"hand-written .py files kept: {kept:.1%} of {len(reasons)}; dropped {dict(dropped)}: "
          f"{[d for d in details if d]}")
    assert kept >= 0.95
    # what is dropped says why, and is what a generator wrote (vcs-versioning's _version.py files...)
    assert set(dropped) <= {"generated"}


def test_licence_is_found_for_every_sampled_package(hand_written: pa.Table):
    meta = [json.loads(m) for m in hand_written.column("meta").to_pylist()]
    per_repo: dict[str, set] = {}
    for m in meta:
        per_repo.setdefault(m["source_uri"].rsplit("/", 1)[-1], set()).add(m["license"])
    assert len(per_repo) == len(HAND_WRITTEN) + 1
    assert {repo: None in licenses for repo, licenses in per_repo.items()} == dict.fromkeys(per_repo, False)
    assert per_repo["requests.tar"] == {"Apache-2.0"} and per_repo["yaml.tar"] == {"MIT"}
    assert per_repo["click.tar"] == {"BSD-3-Clause"}
    assert {m["license_class"] for m in meta} == {"permissive"}


def test_protobuf_generated_files_are_dropped(tmp_path: Path):
    generated = {f"repo/{p.relative_to(SITE).as_posix()}": p for p in SITE.rglob("*_pb2.py")}
    assert len(generated) >= 30, "googleapis-common-protos (a dev dependency) ships the *_pb2.py files"
    _, filtered = read_and_filter(pack(tmp_path / "gen.tar", generated))
    total, reasons = summary(filtered)
    assert total == len(generated)
    assert reasons["generated"] / total >= 0.95
    details = Counter(filtered.column(schema.DETAIL).to_pylist())
    assert details.most_common(1)[0][0] == "# Generated by the protocol buffer compiler.  DO NOT EDIT!"


def test_minified_files_are_dropped(tmp_path: Path):
    files = {f"repo/{p.relative_to(SITE).as_posix()}": p for pattern in MINIFIED for p in SITE.glob(pattern)}
    assert len(files) >= 5, "plotly and ray's dashboard ship minified bundles"
    archive = pack(tmp_path / "min.tar", files)
    _, filtered = read_and_filter(archive, max_file_bytes=8_000_000)  # let the multi-MB bundles reach the filter
    total, reasons = summary(filtered)
    assert total == len(files)
    assert (reasons["minified"] + reasons["generated"]) / total >= 0.95 and reasons["minified"] >= total - 1
    read, filtered = read_and_filter(archive)  # with the default 1 MB cap the largest are skipped when read
    skipped = Counter(read.column(schema.REASON).to_pylist())["skipped:too_large"]
    assert skipped >= 1 and skipped + summary(filtered)[0] == total
    assert summary(filtered)[1][None] == 0


def code_docs(files: dict[str, str], **meta: object) -> pa.Table:
    table = schema.documents_table(list(files.values()))
    metas = [json.dumps({"path": path, "language": meta.get("language", "python"), **meta}) for path in files]
    return table.set_column(table.schema.get_field_index("meta"), "meta", pa.array(metas))


def reasons(stage: CodeFilters, table: pa.Table) -> list[str | None]:
    return run_stage(stage, table).column(schema.REASON).to_pylist()


GOOD = "def add(a, b):\n    # add two numbers\n    return a + b\n\n\nprint(add(1, 2))\n"


@pytest.mark.parametrize(
    ("path", "text", "language", "reason"),
    [
        ("src/ok.py", GOOD, "python", None),
        ("package-lock.json", '{"lockfileVersion": 3, "packages": {}}\n' * 3, "json", "lock_file"),
        ("Cargo.lock", "[[package]]\nname = 'x'\n", "toml", "lock_file"),
        ("node_modules/left-pad/index.js", "module.exports = 1;\n", "javascript", "vendored"),
        ("pip/_vendor/six.py", GOOD, "python", "vendored"),
        ("api/v1/service.pb.go", GOOD, "go", "generated"),
        ("gen.go", "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage x\n", "go", "generated"),
        ("static/app.min.js", "var a=1;\n", "javascript", "minified"),
        ("static/app.js", "var a=1;" * 200, "javascript", "minified"),
        ("blob.py", 'DATA = "' + "QUJDRGVmZ2hpams0NTY3ODkw" * 100 + '"\n', "python", "encoded_data"),
        ("long.py", "x = '" + "a b " * 400 + "'\n", "python", "long_lines"),
        ("table.py", "T = [\n" + "".join(f"    {i}, {i * 7}, {i * 13},\n" for i in range(300)) + "]\n", "python",
         "data_like"),
        ("art.py", "# " + "=-" * 40 + "\n" + ("#" + " " * 60 + "#\n") * 20, "python", "low_alnum"),
        ("tiny.py", "x=1\n", "python", "too_short"),
        ("conf.json", '{"alpha": 1, "beta": 2}', "json", "data_file_size"),
        ("README", "Some words about the project.\n", "text", "plain_text"),
        ("LICENSE.md", "# MIT License\n\nPermission is hereby granted, free of charge\n" * 3, "markdown",
         "plain_text"),
        ("docs/COPYING.rst", "GNU GENERAL PUBLIC LICENSE\n==========================\n" * 3, "rst", "plain_text"),
        ("README.md", "# Project\n\nHow to install and use it, with an example:\n\n    pip install x\n", "markdown",
         None),  # Markdown, kept as The Stack keeps it
        ("pkg/license.py", GOOD, "python", None),  # code, whatever its name
        ("web/yarn.lock", "# yarn lockfile v1\n\nleft-pad@^1.3.0:\n  version \"1.3.0\"\n", None, "lock_file"),
        ("thing.xyz", GOOD, None, "unknown_language"),
    ],
)  # fmt: skip
def test_each_rule_drops_for_its_reason(path: str, text: str, language: str | None, reason: str | None):
    assert reasons(CodeFilters(), code_docs({path: text}, language=language)) == [reason]


def test_licence_and_language_keep_rules_and_comment_switches():
    docs = code_docs({"a.py": GOOD}, license="GPL-3.0-only", license_class="copyleft")
    assert reasons(CodeFilters(licenses=["permissive"]), docs) == ["license_not_kept"]
    assert reasons(CodeFilters(licenses=["permissive", "copyleft"]), docs) == [None]
    assert reasons(CodeFilters(languages=["rust"]), docs) == ["language_not_kept"]
    assert reasons(CodeFilters(languages=["python"]), docs) == [None]
    uncommented = code_docs({"b.py": "def f(x):\n    return x * 2\n\n\nprint(f(21))\n"})
    all_comments = code_docs({"c.py": '"""A module that only documents."""\n# and comments\n# more comments\nx = 1\n'})
    assert reasons(CodeFilters(), uncommented) == [None]
    assert reasons(CodeFilters(min_comment_fraction=0.01), uncommented) == ["too_few_comments"]
    assert reasons(CodeFilters(max_comment_fraction=0.8), all_comments) == ["mostly_comments"]
    scored = run_stage(CodeFilters(keep_scores=True), all_comments)
    assert 0.8 < scored.column("code_comments")[0].as_py() < 1 and scored.column("code_max_line")[0].as_py() == 35
    with pytest.raises(ValueError, match="unknown language names"):
        CodeFilters(languages=["pyhton"])


def test_banners_and_hand_written_notes_are_not_taken_for_encoded_or_generated_code():
    """A C file's `////` banners and a Python module's `# ====` separators counted as base64 (dropped as 68% and 63%
    encoded); a docstring line starting "generated by Google infrastructure." and a `# do not edit this line` beside
    a version number read as generator markers. A marker now stands at a comment's start, and a base64 run holds
    letters and digits."""
    from curation.code.stats import encoded_data, generator_marker

    banner = "/" * 78 + "\n"
    c_file = banner * 2 + "static int twice(int x) { return 2 * x; }\n" + banner * 2 + "# " + "=" * 76 + "\n"
    assert encoded_data(c_file) == (0.0, 0)
    blob = "QmFzZTY0IGVuY29kZWQgZGF0YSBpbiBhIHNvdXJjZSBmaWxlLCBub3QgY29kZSBhdCBhbGwu" * 4
    assert encoded_data(f"DATA = '{blob}'\n")[1] == len(blob)
    assert generator_marker('"""Verify ID tokens issued by\ngenerated by Google infrastructure.\n"""\n') is None
    assert generator_marker('__version__ = "0.1.2"  # do not edit this line manually\n') is None
    marked = ["# Generated by the protocol buffer compiler.  DO NOT EDIT!\n", "-- Generated by sqlc. DO NOT EDIT.\n",
              "/*\n * DO NOT EDIT THIS FILE - it is machine generated\n */\n", '"""Generated by setuptools_scm."""\n',
              "// Code generated by protoc-gen-go. DO NOT EDIT.\n", "# Autogenerated by Thrift Compiler (0.9.3)\n"]
    for header in marked:
        assert generator_marker(header), header
