"""Text normalization: mojibake repair (ftfy), Unicode normalization, control characters, whitespace; Burmese in the
Zawgyi font encoding detected and dropped."""

from __future__ import annotations

import functools
import warnings
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.stages.base import Processed, Resources, Stage, StageParams, with_text
from curation.text.columns import list_offsets, normalized
from curation.text.layout import CODE, line_kinds


@functools.cache
def _ftfy() -> Any:
    """ftfy's configuration for encoding repair only (curly quotes, full-width forms and ligatures are real
    text a model should see); ftfy is imported on first use, not by every process importing the stages."""
    from ftfy import TextFixerConfig

    return TextFixerConfig(unescape_html=False, uncurl_quotes=False, fix_character_width=False,
                           fix_latin_ligatures=False, normalization=None, explain=False)


# UTF-8 bytes read as cp1252/latin-1 leave a lead character (Â..ô) followed by a continuation byte
# shown as a latin-1 symbol or a cp1252 punctuation mark; read as cp1251, Cyrillic's lead bytes (Р, С) followed by
# one shown as a letter Russian does not use (ђ, Ѓ, ё...) or a punctuation mark: a columnar pre-check before ftfy's
# slower one.
_MOJIBAKE_HINT = (
    r"[\x{c2}-\x{f4}][\x{80}-\x{bf}\x{152}\x{153}\x{160}\x{161}\x{178}\x{17d}\x{17e}\x{192}\x{2c6}"
    r"\x{2dc}\x{2013}\x{2014}\x{2018}-\x{201e}\x{2020}-\x{2022}\x{2026}\x{2030}\x{2039}\x{203a}\x{20ac}\x{2122}]"
    r"|[РС][\x{400}-\x{40f}\x{450}-\x{45f}\x{490}\x{491}\x{a0}-\x{bf}\x{2013}-\x{2026}\x{2030}\x{2039}\x{203a}"
    r"\x{20ac}\x{2116}\x{2122}]"
)
# Zawgyi: a font encoding of Burmese on the Myanmar block's code points, with other meanings (most Burmese sites
# before 2019); read as Unicode it is misspelt text. Google's myanmartools detector (a Markov model in its wheel)
# gives a probability; 0.95 is its README's threshold where over-predicting is costly, as a drop is.
_MYANMAR = r"[\x{1000}-\x{109f}]"
ZAWGYI_ABOVE = 0.95
ZAWGYI_SAMPLE = 2000  # characters the detector reads: it is sure long before


@functools.cache
def _zawgyi_detector() -> Any:
    from myanmartools import ZawgyiDetector

    with warnings.catch_warnings():  # it opens its model with importlib's deprecated open_binary
        warnings.simplefilter("ignore", DeprecationWarning)
        return ZawgyiDetector()


# C0/C1 controls except tab and newline, the zero-width space, the word joiner, the byte-order mark, and the
# invisible marks and controls of bidirectional display (LRM, RLM, ALM, embeddings, overrides, isolates: the text is
# stored in its reading order without them; trafilatura removes them from pages, and after a Hebrew full stop an RLM
# hid the stop from every line rule: clean prose dropped). Not the zero-width non-joiner and joiner (U+200C, U+200D):
# they are spelling in Persian (می‌خواهم), in Indic scripts' conjuncts, in Sinhala, and inside emoji sequences;
# without them the words are misspelt.
_CONTROL = (r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\x{200b}\x{2060}\x{feff}"
            r"\x{61c}\x{200e}\x{200f}\x{202a}-\x{202e}\x{2066}-\x{2069}]")


# Windows-1252's punctuation stored as C1 controls (text read as latin-1: `don\x92t`, `1990\x962000`): the characters
# cp1252 puts there, as browsers show them and ftfy's fix_c1_controls gives, instead of removing them and joining words
_C1_CONTROL = r"[\x{80}-\x{9f}]"
_CP1252_C1 = {c: bytes([c]).decode("cp1252") for c in range(0x80, 0xA0) if c not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}

_SPACES = r"[ \t\x{a0}\x{2000}-\x{200a}\x{3000}]+"
# A fence or an indented line: the documents whose whitespace is tidied line by line, code's left as it is
_MAY_HOLD_CODE = r"(^|\n)([ \t]*(```|~~~)|[ \t]{2,}\S|\t)"


