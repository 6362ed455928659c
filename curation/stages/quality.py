"""Heuristic quality filters: shared helpers and the information-density filter.

The rule families live in their own modules: `gopher` (GopherQuality, GopherRepetition), `c4` (C4),
`fineweb` (FineWeb); word counts in characters and words are the `length` stage's. Scores a filter
needs only for its decision are returned under names starting with `_` and never become columns.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator, model_validator

from curation.lang.scripts import script_of_text
from curation.lang.settings import LanguageSettings, overridable, settings_for
from curation.lang.words import LANGUAGE_WORDS, SPACES, segmenters
from curation.stages.base import DocumentFilter, Processed, Resources, first_reason
from curation.text import WORDS, Words, as_array, re2_class

LANG = "lang"
FALLBACK_LANGUAGE = "fallback_language"
"""Count key: documents whose language had no settings of its own and were judged by their script's."""
_ENGLISH_CODES = frozenset({"en", "eng"})


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator as float64, NaN where the denominator is 0 (NaN fails no bound)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.full(len(numerator), np.nan)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def filter_result(stage: DocumentFilter, batch: pa.Table, scores: dict[str, np.ndarray], mask: np.ndarray,
                  reasons: np.ndarray, text: pa.Array | None = None) -> Processed:
    """The batch with the public scores as columns (when `keep_scores`) and, if given, `text`
    replacing the text of the kept rows (dropped rows keep their original text for `rejects/`); the
    `fallback_language` tally where the scores have one (`_fallback`)."""
    table = batch
    if text is not None:
        column = batch.column("text")
        original = (column.combine_chunks() if column.num_chunks else pa.array([], pa.string())).cast(pa.string())
        kept_text = pc.if_else(pa.array(mask, pa.bool_()), text.cast(pa.string()), original)
        table = table.set_column(table.schema.get_field_index("text"), "text", kept_text)
    if stage.params.keep_scores:
        columns = stage.output_columns
        for column, values in scores.items():
            if not column.startswith("_"):
                table = table.append_column(column, pa.array(values, type=columns[column]))
    counts = {FALLBACK_LANGUAGE: scores["_fallback"]} if "_fallback" in scores else None
    return Processed(table, pa.array(np.where(mask, None, reasons), type=pa.string()), counts=counts)


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

    languages: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per-language overrides of the shipped settings: language code (lid.176's, or \"*\" for "
        "every language but English) -> {setting: value}, settings named as in `curation.lang.settings."
        "LanguageSettings` (e.g. `stop_words`, `min_avg_word_length`, `dup_n_grams`). English is judged by "
        "the stage's own params, not by this map.")

    @field_validator("languages")
    @classmethod
    def _known_settings(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        known = overridable()
        for code, changes in value.items():
            if _is_english(code):
                msg = f"languages.{code}: English is judged by the stage's own params; set them instead"
                raise ValueError(msg)
            unknown = sorted(set(changes) - known)
            if unknown:
                msg = f"languages.{code}: unknown setting(s) {unknown}; known: {sorted(known)}"
                raise ValueError(msg)
            settings_for(None if code == "*" else code, overrides={"languages": {code: changes}})
        return value


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


def stage_languages(stage: DocumentFilter, batch: pa.Table) -> DocumentLanguages:
    """`document_languages` with the stage's `languages` params and its per-worker cache of settings."""
    cache = stage.__dict__.setdefault("_language_settings", {})
    return document_languages(batch, stage.params.languages, cache)


def line_ends(lines: pa.Array, langs: DocumentLanguages, line_doc: np.ndarray, own: str, also: str = "") -> np.ndarray:
    """Whether each line ends a sentence: matches the RE2 pattern `own` in documents judged by the stage's
    own params, ends in its language's `terminal_punctuation` (or a character of `also`) in the others.
    `line_doc`: each line's document."""
    ends = pc.match_substring_regex(lines, own).to_numpy(zero_copy_only=False)
    if not langs.groups:
        return ends
    line_group = langs.group[line_doc]
    for index, settings in enumerate(langs.groups):
        rows = np.flatnonzero(line_group == index)
        if len(rows):
            pattern = re2_class(settings.terminal_punctuation + also) + "$"
            ends[rows] = pc.match_substring_regex(lines.take(pa.array(rows)), pattern).to_numpy(zero_copy_only=False)
    return ends


def words_of(batch: pa.Table, text: pa.Array) -> Words:
    """The words of every document: by its language where the batch has a `lang` column, else English's."""
    if LANG in batch.column_names:
        return LANGUAGE_WORDS.split(text, batch.column(LANG))
    return WORDS.split(text)


class Density(DocumentFilter):
    """Information density: zlib-compressed size over raw UTF-8 size.

    Drops `too_compressible` (ratio under `min_compression_ratio`: boilerplate, repeated lines,
    keyword lists) and `too_incompressible` (over `max_compression_ratio`: random strings, base64,
    hashes, binary junk). Documents under `min_bytes` are not judged: deflate's fixed overhead
    makes short texts look incompressible whatever they say.

    No standard bound is published for this heuristic; the defaults come from the project's shared
    test pages (1,161 real pages, many languages, extracted with `extract`; zlib level 6; pages over
    500 bytes): median 0.47, 1st percentile 0.23, 99th 0.65, maximum 0.70. The 7 pages under 0.2
    all repeat lines or lorem-ipsum blocks (`gopher_repetition` drops them too), so the defaults
    catch only pathological documents. Word counts are the `length` stage's and mean word length
    `gopher_quality`'s, so this stage does not repeat them.
    """

    name = "density"
    resources = Resources(cpus=0.5)
    output_columns: ClassVar[dict[str, pa.DataType]] = {"compression_ratio": pa.float64()}

    class Params(DocumentFilter.Params):
        min_compression_ratio: float | None = Field(
            0.2, ge=0, le=1, description="Lowest compressed/raw size ratio (zlib); under it the text is mostly "
            "repetition. Default from the shared test pages (1st percentile 0.23).")
        max_compression_ratio: float | None = Field(
            0.75, gt=0, description="Highest compressed/raw size ratio (zlib); over it the text is close to "
            "random. Default from the shared test pages (maximum 0.70 over 500 bytes).")
        min_bytes: int = Field(500, ge=1, description="Documents with fewer UTF-8 bytes are kept unjudged.")
        level: int = Field(6, ge=1, le=9, description="zlib compression level (6: zlib's default).")

        @model_validator(mode="after")
        def _ordered(self) -> Density.Params:
            lo, hi = self.min_compression_ratio, self.max_compression_ratio
            if lo is not None and hi is not None and lo >= hi:
                msg = f"min_compression_ratio ({lo}) must be below max_compression_ratio ({hi})"
                raise ValueError(msg)
            return self

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        level = self.params.level
        raw = [t.encode() for t in as_array(batch.column("text")).to_pylist()]
        sizes = np.fromiter((len(b) for b in raw), np.int64, count=len(raw))
        packed = np.fromiter((len(zlib.compress(b, level)) if b else 0 for b in raw), np.int64, count=len(raw))
        return {"compression_ratio": ratio(packed, sizes), "_bytes": sizes}

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        judged = scores["_bytes"] >= p.min_bytes
        value = scores["compression_ratio"]
        rules = []
        if p.min_compression_ratio is not None:
            rules.append((judged & (value < p.min_compression_ratio), "too_compressible"))
        if p.max_compression_ratio is not None:
            rules.append((judged & (value > p.max_compression_ratio), "too_incompressible"))
        return first_reason(len(value), rules)

    def process(self, batch: pa.Table) -> Processed:
        scores = self.score(batch)
        return filter_result(self, batch, scores, *self.keep(scores))
