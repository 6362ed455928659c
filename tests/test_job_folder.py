"""Whose files a job folder holds.

A file read by two sources is refused at validation; `curate run` refuses an output path through a file
and a folder holding files it did not write; every reader of a job folder (explore, corpus stages,
packing, the service) reads only the files of the shards the job recorded, so a file dropped in later is
never part of the job. Runs use `executor: local` with one worker (in this process, no Ray).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation import explore
from curation.job import JobFolderError, JobWriter, claim_job_folder, document_files
from curation.recipe import RecipeError, load_recipe, parse_recipe
from pipelines.cli import main
from pipelines.run import run
from tests.support.s3 import local_s3

# -- one file, two sources ------------------------------------------------------------------------


def write_notes(path: Path, n: int = 3) -> Path:
    rows = [{"text": f"note {i} " + " ".join(f"w{i}x{j}" for j in range(30)), "url": f"https://n/{i}"}
            for i in range(n)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def two_sources(first: str, second: str) -> str:
    return f"""\
name: twice
sources:
  - {{name: web, format: jsonl, paths: ["{first}"]}}
  - name: notes
    format: jsonl
    paths:
      - "{second}"
"""


def problems(text: str) -> list[str]:
    with pytest.raises(RecipeError) as err:
        parse_recipe(text, "r.yaml")
    return [str(p) for p in err.value.problems]


def test_one_file_in_two_sources_is_refused_naming_both_and_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    file = write_notes(tmp_path / "data" / "a.jsonl")
    expected = (f"r.yaml:7:9: sources[1].paths[0]: sources 'notes' and 'web' (sources[0].paths[0]: "
                f"'{{first}}') both read '{file}': a file may belong to one source only (its documents would be "
                "read twice, with the same ids)")
    # the same spelling, relative against absolute, `./x`, and a glob over the file
    for first, second in [("data/a.jsonl", "data/a.jsonl"), (str(file), "data/a.jsonl"),
                          ("./data/a.jsonl", "data/../data/a.jsonl"), ("data/*.jsonl", str(file))]:
        found = problems(two_sources(first, second))
        assert found == [expected.replace("{first}", first)], (first, second)


def test_overlapping_globs_are_one_problem_counting_the_files_and_one_source_may_repeat_itself(tmp_path):
    for name in ("a", "b", "c"):
        write_notes(tmp_path / f"{name}.jsonl")
    found = problems(two_sources(f"{tmp_path}/*.jsonl", f"{tmp_path}/[bc].jsonl"))
    assert found == [f"r.yaml:7:9: sources[1].paths[0]: sources 'notes' and 'web' (sources[0].paths[0]: "
                     f"'{tmp_path}/*.jsonl') both read '{tmp_path}/b.jsonl' (and 1 more files): a file may belong "
                     "to one source only (its documents would be read twice, with the same ids)"]
    # within one source a file matched twice is one shard, read once: valid
    recipe = parse_recipe(f"""\
name: once
sources:
  - {{name: web, format: jsonl, paths: ["{tmp_path}/*.jsonl", "{tmp_path}/a.jsonl"]}}
""", "r.yaml")
    assert len(recipe.sources[0].paths) == 2


def test_curate_validate_and_run_refuse_a_file_in_two_sources(tmp_path, capsys):
    file = write_notes(tmp_path / "a.jsonl")
    path = tmp_path / "recipe.yaml"
    path.write_text(two_sources(str(file), str(file)).replace("name: twice", f"name: twice\noutput: {tmp_path}/jobs"))
    for command in (["validate", str(path)], ["run", str(path), "--executor", "local", "--quiet"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"{path}:8:9: sources[1].paths[0]: sources 'notes' and 'web'" in err and f"both read '{file}'" in err
    assert not (tmp_path / "jobs").exists()  # nothing was run


# -- a job folder that is not this job's ---------------------------------------------------------


def recipe_file(tmp_path: Path, extra: str = "") -> Path:
    write_notes(tmp_path / "in" / "a.jsonl", 6)
    write_notes(tmp_path / "in" / "b.jsonl", 4)
    path = tmp_path / "recipe.yaml"
    path.write_text(f"""\
name: mine
output: {tmp_path}/jobs
executor: local
local: {{workers: 1}}
sources:
  - {{name: notes, format: jsonl, paths: ["{tmp_path}/in/*.jsonl"]}}
