"""The default (English-like) word splitter: spaCy's English rules, a bounded memo."""

from __future__ import annotations

from curation.text.splitter import WordSplitter
from tests.support import spacy_english


def test_words_split_like_spacy_english():
    split = WordSplitter().words
    for text in ["Hello, world! I don't know.", "The U.S. e-mail (see: this).", "Visit http://example.com/a-b now",
                 "10km for $100, it's... cannot gonna", "Mr. Smith arrived at 5pm :)", "z.B. Straße’s",
                 "", " \n\t ", "है. और", "হয়. এবং", "ଅଛି, ଏବଂ"]:
        assert split(text) == spacy_english.words(text), text


def test_a_full_stop_after_a_vowel_sign_or_virama_is_a_word_of_its_own():
    """Scripts spaCy's English classes leave out (Gujarati, Gurmukhi, Malayalam, Georgian) split as those it
    lists (Devanagari, Bengali; compared with spaCy above) do: spaCy keeps "છે." whole, we split it as spaCy splits
    "है."."""
    split = WordSplitter().words
    for text, words in [("જાય છે. બીજું", ["જાય", "છે", ".", "બીજું"]), ("ਹੈ. ਅਤੇ", ["ਹੈ", ".", "ਅਤੇ"]),
                        ("ആണ്. ഒരു", ["ആണ്", ".", "ഒരു"]), ("მაგ. კი", ["მაგ", ".", "კი"])]:
        assert split(text) == words


def test_word_memo_is_bounded_and_results_stay_right():
    splitter = WordSplitter(max_pieces=3)
    first = splitter.split(["one two three four", "five"])
    assert first.strings(0) == ["one", "two", "three", "four"] and first.strings(1) == ["five"]
    second = splitter.split(["six, seven"])  # the memo was over its bound: cleared first
    assert second.strings(0) == ["six", ",", "seven"] and len(splitter.vocab) == 3
