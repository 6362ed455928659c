"""Allocator settings for the processes of a run: memory freed with a batch goes back to the system.

A batch of raw pages is megabytes, allocated and freed over and over. glibc raises its mmap threshold
to the size of the largest block freed (up to 32 MB), after which such buffers come from the heap,
whose freed holes stay mapped; Arrow's default pool (mimalloc or jemalloc) keeps freed pages for reuse
too. The FineWeb-like recipe of `benchmarks/peer_fineweb.py` in one process (trafilatura, the page
batches of `pipelines.plan`) peaks at ~285 MB of PSS with Arrow on the system allocator and a fixed
2 MB threshold, ~310 MB with glibc's moving one (and ~375 MB before either, on 128-page batches). A
lower threshold saves little more (256 kB: ~280 MB) and costs the fast engine ~8% more CPU: each
page's parse tree is then mapped afresh, and the kernel zeroes its pages every time.

Both are read when a process starts (glibc) or first allocates (Arrow), so `pipelines` sets them as
environment defaults, inherited by every worker it starts (the forkserver, an embedded Ray);
`lean_allocator` applies what can still change in a process that started without them.
"""

from __future__ import annotations

import ctypes
import os

MMAP_THRESHOLD_BYTES = 2 << 20
ENVIRONMENT = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD_BYTES)}
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)


def lean_allocator() -> bool:
    """glibc's mmap threshold fixed, and pyarrow's default pool the system allocator (Arrow's own C++ code
    keeps the pool it started with); False where the C library is not glibc. `MALLOC_MMAP_THRESHOLD_`, where set,
    is the threshold. Cheap; safe to call again."""
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    except (OSError, AttributeError):  # musl, macOS: no mallopt
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, int(os.environ.get("MALLOC_MMAP_THRESHOLD_", MMAP_THRESHOLD_BYTES))))
