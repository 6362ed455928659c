"""Classifiers on words of each language (issue 31) and the `toxicity` stage's classifier mode (issue 34)."""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError

from curation import schema
from curation.apply import bypass_column, run_stage
from curation.classifier_training import (
    Corpus,
    Hyperparameters,
    macro_f1_threshold,
    read_csv_labelled,
    read_ngram_lexicon,
    toxicity_ngrams,
    train_classifier,
)
from curation.lang.scripts import in_scripts, written_scripts
from curation.schema import documents_table
from curation.stages import toxicity
from curation.stages.classifier import FLAGGED_TOKEN, NGRAM_TOKEN, FastTextClassifier, Preprocessing
from curation.stages.langid import LangId
from curation.stages.toxicity import Toxicity
from tests.conftest import ROOT

SMALL = Hyperparameters(dim=16, epoch=15, lr=0.5)


def _table(texts: list[str], langs: list[str | None]) -> pa.Table:
    table = documents_table(texts)
    return table.append_column("lang", pa.array(langs, pa.string())).append_column("pos", pa.array(range(len(texts))))


# ------------------------------------------------------------------------------------------- words


def test_chinese_text_becomes_its_words_not_one_token():
    text = "我们今天去北京看长城，天气很好。"
    assert len(Preprocessing(lowercase=True).lines([text])[0].split()) == 1  # whitespace: one sentence, one token
    words = Preprocessing(lowercase=True, words=True).lines([text], ["zh"])[0].split()
    assert {"北京", "长城", "天气"} <= set(words) and len(words) >= 8


def test_chinese_in_traditional_characters_is_read_in_simplified_and_japanese_is_not():
    """A model trained on Simplified Chinese (COLD) sees Traditional words as unknown ones: with `simplified`, a
    Chinese text's words are the same in either script; Japanese kanji are left as written (国 is not 國 there)."""
    simplified, traditional = "这个国家的经济发展很快，说话要讲道理。", "這個國家的經濟發展很快，說話要講道理。"
    folded = Preprocessing(lowercase=True, words=True, simplified=True)
    assert folded.lines([traditional], ["zh"]) == folded.lines([simplified], ["zh"])
    assert Preprocessing(lowercase=True, words=True).lines([traditional], ["zh"]) != folded.lines([simplified], ["zh"])
    japanese = "國立大學の學生です。"
    assert folded.lines([japanese], ["ja"]) == Preprocessing(lowercase=True, words=True).lines([japanese], ["ja"])
    assert folded.describe()["simplified"] and not Preprocessing(lowercase=True).describe()["simplified"]


@pytest.mark.parametrize(("text", "lang"), [("東京都に住んでいる友達と映画を見ました。", "ja"),
                                         ("ฉันชอบกินข้าวผัดกับเพื่อนที่ตลาด", "th")])
def test_japanese_and_thai_become_words_too_by_language_or_by_script(text: str, lang: str):
    words = Preprocessing(lowercase=True, words=True)
    assert len(words.lines([text], [lang])[0].split()) >= 6
    assert words.lines([text], [lang]) == words.lines([text])  # no `lang`: the script decides


def test_social_quirks_go_and_the_lexicon_adds_a_token_per_flagged_word():
    tweet = "RT @someone: look at this #fucking idiot &#128514; 😂 https://t.co/abc"
    line = Preprocessing(lowercase=True, words=True, social=True, lexicon=True).lines([tweet], ["en"])[0]
    assert "@someone" not in line and "someone" not in line and "http" not in line and "rt" not in line.split()
    assert "😂" not in line and "128514" not in line and "#" not in line
    assert line.split()[:4] == ["look", "at", "this", "fucking"]
    assert line.split().count(FLAGGED_TOKEN) == 1  # "fucking" is on the English list
    assert FLAGGED_TOKEN not in Preprocessing(lowercase=True, lexicon=True).lines(["a calm sentence"])[0]


