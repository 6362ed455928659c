"""Tokens per character by language: what the tokenizer does to each language of a job.

Counted while a job's documents are tokenized (`curation.tokens.buckets.tokenize_file`): every curated
document once, both splits, before the mixture repeats or leaves out any; characters are Unicode code
points, tokens leave out the EOS each document gets. A document's language is its `lang` (the `langid`
stage's label), else `und-<script>` from its letters (`und` without any), so a job without `langid`
still sees Chinese apart from English; a document in several languages (`langid: {per_paragraph: true}`) counts
its characters and tokens by its parts (`by_part`), and as one document of its `lang`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.lang.mixed import language_parts
from curation.lang.scripts import script_of_text

Counts = dict[str, list[int]]
"""language -> [documents, characters, tokens]"""


def language_keys(texts: pa.Array | pa.ChunkedArray, langs: pa.Array | pa.ChunkedArray | None) -> np.ndarray:
    """Each document's language (see module doc), as an object array."""
    keys = np.full(len(texts), "", dtype=object)
    if langs is not None:
        keys[:] = pc.fill_null(langs.cast(pa.string()), "").to_pylist()
    for i in np.flatnonzero(keys == "").tolist():
        script = script_of_text(texts[i].as_py() or "")
        keys[i] = f"und-{script}" if script else "und"
    return keys


def count(groups: np.ndarray, keys: np.ndarray, characters: np.ndarray, tokens: np.ndarray,
          documents: np.ndarray | None = None) -> dict[str, Counts]:
    """Per group (a source) and language: documents (each row's `documents`, default 1), characters and tokens."""
    documents = np.ones(len(keys), np.int64) if documents is None else documents
    out: dict[str, Counts] = {}
    for group in np.unique(groups).tolist():
        mine = groups == group
        part = out.setdefault(group, {})
        for key in np.unique(keys[mine]).tolist():
            rows = mine & (keys == key)
            part[key] = [int(documents[rows].sum()), int(characters[rows].sum()), int(tokens[rows].sum())]
    return out


def by_part(texts: pa.Array | pa.ChunkedArray, paragraphs: pa.Array | pa.ChunkedArray,
            tokens: Callable[[list[str]], list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows counting a mixed document (`curation.lang.mixed`) by its language parts, its own row then counting
    none of it: (document, language, characters, tokens) per part, `tokens` counting each part's tokens. A
    document in one language has no part rows."""
    rows, langs, parts = [], [], []
    for row, (text, spans) in enumerate(zip(texts.to_pylist(), paragraphs.to_pylist(), strict=True)):
        for lang, part in language_parts(text or "", spans).items():
            rows.append(row)
            langs.append(lang)
            parts.append(part)
    chars = np.array([len(p) for p in parts], np.int64)
    return np.array(rows, np.int64), np.array(langs, dtype=object), chars, np.array(tokens(parts), np.int64)


def add(total: Counts, part: Counts) -> None:
    """Sum `part` into `total`."""
    for key, values in part.items():
        total[key] = [a + b for a, b in zip(total.get(key, [0, 0, 0]), values, strict=True)]


def report(parts: Iterable[Counts]) -> dict[str, dict[str, Any]]:
    """Per language, most characters first: documents, characters, tokens and tokens per character."""
    total: Counts = {}
    for part in parts:
        add(total, part)
    ordered = sorted(total.items(), key=lambda kv: (-kv[1][1], kv[0]))
    return {key: {"documents": docs, "characters": chars, "tokens": tokens,
                  "tokens_per_char": round(tokens / chars, 4) if chars else None}
            for key, (docs, chars, tokens) in ordered}
