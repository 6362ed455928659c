"""The `trafilatura` extraction engine: trafilatura itself, on one decoded page.

trafilatura is imported where pages are extracted, not when this module is: a driver that only builds
stages from a recipe saves ~17 MB (the `extract` stage's `setup` imports it once per worker, outside
any page's time limit).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from curation.extract.fast import Favor

if TYPE_CHECKING:
    from trafilatura.deduplication import LRUCache


# Markdown's emphasis (`**bold**`, `*italic*`, `__bold__`), outside inline code: marks without structure, which
# the quality rules do not need and a model trained on them reads as noise beside plain text
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![\w*])")
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def without_emphasis(markdown: str) -> str:
    """`markdown` without emphasis marks; fenced code and inline code are left as they are."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and ("*" in line or "__" in line):
            line = "".join(part if part.startswith("`") else _EMPHASIS.sub(lambda m: m.group(2) or m.group(3), part)
                           for part in _INLINE_CODE.split(line))
        out.append(line)
    return "\n".join(out)


def paragraph_memory() -> LRUCache:
    """An empty memory for trafilatura's `deduplicate` (the paragraphs seen, as many as trafilatura keeps)."""
    from trafilatura.deduplication import LRUCache
    from trafilatura.settings import LRU_SIZE

    return LRUCache(maxsize=LRU_SIZE)


def trafilatura_extract(html: str, url: str | None, *, fast: bool, favor: Favor,
                        include_comments: bool, include_tables: bool, markdown: bool,
                        seen: LRUCache | None) -> tuple[str | None, str | None]:
    """(text, title) of a page; `seen`: the paragraphs met before, whose repeats are dropped (None: keep all);
    `markdown`: trafilatura's Markdown (headings, lists, tables and fenced code; emphasis marks dropped) instead of
    plain text."""
    from trafilatura import extract
    from trafilatura.metadata import extract_title
    from trafilatura.utils import load_html

    tree = load_html(html)
    if tree is None:
        return None, None
    title = extract_title(tree)
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
    return (without_emphasis(text) if markdown and text else text), title
