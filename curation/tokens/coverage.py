"""The character coverage of a trained tokenizer, chosen from the script mix of its training sample.

sentencepiece's alphabet is the most frequent characters of the sample that together make up
`character_coverage` of its characters; every other character is spelt in byte pieces (byte fallback)
and costs no vocabulary slot. Its documentation recommends 0.9995 for languages with large character
sets (Chinese, Japanese) and 1.0 for small alphabets. `character_coverage: auto` (the default of a
recipe's `tokenizer.train`) applies that to the sample's letters, by script (`curation.lang.scripts`):

* **CJK-heavy** (at least `CJK_HEAVY_SHARE` of the letters are Han, kana or Hangul): 0.9995. Such a
  sample holds thousands of distinct characters; the rarest, 0.05% of the occurrences, would each take
  a slot for a handful of uses.
* **Every character fits** (otherwise, and the sample's distinct characters are at most
  `CHEAP_ALPHABET_SHARE` of the vocabulary: alphabets, even several): 1.0, so every letter seen gets its
  own piece.
* **Otherwise** 0.9995, sentencepiece's default: web text in alphabetic scripts still carries stray
  characters (other scripts, symbols, emoji), and 1.0 would give each one a piece (and fail training
  when they outnumber the vocabulary). On 261 real English pages 1.0 instead of 0.9995 gave the same
  tokens per character with 8,000 pieces and 0.7% more with 2,000, so nothing is lost by keeping the
  default there.

Whatever the rule says, the alphabet it asks for takes at most half of the pieces left after the
special and byte pieces (`RESERVED_PIECES`); past that the coverage is lowered until it fits (down to
0.98, the least sentencepiece takes): a small vocabulary on Chinese text would otherwise leave few pieces
for words, or fail to train at all (sentencepiece refuses an alphabet larger than the vocabulary). A
recipe overrides the rule with a number.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from curation.lang.scripts import CJK_SCRIPTS, letters_by_script

CJK_HEAVY_SHARE = 0.10
CHEAP_ALPHABET_SHARE = 0.05
LARGE_SET_COVERAGE = 0.9995
FULL_COVERAGE = 1.0
LEAST_COVERAGE = 0.98  # sentencepiece refuses less
RESERVED_PIECES = 260  # <unk>, <s>, </s>, a pad if any, and the 256 byte pieces of byte fallback
_CODE_POINTS = 0x110000
_CHUNK_CHARS = 1 << 22  # characters counted at once: bounds the temporaries, not the sample


@dataclass(frozen=True)
class Coverage:
    """The coverage chosen for a sample, and what it was chosen from."""

    character_coverage: float
    rule: str
    cjk_share: float  # share of the sample's letters that are Han, kana or Hangul
    distinct_characters: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"cjk_share": round(self.cjk_share, 4)}


def character_histogram(texts: Iterable[str]) -> np.ndarray:
    """How often each code point occurs in `texts` (int64, indexed by code point)."""
    total = np.zeros(_CODE_POINTS, np.int64)
    chunk: list[str] = []
    size = 0

    def count() -> None:
        points = np.frombuffer("".join(chunk).encode("utf-32-le", "surrogatepass"), np.uint32)
        total[:] += np.bincount(points, minlength=_CODE_POINTS)[:_CODE_POINTS]

    for text in texts:
        chunk.append(text)
        size += len(text)
        if size >= _CHUNK_CHARS:
            count()
            chunk, size = [], 0
    if chunk:
        count()
    return total


def choose_coverage(texts: Iterable[str], vocab_size: int) -> Coverage:
    """The character coverage for a tokenizer of `vocab_size` pieces trained on `texts` (see module doc)."""
    histogram = character_histogram(texts)
    letters = letters_by_script(histogram)
    n_letters = sum(letters.values())
    cjk = sum(letters.get(script, 0) for script in CJK_SCRIPTS) / n_letters if n_letters else 0.0
    distinct = int(np.count_nonzero(histogram))
    cheap = int(CHEAP_ALPHABET_SHARE * vocab_size)
    if cjk >= CJK_HEAVY_SHARE:
        value, rule = LARGE_SET_COVERAGE, f"CJK-heavy sample: {cjk:.1%} of its letters are Han, kana or Hangul"
    elif distinct <= cheap:
        value, rule = FULL_COVERAGE, (f"every character fits: {distinct:,} distinct characters, at most "
                                      f"{CHEAP_ALPHABET_SHARE:.0%} of the vocabulary ({cheap:,})")
    else:
        value, rule = LARGE_SET_COVERAGE, (f"{distinct:,} distinct characters, more than {CHEAP_ALPHABET_SHARE:.0%} "
                                           f"of the vocabulary ({cheap:,}): the rarest are spelt in bytes")
    most = max(1, (vocab_size - RESERVED_PIECES) // 2)
    covered = np.cumsum(np.sort(histogram[histogram > 0])[::-1]) / max(1, int(histogram.sum()))
    if len(covered) > most and covered[most - 1] < value:
        # the share the `most` commonest characters cover, a hair under: sentencepiece takes characters
        # until their share reaches the coverage, so this stops it at `most`
        lowered = max(LEAST_COVERAGE, float(np.floor(covered[most - 1] * 1e6 - 1) / 1e6))
        least = ", sentencepiece's least," if lowered == LEAST_COVERAGE else ""
        rule += (f"; lowered from {value:g} to {lowered:g}{least} for an alphabet of at most {most:,} pieces "
                 "(half of those the special and byte pieces leave)")
        value = lowered
    return Coverage(value, rule, cjk, distinct)
