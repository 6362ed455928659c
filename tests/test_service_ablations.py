"""`/api/ablations` and `/api/ablations/{name}`: the session's tiny ablation as the service shows it (its table
and curves are results.json's and curves.parquet's), an ablation still running (curves from its runs'
evaluations, its state from whether its process lives), and ablation folders made of links out (never read)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pyarrow.compute as pc
import pytest
from fastapi.testclient import TestClient

from curation.ablate.results import read_results
from pipelines.service import create_app
from tests.support.ablation import EVERY, STEPS, tiny_ablation

SECRET = "SECRET-OUTSIDE-THE-ABLATIONS"


@pytest.fixture(scope="module")
def tiny(ray_session, tmp_path_factory):
    return tiny_ablation(tmp_path_factory)


def client(tmp_path: Path, ablations: Path | None) -> TestClient:
    jobs = tmp_path / "jobs"
    jobs.mkdir(exist_ok=True)
    return TestClient(create_app(jobs, ablations_dir=ablations))


def test_a_finished_ablation_is_listed_with_its_table_curves_and_mixture_search(tiny, tmp_path):
    results = read_results(tiny.result.folder)
    with client(tmp_path, tiny.output) as api:
        listed = api.get("/api/ablations").json()
        assert listed["ablations_dir"] == str(tiny.output.resolve())
        (entry,) = listed["ablations"]
        assert entry["name"] == "tiny" and entry["state"] == "done" and entry["phase"] == "ablation_done"
        assert entry["variants"] == ["base", "no-length", "mixture-natural", "mixture-proposed", "mixture-uniform"]
        assert entry["runs"] == {"done": 9, "total": 9}  # 2 variants, 4 proxies, 3 verified mixtures; one seed
        assert entry["has"] == {"results": True, "mixture_search": True} and entry["baseline"] == "base"

        detail = api.get("/api/ablations/tiny").json()
        assert detail["table"] == results.table and detail["mixture_search"] == results.mixture_search
        assert detail["about"]["tokens_per_run"] == STEPS * 4 * 64 and detail["overlap"] == results.overlap
        assert len(detail["curves"]) == 5 * 4  # variant x (held-out loss, bits per byte; choice accuracies)
        for series in detail["curves"]:
            rows = results.curves.filter(pc.and_(pc.equal(results.curves["variant"], series["variant"]),
                                                 pc.and_(pc.equal(results.curves["set"], series["set"]),
                                                         pc.equal(results.curves["metric"], series["metric"]))))
            assert series["seed"] == 0 and series["steps"] == list(range(EVERY, STEPS + 1, EVERY))
            assert series["tokens"] == rows["tokens"].to_pylist() and series["values"] == rows["value"].to_pylist()
        assert not [s for s in detail["curves"] if s["variant"].startswith("proxy-")]

        assert api.get("/api/ablations/nothing").status_code == 404
        assert api.get("/api/ablations/..").status_code == 404
        assert api.get("/api/ablations/%2e%2e%2ftiny").status_code in (404, 422)
        paths = api.get("/openapi.json").json()["paths"]
        assert {"/api/ablations", "/api/ablations/{name}"} <= set(paths)
        page = api.get("/ablations")
        assert page.status_code == 200 and "/static/ablations.js" in page.text
    with client(tmp_path, None) as api:  # served without --ablations: none
        assert api.get("/api/ablations").json() == {"ablations_dir": None, "ablations": []}


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def running(root: Path, name: str, pid: int) -> Path:
    """An ablation folder as `curate ablate` leaves it mid-training: one run evaluated twice, one not yet."""
    folder = root / name
    write_json(folder / "plan.json", {"name": name, "baseline": "base", "variants": {"base": {}, "other": {}}})
    (folder / "ablation.yaml").write_text(f"name: {name}\n")
    events = [{"time": 1.0, "event": "ablation_started", "pid": pid, "host": socket.gethostname()},
              {"time": 2.0, "event": "training_started", "runs": 2}]
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    for step in (2, 4):
        write_json(folder / "runs" / "base" / "seed-0" / "eval" / f"step-{step:08d}.json",
                   {"variant": "base", "seed": 0, "step": step, "tokens": step * 256,
                    "sets": {"held-out": {"loss": 6.0 - step / 4, "bits_per_byte": 4.0, "documents": 6}}})
    (folder / "runs" / "other" / "seed-0").mkdir(parents=True)
    write_json(folder / "runs" / "proxy-0" / "seed-0" / "eval" / "step-00000002.json",
               {"step": 2, "tokens": 512, "sets": {"held-out": {"loss": 9.0}}})
    return folder


@pytest.mark.subprocess
def test_a_running_ablation_shows_its_curves_so_far_and_a_killed_one_reads_interrupted(tmp_path):
    root = tmp_path / "ablations"
    running(root, "live", os.getpid())
    ended = subprocess.Popen(["true"])
    ended.wait()  # a process gone without a last word (its number is not reused this soon)
    running(root, "killed", ended.pid)
    with client(tmp_path, root) as api:
        listed = {a["name"]: a for a in api.get("/api/ablations").json()["ablations"]}
        assert listed["live"]["state"] == "running" and listed["live"]["phase"] == "training_started"
        assert listed["live"]["runs"] == {"done": 0, "total": 2} and listed["live"]["has"]["results"] is False
        assert listed["live"]["variants"] == ["base", "other"]
        detail = api.get("/api/ablations/live").json()
        assert detail["table"] == [] and detail["about"] is None
        assert detail["curves"] == [
            {"variant": "base", "seed": 0, "set": "held-out", "metric": "bits_per_byte", "steps": [2, 4],
             "tokens": [512, 1024], "values": [4.0, 4.0]},
            {"variant": "base", "seed": 0, "set": "held-out", "metric": "loss", "steps": [2, 4],
             "tokens": [512, 1024], "values": [5.5, 5.0]}]  # the proxy's run is no curve; `documents` no metric
        assert listed["killed"]["state"] == "interrupted"


def test_ablation_folders_and_files_linked_out_are_not_read(tmp_path):
    outside = tmp_path / "outside"
    escaped = running(outside, "escaped", os.getpid())
    write_json(escaped / "results.json", {"baseline": SECRET, "table": [{"variant": SECRET}]})
    root = tmp_path / "ablations"
    folder = running(root, "linked", os.getpid())
    (root / "escaped").symlink_to(escaped)  # a whole ablation elsewhere
    (folder / "results.json").symlink_to(escaped / "results.json")
    (folder / "curves.parquet").write_bytes(b"PAR1")
    (folder / "mixture_search.json").symlink_to(escaped / "results.json")
    (folder / "runs" / "base" / "seed-0" / "eval" / "step-00000006.json").symlink_to(
        escaped / "runs" / "base" / "seed-0" / "eval" / "step-00000004.json")
    (folder / "runs" / "leak").symlink_to(escaped / "runs" / "base", target_is_directory=True)
    with client(tmp_path, root) as api:
        listed = api.get("/api/ablations").json()
        assert [a["name"] for a in listed["ablations"]] == ["linked"]
        assert api.get("/api/ablations/escaped").status_code == 404
        response = api.get("/api/ablations/linked")
        assert response.status_code == 200 and SECRET not in response.text
        detail = response.json()
        assert detail["has"] == {"results": False, "mixture_search": False} and detail["mixture_search"] is None
        assert {(s["variant"], tuple(s["steps"])) for s in detail["curves"]} == {("base", (2, 4))}
