"""The Chinese and English technical articles of `tests/fixtures/zh_en/` and the documents
`benchmarks/zh_en_documents.py` builds from them: well formed, languages as claimed, and judged by the
web-zh-en recipe's document stages (`curation.explore.explain`, as a user would ask)."""

from __future__ import annotations

import importlib
import itertools
import re
import sys
from pathlib import Path

import pytest

from curation.explore import explain

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "zh_en"
RECIPES = ROOT / "recipes"
NAMES = ("distributed_training", "paradigms_of_parallelism", "zero_with_chunk", "mixed_precision",
         "pipeline_parallel", "train_gpt_hybrid", "booster_plugins", "nvme_offload", "train_new_tokenizer",
         "bpe_tokenization")
# what the README says each article holds, beyond prose: code snippets, lists, tables, curly brackets in code
HOLDS = {"distributed_training": {"lists", "tables"}, "paradigms_of_parallelism": {"lists"},
         "zero_with_chunk": {"code", "lists"}, "mixed_precision": {"code", "lists", "tables"},
         "pipeline_parallel": {"code", "lists"}, "train_gpt_hybrid": {"code", "lists"},
         "booster_plugins": {"lists"}, "nvme_offload": {"code", "braces"},
         "train_new_tokenizer": {"code", "braces"}, "bpe_tokenization": {"code", "braces", "lists"}}
HAN = re.compile(r"[\u3400-\u9fff]")
FENCE = re.compile(r"^```", re.M)


def text(lang: str, name: str) -> str:
    return (FIXTURES / f"{lang}_{name}.md").read_text(encoding="utf-8")


def prose(body: str) -> str:
    """The text outside fenced code blocks."""
    return "".join(FENCE.split(body)[::2])


def words(body: str) -> str:
    """The prose less link targets and inline code: what is written in the article's language."""
    return re.sub(r"`[^`]*`", "", re.sub(r"\]\([^)]*\)", "]", prose(body)))


def holds(body: str) -> set[str]:
    outside = prose(body)
    found = set()
    if len(FENCE.findall(body)) >= 2:
        found.add("code")
    if len(re.findall(r"^\s*([-*]|\d+\.) \S", outside, re.M)) >= 3:
        found.add("lists")
    if re.search(r"^\|.*\|\n\|[\s:|-]+\|$", outside, re.M):
        found.add("tables")
    if "{" in "".join(FENCE.split(body)[1::2]):  # curly brackets in code (C4 drops any document with one)
        found.add("braces")
    return found


def _benchmark_module(name: str):
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


def bench_data():
    """benchmarks/_zh_en_data.py, which builds the benchmark's documents."""
    return _benchmark_module("_zh_en_data")


def benchmark():
    """benchmarks/zh_en_documents.py, whose `Chain` runs a recipe's document stages."""
    return _benchmark_module("zh_en_documents")


def test_fixtures_are_the_listed_pairs_and_small():
    files = sorted(p.name for p in FIXTURES.glob("*.md") if p.name != "README.md")
    assert files == sorted(f"{lang}_{name}.md" for lang in ("zh", "en") for name in NAMES)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert "Apache-2.0" in readme and re.search(r"\b[0-9a-f]{40}\b", readme)
    for name in NAMES:
        assert f"`{name}.md`" in readme, f"{name} is not in the README's table"
    assert sum(p.stat().st_size for p in FIXTURES.iterdir()) < 400_000


@pytest.mark.parametrize("name", NAMES)
def test_articles_hold_what_the_readme_says_in_both_languages(name):
    for lang in ("zh", "en"):
        body = text(lang, name)
        assert holds(body) >= HOLDS[name], f"{lang}_{name}: {holds(body)}"
        assert not re.search(r"<!--|<figure|<div|<Youtube|<Course|\{\{ *autodoc|\[!TIP\]|^#.*\[\[", body, re.M), \
            "markup the README says was removed"
    # a translation pair: the same numbered sections and the same number of code blocks
    zh, en = text("zh", name), text("en", name)
    assert len(re.findall(r"^## ", prose(zh), re.M)) == len(re.findall(r"^## ", prose(en), re.M)) >= 2
    assert len(FENCE.findall(zh)) == len(FENCE.findall(en))


