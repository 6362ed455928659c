"""The `fast` extraction engine: trafilatura's main-content rules, run on resiliparse's DOM.

trafilatura spends its time in Python: XPath expressions whose `re:test` calls back into Python for
every attribute, copies of the tree, per-element handlers, and fallback extractors. resiliparse
parses with lexbor and matches CSS selectors in compiled code, ~10x faster, but its own
`main_content` heuristics are much less precise on article pages (token F1 0.84 against
trafilatura's 0.92 on trafilatura's evaluation set here: it keeps related-article lists, share
bars, bylines, headings of removed sections). This module keeps resiliparse's parser and text
writer and ports the rules that give trafilatura its precision, as CSS selectors plus a few length
measurements:

1. cleaning: the elements trafilatura deletes before extraction (`MANUALLY_CLEANED`: scripts,
   navigation, asides, footers, forms unless a form wraps most of the page, ...);
2. comments: the first comment section (`COMMENTS_XPATH`) with text in paragraphs, headings, lists
   or quotes is moved after the main text (unless it holds over half of the page: then it is a
   wrapper with a "comment" class), or every comment section is deleted when comments are off
   (`REMOVE_COMMENTS_XPATH`);
3. main container: the first match of trafilatura's five `BODY_XPATH` tiers (article-body classes,
   then `<article>`, then story/content/main classes) that still holds 250 characters after step 4
   (trafilatura's `MIN_EXTRACTED_SIZE`); else the whole body;
4. pruning: trafilatura's boilerplate class/id tokens (`OVERALL_DISCARD_XPATH`: share, related,
   author, meta, widget, ...; captions, teasers; `PRECISION_DISCARD_XPATH` for `favor: precision`),
   undone when it would leave under 1/7 of the text, as trafilatura does; then its link-density
   tests on divs, lists and paragraphs (two passes);
5. loose text: when the page's prose is in paragraphs (trafilatura: 750 characters of `<p>` text,
   250 for precision), text that sits in no paragraph, heading, list, quote, table, link or line
   break is dropped, as trafilatura only emits those elements; kept when it is over half of the
   container (the page then does not use paragraphs for prose);
6. text: resiliparse's `extract_plain_text` of what is left, then headings at the end of the text
   are dropped (trafilatura's `NOT_AT_THE_END`: a heading whose section was pruned);
7. fallbacks where a cheap criterion says the result is unreliable, standing in for trafilatura's
   readability/jusText comparison and recall escalation: a result under 3,000 characters and under
   20% of the page's text (trafilatura's escalation thresholds) is compared with the same rules
   applied to the whole body and replaced if that is 1.5x longer; a result under 250 characters
   with resiliparse's own `main_content` extraction, if longer.

The thresholds are trafilatura's except the halves of steps 2 and 5 and the use of step 7 in every
`favor` mode (trafilatura escalates in balanced mode only, but compares with readability/jusText
in all); F1 hardly moves with them (benchmarks/extraction_quality.py). Speed notes: a resiliparse NodeList is
read through `.values()` (indexing or iterating it re-runs the query per item: a page with 200 divs
took 0.3 s), and each node handed to Python costs ~2.5 us (a weak-reference cache), so the code
asks the DOM only for what a rule needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Literal

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree, Node

Favor = Literal["balanced", "precision", "recall"]

MIN_EXTRACTED_SIZE = 250  # trafilatura's MIN_EXTRACTED_SIZE (characters, whitespace collapsed)
LOOSE_TEXT_MAX_SHARE = 0.5  # step 5 is skipped when the loose text is more than this share of the container
ESCALATION_MAX_LENGTH, ESCALATION_PAGE_SHARE, ESCALATION_ACCEPT_RATIO = 3000, 0.2, 1.5  # trafilatura's


def _attrs(attr: str, op: str, tokens: Iterable[str], flags: str = "") -> list[str]:
    """`[attr op "token"]` for each token: CSS attribute selectors in place of XPath regexes."""
    return [f'[{attr}{op}"{t}"{flags}]' for t in tokens]


def _is(*parts: str | list[str]) -> str:
    flat = [p for part in parts for p in ([part] if isinstance(part, str) else part)]
    return ":is(" + ",".join(flat) + ")"


# --- step 1: trafilatura's MANUALLY_CLEANED tags; forms are handled apart, tables when they are off
# Deleted up front: the ones holding text or links that would skew the length and link-density
# measurements. The others hold little text: resiliparse skips them when it writes the text, which
# saves materialising ~40 Python nodes per page (~2.5 us each). Void elements (input, source, ...)
# hold no text, and resiliparse always skips button, label, option and textarea.
_CLEANED_TAGS = "script,style,noscript,template,aside,footer,nav,menu,figure,iframe,object,embed,applet,math,select"
_SKIPPED_TAGS = (
    "fencedframe", "audio", "canvas", "map", "picture", "svg", "video", "area", "blink", "datalist", "dialog",
    "frameset", "fieldset", "legend", "marquee", "menuitem", "noindex", "optgroup", "output", "progress", "rp", "rt",
    "rtc", "time",
)

# --- step 3: trafilatura's BODY_XPATH tiers, in order
_BLOCK = ":is(article,div,main,section)"
BODY_SELECTORS = (
    _BLOCK + _is(
        '[class="post"]', '[class="entry"]', '[itemprop="articleBody"]', '[id="articleContent"]',
        _attrs("id", "*=", ("entry-content", "article-content", "art-content", "article__content", "article-body",
                            "article__body", "articlebody", "articleBody", "body-text")),
        _attrs("class", "*=", ("post-text", "post_text", "post-body", "post-entry", "postentry", "post-content",
                               "post_content", "postcontent", "postContent", "post_inner_wrapper", "article-text",
                               "articletext", "articleText", "entry-content", "page-content", "text-content",
                               "article-content", "art-content", "article__content", "article-body",
                               "article__body", "articlebody", "articleBody", "ArticleContent", "body-text",
                               "article__container")),
    ),
    "article",
    _BLOCK + _is(
        '[role="article"]', '[id="article"]', '[id="story"]', '[class="postarea"]', '[class="art-postcontent"]',
        '[class="text"]', '[class="cell"]', '[class="story"]', '[id^="primary"]', '[id*="story-body"]',
        '[class*="fulltext" i]', '[class^="article "]',
        _attrs("class", "*=", ("post-bodycopy", "story-content", "storycontent", "theme-content", "blog-content",
                               "section-content", "single-content", "single-post", "main-column",
                               "wpb_text_column", "story-body", "field-body")),
    ),
    _BLOCK + _is(
        '[id="content"]', '[class="content"]',
        _attrs("id", "*=", ("content-main", "content-body", "contentBody")),
        _attrs("class", "*=", ("content-main", "content_main", "content-body", "content__body")),
        '[id*="main-content" i]', '[class*="main-content" i]', '[class*="page-content" i]',
    ),
    ":is(article,div,section):is([class^='main'],[id^='main'],[role^='main']), main",
)

# --- step 4: trafilatura's OVERALL_DISCARD_XPATH (both expressions), captions, teasers, precision
_BOTH = ("social", "viral", "newsletter", "syndication", "tags", "banner", "breadcrumb", "bread-crumb", "button",
         "author")  # id and class; "sidebar" too, which "bar" covers for classes
_DISCARD_BLOCKS = ":is(div,li,ul,ol,dl,p,section,span)"
# Tokens another one contains are left out ("navbar": "bar"; "message-container": "message"), and
# "Footer"/"footer" pairs are one case-insensitive test: fewer tests, the same matches (but "FOOTER").
DISCARD_SELECTOR = ",".join([
    _DISCARD_BLOCKS + _is(
        "[data-lp-replacement-content]", '[role*="nav" i]', '[data-component*="MostPopularStories"]',
        '[id*="cookie"]', ':not([id])[class*="cookie"]',  # the first of id/class only, as trafilatura
        _attrs("id", "^=", ("shar", "jp-", "dpsp-content", "ad-")),
        _attrs("class", "^=", ("shar", "nav", "post-nav", "ZendeskForm", "ad-")),
        _attrs("id", "*=", (*_BOTH, "sidebar", "bmdh", "menu", "related", "premium")),
        _attrs("id", "*=", ("footer", "share", "nav"), " i"),
        _attrs("class", "*=", (*_BOTH, "subnav", "avigation", "navbox", "menu", "bar", "-ad-", " ad-", "outbrain",
                               "taboola", "criteo", "paid-content", "paidcontent", "widget", "share-", "sociable",
                               "embed", "tag-list", "consent", "modal-content", "permission", "elated", "next-",
                               "-stories", "most-popular", "more-on", "meta", "rating", "attachment", "timestamp",
                               "user-info", "user-profile", "-icon", "article-infos", "slide", "viewport", "overlay",
                               "options", "expand", "obfuscated", "blurred", "mol-factbox", "yin", "zlylin",
                               "nfoline")),
        _attrs("class", "*=", ("footer", "byline", "dfpad"), " i"),
        '[class~="ad"]',  # trafilatura: " ad " inside the attribute
    ),
    '[id^="reply-"]', ':not([id])[class^="reply-"]', '[id*="hidden"]', ':not([id])[style*="hidden"]',
    '[style*="display:none"]', '[style*="display: none"]', '[id*="reader-comments"]', '[id*="akismet"]',
    '[class^="hide-"]', '[aria-hidden="true"]',
    *_attrs("class", "*=", ("comments-title", "nocomments", "-reply-", "message", "akismet", "suggest-links", "-hide-",
                            "hide-print", " hidden", " hide", "noprint", "notloaded")),
])
CAPTION_SELECTOR = _DISCARD_BLOCKS + ':is([id*="caption"],[class*="caption"])'
TEASER_SELECTOR = _DISCARD_BLOCKS + ':is([id*="teaser" i],[class*="teaser" i])'
PRECISION_SELECTOR = "header, " + _DISCARD_BLOCKS + _is(
    *(f'[{a}{op}"{v}"]' for a in ("id", "class")
      for op, v in (("^=", "bottom"), ("*=", " bottom"), ("$=", "bottom"), ("*=", "bottom "))),
    '[class~="link"]', '[id~="link"]', '[style*="border"]',
)

# --- step 2: trafilatura's COMMENTS_XPATH tiers, COMMENTS_DISCARD_XPATH, REMOVE_COMMENTS_XPATH
_LISTS = "ul,ol,dl"
COMMENTS_SELECTORS = (
    f":is(div,section,{_LISTS})" + _is(_attrs("id", "*=", ("comment-list", "commentlist")), _attrs(
        "class", "*=", ("comment-list", "commentlist", "comment-page", "comments-content", "post-comments"))),
    f":is(div,section,{_LISTS})" + _is('[id^="comments"]', '[id^="comment-"]', '[class^="comments"]',
                                       '[class^="comment-"]', '[class^="Comments"]', '[class*="article-comments"]'),
    f":is(div,section,{_LISTS})" + _is(_attrs("id", "^=", ("comol", "disqus_thread", "dsq-comments"))),
    ':is(div,section):is([id^="social"],[class*="comment"])',
)
_ANY_COMMENTS = (  # everything a COMMENTS_SELECTORS tier can match, matches this
    ":is(div,section,ul,ol,dl):is([id*=comment i],[class*=comment i],[id^=comol],[id^=disqus_thread],[id^=social])"
)
COMMENTS_DISCARD_SELECTOR = (
    ':is(div,section)[id^="respond"], cite, q, blockquote, [style*="display:none"], [id^="reply-"], '
    '[class^="reply-"], [id*="akismet"], '
    + ",".join(_attrs("class", "*=", ("comments-title", "nocomments", "-reply-", "message", "signin", "akismet")))
)
REMOVE_COMMENTS_SELECTOR = f":is(div,section,details,{_LISTS})" + _is(
    '[id^="comment"]:not([id^="commentary"])', '[id^="Comment"]:not([id^="Commentary"])',
    '[class^="comment"]:not([class^="commentary"])', '[class^="Comment"]:not([class^="Commentary"])',
    _attrs("id", "^=", ("comol", "disqus_thread", "dsq-comments")), '[class*="article-comments"]',
    '[class*="post-comments"]',
)

# --- step 5: elements trafilatura emits text from (after its tag conversion), and the loose rest
_EMITTED = "p,h1,h2,h3,h4,h5,h6,ul,ol,dl,li,dd,dt,blockquote,q,pre,code,table,a,br,del,s,strike,details,summary"
LOOSE_SELECTOR = (
    ":is(div,section,article,span,header,main,center,font,figcaption,address,small,strong,b,em,i,u,abbr,cite,"
    f"sup,sub,mark):not(:has({_EMITTED})):not(:is({_EMITTED}) *)"
)
HEADINGS = "h1,h2,h3,h4,h5,h6"
_COMMENT_TEXT = "p,h1,h2,h3,h4,h5,h6,li,dd,dt,blockquote,q,pre,code"

# --- step 4, link density: candidates with a link, and the links, in document order
_LINK_CANDIDATES = ":is(div,ul,ol,dl,p):has(a), a"
_KIND = {"div": "div", "ul": "list", "ol": "list", "dl": "list", "p": "p"}

_TITLE_SEPARATOR = re.compile(r"^(.+)?\s+[–•·—|⁄*⋆~‹«<›»>:-]\s+(.+)$")  # trafilatura's HTMLTITLE_REGEX
_TITLE_SELECTORS = (  # trafilatura's TITLE_XPATHS
    ":is(h1,h2):is([class*='post-title'],[class*='entry-title'],[class*='article-title'],[class*='post__title'],"
    "[class*='headline'],[id*='headline'],[itemprop*='headline'])",
    "[class='entry-title'],[class='post-title']",
    ":is(h1,h2,h3):is([class*='title'],[id*='title'])",
)


def _chars(node: Node) -> int:
    """Raw text length (cheap: one C call); used where trafilatura compares lengths of whole sections."""
    text = node.text
    return len(text) if text else 0


def _trimmed(text: str | None) -> int:
    """Length with whitespace runs collapsed, as trafilatura's `trim` (used by its link-density tests)."""
    return len(" ".join(text.split())) if text else 0


