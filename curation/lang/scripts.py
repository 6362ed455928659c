"""The writing system (ISO 15924 script code) of a text, from its letters' Unicode blocks.

Why: a document whose language is unknown (no `lang`, or a code we have no settings for) is segmented
and filtered by its script's rules, and the script is what decides whether words are separated by
spaces. Only the main block(s) of each script are listed: digits, punctuation and symbols belong to
no script here, so they do not vote.
"""

from __future__ import annotations

import numpy as np

# (first, last code point, script). Kana votes "Jpan"; Hangul syllables and jamo vote "Hang".
_BLOCKS: list[tuple[int, int, str]] = [
    (0x41, 0x5A, "Latn"), (0x61, 0x7A, "Latn"), (0xC0, 0x24F, "Latn"), (0x370, 0x3FF, "Grek"),
    (0x400, 0x52F, "Cyrl"), (0x531, 0x58F, "Armn"), (0x591, 0x5FF, "Hebr"), (0x600, 0x6FF, "Arab"),
    (0x700, 0x74F, "Syrc"), (0x750, 0x77F, "Arab"), (0x780, 0x7BF, "Thaa"), (0x8A0, 0x8FF, "Arab"),
    (0x900, 0x97F, "Deva"), (0x980, 0x9FF, "Beng"), (0xA00, 0xA7F, "Guru"), (0xA80, 0xAFF, "Gujr"),
    (0xB00, 0xB7F, "Orya"), (0xB80, 0xBFF, "Taml"), (0xC00, 0xC7F, "Telu"), (0xC80, 0xCFF, "Knda"),
    (0xD00, 0xD7F, "Mlym"), (0xD80, 0xDFF, "Sinh"), (0xE00, 0xE7F, "Thai"), (0xE80, 0xEFF, "Laoo"),
    (0xF00, 0xFFF, "Tibt"), (0x1000, 0x109F, "Mymr"), (0x10A0, 0x10FF, "Geor"), (0x1100, 0x11FF, "Hang"),
    (0x1200, 0x139F, "Ethi"), (0x1400, 0x167F, "Cans"), (0x1780, 0x17FF, "Khmr"), (0x1800, 0x18AF, "Mong"),
    (0x19E0, 0x19FF, "Khmr"), (0x1C90, 0x1CBF, "Geor"), (0x1E00, 0x1EFF, "Latn"), (0x1F00, 0x1FFF, "Grek"),
    (0x2D30, 0x2D7F, "Tfng"), (0x3040, 0x30FF, "Jpan"), (0x3130, 0x318F, "Hang"), (0x31F0, 0x31FF, "Jpan"),
    (0x3400, 0x4DBF, "Hani"), (0x4E00, 0x9FFF, "Hani"), (0xAC00, 0xD7AF, "Hang"), (0xF900, 0xFAFF, "Hani"),
    (0xFB50, 0xFDFF, "Arab"), (0xFE70, 0xFEFF, "Arab"), (0xFF21, 0xFF3A, "Latn"), (0xFF41, 0xFF5A, "Latn"),
    (0xFF66, 0xFF9F, "Jpan"), (0x20000, 0x2FA1F, "Hani"),
]
_STARTS = np.array([b[0] for b in _BLOCKS], np.int64)
_ENDS = np.array([b[1] for b in _BLOCKS], np.int64)
_NAMES = sorted({b[2] for b in _BLOCKS})
_INDEX = np.array([_NAMES.index(b[2]) for b in _BLOCKS], np.int64)

CJK_SCRIPTS = frozenset({"Hani", "Jpan", "Hang"})
"""Scripts of thousands of characters (Han, Japanese kana with kanji, Hangul syllables), where a text's
alphabet is large and its rarest characters are many: what a tokenizer's character coverage depends on."""

# Japanese mixes kanji (Hani) with kana; a few kana among many kanji already make a text Japanese.
_KANA_SHARE_FOR_JAPANESE = 0.05


def script_counts(text: str, sample: int = 4000) -> dict[str, int]:
    """Letters of each script among the first `sample` characters."""
    points = np.frombuffer(text[:sample].encode("utf-32-le"), np.uint32).astype(np.int64)
    block = np.searchsorted(_STARTS, points, side="right") - 1
    inside = (block >= 0) & (points <= _ENDS[np.maximum(block, 0)])
    counts = np.bincount(_INDEX[block[inside]], minlength=len(_NAMES))
    return {name: int(n) for name, n in zip(_NAMES, counts, strict=True) if n}


def letters_by_script(histogram: np.ndarray) -> dict[str, int]:
    """Letters of each script in a histogram of code points (`histogram[c]`: how often code point `c` occurs)."""
    before = np.concatenate([[0], np.cumsum(histogram, dtype=np.int64)])
    ends = np.minimum(_ENDS + 1, len(histogram))
    per_block = before[ends] - before[np.minimum(_STARTS, ends)]
    counts = np.bincount(_INDEX, weights=per_block, minlength=len(_NAMES)).astype(np.int64)
    return {name: int(n) for name, n in zip(_NAMES, counts, strict=True) if n}


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
