"""Word-based document filters by language: `gopher_repetition`, `gopher_quality`, `c4`, `fineweb` and
`length` take each document's words and thresholds from its `lang` (curation.lang), keep English
exactly as before, let a recipe override per language, and count documents judged by fallback settings.

Clean documents are 12 real sentences (`langid/sentences/<lang>.txt`, one per line); junk is built from
the same sentences (a line repeated, a menu of short unpunctuated lines, lines cut short with an
ellipsis, one phrase repeated). The chain is FineWeb's, langid-free: the `lang` column is set here.
"""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from curation import schema
from curation.apply import run_stage
from curation.lang.words import SPACES, segmenters
from curation.recipe import RecipeError, parse_recipe
from curation.stages.base import DocumentFilter
from curation.stages.c4 import C4
from curation.stages.fineweb import FineWeb
from curation.stages.gopher import GopherQuality, GopherRepetition
from curation.stages.length import Length
from tests.conftest import DATA
from tests.support import spacy_english

SENTENCES = DATA / "langid" / "sentences"
PER_DOCUMENT = 12
# The real sentences of these languages are not clean text, and every language's rules (English's
# too) drop them for what they are: ur.txt is mostly crawl boilerplate (HTTP response headers, "Read
# More Latest News from ..." repeated in most lines), so Gopher's repetition rules drop it.
NOT_CLEAN = {"ur"}
UNSPACED = {"zh", "ja", "th"}  # junk is cut in characters, not whitespace pieces


def chain() -> list[DocumentFilter]:
    return [GopherRepetition(), GopherQuality(), C4(terminal_punct=False), FineWeb()]


def run_chain(texts: list[str], langs: list[str | None],
              stages: list[DocumentFilter] | None = None) -> list[str | None]:
    """Each document's fate through the stages in order: None (kept) or "stage:reason"."""
    table = pa.table({"text": pa.array(texts, pa.large_string()), "lang": pa.array(langs, pa.string())})
    fate: list[str | None] = [None] * len(texts)
    alive = np.arange(len(texts))
    for stage in stages or chain():
        if not len(alive):
            break
        result = stage.process(table)  # the survivors of the stages before
        reasons = result.reasons.to_pylist()
        for row, reason in zip(alive.tolist(), reasons, strict=True):
            if reason is not None:
                fate[row] = f"{stage.name}:{reason}"
        kept = np.array([r is None for r in reasons], bool)
        table = result.table.select(["text", "lang"]).filter(pa.array(kept))  # C4 cleans the kept text
        alive = alive[kept]
    return fate


def sentences(lang: str) -> list[str]:
    # C4's curly-bracket rule drops a page with "{" in every language: sr.txt has MediaWiki's -{...}-
    # script-conversion markup in 15 of its lines, which would make it a test of that markup.
    lines = (SENTENCES / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and "{" not in line]


def documents(lang: str) -> list[list[str]]:
    lines = sentences(lang)
    return [lines[i:i + PER_DOCUMENT] for i in range(0, len(lines) - PER_DOCUMENT + 1, PER_DOCUMENT)]


