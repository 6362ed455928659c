"""The result table: per variant, evaluation set and metric, the mean over seeds, their spread, and the
difference from the baseline with whether it exceeds the seeds' spread.

`spread` is the standard deviation over seeds (n - 1 in the denominator; none with one seed). A difference
`exceeds` when it is larger than `factor` times the pooled spread of the two variants,
sqrt((s_variant^2 + s_baseline^2) / 2): two seeds' worth of noise does not make a finding. `better` says
whether it goes the right way (lower loss and bits per byte, higher accuracy).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

METRICS = {"loss": "lower", "bits_per_byte": "lower", "accuracy": "higher", "accuracy_norm": "higher"}


@dataclass
class Row:
    variant: str
    set: str
    metric: str
    seeds: int
    mean: float
    spread: float | None
    values: list[float]  # per seed, in seed order
    difference: float | None  # mean - baseline's mean (None for the baseline itself)
    exceeds: bool | None  # |difference| > factor x pooled spread (None: one seed, or the baseline)
    better: bool | None  # exceeds, in the metric's good direction

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def spread(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def table(finals: dict[str, dict[int, dict[str, dict[str, Any]]]], baseline: str, factor: float) -> list[Row]:
    """Rows from each run's final scores: `finals[variant][seed][set]` = that set's scores. Variants in the
    given order (the baseline first), sets and metrics in the order the scores name them."""
    rows: list[Row] = []
    means: dict[tuple[str, str], tuple[float, float | None]] = {}
    order = [baseline, *[v for v in finals if v != baseline]]
    for variant in order:
        seeds = sorted(finals[variant])
        first = finals[variant][seeds[0]]
        for set_name, scores in first.items():
            for metric in (m for m in scores if m in METRICS):
                values = [float(finals[variant][s][set_name][metric]) for s in seeds]
                mean, sd = statistics.fmean(values), spread(values)
                if variant == baseline:
                    means[set_name, metric] = (mean, sd)
                    difference = exceeds = better = None
                else:
                    base_mean, base_sd = means.get((set_name, metric), (math.nan, None))
                    difference = mean - base_mean
                    exceeds = None
                    if sd is not None and base_sd is not None:
                        exceeds = abs(difference) > factor * math.sqrt((sd**2 + base_sd**2) / 2)
                    lower = METRICS[metric] == "lower"
                    better = None if exceeds is None else exceeds and ((difference < 0) == lower)
                rows.append(Row(variant, set_name, metric, len(seeds), mean, sd, values, difference, exceeds, better))
    return rows
