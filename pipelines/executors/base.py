"""What a run asks of an executor, and what both executors share."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

BATCHES_AHEAD = 8  # batches a shard task may make before the driver takes them: what waits in memory


class RayUnreachable(ConnectionError):
    """The Ray a command was told to join (`--address`, a recipe's `ray.address`, $RAY_ADDRESS) could not be
    reached: said in one line, no Ray client traceback. Here, not beside Ray: the CLI catches it without
    importing Ray."""


@dataclass(frozen=True)
class ItemFailed:
    """The last output of a streaming task whose item could not be done for a reason outside the run (an
    input that cannot be read): yielded rather than raised, so that the other items go on (and Ray, seeing
    no error, retries nothing); the caller decides what it means."""

    item: str
    error: str


class Executor:
    """What a run asks of an executor. Handles are opaque (Ray object refs, futures)."""

    shuffles: bool  # corpus stages may run as shuffles over the cluster (else in one task)
    # A streaming task that hands over nothing for this long is stopped (the recipe's `stall_timeout_s`):
    # Ray runs it again, the local pool ends it with an `ItemFailed`. None: wait for ever.
    stall_s: float | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Start `fn(*args, **kwargs)` on one CPU; return its handle."""
        raise NotImplementedError

    def wait(self, pending: list[Any], timeout: float) -> tuple[list[Any], list[Any]]:
        """(finished, still pending) after at most `timeout` seconds, or as soon as one finishes."""
        raise NotImplementedError

    def result(self, handle: Any) -> Any:
        raise NotImplementedError

    def share(self, value: Any) -> Any:
        """A large argument many tasks take, shipped once where the executor can."""
        return value

    def stream(self, fn: Callable[..., Iterator[Any]], items: Iterable[Any], *shared: Any,
               cpus: float = 1.0) -> Iterator[Any]:
        """Everything `fn(item, *shared)` yields for every item, in the order it is made (items mixed)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor started."""

    def abort(self) -> None:
        """Release it now, on an interrupt: running tasks are stopped, not waited for."""
        self.close()


def item_name(item: Any) -> str:
    """What an `ItemFailed` calls a streamed item: a shard task's item is (shard, source), named by its shard."""
    first = item[0] if isinstance(item, tuple) and item else item
    return str(getattr(first, "name", first))


def stalled(seconds: float, where: str) -> str:
    return (f"StalledTask: no batch for {seconds:g} s ({where}; `stall_timeout_s` in the recipe): the worker "
            "was stopped")