stages:
  - length: {{min_words: 5}}
{extra}""")
    return path


def test_output_naming_a_file_is_one_line_and_exit_2(tmp_path, capsys):
    path = recipe_file(tmp_path)
    (tmp_path / "a-file").write_text("not a folder")
    for output, serve in [("a-file", []), ("a-file/under", []), ("a-file", ["--serve", "127.0.0.1:0"])]:
        assert main(["run", str(path), "--output", str(tmp_path / output), "--quiet", *serve]) == 2
        err = capsys.readouterr().err
        job = load_recipe(path).job_dir(str(tmp_path / output))
        assert err == (f"curate run: cannot make the job folder {job}: {tmp_path / 'a-file'} is a file, not a "
                       "folder (`output`, --output); nothing was run\n")
    assert (tmp_path / "a-file").read_text() == "not a folder"


def foreign_table(ids: list[str]) -> pa.Table:
    return pa.table({"id": ids, "text": [f"foreign text {i}" for i in ids], "source": ["notes"] * len(ids),
                     "url": [None] * len(ids), "title": [None] * len(ids)})


def test_a_folder_holding_files_curate_did_not_write_is_refused_untouched(tmp_path, capsys):
    path = recipe_file(tmp_path)
    job = Path(load_recipe(path).job_dir())
    (job / "documents").mkdir(parents=True)
    pq.write_table(foreign_table(["x"]), job / "documents" / "theirs.parquet")
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == (f"curate run: job folder {job} exists and holds a file curate run did not write: "
                   "documents/theirs.parquet; give `output` (--output) another folder, or empty it; nothing was run\n")
    assert sorted(p.relative_to(job).as_posix() for p in job.rglob("*")) == ["documents", "documents/theirs.parquet"]
    # a recipe.yaml of someone else's is no claim either
    (job / "recipe.yaml").write_text("name: mine\n")
    with pytest.raises(JobFolderError, match=r"holds a recipe\.yaml curate run did not write"):
        claim_job_folder(str(job))


def test_a_folder_of_another_recipe_is_refused_and_one_of_this_recipe_resumed(tmp_path, capsys):
    path = recipe_file(tmp_path)
    recipe = load_recipe(path)
    first = run(recipe, quiet=True)
    job = first.job_dir
    written = (Path(job) / "recipe.yaml").read_text()
    assert f"# recipe hash: {recipe.fingerprint()}\n" in written
    claim_job_folder(job, recipe.fingerprint())  # a rerun of the same recipe: its own folder
    again = run(recipe, quiet=True)
    assert again.shards_skipped == 2 and again.stats["documents"]["out"] == first.stats["documents"]["out"]
    with pytest.raises(JobFolderError, match=rf"holds the output of another recipe \(recipe.yaml: hash "
                                             rf"{recipe.fingerprint()[:10]}, this recipe's is 0000000000\)"):
        JobWriter(job, ["length"], recipe_hash="0" * 64).resume()
    (Path(job) / "recipe.yaml").write_text(written.replace(recipe.fingerprint(), "f" * 64))  # another recipe's
    assert main(["run", str(path), "--quiet"]) == 2
    assert capsys.readouterr().err == (
        f"curate run: job folder {job} holds the output of another recipe (recipe.yaml: hash ffffffffff, this "
        f"recipe's is {recipe.fingerprint()[:10]}): give `output` (--output) another folder; nothing was run\n")
    # an empty folder, and a folder with empty folders only, are free to take
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    claim_job_folder(str(tmp_path / "empty"), recipe.fingerprint())


def test_document_files_are_the_recorded_shards_and_a_hand_made_folder_all_its_files(tmp_path):
    writer = JobWriter(str(tmp_path / "job"), ["length"])
    writer.resume()
    (tmp_path / "job" / "_shards").mkdir(parents=True)
    (tmp_path / "job" / "_shards" / "s1.json").write_text("{}")
    (tmp_path / "job" / "documents").mkdir()
    for name in ("s1", "s2"):  # s2: no record (a foreign file, or a crash before the record)
        pq.write_table(foreign_table([name]), tmp_path / "job" / "documents" / f"{name}.parquet")
    (tmp_path / "job" / "documents" / "s1.parquet.1f2e.tmp").write_text("half")
    assert document_files(tmp_path / "job") == {"s1": str(tmp_path / "job" / "documents" / "s1.parquet")}
    hand_made = tmp_path / "hand"
    (hand_made / "documents").mkdir(parents=True)
    pq.write_table(foreign_table(["h"]), hand_made / "documents" / "part.parquet")
    assert list(document_files(hand_made)) == ["part"]  # no recipe.yaml, no _shards/: not a curate run's


MIXED = """\
  - exact_dedup: {}
