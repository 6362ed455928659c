"""datatrove's English word and sentence splitting, run for real.

datatrove 0.10 (the reference implementation of the Gopher, C4 and FineWeb heuristics) splits English with
`SpaCyTokenizer("en")` (src/datatrove/utils/word_tokenizers.py): `spacy.blank("en")` plus spaCy's rule-based
sentencizer, no trained model; its `split_into_words` strips every token and drops the empty ones. datatrove
itself cannot be a dev dependency (it pins an old trafilatura), so the tests run that same spaCy pipeline.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language


@lru_cache(maxsize=1)
def _english() -> Language:
    import spacy  # seconds to import: paid by the tests that use it, not by every collection

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def words(text: str) -> list[str]:
    """datatrove's `split_into_words(text, "en")`."""
    return [token.text.strip() for token in _english()(text) if token.text.strip()]


def sentence_count(text: str) -> int:
    """How many sentences datatrove's `split_into_sentences(text, "en")` finds in a non-empty text."""
    return len(list(_english()(text).sents))
