"""Documents in several languages, as the langid stage's paragraph labels (`lang_paragraphs`) tell them: which
languages a document's paragraphs are in, and whether it is mixed (`curation.stages.parts` judges such a document
part by part; `curation.tokens.fertility` counts its tokens by part)."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.lang.words import LANGUAGE_WORDS
from curation.text.columns import LINE_BREAK_RE2, combined, list_offsets, segment_sum

PARAGRAPHS = "lang_paragraphs"
MIXED_SHARE_MIN = 0.2
_SAME_START = 20  # characters a rewritten line and its original begin with alike (C4 drops citations at the end)
_LINE_BREAK = re.compile(LINE_BREAK_RE2.replace(r"\x{85}", "\x85").replace(r"\x{2028}", "\u2028")
                         .replace(r"\x{2029}", "\u2029"))  # where `pc.split_pattern_regex(..., LINE_BREAK_RE2)` splits
"""Least share of a document's labelled paragraphs (`span_sizes`) each of its languages holds for it to be mixed."""


def span_sizes(spans: list[dict[str, Any]] | None, text: str | None = None) -> list[int]:
    """How much each labelled paragraph says: its words, each segmented by its language, where the document's `text`
    is given and its paragraphs are in two languages or more; else its characters. Characters made a Chinese page
    quoting one English paragraph an English page: in the UDHR a Chinese character says what 3.9 English ones do,
    while the two languages' words differ by a fifth (0.83 Chinese words per English word)."""
    spans = spans or []
    chars = [max(0, int(s["end"]) - int(s["start"])) for s in spans]
    if text is None or len({s.get("lang") for s in spans}) < 2 or not all(int(s["end"]) <= len(text) for s in spans):
        return chars
    words = LANGUAGE_WORDS.split([text[int(s["start"]):int(s["end"])] for s in spans], [s.get("lang") for s in spans])
    return segment_sum((1 - words.feature("symbol")).astype(np.int64), words.offsets).tolist()


def paragraph_languages(spans: list[dict[str, Any]] | None, text: str | None = None) -> dict[str, int]:
    """How much of a document's labelled paragraphs each language holds (`span_sizes`: words with `text`, else
    characters), most first (`unknown` left out)."""
    sizes: dict[str, int] = {}
    for span, size in zip(spans or (), span_sizes(spans, text), strict=True):
        lang = span.get("lang")
        if lang and lang != "unknown":
            sizes[lang] = sizes.get(lang, 0) + size
    return dict(sorted(sizes.items(), key=lambda item: -item[1]))


def mixed_languages(spans: list[dict[str, Any]] | None, text: str | None = None) -> list[str]:
    """The languages of a mixed document, the largest first (`paragraph_languages`); [] for one in one language."""
    sizes = paragraph_languages(spans, text)
    total = sum(sizes.values())
    if not total:
        return []
    major = [lang for lang, n in sizes.items() if n >= MIXED_SHARE_MIN * total]
    return major if len(major) > 1 else []


def language_parts(text: str, spans: list[dict[str, Any]] | None, *, every: bool = False) -> dict[str, str]:
    """A mixed document's paragraphs joined by language, in their order ({} for a document in one language, or
    whose offsets do not fit its text); `every`: any document's whose paragraphs carry two labels or more, each
    language however little of it there is."""
    if not spans or not all(0 <= int(s["start"]) <= int(s["end"]) <= len(text) for s in spans):
        return {}
    languages = mixed_languages(spans, text) if not every else list(paragraph_languages(spans, text))
    if len(languages) < 2:
        return {}
    return {lang: "\n".join(text[s["start"]:s["end"]] for s in spans if s.get("lang") == lang) for lang in languages}


