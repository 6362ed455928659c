"""Allocator settings: memory a freed batch held goes back to the system, in the driver and in workers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipelines.allocator import ENVIRONMENT, MMAP_THRESHOLD_BYTES, TRIM_THRESHOLD_BYTES, lean_allocator
from pipelines.executors import LocalExecutor


def _pool_and_threshold() -> tuple[str, str | None, str | None]:
    import pyarrow as pa

    return (pa.default_memory_pool().backend_name, os.environ.get("MALLOC_MMAP_THRESHOLD_"),
            os.environ.get("MALLOC_TRIM_THRESHOLD_"))


@pytest.mark.subprocess
def test_a_process_that_imports_pipelines_first_allocates_arrow_memory_with_malloc():
    env = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT}
    probe = "import pipelines, pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "system"  # Arrow's own C++ code included: it reads the variable once
    probe = "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() != "system"  # without it, Arrow's default: what the setting changes


def test_lean_allocator_fixes_glibcs_threshold_and_workers_inherit_the_settings():
    assert lean_allocator() is True  # glibc accepted the fixed thresholds (Linux, as in CI)
    expected = ("system", str(MMAP_THRESHOLD_BYTES), str(TRIM_THRESHOLD_BYTES))
    assert _pool_and_threshold() == expected
    executor = LocalExecutor(2)
    try:
        assert executor.result(executor.submit(_pool_and_threshold)) == expected
    finally:
        executor.close()
