"""The stage contract: a small class over an Arrow batch that knows nothing of Ray.

A stage declares its recipe keys (a pydantic `Params` model), its resources, and the columns it
reads and adds. `process` gets the rows it should handle and returns them (transformed, with its
output columns) plus a reason per row: null keeps the row, a string drops it. Its per-worker state
(a model, a word list) is loaded by `setup`, once, through `ready`; what `__init__` builds from the
params is all a stage carries to a worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from curation.lang.mixed import PARAGRAPHS, carried
from curation.stages.details import deciding_details


class StageParams(BaseModel):
    """Keys every stage accepts besides its own."""

    model_config = ConfigDict(extra="forbid")

    only: list[str] | None = Field(
        None, min_length=1, description="Apply the stage to documents of these sources only (one at least: leave "
        "`only` out for all of them); others pass unchanged."
    )

    def file_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """(key path, message) for what the files the keys name hold that the stage cannot use, once they exist:
        checked before work, as their existence is (`curation.recipe.inputs.path_checks`)."""
        return []


@dataclass(frozen=True)
class ReadsFile:
    """Marks a stage key whose value (or each of whose values) names a file the stage reads, or with `folders` a
    file or folder: `curate validate` and `curate run` check it exists before any work starts
    (`curation.recipe.inputs.path_checks`). `what` names it in the error: `no {what} at '...'`.
    Written `Annotated[str | None, ReadsFile("model file")]` or `Annotated[list[str], ReadsFile(...)]`."""

    what: str
    folders: bool = False


def named_files(params: BaseModel) -> Iterator[tuple[tuple[str | int, ...], str, ReadsFile]]:
    """(key path, value, mark) for every file a stage's `ReadsFile` keys name."""
    for name, field in type(params).model_fields.items():
        mark = next((m for m in field.metadata if isinstance(m, ReadsFile)), None)
        value = getattr(params, name)
        if mark is None or value is None:
            continue
        if isinstance(value, str):
            yield (name,), value, mark
        else:
            yield from (((name, j), path, mark) for j, path in enumerate(value))


@dataclass(frozen=True)
class Resources:
    """What the executor must give a stage; the executor never looks at what the stage does. A stage does not
    choose its batches: `curation.apply.run_shard` sizes them, one shard at a time."""

    cpus: float = 1.0


@dataclass
class Processed:
    table: pa.Table
    reasons: pa.Array  # string per row; null keeps the row
    details: pa.Array | None = None
    counts: dict[str, np.ndarray] | None = None  # per-row tallies (e.g. redactions), keys in `count_keys`
    scores: dict[str, np.ndarray] | None = None  # per row, the scores a filter decided by (`curation.explore.explain`)


class Configured:
    """Something built from its recipe keys: `Params` validates them, `from_params` takes them validated."""

    name: ClassVar[str]
    Params: ClassVar[type[StageParams]] = StageParams

    def __init__(self, params: StageParams | None = None, /, **keys: Any) -> None:
        """`Kind(key=value, ...)` validates recipe keys; `Kind(params)` takes them validated (`from_params`)."""
        if params is not None and keys:
            msg = f"{type(self).__name__}: give validated params or recipe keys, not both"
            raise TypeError(msg)
        self.params = params if params is not None else self.Params(**keys)

    @classmethod
    def from_params(cls, params: StageParams) -> Self:
        return cls(params)


class Stage(Configured):
    resources: ClassVar[Resources] = Resources()
    input_columns: ClassVar[tuple[str, ...]] = ("text",)
    output_columns: ClassVar[dict[str, pa.DataType]] = {}
    count_keys: ClassVar[tuple[str, ...]] = ()  # tallies summed into stats.json under the stage's `counts`
    # Why the rows `applies` leaves out go by unjudged: their count in stats.json's `bypassed`.
    bypass_reason: ClassVar[str] = "not_applicable"

    def __init__(self, params: StageParams | None = None, /, **keys: Any) -> None:
        super().__init__(params, **keys)
        self._set_up = False

    def __reduce__(self) -> tuple[type[Self], tuple[StageParams]]:
        """A stage travels to a worker as its params: the worker builds it anew and sets it up itself, so a
        model, word list or cache is never shipped."""
        return type(self), (self.params,)

    def added(self) -> dict[str, pa.DataType]:
        """The columns this stage gives every batch (null where it computed none): its `output_columns`."""
        return self.output_columns

    def setup(self) -> None:
        """Load per-worker state (models, word lists, caches); run once, by `ready`."""

    def ready(self) -> Self:
        """This stage, set up: `setup` runs on the first call only. The one way a stage is set up: the workers
        through `curation.stages.build.set_up`, `run_stage`, and code that uses a stage directly."""
        if not self._set_up:
            self.setup()
            self._set_up = True
        return self

    def applies(self, batch: pa.Table) -> pa.ChunkedArray | None:
        """Which rows this stage judges (None: all); the others pass by unchanged, counted in stats.json
        under `bypassed` with `bypass_reason` (and not in `docs_in`)."""
        return None

    def process(self, batch: pa.Table) -> Processed:
        raise NotImplementedError


