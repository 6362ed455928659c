"""Loss-spike and non-finite-loss detection, and a smoothed loss for logging.

A flagged step is what a trainer traces back to its source documents (the packed shards carry the
document ids of every row), skips, or rolls back from; this module only says which steps and why.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any


class SpikeDetector:
    """Flags a loss that is not finite, or more than `k` standard deviations above the mean of the last
    `window` losses, once at least `min_steps` of them have been seen.

    `min_std` floors the deviation: on a flat stretch the spread can shrink towards zero and a negligible
    bump would otherwise count as many sigmas. A spike enters the window clipped at the threshold, so it
    neither hides the next spike by inflating the spread nor keeps a genuine level shift flagged forever:
    the mean follows a shift a little every step."""

    def __init__(self, window: int = 100, k: float = 6.0, min_steps: int = 20, min_std: float = 1e-3) -> None:
        if window < 2 or not 2 <= min_steps <= window:
            msg = f"need window >= 2 and 2 <= min_steps <= window, got window={window}, min_steps={min_steps}"
            raise ValueError(msg)
        if k <= 0 or min_std < 0:
            msg = f"k must be positive and min_std non-negative, got k={k}, min_std={min_std}"
            raise ValueError(msg)
        self.window, self.k, self.min_steps, self.min_std = window, k, min_steps, min_std
        self.losses: deque[float] = deque(maxlen=window)
        self.steps = 0  # updates seen, flagged ones included
        self.flagged = 0

    def stats(self) -> tuple[float, float]:
        """Mean and (population) standard deviation of the window, the std floored at `min_std`."""
        n = len(self.losses)
        if n == 0:
            return math.nan, math.nan
        mean = math.fsum(self.losses) / n
        std = math.sqrt(math.fsum((x - mean) ** 2 for x in self.losses) / n)
        return mean, max(std, self.min_std)

    def update(self, loss: float) -> str | None:
        """Record one step's loss; a reason if it is flagged, else None."""
        loss = float(loss)
        self.steps += 1
        if not math.isfinite(loss):
            self.flagged += 1
            return f"non-finite loss ({loss})"
        if len(self.losses) >= self.min_steps:
            mean, std = self.stats()
            threshold = mean + self.k * std
            if loss > threshold:
                self.flagged += 1
                reason = (f"loss spike: {loss:.4g} is {(loss - mean) / std:.1f} std above the mean {mean:.4g}"
                          f" of the last {len(self.losses)} steps")
                self.losses.append(threshold)
                return reason
        self.losses.append(loss)
        return None

    def state_dict(self) -> dict[str, Any]:
        return {"window": self.window, "k": self.k, "min_steps": self.min_steps, "min_std": self.min_std,
                "losses": list(self.losses), "steps": self.steps, "flagged": self.flagged}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` saved, settings included, so decisions continue exactly."""
        self.window, self.k = int(state["window"]), float(state["k"])
        self.min_steps, self.min_std = int(state["min_steps"]), float(state["min_std"])
        self.losses = deque((float(x) for x in state["losses"]), maxlen=self.window)
        self.steps, self.flagged = int(state["steps"]), int(state["flagged"])


class EMA:
    """Exponential moving average with Adam's bias correction, so early values are not pulled towards 0.
    Non-finite values are ignored: one NaN step should not blank the curve for the rest of the run."""

    def __init__(self, beta: float = 0.98) -> None:
        if not 0.0 <= beta < 1.0:
            msg = f"beta must be in [0, 1), got {beta}"
            raise ValueError(msg)
        self.beta = beta
        self.raw = 0.0
        self.count = 0

    @property
    def value(self) -> float:
        return self.raw / (1.0 - self.beta**self.count) if self.count else math.nan

    def update(self, x: float) -> float:
        x = float(x)
        if math.isfinite(x):
            self.raw = self.beta * self.raw + (1.0 - self.beta) * x
            self.count += 1
        return self.value

    def state_dict(self) -> dict[str, Any]:
        return {"beta": self.beta, "raw": self.raw, "count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.beta, self.raw, self.count = float(state["beta"]), float(state["raw"]), int(state["count"])
