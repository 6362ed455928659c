"""The filters whose thresholds depend on each document's language: which settings judge each document,
and the word and line helpers that follow a document's language.

A document's language is the `lang` column (the `langid` stage's); its settings are `curation.lang.settings`
(derived from FineWeb-2) with the stage's `languages:` overrides (see `LanguageParams`). English documents and
documents without a `lang` are judged by the stage's own params, exactly as before languages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import AfterValidator, Field, field_validator

from curation.lang.codes import did_you_mean
from curation.lang.scripts import script_of_text
from curation.lang.settings import LanguageSettings, other_scripts, overridable, settings_for
from curation.lang.words import LANGUAGE_WORDS, SPACES, segmenters
from curation.stages.base import DocumentFilter, Processed, StageParams
from curation.stages.langid import EVERY_LANGUAGE, bundled_outputs, map_keys, one_script
from curation.stages.parts import judged_in_parts
from curation.text.columns import as_array, re2_class
from curation.text.layout import bare_words, prose_text
from curation.text.splitter import WORDS, Words, warm_up

LANG = "lang"
LANG_SCRIPT = "lang_script"  # langid's, for a language written in two scripts
FALLBACK_LANGUAGE = "fallback_language"
"""Count key: documents whose language had no settings of its own and were judged by their script's."""
_ENGLISH_CODES = frozenset({"en", "eng"})


def _judged_key(key: str) -> str:
    """A `languages:` key that names languages this stage judges by the map, each key checked on its own (a map
    of three bad keys was refused one key at a time). A script names one only where the language has settings per
    script (`sr-Latn`); Chinese's two scripts share theirs."""
    one_script(key, "languages")
    for code in map_keys(key):
        if "-" in code:  # a language in one of its own scripts: its settings are shipped
            continue
        if _is_english(code):
            msg = "English is judged by the stage's own params; set them instead"
            raise ValueError(msg)
        _, fallback = settings_for(None if code == EVERY_LANGUAGE else code)
        if code != EVERY_LANGUAGE and fallback and code not in bundled_outputs(second_opinion=True):
            msg = (f"langid labels no document {code} and no settings are shipped for it, so these would judge "
                   f"nothing{did_you_mean(code)}")
            raise ValueError(msg)
    return key


def _known_settings(changes: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(changes) - overridable())
    if unknown:
        msg = f"unknown setting(s) {unknown}; known: {sorted(overridable())}"
        raise ValueError(msg)
    return changes


LanguageKey = Annotated[str, AfterValidator(_judged_key)]
LanguageChanges = Annotated[dict[str, Any], AfterValidator(_known_settings)]


