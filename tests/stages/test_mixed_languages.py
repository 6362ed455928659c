"""Documents in several languages: paragraphs labelled, each language's part judged by its own rules."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from curation.stages.c4 import C4
from curation.stages.gopher import GopherQuality
from curation.stages.langid import LangId

ZH = ["大规模语言模型的训练通常分为预训练和微调两个阶段。预训练阶段需要海量的文本数据，"
      "模型在这些数据上学习语言的统计规律。",
      "数据的质量直接决定了模型的能力。因此，在训练之前，我们需要对网页数据进行清洗，去掉广告、导航栏和重复的内容。",
      "去重是数据清洗中非常重要的一步。常见的方法包括精确去重和基于最小哈希的模糊去重，后者可以发现近似重复的网页。",
      "分词器的选择也会影响训练效率。对于中英文混合的语料，我们通常训练一个共享的词表，并保证两种语言都有足够的覆盖。"]
EN = ["Large language models are usually trained in two stages, pre-training and fine-tuning, and the first needs the "
      "most data.",
      "The quality of that data decides much of what the model can do, so web pages are cleaned before training "
      "begins.",
      "Deduplication matters as much as filtering: exact hashes find copies, and MinHash finds pages that are nearly "
      "the same.",
      "The tokenizer matters too. For a corpus in Chinese and English, one shared vocabulary must cover both languages "
      "well."]
MIXED = "\n".join(p for pair in zip(ZH, EN, strict=True) for p in pair)


@pytest.fixture(scope="module")
def labelled() -> pa.Table:
    return LangId(keep=["zh", "en"], per_paragraph=True).ready().process(pa.table({"text": [MIXED]})).table


def _reasons(stage, table: pa.Table) -> list[str | None]:
    return stage.ready().process(table).reasons.to_pylist()


def test_each_paragraph_is_labelled_and_the_document_takes_the_language_of_most_of_it(labelled):
    spans = labelled.column("lang_paragraphs")[0].as_py()
    assert [s["lang"] for s in spans] == ["zh", "en"] * 4
    assert [MIXED[s["start"]:s["end"]] for s in spans] == [p for pair in zip(ZH, EN, strict=True) for p in pair]
    # Chinese holds most of its words (119 against 80); by characters (221 against 469) it was English's
    assert labelled.column("lang").to_pylist() == ["zh"]
    assert labelled.column("lang_score")[0].as_py() > 0.9  # the paragraphs' scores, not the split whole text's


def test_a_chinese_article_quoting_a_longer_english_paragraph_is_chinese():
    """Parts were weighed by characters, of which a Chinese text needs a fourth of English's: an article of three
    Chinese paragraphs quoting one English paragraph was English, in English's dedup bucket and counts."""
    quote = " ".join(EN[:3])
    text = "\n".join([*ZH[:3], quote])
    assert len(quote) > len("\n".join(ZH[:3]))
    table = LangId(keep=["zh", "en"], per_paragraph=True).ready().process(pa.table({"text": [text]})).table
    assert [s["lang"] for s in table.column("lang_paragraphs")[0].as_py()] == ["zh", "zh", "zh", "en"]
    assert table.column("lang").to_pylist() == ["zh"]


CANTONESE_POST = "\n".join([
    "[求救] 屋企部雪櫃成日好大聲，係咪就嚟壞？",
    "部雪櫃用咗差唔多八年，最近一個禮拜晚晚都好大聲，好似有啲嘢喺入面震咁，有時仲會停一停又再響。"
    "我試過搬佢出少少，離開牆遠啲，但都係咁。想問下大家係咪要換新嘅？定係搵師傅睇下就得？",
    "回覆：八年都算用得耐，不過可能只係摩打或者風扇有問題，搵師傅睇下先啦，唔使即刻換。",
    "回覆：我之前都係咁，後尾發現係背後啲膠片鬆咗，鎖返實就冇事。",
    "回覆：如果唔凍就真係要換喇，而家啲新嘅慳電好多。",
    "樓主：多謝各位，聽日打電話叫師傅上嚟睇下先。"])
MANDARIN_REPLIES = "\n".join([
    "求助：新买的路由器晚上总是断网怎么办？", "4楼：晚上是用网高峰期，可能是运营商那边的问题，打客服报修吧。",
    "6楼：十几个设备，是不是有设备在后台下载？进路由器后台看看流量。",
    "7楼：换个信道试试，小区里路由器太多会互相干扰。"])