def _remove(root: Node, selector: str) -> None:
    for node in root.query_selector_all(selector).values():
        node.remove()


def _outermost(nodes: list[Node]) -> list[Node]:
    """Drop nodes inside an earlier one (query results come in document order)."""
    kept: list[Node] = []
    for node in nodes:
        if not (kept and kept[-1].contains(node)):
            kept.append(node)
    return kept


# --------------------------------------------------------------------------- title


def _title(tree: HTMLTree) -> str | None:
    """trafilatura's `extract_title`: a lone h1, title-like classes, the <title> part, first h1, first h2."""
    doc = tree.document
    if doc is None:
        return None
    h1s = doc.query_selector_all("h1").values()
    if len(h1s) == 1 and (title := " ".join((h1s[0].text or "").split())):
        return title
    for selector in _TITLE_SELECTORS:
        for node in doc.query_selector_all(selector).values():
            text = " ".join((node.text or "").split())
            if 2 < len(text) < 200:
                return text
    head_title = " ".join((tree.title or "").split())
    if match := _TITLE_SEPARATOR.match(head_title):
        for part in (match[1], match[2]):
            if part and "." not in part:
                return part
    if head_title and "." not in head_title:
        return head_title
    for node in h1s:
        if text := " ".join((node.text or "").split()):
            return text
    h2 = doc.query_selector("h2")
    return (" ".join((h2.text or "").split()) or None) if h2 is not None else (head_title or None)


