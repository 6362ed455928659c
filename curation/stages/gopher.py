"""Gopher's quality and repetition rules (Rae et al. 2021, "Scaling Language Models: Methods, Analysis
& Insights from Training Gopher", appendix A and table A1), with the semantics of datatrove 0.10.1's
GopherQualityFilter and GopherRepetitionFilter, which FineWeb used: words are spaCy English tokens
(`curation.text.splitter.WordSplitter` reproduces them), lines are `str.splitlines()` lines.

Languages: where a batch has a `lang` column, words come from `curation.lang.words` (a segmenter for
Chinese, Japanese, Thai...; the English rules, unchanged, for space-delimited languages) and the
thresholds that FineWeb-2 tuned per language come from `curation.lang.settings` for every document not
in English (see `LanguageParams` for how they combine with the stage's own params, which keep judging
English exactly as before).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator

from curation.lang.scripts import POINTS_RE2
from curation.lang.settings import LanguageSettings
from curation.lang.words import SPACES, segmenters
from curation.stages.base import Resources, first_reason
from curation.stages.base import ratio as _ratio
from curation.stages.languages import (
    FALLBACK_LANGUAGE,
    LANG,
    DocumentLanguages,
    LanguageFilter,
    LanguageParams,
    words_of,
)
from curation.text.columns import LINE_BREAK_RE2, list_offsets, segment_sum, split_whitespace
from curation.text.repetition import duplicate_parts, ngram_repetition
from curation.text.splitter import Words

GOPHER_STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]
"""Gopher's stop words (appendix A): a document must hold at least two of them."""

