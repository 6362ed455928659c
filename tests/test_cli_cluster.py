"""`curate submit | status | logs | stop --address` with no Ray cluster there: one line and exit 1, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipelines.net import free_port

pytestmark = pytest.mark.subprocess  # each test runs `curate`

COMMANDS = [["logs", "raysubmit_x"], ["stop", "raysubmit_x"], ["status", "raysubmit_x"],
            ["submit", "recipes/quickstart.yaml"]]


def test_job_commands_say_in_one_line_that_the_cluster_is_unreachable():
    address = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for command in COMMANDS:
        done = subprocess.run([sys.executable, "-m", "pipelines.cli", *command, "--address", address],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, (command, done.stderr)
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        assert lines == [f"curate {command[0]}: the Ray cluster at {address} is unreachable or refused the request: "
                         f"Failed to connect to Ray at address: {address}."], (command, done.stderr)


def test_a_run_told_to_join_a_ray_that_is_not_there_says_so_in_one_line(tmp_path):
    """`curate run --address` (`train` and `ablate` join through the same `join_ray`): the Ray client's ~30 s of
    retries (shortened here), then one line, exit 1; the job it started says `failed`, to run again."""
    address = f"ray://127.0.0.1:{free_port()}"
    quick = {"RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S": "1", "RAY_CLIENT_MAX_CONNECTION_TIMEOUT_S": "1"}
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "run", "recipes/quickstart.yaml", "--output",
                           str(tmp_path / "jobs"), "--address", address],
                          capture_output=True, text=True, timeout=120, env={**os.environ, **quick})
    assert done.returncode == 1, done.stderr
    said = f"curate run: the Ray at {address} could not be joined: ray client connection timeout"
    assert done.stderr.strip().splitlines() == [said], done.stderr
    [job] = (tmp_path / "jobs").iterdir()
    events = [json.loads(line)["event"] for line in (job / "events.jsonl").read_text().splitlines()]
    assert events == ["job_started", "job_failed"]


@pytest.mark.parametrize("address", ["127.0.0.1:8365", "notaurl", "ftp://x"])
def test_an_address_that_is_no_dashboard_url_is_refused_in_one_line(capsys, address):
    """`host:port`, the form `curate run --address` takes, was read by Ray's client as a GCS address: 35 s of
    retries, then a traceback; `notaurl` a traceback at once; `ftp://x` "has no job", which was not so."""
    from pipelines.cli import main

    for command in COMMANDS:
        assert main([*command, "--address", address]) == 2
        said = capsys.readouterr().err.strip().splitlines()
        assert said == [f"curate {command[0]}: --address is the Ray dashboard's URL, http://HEAD:8265 (got "
                        f"{address!r})"]
