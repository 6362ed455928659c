"""The word segmenters FineWeb-2 called (datatrove's `word_tokenizers.py`), used as their packages are, with no memo
and no chunking: the reference words of `multilingual.py` and the "package alone" speeds of `segmenters.py`."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache


@cache
def package_segmenter(lang: str) -> Callable[[str], list[str]] | None:
    """The words of a text by the package FineWeb-2 segmented `lang` with; None for a language written with spaces."""
    if lang == "zh":
        import rjieba

        return rjieba.cut
    if lang == "ja":
        from sudachipy import Dictionary, SplitMode

        tokenizer = Dictionary(dict="core").tokenizer(mode=SplitMode.A)
        return lambda text: [m.surface() for m in tokenizer.tokenize(text)]
    if lang == "th":
        from pythainlp.tokenize import word_tokenize

        return lambda text: word_tokenize(text, engine="newmm-safe", keep_whitespace=False)
    if lang == "km":
        from khmernltk import word_tokenize

        return lambda text: word_tokenize(text, return_tokens=True)
    if lang == "lo":
        from laonlp.tokenize import word_tokenize

        return word_tokenize
    if lang == "my":
        import pyidaungsu

        return lambda text: pyidaungsu.tokenize(text, form="word")
    return None
