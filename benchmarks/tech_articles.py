"""Technical articles in fifteen languages through `recipes/web-multilingual.yaml` as shipped, each figure beside
its target.

Issue 31 asked that the quality rules judge prose, not layout, in every language: a technical article with code
blocks, lists and tables kept whole, and each of its sections kept. `zh_en_documents.py` proves it for Chinese and
English; this does the same for the Hugging Face course's translations in `tests/fixtures/tech_articles/` (the
pipelines chapter, chapter1/3, in 15 languages; the tokenizer-training chapter, chapter6/2, in 9; their README
names the source). The recipe's document stages are built and run as `zh_en_documents.py`'s `Chain` does (corpus
stages need a corpus and are not run), on each article:

- as Markdown text (extract, which judges pages only, left out): kept whole, and the share of its non-space
  characters the stages left (C4 cuts lines), target all kept and >= 95% left;
- as a web page (its Markdown rendered to HTML, `_zh_en_data.page_html`, through `extract`): kept whole, and
  the share of the extracted text's non-space characters the later stages left;
- each `## ` section a document of its own: kept, target all; a section of fewer than `MIN_SECTION_WORDS` words
  of prose (outside code; words as `curation.lang.words` splits the language; `MIN_SECTION_HAN` Han characters for
  Chinese, as `zh_en_documents.py`) is under any size rule's minimum, and is not counted.

Every drop is printed with its stage, reason and the deciding score beside its bound; langid's label of each
article beside the language it is written in. About a minute on two busy cores.

    .venv/bin/python benchmarks/tech_articles.py [--lang LANG ...]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _zh_en_data as data
import zh_en_documents as bench
from _data import PROJECT_ROOT
from _results import figure, write_results

from curation.lang.words import segment

RECIPE = "web-multilingual"
FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "tech_articles"
LANGID = {"zh-TW": "zh"}  # the course's language code -> langid's, where they differ
MIN_SECTION_WORDS, MIN_SECTION_HAN = 80, data.MIN_SECTION["zh"]  # Gopher's 50 words with room, as zh_en
WHOLE_TARGET, LEFT_TARGET = 1.0, bench.LEFT_TARGET
_WORD = re.compile(r"\w")


@dataclass
class Row:
    """One language's figures."""
    lang: str
    articles: int = 0
    kept_text: int = 0
    kept_page: int = 0
    left: list[float] | None = None  # of each article kept as text: the share of its text left
    page_left: list[float] | None = None  # of each kept as a page
    sections: int = 0
    sections_kept: int = 0
    labels: str = ""


def articles(langs: list[str] | None = None) -> list[data.Article]:
    """The fixtures, by language then name; `lang` is the course's code (`zh-TW`), `langid_code` gives langid's."""
    found = []
    for path in sorted(FIXTURES.glob("*_*.md")):
        lang, name = path.stem.split("_", 1)
        if not langs or lang in langs:
            found.append(data.Article(name, lang, path.read_text(encoding="utf-8")))
    return found


def langid_code(lang: str) -> str:
    return LANGID.get(lang, lang)


def section_size(text: str, lang: str) -> int:
    """Words of the section's prose (outside fenced code) as its language splits them; Han characters for Chinese."""
    prose = "\n".join(line for fenced, line in data.outside_code(text) if not fenced)
    if langid_code(lang) == "zh":
        return data.han_count(prose)
    return sum(bool(_WORD.search(word)) for word in segment(prose, langid_code(lang)))


def long_enough(section: data.Section) -> bool:
    minimum = MIN_SECTION_HAN if langid_code(section.lang) == "zh" else MIN_SECTION_WORDS
    return section_size(section.text, section.lang) >= minimum


def left_share(given: str, verdict: bench.Verdict) -> float:
    return bench._solid(verdict.row.get("text") or "") / max(bench._solid(given), 1)


