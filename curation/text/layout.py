"""What each line of a document is: prose, a list item, or layout (code, a table row, a heading).

The line-based quality rules (C4's, FineWeb's, Gopher's) were written to find pages that are not prose: menus,
link lists, code-like boilerplate. A technical article also holds code blocks, tables and headings, and such a
rule, counting those lines as failed prose, drops the whole article (a Chinese article on LLM training
lost to C4's curly bracket for quoting code, another to FineWeb's line punctuation for its lists). So the rules
judge a document's prose and leave its layout lines out of their statistics, while the document keeps them.

Kinds are recognised per line, columnar (RE2 over every line of a batch at once):
- code: a line inside a fenced block (``` or ~~~, Markdown's, as trafilatura's Markdown output and most
  technical sites write them), or a line shaped like code in any language: ending in an opening or closing
  bracket or `;`, starting with a keyword of a statement (`def f(`, `import x`, `return`, `#include`, `const x =`),
  a shell or REPL prompt (`$ `, `>>> `), a command (`pip install`), an assignment or call standing alone
  (`model = Foo(...)`, `trainer.train()`), a line or a list item of inline code alone (a bulleted list of
  names in backticks, the pipelines a library offers, is no list of sentences), or an indented line (four spaces or a
  tab beyond the document's margin, not a list item: Markdown's indented code block, and what plain-text
  extraction leaves of a <pre> block) unless it reads as a paragraph (long, punctuation inside, a sentence's end,
  none of code's `;{}=<>`: the page's own indentation that trafilatura's plain text keeps);
- table: a row of `|`-separated cells (Markdown's, trafilatura's) or of tab-separated ones, and Markdown's rule
  line under a table's header;
- heading: a Markdown heading (`## 2.1 Data`);
- caption: a line ending in a colon right before code, a table or a list ("We may get:", "Related paper:"). A
  caption is layout to the rules of a line's shape and repetition (a tutorial repeats "We may get:", and no
  caption ends a sentence) and prose to the rules that count words and sentences (`prose_text(captions=True)`):
  "Like for models, this is done with the `save_pretrained()` method:" is a sentence of the article;
- list item: a bullet (`-`, `*`, `•`, ...) or a number (`1.`, `2)`, a full-width bracketed number, `四、`)
  followed by its text. List items stay in the prose: a filter may weigh them on their own (see `sentence_like`).

A document keeps its layout lines out of the statistics only while its prose (and list items) hold at least
`PROSE_SHARE_MIN` of its characters: a page of code or tables with a line of prose is no article quoting code,
and is judged whole, as before, by the rules written for such pages. A tutorial's section of two sentences and a
long example is judged on its prose, which must still pass every rule of size (Gopher's 50 words, C4's five
sentences) on its own.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.text.columns import LINE_BREAK_RE2, as_array, list_offsets, re2_class, segment_sum
from curation.text.splitter import SENTENCE_TERMINALS

PROSE, LIST, HEADING, TABLE, CODE, CAPTION = 0, 1, 2, 3, 4, 5
LAYOUT = (HEADING, TABLE, CODE, CAPTION)
WRAP_MIN = 40
"""Fewest characters of a line that a hard-wrapped paragraph goes on from (a menu's entries are shorter)."""
PROSE_SHARE_MIN = 0.05
"""Least share of a document's characters in prose or list lines for its layout lines to be set aside."""

FENCE_RE2 = r"^\s*(```|~~~)"
HEADING_RE2 = r"^\s{0,3}#{1,6}\s+\S"
TABLE_RE2 = r"^\s*\|.*\|\s*$|^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$|^[^\t]*\t[^\t]*\t"
LIST_RE2 = (r"^\s*([-*+•·▪‣◦●○■□▶►–]\s+|\d{1,3}[.)]\s+|\d{1,3}[、．]|[（(]\d{1,3}[)）]\s*|"
            r"[一二三四五六七八九十]{1,3}[、．]|[a-z][.)]\s+)\S")
# Code: each alternative is a shape prose lines do not take. Keywords are matched case-sensitively, so that a
# sentence starting "For example:" or "Import duties..." stays prose.
CODE_RE2 = "|".join((
    r"(\{|\(|\[|\}[;,)]*|\);|\];)\s*$|^\s*[)\]}]",  # ends opening a bracket or a statement, starts closing one
    r"^\s*(def|class|async def)\s+\w+\s*[(:]",
    r"^\s*(import\s+[\w.]+(\s+as\s+\w+)?\s*$|from\s+[\w.]+\s+import\s)",
    r"^\s*(if|elif|for|while|with|try|except|else|finally)\b[^\p{Han}\p{Hiragana}\p{Katakana}]*:\s*$",
    r"^\s*(return|raise|yield|await)\b[^.!?。！？]*$",
    r"^\s*(#include|#define|#!/|using namespace|package\s+[\w.]+;|@\w+(\(|$))",
    r"^\s*(const|let|var|val|auto|int|float|double|char|bool|void|public|private|protected|static|func|fn)\s+"
    r"[\w<>\[\]*&:]+\s*(=|\(|:|;|<|\{)",
    r"^\s*(\$|>>>|\.\.\.|In \[\d+\]:|PS>|C:\\>)\s",
    r"^\s*(pip3?|conda|python3?|git|cd|export|docker|curl|wget|sudo|apt(-get)?|npm|yarn|make|bash|sh|torchrun|"
    r"deepspeed|accelerate|huggingface-cli|nvidia-smi|mkdir|ls|cp|mv|rm|cat|chmod)\s+[-\w./~$\"']",
    r"^\s*[A-Za-z_][\w.]*(\[[^\]]*\])*(\s*,\s*[A-Za-z_][\w.]*)*\s*(=|\+=|-=|\*=|/=|:=)\s*[^=\s]"
    r"[^\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]*$",  # an assignment, no CJK text on it
    r"^\s*[A-Za-z_][\w.]*\(.*\)\s*[;,]?\s*$",  # a call standing alone: `trainer.train()`
    r"^\s*([-*+•]\s+|\d{1,3}[.)]\s+)?`[^`]+`\s*$",  # inline code alone on a line or a list item (Markdown's `...`)
    r"^\s*[\[{(][^\p{Han}\p{Hiragana}\p{Katakana}]*[\"'\d,:][^\p{Han}]*[^.!?][\]})],?\s*$",  # a literal: `("h", "u")`
))
INDENT = 4
"""Spaces beyond a document's margin that make a line an indented code block (a tab counts as four)."""
_ENDS_SENTENCE_RE2 = re2_class(SENTENCE_TERMINALS) + r"[\"'”’)\]]*\s*$"
_PUNCT_INSIDE_RE2 = r"[,;:，、；：。.!?！？]"
INLINE_CODE_RE2 = r"`[^`\n]+`"
# code quoted in a sentence without backticks: a short quoted span holding a curly bracket ("set to '{}'"), its
# quotes opening after a space or bracket and closing before one (what is around it is kept: \1, \2)
_QUOTED_CODE_RE2 = r"(^|[\s(\[:=,])(?:" + "|".join(
    f"{a}(?:[^{b}\\s{{}}][^{b}\\n{{}}]{{0,39}})?[{{}}][^{b}\\n]{{0,40}}{b}" for a, b in ("''", '""', "“”")
) + r")([^\w]|$)"
# An indented line that reads as a paragraph: it holds punctuation inside, ends a sentence, has no code's characters
# and does not open a comment. trafilatura's plain text keeps the page's own indentation of a paragraph (a novel's
# chapter indents every paragraph 56 spaces, a press release 5), which read as an indented code block.
_INDENTED_PROSE_RE2 = (r"^\s*[^\s#/*;{}=<>\-][^;{}=<>]{" + str(WRAP_MIN) + r",}" + _PUNCT_INSIDE_RE2 + r".*"
                       + _ENDS_SENTENCE_RE2)
# Markdown's marks inside a line, and list markers: layout too, which word rules must not count as words that
# hold no letter (a documentation page's `code`, [links](url) and **bold** took English prose under Gopher's 80%)
MARKUP_RE2 = (
    (r"!?\[([^\]\n]*)\]\([^)\n]*\)", r"\1"),  # [text](url), ![alt](url)
    (r"`([^`\n]+)`", r"\1"),
    (r"\*\*([^*\n]+)\*\*|__([^_\n]+)__", r"\1\2"),
    # a heading's marks, on a list item too, or inside one (`- 1 ###### Title`): a run of #s before a space is no
    # hashtag (`#tag`, `#1`), which Gopher's hash ratio is for
    (r"(^|\s)#{1,6}[ \t]+", r"\1"),
    (r"(?m)^(\s*)([-*+•·▪‣◦●○■□▶►–]|\d{1,3}[.)])\s+", r"\1"),
)


def line_kinds(lines: pa.Array, offsets: np.ndarray) -> np.ndarray:
    """The kind of every line (int8, the constants above); `lines` are the documents' lines, flat and
    unstripped, `offsets` where each document's lines start (length: documents + 1)."""
    lines = as_array(lines)

    def matches(pattern: str) -> np.ndarray:
        return pc.match_substring_regex(lines, pattern).to_numpy(zero_copy_only=False)

    kind = np.full(len(lines), PROSE, np.int8)
    if not len(lines):
        return kind
    listed = matches(LIST_RE2)
    kind[listed] = LIST
    kind[matches(CODE_RE2) | (_indented(lines, offsets) & ~listed & ~matches(_INDENTED_PROSE_RE2))] = CODE
    kind[matches(HEADING_RE2)] = HEADING
    kind[matches(TABLE_RE2)] = TABLE
    fence = matches(FENCE_RE2)
    if fence.any():  # inside a fenced block: an odd number of fences before the line in its document
        seen = np.cumsum(fence, dtype=np.int64)
        before = seen - fence
        doc_start = np.repeat(np.concatenate([[0], seen])[offsets[:-1]], np.diff(offsets))
        kind[fence | ((before - doc_start) % 2 == 1)] = CODE
    _captions(lines, offsets, kind)
    return kind


def _indented(lines: pa.Array, offsets: np.ndarray) -> np.ndarray:
    """Lines indented `INDENT` spaces or more beyond their document's margin (the least indentation of its lines
    with text): Markdown's indented code block, and a <pre> block's lines in extracted text. A document indented
    as a whole (an RFC, a plain-text page) has its prose at the margin, not in code blocks."""
    spaced = pc.replace_substring(lines, "\t", " " * INDENT)
    length = pc.utf8_length(spaced).to_numpy(zero_copy_only=False).astype(np.int64)
    lead = length - pc.utf8_length(pc.utf8_ltrim_whitespace(spaced)).to_numpy(zero_copy_only=False)
    filled = lead < length
    line_doc = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    margin = np.full(len(offsets) - 1, 1 << 40)  # a document without text has no margin (and no indented line)
    np.minimum.at(margin, line_doc[filled], lead[filled])
    return filled & (lead >= margin[line_doc] + INDENT)


def _captions(lines: pa.Array, offsets: np.ndarray, kind: np.ndarray) -> None:
    """A prose line ending in a colon right before code, a table or a list ("We may get:", "Related paper:") is
    the block's caption: layout with it (in place). A tutorial repeats such lines, which FineWeb's duplicated-line
    rule counted."""
    filled = np.flatnonzero(pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(lines)), 0)
                            .to_numpy(zero_copy_only=False))
    if len(filled) < 2:
        return
    line_doc = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    this, after = filled[:-1], filled[1:]
    colon = pc.match_substring_regex(lines.take(pa.array(this)), r"[:：]\s*$").to_numpy(zero_copy_only=False)
    caption = (colon & (kind[this] == PROSE) & np.isin(kind[after], (CODE, TABLE, LIST))
               & (line_doc[this] == line_doc[after]))
    kind[this[caption]] = CAPTION


