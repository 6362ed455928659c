"""Language ID on raw HTML, before extraction: pages surely not in a kept language skip the extractor.

Extraction (trafilatura, ~25-40 ms a page) is the costliest stage of a web recipe, and a
one-language corpus drops most of the web at language ID, after paying for each page's extraction.
This stage reads each page's text with resiliparse (lexbor, C code: ~1-2 ms a page) and asks
fastText how likely its beginning is to be in a kept language, and where that is below `below`,
its longest lines (where a page's prose is, whatever language its navigation is in). A page where
both give every kept language less than `below` is dropped as `lang_not_kept`; a page with no text
here, an undecodable one, or one `extract` would refuse (too large, a tag with too many attributes)
passes on, and `extract` decides. It only saves work: `langid` after `extract` still decides on the
extracted text, so the threshold is far below any `min_score` there.

It first judges a window, the first `window_chars` characters of the page's `<body>`: parsing a
page costs in proportion to its size (137 kB on average here, scripts and styles included), and a
page in another language shows it in its first screens. A page the window drops is dropped (a
crowded tag further on is never parsed); one whose window holds more than `max_chars` characters of
text, the first of them in a kept language at `below` or more, is kept on that score, the rest
unparsed (the whole page's text begins alike: 160 of 168 such pages here; 2 of the others, German,
the whole page would have dropped: `langid` drops them after extraction instead). Where the window
settles neither (a third of the pages here: their first screens hold little text), a window 4 times
as large is judged the same way, then the whole page, as without windows, which adds 6 drops here,
none of them English.

On the 1,162 real pages of the test data (`benchmarks/peer_fineweb.py`), keep [en], the defaults:
871 pages skip trafilatura at ~1.3 ms a page (whole pages only: 867 at ~2.4 ms); 1 of the 261
pages whose trafilatura text fastText scores English at 0.65 or more is among them (a German site's
English article whose page text is mostly German).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, ClassVar, NamedTuple

import numpy as np
import pyarrow as pa
from pydantic import Field, field_validator, model_validator
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from curation.extract.html import NOT_HTML, decode_html, html_rows, too_many_attributes
from curation.stages.base import DocumentFilter, Processed, ReadsFile, with_text
from curation.stages.extract import ExtractParams
from curation.stages.langid import (
    SINITIC,
    bundled_outputs,
    check_keep,
    expand_keep,
    keep_codes,
    load_model,
    normalize_label,
)

_EXTRACT = ExtractParams()
WINDOW_GROWTH = 4  # the second window, where the first settles nothing, is this many times as large
# Han text that only kana or Hangul would make Japanese or Korean (`langid` tells them so after `extract`)
_OWN_LETTERS = {"ja": re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9d]"),
                "ko": re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")}


class Judged(NamedTuple):
    score: float  # probability of the likeliest kept language
    top: str  # fastText's top label
    text: str  # the text read
    # A kept language at `below` or more on the text's first `max_chars` characters, with more text after
    # them: the text of a page that begins with this HTML nearly always begins alike (the module docstring).
    settled: bool = False


def _body_start(html: str) -> int:
    """Where `<body` starts (0 when it is missing); `str.find`, as a case-insensitive regex search over a
    page's head costs as much as judging the window."""
    for tag in ("<body", "<BODY", "<Body"):
        if (at := html.find(tag)) >= 0:
            return at
    return 0


