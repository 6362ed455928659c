"""Hostile jobs: recipes and job folders built to hurt the run, the service or the trainer.

Each test builds the input or the fault itself: a glob reaching the job's own output, an input changed between
runs, a name too long for a file, a full or read-only disk (a small tmpfs), a second run of the same job, YAML
aliases that expand to millions of values, job folders crafted against the status service (deep JSON, numbers
out of range, a 64 MiB line), a tokenizer or shard replaced behind the trainer's back, a worker that stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import Field

from curation.job import JobFolderBusy, JobFolderError
from curation.recipe import MAX_NAME_CHARS, RecipeError, parse_recipe
from curation.stages import Processed, Stage, StageParams
from pipelines.net import free_port
from pipelines.run import run
from pipelines.service.server import Background
from tests.faults import CURATE, without_ray_address
from tests.test_hostile_inputs import prose
from tests.test_service import write_job

pytestmark = pytest.mark.timeout(180, method="thread")


# -- small local jobs ------------------------------------------------------------------------------------------


def write_notes(path: Path, keys: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": prose(k, 40), "url": f"https://n.example/{k}"}) + "\n" for k in keys))
    return path


def local_recipe(paths: list[str], output: Path, *, name: str = "notes", stages: str = "") -> str:
    quoted = ", ".join(f"'{p}'" for p in paths)
    return (f"name: {name}\noutput: '{output}'\nexecutor: local\nlocal: {{workers: 1}}\n"
            f"sources: [{{name: notes, format: jsonl, paths: [{quoted}]}}]\n{stages}")


def documents(job_dir: str | Path) -> list[str]:
    return sorted(t for f in sorted(Path(job_dir, "documents").glob("*.parquet"))
                  for t in pq.read_table(f, columns=["text"]).column("text").to_pylist())


def problems(text: str) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, "r.yaml")
    return [str(p) for p in caught.value.problems]


# -- 1: a job reading its own output ---------------------------------------------------------------------------


def test_an_input_glob_reaching_this_jobs_own_output_is_refused_before_any_run(tmp_path: Path):
    (tmp_path / "in").mkdir()
    (tmp_path / "selfjobs").mkdir()
    pq.write_table(pa.table({"text": ["seed document"]}), tmp_path / "in" / "seed.parquet")
    pq.write_table(pa.table({"text": ["a file under output, in no job"]}), tmp_path / "selfjobs" / "loose.parquet")
    text = (f"name: selfjob\noutput: '{tmp_path}/selfjobs'\nsources: [{{name: web, format: parquet, paths: "
            f"['{tmp_path}/in/seed.parquet', '{tmp_path}/selfjobs/**/*.parquet']}}]\n")
    found = problems(text)
    assert len(found) == 1, found
    assert found[0].startswith("r.yaml:3:") and "sources[0].paths[1]" in found[0]
    assert "reaches this job's folder" in found[0] and "selfjob-" in found[0] and "/documents/" in found[0]


def test_an_input_glob_reaching_another_job_folder_under_output_is_refused(tmp_path: Path):
    write_notes(tmp_path / "in" / "a.jsonl", ["a1", "a2"])
    first = run(parse_recipe(local_recipe([f"{tmp_path}/in/a.jsonl"], tmp_path / "jobs", name="first")), quiet=True)
    paths = [f"{tmp_path}/in/a.jsonl", f"{tmp_path}/jobs/first-*/documents/*.parquet"]
    reaching = local_recipe(paths, tmp_path / "jobs", name="second").replace("format: jsonl", "format: parquet")
    found = problems(reaching)
    assert any("sources[0].paths[1]" in p and f"reaches the job folder {first.job_dir}" in p for p in found), found


def test_inputs_beside_or_below_the_output_folder_but_outside_job_folders_pass(tmp_path: Path):
    write_notes(tmp_path / "in" / "a.jsonl", ["a1"])
    run(parse_recipe(local_recipe([f"{tmp_path}/in/a.jsonl"], tmp_path, name="first")), quiet=True)
    # output is the inputs' parent: its job folders lie beside `in/`, which the pattern never enters
    parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path, name="again"))


# -- 9: a name too long for a file -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["name", "source"])
def test_a_300_character_name_is_refused_at_validation(tmp_path: Path, key: str):
    write_notes(tmp_path / "a.jsonl", ["a"])
    long = "n" * 300
    text = local_recipe([f"{tmp_path}/a.jsonl"], tmp_path / "jobs", name=long if key == "name" else "short")
    if key == "source":
        text = text.replace("name: notes, format", f"name: {long}, format")
    found = problems(text)
    where = "name" if key == "name" else "sources[0].name"
    assert len(found) == 1 and f": {where}: " in found[0], found
    assert f"at most {MAX_NAME_CHARS} characters, got 300" in found[0] and "255 bytes" in found[0]


def test_the_longest_names_allowed_make_a_job_folder_and_files(tmp_path: Path):
    longest = "n" * MAX_NAME_CHARS
    write_notes(tmp_path / ("f" * 200 + ".jsonl"), ["a"])  # a long file name too: its stem is cut to 60
    text = local_recipe([f"{tmp_path}/{'f' * 200}.jsonl"], tmp_path / "jobs", name=longest).replace(
        "name: notes, format", f"name: {longest}, format")
    result = run(parse_recipe(text), quiet=True)
    assert len(documents(result.job_dir)) == 1


# -- 13: YAML aliases ------------------------------------------------------------------------------------------


def billion_laughs(levels: int = 8, width: int = 9) -> str:
    lines = ["a0: &a0 [lol]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "name: laughs\n" + "\n".join(lines) + f"\nsources: *a{levels}\n"


def test_yaml_aliases_past_the_expansion_bound_are_refused_naming_the_first_alias():
    found = problems(billion_laughs())
    assert found == ["r.yaml:3:10: YAML aliases (*name) expand this document past 100,000 values: write the "
                     "values out, or repeat fewer"]


@pytest.mark.parametrize(("text", "where"), [("a: &a [*a]\n", "1:4"),
                                             ("name: x\nsources: &s\n  - {name: a, extra: *s}\n", "2:10")])
def test_an_alias_inside_the_value_it_names_is_one_problem(text: str, where: str):
    """`a: &a [*a]` ended `curate validate` in a thousand lines of RecursionError (the duplicate-key walk)."""
    assert problems(text) == [f"r.yaml:{where}: a YAML alias (*name) inside the value it names (&name) makes a value "
                              "without end: write the value out"]


def test_a_few_aliases_still_work(tmp_path: Path):
    write_notes(tmp_path / "a.jsonl", ["a"])
    text = (f"name: aliased\nsources:\n  - &web {{name: web, format: jsonl, paths: ['{tmp_path}/a.jsonl']}}\n"
            "stages:\n  - length: &bounds {min_words: 1}\n  - length: *bounds\n")
    assert [kind for _, kind, _ in parse_recipe(text).stage_specs()] == ["length", "length"]


def test_a_posted_recipe_is_parsed_off_the_event_loop_and_laughs_are_refused(tmp_path: Path, monkeypatch):
    from pipelines.service import control as control_module
    from pipelines.service.control import Control

    entered, release = threading.Event(), threading.Event()
    real = control_module.parse_recipe

    def slow_parse(text: str, file: str) -> object:
        entered.set()
        release.wait(30)
        return real(text, file)

    monkeypatch.setattr(control_module, "parse_recipe", slow_parse)
    service = Background(tmp_path, port=free_port(), job_control=Control("s3cret", "http://127.0.0.1:9")).start()
    posted: list[httpx.Response] = []
    poster = threading.Thread(target=lambda: posted.append(httpx.post(
        f"{service.url}/api/jobs", content=billion_laughs(), headers={"Authorization": "Bearer s3cret"}, timeout=60)))
    try:
        poster.start()
        assert entered.wait(30), "the posted recipe never reached the parser"
        health = httpx.get(f"{service.url}/healthz", timeout=5)  # answered while the recipe is being parsed
        assert health.status_code == 200 and health.json()["status"] == "ok"
    finally:
        release.set()
        poster.join(60)
        service.stop()
    assert posted[0].status_code == 422 and "YAML aliases" in posted[0].json()["detail"][0]


# -- 5: an input changed between runs ----------------------------------------------------------------------------


def test_an_input_changed_since_its_shard_was_done_is_read_again(tmp_path: Path):
    a = write_notes(tmp_path / "in" / "a.jsonl", ["a1", "a2", "a3"])
    write_notes(tmp_path / "in" / "b.jsonl", ["b1"])
    recipe = parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "jobs"))
    first = run(recipe, quiet=True)
    assert len(documents(first.job_dir)) == 4
    before = a.stat().st_size
    write_notes(a, ["new1"])  # a shorter file, with other documents
    again = run(recipe, quiet=True)
    assert documents(again.job_dir) == sorted([prose("new1", 40), prose("b1", 40)])
    assert again.stats["documents"]["out"] == 2 and again.shards_skipped == 1
    started = [json.loads(x) for x in Path(again.job_dir, "events.jsonl").read_text().splitlines()
               if '"job_started"' in x][-1]
    [how] = started["inputs_changed"].values()
    assert how == f"{a} changed (size {before} -> {a.stat().st_size} bytes)"
    third = run(recipe, quiet=True)  # nothing changed since: nothing read again
    assert third.shards_skipped == 2 and len(documents(third.job_dir)) == 2
    # the same bytes, touched: the times said differ to the nanosecond (rounded, they read the same)
    mtime = a.stat().st_mtime_ns
    os.utime(a, ns=(mtime + 1, mtime + 1))
    run(recipe, quiet=True)
    [how] = [json.loads(x) for x in Path(again.job_dir, "events.jsonl").read_text().splitlines()
             if '"job_started"' in x][-1]["inputs_changed"].values()
    assert f".{mtime % 10**9:09d} -> " in how and how.endswith(f".{(mtime + 1) % 10**9:09d}, same size)")


def test_a_changed_input_whose_documents_later_steps_used_is_refused_in_one_line(tmp_path: Path):
    a = write_notes(tmp_path / "in" / "a.jsonl", ["a1", "a2"])
    recipe = parse_recipe(local_recipe([str(a)], tmp_path / "jobs", stages="stages:\n  - exact_dedup: {}\n"))
    first = run(recipe, quiet=True)
    write_notes(a, ["other"])
    with pytest.raises(JobFolderError) as refused:
        run(recipe, quiet=True)
    message = str(refused.value)
    assert "\n" not in message and str(a) in message and "already used by _work/" in message
    assert "give `output` (--output) another folder" in message
    assert len(documents(first.job_dir)) == 2  # left as it was


def test_an_input_removed_is_forgotten_and_one_added_or_removed_after_dedup_is_refused(tmp_path: Path):
    """A removed input kept its documents in the output (`shards: total 16, done 17`); one added after dedup or
    packing ran was copied into `documents/` undeduplicated and never packed."""
    a = write_notes(tmp_path / "in" / "a.jsonl", ["a1", "a2"])
    b = write_notes(tmp_path / "in" / "b.jsonl", ["b1"])
    recipe = parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "jobs"))
    job = Path(run(recipe, quiet=True).job_dir)
    next((job / "documents").glob("notes-a*.parquet")).unlink()  # lost since: read again
    assert len(documents(run(recipe, quiet=True).job_dir)) == 3
    b.unlink()
    again = run(recipe, quiet=True)
    assert documents(again.job_dir) == sorted([prose("a1", 40), prose("a2", 40)])
    assert again.stats["shards"]["done"] == again.stats["shards"]["total"] == 1

    deduped = parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "jobs", name="dedup",
                                        stages="stages:\n  - exact_dedup: {}\n"))
    first = run(deduped, quiet=True)
    write_notes(tmp_path / "in" / "c.jsonl", ["a1"])  # a copy of a document the dedup already judged
    with pytest.raises(JobFolderError, match=r"the input of shard notes-c\.jsonl-\w+ .*c\.jsonl was added since"):
        run(deduped, quiet=True)
    (tmp_path / "in" / "c.jsonl").unlink()
    a.unlink()
    with pytest.raises(JobFolderError, match=r"the input of shard notes-a\.jsonl-\w+ is gone: .* already used by"):
        run(deduped, quiet=True)
    assert len(documents(first.job_dir)) == 2  # left as it was


def test_an_input_gone_that_gave_no_documents_is_forgotten_after_dedup(tmp_path: Path):
    """An input whose records were all rejects (or a `.git/` file read as a shard before those were left out) gave
    the later steps nothing: its going changes none of their output, and the rerun was refused all the same."""
    write_notes(tmp_path / "in" / "a.jsonl", ["a1", "a2"])
    bad = tmp_path / "in" / "bad.jsonl"
    bad.write_text("not json\n")
    deduped = parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "jobs", name="dedup",
                                        stages="stages:\n  - exact_dedup: {}\n"))
    first = run(deduped, quiet=True)
    assert first.stats["shards"]["total"] == 2
    bad.unlink()
    again = run(deduped, quiet=True)
    assert again.stats["shards"]["total"] == again.stats["shards"]["done"] == 1
    assert documents(again.job_dir) == sorted([prose("a1", 40), prose("a2", 40)])


def test_a_job_resumed_by_other_code_says_so(tmp_path: Path, capsys):
    """A job stopped, then resumed after the code changed, mixed documents of both versions without a word: the
    package's version (0.1.0) is the same from one commit to the next, its sources' hash is not."""
    from pipelines.run import code_fingerprint

    write_notes(tmp_path / "in" / "a.jsonl", ["a1"])
    write_notes(tmp_path / "in" / "b.jsonl", ["b1"])
    recipe = parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "jobs"))
    job = Path(run(recipe, quiet=False).job_dir)
    assert "warning" not in capsys.readouterr().err
    events = job / "events.jsonl"
    events.write_text(events.read_text().replace(code_fingerprint(), "0123456789ab"))
    next((job / "_shards").glob("notes-b*.json")).unlink()  # one shard still to do, as after a stop
    run(recipe, quiet=False)
    err = capsys.readouterr().err
    assert f"was begun by other code (curation sources 0123456789ab, now {code_fingerprint()})" in err
    assert "its 1 done shards are kept as that code wrote them" in err
    changed = [json.loads(line) for line in events.read_text().splitlines() if '"code_changed"' in line]
    assert [(e["before"], e["now"]) for e in changed] == [("0123456789ab", code_fingerprint())]
    started = [json.loads(line) for line in events.read_text().splitlines() if '"job_started"' in line]
    assert [e["records_already_read"] for e in started] == [0, 1]  # shard a's record: no part of the rerun's rate
    run(recipe, quiet=False)  # shard a is still the earlier code's: said on every rerun
    assert "was begun by other code (curation sources 0123456789ab" in capsys.readouterr().err


def test_a_packed_shard_lost_from_a_job_without_corpus_stages_is_packed_again(tmp_path: Path):
    """With no corpus stage, a rerun over a lost packed shard started no executor (a manifest was there) and packing
    again failed with `'NoneType' object has no attribute 'share'`, deleting manifest.json."""
    write_notes(tmp_path / "in" / "a.jsonl", ["a1", "a2", "a3"])
    stages = "tokenizer: {train: {vocab_size: 300, hard_vocab_limit: false}}\npack: {seq_len: 32, shard_rows: 2}\n"
    recipe = parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "jobs", stages=stages))
    job = Path(run(recipe, quiet=True).job_dir)
    shards = {f.name: f.read_bytes() for f in (job / "shards").glob("*.arrow")}
    manifest = json.loads((job / "manifest.json").read_text())
    (job / "shards" / sorted(shards)[0]).unlink()
    run(recipe, quiet=True)
    assert {f.name: f.read_bytes() for f in (job / "shards").glob("*.arrow")} == shards
    assert json.loads((job / "manifest.json").read_text())["splits"] == manifest["splits"]


def test_a_damaged_job_folder_is_mended_by_the_rerun(tmp_path: Path):
    """A rerun said `done` over a documents file deleted or cut, a packed shard gone or cut, a record, manifest or
    dedup result cut short (those three with a traceback), and appended its events to a cut last line. Now each is
    written again, the same; a shard whose record is lost is read again, as a shard the dedup took."""
    write_notes(tmp_path / "in" / "a.jsonl", ["a1", "a2", "a1"])
    write_notes(tmp_path / "in" / "b.jsonl", ["b1", "b2"])
    stages = ("stages:\n  - exact_dedup: {}\n"
              "tokenizer: {train: {vocab_size: 300, hard_vocab_limit: false}}\npack: {seq_len: 32, shard_rows: 2}\n")
    recipe = parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "jobs", stages=stages))
    job = Path(run(recipe, quiet=True).job_dir)
    want = documents(job)
    assert len(want) == 4
    shards = {f.name: f.read_bytes() for f in (job / "shards").glob("*.arrow")}
    final, work = sorted((job / "documents").glob("*.parquet")), sorted((job / "_work" / "documents").glob("*"))
    final[0].unlink()
    final[1].write_bytes(final[1].read_bytes()[:300])
    first, second = sorted(shards)[:2]
    (job / "shards" / first).unlink()
    (job / "shards" / second).write_bytes(shards[second][:100])
    removed = job / "_work" / "removed" / "exact_dedup.parquet"
    removed.write_bytes(removed.read_bytes()[:50])
    events = job / "events.jsonl"
    events.write_bytes(events.read_bytes()[:-7])
    again = run(recipe, quiet=True)
    assert documents(job) == want
    assert {f.name: f.read_bytes() for f in (job / "shards").glob("*.arrow")} == shards
    assert again.stats["documents"]["out"] == 4
    assert all(json.loads(line) for line in events.read_text().splitlines()[-3:])  # each event a line of its own

    manifest = (job / "manifest.json").read_text()
    (job / "manifest.json").write_text(manifest[:20])
    run(recipe, quiet=True)
    assert json.loads((job / "manifest.json").read_text())["splits"] == json.loads(manifest)["splits"]

    (job / "_shards" / f"{work[0].stem}.json").write_text('{"sha')  # a record cut: its shard is read again
    assert run(recipe, quiet=True).finished == [work[0].stem]
    assert documents(job) == want


# -- 16: two runs of one job at once ---------------------------------------------------------------------------

GATES: dict[str, tuple[threading.Event, threading.Event]] = {}  # tag -> (a batch arrived, let it go on)


class Gate(Stage):
    """Keeps every row; holds each batch until the test lets it go, saying when one arrived."""

    name = "gate"

    class Params(StageParams):
        tag: str = Field(..., description="Key of the events in GATES.")

    def process(self, batch: pa.Table) -> Processed:
        arrived, go_on = GATES[self.params.tag]
        arrived.set()
        go_on.wait(60)
        return Processed(batch, pa.nulls(batch.num_rows, pa.string()))


def test_a_second_run_into_a_job_folder_being_written_says_which_process_holds_it(tmp_path: Path):
    for name in ("a", "b"):
        write_notes(tmp_path / "in" / f"{name}.jsonl", [f"{name}{i}" for i in range(3)])
    recipe = parse_recipe(local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "jobs"))
    arrived, go_on = GATES["lock"] = (threading.Event(), threading.Event())
    results: list = []
    gated = [("gate", Gate(tag="lock"))]
    first = threading.Thread(target=lambda: results.append(run(recipe, quiet=True, stages=gated)))
    first.start()
    try:
        assert arrived.wait(60), "the first run never reached its stage"
        with pytest.raises(JobFolderBusy) as busy:
            run(recipe, quiet=True)
    finally:
        go_on.set()
        first.join(60)
    message = str(busy.value)
    assert "\n" not in message and f"is being written by process {os.getpid()} on " in message
    assert len(documents(results[0].job_dir)) == 6  # the first run was not disturbed
    assert run(recipe, quiet=True).shards_skipped == 2  # once it ended, the folder is free again


@pytest.mark.subprocess
def test_a_lock_a_killed_run_left_to_its_dying_workers_is_waited_for(tmp_path: Path):
    """A run SIGKILLed leaves its lock's descriptor to the workers it forked until they end: a rerun started at once
    was refused as 'being written by process N', N gone. While N is gone from this machine, the lock is waited for."""
    import socket

    from curation.job import LOCK, job_folder_lock

    job = tmp_path / "job"
    job.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (job / LOCK).write_text(f"process {dead.stdout.strip()} on {socket.gethostname()} (since 2026-12-07 00:55:57)")
    hold = (f"import fcntl, os, time; fd = os.open({str(job / LOCK)!r}, os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(1.5)")
    worker = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE, text=True)
    assert worker.stdout.readline().strip() == "held"
    started = time.monotonic()
    with job_folder_lock(str(job)):
        assert time.monotonic() - started > 0.5  # it waited for the worker to end
    worker.wait()
    # a holder that is alive is no orphan: refused at once
    with (job_folder_lock(str(job)), pytest.raises(JobFolderBusy, match=f"process {os.getpid()} on "),
          job_folder_lock(str(job))):
        pass


@pytest.mark.subprocess
def test_curate_run_refuses_a_job_folder_another_run_holds(tmp_path: Path):
    from curation.job import job_folder_lock

    write_notes(tmp_path / "a.jsonl", ["a"])
    recipe_file = tmp_path / "r.yaml"
    recipe_file.write_text(local_recipe([f"{tmp_path}/a.jsonl"], tmp_path / "jobs"))
    job_dir = parse_recipe(recipe_file.read_text()).job_dir()
    with job_folder_lock(job_dir):
        done = subprocess.run([CURATE, "run", str(recipe_file), "--quiet"], capture_output=True, text=True,
                              env=without_ray_address(), timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"curate run: job folder {job_dir} is being written by {Path(job_dir, '_lock').read_text()}: wait for that "
        "run to end, or stop it; nothing was run"]
    assert not Path(job_dir, "documents").exists()


# -- 10: a full disk, a read-only one --------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, *options: str) -> Iterator[Path]:
    """A small tmpfs mounted at `path` for the block (root, or CAP_SYS_ADMIN; else the test is skipped)."""
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(path)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def curate_run(recipe: str, tmp_path: Path) -> subprocess.CompletedProcess:
    recipe_file = tmp_path / "r.yaml"
    recipe_file.write_text(recipe)
    return subprocess.run([CURATE, "run", str(recipe_file), "--quiet"], capture_output=True, text=True,
                          env=without_ray_address(), timeout=170, check=False)


def noise_notes(path: Path, docs: int) -> Path:
    """Documents of random hex (zstd cannot shrink them much): a few hundred KB of output per file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": os.urandom(1500).hex()}) + "\n" for _ in range(docs)))
    return path


