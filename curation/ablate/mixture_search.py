"""Mixture search (RegMix, Liu et al. 2024): many tiny proxies trained on random mixture weights, a regression
of their evaluation loss on the weights, and the weights it predicts best, verified at the larger proxy size.

1. Proxies: `proxies` mixtures of the sources of one variant's documents: the natural and the uniform
   mixture (`anchors`), the others drawn from a Dirichlet around their natural token shares, alpha =
   concentration x sources x natural share (1: as spread as a flat Dirichlet over the sources; larger:
   closer to the natural shares). Each is packed (its own packing job, the
   variant's curation shared) and trained with the `proxy` budget, a smaller one than the ablation's, on a
   seed of its own (proxies sharing one seed let the fit learn that seed's noise: a proposal that won on
   the proxies' seed lost on the two others; `benchmarks/ablate.py`).
2. Regression: each proxy's score (an evaluation set's loss or bits per byte, mean over its seeds) on the
   token shares packing really took (a share a source could not reach within `max_epochs` shows as what it
   got). `quadratic` (the default): ridge regression on the shares and their pairwise products, the ridge
   penalty chosen by leave-one-out, a smooth bowl a few dozen proxies pin down and whose minimum may lie
   inside the simplex (a linear fit's always lies on a corner). `boosting`: scikit-learn's gradient boosted
   trees, the family RegMix used (LightGBM), which needs many more proxies than this machine trains. The
   fit's leave-one-out predictions rank the proxies (Spearman's rho): a low rho says the search has too few
   proxies, or proxies too small, to tell mixtures apart.
3. Proposal: the mean of the `top` best of `candidates` mixtures drawn from the same Dirichlet, as scored by
   the fit (RegMix averages its top 100), among those inside the convex hull of the proxies' shares: the fit
   interpolates between trained proxies and is not trusted beyond them. (Without that bound, a fit of 16
   proxies over four real sources proposed 0.9 of a source no proxy had given more than 0.5, and lost to
   the uniform mixture; `benchmarks/ablate.py`.) The fit's predicted gain over the better of the natural and
   the uniform mixture is set against its leave-one-out error (`fit_verdict`): where it is smaller, the fit
   cannot tell the proposal from that mixture, and the user is told so before the verification.
4. Verification: the proposal, the natural and the uniform mixture trained with the ablation's own
   `training` and seeds, beside its variants (`mixture-proposed`, `mixture-natural`, `mixture-uniform`).

Everything is seeded: the same ablation gives the same proxies, fit and proposal.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from curation.ablate.results import PROXY_PREFIX
from curation.ablate.training_config import Training
from curation.recipe import Recipe, parse_recipe
from curation.train.config import ModelSection
from curation.train.optim import OptimConfig
from curation.yaml_model import NAME_PATTERN

PROPOSED, NATURAL, UNIFORM = "mixture-proposed", "mixture-natural", "mixture-uniform"
VERIFIED = (PROPOSED, NATURAL, UNIFORM)
SHARE_DIGITS = 4  # mixture weights as written into packing jobs and recipes


class ProxyTraining(BaseModel):
    """The proxies' budget: the ablation's `training` with these keys replaced."""

    model_config = ConfigDict(extra="forbid")

    model: ModelSection | None = Field(None, description="A smaller decoder (default: the ablation's).")
    optim: OptimConfig | None = Field(None, description="Default: the ablation's.")
    tokens: int | None = Field(None, gt=0, description="Tokens each proxy trains on (default: a quarter of the "
                               "ablation's).")
    batch_size: int | None = Field(None, gt=0, description="Rows per optimizer step (default: the ablation's).")
    seeds: list[int] | None = Field(None, min_length=1, description="Seeds every proxy trains with. Default: one "
                                    "seed per proxy, the ablation's first plus the proxy's number: proxies that "
                                    "share a seed let the fit learn that seed's noise, which the verification's "
                                    "other seeds do not have.")
    eval_every: int | None = Field(None, gt=0, description="Evaluate every N steps (default: only at the end).")

    def apply(self, training: Training) -> Training:
        given = {key: getattr(self, key) for key in self.model_fields_set if getattr(self, key) is not None}
        defaults = {"tokens": max(1, training.tokens // 4), "seeds": training.seeds[:1], "eval_every": None}
        return training.model_copy(update={**defaults, **given})


class MixtureSearch(BaseModel):
    """`mixture_search:` of an ablation file."""

    model_config = ConfigDict(extra="forbid")

    variant: str = Field("base", pattern=NAME_PATTERN, description="The variant whose documents are mixed (its "
                         "curation, its sources; its mixture replaced by each proxy's).")
    proxies: int = Field(16, ge=4, le=4096, description="Proxy mixtures trained (RegMix: 512 at 1M parameters).")
    concentration: float = Field(1.0, gt=0, description="Dirichlet concentration around the natural shares, per "
                                 "source: 1 spreads as a flat Dirichlet, more stays closer to the natural shares.")
    anchors: bool = Field(True, description="The first two proxies are the natural and the uniform mixture (the "
                          "rest drawn): the fit learns from the two mixtures the proposal is verified against, and "
                          "the proxies' hull, where the proposal is searched, holds both.")
    max_epochs: float = Field(4.0, ge=1.0, description="A source is repeated at most this many times to reach its "
                              "share of a run's tokens (each mixture packs the tokens its run trains on).")
    proxy: ProxyTraining = Field(default_factory=ProxyTraining, description="The proxies' budget.")
    set: str | None = Field(None, pattern=NAME_PATTERN, description="The held-out text set whose score is minimised "
                            "(default: the first text set).")
    metric: Literal["loss", "bits_per_byte"] = Field("loss", description="The score minimised.")
    regression: Literal["quadratic", "boosting"] = Field("quadratic", description="quadratic: ridge on shares "
                                                         "and their products; boosting: gradient boosted trees.")
    candidates: int = Field(100_000, ge=100, le=10_000_000, description="Mixtures scored by the fit.")
    top: int = Field(100, ge=1, description="The proposal is the mean of this many best-scored candidates.")
    seed: int = Field(0, description="Seed of the proxies' and the candidates' mixtures.")
    verify: bool = Field(True, description="Train the proposal, natural and uniform mixtures with the ablation's "
                         "training and seeds.")

    @model_validator(mode="after")
    def _top(self) -> MixtureSearch:
        if self.top > self.candidates:
            msg = f"top ({self.top}) must not exceed candidates ({self.candidates})"
            raise ValueError(msg)
        return self

    def proxy_names(self) -> list[str]:
        width = len(str(self.proxies - 1))
        return [f"{PROXY_PREFIX}{i:0{width}d}" for i in range(self.proxies)]

    def proxy_seeds(self, training: Training) -> dict[str, list[int]]:
        """The seeds each proxy trains with (`training`: the ablation's)."""
        if self.proxy.seeds is not None:
            return {name: list(self.proxy.seeds) for name in self.proxy_names()}
        return {name: [training.seeds[0] + i] for i, name in enumerate(self.proxy_names())}


def natural_shares(manifest: dict[str, Any]) -> dict[str, float]:
    """Each source's share of the curated train-split tokens a packed job's manifest counts (sources with none
    left out): what every source would give unmixed."""
    available = {s: int(m["available_tokens"]) for s, m in manifest["mixture"].items()}
    total = sum(available.values())
    return {s: n / total for s, n in sorted(available.items()) if n > 0}


def realised_shares(manifest: dict[str, Any], sources: list[str]) -> list[float]:
    """The token shares packing took, in `sources` order."""
    tokens = manifest["splits"]["train"]["tokens_per_source"]
    total = sum(tokens.get(s, 0) for s in sources)
    return [tokens.get(s, 0) / total if total else 0.0 for s in sources]


def dirichlet(natural: dict[str, float], n: int, concentration: float, rng: np.random.Generator) -> np.ndarray:
    """`n` mixtures (rows, in `natural`'s order) from the Dirichlet around the natural shares."""
    shares = np.array(list(natural.values()), dtype=np.float64)
    alpha = np.maximum(concentration * len(shares) * shares, 1e-3)  # a tiny source still gets drawn now and then
    return rng.dirichlet(alpha, size=n)


def rounded(row: np.ndarray | list[float], sources: list[str]) -> dict[str, float]:
    """Weights by source, rounded (as packing jobs and recipes get them)."""
    values = np.asarray(row, dtype=np.float64)
    values = values / values.sum()
    return {s: round(float(w), SHARE_DIGITS) for s, w in zip(sources, values, strict=True)}


def proxy_mixtures(search: MixtureSearch, natural: dict[str, float]) -> dict[str, dict[str, float]]:
    """Each proxy's weights, by proxy name (seeded: the same on every run)."""
    rows = dirichlet(natural, search.proxies, search.concentration, np.random.default_rng(search.seed))
    if search.anchors:
        rows[:2] = [list(natural.values()), np.full(len(natural), 1 / len(natural))]
    return {name: rounded(row, list(natural)) for name, row in zip(search.proxy_names(), rows, strict=True)}


def mixture(recipe: Recipe, weights: dict[str, float], total_tokens: int, max_epochs: float) -> dict[str, Any]:
    """The recipe's `mixture:` with `weights` over the `total_tokens` a run trains on (its other settings, such
    as `rehydrate`, kept); of the recipe's sources (each must be named), those without a weight get 0."""
    kept = recipe.mixture.model_dump(mode="json", exclude={"weights", "tokens"}) if recipe.mixture else {}
    return {**kept, "weights": {s.name: weights.get(s.name, 0.0) for s in recipe.sources},
            "total_tokens": total_tokens, "max_epochs": max_epochs}


@dataclass
class Fit:
    """The regression of the proxies' scores on their shares, and how well it ranks unseen proxies."""

    kind: str
    model: Any  # a fitted scikit-learn estimator
    proxies: int
    loo_spearman: float | None  # rank correlation of leave-one-out predictions with the scores
    loo_mae: float  # their mean absolute error
    penalty: float | None  # the ridge penalty chosen (quadratic)

    def predict(self, shares: np.ndarray) -> np.ndarray:
        return self.model.predict(np.atleast_2d(shares))

    def about(self) -> dict[str, Any]:
        return {"kind": self.kind, "proxies": self.proxies, "loo_spearman": self.loo_spearman,
                "loo_mae": self.loo_mae, "penalty": self.penalty}


def _estimator(kind: str, seed: int) -> Any:
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    if kind == "quadratic":
        return make_pipeline(PolynomialFeatures(2, include_bias=False), RidgeCV(alphas=np.logspace(-6, 3, 28)))
    return GradientBoostingRegressor(n_estimators=100, learning_rate=0.1, max_depth=2, min_samples_leaf=2,
                                     random_state=seed)


def fit(shares: np.ndarray, scores: np.ndarray, kind: str, seed: int = 0) -> Fit:
    """Fit `kind` on the proxies (rows of `shares`, their `scores`), with its leave-one-out predictions."""
    from scipy.stats import spearmanr
    from sklearn.model_selection import LeaveOneOut, cross_val_predict

    held_out = cross_val_predict(_estimator(kind, seed), shares, scores, cv=LeaveOneOut())
    rho = float(spearmanr(held_out, scores).statistic) if np.ptp(held_out) > 0 and np.ptp(scores) > 0 else None
    model = _estimator(kind, seed).fit(shares, scores)
    penalty = float(model[-1].alpha_) if kind == "quadratic" else None
    return Fit(kind, model, len(scores), None if rho is None or math.isnan(rho) else rho,
               float(np.mean(np.abs(held_out - scores))), penalty)


@dataclass
class Proposal:
    weights: dict[str, float]
    predicted: dict[str, float]  # the fit's score of the proposal, the natural and the uniform mixture
    candidates: int  # those inside the proxies' hull, of which the best `top` were averaged

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def inside_hull(points: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Which rows of `points` lie in the convex hull of the rows of `corners` (shares: each row's last one
    follows from the others). All of them where the corners span no hull (too few, or flat)."""
    from scipy.spatial import Delaunay, QhullError

    if corners.shape[1] == 2:  # a segment
        low, high = corners[:, 0].min(), corners[:, 0].max()
        return (points[:, 0] >= low) & (points[:, 0] <= high)
    try:
        return Delaunay(corners[:, :-1]).find_simplex(points[:, :-1]) >= 0
    except (QhullError, ValueError):
        return np.ones(len(points), dtype=bool)


def propose(model: Fit, search: MixtureSearch, natural: dict[str, float], proxies: np.ndarray) -> Proposal:
    """The mean of the `top` candidates the fit scores best, of those inside the hull of the `proxies`' shares."""
    sources = list(natural)
    candidates = dirichlet(natural, search.candidates, search.concentration,
                           np.random.default_rng([search.seed, 1]))
    kept = inside_hull(candidates, proxies)
    if kept.any():
        candidates = candidates[kept]
    scores = model.predict(candidates)
    best = candidates[np.argsort(scores, kind="stable")[:search.top]].mean(axis=0)
    weights = rounded(best, sources)
    uniform = np.full(len(sources), 1 / len(sources))
    at = {PROPOSED: list(weights.values()), NATURAL: list(natural.values()), UNIFORM: uniform}
    return Proposal(weights, {name: float(model.predict(np.array(w))[0]) for name, w in at.items()},
                    len(candidates))


def fit_verdict(predicted: dict[str, float], loo_mae: float) -> str:
    """Whether the fit itself tells the proposal from the better of the natural and the uniform mixture (by its
    `predicted` scores): a predicted difference within the fit's leave-one-out error is within what it gets wrong
    on a proxy it did not see, so only the verification can say which is better (on the benchmark's real sources
    it found the proposal lower on every seed where the fit could not tell; `benchmarks/ablate.py`)."""
    best = min((NATURAL, UNIFORM), key=predicted.__getitem__)
    gain = predicted[best] - predicted[PROPOSED]
    said = (f"the fit predicts the proposal {abs(gain):.4f} {'below' if gain >= 0 else 'above'} the "
            f"{best.removeprefix('mixture-')} mixture")
    if gain > loo_mae:
        return f"{said}, more than its leave-one-out error ({loo_mae:.4f})"
    return (f"{said}, within its leave-one-out error ({loo_mae:.4f}): the fit does not tell the two apart, the "
            "verification will (more proxies, larger ones or more seeds per proxy would sharpen the fit)")


def verification(finals: dict[str, list[float]], factor: float) -> dict[str, Any]:
    """The three verified mixtures' measured scores (per seed, by mixture name, in the same seeds' order): mean,
    spread, the proposal's difference from each other, whether it exceeds `factor` pooled seed spreads and on how
    many seeds the proposal scored lower; and whether the proposal scores at most what the natural and the
    uniform mixture score."""
    out: dict[str, Any] = {}
    for name, values in finals.items():
        spread = statistics.stdev(values) if len(values) > 1 else None
        out[name] = {"values": values, "mean": statistics.fmean(values), "spread": spread}
    mine = out[PROPOSED]
    for name in (NATURAL, UNIFORM):
        other = out[name]
        other["proposed_minus"] = mine["mean"] - other["mean"]
        other["exceeds"] = None if mine["spread"] is None or other["spread"] is None else (
            abs(other["proposed_minus"]) > factor * math.sqrt((mine["spread"] ** 2 + other["spread"] ** 2) / 2))
        other["proposed_lower_on"] = sum(m < o for m, o in zip(mine["values"], other["values"], strict=True))
    return {"mixtures": out, "proposal_at_most_others": all(mine["mean"] <= out[n]["mean"] for n in (NATURAL, UNIFORM))}


def recipe_with_mixture(recipe: Recipe, weights: dict[str, float], header: str) -> str:
    """The recipe as YAML (keys left at their defaults omitted, but every stage's settings written out) with
    `weights` as its mixture's, checked to parse; `header` becomes its first comment lines."""
    body = recipe.model_dump(mode="json", exclude_defaults=True)
    body["stages"] = [entry.model_dump(mode="json") for entry in recipe.stages]
    kept = recipe.mixture.model_dump(mode="json", exclude_defaults=True, exclude={"weights", "tokens"}) if (
        recipe.mixture) else {}
    body["mixture"] = {"weights": weights, **kept}
    text = "".join(f"# {line}\n" for line in header.splitlines()) + yaml.safe_dump(body, sort_keys=False)
    parse_recipe(text, "<proposed recipe>", check_paths=False)
    return text
