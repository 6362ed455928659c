"""Document length bounds in words and characters, computed column-wise with pyarrow."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curation.lang.words import SPACES, segmenters
from curation.stages.base import DocumentFilter, Resources, first_reason
from curation.stages.languages import LANG, words_of
from curation.text.columns import as_array, segment_sum, whitespace_words


class Length(DocumentFilter):
    """Drop documents shorter or longer than the bounds: `too_few_words`, `too_many_words`, `too_short`.

    Words are runs of non-whitespace characters (a blank text has none). Default bounds follow Gopher
    (Rae et al. 2021, appendix A: 50 to 100,000 words). Where the batch has a `lang` column, documents
    of a language written without spaces (Chinese, Japanese, Thai...: `curation.lang.words`) count their
    segmented words instead, punctuation marks left out (a whitespace piece there is a phrase or a whole
    sentence); every other document is counted as above.
    """

    name = "length"
    resources = Resources(cpus=0.25)
    output_columns: ClassVar[dict[str, pa.DataType]] = {"n_words": pa.int64(), "n_chars": pa.int64()}

    class Params(DocumentFilter.Params):
        min_words: int = Field(50, ge=0, description="Fewest words a document may have (Gopher: 50).")
        max_words: int = Field(100_000, ge=1, description="Most words a document may have (Gopher: 100,000).")
        min_chars: int = Field(0, ge=0, description="Fewest characters a document may have.")

        @model_validator(mode="after")
        def _ordered(self) -> Length.Params:  # `{min_words: 100, max_words: 10}` validated, then dropped everything
            if self.min_words > self.max_words:
                msg = f"min_words ({self.min_words}) must be at most max_words ({self.max_words})"
                raise ValueError(msg)
            return self

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        text = pc.fill_null(batch.column("text"), "")
        return {
            "n_words": _word_counts(batch, text),
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


def _word_counts(batch: pa.Table, text: pa.ChunkedArray) -> np.ndarray:
    """Whitespace words, or segmented words (without punctuation marks) for languages without spaces."""
    counts = whitespace_words(text)
    if LANG not in batch.column_names:
        return counts
    text = as_array(text)
    unspaced = np.flatnonzero(segmenters(text, batch.column(LANG)) != SPACES)
    if len(unspaced):
        rows = pa.array(unspaced)
        subset = pa.table({"text": text.take(rows), LANG: batch.column(LANG).take(rows)})
        words = words_of(subset, subset.column("text").combine_chunks())
        counts[unspaced] = segment_sum(1 - words.feature("symbol"), words.offsets)
    return counts