class DocumentFilter(Stage):
    """A filter scores documents (columns of numbers) and keeps or drops each with a reason.

    A filter says how to score a batch (`score`) and which rows to keep (`keep`); `process` does the rest.
    Scores named with a leading `_` serve the decision only and never become columns; the one named
    `_<key>` for each of `count_keys` is that tally. Hooks: `scores_and_text` for a filter that also
    rewrites the documents it keeps (C4 removes lines), `added_columns` for one whose columns are not simply its
    scores.
    """

    class Params(StageParams):
        keep_scores: bool = Field(False, description="Keep this filter's scores as columns of the output.")

    # The detail of a drop whose reason no score is named after (`curation.stages.details`): a text, or the keys of
    # the score and the parameter that give it.
    explained: ClassVar[dict[str, str | tuple[str, ...]]] = {}

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """A boolean keep mask and, per row, the reason of a drop (None where kept)."""
        raise NotImplementedError

    def scores_and_text(self, batch: pa.Table) -> tuple[dict[str, np.ndarray], pa.Array | None]:
        """The scores and, for a filter that rewrites documents, the new text of every row (None: unchanged)."""
        return self.score(batch), None

    def process(self, batch: pa.Table) -> Processed:
        scores, text = self.scores_and_text(batch)
        return self.judged(batch, scores, *self.keep(scores), text=text)

    def added(self) -> dict[str, pa.DataType]:
        """Its scores' columns with `keep_scores` only: without, each was a column of nulls in every document and
        reject written (40 of them in a Chinese-English job's)."""
        return self.output_columns if self.params.keep_scores else {}

    def added_columns(self, batch: pa.Table, scores: dict[str, np.ndarray]) -> dict[str, pa.Array]:
        """The columns this filter adds to `batch`: its public scores, with `keep_scores`."""
        if not self.params.keep_scores:
            return {}
        types = self.output_columns
        return {column: pa.array(values, type=types[column])
                for column, values in scores.items() if not column.startswith("_")}

    def judged(self, batch: pa.Table, scores: dict[str, np.ndarray], mask: np.ndarray, reasons: np.ndarray, *,
               text: pa.Array | None = None, details: pa.Array | None = None) -> Processed:
        """The batch judged: this filter's `added_columns`, then `text`, if given, replacing the text of the kept
        rows (dropped rows keep their original text for `rejects/`; `with_text`); a reason per dropped row,
        `details`, and the `count_keys` tallies."""
        table = batch
        for column, values in self.added_columns(batch, scores).items():
            table = table.append_column(column, values)
        if text is not None:  # after the columns: those of the text read (langid's paragraphs) move onto the new one
            original = batch.column("text").combine_chunks().cast(pa.string())
            table = with_text(table, pc.if_else(pa.array(mask, pa.bool_()), text.cast(pa.string()), original))
        counts = {key: scores[f"_{key}"] for key in self.count_keys if f"_{key}" in scores}
        if details is None and not mask.all():
            details = deciding_details(np.asarray(reasons, dtype=object), mask, scores, self.params.model_dump(),
                                       self.explained)
        return Processed(table, pa.array(np.where(mask, None, reasons), type=pa.string()), details, counts or None,
                         scores)


def with_text(table: pa.Table, text: pa.Array) -> pa.Table:
    """`table` with `text` as its text column, the one way a stage rewrites documents: where langid labelled their
    paragraphs (`lang_paragraphs`, offsets into the text), the labels are moved onto the new text
    (`curation.lang.mixed.carried`)."""
    if PARAGRAPHS in table.column_names:
        old, spans = table.column("text").combine_chunks(), table.column(PARAGRAPHS).combine_chunks()
        changed = pc.fill_null(pc.not_equal(old, text.cast(old.type)), False).to_numpy(zero_copy_only=False)
        if changed.any():
            moved = spans.to_pylist()
            for i in np.flatnonzero(changed).tolist():
                moved[i] = carried(moved[i] or [], old[i].as_py() or "", text[i].as_py() or "")
            table = table.set_column(table.schema.get_field_index(PARAGRAPHS), PARAGRAPHS,
                                     pa.array(moved, spans.type))
    return table.set_column(table.schema.get_field_index("text"), "text", text)


def first_reason(n: int, rules: list[tuple[np.ndarray, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Combine rules (bad-row mask, reason) in order: each dropped row reports the first rule it broke."""
    reasons = np.full(n, None, dtype=object)
    for bad, reason in reversed(rules):
        reasons[bad] = reason
    mask = np.array([r is None for r in reasons], dtype=bool)
    return mask, reasons


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator as float64, NaN where the denominator is 0 (NaN fails no bound)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.full(len(numerator), np.nan)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out
