"""Allocator settings for the processes of a run: memory freed with a batch goes back to the system.

A batch of raw pages is megabytes, allocated and freed over and over. glibc raises its mmap threshold
to the size of the largest block freed (up to 32 MB), after which such buffers come from the heap,
whose freed holes stay mapped; Arrow's default pool (mimalloc or jemalloc) keeps freed pages for reuse
too. The FineWeb-like recipe of `benchmarks/peer_fineweb.py` in one process (trafilatura, the page
batches of `pipelines.plan`) peaks at ~285 MB of PSS with Arrow on the system allocator and a fixed
2 MB threshold, ~310 MB with glibc's moving one (and ~375 MB before either, on 128-page batches). A
lower threshold saves little more (256 kB: ~280 MB) and costs the fast engine ~8% more CPU: each
page's parse tree is then mapped afresh, and the kernel zeroes its pages every time. Fixing the mmap
threshold also fixes glibc's trim threshold, at 128 kB: the heap then shrinks after nearly every page
and grows back, faulting its pages in again; at 16 MB the workers of the fast engine at 5x spend half
the system time (1.2 -> 0.6 CPU-s), for ~2 MB more in one process and ~20 MB more over 3.

Both are read when a process starts (glibc) or first allocates (Arrow), so `pipelines` sets them as
environment defaults, inherited by every worker it starts (the forkserver, an embedded Ray);
`lean_allocator` applies what can still change in a process that started without them.
"""

from __future__ import annotations

import ctypes
import os

MMAP_THRESHOLD_BYTES = 2 << 20
TRIM_THRESHOLD_BYTES = 16 << 20
ENVIRONMENT = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD_BYTES),
               "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD_BYTES)}
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def lean_allocator() -> bool:
    """glibc's mmap and trim thresholds fixed, and pyarrow's default pool the system allocator (Arrow's own C++
    code keeps the pool it started with); False where the C library is not glibc. `MALLOC_MMAP_THRESHOLD_` and
    `MALLOC_TRIM_THRESHOLD_`, where set, are the thresholds. Cheap; safe to call again."""
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    except (OSError, AttributeError):  # musl, macOS: no mallopt
        return False
    trim = int(os.environ.get("MALLOC_TRIM_THRESHOLD_", TRIM_THRESHOLD_BYTES))
    mmap = int(os.environ.get("MALLOC_MMAP_THRESHOLD_", MMAP_THRESHOLD_BYTES))
    return bool(mallopt(M_MMAP_THRESHOLD, mmap)) and bool(mallopt(M_TRIM_THRESHOLD, trim))
