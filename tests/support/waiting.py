"""Waiting on a condition itself (a state a service reports, a process gone, a file written), never for a
guessed time: a poll with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], what: str, timeout: float = 60, every: float = 0.05) -> T:
    """Call `condition` every `every` seconds until it returns a true value; return that value. Fails
    naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not so after {timeout} s")
        time.sleep(every)
    return value
