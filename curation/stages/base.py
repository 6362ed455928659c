"""The stage contract: a small class over an Arrow batch that knows nothing of Ray.

A stage declares its recipe keys (a pydantic `Params` model), its resources, and the columns it
reads and adds. `process` gets the rows it should handle and returns them (transformed, with its
output columns) plus a reason per row: null keeps the row, a string drops it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field


class StageParams(BaseModel):
    """Keys every stage accepts besides its own."""

    model_config = ConfigDict(extra="forbid")

    only: list[str] | None = Field(
        None, description="Apply the stage to documents of these sources only; others pass unchanged."
    )


@dataclass(frozen=True)
class Resources:
    """What the executor must give a stage; the executor never looks at what the stage does.

    Batches are the blocks the readers stream (about 8 MB each), not a per-stage row count: asking
    Ray Data for a row count makes it bundle blocks of different shards into one task.
    """

    cpus: float = 1.0


@dataclass
class Processed:
    table: pa.Table
    reasons: pa.Array  # string per row; null keeps the row
    details: pa.Array | None = None
    counts: dict[str, np.ndarray] | None = None  # per-row tallies (e.g. redactions), keys in `count_keys`


class Configured:
    """Something built from its recipe keys: `Params` validates them, `from_params` takes them validated."""

    name: ClassVar[str]
    Params: ClassVar[type[StageParams]] = StageParams

    def __init__(self, **params: Any) -> None:
        self.params = self.Params(**params)

    @classmethod
    def from_params(cls, params: StageParams) -> Self:
        made = cls.__new__(cls)
        made.params = params
        return made


class Stage(Configured):
    resources: ClassVar[Resources] = Resources()
    input_columns: ClassVar[tuple[str, ...]] = ("text",)
    output_columns: ClassVar[dict[str, pa.DataType]] = {}
    count_keys: ClassVar[tuple[str, ...]] = ()  # tallies summed into stats.json under the stage's `counts`
    # Why the rows `applies` leaves out go by unjudged: their count in stats.json's `bypassed`.
    bypass_reason: ClassVar[str] = "not_applicable"

    def setup(self) -> None:
        """Load models or other state; called once per worker before the first batch."""

    def applies(self, batch: pa.Table) -> pa.ChunkedArray | None:
        """Which rows this stage judges (None: all); the others pass by unchanged, counted in stats.json
        under `bypassed` with `bypass_reason` (and not in `docs_in`)."""
        return None

    def process(self, batch: pa.Table) -> Processed:
        raise NotImplementedError


class DocumentFilter(Stage):
    """A filter scores documents (columns of numbers) and keeps or drops each with a reason."""

    class Params(StageParams):
        keep_scores: bool = Field(False, description="Keep this filter's scores as columns of the output.")

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """A boolean keep mask and, per row, the reason of a drop (None where kept)."""
        raise NotImplementedError

    def process(self, batch: pa.Table) -> Processed:
        scores = self.score(batch)
        mask, reasons = self.keep(scores)
        table = batch
        if self.params.keep_scores:
            for column, values in scores.items():
                table = table.append_column(column, pa.array(values, type=self.output_columns[column]))
        return Processed(table, pa.array(np.where(mask, None, reasons), type=pa.string()))


def first_reason(n: int, rules: list[tuple[np.ndarray, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Combine rules (bad-row mask, reason) in order: each dropped row reports the first rule it broke."""
    reasons = np.full(n, None, dtype=object)
    for bad, reason in reversed(rules):
        reasons[bad] = reason
    mask = np.array([r is None for r in reasons], dtype=bool)
    return mask, reasons
