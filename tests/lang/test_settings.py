"""Filter settings by language (curation.lang.settings): every lid.176 label resolves, fallbacks by
script are flagged, recipe overrides merge, and the shipped data is what its generator derives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from curation.lang import settings as lang_settings
from curation.lang.settings import apply_overrides, known_language, settings_for, with_apostrophes
from curation.stages.langid import bundled_model_path
from tests.conftest import DATA, ROOT


def lid176_labels() -> list[str]:
    fasttext = pytest.importorskip("fasttext")
    try:
        model = bundled_model_path()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    if not model.is_file():
        pytest.skip(f"lid.176 not found at {model} (curation/lang/data ships it)")
    return [label.removeprefix("__label__") for label in fasttext.load_model(str(model)).get_labels()]


def test_every_lid176_label_has_settings_of_its_own() -> None:
    labels = lid176_labels()
    assert len(labels) == 176
    for label in labels:
        settings, fallback = settings_for(label)
        assert not fallback, label
        assert 0 <= settings.language_score <= 1
        assert settings.min_avg_word_length < settings.max_avg_word_length
        assert settings.terminal_punctuation.startswith(".!?")


def test_chinese_maps_to_mandarin_with_fineweb2_values_and_cjk_terminals() -> None:
    zh, fallback = settings_for("zh")
    assert not fallback
    assert (zh.source, zh.script) == ("fineweb2:cmn_Hani", "Hani")
    assert zh.stop_words[:3] == ("的", "年", "在")
    assert zh.dup_n_grams[5] == pytest.approx(0.198)
    assert zh.top_n_grams == {2: 0.256, 3: 0.201, 4: 0.171}
    assert (zh.min_avg_word_length, zh.max_avg_word_length) == (1, 5)
    assert set("。！？") <= set(zh.terminal_punctuation)
    assert settings_for("cmn")[0].source == settings_for("cmn_Hani")[0].source == "fineweb2:cmn_Hani"
    assert "।" in settings_for("hi")[0].terminal_punctuation
    assert "؟" in settings_for("ar")[0].terminal_punctuation
    assert "።" in settings_for("am")[0].terminal_punctuation


def test_english_keeps_the_stages_defaults() -> None:
    en, fallback = settings_for("en")
    assert not fallback
    assert en.stop_words == ("the", "be", "to", "of", "and", "that", "have", "with")
    assert (en.min_avg_word_length, en.max_avg_word_length, en.language_score) == (3, 10, 0.65)
    assert en.dup_n_grams == {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.1}


def test_a_code_without_settings_falls_back_to_its_script_and_says_so() -> None:
    assert not known_language("tlh")
    klingon, fallback = settings_for("tlh")
    assert fallback and klingon.source == "script:Latn" and klingon.stop_words == ()
    hani, fallback = settings_for("zzz", text="这是一个没有已知语言代码的中文文档。")
    assert fallback and (hani.script, hani.source) == ("Hani", "script:Hani")
    assert set("。！？") <= set(hani.terminal_punctuation)
    coded, fallback = settings_for("xyz_Deva")
    assert fallback and coded.script == "Deva" and "।" in coded.terminal_punctuation
    nothing, fallback = settings_for(None)
    assert fallback and nothing.script == "Latn"


def test_recipe_overrides_merge_per_language_and_reject_unknown_fields() -> None:
    overrides = {"languages": {"*": {"language_score": 0.5}, "zh": {"stop_words": ["的", "了"],
                                                                     "top_n_grams": {"2": 0.3}}}}
    zh, _ = settings_for("zh", overrides=overrides)
    assert zh.stop_words == ("的", "了")
    assert zh.top_n_grams == {2: 0.3}
    assert zh.language_score == 0.5
    assert zh.max_avg_word_length == 5  # untouched
    assert settings_for("ja", overrides=overrides)[0].stop_words == settings_for("ja")[0].stop_words
    with pytest.raises(ValueError, match=r"unknown settings for language 'zh'.*stopwords"):
        apply_overrides(settings_for("zh")[0], {"languages": {"zh": {"stopwords": ["x"]}}})


@pytest.mark.subprocess
def test_a_language_in_two_scripts_has_the_settings_of_each() -> None:
    latin, cyrillic = lang_settings.settings_for("sr", script="Latn")[0], lang_settings.settings_for("sr")[0]
    assert (latin.script, cyrillic.script) == ("Latn", "Cyrl")
    assert "je" in latin.stop_words and "је" in cyrillic.stop_words and "je" not in cyrillic.stop_words
    assert lang_settings.settings_for("sr", "Ovo je tekst na srpskom.")[0].script == "Latn"  # the text's script
    assert lang_settings.other_scripts("sr") == {"Latn"} and lang_settings.other_scripts("de") == frozenset()


@pytest.mark.subprocess  # the generator runs as the maintainer runs it
def test_shipped_data_is_what_the_generator_derives(tmp_path: Path) -> None:
    configs = DATA / "fineweb2" / "configs"
    if not configs.is_dir():
        pytest.skip(f"FineWeb-2 configs not found at {configs} (set CURATION_TESTDATA)")
    generator = ROOT / "curation" / "lang" / "data" / "make_settings.py"
    copy = tmp_path / "make_settings.py"
    copy.write_text(generator.read_text(encoding="utf-8"), encoding="utf-8")
    subprocess.run([sys.executable, str(copy), str(configs)], check=True, capture_output=True)
    shipped = json.loads((ROOT / "curation" / "lang" / "data" / "settings.json").read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "settings.json").read_text(encoding="utf-8")) == shipped
    assert set(lang_settings.languages()) == set(shipped["languages"])


@pytest.mark.parametrize(("lang", "sentences", "ours", "theirs"), [
    ("ko", 12, "있는", "의"),  # eojeol, not FineWeb-2's morphemes
    ("te", 3, "మరియు", "గ్రామం"),  # function words, not the village stubs' "village"
])
def test_stop_words_written_here_are_words_that_real_text_contains(lang, sentences, ours, theirs) -> None:
    """Where FineWeb-2's stop words cannot serve, ours: documents of real text hold two of them far more often."""
    from curation.lang.words import segment

    path = DATA / "langid" / "sentences" / f"{lang}.txt"
    if not path.is_file():
        pytest.skip(f"real sentences not found at {path} (set CURATION_TESTDATA)")
    settings, _ = settings_for(lang)
    assert ours in settings.stop_words and theirs not in settings.stop_words
    lines = [s for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]
    docs = [segment("\n".join(lines[i:i + sentences]), lang) for i in range(0, len(lines), sentences)]
    with_two = [sum(w in settings.stop_words for w in words) >= 2 for words in docs]
    fineweb2_two = [sum(w in _fineweb2_stop_words(lang) for w in words) >= 2 for words in docs]
    assert sum(with_two) >= 0.8 * len(docs) > sum(fineweb2_two)


def _fineweb2_stop_words(lang: str) -> list[str]:
    data = json.loads((ROOT / "curation" / "lang" / "data" / "settings.json").read_text(encoding="utf-8"))
    return data["languages"][lang]["fineweb2_stop_words"]


def test_a_stop_word_with_an_apostrophe_counts_however_the_apostrophe_is_typed():
    """Uzbek's list writes `bo\u02bblgan`; its web types `bo'lgan` or `bo\u2019lgan`, which never counted."""
    uzbek = settings_for("uz")[0].stop_words
    assert {"boʻlgan", "bo'lgan", "bo’lgan", "boʻlib", "bo'lib"} <= set(uzbek)
    assert with_apostrophes(["l'", "la"]) == ("l'", "la", "l’", "l‘", "lʻ", "lʼ", "l`")