@pytest.mark.subprocess
def test_a_full_disk_ends_in_one_line_naming_the_path_and_leaves_no_temporary_file(tmp_path: Path):
    for name in ("a", "b", "c"):
        noise_notes(tmp_path / "in" / f"{name}.jsonl", 150)
    with tmpfs(tmp_path / "full", "size=384k") as full:
        done = curate_run(local_recipe([f"{tmp_path}/in/*.jsonl"], full / "jobs"), tmp_path)
        left = sorted(str(p) for p in full.rglob("*.tmp"))
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"curate run: {full}/jobs/notes-") and ": No space left on device; " in lines[0]
    assert left == []


@pytest.mark.subprocess
def test_a_disk_the_final_documents_fill_leaves_no_temporary_file(tmp_path: Path):
    """The final documents are written by the workers: one failed on a full disk, the folder was cleared of temporary
    files, and the others went on writing theirs, which stayed (the run's line said none was left)."""
    first = noise_notes(tmp_path / "in" / "f0.jsonl", 40).read_text().splitlines(keepends=True)[:5]
    for i in range(1, 12):  # each holds copies of the first's: every shard's final documents are rewritten
        path = noise_notes(tmp_path / "in" / f"f{i}.jsonl", 40)
        path.write_text(path.read_text() + "".join(first))
    recipe = local_recipe([f"{tmp_path}/in/*.jsonl"], tmp_path / "measure", stages="stages: [{exact_dedup: {}}]\n")
    recipe = recipe.replace("workers: 1", "workers: 2")
    assert curate_run(recipe, tmp_path).returncode == 0
    job = next((tmp_path / "measure").iterdir())
    whole = sum(p.stat().st_size for p in job.rglob("*") if p.is_file())
    final = sum(p.stat().st_size for p in (job / "documents").glob("*.parquet"))
    with tmpfs(tmp_path / "full", f"size={(whole - final // 2) // 1024}k") as full:  # room for half the final ones
        done = curate_run(recipe.replace(str(tmp_path / "measure"), str(full / "jobs")), tmp_path)
        left = sorted(str(p) for p in full.rglob("*.tmp"))
    assert done.returncode == 1 and ": No space left on device; " in done.stderr, done.stderr
    assert left == []