# --------------------------------------------------------------------------- steps 1, 2


def _prepare(tree: HTMLTree, comments: bool, tables: bool) -> tuple[Node | None, Node | None]:
    """Clean the tree in place; its body and the detached comment section (if comments are kept)."""
    body = tree.body
    if body is None:
        return None, None
    _remove(body, _CLEANED_TAGS if tables else _CLEANED_TAGS + ",table")
    forms = body.query_selector_all("form").values()
    if forms:  # a form holding most of the page is a layout wrapper (ASP.NET), not a widget
        total = _chars(body)
        for form in forms:
            if not (total and _chars(form) > total / 2):
                form.remove()
    found = None
    if not comments:
        _remove(body, REMOVE_COMMENTS_SELECTOR)
    elif body.query_selector(_ANY_COMMENTS) is not None:  # one cheap pass spares four on most pages
        for selector in COMMENTS_SELECTORS:
            node = body.query_selector(selector)
            if node is None:
                continue
            if _chars(node) > _chars(body) / 2:
                break  # a "comment" class on a wrapper of most of the page: not the comment section
            _remove(node, COMMENTS_DISCARD_SELECTOR)
            # trafilatura keeps only paragraphs, headings, lists, quotes and line breaks of a comment
            # section, and takes the section only if some of them hold text
            _remove(node, LOOSE_SELECTOR)
            if any(e.text and e.text.strip() for e in node.query_selector_all(_COMMENT_TEXT).values()):
                node.remove()
                found = node
                break
    return body, found


