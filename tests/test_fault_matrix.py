"""The fault matrix: for each executor, `curate run` loses its driver, a worker or (Ray) a node while
it reads, while its corpus stages run, or while it packs; run again, its documents, rejects and packed shards are
those of an undisturbed run, and no process of the disturbed run is left behind.

The disturbed run is a real `curate run` process, killed with SIGKILL when its job's events say it is in the
phase. A killed driver runs its own embedded Ray (the kill must take that Ray down too); a killed Ray worker is a
worker of the session's Ray the run joined (Ray runs its task again); a node is removed from a two-node cluster
hosted by another process, whose head has no CPU, so the node holds the phase's work when it goes; a fresh node
joins then, as an autoscaler would bring one up (`tests/faults.py`). The rerun and the undisturbed runs run in
this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import psutil
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from curation.recipe import Recipe, load_recipe
from curation.shards import list_shards
from pipelines.run import run
from tests.conftest import warc_response
from tests.faults import ClusterHost, Run, busy_ray_worker, describe, events, local_worker, orphaned_ray_agent
from tests.support.pages import slow_page

pytestmark = pytest.mark.subprocess  # each case runs `curate run`

WEB_SHARDS, PAGES = 6, 2
AGENTS_END_WITHIN = 90  # s: Ray's agents try to reach the dead GCS for 60 s before they end

# Each point: the event that opens it, and the events that say it is over (a kill then would miss it).
POINTS = {
    "reading": ("job_started", ("corpus_stages_started",)),
    "corpus": ("corpus_stages_started", ("packing_started",)),
    "packing": ("packing_started", ("packing_done", "job_done")),
}
CASES = ([("ray", point, "node") for point in POINTS] + [("ray", point, "driver") for point in POINTS]
         + [("ray", point, "worker") for point in POINTS]
         + [("local", point, victim) for point in POINTS for victim in ("driver", "worker")])


def note(i: int, changed: bool = False) -> str:
    body = " ".join(f"w{i}x{j}" for j in range(60))  # words of its own: no two notes are near duplicates
    return body.replace(f"w{i}x30 ", "other ") if changed else body


def make_corpus(folder: Path) -> Path:
    """Web pages slow enough to extract that a kill lands while shards are read (one exact copy across
    shards), notes with exact and near copies across shards (both deduplications remove some) and short ones
    (`length` rejects them), mixed, tokenized and packed."""
    folder.mkdir()
    for s in range(WEB_SHARDS):
        pages = [warc_response(f"https://faults.example/{s}/{p}", slow_page(s * 10 + p, rows=200))
                 for p in range(PAGES)]
        if s == 1:
            pages.append(warc_response("https://faults.example/copy", slow_page(0, rows=200)))
        (folder / f"web-{s}.warc.gz").write_bytes(b"".join(pages))
    shards = {"a": [note(i) for i in range(40)] + ["too short"] * 3,
              "b": [note(i) for i in range(30, 60)] + [note(i, changed=True) for i in range(5)] + ["short too"]}
    for name, texts in shards.items():
        rows = [{"text": text, "url": f"https://{name}.example/{k}"} for k, text in enumerate(texts)]
        (folder / f"notes-{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = folder / "recipe.yaml"
    recipe.write_text(f"""
name: faults
seed: 11
ray: {{num_cpus: 2}}
local: {{workers: 2}}
sources:
  - {{name: web, format: warc, paths: ["{folder}/web-*.warc.gz"]}}
  - {{name: notes, format: jsonl, paths: ["{folder}/notes-*.jsonl"]}}
stages:
  - extract: {{timeout_s: 60, only: [web]}}
  - length: {{min_words: 20}}
  - exact_dedup: {{}}
  - minhash_dedup: {{threshold: 0.7}}