def test_a_cantonese_post_whose_probability_fasttext_splits_with_mandarin_is_kept():
    """lid.176 gave a Cantonese post's two paragraphs zh 0.45 and most of the rest yue: under either label's
    threshold, the clean post was dropped as `low_lang_score`."""
    post = "\n\n".join([
        "各位巴打絲打，想問下大家平時喺邊度食早餐？我最近搬咗去觀塘返工，"
        "附近啲茶餐廳好似都唔係好好食，個個都係嗰幾款餐，食到好悶。",
        "我之前喺旺角返工嗰陣，成日去一間老字號食菠蘿油同奶茶，啲奶茶好滑，而家諗返都仲好想食。"
        "有冇人知觀塘有冇類似嘅舖頭？價錢貴少少都冇所謂，最緊要好味。"])
    out = LangId(keep=["zh", "yue"], min_score="auto").ready().process(pa.table({"text": [post]}))
    assert out.reasons.to_pylist() == [None]
    assert out.table.column("lang").to_pylist()[0] in ("zh", "yue") and out.table.column("lang_score")[0].as_py() > 0.8


def test_a_chinese_post_is_not_made_mixed_by_a_line_read_as_another_chinese_variety():
    """lid.176 tells Chinese varieties apart by a few function words: a Mandarin reply came out Wu at 0.61, a
    Cantonese one Wu at 0.35, and the posts were dropped as `mixed zh+wuu` where a recipe keeps zh."""
    out = LangId(keep=["zh", "yue", "en"], per_paragraph=True).ready().process(
        pa.table({"text": [CANTONESE_POST, MANDARIN_REPLIES]}))
    assert out.reasons.to_pylist() == [None, None]
    assert out.table.column("lang").to_pylist() == ["yue", "zh"]  # neither made mixed
    for spans in out.table.column("lang_paragraphs").to_pylist():
        assert {s["lang"] for s in spans} <= {"zh", "yue"}


SERBIAN_LATIN = (
    "Beograd je glavni i najveći grad Srbije, smešten na ušću Save u Dunav. Grad ima dugu i burnu istoriju, a tokom "
    "vekova bio je razaran i obnavljan više desetina puta. Danas je Beograd važan kulturni, ekonomski i saobraćajni "
    "centar jugoistočne Evrope.\n\nNajpoznatija znamenitost grada je Beogradska tvrđava sa parkom Kalemegdan, odakle "
    "se pruža prelep pogled na reke i Novi Beograd. Posetioci rado šetaju i Knez Mihailovom ulicom, glavnom pešačkom "
    "zonom u centru grada, punom kafića, knjižara i prodavnica.\n\nNoćni život Beograda poznat je širom Evrope. "
    "Splavovi na rekama rade tokom cele godine, a brojni klubovi, kafane i koncerti privlače mlade iz regiona i "
    "inostranstva.")


def test_a_paragraph_read_as_a_close_neighbour_of_its_pages_language_takes_the_pages():
    """Its last paragraph alone is Bosnian at 0.63 (fastText: Serbo-Croatian at 0.35): the Serbian article was
    `mixed sr+bs`, dropped where a recipe keeps sr. A paragraph tells close languages apart worse than its page."""
    out = LangId(keep=["sr"], per_paragraph=True).ready().process(pa.table({"text": [SERBIAN_LATIN]}))
    assert out.reasons.to_pylist() == [None]
    assert [s["lang"] for s in out.table.column("lang_paragraphs").to_pylist()[0]] == ["sr"] * 3


