"""The `trafilatura` extraction engine: trafilatura itself, on one decoded page.

trafilatura is imported where pages are extracted, not when this module is: a driver that only builds
stages from a recipe saves ~17 MB (the `extract` stage's `setup` imports it once per worker, outside
any page's time limit).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from curation.extract.fast import Favor
from curation.extract.rewrites import rewrite, word_count
from curation.text.splitter import SENTENCE_TERMINALS

if TYPE_CHECKING:
    from trafilatura.deduplication import LRUCache


# Markdown's emphasis (`**bold**`, `*italic*`, `__bold__`), outside inline code: marks without structure, which
# the quality rules do not need and a model trained on them reads as noise beside plain text
# (an escaped mark, `\*`, is the page's own character)
_EMPHASIS = re.compile(r"(?<!\\)(\*\*|__)(?=\S)(.+?)(?<=[^\s\\])\1"
                       r"|(?<![\w*\\])\*(?=[^\s*])([^*\n]+?)(?<=[^\s\\])\*(?![\w*])")
_INLINE_CODE = re.compile(r"((?<!\\)`[^`\n]+`)")
_FENCE = re.compile(r"^\s*(```|~~~)")
# a table row of empty cells (a spacer table's) or a list item's marker alone: nothing to read, and repeated, lines
# the repetition rules count
_EMPTY_ROW = re.compile(r"^\s*\|(?:\s*\|)+\s*$")
_MARKER = re.compile(r"^\s*[-*+]\s*$")
# trafilatura's inline HTML for what Markdown cannot write (`19<sup>th</sup>`, a footnote's `<sup>[2]</sup>`):
# the text it holds, as plain-text extraction gives it
_INLINE_HTML = re.compile(r"</?(?:sup|sub|u)>")
# CommonMark escapes trafilatura puts before prose characters (`api\_key`, `\[sic\]`, `\<name>`; `\#`, `\-`,
# `1\.` where a line would start a heading, a list or a quote): the page said `api_key`. A run of 2k + 1
# backslashes before such a character was k of the page's own; `\|` stays, it keeps a table cell's pipe.
_ESCAPED = re.compile(r"(\\+)([*_`~\[\]<])")
_ESCAPED_LINE_START = re.compile(r"^( {0,3})(?:\\([#>+-])|(\d{1,9})\\([.)]))")


# A table's row and its cells (a cell's own `|` is escaped in Markdown); a header's rule line (`|---|---|`), which
# trafilatura writes under a row of header cells only
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_HEADER_RULE = re.compile(r"^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$")
_SENTENCE_END = re.compile(f"[{re.escape(SENTENCE_TERMINALS)}]")
PROSE_CELL_WORDS = 12
"""Fewest words (two characters of a script without spaces counting as one) of a table cell that, holding a
sentence's end too, is a paragraph written in a table: a forum's post in a table of posts, one a row."""


def _row(cells: list[str]) -> list[str]:
    return [f"| {' | '.join(cells)} |"] if cells else []


def _unrolled(row: str) -> list[str]:
    """A table row as lines: its prose cells each a paragraph, the cells between them rows of their own."""
    lines: list[str] = []
    cells: list[str] = []
    for cell in (c.strip() for c in _CELL_BORDER.split(row.strip())[1:-1]):
        if word_count(cell) >= PROSE_CELL_WORDS and _SENTENCE_END.search(cell):
            lines += [*_row(cells), cell.replace("\\|", "|")]
            cells = []
        elif cell:
            cells.append(cell)
    return lines + _row(cells) if lines else [row]


def prose_out_of_tables(lines: list[str]) -> list[str]:
    """The lines with each table without header cells written as paragraphs where its cells hold them
    (`_unrolled`); tables with headers as they are, and lines in fenced code.

    A forum that sets each post in a row of a table of posts (vBulletin's, SMF's, fanfiction.net's) came out as rows of
    `| byline | post |`, which the quality rules set aside as layout: a thread of long posts had no prose left and
    FineWeb's line punctuation dropped it (`benchmarks/forums.py`). Unwrapping such a table before trafilatura
    (`rewrites.unwrap_layout_tables`) loses half of its posts, so it is read as a table and rewritten here.
    """
    out: list[str] = []
    table: list[str] = []
    fenced = False

    def flush() -> None:
        # trafilatura writes tables one under the other with no line between: a headed one starts at the row above
        # its rule line, and what follows it is taken to be its rows
        rule = next((k for k, line in enumerate(table) if _HEADER_RULE.match(line)), len(table) + 1)
        headed = max(rule - 1, 0)
        out.extend(line for row in table[:headed] for line in _unrolled(row))
        out.extend(table[headed:])
        table.clear()

    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and _TABLE_ROW.match(line):
            table.append(line)
            continue
        flush()
        out.append(line)
    flush()
    return out


def _unescaped(prose: str) -> str:
    def run(match: re.Match[str]) -> str:
        slashes = len(match.group(1))
        return match.group() if slashes % 2 == 0 else "\\" * (slashes // 2) + match.group(2)

    return _ESCAPED.sub(run, prose) if "\\" in prose else prose


def _plain_prose(part: str) -> str:
    """A piece of a Markdown line outside code, as the page wrote it: no emphasis marks, inline HTML or escapes."""
    if "*" in part or "__" in part:
        part = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3), part)
    if "<" in part:
        part = _INLINE_HTML.sub("", part)
    return _unescaped(part)


def tidy_markdown(markdown: str) -> str:
    """trafilatura's Markdown with its structure (headings, lists, tables, fenced and inline code) and the prose as
    the page wrote it: emphasis marks, inline HTML tags and CommonMark's escapes dropped outside code, and table
    rows of empty cells (`|  |  |`) and empty list items (`- `) left out."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            if _EMPTY_ROW.match(line) or _MARKER.match(line):
                continue
            line = _ESCAPED_LINE_START.sub(lambda m: m.group(1) + (m.group(2) or m.group(3) + m.group(4)), line)
            line = "".join(part if part.startswith("`") else _plain_prose(part) for part in _INLINE_CODE.split(line))
        out.append(line)
    return "\n".join(prose_out_of_tables(_rejoined(out)))


# What trafilatura breaks out of a sentence onto a line of its own: a citation (`<sup>[13]</sup>`) and the
# punctuation after it, which Chinese writes after the citation (`写歌[13]。`): alone on a line, the full stop was
# removed by C4's short-line rule (12 of 28 on a Baidu Baike page) and the citation stayed
_CITATION_LINE = re.compile(r"\s*\[\d+(?:\s*[-–,]\s*\d+)*\]\s*")
_CLOSING_LINE = re.compile(r"\s*[。．，、；：？！」』）】〕》〉”’.,;:?!)]+\s*")
_CJK_CLOSING_START = re.compile(r"\s*[。．，、；：？！」』）】〕》〉]+")  # `。2006年`: the line above's stop


def _rejoined(lines: list[str]) -> list[str]:
    """`lines` with a citation or closing punctuation alone on a line, or the Chinese punctuation a line starts with,
    put back at the end of the line before it (outside code fences)."""
    out: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and out and out[-1].strip() and not _FENCE.match(out[-1]):
            if _CITATION_LINE.fullmatch(line) or _CLOSING_LINE.fullmatch(line):
                out[-1] = out[-1].rstrip() + line.strip()
                continue
            if lead := _CJK_CLOSING_START.match(line):
                out[-1] = out[-1].rstrip() + lead.group().strip()
                line = line[lead.end():]
        out.append(line)
    return out


def tidy_text(text: str) -> str:
    """trafilatura's plain text without table rows of empty cells, and with a list item's marker that it wrote alone on
    a line (the item's text on the next, indented: `- ` then `    iPhone 14 (6,1 Zoll)`, where a `<p>` holds it) put
    before that text; a marker with no text after it is left out."""
    out: list[str] = []
    marker = False
    for line in text.split("\n"):
        if _EMPTY_ROW.match(line):
            continue
        if marker and line.strip():
            line = "- " + line.strip()
        marker = bool(_MARKER.match(line))
        if not marker:
            out.append(line)
    return "\n".join(prose_out_of_tables(_rejoined(out)))


def paragraph_memory() -> LRUCache:
    """An empty memory for trafilatura's `deduplicate` (the paragraphs seen, as many as trafilatura keeps)."""
    from trafilatura.deduplication import LRUCache
    from trafilatura.settings import LRU_SIZE

    return LRUCache(maxsize=LRU_SIZE)


_JOINERS = frozenset("\u200c\u200d\u180e")  # and the Mongolian vowel separator, which shapes a word's last vowel


@functools.cache
def _keep_joiners() -> None:
    """trafilatura removes every character `str.isprintable` refuses, the zero-width non-joiner and joiner among them,
    which spell Persian, Kurdish, Indic and Sinhala words and join emoji (`می‌شوید` came out `میشوید`), and Mongolian's
    vowel separator: its filter, the same for every other character, lets those through."""
    from trafilatura import utils

    refused = utils.return_printables_and_spaces

    @functools.lru_cache(maxsize=2**14)
    def printable(char: str) -> str:
        return char if char in _JOINERS else refused(char)

    utils.return_printables_and_spaces = printable


def trafilatura_extract(html: str, url: str | None, *, fast: bool, favor: Favor,
                        include_comments: bool, include_tables: bool, markdown: bool,
                        seen: LRUCache | None) -> tuple[str | None, str | None]:
    """(text, title) of a page; `seen`: the paragraphs met before, whose repeats are dropped (None: keep all);
    `markdown`: trafilatura's Markdown (headings, lists, tables and fenced code; `tidy_markdown`) instead of plain
    text."""
    from trafilatura import extract
    from trafilatura.metadata import extract_title
    from trafilatura.utils import load_html

    _keep_joiners()
    tree = load_html(html)
    if tree is None:
        return None, None
    title = extract_title(tree)
    rewrite(tree)
    text = extract(
        tree,
        url=url,
        fast=fast,
        favor_precision=favor == "precision",
        favor_recall=favor == "recall",
        include_comments=include_comments,
        include_tables=include_tables,
        deduplicate=seen if seen is not None else False,
        output_format="markdown" if markdown else "txt",
        include_formatting=markdown,
    )
    if not text:
        return text, title
    return (tidy_markdown(text) if markdown else tidy_text(text)), title
