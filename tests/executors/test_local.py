"""`executor: local`: the same job folder as Ray's, in this machine's processes and without Ray."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from curation.apply import STAGE_ERROR
from curation.dedup.minhash_dedup import MinhashDedup
from curation.recipe import parse_recipe
from pipelines.dedup import corpus_stages
from pipelines.executors import LocalExecutor
from pipelines.run import run
from tests.conftest import ROOT, SAMPLE
from tests.support.stages import BrokenSetup, CrashAlways, CrashOnce, Poisoned, SetupCounter

BOILER = "Subscribe to our newsletter to get more stories like this one every single week of the year."


def note(i: int, changed: bool = False) -> str:
    body = " ".join(f"w{i}x{j}" for j in range(40))  # words of its own: no two notes are near duplicates
    return f"{body.replace(f'w{i}x20 ', 'other ') if changed else body}\n{BOILER}"


def notes(tmp_path: Path) -> str:
    """Two JSONL shards: shared paragraphs (bloom), exact copies (exact) and near copies (minhash) across them."""
    shards = {"a": [note(i) for i in range(24)],
              "b": [note(i) for i in range(12, 30)] + [note(i, changed=True) for i in range(4)]}
    for name, texts in shards.items():
        rows = [{"text": text, "url": f"https://{name}.example/{k}"} for k, text in enumerate(texts)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"{tmp_path}/*.jsonl"


def recipe_text(tmp_path: Path, extra: str = "") -> str:
    return f"""
name: same-everywhere
seed: 7
{extra}
sources:
  - {{name: web, format: warc, paths: ["{SAMPLE}/crawl-*.warc.gz"]}}
  - {{name: notes, format: jsonl, paths: ["{notes(tmp_path)}"]}}
stages:
  - extract: {{timeout_s: 5, only: [web]}}
  - length: {{min_words: 20}}
  - exact_dedup: {{}}
  - minhash_dedup: {{threshold: 0.7}}
  - bloom_dedup: {{shards: 4, capacity: 10000}}
