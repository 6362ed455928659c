"""Mixture weighting: how many output tokens each source gets, and which documents carry them.

A recipe gives either shares of the output tokens per source (`weights`) or absolute token budgets
(`tokens`). Each source's target is turned into a sampling rate over its curated tokens: below 1
the source is down-sampled, above 1 up-sampled by repeating documents (whole epochs plus a part),
never more than `max_epochs`; a target that would need more is reported as a shortfall.

Which documents are taken is decided by a hash of (seed, document id) mapped to [0, 1): a document
is repeated `floor(rate)` times and once more when its hash lies below the source's threshold.
The threshold is chosen from a token-weighted histogram of those hashes so that the tokens taken
match the target, not only in expectation; the same seed gives the same documents on every rerun
and on any number of workers. Where a histogram bin holds many documents the threshold is
interpolated inside the bin where the target falls (the miss is about one document); where the
source has so few documents that a bin holds about one, interpolating would take that document or
not by chance: the threshold is that bin's start or its end, whichever is nearer the target (the miss
is at most half that document: taking it always, a source of 30 files took its largest, 38,502 tokens,
for a target of 9,000), and the plan is exactly what packing takes.

Rehydration (`rehydrate`, FineWeb-2's): where `minhash_dedup` kept `minhash_cluster_size` (the size of
each survivor's cluster of near-duplicates), a document counts `repeats` times before the plan
samples: its tokens weigh `repeats` times in the histogram (a source's available tokens are its
rehydrated tokens) and each copy the plan takes is `repeats` copies. FineWeb-2 measured gains from it,
mostly for high-resource languages: documents duplicated a few times are better than unique ones, and
very large clusters (templates, spam) are not.

Documents are taken whole: a source whose documents are large against its target cannot get
close to it. `report` gives the real shortfall or excess (target against achieved tokens) and,
past `MISS_TOLERANCE`, why: `max_epochs`, `no_documents` or `document_granularity`; `warnings`
says it in words for the run's summary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

import numpy as np
import xxhash
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

HISTOGRAM_BINS = 4096
# A source with documents in at most this share of the bins has about one document per non-empty bin.
SPARSE_BINS = 0.5
MISS_TOLERANCE = 0.01  # a source off its target by more than this share of it is warned about, with the cause
_TWO64 = float(1 << 64)
VALIDATION_SALT = 0x5EED_FA11  # the split must not move when the recipe's seed changes
CLUSTER_SIZE = "minhash_cluster_size"  # FineWeb-2's name: `minhash_dedup` writes it, rehydration reads it
# FineWeb-2's published weights (README of huggingface/fineweb-2 @d0defb2, "Deduplication", Apache-2.0):
# smallest cluster size -> repeats: 1 -> 1, 2 and 3 -> N, 4 -> 3, 5-99 -> 5, 100-999 -> 8, 1000+ -> 1.
FINEWEB2_REHYDRATION = {1: 1, 2: 2, 3: 3, 5: 5, 100: 8, 1000: 1}


def unit_hash(ids: Sequence[str], salt: int) -> np.ndarray:
    """A uniform number in [0, 1) per id, from xxh3-64 of the id seeded with `salt`."""
    digest = xxhash.xxh3_64_intdigest
    salt = salt & 0xFFFF_FFFF_FFFF_FFFF
    return np.fromiter((digest(i.encode(), salt) for i in ids), dtype=np.uint64, count=len(ids)) / _TWO64


def _token_count(value: Any) -> Any:
    """`5e9` as 5,000,000,000: YAML reads an exponent without a dot as a string, and a budget is written so."""
    if isinstance(value, str):
        try:
            number = float(value.replace("_", ""))
        except ValueError:
            return value
        return int(number) if number.is_integer() else value
    return value


TokenCount = Annotated[int, BeforeValidator(_token_count)]


class MixtureParams(BaseModel):
    """Output token shares (`weights`) or budgets (`tokens`) per source; every source must be named."""

    model_config = ConfigDict(extra="forbid")

    weights: dict[str, float] | None = Field(
        None, description="Share of output tokens per source (normalized to sum to 1; 0 leaves a source out).")
    tokens: dict[str, TokenCount] | None = Field(
        None, description="Output token budget per source (instead of weights).")
    total_tokens: TokenCount | None = Field(
        None, gt=0, description="With weights: the output size in tokens. Default: the largest mixture in which no "
        "source is repeated (the scarcest source, relative to its weight, is used exactly once).")
    max_epochs: float = Field(
        4.0, ge=1.0, description="Up-sampling repeats a source's documents at most this many times; a target "
        "beyond that is reported as a shortfall, not met by repeating more.")
    rehydrate: dict[int, int] | Literal["fineweb2"] | None = Field(
        None, description=f"Repeat each document by the size of its near-duplicate cluster (`{CLUSTER_SIZE}`, "
        "from `minhash_dedup` with `cluster_size: true`) before the mixture samples: smallest cluster size -> "
        "repeats, or `fineweb2` for FineWeb-2's weights (1: 1, 2: 2, 3: 3, 5: 5, 100: 8, 1000: 1). Documents "
        "without the column count once; `max_epochs` bounds the mixture's repeats on top of these.")

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

    @model_validator(mode="after")
    def _rehydration(self) -> MixtureParams:
        given = self.rehydrate if isinstance(self.rehydrate, dict) else {}
        if any(size < 1 for size in given) or any(n < 1 for n in given.values()):
            msg = "`rehydrate` maps cluster sizes (>= 1) to repeats (>= 1)"
            raise ValueError(msg)
        return self

    def sources(self) -> dict[str, float]:
        return dict(self.weights if self.weights is not None else self.tokens)

    def repeats(self, cluster_sizes: np.ndarray | None) -> np.ndarray | None:
        """Each document's rehydration repeats from its cluster size (None: no rehydration, or no sizes)."""
        if self.rehydrate is None or cluster_sizes is None:
            return None
        weights = FINEWEB2_REHYDRATION if self.rehydrate == "fineweb2" else self.rehydrate
        limits = np.array(sorted(weights), dtype=np.int64)
        repeats = np.array([1, *(weights[k] for k in limits.tolist())], dtype=np.int64)
        # sizes below the smallest limit (or missing: 0) count once
        sizes = np.nan_to_num(np.asarray(cluster_sizes, dtype=np.float64), nan=0).astype(np.int64)
        return repeats[np.searchsorted(limits, sizes, side="right")]


