"""A seeded permutation of [0, n) that can be evaluated at any positions without materializing it.

The global shuffle of packed rows asks, for each row of an output shard, which packed row goes
there. `numpy.random.permutation(n)` would answer but needs 8n bytes in every process that asks;
a keyed Feistel network over the next power of four, with cycle walking back into [0, n), is a
bijection computed per position, so each shard writer evaluates only its own slice and memory
does not grow with the corpus. numpy has no such function, hence these few lines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ROUNDS = 6
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a strong 64-bit mix (wrapping uint64 arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def permute(positions: np.ndarray, n: int, seed: int | Sequence[int]) -> np.ndarray:
    """The images of `positions` (each in [0, n)) under the permutation of [0, n) given by `seed`
    (an int or a sequence of ints such as (seed, epoch), as `numpy.random.SeedSequence` takes)."""
    positions = np.asarray(positions, dtype=np.int64)
    if not positions.size:
        return positions
    if n < 1 or (positions.size and (positions.min() < 0 or positions.max() >= n)):
        msg = f"positions must lie in [0, {n})"
        raise ValueError(msg)
    half = max(1, (max(n - 1, 1).bit_length() + 1) // 2)
    mask = np.uint64((1 << half) - 1)
    keys = np.random.SeedSequence(seed).generate_state(ROUNDS, dtype=np.uint64)
    out = positions.astype(np.uint64)
    todo = np.ones(out.size, dtype=bool)
    with np.errstate(over="ignore"):
        while todo.any():  # cycle walking: the domain is < 4n, so about two rounds on average
            x = out[todo]
            left, right = x >> np.uint64(half), x & mask
            for key in keys:
                left, right = right, left ^ (_mix(right ^ key) & mask)
            out[todo] = (left << np.uint64(half)) | right
            todo = out >= np.uint64(n)
    return out.astype(np.int64)