def _spaced(text: pa.Array, collapse: bool, max_blank_lines: int) -> pa.Array:
    """Runs of spaces as one (with `collapse`; line ends trimmed) and at most `max_blank_lines` empty lines in a
    row, but in code: a code block's indentation, its inner spaces and its empty lines are the program's (Python's
    and YAML's indentation is syntax; a Makefile needs its tabs). Documents with a fence or an indented line have
    their lines' kinds read (`curation.text.layout.line_kinds`); the others are tidied whole, as text."""
    blank_run = r"\n{" + str(max_blank_lines + 2) + ",}"
    plain = text
    if collapse:
        plain = pc.replace_substring_regex(pc.replace_substring_regex(plain, _SPACES, " "), r" ?\n ?", "\n")
    plain = pc.replace_substring_regex(plain, blank_run, "\n" * (max_blank_lines + 1))
    rows = np.flatnonzero(pc.match_substring_regex(text, _MAY_HOLD_CODE).to_numpy(zero_copy_only=False))
    if not len(rows):
        return plain
    lines = pc.split_pattern(text.take(pa.array(rows)), "\n")
    flat, offsets = lines.flatten(), list_offsets(lines)
    code = line_kinds(flat, offsets) == CODE
    if collapse:
        tidy = pc.utf8_trim(pc.replace_substring_regex(flat, _SPACES, " "), " ")
        flat = pc.if_else(pa.array(code), pc.utf8_rtrim(flat, " \t"), tidy)
    blank = pc.equal(pc.utf8_length(flat), 0).to_numpy(zero_copy_only=False) & ~code
    line_doc = np.repeat(np.arange(len(rows)), np.diff(offsets))
    at = np.arange(len(flat))
    run_start = np.maximum.accumulate(np.where(~blank | (at == offsets[line_doc]), at, 0))
    keep = ~blank | (at - run_start <= max_blank_lines)  # the first `max_blank_lines` empty lines of a run
    kept_offsets = np.concatenate([[0], np.cumsum(np.bincount(line_doc[keep], minlength=len(rows)))])
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(kept_offsets, pa.int32()), flat.filter(keep)), "\n")
    order = np.arange(len(text))
    order[rows] = len(text) + np.arange(len(rows))
    return pa.concat_arrays([plain, joined.cast(plain.type)]).take(pa.array(order))


class NormalizeParams(StageParams):
    fix_encoding: bool = Field(True, description="Repair mojibake (UTF-8 read as cp1252 and the like) with ftfy, "
                               "and cp1252's punctuation stored as C1 controls (`don\\x92t`).")
    form: Literal["NFC", "NFKC", "none"] = Field(
        "NFC", description="Unicode normalization form; NFC keeps the text as written (the web's norm, W3C)."
    )
    remove_control: bool = Field(True, description="Remove control characters, the zero-width space, the word "
                                 "joiner, the byte-order mark and the marks of bidirectional display (LRM, RLM, "
                                 "embeddings, isolates); the zero-width (non-)joiner is spelling: kept.")
    collapse_whitespace: bool = Field(
        True, description="Runs of spaces, tabs, no-break and typographic spaces and the ideographic space (U+3000: "
        "a Chinese paragraph's indent `　　` too) become one space; line ends are trimmed. Code "
        "(a fenced or indented block, a line shaped like code) keeps its indentation and inner spaces.",
    )
    max_blank_lines: int = Field(1, ge=0, description="At most this many empty lines in a row (paragraphs stay; "
                                 "a code block's are kept).")
    max_replaced_share: float | None = Field(
        0.01, ge=0, le=1, description="Drop documents (`replaced_characters`) whose characters are U+FFFD more than "
        "this share of their letters: text whose letters a wrong decoding lost (no real page of the test data "
        "holds one); where the lines holding them hold at most a fifth of its letters (a UTF-8 page with an "
        "advert in GBK), those lines are removed instead (`damaged_lines_removed`); null: never.")
    zawgyi: Literal["drop", "keep"] = Field(
        "drop", description="Burmese in the Zawgyi font encoding (older Burmese sites; Google's myanmartools "
        "detector): dropped as `zawgyi` (no converter installs from a wheel), or kept as it is.")


DAMAGED_LETTERS_MAX = 0.2  # of a text's letters, in lines holding U+FFFD: those lines go, not the text
DAMAGED_LINES_MAX = (2, 0.1)  # and at most this many such lines, or this share of its lines: one block, not a text
# whose every line a wrong decoding garbled, only some of them into U+FFFD (EUC-JP read as Big5)