@dataclass
class SourcePlan:
    """One source's part of the mixture: what it has, what it should give, and how it is sampled."""

    available_tokens: int  # curated tokens (EOS included) in the train split, rehydrated
    target_tokens: int
    rate: float  # copies per available token, capped at max_epochs
    threshold: float = 0.0  # documents whose hash is below it get one copy more than floor(rate)
    planned_tokens: int = 0  # what the threshold selects (the packer's count is the achieved figure)
    # Tokens of the documents around the threshold (its histogram bin): taken whole, they bound how close
    # the tokens taken can come to the target.
    granularity_tokens: int = 0

    @property
    def shortfall_tokens(self) -> int:
        """The plan's shortfall (the manifest's is the achieved one, see `report`)."""
        return max(0, self.target_tokens - self.planned_tokens)

    @property
    def capped(self) -> bool:
        """Whether `max_epochs` (or having no tokens) keeps the rate below what the target needs."""
        return self.target_tokens > self.rate * self.available_tokens * (1 + 1e-12)

    def copies(self, u: np.ndarray, repeats: np.ndarray | None = None) -> np.ndarray:
        """Copies of each document, given its hash in [0, 1) and its rehydration `repeats`."""
        copies = (math.floor(self.rate) + (u < self.threshold)).astype(np.int64)
        return copies if repeats is None else copies * repeats

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shortfall_tokens": self.shortfall_tokens}


def histogram(u: np.ndarray, tokens: np.ndarray, repeats: np.ndarray | None = None) -> np.ndarray:
    """Tokens per hash bin (each document's `repeats` times): what the tokenizing workers report so that the
    plan needs no document list."""
    bins = np.minimum((u * HISTOGRAM_BINS).astype(np.int64), HISTOGRAM_BINS - 1)
    weights = tokens if repeats is None else np.asarray(tokens, dtype=np.int64) * repeats
    return np.bincount(bins, weights=weights, minlength=HISTOGRAM_BINS).astype(np.int64)


