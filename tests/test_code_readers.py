"""The `code` reader: repository archives, folders and The-Stack-like tables, on real installed packages.

Repositories are made from the venv's site-packages (a package folder plus its `.dist-info`),
so file contents, binaries (`.pyc`, `.so`) and licence files are real. No Ray.
"""

from __future__ import annotations

import base64
import gzip
import importlib.metadata
import io
import json
import shutil
import sysconfig
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from identify.vendor.licenses import LICENSES

from curation import schema
from curation.readers import CodeOptions, CodeReader, read_shard

SITE = Path(sysconfig.get_paths()["purelib"])


def repository(tmp: Path, package: str, name: str | None = None) -> Path:
    """A folder holding one installed package and its dist-info, as a repository would."""
    root = tmp / (name or f"{package}-repo")
    shutil.copytree(SITE / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    names = {n.lower().replace("-", "_") for n in importlib.metadata.packages_distributions().get(package, [])}
    for dist in SITE.glob("*.dist-info"):
        if dist.name.split("-")[0].lower() in names:
            shutil.copytree(dist, root / dist.name)
    return root


def targz(folder: Path, out: Path) -> Path:
    with tarfile.open(out, "w:gz", compresslevel=1) as tar:
        tar.add(folder, arcname=folder.name)
    return out


def read(uri: Path | str, **options: object) -> pa.Table:
    reader = CodeReader(code=CodeOptions(**options))
    return pa.concat_tables(read_shard(reader, str(uri), source="code", shard="s", batch_rows=16))


def outcomes(table: pa.Table) -> Counter:
    return Counter(r or "doc" for r in table.column(schema.REASON).to_pylist())


def documents(table: pa.Table) -> list[dict]:
    rows = table.filter(pa.compute.is_null(table.column(schema.REASON))).to_pylist()
    return [{**json.loads(r["meta"]), "text": r["text"], "id": r["id"], "title": r["title"]} for r in rows]


def test_tar_archive_of_a_real_package_gives_one_document_per_source_file(tmp_path: Path):
    folder = repository(tmp_path, "requests")
    table = read(targz(folder, tmp_path / "requests.tar.gz"))
    docs = documents(table)
    sources = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert {d["path"] for d in docs} <= set(sources)
    assert {d["path"] for d in docs} >= {"requests/api.py", "requests/sessions.py", "requests/__init__.py"}
    api = next(d for d in docs if d["path"] == "requests/api.py")
    assert api["text"] == (folder / "requests/api.py").read_text(encoding="utf-8")
    assert api["repo"] == "requests-repo" and api["language"] == "python" and api["title"] == "requests/api.py"
    assert api["size"] == (folder / "requests/api.py").stat().st_size
    # the licence comes from the dist-info's LICENSE file, for every file of the package
    assert {(d["license"], d["license_class"]) for d in docs if d["path"].startswith("requests/")} == {
        ("Apache-2.0", "permissive")}
    assert api["license_source"].endswith("LICENSE")
    marker = table.filter(pa.compute.equal(table.column(schema.REASON), schema.END_OF_SHARD))
    assert marker.column(schema.SHARD_ROWS).to_pylist() == [table.num_rows]


def test_zip_folder_and_tar_give_the_same_documents_and_stable_ids(tmp_path: Path):
    folder = repository(tmp_path, "yaml")
    archive = tmp_path / "yaml.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(folder.parent).as_posix())
    from_zip = {d["path"]: d for d in documents(read(archive))}
    from_tar = {d["path"]: d for d in documents(read(targz(folder, tmp_path / "yaml.tar.gz")))}
    (folder / ".git").mkdir()  # marks the repository root for loose files
    loose = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and ".git" not in path.parts:
            loose.update((d["path"], d) for d in documents(read(path)))
    assert from_zip.keys() == from_tar.keys() == loose.keys()
    assert all(from_zip[p]["text"] == from_tar[p]["text"] == loose[p]["text"] for p in from_zip)
    assert {d["license"] for d in loose.values()} == {"MIT"} and {d["repo"] for d in loose.values()} == {"yaml-repo"}
    again = {d["path"]: d["id"] for d in documents(read(archive))}
    assert again == {p: d["id"] for p, d in from_zip.items()} and len(set(again.values())) == len(again)


def test_binary_undecodable_large_empty_links_and_vcs_files_are_counted_skips(tmp_path: Path):
    so = next(SITE.glob("yaml/_yaml*.so"), None) or next(SITE.rglob("*.so"))
    pyc = next(SITE.glob("requests/__pycache__/*.pyc"), None) or next(SITE.rglob("*.pyc"))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("repo/ok.py", b"print('hello world')\n")
        add("repo/native.bin", so.read_bytes()[:50_000])  # ELF bytes under a name identify does not know
        add("repo/module.pyc", pyc.read_bytes())
        add("repo/latin1.py", "caf\xe9 = 1\n".encode("latin-1"))
        add("repo/big.py", b"x = 1\n" * 200_000)
        add("repo/empty.py", b"")
        add("repo/.git/HEAD", b"ref: refs/heads/main\n")
        link = tarfile.TarInfo("repo/link.py")
        link.type, link.linkname = tarfile.SYMTYPE, "ok.py"
        tar.addfile(link)
    (tmp_path / "mixed.tar").write_bytes(buffer.getvalue())
    table = read(tmp_path / "mixed.tar")
    assert outcomes(table) == {"doc": 1, "skipped:binary": 2, "skipped:undecodable": 1, "skipped:too_large": 1,
                               "skipped:empty": 1, "skipped:vcs": 1, "skipped:link": 1, schema.END_OF_SHARD: 1}
    details = dict(zip(table.column(schema.REASON).to_pylist(), table.column(schema.DETAIL).to_pylist(), strict=True))
    assert details["skipped:too_large"] == "big.py: 1200000 bytes"
    assert "invalid continuation byte" in details["skipped:undecodable"]
    assert outcomes(read(tmp_path / "mixed.tar", max_file_bytes=2_000_000))["doc"] == 2


def test_truncated_archive_keeps_the_documents_before_the_break(tmp_path: Path):
    whole = targz(repository(tmp_path, "click"), tmp_path / "click.tar.gz").read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    complete = outcomes(read(tmp_path / "click.tar.gz"))["doc"]
    got = outcomes(read(cut))
    assert 0 < got["doc"] < complete
    assert got["truncated_input"] + got["unreadable_input"] == 1
    (tmp_path / "garbage.zip").write_bytes(b"PK\x03\x04 not really a zip")
    assert outcomes(read(tmp_path / "garbage.zip"))["unreadable_input"] == 1


def test_spdx_header_beats_the_repository_licence_and_nearest_licence_file_wins(tmp_path: Path):
    root = tmp_path / "proj"
    (root / "src" / "vendored_lib").mkdir(parents=True)
    mit = next(SITE.glob("yaml*.dist-info/**/LICENSE*"), None) or next(SITE.glob("pyyaml-*.dist-info/**/LICENSE"))
    apache = next(SITE.glob("requests-*.dist-info/**/LICENSE"))
    shutil.copy(mit, root / "LICENSE")
    shutil.copy(apache, root / "src" / "vendored_lib" / "LICENSE.txt")
    (root / "src" / "main.py").write_text("import os\n")
    (root / "src" / "gpl.py").write_text("# SPDX-License-Identifier: GPL-3.0\nimport os\n")
    (root / "src" / "vendored_lib" / "helper.py").write_text("x = 1\n")
    docs = {d["path"]: d for d in documents(read(targz(root, tmp_path / "proj.tar.gz")))}
    assert (docs["src/main.py"]["license"], docs["src/main.py"]["license_source"]) == ("MIT", "LICENSE")
    assert docs["src/gpl.py"]["license"] == "GPL-3.0-only" and docs["src/gpl.py"]["license_class"] == "copyleft"
    assert docs["src/gpl.py"]["license_source"] == "header"
    assert docs["src/vendored_lib/helper.py"]["license"] == "Apache-2.0"


def test_a_licence_file_is_the_licence_its_text_is_not_the_one_its_header_names(tmp_path: Path):
    """MPL-2.0's text names "the GNU General Public License, Version 2.0" near its start: the LICENSE file was labelled
    GPL-2.0-only (copyleft) by the header check that source files get."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "LICENSE").write_text(dict(LICENSES)["MPL-2.0"])  # as identify ships it
    (root / "main.py").write_text("import os\n")
    docs = {d["path"]: d for d in documents(read(targz(root, tmp_path / "proj.tar.gz")))}
    assert (docs["LICENSE"]["license"], docs["LICENSE"]["license_source"]) == ("MPL-2.0", "LICENSE")
    assert docs["main.py"]["license"] == "MPL-2.0"


def test_stack_like_parquet_and_jsonl_rows(tmp_path: Path):
    files = ["requests/api.py", "yaml/__init__.py", "click/core.py"]
    rows = [{"content": (SITE / f).read_text(encoding="utf-8"), "max_stars_repo_path": f, "max_stars_repo_name":
             f"org/{f.split('/')[0]}", "max_stars_repo_licenses": lic, "stars": i}
            for i, (f, lic) in enumerate(zip(files, [["Apache-2.0"], ["MIT", "GPL-3.0"], ["BSD-3-Clause"]],
                                             strict=True))]
    rows.append({"content": None, "max_stars_repo_path": "x.py"})
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "stack.parquet")
    options = {"path_field": "max_stars_repo_path", "repo_field": "max_stars_repo_name",
               "license_field": "max_stars_repo_licenses"}
    table = read(tmp_path / "stack.parquet", **options)
    assert outcomes(table) == {"doc": 3, "no_text_field": 1, schema.END_OF_SHARD: 1}
    docs = {d["path"]: d for d in documents(table)}
    assert docs["requests/api.py"]["repo"] == "org/requests" and docs["requests/api.py"]["language"] == "python"
    assert docs["yaml/__init__.py"]["license"] == "MIT AND GPL-3.0-only"
    assert docs["yaml/__init__.py"]["license_class"] == "copyleft"  # AND: the most restrictive part
    assert docs["click/core.py"]["stars"] == 2  # other columns stay in meta
    lines = [json.dumps({"content": "fn main() {}\n", "path": "src/main.rs", "repo": "r", "license": "permissive",
                         "url": "https://example.org/r"}), "{not json", json.dumps([1, 2])]
    (tmp_path / "stack.jsonl.gz").write_bytes(gzip.compress("\n".join(lines).encode()))
    table = read(tmp_path / "stack.jsonl.gz")
    assert outcomes(table) == {"doc": 1, "bad_json": 1, "not_an_object": 1, schema.END_OF_SHARD: 1}
    (doc,) = documents(table)
    assert (doc["language"], doc["license_class"], doc["license"]) == ("rust", "permissive", None)
    assert table.column("url").to_pylist()[0] == "https://example.org/r"
    # The Stack's `lang` holds linguist's names: named as files of the language read from a folder are
    notebook = json.dumps({"cells": [{"cell_type": "code", "source": ["x\n"], "outputs": []}]})
    labelled = [{"content": notebook if lang.startswith("Jupyter") else "x\n", "path": f"f{i}", "lang": lang}
                for i, lang in enumerate(["Jupyter Notebook", "Batchfile", "Protocol Buffer", "Python", "C++"])]
    pq.write_table(pa.Table.from_pylist(labelled), tmp_path / "labels.parquet")
    table = read(tmp_path / "labels.parquet", language_field="lang")
    assert [d["language"] for d in documents(table)] == ["jupyter", "batch", "proto", "python", "c++"]
    # a row's path leading up is unsafe_path, and an empty file a skip, as in an archive (both were documents)
    odd = [{"content": "x = 1\n", "path": "../../etc/c.py"}, {"content": "", "path": "empty.py"},
           {"content": "y = 2\n", "path": "a/./b/../c.py"}]
    pq.write_table(pa.Table.from_pylist(odd), tmp_path / "odd.parquet")
    table = read(tmp_path / "odd.parquet")
    assert outcomes(table) == {"doc": 1, "skipped:unsafe_path": 1, "skipped:empty": 1, schema.END_OF_SHARD: 1}
    assert [d["path"] for d in documents(table)] == ["a/c.py"]


@pytest.mark.parametrize(("layout", "name"), [("files", "notes.jsonl"), ("archives", "repo.bin")])
def test_layout_can_be_forced(tmp_path: Path, layout: str, name: str):
    path = tmp_path / name
    if layout == "files":
        path.write_text("plain text that happens to be named .jsonl\n")
        assert outcomes(read(path, layout=layout))["doc"] == 1
    else:
        targz(repository(tmp_path, "yaml"), path)
        assert outcomes(read(path, layout=layout))["doc"] > 5


def test_an_encrypted_zip_member_is_a_reject_and_the_others_are_read(tmp_path: Path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.write(SITE / "yaml" / "error.py", "repo/error.py")
        z.write(SITE / "yaml" / "nodes.py", "repo/nodes.py")
    data = bytearray(buffer.getvalue())
    data[data.find(b"PK\x03\x04") + 6] |= 1  # the "encrypted" flag of the first member, in both headers
    data[data.find(b"PK\x01\x02") + 8] |= 1
    (tmp_path / "locked.zip").write_bytes(bytes(data))
    table = read(tmp_path / "locked.zip")
    assert outcomes(table) == {"unreadable_member": 1, "doc": 1, schema.END_OF_SHARD: 1}
    assert "password required" in table.column(schema.DETAIL).to_pylist()[0]


def test_a_pattern_ending_in_a_slash_names_folders_each_standing_for_its_files(tmp_path: Path, monkeypatch):
    """README's `paths: ["repos/*.tar.gz", "checkouts/*/"]`: the wildcard matched files only, and was refused."""
    from curation.recipe import parse_recipe
    from curation.shards import list_shards

    for repo, name in (("proj", "src/a.py"), ("other", "b.py")):
        (tmp_path / "checkouts" / repo / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "checkouts" / repo / name).write_text("print(1)\n")
    (tmp_path / "checkouts" / "loose.txt").write_text("not in a checkout\n")
    (tmp_path / "checkouts" / "proj" / "vendor" / "six").mkdir(parents=True)
    (tmp_path / "checkouts" / "proj" / "vendor" / "six" / "six.py").write_text("x = 1\n")
    (tmp_path / "checkouts" / "proj" / ".git" / "objects").mkdir(parents=True)  # no input: not even a shard
    (tmp_path / "checkouts" / "proj" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "checkouts" / "proj" / ".git" / "objects" / "ab12").write_bytes(b"x\x9c")
    monkeypatch.chdir(tmp_path)
    recipe = parse_recipe('name: c\nsources:\n  - {name: repos, format: code, paths: ["checkouts/*/"]}\n')
    shards = sorted(list_shards(recipe), key=lambda s: s.key)
    assert [s.key for s in shards] == ["other/b.py", "proj/src/a.py", "proj/vendor/six/six.py"]
    # each folder is a repository though it holds no .git and no licence: its vendored files are seen as such
    reader = recipe.sources[0].reader()
    metas = [next(iter(reader.records(s.uri))).meta for s in shards]
    assert [(m["repo"], m["path"]) for m in metas] == [("other", "b.py"), ("proj", "src/a.py"),
                                                       ("proj", "vendor/six/six.py")]


def test_an_archive_of_a_repository_s_own_folder_keeps_its_dotfiles_and_skips_git(tmp_path: Path):
    """`tar -C repo -czf r.tar.gz .` names its members `./.git/HEAD`, `./.bashrc`: stripping every leading `.` made
    them `git/HEAD` (hooks and config read as code, credentials in a remote URL with them) and `bashrc`."""
    repo = tmp_path / "repo"
    files = {".git/HEAD": "ref: refs/heads/main\n", ".git/hooks/pre-commit.sample": "#!/bin/sh\nexit 0\n",
             ".bashrc": "export PATH=$HOME/bin:$PATH\nalias ll='ls -l'\n", "src/app.py": "print('hello')\n",
             ".github/workflows/ci.yml": "on: push\njobs: {}\n"}
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    archive = tmp_path / "repo.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(repo, arcname=".")
    table = read(archive)
    assert outcomes(table)["skipped:vcs"] == 2
    assert sorted(d["path"] for d in documents(table)) == [".bashrc", ".github/workflows/ci.yml", "src/app.py"]


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_members_leading_out_of_the_repository_are_unsafe_path_skips(tmp_path: Path, kind: str):
    """`../dotdot.py` and `repo/../../escape.py` were documents with those paths: a consumer writing files by
    `meta.path` would write outside its folder. `/abs/x.py` is `abs/x.py`, `a/./b/../c.py` is `a/c.py`."""
    members = {"repo/src/ok.py": "x = 1\n", "../dotdot.py": "y = 2\n", "repo/../../escape.py": "z = 3\n",
               "/abs/path.py": "w = 4\n", "repo/a/./b/../c.py": "v = 5\n",
               # Windows' spellings, which a zip made there carries: they escape where `\` is a separator
               "C:\\windows\\evil.py": "u = 6\n", "repo\\..\\..\\back.py": "t = 7\n", "repo/a\\b.py": "s = 8\n"}
    archive = tmp_path / f"evil.{'tar.gz' if kind == 'tar' else 'zip'}"
    if kind == "tar":
        with tarfile.open(archive, "w:gz") as tar:
            for name, text in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(text)
                tar.addfile(info, io.BytesIO(text.encode()))
    else:
        with zipfile.ZipFile(archive, "w") as z:
            for name, text in members.items():
                z.writestr(name, text)
    table = read(archive)
    assert outcomes(table)["skipped:unsafe_path"] == 4
    paths = sorted(d["path"] for d in documents(table))
    assert all(not p.startswith(("../", "/")) and "/../" not in p for p in paths)
    assert "abs/path.py" in paths and any(p.endswith("a/c.py") for p in paths)


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_a_file_the_archive_holds_twice_is_one_document_the_last(tmp_path: Path, kind: str):
    """An archive appended to (`tar -r`, `zip` of a name twice) holds a file twice: both were documents, the file's
    text twice in the corpus. `tar -x` and `unzip` leave the last; so does the reader (`./a.py` is `a.py` too)."""
    again = "repo/./a.py" if kind == "tar" else "repo/a.py"
    members = [("repo/a.py", "x = 1\n"), ("repo/b.py", "y = 2\n"), (again, "x = 3\n")]
    archive = tmp_path / f"twice.{'tar.gz' if kind == 'tar' else 'zip'}"
    if kind == "tar":
        with tarfile.open(archive, "w:gz") as tar:
            for name, text in members:
                info = tarfile.TarInfo(name)
                info.size = len(text)
                tar.addfile(info, io.BytesIO(text.encode()))
    else:
        with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(archive, "w") as z:
            for name, text in members:
                z.writestr(name, text)
    table = read(archive)
    assert outcomes(table)["skipped:replaced"] == 1
    assert sorted((d["path"], d["text"]) for d in documents(table)) == [("a.py", "x = 3\n"), ("b.py", "y = 2\n")]


def test_a_damaged_member_costs_itself_and_the_members_after_it_are_read(tmp_path: Path):
    """A tar header that is no header ended the archive without a word (3 of 6 files lost; `tar` skips to the next
    header); a zip member whose deflate stream is damaged ended the zip (every member, when it was the licence)."""
    members = [(f"repo/f{i}.py", f"x = {i}\n" * 60) for i in range(6)]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in members:
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    data = bytearray(buffer.getvalue())
    f3 = data.index(b"repo/f3.py")
    data[f3 : f3 + 512] = b"\xff" * 512  # its header, garbage
    (tmp_path / "bad.tar").write_bytes(bytes(data))
    table = read(tmp_path / "bad.tar")
    assert sorted(d["path"] for d in documents(table)) == ["f0.py", "f1.py", "f2.py", "f4.py", "f5.py"]
    assert outcomes(table)["unreadable_member"] == 1
    with zipfile.ZipFile(tmp_path / "bad.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in [("repo/LICENSE", "MIT License\n" * 40), *members[:3]]:
            z.writestr(name, text)
    data = bytearray((tmp_path / "bad.zip").read_bytes())
    start = data.index(b"repo/LICENSE") + len("repo/LICENSE") + 10  # into its deflate stream
    data[start : start + 8] = b"\xff" * 8
    (tmp_path / "bad.zip").write_bytes(bytes(data))
    table = read(tmp_path / "bad.zip")
    assert sorted(d["path"] for d in documents(table)) == ["f0.py", "f1.py", "f2.py"]
    assert outcomes(table)["unreadable_member"] == 1


def test_a_notebook_is_its_cells_as_a_script_without_outputs(tmp_path: Path):
    """A notebook was its JSON: kept with its metadata and execution counts as training text, and one with a plot
    dropped by code_filters as `encoded_data` (77% of it the PNG's base64)."""
    plot = base64.b64encode(bytes(range(256)) * 40).decode()
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Fit\n", "A line through the points."]},
             {"cell_type": "code", "execution_count": 3, "metadata": {},
              "source": ["import numpy as np\n", "np.polyfit(x, y, 1)"],
              "outputs": [{"output_type": "display_data", "data": {"image/png": plot}, "metadata": {}}]},
             {"cell_type": "raw", "metadata": {}, "source": "raw text"}]
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "fit.ipynb").write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"language": "python"}},
                                                "nbformat": 4, "nbformat_minor": 5}))
    r_cells = [{"cell_type": "markdown", "source": "Means"}, {"cell_type": "code", "source": "mean(x)"}]
    (repo / "r.ipynb").write_text(json.dumps({"cells": r_cells, "metadata": {"language_info": {"name": "R"}}}))
    scala = {"worksheets": [{"cells": [{"cell_type": "markdown", "source": "Sum"},  # nbformat 3
                                       {"cell_type": "code", "input": "val s = xs.sum"}]}],
             "metadata": {"kernelspec": {"language": "scala"}}}
    (repo / "old.ipynb").write_text(json.dumps(scala))
    (repo / "broken.ipynb").write_text('{"cells": [')
    (repo / "empty.ipynb").write_text(json.dumps({"cells": [], "metadata": {}}))
    table = pa.concat_tables([read(p) for p in sorted(repo.glob("*.ipynb"))])
    docs = {d["path"]: d for d in documents(table)}
    texts = {t: x for t, x in zip(table.column("title").to_pylist(), table.column("text").to_pylist(), strict=True)}
    assert texts["fit.ipynb"] == "# # Fit\n# A line through the points.\n\nimport numpy as np\nnp.polyfit(x, y, 1)\n"
    assert texts["r.ipynb"] == "# Means\n\nmean(x)\n" and texts["old.ipynb"] == "// Sum\n\nval s = xs.sum\n"
    assert {p: d["notebook_language"] for p, d in docs.items()} == {"fit.ipynb": "python", "r.ipynb": "r",
                                                                   "old.ipynb": "scala"}
    assert {d["language"] for d in docs.values()} == {"jupyter"}
    outcome = outcomes(table)
    assert (outcome["bad_notebook"], outcome["skipped:empty"]) == (1, 1)
    broken = json.loads(table.filter(pc.equal(table.column(schema.REASON), "bad_notebook")).column("meta")[0].as_py())
    assert (broken["repo"], broken["path"], broken["language"]) == ("repo", "broken.ipynb", "jupyter")  # groups so
