"""Corpus stages: decisions that need every document (deduplication), as engine-free steps.

A corpus stage works in two steps that an executor can spread over a cluster:
`keys(documents)` maps each batch of curated documents to a small table of `id`, `key` and
`score`; the executor brings all rows with the same key together (a shuffle by key) and
`removals(rows)` names the documents to remove, each with its survivor.
Decisions depend only on keys, scores and ids, never on the order rows arrive in, so any
number of workers and any shard order give the same survivors.
"""

from __future__ import annotations

from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.dedup.exact import choose_survivors, content_hash
from curation.stages.base import Configured, StageParams

REMOVALS = pa.schema([("id", pa.string()), ("reason", pa.string()), ("detail", pa.string())])


class CorpusStage(Configured):
    input_columns: ClassVar[tuple[str, ...]] = ("id", "text")

    def columns(self) -> list[str]:
        """Document columns the `keys` step reads."""
        score = getattr(self.params, "score_column", None)
        return [*self.input_columns, *([score] if score else [])]

    def keys(self, documents: pa.Table) -> pa.Table:
        raise NotImplementedError

    def removals(self, rows: pa.Table) -> pa.Table:
        """Documents to remove among `rows`, which hold every row of each key they contain."""
        raise NotImplementedError

    def reference(self, documents: pa.Table) -> pa.Table:
        """REMOVALS of `documents` in one process (sorted by id): what any spread-out run must equal."""
        return self.removals(self.keys(documents)).sort_by("id")


def select_documents(documents: pa.Table, only: list[str] | None, removed: pa.Array) -> pa.Table:
    """The documents a corpus stage sees: of its `only` sources, less those earlier stages removed."""
    if only is not None:
        documents = documents.filter(pc.is_in(documents.column("source"), pa.array(only, pa.string())))
    return documents.filter(pc.invert(pc.is_in(documents.column("id"), removed)))


def removals_from_survivors(keys: pa.Table, reason: str) -> pa.Table:
    """Per key keep the highest score, then the smallest id; every other row becomes a removal.

    `keys` may hold many keys (a whole shuffle partition): one vectorised pass, no per-group Python.
    """
    removed = choose_survivors(keys.column("key"), keys.column("id"), keys.column("score"))
    detail = pc.binary_join_element_wise("kept ", removed.column("survivor_id"), "")
    return pa.table({"id": removed.column("id"), "reason": pa.array([reason] * removed.num_rows, pa.string()),
                     "detail": detail}, schema=REMOVALS)


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
        normalize = self.params.normalize
        digests = content_hash(documents.column("text"), lowercase=normalize, collapse_whitespace=normalize)
        score = (documents.column(self.params.score_column).cast(pa.float64()) if self.params.score_column
                 else pa.nulls(documents.num_rows, pa.float64()))
        return pa.table({"id": documents.column("id"), "key": digests, "score": score})

    def removals(self, rows: pa.Table) -> pa.Table:
        return removals_from_survivors(rows, "duplicate")

