"""Exact-duplicate removal (`exact_dedup`): the corpus stage over `curation.dedup.exact`'s content hash.

Two steps that `pipelines.dedup.exact` spreads over a cluster: `keys(documents)` maps each batch of
documents to a small table of `id`, `key` and `score`; the runner brings all rows with the same key
together (a shuffle by key) and `removals(rows)` names the documents to remove, each with its survivor.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.dedup.corpus_stage import REMOVALS, REWRITES, CorpusResult, CorpusStage
from curation.dedup.exact import choose_survivors, content_hash
from curation.stages.base import StageParams

DUPLICATE = "duplicate"  # exact_dedup's reason; its detail: `kept <survivor id>`


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
    runner = "exact"

    def keys(self, documents: pa.Table) -> pa.Table:
        normalize = self.params.normalize
        digests = content_hash(documents.column("text"), lowercase=normalize, collapse_whitespace=normalize)
        score = (documents.column(self.params.score_column).cast(pa.float64()) if self.params.score_column
                 else pa.nulls(documents.num_rows, pa.float64()))
        return pa.table({"id": documents.column("id"), "key": digests, "score": score})

    def removals(self, rows: pa.Table) -> pa.Table:
        """Documents to remove among `rows`, which hold every row of each key they contain."""
        return removals_from_survivors(rows, DUPLICATE)

    def result(self, documents: pa.Table, signatures: np.ndarray | None = None) -> CorpusResult:
        removals = self.removals(self.keys(documents)).sort_by("id")
        return CorpusResult(removals, documents.num_rows, REWRITES.empty_table(), {})