def test_written_cantonese_is_cantonese_by_the_characters_only_it_writes():
    """lid.176 labelled written Cantonese zh at 1.0 (the UDHR's, in either script): judged by Mandarin's settings, and
    kept by `keep: [zh]`. Its own characters (嘅 咗 喺 哋...) tell it; a Mandarin text with one of them stays zh."""
    mandarin_with_one = "他说这件事情没有问题，我们明天去看看。佢是一个方言字，在普通话的文章里很少出现。"
    out = LangId(keep=["zh"]).ready().process(pa.table({"text": [CANTONESE_POST, mandarin_with_one]}))
    assert out.table.column("lang").to_pylist() == ["yue", "zh"]
    assert out.reasons.to_pylist() == ["lang_not_kept", None]
    # Hong Kong news in standard written Chinese quotes Cantonese speech: a quote is no Cantonese text (the article
    # was dropped as "mixed zh+yue" where a recipe keeps zh)
    news = "\n".join([
        "香港特區政府今日公布新一份施政報告，行政長官表示，政府將繼續推動房屋供應，並在未來五年內興建更多公營房屋。",
        "在記者會上，行政長官被問及市民對房屋問題的不滿時表示：「我哋會盡力做，唔會令大家失望。」",
        "市民陳先生接受訪問時說：「佢哋講咗好多年，但係我喺度等咗七年都未有樓。」他希望政府能盡快落實承諾。"])
    quoted = LangId(keep=["zh", "en"], per_paragraph=True).ready().process(pa.table({"text": [news]}))
    assert quoted.reasons.to_pylist() == [None] and quoted.table.column("lang").to_pylist() == ["zh"]
    assert {s["lang"] for s in quoted.table.column("lang_paragraphs")[0].as_py()} == {"zh"}


def test_a_recipe_may_keep_only_documents_all_of_whose_languages_it_keeps_or_only_whole_ones():
    table = pa.table({"text": [MIXED, EN[0] + "\n" + EN[1]]})
    only_en = LangId(keep=["en"], per_paragraph=True).ready().process(table)
    assert only_en.reasons.to_pylist() == ["lang_not_kept", None]
    assert only_en.details.to_pylist()[0] == "mixed zh+en"
    whole = LangId(keep=["zh", "en"], per_paragraph=True, mixed_documents="drop").ready().process(table)
    assert whole.reasons.to_pylist() == ["lang_mixed", None]


def test_each_part_is_judged_by_its_own_languages_settings(labelled):
    strict_zh = {"zh": {"max_avg_word_length": 1.0}}  # no Chinese part passes this
    # the Chinese part holds most of its words: the document goes with it, and stays without the English part
    assert _reasons(GopherQuality(languages=strict_zh), labelled) == ["long_mean_word_length"]
    assert _reasons(GopherQuality(max_mean_word_length=2), labelled) == [None]  # English's own: no English part passes
    # judged as one Chinese document, its English words fail Chinese's bounds; as parts, each passes its own
    as_chinese = labelled.drop_columns(["lang_paragraphs"]).set_column(
        labelled.schema.get_field_index("lang"), "lang", pa.array(["zh"]))
    assert _reasons(GopherQuality(languages={"zh": {"max_avg_word_length": 2.5}}), as_chinese) == [
        "long_mean_word_length"]
    assert _reasons(GopherQuality(languages={"zh": {"max_avg_word_length": 2.5}}), labelled) == [None]


def test_rules_of_a_documents_size_count_all_of_its_parts(labelled):
    # 5 English sentences and 8 Chinese ones: each part alone has fewer than 10
    assert _reasons(C4(terminal_punct=False, min_sentences=10), labelled) == [None]
    assert _reasons(C4(terminal_punct=False, min_sentences=14), labelled) == ["too_few_sentences"]
    kept = C4(terminal_punct=False).ready().process(labelled).table
    assert kept.column("text").to_pylist() == [MIXED]  # a mixed document's text is left as it was
    assert kept.column("lang").to_pylist() == ["zh"]


def test_tokens_per_language_count_a_mixed_documents_parts(labelled):
    from curation.tokens.fertility import by_part, count

    texts, paragraphs = labelled.column("text"), labelled.column("lang_paragraphs")
    row, lang, chars, tokens = by_part(texts, paragraphs, lambda parts: [len(p.split()) for p in parts])
    assert row.tolist() == [0, 0] and lang.tolist() == ["zh", "en"]  # Chinese holds most of its words
    assert chars.tolist() == [len("\n".join(ZH)), len("\n".join(EN))]
    counts = count(np.array(["web", "web", "web"], dtype=object), np.array(["zh", *lang], dtype=object),
                   np.array([0, *chars]), np.array([0, *tokens]), np.array([1, 0, 0]))
    assert counts == {"web": {"zh": [1, chars[0], tokens[0]], "en": [0, chars[1], tokens[1]]}}