def carried(spans: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    """`spans` (the labelled paragraphs of `old`) moved onto `new`, the same document rewritten by a later stage,
    so that their offsets stay offsets into the text that is kept.

    A rewrite within lines (PII redacted, Traditional Chinese made Simplified) keeps the document's lines: line i's
    label goes to its line i. One that removes lines (C4's) may also rewrite those it keeps (C4 strips them, a list
    item's indent with it, and drops their citation marks): each line of `new` takes the label of the next line of
    `old` that, stripped, it equals, else that it begins as (`_SAME_START` characters); a line matching none has
    no label. Left without labels, the rewritten lines of a page's main language made its few lines in another
    look like a fifth of it: a "mixed" page, judged by parts.
    """
    old_lines, new_lines = old.split("\n"), new.split("\n")
    starts = np.cumsum([0] + [len(line) + 1 for line in old_lines[:-1]])
    label_of = {int(np.searchsorted(starts, span["start"], side="right")) - 1: span for span in spans}
    new_starts = np.cumsum([0] + [len(line) + 1 for line in new_lines[:-1]]).tolist()
    if len(old_lines) == len(new_lines):
        pairs = [(i, i) for i in range(len(new_lines))]
    else:
        pairs, at = [], 0
        whole: dict[str, list[int]] = {}  # an old line, stripped -> where it is (ascending)
        start: dict[str, list[int]] = {}  # its first _SAME_START characters -> where
        for j, line in enumerate(line.strip() for line in old_lines):
            whole.setdefault(line, []).append(j)
            if len(line) >= _SAME_START:
                start.setdefault(line[:_SAME_START], []).append(j)
        for i, line in enumerate(line.strip() for line in new_lines):
            same = _next(whole.get(line), at)
            if same is None and len(line) >= _SAME_START:
                same = _next(start.get(line[:_SAME_START]), at)
            if same is not None:
                pairs.append((i, same))
                at = same + 1
    return [{**label_of[j], "start": new_starts[i], "end": new_starts[i] + len(new_lines[i])}
            for i, j in pairs if j in label_of and new_lines[i].strip()]


def _next(where: list[int] | None, at: int) -> int | None:
    """The first of the ascending positions `where` at or after `at`."""
    if not where:
        return None
    k = bisect_left(where, at)
    return where[k] if k < len(where) else None


def line_languages(batch: pa.Table, lines: pa.ListArray) -> pa.Array | None:
    """Each line's language (`lines`: each document's text split at `LINE_BREAK_RE2`): its paragraph's label where
    the langid stage labelled it another language than its document's, else its document's `lang`; None without
    paragraph labels. A Chinese sentence in an English lesson was one English "word", and a line C4 removed. Only
    documents holding such a paragraph are read in Python."""
    if PARAGRAPHS not in batch.column_names or "lang" not in batch.column_names:
        return None
    langs = combined(batch.column("lang")).cast(pa.string())
    line_doc = pa.array(np.repeat(np.arange(len(langs)), np.diff(list_offsets(lines))), pa.int64())
    spans = combined(batch.column(PARAGRAPHS))
    owner = pc.list_parent_indices(spans)
    other = pc.not_equal(pc.struct_field(pc.list_flatten(spans), "lang"), langs.take(owner)).fill_null(False)
    docs = np.unique(owner.filter(other).to_numpy(zero_copy_only=False))
    labels = langs.take(line_doc)
    if not len(docs):
        return labels
    out = labels.to_pylist()
    texts = combined(batch.column("text"))
    firsts = list_offsets(lines)
    for doc in docs.tolist():
        text, doc_spans = texts[doc].as_py() or "", spans[doc].as_py() or []
        span_starts = [int(s["start"]) for s in doc_spans]
        line_starts = [0, *(m.end() for m in _LINE_BREAK.finditer(text))]
        for k, start in enumerate(line_starts[: firsts[doc + 1] - firsts[doc]]):
            at = bisect_right(span_starts, start) - 1  # the paragraph this line begins in, if any
            if at >= 0 and start < int(doc_spans[at]["end"]) and doc_spans[at].get("lang"):
                out[firsts[doc] + k] = doc_spans[at]["lang"]
    return pa.array(out, pa.string())


def language_groups(langs: pa.Array | pa.ChunkedArray, spans: pa.Array | pa.ChunkedArray | None,
                    texts: pa.Array | pa.ChunkedArray | None = None) -> pa.Array:
    """Per document, its language, or a mixed one's languages joined in code order (`ar+en`): which documents
    deduplication `by_language` compares. A page of Arabic and English paragraphs is `ar` or `en` by which holds
    more, and its copy with two paragraphs more of the other was the other: two near-duplicates never compared.
    Only documents whose paragraphs hold two labels are looked at in Python."""
    groups = combined(langs).cast(pa.string()).to_pylist()
    if spans is None:
        return pa.array(groups, pa.string())
    spans = combined(spans)
    codes = pc.dictionary_encode(pc.struct_field(pc.list_flatten(spans), "lang")).indices.to_numpy(
        zero_copy_only=False)
    owner = pc.list_parent_indices(spans).to_numpy(zero_copy_only=False)
    first = np.full(len(spans), -1, np.int64)
    first[owner[::-1]] = codes[::-1]  # each document's first label (written last, reversed)
    several = np.unique(owner[codes != first[owner]])
    texts = combined(texts) if texts is not None else None
    for doc, doc_spans in zip(several.tolist(), spans.take(pa.array(several, pa.int64())).to_pylist(), strict=True):
        if mixed := mixed_languages(doc_spans, None if texts is None else texts[doc].as_py()):
            groups[doc] = "+".join(sorted(mixed))
    return pa.array(groups, pa.string())
