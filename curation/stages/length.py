"""Document length bounds in words and characters, computed column-wise with pyarrow."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.stages.base import DocumentFilter, Resources, first_reason


class Length(DocumentFilter):
    """Drop documents shorter or longer than the bounds: `too_few_words`, `too_many_words`, `too_short`.

    Words are whitespace-separated tokens. Default bounds follow Gopher (Rae et al. 2021, appendix A:
    50 to 100,000 words).
    """

    name = "length"
    resources = Resources(cpus=0.25)
    output_columns: ClassVar[dict[str, pa.DataType]] = {"n_words": pa.int64(), "n_chars": pa.int64()}

    class Params(DocumentFilter.Params):
        min_words: int = Field(50, ge=0, description="Fewest words a document may have (Gopher: 50).")
        max_words: int = Field(100_000, ge=1, description="Most words a document may have (Gopher: 100,000).")
        min_chars: int = Field(0, ge=0, description="Fewest characters a document may have.")

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        text = pc.fill_null(batch.column("text"), "")
        words = pc.list_value_length(pc.utf8_split_whitespace(text))
        return {
            "n_words": words.to_numpy(zero_copy_only=False),
            "n_chars": pc.utf8_length(text).to_numpy(zero_copy_only=False),
        }

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        words, chars = scores["n_words"], scores["n_chars"]
        return first_reason(
            len(words),
            [(chars < p.min_chars, "too_short"), (words < p.min_words, "too_few_words"),
             (words > p.max_words, "too_many_words")],
        )
