"""Faults around a run: an input that cannot be read, a driver killed or stopped by a signal.

Each test makes the fault itself: an input deleted after it was listed, a reader that fails in the middle of
a file, SIGKILL or SIGTERM sent to a real `curate run`.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest

from curation.progress import JobFolder
from curation.readers import JsonlReader
from curation.recipe import Recipe, Source, parse_recipe
from curation.shards import list_shards
from pipelines import cli
from pipelines.run import ShardsFailed, run
from tests.conftest import ROOT, warc_response
from tests.support.pages import slow_page
from tests.support.waiting import wait_until

NOTES = 300  # per shard: read 128 at a time, a shard's first batches reach the driver before it fails


def notes_recipe(tmp_path: Path, shards: int = 4, *, workers: int = 2, extra: str = "") -> str:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    for k in range(shards):
        rows = [{"text": f"note {i} of shard {k} " + " ".join(f"w{k}x{i}x{j}" for j in range(12)),
                 "url": f"https://s{k}.example/{i}"} for i in range(NOTES)]
        (folder / f"s{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return (f"name: faults\nexecutor: local\nlocal: {{workers: {workers}}}\n"
            f"sources: [{{name: s, format: jsonl, paths: ['{folder}/*.jsonl'], read_backoff_s: 0.05}}]\n{extra}")


def events(job_dir: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(job_dir, "events.jsonl").read_text().splitlines()]


def document_ids(job_dir: str | Path, folder: str = "documents") -> list[str]:
    return sorted(i for f in sorted(Path(job_dir, folder).glob("*.parquet"))
                  for i in pq.read_table(f, columns=["id"]).column("id").to_pylist())


def deleted_after_listing(recipe, monkeypatch, name: str) -> str:
    """The run lists `name`'s file, which is gone when its shard runs (a storage hiccup, a file moved away):
    returns its shard name."""
    listed = list_shards(recipe)
    monkeypatch.setattr("pipelines.run.list_shards", lambda _: listed)
    shard = next(s for s in listed if s.uri.endswith(name))
    Path(shard.uri.removeprefix("file://")).rename(shard.uri.removeprefix("file://") + ".away")
    return shard.name


def put_back(shard_uri_end: str, tmp_path: Path) -> None:
    away = next((tmp_path / "in").glob(f"*{shard_uri_end}.away"))
    away.rename(str(away).removesuffix(".away"))


class FailingMidFile(JsonlReader):
    """Reads a file up to record `fail_at`, where it fails with EIO on every attempt while `<broken>/<file name>`
    exists (a disk or NFS error in the middle of the file): real retries, then `InputReadError`."""

    def __init__(self, *, broken: str, fail_at: int, **options) -> None:
        super().__init__(**options)
        self.broken, self.fail_at = broken, fail_at

    def records(self, uri: str) -> Iterator:
        for record in super().records(uri):
            if record.position >= self.fail_at and Path(self.broken, Path(uri).name).exists():
                raise OSError(errno.EIO, "Input/output error", uri)
            yield record


class FlakySource(Source):
    """A jsonl source read through `FailingMidFile` (pickled by reference: Ray workers and forkservers import it)."""

    broken: str
    fail_at: int = 200  # past the first batch of 128: rows of the shard reach the driver before it fails

    def reader(self) -> FailingMidFile:
        return FailingMidFile(broken=self.broken, fail_at=self.fail_at, **super().reader().options())


def with_flaky_source(recipe: Recipe, broken: Path) -> Recipe:
    broken.mkdir(exist_ok=True)
    flaky = FlakySource(**recipe.sources[0].model_dump(), broken=str(broken))
    return recipe.model_copy(update={"sources": [flaky]})


# -- 2: an input that cannot be read fails its shard, not the run -----------------------------------------------


@pytest.mark.parametrize("executor", ["in-process", "pool", pytest.param("ray", marks=pytest.mark.ray)])
def test_a_shard_failing_mid_read_is_discarded_the_others_are_done_and_a_rerun_reads_it(tmp_path, request,
                                                                                       executor):
    if executor == "ray":
        request.getfixturevalue("ray_session")
    text = notes_recipe(tmp_path, workers=1 if executor == "in-process" else 2, extra="stages: [{exact_dedup: {}}]\n")
    if executor == "ray":
        text = text.replace("executor: local", "executor: ray")
    recipe = with_flaky_source(parse_recipe(text), tmp_path / "bad")
    clean = run(recipe, output=str(tmp_path / "clean"), quiet=True)
    (tmp_path / "bad" / "s1.jsonl").touch()  # from now on s1.jsonl fails at its record 200, every time
    out = str(tmp_path / "jobs")
    started = time.time()
    with pytest.raises(ShardsFailed, match=r"1 of 4 shards could not be read: s-s1\.jsonl-\w+ \(InputReadError: "):
        run(recipe, output=out, quiet=True)
    assert time.time() - started < 120  # Ray did not retry it on and on
    job = Path(recipe.job_dir(out))
    failed = next(s.name for s in list_shards(recipe) if s.uri.endswith("s1.jsonl"))
    recorded = sorted(p.stem for p in (job / "_shards").glob("*.json"))
    assert len(recorded) == 3 and failed not in recorded  # the others went on to their end
    assert not [p for p in job.rglob("*") if failed in p.name]  # nothing of it: no half shard, no temporary file
    assert not list(job.rglob("*.tmp"))
    assert len(document_ids(job, "_work/documents")) == 3 * NOTES
    log = events(job)
    assert [e["shard"] for e in log if e["event"] == "shard_failed"] == [failed]
    assert "corpus_stages_started" not in {e["event"] for e in log}  # no corpus stage on a partial input set
    assert not (job / "documents").exists()
    end = log[-1]
    assert end["event"] == "job_failed" and list(end["failed_shards"]) == [failed]
    assert end["failed_shards"][failed].startswith("InputReadError: ") and end["shards_done"] == 3
    assert "could not be read in 3 attempts: OSError: [Errno 5] Input/output error" in end["failed_shards"][failed]
    status = JobFolder(job).status()
    assert status["state"] == "failed" and failed in status["error"] and status["shards"]["done"] == 3
    assert json.loads((job / "_progress.json").read_text())["records"] == 3 * NOTES  # not the discarded rows

    (tmp_path / "bad" / "s1.jsonl").unlink()  # the storage is back
    again = run(recipe, output=out, quiet=True)
    assert again.shards_skipped == 3 and again.finished == [failed]
    assert document_ids(again.job_dir) == document_ids(clean.job_dir)  # nothing lost, nothing doubled
    assert again.stats["documents"] == clean.stats["documents"]
    assert JobFolder(job).status()["state"] == "done"


def test_an_input_gone_when_its_shard_runs_fails_the_job_naming_it_through_the_cli(tmp_path, monkeypatch, capsys):
    recipe_path = tmp_path / "recipe.yaml"
    recipe_path.write_text(notes_recipe(tmp_path, shards=3))
    recipe = parse_recipe(recipe_path.read_text())
    gone = deleted_after_listing(recipe, monkeypatch, "s2.jsonl")
    out = tmp_path / "jobs"
    code = cli.main(["run", str(recipe_path), "--output", str(out), "--quiet"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith(f"curate run: 1 of 3 shards could not be read: {gone} (")
    assert lines[0].endswith("2 shards are done and kept: run it again to read the others")
    job = Path(recipe.job_dir(str(out)))
    recorded = {p.stem for p in (job / "_shards").glob("*.json")}
    assert gone not in recorded and len(recorded) == 2
    assert not (job / "stats.json").exists()  # stats.json is a finished job's word
    put_back("s2.jsonl", tmp_path)
    assert cli.main(["run", str(recipe_path), "--output", str(out), "--quiet"]) == 0
    assert len(document_ids(job)) == 3 * NOTES
    assert "3 shards (2 already done)" in capsys.readouterr().out


# -- 4 and 16: a driver killed or stopped leaves nothing running ------------------------------------------------


SLOW_SHARDS = 6


def slow_recipe(tmp_path: Path, executor: str) -> Path:
    """Shards of pages trafilatura takes ~0.3 s each on: a run that lasts long enough to be stopped midway."""
    folder = tmp_path / "in"
    folder.mkdir()
    for s in range(SLOW_SHARDS):
        pages = b"".join(warc_response(f"https://slow.example/{s}/{p}", slow_page(s * 100 + p, rows=2000))
                         for p in range(3))
        (folder / f"part-{s}.warc.gz").write_bytes(pages)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"name: stopped\nexecutor: {executor}\nlocal: {{workers: 2}}\nray: {{num_cpus: 2}}\n"
                      f"sources: [{{name: web, format: warc, paths: ['{folder}/*.warc.gz']}}]\n"
                      "stages: [{extract: {timeout_s: 30}}, {length: {min_words: 10}}]\n")
    return recipe


# A caller running another thread (a notebook, a server): the workers come from a forkserver.
BESIDE_A_THREAD = ("import sys, threading; threading.Thread(target=threading.Event().wait, daemon=True).start(); "
                   "from pipelines.cli import main; sys.exit(main(sys.argv[1:]))")


def start_run(recipe: Path, out: Path, *, beside_a_thread: bool = False) -> subprocess.Popen:
    head = [sys.executable, "-c", BESIDE_A_THREAD] if beside_a_thread else [sys.executable, "-m", "pipelines.cli"]
    return subprocess.Popen([*head, "run", str(recipe), "--output", str(out), "--quiet"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 240, every: float = 0.1) -> None:
    """`condition()` comes true while the run goes on."""
    def met() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {what}: {proc.stderr.read()[-2000:]}")
        return condition()
    wait_until(met, what, timeout, every)


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def left_running(processes: list[psutil.Process], timeout: float) -> list[str]:
    """The processes still alive after `timeout` seconds (zombies count as gone); kills them, so a failing
    test leaves nothing behind either."""
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    named = [f"{p.pid} {' '.join(p.cmdline()[:4])}" for p in alive]
    for p in alive:
        p.kill()
    return named


def a_shard_done(out: Path) -> bool:
    return any('"shard_done"' in p.read_text() for p in out.glob("*/events.jsonl"))


@pytest.mark.subprocess
@pytest.mark.parametrize("beside_a_thread", [False, True], ids=["forked", "forkserver"])
def test_local_workers_die_with_a_driver_killed_by_sigkill(tmp_path, beside_a_thread):
    recipe = slow_recipe(tmp_path, "local")
    proc = start_run(recipe, tmp_path / "out", beside_a_thread=beside_a_thread)
    try:
        wait_for(lambda: a_shard_done(tmp_path / "out"), proc, "a shard done")
        children = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone: nothing tells the workers
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(children) >= 2  # the workers (and under a forkserver, the forkserver)
    assert left_running(children, timeout=10) == []


def ray_starting(out: Path, proc: subprocess.Popen) -> bool:
    """The job started and its embedded Ray is coming up (its GCS server runs), no shard done yet."""
    started = any('"job_started"' in p.read_text() for p in out.glob("*/events.jsonl"))
    return started and any("gcs_server" in named(p) for p in descendants(proc.pid)) and not a_shard_done(out)


def named(process: psutil.Process) -> str:
    try:
        return process.name()
    except psutil.Error:  # ended meanwhile
        return ""


def stopped_by_sigterm(recipe: Path, out: Path, during_ray_init: bool = False,
                       ) -> tuple[subprocess.CompletedProcess, Path, list[psutil.Process]]:
    proc = start_run(recipe, out)
    try:
        if during_ray_init:
            wait_for(lambda: ray_starting(out, proc), proc, "Ray starting", every=0.01)
        else:
            wait_for(lambda: a_shard_done(out), proc, "a shard done")
        children = descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    [job] = out.iterdir()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), job, children


def assert_interrupted(done: subprocess.CompletedProcess, job: Path, children: list[psutil.Process],
                       shards_done: bool = True) -> None:
    assert done.returncode == 128 + signal.SIGTERM, done.stderr[-3000:]
    line = "curate run: interrupted (SIGTERM); what is done is kept: run it again to resume"
    assert done.stderr.strip().splitlines() == [line], done.stderr[-3000:]  # no traceback, no Ray crash lines
    log = events(job)
    assert log[-1]["event"] == "job_interrupted" and log[-1]["signal"] == "SIGTERM"
    assert "job_failed" not in {e["event"] for e in log}
    status = JobFolder(job).status()
    assert status["state"] == "interrupted" and status["error"] is None
    assert left_running(children, timeout=15) == []
    done_shards = len(list((job / "_shards").glob("*.json")))
    assert 0 < done_shards < SLOW_SHARDS if shards_done else done_shards == 0


@pytest.mark.subprocess
def test_sigterm_ends_a_local_run_interrupted_with_one_line_and_nothing_left(tmp_path):
    recipe = slow_recipe(tmp_path, "local")
    done, job, children = stopped_by_sigterm(recipe, tmp_path / "out")
    assert_interrupted(done, job, children)
    kept = len(list((job / "_shards").glob("*.json")))
    again = run(parse_recipe(recipe.read_text()), output=str(tmp_path / "out"), quiet=True)
    assert again.shards_skipped == kept and again.stats["shards"]["done"] == SLOW_SHARDS  # resumed where it stopped


@pytest.mark.ray
def test_sigterm_ends_a_ray_run_interrupted_with_one_line_and_nothing_left(tmp_path):
    recipe = slow_recipe(tmp_path, "ray")
    done, job, children = stopped_by_sigterm(recipe, tmp_path / "out")
    assert_interrupted(done, job, children)


@pytest.mark.ray
def test_sigterm_while_ray_starts_ends_the_run_interrupted_too(tmp_path):
    """ray.init puts a handler of its own on SIGTERM (`sys.exit`) for as long as it starts Ray: seconds."""
    recipe = slow_recipe(tmp_path, "ray")
    done, job, children = stopped_by_sigterm(recipe, tmp_path / "out", during_ray_init=True)
    assert_interrupted(done, job, children, shards_done=False)


def test_an_interrupt_stops_the_local_workers_at_once_not_after_their_shards():
    """Ctrl-C (SIGINT to the whole group) or SIGTERM: the pool's workers are killed, not waited for."""
    from pipelines.executors import LocalExecutor

    before = {p.pid for p in descendants(os.getpid())}
    executor = LocalExecutor(2)
    try:
        stream = executor.stream(sleepy, range(4), 60.0)
        assert next(stream) in range(4)
        workers = [p for p in descendants(os.getpid()) if p.pid not in before]
        started = time.time()
        with pytest.raises(KeyboardInterrupt):
            # while the loop below waits: each item's first output, then 60 s of sleep, so the interrupt comes first
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
            for _ in stream:
                pass
        stream.close()
        executor.close()
        assert time.time() - started < 10
    finally:
        executor.abort()
    assert workers and left_running(workers, timeout=5) == []


