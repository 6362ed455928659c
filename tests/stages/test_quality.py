"""Heuristic quality filters (Gopher, C4, FineWeb, density) and the word splitting behind them.

Every rule is shown failing for its documented reason on a small constructed text, through
`run_stage`; real pages from the shared test data check that the rules behave sensibly on real
extracted text. No Ray.
"""

from __future__ import annotations

import gzip
import random
import string

import numpy as np
import pyarrow as pa
import pytest

from curation import schema
from curation.apply import run_stage
from curation.stages.c4 import C4, _sentences_per_line
from curation.stages.density import Density
from curation.stages.fineweb import FineWeb
from curation.stages.gopher import GopherQuality, GopherRepetition
from curation.text.splitter import WORDS
from tests.support import spacy_english

GOOD = (
    "The committee met on Tuesday to review the budget for the coming year.\n"
    "Several members argued that the library needed new shelves and better lighting.\n"
    "Others wanted to spend more of the money on programs for children and older readers.\n"
    "After a long discussion, they agreed to fund both projects with a smaller contingency.\n"
    "The final vote was seven to two, and the minutes were published the next morning.\n"
    "Residents who missed the meeting can read the full report on the town notice board."
)
LINES = GOOD.split("\n")


def docs(texts: list[str | None]) -> pa.Table:
    rows = [{"id": schema.document_id("q", i), "source": "s", "url": None, "title": None, "text": t,
             "meta": "{}", schema.SHARD: "x", schema.STAGE: None, schema.REASON: None, schema.DETAIL: None,
             schema.SHARD_ROWS: None} for i, t in enumerate(texts)]
    return pa.Table.from_pylist(rows, schema=schema.READ_SCHEMA.remove(schema.READ_SCHEMA.get_field_index("html")))


def reasons(stage, texts: list[str | None]) -> list[str | None]:
    return run_stage(stage, docs(texts)).column(schema.REASON).to_pylist()


# --- sentences -----------------------------------------------------------------------------------


def test_sentences_are_counted_like_datatrove():
    lines = ["Hello world. This is it.", "Dr. Smith went to Washington. He stayed.",
             "Wait... what happened? Nobody knows!", "The U.S. economy grew 3.5% in 2019. Experts were surprised.",
             'He said "stop." Then he left.', "Is it? (Yes.) Sure!", "e.g. this one. and that one",
             "One!!! Two?! Three.", "Version 2.0 is out. Download it at example.com. Enjoy.", "A. B. C. D.",
             "no punctuation at all here"]
    assert _sentences_per_line(pa.array(lines)).tolist() == [spacy_english.sentence_count(line) for line in lines]


# --- Gopher quality -------------------------------------------------------------------------------


def test_gopher_quality_keeps_prose_and_names_each_broken_rule():
    stage = GopherQuality()
    cases = {
        "too_few_words": "Short text with the and of.",
        "short_mean_word_length": " ".join(["I am at it as we go on to be by an ox of the"] * 6),
        "long_mean_word_length": " ".join(["the internationalization of telecommunications and decentralization"] * 10),
        "too_many_hashes": GOOD + " #tag" * 20,
        "too_many_ellipses": GOOD + " wait..." * 20,
        "too_many_bullet_lines": "\n".join("- " + line for line in LINES),
        "too_many_ellipsis_lines": GOOD.replace(".\n", "...\n"),
        "too_few_alpha_words": GOOD + " " + " ".join(str(1900 + i) for i in range(60)),
        "too_few_stop_words": " ".join(["Der Ausschuss traf sich am Dienstag, um den Haushalt zu prüfen."] * 6),
    }
    got = reasons(stage, [GOOD, *cases.values()])
    assert got == [None, *cases]
    assert reasons(GopherQuality(max_words=20), [GOOD]) == ["too_many_words"]


