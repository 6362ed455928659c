"""What a page's HTML is made before trafilatura reads it: structure that trafilatura reads wrongly, rewritten.

- a table laid out as the page's columns becomes blocks (`unwrap_layout_tables`): trafilatura writes a cell as one
  line of a table row;
- prose set in a <pre> becomes paragraphs (`unwrap_prose_pre`): trafilatura fences a <pre> as code;
- a quote of text that stands earlier on the page is dropped, and so is a signature (`drop_repeated_quotes`): a forum
  thread repeats every post its replies quote, and an author's signature under each of their posts;
- the blocks every record of a page repeats around its own text are dropped (`drop_templated_blocks`): a forum post's
  profile and buttons;
- the container of a page's records is marked as its main text where trafilatura would take one record for it
  (`expose_records`): a thread's first post alone.

Each takes a parsed page (lxml.html) and rewrites it in place, returning how many elements it changed; `rewrite` runs
them all.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lxml.html import HtmlElement

# A table cell holding this much text outside lists is a page's column, not a value: a data table's cells hold
# names, figures, a phrase or two, or a list (Baike's awards, one per line, beside their category). Tables with
# header cells stay tables whatever their cells hold (Wikipedia's and a wiki's have cells this long).
LAYOUT_CELL_CHARS = 500
_OWN_HEADERS = "./caption|./thead|./tr/th|./*/tr/th"
_OWN_ROWS = "./tbody|./thead|./tfoot|./tr|./*/tr"
_OWN_CELLS = "./tr/td|./*/tr/td"
# the cell's own text: outside the lists and the tables it holds (a forum's thread in one cell of the page's table is
# a table of posts, which trafilatura reads whole; unwrapped, it kept half of a thread's posts)
_OWN_TEXT = ".//text()[count(ancestor::li) = $lists and count(ancestor::table) = $tables]"


def _prose_chars(cell: HtmlElement) -> int:
    lists, tables = len(cell.xpath("ancestor-or-self::li")), len(cell.xpath("ancestor::table"))
    return sum(len(text.strip()) for text in cell.xpath(_OWN_TEXT, lists=lists, tables=tables))


def unwrap_layout_tables(tree: HtmlElement) -> int:
    """Tables laid out as a page's columns, made blocks (`div`): each a table without header cells of its own, one of
    whose own cells holds `LAYOUT_CELL_CHARS` characters of text or more outside the lists and tables in it, all such
    cells in one row and holding half of the table's text or more. The number unwrapped.

    trafilatura writes a table's cell as one line of a table row: an article set in a layout table (old news
    sites, LWN's weekly edition, a Tumblr theme, club pages: 15 of the test data's 1,167 pages) came out as one
    line of up to 80,000 characters, its paragraphs run together, which the quality rules set aside as a table. A
    table of records is not a page's columns: unwrapped, a forum thread set in tables (vBulletin's, nairaland's) lost
    half its posts in trafilatura (`benchmarks/forums.py`).
    """
    unwrapped = 0
    for table in list(tree.iter("table")):
        if table.xpath(_OWN_HEADERS):
            continue
        cells = table.xpath(_OWN_CELLS)
        chars = [_prose_chars(cell) for cell in cells]
        large = [(cell, n) for cell, n in zip(cells, chars, strict=True) if n >= LAYOUT_CELL_CHARS]
        # a table of records (a forum's posts, a row each) is read whole by trafilatura: its long cells lie in several
        # rows, or hold less than half of its text
        if len({cell.getparent() for cell, _ in large}) != 1 or 2 * sum(n for _, n in large) < sum(chars):
            continue
        for element in (table, *table.xpath(_OWN_ROWS), *cells):
            element.tag = "div"
        unwrapped += 1
    return unwrapped


# A <pre> that a page marks as code (a <code> inside, a highlighter's class) is code whatever its text says.
_CODE_CLASS = re.compile(r"code|highlight|brush|prettyprint|syntax|lang(uage)?-|hljs|shell|console", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n[ \t\f\r]*\n")
# a sentence's end, or a caption's colon ending the block ("... a response body:" before the example)
_SENTENCE_END = re.compile(r"[.!?。！？](?=[\"')\]]*(\s|$))|[:：]\s*$")
_COLUMNS = re.compile(r"\S {4,}\S")  # a line set in columns: a title page's, a table's
_DIGITS = re.compile(r"\d+")
RUNNING_MIN = 3
"""A line set in columns that begins or ends this many of a page's <pre> elements (or form-feed pages of one) is its
running head or foot (an IETF draft's `Internet-Draft   remoteStorage   December 2014` and `de Jong   [Page 3]`)."""
_CODE_CHARS = frozenset("{}[]();=<>\"'_/\\|#$*&%@^~`")
PROSE_PRE = {"words": 8, "words_per_line": 5, "letters": 0.85, "code_chars": 0.05, "column_lines": 0.2}
"""A block of a <pre> (text between blank lines) is a paragraph when it has at least `words` words, `words_per_line`
on average, a sentence's end (or a caption's colon at its end), letters making `letters` of its visible characters
or more, code's characters (brackets, operators, quotes, `_`, `/`) at most `code_chars`, and at most `column_lines`
of its lines set in columns."""


def _prose_block(block: str) -> bool:
    lines = [line for line in block.split("\n") if line.strip()]
    visible = "".join(block.split())
    words = len(block.split())
    if not lines or words < PROSE_PRE["words"] or words / len(lines) < PROSE_PRE["words_per_line"]:
        return False
    letters = sum(c.isalpha() for c in visible) / len(visible)
    code = sum(c in _CODE_CHARS for c in visible) / len(visible)
    columns = sum(bool(_COLUMNS.search(line.strip())) for line in lines) / len(lines)
    return (letters >= PROSE_PRE["letters"] and code <= PROSE_PRE["code_chars"]
            and columns <= PROSE_PRE["column_lines"] and bool(_SENTENCE_END.search(block)))


_QUOTE = re.compile(r"^((?:>\s?)+)")  # an e-mail's quote marks: `> `, `>> `


def _paragraphs(block: str) -> list[str]:
    """A hard-wrapped block as paragraphs, one per run of lines at one quote depth (an e-mail's `> ` lines, its
    reply's), each run's lines joined into one with its quote marks once in front; a line ending in a hyphen after a
    letter goes on without a space (`Internet-` `Drafts`)."""
    runs: list[tuple[int, list[str]]] = []
    for line in (line.strip() for line in block.split("\n") if line.strip()):
        marks = _QUOTE.match(line)
        depth = marks.group(1).count(">") if marks else 0
        text = line[marks.end():].strip() if marks else line
        if not runs or runs[-1][0] != depth:
            runs.append((depth, []))
        if text:
            runs[-1][1].append(text)
    out = []
    for depth, lines in runs:
        joined = ""
        for line in lines:
            joined += line if not joined or (joined.endswith("-") and joined[-2:-1].isalpha()) else " " + line
        if joined:
            out.append(f"{'>' * depth} {joined}" if depth else joined)
    return out


def _running_lines(texts: list[str]) -> set[str]:
    """The running heads and feet (`RUNNING_MIN`) of <pre> texts, digits written as 0 (page numbers differ)."""
    ends: Counter[str] = Counter()
    for page in (page for text in texts for page in text.split("\f")):
        lines = [line.strip() for line in page.split("\n") if line.strip()]
        for line in {lines[0], lines[-1]} if lines else ():
            if _COLUMNS.search(line) and any(c.isalpha() for c in line):
                ends[_DIGITS.sub("0", line)] += 1
    return {line for line, n in ends.items() if n >= RUNNING_MIN}


def _element(like: HtmlElement, tag: str, text: str) -> HtmlElement:
    element = like.makeelement(tag, {})
    element.text = text
    return element


def unwrap_prose_pre(tree: HtmlElement) -> int:
    """Paragraphs of text set in a <pre> made paragraphs (`p`, their hard-wrapped lines joined: `_paragraphs`), the
    rest of it left a <pre>: an IETF draft, a mailing list archive's message, a plain-text file served as a page. The
    number of <pre> elements rewritten.

    trafilatura writes a <pre> as a fenced code block: such a page came out as one page of code, which the quality
    rules judge whole as code (an IETF draft's JSON examples made C4's curly bracket drop it). A <pre> holding a
    <code> element or with a code highlighter's class is left as it is; a rewritten one loses its running heads and
    feet (`RUNNING_MIN`), which FineWeb's duplicated-line rule counted."""
    pres = [pre for pre in tree.iter("pre") if pre.getparent() is not None and not pre.xpath(".//code")
            and not _CODE_CLASS.search(f"{pre.get('class', '')} {pre.get('id', '')}")]
    texts = [pre.text_content().expandtabs(8) for pre in pres]
    running = _running_lines(texts)
    rewritten = 0
    for pre, text in zip(pres, texts, strict=True):
        if running:
            text = "\n".join(line for line in text.split("\n") if _DIGITS.sub("0", line.strip()) not in running)
        blocks = [b for b in _BLANK_LINE.split(text) if b.strip()]
        prose = [_prose_block(b) for b in blocks]
        if not any(prose):
            continue
        replacement, code = [], []
        for block, is_prose in zip(blocks, prose, strict=True):
            if not is_prose:
                code.append(block.strip("\n"))
                continue
            if code:
                replacement.append(_element(pre, "pre", "\n\n".join(code)))
                code = []
            replacement += [_element(pre, "p", paragraph) for paragraph in _paragraphs(block)]
        if code:
            replacement.append(_element(pre, "pre", "\n\n".join(code)))
        if not replacement:
            continue
        replacement[-1].tail = pre.tail
        parent = pre.getparent()
        at = parent.index(pre)
        parent.remove(pre)
        for offset, element in enumerate(replacement):
            parent.insert(at + offset, element)
        rewritten += 1
    return rewritten


# a block a forum repeats: a quote (phpBB's and XenForo's `blockquote`, vBulletin's `bbcode_quote`), an author's
# signature under each of their posts (phpBB's `signature`, Vanilla's `UserSignature`, XenForo's `message-signature`)
_QUOTE_CLASS = re.compile(r"quote|signature", re.IGNORECASE)
QUOTE_MIN_WORDS = 5
QUOTE_HEADER_WORDS = 8
QUOTE_FOOTER_WORDS = 10
MAX_QUOTES = 500
QUOTE_PASSES = 3
"""A quote repeats text when its words, but for up to `QUOTE_HEADER_WORDS` of a header ("X wrote:", "Quote:
Originally Posted by X") and up to `QUOTE_FOOTER_WORDS` of a footer (XenForo's "Click to expand...", "Klicke in dieses
Feld, um es in vollständiger Größe anzuzeigen."), stand earlier on the page, `QUOTE_MIN_WORDS` of them at least; one of
fewer words is left alone, and a page's quotes past the first `MAX_QUOTES` too (each is a search of the page). The
page is searched again without the quotes found, up to `QUOTE_PASSES` times in all."""


def drop_repeated_quotes(tree: HtmlElement) -> int:
    """Quotes of text that stands earlier on the page, dropped: a forum reply's quote of a post above it (phpBB's
    `blockquote`, vBulletin's `bbcode_quote`, XenForo's, Discourse's `aside.quote`), an article's pull quote, an
    author's signature repeated under their next post. The number dropped. The text's first occurrence stays
    (XenForo writes each post itself in a `blockquote`).

    A thread repeats every post its replies quote and every signature: Gopher's duplicated n-grams and paragraphs and
    FineWeb's duplicated lines then dropped whole threads (`benchmarks/forums.py`)."""
    quotes = [e for e in tree.iter("blockquote", "div", "aside", "td")
              if e.tag == "blockquote" or _QUOTE_CLASS.search(e.get("class", ""))][:MAX_QUOTES]
    if not quotes:
        return 0
    pieces = _pieces(tree, set(quotes))
    gone: set[HtmlElement] = set()
    # a post quoted without the quotes inside it (XenForo's way) stands earlier only once those are gone
    for _ in range(QUOTE_PASSES):
        found = _repeats(pieces, quotes, gone)
        if not found:
            break
        gone.update(found)
    dropped = [quote for quote in quotes if quote in gone and not any(a in gone for a in quote.iterancestors())]
    for quote in dropped:
        quote.drop_tree()  # its tail stays
    return len(dropped)


def _pieces(tree: HtmlElement, quotes: set[HtmlElement]) -> list[tuple[str, tuple[HtmlElement, ...]]]:
    """The page's pieces of text in order, spaces collapsed, each with the quotes it lies in. A quote's words are read
    from these as the text before it is: a post's `icons.<br>MS Office` is `icons. MS Office` in the quote as in the
    post (lxml's `text_content` runs `icons.MS` together)."""
    from lxml.etree import iterwalk

    pieces, inside = [], []
    for event, element in iterwalk(tree, events=("start", "end")):
        if event == "start":
            if element in quotes:
                inside.append(element)
            piece = element.text if isinstance(element.tag, str) else None  # a comment's text is not the page's
        else:
            if element in quotes:
                inside.pop()
            piece = element.tail
        if piece and piece.strip():
            pieces.append((" ".join(piece.split()) + " ", tuple(inside)))
    return pieces


def _repeats(pieces: list[tuple[str, tuple[HtmlElement, ...]]], quotes: list[HtmlElement],
             gone: set[HtmlElement]) -> list[HtmlElement]:
    """The quotes, but those `gone` and those in them, whose words stand earlier on the page without the `gone`."""
    page, spans, length = [" "], {}, 1
    for piece, inside in pieces:
        if any(quote in gone for quote in inside):
            continue
        for quote in inside:
            spans.setdefault(quote, [length, length])
        page.append(piece)
        length += len(piece)
        for quote in inside:
            spans[quote][1] = length
    text = "".join(page)
    found = []
    for quote in quotes:
        if quote in gone or quote not in spans:
            continue
        start, end = spans[quote]
        own = text[start:end].split()
        if len(own) < QUOTE_MIN_WORDS:
            continue
        # the words left without the longest header and footer the quote can have are in every shorter cut of it: one
        # search decides
        head = min(QUOTE_HEADER_WORDS, len(own) - QUOTE_MIN_WORDS)
        foot = min(QUOTE_FOOTER_WORDS, len(own) - QUOTE_MIN_WORDS - head)
        # no space after the last word: a quote shortened for display ends inside one
        if text.find(f" {' '.join(own[head:len(own) - foot])}", 0, start) >= 0:
            found.append(quote)
    return found


# Blocks only: an inline element (a link, a bold word) repeated in prose is part of a sentence.
_TEMPLATE_TAGS = frozenset({"div", "dl", "dt", "dd", "ul", "ol", "li", "section", "aside", "header", "footer",
                            "address", "nav", "menu", "small", "center", "font"})
# Nothing under these is furniture: a highlighter's lines (`div.line`) share their keywords, a table's column its
# values.
_VERBATIM = frozenset({"pre", "code", "table", "textarea", "math", "svg"})
TEMPLATE_CHARS = 200
TEMPLATE_SHARE = 0.3
SENTENCE_WORDS = 7
VALUE_WORDS = 3
LABEL_CHARS = 30
"""A block that repeats in a page's records is furniture when it holds two lines or more, at most `TEMPLATE_CHARS`
characters, no line of `SENTENCE_WORDS` words or more (a sentence is a post's), no line of more than `VALUE_WORDS` words
that is its own (a value is a name, a date, a place; more is the record's own text), and `TEMPLATE_SHARE` of its
characters or more are lines whose label (what a line says before a colon, or the whole line) blocks in the same place
of other records hold too."""


def _places(tree: HtmlElement) -> tuple[dict[HtmlElement, int], dict[HtmlElement, int]]:
    """Each element's place on the page (the tags and classes, digits left out, of it and its ancestors) as a
    number, and its text's length (its own text and its descendants', not its tail)."""
    places: dict[tuple[int, str, str], int] = {}
    place: dict[HtmlElement, int] = {}
    verbatim: set[HtmlElement] = set()
    elements = [e for e in tree.iter() if isinstance(e.tag, str)]
    for element in elements:
        parent = element.getparent()
        if parent is not None and (parent in verbatim or parent.tag in _VERBATIM):
            verbatim.add(element)
        key = (place.get(parent, -1), element.tag, _DIGITS.sub("", " ".join(element.get("class", "").split())))
        place[element] = places.setdefault(key, len(places))
    chars: dict[HtmlElement, int] = {}
    for element in reversed(elements):
        own = len(element.text.strip()) if element.text else 0
        for child in element:
            own += chars.get(child, 0) + (len(child.tail.strip()) if child.tail else 0)
        chars[element] = own
    for element in verbatim:
        place.pop(element)
    return place, chars


_LINE_BREAKS = frozenset({*_TEMPLATE_TAGS, "p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th", "table",
                          "article", "blockquote", "pre", "form", "fieldset", "figure", "figcaption", "hr"})


# a label: up to LABEL_CHARS before a colon and a space (not a URL's), or a full-width colon (`积分：120`)
_LABEL = re.compile(rf"[^:：]{{1,{LABEL_CHARS}}}(:(?=\s|$)|：)")
_ENDS_SENTENCE = re.compile(r"[.!?。！？؟।]\W*$")
# scripts written without spaces between words: two characters count as a word (Chinese words are one to three)
_UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


def _label(line: str) -> str:
    """What a line says before its colon (`Joined:` of `Joined: Mon Oct 08, 2007`), or the whole line."""
    found = _LABEL.match(line)
    return found.group() if found else line


def word_count(line: str) -> int:
    """Words of a line, two characters of a script written without spaces counting as one."""
    return line.count(" ") + 1 + len(_UNSPACED.findall(line)) // 2


def _lines(element: HtmlElement) -> list[str]:
    """The lines of text in `element` (not its tail), broken where blocks begin and end (inline elements, a link, an
    amount in a `span`, stay in their sentence), spaces collapsed."""
    from lxml.etree import iterwalk

    lines, line = [], []
    for event, inner in iterwalk(element, events=("start", "end")):
        if inner.tag in _LINE_BREAKS:
            lines.append(line)
            line = []
        if event == "start" and isinstance(inner.tag, str) and inner.text:
            line.append(inner.text)
        elif event == "end" and inner is not element and inner.tail:
            line.append(inner.tail)
    lines.append(line)
    return [text for text in (" ".join("".join(line).split()) for line in lines) if text]


Places = tuple[dict["HtmlElement", int], dict["HtmlElement", int]]  # `_places`: each element's place, its text's length


def drop_templated_blocks(tree: HtmlElement, places: Places | None = None) -> int:
    """Blocks that every record of a page repeats around its own text, dropped: a forum post's profile (`Join Date`,
    `Posts`, `Location`), its buttons (`Reply`, `Quote`), a listing's `Posted by ... | Comments`. The number dropped.

    Such a block is one of several in the same place of the page (the same tags and classes, digits left out, from the
    root), short, with `TEMPLATE_SHARE` of it or more in labels that the others hold too, and no line of it reads as
    the record's own text; and most blocks in its place are such. Only blocks (`div`, `dl`, `li`...), and none in code
    or a table, nor one holding them.

    trafilatura keeps them as lines of the post: a thread of ten posts had ten copies of `- Registriert seit:` and
    `- Beiträge:`, and FineWeb's and Gopher's duplicated lines dropped whole threads (`benchmarks/forums.py`). Their
    text gone, trafilatura's choice of a page's main text changes: on those threads it finds more of the posts than it
    loses (emptied instead of dropped, it lost more).
    """
    places = places or _places(tree)
    blocks = templated_blocks(tree, places)
    for block in blocks:
        for gone in block.iter():  # out of the places the rewrites after this one read
            places[0].pop(gone, None)
        block.drop_tree()
    return len(blocks)


def _furniture(lines: list[str], common: set[str]) -> bool:
    """Whether a block of these lines is furniture, `common` the labels most blocks in its place hold."""
    if len(lines) < 2:  # one line is a caption, a line of dialogue (`Alden: That time I was.`), a heading
        return False
    shared = [_label(line) in common for line in lines]
    if any(word_count(line) >= SENTENCE_WORDS or (word_count(line) > VALUE_WORDS and not common)
           for line, common in zip(lines, shared, strict=True)):
        return False
    labelled = sum(len(line) for line, common in zip(lines, shared, strict=True) if common)
    return labelled > 0 and labelled >= TEMPLATE_SHARE * sum(map(len, lines))


def templated_blocks(tree: HtmlElement, places: Places | None = None) -> list[HtmlElement]:
    """The blocks `drop_templated_blocks` drops, outermost only, in document order."""
    place, chars = places or _places(tree)
    slots: dict[int, list[HtmlElement]] = {}
    for element, where in place.items():
        if element.tag in _TEMPLATE_TAGS and 0 < chars[element] <= TEMPLATE_CHARS and next(
                element.iter(*_VERBATIM), None) is None:  # a table's wrapper holds a table
            slots.setdefault(where, []).append(element)
    furniture: set[HtmlElement] = set()
    for members in slots.values():
        if len(members) < 2:
            continue
        texts = [_lines(m) for m in members]
        # a label has words: `200 g` and `14,99 €` are values (a recipe's amounts, a shop's prices)
        held = Counter(label for lines in texts for label in {_label(line) for line in lines}
                       if sum(map(str.isalpha, label)) >= 2)
        # a label (`Posts:`, `Senior Member`) or a longer line most records hold (`Share on other sites`), no
        # sentence: two replies of six that say `Thanks, that fixed it!` or `I have the same problem` are text
        common = {label for label, n in held.items() if n >= 2 and not _ENDS_SENTENCE.search(label) and (
            label[-1] in ":：" or word_count(label) <= VALUE_WORDS or 2 * n > len(members))}
        found = [member for member, lines in zip(members, texts, strict=True) if _furniture(lines, common)]
        # furniture is what most records repeat: a post short enough to look like its own profile is still a post
        if 2 * len(found) > len(members):
            furniture.update(found)
    return [e for e in tree.iter() if e in furniture and not any(a in furniture for a in e.iterancestors())]


RECORD_CHARS = 100
"""Records (a thread's posts) are blocks in one place of the page (`_places`), two or more of them holding
`RECORD_CHARS` characters of text or more each."""
# where trafilatura looks first for a page's main text (its `BODY_XPATH`): the records' container is marked so
_MAIN_TEXT_MARK = ("itemprop", "articleBody")


def expose_records(tree: HtmlElement, places: Places | None = None) -> int:
    """The container of a page's records (`RECORD_CHARS`) marked as its main text, where trafilatura would take one
    record for it: 1 if marked, else 0.

    trafilatura takes the first element its expressions for a main text match (`BODY_XPATH`: an `article`, a
    `div.content`): on a thread whose posts are each an `article` (XenForo) or hold a `div.content` (phpBB), that is
    the first post, and the replies are lost (a Portuguese thread of four posts kept its question alone). Marked, the
    container of the posts is matched first: the records are the innermost ones holding trafilatura's choice. A page
    whose main text trafilatura finds outside any records (an article above its comments) is left as it is."""
    from trafilatura.xpaths import BODY_XPATH

    place, chars = places or _places(tree)  # a block dropped since counts in its ancestors' length: no matter
    slots: dict[int, list[HtmlElement]] = {}
    for element, where in place.items():
        if element.tag in _RECORD_TAGS and chars[element] >= RECORD_CHARS:
            slots.setdefault(where, []).append(element)
    slots = {where: members for where, members in slots.items() if len(members) >= 2}
    picked = next((found for expr in BODY_XPATH for found in expr(tree) if found is not None), None) if slots else None
    if picked is None:
        return 0
    inside = {picked, *picked.iterancestors()}
    holding = []
    for members in slots.values():
        mine = next((m for m in members if m in inside), None)
        if mine is not None:
            # records are built alike (a post's author, text and buttons); a page's header, body and footer are not
            template = _template(mine)
            alike = [m for m in members if m is mine or _similarity(template, _template(m)) >= RECORDS_ALIKE]
            if len(alike) >= 2:
                holding.append((mine, alike))
    if not holding:
        return 0
    _, records = max(holding, key=lambda held: sum(1 for _ in held[0].iterancestors()))  # the innermost
    container = _common_ancestor(records)
    if container is None or container.get(_MAIN_TEXT_MARK[0]) or _prose_elsewhere(tree, container) >= sum(
            chars[r] for r in records):
        return 0  # an article's paragraphs outside them: they are teasers beside it (a news page's "related")
    container.set(*_MAIN_TEXT_MARK)
    # trafilatura reads a comment section (`COMMENTS_XPATH`: `div#comments`) apart, before the main text: around the
    # records it is their container's, which came out twice (Invision's thread is in `div#comments`)
    from trafilatura.xpaths import COMMENTS_XPATH

    around = {container, *container.iterancestors()}
    for section in {found for expr in COMMENTS_XPATH for found in expr(tree) if found in around}:
        for name in ("id", "class"):
            section.attrib.pop(name, None)
    # a post's text set in a `div` with only line breaks and inline elements in it is a paragraph: trafilatura reads a
    # div of the main text as such only where the page has few <p>, and dropped the text before its first <br>
    for element in container.iter("div"):
        if _has_text(element.text) and all(child.tag in _INLINE for child in element):
            element.tag = "p"
    return 1


def _prose_elsewhere(tree: HtmlElement, container: HtmlElement) -> int:
    """The most characters of paragraphs (`p`) one element outside `container` holds as its children."""
    held: Counter[HtmlElement] = Counter()
    for paragraph in tree.iter("p"):
        parent = paragraph.getparent()
        if parent is not None and parent is not container:
            held[parent] += len(paragraph.text_content().strip())
    inside = set(container.iter())
    return max((n for parent, n in held.items() if parent not in inside), default=0)


_INLINE = frozenset({"a", "abbr", "b", "bdi", "bdo", "br", "cite", "code", "em", "font", "i", "img", "kbd", "mark",
                     "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var",
                     "wbr"})


def _has_text(text: str | None) -> bool:
    return bool(text and text.strip())


RECORDS_ALIKE = 0.6
"""Two records are alike when the Jaccard similarity of their `_template`s is this or more."""
TEMPLATE_DEPTH = 4


def _template(element: HtmlElement) -> frozenset[tuple[str, ...]]:
    """How a block is built: the paths (tags and classes, digits left out) from it to its elements, `TEMPLATE_DEPTH`
    deep at most."""
    paths: set[tuple[str, ...]] = set()
    level: list[tuple[HtmlElement, tuple[str, ...]]] = [(element, ())]
    for _ in range(TEMPLATE_DEPTH):
        level = [(child, (*path, f"{child.tag}.{_DIGITS.sub('', ' '.join(child.get('class', '').split()))}"))
                 for parent, path in level for child in parent if isinstance(child.tag, str)]
        paths.update(path for _, path in level)
    return frozenset(paths)


def _similarity(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


_RECORD_TAGS = frozenset({"div", "article", "section", "li", "tr", "td", "table"})


def _common_ancestor(elements: list[HtmlElement]) -> HtmlElement | None:
    """The innermost element holding all of `elements` that trafilatura can take for a main text (`_MARKABLE`: not
    XenForo 1's `ol#messageList`, whose mark it reads on no list), not one of them."""
    common = [elements[0], *elements[0].iterancestors()]
    for element in elements[1:]:
        mine = {element, *element.iterancestors()}
        common = [e for e in common if e in mine]
    return next((e for e in common if e not in elements and e.tag in _MARKABLE), None)


_MARKABLE = frozenset({"div", "section", "main", "article"})  # what `BODY_XPATH`'s marks are read on


# PTT's article body (`div#main-content.bbs-screen`, and its mirrors'): a BBS screen, its lines set by its style sheet
# (white-space: pre-wrap), its text holding their newlines
_SCREEN_CLASS = re.compile(r"(?:^|\s)bbs-screen(?:\s|$)")


def break_screen_lines(tree: HtmlElement) -> int:
    """The newlines of a BBS screen's own text (`_SCREEN_CLASS`) made line breaks (`<br>`): HTML reads them as
    spaces, and a Taiwanese thread came out as one line, which FineWeb's line-punctuation rule dropped whatever its
    lines ended with. The number of screens rewritten."""
    screens = [e for e in tree.iter() if isinstance(e.tag, str) and _SCREEN_CLASS.search(e.get("class") or "")]
    for screen in screens:
        for child in [None, *screen]:
            _break_lines(screen, child)
    return len(screens)


def _break_lines(parent: HtmlElement, after: HtmlElement | None) -> None:
    """`parent`'s text (`after` None) or `after`'s tail, its newlines made `<br>` elements."""
    text = parent.text if after is None else after.tail
    if not text or "\n" not in text.strip("\n"):
        return
    first, *rest = text.split("\n")
    if after is None:
        parent.text, at = first, 0
    else:
        after.tail, at = first, parent.index(after) + 1
    for offset, line in enumerate(rest):
        br = parent.makeelement("br", {})
        br.tail = line
        parent.insert(at + offset, br)


def rewrite(tree: HtmlElement) -> None:
    """Every rewrite above, in place: quotes are judged on the page's text with its layout tables and <pre> prose
    unwrapped, furniture once repeated quotes (which share their headers) are gone, and records once those are too."""
    break_screen_lines(tree)
    unwrap_layout_tables(tree)
    unwrap_prose_pre(tree)
    drop_repeated_quotes(tree)
    places = _places(tree)
    drop_templated_blocks(tree, places)
    expose_records(tree, places)
