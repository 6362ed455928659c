"""The status service against a real Ray job: live numbers, final numbers, errors and refused paths.

One job (`watched_job`, shared with the dashboard, explore and notebook tests) runs through
`curate run --serve` on the session's Ray while a thread polls that in-process service and a
separate `curate serve` process started before the job; both are real uvicorn servers on loopback.
"""

from __future__ import annotations

import atexit
import gzip
import http.client
import json
import math
import os
import random
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from prometheus_client.parser import text_string_to_metric_families

from curation.recipe import load_recipe
from pipelines.cli import main
from pipelines.net import free_port
from pipelines.service import server
from tests.conftest import ROOT, warc_response
from tests.support.waiting import wait_until


def slow_page(i: int) -> bytes:
    """A page that takes trafilatura about half a second: the run lasts long enough to watch."""
    cells = "".join(f"<div><p>Row {j} of page {i}, some words.</p><table><tr><td>{j}</td></tr></table></div>"
                    for j in range(3000))
    return f"<html><body><article><h1>Page {i}</h1>{cells}</article></body></html>".encode()


def article(i: int, words: int = 90) -> bytes:
    body = " ".join(f"word{(i * 7 + k) % 50} text" for k in range(words // 2))
    return (f"<html><head><title>Article {i}</title></head><body><article><h1>Article {i}</h1><p>{body}.</p>"
            f"<p>Second paragraph of article {i} with more words to read.</p></article></body></html>").encode()


def build_inputs(folder: Path, shards: int = 6) -> Path:
    """Web shards with slow pages (the run lasts seconds), short pages (length drops) and one page copied into
    every shard (exact_dedup removals); a JSONL source with copies and a tiny note."""
    folder.mkdir(parents=True)
    for s in range(shards):
        records = [warc_response(f"https://slow.example/{s}/{p}", slow_page(s * 100 + p)) for p in range(2)]
        records.append(warc_response(f"https://news.example/{s}", article(s)))
        records.append(warc_response(f"https://copy.example/{s}", article(999)))
        records.append(warc_response(f"https://short.example/{s}", b"<html><body><p>Too short.</p></body></html>"))
        (folder / f"crawl-{s}.warc.gz").write_bytes(b"".join(records))
    notes = [{"text": f"Note {i}: " + " ".join(f"alpha{j} beta{i}" for j in range(15)),
              "url": f"https://notes.example/{i}"} for i in range(8)]
    notes += [dict(notes[0], url="https://notes.example/copy0"), dict(notes[1], url="https://notes.example/copy1")]
    notes.append({"text": "tiny note", "url": "https://notes.example/tiny"})
    (folder / "notes.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(n) + "\n" for n in notes).encode()))
    recipe = folder / "recipe.yaml"
    recipe.write_text(f"""
name: watched
ray: {{num_cpus: 2}}
sources:
  - {{name: web, format: warc, paths: ["{folder}/crawl-*.warc.gz"]}}
  - {{name: notes, format: jsonl, paths: ["{folder}/notes.jsonl.gz"], text_field: text, url_field: url}}
stages:
  - extract: {{timeout_s: 30, only: [web]}}
  - length: {{min_words: 20}}
  - exact_dedup: {{}}
""")
    return recipe


def write_training_metrics(job_dir: Path, steps: int = 300, spike_at: int = 180) -> list[str]:
    """What `curate train` writes (`train/metrics.jsonl` and `spikes.jsonl`, see `curation.progress`), made up
    here without training: one spike, traced to real documents of the job; returns those documents' ids."""
    docs = pq.read_table(job_dir / "documents", columns=["id"]).column("id").to_pylist()[:3]
    rng = random.Random(0)
    smoothed = None
    lines = []
    for step in range(1, steps + 1):
        loss = 2.0 + 6.0 * math.exp(-step / 60) + rng.random() * 0.1 + (2.5 if step == spike_at else 0.0)
        smoothed = loss if smoothed is None else 0.95 * smoothed + 0.05 * loss
        row = {"step": step, "loss": round(loss, 4), "loss_smoothed": round(smoothed, 4), "lr": 3e-4,
               "grad_norm": 1.0, "tokens_per_s": 5000.0, "time": 1.8e9 + step, "spike": None}
        if step % 100 == 0:
            row["val_loss"] = round(smoothed + 0.05, 4)
        if step == spike_at:
            row.update(spike="loss spike: 4.6 is 9.1 std above the mean 2.3", documents=docs[:2])  # capped
            spike = {"step": step, "loss": row["loss"], "reason": row["spike"], "action": "logged", "split": "train",
                     "rows": [[0, 7]], "documents": docs}
        lines.append(json.dumps(row))
    (job_dir / "train").mkdir(exist_ok=True)
    (job_dir / "train" / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (job_dir / "train" / "spikes.jsonl").write_text(json.dumps(spike) + "\n")
    return docs


@dataclass
class Watched:
    recipe: Path
    jobs: Path
    job_dir: Path
    url: str  # the `curate serve` process, still serving after the run
    inline: list[dict] = field(default_factory=list)  # polls of `run --serve` during the run
    outside: list[dict] = field(default_factory=list)  # polls of the `curate serve` process during the run
    spike_documents: list[str] = field(default_factory=list)
    run_seconds: float = 0.0


_WATCHED: list[Watched] = []


def _poll(url: str, job: str, into: list[dict], stop: threading.Event) -> None:
    with httpx.Client(timeout=5) as client:
        while not stop.is_set():
            try:
                status = client.get(f"{url}/api/jobs/{job}")
                funnel = client.get(f"{url}/api/jobs/{job}/funnel")
                if status.status_code == 200 and funnel.status_code == 200:
                    into.append({"t": time.time(), "status": status.json(), "funnel": funnel.json()})
            except httpx.TransportError:
                pass  # not listening yet
            stop.wait(0.15)


def start_server(jobs: Path) -> tuple[str, subprocess.Popen]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "serve", "--jobs", str(jobs), "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    atexit.register(proc.kill)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False
    wait_until(healthy, "curate serve answering", timeout=30, every=0.1)
    return url, proc


def watched_job(tmp_path_factory: pytest.TempPathFactory) -> Watched:
    """The shared job, run once per session (needs the session's Ray started)."""
    if _WATCHED:
        return _WATCHED[0]
    base = tmp_path_factory.mktemp("watched")
    recipe = build_inputs(base / "in")
    jobs = base / "jobs"
    jobs.mkdir()
    job_dir = Path(load_recipe(recipe).job_dir(str(jobs)))
    url, _ = start_server(jobs)
    inline_port = free_port()
    watched = Watched(recipe, jobs, job_dir, url)
    stop = threading.Event()
    pollers = [threading.Thread(target=_poll, args=(f"http://127.0.0.1:{inline_port}", job_dir.name, watched.inline,
                                                    stop), daemon=True),
               threading.Thread(target=_poll, args=(url, job_dir.name, watched.outside, stop), daemon=True)]
    for p in pollers:
        p.start()
    started = time.time()
    linger, server.LINGER_S = server.LINGER_S, 1.0  # from a script, the run serves its ended job a while
    try:
        assert main(["run", str(recipe), "--output", str(jobs), "--quiet", "--serve", f"127.0.0.1:{inline_port}"]) == 0
    finally:
        server.LINGER_S = linger
        watched.run_seconds = time.time() - started
        stop.set()
        for p in pollers:
            p.join(timeout=10)
    watched.spike_documents = write_training_metrics(job_dir)
    # a watcher of the run's own service sees the job end before the service does (it stopped at once: a script's
    # `curate status --watch` ended in "no status service")
    assert watched.inline and watched.inline[-1]["status"]["state"] == "done"

    def polled_answers_are_final() -> bool:
        """The answers the pollers had cached (for up to the service's ttl) now show the end and the training."""
        status = get(watched, f"/api/jobs/{job_dir.name}")
        return (status["state"] == "done" and status["has"]["train"]
                and get(watched, f"/api/jobs/{job_dir.name}/funnel")["final"])
    wait_until(polled_answers_are_final, "the service showing the finished job and its training metrics", 10)
    _WATCHED.append(watched)
    return watched


@pytest.fixture(scope="session")
def job(ray_session, tmp_path_factory) -> Watched:
    return watched_job(tmp_path_factory)


def get(job: Watched, path: str, status: int = 200) -> dict:
    response = httpx.get(job.url + path, timeout=10)
    assert response.status_code == status, (path, response.status_code, response.text[:500])
    return response.json()


def raw_status(url: str, path: str) -> int:
    """Status of a request sent with its path exactly as given (no client-side normalisation of `..`)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.putrequest("GET", path, skip_accept_encoding=True)
    conn.endheaders()
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert b"root:" not in body and b"BEGIN" not in body
    return response.status


def stage_of(rows: list[dict], name: str) -> dict:
    return next(r for r in rows if r["stage"] == name)


# -- with the Ray job -------------------------------------------------------------------------------


def test_numbers_move_during_the_run_and_match_stats_at_the_end(job):
    stats = json.loads((job.job_dir / "stats.json").read_text())
    for polls in (job.inline, job.outside):
        running = [p for p in polls if p["status"]["state"] == "running"]
        assert len(running) >= 3, "the pollers should catch the job running"
        seen = [(p["status"]["phase"], p["status"]["records"], p["status"]["shards"]["done"], p["status"]["percent"])
                for p in running]
        assert [s[1] for s in seen] == sorted(s[1] for s in seen), "counters never go back"
        assert [s[3] for s in seen] == sorted(s[3] for s in seen), seen
        assert len(set(seen)) >= 3, f"the numbers should move during the run: {seen}"
        assert any(0 < s[3] < 100 for s in seen) and any(0 < s[2] < 7 or s[0] != "documents" for s in seen), seen
        lengths = [stage_of(p["funnel"]["stages"], "length")["docs_in"] for p in running
                   if any(r["stage"] == "length" for r in p["funnel"]["stages"])]
        assert lengths and min(lengths) < stage_of(stats["stages"], "length")["docs_in"], "the funnel moves live"
        # A poll reads the status, then the funnel: the job may end in between, so only polls that
        # finished before the job_done event must show a live (not final) funnel.
        done_at = next(json.loads(x)["time"] for x in (job.job_dir / "events.jsonl").read_text().splitlines()
                       if json.loads(x)["event"] == "job_done")
        assert not any(p["funnel"]["final"] for p in running if p["t"] < done_at)
    phases = {p["status"]["phase"] for p in job.inline + job.outside}
    assert "documents" in phases

    status = get(job, f"/api/jobs/{job.job_dir.name}")
    assert status["state"] == "done" and status["percent"] == 100.0
    assert status["records"] == stats["documents"]["records_read"] and status["documents"] == stats["documents"]["out"]
    assert status["shards"] == {"total": 7, "done": 7, "already_done": 0}
    assert status["stages"] == {"document": ["extract", "length"], "corpus": ["exact_dedup"]}
    funnel = get(job, f"/api/jobs/{job.job_dir.name}/funnel")
    assert funnel["final"]
    keys = ("stage", "docs_in", "docs_out", "dropped", "skipped", "bytes_in", "bytes_out")
    assert [{k: r[k] for k in keys} for r in funnel["stages"]] == [{k: r[k] for k in keys} for r in stats["stages"]]
    assert stage_of(funnel["stages"], "exact_dedup")["kind"] == "corpus"
    assert stage_of(funnel["stages"], "length")["dropped"] == {"too_few_words": 7}
    assert stage_of(funnel["stages"], "exact_dedup")["dropped"] == {"duplicate": 7}
    one = get(job, f"/api/jobs/{job.job_dir.name}/stages/length")
    assert one["docs_out"] == stage_of(stats["stages"], "length")["docs_out"]
    assert get(job, "/api/jobs")["jobs"][0]["id"] == job.job_dir.name
    assert get(job, f"/api/jobs/{job.job_dir.name}/stats") == stats
    points = get(job, f"/api/jobs/{job.job_dir.name}/throughput")["points"]
    assert len(points) >= 3 and points[-1]["records"] == stats["documents"]["records_read"]
    assert any(p["records_per_s"] for p in points)


def test_rejects_and_dedup_clusters_paged(job):
    name = job.job_dir.name
    index = get(job, f"/api/jobs/{name}/rejects")["stages"]
    assert index["length"]["too_few_words"] == {"dropped": 7, "sampled": 7}
    assert index["exact_dedup"]["duplicate"] == {"dropped": 7, "sampled": 7}
    first = get(job, f"/api/jobs/{name}/rejects/length/too_few_words?limit=4&chars=5")
    rest = get(job, f"/api/jobs/{name}/rejects/length/too_few_words?offset=4&limit=10")
    assert first["total"] == 7 and len(first["rows"]) == 4 and len(rest["rows"]) == 3
    ids = [r["id"] for r in first["rows"] + rest["rows"]]
    assert len(set(ids)) == 7
    assert {r["url"] for r in first["rows"] + rest["rows"]} >= {"https://notes.example/tiny", "https://short.example/0"}
    assert all(len(r["text"] or "") <= 5 for r in first["rows"])
    assert get(job, f"/api/jobs/{name}/dedup")["stages"] == ["exact_dedup"]
    dedup = get(job, f"/api/jobs/{name}/dedup/exact_dedup?limit=2")
    assert dedup["clusters_total"] == 3 and dedup["removed_total"] == 7
    biggest = dedup["clusters"][0]
    assert len(biggest["removed"]) == 5 and biggest["survivor"]["url"].startswith("https://copy.example/")
    assert all(r["text"] == biggest["survivor"]["text"] and r["detail"] == f"kept {biggest['survivor']['id']}"
               for r in biggest["removed"])


def test_training_metrics_manifest_and_prometheus(job):
    name = job.job_dir.name
    curve = get(job, f"/api/jobs/{name}/train")
    assert curve["count"] == 300 and len(curve["points"]) == 300 and curve["last"]["step"] == 300
    assert [s["step"] for s in curve["spikes"]] == [180] and curve["spikes"][0]["documents"] == job.spike_documents
    assert curve["spikes"][0]["reason"].startswith("loss spike")
    thin = get(job, f"/api/jobs/{name}/train?max_points=50&since_step=100")
    assert thin["count"] == 200 and len(thin["points"]) <= 60 and 180 in [p["step"] for p in thin["points"]]
    get(job, f"/api/jobs/{name}/manifest", 404)  # not tokenized
    text = httpx.get(job.url + "/metrics", timeout=10).text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    stats = json.loads((job.job_dir / "stats.json").read_text())
    assert samples[("curation_job_state", (("job", name), ("state", "done")))] == 1.0
    families = {family.name: family.type for family in text_string_to_metric_families(text)}
    assert "counter" not in families.values()  # a resumed job's counts may go down: gauges
    assert samples[("curation_job_records_read", (("job", name),))] == stats["documents"]["records_read"]
    assert samples[("curation_stage_dropped", (("job", name), ("reason", "too_few_words"),
                                                     ("stage", "length")))] == 7
    assert samples[("curation_stage_docs_in", (("job", name), ("stage", "exact_dedup")))] == \
        stage_of(stats["stages"], "exact_dedup")["docs_in"]
    assert samples[("curation_train_step", (("job", name),))] == 300
    # skips and documents that went by a stage unjudged are exposed too (docs_in = docs_out + dropped + skipped)
    extract = stage_of(stats["stages"], "extract")
    assert extract["bypassed"] == {"only": 11}
    assert samples[("curation_stage_bypassed", (("job", name), ("reason", "only"), ("stage", "extract")))] == 11


def test_unknown_job_or_stage_is_404_and_bad_parameters_422(job):
    name = job.job_dir.name
    for path in ("/api/jobs/nope-0123456789", "/api/jobs/nope/funnel", f"/api/jobs/{name}/stages/nope",
                 f"/api/jobs/{name}/rejects/nope/too_few_words", f"/api/jobs/{name}/rejects/length/nope",
                 f"/api/jobs/{name}/dedup/minhash_dedup", f"/api/jobs/{name}/dedup/length", "/api/nothing"):
        assert "detail" in get(job, path, 404)
    for path in (f"/api/jobs/{name}/rejects/length/too_few_words?limit=0",
                 f"/api/jobs/{name}/rejects/length/too_few_words?limit=501",
                 f"/api/jobs/{name}/rejects/length/too_few_words?offset=-1",
                 f"/api/jobs/{name}/rejects/length/too_few_words?offset=abc",
                 f"/api/jobs/{name}/dedup/exact_dedup?chars=-5", f"/api/jobs/{name}/train?max_points=1",
                 f"/api/jobs/{name}/train?since_step=x", "/api/jobs/-bad", "/api/jobs/" + "x" * 300):
        assert get(job, path, 422)["detail"]


def test_path_traversal_is_refused(job, tmp_path):
    name = job.job_dir.name
    outside = tmp_path / "outside-job"
    outside.mkdir()
    (outside / "events.jsonl").write_text('{"event": "job_started", "time": 1}\n')
    (outside / "stats.json").write_text('{"secret": true}')
    (job.jobs / "linked-job").symlink_to(outside)
    try:
        attempts = ["/api/jobs/..", "/api/jobs/../funnel", "/api/jobs/%2e%2e/stats", "/api/jobs/..%2F..%2Fetc/stats",
                    "/api/jobs/%2e%2e%2f%2e%2e%2fetc%2fpasswd", f"/api/jobs/{name}/rejects/..%2F..%2F/passwd",
                    f"/api/jobs/{name}/rejects/../../stats", f"/api/jobs/{name}/dedup/..%2f..%2fstats",
                    "/static/../../../../etc/passwd", "/static/..%2f..%2f..%2fetc%2fpasswd",
                    "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/api/jobs/linked-job/stats", "/api/jobs/linked-job",
                    f"/api/jobs/{name}/../linked-job/stats"]
        for path in attempts:
            assert raw_status(job.url, path) in (404, 422), path
        assert "linked-job" not in [j["id"] for j in get(job, "/api/jobs")["jobs"]]
    finally:
        (job.jobs / "linked-job").unlink()


def test_healthz_openapi_and_curate_status(job, capsys):
    assert get(job, "/healthz")["status"] == "ok"
    paths = get(job, "/openapi.json")["paths"]
    assert {"/api/jobs", "/api/jobs/{job}", "/api/jobs/{job}/funnel", "/api/jobs/{job}/rejects/{stage}/{reason}",
            "/api/jobs/{job}/dedup/{stage}", "/api/jobs/{job}/train", "/api/jobs/{job}/manifest", "/metrics",
            "/healthz"} <= set(paths)
    env = {**os.environ, "COLUMNS": "160"}
    listing = subprocess.run([sys.executable, "-m", "pipelines.cli", "status", "--url", job.url], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, env=env)
    assert listing.returncode == 0, listing.stderr
    assert job.job_dir.name in listing.stdout and "done" in listing.stdout
    assert main(["status", "watch", "--url", job.url]) == 0  # a unique prefix names the job
    shown = capsys.readouterr().out
    assert "too_few_words 7" in shown and "duplicate 7" in shown and "exact_dedup" in shown
    assert "went by (unjudged)" in shown and "only 11" in shown  # the columns of `curate run`'s own funnel
    assert main(["status", "nope", "--url", job.url]) == 2
    assert "no job 'nope'" in capsys.readouterr().out


# -- without Ray ------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_a_run_whose_driver_died_is_interrupted_and_a_finished_folder_needs_no_snapshot(tmp_path):
    from curation.progress import JobFolder

    job = tmp_path / "killed-0123456789"
    job.mkdir()
    (job / "events.jsonl").write_text(json.dumps({"time": 1.0, "event": "job_started", "shards": 4,
                                                  "already_done": 0}) + "\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (job / "_progress.json").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "started": 1.0,
                                                    "updated": 2.0, "shards_done": 1, "records": 10, "documents": 8,
                                                    "stages": [], "series": {"points": []}}))
    status = JobFolder(job).status()
    assert status["state"] == "interrupted" and status["shards"]["done"] == 1 and status["percent"] == 25.0
    (job / "events.jsonl").write_text(json.dumps({"time": 1.0, "event": "job_started", "shards": 4}) + "\n"
                                      + json.dumps({"time": 5.0, "event": "job_failed", "error": "OSError: disk"})
                                      + "\n" + '{"truncated li')
    status = JobFolder(job).status()
    assert status["state"] == "failed" and status["error"] == "OSError: disk"


def test_run_serve_refuses_an_object_store_output_and_a_bad_address(tmp_path):
    from pipelines.service.server import for_run

    with pytest.raises(ValueError, match="local output folder"):
        for_run("s3://bucket/jobs", "127.0.0.1:8000")
    with pytest.raises(ValueError, match=r"\[HOST:\]PORT"):
        for_run(str(tmp_path), "localhost:http")


def test_curate_serve_on_a_port_in_use_says_so_in_one_line(tmp_path, capsys):
    """uvicorn logged "Application startup complete", then the bind's error, and exited 3."""
    import socket

    from pipelines.cli import main

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["serve", "--jobs", str(tmp_path), "--port", str(port)]) == 2
    assert capsys.readouterr().err.strip() == (f"curate serve: cannot listen on 127.0.0.1:{port}: Address already in "
                                               "use (--port, --host)")


def test_status_watch_started_before_its_job_waits_for_it(tmp_path):
    """`curate status JOB --watch 1` started beside the run it watches exited at once with "no job"."""
    from io import StringIO

    from rich.console import Console

    from pipelines.service.client import status
    from pipelines.service.server import Background

    service = Background(tmp_path, port=free_port()).start()
    out = StringIO()
    try:
        threading.Timer(0.5, lambda: write_job(tmp_path, "late-0123456789", done=True)).start()
        assert status(service.url, "late", watch=0.1, console=Console(file=out, width=200)) == 0
    finally:
        service.stop()
    said = out.getvalue()
    assert said.startswith("no job 'late' yet: waiting for it") and "records read 10" in said


def test_a_packing_job_shows_its_phase_and_manifest(tmp_path):
    from fastapi.testclient import TestClient

    from pipelines.service import create_app

    job = tmp_path / "packed-0123456789"
    job.mkdir()
    events = [{"time": 1.0, "event": "job_started", "shards": 2, "already_done": 0},
              {"time": 2.0, "event": "shard_done", "shard": "a"}, {"time": 3.0, "event": "shard_done", "shard": "b"},
              {"time": 4.0, "event": "packing_started"}]
    (job / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    manifest = {"seq_len": 2048, "splits": {"train": {"tokens": 123}}}
    (job / "manifest.json").write_text(json.dumps(manifest))
    with TestClient(create_app(tmp_path)) as client:
        status = client.get(f"/api/jobs/{job.name}").json()
        assert status["phase"] == "packing" and status["state"] == "running" and status["has"]["manifest"]
        assert client.get(f"/api/jobs/{job.name}/manifest").json() == manifest
        assert client.get(f"/api/jobs/{job.name}/stats").status_code == 404
        assert client.get(f"/api/jobs/{job.name}/funnel").json()["final"] is False


# -- the polled answers' fast path and cache (no Ray: job folders written here) ---------------------


def write_job(root: Path, name: str = "cached-0123456789", *, records: int = 10, done: bool = False) -> Path:
    """A job folder as `curate run` leaves it: recipe, events, progress snapshot (its driver is this
    process, so the job counts as running), and, once `done`, stats.json and a job_done event."""
    job = root / name
    (job / "_shards").mkdir(parents=True, exist_ok=True)
    (job / "recipe.yaml").write_text("name: cached\nsources: [{name: web, format: jsonl, paths: [x.jsonl]}]\n"
                                     "stages:\n  - length: {min_words: 5}\n  - exact_dedup: {}\n")
    events = [{"time": 100.0, "event": "job_started", "shards": 4, "already_done": 0}]
    if done:
        events.append({"time": 110.0, "event": "job_done"})
    (job / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    stages = [{"stage": s, "docs_in": records, "docs_out": records - i, "dropped": {"short": i} if i else {},
               "skipped": {}, "counts": {}, "bytes_in": 10 * records, "bytes_out": 9 * records, "seconds": 0.5}
              for i, s in enumerate(("read", "length"))]
    points = [[100.0 + t, records * t // 4, records * t // 5, 0] for t in range(5)]
    (job / "_progress.json").write_text(json.dumps({
        "pid": os.getpid(), "host": socket.gethostname(), "started": 100.0, "updated": 104.0, "shards_done": 1,
        "shards_open": 1, "records": records, "documents": records - 1, "stages": stages,
        "series": {"columns": ["time", "records", "documents", "shards_done"], "points": points}}))
    if done:
        (job / "stats.json").write_text(json.dumps({"wall_seconds": 10.0, "shards": {"total": 4},
                                                    "documents": {"records_read": records, "out": records - 1},
                                                    "stages": stages}))
    (job / "train").mkdir(exist_ok=True)
    (job / "train" / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "loss": 3.0 - s / 100, "spike": "loss spike" if s == 7 else None}) + "\n"
        for s in range(1, 41)))
    return job


class Clock:
    """Stands in for time.monotonic in the answer cache: a test steps it past the ttl, sleeping never."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


POLLED = ["/api/jobs", "/api/jobs/{job}", "/api/jobs/{job}/funnel", "/api/jobs/{job}/throughput",
          "/api/jobs/{job}/train", "/api/jobs/{job}/train?max_points=10&since_step=3",
          "/api/jobs/{job}/train?since_step=0"]


def test_polled_answers_skip_fastapi_and_are_the_routes_answers_byte_for_byte(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from pipelines.service import create_app, routes

    job = write_job(tmp_path, done=True)  # a finished job's answers do not depend on the time they are read
    answered = []

    def spy(registry, path, query):
        body = hot_answer(registry, path, query)
        answered.append((path, query, body is not None))
        return body

    hot_answer = routes.hot_answer
    monkeypatch.setattr(routes, "hot_answer", spy)
    with TestClient(create_app(tmp_path, ttl=0)) as client:  # ttl 0: each answer is built afresh
        for path in (p.format(job=job.name) for p in POLLED):
            answered.clear()
            fast = client.get(path)
            assert answered and answered[-1][2], f"{path} should be answered before FastAPI"
            routed = client.get(path + ("&" if "?" in path else "?") + "via=fastapi")  # an unknown key: FastAPI's
            assert not answered[-1][2]
            assert fast.status_code == routed.status_code == 200
            assert fast.content == routed.content, path
            assert {k: fast.headers[k] for k in ("content-type", "content-length")} == \
                {k: routed.headers[k] for k in ("content-type", "content-length")}
        curve = client.get(f"/api/jobs/{job.name}/train?max_points=10&since_step=3").json()
        assert curve["count"] == 37 and len(curve["points"]) <= 14 and 7 in [p["step"] for p in curve["points"]]
        assert client.get(f"/api/jobs/{job.name}").json()["state"] == "done"


def test_a_cached_answer_changes_once_the_job_folder_changes_and_the_ttl_passed(tmp_path):
    from fastapi.testclient import TestClient

    from pipelines.service import create_app

    job = write_job(tmp_path, records=10)
    app = create_app(tmp_path)
    clock = app.state.jobs.clock = Clock()
    paths = [p.format(job=job.name) for p in POLLED[:4]]
    with TestClient(app) as client:

        def records() -> list:
            jobs, status, funnel, throughput = (client.get(p).json() for p in paths)
            listed = next(j for j in jobs["jobs"] if j["id"] == job.name)
            return [listed["records"], status["records"], stage_of(funnel["stages"], "read")["docs_in"],
                    throughput["points"][-1]["records"]]

        assert records() == [10, 10, 10, 10]
        write_job(tmp_path, records=20)  # the driver's next snapshot
        assert records() == [10, 10, 10, 10], "within the ttl, the cached bytes are sent"
        assert client.get(paths[1] + "?via=fastapi").json()["records"] == 10  # FastAPI's routes share the cache
        clock.now += app.state.jobs.ttl
        assert records() == [20, 20, 20, 20], "past the ttl, the new snapshot is read"

        write_job(tmp_path, records=30, done=True)
        (tmp_path / "second-0123456789").mkdir()
        (tmp_path / "second-0123456789" / "events.jsonl").write_text('{"time": 1.0, "event": "job_started"}\n')
        clock.now += app.state.jobs.ttl
        assert records() == [30, 30, 30, 30]
        assert client.get(paths[2]).json()["final"] is True
        assert {j["id"] for j in client.get("/api/jobs").json()["jobs"]} == {job.name, "second-0123456789"}

        for child in sorted(job.rglob("*"), reverse=True):  # the job folder goes away
            child.unlink() if child.is_file() else child.rmdir()
        job.rmdir()
        clock.now += app.state.jobs.ttl
        for path in paths[1:]:
            assert client.get(path).status_code == 404, path
        assert [j["id"] for j in client.get("/api/jobs").json()["jobs"]] == ["second-0123456789"]


def test_the_fast_path_refuses_what_the_routes_refuse(tmp_path):
    from fastapi.testclient import TestClient

    from pipelines.service import create_app

    job = write_job(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    write_job(outside, name="linked-job")
    (tmp_path / "linked-job").symlink_to(outside / "linked-job")
    with TestClient(create_app(tmp_path)) as client:
        assert client.get("/api/jobs/nope-0123456789").json() == {"detail": "no job 'nope-0123456789'"}
        for path in ("/api/jobs/nope-0123456789", "/api/jobs/nope/funnel", "/api/jobs/nope/throughput",
                     "/api/jobs/nope/train", f"/api/jobs/{job.name}/nothing", "/api/jobs/linked-job",
                     "/api/jobs/linked-job/funnel", "/api/jobs/linked-job/train?max_points=10"):
            assert client.get(path).status_code == 404, path
        for path in ("/api/jobs/-bad", "/api/jobs/-bad/funnel", "/api/jobs/" + "x" * 300, "/api/jobs/..%0A",
                     f"/api/jobs/{job.name}/train?max_points=1", f"/api/jobs/{job.name}/train?max_points=100001",
                     f"/api/jobs/{job.name}/train?max_points=abc", f"/api/jobs/{job.name}/train?since_step=-1"):
            assert client.get(path).status_code == 422, path
        assert "linked-job" not in [j["id"] for j in client.get("/api/jobs").json()["jobs"]]
        assert client.post(f"/api/jobs/{job.name}/funnel").status_code == 405  # only GETs are answered early
