"""Rules judge prose, not layout: an article's code, tables and headings are kept and left out of the statistics."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.lang.calibrate import Reference, calibrate
from curation.lang.settings import settings_for
from curation.stages.c4 import C4
from curation.stages.fineweb import FineWeb
from curation.stages.gopher import GopherQuality, GopherRepetition
from curation.text.columns import list_offsets
from curation.text.layout import CAPTION, CODE, HEADING, LIST, PROSE, TABLE, line_kinds, prose_text

PROSE_EN = [
    "Training a language model starts with the data, and most of the work goes into cleaning it.",
    "We describe each step below, with the code we ran, so that the results can be reproduced.",
    "The loop above runs one optimizer step per batch, and the loss should fall within a few hundred steps.",
    "Mixed precision halves the memory the activations take, which lets the same machine fit larger batches.",
    "Finally the checkpoint is written with the optimizer state, so that a stopped run can resume where it was.",
]
CODE_BLOCK = [
    "```python",
    "def train(model, loader):",
    "    for batch in loader:",
    "        loss = model(batch)  # {'loss': ...}",
    "        loss.backward()",
    "```",
]
TABLE_ROWS = ["| model | parameters |", "|---|---|", "| GPT-2 | 1.5B |", "| LLaMA | 7B |"]


def _kinds(text: str) -> list[int]:
    lines = pc.split_pattern(pa.array([text]), "\n")
    return line_kinds(lines.flatten(), list_offsets(lines)).tolist()


def _judge(stage, texts: list[str], lang: str | None = None) -> list[str | None]:
    table = pa.table({"text": texts} if lang is None else {"text": texts, "lang": [lang] * len(texts)})
    return stage.ready().process(table).reasons.to_pylist()


def test_each_kind_of_line_is_recognised_and_prose_that_looks_like_code_is_not():
    text = "\n".join([
        "For example: the model is small.", "Import duties rose in May.", "return to the main page.",
        "The result (see above) is good.", "## 2.1 Data", "- clean the text, then count it", "1. first step",
        "三、训练分词器", "| a | b |", "pip install torch", ">>> import torch", "model = AutoModel.from_pretrained(x)",
        "trainer.train()", "if (x) {", "}", "    y = f(x);", "```", "anything inside a fence", "```",
    ])
    assert _kinds(text) == [PROSE, PROSE, PROSE, PROSE, HEADING, LIST, LIST, LIST, TABLE, CODE, CODE, CODE, CODE,
                            CODE, CODE, CODE, CODE, CODE, CODE]


def test_an_article_quoting_code_keeps_its_code_and_is_not_dropped_for_a_curly_bracket():
    article = "\n".join([*PROSE_EN[:2], *CODE_BLOCK, *PROSE_EN[2:], *TABLE_ROWS])
    assert _judge(C4(prose_only=False, terminal_punct=False), [article]) == ["curly_bracket"]  # the recipes' C4
    processed = C4(terminal_punct=False).ready().process(pa.table({"text": [article]}))
    assert processed.reasons.to_pylist() == [None]
    kept = processed.table.column("text")[0].as_py()
    for line in CODE_BLOCK + TABLE_ROWS:
        assert line in kept.split("\n")  # indentation and all
    assert C4(keep_scores=True, terminal_punct=False).ready().process(pa.table({"text": [article]})).table.column(
        "c4_sentences")[0].as_py() == len(PROSE_EN)  # the prose's sentences only


def test_a_page_that_is_mostly_code_is_judged_whole():
    script = "\n".join([PROSE_EN[0], *(f"var x{i} = document.getElementById('a{i}'); if (x{i}) {{ x{i}.hide(); }}"
                                       for i in range(30))])
    assert _judge(C4(terminal_punct=False), [script]) == ["curly_bracket"]
    assert prose_text(pa.array([script])).to_pylist() == [script]


def test_bullet_lists_that_read_as_sentences_pass_line_punctuation_and_link_lists_do_not():
    bullets = [f"- Step {i}: the data is cleaned, deduplicated and tokenized before the model sees it"
               for i in range(9)]
    article = "\n".join([PROSE_EN[0], *bullets])
    links = "\n".join([PROSE_EN[0], *(f"- Cheap flights to city {i}" for i in range(9))])
    assert _judge(FineWeb(prose_only=False), [article]) == ["line_punct_ratio"]
    assert _judge(FineWeb(), [article, links]) == [None, "line_punct_ratio"]


def test_headlines_cut_short_by_two_dots_or_more_end_no_sentence():
    """A news portal's list of headlines, each cut at a width (banyuetan.org, in the test data's pages)."""
    cut = ["习近平向克罗地亚新任总统米拉诺维..", "李克强主持常务会 多措并举稳企业..",
           "国务院联防联控机制印发意见 分区..."]
    headlines = "\n".join([*cut, "民族品牌工程", "学习贯彻十九大精神", "理论达人 | 国家安全就是你的安全（微视频）",
                           "习近平同英国首相约翰逊通电话", "时事大事库", "中国食品辟谣联盟官网正式上线"])
    assert _judge(FineWeb(), [headlines], lang="zh") == ["line_punct_ratio"]
    assert _judge(FineWeb(prose_only=False), [headlines], lang="zh") == [None]  # datatrove's: "..": 3 of 9 end one


def test_a_sentence_followed_by_its_citation_marks_ends_one():
    """Wikipedia's `1850.[3]` and a lore article's `. [MP3 SP]` after every paragraph (Kotaku's Metroid story, in
    readability's test pages, read as a page without sentences); a mark alone, or text cut short, is no sentence."""
    paragraphs = [f"The expedition reached the blue planet in its {n}th year and found it alive, as foretold. [MP3 SP]"
                  for n in range(5, 11)] + ["Its founders named it in 1850, after the river.[3][4]"]
    article = "\n".join(paragraphs)
    assert _judge(FineWeb(), [article]) == [None]
    assert _judge(FineWeb(prose_only=False), [article]) == ["line_punct_ratio"]  # datatrove's: none end one
    marks = "\n".join(f"Chapter {n} of the story of the planet [source] [{n}]" for n in range(7))
    cut = "\n".join(f"Read the whole story of the planet and its {n} moons... [{n}]" for n in range(7))
    assert _judge(FineWeb(), [marks]) == ["line_punct_ratio"]
    assert _judge(FineWeb(), [cut]) == ["line_punct_ratio"]


def test_headings_code_and_tables_do_not_count_as_short_lines():
    article = "\n".join(["# Training", PROSE_EN[0], "## Data", PROSE_EN[1], *CODE_BLOCK, "## Results", PROSE_EN[2],
                         *TABLE_ROWS, "## Notes", PROSE_EN[3]])
    assert _judge(FineWeb(prose_only=False), [article]) == ["short_line_ratio"]
    assert _judge(FineWeb(), [article]) == [None]
    for stage in (GopherQuality(min_words=20), GopherRepetition()):
        assert _judge(stage, [article]) == [None]


CHINESE_LINES = [  # 12-16 characters a line: short for English's 30, not for Chinese's 10
    "大模型训练需要大量的高质量数据。", "数据清洗是其中最重要的一步。", "我们先去掉重复的网页和广告。",
    "然后按语言和质量给文档打分。", "质量低的文档会被过滤掉。", "最后把文档切分成词元并打包。",
]


def test_the_short_line_bound_is_the_languages():
    assert settings_for("zh")[0].short_line_length == 10
    assert settings_for("ja")[0].short_line_length < settings_for("ko")[0].short_line_length < 30
    assert settings_for("fi")[0].short_line_length > 30
    text = "\n".join(CHINESE_LINES)
    assert _judge(FineWeb(), [text], lang="zh") == [None]
    assert _judge(FineWeb(languages={"zh": {"short_line_length": 30}}), [text], lang="zh") == ["short_line_ratio"]


def test_calibrate_writes_the_short_line_bound_from_the_references_words():
    texts = ["\n".join(np.roll(CHINESE_LINES, i).tolist()) for i in range(60)]
    result = calibrate(Reference(text=texts, lang=["zh"] * 60, lang_score=[None] * 60), keep=0.9).languages[0]
    shipped, written = result.short_line_length
    assert shipped == 10
    assert 5 <= written <= 15  # these lines: ~1.5-2 characters a word, as real Chinese
    assert calibrate(Reference(text=texts, lang=["zh"] * 60, lang_score=[None] * 60)).settings()[
        "stages"]["fineweb"]["languages"]["zh"]["short_line_length"] == written


def test_a_line_ending_in_a_colon_before_a_list_is_its_caption_and_repeats_without_penalty():
    """"Related paper:" before each list of references: FineWeb's repeated-line rule counted every repeat."""
    sections = [f"Part {i} of this article explains how the model is trained on many devices at the same time, "
                f"and why that matters.\nRelated paper:\n- [Paper {i}: a study of training](https://x/{i})"
                for i in range(6)]
    article = "\n".join(sections)
    assert _kinds("Related paper:\n- [A paper](https://x)")[0] == CAPTION
    assert _judge(FineWeb(prose_only=False), [article]) == ["char_dup_ratio"]
    assert _judge(FineWeb(), [article]) == [None]


def test_captions_are_sentences_to_c4_and_words_to_gopher():
    """A caption before code ("This is done with the `save()` method:") is a sentence of the prose: C4 counts it."""
    captioned = "\n".join(f"Step {i} of the tutorial is done with the method below, as the guide says:\n```\nf()\n```"
                          for i in range(5))
    scores = C4(keep_scores=True, terminal_punct=False).ready().process(pa.table({"text": [captioned]}))
    assert scores.table.column("c4_sentences")[0].as_py() == 5
    assert _judge(C4(terminal_punct=False), [captioned]) == [None]


def test_a_hard_wrapped_paragraph_is_one_line_to_the_line_rules():
    """Markdown sources and plain-text files wrap a paragraph at a width: FineWeb read its lines as lines ending
    mid-sentence and C4 removed its last short line ("synchronized.") as a line of too few words."""
    sentence = ("In data parallel training the dataset is split into several shards, each shard is allocated to a "
                "device, which is equivalent to parallelizing the training process along the batch dimension, and "
                "each device holds a full copy of the model replica and trains on the shard allocated to it, while "
                "after back-propagation the gradients of the model are all-reduced across the devices, so that the "
                "model parameters on different devices can stay")
    lines = textwrap.wrap(sentence, 58)
    paragraph = "\n".join(lines) + "\nsynchronized."
    assert all(len(line) >= 40 for line in lines)
    assert _judge(FineWeb(prose_only=False), [paragraph]) == ["line_punct_ratio"]
    assert _judge(FineWeb(), [paragraph]) == [None]
    kept = C4(terminal_punct=False, min_sentences=1).ready().process(pa.table({"text": [paragraph]}))
    assert kept.table.column("text")[0].as_py().endswith("\nsynchronized.")  # C4 keeps the paragraph's last line
    by_line = C4(terminal_punct=False, min_sentences=1, prose_only=False).ready()
    dropped = by_line.process(pa.table({"text": [paragraph]}))
    assert not dropped.table.column("text")[0].as_py().endswith("synchronized.")
    # a menu of short entries is no paragraph, however its entries begin
    menu = "\n".join(["home", "about us", "contact"] * 5)
    assert _judge(FineWeb(), [menu]) == _judge(FineWeb(prose_only=False), [menu])


def test_a_document_indented_as_a_whole_has_its_prose_at_its_margin():
    """An RFC indents every line: its paragraphs are prose, and only what is indented beyond them is code."""
    rfc = "\n".join(["   " + line for line in PROSE_EN] + ["       x = compute(y)", "           return x + 1"])
    assert _kinds(rfc) == [PROSE] * len(PROSE_EN) + [CODE, CODE]
    assert _kinds("\n".join([*PROSE_EN, "    print(model)"]))[-1] == CODE


def test_a_paragraph_the_page_indented_is_prose():
    """trafilatura's plain text keeps a page's own indentation of its paragraphs (a press release's 5 spaces, a novel's
    56) after a first line at the margin: they read as paragraphs, not as an indented code block, while indented
    code and comments, and short indented lines, stay code."""
    paragraphs = ["     " + line for line in PROSE_EN[1:]]
    code = ["    x = compute(y)", "    # Compute the loss, then step the optimizer.", "    Returns the loss."]
    page = "\n".join([PROSE_EN[0], *paragraphs, *code])
    assert _kinds(page) == [PROSE] * len(PROSE_EN) + [CODE, CODE, CODE]
    assert _judge(C4(terminal_punct=False), [page]) == [None]


def test_inline_code_is_code_and_its_curly_brackets_drop_no_page():
    """A line of inline code alone is a code line; a bracket quoted as inline code in a sentence is no page of code."""
    assert _kinds("`wasm => function musl_writev(..) { .. console.log(..) .. }`") == [CODE]
    article = "\n".join([*PROSE_EN, "An empty folder has no items: the field is set to `{}` by the server, always."])
    assert _judge(C4(terminal_punct=False, prose_only=False), [article]) == ["curly_bracket"]
    assert _judge(C4(terminal_punct=False), [article]) == [None]
    assert _judge(C4(terminal_punct=False), [article.replace("`{}`", "{}")]) == ["curly_bracket"]


def test_a_curly_bracket_quoted_in_a_sentence_drops_no_page():
    """An IETF draft says "the items field set to '{}'": code quoted in a sentence, as in backticks. A bracket outside
    quotes, or between two quoted words, is still C4's."""
    quoted = "\n".join([*PROSE_EN, "An empty folder is listed with the items field set to '{}' by the server."])
    assert _judge(C4(terminal_punct=False), [quoted, quoted.replace("'{}'", '"{name}"')]) == [None, None]
    assert _judge(C4(terminal_punct=False, prose_only=False), [quoted]) == ["curly_bracket"]
    between = quoted.replace("'{}'", "'a' and {} 'b'")
    assert _judge(C4(terminal_punct=False), [between, quoted.replace("'{}'", "it's {} won't")]) == [
        "curly_bracket", "curly_bracket"]


def test_heading_marks_inside_a_list_item_are_no_hashtags():
    """trafilatura writes a numbered step holding a heading as `- 1 ###### Title text` (lidl.de's returns steps):
    Gopher's hash ratio counted its marks as hashtags and dropped the page (0.103 > 0.1). Hashtags still count."""
    steps = [f"- {n} ###### Step {n} Print the label and stick it on the parcel before you take it to the shop."
             for n in range(1, 7)]
    page = "\n".join([*PROSE_EN, *steps])
    assert _judge(GopherQuality(), [page]) == [None]
    tags = " ".join(f"#tag{n}" for n in range(40))
    assert _judge(GopherQuality(), [page + "\n" + tags]) == ["too_many_hashes"]


def _chinese_paragraphs() -> list[str]:
    """The long prose paragraphs of a real Chinese article (a fixture of tests/fixtures/zh_en)."""
    path = Path(__file__).resolve().parents[1] / "fixtures" / "zh_en" / "zh_paradigms_of_parallelism.md"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if len(line) >= 60 and not line.lstrip().startswith(("#", "-", "|", "`", "!"))]


