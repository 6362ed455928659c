"""The technical articles of `tests/fixtures/tech_articles/` (the Hugging Face course in 15 languages): well formed,
cleaned as their README says, and kept whole by `recipes/web-multilingual.yaml`'s document stages, as Markdown text
and as web pages, each `## ` section kept but those named below (`benchmarks/tech_articles.py` measures the same)."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tech_articles"
LANGS = {"pipelines": ("de", "es", "fr", "hi", "it", "ja", "ko", "my", "pt", "ro", "ru", "te", "th", "vi", "zh-TW"),
         "train_new_tokenizer": ("es", "fr", "my", "pt", "ro", "ru", "th", "vi", "zh-TW")}
FENCE = re.compile(r"^```", re.M)
# Sections the recipe drops, each for what its text holds: a short section of four sentences (Hindi's Inference API
# note, 86 words; Burmese's conclusion, 81 words, three sentences and a `၊` spaCy counts as a fourth) under C4's
# size rule, five sentences, as any language's would be. Not layout read as prose: neither holds any.
SECTION_DROPS = {"hi_pipelines § अनुमान एपीआई": "c4:too_few_sentences",
                 "my_pipelines § နိဂုံးချုပ်": "c4:too_few_sentences"}


def _module(name: str):
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


@cache
def _chain():
    """web-multilingual's document stages as a job builds them; extraction with no time limit (a loaded test
    machine is no slow page)."""
    bench = _module("zh_en_documents")
    chain = bench.Chain(bench.recipe("web-multilingual"))
    for name, stage in chain.stages:
        if name == "extract":
            stage.params = stage.params.model_copy(update={"timeout_s": None})
    return chain


def _articles():
    return _module("tech_articles").articles()


def test_fixtures_are_the_listed_translations_and_small():
    files = sorted(p.name for p in FIXTURES.glob("*.md") if p.name != "README.md")
    assert files == sorted(f"{lang}_{name}.md" for name, langs in LANGS.items() for lang in langs)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert "Apache-2.0" in readme and re.search(r"\b[0-9a-f]{40}\b", readme)
    assert "`chapter1/3`" in readme and "`chapter6/2`" in readme
    assert sum(p.stat().st_size for p in FIXTURES.iterdir()) < 600_000


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*_*.md")), ids=lambda p: p.stem)
def test_articles_are_cleaned_and_hold_code_and_sections(path):
    body = path.read_text(encoding="utf-8")
    assert not re.search(r"<!--|<figure|<div|<img|<iframe|<Youtube|<Course|\{\{ *autodoc|\[!(TIP|WARNING)\]|"
                         r"^#.*\[\[|\n\n\n", body, re.M), "markup the README says was removed"
    assert len(FENCE.findall(body)) >= 20 and len(FENCE.findall(body)) % 2 == 0
    assert len(re.findall(r"^## ", "".join(FENCE.split(body)[::2]), re.M)) >= 3


def test_clean_drops_what_a_page_shows_no_text_for():
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    source = ("# Title[[title]]\n\n<CourseFloatingBanner chapter={1}\n  notebooks={[]} />\n\nProse.\n\n"
              "> [!TIP]\n> A tip.\n\n\n<Youtube id=\"x\" />\n\n"
              "```py\n<div>kept in code</div>\n## not a heading[[x]]\n```\n")
    assert make.clean(source) == ("# Title\n\nProse.\n\n> A tip.\n\n```py\n<div>kept in code</div>\n"
                                  "## not a heading[[x]]\n```\n")


def test_web_multilingual_keeps_every_article_whole_as_text():
    articles = _articles()
    bench = _module("tech_articles")
    verdicts = _chain().judge([a.text for a in articles], source="web", ids=[a.id for a in articles])
    assert [f"{v.id}: {v.why}" for v in verdicts if not v.kept] == []
    assert {a.id: v.row["lang"] for a, v in zip(articles, verdicts, strict=True)} == \
        {a.id: bench.langid_code(a.lang) for a in articles}
    short = {v.id: round(bench.left_share(a.text, v), 3) for a, v in zip(articles, verdicts, strict=True)
             if bench.left_share(a.text, v) < 0.95}
    assert short == {}, "kept whole means its text too: no more than 5% cut"


def test_web_multilingual_keeps_every_article_whole_as_a_web_page():
    """Through `extract` with `markdown: true`: code comes out fenced. With plain text, the output of the pipelines
    chapter's code (`{'sequence': ..., 'score': ...}` lines) read as prose, and C4's curly bracket dropped all 15."""
    articles = _articles()
    data = _module("_zh_en_data")
    verdicts = _chain().judge(pages=[data.page_html(a) for a in articles], source="web", ids=[a.id for a in articles])
    assert [f"{v.id}: {v.why}" for v in verdicts if not v.kept] == []


def test_web_multilingual_keeps_each_section():
    bench, data = _module("tech_articles"), _module("_zh_en_data")
    sections = [s for a in _articles() for s in data.sections(a) if bench.long_enough(s)]
    assert len(sections) >= 150
    verdicts = _chain().judge([s.text for s in sections], source="web",
                              ids=[f"{s.article} § {s.heading}" for s in sections])
    assert {v.id: f"{v.stage}:{v.reason}" for v in verdicts if not v.kept} == SECTION_DROPS