class HtmlLangIdParams(DocumentFilter.Params):
    keep: list[str] = Field(..., min_length=1, description="Languages that may be kept (as `langid`'s `keep`; a "
                            "script, as in `zh-Hant`, is `langid`'s to judge: here it keeps zh).")
    below: float = Field(
        0.1, gt=0, lt=1, description="Drop a page when fastText gives every kept language less than this on the "
        "beginning of its text and on its longest lines alike.")
    max_chars: int = Field(1000, gt=0, description="fastText reads this many characters of each (its cost grows "
                           "with the text; a page's language shows within a few lines).")
    window_chars: int | None = Field(
        16_000, gt=0, description="Judge this many characters from the page's `<body>` first: drop the page if "
        "they say so, keep it if their text runs past `max_chars` and begins in a kept language; else judge 4 "
        "times as many the same way, then the whole page. null: whole pages only.")
    model: Annotated[str | None, ReadsFile("model file")] = Field(
        None, description="fastText language-ID model file; default: the bundled lid.176.")
    max_html_bytes: int = Field(_EXTRACT.max_html_bytes, gt=0, description="Larger pages pass on unread "
                                "(`extract` drops them as `too_large`).")
    max_tag_attributes: int = Field(_EXTRACT.max_tag_attributes, gt=0, description="Pages with a tag holding more "
                                    "attributes pass on unparsed (`extract` drops them as `too_many_attributes`).")

    @field_validator("keep")
    @classmethod
    def _codes(cls, value: list[str]) -> list[str]:
        """Read as `langid`'s `keep`; a script (`zh-Hant`) is dropped: fastText tells languages apart, not
        scripts, so this stage passes both and `langid` after `extract` keeps the one asked for."""
        return list(dict.fromkeys(tag.partition("-")[0] for tag in keep_codes(value, "html_langid")))

    @model_validator(mode="after")
    def _keep_is_possible(self) -> HtmlLangIdParams:
        """With the bundled model the recipe is checked before any work starts; other models in `setup`."""
        if self.model is None:
            check_keep(self.keep, bundled_outputs(second_opinion=False), "lid.176.ftz")
        return self