def test_gopher_stop_words_are_configurable_and_bounds_can_be_switched_off():
    german = " ".join(["Der Ausschuss traf sich mit dem Rat, um den Haushalt zu prüfen und zu beschließen."] * 6)
    assert reasons(GopherQuality(stop_words=["der", "die", "das", "und", "zu", "mit"]), [german]) == [None]
    assert reasons(GopherQuality(min_words=None), ["Short text with the and of."]) == [None]


def test_gopher_quality_scores_become_columns():
    out = run_stage(GopherQuality(keep_scores=True), docs([GOOD]))
    row = out.to_pylist()[0]
    # datatrove's GopherQualityFilter on the same words (GOOD's only symbols are ASCII punctuation)
    words = spacy_english.words(GOOD)
    non_symbol = [w for w in words if any(ch not in string.punctuation for ch in w)]
    assert row["gopher_words"] == len(non_symbol)
    assert row["gopher_stop_words"] == len({"the", "be", "to", "of", "and", "that", "have", "with"} & set(words))
    assert row["gopher_mean_word_length"] == pytest.approx(sum(map(len, non_symbol)) / len(non_symbol))
    assert row["gopher_bullet_lines_ratio"] == 0.0
    # the letter share of prose (`prose_only`, the default) counts whitespace-separated words, as Gopher did;
    # datatrove's (`prose_only: false`) counts every spaCy word, punctuation marks too
    pieces = GOOD.split()
    assert row["gopher_alpha_words_ratio"] == pytest.approx(sum(any(c.isalpha() for c in w) for w in pieces)
                                                            / len(pieces))
    datatrove = run_stage(GopherQuality(keep_scores=True, prose_only=False), docs([GOOD])).to_pylist()[0]
    assert datatrove["gopher_alpha_words_ratio"] == pytest.approx(sum(any(map(str.isalpha, w)) for w in words)
                                                                  / len(words))


def test_quoted_tokens_are_no_words_without_letters_in_prose_and_a_menus_bars_are():
    """A tutorial quoting tokens one by one (`("h", "u")`) holds more marks than words: each mark a word of its own
    took it under Gopher's 80%. Whitespace-separated words keep the rule's target: a menu's "|" still counts."""
    tutorial = " ".join(['The first merge rule learned is ("u", "g") -> "ug", which means that "u" and "g" will be '
                         'merged, and the pair ("h", "u") is next: "hu" is added to the vocabulary of the model.'] * 4)
    menu = " ".join(["Home | News | Sport | Weather | Video | Contact | - | » | » | 2024 | 12 |"] * 12)
    assert reasons(GopherQuality(prose_only=False), [tutorial]) == ["too_few_alpha_words"]
    assert reasons(GopherQuality(), [tutorial, menu]) == [None, "too_few_alpha_words"]


def test_markdown_heading_marks_are_no_hashes_in_prose_and_hashtags_are():
    """Trafilatura's Markdown writes a listing page's titles as `- #### title`: Gopher's hash rule is about
    hashtags, and its marks are markup (as a heading's own line is, which the prose leaves out)."""
    titles = "\n".join(f"- #### [{line.split(',')[0]}](https://example.com/a#{i})" for i, line in enumerate(LINES))
    listing = GOOD + "\n" + titles
    assert reasons(GopherQuality(prose_only=False), [listing]) == ["too_many_hashes"]
    assert reasons(GopherQuality(), [listing, listing + " #tag" * 40]) == [None, "too_many_hashes"]


# --- Gopher repetition ----------------------------------------------------------------------------