def test_the_ngram_lexicon_adds_a_token_per_phrase_as_whole_words_in_any_case():
    prep = Preprocessing(lowercase=True, words=True, social=True, lexicon=True, ngrams=("kill all", "savages"))
    line = prep.lines(["They want to KILL ALL of us, the Savages!", "killall savagesx skill all"], ["en", "en"])
    assert line[0].split().count(NGRAM_TOKEN) == 2 and NGRAM_TOKEN not in line[1]
    assert prep.lines(["savages " * 10], ["en"])[0].split().count(NGRAM_TOKEN) == 3  # at most LEXICON_CAP
    assert NGRAM_TOKEN not in Preprocessing(lowercase=True).lines(["kill all the savages"])[0]
    # the sidecar holds the phrases: a model is scored as trained without the lexicon's file
    assert Preprocessing.of_sidecar({"preprocess": prep.describe()}, True) == prep
    assert Preprocessing.of_sidecar({"preprocess": {"words": True}}, True).ngrams == ()


def test_an_ngram_lexicon_is_read_whatever_its_line_ends(tmp_path: Path):
    """Davidson's `refined_ngram_dict.csv` ends its lines with a carriage return alone."""
    path = tmp_path / "ngrams.csv"
    path.write_bytes(b"ngram,prob\rAll Niggers,0.859\rkill all,0.667\rkill all,0.5\r\r")
    assert read_ngram_lexicon(str(path)) == ("all niggers", "kill all")
    assert toxicity_ngrams("zh", tmp_path) == ()  # no lexicon in Chinese's preset


def test_the_english_preset_reads_davidsons_hate_ngrams(testdata: Path):
    path = testdata / "toxicity" / "davidson" / "refined_ngram_dict.csv"
    if not path.is_file():
        pytest.skip(f"Davidson's lexicon not found at {path}")
    phrases = toxicity_ngrams("en", testdata)
    assert len(phrases) > 150 and "kill all" in phrases and all(p == p.lower().strip() for p in phrases)


@pytest.mark.subprocess
def test_a_model_trained_with_an_ngram_lexicon_scores_with_it(tmp_path: Path):
    rng = random.Random(2)
    calm = ["the weather is nice", "we met at the library", "the train leaves at noon", "she planted tomatoes"]
    pos = Corpus([f"{rng.choice(calm)} and kill all of them" for _ in range(150)])
    neg = Corpus([f"{rng.choice(calm)} and {rng.choice(calm)}" for _ in range(150)])
    model = tmp_path / "en.bin"
    car = train_classifier(pos, neg, str(model), label="toxic", negative_label="ok", lang="en",
                           ngrams=["Kill all", "kill all"], hyperparameters=SMALL)
    assert car["preprocess"]["ngrams"] == ["kill all"]
    stage = FastTextClassifier(model=str(model), threshold=0.5, score_column="toxic").ready()
    assert stage.preprocessing.ngrams == ("kill all",)
    scores = stage.score(_table(["kill all of them", "the weather is nice"], ["en", "en"]))["toxic"]
    assert scores[0] > 0.5 > scores[1]


def _cold_csv(testdata: Path, split: str) -> Path:
    path = testdata / "toxicity" / "cold" / f"{split}.csv"
    if not path.is_file():
        pytest.skip(f"COLD not found at {path}")
    return path


def _balanced_accuracy(flagged: np.ndarray, truth: np.ndarray) -> float:
    return float((flagged[truth].mean() + (~flagged[~truth]).mean()) / 2)