def measure(chain: bench.Chain, langs: list[str]) -> list[Row]:
    rows = []
    every = articles()
    for lang in langs:
        mine = [a for a in every if a.lang == lang]
        row = Row(lang, len(mine), left=[], page_left=[])
        source = langid_code(lang)
        ids = [a.id for a in mine]
        print(f"\n {lang} ({', '.join(a.name for a in mine)})")
        whole = chain.judge([a.text for a in mine], source=source, ids=ids)
        row.kept_text = sum(v.kept for v in whole)
        row.labels = ", ".join(sorted({str(v.row.get("lang")) for v in whole}))
        for a, v in zip(mine, whole, strict=True):
            if v.kept:
                row.left.append(left_share(a.text, v))
        bench.share("articles kept whole (Markdown text)", f"{lang}/articles_whole", row.kept_text, len(mine),
                    WHOLE_TARGET)
        bench.drops(whole)
        bench.retained(f"{lang}/articles_chars", [a.text for a in mine], whole)
        if any(v.row.get("lang") != source for v in whole):
            labels = ", ".join(f"{v.id}={v.row.get('lang')}" for v in whole)
            print(f"      langid labels: {labels} (written in {source})")
        html = [data.page_html(a) for a in mine]
        pages = chain.judge(pages=html, source=source, ids=ids)
        extracted = [v.row.get("text") or "" for v in chain.judge(pages=html, source=source, ids=ids, only={"extract"})]
        row.kept_page = sum(v.kept for v in pages)
        row.page_left = [left_share(text, v) for text, v in zip(extracted, pages, strict=True) if v.kept]
        bench.share("articles kept whole (HTML page, through extract)", f"{lang}/pages_whole", row.kept_page,
                    len(mine), WHOLE_TARGET)
        bench.drops(pages)
        bench.retained(f"{lang}/pages_chars", extracted, pages)  # of the extracted text: what the stages cut
        parts = [s for a in mine for s in data.sections(a)]
        verdicts = chain.judge([s.text for s in parts], source=source,
                               ids=[f"{s.article} § {s.heading}" for s in parts])
        counted = [(v, s) for v, s in zip(verdicts, parts, strict=True) if long_enough(s)]
        short = [v for v, s in zip(verdicts, parts, strict=True) if not long_enough(s)]
        row.sections, row.sections_kept = len(counted), sum(v.kept for v, _ in counted)
        bench.share("sections kept (each `## ` section a document)", f"{lang}/sections", row.sections_kept,
                    row.sections, WHOLE_TARGET)
        bench.drops([v for v, _ in counted])
        bench.retained(f"{lang}/sections_chars", [s.text for _, s in counted], [v for v, _ in counted])
        print(f"      not counted, under {MIN_SECTION_HAN if source == 'zh' else MIN_SECTION_WORDS} "
              f"{'Han characters' if source == 'zh' else 'words'} of prose: {len(short)} sections, "
              f"{sum(v.kept for v in short)} kept; drops: {bench.reasons(short)}")
        rows.append(row)
    return rows


def table(rows: list[Row]) -> None:
    print("\n| lang | langid | articles | kept whole, Markdown | text left, least | kept whole, HTML "
          "| text left, least | sections kept |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        left = f"{min(r.left):.3f}" if r.left else "-"
        page_left = f"{min(r.page_left):.3f}" if r.page_left else "-"
        print(f"| {r.lang} | {r.labels} | {r.articles} | {r.kept_text}/{r.articles} | {left} | "
              f"{r.kept_page}/{r.articles} | {page_left} | {r.sections_kept}/{r.sections} |")
    n = sum(r.articles for r in rows)
    print(f"| all | | {n} | {sum(r.kept_text for r in rows)}/{n} | | {sum(r.kept_page for r in rows)}/{n} | | "
          f"{sum(r.sections_kept for r in rows)}/{sum(r.sections for r in rows)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", nargs="*", help="only these languages (the fixtures' codes); no results written")
    args = parser.parse_args()
    every = sorted({a.lang for a in articles()})
    langs = args.lang or every
    chain = bench.Chain(bench.recipe(RECIPE))
    print(f"recipe: recipes/{RECIPE}.yaml (document stages: {', '.join(n for n, _ in chain.stages)}); "
          f"{len(articles(langs))} articles of tests/fixtures/tech_articles in {len(langs)} languages")
    rows = measure(chain, langs)
    table(rows)
    n = sum(r.articles for r in rows)
    totals = {"all/articles_whole": (sum(r.kept_text for r in rows), n),
              "all/pages_whole": (sum(r.kept_page for r in rows), n),
              "all/sections": (sum(r.sections_kept for r in rows), sum(r.sections for r in rows))}
    print()
    for key, (hits, total) in totals.items():
        bench.share(key, key, hits, total, WHOLE_TARGET)
    if args.lang:
        print("\n--lang given: no results written")
        return 0
    figures = []
    for key, value in bench.FIGURES.items():
        target = f">= {LEFT_TARGET:.2f}" if key.endswith("_chars") else f">= {WHOLE_TARGET:.2f}"
        bound = LEFT_TARGET if key.endswith("_chars") else WHOLE_TARGET
        figures.append(figure(key, value, "", "target", bound, target=target, met=value >= bound))
    write_results("tech_articles", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