def test_gopher_repetition_names_each_broken_rule():
    long_line = " ".join(f"word{i}" for i in range(80)) + "."
    sentence = ("Every single morning the old lighthouse keeper climbed the winding stairs to polish "
                "the great brass lamp before the fishing boats came home.")
    other = " ".join(f"filler{i}" for i in range(40))
    cases = {
        "empty": "",
        "dup_para_frac": "\n\n".join([LINES[0], LINES[0], LINES[0], LINES[1]]),
        "dup_line_frac": "\n".join([*LINES, LINES[0], LINES[0], LINES[0]]),
        "dup_line_char_frac": "\n".join([*LINES, long_line, long_line]),
        "top_2gram": " ".join(["big deal"] * 20 + [f"unique{i}" for i in range(30)]),
        "dup_5gram": f"{sentence} {other} {sentence}",
    }
    got = reasons(GopherRepetition(), [GOOD, *cases.values()])
    assert got == [None, *cases]


def test_gopher_repetition_shares_are_at_most_one_in_text_without_spaces():
    """An n-gram's words are joined by spaces as datatrove measures them: in a short Chinese text that is more
    characters than the text holds (`top_3gram_char_frac=1.5` for "太短了。")."""
    table = docs(["太短了。", "好的好的好的"]).append_column("lang", pa.array(["zh", "zh"]))
    scores = GopherRepetition().score(table)
    shares = np.concatenate([scores[f"top_{n}gram_char_frac"] for n in (2, 3, 4)])
    assert np.nanmax(shares) == 1.0
    # a text that says nothing twice repeats nothing, however short (datatrove counts its first 2-gram)
    assert run_stage(GopherRepetition(), table).column(schema.REASON).to_pylist() == [None, "top_2gram"]


def test_gopher_repetition_scores_and_custom_ngrams():
    out = run_stage(GopherRepetition(keep_scores=True, max_top_ngram_char_frac={2: 0.2},
                                     max_dup_ngram_char_frac={6: 0.1}), docs([GOOD]))
    row = out.to_pylist()[0]
    assert row["dup_line_frac"] == 0.0 and row["dup_6gram_char_frac"] == 0.0
    assert row["top_2gram_char_frac"] == 0.0  # no 2-gram of it occurs twice
    assert "top_3gram_char_frac" not in out.column_names
    with pytest.raises(ValueError, match="from 1 to 10"):
        GopherRepetition(max_dup_ngram_char_frac={11: 0.1})


# --- C4 --------------------------------------------------------------------------------------------


def test_c4_removes_lines_and_keeps_the_rest():
    text = "\n".join([
        LINES[0] + "[1]",
        "Please enable JavaScript to view the comments below.",
        "By using this site you agree to our Terms of Use and conditions.",
        "Home page navigation menu items",
        "Hello there.",
        "Look at this " + "x" * 1001 + " please.",
        *LINES[1:],
    ])
    out = run_stage(C4(keep_scores=True), docs([text]))
    row = out.to_pylist()[0]
    assert row[schema.REASON] is None
    assert row["text"] == GOOD  # the citation is cut, the five bad lines are gone
    assert (row["c4_lines_kept"], row["c4_lines_removed"], row["c4_sentences"]) == (6, 5, 6)
    counts = {k.split(":")[-1]: v for k, v in row.items() if k.startswith("_n:c4:")}
    assert counts == {"lines_long_word": 1, "lines_no_terminal_punct": 1, "lines_few_words": 1,
                      "lines_javascript": 1, "lines_policy": 1}
    lenient = run_stage(C4(terminal_punct=False), docs([text])).column("text").to_pylist()[0]
    assert "Home page navigation menu items" in lenient