@pytest.mark.subprocess
def test_a_classifier_trained_on_chinese_with_the_cli_learns_chinese(testdata: Path, tmp_path: Path):
    """Issue 31: trained by `curate train-classifier` on COLD's training split, tested on its test split (other
    comments): well above chance with words, at chance as before (whitespace tokens)."""
    train, test = _cold_csv(testdata, "train"), _cold_csv(testdata, "test")
    pos, neg = read_csv_labelled([str(test)], "TEXT", "label", ["1"])
    texts, truth = pos.texts + neg.texts, np.r_[np.ones(len(pos.texts), bool), np.zeros(len(neg.texts), bool)]
    accuracy = {}
    for name, extra in (("words", []), ("whitespace", ["--whitespace"])):
        model = tmp_path / f"{name}.bin"
        done = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "train-classifier", "--csv", str(train), "--text-field", "TEXT",
             "--label-field", "label", "--positive-value", "1", "--label", "toxic", "--negative-label", "ok",
             "--lang", "zh", "--max-docs", "5000", "--output", str(model), *extra],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        car = json.loads(model.with_suffix(".json").read_text())
        assert bool(car["preprocess"]["words"]) == (name == "words") and car["lang"] == "zh"
        stage = FastTextClassifier(model=str(model), threshold=0.5, keep_below=True, score_column="toxicity")
        out = run_stage(stage, _table(texts, ["zh"] * len(texts))).sort_by("pos")
        accuracy[name] = _balanced_accuracy(out.column(schema.REASON).is_valid().to_numpy(zero_copy_only=False), truth)
    assert accuracy["words"] >= 0.70, accuracy
    assert accuracy["whitespace"] <= 0.60, accuracy


@pytest.mark.subprocess
def test_scoring_segments_as_the_sidecar_says(tmp_path: Path):
    """A model trained on words is scored on words; one of before (no `words` in its sidecar) on whitespace."""
    rng = random.Random(1)
    good, bad = ["天气", "晴朗", "公园", "散步"], ["垃圾", "滚开", "蠢货", "恶心"]
    pos = Corpus(["".join(rng.choice(bad) for _ in range(6)) for _ in range(150)])
    neg = Corpus(["".join(rng.choice(good) for _ in range(6)) for _ in range(150)])
    model = tmp_path / "zh.bin"
    train_classifier(pos, neg, str(model), label="bad", negative_label="good", lang="zh", hyperparameters=SMALL)
    stage = FastTextClassifier(model=str(model), threshold=0.5, score_column="bad").ready()
    assert stage.preprocessing.words and stage.preprocessing.simplified
    scores = stage.score(_table(["垃圾蠢货滚开", "公园散步天气"], [None, None]))["bad"]
    assert scores[0] > 0.9 and scores[1] < 0.1
    sidecar = json.loads(model.with_suffix(".json").read_text())
    del sidecar["preprocess"]["words"]
    model.with_suffix(".json").write_text(json.dumps(sidecar))
    old = FastTextClassifier(model=str(model), threshold=0.5, score_column="bad").ready()
    assert not old.preprocessing.words


def test_csv_reader_names_a_missing_column(tmp_path: Path):
    path = tmp_path / "x.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([["text", "y"], ["a", "1"], ["", "0"], ["b", "0"]])
    pos, neg = read_csv_labelled([str(path)], "text", "y", ["1"])
    assert pos.texts == ["a"] and neg.texts == ["b"] and neg.skipped == 1
    with pytest.raises(ValueError, match="no column 'label'"):
        read_csv_labelled([str(path)], "text", "label", ["1"])


def _macro_f1(flagged: np.ndarray, truth: np.ndarray) -> float:
    def f1(pred: np.ndarray, true: np.ndarray) -> float:
        tp = np.sum(pred & true)
        return 2 * tp / max(pred.sum() + true.sum(), 1)

    return (f1(flagged, truth) + f1(~flagged, ~truth)) / 2


def test_calibrated_threshold_is_the_best_macro_f1_cut_midway_between_scores():
    rng = np.random.default_rng(0)
    scores = np.round(rng.random(400), 2)  # ties too
    truth = rng.random(400) < scores
    threshold, best = macro_f1_threshold(scores, truth)
    brute = {cut: _macro_f1(scores >= cut, truth) for cut in np.unique(scores)}
    assert best == pytest.approx(max(brute.values()))
    assert _macro_f1(scores >= threshold, truth) == pytest.approx(best)
    assert threshold not in set(scores.tolist())  # between two scores, not on one
    assert macro_f1_threshold(np.array([0.9, 0.8, 0.2]), np.array([True, True, False]))[0] == pytest.approx(0.5)


