"""Simplified or Traditional Chinese: told apart, and Traditional converted to Simplified, with OpenCC's data.

OpenCC (Open Chinese Convert, Apache-2.0; the `opencc` wheel ships its C++ library and its dictionaries) converts
between the scripts by its character tables (`TSCharacters`, `STCharacters`) and its phrase tables, which pick the
right character where one maps to several (后/後, 干/乾/幹 by their words). A character that the Traditional ->
Simplified conversion (`t2s`) changes is one Simplified Chinese does not write; one that `s2t` changes, one
Traditional does not write. A text is `Hant` when `t2s` changes more of its characters than `s2t` does, `Hans`
when fewer, and `Hani` (Han, either script) when both change as many (mostly: none, a text of characters both
scripts share). On real pages: the newspaper test page (Simplified, 725 characters) has 0 characters `t2s`
changes and 211 that `s2t` does; a Taiwanese blog (readability's `pixnet`, 4,352) 750 and 17 (a few characters
that Taiwan writes as Simplified does, which the phrase tables do not know).

On the Leipzig Chinese sentences (Simplified) and their OpenCC `s2t` conversions, every document of 1, 3 or 12
sentences gets its script (`benchmarks/han_script.py`). Cost: the first `MAX_CHARS` characters of a text are
converted both ways (OpenCC: ~70 MB/s t2s, ~30 MB/s s2t per core); `langid` on 12-sentence Chinese documents
takes 1.04-1.19x the CPU time it takes without `lang_script` (nothing on other languages).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from curation.lang.codes import HAN_COMMON

HANS, HANT = "Hans", "Hant"
MAX_CHARS = 300  # a text's script shows in its first characters (one sentence sufficed on the benchmark)
TO_SIMPLIFIED, TO_TRADITIONAL = "t2s", "s2t"  # OpenCC's configurations (mainland Simplified, OpenCC Traditional)


@cache
def converter(config: str) -> Any:
    """OpenCC's converter for `config` (`t2s`, `s2t`, `tw2s`...), built once per process (~0.05 s)."""
    import opencc

    return opencc.OpenCC(config)


def changed(text: str, converted: str) -> int:
    """How many characters of `text` the conversion changed (OpenCC converts character for character; a phrase
    table that changes a word's length is counted by the characters that differ as multisets)."""
    if len(text) == len(converted):
        a = np.frombuffer(text.encode("utf-32-le"), np.uint32)
        b = np.frombuffer(converted.encode("utf-32-le"), np.uint32)
        return int(np.count_nonzero(a != b))
    return sum((Counter(text) - Counter(converted)).values())


def han_scripts(texts: Sequence[str]) -> list[str]:
    """Per text: `Hans`, `Hant` or `Hani` (see the module doc), judged on its first `MAX_CHARS` characters.

    The heads are converted joined, one line each, in one call per direction (a call costs ~20 us whatever its
    length) and compared as code points at once; texts whose conversion changed their length are counted one by
    one."""
    heads = [(text or "")[:MAX_CHARS].replace("\n", " ") for text in texts]
    if not heads:
        return []
    joined = "\n".join(heads)
    traditional = _changed_per_text(heads, joined, converter(TO_SIMPLIFIED).convert(joined), TO_SIMPLIFIED)
    simplified = _changed_per_text(heads, joined, converter(TO_TRADITIONAL).convert(joined), TO_TRADITIONAL)
    return [HANT if t > s else HANS if s > t else HAN_COMMON for t, s in zip(traditional, simplified, strict=True)]


def _changed_per_text(heads: list[str], joined: str, converted: str, config: str) -> list[int]:
    if len(converted) != len(joined):
        convert = converter(config).convert
        return [changed(head, convert(head)) for head in heads]
    a = np.frombuffer(joined.encode("utf-32-le"), np.uint32)
    b = np.frombuffer(converted.encode("utf-32-le"), np.uint32)
    starts = np.cumsum([0] + [len(head) + 1 for head in heads[:-1]])
    differs = np.append((a != b).astype(np.int64), 0)  # one past the end: reduceat needs a start inside
    return np.add.reduceat(differs, starts).tolist()


def to_simplified(texts: Sequence[str], config: str = TO_SIMPLIFIED) -> list[str]:
    """Each text converted to Simplified Chinese by OpenCC's `config` (`t2s`: characters and phrases; `tw2s`,
    `tw2sp`, `hk2s`: from Taiwan's or Hong Kong's forms)."""
    convert = converter(config).convert
    return [convert(text) for text in texts]
