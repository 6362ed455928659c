"""Words that tell close standards apart (bs/hr/sr, id/ms, nb/nn) and how langid weighs them."""

from __future__ import annotations

import math
from collections import Counter

from curation.lang.close_words import _SOURCES, GROUPS, marker_table, marker_votes
from curation.stages.langid import MARKER_LOG_ODDS, _weigh_words

SERBO_CROATIAN, MALAY_INDONESIAN, NORWEGIAN = GROUPS


def test_votes_count_each_standards_words_case_and_punctuation_aside() -> None:
    text = "Tokom 2010. godine, HILJADU ljudi posjetilo je izložbu o historiji grada; vrijeme je bilo lijepo."
    # tokom hiljadu: bs sr; historiji: bs; vrijeme lijepo: bs hr (ijekavian)
    assert marker_votes(text, SERBO_CROATIAN) == {"bs": 5, "sr": 2, "hr": 2}
    assert marker_votes("Tijekom siječnja tisuće ljudi...", SERBO_CROATIAN) == {"hr": 3, "bs": 1, "sr": 0}
    assert marker_votes("Dia berkata bahawa kerana itu...", MALAY_INDONESIAN) == {"ms": 2, "id": 0}
    assert marker_votes("Ia berkata bahwa karena itu", MALAY_INDONESIAN) == {"ms": 0, "id": 2}
    # a word two groups list votes in each, for its languages there only
    assert marker_votes("juni", SERBO_CROATIAN) == {"bs": 1, "sr": 1, "hr": 0}
    assert marker_votes("juni", MALAY_INDONESIAN) == {"id": 1, "ms": 0}


def test_every_word_is_evidence_inside_one_group() -> None:
    """A word whose languages cover its whole group says nothing (listed twice by mistake, say); a word outside
    every group would never vote."""
    for word, languages in marker_table().items():
        groups = [group for group in GROUPS if languages & group]
        assert groups, word
        assert all(not group <= languages for group in groups), word
        assert word == word.lower() and word.strip(".,;:!?") == word, word
    listed = Counter(word for _, words in _SOURCES for word in words.split())
    assert {word for word, times in listed.items() if times > 1} == {"juni", "juli"}  # Bosnian/Serbian and Indonesian


def test_each_word_shifts_the_odds_within_the_leaders_group_and_keeps_its_share() -> None:
    pooled = {"hr": 0.80, "bs": 0.10, "sr": 0.05, "sl": 0.05}
    _weigh_words("tokom hiljadu historije", pooled)  # bs 3 votes, sr 2
    assert max(pooled, key=pooled.__getitem__) == "bs"
    assert math.isclose(pooled["hr"] + pooled["bs"] + pooled["sr"], 0.95) and pooled["sl"] == 0.05
    odds = (pooled["bs"] / pooled["hr"]) / ((0.10 + 1e-3) / (0.80 + 1e-3))
    assert math.isclose(odds, math.exp(3 * MARKER_LOG_ODDS), rel_tol=1e-9)
    slovene = {"sl": 0.7, "sr": 0.2, "hr": 0.1}  # `vreme`, `dve`, `mleko` are Slovene too: a Slovene leader stays
    _weigh_words("vreme dve mleko", slovene)
    assert slovene == {"sl": 0.7, "sr": 0.2, "hr": 0.1}
    unchanged = {"hr": 0.6, "bs": 0.4}
    _weigh_words("no marker words here", unchanged)
    assert unchanged == {"hr": 0.6, "bs": 0.4}


def test_bokmal_and_nynorsk_function_words() -> None:
    assert marker_votes("Eg veit ikkje kva ho sa frå starten.", NORWEGIAN) == {"nn": 5, "nb": 0}  # eg ikkje kva ho frå
    assert marker_votes("Jeg vet ikke hva hun sa.", NORWEGIAN) == {"nb": 4, "nn": 0}
