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

import json
from collections import Counter
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.lang.codes import HAN_COMMON

HANS, HANT = "Hans", "Hant"
MAX_CHARS = 300  # a text's script shows in its first characters (one sentence sufficed on the benchmark)
TO_SIMPLIFIED, TO_TRADITIONAL = "t2s", "s2t"  # OpenCC's configurations (mainland Simplified, OpenCC Traditional)
FORMS_FILE = Path(__file__).parent / "data" / "han_forms.json"


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


def derive_forms() -> tuple[str, str]:
    """Regex classes of the Han characters only Japanese writes (its shinjitai where Chinese writes another: 経, 済,
    駅, 図; not 国 or 学, which Simplified writes too, nor 為 or 衛, Taiwan's forms) and of those only Simplified
    Chinese writes (东, 观, 们, 这; not 国), from OpenCC's tables (`jp2t`, `t2s`, `s2tw`, `s2hk`, `t2tw`, `t2hk`;
    `s2t`, `t2jp`), character by character (0.7 s: `FORMS_FILE` holds them, `curation/lang/data/make_han_forms.py`
    writes it)."""
    chars = [chr(c) for c in range(0x4E00, 0xA000)]

    def each(config: str, texts: list[str]) -> list[str]:
        return converter(config).convert("\n".join(texts)).split("\n")

    # Japanese's form of a character that Simplified Chinese writes otherwise (its traditional form is one `t2s`
    # changes: not OpenCC's old variants 硏 or 槪), as Taiwan and Hong Kong do too
    of_japanese = each("jp2t", chars)
    simplified = each(TO_SIMPLIFIED, of_japanese)
    chinese = zip(simplified, *(each(config, simplified) for config in ("s2tw", "s2hk")),
                  *(each(config, of_japanese) for config in ("t2tw", "t2hk")), strict=True)
    of_simplified = each(TO_TRADITIONAL, chars)  # unchanged: no character Simplified writes (沪, Japanese's for 濾)
    japanese = [c for c, t, s, forms, own in zip(chars, of_japanese, simplified, chinese, of_simplified, strict=True)
                if t != c and s != t and c not in forms and own == c]
    only_simplified = [c for c, t, j in zip(chars, of_simplified, each("t2jp", of_simplified), strict=True)
                       if c not in (t, j)]
    return f"[{''.join(japanese)}]", f"[{''.join(only_simplified)}]"


@cache
def _forms() -> tuple[str, str]:
    forms = json.loads(FORMS_FILE.read_text(encoding="utf-8"))
    return forms["japanese"], forms["simplified"]


def japanese_and_simplified_forms(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Per text: its characters of the forms only Japanese writes, and of those only Simplified Chinese writes."""
    japanese, simplified = _forms()
    return tuple(pc.count_substring_regex(texts, pattern).to_numpy(zero_copy_only=False)  # type: ignore[return-value]
                 for pattern in (japanese, simplified))