@pytest.mark.subprocess
def test_a_read_only_output_ends_in_one_line_naming_the_path(tmp_path: Path):
    write_notes(tmp_path / "a.jsonl", ["a"])
    with tmpfs(tmp_path / "ro", "size=64k", "ro") as read_only:
        done = curate_run(local_recipe([f"{tmp_path}/a.jsonl"], read_only / "jobs"), tmp_path)
    assert done.returncode == 2, done.stderr  # before any work: it was 1, "the shards done are kept"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"curate run: cannot make the job folder {read_only}/jobs")
    assert lines[0].endswith(": Read-only file system (`output`, --output); nothing was run")


# -- 11, 12: job folders crafted against the status service ----------------------------------------------------


def read_bytes() -> int:
    """Bytes this process has read so far (files and sockets: /proc/self/io)."""
    line = next(x for x in Path("/proc/self/io").read_text().splitlines() if x.startswith("rchar:"))
    return int(line.split()[1])


def crafted_jobs(root: Path) -> dict[str, str]:
    """A good job beside folders crafted to take the job list down; {job id: the error its status names}."""
    write_job(root, name="good-0123456789", done=True)
    deep = write_job(root, name="deep-0123456789", done=True)
    (deep / "stats.json").write_text("[" * 20_000 + "]" * 20_000)
    huge = write_job(root, name="huge-0123456789")
    progress = json.loads((huge / "_progress.json").read_text())
    (huge / "_progress.json").write_text(json.dumps(progress).replace('"records": 10', '"records": 1e999'))
    digits = write_job(root, name="digits-0123456789", done=True)
    (digits / "stats.json").write_text('{"shards": {"total": ' + "9" * 4000 + "}}")
    listed = write_job(root, name="listed-0123456789", done=True)  # JSON, but no object: damage, read as absent
    (listed / "_progress.json").write_text("[1, 2]")  # its status named `AttributeError: 'list' object ...`
    return {"deep-0123456789": "stats.json: JSON nested too deeply",
            "huge-0123456789": "_progress.json: number out of range: 1e999",
            "digits-0123456789": "stats.json: number out of range: 9999"}


