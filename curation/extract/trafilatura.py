"""The `trafilatura` extraction engine: trafilatura itself, on one decoded page.

trafilatura is imported where pages are extracted, not when this module is: a driver that only builds
stages from a recipe saves ~17 MB (the `extract` stage's `setup` imports it once per worker, outside
any page's time limit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from curation.extract.fast import Favor

if TYPE_CHECKING:
    from trafilatura.deduplication import LRUCache


def paragraph_memory() -> LRUCache:
    """An empty memory for trafilatura's `deduplicate` (the paragraphs seen, as many as trafilatura keeps)."""
    from trafilatura.deduplication import LRUCache
    from trafilatura.settings import LRU_SIZE

    return LRUCache(maxsize=LRU_SIZE)


def trafilatura_extract(html: str, url: str | None, *, fast: bool, favor: Favor,
                        include_comments: bool, include_tables: bool, markdown: bool,
                        seen: LRUCache | None) -> tuple[str | None, str | None]:
    """(text, title) of a page; `seen`: the paragraphs met before, whose repeats are dropped (None: keep all);
    `markdown`: trafilatura's Markdown (headings, lists, tables, emphasis and fenced code) instead of plain text."""
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
    return text, title