def test_c4_removes_cookie_and_privacy_lines_in_the_documents_language_and_judges_english_as_c4():
    """C4's policy phrases were English only: a Chinese or German page's cookie banner stayed in its text."""
    zh = ("北京市今天发布了新的交通政策，市民可以更方便地使用公共交通工具。\n"
          "本网站使用Cookie以改善您的浏览体验，继续浏览即表示您同意我们的隐私政策。\n该政策将于下个月开始实施。")
    de = ("Die Stadt hat heute eine neue Verkehrspolitik angekündigt, sagte der Bürgermeister.\n"
          "Diese Website verwendet Cookies, um Ihnen das beste Erlebnis zu bieten.\nDie Bürger freuen sich sehr.")
    en = GOOD + "\nDiese Website verwendet Cookies, um Ihnen das beste Erlebnis zu bieten."
    table = docs([zh, de, en]).append_column("lang", pa.array(["zh", "de", "en"]))
    out = run_stage(C4(min_sentences=1), table).column("text").to_pylist()
    assert out[0] == "北京市今天发布了新的交通政策，市民可以更方便地使用公共交通工具。\n该政策将于下个月开始实施。"
    assert out[1] == "Die Stadt hat heute eine neue Verkehrspolitik angekündigt, sagte der Bürgermeister.\n" \
                     "Die Bürger freuen sich sehr."
    assert out[2] == en  # English is judged by C4's English phrases only
    banner = "Kami menggunakan cookie untuk meningkatkan pengalaman Anda di situs ini."  # Indonesian
    news = "Jakarta hari ini mengumumkan kebijakan baru untuk transportasi umum di kota itu."
    indonesian = docs([f"{news}\n{banner}"]).append_column("lang", pa.array(["id"]))
    assert run_stage(C4(min_sentences=1), indonesian).column("text").to_pylist() == [news]
    # Swahili's and Tagalog's banners and footers, which stayed and kept a page of links and SEO spam
    swahili = ("Serikali imetangaza mpango mpya wa usafiri wa umma katika jiji la Dar es Salaam.\n"
               "Tovuti hii inatumia vidakuzi ili kuboresha matumizi yako.\nSera ya Faragha | Masharti ya Matumizi")
    tagalog = ("Inanunsyo ng lungsod ngayong araw ang bagong patakaran sa pampublikong transportasyon.\n"
               "Gumagamit ang site na ito ng cookies para mapabuti ang iyong karanasan.\n"
               "Patakaran sa Privacy | Sitemap")
    table = docs([swahili, tagalog]).append_column("lang", pa.array(["sw", "tl"]))
    assert [t.split("\n") for t in run_stage(C4(min_sentences=1, terminal_punct=False), table).column("text")
            .to_pylist()] == [[swahili.split("\n")[0]], [tagalog.split("\n")[0]]]


def test_c4_page_rules_drop_documents():
    lorem = GOOD + "\nLorem ipsum dolor sit amet, consectetur adipiscing elit."
    curly = GOOD + "\nThe function returns {a: 1} for each call that is made."
    both = curly + "\nLorem ipsum dolor sit amet, consectetur adipiscing elit."
    short = "\n".join(LINES[:3])
    sentences = "One sentence here. Two sentences here! Three here? Four here. Five here."
    texts = [lorem, curly, both, short, sentences, "Lorem ipsum.\n" + GOOD, "\n\n"]
    assert reasons(C4(), texts) == ["lorem_ipsum", "curly_bracket", "curly_bracket", "too_few_sentences", None,
                                    None, "too_few_sentences"]
    assert reasons(C4(lorem_ipsum=False, curly_bracket=False, min_sentences=None), [lorem, curly, short]) == [
        None, None, None]


def test_c4_unwraps_mediawikis_language_converter_markup_and_still_drops_code():
    wiki = GOOD + "\nThe town lies at 185 -{m}- above the sea, on 4,84 -{km²}- of land."
    variants = GOOD + "\nIt is called -{zh-hans:计算机; zh-hant:電腦}- in the two scripts."
    out = run_stage(C4(), docs([wiki, variants]))
    assert out.column(schema.REASON).to_pylist() == [None, "curly_bracket"]  # a variant list is left as it is
    assert out.column("text").to_pylist()[0].endswith("The town lies at 185 m above the sea, on 4,84 km² of land.")
    assert reasons(C4(remove_citations=False), [wiki]) == ["curly_bracket"]