class GopherQuality(LanguageFilter):
    """Gopher's quality rules: word count, mean word length, `#` and ellipsis per word, bullet and
    ellipsis lines, words with a letter, stop words.

    Drops, in this order (the first rule broken is the reason): `too_few_words`, `too_many_words`,
    `short_mean_word_length`, `long_mean_word_length`, `too_many_hashes`, `too_many_ellipses`,
    `too_many_bullet_lines`, `too_many_ellipsis_lines`, `too_few_alpha_words`, `too_few_stop_words`.

    As in datatrove: word counts and mean length skip words made only of punctuation; the symbol
    ratios and the letter share divide by all words (with `prose_only`, the letter share of a language written
    with spaces counts whitespace-separated words, as Gopher did: a quote mark or a bracket is no word of its
    own there); a bullet line starts (after spaces) with "•"
    or "-"; stop words are matched case-sensitively and, in English, counted once each (Gopher: "at least
    two of the following words"). Any bound set to null is not checked.

    Per language (documents with a `lang` other than English): stop words, mean word length bounds
    and the least share of words with a letter come from the language's settings (`stop_words`,
    `min_avg_word_length`, `max_avg_word_length`, `max_non_alpha_words_ratio`: FineWeb-2's per-language
    values); a language without stop words (a script's fallback) is not judged on them. A language's stop
    words are counted at every occurrence, as datatrove counts them in the pipeline FineWeb-2 chose its lists
    for: many lists hold one or two function words beside words of Wikipedia's stubs (Tatar's: "and", then
    "located", "climate", "geography"...), so two distinct ones fail clean text (all of the UDHR's Tatar
    articles). Where we
    differ from FineWeb-2: the least share of words with a letter is capped at 0.6, since FineWeb-2's
    values fail many clean documents with our word splitting (see `ALPHA_WORDS_CAP`). Documents whose
    language had no settings of its own are counted as `fallback_language`.
    """

    name = "gopher_quality"
    resources = Resources(cpus=1.0)
    size_scores: ClassVar[tuple[str, ...]] = ("gopher_words",)
    counts_captions: ClassVar[bool] = True
    document_ratios: ClassVar[dict[str, tuple[str, str]]] = {
        "gopher_bullet_lines_ratio": ("_bullet_lines", "_lines"),
        "gopher_ellipsis_lines_ratio": ("_ellipsis_lines", "_lines"),
    }
    count_keys: ClassVar[tuple[str, ...]] = (FALLBACK_LANGUAGE,)
    output_columns: ClassVar[dict[str, pa.DataType]] = {
        "gopher_words": pa.int64(),
        "gopher_mean_word_length": pa.float64(),
        "gopher_hash_ratio": pa.float64(),
        "gopher_ellipsis_ratio": pa.float64(),
        "gopher_bullet_lines_ratio": pa.float64(),
        "gopher_ellipsis_lines_ratio": pa.float64(),
        "gopher_alpha_words_ratio": pa.float64(),
        "gopher_stop_words": pa.int64(),
    }

    class Params(LanguageParams):
        min_words: int | None = Field(50, ge=0, description="Fewest words (Gopher, appendix A: 50).")
        max_words: int | None = Field(100_000, gt=0, description="Most words (Gopher, appendix A: 100,000).")
        min_mean_word_length: float | None = Field(
            3, ge=0, description="Shortest mean word length in characters (Gopher, appendix A: 3).")
        max_mean_word_length: float | None = Field(
            10, gt=0, description="Longest mean word length in characters (Gopher, appendix A: 10).")
        max_symbol_word_ratio: float | None = Field(
            0.1, gt=0, description="Most `#` per word, and most ellipses (`...`, `…`) per word "
            "(Gopher, appendix A: 0.1 for either).")
        max_bullet_lines_ratio: float | None = Field(
            0.9, gt=0, description="Most share of lines starting with a bullet (Gopher, appendix A: 90%).")
        max_ellipsis_lines_ratio: float | None = Field(
            0.3, gt=0, description="Most share of lines ending with an ellipsis (Gopher, appendix A: 30%).")
        min_alpha_words_ratio: float | None = Field(
            0.8, ge=0, description="Least share of words with a letter (Gopher, appendix A: 80%; datatrove "
            "calls it max_non_alpha_words_ratio).")
        min_stop_words: int | None = Field(
            2, ge=0, description="Fewest stop words present (Gopher, appendix A: 2): distinct ones in English, "
            "every occurrence in other languages (as FineWeb-2).")
        stop_words: list[str] = Field(
            GOPHER_STOP_WORDS, description="Stop words (Gopher, appendix A: the, be, to, of, and, that, have, "
            "with); case-sensitive. For English documents and documents without `lang`; other languages "
            "use their own (`languages: {xx: {stop_words: [...]}}` to change them).")

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        text = self.judged_text(batch)
        judged = self.judged_words(text)
        words = words_of(batch, judged)
        langs = self.languages_of(batch)
        offsets = words.offsets
        n_words = words.counts
        wordlike = 1 - words.feature("symbol")
        n_wordlike = segment_sum(wordlike, offsets)
        length_sum = segment_sum(words.feature("length") * wordlike, offsets)
        alpha_ratio = _ratio(segment_sum(words.feature("alpha"), offsets), n_words)
        if self.params.prose_only:
            alpha_ratio = self._spaced_alpha_ratio(batch, judged, alpha_ratio)
        # Markdown's heading marks (`- #### title`, with prose_only) are markup, no hashtags
        hashes = pc.count_substring(judged, "#").to_numpy(zero_copy_only=False)
        ellipses = (pc.count_substring(text, "...").to_numpy(zero_copy_only=False)
                    + pc.count_substring(text, "…").to_numpy(zero_copy_only=False))
        lines = pc.split_pattern_regex(text, LINE_BREAK_RE2)
        line_offsets = list_offsets(lines)
        flat = lines.flatten()
        bullets = segment_sum(_matches(pc.utf8_ltrim_whitespace(flat), "^[•-]"), line_offsets)
        ellipsis_lines = segment_sum(_matches(pc.utf8_rtrim_whitespace(flat), r"(?:\.\.\.|…)$"), line_offsets)
        # str.splitlines() has no empty last line after a final line break (nor any line for "")
        last_empty = pc.equal(_last(lines), "").to_numpy(zero_copy_only=False)
        n_lines = np.diff(line_offsets) - last_empty
        return {
            "gopher_words": n_wordlike,
            "gopher_mean_word_length": _ratio(length_sum, n_wordlike),
            "gopher_hash_ratio": _ratio(hashes, n_words),
            "gopher_ellipsis_ratio": _ratio(ellipses, n_words),
            "gopher_bullet_lines_ratio": _ratio(bullets, n_lines),
            "gopher_ellipsis_lines_ratio": _ratio(ellipsis_lines, n_lines),
            "gopher_alpha_words_ratio": alpha_ratio,
            "gopher_stop_words": self._pointed_stop_words(batch, judged, self._stop_words(words, langs)),
            "_bullet_lines": bullets,
            "_ellipsis_lines": ellipsis_lines,
            "_lines": n_lines,
            **self._bounds(langs),
            f"_{FALLBACK_LANGUAGE}": langs.fallback,
        }

    @staticmethod
    def _spaced_alpha_ratio(batch: pa.Table, text: pa.Array, alpha_ratio: np.ndarray) -> np.ndarray:
        """The share of words with a letter where words are what whitespace separates (Gopher's own words), in
        the documents of languages written with spaces; `alpha_ratio` (segmented words) for the others.

        The splitter's words make every punctuation mark a word: prose that quotes tokens (`the pair ("h",
        "u")`) or code names holds more marks than words, and fell under 80% though every word it writes has
        letters. A mark standing alone between spaces ("|", "»", "-" of a menu) is still a word without one."""
        spaced = segmenters(text, batch.column(LANG) if LANG in batch.column_names else None) == SPACES
        if not spaced.any():
            return alpha_ratio
        pieces = split_whitespace(text)
        flat = pieces.flatten()
        filled = pc.greater(pc.binary_length(flat), 0).to_numpy(zero_copy_only=False)
        lettered = _matches(flat, r"\pL").astype(bool) & filled
        offsets = list_offsets(pieces)
        ratio = _ratio(segment_sum(lettered.astype(np.int64), offsets), segment_sum(filled.astype(np.int64), offsets))
        return np.where(spaced, ratio, alpha_ratio)

    def _bounds(self, langs: DocumentLanguages) -> dict[str, np.ndarray]:
        """The thresholds with a per-language setting, per document (only for batches with languages)."""
        if not langs.groups:
            return {}
        p = self.params
        return {
            "_min_mean_word_length": langs.per_document(p.min_mean_word_length, lambda s: s.min_avg_word_length),
            "_max_mean_word_length": langs.per_document(p.max_mean_word_length, lambda s: s.max_avg_word_length),
            "_min_alpha_words_ratio": langs.per_document(
                p.min_alpha_words_ratio, lambda s: min(s.max_non_alpha_words_ratio, ALPHA_WORDS_CAP)),
            "_min_stop_words": langs.per_document(p.min_stop_words, lambda s: p.min_stop_words if s.stop_words
                                                  else None),
        }

    def _stop_words(self, words: Words, langs: DocumentLanguages) -> np.ndarray:
        """Stop words of every document, each judged by its language's list: distinct ones by the stage's own
        (English) list, every occurrence by a language's."""
        n_docs = len(words.counts)
        result = np.zeros(n_docs, np.int64)
        lists = [self.params.stop_words, *(s.stop_words for s in langs.groups)]
        word_group = langs.group[words.doc_index] if len(lists) > 1 else None
        for index, stop_words in enumerate(lists, start=-1):
            selected = slice(None) if word_group is None else word_group == index
            result += _count_words(words, stop_words, words.ids[selected], words.doc_index[selected], n_docs,
                                   distinct=index < 0)
        return result

    def _pointed_stop_words(self, batch: pa.Table, text: pa.Array, counted: np.ndarray) -> np.ndarray:
        """`counted`, but for documents written with Hebrew points or Arabic harakat: their stop words counted
        without them, as the lists write them (a pointed Hebrew text had none)."""
        pointed = np.flatnonzero(pc.match_substring_regex(text, POINTS_RE2).to_numpy(zero_copy_only=False))
        if not len(pointed):
            return counted
        rows = batch.take(pa.array(pointed))
        bare = pc.replace_substring_regex(text.take(pa.array(pointed)), POINTS_RE2, "")
        counted = counted.copy()
        counted[pointed] = self._stop_words(words_of(rows, bare), self.languages_of(rows))
        return counted

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        s = scores
        n = len(s["gopher_words"])

        def bound(name: str, own: float | None) -> float | np.ndarray | None:
            return s.get(f"_{name}", own)

        with np.errstate(invalid="ignore"):
            rules = [
                (p.min_words, lambda v: s["gopher_words"] < v, "too_few_words"),
                (p.max_words, lambda v: s["gopher_words"] > v, "too_many_words"),
                (bound("min_mean_word_length", p.min_mean_word_length),
                 lambda v: s["gopher_mean_word_length"] < v, "short_mean_word_length"),
                (bound("max_mean_word_length", p.max_mean_word_length),
                 lambda v: s["gopher_mean_word_length"] > v, "long_mean_word_length"),
                (p.max_symbol_word_ratio, lambda v: s["gopher_hash_ratio"] > v, "too_many_hashes"),
                (p.max_symbol_word_ratio, lambda v: s["gopher_ellipsis_ratio"] > v, "too_many_ellipses"),
                (p.max_bullet_lines_ratio, lambda v: s["gopher_bullet_lines_ratio"] > v, "too_many_bullet_lines"),
                (p.max_ellipsis_lines_ratio, lambda v: s["gopher_ellipsis_lines_ratio"] > v,
                 "too_many_ellipsis_lines"),
                (bound("min_alpha_words_ratio", p.min_alpha_words_ratio),
                 lambda v: s["gopher_alpha_words_ratio"] < v, "too_few_alpha_words"),
                (bound("min_stop_words", p.min_stop_words), lambda v: s["gopher_stop_words"] < v,
                 "too_few_stop_words"),
            ]
            return first_reason(n, [(test(bound), reason) for bound, test, reason in rules if bound is not None])