def junk(lines: list[str], lang: str) -> dict[str, str]:
    """Junk variants of one document's sentences."""
    if lang in UNSPACED:
        menu = [line[i:i + 4] for line in lines for i in (0, 4, 8)]
        phrase = "".join([lines[0][:10]] * 40)
    else:
        menu = [" ".join(line.split()[i:i + 2]) for line in lines for i in (0, 2, 4)]
        phrase = " ".join([" ".join(lines[0].split()[:4])] * 40)
    return {
        "repeated_line": "\n".join([lines[0]] * PER_DOCUMENT),
        "menu": "\n".join(item for item in menu if item.strip()),
        "ellipsis_lines": "\n".join(line[:max(1, len(line) // 2)].rstrip() + "..." for line in lines),
        "repeated_phrase": phrase,
    }


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[list[str]]]:
    if not SENTENCES.is_dir():
        pytest.skip(f"real sentences not found at {SENTENCES} (set CURATION_TESTDATA)")
    found = {path.stem: documents(path.stem) for path in sorted(SENTENCES.glob("*.txt"))}
    return {lang: docs for lang, docs in found.items() if docs}


def test_clean_documents_of_every_language_are_kept(corpus: dict[str, list[list[str]]]) -> None:
    langs = [lang for lang in corpus if lang not in NOT_CLEAN]
    assert len(langs) >= 40
    texts = [("\n".join(doc), lang) for lang in langs for doc in corpus[lang]]
    fate = run_chain([t for t, _ in texts], [lang for _, lang in texts])  # one batch, every language mixed
    kept: dict[str, list[bool]] = {}
    reasons: dict[str, Counter] = {}
    for (_, lang), reason in zip(texts, fate, strict=True):
        kept.setdefault(lang, []).append(reason is None)
        reasons.setdefault(lang, Counter())[reason] += reason is not None
    rates = {lang: float(np.mean(k)) for lang, k in kept.items()}
    low = {lang: (rate, dict(+reasons[lang])) for lang, rate in rates.items() if rate < 0.75}
    assert not low, low
    assert np.mean(list(rates.values())) >= 0.9, rates
    assert rates["zh"] == rates["ja"] == rates["en"] == 1.0


def test_junk_built_from_the_same_text_is_dropped(corpus: dict[str, list[list[str]]]) -> None:
    variants = [(kind, text, lang) for lang, docs in corpus.items() for doc in docs[:2]
                for kind, text in junk(doc, lang).items()]
    fate = run_chain([text for _, text, _ in variants], [lang for _, _, lang in variants])
    dropped: dict[str, list[bool]] = {}
    for (kind, _, _), reason in zip(variants, fate, strict=True):
        dropped.setdefault(kind, []).append(reason is not None)
    rates = {kind: float(np.mean(d)) for kind, d in dropped.items()}
    assert all(rate >= 0.9 for rate in rates.values()), rates
    assert np.mean([reason is not None for reason in fate]) >= 0.9


@pytest.fixture(scope="module")
def english_pages() -> list[str]:
    from curation.stages import Extract

    pages = sorted((DATA / "html" / "readability" / "pages").glob("*/source.html.gz"))[:24]
    if not pages:
        pytest.skip(f"real pages not found under {DATA / 'html'} (set CURATION_TESTDATA)")
    extractor = Extract(timeout_s=None)
    texts = [extractor.extract_one(gzip.decompress(page.read_bytes()), None, None)[0] for page in pages]
    return [text for text in texts if text]


@pytest.mark.parametrize("stage", [GopherRepetition(keep_scores=True), GopherQuality(keep_scores=True),
                                   C4(keep_scores=True), C4(terminal_punct=False, keep_scores=True),
                                   FineWeb(keep_scores=True), Length(keep_scores=True)],
                         ids=lambda s: f"{s.name}{'' if getattr(s.params, 'terminal_punct', True) else '-nopunct'}")
def test_english_decisions_are_the_same_with_languages(stage: DocumentFilter, english_pages: list[str]) -> None:
    """Real pages give the same reasons, scores and cleaned text with `lang` English as without `lang`,
    and so do the space-delimited ones with a null `lang` (the stage's own params judge both; a page in
    an unspaced script without `lang` is split into its script's words, see `curation.lang.words`)."""
    spaced = [page for page, kind in zip(english_pages, segmenters(english_pages), strict=True) if kind == SPACES]
    for pages, lang in ((english_pages, "en"), (spaced, None)):
        plain = pa.table({"text": pa.array(pages, pa.large_string())})
        without = stage.process(plain)
        assert Counter(without.reasons.to_pylist())[None] >= 5  # the rules do judge these pages
        with_lang = stage.process(plain.append_column("lang", pa.array([lang] * len(pages), pa.string())))
        assert with_lang.reasons.to_pylist() == without.reasons.to_pylist()
        assert rows(with_lang.table.drop_columns(["lang"])) == rows(without.table)
        fallback = (with_lang.counts or {}).get("fallback_language")
        assert fallback is None or not fallback.any()


def rows(table: pa.Table) -> list[dict]:
    """The rows with NaN as None (NaN is not equal to itself; a missing n-gram score is NaN)."""
    return [{k: None if isinstance(v, float) and np.isnan(v) else v for k, v in row.items()}
            for row in table.to_pylist()]


def test_real_chinese_page_is_judged_as_chinese(english_pages: list[str]) -> None:
    path = DATA / "html" / "readability" / "pages" / "gmw" / "source.html.gz"
    if not path.is_file():
        pytest.skip(f"{path} missing")
    from curation.stages import Extract

    page = Extract(timeout_s=None).extract_one(gzip.decompress(path.read_bytes()), None, None)[0]
    as_english = GopherQuality().process(pa.table({"text": [page]})).reasons.to_pylist()
    assert as_english == ["long_mean_word_length"]  # no `lang`: English words, one per clause
    assert run_chain([page], ["zh"], [GopherQuality()]) == [None]
    assert run_chain([page], [None], [GopherQuality()]) == [None]  # its script's words and settings


def test_serbian_is_judged_by_the_settings_of_the_script_it_is_written_in() -> None:
    """FineWeb-2 has Serbian in both scripts (srp_Cyrl, srp_Latn): a Latin-script page judged by the Cyrillic stop
    words had none and was dropped as `too_few_stop_words`. The script comes from langid's `lang_script`, else from
    the text."""
    here = Path(__file__).parent
    latin = "\n".join((here / "udhr_sr_latn.txt").read_text(encoding="utf-8").splitlines()[:12])
    cyrillic = "Свако има право на живот, слободу и безбедност личности. Нико не сме бити држан у ропству."
    table = pa.table({"text": [latin, latin, cyrillic * 6], "lang": ["sr"] * 3, "lang_script": ["Latn", None, None]})
    out = GopherQuality(keep_scores=True).process(table)
    assert out.reasons.to_pylist() == [None, None, None]
    assert min(out.table.column("gopher_stop_words").to_pylist()) >= 10  # Latin by Cyrillic's list: 0


POINTED = """
name: pointed
sources: [{name: notes, format: jsonl, paths: ["nowhere/*.jsonl"]}]
stages:
  - langid: {keep: [he, ar], per_paragraph: true}
  - gopher_quality: {}
"""


@pytest.mark.parametrize(("fixture", "lang"), [("he_pointed.txt", "he"), ("ar_vocalized.txt", "ar")])
def test_hebrew_with_its_points_and_arabic_with_its_harakat_are_known_and_kept(fixture: str, lang: str) -> None:
    """Written with their vowel marks (religious text, children's books, learning material): vocalized Arabic came out
    Mazanderani (`lang_not_kept`), pointed Hebrew had no stop word (`too_few_stop_words`)."""
    from curation import explore

    text = (Path(__file__).parent.parent / "fixtures" / "pointed" / fixture).read_text(encoding="utf-8")
    explained = explore.explain(text, parse_recipe(POINTED, check_paths=False))
    assert explained.kept, explained
    langid, gopher = (step["scores"] for step in explained.steps)
    assert langid["lang"] == lang and langid["lang_score"] > 0.9
    assert gopher["gopher_stop_words"] >= 5


def test_languages_overrides_change_the_decision(corpus: dict[str, list[list[str]]]) -> None:
    zh = "\n".join(corpus["zh"][0])
    de = "\n".join(corpus["de"][0])
    assert run_chain([zh, de], ["zh", "de"]) == [None, None]
    no_such_words = GopherQuality(languages={"zh": {"stop_words": ["不存在的词", "另一个"]}})
    assert run_chain([zh, de], ["zh", "de"], [no_such_words]) == ["gopher_quality:too_few_stop_words", None]
    every_language = FineWeb(languages={"*": {"new_line_ratio": 0.001}})
    assert run_chain([zh, de], ["zh", "de"], [every_language]) == ["fineweb:list_ratio"] * 2
    german_lines = GopherRepetition(languages={"de": {"dup_n_grams": {"2": 0.0001}}})
    assert run_chain([zh, de], ["zh", "de"], [german_lines]) == [None, "gopher_repetition:dup_2gram"]
    # English stays the stage's own: its top-level params, not `languages`
    en = "\n".join(corpus["en"][0])
    assert run_chain([en], ["en"], [GopherQuality(languages={"*": {"stop_words": ["zzz"]}})]) == [None]
    # C4 with its terminal punctuation rule: Chinese lines end in 。, which is not C4's English "."
    assert run_chain([zh], ["zh"], [C4()]) == [None]
    assert run_chain([zh], ["zh"], [C4(languages={"zh": {"terminal_punctuation": "."}})]) == [
        "c4:too_few_sentences"]


def test_an_unknown_setting_is_a_recipe_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"unknown setting.*stopwords"):
        GopherQuality(languages={"zh": {"stopwords": ["的"]}})
    with pytest.raises(ValueError, match="English is judged by the stage's own params"):
        FineWeb(languages={"en": {"new_line_ratio": 0.1}})
    recipe = ("name: r\nsources:\n  - {name: web, format: jsonl, paths: [x.jsonl]}\nstages:\n"
              "  - gopher_quality: {languages: {zh: {min_avg_wordlength: 1}}}\n")
    with pytest.raises(RecipeError) as error:
        parse_recipe(recipe, "r.yaml", check_paths=False)
    assert "min_avg_wordlength" in str(error.value)


def test_languages_without_settings_are_counted_as_fallback(corpus: dict[str, list[list[str]]]) -> None:
    texts = ["\n".join(corpus["de"][0]), "\n".join(corpus["zh"][0]), "\n".join(corpus["de"][1]),
             "\n".join(corpus["en"][0]), "\n".join(corpus["zh"][1])]
    # two codes without settings (Latin and Han script defaults), and Chinese without a language: its
    # words are Chinese (split by its script), so are its settings (Han's defaults, a fallback)
    langs = ["tlh", "xx", "de", "en", None]
    batch = pa.table({"id": [schema.document_id("l", i) for i in range(len(texts))], "source": ["s"] * len(texts),
                      "text": pa.array(texts, pa.string()), "lang": pa.array(langs, pa.string()),
                      schema.STAGE: pa.nulls(len(texts), pa.string()),
                      schema.REASON: pa.nulls(len(texts), pa.string()),
                      schema.DETAIL: pa.nulls(len(texts), pa.string())})
    for stage in (GopherRepetition(), GopherQuality(), FineWeb()):
        out = run_stage(stage, batch)
        column = schema.count_column(stage.name, "fallback_language")
        assert out.column(column).to_pylist() == [1, 1, 0, 0, 1], stage.name


def test_length_counts_segmented_words_for_languages_without_spaces(corpus: dict[str, list[list[str]]]) -> None:
    zh = "\n".join(corpus["zh"][0])
    en = "\n".join(corpus["en"][0])
    plain = Length(keep_scores=True).score(pa.table({"text": [zh, en]}))["n_words"]
    by_lang = Length(keep_scores=True).score(pa.table({"text": [zh, en], "lang": ["zh", "en"]}))["n_words"]
    assert plain[0] < 30 < 200 < by_lang[0]  # whitespace pieces are whole sentences in Chinese
    assert by_lang[1] == plain[1]
    assert run_chain([zh], ["zh"], [Length()]) == [None]
    assert run_chain([zh], [None], [Length()]) == [None]  # no `lang`: the text's script decides (Han)


def test_repeated_line_characters_are_bounded_as_fineweb_2_for_every_language_but_english(
        corpus: dict[str, list[list[str]]]) -> None:
    """FineWeb-2's pipeline allows 0.1 of the characters in repeated lines (FineWeb English: 0.01)."""
    def with_a_repeated_line(lang: str) -> str:
        lines = corpus[lang][0]
        return "\n".join([*lines, lines[0]])  # one of 13 lines again: ~1/13 of the characters

    de, en = with_a_repeated_line("de"), with_a_repeated_line("en")
    assert run_chain([de, en, en], ["de", "en", None], [FineWeb()]) == [
        None, "fineweb:char_dup_ratio", "fineweb:char_dup_ratio"]
    strict = FineWeb(languages={"de": {"char_dup_ratio": 0.01}})
    assert run_chain([de], ["de"], [strict]) == ["fineweb:char_dup_ratio"]


def test_decomposed_text_is_judged_as_its_composed_twin(corpus: dict[str, list[list[str]]]) -> None:
    """Text in Unicode's decomposed form (NFD: Vietnamese typed with combining tone marks, as the UDHR's
    Vietnamese is; Korean as jamo, as macOS writes it) has the same words, scores and decisions."""
    import unicodedata

    texts = ["\n".join(corpus[lang][0]) for lang in ("vi", "ko", "ru", "de")]
    decomposed = [unicodedata.normalize("NFD", t) for t in texts]
    assert all(d != t for d, t in zip(decomposed, texts, strict=True))
    langs = ["vi", "ko", "ru", "de"]
    scores = [GopherQuality().score(pa.table({"text": pa.array(t, pa.large_string()), "lang": pa.array(langs)}))
              for t in (texts, decomposed)]
    for column in ("gopher_words", "gopher_mean_word_length", "gopher_stop_words"):
        assert np.array_equal(scores[0][column], scores[1][column]), column
    assert scores[0]["gopher_stop_words"].min() >= 2
    assert run_chain(decomposed, langs) == run_chain(texts, langs) == [None] * 4


def test_a_languages_stop_words_count_at_every_occurrence_and_englishs_once_each() -> None:
    """FineWeb-2 chose its lists for datatrove's count (every occurrence): Tatar's holds one function word
    ("һәм", and) beside words of Wikipedia's stubs. English keeps Gopher's two distinct words."""
    tatar = ("Һәр кеше азат һәм үз абруе һәм хокуклары ягыннан тиң булып туа. Аларга акыл һәм вөҗдан бирелгән "
             "һәм бер-берсенә карата туганнарча мөнәсәбәттә булырга тиешләр. ")
    english = ("People are born free and equal in dignity and rights. Everyone is endowed by reason and "
               "conscience and should act kindly towards others in a spirit brotherly and fair. ")
    texts, langs = [tatar * 4, english * 4], ["tt", "en"]
    scores = GopherQuality().score(pa.table({"text": pa.array(texts, pa.large_string()), "lang": pa.array(langs)}))
    assert scores["gopher_stop_words"].tolist() == [16, 1]  # "һәм" 4 times a copy; "and" once, though 20 times
    assert run_chain(texts, langs, [GopherQuality()]) == [
        None, "gopher_quality:too_few_stop_words"]


def test_the_ethiopic_wordspace_separates_words_as_a_space_does() -> None:
    """Amharic written the traditional way puts a wordspace (U+1361) where modern text puts a space: the
    UDHR's Amharic, whose 12-paragraph documents were each one "word" a line (dropped by C4) before."""
    from curation.stages import LangId

    article_1 = ("የሰው፡ልጅ፡ሁሉ፡ሲወለድ፡ነጻና፡በክብርና፡በመብትም፡እኩልነት፡ያለው፡ነው።፡የተፈጥሮ፡ማስተዋልና፡ሕሊና፡ስላለው፡"
                 "አንዱ፡ሌላውን፡በወንድማማችነት፡መንፈስ፡መመልከት፡ይገባዋል።")
    traditional = "\n".join([article_1] * 2)
    modern = traditional.replace("፡", " ")
    stages: list[DocumentFilter] = [Length(), GopherQuality(), C4(terminal_punct=False, min_words_per_line=3)]
    for stage in stages:
        scores = [stage.score(pa.table({"text": pa.array([t], pa.large_string()), "lang": pa.array(["am"])}))
                  for t in (traditional, modern)]
        assert {k: v.tolist() for k, v in scores[0].items()} == {k: v.tolist() for k, v in scores[1].items()}
    assert scores[0]["c4_sentences"].tolist() == [4]  # two lines of two sentences, "።" attached to its word
    langid = LangId(min_score=0.0)
    langid.setup()
    assert langid.identify([article_1]).lang.tolist() == ["am"]


def test_a_full_stop_left_on_its_word_still_ends_the_sentence() -> None:
    """spaCy's rules leave the Armenian and Ethiopic full stops on their word (their blocks count as letters):
    C4 still counts the sentences they end; English "U.S." ends none, as in spaCy."""
    lines = ["Բոլոր մարդիկ ծնվում են ազատ\u0589 Նրանք օժտված են բանականությամբ\u0589 Նրանք պետք է վարվեն\u0589",
             "የሰው ልጅ ሁሉ ሲወለድ ነጻ ነው። አንዱ ሌላውን መመልከት ይገባዋል።",
             "The U.S. team won. Mr. Smith played well in the final game."]
    table = pa.table({"text": pa.array(lines, pa.large_string()), "lang": pa.array(["hy", "am", "en"])})
    english = spacy_english.sentence_count(lines[2])
    assert C4(terminal_punct=False, min_words_per_line=1).score(table)["c4_sentences"].tolist() == [3, 2, english]


def test_a_sentence_that_ends_in_its_closing_quote_is_terminated() -> None:
    """Chinese dialogue ends `。”` or `。」`: read as no terminal, 7 of 10 quoted lines were removed by C4 and a
    story's FineWeb line-punctuation ratio was 0. English keeps its own rule as before."""
    chinese = ["他看着我说：“你今天来得真早，我们一起去看看吧。”", "「你確定嗎？我們今天真的要出發去那裡嗎？」他問。",
               "她笑着回答：「當然了，我已經準備好所有的行李。」"]
    german = ["Sie sagte: „Wir gehen jetzt nach Hause, es ist schon spät.“", "Er rief: „Warte auf mich!“"]
    texts = ["\n".join(chinese), "\n".join(german)]
    table = pa.table({"text": pa.array(texts, pa.large_string()), "lang": pa.array(["zh", "de"])})
    assert FineWeb().score(table)["fw_line_punct_ratio"].tolist() == [1.0, 1.0]
    assert C4().score(table)["c4_lines_removed"].tolist() == [0, 0]


def test_every_bad_key_of_a_languages_map_is_named_at_its_own_line():
    """A map of three bad keys was refused one key at a time, each at the line of `languages:`."""
    from curation.recipe import RecipeError, parse_recipe

    text = ("name: r\nsources:\n  - {name: a, format: jsonl, paths: [x.jsonl]}\nstages:\n  - gopher_quality:\n"
            "      languages:\n        fa: {min_stop_words: 1}\n        ur: {stop_words: [a]}\n"
            "        xx: {stop_words: [a]}\n        en: {stop_words: [a]}\n")
    with pytest.raises(RecipeError) as raised:
        parse_recipe(text, check_paths=False)
    found = [(p.line, p.path) for p in raised.value.problems]
    assert found == [(7, "stages[0].gopher_quality.languages.fa"), (9, "stages[0].gopher_quality.languages.xx"),
                     (10, "stages[0].gopher_quality.languages.en")]


def test_a_language_with_settings_per_script_takes_overrides_per_script():
    """`sr-Latn` was refused (`languages:` per language only), and `curate calibrate --lang sr-Latn` wrote Latin
    Serbian's bounds under `sr`: every Cyrillic document was then judged by them (all dropped as top_2gram)."""
    stage = GopherRepetition(languages={"sr": {"dup_line_frac": 0.5}, "sr-Latn": {"top_n_grams": {2: 0.011}}})
    batch = pa.table({"text": ["Ovo je rečenica na srpskom jeziku.", "Ово је реченица на српском језику."],
                      "lang": ["sr", "sr"]})
    latin, cyrillic = (g for g in sorted(stage.languages_of(batch).groups, key=lambda g: g.script != "Latn"))
    assert (latin.script, latin.top_n_grams, latin.dup_line_frac) == ("Latn", {2: 0.011}, 0.5)
    assert (cyrillic.script, cyrillic.top_n_grams[2], cyrillic.dup_line_frac) == ("Cyrl", 0.176, 0.5)