def test_the_calibrated_threshold_flags_at_most_the_share_of_negatives_it_is_given():
    rng = np.random.default_rng(0)
    scores = np.round(rng.random(400), 2)
    truth = rng.random(400) < scores
    free = macro_f1_threshold(scores, truth)
    threshold, macro = macro_f1_threshold(scores, truth, 0.05)
    assert np.mean(scores[~truth] >= threshold) <= 0.05 < np.mean(scores[~truth] >= free[0])
    assert macro == pytest.approx(_macro_f1(scores >= threshold, truth))
    nothing = macro_f1_threshold(np.array([0.9, 0.8, 0.2]), np.array([False, True, False]), 0.0)
    assert nothing[0] > 0.9  # no cut within the bound: none flagged


def test_with_a_bound_the_cut_flags_fewest_within_one_standard_error_of_the_best():
    rng = np.random.default_rng(1)
    scores = np.round(rng.random(2000), 3)
    truth = rng.random(2000) < scores
    within = {cut: _macro_f1(scores >= cut, truth) for cut in np.unique(scores)
              if np.mean(scores[~truth] >= cut) <= 0.5}
    best = max(within.values())
    error = np.sqrt(best * (1 - best) / len(scores))
    threshold, macro = macro_f1_threshold(scores, truth, 0.5)
    assert macro >= best - error
    # no cut flagging fewer (a higher one) is as good, and the best cut itself flags more
    lowest_flagged = scores[scores >= threshold].min()
    assert all(f1 < best - error for cut, f1 in within.items() if cut > lowest_flagged)
    assert threshold > macro_f1_threshold(scores, truth)[0]


# ------------------------------------------------------------------------------- toxicity stage


TOXIC_EN = ["you fucking idiot", "shut up bitch", "what a stupid cunt", "go to hell asshole", "fuck off loser"]
CLEAN_EN = ["the weather is nice today", "we met at the library", "the train leaves at noon",
            "she planted tomatoes in spring", "the museum opens on sunday"]
TOXIC_ZH = ["你这个垃圾蠢货", "滚开傻逼", "恶心的废物", "去死吧混蛋"]
CLEAN_ZH = ["今天天气很好", "我们在公园散步", "图书馆明天开门", "火车中午出发"]