tokenizer: {train: {vocab_size: 300, hard_vocab_limit: false}}
pack: {seq_len: 32, shard_rows: 8, validation: 0.2}
"""


def drop_foreign_files(job: Path) -> list[str]:
    """A foreign Parquet in each folder a reader lists (documents, work documents, a rejects reason),
    holding ids of its own and a copy of a kept document's text (exact_dedup would remove one of them)."""
    kept = pq.read_table(job / "documents").column("text")[0].as_py()
    ids = ["foreign-0", "foreign-1"]
    table = foreign_table(ids).set_column(1, "text", pa.array([kept, "foreign words " * 20]))
    for folder in ("documents", "_work/documents", "rejects/stage=length/reason=too_few_words"):
        (job / folder).mkdir(parents=True, exist_ok=True)
        pq.write_table(table.append_column("detail", pa.nulls(2, pa.string())), job / folder / "dropped-in.parquet")
    return ids


def exact_dedup(stats: dict) -> dict:
    row = next(s for s in stats["stages"] if s["stage"] == "exact_dedup")
    return {k: v for k, v in row.items() if k != "seconds"}


def test_a_file_dropped_into_a_job_is_read_by_no_reader(tmp_path):
    from fastapi.testclient import TestClient

    from pipelines.service import create_app

    path = recipe_file(tmp_path, MIXED)
    (tmp_path / "in" / "short.jsonl").write_text('{"text": "too short"}\n')  # a length reject
    recipe = load_recipe(path)
    first = run(recipe, quiet=True)
    job = Path(first.job_dir)
    kept = sorted(pq.read_table(job / "documents", columns=["id"]).column("id").to_pylist())
    manifest = json.loads((job / "manifest.json").read_text())
    ids = drop_foreign_files(job)

    assert sorted(explore.documents(job, n=100)["id"]) == kept
    assert explore.lookup(job, ids) == {} and explore.lookup(job, ids, before_corpus=False) == {}
    assert set(explore.lookup(job, kept[:2])) == set(kept[:2])
    rejects = explore.reject_files(job)["length"]["too_few_words"]
    assert [p.name for p in rejects] == [p.name for p in (job / "rejects" / "stage=length" / "reason=too_few_words")
                                         .glob("notes-*.parquet")] and len(rejects) == 1
    with TestClient(create_app(job.parent)) as client:
        index = client.get(f"/api/jobs/{job.name}/rejects").json()["stages"]
        assert index["length"]["too_few_words"] == {"dropped": 1, "sampled": 1}
        page = client.get(f"/api/jobs/{job.name}/rejects/length/too_few_words").json()
        assert page["total"] == 1 and [r["text"] for r in page["rows"]] == ["too short"]

    # the corpus stages and packing again, over the work documents with the foreign file beside them
    for made in ("_work/removed", "_work/final", "_work/tokens", "_work/packed", "shards"):
        shutil.rmtree(job / made)
    for name in ("manifest.json", "tokenizer.model"):
        (job / name).unlink()
    for file in (job / "documents").glob("notes-*.parquet"):
        file.unlink()
    again = run(recipe, quiet=True)
    assert sorted(pq.read_table(list(document_files(job).values()), columns=["id"]).column("id").to_pylist()) == kept
    assert exact_dedup(again.stats) == exact_dedup(first.stats)  # a copy in the foreign file would be a removal
    assert exact_dedup(again.stats)["docs_out"] == len(kept)
    rebuilt = json.loads((job / "manifest.json").read_text())
    assert rebuilt["splits"] == manifest["splits"] and rebuilt["mixture"] == manifest["mixture"]
    assert (job / "documents" / "dropped-in.parquet").exists()  # left where it was, never read


def test_the_same_rules_on_an_object_store():
    with local_s3() as (fs, _):
        fs.create_dir("jobs")
        with fs.open_output_stream("jobs/mine/recipe.yaml") as out:
            out.write(b"# recipe as run by curate\n# recipe hash: " + b"a" * 64 + b"\nname: mine\n")
        with fs.open_output_stream("jobs/mine/_shards/s1.json") as out:
            out.write(b"{}")
        for key in ("jobs/mine/documents/s1.parquet", "jobs/mine/documents/dropped-in.parquet",
                    "jobs/theirs/documents/part.parquet"):
            pq.write_table(foreign_table(["x"]), key, filesystem=fs)
        assert document_files("s3://jobs/mine") == {"s1": "s3://jobs/mine/documents/s1.parquet"}
        claim_job_folder("s3://jobs/mine", "a" * 64)
        claim_job_folder("s3://jobs/new", "a" * 64)
        with pytest.raises(JobFolderError, match="holds the output of another recipe"):
            claim_job_folder("s3://jobs/mine", "b" * 64)
        with pytest.raises(JobFolderError, match=r"holds a file curate run did not write: documents/part\.parquet"):
            claim_job_folder("s3://jobs/theirs", "a" * 64)


