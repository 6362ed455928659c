"""Corpus stages: decisions that need every document (deduplication), as engine-free steps.

A corpus stage works in two steps that an executor can spread over a cluster:
`keys(documents)` maps each batch of curated documents to a small table of `id`, `key` and
`score`; the executor brings all rows with the same key together (a shuffle by key) and
`removals(rows)` names the documents to remove, each with its survivor.
Decisions depend only on keys, scores and ids, never on the order rows arrive in, so any
number of workers and any shard order give the same survivors.
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.stages.base import StageParams

REMOVALS = pa.schema([("id", pa.string()), ("reason", pa.string()), ("detail", pa.string())])


class CorpusStage:
    name: ClassVar[str]
    Params: ClassVar[type[StageParams]] = StageParams
    input_columns: ClassVar[tuple[str, ...]] = ("id", "text")

    def __init__(self, **params: object) -> None:
        self.params = self.Params(**params)

    @classmethod
    def from_params(cls, params: StageParams) -> CorpusStage:
        stage = cls.__new__(cls)
        stage.params = params
        return stage

    def columns(self) -> list[str]:
        """Document columns the `keys` step reads."""
        score = getattr(self.params, "score_column", None)
        return [*self.input_columns, *([score] if score else [])]

    def keys(self, documents: pa.Table) -> pa.Table:
        raise NotImplementedError

    def removals(self, rows: pa.Table) -> pa.Table:
        """Documents to remove among `rows`, which hold every row of each key they contain."""
        raise NotImplementedError


def survivors_first(rows: pa.Table, reason: str) -> pa.Table:
    """Per key keep the highest score, then the smallest id; every other row is removed.

    `rows` may hold many keys (a whole shuffle partition): one sort, no per-group Python.
    """
    if rows.num_rows == 0:
        return REMOVALS.empty_table()
    score = pc.fill_null(rows.column("score").cast(pa.float64()), -np.inf)
    rows = rows.set_column(rows.schema.get_field_index("score"), "score", pc.negate(score))
    rows = rows.sort_by([("key", "ascending"), ("score", "ascending"), ("id", "ascending")])
    keys = rows.column("key").to_numpy(zero_copy_only=False)
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    survivor = np.asarray(rows.column("id").to_pylist(), dtype=object)[np.maximum.accumulate(
        np.where(first, np.arange(len(keys)), 0))]
    removed = ~first
    return pa.table(
        {"id": rows.column("id").filter(pa.array(removed)),
         "reason": pa.array([reason] * int(removed.sum()), pa.string()),
         "detail": pa.array([f"kept {k}" for k in survivor[removed]], pa.string())},
        schema=REMOVALS,
    )


class ExactDedupParams(StageParams):
    normalize: bool = Field(
        True, description="Hash text lowercased with whitespace collapsed, so trivial variants count as copies."
    )
    score_column: str | None = Field(
        None, description="Keep the copy with the highest value of this column (then the smallest id)."
    )


class ExactDedup(CorpusStage):
    """Drop documents whose (normalized) text another document already has: reason `duplicate`."""

    name = "exact_dedup"
    Params = ExactDedupParams

    def keys(self, documents: pa.Table) -> pa.Table:
        text = pc.fill_null(documents.column("text"), "")
        if self.params.normalize:
            text = pc.utf8_trim_whitespace(pc.replace_substring_regex(pc.utf8_lower(text), r"\s+", " "))
        digests = [hashlib.blake2b(t.encode(), digest_size=16).hexdigest() for t in text.to_pylist()]
        score = (documents.column(self.params.score_column).cast(pa.float64()) if self.params.score_column
                 else pa.nulls(documents.num_rows, pa.float64()))
        return pa.table({"id": documents.column("id"), "key": pa.array(digests, pa.string()), "score": score})

    def removals(self, rows: pa.Table) -> pa.Table:
        return survivors_first(rows, "duplicate")


CORPUS_STAGES: dict[str, type[CorpusStage]] = {s.name: s for s in (ExactDedup,)}
