"""Documents in several languages, judged part by part: each language's paragraphs by that language's rules.

A page alternating Chinese and English paragraphs, labelled by its whole text, was judged entirely by one
language's words and thresholds (half of such documents dropped as `too_few_alpha_words`, English's rule
read over Chinese words). Where the langid stage labels paragraphs (`per_paragraph: true`, the `lang_paragraphs`
column), a document whose paragraphs hold two or more languages, each at least a fifth of its paragraphs' words
(`curation.lang.mixed.span_sizes`: each language's words, not its characters, of which Chinese needs a fourth of
English's), is mixed: a filter whose thresholds follow the language (`LanguageFilter`) judges each language's
paragraphs, joined in their order, as a part with that language's `lang`, and the document is kept when its kept
parts hold at least `KEPT_SHARE_MIN` of its paragraphs' words; a dropped one carries the reason of its largest
dropped part. Rules of a document's size (too few words or sentences) and of its shape (the share of its lines
that are bullets) are about the document, not its parts: the statistics they read (a filter's `size_scores`) are
summed over its parts, its shape ratios (`document_ratios`) are those sums' ratios, and every part is judged with
its document's values: a Chinese article's list of English paper titles is a part all bullets, not a page of them.
Its scores (with `keep_scores`) are its largest part's, its tallies the sum of its parts'. Its text is left as it
was: a filter that rewrites documents (C4's line removal) does not rewrite a mixed one, so its paragraph offsets
stay true for the stages after it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.lang.mixed import PARAGRAPHS, language_parts, paragraph_languages
from curation.stages.base import DocumentFilter, Processed
from curation.text.columns import as_array

LANG = "lang"
KEPT_SHARE_MIN = 0.5


@dataclass
class Parts:
    """A batch with every mixed document replaced by its language parts."""

    table: pa.Table
    doc: np.ndarray  # int64 per row: its document in the batch
    sizes: np.ndarray  # int64 per row: its paragraphs' words, a part's vote (`curation.lang.mixed.span_sizes`)
    mixed: np.ndarray  # bool per document


def split_parts(batch: pa.Table, *, every: bool = False) -> Parts | None:
    """The batch split into language parts, or None where no document of it is mixed (`every`: holds two labelled
    languages, however little of one: `curation.lang.mixed.language_parts`)."""
    if PARAGRAPHS not in batch.column_names or LANG not in batch.column_names:
        return None
    candidates = _several_labels(batch.column(PARAGRAPHS))
    if not candidates.any():
        return None
    spans_of = batch.column(PARAGRAPHS).to_pylist()
    texts = batch.column("text").to_pylist()
    rows: list[int] = []
    part_text: list[str | None] = []
    part_lang: list[str | None] = []
    sizes: list[int] = []
    mixed = np.zeros(batch.num_rows, bool)
    for doc, (spans, text) in enumerate(zip(spans_of, texts, strict=True)):
        by_language = language_parts(text, spans, every=every) if candidates[doc] and text is not None else {}
        if not by_language:
            rows.append(doc)
            part_text.append(None)
            part_lang.append(None)
            sizes.append(len(text or ""))  # a document alone: its own part, whatever its size
            continue
        mixed[doc] = True
        words = paragraph_languages(spans, text)
        for lang, part in by_language.items():
            rows.append(doc)
            part_text.append(part)
            part_lang.append(lang)
            sizes.append(words.get(lang, 0))
    if not mixed.any():
        return None
    doc_index = np.array(rows, np.int64)
    table = batch.take(pa.array(doc_index))
    is_part = pa.array([t is not None for t in part_text])
    for name, values in (("text", part_text), (LANG, part_lang)):
        column = table.column(name)
        replaced = pc.if_else(is_part, pa.array(values, column.type), column)
        table = table.set_column(table.schema.get_field_index(name), name, replaced)
    # a part is in one language, and its document's paragraph offsets are not offsets into it (`fold` puts them back)
    spans = table.column(PARAGRAPHS)
    table = table.set_column(table.schema.get_field_index(PARAGRAPHS), PARAGRAPHS,
                             pc.if_else(is_part, pa.nulls(len(spans), spans.type), spans))
    return Parts(table, doc_index, np.array(sizes, np.int64), mixed)


def judged_in_parts(stage: DocumentFilter, batch: pa.Table, ratios: dict[str, tuple[str, str]],
                    totals: tuple[str, ...], *, every: bool = False) -> Processed | None:
    """`batch` judged by `stage`, its mixed documents (`split_parts`) part by part (None where none is mixed): the
    `ratios` (`document_ratios`) and `totals` (`document_totals`) of each part are its document's, then each part is
    kept or dropped and the parts are folded back into their documents (`fold`)."""
    parts = split_parts(batch, every=every)
    if parts is None:
        return None
    scores, text = stage.scores_and_text(parts.table)
    document_ratios(scores, parts, ratios)
    document_totals(scores, parts, totals)
    return fold(batch, parts, stage.judged(parts.table, scores, *stage.keep(scores), text=text))


def labelled_languages(batch: pa.Table) -> list[list[str]]:
    """The languages of each document's labelled paragraphs, the largest first, where they are two or more
    ([] for the others, and without paragraph labels)."""
    if PARAGRAPHS not in batch.column_names:
        return [[] for _ in range(batch.num_rows)]
    candidates = _several_labels(batch.column(PARAGRAPHS))
    spans_of = batch.column(PARAGRAPHS).to_pylist() if candidates.any() else []
    texts = as_array(batch.column("text"))
    return [list(paragraph_languages(spans_of[i], texts[i].as_py())) if candidates[i] else []
            for i in range(batch.num_rows)]


def _several_labels(paragraphs: pa.ChunkedArray) -> np.ndarray:
    """Documents whose paragraphs carry two labels or more (bool per document), counted columnar: only those
    can be mixed, and only those are read row by row."""
    column = paragraphs.combine_chunks()
    n = len(column)
    labels = pa.table({"doc": pc.list_parent_indices(column), "lang": pc.list_flatten(column).field("lang")})
    distinct = labels.group_by("doc").aggregate([("lang", "count_distinct")])
    several = np.zeros(n, bool)
    docs = distinct.column("doc").to_numpy(zero_copy_only=False)
    several[docs[distinct.column("lang_count_distinct").to_numpy(zero_copy_only=False) > 1]] = True
    return several


def document_totals(scores: dict[str, np.ndarray], parts: Parts, names: tuple[str, ...]) -> None:
    """Each of the `names` scores of every part replaced by its document's total (in place)."""
    for name in names:
        if name not in scores:  # a total of another of the filter's ways to score
            continue
        values = np.asarray(scores[name])
        scores[name] = _sum_by(values, parts.doc, len(parts.mixed))[parts.doc].astype(values.dtype)