class LanguageParams(DocumentFilter.Params):
    """Params of a filter whose thresholds depend on each document's language (the `lang` column).

    How they combine: the stage's own (top-level) params judge English documents and documents without a
    `lang` (or a batch without the column), exactly as the stage did before languages; a document
    without a `lang` in a script written without spaces (Chinese, Japanese, Thai...) is the exception: its
    words are its script's (`curation.lang.words`), so its settings are its script's defaults too, and it
    is counted as `fallback_language`. Every other
    language is judged by its shipped settings (`curation.lang.settings`, derived from FineWeb-2) for the
    thresholds that have a per-language setting (named in each stage's doc), then by `languages:` (`"*"`
    first, the language's own entry after it); thresholds without a per-language setting (word counts,
    bullet lines, paragraph repetition...) are the top-level ones for every language.
    """

    languages: dict[LanguageKey, LanguageChanges] = Field(
        default_factory=dict,
        description="Per-language overrides of the shipped settings: language code (any spelling "
        "`curation.lang.codes` reads, as lid.176 labels it: `chi`, `cmn`, `zho` are zh, whose two scripts share "
        "the settings (a key naming one, `zh-TW` or `zh-Hant`, is refused); a language with settings per script "
        "(sr, uz, az, tt, ms, sh) also in one script, `sr-Latn`, "
        "applied after its language's entry; or \"*\" for every language but English) -> {setting: value}, "
        "settings named as in `curation.lang.settings.LanguageSettings` (e.g. `stop_words`, `min_avg_word_length`, "
        "`dup_n_grams`). "
        "English is judged by the stage's own params, not by this map.")

    prose_only: bool = Field(
        True,
        description="Judge a document's prose: code blocks, tables and headings (`curation.text.layout`) are left "
        "out of the statistics and kept in the document, unless they hold nearly all of it (95% of its characters "
        "or more: then every line is judged). false: every line is judged, as datatrove's filters do.")

    @field_validator("languages")
    @classmethod
    def _each_code_once(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for key, changes in value.items():
            for code in map_keys(key):
                if code in out:
                    msg = f"languages.{key}: names {code}, as another key of this map does; give its settings once"
                    raise ValueError(msg)
                out[code] = changes
        return out


def _is_english(code: str) -> bool:
    return code.strip().lower().partition("_")[0] in _ENGLISH_CODES


@dataclass
class DocumentLanguages:
    """Which settings judge each document of a batch: the stage's own params (English, no `lang`) or one
    of a few language settings, grouped so that the rules stay columnar."""

    groups: list[LanguageSettings]
    group: np.ndarray  # int64 per document: index into `groups`, -1 for the stage's own params
    fallback: np.ndarray  # int64 per document: 1 where its language had no settings of its own

    @property
    def own(self) -> np.ndarray:
        return self.group < 0

    def per_document(self, own: float | None, setting: Callable[[LanguageSettings], float | None]) -> np.ndarray:
        """A threshold per document (float64; NaN: not checked, since NaN fails no comparison)."""
        values = np.array([np.nan if own is None else own,
                           *(np.nan if (v := setting(s)) is None else v for s in self.groups)], np.float64)
        return values[self.group + 1]


def document_languages(batch: pa.Table, languages: Mapping[str, Mapping[str, Any]],
                       cache: dict[tuple[str, str], tuple[LanguageSettings, bool]]) -> DocumentLanguages:
    """Each document's settings from its `lang` (see `LanguageParams`); `cache`: the stage's, per code."""
    n = batch.num_rows
    if LANG not in batch.column_names:
        return DocumentLanguages([], np.full(n, -1, np.int64), np.zeros(n, np.int64))
    encoded = pc.dictionary_encode(as_array(batch.column(LANG)).cast(pa.string()))
    codes = encoded.dictionary.to_pylist()
    indices = encoded.indices.fill_null(len(codes)).to_numpy(zero_copy_only=False).astype(np.int64)
    group = np.full(n, -1, np.int64)
    groups: dict[tuple[str, str], int] = {}
    overrides = {"languages": languages}
    texts: pa.Array | None = None
    for index, code in enumerate(codes):
        if _is_english(code):
            continue
        rows = np.flatnonzero(indices == index)
        texts = as_array(batch.column("text")) if texts is None else texts
        if not code.strip():  # no language: the stage's own params, but not for words of an unspaced script
            rows = rows[segmenters(texts.take(pa.array(rows))) != SPACES]
        elif other_scripts(code):  # Serbian in either script: each document by its own script's settings
            scripts = _scripts(batch, texts, rows)
            for row, script in zip(rows.tolist(), scripts, strict=True):
                if (code, script) not in cache:
                    cache[(code, script)] = settings_for(code, overrides=overrides, script=script)
                group[row] = groups.setdefault((code, script), len(groups))
            continue
        else:
            if (code, "") not in cache:
                cache[(code, "")] = settings_for(code, overrides=overrides)
            if not cache[(code, "")][1]:
                group[rows] = groups.setdefault((code, ""), len(groups))
                continue
        # no settings of its own: its script's, which may differ document by document (rare: per row)
        for row in rows.tolist():
            text = texts[row].as_py()
            key = (code, script_of_text(text) or "")
            if key not in cache:
                cache[key] = settings_for(code, text, overrides)
            group[row] = groups.setdefault(key, len(groups))
    settings = [cache[key] for key in groups]
    fallback = np.array([False, *(f for _, f in settings)])[group + 1].astype(np.int64)
    return DocumentLanguages([s for s, _ in settings], group, fallback)


def _scripts(batch: pa.Table, texts: pa.Array, rows: np.ndarray) -> list[str]:
    """The script of each of `rows`: its `lang_script` (langid's), else its text's dominant script."""
    given = batch.column(LANG_SCRIPT).take(pa.array(rows)).to_pylist() if LANG_SCRIPT in batch.column_names \
        else [None] * len(rows)
    return [script or script_of_text(texts[row].as_py()) or "" for row, script in zip(rows.tolist(), given,
                                                                                     strict=True)]


class LanguageFilter(DocumentFilter):
    """A filter whose thresholds depend on each document's language (its `Params` extend `LanguageParams`).

    A subclass that counts `FALLBACK_LANGUAGE` returns `languages_of(batch).fallback` as its score
    `_fallback_language`.
    """

    Params = LanguageParams
    size_scores: ClassVar[tuple[str, ...]] = ()  # scores of a document's size: a mixed one's summed over its parts
    # ratios of a document's shape -> (numerator, denominator) scores: a mixed one's from its parts' sums
    document_ratios: ClassVar[dict[str, tuple[str, str]]] = {}
    counts_captions: ClassVar[bool] = False  # captions are prose to rules counting words, layout to line rules

    def __init__(self, params: StageParams | None = None, /, **keys: Any) -> None:
        super().__init__(params, **keys)
        self._settings: dict[tuple[str, str], tuple[LanguageSettings, bool]] = {}  # per (code, script), once met

    def setup(self) -> None:
        warm_up()  # the word splitter's rules, built once per worker rather than in its first batch

    def process(self, batch: pa.Table) -> Processed:
        """Judged as every filter is; a document in several languages part by part (`curation.stages.parts`)."""
        judged = judged_in_parts(self, batch, self.document_ratios, self.size_scores)
        return super().process(batch) if judged is None else judged

    def judged_text(self, batch: pa.Table) -> pa.Array:
        """The text the rules judge: with `prose_only`, each document without the layout lines it sets aside
        (its captions kept where the filter `counts_captions`)."""
        text = as_array(batch.column("text"))
        return prose_text(text, captions=self.counts_captions) if self.params.prose_only else text

    def judged_words(self, text: pa.Array) -> pa.Array:
        """The text whose words the rules count: with `prose_only`, `text` without Markdown's marks."""
        return bare_words(text) if self.params.prose_only else text

    def languages_of(self, batch: pa.Table) -> DocumentLanguages:
        """`document_languages` with this filter's `languages` params and the settings it met before."""
        return document_languages(batch, self.params.languages, self._settings)


# What may follow a sentence's terminal at the end of a line: its closing quotes and brackets (Chinese dialogue ends
# `。”` or `。」`: read as unterminated, 7 of 10 quoted lines went, and FineWeb's ratio of a story was 0; German and
# Czech close with “ and ‘)
CLOSERS_RE2 = "[\"'”’“‘」』»›«‹)）]*"


def line_ends(lines: pa.Array, langs: DocumentLanguages, line_doc: np.ndarray, own: str, also: str = "") -> np.ndarray:
    """Whether each line ends a sentence: matches the RE2 pattern `own` in documents judged by the stage's
    own params, ends in its language's `terminal_punctuation` (or a character of `also`), then any closing quotes
    or brackets, in the others. `line_doc`: each line's document."""
    ends = pc.match_substring_regex(lines, own).to_numpy(zero_copy_only=False)
    if not langs.groups:
        return ends
    line_group = langs.group[line_doc]
    for index, settings in enumerate(langs.groups):
        rows = np.flatnonzero(line_group == index)
        if len(rows):
            pattern = re2_class(settings.terminal_punctuation + also) + CLOSERS_RE2 + "$"
            ends[rows] = pc.match_substring_regex(lines.take(pa.array(rows)), pattern).to_numpy(zero_copy_only=False)
    return ends


def words_of(batch: pa.Table, text: pa.Array) -> Words:
    """The words of every document: by its language where the batch has a `lang` column, else English's."""
    if LANG in batch.column_names:
        return LANGUAGE_WORDS.split(text, batch.column(LANG))
    return WORDS.split(text)