@pytest.mark.parametrize("name", NAMES)
def test_languages_are_as_claimed(name):
    zh, en = words(text("zh", name)), prose(text("en", name))
    assert not HAN.search(en), "an English article with Chinese in it"
    letters = sum(ch.isalpha() for ch in zh)
    assert len(HAN.findall(zh)) >= 0.5 * letters, "a Chinese article whose prose is not mostly Chinese"


def test_sections_split_at_headings_outside_code():
    data = bench_data()
    article = next(a for a in data.articles() if a.id == "zh_pipeline_parallel")
    assert "# Define some config" in article.text  # a comment in its code, not a heading
    sections = data.sections(article)
    assert [s.heading for s in sections] == [line[3:] for line in article.text.splitlines() if line.startswith("## ")]
    assert all(s.text.startswith("## ") for s in sections)
    assert "# Define some config" in next(s.text for s in sections if "Bert" in s.heading)


def test_mixed_documents_alternate_languages_with_gold_labels():
    data = bench_data()
    docs = data.mixed_documents()
    assert len(docs) >= 10
    for doc in docs:
        langs = [lang for lang, _ in doc.paragraphs]
        assert len(langs) >= 4 and all(a != b for a, b in itertools.pairwise(langs)), doc.id
        for lang, paragraph in doc.paragraphs:
            assert data.written_in(paragraph) == lang, (doc.id, paragraph[:40])
        assert doc.text.splitlines() == [p for _, p in doc.paragraphs]


def test_chinese_web_documents_from_the_test_data(testdata):
    """At least ten clean and ten dirty Chinese documents; no dirty one repeats a line of its page's main text;
    every Chinese page of the crawl sample carries a hand label."""
    data = bench_data()
    docs, _ = data.web_documents({}, testdata)  # the pages with an expected main text (no extraction here)
    clean = [d for d in docs if d.label == "clean"]
    dirty = [d for d in docs if d.label == "dirty"]
    crawled, unlabelled = data.crawled_pages(testdata)
    assert len(clean) >= 10 and len(dirty) + len(crawled) >= 10 and unlabelled == []
    main = {d.origin: set(d.text.splitlines()) for d in clean}
    for doc in dirty:
        assert data.han_count(doc.text) >= data.MIN_DIRTY_HAN
        assert not set(doc.text.splitlines()) & main.get(doc.origin, set()), doc.id
    assert all(data.written_in(d.text) == "zh" for d in clean), [d.id for d in clean if data.written_in(d.text) != "zh"]


def test_benchmark_verdicts_come_back_in_input_order():
    """run_stage puts the rows a stage does not judge after the others: each verdict must still be its own."""
    bench = benchmark()
    chain = bench.Chain(bench.recipe("web-zh-en"))
    article = text("zh", "distributed_training")
    verdicts = chain.judge(["短。", article, "短。"], source="zh", ids=["a", "b", "c"])
    assert [v.id for v in verdicts] == ["a", "b", "c"]
    assert [v.kept for v in verdicts] == [False, True, False]
    assert "分布式系统由多个软件组件组成" in verdicts[1].row["text"] and verdicts[0].reason


def _drops(recipe: str, lang: str) -> list[str]:
    """The articles of `lang` that `recipe`'s document stages drop, as a job runs them (`build_stages`,
    `run_stage`), with stage, reason and detail."""
    bench = benchmark()
    chain = bench.Chain(bench.recipe(recipe))
    verdicts = chain.judge([text(lang, name) for name in NAMES], source=lang, ids=[f"{lang}_{n}" for n in NAMES])
    return [f"{v.id}: {v.why}" for v in verdicts if not v.kept]


