"""Symbolic links never lead a job out of its input: a link met in a folder, inside an archive or by a wildcard is a
counted `link` skip in every format, never followed; licence lookup stays inside the repository and looks at a
bounded number of entries. A link named in `paths` itself is the user's choice and is read.

Every test builds its own tree in tmp_path: a repository beside an "outside" folder holding a credentials file,
linked into the repository the ways the attack did (a file link, a folder link, a link to the system's `/etc`).
"""

from __future__ import annotations

import io
import json
import stat
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation import schema, storage
from curation.code.repository import folder_licenses
from curation.readers import READERS, CodeReader, JsonlReader, read_shard
from curation.recipe import RecipeError, parse_recipe
from curation.shards import list_shards
from pipelines.run import run
from tests.support.s3 import local_s3

SECRET = "aws_secret_access_key = NEVER-READ-THIS-0123456789"
MIT = """MIT License

Copyright (c) 2024 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
documentation files (the "Software"), to deal in the Software without restriction, including without limitation
the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to
permit persons to whom the Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or substantial portions of
the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE
WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """`repo/` (a git repository of two source files) and `outside/` (credentials, an MIT licence), linked into it."""
    outside = tmp_path / "outside"
    (outside / "keys").mkdir(parents=True)
    (outside / "credentials.py").write_text(SECRET + "\n")
    (outside / "keys" / "id_rsa.py").write_text(SECRET + "\n")
    (outside / "LICENSE").write_text(MIT)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("def main():\n    return 42\n")
    (repo / "README.md").write_text("# repo\n\nA small repository.\n")
    (repo / "src" / "passwd.py").symlink_to(outside / "credentials.py")  # a file link out of the repository
    (repo / "keys").symlink_to(outside / "keys")  # a folder link out of it
    (repo / "etc").symlink_to("/etc")  # the system's configuration folder
    (repo / "LICENSE").symlink_to(outside / "LICENSE")  # a licence file that is a link
    (repo / "loop").symlink_to(repo)  # a folder link to itself: a walk that followed it would never end
    (repo / "dangling.py").symlink_to(tmp_path / "nothing-here")
    return tmp_path


def code_recipe(paths: list[str], tmp_path: Path, fmt: str = "code") -> str:
    listed = ", ".join(f"'{p}'" for p in paths)
    return (f"name: links\noutput: {tmp_path / 'jobs'}\nexecutor: local\nlocal: {{workers: 1}}\n"
            f"sources: [{{name: src, format: {fmt}, paths: [{listed}]}}]\n"
            + ("stages: [extract: {}]\n" if fmt == "warc" else ""))


def read_all(reader: object, uri: str) -> pa.Table:
    return pa.concat_tables(read_shard(reader, uri, source="src", shard="s"))


def outcomes(tables: list[pa.Table]) -> Counter:
    return Counter(r or "doc" for t in tables for r in t.column(schema.REASON).to_pylist() if r != schema.END_OF_SHARD)


def test_links_met_in_a_repository_folder_are_link_skips_and_nothing_outside_is_read(tree: Path):
    recipe = parse_recipe(code_recipe([str(tree / "repo")], tree))
    shards = list_shards(recipe)
    tables = [read_all(CodeReader(), s.uri) for s in shards]
    assert outcomes(tables) == {"doc": 2, "skipped:link": 6}  # .git/HEAD is no shard
    texts = [t for table in tables for t in table.column("text").to_pylist() if t]
    assert texts and not any("NEVER-READ-THIS" in t for t in texts)
    details = sorted(d for table in tables for r, d in zip(table.column(schema.REASON).to_pylist(),
                                                           table.column(schema.DETAIL).to_pylist(), strict=True)
                     if r == "skipped:link")
    assert details == sorted([f"LICENSE -> {tree}/outside/LICENSE", f"dangling.py -> {tree}/nothing-here",
                              "etc -> /etc", f"keys -> {tree}/outside/keys", f"loop -> {tree}/repo",
                              f"src/passwd.py -> {tree}/outside/credentials.py"])
    listed = storage.list_files(str(tree / "repo"))
    assert not any(f.uri.startswith((f"{tree}/repo/etc/", f"{tree}/repo/keys/", f"{tree}/repo/loop/")) for f in listed)
    assert [f.uri for f in listed if f.link] == [f"{tree}/repo/{n}" for n in
                                                 ("LICENSE", "dangling.py", "etc", "keys", "loop", "src/passwd.py")]
    assert storage.expand(f"{tree}/repo/**") == [f"{tree}/repo/{n}" for n in (".git/HEAD", "README.md", "src/app.py")]
    docs = [json.loads(m) for t in tables for m, r in zip(t.column("meta").to_pylist(),
                                                           t.column(schema.REASON).to_pylist(), strict=True) if not r]
    assert {d["path"] for d in docs} == {"src/app.py", "README.md"}
    assert {d["license"] for d in docs} == {None}  # the linked LICENSE is outside the repository: not its licence


def test_a_job_on_a_linked_repository_counts_the_links_and_writes_no_outside_byte(tree: Path):
    recipe = parse_recipe(code_recipe([f"{tree}/repo/**"], tree))
    result = run(recipe, output=str(tree / "jobs"), quiet=True, kind="local")
    stats = json.loads((Path(result.job_dir) / "stats.json").read_text())
    (read,) = [s for s in stats["stages"] if s["stage"] == "read"]
    assert (read["docs_in"], read["docs_out"], read["skipped"], read["dropped"]) == (8, 2, {"link": 6}, {})
    assert stats["documents"] == {"records_read": 8, "in": 2, "out": 2}
    written = b"".join(p.read_bytes() for p in Path(result.job_dir).rglob("*") if p.is_file())
    assert b"NEVER-READ-THIS" not in written
    kept = pq.read_table(Path(result.job_dir) / "documents").column("text").to_pylist()
    assert sorted(kept) == ["# repo\n\nA small repository.\n", "def main():\n    return 42\n"]


def test_a_link_named_in_paths_is_the_users_choice_and_is_read(tree: Path):
    recipe = parse_recipe(code_recipe([str(tree / "repo" / "src" / "passwd.py")], tree))
    (shard,) = list_shards(recipe)
    assert shard.uri == str(tree / "outside" / "credentials.py")  # the target's real path
    assert read_all(CodeReader(), shard.uri).column("text").to_pylist()[0] == SECRET + "\n"


def test_a_wildcard_does_not_follow_links_in_any_format(tree: Path):
    data = tree / "data"
    data.mkdir()
    (data / "a.jsonl").write_text(json.dumps({"text": "kept"}) + "\n")
    (tree / "outside" / "b.jsonl").write_text(json.dumps({"text": SECRET}) + "\n")
    (data / "b.jsonl").symlink_to(tree / "outside" / "b.jsonl")
    shards = list_shards(parse_recipe(code_recipe([f"{data}/*.jsonl"], tree, fmt="jsonl")))
    assert [s.uri for s in shards] == [f"{data}/a.jsonl", f"file://{data}/b.jsonl"]  # the link: a shard, as itself
    tables = [read_all(JsonlReader(), s.uri) for s in shards]
    assert outcomes(tables) == {"doc": 1, "skipped:link": 1}
    assert tables[1].column(schema.DETAIL).to_pylist()[0] == f"{data}/b.jsonl -> {tree}/outside/b.jsonl"
    assert not any(SECRET in str(v) for t in tables for c in ("text", "meta") for v in t.column(c).to_pylist())
    named = list_shards(parse_recipe(code_recipe([f"{data}/b.jsonl"], tree, fmt="jsonl")))
    assert read_all(JsonlReader(), named[0].uri).column("text").to_pylist()[0] == SECRET


@pytest.mark.parametrize(("fmt", "name"), [("jsonl", "x.jsonl.gz"), ("parquet", "x.parquet"),
                                         ("warc", "x.warc.gz"), ("wet", "x.warc.wet.gz"), ("code", "x.py")])
def test_a_link_met_in_a_folder_is_one_link_skip_in_every_format_and_never_opened(tree: Path, fmt: str, name: str):
    data = tree / "data"
    data.mkdir()
    (data / name).symlink_to(tree / "outside" / "credentials.py")  # not even of the format: never opened
    recipe = parse_recipe(code_recipe([str(data)], tree, fmt=fmt), check_paths=False)  # no file but a link
    (shard,) = list_shards(recipe)
    assert shard.uri == f"file://{data}/{name}"
    table = read_all(READERS[fmt](), shard.uri)
    assert outcomes([table]) == {"skipped:link": 1}
    (detail,) = table.column(schema.DETAIL).to_pylist()[:1]
    assert detail == (f"{data}/{name}" if fmt != "code" else name) + f" -> {tree}/outside/credentials.py"
    assert table.column(schema.SHARD_ROWS).to_pylist()[-1] == 2  # the skip and the end-of-shard marker


def test_a_jsonl_job_counts_a_link_in_its_folder_as_a_link_skip(tree: Path):
    data = tree / "data"
    data.mkdir()
    (data / "a.jsonl").write_text(json.dumps({"text": "one two three four five six"}) + "\n")
    (tree / "outside" / "b.jsonl").write_text(json.dumps({"text": SECRET}) + "\n")
    (data / "b.jsonl").symlink_to(tree / "outside" / "b.jsonl")
    result = run(parse_recipe(code_recipe([str(data)], tree, fmt="jsonl")), output=str(tree / "jobs"), quiet=True,
                 kind="local")
    stats = json.loads((Path(result.job_dir) / "stats.json").read_text())
    (read,) = [s for s in stats["stages"] if s["stage"] == "read"]
    assert (read["docs_in"], read["docs_out"], read["skipped"], read["dropped"]) == (2, 1, {"link": 1}, {})
    written = b"".join(p.read_bytes() for p in Path(result.job_dir).rglob("*") if p.is_file())
    assert b"NEVER-READ-THIS" not in written


def test_licence_lookup_stays_inside_the_repository_and_is_bounded(tree: Path):
    repo = tree / "repo"
    assert folder_licenses.__wrapped__(str(repo)).for_path("src/app.py") == (None, None)  # its LICENSE is a link
    (repo / "vendor").mkdir()
    (repo / "vendor" / "LICENSE").write_text(MIT)
    assert folder_licenses.__wrapped__(str(repo)).for_path("vendor/x.py") == ("MIT", "vendor/LICENSE")
    wide = tree / "wide"
    wide.mkdir()
    for i in range(30):
        (wide / f"f{i:02d}.py").write_text("x = 1\n")
    (wide / "zz").mkdir()
    (wide / "zz" / "LICENSE").write_text(MIT)
    assert folder_licenses.__wrapped__(str(wide)).for_path("zz/a.py")[0] == "MIT"
    assert folder_licenses.__wrapped__(str(wide), limit=10).for_path("zz/a.py") == (None, None)  # stopped looking


def test_symlinks_and_hardlinks_inside_archives_are_link_skips(tmp_path: Path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("repo/ok.py", "print('ok')\n")
        link = zipfile.ZipInfo("repo/passwd.py")
        link.create_system = 3  # Unix, as Info-ZIP writes a link with `zip --symlinks`
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "../../../../etc/passwd")
        licence = zipfile.ZipInfo("repo/LICENSE")
        licence.create_system, licence.external_attr = 3, (stat.S_IFLNK | 0o777) << 16
        archive.writestr(licence, MIT)  # a link's data is never taken for a licence text
    (tmp_path / "r.zip").write_bytes(buffer.getvalue())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"print('ok')\n"
        info = tarfile.TarInfo("repo/ok.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for name, kind, target in (("repo/passwd.py", tarfile.SYMTYPE, "/etc/passwd"),
                                   ("repo/hard.py", tarfile.LNKTYPE, "repo/ok.py"),
                                   ("repo/LICENSE", tarfile.SYMTYPE, "/usr/share/common-licenses/GPL-3")):
            member = tarfile.TarInfo(name)
            member.type, member.linkname = kind, target
            tar.addfile(member)
    (tmp_path / "r.tar.gz").write_bytes(buffer.getvalue())
    for name, links in (("r.zip", 2), ("r.tar.gz", 3)):
        table = read_all(CodeReader(), str(tmp_path / name))
        assert outcomes([table]) == {"doc": 1, "skipped:link": links}, name
        (meta,) = [json.loads(m) for m, r in zip(table.column("meta").to_pylist(),
                                                 table.column(schema.REASON).to_pylist(), strict=True) if not r]
        assert meta["license"] is None and meta["path"] == "ok.py"


def test_object_store_listing_and_licence_lookup_walk_the_same_way():
    """Object stores have no links: the walk is their listing, with the same bound and `.git/` left out."""
    with local_s3():
        fs, _ = storage.resolve("s3://repos/x")
        fs.create_dir("repos")
        for name, text in (("repo/LICENSE", MIT), ("repo/src/app.py", "x = 1\n"), ("repo/.git/LICENSE", MIT)):
            with fs.open_output_stream(f"repos/{name}") as out:
                out.write(text.encode())
        walked = [(f.uri, f.link) for f in storage.walk_files("s3://repos/repo", prune={".git"}.__contains__)]
        assert sorted(walked) == [("s3://repos/repo/LICENSE", False), ("s3://repos/repo/src/app.py", False)]
        assert len(list(storage.walk_files("s3://repos/repo", limit=1))) <= 1
        licences = folder_licenses.__wrapped__("s3://repos/repo")
        assert licences.for_path("src/app.py") == ("MIT", "LICENSE")


def test_a_file_or_folder_swapped_for_a_link_after_listing_is_not_followed(tmp_path: Path):
    """Links were judged when the files were listed: a file (or its folder) swapped for a link while the job ran
    was read through it, out of the input's root, and the rerun kept what it read."""
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "s.jsonl").write_text(json.dumps({"text": "SECRET outside the root"}) + "\n")
    (tmp_path / "in" / "sub").mkdir(parents=True)
    for name in ("a.jsonl", "b.jsonl", "sub/c.jsonl"):
        (tmp_path / "in" / name).write_text(json.dumps({"text": f"an ordinary document {name}"}) + "\n")
    recipe = parse_recipe(f"name: swap\noutput: '{tmp_path / 'jobs'}'\nexecutor: local\nlocal: {{workers: 1}}\n"
                          f"sources: [{{name: n, format: jsonl, paths: ['{tmp_path}/in/**']}}]\n")
    shards = {s.key: s for s in list_shards(recipe)}
    (tmp_path / "in" / "b.jsonl").unlink()
    (tmp_path / "in" / "b.jsonl").symlink_to(tmp_path / "secret" / "s.jsonl")
    (tmp_path / "in" / "sub").rename(tmp_path / "in" / "sub-moved")
    (tmp_path / "in" / "sub").symlink_to(tmp_path / "secret")
    (tmp_path / "secret" / "c.jsonl").write_text(json.dumps({"text": "SECRET too"}) + "\n")
    for key in ("b.jsonl", "sub/c.jsonl"):
        shard = shards[key]
        rows = pa.concat_tables(read_shard(JsonlReader(), shard.uri, source="n", shard=shard.name, key=key,
                                           listed=True)).to_pylist()
        assert [r[schema.REASON] for r in rows] == ["skipped:link", schema.END_OF_SHARD]
        target = tmp_path / "secret" / ("s.jsonl" if key == "b.jsonl" else "c.jsonl")
        assert rows[0][schema.DETAIL].endswith(str(target))

    # a rerun: a shard read as a file and a link now is read again, as a link
    (tmp_path / "in" / "sub").unlink()
    (tmp_path / "in" / "sub-moved").rename(tmp_path / "in" / "sub")
    (tmp_path / "in" / "b.jsonl").unlink()
    (tmp_path / "in" / "b.jsonl").write_text(json.dumps({"text": "an ordinary document b.jsonl"}) + "\n")
    first = run(recipe, quiet=True)
    assert len(pq.read_table(Path(first.job_dir) / "documents").column("text")) == 3
    (tmp_path / "in" / "b.jsonl").unlink()
    (tmp_path / "in" / "b.jsonl").symlink_to(tmp_path / "secret" / "s.jsonl")
    again = run(recipe, quiet=True)
    texts = pq.read_table(Path(again.job_dir) / "documents").column("text").to_pylist()
    assert sorted(texts) == ["an ordinary document a.jsonl", "an ordinary document sub/c.jsonl"]