def sleepy(item: int, seconds: float) -> Iterator[int]:
    yield item
    time.sleep(seconds)
    yield item


@pytest.mark.subprocess
def test_a_worker_dying_under_curate_runs_sigterm_handler_breaks_the_pool_without_hanging_it(tmp_path):
    """The pool stops the other workers with SIGTERM when one dies: forked from `curate run`, they must not
    inherit its handler, which raises in the running task; the worker would send that back as the task's error
    and wait on the task queue whose lock the dead one holds: the driver hangs joining it. The broken pool's task
    runs again on new workers."""
    script = f"""
import os, signal, time
from pathlib import Path
import psutil
from pipelines.executors import LocalExecutor
from pipelines.run import interrupted_by_sigterm
from tests.support.waiting import wait_until

def sleep_reporting_pid(path):
    if Path(path).exists():  # run again on the new workers, after the pool broke
        return "again"
    Path(path).write_text(str(os.getpid()))
    time.sleep(60)

def reading_a_pipe(pid):
    return "pipe" in Path(f"/proc/{{pid}}/wchan").read_text()  # the kernel function it waits in

flag = Path({str(tmp_path / "busy")!r})
with interrupted_by_sigterm():
    executor = LocalExecutor(2)
    workers = {{p.pid for p in psutil.Process().children()}}
    busy = executor.submit(sleep_reporting_pid, str(flag))
    busy_pid = wait_until(lambda: flag.exists() and flag.read_text(), "the busy worker's pid", 20)
    idle = (workers - {{int(busy_pid)}}).pop()
    # the idle worker waits for the next task holding the task queue's lock: blocked reading its pipe
    wait_until(lambda: reading_a_pipe(idle), "the idle worker reading the task queue", 20)
    os.kill(idle, signal.SIGKILL)
    print(executor.start_method, executor.result(busy))  # the pool broke: the task ran again on new workers
    started = time.time()
    executor.close()
    print("closed" if time.time() - started < 10 else "slow")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["fork", "again", "closed"]
    assert "a worker process died" in done.stderr


@pytest.mark.subprocess
def test_a_local_pool_removes_the_spool_folders_of_killed_callers_and_keeps_the_living_ones(tmp_path, monkeypatch):
    import tempfile

    from pipelines.executors.local import SPOOL_PREFIX, LocalExecutor

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid is free: the caller SIGKILLed before it could remove its spool
    stale = tmp_path / f"{SPOOL_PREFIX}{gone.pid}-abc"
    stale.mkdir()
    (stale / "1-0-3").write_bytes(b"a spooled batch")
    living = tmp_path / f"{SPOOL_PREFIX}{os.getppid()}-def"  # a caller still running
    living.mkdir()
    pool = LocalExecutor(2)
    try:
        assert not stale.exists() and living.is_dir()
        assert Path(pool._spool).name.startswith(f"{SPOOL_PREFIX}{os.getpid()}-")
    finally:
        pool.close()
    assert not Path(pool._spool).exists()