rejects: {{sample: 1.0, max_per_reason: 1000}}
mixture: {{weights: {{web: 0.6, notes: 0.4}}, total_tokens: 20000, max_epochs: 4}}
tokenizer: {{train: {{vocab_size: 600, hard_vocab_limit: false}}}}
pack: {{seq_len: 64, shard_rows: 16, validation: 0.1}}
""")
    return recipe


def outcome(job: Path) -> dict:
    """What a run must give whatever happened to it: its documents (every column, per file, sorted by id),
    rejects (per stage and reason), packed shards (bytes), tokenizer, manifest and counters less their timings."""
    documents = {f.name: pq.read_table(f).sort_by("id").to_pylist() for f in sorted((job / "documents").glob("*"))}
    rejects = pads.dataset(job / "rejects", partitioning="hive").to_table(columns=["stage", "reason", "id", "detail"])
    manifest = json.loads((job / "manifest.json").read_text())
    stats = json.loads((job / "stats.json").read_text())
    return {
        "documents": documents,
        "rejects": sorted(tuple(row.values()) for row in rejects.to_pylist()),
        "shards": {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted((job / "shards").glob("*"))},
        "tokenizer": hashlib.sha256((job / "tokenizer.model").read_bytes()).hexdigest(),
        "manifest": {k: v for k, v in manifest.items() if k not in ("seconds", "versions")},
        "documents_counted": stats["documents"],
        "stages": [{k: v for k, v in row.items() if k != "seconds"} for row in stats["stages"]],
        "temporary_files": sorted(str(p.relative_to(job)) for p in job.rglob("*.tmp")),
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Recipe]:
    recipe_path = make_corpus(tmp_path_factory.mktemp("faults") / "in")
    return recipe_path, load_recipe(recipe_path)


@pytest.fixture(scope="module")
def undisturbed(corpus, tmp_path_factory) -> dict:
    """The outcome of an undisturbed run on each executor (Ray's asked for by the Ray cases only)."""
    _, recipe = corpus
    done: dict[str, dict] = {}

    def get(executor: str) -> dict:
        if executor not in done:
            out = tmp_path_factory.mktemp(f"undisturbed-{executor}")
            done[executor] = outcome(Path(run(recipe, output=str(out), quiet=True, kind=executor).job_dir))
        return done[executor]

    return get


@pytest.fixture(scope="session")
def slow_exits():
    """Processes allowed to end after their case, each with the time it must have ended by: Ray's agents, ~60 s
    after their whole Ray was killed. Checked at the end of the test session, the other tests run meanwhile
    (by then they have long ended, unless they leak)."""
    waiting: list[tuple[psutil.Process, float]] = []
    yield waiting
    left = []
    for process, deadline in waiting:
        try:
            process.wait(timeout=max(0.0, deadline - time.time()))
        except psutil.TimeoutExpired:
            left.append(describe(process))
            process.kill()
        except psutil.Error:
            continue
    assert not left, f"Ray agents of a killed run still alive {AGENTS_END_WITHIN} s after the kill: {left}"


@pytest.mark.parametrize(("executor", "point", "victim"), CASES, ids=["-".join(c) for c in CASES])
def test_a_fault_then_a_rerun_gives_what_an_undisturbed_run_gives(executor, point, victim, corpus, undisturbed,
                                                                   slow_exits, request, tmp_path):
    recipe_path, recipe = corpus
    if executor == "ray":
        request.getfixturevalue("ray_session")  # the rerun and the undisturbed run join the session's Ray
    expected = undisturbed(executor)
    output = tmp_path / "disturbed"
    job = Path(recipe.job_dir(str(output)))
    host = ClusterHost() if victim == "node" else None
    disturbed = Run(recipe_path, output, job, "--executor", executor, *address(executor, victim, host))
    agents: list[psutil.Process] = []
    try:
        disturb(disturbed, executor, point, victim, host, shards=len(list_shards(recipe)))
        agents = left_behind(disturbed.survivors(), slow_exits, "the disturbed run")
        if host is not None:
            agents += left_behind(host.survivors(host.removed), slow_exits, "the removed node")
            host.shut_down()
            agents += left_behind(host.survivors(), slow_exits, "the cluster")
    finally:
        disturbed.clean_up(spare=agents)
        if host is not None:
            host.shut_down()

    recorded = len(list((job / "_shards").glob("*.json")))
    rerun = run(recipe, output=str(output), quiet=True, kind=executor)
    assert (rerun.shards_skipped, len(rerun.finished)) == (recorded, len(list_shards(recipe)) - recorded)
    assert events(job).count("job_started") == 2
    got = outcome(job)
    assert got["temporary_files"] == []
    for part, value in expected.items():
        assert got[part] == value, f"{part} differ from an undisturbed run's"
    assert events(job)[-1] == "job_done"


def left_behind(alive: list[psutil.Process], slow_exits: list, whose: str) -> list[psutil.Process]:
    """Assert that nothing but Ray's orphaned agents outlived the fault; those are watched until they end
    (`slow_exits`), and returned."""
    agents = [p for p in alive if orphaned_ray_agent(p)]
    others = [describe(p) for p in alive if p not in agents]
    assert not others, f"processes of {whose} left behind: {others}"
    slow_exits.extend((p, time.time() + AGENTS_END_WITHIN) for p in agents)
    return agents


def address(executor: str, victim: str, host: ClusterHost | None) -> list[str]:
    """Where the run's Ray is: its own embedded one where its driver is killed (the kill takes that Ray down
    too), the session's to lose a worker (no second Ray to start), the cluster host's to lose a node."""
    if host is not None:
        return ["--address", host.address]
    if executor == "ray" and victim == "worker":
        import ray

        return ["--address", ray.get_runtime_context().gcs_address]
    return []


def disturb(disturbed: Run, executor: str, point: str, victim: str, host: ClusterHost | None, shards: int) -> None:
    """Kill `victim` as soon as the run is at `point`; then wait for the run to end where it goes on."""
    opened, closers = POINTS[point]
    closed = lambda seen: any(c in seen for c in closers)  # noqa: E731
    # A driver killed while reading leaves some shards recorded and some not. A worker or a node is lost from the
    # start: shard_done events are the driver's, and a loaded driver writes them after the tasks have ended.
    if victim == "driver" and point == "reading":
        opened = "shard_done"
    disturbed.wait_for(lambda seen: opened in seen and not closed(seen), f"the {point} phase")
    if victim == "driver":
        disturbed.kill()
        seen = events(disturbed.job)
        assert not closed(seen), f"the kill should land in the {point} phase: {seen}"
        done = len(list((disturbed.job / "_shards").glob("*.json")))
        assert point != "reading" or 0 < done < shards, "the kill should land while shards are read"
        return
    if victim == "worker" and executor == "local":
        disturbed.find(local_worker(disturbed.proc.pid), "a local worker", until=closed).kill()
    elif victim == "worker":  # a worker of the session's Ray, which the run joined
        disturbed.find(busy_ray_worker, "a Ray worker running a task", until=closed, among=os.getpid()).kill()
    else:
        busy = host.remove_worker_node()
        assert busy, "the node should be removed while it runs a task"
        assert not closed(events(disturbed.job)), f"the node should be removed in the {point} phase: {busy}"
    # Ray runs the lost tasks again, and a local worker lost while reading is replaced: the run itself ends
    # well. A local worker lost later fails the run (a rerun resumes it), unless no task was left to lose.
    ends = [(0, "job_done")] if executor == "ray" or point == "reading" else [(0, "job_done"), (1, "job_failed")]
    assert (disturbed.end(), events(disturbed.job)[-1]) in ends, disturbed.output_tail()