def test_a_crafted_job_folder_is_shown_as_unreadable_and_the_others_as_usual(tmp_path: Path):
    expected = crafted_jobs(tmp_path)
    service = Background(tmp_path, port=free_port()).start()
    try:
        listed = httpx.get(f"{service.url}/api/jobs", timeout=30)
        assert listed.status_code == 200, listed.text[:300]
        by_id = {j["id"]: j for j in listed.json()["jobs"]}
        assert by_id["good-0123456789"]["state"] == "done" and by_id["good-0123456789"]["records"] == 10
        assert by_id["listed-0123456789"]["state"] == "done"
        for job, error in expected.items():
            assert by_id[job]["state"] == "unreadable" and by_id[job]["error"].startswith(error), by_id[job]
            alone = httpx.get(f"{service.url}/api/jobs/{job}", timeout=30)
            assert alone.status_code == 200 and alone.json()["state"] == "unreadable"
        assert httpx.get(f"{service.url}/api/jobs/good-0123456789/funnel", timeout=30).json()["final"] is True
        assert httpx.get(f"{service.url}/metrics", timeout=30).status_code == 200
    finally:
        service.stop()


def test_an_events_file_without_newlines_is_read_a_bounded_amount_per_poll_and_never_twice(tmp_path: Path):
    from curation.progress import MAX_READ
    from pipelines.service.jobs import ServedJob

    job = write_job(tmp_path, name="long-0123456789")
    size = 64 << 20
    with (job / "events.jsonl").open("wb") as f:
        f.truncate(size)  # 64 MiB without a newline (sparse: zeros)
    folder = ServedJob(job)
    reads = []
    for _ in range(8):
        before = read_bytes()
        assert folder.status()["id"] == "long-0123456789"
        reads.append(read_bytes() - before)
    assert max(reads) <= MAX_READ + (1 << 20), reads
    assert sum(reads) >= size and reads[-1] < (1 << 20), reads  # read through once, then not again
    with (job / "events.jsonl").open("ab") as f:
        f.write(b"\n" + json.dumps({"time": 1.0, "event": "job_started", "shards": 7}).encode() + b"\n")
    before = read_bytes()
    assert folder.status()["shards"]["total"] == 7
    assert read_bytes() - before < (1 << 20)