def test_a_chinese_paragraph_wrapped_at_a_width_is_one_line_to_the_line_rules():
    """A plain-text e-book or forum post fills each line to a width: no case and no space tell that a line goes on,
    its width does. A menu of titles, ending where their words do, stays lines."""
    article = _chinese_paragraphs()
    paragraphs = ["".join(article[i:i + 3]) for i in range(0, len(article), 3)]  # a book's long paragraphs
    assert len(paragraphs) >= 3
    width = 30
    wrapped = "\n\n".join("\n".join(p[i:i + width] for i in range(0, len(p), width)) for p in paragraphs)
    assert _judge(FineWeb(prose_only=False), [wrapped], "zh") == ["line_punct_ratio"]
    assert _judge(FineWeb(), [wrapped], "zh") == [None]
    assert _judge(FineWeb(), ["\n\n".join(paragraphs)], "zh") == [None]
    # an e-book's paragraphs start indented by two ideographic spaces, with no blank line between them
    book = "\n".join("\n".join(("\u3000\u3000" + p)[i:i + width] for i in range(0, len(p) + 2, width))
                     for p in paragraphs)
    assert _judge(FineWeb(), [book], "zh") == [None]
    titles = ["数据并行与模型并行的区别", "张量并行的实现方法介绍", "流水线并行训练大模型", "如何选择合适的并行方式",
              "序列并行的三种主流方案", "混合精度训练入门指南"] * 2
    assert _judge(FineWeb(), ["\n".join(titles)], "zh") == _judge(FineWeb(prose_only=False), ["\n".join(titles)], "zh")
    assert _judge(FineWeb(), ["\n".join(titles)], "zh") != [None]


def test_a_list_item_of_inline_code_alone_is_code_and_c4_keeps_it():
    """A tutorial's list of the pipelines a library offers (`- `fill-mask``) names code, as a line of inline code alone
    does: C4 cut each item for its one word (the Hugging Face course in 12 languages lost its list so); an item that
    says something of the code stays a list item."""
    items = ["- `fill-mask`", "- `question-answering`", "1. `summarization`", "* `text-generation`"]
    assert _kinds("\n".join([*items, "- `ner` (named entity recognition)", "- `fill-mask`: 마스크 채우기"])) == \
        [CODE] * 4 + [LIST, LIST]
    article = "\n".join([*PROSE_EN[:3], "Some of the available pipelines are:", *items, *PROSE_EN[3:]])
    table = pa.table({"text": [article]})
    assert C4(terminal_punct=False).ready().process(table).table.column("text").to_pylist() == [article]