def test_c4_keeps_original_text_of_dropped_documents():
    text = "Nothing to see.\n" + "\n".join(LINES[:2])
    out = run_stage(C4(), docs([text]))
    assert out.column(schema.REASON).to_pylist() == ["too_few_sentences"]
    assert out.column("text").to_pylist() == [text]


# --- FineWeb ---------------------------------------------------------------------------------------


def test_fineweb_names_each_broken_rule():
    no_punct = "\n".join(line.rstrip(".") for line in LINES)
    short = "\n".join([*(f"Item number {i}." for i in range(12)), *LINES[:2]])
    listy = "\n".join(f"Supercalifragilisticexpialidocious{i}." for i in range(10))
    cases = {
        "empty": " \n \n",
        "line_punct_ratio": no_punct,
        "short_line_ratio": short,
        "char_dup_ratio": GOOD + "\n" + LINES[2],
        "list_ratio": listy,
    }
    assert reasons(FineWeb(), [GOOD, *cases.values()]) == [None, *cases]
    assert reasons(FineWeb(line_punct_exclude_zero=True), [no_punct]) == [None]


def test_fineweb_list_ratio_detail_names_newlines_per_word_and_its_bound():
    listy = "\n".join(f"Supercalifragilisticexpialidocious{i}." for i in range(10))
    plain = run_stage(FineWeb(), docs([listy])).column(schema.DETAIL).to_pylist()
    assert plain == ["fw_new_line_ratio=0.45, max_new_line_ratio=0.3"]  # it named the short-line share
    german = run_stage(FineWeb(), docs([listy]).append_column("lang", pa.array(["de"])))
    assert german.column(schema.REASON).to_pylist() == ["list_ratio"]
    assert german.column(schema.DETAIL).to_pylist()[0].startswith("fw_new_line_ratio=0.45, _max_new_line_ratio=")


def test_fineweb_scores():
    text = GOOD + "\n\nShort line"
    row = run_stage(FineWeb(keep_scores=True), docs([text])).to_pylist()[0]
    assert row["fw_line_punct_ratio"] == pytest.approx(6 / 7)
    assert row["fw_short_line_ratio"] == pytest.approx(1 / 7)
    assert row["fw_char_dup_ratio"] == 0.0
    # datatrove's ratio over text whose blank lines C4 removed first: the blank line is no break more (C4 keeps it now)
    assert row["fw_new_line_ratio"] == pytest.approx(6 / len(spacy_english.words(text)))


# --- density ---------------------------------------------------------------------------------------


def test_density_drops_repetitive_and_random_text_only():
    rng = random.Random(3)
    alphabet = string.ascii_letters + string.digits + string.punctuation
    random_text = "".join(rng.choice(alphabet) for _ in range(3000))
    out = run_stage(Density(keep_scores=True), docs([GOOD, "abc " * 500, random_text, "x" * 100]))
    assert out.column(schema.REASON).to_pylist() == [None, "too_compressible", "too_incompressible", None]
    ratios = out.column("compression_ratio").to_pylist()
    assert 0.3 < ratios[0] < 0.75 and ratios[1] < 0.05 and ratios[2] > 0.75
    with pytest.raises(ValueError, match="below"):
        Density(min_compression_ratio=0.8, max_compression_ratio=0.5)


# --- edge cases -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", [GopherQuality(), GopherRepetition(), C4(), FineWeb(), Density()],
                         ids=lambda s: s.name)
def test_null_and_blank_texts_are_judged_not_crashed_on(stage):
    out = run_stage(stage, docs([None, "", " \n\r\n ", GOOD]))
    got = out.column(schema.REASON).to_pylist()
    assert got[3] is None
    assert all(r is not None for r in got[:3]) or stage.name == "density"  # density leaves short texts alone
    assert out.column("text").to_pylist()[0] is None  # a dropped document keeps its text as it was
    assert run_stage(stage, docs([])).num_rows == 0
    assert stage.process(docs([])).table.num_rows == 0


