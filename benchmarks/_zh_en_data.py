"""The documents of `zh_en_documents.py`: technical articles, labelled Chinese web text, mixed zh/en documents.

- Articles: the Markdown fixtures in `tests/fixtures/zh_en/` (ten Chinese documentation pages of Colossal-AI and
  the Hugging Face course, and their ten English originals, Apache-2.0; the fixtures' README names each
  source), whole, split at their `## ` sections, and rendered to an HTML page (markdown-it) for the extract
  stage's plain-text web path.
- Chinese web text from the real pages of the test data (`$CURATION_TESTDATA`, else `../shared/data`; the
  Chinese pages are those `recipes/sample/make_pages.py` picks). Clean: each page's main content - the expected
  article of the readability and newspaper pages, the `extract` stage's text of trafilatura's pages - and
  the Leipzig news sentences of `langid/sentences/zh.txt` in documents of twelve. Dirty: each page's
  link-heavy blocks (menus, link-title lists, sidebars, footers), lines of the main content taken out, cut
  into documents of `DIRTY_LINES` lines; and the Chinese pages of the Common Crawl sample (whole pages, every
  one a spam or listing page, labelled by hand in `CRAWL_DIRTY`).
- English pages: readability's test pages declared English, and web-zh-en's own English source (dolma's WARC).
- Mixed documents: prose paragraphs of a Chinese article and of its English original, alternating, each
  paragraph's language recorded (the gold of per-paragraph labels).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import median
from types import ModuleType

import lxml.html
from _data import PROJECT_ROOT, data_root
from markdown_it import MarkdownIt

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "zh_en"
LANGS = ("zh", "en")
SENTENCES_PER_DOC = 12  # as benchmarks/multilingual.py groups the Leipzig sentences
DIRTY_LINES = 40  # lines of boilerplate per dirty document: about one sidebar or footer of a news site
MIN_DIRTY_LINES, MIN_DIRTY_HAN = 10, 100  # a dirty document shorter than this is not a page's worth
TITLE_CHARS = 8  # a dirty document whose median line is this long lists titles (of articles, posts), not a menu
MAX_DIRTY_PER_PAGE = 4  # so that one portal's long menus do not make up the whole dirty set
LINK_SHARE, MIN_LINKS, MIN_BLOCK_HAN = 0.6, 5, 20  # a link-heavy block: most of its text in >= 5 links
MIXED_PARAGRAPHS = 8  # at most, per mixed document
MIN_PROSE_CHARS = {"zh": 40, "en": 100}
MIN_SECTION = {"zh": 150, "en": 80}  # Han characters, words: Gopher's 50-word minimum with room to spare
ZH_HAN_SHARE = 0.5  # of a Chinese paragraph's letters, at least this share Han (the rest: names, terms, code)
CRAWL = ("warc", "resiliparse", "warcfile.warc.gz")  # real Common Crawl records (CC-MAIN-2020-34)
# The Chinese pages of that crawl, every one read and labelled by hand (dirty, and why); a page not named
# here is left out, said so.
CRAWL_DIRTY = {
    "http://003338.cn/l41/481397.html": "spun news sentences under a mojibake keyword title (SEO spam)",
    "http://035.psb556.com/24/i/u_1090813/article.html": "car portal: menus of cities and car classes",
    "http://041696.com/15477/list_6_4.html": "lottery tips: list of post titles with dates and counts",
    "http://044545.com/topic/20200207/015849.html": "gambling ad: deposit offers, a QQ number repeated",
    "http://0513mt.com/index.php/art/detail/id/8884.html": "adult site: story titles list and a story",
    "http://05925.net/index.php/vod/type/id/53.html": "video site: disclaimer and copyright footer only",
    "http://0615235.com/02mjqjo%7Bibotij2.btq?odmbtt=106&tdmbtt=121": "product catalogue: codes and click counts",
    "http://0755krk.com/76104/list_4_1.html": "lottery tips: list of post titles with dates and counts",
    "http://0760.jxtdw.com/area/sanxiang/": "job board: table of job titles, employers, dates",
    "http://077678u.info/erxiaoshujinguang/list_6_2.html": "lottery site: menus and headline list",
    "http://096355.com/video/11073.html?11073-0-2": "adult video site: category menu",
}
NOT_PROSE = {"chineselyrics4u.com": "song lyrics with pinyin, not prose"}  # pages left out of the clean set
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_FENCE = re.compile(r"^\s*```")
# headings, list items, tables, quotes, markup, bold labels, images, the byline (names, no prose)
_NOT_PROSE_LINE = re.compile(r"^\s*(#|[-*+] |\d+[.)] |\||>|<|\*\*[^*]+\*\*\s*$|!\[|(作者|Authors?)\s*[:：])")


@dataclass
class Article:
    name: str  # the fixture's name after the language prefix: the same for a translation pair
    lang: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.lang}_{self.name}"


@dataclass
class Section:
    article: str
    lang: str
    heading: str
    text: str


    @property
    def long_enough(self) -> bool:
        """At least `MIN_SECTION` Han characters (zh) or words (en): a table of contents or a one-line overview
        is shorter than any length rule's minimum, and no section the target counts."""
        size = han_count(self.text) if self.lang == "zh" else len(self.text.split())
        return size >= MIN_SECTION[self.lang]


