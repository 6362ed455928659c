"""A wall-clock limit for one call, so one pathological document cannot stall a worker."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class TimeLimitExceeded(BaseException):
    """Not an `Exception`: libraries catch those (trafilatura wraps its readability and jusText fallbacks
    in `except Exception`), which would swallow the alarm and let the page run on, unlimited, with a
    partial result. Like KeyboardInterrupt, it passes through such handlers to `time_limit`'s caller."""


def can_interrupt() -> bool:
    """Signals reach only the main thread; Ray runs tasks and sync actor calls there."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `TimeLimitExceeded` inside the block once `seconds` have passed."""
    if not can_interrupt():
        msg = "time_limit needs the main thread of a process on a POSIX system"
        raise RuntimeError(msg)

    def on_alarm(signum: int, frame: object) -> None:
        msg = f"exceeded {seconds:g} s"
        raise TimeLimitExceeded(msg)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