# --------------------------------------------------------------------------- step 4


def _prune(root: Node, favor: Favor, teasers: bool = True) -> None:
    """Delete boilerplate sections by their class, id, role or style (trafilatura's discard XPaths)."""
    matches = _outermost(root.query_selector_all(DISCARD_SELECTOR).values())
    if matches:  # trafilatura's guard: prune nothing if it would leave less than 1/7 of the text
        before = _chars(root)
        if before - sum(_chars(m) for m in matches) > before / 7:
            for node in matches:
                node.remove()
    _remove(root, f"{CAPTION_SELECTOR},{TEASER_SELECTOR}" if favor != "recall" and teasers else CAPTION_SELECTOR)
    if favor == "precision":
        _remove(root, PRECISION_SELECTOR)


def _link_dense(kind: str, lengths: list[int], text: int, node: Node, listing: Callable[[], bool],
                precision: bool) -> bool:
    """trafilatura's `link_density_test` (+ the backtracking of divs in `delete_by_link_density`).

    `lengths`: the trimmed text length of each link in the element. The DOM is only asked (next
    sibling, child count, the links' parents) where a rule needs it, as each node it returns costs.
    """
    if len(lengths) == 1 and lengths[0] > (10 if precision else 100) and lengths[0] > text * 0.9:
        return True
    nonempty = [n for n in lengths if n]
    short_limit, last_limit = (30, 60) if kind == "p" else (100, 300)
    if text < short_limit or (text < last_limit and node.next_element_sibling is None):
        if not nonempty:
            return True
        link_chars, short = sum(nonempty), sum(n < 10 for n in nonempty)
        if link_chars > text * 0.8 or (len(nonempty) > 1 and short / len(nonempty) > 0.8):
            return True
        # short and with links: a div of several children is a link box
        return (kind == "div" and text < (200 if precision else 100)
                and node.child_element_count >= (1 if precision else 3))
    if len(lengths) > 4:  # a farm of links, unless each link is alone in its paragraph (a listing)
        link_chars = sum(nonempty)
        return link_chars > text * 0.9 and link_chars < 100 * len(nonempty) and not listing()
    return False


