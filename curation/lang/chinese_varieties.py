"""Written Cantonese and Wu told from Mandarin by the characters only they write.

lid.176 labels written Cantonese `zh` with all its confidence (the UDHR's Cantonese translation: zh 1.0, in Simplified
and in Hong Kong's Traditional script), and it would be judged by Mandarin's settings and stop words. Its grammar
words have characters of their own, which Mandarin does not write: 嘅 (的), 咗 (了), 喺 (在), 哋 (們), 啲, 嘢, 嗰, 噉,
冇 (沒有), 佢 (他), 咩, 嚟, 畀, 睇, 俾, 揾/搵, 攞, 啱, 冚, 乜, 嘥, 諗. The UDHR's Cantonese holds one in 11 of its Han
characters; of the 37,480 Mandarin posts of COLD (`../shared/data/toxicity/cold`), 12 hold one, none three.

lid.176 also labels Mandarin Wu: 193 of COLD's posts (`我就是觉得男主太可怜`), dropped where a recipe keeps zh.
Written Wu (Shanghainese) has its own words too: 侬 (你), 覅 (不要), 搿 (这), 㑚 (你们), 伲 (我们), 咾, 辰光 (时候),
勿要, 交关 (很), 白相 (玩), and 阿拉 (我们) and 伊拉 (他们) where they are not Mandarin's 阿拉伯 or 伊拉克. Of COLD's
posts few hold one (吴侬软语, 列侬), none three.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CANTONESE_RE2 = "[嘅咗喺哋啲嘢嗰噉冇佢咩嚟畀睇俾揾搵攞啱冚乜嘥諗]"
WU_RE2 = "[侬覅搿㑚伲咾]|辰光|阿拉|伊拉|勿要|交关|白相"
NOT_WU_RE2 = "阿拉伯|阿拉斯|阿拉丁|阿拉木|伊拉克|伊拉斯"  # Mandarin's names that hold 阿拉 or 伊拉
MIN_MARKS = 3  # characters of them, at least
MIN_SHARE = 0.01  # of the text's Han characters
# What is quoted is someone's speech: Hong Kong's news, written in standard Chinese, quotes Cantonese as spoken
# (市民陳先生說：「佢哋講咗好多年」), and is no Cantonese text for that
QUOTED_RE2 = r"「[^」]*」|『[^』]*』|“[^”]*”|\"[^\"]*\""


def written_cantonese(texts: pa.Array) -> np.ndarray:
    """Which texts are written Cantonese: outside what they quote, `MIN_MARKS` of its own characters, `MIN_SHARE`
    of their Han ones."""
    return _written_in(texts, CANTONESE_RE2)


def written_wu(texts: pa.Array) -> np.ndarray:
    """Which texts are written Wu, as `written_cantonese` tells Cantonese (by `WU_RE2`)."""
    return _written_in(pc.replace_substring_regex(texts, NOT_WU_RE2, ""), WU_RE2)


def _written_in(texts: pa.Array, own: str) -> np.ndarray:
    marks = pc.count_substring_regex(texts, own).to_numpy(zero_copy_only=False)
    if not (marks >= MIN_MARKS).any():
        return np.zeros(len(texts), bool)
    told = pc.replace_substring_regex(texts, QUOTED_RE2, "")
    marks = pc.count_substring_regex(told, own).to_numpy(zero_copy_only=False)
    han = pc.count_substring_regex(told, r"\p{Han}").to_numpy(zero_copy_only=False)
    return (marks >= MIN_MARKS) & (marks >= MIN_SHARE * han)