def test_a_chinese_article_with_a_list_of_english_titles_is_not_a_page_of_bullets():
    """The share of bullet lines is the document's: its English part, a reference list, is all bullets alone."""
    titles = ["- ZeRO-Offload: Democratizing Billion-Scale Model Training on a single commodity machine",
              "- ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme Scale Deep Learning on clusters",
              "- PatrickStar: Parallel Training of Pre-trained Models via Chunk-based Memory Management"]
    table = LangId(keep=["zh", "en"], per_paragraph=True).ready().process(
        pa.table({"text": ["\n".join([*ZH, "相关文章：", *titles])]})).table
    assert sorted({p["lang"] for p in table.column("lang_paragraphs")[0].as_py()}) == ["en", "zh"]
    assert _reasons(GopherQuality(min_words=0), table) == [None]
    # the same list alone is a page of bullets
    alone = LangId(keep=["en"]).ready().process(pa.table({"text": ["\n".join(titles * 3)]})).table
    assert _reasons(GopherQuality(min_words=0), alone) == ["too_many_bullet_lines"]


def test_a_line_too_short_or_too_bare_for_its_own_label_takes_its_documents():
    """A calendar, a copyright line, a line of URLs: read alone, lid.176 names some language (Yoruba, Irish...);
    counted as such they made English pages "mixed", dropped where a recipe keeps zh and en only."""
    calendar = "Oktober 2020 Mo Di Mi Do Fr Sa So " + " ".join(f"{d:02}" for d in range(1, 32))
    noise = [calendar, "© 1994-2020 Wordsmith", "- www.heise.de via heise online News https://www.heise.de/"]
    text = "\n".join([EN[0], *noise, EN[1], *noise])
    out = LangId(keep=["zh", "en"], per_paragraph=True).ready().process(pa.table({"text": [text]}))
    spans = out.table.column("lang_paragraphs")[0].as_py()
    assert [s["lang"] for s in spans] == ["en"] * 8
    assert out.reasons.to_pylist() == [None]
    # a paragraph long enough keeps its own label, however short the document's others are
    labelled = LangId(per_paragraph=True).ready().process(pa.table({"text": ["\n".join([EN[0], ZH[1]])]})).table
    assert [s["lang"] for s in labelled.column("lang_paragraphs")[0].as_py()] == ["en", "zh"]