# --- real pages ------------------------------------------------------------------------------------

ENGLISH_ARTICLES = ["aclu", "bbc-1", "cnn", "engadget", "dropbox-blog", "google-sre-book-1"]


@pytest.fixture(scope="module")
def pages(testdata) -> dict[str, str]:
    from curation.stages import Extract

    extractor = Extract(timeout_s=None)
    names = [*ENGLISH_ARTICLES, "basic-tags-cleaning", "cnet-svg-classes", "gmw"]
    texts = {}
    for name in names:
        path = testdata / "html" / "readability" / "pages" / name / "source.html.gz"
        if not path.is_file():
            pytest.skip(f"test page {path} missing")
        texts[name] = extractor.extract_one(gzip.decompress(path.read_bytes()), None, None)[0]
    return texts


def test_real_english_articles_pass_every_filter(pages):
    texts = [pages[name] for name in ENGLISH_ARTICLES]
    for stage in (GopherRepetition(), GopherQuality(), C4(terminal_punct=False), FineWeb(), Density()):
        assert reasons(stage, texts) == [None] * len(texts), stage.name
    cleaned = run_stage(C4(), docs(texts)).column("text").to_pylist()
    assert all(0.3 * len(t) < len(c) <= len(t) for c, t in zip(cleaned, texts, strict=True))


def test_real_pages_are_dropped_for_what_they_are(pages):
    template = pages["basic-tags-cleaning"]  # a "Lorem ipsum" test page
    assert reasons(C4(), [template]) == ["lorem_ipsum"]
    assert reasons(GopherQuality(), [template]) == ["too_few_stop_words"]
    spanish = pages["cnet-svg-classes"]
    assert reasons(GopherQuality(), [spanish]) == ["too_few_stop_words"]
    assert reasons(GopherQuality(stop_words=["de", "la", "que", "el", "en", "y", "los"]), [spanish]) == [None]
    chinese = pages["gmw"]  # no spaces: one "word" per clause
    assert reasons(GopherQuality(), [chinese]) == ["long_mean_word_length"]


def test_real_page_scores_are_sane(pages):
    out = run_stage(GopherQuality(keep_scores=True), docs(list(pages.values())))
    words = np.array(out.column("gopher_words").to_pylist())
    assert (words > 0).all()
    alpha = np.array(out.column("gopher_alpha_words_ratio").to_pylist())
    assert ((alpha > 0) & (alpha <= 1)).all()
    assert WORDS.words(pages["cnn"])[:4] == WORDS.words(pages["cnn"].split("\n")[0])[:4]


def test_c4_keeps_paragraph_breaks_between_the_lines_it_keeps():
    """C4 joined its kept lines by single newlines: every paragraph break of a page was gone (nine Chinese news and
    forum pages lost all of theirs), though a blank line is no line to judge."""
    first = "The first paragraph of this English text is long enough to be kept by the rules."
    second = "The second paragraph of this English text is long enough to be kept by the rules."
    third = "The third paragraph of this English text is long enough to be kept here as well."
    text = f"\n\n{first}\n\nMenu\n\n{second}\nshort one\n{third}\n\n\n\n{first[:-1]} again.\n\n"
    out = run_stage(C4(min_sentences=1, keep_scores=True), docs([text])).to_pylist()[0]
    assert out["text"] == f"{first}\n\n{second}\n{third}\n\n{first[:-1]} again."
    assert (out["c4_lines_kept"], out["c4_lines_removed"]) == (4, 2)
    zh = ("从消费来看，前三季度社会消费品零售总额342107亿元，同比增长6.8%。\n\n"
          "发言人同时指出，当前外部环境依然复杂严峻，国内需求仍显不足，经济回升向好的基础仍需巩固。")
    table = docs([zh]).append_column("lang", pa.array(["zh"]))
    assert run_stage(C4(min_sentences=1), table).column("text")[0].as_py() == zh
