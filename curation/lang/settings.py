"""Filter settings by language: stop words, Gopher bounds, repetition fractions, line rules, langid score.

Shipped as `data/settings.json`, derived from FineWeb-2's per-language configs (Apache-2.0) by
`data/make_settings.py` (see its doc for the mapping of lid.176's codes to FineWeb-2's subsets and the
choice made for each macrolanguage); English keeps the Gopher/FineWeb settings the stages use today.
A language without settings of its own gets its script's defaults (the medians of FineWeb-2's
languages of that script), flagged as a fallback so the stages can count it (`fallback_language`).

Caveats the stages must know: `language_score` is FineWeb-2's minimum GlotLID confidence, not a
lid.176 score (the langid stage's `min_score: auto` takes it capped at FineWeb's 0.65); the word-based
settings were computed with FineWeb-2's word tokenizers (see `curation.lang.words` for where ours differ:
Korean, Tibetan).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from curation.lang.scripts import script_of_text

DEFAULT_SCRIPT = "Latn"
SHORT_LINE = 30
"""FineWeb's short line, in characters: English's, and every language's without a measure of its own."""
# The marks a language's apostrophe is typed as: Uzbek's lists write `boʻlgan` (U+02BB), its web `bo'lgan` and `bo’lgan`
APOSTROPHES = "'’‘ʻʼ`"


@dataclass(frozen=True)
class LanguageSettings:
    """The filter settings of one language (names as in FineWeb-2's configs)."""

    language: str  # the code asked for
    script: str  # ISO 15924
    source: str  # "fineweb2:cmn_Hani", "english", "script:Latn", "default"
    stop_words: tuple[str, ...]  # Gopher's stop-word rule (empty: the rule cannot apply)
    language_score: float  # least language-ID confidence (FineWeb-2: GlotLID's)
    dup_line_frac: float  # most share of lines repeating an earlier one (Gopher repetition)
    dup_n_grams: Mapping[int, float]  # n -> most share of characters in repeated n-grams
    top_n_grams: Mapping[int, float]  # n -> most share of characters in the most frequent n-gram
    line_punct_thr: float  # FineWeb: least share of lines ending in terminal punctuation (<= 0: off)
    new_line_ratio: float  # FineWeb: most newlines per word
    char_dup_ratio: float  # FineWeb: most share of characters in lines repeating an earlier one
    min_avg_word_length: float  # Gopher: mean word length bounds, characters
    max_avg_word_length: float
    max_non_alpha_words_ratio: float  # Gopher: least share of words with a letter (datatrove's name)
    terminal_punctuation: str  # characters that end a sentence in this script
    short_line_length: int = SHORT_LINE  # FineWeb: a short line's most characters (`scaled_short_line`)
    stop_word_share: float | None = None  # share of real text's words that are `stop_words` (Leipzig sentences)