def _variants(rng: random.Random, phrases: list[str], joiner: str) -> list[str]:
    return [joiner.join(rng.sample(phrases, 3)) for _ in range(150)]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real (small) models of English and Chinese in one folder, as `make toxicity-models` writes them."""
    folder = tmp_path_factory.mktemp("toxicity-models")
    rng = random.Random(0)
    for lang, toxic, clean, joiner in (("en", TOXIC_EN, CLEAN_EN, ". "), ("zh", TOXIC_ZH, CLEAN_ZH, "，")):
        train_classifier(Corpus(_variants(rng, toxic, joiner)), Corpus(_variants(rng, clean, joiner)),
                         str(folder / f"{lang}.ftz"), label="toxic", negative_label="ok", lang=lang, social=True,
                         lexicon=True, hyperparameters=SMALL)  # fmt: skip
    return folder


@pytest.mark.subprocess
def test_classifier_mode_drops_by_each_languages_model_and_counts_what_it_judged(models: Path):
    texts = ["you fucking idiot. shut up bitch", "the weather is nice today", "你这个垃圾蠢货，滚开傻逼",
             "今天天气很好，我们在公园散步", "Das Wetter ist heute schön.", "what a stupid cunt. fuck off loser"]
    stage = Toxicity(languages=["en", "zh"], classifier=str(models), keep_scores=True)
    out = run_stage(stage, _table(texts, ["en", "en", "zh", "zh", "de", None])).sort_by("pos")
    assert out.column(schema.REASON).to_pylist() == ["toxic", None, "toxic", None, None, "toxic"]
    scores = out.column("toxicity_score").to_pylist()
    assert scores[4] is None and scores[0] > scores[1] and scores[2] > scores[3]
    judged = {key: out.column(schema.count_column("toxicity", key)).to_pylist()
              for key in ("judged:en", "judged:zh", "judged:none")}  # fmt: skip
    assert judged == {"judged:en": [1, 1, 0, 0, None, 0], "judged:zh": [0, 0, 1, 1, None, 0],
                      "judged:none": [0, 0, 0, 0, None, 1]}  # fmt: skip
    assert out.column(bypass_column("toxicity", "language")).to_pylist() == [None, None, None, None, 1, None]


@pytest.mark.subprocess
def test_threshold_is_the_calibrated_one_unless_given(models: Path):
    calibrated = json.loads((models / "zh.json").read_text())["calibrated_threshold"]
    stage = Toxicity(languages=["zh"], classifier=str(models)).ready()
    assert stage._models["zh"].threshold == pytest.approx(calibrated)
    assert Toxicity(languages=["zh"], classifier=str(models), classifier_threshold=0.99).ready() \
        ._models["zh"].threshold == 0.99


@pytest.mark.subprocess
def test_a_language_without_a_model_or_list_is_refused_at_validation(models: Path, tmp_path: Path, monkeypatch):
    with pytest.raises(ValidationError, match=r"no toxicity model for ja in .*found: en, zh"):
        Toxicity(languages=["en", "ja"], classifier=str(models))
    with pytest.raises(ValidationError, match="classifier needs `languages`"):
        Toxicity(languages=None, classifier=str(models))
    assert Toxicity(languages="all", classifier=str(models))._judged() == ["en", "zh"]
    monkeypatch.setattr(toxicity, "SHIPPED_MODELS", tmp_path / "absent")
    with pytest.raises(ValidationError, match="make toxicity-models"):
        Toxicity(languages=["en"], classifier="shipped")


@pytest.mark.subprocess
def test_a_page_is_judged_by_the_share_of_its_lines_that_are_toxic(models: Path):
    """One toxic line in a long clean page does not drop it; the line alone, or a page mostly of such lines, does."""
    toxic_line, clean_line = "you fucking idiot. shut up bitch. fuck off loser", "the weather is nice today. we met."
    page = "\n".join([clean_line] * 9 + [toxic_line])
    thread = "\n".join([toxic_line] * 8 + [clean_line])
    stage = Toxicity(languages=["en"], classifier=str(models), keep_scores=True)
    out = run_stage(stage, _table([toxic_line, page, thread, "\n\n", clean_line], ["en"] * 5)).sort_by("pos")
    assert out.column(schema.REASON).to_pylist() == ["toxic", None, "toxic", None, None]
    line, page_score, _, empty, clean = out.column("toxicity_score").to_pylist()
    t, c = (sum(ch.isalpha() for ch in x) for x in (toxic_line, clean_line))  # a line weighs by its letters
    assert page_score == pytest.approx((t * line + 9 * c * clean) / (t + 9 * c), abs=1e-5) and empty == 0.0


@pytest.mark.subprocess
def test_a_model_reads_only_its_languages_prose(models: Path):
    """A Chinese tutorial's code block, inline code and lines without Chinese are nothing the Chinese model was
    trained on (its scores there are noise): they weigh nothing; its Chinese lines are judged as they are alone."""
    prose = ["今天天气很好，我们在公园散步", "图书馆明天开门，火车中午出发"]
    code = ["```", 'vocab = ["b", "g", "h", "ug"]', "```"]
    page = "\n".join([prose[0], *code, "(\"h\", \"ug\") -> \"hug\"", f"{prose[1]} `merge(\"u\", \"g\")`"])
    stage = Toxicity(languages=["zh"], classifier=str(models), keep_scores=True)
    scores = stage.score(_table([page, "\n".join(prose), "`x = 1`\n```\nfoo()\n```"], ["zh"] * 3))["toxicity_score"]
    assert scores[0] == pytest.approx(scores[1], abs=1e-6) and scores[2] == 0.0


@pytest.mark.subprocess
def test_a_page_in_two_languages_is_judged_by_each_languages_model(models: Path):
    """An English page whose Chinese paragraphs (labelled so by langid) are abuse: the Chinese model finds them."""
    lines = ["the weather is nice.", "你这个垃圾蠢货，滚开傻逼，恶心的废物，去死吧混蛋",
             "恶心的废物，滚开傻逼，你这个垃圾蠢货", "we met."]
    text, spans, start = "\n".join(lines), [], 0
    for line, lang in zip(lines, ["en", "zh", "zh", "en"], strict=True):
        spans.append({"start": start, "end": start + len(line), "lang": lang, "score": 0.99})
        start += len(line) + 1
    table = _table([text, text], ["en", "en"]).append_column(
        "lang_paragraphs", pa.array([spans, [{**s, "lang": "en"} for s in spans]], LangId.paragraph_type))
    both = run_stage(Toxicity(languages=["en", "zh"], classifier=str(models)), table).sort_by("pos")
    assert both.column(schema.REASON).to_pylist() == ["toxic", None]  # its Chinese part, 62% of it
    english_only = run_stage(Toxicity(languages=["en"], classifier=str(models)), table).sort_by("pos")
    assert english_only.column(schema.REASON).to_pylist() == [None, None]  # no Chinese model asked for


@pytest.mark.subprocess
def test_a_page_with_chinese_paragraphs_is_read_in_chinese_words_whatever_its_label(models: Path):
    """A page labelled English whose Chinese paragraphs langid labelled: its words are Chinese's segmenter's, which
    splits English words as the English rules do; by English's rules a Chinese sentence was one token."""
    text = "the weather is nice today.\n你这个垃圾蠢货，滚开傻逼"
    spans = [{"start": 0, "end": 26, "lang": "en", "score": 0.99},
             {"start": 27, "end": 39, "lang": "zh", "score": 0.99}]
    table = _table([text, text], ["en", "en"]).append_column(
        "lang_paragraphs", pa.array([spans, [{**s, "lang": "en"} for s in spans]], LangId.paragraph_type))
    classifier = FastTextClassifier(model=str(models / "en.ftz"), threshold=0.5).ready()
    langs = classifier.languages(table)
    assert classifier.words_as(table, langs) == ["zh", "en"]  # its flagged words still counted by English's list
    chinese, english = (line.split() for line in classifier.preprocessing.lines(
        table.column("text"), langs, words_as=classifier.words_as(table, langs)))
    assert chinese[:5] == ["the", "weather", "is", "nice", "today"] and "垃圾" in chinese
    assert "你这个垃圾蠢货，滚开傻逼" in english  # the run of Chinese characters, whole