mixture: {{weights: {{web: 0.6, notes: 0.4}}, total_tokens: 4000, max_epochs: 4}}
tokenizer: {{train: {{vocab_size: 400, hard_vocab_limit: false}}}}
pack: {{seq_len: 64, shard_rows: 8, validation: 0.1}}
"""


def job_files(job_dir: str) -> dict[str, str]:
    """sha256 of every output file but the ones that record times (stats, events, manifest)."""
    root = Path(job_dir)
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and p.parts[len(root.parts)] in ("documents", "rejects", "shards", "tokenizer.model")}


def timeless(manifest: dict) -> dict:
    return {k: v for k, v in manifest.items() if k not in ("seconds", "versions")}


def counters(stats: dict) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in stats["stages"]]


def test_local_workers_and_in_process_write_what_ray_writes(ray_session, tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_stages, "SINGLE_TASK_DOCUMENTS", 0)  # Ray's shuffles against local's one task
    recipe = parse_recipe(recipe_text(tmp_path))
    on_ray = run(recipe, output=str(tmp_path / "ray"), quiet=True)
    pooled = run(recipe, output=str(tmp_path / "two"), quiet=True, kind="local")
    one = run(recipe.model_copy(update={"local": recipe.local.model_copy(update={"workers": 1})}),
              output=str(tmp_path / "one"), quiet=True, kind="local")
    files = job_files(on_ray.job_dir)
    assert any(f.startswith("shards/") for f in files) and any("stage=length" in f for f in files)
    assert any("stage=minhash_dedup" in f for f in files) and any("stage=exact_dedup" in f for f in files)
    manifest = json.loads(Path(on_ray.job_dir, "manifest.json").read_text())
    for other in (pooled, one):
        assert job_files(other.job_dir) == files
        assert timeless(json.loads(Path(other.job_dir, "manifest.json").read_text())) == timeless(manifest)
        assert counters(other.stats) == counters(on_ray.stats)
        assert other.stats["documents"] == on_ray.stats["documents"]
    assert (on_ray.stats["executor"], pooled.stats["executor"], one.stats["executor"]) == ("ray", "local", "local")
    dropped = {row["stage"]: row["dropped"] for row in on_ray.stats["stages"]}
    assert dropped["exact_dedup"] == {"duplicate": 12} and dropped["minhash_dedup"] == {"near_duplicate": 4}
    bloom = next(row for row in on_ray.stats["stages"] if row["stage"] == "bloom_dedup")
    assert bloom["counts"]["rewritten"] > 20  # the boilerplate paragraph left every note but the first


@pytest.mark.subprocess
def test_local_run_never_imports_ray_and_prints_its_summary(tmp_path):
    (tmp_path / "recipe.yaml").write_text(recipe_text(tmp_path, "executor: local\nlocal: {workers: 2}"))
    script = (f"import runpy, sys; sys.argv = ['curate', 'run', {str(tmp_path / 'recipe.yaml')!r}, '--output', "
              f"{str(tmp_path / 'out')!r}, '--quiet']\n"
              "from pipelines.cli import main\ncode = main()\nassert 'ray' not in sys.modules, 'ray was imported'\n"
              "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "documents kept of" in done.stdout
    [job] = (tmp_path / "out").iterdir()
    assert json.loads((job / "stats.json").read_text())["executor"] == "local"
    assert (job / "manifest.json").is_file()


@pytest.mark.subprocess
def test_the_workers_preload_leaves_out_libraries_only_a_stage_not_in_the_recipe_uses():
    """PRELOAD is imported before any worker starts (by the caller or a forkserver, one core idle meanwhile):
    detect-secrets (requests with it) and ftfy are imported by the stages that use them, when they run."""
    script = ("import importlib, sys\nfrom pipelines.executors.local import PRELOAD\nfor name in PRELOAD:\n"
              "    importlib.import_module(name)\n"
              "print(sorted(m for m in ('detect_secrets', 'ftfy', 'requests', 'ray') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def jsonl_recipe(tmp_path: Path, texts: dict[str, list[str]], workers: int = 2):
    for name, rows in texts.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
    return parse_recipe(f"name: small\nexecutor: local\nlocal: {{workers: {workers}}}\n"
                        f"sources: [{{name: s, format: jsonl, paths: ['{tmp_path}/*.jsonl']}}]\n")


def test_a_worker_sets_each_stage_up_once_for_all_its_shards(tmp_path):
    recipe = jsonl_recipe(tmp_path, {f"s{k}": [f"note {i} of shard {k}" for i in range(50)] for k in range(6)})
    log = tmp_path / "setups.log"
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True, stages=[("count", SetupCounter(log=str(log)))])
    pids = [int(p) for p in log.read_text().split()]
    assert result.stats["documents"]["out"] == 300
    assert len(pids) == len(set(pids))  # no worker set the stage up twice, however many shards it ran
    worked = set(pq.read_table(Path(result.job_dir, "documents")).column("worker_pid").to_pylist())
    assert worked == set(pids) and len(worked) <= 2  # every worker that ran a shard set up once, on 2 workers


def test_a_record_a_stage_fails_on_is_a_reject_and_a_stage_that_cannot_start_fails_the_run(tmp_path):
    recipe = jsonl_recipe(tmp_path, {"a": ["fine"] * 20, "b": ["fine", "POISON here", "fine"]})
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True, stages=[("poisoned", Poisoned())])
    poisoned = next(row for row in result.stats["stages"] if row["stage"] == "poisoned")
    assert poisoned["dropped"] == {STAGE_ERROR: 1} and poisoned["docs_out"] == 22
    with pytest.raises(RuntimeError, match="model file is corrupt"):
        run(recipe, output=str(tmp_path / "broken"), quiet=True, stages=[("broken", BrokenSetup())])


def test_a_worker_that_dies_is_replaced_and_its_shard_goes_on_with_no_document_twice(tmp_path, caplog):
    # 4 shards of 300 notes, read 128 at a time: shard 2 dies in its third batch, after its first ones reached the
    # driver; the new worker skips that batch and the run ends with every document once, in one go.
    texts = {f"s{k}": [f"note {i} of shard {k}" + (" CRASH" if (k, i) == (2, 280) else "") for i in range(300)]
             for k in range(4)}
    recipe = jsonl_recipe(tmp_path, texts)
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True,
                 stages=[("crash", CrashOnce(flag=str(tmp_path / "crashed")))])
    assert (tmp_path / "crashed").is_file()  # it did die
    assert "a worker process died" in caplog.text
    ids = pq.read_table(Path(result.job_dir, "documents")).column("id").to_pylist()
    assert len(ids) == len(set(ids)) == 1200 == result.stats["documents"]["out"]
    rejects = Path(result.job_dir, "rejects")
    assert not rejects.exists() or pads.dataset(rejects, format="parquet").count_rows() == 0


def test_a_worker_that_always_dies_fails_the_run_after_three_replacements_and_loses_nothing_done(tmp_path):
    recipe = jsonl_recipe(tmp_path, {"a": ["fine"] * 50, "b": ["fine", "CRASH", "fine"]})
    with pytest.raises(BrokenProcessPool):
        run(recipe, output=str(tmp_path / "jobs"), quiet=True, stages=[("crash", CrashAlways())])
    [job] = (tmp_path / "jobs").iterdir()
    assert [p.name for p in (job / "_shards").glob("*.json")] == [next((job / "_shards").glob("s-a*.json")).name]


def test_a_worker_that_dies_between_tasks_is_replaced_before_the_next_ones(caplog):
    """Killed while idle (the kernel's OOM killer, a `kill`), it loses nothing; the next phase's tasks and
    streams still run, on new workers."""
    executor = LocalExecutor(2)

    def kill_one_and_wait_for_the_pool_to_see_it() -> None:
        victim = psutil.Process(executor.submit(os.getpid).result())
        # the pool's manager thread watches the workers: seeing one die, it marks the pool broken, then fails the
        # tasks it holds, this one among them (the workers' exits alone come before the mark: a submit in between
        # would still be taken by the broken pool)
        held = executor.submit(time.sleep, 60)
        victim.kill()
        assert isinstance(held.exception(timeout=30), BrokenProcessPool)

    try:
        kill_one_and_wait_for_the_pool_to_see_it()
        assert executor.submit(sum, [1, 2]).result() == 3
        kill_one_and_wait_for_the_pool_to_see_it()
        assert sorted(executor.stream(numbered, range(3), 4)) == [(i, k) for i in range(3) for k in range(4)]
    finally:
        executor.close()
    assert "a worker process died" in caplog.text


DIES_AS_IT_STARTS = """
import os, signal, sys
from pathlib import Path
from pipelines.executors import local
from tests.executors.test_local import numbered

first, started = Path(sys.argv[1]), local._worker_init

def die_once(*args):
    try:
        first.touch(exist_ok=False)
    except FileExistsError:
        return started(*args)
    os.kill(os.getpid(), signal.SIGKILL)

local._worker_init = die_once
executor = local.LocalExecutor(2)
try:
    print(executor.start_method, executor.submit(sum, [1, 2]).result(), sorted(executor.stream(numbered, range(3), 2)))
finally:
    executor.close()
"""


@pytest.mark.subprocess
def test_a_worker_that_dies_as_the_pool_starts_is_replaced(tmp_path):
    """The fault matrix killed a worker as `curate run` started its pool: the run failed with a traceback. In a
    fresh interpreter, where the pool forks and starts every worker at once (not in this one, once Ray runs)."""
    done = subprocess.run([sys.executable, "-c", DIES_AS_IT_STARTS, str(tmp_path / "first")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    pairs = [(i, k) for i in range(3) for k in range(2)]
    assert done.stdout.strip() == f"fork 3 {pairs}"
    assert "a worker process died" in done.stderr
    assert (tmp_path / "first").exists()


DIES_WITH_A_TASK_PENDING = DIES_AS_IT_STARTS.replace(
    "    os.kill(os.getpid(), signal.SIGKILL)",
    "    import time\n    time.sleep(1)\n    os.kill(os.getpid(), signal.SIGKILL)",
).replace("executor.submit(sum, [1, 2]).result()", "executor.result(executor.submit(slow_sum, [1, 2]))").replace(
    "from tests.executors.test_local import numbered", "from tests.executors.test_local import numbered, slow_sum")


def slow_sum(values: list[int]) -> int:
    time.sleep(2)
    return sum(values)


@pytest.mark.subprocess
def test_a_task_pending_when_a_worker_dies_is_run_again(tmp_path):
    """A worker that died after the pool's first task had answered broke the pool under a task still pending: its
    `result` raised BrokenProcessPool (the CI met it once, in the test above)."""
    done = subprocess.run([sys.executable, "-c", DIES_WITH_A_TASK_PENDING, str(tmp_path / "first")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().split(" ", 2)[1] == "3"
    assert "a worker process died" in done.stderr


def numbered(item: int, n: int) -> Iterator[tuple[int, int]]:
    yield from ((item, k) for k in range(n))


def test_stream_hands_over_every_item_once_and_a_caller_that_stops_early_leaves_no_worker_blocked():
    executor = LocalExecutor(2)
    try:
        assert sorted(executor.stream(numbered, range(5), 100)) == [(i, k) for i in range(5) for k in range(100)]
        stream = executor.stream(numbered, range(3), 500)  # far more than the queue holds: the workers wait on it
        assert next(stream)[1] == 0
        stream.close()
    finally:
        closing = threading.Thread(target=executor.close)
        closing.start()
        closing.join(60)
    assert not closing.is_alive(), "close() hangs: a worker is still blocked on the full queue"


@pytest.mark.subprocess
def test_workers_fork_from_a_caller_with_no_other_thread_and_from_a_forkserver_beside_one():
    """A fork copies no thread: one holding a lock at that moment (a status server's, Ray's) would leave it held
    in the child forever. Either way the workers hand over the same outputs."""
    script = ("import json, os, sys, threading\nfrom pipelines.executors import LocalExecutor\n"
              "from tests.executors.test_local import numbered\n"
              "def outputs(executor):\n"
              "    try:\n"
              "        return executor.start_method, sorted(executor.stream(numbered, range(4), 3)), "
              "os.getpid() in set(executor.result(executor.submit(os.getppid)) for _ in range(4))\n"
              "    finally:\n"
              "        executor.close()\n"
              "alone = outputs(LocalExecutor(2))\n"
              "stop = threading.Event(); server = threading.Thread(target=stop.wait); server.start()\n"
              "beside = outputs(LocalExecutor(2))\n"
              "stop.set(); print(json.dumps([alone, beside]))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    alone, beside = json.loads(done.stdout)
    expected = [[i, k] for i in range(4) for k in range(3)]
    assert alone == ["fork", expected, True]  # forked from the caller: its pid is their parent's
    assert beside == ["forkserver", expected, False]


def test_in_process_tasks_run_one_at_a_time_when_waited_on():
    executor = LocalExecutor(1)
    ran: list[int] = []
    tasks = [executor.submit(ran.append, k) for k in range(3)]
    assert ran == []  # submitting runs nothing: results are folded as they come, progress shows between tasks
    done, rest = executor.wait(tasks, timeout=5)
    assert ran == [0] and done == tasks[:1] and rest == tasks[1:]
    assert [executor.result(t) for t in tasks] == [None] * 3 and ran == [0, 1, 2]
    with pytest.raises(ValueError, match="invalid literal"):
        executor.result(executor.submit(int, "not a number"))


def test_minhash_signs_each_shard_once_as_it_is_written_and_removes_what_it_would_after_all(tmp_path, monkeypatch):
    for k in range(3):  # notes 5k..5k+11: each shard shares notes with the next (copies: near duplicates too)
        rows = [{"text": note(i), "url": f"https://s{k}.example/{i}"} for i in range(5 * k, 5 * k + 12)]
        (tmp_path / f"s{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = parse_recipe(f"name: early\nexecutor: local\nlocal: {{workers: 2}}\n"
                          f"sources: [{{name: s, format: jsonl, paths: ['{tmp_path}/s*.jsonl']}}]\n"
                          "stages:\n  - minhash_dedup: {threshold: 0.7}\n")
    pooled = run(recipe, output=str(tmp_path / "two"), quiet=True)
    signed: list[str] = []
    sign = corpus_stages._signatures
    monkeypatch.setattr(corpus_stages, "_signatures", lambda file, *args: signed.append(file) or sign(file, *args))
    early: list[corpus_stages.EarlySignatures] = []
    monkeypatch.setattr("pipelines.run.EarlySignatures", lambda *args: early.append(
        corpus_stages.EarlySignatures(*args)) or early[-1])
    one = run(recipe.model_copy(update={"local": recipe.local.model_copy(update={"workers": 1})}),
              output=str(tmp_path / "one"), quiet=True)
    assert sorted(early[0].tasks) == sorted(signed) and len(signed) == 3  # asked for early, each shard once
    assert job_files(one.job_dir) == job_files(pooled.job_dir)
    dropped = {row["stage"]: row["dropped"] for row in pooled.stats["stages"]}
    assert dropped["minhash_dedup"] == {"near_duplicate": 14}


def test_an_early_signing_task_lost_with_its_pool_is_run_again(tmp_path):
    files = []
    for k in range(2):
        files.append(str(tmp_path / f"d{k}.parquet"))
        pq.write_table(pa.table({"id": [f"{k}-{i}" for i in range(5)], "text": [note(5 * k + i) for i in range(5)],
                                 "source": ["s"] * 5}), files[-1])
    stage = MinhashDedup()
    lost: Future = Future()
    lost.set_exception(BrokenProcessPool("a worker died"))
    signed = corpus_stages._signed(files, stage, corpus_stages.nothing_removed(), LocalExecutor(1), {files[0]: lost})
    assert (signed == stage.hasher().signatures([note(i) for i in range(10)])).all()
