"""Word segmentation runs once per piece and worker: every word-based stage of a batch reuses it.

`LanguageWords` memoises the segmenter's words of each whitespace piece of unspaced text, keyed by content, so
the stages after the first (and c4, which splits the same documents line by line) find them, even when an
earlier stage dropped documents or rewrote the batch. The words are those of a splitter without the memo.
"""

from __future__ import annotations

import pytest

from curation.lang import words as lang_words
from curation.lang.words import LanguageWords

CHINESE = [
    "今天天气很好，我们去公园散步。\n公园里有很多人在跑步和打太极拳。",
    "北京是中国的首都，也是一座历史悠久的城市。\n故宫每年吸引数百万游客。iPhone拍照 2024年",
    "今天天气很好，我们去公园散步。\n图书馆周末开放到晚上九点。",
]


@pytest.fixture
def calls(monkeypatch) -> list[str]:
    """The pieces the Chinese segmenter is asked to cut, in order."""
    asked: list[str] = []
    segment = lang_words._chinese()

    def counting(piece: str) -> list[str]:
        asked.append(piece)
        return segment(piece)

    monkeypatch.setitem(lang_words._LOADERS, "zh", lambda: counting)
    return asked


def fresh_words(texts: list[str]) -> list[list[str]]:
    splitter = LanguageWords(max_segmented_chars=-1)  # forgets its segmentations before every split
    return [splitter.split([t], ["zh"]).strings(0) for t in texts]


def test_each_piece_is_segmented_once_across_stages_and_lines(calls):
    splitter = LanguageWords()
    first = splitter.split(CHINESE, ["zh"] * 3)
    distinct = {p for t in CHINESE for p in t.split() if lang_words._SCRIPT_LETTERS["zh"].search(p)}
    assert sorted(calls) == sorted(distinct)  # the repeated first line of two documents: cut once
    asked = len(calls)
    again = splitter.split(CHINESE, ["zh"] * 3)  # a later stage on the same batch
    lines = [line for t in CHINESE for line in t.split("\n")]
    by_line = splitter.split(lines, ["zh"] * len(lines))  # c4: the same documents, line by line
    kept = splitter.split(CHINESE[1:], ["zh"] * 2)  # after a stage dropped the first document
    assert len(calls) == asked
    assert [first.strings(i) for i in range(3)] == [again.strings(i) for i in range(3)] == fresh_words(CHINESE)
    assert [kept.strings(i) for i in range(2)] == fresh_words(CHINESE[1:])
    assert [by_line.strings(i) for i in range(len(lines))] == fresh_words(lines)


def test_new_text_is_segmented_and_the_memo_is_bounded(calls):
    splitter = LanguageWords(max_segmented_chars=40)
    splitter.split(CHINESE[:1], ["zh"])
    splitter.split(CHINESE[1:2], ["zh"])
    assert splitter._segmented_chars <= 40 + len(CHINESE[1])  # forgotten before the split that passed the bound
    asked = len(calls)
    words = splitter.split(CHINESE, ["zh"] * 3)  # over the bound: forgotten first, so cut again
    assert len(calls) > asked
    assert [words.strings(i) for i in range(3)] == fresh_words(CHINESE)
    splitter.clear_segmented()
    assert splitter.split(CHINESE[:1], ["zh"]).strings(0) == fresh_words(CHINESE[:1])[0]


def test_clear_forgets_segmentations_with_the_vocabulary(calls):
    splitter = LanguageWords()
    expected = splitter.split(CHINESE[:1], ["zh"]).strings(0)
    asked = len(calls)
    splitter.clear()
    assert splitter.split(CHINESE[:1], ["zh"]).strings(0) == expected
    assert len(calls) == 2 * asked


def test_a_piece_is_memoised_per_segmenter():
    splitter = LanguageWords()
    text = "東京都に住んでいます"
    assert splitter.split([text], ["ja"]).strings(0) == LanguageWords().split([text], ["ja"]).strings(0)
    assert splitter.split([text], ["zh"]).strings(0) == LanguageWords().split([text], ["zh"]).strings(0)