def _without_damaged_lines(text: pa.Array, replaced: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """`text` without the lines holding U+FFFD of each `replaced` text whose such lines are few (`DAMAGED_LINES_MAX`)
    and hold at most `DAMAGED_LETTERS_MAX` of its letters (one block in another encoding: an advert in GBK on a UTF-8
    page lost the whole article), those texts no longer `replaced`, and the lines removed per text."""
    damaged = np.zeros(len(text), np.int64)
    rows = np.flatnonzero(replaced)
    if not len(rows):
        return text, replaced, damaged
    values = text.to_pylist()
    replaced = replaced.copy()
    for i in rows.tolist():
        lines = values[i].split("\n")
        bad = [line for line in lines if "\ufffd" in line]
        letters = [sum(c.isalpha() or c == "\ufffd" for c in part) for part in ("".join(bad), values[i])]
        few = len(bad) <= max(DAMAGED_LINES_MAX[0], DAMAGED_LINES_MAX[1] * sum(bool(line.strip()) for line in lines))
        if few and letters[0] <= DAMAGED_LETTERS_MAX * letters[1]:
            values[i] = "\n".join(line for line in lines if "\ufffd" not in line).strip()
            replaced[i], damaged[i] = False, len(bad)
    return pa.array(values, pa.string()), replaced, damaged


class Normalize(Stage):
    """Clean text without changing what it says; a document left empty is dropped as `empty`, one in Zawgyi-encoded
    Burmese as `zawgyi`, one whose letters a wrong decoding replaced with U+FFFD as `replaced_characters`.

    Columnar (pyarrow compute) except the ftfy repair, which runs only on documents holding the
    character pairs that mojibake leaves. Tallies: `encoding_fixed`, `changed`, `damaged_lines_removed`.
    """

    name = "normalize"
    Params = NormalizeParams
    resources = Resources(cpus=0.5)
    count_keys = ("encoding_fixed", "changed", "damaged_lines_removed")

    def process(self, batch: pa.Table) -> Processed:
        p = self.params
        before = pc.fill_null(batch.column("text"), "").combine_chunks()
        zawgyi = self._zawgyi(before) if p.zawgyi == "drop" else np.zeros(len(before), dtype=bool)
        text = before
        fixed = np.zeros(len(text), dtype=np.int64)
        if p.fix_encoding:
            hint = pc.match_substring_regex(text, _MOJIBAKE_HINT).to_numpy(zero_copy_only=False)
            c1 = pc.match_substring_regex(text, _C1_CONTROL).to_numpy(zero_copy_only=False)
            from ftfy import fix_text
            from ftfy.badness import is_bad

            values = text.to_pylist()
            for i in np.flatnonzero(hint):
                if not is_bad(values[i]):  # ftfy's own mojibake detector: a regex, far cheaper than a repair
                    continue
                repaired = fix_text(values[i], _ftfy())
                # still mojibake after: ftfy decoded pieces of a text that is no UTF-8 read wrong (GBK read as latin-1
                # has such pieces), and the rest is beyond repair; the text is left as it came
                if repaired != values[i] and not is_bad(repaired):
                    values[i], fixed[i] = repaired, 1
            for i in np.flatnonzero(c1):
                repaired = values[i].translate(_CP1252_C1)
                if repaired != values[i]:
                    values[i], fixed[i] = repaired, 1
            text = pa.array(values, pa.string())
        if p.form != "none":
            text = normalized(text, p.form)
        text = pc.replace_substring_regex(text, r"\r\n?", "\n")
        if p.remove_control:
            text = pc.replace_substring_regex(text, _CONTROL, "")
        text = pc.utf8_trim_whitespace(_spaced(text, p.collapse_whitespace, p.max_blank_lines))
        empty = pc.equal(pc.utf8_length(text), 0).to_numpy(zero_copy_only=False)
        changed = pc.invert(pc.equal(text, before)).to_numpy(zero_copy_only=False).astype(np.int64)
        replaced, share = self._replaced(text)
        text, replaced, damaged = _without_damaged_lines(text, replaced)
        changed |= damaged > 0
        table = with_text(batch, text)
        reasons = pa.array(np.select([empty, zawgyi, replaced], ["empty", "zawgyi", "replaced_characters"], None),
                           pa.string())
        details = pa.array(np.select(
            [empty, zawgyi, replaced],
            ["no text left: whitespace and control characters only",
             f"Burmese in the Zawgyi font encoding (p > {ZAWGYI_ABOVE})",
             np.char.add(np.char.add("U+FFFD for ", np.char.mod("%.1f%%", 100 * share)),
                         f" of the letters (max_replaced_share {p.max_replaced_share})")], None), pa.string())
        return Processed(table, reasons, details, counts={"encoding_fixed": fixed, "changed": changed,
                                                          "damaged_lines_removed": damaged})

    def _replaced(self, text: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Which texts hold more U+FFFD than `max_replaced_share` of their letters (and the U+FFFD, letters ones)."""
        share = np.zeros(len(text))
        bound = self.params.max_replaced_share
        if bound is not None:
            marks = pc.count_substring(text, "\ufffd").to_numpy(zero_copy_only=False)
            if marks.any():
                letters = pc.count_substring_regex(text, r"\pL|\x{fffd}").to_numpy(zero_copy_only=False)
                share = marks / np.maximum(letters, 1)
        return (share > bound) if bound is not None else np.zeros(len(text), bool), share

    @staticmethod
    def _zawgyi(text: pa.Array) -> np.ndarray:
        """Which texts are Zawgyi-encoded Burmese (only texts with a Myanmar-block character are read)."""
        found = np.zeros(len(text), dtype=bool)
        candidates = np.flatnonzero(pc.match_substring_regex(text, _MYANMAR).to_numpy(zero_copy_only=False))
        if len(candidates):
            detector = _zawgyi_detector()
            sample = pc.utf8_slice_codeunits(text.take(pa.array(candidates)), 0, ZAWGYI_SAMPLE).to_pylist()
            found[candidates] = [detector.get_zawgyi_probability(t) > ZAWGYI_ABOVE for t in sample]
        return found
