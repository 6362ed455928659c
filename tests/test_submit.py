"""`curate submit` to a separate `ray start --head` cluster through the Ray Jobs API."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import psutil
import pytest

from pipelines.net import free_ports
from pipelines.submit import auth_headers, client
from tests.conftest import ROOT, SAMPLE
from tests.support.waiting import wait_until

CURATE = [sys.executable, "-m", "pipelines.cli"]
HEAD_CPUS = 2


def get(url: str) -> object:
    """GET a Ray dashboard REST endpoint, with the token Ray uses when token authentication is on."""
    with urllib.request.urlopen(urllib.request.Request(url, headers=auth_headers()), timeout=30) as response:
        return json.loads(response.read())



@pytest.fixture(scope="module")
def head():
    """A Ray head with its dashboard (the Jobs API) in its own temp dir, stopped by signalling its
    `ray start --block` process (never `ray stop`, which would stop the test session's Ray too)."""
    temp = tempfile.mkdtemp(prefix="rh", dir="/tmp")  # short: Ray's socket paths have a length limit
    ray = Path(sys.executable).with_name("ray")
    # Every port of its own: the default ones (agent 52365, metrics...) may be held by another Ray here.
    # Chosen together, so no two are the same (CI once drew the dashboard's port again for the metrics).
    names = ("dashboard-agent-listen-port", "dashboard-agent-grpc-port", "runtime-env-agent-port",
             "metrics-export-port")
    port, dashboard, *others = free_ports(2 + len(names))
    ports = [f"--{name}={number}" for name, number in zip(names, others, strict=True)]
    proc = subprocess.Popen([str(ray), "start", "--head", "--block", f"--port={port}", f"--num-cpus={HEAD_CPUS}",
                             f"--dashboard-port={dashboard}", "--dashboard-host=127.0.0.1", "--include-dashboard=true",
                             f"--temp-dir={temp}", "--disable-usage-stats", *ports],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            # `python` on the head is this venv's, as it is the image's on a real cluster
                            env={**os.environ, "RAY_ADDRESS": "", "RAY_AUTH_MODE": "token",
                                 "PATH": f"{ray.parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    address = f"http://127.0.0.1:{dashboard}"

    def dashboard_up() -> bool:
        try:
            return bool(client(address).get_version())
        except (OSError, RuntimeError, ConnectionError):
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            return False
    wait_until(dashboard_up, "the Ray head's dashboard up", timeout=120, every=1)
    yield address
    # SIGKILL to the whole group, not SIGTERM: `ray start --block` then stops its processes one by one, with
    # waits (~35 s here); nothing of this throwaway head is kept. Its processes are all in this session.
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.subprocess
def test_submit_runs_the_recipe_on_the_cluster(head, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    text = (ROOT / "recipes" / "quickstart.yaml").read_text().replace("recipes/sample/", f"{SAMPLE}/")
    recipe.write_text(text)
    out = subprocess.run([*CURATE, "submit", str(recipe), "--address", head, "--output", str(tmp_path / "jobs"),
                          "--wait"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    job_id = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
    logs = subprocess.run([*CURATE, "logs", job_id, "--address", head], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:] + logs.stdout[-3000:]
    assert "quickstart: funnel" in logs.stdout and "10 documents kept of 31 records" in logs.stdout
    status = subprocess.run([*CURATE, "status", job_id, "--address", head], cwd=ROOT, capture_output=True, text=True)
    info = dict(line.split(": ", 1) for line in status.stdout.splitlines())  # lines, not a JSON dump
    assert info["status"] == "SUCCEEDED" and info["recipe"] == "quickstart" and info["job id"] == job_id
    none = subprocess.run([*CURATE, "status", "nosuch", "--address", head], cwd=ROOT, capture_output=True, text=True)
    assert none.returncode == 1
    assert none.stderr.strip() == f"curate status: the Ray cluster at {head} has no job 'nosuch'"
    assert get(f"{head}/api/jobs/{job_id}")["status"] == "SUCCEEDED"  # Ray's own REST API
    stats = json.loads(next((tmp_path / "jobs").glob("quickstart-*/stats.json")).read_text())
    assert stats["documents"]["out"] == 10 and stats["tokens"]["splits"]["train"]["rows"] > 0


@pytest.mark.subprocess
def test_a_bad_recipe_is_refused_before_submission(head, tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("name: bad\nsources: [{name: a, format: warc, paths: [nowhere/*.warc]}]\n")
    out = subprocess.run([*CURATE, "submit", str(recipe), "--address", head], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and "nothing was submitted" in out.stderr and "no file matches" in out.stderr
    assert all((j.get("metadata") or {}).get("recipe") != "bad" for j in get(f"{head}/api/jobs/"))


def test_the_recipe_travels_as_loaded_with_its_language_settings(tmp_path, monkeypatch):
    """A language settings file is named relative to where `curate submit` runs; the cluster's working
    directory is another, so the recipe the job gets holds the settings themselves."""
    from curation.recipe import parse_recipe
    from pipelines import submit

    (tmp_path / "zh.yaml").write_text("stages: {gopher_quality: {languages: {zh: {max_avg_word_length: 9.5}}}}\n")
    text = (ROOT / "recipes" / "quickstart.yaml").read_text().replace("recipes/sample/", f"{SAMPLE}/")
    text = text.replace("  - length: {min_words: 50}", "  - gopher_quality: {}") + "language_settings: zh.yaml\n"
    (tmp_path / "recipe.yaml").write_text(text)
    shipped = {}

    class Jobs:
        def submit_job(self, entrypoint, runtime_env, **_):
            shipped["recipe"] = (Path(runtime_env["working_dir"]) / "recipe.yaml").read_text()
            return "job-1"

    monkeypatch.setattr(submit, "client", lambda address: Jobs())
    monkeypatch.chdir(tmp_path)
    assert submit.submit("recipe.yaml", "http://cluster") == "job-1"
    fingerprint = submit.load_recipe("recipe.yaml").fingerprint()
    monkeypatch.chdir(ROOT)  # as on the cluster: zh.yaml is not there
    recipe = parse_recipe(shipped["recipe"])
    [params] = [params for _, name, params in recipe.stage_specs() if name == "gopher_quality"]
    assert params.languages["zh"]["max_avg_word_length"] == 9.5
    assert recipe.fingerprint() == fingerprint


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _ended(jobs, job_id: str) -> str | None:
    """The job's final state, or None while it may still change."""
    status = jobs.get_job_status(job_id)
    return status.value if status.is_terminal() else None


@pytest.mark.subprocess
def test_rest_job_control_needs_the_token(head, tmp_path):
    import httpx

    from pipelines.service.control import Control
    from pipelines.service.server import Background

    off_port, on_port = free_ports(2)
    off = Background(tmp_path, port=off_port).start()
    on = Background(tmp_path, port=on_port, job_control=Control("s3cret", head, str(tmp_path / "jobs"))).start()
    recipe = (ROOT / "recipes" / "quickstart.yaml").read_text().replace("recipes/sample/", f"{SAMPLE}/")
    jobs = client(head)
    # A job holding every CPU of the cluster until stopped: the recipe's tasks cannot run, so its job is still
    # going when DELETE comes (one that finished first would not be stopped)
    holder = jobs.submit_job(entrypoint=f"{sys.executable} -c 'import signal; signal.pause()'",
                             entrypoint_num_cpus=HEAD_CPUS)
    try:
        wait_until(lambda: jobs.get_job_status(holder).value == "RUNNING", "the CPUs held", timeout=120)
        assert httpx.post(f"{off.url}/api/jobs", content=recipe).status_code == 403  # no token configured: off
        assert httpx.post(f"{on.url}/api/jobs", content=recipe).status_code == 401
        wrong = httpx.post(f"{on.url}/api/jobs", content=recipe, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        auth = {"Authorization": "Bearer s3cret"}
        bad = httpx.post(f"{on.url}/api/jobs", content="name: x\nsources: []\n", headers=auth)
        assert bad.status_code == 422 and "sources" in bad.text
        assert httpx.delete(f"{on.url}/api/jobs/raysubmit_nosuchjob", headers=auth).status_code == 404
        made = httpx.post(f"{on.url}/api/jobs", content=recipe, headers=auth, timeout=300)
        assert made.status_code == 201, made.text
        job_id = made.json()["job_id"]
        assert httpx.delete(f"{on.url}/api/jobs/{job_id}").status_code == 401
        stopped = httpx.delete(f"{on.url}/api/jobs/{job_id}", headers=auth, timeout=60)
        assert stopped.status_code == 200 and stopped.json() == {"job_id": job_id, "stopped": True}
        assert wait_until(lambda: _ended(jobs, job_id), "the stopped job ended", timeout=120) == "STOPPED"
        # Ray sends the driver SIGTERM, then SIGKILL a few seconds later: a head stopped before then (the
        # module's end) leaves the driver running, orphaned
        driver = jobs.get_job_info(job_id).driver_info
        if driver is not None and driver.pid:
            wait_until(lambda: not _running(int(driver.pid)), "the stopped job's driver gone", timeout=60)
    finally:
        off.stop()
        on.stop()
        jobs.stop_job(holder)
        wait_until(lambda: _ended(jobs, holder), "the CPUs given back", timeout=60)


def test_a_submitted_recipe_names_its_local_paths_absolutely(tmp_path, monkeypatch):
    """The recipe runs in Ray's copy of a working folder: README's `curate submit recipes/quickstart.yaml` found no
    input there, and wrote its job folder under Ray's temporary package folder."""
    from curation.recipe import parse_recipe

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"text": "x"}\n')
    (tmp_path / "words.txt").write_text("bad\n")
    monkeypatch.chdir(tmp_path)
    written = ("name: r\noutput: ./jobs\nsources:\n  - {name: a, format: jsonl, paths: [in/*.jsonl, s3://bucket/x/*.jsonl]}"
               "\nstages:\n  - toxicity: {wordlist: words.txt}\n")
    relative = parse_recipe(written, check_paths=False)
    recipe = relative.with_absolute_paths()
    assert recipe.output == str(tmp_path / "jobs")
    assert recipe.sources[0].paths == [str(tmp_path / "in" / "*.jsonl"), "s3://bucket/x/*.jsonl"]
    assert next(iter(type(recipe.stages[0]).model_fields)) == "toxicity"
    assert recipe.stages[0].toxicity.wordlist == str(tmp_path / "words.txt")
    # one recipe, one job folder: `curate run` here and `curate submit` (absolute paths) resume the same one
    assert recipe.fingerprint() == relative.fingerprint()
    absolute = parse_recipe(written.replace("in/*.jsonl", f"{tmp_path}/in/*.jsonl"), check_paths=False)
    assert absolute.job_dir() == relative.job_dir()