@pytest.mark.parametrize("lang", ["te", "mr", "gu", "ta", "hi", "th", "ar", "ru", "ja", "ko", "zh", "ka", "de"])
def test_real_sentences_among_english_paragraphs_are_each_labelled_their_own_language(testdata, lang):
    """Scripts that write vowels as combining marks (Telugu, Tamil, Marathi: under half of a sentence's characters
    are letters) count the marks as letters: their sentences keep their own label, not the English page's."""
    lines = (testdata / "langid" / "sentences" / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
    own = [line for line in lines if line.strip()][:8]
    text = "\n".join(p for line in own for p in (line, *EN[:3]))  # English holds most of the text
    spans = LangId(per_paragraph=True).ready().process(pa.table({"text": [text]})).table.column(
        "lang_paragraphs")[0].as_py()
    labels = {text[s["start"]:s["end"]]: s["lang"] for s in spans}
    assert [labels[line] for line in own] == [lang] * len(own)
    assert {labels[line] for line in EN[:3]} == {"en"}


def _slices(table: pa.Table) -> list[tuple[str, str]]:
    text = table.column("text")[0].as_py()
    return [(s["lang"], text[s["start"]:s["end"]]) for s in table.column("lang_paragraphs")[0].as_py()]


def test_paragraph_offsets_stay_offsets_into_the_text_a_later_stage_rewrites():
    from curation.stages.pii import PiiRedaction

    german = "Die Qualität der Daten bestimmt, was ein Modell lernen kann, und deshalb werden Webseiten gereinigt."
    short = ["Share this", "Read more"]  # lines of fewer than three words: C4 removes them
    text = "\n".join([short[0], EN[0] + " Mail: ann.lee@example.com", german, short[1], EN[1], EN[2], EN[3]])
    labelled = LangId(keep=["en", "de"], per_paragraph=True).ready().process(pa.table({"text": [text]})).table
    before = _slices(labelled)
    assert ("de", german) in before and len(before) == 7
    cut = C4(terminal_punct=False).ready().process(labelled).table
    assert cut.column("text")[0].as_py().split("\n")[0].startswith(EN[0])  # the short lines are gone...
    assert _slices(cut) == [pair for pair in before if pair[1] not in short]  # ...and every label is on its line
    redacted = PiiRedaction(redact=["email"]).ready().process(cut).table
    lines = redacted.column("text")[0].as_py().split("\n")
    assert "ann.lee@example.com" not in lines[0]  # a line shorter or longer: the offsets after it move
    assert _slices(redacted) == [(lang, line) for (lang, _), line in zip(_slices(cut), lines, strict=True)]


def test_lines_c4_strips_keep_their_labels_and_a_page_stays_in_one_language():
    """C4 writes the lines it keeps stripped, a nested list item's indent with it, and without citation marks. Those
    lines lost their labels where C4 also removed a line; a page's one German line then made a fifth of what was left
    labelled, and the English page was judged as a mixed one, by its few labelled lines (a real agenda page dropped)."""
    german = "Gastgeber ist die Firma am Dammtor in Hamburg, der Eingang liegt im Hof."
    text = "\n".join([german, "Agenda", f"- {EN[0]}", f"  - {EN[1]}", f"    - {EN[2]}[12]", f"  - {EN[3]}"])
    labelled = LangId(per_paragraph=True).ready().process(pa.table({"text": [text]})).table
    cut = C4(terminal_punct=False).ready().process(labelled).table
    lines = cut.column("text")[0].as_py().split("\n")
    assert "Agenda" not in lines and lines[3] == f"- {EN[2]}"  # removed; stripped and its citation dropped
    assert [lang for lang, _ in _slices(cut)] == ["de", "en", "en", "en", "en"]
    assert [line for _, line in _slices(cut)] == lines and cut.column("lang").to_pylist() == ["en"]


def test_c4_counts_a_line_of_another_language_in_that_languages_words():
    """An English lesson quoting one Chinese sentence is English, not mixed: C4 read the sentence as one whitespace
    "word", under its 3, and removed it, leaving the lesson explaining a sentence no longer there."""
    sentence = "我们明天早上八点在火车站门口见面，然后一起去博物馆参观。"
    text = "\n\n".join([EN[0], sentence, EN[1], EN[2], EN[3]])
    labelled = LangId(keep=["zh", "en"], per_paragraph=True).ready().process(pa.table({"text": [text]})).table
    assert labelled.column("lang").to_pylist() == ["en"]
    assert [s["lang"] for s in labelled.column("lang_paragraphs")[0].as_py()] == ["en", "zh", "en", "en", "en"]
    out = C4(terminal_punct=False).ready().process(labelled)
    assert out.reasons.to_pylist() == [None] and sentence in out.table.column("text")[0].as_py()
    # and it ends as a Chinese sentence does: C4's own rule read its 。 as no English full stop
    assert sentence in C4().ready().process(labelled).table.column("text")[0].as_py()
    # a Chinese line of one word is still too few, counted in Chinese words
    short = "\n\n".join([EN[0], "谢谢。", EN[1], EN[2], EN[3]])
    labelled = LangId(keep=["zh", "en"], per_paragraph=True).ready().process(pa.table({"text": [short]})).table
    assert [s["lang"] for s in labelled.column("lang_paragraphs")[0].as_py()] == ["en", "zh", "en", "en", "en"]
    out = C4(terminal_punct=False).ready().process(labelled)
    assert out.reasons.to_pylist() == [None] and "谢谢" not in out.table.column("text")[0].as_py()


def test_a_mixed_documents_text_and_paragraphs_pass_a_rewriting_filter_as_they_were(labelled):
    kept = C4(terminal_punct=False, min_words_per_line=30).ready().process(labelled).table
    assert kept.column("text").to_pylist() == [MIXED]
    assert kept.column("lang_paragraphs").to_pylist() == labelled.column("lang_paragraphs").to_pylist()


def test_paragraph_offsets_follow_traditional_chinese_made_simplified():
    """Taiwan's words become the mainland's, not always as long (乙太網路 -> 以太网): the lines after move."""
    hant = ["我們在乙太網路上把訓練資料分發給每一台機器，再用軟體檢查資料庫裡的重複網頁與廣告內容。",
            "資料清洗完成以後，我們才開始訓練分詞器，並且確認每一種語言都有足夠的詞彙覆蓋率。"]
    text = "\n".join([hant[0], "The web pages are cleaned before training.", hant[1]])
    out = LangId(per_paragraph=True, to_simplified="tw2sp").ready().process(pa.table({"text": [text]})).table
    converted = out.column("text")[0].as_py()
    assert "以太网" in converted and len(converted) < len(text)
    assert _slices(out) == list(zip(["zh", "en", "zh"], converted.split("\n"), strict=True))


ABUSE_ZH = ["你这个二逼，下贱的东西，他奶奶的，滚开吧你这个下三烂的家伙。",
            "他奶奶的二逼，下贱，下三烂，仆街，你个老子的。"]


def test_toxicity_judges_each_labelled_language_by_its_own_list_however_little_of_it_there_is():
    """Two abusive Chinese lines in an English page (a tenth of it: not mixed) were read by the English list alone."""
    from curation.stages.toxicity import Toxicity

    abusive = "\n".join([EN[0], EN[1], ABUSE_ZH[0], EN[2], EN[3], ABUSE_ZH[1]])
    clean = "\n".join([EN[0], EN[1], ZH[0], EN[2], EN[3], ZH[1]])
    labelled = LangId(keep=["zh", "en"], per_paragraph=True).ready().process(pa.table({"text": [abusive, clean]}))
    assert labelled.table.column("lang").to_pylist() == ["en", "en"]
    both = Toxicity(languages=["en", "zh"]).ready().process(labelled.table)
    assert both.reasons.to_pylist() == ["flagged_words", None]
    assert both.counts["judged:zh"].tolist() == [1, 1] and both.counts["judged:en"].tolist() == [1, 1]
    assert both.table.column("text").to_pylist() == labelled.table.column("text").to_pylist()
    chinese = Toxicity(languages=["zh"])  # an English document with Chinese paragraphs is judged on those
    assert chinese.ready().applies(labelled.table).to_pylist() == [True, True]
    assert chinese.process(labelled.table).reasons.to_pylist() == ["flagged_words", None]
    english = Toxicity(languages=["en"]).ready()  # Chinese not asked for: its words are not flagged
    assert english.process(labelled.table).reasons.to_pylist() == [None, None]
    unlabelled = Toxicity(languages=["en", "zh"]).ready().process(labelled.table.drop_columns(["lang_paragraphs"]))
    assert unlabelled.reasons.to_pylist() == [None, None]  # as before: the English list over the whole text


def test_the_multilingual_recipe_keeps_a_page_in_two_languages_and_judges_each_by_its_rules(testdata):
    """Arabic and French paragraphs in turn (Leipzig sentences): labelled as one document, the page scored 0.60 `ar`
    and was dropped under Arabic's threshold by `recipes/web-multilingual.yaml`, which now labels paragraphs."""
    from curation import explore
    from tests.conftest import ROOT

    sentences = {lang: (testdata / "langid" / "sentences" / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
                 for lang in ("ar", "fr")}
    text = "\n\n".join(" ".join(sentences[lang][i * 3:i * 3 + 3]) for i in range(4) for lang in ("ar", "fr"))
    found = explore.explain(text, str(ROOT / "recipes" / "web-multilingual.yaml"))
    langid = next(step for step in found.steps if step["stage"] == "langid")
    assert found.kept and langid["scores"]["lang_paragraphs"] == "ar 4, fr 4"


def test_a_traditional_chinese_document_with_english_paragraphs_is_converted_as_a_chinese_one():
    """Labelled `en` by its whole text and `zh` by its paragraphs' words, its script was the whole text's label's
    (none): to_simplified left it Traditional, and no script count counted it."""
    text = "\n\n".join([
        "一波波接續性低溫寒流報到，已將新竹尖石鄉後山一帶層層山巒披上嫣紅的彩衣。營區內除了露營、民宿、餐飲、賞楓項目，"
        "多了許多原木飾品，更有畫龍點睛加乘效果。廣受歡迎的美樹營地有個很大特色，就是楓紅時期楓香樹由綠轉黃、轉紅到楓紅層層。",
        "The campsite sits at about twelve hundred metres above sea level, and the maples turn red in the second half "
        "of December. Visitors who only come to photograph the leaves pay a small entrance fee, while campers may "
        "pitch their tents after noon.",
        "每年12月向來是攝影班外拍的絕佳場所之一，楓紅期間入園費50元。園區給愛攝一族淨空場景，而不是散搭帳蓬之下反而影響"
        "拍照畫面與構圖取景。露營的話則須待中午過後再進場搭帳，這樣的彈性做法個人也相當支持。",
        "We arrived on a rainy Saturday morning and found most of the lower pitches flooded, so we parked on the "
        "higher ground near the washrooms and slept in the car. The owner told us he plans to build a two-storey "
        "wooden lodge next year."])
    out = LangId(keep=["zh", "en"], per_paragraph=True, to_simplified="t2s").ready().process(pa.table({"text": [text]}))
    assert out.table.column("lang").to_pylist() == ["zh"] and out.table.column("lang_script").to_pylist() == ["Hans"]
    converted = out.table.column("text")[0].as_py()
    assert converted.startswith("一波波接续性低温寒流报到") and "The campsite sits" in converted
    titled = pa.table({"text": [text, text], "title": ["新竹尖石鄉楓紅層層 Maples of Jianshi", None]})
    out = LangId(keep=["zh", "en"], per_paragraph=True, to_simplified="t2s").ready().process(titled)
    assert out.table.column("title").to_pylist() == ["新竹尖石乡枫红层层 Maples of Jianshi", None]  # the title too


def test_traditional_paragraphs_of_a_page_english_by_its_words_are_kept_by_script_and_converted():
    """A Hong Kong page of English and Traditional Chinese paragraphs is English by its words: `keep: [zh-Hans, en]`
    kept it and `to_simplified` left its Chinese Traditional, as only a document labelled Chinese was looked at."""
    zh = ["康樂及文化事務署今日宣布，位於西九文化區的全新公共圖書館將於下月十五日正式開放，"
          "館內設有兒童閱讀區及自修室。",
          "市民只需持有效的圖書證，即可借閱館內所有書籍及影音資料，每次最多可借八項，借期為十四天。",
          "署方表示，新館亦會定期舉辦講座、讀書會及親子活動，詳情可瀏覽署方網頁或致電查詢熱線。"]
    text = "\n\n".join(p for pair in zip(zh, EN, strict=False) for p in pair) + "\n\n" + EN[3]
    table = pa.table({"text": [text]})
    out = LangId(keep=["zh-Hans", "en"], per_paragraph=True).ready().process(table)
    assert out.table.column("lang").to_pylist() == ["en"]
    assert out.reasons.to_pylist() == ["lang_not_kept"] and out.details.to_pylist() == ["mixed en+zh-Hant"]
    out = LangId(keep=["zh-Hans", "en"], per_paragraph=True, to_simplified="t2s").ready().process(table)
    assert out.reasons.to_pylist() == [None] and out.counts["to_simplified"].tolist() == [1]
    converted = out.table.column("text")[0].as_py()
    assert "康乐及文化事务署今日宣布" in converted and EN[0] in converted
    spans = out.table.column("lang_paragraphs")[0].as_py()
    assert [converted[s["start"]:s["end"]] for s in spans if s["lang"] == "zh"][1] == (
        "市民只需持有效的图书证，即可借阅馆内所有书籍及影音资料，每次最多可借八项，借期为十四天。")


def test_kanji_lines_stay_japanese_and_only_chinese_paragraphs_are_made_simplified():
    """Lines of kanji (a statute's headings, a name) were Chinese by lingua's rule (Han without kana): a Japanese
    statute became `mixed ja+zh`, dropped by `keep: [ja]`, and `to_simplified` then made its Japanese Simplified
    Chinese (`東日本大震災` -> `东日本大震灾`). A Taiwanese paragraph it quotes is converted alone."""
    statute = "\n".join(["地方自治法施行令", "第一章　総則", "第一条　この政令は、地方自治法の施行に関し必要な事項を"
                         "定めるものとする。", "第二章　普通地方公共団体", "第二条　市町村の設置に関する手続は、"
                         "都道府県知事が定める。", "附則", "この政令は、公布の日から施行する。",
                         "昭和二十二年政令第十六号"])
    out = LangId(keep=["ja"], per_paragraph=True).ready().process(pa.table({"text": [statute]}))
    assert out.reasons.to_pylist() == [None]
    assert {s["lang"] for s in out.table.column("lang_paragraphs")[0].as_py()} == {"ja"}
    japanese = ("駅前の駐車場は満車だったので、私たちは少し離れた場所に車を止めて歩くことにした。"
                "東日本大震災の後、この町の問題は大きく変わったと地元の人々は話している。")
    taiwanese = "這個問題在台灣也很常見，很多人開車到車站附近，卻找不到停車場，只好把車停在很遠的地方再走過去。"
    text = "\n\n".join([japanese, japanese.replace("駅前", "駅の北口"), taiwanese, japanese.replace("私たち", "彼ら")])
    out = LangId(keep=["zh-Hans", "ja"], per_paragraph=True, to_simplified="t2s").ready().process(
        pa.table({"text": [text]}))
    converted = out.table.column("text")[0].as_py()
    assert out.table.column("lang").to_pylist() == ["ja"] and converted.count(japanese) == 1
    assert "这个问题在台湾也很常见" in converted and "東日本大震災" in converted and "驻车场" not in converted


@pytest.fixture(scope="module")
def identifier() -> LangId:
    return LangId(keep=["zh", "ja", "en", "sw", "ko", "wuu"], per_paragraph=True).ready()


@pytest.mark.parametrize(("text", "lang"), [
    # Chinese with kana words in brackets was Japanese, and its page dropped as `mixed zh+ja`
    ("第二天推荐去浅草寺（せんそうじ）参观，然后步行到东京的上野公园。比如“一蘭”和“らーめん”专门店都值得一去。", "zh"),
    ("日本経済新聞社会部記者", "ja"),  # kanji only, in forms Chinese does not write: it was Chinese at 1.00
    ("床前明月光，疑是地上霜。举头望明月，低头思故乡。", "zh"),  # a Tang poem was Cantonese, without its characters
    ("佢哋講咗好多年啦，我哋都唔知點算。真係冇辦法囉。", "yue"),
    ("これは日本語の文章です。東京は日本の首都です。", "ja"),
    # lid.176's labels for plain Mandarin (of COLD's 37,480 posts 193 were Wu, 30 Korean, 24 Japanese)
    ("我就是觉得男主太可怜[大哭]", "zh"),  # Wu at 0.91, without a character only Wu writes
    ("父亲在她旁边坐下，把包放在脚边，半天没说话。", "zh"),  # Korean at 0.98, without Hangul
    ("妹子是四川人", "zh"),  # Japanese at 0.96, without kana or a form only Japanese writes
    ("侬好伐？阿拉今朝一道去白相，搿搭老灵额，侬覅忘记脱。", "wuu"),  # Shanghainese: 侬, 搿, 覅
    ("今朝天气老热个，阿拉勿要出去白相了。", "wuu"),  # 阿拉, 勿要, 白相
    ("阿拉伯国家联盟今天在开罗召开会议，伊拉克代表出席，阿拉斯加也来了。", "zh"),  # Mandarin's 阿拉伯 and 伊拉克
    ("한국어 문장입니다. 大韓民國", "ko"),
])
def test_han_text_is_told_by_the_forms_and_characters_only_one_language_writes(identifier: LangId, text: str,
                                                                               lang: str):
    assert identifier.identify([text]).lang.tolist() == [lang]


def test_an_unsure_line_takes_its_page_s_language_unless_its_script_is_another(identifier: LangId):
    """A Swahili reply read as Xhosa at 0.39 made the thread mixed; a line of Han in a page of pinyin took the page's
    label, Malay."""
    thread = ("Habari za leo? Nina tatizo na kompyuta yangu, haiwezi kuwaka tena baada ya kusasisha programu.\n"
              "Asante sana, imefanya kazi!\n"
              "Karibu sana, rafiki yangu. Tunafurahi kwamba tatizo limetatuliwa sasa.")
    lyrics = "jiu fang xin qu ba\nyou tian shi zai ni shen pang\n就放心去吧\n有天使在你身旁\nni bu yong dan xin wo"
    opinion = identifier.identify([thread, lyrics])
    spans = identifier.paragraphs(pa.array([thread, lyrics]), opinion.lang, opinion.score).to_pylist()
    assert [s["lang"] for s in spans[0]] == ["sw"] * 3
    assert [s["lang"] for s in spans[1]][2:4] == ["zh", "zh"]
