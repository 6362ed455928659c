"""The writing system (ISO 15924 script code) of a text, from its letters' Unicode blocks.

The one table of scripts: language ID checks a model's answer against a text's dominant script
(`curation.stages.langid.dominant_scripts`), and a document whose language is unknown (no `lang`, or a
code we have no settings for) is segmented and filtered by its script's rules (`script_of_text`). Only
letters and combining marks vote: digits, punctuation and symbols inside a script's block do not.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Sequence
from functools import cache

import numpy as np

# Hebrew's vowel points and cantillation marks and Arabic's harakat (and tatweel): written in religious text,
# children's books and learning material, left out of most text; language ID models and stop-word lists know the
# words without them (pointed Hebrew had no stop word, vocalized Arabic came out Mazanderani)
POINTS_RE2 = (r"[\x{0591}-\x{05BD}\x{05BF}\x{05C1}\x{05C2}\x{05C4}\x{05C5}\x{05C7}\x{0610}-\x{061A}\x{0640}"
              r"\x{064B}-\x{065F}\x{0670}\x{06D6}-\x{06DC}\x{06DF}-\x{06E4}\x{06E7}\x{06E8}\x{06EA}-\x{06ED}]")

# Unicode script ranges (ISO 15924 codes), by Unicode block; digits and punctuation shared by all
# scripts ("Common", "Inherited": combining marks) count for no script. Letters in no range below
# count as `UNKNOWN_SCRIPT`.
UNKNOWN_SCRIPT = "Zzzz"  # ISO 15924's code for an uncoded script: one no model here knows
_KANA = frozenset({"Hira", "Kana"})
_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x41, 0x5A, "Latn"), (0x61, 0x7A, "Latn"), (0xAA, 0xAA, "Latn"), (0xBA, 0xBA, "Latn"), (0xC0, 0xD6, "Latn"),
    (0xD8, 0xF6, "Latn"), (0xF8, 0x24F, "Latn"), (0x250, 0x2AF, "Latn"), (0x1D00, 0x1DBF, "Latn"),
    (0x1E00, 0x1EFF, "Latn"), (0x2C60, 0x2C7F, "Latn"), (0xA720, 0xA7FF, "Latn"), (0xAB30, 0xAB6F, "Latn"),
    (0xFB00, 0xFB06, "Latn"), (0xFF21, 0xFF3A, "Latn"), (0xFF41, 0xFF5A, "Latn"),
    (0x370, 0x3FF, "Grek"), (0x1F00, 0x1FFF, "Grek"),
    (0x400, 0x52F, "Cyrl"), (0x1C80, 0x1C8F, "Cyrl"), (0x2DE0, 0x2DFF, "Cyrl"), (0xA640, 0xA69F, "Cyrl"),
    (0x531, 0x58F, "Armn"), (0xFB13, 0xFB17, "Armn"),
    (0x591, 0x5FF, "Hebr"), (0xFB1D, 0xFB4F, "Hebr"),
    (0x600, 0x6FF, "Arab"), (0x750, 0x77F, "Arab"), (0x870, 0x8FF, "Arab"), (0xFB50, 0xFDFF, "Arab"),
    (0xFE70, 0xFEFF, "Arab"),
    (0x700, 0x74F, "Syrc"), (0x780, 0x7BF, "Thaa"), (0x7C0, 0x7FF, "Nkoo"), (0x800, 0x83F, "Samr"),
    (0x900, 0x97F, "Deva"), (0xA8E0, 0xA8FF, "Deva"), (0x980, 0x9FF, "Beng"), (0xA00, 0xA7F, "Guru"),
    (0xA80, 0xAFF, "Gujr"), (0xB00, 0xB7F, "Orya"), (0xB80, 0xBFF, "Taml"), (0xC00, 0xC7F, "Telu"),
    (0xC80, 0xCFF, "Knda"), (0xD00, 0xD7F, "Mlym"), (0xD80, 0xDFF, "Sinh"), (0xE00, 0xE7F, "Thai"),
    (0xE80, 0xEFF, "Laoo"), (0xF00, 0xFFF, "Tibt"), (0x1000, 0x109F, "Mymr"), (0xA9E0, 0xA9FF, "Mymr"),
    (0xAA60, 0xAA7F, "Mymr"),
    (0x10A0, 0x10FF, "Geor"), (0x1C90, 0x1CBF, "Geor"), (0x2D00, 0x2D2F, "Geor"),
    (0x1100, 0x11FF, "Hang"), (0x3130, 0x318F, "Hang"), (0xA960, 0xA97F, "Hang"), (0xAC00, 0xD7FF, "Hang"),
    (0xFFA0, 0xFFDC, "Hang"),
    (0x1200, 0x139F, "Ethi"), (0x2D80, 0x2DDF, "Ethi"), (0xAB00, 0xAB2F, "Ethi"),
    (0x13A0, 0x13FF, "Cher"), (0xAB70, 0xABBF, "Cher"), (0x1400, 0x167F, "Cans"), (0x18B0, 0x18FF, "Cans"),
    (0x1680, 0x169F, "Ogam"), (0x16A0, 0x16FF, "Runr"), (0x1780, 0x17FF, "Khmr"), (0x19E0, 0x19FF, "Khmr"),
    (0x1800, 0x18AF, "Mong"), (0x1B00, 0x1B7F, "Bali"), (0x1C50, 0x1C7F, "Olck"), (0x2C00, 0x2C5F, "Glag"),
    (0x2C80, 0x2CFF, "Copt"), (0x2D30, 0x2D7F, "Tfng"), (0xA000, 0xA4CF, "Yiii"), (0xA500, 0xA63F, "Vaii"),
    (0xA980, 0xA9DF, "Java"), (0x3040, 0x309F, "Hira"), (0x30A0, 0x30FF, "Kana"), (0x31F0, 0x31FF, "Kana"),
    (0xFF66, 0xFF9F, "Kana"), (0x3100, 0x312F, "Bopo"), (0x31A0, 0x31BF, "Bopo"),
    (0x2E80, 0x2FDF, "Hani"), (0x3005, 0x3007, "Hani"), (0x3021, 0x3029, "Hani"), (0x3400, 0x4DBF, "Hani"),
    (0x4E00, 0x9FFF, "Hani"), (0xF900, 0xFAFF, "Hani"), (0x20000, 0x323AF, "Hani"),
    (0x10330, 0x1034F, "Goth"), (0x1E900, 0x1E95F, "Adlm"),
)
_LIMIT = 0x323B0  # codepoints at or above count for no script


@cache
def script_table() -> tuple[np.ndarray, tuple[str, ...]]:
    """Codepoint -> script index (0: no script), and the script codes by index. Built once (~0.05 s)."""
    names = ("", *sorted({s for _, _, s in _RANGES}), UNKNOWN_SCRIPT)
    index = {name: i for i, name in enumerate(names)}
    table = np.zeros(_LIMIT + 1, dtype=np.uint8)
    for start, end, script in _RANGES:
        table[start:end + 1] = index[script]
    # Only letters and combining marks vote: digits, punctuation and symbols inside a script's block
    # (Arabic-Indic digits, the danda, CJK punctuation) do not. Letters outside the named ranges (in the
    # planes where scripts live) are some other script.
    other = index[UNKNOWN_SCRIPT]
    for cp in range(0x20000):
        kind = unicodedata.category(chr(cp))[0]
        if kind not in "LM":
            table[cp] = 0
        elif kind == "L" and table[cp] == 0:
            table[cp] = other
    table[0x30FC] = 0  # the katakana-hiragana prolonged sound mark is shared by both
    table[_LIMIT] = 0
    return table, names


def script_ids(codepoints: np.ndarray) -> np.ndarray:
    """Each code point's index into `script_table`'s names (int64; 0: no script)."""
    table, _ = script_table()
    return table[np.minimum(codepoints, _LIMIT)].astype(np.int64)


# The scripts a language's letters are in, where there are several: Japanese writes kana and kanji, Korean hangul
# and hanja (`curation.lang.settings.script_of_language` names Jpan and Hang).
_WRITTEN_IN = {"Jpan": ("Hira", "Kana", "Hani"), "Hang": ("Hang", "Hani")}


def in_scripts(codepoints: np.ndarray, scripts: Collection[str] | None) -> np.ndarray:
    """Whether each code point is a letter (or combining mark) of one of `scripts`, ISO 15924 codes as
    `script_of_text` gives them (Jpan: kana and kanji; Hang: hangul and hanja); None: of any script."""
    ids = script_ids(codepoints)
    if scripts is None:
        return ids > 0
    names = script_table()[1]
    wanted = [names.index(s) for script in scripts for s in _WRITTEN_IN.get(script, (script,)) if s in names]
    return np.isin(ids, wanted)


def written_scripts(texts: Sequence[str], min_share: float = 0.05, sample: int = 100_000) -> list[str]:
    """The scripts a body of text is written in: each the script of at least `min_share` of the texts
    (`script_of_text`; of `sample` texts evenly spread, in a larger body). Serbian or Uzbek texts may be in
    Cyrillic, Latin or both; Hindi on social media in Latin."""
    spread = texts[:: max(1, len(texts) // sample)]
    counts: dict[str, int] = {}
    for text in spread:
        if (script := script_of_text(text)) is not None:
            counts[script] = counts.get(script, 0) + 1
    return sorted(s for s, k in counts.items() if k >= min_share * len(spread))


CJK_SCRIPTS = frozenset({"Hani", "Jpan", "Hang"})
"""Scripts of thousands of characters (Han, Japanese kana with kanji, Hangul syllables), where a text's
alphabet is large and its rarest characters are many: what a tokenizer's character coverage depends on."""