def _prune_links(root: Node, favor: Favor, passes: int = 2) -> None:
    """trafilatura's link-density deletion of divs, lists and paragraphs, two passes.

    One query collects the candidates and links in document order; a stack gives each link its
    innermost candidate. Each pass judges all candidates on the tree as the previous pass left it
    (lengths of deleted descendants subtracted), like trafilatura's repeated passes, but without
    re-querying the tree.
    """
    precision = favor == "precision"
    nodes: list[Node] = []  # candidates
    parents: list[int] = []
    children: list[list[int]] = []
    own: list[list[int]] = []  # indexes of the links directly in a candidate
    anchors: list[Node] = []
    anchor_chars: list[int] = []
    stack: list[int] = []
    for item in root.query_selector_all(_LINK_CANDIDATES).values():
        while stack and not nodes[stack[-1]].contains(item):
            stack.pop()
        if item.tag == "a":
            if stack:
                own[stack[-1]].append(len(anchors))
                anchors.append(item)
                anchor_chars.append(_trimmed(item.text))
            continue
        if stack:
            children[stack[-1]].append(len(nodes))
        parents.append(stack[-1] if stack else -1)
        stack.append(len(nodes))
        nodes.append(item)
        children.append([])
        own.append([])
    n = len(nodes)
    if not n:
        return
    index = {node: i for i, node in enumerate(nodes)}
    full = [_trimmed(node.text) for node in nodes]
    dead = [False] * n
    for _ in range(passes):
        links: list[list[int]] = [[] for _ in range(n)]
        gone = [0] * n
        for i in range(n - 1, -1, -1):  # reverse document order: descendants first
            links[i] = list(own[i])
            for child in children[i]:
                if dead[child]:
                    gone[i] += full[child]
                else:
                    links[i] += links[child]
                    gone[i] += gone[child]

        def listing(i: int, links: list[list[int]] = links) -> bool:
            """Each link of candidate i is alone in its parent paragraph."""
            for a in links[i]:
                parent = anchors[a].parent_element
                j = index.get(parent) if parent is not None and parent.tag == "p" else None
                if j is None or len(links[j]) != 1:
                    return False
            return True

        doomed = []
        for i in range(n):
            if dead[i] or not links[i]:
                continue
            node, kind = nodes[i], _KIND[nodes[i].tag]
            text = max(full[i] - gone[i], 0)
            if _link_dense(kind, [anchor_chars[a] for a in links[i]], text, node, lambda i=i: listing(i), precision):
                parent = node.parent_element if kind == "p" else None
                if parent is not None and parent.tag in ("li", "td", "th"):
                    continue  # a paragraph holding a list item's or cell's content: judged with its list
                doomed.append(i)
        if not doomed:
            break
        for i in doomed:
            dead[i] = True
    for i in range(n):
        if dead[i]:
            up = parents[i]
            while up >= 0 and not dead[up]:
                up = parents[up]
            if up < 0:  # not inside another deleted candidate
                nodes[i].remove()