def document_ratios(scores: dict[str, np.ndarray], parts: Parts, ratios: dict[str, tuple[str, str]]) -> None:
    """Each ratio of `ratios` (name -> its numerator and denominator scores) of every part replaced by its
    document's: the sum of its parts' numerators over the sum of their denominators (in place)."""
    n = len(parts.mixed)
    for name, (numerator, denominator) in ratios.items():
        if numerator not in scores:  # a ratio of another of the filter's ways to score (toxicity: lists or models)
            continue
        top = _sum_by(np.asarray(scores[numerator], np.float64), parts.doc, n)
        bottom = _sum_by(np.asarray(scores[denominator], np.float64), parts.doc, n)
        whole = np.full(n, np.nan)
        np.divide(top, bottom, out=whole, where=bottom != 0)
        scores[name] = whole[parts.doc]


def fold(batch: pa.Table, parts: Parts, judged: Processed) -> Processed:
    """`judged` (the parts, judged) folded back into one row per document of `batch` (module doc)."""
    n = batch.num_rows
    reasons = np.array(judged.reasons.to_pylist(), dtype=object)
    kept = np.bincount(parts.doc, weights=np.where(reasons == None, parts.sizes, 0), minlength=n)  # noqa: E711
    total = np.bincount(parts.doc, weights=parts.sizes, minlength=n)
    # each document's representative row: its only row, or its largest part (its largest dropped part if dropped)
    order = np.lexsort((-parts.sizes, parts.doc))
    first = order[np.unique(parts.doc[order], return_index=True)[1]]
    dropped = np.flatnonzero(reasons != None)  # noqa: E711
    largest_dropped = np.full(n, -1, np.int64)
    if len(dropped):
        by_size = dropped[np.lexsort((-parts.sizes[dropped], parts.doc[dropped]))]
        docs, at = np.unique(parts.doc[by_size], return_index=True)
        largest_dropped[docs] = by_size[at]
    keeps = np.where(parts.mixed, kept >= KEPT_SHARE_MIN * np.maximum(total, 1), reasons[first] == None)  # noqa: E711
    chosen = np.where(keeps | (largest_dropped < 0), first, largest_dropped)
    table = judged.table.take(pa.array(chosen))
    for name in ("text", LANG, PARAGRAPHS):  # a mixed document keeps its own text, label and paragraphs
        index = table.schema.get_field_index(name)
        table = table.set_column(index, name, pc.if_else(pa.array(parts.mixed), batch.column(name).combine_chunks()
                                                         .cast(table.schema.field(name).type), table.column(name)))
    out_reasons = pa.array(np.where(keeps, None, reasons[chosen]), pa.string())
    details = judged.details.take(pa.array(chosen)) if judged.details is not None else None
    counts = {key: _sum_by(values, parts.doc, n) for key, values in (judged.counts or {}).items()} or None
    # a document's scores: its representative part's (its ratios and totals are already the whole document's)
    scores = {key: values[chosen] if isinstance(values, np.ndarray) and values.ndim == 1 and len(values) == len(reasons)
              else values for key, values in (judged.scores or {}).items()} or None
    return Processed(table, out_reasons, details, counts, scores)


def _sum_by(values: np.ndarray, doc: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, np.asarray(values).dtype)
    np.add.at(out, doc, values)
    return out