# -- 14: what the trainer is given ------------------------------------------------------------------------------


def packed_job(path: Path) -> Path:
    """A packed job as `curate run` leaves one: shards and a tokenizer, each with its sha256 in the manifest."""
    from curation.tokens.output_shards import file_sha256
    from tests.support.packed_job import build_job

    build_job(path)
    (path / "tokenizer.model").write_bytes(b"a sentencepiece model, as packing wrote it")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["tokenizer"]["sha256"] = file_sha256(str(path / "tokenizer.model"))
    for part in manifest["splits"].values():
        for shard in part["shards"]:
            shard["sha256"] = file_sha256(str(path / shard["file"]))
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def edit_manifest(job: Path, change) -> None:
    manifest = json.loads((job / "manifest.json").read_text())
    change(manifest)
    (job / "manifest.json").write_text(json.dumps(manifest))


def truncate(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)


@pytest.mark.parametrize(("harm", "named", "why"), [
    (lambda job: (job / "tokenizer.model").write_bytes(os.urandom(64)), "tokenizer.model",
     "the tokenizer was replaced after packing"),
    (lambda job: edit_manifest(job, lambda m: m["tokenizer"].update(sha256="0" * 64)), "tokenizer.model",
     "the tokenizer was replaced after packing"),
    (lambda job: edit_manifest(job, lambda m: m["splits"]["train"]["shards"][1].update(sha256="0" * 64)),
     "shards/train-00001.arrow", "truncated, damaged or replaced after packing"),
    (lambda job: truncate(job / "shards" / "train-00002.arrow"), "shards/train-00002.arrow",
     "truncated, damaged or replaced after packing"),
    (lambda job: (truncate(job / "shards" / "train-00002.arrow"), edit_manifest(
        job, lambda m: m["splits"]["train"]["shards"][2].pop("sha256"))), "shards/train-00002.arrow",
     "not a whole Arrow stream of packed rows"),  # a manifest of before checksums: the shard is opened whole
])
def test_curate_train_refuses_files_that_are_not_what_the_manifest_records_in_one_line(tmp_path: Path, capsys,
                                                                                        harm, named: str, why: str):
    from pipelines.cli import main

    job = packed_job(tmp_path / "job")
    harm(job)
    recipe = tmp_path / "train.yaml"
    recipe.write_text(f"job: {job}\ntrain_dir: {tmp_path / 'train'}\nsteps: 2\nbatch_size: 2\nworkers: 1\n")
    assert main(["train", str(recipe)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"curate train: {job / named}: ") and why in err[0], err
    assert not (tmp_path / "train" / "ray").exists()  # refused before Ray Train started


def test_packing_records_each_shards_sha256(tmp_path: Path):
    from curation.tokens.output_shards import file_sha256, write_shard
    from tests.support.packed_job import build_job

    built = build_job(tmp_path / "packed")
    bucket = tmp_path / "bucket.arrow"
    table = built.splits["train"]
    with pa.OSFile(str(bucket), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    out = tmp_path / "shard.arrow"
    counts = write_shard([str(bucket)], [table.num_rows], 0, table.num_rows, 7, str(out))
    assert counts["sha256"] == file_sha256(str(out)) and counts["rows"] == table.num_rows
    assert write_shard([str(bucket)], [table.num_rows], 0, table.num_rows, 7, str(out)) == counts  # a rerun's


# -- 15: a worker that stops -----------------------------------------------------------------------------------


class StopOnce(Stage):
    """Stops its own worker process (SIGSTOP, as a debugger or a frozen mount would) on a batch holding
    `marker`, the first time only (`flag` is made first; with `always`, every time)."""

    name = "stop_once"

    class Params(StageParams):
        flag: str = Field(..., description="Made before the first stop.")
        always: bool = Field(False, description="Stop every time, not only the first.")
        marker: str = Field("STOPHERE", description="Text that stops the worker.")

    def process(self, batch: pa.Table) -> Processed:
        if any(self.params.marker in (t or "") for t in batch.column("text").to_pylist()) and (
                self.params.always or not Path(self.params.flag).exists()):
            Path(self.params.flag).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGSTOP)
        return Processed(batch, pa.nulls(batch.num_rows, pa.string()))


def stopping_inputs(tmp_path: Path) -> list[str]:
    write_notes(tmp_path / "in" / "calm.jsonl", [f"calm{i}" for i in range(5)])
    stop = tmp_path / "in" / "stop.jsonl"
    stop.write_text("".join(json.dumps({"text": f"STOPHERE {prose(f's{i}', 20)}"}) + "\n" for i in range(3)))
    return [f"{tmp_path}/in/*.jsonl"]


def test_a_stopped_local_worker_fails_its_shard_visibly_after_the_stall_timeout(tmp_path: Path):
    from pipelines.run import ShardsFailed

    text = local_recipe(stopping_inputs(tmp_path), tmp_path / "jobs").replace(
        "local: {workers: 1}", "local: {workers: 2}\nstall_timeout_s: 1")
    recipe = parse_recipe(text)
    flag = tmp_path / "stopped"
    with pytest.raises(ShardsFailed) as failed:
        run(recipe, quiet=True, stages=[("stop", StopOnce(flag=str(flag), always=True))])
    [(shard, why)] = failed.value.failed.items()
    assert shard.startswith("notes-stop.jsonl-") and why.startswith("StalledTask: no batch for 1 s (local worker ")
    assert not psutil.pid_exists(int(flag.read_text())) or psutil.Process(int(flag.read_text())).status() == "zombie"
    job = Path(recipe.job_dir())
    assert len(documents(job)) == 5  # the other shard is done and kept
    events = [json.loads(x) for x in (job / "events.jsonl").read_text().splitlines()]
    assert [e["shard"] for e in events if e["event"] == "shard_failed"] == [shard]


def test_a_stopped_ray_worker_is_run_again_and_nothing_is_lost_or_doubled(ray_session, tmp_path: Path):
    text = local_recipe(stopping_inputs(tmp_path), tmp_path / "jobs").replace(
        "executor: local\nlocal: {workers: 1}", "executor: ray\nstall_timeout_s: 3")
    flag = tmp_path / "stopped"
    result = run(parse_recipe(text), quiet=True, stages=[("stop", StopOnce(flag=str(flag)))])
    assert flag.exists(), "the worker should have stopped once"
    texts = documents(result.job_dir)
    assert len(texts) == 8 and len(set(texts)) == 8
    assert result.stats["documents"] == {"records_read": 8, "in": 8, "out": 8}


@pytest.mark.subprocess
def test_curate_run_refuses_an_output_flag_that_puts_the_job_where_its_inputs_reach(tmp_path: Path):
    write_notes(tmp_path / "data" / "a.jsonl", ["a"])
    recipe_file = tmp_path / "r.yaml"
    recipe_file.write_text(local_recipe([f"{tmp_path}/data/**"], tmp_path / "elsewhere"))  # valid as it is
    done = subprocess.run([CURATE, "run", str(recipe_file), "--quiet", "--output", str(tmp_path / "data" / "jobs")],
                          capture_output=True, text=True, env=without_ray_address(), timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"curate run: sources[0].paths[0]: '{tmp_path}/data/**' reaches this job's folder "
                           f"{tmp_path}/data/jobs/notes-") and line.endswith("; nothing was run")
    assert not (tmp_path / "data" / "jobs").exists()
