"""A limit on the CPU time of one call, so one pathological document cannot stall a worker.

CPU time (the process's, user and system), not wall-clock time: a page's fate is then the same on an idle machine
and a loaded one (a tester's job dropped two English pages as `timeout` under a load of 12 that an idle run kept).
"""

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
    """Raise `TimeLimitExceeded` inside the block once it has used `seconds` of CPU time."""
    if not can_interrupt():
        msg = "time_limit needs the main thread of a process on a POSIX system"
        raise RuntimeError(msg)

    def on_alarm(signum: int, frame: object) -> None:
        msg = f"exceeded {seconds:g} s of CPU time"
        raise TimeLimitExceeded(msg)

    previous = signal.signal(signal.SIGPROF, on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