def test_a_file_being_written_is_hidden_from_a_dataset_of_its_folder(tmp_path: Path):
    """A kill left `rejects/.../x.parquet.<hex>.tmp` of 0 bytes, and the README's `ds.dataset(".../rejects")` failed
    on it ("Parquet file size is 0 bytes"): a file being written has a hidden name, which datasets skip."""
    import pyarrow.dataset as ds

    from curation import storage

    folder = tmp_path / "rejects" / "stage=length"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"]}), folder / "s1.parquet")
    written = storage.temporary_name(str(folder / "s2.parquet"))
    Path(written).write_bytes(b"")  # what a kill leaves
    assert Path(written).name.startswith(".s2.parquet.") and written.endswith(".tmp")
    assert ds.dataset(tmp_path / "rejects", partitioning="hive").to_table().num_rows == 1
    assert storage.remove_temporaries(str(tmp_path)) == 1


def test_an_input_that_changes_while_it_is_read_fails_its_shard_and_a_rerun_reads_it_whole(tmp_path):
    """A file rewritten while it was read (cut, then restored with its old time, as `cp -p` or `rsync --inplace` leave
    it) was recorded with its listed size and time: a rerun found it unchanged and skipped it, its documents lost."""
    from pipelines.run import ShardsFailed
    from tests.support.stages import Appender

    notes = write_notes(tmp_path / "in" / "notes.jsonl", n=5)
    recipe = parse_recipe(f"name: grows\nexecutor: local\nlocal: {{workers: 1}}\nsources:\n"
                          f"  - {{name: notes, format: jsonl, paths: ['{notes}']}}\n", "r.yaml")
    extra = json.dumps({"text": "note 5 " + " ".join(f"w5x{j}" for j in range(30))}) + "\n"
    with pytest.raises(ShardsFailed, match=r"its input changed while it was read: .*notes\.jsonl changed"):
        run(recipe, output=str(tmp_path / "jobs"), quiet=True, stages=[("grow", Appender(path=str(notes), line=extra))])
    again = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    assert again.stats["documents"]["out"] == 6  # read whole, once


def test_a_shard_whose_documents_are_gone_before_and_after_dedup_is_refused_not_skipped(tmp_path):
    """With both copies of a shard's documents deleted, a rerun skipped it as a shard that kept nothing and said
    `done`, its documents missing. One copy gone is mended (the final documents written again, or not needed)."""
    one, two = write_notes(tmp_path / "in" / "a.jsonl"), write_notes(tmp_path / "in" / "b.jsonl", n=4)
    recipe = parse_recipe(f"name: lost\nexecutor: local\nlocal: {{workers: 1}}\nsources:\n"
                          f"  - {{name: notes, format: jsonl, paths: ['{one}', '{two}']}}\nstages:\n"
                          "  - exact_dedup: {}\n", "r.yaml")
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    job = Path(result.job_dir)
    name = next(p.name for p in (job / "documents").glob("notes-b*.parquet"))
    (job / "_work" / "documents" / name).unlink()
    assert run(recipe, output=str(tmp_path / "jobs"), quiet=True).stats["documents"]["out"] == 4  # a: copies of b
    (job / "documents" / name).unlink()
    with pytest.raises(JobFolderError, match=r"the documents of shard notes-b.* are gone from _work/documents/ and "):
        run(recipe, output=str(tmp_path / "jobs"), quiet=True)


def test_a_job_file_damaged_in_place_is_named_in_the_one_line(tmp_path):
    """Bytes flipped inside a `_work/documents` file (its size kept) ended the run in `ZSTD decompression failed`
    of the whole job folder: which file, the operator could not tell."""
    import pickle

    from curation import storage

    path = tmp_path / "docs.parquet"
    table = pa.table({"id": [f"{i:024x}" for i in range(2000)], "text": [f"text {i} " * 30 for i in range(2000)]})
    pq.write_table(table, path, compression="zstd")
    data = bytearray(path.read_bytes())
    for k in range(len(data) // 2, len(data) // 2 + 8):
        data[k] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(storage.DamagedFile) as raised:
        storage.read_parquet(str(path))
    again = pickle.loads(pickle.dumps(raised.value))  # as it comes back from a worker
    assert again.filename == str(path) and str(again).startswith("cut or damaged (")
