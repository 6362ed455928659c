"""Mixture weighting: how many output tokens each source gets, and which documents carry them.

A recipe gives either shares of the output tokens per source (`weights`) or absolute token budgets
(`tokens`). Each source's target is turned into a sampling rate over its curated tokens: below 1
the source is down-sampled, above 1 up-sampled by repeating documents (whole epochs plus a part),
never more than `max_epochs`; a target that would need more is reported as a shortfall.

Which documents are taken is decided by a hash of (seed, document id) mapped to [0, 1): a document
is repeated `floor(rate)` times and once more when its hash lies below the source's threshold.
The threshold is chosen from a token-weighted histogram of those hashes so that the tokens taken
match the target (to within a fraction of one histogram bin), not only in expectation; the same seed gives the
same documents on every rerun and on any number of workers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import xxhash
from pydantic import BaseModel, ConfigDict, Field, model_validator

HISTOGRAM_BINS = 4096
_TWO64 = float(1 << 64)
VALIDATION_SALT = 0x5EED_FA11  # the split must not move when the recipe's seed changes


def unit_hash(ids: Sequence[str], salt: int) -> np.ndarray:
    """A uniform number in [0, 1) per id, from xxh3-64 of the id seeded with `salt`."""
    digest = xxhash.xxh3_64_intdigest
    salt = salt & 0xFFFF_FFFF_FFFF_FFFF
    return np.fromiter((digest(i.encode(), salt) for i in ids), dtype=np.uint64, count=len(ids)) / _TWO64


class MixtureParams(BaseModel):
    """Output token shares (`weights`) or budgets (`tokens`) per source; every source must be named."""

    model_config = ConfigDict(extra="forbid")

    weights: dict[str, float] | None = Field(
        None, description="Share of output tokens per source (normalized to sum to 1; 0 leaves a source out).")
    tokens: dict[str, int] | None = Field(None, description="Output token budget per source (instead of weights).")
    total_tokens: int | None = Field(
        None, gt=0, description="With weights: the output size in tokens. Default: the largest mixture in which no "
        "source is repeated (the scarcest source, relative to its weight, is used exactly once).")
    max_epochs: float = Field(
        4.0, ge=1.0, description="Up-sampling repeats a source's documents at most this many times; a target "
        "beyond that is reported as a shortfall, not met by repeating more.")

    @model_validator(mode="before")
    @classmethod
    def _flat_weights(cls, data: Any) -> Any:
        """`mixture: {web: 0.7, books: 0.3}` is the short form of `mixture: {weights: {...}}`."""
        if isinstance(data, dict) and data and not set(data) & set(cls.model_fields):
            return {"weights": data}
        return data

    @model_validator(mode="after")
    def _one_kind(self) -> MixtureParams:
        if (self.weights is None) == (self.tokens is None):
            msg = "give either `weights` (shares of output tokens) or `tokens` (budgets) per source"
            raise ValueError(msg)
        if self.tokens is not None and self.total_tokens is not None:
            msg = "`total_tokens` goes with `weights`; with `tokens` the budgets are the total"
            raise ValueError(msg)
        values = self.weights if self.weights is not None else self.tokens
        if any(v < 0 for v in values.values()):
            msg = "weights and token budgets must be >= 0"
            raise ValueError(msg)
        if not sum(values.values()) > 0:
            msg = "at least one source needs a weight or budget above 0"
            raise ValueError(msg)
        return self

    def sources(self) -> dict[str, float]:
        return dict(self.weights if self.weights is not None else self.tokens)


@dataclass
class SourcePlan:
    """One source's part of the mixture: what it has, what it should give, and how it is sampled."""

    available_tokens: int  # curated tokens (EOS included) in the train split
    target_tokens: int
    rate: float  # copies per available token, capped at max_epochs
    threshold: float = 0.0  # documents whose hash is below it get one copy more than floor(rate)
    planned_tokens: int = 0  # what the threshold selects (the packer's count is the achieved figure)

    @property
    def shortfall_tokens(self) -> int:
        return max(0, self.target_tokens - self.planned_tokens)

    def copies(self, u: np.ndarray) -> np.ndarray:
        """Copies of each document, given its hash in [0, 1)."""
        return (math.floor(self.rate) + (u < self.threshold)).astype(np.int64)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shortfall_tokens": self.shortfall_tokens}


def histogram(u: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Tokens per hash bin: what the tokenizing workers report so that the plan needs no document list."""
    bins = np.minimum((u * HISTOGRAM_BINS).astype(np.int64), HISTOGRAM_BINS - 1)
    return np.bincount(bins, weights=tokens, minlength=HISTOGRAM_BINS).astype(np.int64)


def _threshold(hist: np.ndarray, wanted: float) -> tuple[float, int]:
    """The hash threshold below which documents hold about `wanted` tokens, and that estimate: the
    bin where the cumulative count crosses `wanted`, interpolated linearly inside it (hashes are
    uniform within a bin), so the error is a fraction of one bin's tokens."""
    cumulative = np.concatenate([[0], np.cumsum(hist)])
    if wanted <= 0:
        return 0.0, 0
    if wanted >= cumulative[-1]:
        return 1.0 + 1e-9, int(cumulative[-1])
    i = int(np.searchsorted(cumulative, wanted, side="right")) - 1  # cumulative[i] <= wanted < cumulative[i+1]
    inside = (wanted - cumulative[i]) / hist[i]
    return (i + inside) / HISTOGRAM_BINS, round(wanted)


def plan(params: MixtureParams | None, hists: dict[str, np.ndarray]) -> dict[str, SourcePlan]:
    """Each source's sampling plan from its token histogram (train split). Without a mixture every
    document is taken once."""
    available = {s: int(h.sum()) for s, h in hists.items()}
    if params is None:
        return {s: SourcePlan(a, a, 1.0, 0.0, a) for s, a in available.items()}
    given = params.sources()
    if params.tokens is not None:
        targets = {s: int(given.get(s, 0)) for s in available}
    else:
        norm = sum(given.values())
        weights = {s: given.get(s, 0) / norm for s in available}
        total = params.total_tokens
        if total is None:
            limits = [available[s] / w for s, w in weights.items() if w > 0 and available[s] > 0]
            total = min(limits) if limits else 0
        targets = {s: round(weights[s] * total) for s in available}
    plans = {}
    for source, hist in hists.items():
        a, t = available[source], targets[source]
        rate = min(t / a, params.max_epochs) if a else 0.0
        full = math.floor(rate)
        threshold, part = _threshold(hist, (rate - full) * a)
        plans[source] = SourcePlan(a, t, rate, threshold, full * a + part)
    return plans


def shares(tokens: dict[str, int]) -> dict[str, float]:
    total = sum(tokens.values())
    return {s: (n / total if total else 0.0) for s, n in tokens.items()}