# --------------------------------------------------------------------------- steps 5, 6


def _drop_loose_text(root: Node, page: Node, favor: Favor) -> None:
    paragraphs = sum(_chars(p) for p in page.query_selector_all("p").values())
    if paragraphs < (MIN_EXTRACTED_SIZE if favor == "precision" else 3 * MIN_EXTRACTED_SIZE):
        return
    loose = root.query_selector_all(LOOSE_SELECTOR).values()
    if loose and sum(_chars(n) for n in _outermost(loose)) <= _chars(root) * LOOSE_TEXT_MAX_SHARE:
        for node in loose:
            node.remove()


_BULLET = re.compile(r"^\s*• ")


def _lines(text: str) -> list[str]:
    """resiliparse's text as trafilatura writes it: one line per block (no blank line between
    blocks), list items as "- "."""
    return [_BULLET.sub("- ", line.rstrip()) for line in text.split("\n") if line.strip()]


def _text(tree: HTMLTree, root: Node) -> str:
    """The text, without headings at its end (trafilatura's `NOT_AT_THE_END`: a heading whose
    section was pruned)."""
    lines = _lines(extract_plain_text(tree, main_content=False, skip_elements=_SKIPPED_TAGS))
    headings = {" ".join(h.text.split()) for h in root.query_selector_all(HEADINGS).values() if h.text}
    while lines and " ".join(lines[-1].split()) in headings:
        lines.pop()
    return "\n".join(lines)


def _whole_page(tree: HTMLTree, body: Node, found: Node | None, favor: Favor) -> str:
    """The same rules on the whole body, for pages where no container holds the article."""
    _prune(body, favor, teasers=False)  # trafilatura keeps teasers on its recovery path
    _prune_links(body, favor)
    _drop_loose_text(body, body, favor)
    if found is not None:
        body.append(found)
    return _text(tree, body)


# --------------------------------------------------------------------------- entry point


def fast_extract(
    html: str,
    url: str | None = None,
    *,
    favor: Favor = "balanced",
    include_comments: bool = True,
    include_tables: bool = True,
) -> tuple[str | None, str | None]:
    """(main text, title) of a page; text None when nothing is left.

    `favor`, `include_comments` and `include_tables` mean what they mean for trafilatura. `url` is
    accepted for symmetry with trafilatura's call and unused (no links are kept, no metadata).
    """
    del url
    tree = HTMLTree.parse(html)
    title = _title(tree)  # before cleaning, as trafilatura reads it from the raw tree
    body, found = _prepare(tree, include_comments, include_tables)
    if body is None:
        return None, title
    page_text = body.text or ""  # measured (whitespace collapsed, as trafilatura does) only if needed
    container = None
    for selector in BODY_SELECTORS:
        node = body.query_selector(selector)
        if node is None:
            continue
        _prune(node, favor)
        _prune_links(node, favor)
        if _trimmed(node.text) >= MIN_EXTRACTED_SIZE:
            container = node
            break
    if container is None:
        # the candidates tried were pruned in place, by the same rules: go on with the body
        text = _whole_page(tree, body, found, favor)
    else:
        _drop_loose_text(container, body, favor)
        top, parent, after = body.child_nodes.values(), container.parent_node, container.next_sibling
        body.replace_children(container)
        if found is not None:
            body.append(found)
        text = _text(tree, body)
        if (len(text) < ESCALATION_MAX_LENGTH and len(text) < ESCALATION_PAGE_SHARE * len(page_text)
                and len(text) < ESCALATION_PAGE_SHARE * _trimmed(page_text)):
            # a short text from a large page: the container may be a fragment. Put the page back
            # together (no second parse) and try the whole body, as trafilatura's escalation does
            body.replace_children(*top)
            if after is not None:
                parent.insert_before(container, after)
            else:
                parent.append(container)
            alternative = _whole_page(tree, body, found, favor)
            if len(alternative) > ESCALATION_ACCEPT_RATIO * len(text):
                text = alternative
    if len(text) < MIN_EXTRACTED_SIZE:  # in all modes, as trafilatura's readability/jusText comparison
        alternative = "\n".join(_lines(extract_plain_text(HTMLTree.parse(html), main_content=True,
                                                           comments=include_comments)))
        if len(alternative) > len(text):
            text = alternative
    return (text if text.strip() else None), title