# Japanese mixes kanji (Hani) with kana; a few kana among many kanji already make a text Japanese.
_KANA_SHARE_FOR_JAPANESE = 0.05


def script_counts(text: str, sample: int = 4000) -> dict[str, int]:
    """Letters of each script among the first `sample` characters."""
    ids = script_ids(np.frombuffer(text[:sample].encode("utf-32-le"), np.uint32))
    return _by_name(np.bincount(ids, minlength=len(script_table()[1])))


def letters_by_script(histogram: np.ndarray) -> dict[str, int]:
    """Letters of each script in a histogram of code points (`histogram[c]`: how often code point `c` occurs)."""
    ids = script_ids(np.arange(len(histogram)))
    return _by_name(np.bincount(ids, weights=histogram, minlength=len(script_table()[1])).round().astype(np.int64))


def _by_name(counts: np.ndarray) -> dict[str, int]:
    """Counts by script index -> by name, kana (Hira, Kana) together as "Jpan" (with kanji, what tells Japanese
    from Chinese); letters of no listed script (`UNKNOWN_SCRIPT`) are left out."""
    out: dict[str, int] = {}
    for name, n in zip(script_table()[1], counts.tolist(), strict=True):
        if n and name not in ("", UNKNOWN_SCRIPT):
            key = "Jpan" if name in _KANA else name
            out[key] = out.get(key, 0) + int(n)
    return out


def script_of_text(text: str, sample: int = 4000) -> str | None:
    """The script most of the text's letters are in (None: no letters). Han text with kana is "Jpan",
    and Korean with hanja stays "Hang" (it votes by letter, and hangul dominates)."""
    counts = script_counts(text, sample)
    if not counts:
        return None
    kana, han = counts.get("Jpan", 0), counts.get("Hani", 0)
    if kana and kana >= _KANA_SHARE_FOR_JAPANESE * (kana + han):
        counts["Jpan"] = kana + han
        counts.pop("Hani", None)
    return max(counts, key=counts.__getitem__)