_FIELDS = {f.name for f in dataclasses.fields(LanguageSettings)}
_OVERRIDABLE = _FIELDS - {"language", "script", "source", "stop_word_share"}  # the last: language ID's, no filter's


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = resources.files("curation.lang").joinpath("data", "settings.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _by_iso639_3() -> dict[str, str]:
    """ISO 639-3 code (FineWeb-2's subset prefix) -> lid.176 code, for callers that give 639-3 codes."""
    return {entry["fineweb2"].split("_")[0]: code for code, entry in _data()["languages"].items()
            if entry.get("fineweb2")}


@lru_cache(maxsize=1)
def any_terminal_punctuation() -> str:
    """The characters that end a sentence in some script: how a line of another language than its document's ends."""
    scripts = [*_data()["scripts"].values(), _data()["default"]]
    return "".join(sorted({c for entry in scripts for c in entry["terminal_punctuation"]}))


def overridable() -> frozenset[str]:
    """The setting names a recipe may override per language (`LanguageSettings` fields but the identity ones)."""
    return frozenset(_OVERRIDABLE)


def languages() -> list[str]:
    """The language codes with settings of their own (lid.176's 176 labels)."""
    return list(_data()["languages"])


def known_language(code: str) -> bool:
    """Whether `code` (ISO 639-1 as lid.176 gives it, or ISO 639-3) has settings of its own."""
    return _lookup(code) is not None


def _lookup(code: str) -> str | None:
    code = code.strip().lower()
    table = _data()["languages"]
    if code in table:
        return code
    return _by_iso639_3().get(code)


def scaled_short_line(chars_per_word: float, english_chars_per_word: float | None = None) -> int:
    """FineWeb's short-line bound for a language of `chars_per_word` (`curation.lang.words.chars_per_word`):
    English's 30 characters times its characters per word over English's (on the Leipzig sentences unless
    given), so that a short line holds as few words in every language: Chinese 10, Finnish 43."""
    english = english_chars_per_word or _data()["english_chars_per_word"]
    return max(1, round(SHORT_LINE * chars_per_word / english))


def script_of_language(lang: str) -> str | None:
    """The script a language is written in (as FineWeb-2's subset names it); None if unknown."""
    code, _, script = lang.strip().partition("_")
    if script:
        return script.title()
    key = _lookup(code)
    return _data()["languages"][key]["script"] if key else None


def other_scripts(lang: str) -> frozenset[str]:
    """The scripts besides its main one in which a language has settings of its own (Serbian: Latn)."""
    key = _lookup(lang) if lang.strip() else None
    return frozenset(_data()["languages"][key].get("other_scripts", ())) if key else frozenset()


def own_scripts(lang: str) -> frozenset[str]:
    """The scripts in which a language has settings of its own, each (Serbian: Cyrl and Latn); empty where its
    scripts, if it has several, share one (Chinese)."""
    others = other_scripts(lang)
    return others | {script_of_language(lang) or ""} if others else frozenset()


def script_key(code: str, script: str) -> str:
    """The key of a language's settings in one of its `own_scripts` (`sr-Latn`), as a recipe's `languages:` and a
    settings file write it."""
    return f"{code}-{script.title()}"


def settings_for(lang: str | None, text: str = "", overrides: Mapping[str, Any] | None = None,
                 script: str | None = None) -> tuple[LanguageSettings, bool]:
    """The settings of a document in language `lang`, and whether they are a fallback.

    `lang`: lid.176's code, an ISO 639-3 code or a FineWeb-2 subset name ("cmn_Hani"). A language
    without settings of its own falls back to its script's defaults: the script in the code, else the
    script of `text`, else Latin. A language written in two scripts takes its settings in `script` (else the
    script of `text`) where it has them (`other_scripts`: Serbian's stop words in Latin script are not its
    Cyrillic ones). `overrides`: a recipe's `{languages: {zh: {...}}}` (see `apply_overrides`).
    """
    data = _data()
    code = (lang or "").strip()
    key = _lookup(code.partition("_")[0]) if code else None
    if key is not None:
        entry = data["languages"][key]
        others = entry.get("other_scripts", {})
        wanted = script or code.partition("_")[2].title() or (script_of_text(text) if others and text else None)
        if wanted in others:
            entry = {**entry, **others[wanted], "script": wanted}
        script = entry["script"]
        source = f"fineweb2:{entry['fineweb2']}" if entry.get("fineweb2") else entry.get("source", key)
        settings = _build(code, script, source, {**data["scripts"].get(script, data["default"]), **entry})
        fallback = False
    else:
        script = (script_of_language(code) if code else None) or script_of_text(text) or DEFAULT_SCRIPT
        values = data["scripts"].get(script)
        settings = _build(code, script, f"script:{script}" if values else "default", values or data["default"])
        fallback = True
    if overrides:
        settings = apply_overrides(settings, overrides)
    return settings, fallback


def _build(lang: str, script: str, source: str, values: Mapping[str, Any]) -> LanguageSettings:
    terminals = values.get("terminal_punctuation") or _data()["scripts"].get(script, _data()["default"])[
        "terminal_punctuation"]
    return LanguageSettings(
        language=lang, script=script, source=source,
        stop_words=with_apostrophes(values["stop_words"]),
        language_score=float(values["language_score"]),
        dup_line_frac=float(values["dup_line_frac"]),
        dup_n_grams={int(n): float(f) for n, f in values["dup_n_grams"].items()},
        top_n_grams={int(n): float(f) for n, f in values["top_n_grams"].items()},
        line_punct_thr=float(values["line_punct_thr"]),
        new_line_ratio=float(values["new_line_ratio"]),
        char_dup_ratio=float(values["char_dup_ratio"]),
        min_avg_word_length=float(values["min_avg_word_length"]),
        max_avg_word_length=float(values["max_avg_word_length"]),
        max_non_alpha_words_ratio=float(values["max_non_alpha_words_ratio"]),
        terminal_punctuation=terminals,
        short_line_length=int(values.get("short_line_length", SHORT_LINE)),
        stop_word_share=float(share) if (share := values.get("stop_word_share")) is not None else None,
    )


def with_apostrophes(words: Sequence[str]) -> tuple[str, ...]:
    """`words` and, for each holding an apostrophe, its twins with the other marks typed for one."""
    out = dict.fromkeys(words)
    for word in words:
        marks = [c for c in APOSTROPHES if c in word]
        for mark in marks:
            for other in APOSTROPHES:
                out.setdefault(word.replace(mark, other))
    return tuple(out)


def apply_overrides(settings: LanguageSettings, overrides: Mapping[str, Any]) -> LanguageSettings:
    """`settings` with a recipe's overrides for its language: `overrides` is `{languages: {zh: {field:
    value}}}` (a stage's section); `"*"` applies to every language, the language's own entry after it, and the
    entry of its script (`sr-Latn`, for a language with settings per script) last.
    Unknown fields are an error (a typo would otherwise silently keep the default)."""
    by_language = overrides.get("languages") or {}
    if not isinstance(by_language, Mapping):
        msg = f"`languages` must map language codes to settings, not {type(by_language).__name__}"
        raise TypeError(msg)
    code = settings.language.strip().lower()
    # a language's own script last: `sr-Latn` changes Serbian in Latin script after `sr` changed both
    for key in ("*", code, code.partition("_")[0], script_key(code.partition("_")[0], settings.script)):
        changes = by_language.get(key)
        if changes:
            settings = _replace(settings, key, changes)
    return settings


def _replace(settings: LanguageSettings, key: str, changes: Mapping[str, Any]) -> LanguageSettings:
    unknown = sorted(set(changes) - _OVERRIDABLE)
    if unknown:
        msg = f"unknown settings for language {key!r}: {unknown}; known: {sorted(_OVERRIDABLE)}"
        raise ValueError(msg)
    values = dict(changes)
    for field in ("dup_n_grams", "top_n_grams"):
        if field in values:
            values[field] = {int(n): float(f) for n, f in dict(values[field]).items()}
    if "stop_words" in values:
        values["stop_words"] = tuple(values["stop_words"])
    return dataclasses.replace(settings, **values)
