"""FineWeb's own quality rules (Penedo et al. 2024, "The FineWeb Datasets", section 3.4), with the
defaults and semantics of datatrove 0.10.1's FineWebQualityFilter, which produced FineWeb.

FineWeb chose these by comparing documents that older filters removed from C4 against ones they
kept; they target list-like, boilerplate and repeated-line pages that Gopher and C4 miss.

Languages, where a batch has a `lang` column (see `curation.stages.languages.LanguageParams`): words come
from `curation.lang.words`; for a language other than English the line punctuation share and the
newlines per word come from its settings (`line_punct_thr`, `new_line_ratio`: FineWeb-2's, which turns
the punctuation rule off where its value is 0, e.g. German and Thai), so do the duplicated line characters
(`char_dup_ratio`: 0.1 for every language but English, as FineWeb-2's pipeline sets it, against FineWeb's 0.01
for English), and a line ends a sentence if it ends in its script's `terminal_punctuation`. The short-line
rule stays on for every language (FineWeb-2 turned it off, which on real non-English pages keeps 0.5% more of
them and lets menus of short lines through, 2 of 150), its bound in characters the language's
(`short_line_length`: FineWeb's 30 scaled by the language's characters per word, so that a short line says as
little in Chinese, 10 characters, as in English).

Layout (`prose_only`, `curation.text.layout`): code blocks, tables and headings are left out of every ratio, and a
list item that reads as a sentence (long, with punctuation inside) counts as a line ending one and not as a short
line, so an article of bullet lists and code is judged on its prose; a list of link titles is not. A paragraph
hard-wrapped at a width (`curation.text.layout.wrapped`) counts as one line, the one it ends on. A sentence followed
by its citation marks (Wikipedia's `1850.[3]`, `Aguamenti.[5]`, `. [MP3 SP]`) ends a sentence: a 30,000-character
article whose every paragraph ends with its sources' marks read as a page without sentences.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.stages.base import Resources, first_reason, ratio
from curation.stages.languages import FALLBACK_LANGUAGE, LanguageFilter, LanguageParams, line_ends, words_of
from curation.text.columns import list_offsets, re2_class, segment_sum
from curation.text.layout import line_kinds, sentence_like, wrapped
from curation.text.repetition import duplicate_parts
from curation.text.splitter import SENTENCE_TERMINALS

_ENDS_SENTENCE = re2_class(SENTENCE_TERMINALS) + "$"
_CUT_SHORT = r"(\.\.|…)\s*$"  # two dots too: a Chinese portal truncates its headlines so
# a sentence followed by its citation marks (Wikipedia's `.[12]`, a lore article's `. [MP3 SP]`), not text cut short
_MARKS = r"[\"'”’)]*\s*(\[[^\]\[…]{1,24}\]\s*)+$"
_CITED, _CUT_CITED = re2_class(SENTENCE_TERMINALS) + _MARKS, r"(\.\.|…)" + _MARKS


class FineWeb(LanguageFilter):
    """Line punctuation, short lines, duplicated line characters and newlines per word.

    Drops, in order: `empty` (no non-blank line), `line_punct_ratio`, `short_line_ratio`,
    `char_dup_ratio`, `list_ratio`. Lines are the non-blank pieces between newlines, unstripped (a
    line ending in "." then a space does not end in punctuation); a line ends a sentence if its last
    character is a Unicode sentence terminal; duplicated line characters are divided by the
    characters that are not newlines; the list ratio is line breaks per word (spaCy English words; a blank line
    parting paragraphs is no break more).
    Per language: `line_punct_thr`, `new_line_ratio`, `char_dup_ratio`, `terminal_punctuation` (module doc); documents
    whose language had no settings of its own are counted as `fallback_language`.
    """

    name = "fineweb"
    # its reason is FineWeb's name; its score says what it measures (newlines per word), which no word of it names
    explained: ClassVar[dict[str, str | tuple[str, ...]]] = {"list_ratio": ("fw_new_line_ratio", "_max_new_line_ratio")}
    resources = Resources(cpus=1.0)
    size_scores: ClassVar[tuple[str, ...]] = ("_lines",)
    count_keys: ClassVar[tuple[str, ...]] = (FALLBACK_LANGUAGE,)
    output_columns: ClassVar[dict[str, pa.DataType]] = {
        "fw_line_punct_ratio": pa.float64(),
        "fw_short_line_ratio": pa.float64(),
        "fw_char_dup_ratio": pa.float64(),
        "fw_new_line_ratio": pa.float64(),
    }

    class Params(LanguageParams):
        min_line_punct_ratio: float | None = Field(
            0.12, ge=0, le=1, description="Drop if fewer lines end in sentence punctuation than this share "
            "(FineWeb: 0.12).")
        line_punct_exclude_zero: bool = Field(
            False, description="Do not apply `min_line_punct_ratio` to documents with no such line at all "
            "(FineWeb: false).")
        max_short_line_ratio: float | None = Field(
            0.67, ge=0, le=1, description="Drop if more lines are short than this share (FineWeb: 0.67).")
        short_line_length: int = Field(
            30, ge=0, description="A short line has at most this many characters (FineWeb: 30). English's; other "
            "languages' are their settings' `short_line_length`: 30 scaled by their characters per word (Chinese "
            "10, Japanese 9, Korean 22, Finnish 43).")
        max_char_dup_ratio: float | None = Field(
            0.01, ge=0, description="Drop if more characters are in lines repeating an earlier line "
            "(FineWeb: 0.01).")
        max_new_line_ratio: float | None = Field(
            0.3, ge=0, description="Drop if there are more newlines per word (list-like pages; FineWeb: 0.3).")

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        p = self.params
        text = self.judged_text(batch)
        lines = pc.split_pattern(text, "\n")
        offsets = list_offsets(lines)
        flat = lines.flatten()
        nonblank = pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(flat)), 0).to_numpy(zero_copy_only=False)
        n_lines = segment_sum(nonblank.astype(np.int64), offsets)
        langs = self.languages_of(batch)
        line_doc = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        short_length = langs.per_document(p.short_line_length, lambda s: s.short_line_length)[line_doc]
        ends = line_ends(flat, langs, line_doc, _ENDS_SENTENCE) & nonblank
        short = (pc.utf8_length(flat).to_numpy(zero_copy_only=False) <= short_length) & nonblank
        counted = nonblank
        if p.prose_only:  # a list item that reads as a sentence counts as one, whatever it ends in
            kinds = line_kinds(flat, offsets)
            sentences = sentence_like(flat, kinds, short_length)
            # a line cut short with an ellipsis (a headline of a link list, "...", "..") ends no sentence, as in C4
            ends &= ~pc.match_substring_regex(flat, _CUT_SHORT).to_numpy(zero_copy_only=False)
            cited = pc.and_not(pc.match_substring_regex(flat, _CITED), pc.match_substring_regex(flat, _CUT_CITED))
            ends |= cited.to_numpy(zero_copy_only=False)
            ends |= sentences
            short &= ~sentences
            # a hard-wrapped paragraph is one line: its last line (never short) is the one counted
            goes_on = wrapped(flat, offsets, kinds)
            counted = nonblank & ~goes_on
            short &= ~goes_on & ~np.concatenate([[False], goes_on[:-1]])
        n_counted = segment_sum(counted.astype(np.int64), offsets)
        kept_offsets = np.concatenate([[0], np.cumsum(n_lines)]).astype(np.int32)
        nonblank_lines = pa.ListArray.from_arrays(pa.array(kept_offsets), flat.filter(pa.array(nonblank)))
        dup_chars = duplicate_parts(nonblank_lines)[2]
        newlines = pc.count_substring(text, "\n").to_numpy(zero_copy_only=False)
        chars = pc.utf8_length(text).to_numpy(zero_copy_only=False) - newlines
        # a blank line parting paragraphs is no line more (datatrove counts every newline, of text C4 had joined)
        breaks = pc.count_substring_regex(text, r"\n(?:[ \t\r]*\n)*").to_numpy(zero_copy_only=False)
        needs_words = p.max_new_line_ratio is not None or bool(langs.groups)
        words = words_of(batch, self.judged_words(text)).counts if needs_words else np.zeros(len(newlines), np.int64)
        scores = {
            "fw_line_punct_ratio": ratio(segment_sum((ends & counted).astype(np.int64), offsets), n_counted),
            "fw_short_line_ratio": ratio(segment_sum((short & counted).astype(np.int64), offsets), n_counted),
            "fw_char_dup_ratio": ratio(dup_chars, chars),
            "fw_new_line_ratio": ratio(breaks, words),
            "_lines": n_lines,
            f"_{FALLBACK_LANGUAGE}": langs.fallback,
        }
        if langs.groups:
            scores["_min_line_punct_ratio"] = langs.per_document(
                p.min_line_punct_ratio, lambda s: s.line_punct_thr if s.line_punct_thr > 0 else None)
            scores["_max_new_line_ratio"] = langs.per_document(p.max_new_line_ratio, lambda s: s.new_line_ratio)
            scores["_max_char_dup_ratio"] = langs.per_document(p.max_char_dup_ratio, lambda s: s.char_dup_ratio)
        return scores

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        s = scores
        rules = [(s["_lines"] == 0, "empty")]
        punct = s["fw_line_punct_ratio"]
        punct_bound = s.get("_min_line_punct_ratio", p.min_line_punct_ratio)
        if punct_bound is not None:
            exempt = (punct == 0) if p.line_punct_exclude_zero else np.zeros(len(punct), bool)
            with np.errstate(invalid="ignore"):
                rules.append(((punct < punct_bound) & ~exempt, "line_punct_ratio"))
        for key, bound, reason in [("fw_short_line_ratio", p.max_short_line_ratio, "short_line_ratio"),
                                   ("fw_char_dup_ratio", s.get("_max_char_dup_ratio", p.max_char_dup_ratio),
                                    "char_dup_ratio"),
                                   ("fw_new_line_ratio", s.get("_max_new_line_ratio", p.max_new_line_ratio),
                                    "list_ratio")]:
            if bound is not None:
                rules.append((s[key] > bound, reason))
        with np.errstate(invalid="ignore"):
            return first_reason(len(punct), rules)
