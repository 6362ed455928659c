"""Flagged-word ratio filter over better-profanity's installed word list."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from curation import schema
from curation.apply import run_stage
from curation.schema import documents_table
from curation.stages.toxicity import DEFAULT_IGNORED, FlaggedWords, better_profanity_words


def _scores(texts: list[str | None], **params: object) -> list[tuple[int, float]]:
    scores = FlaggedWords(**params).score(documents_table(texts))
    return [
        (int(n), round(float(r), 4))
        for n, r in zip(scores["flagged_words"], scores["flagged_words_ratio"], strict=True)
    ]


def test_the_list_comes_from_the_installed_package():
    words = better_profanity_words()
    assert len(words) > 800 and "fuck" in words
    assert not list(Path(__file__).resolve().parents[1].joinpath("curation").rglob("*wordlist*"))


def test_words_match_case_insensitively_at_word_boundaries():
    texts = [
        "What the FUCK, this is Shit!",  # 2 of 6 words, case and punctuation
        "Scunthorpe and assessment and classic passage",  # substrings are not words
        "He is an ass-fucker.",  # a hyphenated entry: both words flagged, once each
        "Rated f.u.c.k and 2 girls 1 cup",  # spaced-out spelling and a phrase: n-grams
        "Über fuck über",  # Unicode letters are word characters
        None,
        "",
    ]
    assert _scores(texts) == [(2, 0.3333), (0, 0.0), (2, 0.4), (8, 0.8), (1, 0.3333), (0, 0.0), (0, 0.0)]


def test_ordinary_and_clinical_words_are_ignored_by_default_and_can_be_restored():
    text = ["The uterus and the penis are organs; gay rights; God and hell in scripture; kill the process."]
    assert _scores(text) == [(0, 0.0)]
    assert _scores(text, ignore=[])[0][0] == 6
    assert {"gay", "uterus", "god"} <= set(DEFAULT_IGNORED)


def test_drop_above_max_ratio_with_reason():
    long_text = " ".join(["word"] * 199 + ["shit"])  # 0.5 % flagged: kept at the default 1 %
    dense = "shit " * 3 + "word " * 7  # 30 %
    out = run_stage(FlaggedWords(keep_scores=True), documents_table([long_text, dense, "clean text"]))
    assert out.column(schema.REASON).to_pylist() == [None, "flagged_words", None]
    assert out.column("flagged_words").to_pylist() == [1, 3, 0]
    c4 = run_stage(FlaggedWords(max_ratio=0.0), documents_table([long_text, "clean text"]))  # C4: any flagged word
    assert c4.column(schema.REASON).to_pylist() == ["flagged_words", None]


def test_own_word_list_and_extra_entries(tmp_path: Path):
    wordlist = tmp_path / "words.txt"
    wordlist.write_text("Badword\nvery bad phrase\n\n")
    assert _scores(["a badword and a very bad phrase here", "nothing"], wordlist=str(wordlist), ignore=[]) == [
        (4, 0.5),
        (0, 0.0),
    ]
    assert _scores(["spam eggs"], extra=["spam"]) == [(1, 0.5)]
    with pytest.raises(FileNotFoundError, match="word list not found"):
        FlaggedWords(wordlist=str(tmp_path / "missing.txt")).setup()


def test_symbol_spellings_do_not_become_innocent_words():
    # better-profanity lists "sh!+" and "shi+": tokenized they would be "sh" and "shi"
    assert _scores(["sh and shi are syllables; Shi Jinping"]) == [(0, 0.0)]
    assert _scores(["sh1t happens"]) == [(1, 0.5)]  # digit leetspeak is a word and matches


def test_only_english_documents_when_a_language_is_known():
    table = documents_table(["Nie pochylaj się nad osobą", "what the fuck", "what the fuck", "what the fuck"])
    table = table.append_column("lang", pa.array(["pl", "en", "de", None], pa.string()))
    table = table.append_column("pos", pa.array(range(4)))
    out = run_stage(FlaggedWords(keep_scores=True), table).sort_by("pos")  # run_stage puts passed-by rows last
    assert out.column(schema.REASON).to_pylist() == [None, "flagged_words", None, "flagged_words"]
    assert out.column("flagged_words").to_pylist() == [None, 1, None, 1]  # other languages pass unchecked
    every = run_stage(FlaggedWords(languages=None), table).sort_by("pos")
    assert every.column(schema.REASON).to_pylist() == ["flagged_words"] * 4  # Polish "nad" is on the list