ALPHA_WORDS_CAP = 0.6
"""The highest least share of words with a letter a language other than English is held to (Gopher's
`min_alpha_words_ratio`, FineWeb-2's `max_non_alpha_words_ratio`). FineWeb-2 derived its per-language
values (0.59 to 0.905, most 0.75-0.85) from documents split by its own word tokenizers; with ours
(punctuation marks and numbers are words, as datatrove's English tokenizer makes them) clean text
falls under them: on 600 documents of real sentences in 75 languages (`langid/sentences`) the share
ranges from 0.64 (Georgian, dates and numbers) to 0.92, its 5th percentile is 0.75, and FineWeb-2's
values (even capped at Gopher's 0.8) dropped a quarter to a half of the clean documents of Georgian,
Danish, Basque, Armenian, Marathi. 0.6 keeps all of them and still drops documents made mostly of
numbers and symbols (tables, listings, code), the rule's target. English keeps Gopher's 0.8."""


def _count_words(words: Words, wanted: Sequence[str], ids: np.ndarray, doc: np.ndarray, n_docs: int,
                 distinct: bool) -> np.ndarray:
    """How many words of `wanted` (each counted once if `distinct`) each document holds (`ids`, `doc`: its words
    and their documents)."""
    splitter = words.splitter
    wanted_ids = np.array(sorted({i for w in wanted if (i := splitter.word_id(w)) is not None}), np.int64)
    if not len(wanted_ids) or not len(ids):
        return np.zeros(n_docs, np.int64)
    hit = np.isin(ids, wanted_ids)
    if not distinct:
        return np.bincount(doc[hit], minlength=n_docs).astype(np.int64)
    pairs = np.unique(doc[hit] * len(wanted_ids) + np.searchsorted(wanted_ids, ids[hit]))
    return np.bincount(pairs // len(wanted_ids), minlength=n_docs).astype(np.int64)


def _matches(strings: pa.Array, pattern: str) -> np.ndarray:
    return pc.match_substring_regex(strings, pattern).to_numpy(zero_copy_only=False).astype(np.int64)


def _last(lists: pa.ListArray) -> pa.Array:
    """The last element of every (non-empty) list."""
    offsets = list_offsets(lists)
    return lists.flatten().take(pa.array(offsets[1:] - 1))


class GopherRepetition(LanguageFilter):
    """Gopher's repetition rules (Rae et al. 2021, table A1): documents that repeat lines,
    paragraphs or n-grams too much.

    Drops, in order: `empty`, `dup_para_frac`, `dup_para_char_frac`, `dup_line_frac`,
    `dup_line_char_frac`, `top_{n}gram` (n = 2, 3, 4), `dup_{n}gram` (n = 5 to 10).

    As in datatrove: paragraphs are split at two or more newlines of the stripped text, lines at
    runs of newlines; character fractions divide by the characters of the whole text; the top
    n-gram's characters count its words joined by spaces times its count; duplicated n-grams are
    counted left to right, jumping past each repeat, with their words' characters.

    Per language (documents with a `lang` other than English): the line fraction and the n-gram
    fractions come from the language's settings (`dup_line_frac`, `top_n_grams`, `dup_n_grams`:
    FineWeb-2's per-language values, as FineWeb-2 applied them); the paragraph and character fractions
    stay the stage's own. An n-gram size only a language's settings name is judged for it, without a
    column. Documents whose language had no settings of its own are counted as `fallback_language`.
    """

    name = "gopher_repetition"
    resources = Resources(cpus=1.0)
    count_keys: ClassVar[tuple[str, ...]] = (FALLBACK_LANGUAGE,)

    @property
    def output_columns(self) -> dict[str, pa.DataType]:  # type: ignore[override]
        p = self.params
        names = ["dup_para_frac", "dup_para_char_frac", "dup_line_frac", "dup_line_char_frac"]
        names += [f"top_{n}gram_char_frac" for n in sorted(p.max_top_ngram_char_frac)]
        names += [f"dup_{n}gram_char_frac" for n in sorted(p.max_dup_ngram_char_frac)]
        return dict.fromkeys(names, pa.float64())

    class Params(LanguageParams):
        max_dup_para_frac: float | None = Field(
            0.3, gt=0, description="Most share of paragraphs that repeat an earlier one (Gopher, table A1: 0.30).")
        max_dup_para_char_frac: float | None = Field(
            0.2, gt=0, description="Most share of characters in repeated paragraphs (Gopher, table A1: 0.20).")
        max_dup_line_frac: float | None = Field(
            0.3, gt=0, description="Most share of lines that repeat an earlier one (Gopher, table A1: 0.30).")
        max_dup_line_char_frac: float | None = Field(
            0.2, gt=0, description="Most share of characters in repeated lines (Gopher, table A1: 0.20).")
        max_top_ngram_char_frac: dict[int, float] = Field(
            {2: 0.2, 3: 0.18, 4: 0.16}, description="n -> most share of characters in the most frequent "
            "n-gram (Gopher, table A1: 2: 0.20, 3: 0.18, 4: 0.16); n from 1 to 10.")
        max_dup_ngram_char_frac: dict[int, float] = Field(
            {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}, description="n -> most share of characters "
            "in repeated n-grams (Gopher, table A1: 5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10); "
            "n from 1 to 10.")

        @field_validator("max_top_ngram_char_frac", "max_dup_ngram_char_frac")
        @classmethod
        def _sizes(cls, value: dict[int, float]) -> dict[int, float]:
            if any(not 1 <= n <= 10 for n in value):
                msg = f"n-gram sizes go from 1 to 10, got {sorted(value)}"
                raise ValueError(msg)
            return value

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        p = self.params
        text = self.judged_text(batch)
        chars = pc.utf8_length(text).to_numpy(zero_copy_only=False).astype(np.int64)
        paragraphs = pc.split_pattern_regex(pc.utf8_trim_whitespace(text), r"\n{2,}")
        n_para, dup_para, dup_para_chars = duplicate_parts(paragraphs)
        n_line, dup_line, dup_line_chars = duplicate_parts(pc.split_pattern_regex(text, r"\n+"))
        langs = self.languages_of(batch)
        top_bounds = _ngram_bounds(p.max_top_ngram_char_frac, langs, lambda s: s.top_n_grams)
        dup_bounds = _ngram_bounds(p.max_dup_ngram_char_frac, langs, lambda s: s.dup_n_grams)
        top, dup = ngram_repetition(words_of(batch, self.judged_words(text)), list(top_bounds), list(dup_bounds))
        scores = {
            "dup_para_frac": _ratio(dup_para, n_para),
            "dup_para_char_frac": _ratio(dup_para_chars, chars),
            "dup_line_frac": _ratio(dup_line, n_line),
            "dup_line_char_frac": _ratio(dup_line_chars, chars),
        }
        for n, values in top.items():  # -1: fewer than n words, no n-gram to judge
            # at most 1: an n-gram's words joined by spaces, as datatrove and FineWeb-2 measure them (their thresholds
            # assume it), outrun a short text written without spaces ("太短了。": 1.5); no bound is above 1
            share = np.minimum(_ratio(values, chars), 1.0)
            scores[_column("top", n, p.max_top_ngram_char_frac)] = np.where(values >= 0, share, np.nan)
        for n, values in dup.items():
            scores[_column("dup", n, p.max_dup_ngram_char_frac)] = _ratio(values, chars)
        scores["_chars"] = chars
        scores[f"_{FALLBACK_LANGUAGE}"] = langs.fallback
        scores["_top_bounds"] = top_bounds  # type: ignore[assignment]
        scores["_dup_bounds"] = dup_bounds  # type: ignore[assignment]
        if langs.groups:
            scores["_max_dup_line_frac"] = langs.per_document(p.max_dup_line_frac, lambda s: s.dup_line_frac)
        return scores

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        s = scores
        rules = [(s["_chars"] == 0, "empty")]
        line_bound = s.get("_max_dup_line_frac", p.max_dup_line_frac)
        for key, bound in [("dup_para_frac", p.max_dup_para_frac), ("dup_para_char_frac", p.max_dup_para_char_frac),
                           ("dup_line_frac", line_bound), ("dup_line_char_frac", p.max_dup_line_char_frac)]:
            if bound is not None:
                rules.append((s[key] > bound, key))
        for kind, own in (("top", p.max_top_ngram_char_frac), ("dup", p.max_dup_ngram_char_frac)):
            bounds = s[f"_{kind}_bounds"]
            rules += [(s[_column(kind, n, own)] > v, f"{kind}_{n}gram") for n, v in sorted(bounds.items())]
        with np.errstate(invalid="ignore"):
            return first_reason(len(s["_chars"]), rules)


def _ngram_bounds(own: dict[int, float], langs: DocumentLanguages,
                  setting: Callable[[LanguageSettings], Mapping[int, float]]) -> dict[int, float | np.ndarray]:
    """n -> the bound of every document (an array where the batch has languages; NaN: n not judged)."""
    if not langs.groups:
        return dict(own)
    sizes = sorted({*own, *(n for s in langs.groups for n in setting(s))})
    return {n: langs.per_document(own.get(n), lambda s, n=n: setting(s).get(n)) for n in sizes}


def _column(kind: str, n: int, own: dict[int, float]) -> str:
    """The score name of an n-gram fraction: a column for the stage's own sizes, hidden for the others."""
    name = f"{kind}_{n}gram_char_frac"
    return name if n in own else f"_{name}"
