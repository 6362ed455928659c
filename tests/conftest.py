"""Shared fixtures: the third-party test data and one local Ray cluster per test session."""

from __future__ import annotations

import gzip
import os
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "recipes" / "sample"
DATA = Path(os.environ.get("CURATION_TESTDATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def testdata() -> Path:
    if not (DATA / "README.md").is_file():
        pytest.skip(f"third-party test data not found at {DATA} (set CURATION_TESTDATA to its folder)")
    return DATA


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole session: starting Ray costs seconds."""
    import ray

    import pipelines  # noqa: F401  (sets Ray Data's environment before Ray is imported)

    # Ray Train's start and stop take most of a tiny fit(): its controller polls every 2 s by default, and
    # a preemption watcher and metrics are two more actors or callbacks per fit. Measured: a 4-step fit on
    # 2 CPU workers 22-24 s -> 16-20 s. Set before ray.init: every worker process inherits them.
    for name, value in {"RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.5", "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0",
                        "RAY_TRAIN_METRICS_ENABLED": "0"}.items():
        os.environ.setdefault(name, value)
    # "local": a new Ray of our own even where another one runs on this machine (which plain
    # ray.init() would join, and then refuse num_cpus)
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def warc_response(url: str, body: bytes, content_type: str = "text/html") -> bytes:
    """One gzip member holding a WARC response record (for pages made up inside a test)."""
    http = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
    record_id = uuid.uuid5(uuid.NAMESPACE_URL, url)
    head = (
        f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{record_id}>\r\n"
        f"WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n"
    )
    return gzip.compress(head.encode() + http + b"\r\n\r\n", mtime=0)
