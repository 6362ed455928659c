"""What a benchmark measured, written as JSON beside the others: `benchmarks/results/<name>.json`.

Every benchmark ends with `write_results(name, figures)`; `benchmarks/report.py` (`make bench-report`) turns the
folder into one table, `benchmarks/RESULTS.md`. A new run of a benchmark replaces its file (written atomically:
a temporary file renamed over it), so the folder holds each benchmark's latest run; older runs stay in git.

The file is one JSON object:

    benchmark     the script's name, e.g. "dedup_bloom"
    command       the command line it ran with (shell-quoted)
    commit        {"sha": short commit of the checkout, "dirty": tracked files (results aside) had uncommitted changes}
    machine       {"cpu": model name, "cores": logical CPUs, "memory_gb": total memory}
    load          {"start": 1-minute load average when the script began, "end": when it wrote its results}
    wall_seconds  the whole command, from the process's start to writing its results
    utc           when the results were written, ISO 8601
    figures       a list, each made by `figure()`:
        figure      what is measured, e.g. "signatures, docs/s per core"
        value       the measurement (a number), unit: its unit ("docs/s", "MB", "" for a ratio or a share)
        peer        what it is held against: another tool, a reference, or a limit or target ("datatrove", "limit")
        peer_value  the peer's figure in the same unit, or null when there is no peer
        ratio       value / peer_value, always that way round (null without a peer value, or when it is 0)
        target      the goal in words, e.g. ">= 10x", "< 20% overhead", or null
        met         whether the target is met: true, false, or null (no target)
        note        anything the figure needs to be read right, or null

load, cpu and commit are there because the figures are wall-clock and CPU timings on shared machines.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

RESULTS = Path(__file__).resolve().parent / "results"
# Imported with a benchmark's other modules, as it starts: the load the run started under.
LOAD_AT_START = os.getloadavg()[0]


def figure(name: str, value: float | int, unit: str = "", peer: str | None = None,
           peer_value: float | int | None = None, *, target: str | None = None, met: bool | None = None,
           note: str | None = None) -> dict[str, Any]:
    """One figure of a benchmark, as the module docstring describes it."""
    ratio = value / peer_value if peer_value else None
    return {"figure": name, "value": value, "unit": unit, "peer": peer, "peer_value": peer_value,
            "ratio": ratio, "target": target, "met": met, "note": note}


def git_commit() -> dict[str, Any]:
    """The checkout's short commit and whether its tracked files have uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
        # The results themselves are left out: a `make bench` run rewrites them one benchmark after another.
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                 ":(exclude)benchmarks/results", ":(exclude)benchmarks/RESULTS.md"],
                                cwd=root, capture_output=True, text=True)
    except OSError:
        return {"sha": None, "dirty": None}
    return {"sha": head.stdout.strip() or None, "dirty": bool(status.stdout.strip())}


def code_version() -> str:
    """The commit in words, for a benchmark's printout: "abc1234", "abc1234 with uncommitted changes"."""
    commit = git_commit()
    return f"{commit['sha'] or 'unknown'}{' with uncommitted changes' if commit['dirty'] else ''}"


def machine() -> dict[str, Any]:
    """The CPU model, logical CPU count and total memory of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1)}


def _plain(value: Any) -> Any:
    """A numpy scalar (a count, a comparison's bool) as the Python number JSON can write."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serializable: {value!r}")


def write_results(name: str, figures: list[dict[str, Any]], folder: Path = RESULTS) -> Path:
    """Write `folder/<name>.json` (atomically) with these figures and the run's context; the path written."""
    started = psutil.Process().create_time()
    record = {
        "benchmark": name,
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "commit": git_commit(),
        "machine": machine(),
        "load": {"start": round(LOAD_AT_START, 2), "end": round(os.getloadavg()[0], 2)},
        "wall_seconds": round(time.time() - started, 1),
        "utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "figures": figures,
    }
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False) as f:
        json.dump(record, f, indent=2, ensure_ascii=False, default=_plain)
        f.write("\n")
    target = Path(f.name).replace(folder / f"{name}.json")
    print(f"results: {target}")
    return target