class HtmlLangId(DocumentFilter):
    """Drop pages whose raw text is surely in no kept language, before `extract` pays for them.

    Drops: `lang_not_kept` (detail: fastText's top label and the best kept language's score).
    `keep_scores` adds `html_lang_score` (best kept language's probability; null where not judged).
    """

    name = "html_langid"
    Params = HtmlLangIdParams
    input_columns: ClassVar[tuple[str, ...]] = ("html", "meta", "text")
    output_columns: ClassVar[dict[str, pa.DataType]] = {"html_lang_score": pa.float32()}
    bypass_reason = NOT_HTML

    def setup(self) -> None:
        self._model, path = load_model(self.params.model, "html_langid")
        codes = {label: normalize_label(label)[0] for label in self._model.get_labels()}
        check_keep(self.params.keep, frozenset(codes.values()), str(path))
        kept = expand_keep(self.params.keep)
        self._kept_labels = frozenset(label for label, code in codes.items() if code in kept)
        # where Chinese is kept, its varieties and the Han text fastText calls Japanese or Korean are its candidates:
        # a short Mandarin page read as `ja` at 0.92 (zh 0.05) was dropped here, before `langid` could tell
        self._chinese_alike = {label: code for label, code in codes.items()
                               if "zh" in kept and (code in SINITIC or code in _OWN_LETTERS)}
        # Without word n-grams (lid.176 has none) fastText sees a text as a bag of words (and their character
        # n-grams): a short text's longest lines, the same words reordered, would get the same answer.
        self._order_blind = self._model.f.getArgs().wordNgrams <= 1

    def applies(self, batch: pa.Table) -> pa.ChunkedArray | None:
        return html_rows(batch)

    def _html(self, body: bytes, meta: str | None) -> str | None:
        """The page as text, or None when `extract` should judge it (too large, undecodable)."""
        if len(body) > self.params.max_html_bytes:
            return None
        declared = json.loads(meta).get("http_charset") if meta else None
        try:
            return decode_html(body, declared)[0]
        except (LookupError, UnicodeDecodeError):
            return None

    def _judge_text(self, text: str) -> Judged:
        """The judgement of one text's first `max_chars` characters."""
        text = text[: self.params.max_chars]
        labels, probs = self._model.predict(" ".join(text.split()), k=10)
        kept = [float(p) for label, p in zip(labels, probs, strict=True) if label in self._kept_labels]
        if self._chinese_alike:
            alike = {label for label, code in self._chinese_alike.items()
                     if code not in _OWN_LETTERS or not _OWN_LETTERS[code].search(text)}
            kept.append(sum(float(p) for label, p in zip(labels, probs, strict=True) if label in alike))
        return Judged(max(kept, default=0.0), normalize_label(labels[0])[0] if labels else "unknown", text)

    def _judge_html(self, html: str) -> Judged | None:
        """`_judge_text` of the text of some HTML: its beginning, and only when that scores below `below`, its
        longest lines (where a page's prose is, whatever its navigation says); None when it has no text or a
        tag `extract` would refuse unparsed (the parser is quadratic in a tag's attributes)."""
        if too_many_attributes(html, self.params.max_tag_attributes) is not None:
            return None
        text = extract_plain_text(HTMLTree.parse(html))
        if not text.strip():
            return None
        judged = self._judge_text(text)
        if judged.score >= self.params.below:
            return judged._replace(settled=len(text) > self.params.max_chars)
        if len(text) <= self.params.max_chars and self._order_blind:  # its lines reordered: the same answer
            return judged
        longest = "\n".join(sorted(text.splitlines(), key=len, reverse=True))
        return max(judged, self._judge_text(longest))

    def _judge_page(self, body: bytes, meta: str | None) -> Judged | None:
        """The first window's judgement that drops the page or whose beginning settles it, else the whole
        page's; None when left to `extract`."""
        html = self._html(body, meta)
        if html is None:
            return None
        if self.params.window_chars is not None:
            start = _body_start(html)
            for window in (self.params.window_chars, WINDOW_GROWTH * self.params.window_chars):
                if len(html) - start <= window:
                    break
                judged = self._judge_html(html[start : start + window])
                if judged is not None and (judged.score < self.params.below or judged.settled):
                    return judged
        return self._judge_html(html)

    def _judge_batch(self, batch: pa.Table) -> tuple[np.ndarray, list[tuple[str, str] | None]]:
        """Scores (NaN: not judged) and, per judged page, (fastText's top label, the text read)."""
        scores = np.full(batch.num_rows, np.nan, dtype=np.float32)
        read: list[tuple[str, str] | None] = [None] * batch.num_rows
        metas = batch.column("meta").to_pylist() if "meta" in batch.column_names else [None] * batch.num_rows
        for i, body in enumerate(batch.column("html").to_pylist()):
            judged = self._judge_page(body, metas[i])
            if judged is not None:
                scores[i], read[i] = judged.score, (judged.top, judged.text)
        return scores, read

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        return {"html_lang_score": self._judge_batch(batch)[0]}

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        drop = scores["html_lang_score"] < self.params.below  # NaN (not judged) compares False: the page goes on
        return ~drop, np.where(drop, "lang_not_kept", None)

    def process(self, batch: pa.Table) -> Processed:
        """`score` then `keep`, each drop with its detail; dropped pages keep the text they were judged by as
        `text`, so `rejects/` shows why."""
        scores, read = self._judge_batch(batch)
        mask, reasons = self.keep({"html_lang_score": scores})
        kept = "/".join(self.params.keep)
        details: list[str | None] = [None] * batch.num_rows
        texts = batch.column("text").to_pylist()
        for i in np.flatnonzero(~mask):
            top, texts[i] = read[i]
            details[i] = f"before extraction: {top} first, {kept} {scores[i]:.3f}"
        table = with_text(batch, pa.array(texts, pa.string()))
        return self.judged(table, {"html_lang_score": scores}, mask, reasons, details=pa.array(details, pa.string()))

    def added_columns(self, batch: pa.Table, scores: dict[str, np.ndarray]) -> dict[str, pa.Array]:
        """The score with `keep_scores`, null where a page was not judged."""
        if not self.params.keep_scores:
            return {}
        values = scores["html_lang_score"]
        return {"html_lang_score": pa.array(values, pa.float32(), mask=np.isnan(values))}