def test_a_file_swapped_for_a_fifo_after_listing_is_skipped_not_opened(tmp_path: Path):
    """Opening a FIFO blocks until someone writes to it: a one-worker local run hung for good (SIGTERM too)."""
    import os

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(json.dumps({"text": "an ordinary document"}) + "\n")
    recipe = parse_recipe(f"name: fifo\nsources: [{{name: n, format: jsonl, paths: ['{tmp_path}/in/*.jsonl']}}]\n")
    [shard] = list_shards(recipe)
    (tmp_path / "in" / "a.jsonl").unlink()
    os.mkfifo(tmp_path / "in" / "a.jsonl")
    rows = pa.concat_tables(read_shard(JsonlReader(), shard.uri, source="n", shard=shard.name, key=shard.key,
                                       listed=True)).to_pylist()
    assert [r[schema.REASON] for r in rows] == ["skipped:not_a_file", schema.END_OF_SHARD]
    assert rows[0][schema.DETAIL] == f"{tmp_path / 'in' / 'a.jsonl'} is a FIFO now, no file"


def test_a_file_with_two_names_is_read_once(tmp_path: Path):
    """Hard links to one file were two shards: its documents twice, under two ids each."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(json.dumps({"text": "one document"}) + "\n")
    (tmp_path / "in" / "b.jsonl").hardlink_to(tmp_path / "in" / "a.jsonl")
    (tmp_path / "in" / "c.jsonl").write_text(json.dumps({"text": "another document"}) + "\n")
    recipe = parse_recipe(f"name: hard\nsources: [{{name: n, format: jsonl, paths: ['{tmp_path}/in/*.jsonl']}}]\n")
    assert sorted(s.key for s in list_shards(recipe)) == ["a.jsonl", "c.jsonl"]
    # its two names listed one by one in paths: one shard too (two, before)
    named = parse_recipe(f"name: hard\nsources: [{{name: n, format: jsonl, paths: ['{tmp_path}/in/a.jsonl', "
                         f"'{tmp_path}/in/b.jsonl']}}]\n")
    assert [s.key for s in list_shards(named)] == ["a.jsonl"]
    # by two sources: refused, as a file two sources read by one name is (it was read by both, its documents twice)
    with pytest.raises(RecipeError, match=r"sources 'm' and 'n' .* both read .*b\.jsonl'"):
        parse_recipe(f"name: hard\nsources: [{{name: n, format: jsonl, paths: ['{tmp_path}/in/a.jsonl']}}, "
                     f"{{name: m, format: jsonl, paths: ['{tmp_path}/in/b.jsonl']}}]\n")
