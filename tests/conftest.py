"""Shared fixtures: the third-party test data and one local Ray cluster per test session; `--fast`
(`make test-fast`): only the tests that start no Ray and no other process."""

from __future__ import annotations

import gzip
import os
import subprocess
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "recipes" / "sample"
DATA = Path(os.environ.get("CURATION_TESTDATA", ROOT.parent / "shared" / "data"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fast", action="store_true",
                     help="leave out the tests marked ray or subprocess (make test-fast)")


# Under --fast, starting a process (Ray's start among them) fails the test, or the fixture, that does it, naming
# the mark it lacks: so the marks stay true as tests change. For the whole session, as fixtures of any scope
# are caught too.
_FAST = pytest.MonkeyPatch()


def _refuse_a_process(popen: subprocess.Popen, args: object, *_: object, **__: object) -> None:
    popen._child_created = False  # what Popen.__del__ looks at
    pytest.fail(f"starts a process ({str(args)[:120]}) under --fast: mark the test subprocess, or ray",
                pytrace=False)


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("fast"):
        _FAST.setattr(subprocess.Popen, "__init__", _refuse_a_process)


def pytest_unconfigure(config: pytest.Config) -> None:
    _FAST.undo()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "ray_session" in item.fixturenames:  # directly or through another fixture
            item.add_marker(pytest.mark.ray)
    if config.getoption("fast"):
        left_out = {item for item in items if item.get_closest_marker("ray") or item.get_closest_marker("subprocess")}
        config.hook.pytest_deselected(items=[item for item in items if item in left_out])
        items[:] = [item for item in items if item not in left_out]


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