@pytest.mark.subprocess
def test_a_model_reads_the_scripts_it_was_trained_on(tmp_path: Path):
    """Serbian is written in Cyrillic and in Latin: a model trained on Latin Serbian judges Latin pages, though
    Serbian's script (FineWeb-2's) is Cyrillic; its sidecar records what its training texts were written in."""
    toxic = ["jebem ti mater", "idi u kurac", "glupa kurvo jedna"]
    clean = ["lepo vreme danas", "idemo u školu", "čitam knjigu"]
    rng = random.Random(0)
    car = train_classifier(Corpus(_variants(rng, toxic, ". ")), Corpus(_variants(rng, clean, ". ")),
                           str(tmp_path / "sr.ftz"), label="toxic", negative_label="ok", lang="sr",
                           hyperparameters=SMALL)
    assert car["scripts"] == ["Latn"]
    out = run_stage(Toxicity(languages=["sr"], classifier=str(tmp_path)), _table(
        ["jebem ti mater. idi u kurac", "lepo vreme danas. idemo u školu"], ["sr", "sr"])).sort_by("pos")
    assert out.column(schema.REASON).to_pylist() == ["toxic", None]


def test_the_scripts_of_a_body_of_text_are_those_of_a_twentieth_of_its_texts():
    texts = ["Добар дан"] * 10 + ["Dobar dan"] * 9 + ["今天天气很好"] + ["これは日本語です"] * 2
    assert written_scripts(texts) == ["Cyrl", "Jpan", "Latn"] and written_scripts(texts, 0.5) == []
    assert written_scripts(["Dobar dan"] * 900 + ["Добар дан"] * 100, sample=10) == ["Cyrl", "Latn"]  # 9 + 1 read
    points = np.frombuffer("ab中かア".encode("utf-32-le"), np.uint32)
    assert in_scripts(points, ["Jpan"]).tolist() == [False, False, True, True, True]
    assert in_scripts(points, ["Latn", "Hani"]).tolist() == [True, True, True, False, False]