# Good technical articles with code, lists and tables are kept whole. These tests failed on the stages as they were
# when the fixtures were added (gopher_quality too_few_alpha_words, long_mean_word_length, gopher_repetition
# dup_line_frac, langid low_lang_score; C4 cutting code, table and heading lines from the kept ones:
# benchmarks/zh_en_documents.py lists every drop and cut). One English article is still dropped, by English's own
# FineWeb bound, for what its text really holds: the parallelism page lists the same paper (Megatron-LM) under two
# sections, a repeated line of 1.4% of its characters (FineWeb's English bound: 1%).
ENGLISH_DROPS = {"en_paradigms_of_parallelism": "fineweb:char_dup_ratio"}


def _reasons(recipe: str, lang: str) -> dict[str, str]:
    """article -> stage:reason of each article `recipe` drops."""
    return {article: why.split(" ", 1)[0] for article, why in (d.split(": ", 1) for d in _drops(recipe, lang))}


def test_web_zh_en_keeps_chinese_technical_articles_whole():
    assert _drops("web-zh-en", "zh") == []


@pytest.mark.parametrize("recipe", ["web-zh-en", "web-en"])
def test_english_technical_articles_are_kept_whole_but_two(recipe):
    assert _reasons(recipe, "en") == ENGLISH_DROPS


def _page_drops(recipe: str, lang: str) -> dict[str, str]:
    """article -> stage:reason of each article, as a web page (its Markdown rendered to HTML), that `recipe` drops;
    extraction with no time limit (a loaded test machine is no slow page)."""
    bench = benchmark()
    chain = bench.Chain(bench.recipe(recipe))
    for name, stage in chain.stages:
        if name == "extract":
            stage.params = stage.params.model_copy(update={"timeout_s": None})
    articles = [a for a in bench_data().articles() if a.lang == lang]
    verdicts = chain.judge(pages=[bench_data().page_html(a) for a in articles], source=lang,
                           ids=[a.id for a in articles])
    return {v.id: v.why.split(" ", 1)[0] for v in verdicts if not v.kept}


@pytest.mark.parametrize(("recipe", "lang"), [("web-zh-en", "zh"), ("web-zh-en", "en"), ("web-en", "en")])
def test_technical_articles_as_web_pages_are_kept_whole(recipe, lang):
    """Through `extract` with `markdown: true` (the web recipes'): code comes out fenced, so no line of it is read as
    prose (plain text left program output and `{` on prose lines: C4's curly bracket, FineWeb's repeated lines)."""
    assert _page_drops(recipe, lang) == {}


def solid(body: str) -> int:
    return len(re.sub(r"\s", "", body))


def test_web_zh_en_leaves_the_text_of_kept_articles():
    """Kept whole means its text too: line filters (C4's) cut no more than 5% of a kept article's characters."""
    bench = benchmark()
    chain = bench.Chain(bench.recipe("web-zh-en"))
    short = {}
    for lang in ("zh", "en"):
        bodies = [text(lang, name) for name in NAMES]
        for v, body in zip(chain.judge(bodies, source=lang, ids=list(NAMES)), bodies, strict=True):
            if v.kept and solid(v.row["text"]) < 0.95 * solid(body):
                short[f"{lang}_{v.id}"] = round(solid(v.row["text"]) / solid(body), 3)
    assert short == {}


def test_explain_shows_each_stage_on_a_chinese_article():
    """What a user runs to see why an article went: it must answer for Chinese text too."""
    verdict = explain({"text": text("zh", "distributed_training"), "source": "zh"}, RECIPES / "web-zh-en.yaml")
    assert [s["stage"] for s in verdict.steps][:4] == ["html_langid", "extract", "normalize", "langid"]
    assert verdict.kept == (verdict.steps[-1]["reason"] is None)