def wrapped(lines: pa.Array, offsets: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Which lines go on in the next one, their paragraph hard-wrapped (bool per line): a prose or list line that
    ends in no sentence terminal, followed in its document by a prose line, where either the line has at least
    `WRAP_MIN` characters and the next starts with a lower-case letter, or (Chinese, Japanese, Korean: no case)
    the line is as wide as its document's wrapped lines (`_at_wrap_width`) and the next is not indented (an
    e-book indents a paragraph's first line). Markdown sources, plain-text files and books wrap their paragraphs
    at a width; a rule of lines (FineWeb's line punctuation, C4's words per line) must read such a paragraph as
    the one line it is, not as lines that end mid-sentence."""
    out = np.zeros(len(kinds), bool)
    if len(kinds) < 2:
        return out
    lines = as_array(lines)
    line_doc = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    same_doc = line_doc[:-1] == line_doc[1:]
    text = np.isin(kinds, (PROSE, LIST))
    long = pc.greater_equal(pc.utf8_length(pc.utf8_trim_whitespace(lines)), WRAP_MIN).to_numpy(zero_copy_only=False)
    open_end = ~pc.match_substring_regex(lines, _ENDS_SENTENCE_RE2).to_numpy(zero_copy_only=False)
    lower = pc.match_substring_regex(lines, r"^\s*\p{Ll}").to_numpy(zero_copy_only=False)
    flush = ~pc.match_substring_regex(lines, r"^[\s\x{3000}]").to_numpy(zero_copy_only=False)  # CJK's indent too
    goes_on = (long[:-1] & lower[1:]) | (_at_wrap_width(lines, line_doc, text & open_end)[:-1] & flush[1:])
    out[:-1] = same_doc & text[:-1] & open_end[:-1] & (kinds[1:] == PROSE) & goes_on
    return out


WRAP_WIDTH_MIN = 20
"""Fewest display columns (a Han character is two) of a CJK line that `_at_wrap_width` reads as wrapped."""


def _at_wrap_width(lines: pa.Array, line_doc: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Lines holding CJK text at their document's wrap width: within one of the most common length of its
    `candidates` (prose lines ending mid-sentence), shared by at least three, counted in characters or in display
    columns (a Han character is two; wrappers count either). A text wrapped at a width fills its lines to it;
    menus and titles end where their words do, at lengths that seldom repeat."""
    wide = pc.count_substring_regex(lines, r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\x{3000}-\x{303f}"
                                           r"\x{ff01}-\x{ff60}]").to_numpy(zero_copy_only=False)
    chars = pc.utf8_length(pc.utf8_trim_whitespace(lines)).to_numpy(zero_copy_only=False).astype(np.int64)
    rows = np.flatnonzero(candidates & (wide > 0) & (chars + wide >= WRAP_WIDTH_MIN))
    out = np.zeros(len(chars), bool)
    if len(rows) < 3:
        return out
    docs = line_doc[rows].astype(np.int64)
    for length in (chars[rows], chars[rows] + wide[rows]):
        keys, counts = np.unique(docs << 32 | length, return_counts=True)
        order = np.lexsort((counts, keys >> 32))  # each document's most common length last
        last = order[np.r_[(keys >> 32)[order][1:] != (keys >> 32)[order][:-1], True]]
        at = np.searchsorted(keys[last] >> 32, docs)  # `last` is in document order
        width, times = keys[last][at] & 0xFFFFFFFF, counts[last][at]
        out[rows[(times >= 3) & (np.abs(length - width) <= 1)]] = True
    return out


def set_aside(lines: pa.Array, offsets: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Which lines a filter leaves out of its statistics: layout lines of documents whose prose holds at least
    `PROSE_SHARE_MIN` of their characters (bool per line)."""
    layout = np.isin(kinds, LAYOUT)
    if not layout.any():
        return layout
    length = pc.utf8_length(pc.utf8_trim_whitespace(as_array(lines))).to_numpy(zero_copy_only=False).astype(np.int64)
    total = segment_sum(length, offsets)
    prose = segment_sum(np.where(layout, 0, length), offsets)
    enough = prose >= PROSE_SHARE_MIN * np.maximum(total, 1)
    return layout & np.repeat(enough, np.diff(offsets))


def prose_text(texts: pa.Array | pa.ChunkedArray, *, captions: bool = False) -> pa.Array:
    """Each document's text without the lines `set_aside` leaves out (the original text where there is none);
    `captions`: keep the captions, for the rules that count words and sentences."""
    texts = as_array(texts)
    lines = pc.split_pattern_regex(texts, LINE_BREAK_RE2)
    offsets = list_offsets(lines)
    flat = lines.flatten()
    kinds = line_kinds(flat, offsets)
    aside = set_aside(flat, offsets, kinds)
    if captions:
        aside &= kinds != CAPTION
    if not aside.any():
        return texts
    keep = ~aside
    kept_offsets = np.concatenate([[0], np.cumsum(segment_sum(keep.astype(np.int64), offsets))]).astype(np.int64)
    kept = pa.LargeListArray.from_arrays(pa.array(kept_offsets), flat.filter(pa.array(keep)))
    joined = pc.binary_join(kept, pa.scalar("\n", flat.type))
    touched = pa.array(segment_sum(aside.astype(np.int64), offsets) > 0)
    return pc.if_else(touched, joined, texts)


def without_inline_code(lines: pa.Array) -> pa.Array:
    """`lines` without code quoted in a sentence, which no rule of prose reads: Markdown's inline code spans (`{}`),
    and short quoted spans holding a curly bracket (`'{}'`, `"{name}"`)."""
    return pc.replace_substring_regex(pc.replace_substring_regex(lines, INLINE_CODE_RE2, ""), _QUOTED_CODE_RE2, r"\1\2")


def bare_words(texts: pa.Array) -> pa.Array:
    """`texts` (a `prose_text`) without Markdown's inline marks and list markers: the text word rules count."""
    for pattern, replacement in MARKUP_RE2:
        texts = pc.replace_substring_regex(texts, pattern, replacement)
    return texts


def sentence_like(lines: pa.Array, kinds: np.ndarray, short: np.ndarray) -> np.ndarray:
    """List items that read as sentences whatever they end in: longer than a short line (`short`, per line)
    and holding punctuation inside, or longer than two short lines. A list of link titles or menu entries
    has neither; a technical article's bullets (a clause, a comma, another clause) have one or both."""
    items = kinds == LIST
    if not items.any():
        return items
    length = pc.utf8_length(pc.utf8_trim_whitespace(as_array(lines))).to_numpy(zero_copy_only=False)
    inside = pc.match_substring_regex(as_array(lines), _PUNCT_INSIDE_RE2 + r".").to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore"):
        return items & (((length > short) & inside) | (length > 2 * short))
