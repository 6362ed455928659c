"""The default (English-like) word splitter: spaCy's English rules, a bounded memo."""

from __future__ import annotations

from curation.text.splitter import WordSplitter


def test_words_split_like_spacy_english():
    split = WordSplitter().words
    assert split("Hello, world! I don't know.") == ["Hello", ",", "world", "!", "I", "do", "n't", "know", "."]
    assert split("The U.S. e-mail (see: this).") == ["The", "U.S.", "e", "-", "mail", "(", "see", ":", "this", ")", "."]
    assert split("Visit http://example.com/a-b now") == ["Visit", "http://example.com/a-b", "now"]
    assert split("10km for $100, it's... cannot gonna") == [
        "10", "km", "for", "$", "100", ",", "it", "'s", "...", "can", "not", "gon", "na"]
    assert split("Mr. Smith arrived at 5pm :)") == ["Mr.", "Smith", "arrived", "at", "5", "pm", ":)"]
    assert split("z.B. Straße’s") == ["z.", "B.", "Straße", "’s"]
    assert split("") == [] and split(" \n\t ") == []


def test_a_full_stop_after_a_vowel_sign_or_virama_is_a_word_of_its_own():
    """Scripts spaCy's English classes leave out (Gujarati, Gurmukhi, Malayalam, Oriya, Georgian, Thaana) split as
    those it lists (Devanagari, Bengali) do."""
    split = WordSplitter().words
    for text, words in [("જાય છે. બીજું", ["જાય", "છે", ".", "બીજું"]), ("ਹੈ. ਅਤੇ", ["ਹੈ", ".", "ਅਤੇ"]),
                        ("ആണ്. ഒരു", ["ആണ്", ".", "ഒരു"]), ("ଅଛି, ଏବଂ", ["ଅଛି", ",", "ଏବଂ"]),
                        ("მაგ. კი", ["მაგ", ".", "კი"]), ("है. और", ["है", ".", "और"]), ("হয়. এবং", ["হয়", ".", "এবং"])]:
        assert split(text) == words


def test_word_memo_is_bounded_and_results_stay_right():
    splitter = WordSplitter(max_pieces=3)
    first = splitter.split(["one two three four", "five"])
    assert first.strings(0) == ["one", "two", "three", "four"] and first.strings(1) == ["five"]
    second = splitter.split(["six, seven"])  # the memo was over its bound: cleared first
    assert second.strings(0) == ["six", ",", "seven"] and len(splitter.vocab) == 3
