"""Documents in several languages, as the langid stage's paragraph labels (`lang_paragraphs`) tell them: which
languages a document's paragraphs are in, and whether it is mixed (`curation.stages.parts` judges such a document
part by part; `curation.tokens.fertility` counts its tokens by part)."""

from __future__ import annotations

from typing import Any

PARAGRAPHS = "lang_paragraphs"
MIXED_SHARE_MIN = 0.2
"""Least share of a document's labelled paragraph characters each of its languages holds for it to be mixed."""


def paragraph_languages(spans: list[dict[str, Any]] | None) -> dict[str, int]:
    """Characters per language of a document's labelled paragraphs, most first (`unknown` left out)."""
    chars: dict[str, int] = {}
    for span in spans or ():
        lang = span.get("lang")
        if lang and lang != "unknown":
            chars[lang] = chars.get(lang, 0) + max(0, int(span["end"]) - int(span["start"]))
    return dict(sorted(chars.items(), key=lambda item: -item[1]))


def mixed_languages(spans: list[dict[str, Any]] | None) -> list[str]:
    """The languages of a mixed document, most characters first; [] for a document in one language."""
    chars = paragraph_languages(spans)
    total = sum(chars.values())
    if not total:
        return []
    major = [lang for lang, n in chars.items() if n >= MIXED_SHARE_MIN * total]
    return major if len(major) > 1 else []


def language_parts(text: str, spans: list[dict[str, Any]] | None) -> dict[str, str]:
    """A mixed document's paragraphs joined by language, in their order ({} for a document in one language, or
    whose offsets do not fit its text)."""
    if not spans or not all(0 <= int(s["start"]) <= int(s["end"]) <= len(text) for s in spans):
        return {}
    return {lang: "\n".join(text[s["start"]:s["end"]] for s in spans if s.get("lang") == lang)
            for lang in mixed_languages(spans)}
