"""What the page stages (`html_langid`, `extract`) need of a raw page before any engine parses it: its
text in the right charset, a guard against tags that would stall a parser, which rows are pages at all."""

from __future__ import annotations

import functools
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from resiliparse.parse.encoding import bytes_to_str, detect_encoding

NOT_HTML = "not_html"  # why rows without a page (JSONL, WET) go by the page stages


class TooManyAttributes(ValueError):
    """A tag whose attributes would take the HTML parser quadratic time."""


@functools.lru_cache(maxsize=8)
def _tags_up_to(max_attributes: int) -> re.Pattern[str]:
    """Matches a page from its start up to the first tag with more than `max_attributes` attributes.

    A linear scan (possessive: nothing is retried) that splits tags into attributes as the HTML5
    tokenizer does: separated by whitespace or `/`, or following a quoted value directly; a value
    is quoted or runs to whitespace or `>`; `<` inside a tag is part of a name. Comments, scripts
    and styles are skipped as raw text. It counts at least what the parser sees, so any page it
    passes parses in time linear in its size (at most ~5 s for 5 MB of tags near the limit).
    """
    ws = r"[\t\n\f\r ]"
    value = r"""(?:"[^"]*+"|'[^']*+'|[^\t\n\f\r >]*+)"""
    attribute = rf"[\t\n\f\r /]*+(?:[^\t\n\f\r />=]++(?:{ws}*+={ws}*+{value})?+|={ws}*+{value})"
    attributes = rf"(?:{attribute}){{0,{max_attributes}}}+(?!{attribute})[\t\n\f\r /]*+>?"
    raw = r"(?:[^<]++|<(?!/(?i:{name})))*+"
    token = "|".join([
        r"[^<]++",
        r"<!--(?:[^-]++|-(?!->))*+(?:-->)?",
        *(rf"<(?i:{name})(?![^\t\n\f\r />]){attributes}{raw.format(name=name)}" for name in ("script", "style")),
        rf"</?[A-Za-z][^\t\n\f\r />]*+{attributes}",
        r"<(?!/?[A-Za-z])",
    ])
    return re.compile(rf"(?:{token})*+")


def too_many_attributes(html: str, max_attributes: int) -> int | None:
    """Where the first tag with more than `max_attributes` attributes starts (None: no such tag)."""
    scanned = _tags_up_to(max_attributes).match(html).end()  # interruptible, unlike the parser
    return scanned if scanned < len(html) else None


DEEP_CHECK_TAGS = 5_000
"""A page with more `<` than this has its nesting measured (`nesting_depth`): fewer tags cannot nest deeper."""
_UNNESTED = re.compile(r"(?is)<(script|style|textarea|template)\b.*?</\1\s*>|<!--.*?-->")
_VOID = ("area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source",
         "track", "wbr", "!")


def nesting_depth(html: str) -> int:
    """How deep the page's elements nest, about: start tags (not void, not self-closed) less end tags, at their
    most, scripts, styles and comments left out. resiliparse's selectors take time growing with the square of the
    depth, in C that no time limit interrupts (100,000 nested divs: ~110 s); real pages nest under 250 (1,162 pages
    of the test data: median 17, at most 229). Numpy over the page's bytes: ~15 ms a MB, only for pages with over
    `DEEP_CHECK_TAGS` tags."""
    data = np.frombuffer(_UNNESTED.sub("", html).encode("utf-8", "replace"), np.uint8)
    starts = np.flatnonzero(data[:-1] == ord("<"))
    if not len(starts):
        return 0
    following = np.stack([data[np.minimum(starts + 1 + k, len(data) - 1)] | 0x20 for k in range(8)], axis=1)
    letter = (following >= ord("a")) & (following <= ord("z"))
    word = letter | ((following >= ord("0")) & (following <= ord("9")))
    void = np.zeros(len(starts), bool)
    for name in _VOID:  # the name whole: `<br>`, `<br/>`, `<br class=...>`, not `<bread>`
        void |= np.all(following[:, :len(name)] == np.frombuffer(name.encode(), np.uint8), axis=1) & ~word[:, len(name)]
    ends = np.flatnonzero(data == ord(">"))
    end_of = np.searchsorted(ends, starts)
    closed = end_of < len(ends)
    self_closed = np.zeros(len(starts), bool)
    self_closed[closed] = data[ends[end_of[closed]] - 1] == ord("/")
    step = (letter[:, 0] & ~void & ~self_closed).astype(np.int64) - (data[starts + 1] == ord("/"))
    return int(np.cumsum(step).max())


_RAW_TEXT_START = re.compile(r"<(?i:script|style)(?![^\t\n\f\r />])")
_SELF_CLOSED_REST = re.compile(r"""(?:[^"'/]++|"[^"]*+"|'[^']*+'|/(?![\t\n\f\r ]*+>))*+/[\t\n\f\r ]*+>""")
"""The rest of a start tag up to its first `>`: attributes, then the self-closing slash."""


def opened_raw_text_tags(html: str) -> str:
    """`html` with `<script .../>` and `<style .../>` written as the start tags browsers read them as.

    HTML5 ignores a self-closing slash on an element that is not void: what follows `<script/>` up to
    `</script>` is the script, which a browser runs and never shows. lxml (trafilatura's parser) closes the
    element there instead, and the script becomes page text (bettycrocker.com's JavaScript extracted as the
    recipe's first lines). Each tag is read up to its first `>` only: no character is scanned twice.
    """
    parts, done = [], 0
    for start in _RAW_TEXT_START.finditer(html):
        if start.start() < done:
            continue  # inside a tag already read
        end = html.find(">", start.end())
        if end < 0:
            break
        if _SELF_CLOSED_REST.fullmatch(html, start.end(), end + 1):
            parts += [html[done:html.rindex("/", start.end(), end)], ">"]
        else:
            parts.append(html[done:end + 1])
        done = end + 1
    return "".join([*parts, html[done:]]) if parts else html


def html_rows(batch: pa.Table) -> pa.ChunkedArray:
    """Which rows are web pages (have html): rows of JSONL or WET sources pass a page stage unchanged."""
    if "html" not in batch.column_names:
        return pa.chunked_array([pa.nulls(batch.num_rows, pa.bool_()).fill_null(False)])
    return pc.is_valid(batch.column("html"))


def decode_html(body: bytes, declared: str | None) -> tuple[str, str]:
    """Text of a page and the charset used.

    Valid UTF-8 is UTF-8 whatever a header says (servers default to iso-8859-1, pages go stale);
    then the declared charset if it decodes; else detection (meta tag, content). UTF-8 with a few
    stray bytes keeps UTF-8 and replaces them rather than reading the page as cp1252.
    """
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    if declared:
        try:
            return body.decode(declared), declared.lower()
        except (LookupError, UnicodeDecodeError):
            pass
    encoding = detect_encoding(body, from_html_meta=True)
    if encoding == "utf-8":
        return body.decode("utf-8", errors="replace"), encoding
    return bytes_to_str(body, encoding), encoding
