"""The `extract` stage: main-content text of web pages, one time-limited call of an engine per page
(the engines and page helpers: `curation.extract`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import pyarrow as pa
from pydantic import Field, model_validator

from curation import schema
from curation.extract.fast import fast_extract
from curation.extract.html import (
    DEEP_CHECK_TAGS,
    NOT_HTML,
    TooManyAttributes,
    decode_html,
    html_rows,
    nesting_depth,
    opened_raw_text_tags,
    too_many_attributes,
)
from curation.extract.timeout import TimeLimitExceeded, can_interrupt, time_limit
from curation.extract.trafilatura import paragraph_memory, trafilatura_extract
from curation.stages.base import Processed, Resources, Stage, StageParams, with_text

if TYPE_CHECKING:
    from trafilatura.deduplication import LRUCache

FAST_MAX_DEPTH = 1_000
"""Nesting beyond which the fast engine hands a page to trafilatura (real pages: at most 229; `nesting_depth`)."""


class ExtractParams(StageParams):
    engine: Literal["trafilatura", "fast"] = Field(
        "trafilatura", description="`trafilatura`: trafilatura itself. `fast`: trafilatura's main-content rules "
        "run on resiliparse's parser and CSS selectors (curation.extract.fast): ~6x less CPU per page, "
        "extraction F1 within 0.01 of trafilatura's on its evaluation set and on mozilla/readability's test "
        "pages (benchmarks/extraction_quality.py), but no readability/jusText fallbacks, so unusual layouts fare "
        "worse; `favor`, `include_comments` and `include_tables` apply, `fast` and `deduplicate` do not.")
    timeout_s: float | None = Field(
        2.0, gt=0, description="Per-page limit in seconds of CPU time (not wall-clock: a loaded machine drops no more "
        "pages); a page over it is dropped as `timeout`."
    )
    max_html_bytes: int = Field(
        5_000_000, gt=0, description="Pages larger than this are dropped as `too_large` without parsing."
    )
    max_tag_attributes: int = Field(
        1000, gt=0, description="Pages with a tag holding more attributes are dropped as `too_many_attributes` "
        "before parsing: HTML parsers compare each attribute with all before it, in C code `timeout_s` cannot "
        "interrupt, so 100,000 of them take minutes and a million take hours.")
    favor: Literal["balanced", "precision", "recall"] = Field(
        "balanced", description="trafilatura's trade-off: favor_precision, favor_recall, or neither (its default)."
    )
    fast: bool = Field(False, description="Skip trafilatura's fallback extractors (faster, lower recall).")
    include_comments: bool = Field(True, description="Keep the comment section (trafilatura's default).")
    include_tables: bool = Field(True, description="Keep text inside tables (trafilatura's default).")
    markdown: bool = Field(
        False, description="Write the text as Markdown (trafilatura's): headings, list items and tables marked, code "
        "blocks fenced with their indentation kept; bold and italic marks, Markdown's escapes and inline HTML tags "
        "left out of the prose (`api_key`, not `api\\_key`). Then the quality rules "
        "(`prose_only`) know a page's code, tables and headings for what they are, where plain text leaves code as "
        "lines of prose; and the text a model reads keeps its code blocks. trafilatura only (`engine: trafilatura`).")
    deduplicate: bool = Field(False, description="trafilatura's `deduplicate`: drop text already seen more than "
                              "a few times in earlier pages of the same input shard (datatrove's extractor sets it).")


    @model_validator(mode="after")
    def _markdown_needs_trafilatura(self) -> ExtractParams:
        if self.markdown and self.engine != "trafilatura":
            msg = "markdown: true needs engine: trafilatura (the fast engine writes plain text only)"
            raise ValueError(msg)
        return self


class Extract(Stage):
    """Turn the `html` of web pages into `text` and `title`; rows without html (JSONL, WET) pass unchanged.

    Drops: `no_text` (nothing extractable), `timeout`, `too_large`, `too_many_attributes` (a tag that
    would stall the parser), `extract_error` (with the error).
    """

    name = "extract"
    Params = ExtractParams
    resources = Resources(cpus=1.0)
    input_columns: ClassVar[tuple[str, ...]] = ("html", "url", "meta")
    output_columns: ClassVar[dict[str, pa.DataType]] = {"text": pa.string(), "title": pa.string()}
    bypass_reason = NOT_HTML

    def __init__(self, params: StageParams | None = None, /, **keys: Any) -> None:
        super().__init__(params, **keys)
        self._seen: LRUCache | None = None  # the current shard's paragraphs, with `deduplicate`
        self._seen_shard: str | None = None

    def setup(self) -> None:
        if self.params.timeout_s and not can_interrupt():
            msg = "extract: timeout_s needs to run in a process's main thread (Ray tasks and actors do)"
            raise RuntimeError(msg)
        if self.params.engine == "trafilatura":
            import trafilatura  # noqa: F401  (here, not in a page's time limit: its import takes ~0.3 s)

    def applies(self, batch: pa.Table) -> pa.ChunkedArray | None:
        return html_rows(batch)

    def extract_one(self, body: bytes, url: str | None, declared: str | None) -> tuple[str | None, str | None]:
        """(text, title) of one page; raises TimeLimitExceeded past `timeout_s`, TooManyAttributes."""
        html, _ = decode_html(body, declared)
        p = self.params
        scanned = too_many_attributes(html, p.max_tag_attributes)
        if scanned is not None:
            msg = f"a tag at character {scanned} has over {p.max_tag_attributes} attributes"
            raise TooManyAttributes(msg)
        # after the attribute check: resiliparse's parser is quadratic in them too; a page nested too deep for its
        # selectors goes to trafilatura (lxml stops at depth 255), which the time limit interrupts
        if p.engine == "fast" and (html.count("<") <= DEEP_CHECK_TAGS or nesting_depth(html) <= FAST_MAX_DEPTH):
            return fast_extract(html, url, favor=p.favor, include_comments=p.include_comments,
                                include_tables=p.include_tables)
        return trafilatura_extract(opened_raw_text_tags(html), url, fast=p.fast, favor=p.favor,
                                   include_comments=p.include_comments, include_tables=p.include_tables,
                                   markdown=p.markdown, seen=self._seen_paragraphs(None) if p.deduplicate else None)

    def _seen_paragraphs(self, shard: str | None) -> LRUCache:
        """trafilatura's `deduplicate` memory, one per input shard: with its process-wide default a page's
        text would depend on which pages the same worker happened to extract before it (the order Ray
        runs tasks in), and a rerun could keep different text. None: the current shard's."""
        if self._seen is None or (shard is not None and shard != self._seen_shard):
            self._seen, self._seen_shard = paragraph_memory(), shard
        return self._seen

    def process(self, batch: pa.Table) -> Processed:
        htmls = batch.column("html").to_pylist()
        urls = batch.column("url").to_pylist()
        metas = batch.column("meta").to_pylist()
        texts = batch.column("text").to_pylist()
        titles = batch.column("title").to_pylist()
        reasons: list[str | None] = [None] * batch.num_rows
        details: list[str | None] = [None] * batch.num_rows
        shards = batch.column(schema.SHARD).to_pylist() if schema.SHARD in batch.column_names else None
        for i, body in enumerate(htmls):
            if shards is not None and self.params.deduplicate:
                self._seen_paragraphs(shards[i])
            if len(body) > self.params.max_html_bytes:
                reasons[i], details[i] = "too_large", f"{len(body)} bytes"
                continue
            declared = json.loads(metas[i]).get("http_charset") if metas[i] else None
            try:
                if self.params.timeout_s:
                    with time_limit(self.params.timeout_s):
                        text, title = self.extract_one(body, urls[i], declared)
                else:
                    text, title = self.extract_one(body, urls[i], declared)
            except TimeLimitExceeded as exc:
                reasons[i], details[i] = "timeout", str(exc)
                continue
            except TooManyAttributes as exc:
                reasons[i], details[i] = "too_many_attributes", str(exc)
                continue
            except Exception as exc:  # a page that breaks the parser is a reject, not a crash
                reasons[i], details[i] = "extract_error", f"{type(exc).__name__}: {exc}"[:300]
                continue
            if not text or not text.strip():
                reasons[i] = "no_text"
                continue
            texts[i], titles[i] = text, titles[i] or title
        table = batch.drop_columns(["html"])
        table = with_text(table, pa.array(texts, pa.string()))
        table = table.set_column(table.schema.get_field_index("title"), "title", pa.array(titles, pa.string()))
        return Processed(table, pa.array(reasons, pa.string()), pa.array(details, pa.string()))