def _threshold(hist: np.ndarray, wanted: float) -> tuple[float, int, int]:
    """The hash threshold below which documents hold about `wanted` tokens, that estimate, and the tokens
    of the bin where the cumulative count crosses `wanted`. With many documents per bin the threshold is
    interpolated linearly inside it (hashes are uniform within a bin), so the error is a fraction of one
    bin's tokens; with about one (a sparse histogram) it is the bin's start or end, whichever is nearer, and the
    estimate exact."""
    cumulative = np.concatenate([[0], np.cumsum(hist)])
    if wanted <= 0:
        return 0.0, 0, 0
    if wanted >= cumulative[-1]:
        return 1.0 + 1e-9, int(cumulative[-1]), 0
    i = int(np.searchsorted(cumulative, wanted, side="right")) - 1  # cumulative[i] <= wanted < cumulative[i+1]
    if cumulative[i] == wanted:
        return i / HISTOGRAM_BINS, int(wanted), 0
    if np.count_nonzero(hist) <= SPARSE_BINS * HISTOGRAM_BINS:
        # i / BINS is exact in binary, as is u * BINS: hashes below it are exactly bins 0..i-1
        end = i + 1 if cumulative[i + 1] - wanted <= wanted - cumulative[i] else i
        return end / HISTOGRAM_BINS, int(cumulative[end]), int(hist[i])
    inside = (wanted - cumulative[i]) / hist[i]
    return (i + inside) / HISTOGRAM_BINS, round(wanted), int(hist[i])


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
        threshold, part, granularity = _threshold(hist, (rate - full) * a)
        plans[source] = SourcePlan(a, t, rate, threshold, full * a + part, granularity)
    return plans


def shares(tokens: dict[str, int] | dict[str, float]) -> dict[str, float]:
    total = sum(tokens.values())
    return {s: (n / total if total else 0.0) for s, n in tokens.items()}


def report(plans: dict[str, SourcePlan], achieved: dict[str, int]) -> dict[str, dict[str, Any]]:
    """The manifest's mixture: per source its plan, the train tokens packing took (`achieved`), the shares
    of both, the `epochs` achieved (achieved tokens per available one), the real `shortfall_tokens` and
    `excess_tokens` (achieved against target) and, where the source is off its target by more than
    `MISS_TOLERANCE`, `miss_cause`."""
    achieved = {s: achieved.get(s, 0) for s in plans}
    target_share, achieved_share = shares({s: p.target_tokens for s, p in plans.items()}), shares(achieved)
    out = {}
    for source, p in plans.items():
        got = achieved[source]
        out[source] = {
            **p.as_dict(), "achieved_tokens": got, "target_share": round(target_share[source], 6),
            # epochs achieved: the sampling `rate` is what was planned, before whole documents were taken
            "achieved_share": round(achieved_share[source], 6),
            "epochs": round(got / p.available_tokens, 6) if p.available_tokens else 0.0,
            "shortfall_tokens": max(0, p.target_tokens - got), "excess_tokens": max(0, got - p.target_tokens),
            "miss_cause": _miss_cause(p, got),
        }
    return out


def _miss_cause(p: SourcePlan, achieved: int) -> str | None:
    if abs(achieved - p.target_tokens) <= MISS_TOLERANCE * p.target_tokens:
        return None
    if p.available_tokens == 0:
        return "no_documents"
    if achieved < p.target_tokens and p.capped:
        return "max_epochs"
    return "document_granularity"


def warnings(mixture: dict[str, dict[str, Any]]) -> list[str]:
    """One line per source of a mixture `report` that missed its target, saying by how much and why."""
    lines = []
    for source, m in sorted(mixture.items()):
        cause = m.get("miss_cause")
        if cause is None:
            continue
        target, got = m["target_tokens"], m["achieved_tokens"]
        off = f"short by {m['shortfall_tokens']:,}" if got < target else f"over by {m['excess_tokens']:,}"
        head = (f"mixture {source}: {got:,} tokens ({100 * m['achieved_share']:.1f}%) for a target of {target:,} "
                f"({100 * m['target_share']:.1f}%), {off} tokens ({abs(got - target) / target:.1%} of the target): ")
        if cause == "no_documents":
            why = "no document of it reached the train split"
        elif cause == "max_epochs":
            why = (f"its {m['available_tokens']:,} tokens repeated {m['rate']:g} times at most (`max_epochs`)")
        else:
            why = (f"whole documents are taken, and those at its sampling threshold hold "
                   f"{m['granularity_tokens']:,} tokens ({m['granularity_tokens'] / target:.0%} of the target): "
                   "more, smaller documents or a larger target would come closer")
        lines.append(head + why)
    return lines