@dataclass
class WebDoc:
    id: str
    label: str  # "clean" or "dirty"
    origin: str  # the page's url, or the sentence file
    text: str
    kind: str = ""  # of dirty documents: "menu" (short items) or "link titles" (headline-length lines)


@dataclass
class MixedDoc:
    id: str
    paragraphs: list[tuple[str, str]] = field(default_factory=list)  # (gold language, paragraph)

    @property
    def text(self) -> str:
        return "\n".join(p for _, p in self.paragraphs)  # one paragraph a line, as extractors write them


def han_count(text: str) -> int:
    return len(_HAN.findall(text))


# -- technical articles -----------------------------------------------------------------------------


def articles() -> list[Article]:
    """The fixtures, Chinese first, each language in name order."""
    out = []
    for lang in LANGS:
        for path in sorted(FIXTURES.glob(f"{lang}_*.md")):
            out.append(Article(path.stem.removeprefix(f"{lang}_"), lang, path.read_text(encoding="utf-8")))
    return out


def outside_code(text: str) -> list[tuple[bool, str]]:
    """(inside a fenced code block, line) for each line: a `#` comment in code is no heading."""
    fenced, out = False, []
    for line in text.splitlines():
        if _FENCE.match(line):
            out.append((True, line))
            fenced = not fenced
            continue
        out.append((fenced, line))
    return out


def sections(article: Article) -> list[Section]:
    """The article's `## ` sections (heading and body down to the next `## `), each its own document; the title
    and author lines before the first one are not a section."""
    found: list[Section] = []
    for fenced, line in outside_code(article.text):
        if not fenced and line.startswith("## "):
            found.append(Section(article.id, article.lang, line[3:].strip(), line))
        elif found:
            found[-1].text += "\n" + line
    for section in found:
        section.text = section.text.strip() + "\n"
    return found


def page_html(article: Article) -> bytes:
    """The article as a web page: its Markdown rendered to HTML (tables on), in a page with a title."""
    body = MarkdownIt("commonmark").enable("table").render(article.text)
    title = next((line[2:] for line in article.text.splitlines() if line.startswith("# ")), article.name)
    return (f'<!DOCTYPE html><html lang="{article.lang}"><head><meta charset="utf-8"><title>{title}</title></head>'
            f"<body><main><article>{body}</article></main></body></html>").encode()


def prose_paragraphs(article: Article) -> list[str]:
    """Paragraphs of running prose (no heading, list, table, quote, code or markup), each on one line."""
    joiner = "" if article.lang == "zh" else " "
    paragraphs, current = [], []
    for fenced, line in [*outside_code(article.text), (False, "")]:
        if fenced or not line.strip() or _NOT_PROSE_LINE.match(line):
            if current:
                paragraphs.append(joiner.join(current))
            current = []
            continue
        current.append(line.strip())
    return [p for p in paragraphs if len(p) >= MIN_PROSE_CHARS[article.lang] and written_in(p) == article.lang]


def written_in(text: str) -> str | None:
    """"zh" for text mostly in Han characters (of its letters), "en" for Latin letters without Han, else None:
    the gold of a paragraph (an author line of Latin names in a Chinese article is neither)."""
    letters = sum(ch.isalpha() for ch in text)
    han = han_count(text)
    if letters and han >= ZH_HAN_SHARE * letters:
        return "zh"
    return "en" if letters and not han else None


