"""What the page stages (`html_langid`, `extract`) need of a raw page before any engine parses it: its
text in the right charset, a guard against tags that would stall a parser, which rows are pages at all."""

from __future__ import annotations

import codecs
import functools
import re

import charset_normalizer
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from resiliparse.parse.encoding import detect_encoding

from curation.readers.sniff import byte_order_mark, utf16_unmarked

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


# What browsers decode a legacy label's pages as (the WHATWG Encoding Standard): the label's Windows superset, whose
# extra characters real pages use (`①`, `㈱` in cp932; 똠 in cp949; HKSCS in Big5; `€` in GBK). `iso-8859-1` and
# `ascii` are windows-1252 there too.
_LABELS = {"x-gbk": "gbk", "gb_2312-80": "gb2312", "csgb2312": "gb2312", "windows-31j": "cp932", "x-sjis": "cp932",
           "x-euc-jp": "euc_jp", "x-x-big5": "big5", "cn-big5": "big5", "unicode-1-1-utf-8": "utf-8"}
_SUPERSETS = {"gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949", "big5": "big5hkscs",
              "iso8859-1": "cp1252", "ascii": "cp1252", "tis-620": "cp874", "iso8859-11": "cp874",
              "iso8859-9": "cp1254"}
# a server's default more often than the page's charset (Apache's, old frameworks'): a page's own meta tag wins over it
_WEAK = "cp1252"
_MULTIBYTE = frozenset({"gb18030", "cp932", "cp949", "big5hkscs", "euc_jp", "iso2022_jp"})
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
META_SCAN = 4096
"""Bytes of a page searched for its `<meta charset>` (browsers prescan 1024; pages put long scripts first)."""
BAD_BYTES_MAX = 0.002
"""Share of a page's bytes that may fail to decode in a charset that still decodes the page (a summary cut through a
character, a stray byte): each becomes U+FFFD, as in a browser, instead of the page going to another charset."""


def _gbk_euro(error: UnicodeDecodeError) -> tuple[str, int]:
    """GBK's one-byte `€` (0x80, Windows' cp936), which gb18030 lacks; any other bad byte a U+FFFD."""
    euro = error.encoding == "gb18030" and error.object[error.start] == 0x80
    return ("\u20ac" if euro else "\ufffd"), error.start + 1


codecs.register_error("curation.html", _gbk_euro)


def _codec(label: str | bytes | None) -> str | None:
    """The Python codec a charset label's pages decode with, browsers' superset of it; None: no such charset."""
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    if not label:
        return None
    label = label.strip().lower()
    try:
        name = codecs.lookup(_LABELS.get(label, label)).name
    except LookupError:
        return None
    return _SUPERSETS.get(name, name)


def _guessed(body: bytes) -> str | None:
    """charset-normalizer's charset of a page, as browsers read its label; None where it finds none. Slower than
    resiliparse's detection, it tells Korean and the Cyrillic single-byte charsets, which that one does not."""
    guess = charset_normalizer.from_bytes(body).best()
    return _codec(guess.encoding) if guess is not None else None


def _another_script(body: bytes) -> str | None:
    """`_guessed`'s charset where it reads the page's letters as another script than Latin (Hangul, Cyrillic...):
    over a header's windows-1252, whose Latin reading of a French page is right where the guess can be wrong (a short
    page in cp1252 guessed Baltic)."""
    codec = _guessed(body)
    if codec is None or codec == _WEAK:
        return None
    letters = [c for c in body.decode(codec, errors="replace") if c > "\x7f" and c.isalpha()]
    latin = sum(1 for c in letters if "\u00c0" <= c <= "\u024f" or "\u1e00" <= c <= "\u1eff")
    return codec if len(letters) > 2 * latin else None


# The bytes KOI8-U reads as Ukrainian's і ї є ґ (and capitals), which KOI8-R reads as box-drawing characters no
# Russian page writes
_KOI8_U_LETTERS = re.compile(b"[\xa4\xa6\xa7\xad\xb4\xb6\xb7\xbd]")


def _koi8(codec: str, body: bytes) -> str:
    """KOI8-U for a page read as KOI8-R that holds Ukrainian's own letters: detection names KOI8-R (a Ukrainian page
    without a charset came out with 675 letters as box-drawing characters, and was kept as clean text)."""
    return "koi8-u" if codec == "koi8-r" and _KOI8_U_LETTERS.search(body) else codec


def decode_html(body: bytes, declared: str | None) -> tuple[str, str]:
    """Text of a page and the codec used.

    A byte-order mark decides; valid UTF-8 is UTF-8 whatever a header says (servers default to iso-8859-1, pages go
    stale). Then, in order, the header's charset, the page's `<meta>` charset and detection, each label read as
    browsers read it (`_SUPERSETS`), and the first that decodes all but `BAD_BYTES_MAX` of the page is used, its bad
    bytes replaced; a header's windows-1252 (or iso-8859-1, ascii: a server default, which decodes anything) comes
    after the page's meta tag, a multi-byte charset detection finds, and without a meta tag charset-normalizer's
    guess (Korean and Russian sites send the server's default with EUC-KR and cp1251 pages). When none decodes so
    well, the one that leaves fewest bytes undecoded, or charset-normalizer's guess where it leaves fewer. UTF-16
    without a mark is known by its NULs (`utf16_unmarked`).
    """
    if (mark := byte_order_mark(body)) is not None:
        bom, codec = mark
        return body[len(bom):].decode(codec, errors="replace"), codec
    if wide := utf16_unmarked(body):  # NULs are valid UTF-8: before it
        return body.decode(wide, errors="replace"), wide
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    header = _codec(declared)
    found = _META_CHARSET.search(body, 0, META_SCAN)
    meta = _codec(found.group(1)) if found else None
    detected = _codec(detect_encoding(body, from_html_meta=False)) or "utf-8"
    if header == _WEAK:
        order = [meta, detected if detected in _MULTIBYTE else None]
        if meta is None and detected not in _MULTIBYTE:  # EUC-KR, cp1251 under a server's default iso-8859-1
            order.append(_another_script(body))
        order += [header, detected]
    else:
        order = [header, meta, detected]
    best: tuple[int, str, str] | None = None
    for codec in dict.fromkeys(_koi8(c, body) for c in order if c and c not in ("utf-16", "utf-32")):  # no BOM
        text = body.decode(codec, errors="curation.html")
        bad = text.count("\ufffd")
        if bad <= BAD_BYTES_MAX * len(body):
            return text, codec
        if best is None or bad < best[0]:
            best = (bad, text, codec)
    assert best is not None  # `detected` is always a candidate
    # resiliparse's guess does not read it either (it names no Korean, and says utf-8 for EUC-KR): a statistical
    # detector's, which is slower and only needed here
    if (codec := _guessed(body)) is not None:
        codec = _koi8(codec, body)
        text = body.decode(codec, errors="curation.html")
        if text.count("\ufffd") < best[0]:
            return text, codec
    return best[1], best[2]
