"""`curate submit | status | logs | stop --address` with no Ray cluster there: one line and exit 1, no traceback."""

from __future__ import annotations

import subprocess
import sys

from pipelines.net import free_port

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