def mixed_documents() -> list[MixedDoc]:
    """Two documents per translation pair: Chinese and English prose paragraphs alternating, one starting
    with Chinese, the other with English; paragraph k comes from the article of its language, so that no
    paragraph is the translation of its neighbour."""
    by_name: dict[str, dict[str, list[str]]] = {}
    for article in articles():
        by_name.setdefault(article.name, {})[article.lang] = prose_paragraphs(article)
    docs = []
    for name, paragraphs in sorted(by_name.items()):
        for first in LANGS:
            order = [first, *[lang for lang in LANGS if lang != first]]
            doc = MixedDoc(f"{name}/{first}-first")
            for k in range(MIXED_PARAGRAPHS):
                lang = order[k % 2]
                if k >= len(paragraphs.get(lang, [])):
                    break  # one language has no more: stop, so that languages keep alternating
                doc.paragraphs.append((lang, paragraphs[lang][k]))
            docs.append(doc)
    return docs


# -- Chinese web pages ------------------------------------------------------------------------------


@cache
def _make_pages() -> ModuleType:
    """recipes/sample/make_pages.py, which lists the test data's pages and tells the Chinese ones."""
    path = PROJECT_ROOT / "recipes" / "sample" / "make_pages.py"
    spec = importlib.util.spec_from_file_location("make_pages", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chinese_pages(root: Path | None = None) -> list[tuple[str, bytes]]:
    """(url, html) of the test data's Chinese pages."""
    make_pages = _make_pages()
    return [(url, html) for url, html in make_pages.pages(root or data_root()) if make_pages.is_chinese(html)]


def page_text(html: bytes) -> str:
    from curation.extract.html import decode_html

    return decode_html(html, None)[0]


def expected_main_text(url: str, root: Path | None = None) -> str | None:
    """The main content the test data gives for a page (readability's expected article, newspaper's expected
    text), None where it gives none (trafilatura's pages: their evaldata holds snippets only)."""
    root = root or data_root()
    readability = re.match(r"https://readability\.test/([^/]+)/", url)
    if readability:
        from ablate import article_text

        return article_text(gzip.decompress((root / "html" / "readability" / "pages" / readability.group(1)
                                             / "expected.html.gz").read_bytes()))
    newspaper = re.match(r"https://newspaper\.test/(\w+)", url)
    if newspaper:
        return (root / "html" / "newspaper" / f"{newspaper.group(1)}.expected.txt").read_text(encoding="utf-8")
    return None


def evaldata_snippets(url: str, root: Path | None = None) -> tuple[list[str], list[str]]:
    """trafilatura's evaldata for a page: snippets its main text must hold, and boilerplate it must not."""
    path = (root or data_root()) / "html" / "trafilatura" / "evaldata.json"
    entry = json.loads(path.read_text(encoding="utf-8")).get(url, {}) if path.is_file() else {}
    return entry.get("with", []), entry.get("without", [])


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def link_blocks(html: bytes) -> list[list[str]]:
    """The text lines of each outermost block whose text is mostly link text (>= `MIN_LINKS` links)."""
    tree = lxml.html.fromstring(page_text(html))
    for bad in tree.xpath("//script|//style|//noscript|//template"):
        bad.drop_tree()
    chosen: list[lxml.html.HtmlElement] = []
    inside: set[lxml.html.HtmlElement] = set()
    for element in tree.iter("nav", "footer", "aside", "header", "ul", "ol", "dl", "table", "div", "section"):
        if any(a in inside for a in element.iterancestors()):
            continue
        text = _squeezed(element.text_content())
        links = element.findall(".//a")
        linked = sum(len(_squeezed(a.text_content())) for a in links)
        if len(links) >= MIN_LINKS and linked >= LINK_SHARE * len(text) and han_count(text) >= MIN_BLOCK_HAN:
            chosen.append(element)
            inside.add(element)
    return [[_squeezed(piece) for piece in block.itertext() if _squeezed(piece)] for block in chosen]


def dirty_documents(url: str, html: bytes, main_text: str) -> list[WebDoc]:
    """The page's link-heavy blocks as documents of `DIRTY_LINES` lines, lines of its main content left out."""
    main = {_squeezed(line) for line in main_text.splitlines()}
    lines = [line for block in link_blocks(html) for line in block if line not in main]
    docs = []
    for start in range(0, len(lines), DIRTY_LINES):
        chunk = lines[start:start + DIRTY_LINES]
        text = "\n".join(chunk)
        if len(chunk) >= MIN_DIRTY_LINES and han_count(text) >= MIN_DIRTY_HAN:
            kind = "link titles" if median(len(line) for line in chunk) >= TITLE_CHARS else "menu"
            docs.append(WebDoc(f"{url}#dirty{len(docs)}", "dirty", url, text, kind))
    return docs[:MAX_DIRTY_PER_PAGE]


def sentence_documents(root: Path | None = None) -> list[WebDoc]:
    """The Leipzig Chinese news sentences, twelve to a document."""
    path = (root or data_root()) / "langid" / "sentences" / "zh.txt"
    if not path.is_file():
        return []
    lines = [s.strip() for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]
    return [WebDoc(f"leipzig/zh/{k}", "clean", str(path), "\n".join(lines[start:start + SENTENCES_PER_DOC]))
            for k, start in enumerate(range(0, len(lines) - SENTENCES_PER_DOC + 1, SENTENCES_PER_DOC))]


def not_prose(url: str) -> str | None:
    return next((why for site, why in NOT_PROSE.items() if site in url), None)


def web_documents(extracted: dict[str, str], root: Path | None = None) -> tuple[list[WebDoc], list[str]]:
    """Clean and dirty documents of the Chinese pages and the clean sentence documents, and what was left
    out. `extracted` maps a page's url to its `extract` stage text (used where the data gives no main text)."""
    docs, left_out = [], []
    for url, html in chinese_pages(root):
        main = expected_main_text(url, root) or extracted.get(url)
        if not main:
            left_out.append(f"{url}: no main text")
            continue
        why = not_prose(url)
        if why:
            left_out.append(f"{url}: not in the clean set ({why})")
        else:
            docs.append(WebDoc(f"{url}#main", "clean", url, main))
        docs.extend(dirty_documents(url, html, main))
    return docs + sentence_documents(root), left_out


def warc_pages(path: Path) -> list[tuple[str, bytes]]:
    """(url, body) of the HTML responses of a WARC file."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    found = []
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream, record_types=WarcRecordType.response, parse_http=True):
            kind = record.http_headers.get("Content-Type") if record.http_headers else None
            if kind is None or "html" in kind.lower():
                found.append((record.headers.get("WARC-Target-URI"), record.reader.read()))
    return found


def crawled_pages(root: Path | None = None) -> tuple[list[tuple[str, bytes, str]], list[str]]:
    """(url, html, why dirty) of the Chinese pages of the Common Crawl sample, and the urls not labelled."""
    path = (root or data_root()).joinpath(*CRAWL)
    if not path.is_file():
        return [], []
    chinese = [(url, body) for url, body in warc_pages(path) if _make_pages().is_chinese(body)]
    return ([(url, body, CRAWL_DIRTY[url]) for url, body in chinese if url in CRAWL_DIRTY],
            [url for url, _ in chinese if url not in CRAWL_DIRTY])


# -- English pages ----------------------------------------------------------------------------------


def recipe_english_pages(root: Path | None = None) -> list[tuple[str, bytes]]:
    """(url, html) of the English source of `recipes/web-zh-en.yaml` as shipped: dolma's wget captures."""
    folder = (root or data_root()) / "warc" / "dolma"
    return [page for path in sorted(folder.glob("sample-000*.warc.gz")) for page in warc_pages(path)]


def english_pages(root: Path | None = None) -> list[tuple[str, bytes]]:
    """(name, source html) of readability's test pages declared English (the undeclared ones are mostly lorem
    ipsum test cases, or in other languages), lorem ipsum test cases left out."""
    folder = (root or data_root()) / "html" / "readability" / "pages"
    out = []
    for page in sorted(p for p in folder.iterdir() if (p / "source.html.gz").is_file()) if folder.is_dir() else []:
        meta = json.loads((page / "expected-metadata.json").read_text(encoding="utf-8"))
        html = gzip.decompress((page / "source.html.gz").read_bytes())
        if (meta.get("lang") or "").lower()[:2] == "en" and b"lorem ipsum" not in html.lower():
            out.append((page.name, html))
    return out
