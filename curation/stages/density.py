"""The information-density filter: how much a document's text compresses.

The other heuristic quality filters live in their own modules: `gopher` (GopherQuality, GopherRepetition),
`c4` (C4), `fineweb` (FineWeb); word counts in characters and words are the `length` stage's.
"""

from __future__ import annotations

import zlib
from typing import ClassVar

import numpy as np
import pyarrow as pa
from pydantic import Field, model_validator

from curation.stages.base import DocumentFilter, Resources, first_reason, ratio
from curation.text.columns import as_array


class Density(DocumentFilter):
    """Information density: zlib-compressed size over raw UTF-8 size.

    Drops `too_compressible` (ratio under `min_compression_ratio`: boilerplate, repeated lines,
    keyword lists) and `too_incompressible` (over `max_compression_ratio`: random strings, base64,
    hashes, binary junk). Documents under `min_bytes` are not judged: deflate's fixed overhead
    makes short texts look incompressible whatever they say.

    No standard bound is published for this heuristic; the defaults come from the project's shared
    test pages (1,161 real pages, many languages, extracted with `extract`; zlib level 6; pages over
    500 bytes): median 0.47, 1st percentile 0.23, 99th 0.65, maximum 0.70. The 7 pages under 0.2
    all repeat lines or lorem-ipsum blocks (`gopher_repetition` drops them too), so the defaults
    catch only pathological documents. Word counts are the `length` stage's and mean word length
    `gopher_quality`'s, so this stage does not repeat them.
    """

    name = "density"
    explained: ClassVar[dict[str, str | tuple[str, ...]]] = {
        "too_compressible": ("compression_ratio", "min_compression_ratio")}
    resources = Resources(cpus=0.5)
    output_columns: ClassVar[dict[str, pa.DataType]] = {"compression_ratio": pa.float64()}

    class Params(DocumentFilter.Params):
        min_compression_ratio: float | None = Field(
            0.2, ge=0, le=1, description="Lowest compressed/raw size ratio (zlib); under it the text is mostly "
            "repetition. Default from the shared test pages (1st percentile 0.23).")
        max_compression_ratio: float | None = Field(
            0.75, gt=0, description="Highest compressed/raw size ratio (zlib); over it the text is close to "
            "random. Default from the shared test pages (maximum 0.70 over 500 bytes).")
        min_bytes: int = Field(500, ge=1, description="Documents with fewer UTF-8 bytes are kept unjudged.")
        level: int = Field(6, ge=1, le=9, description="zlib compression level (6: zlib's default).")

        @model_validator(mode="after")
        def _ordered(self) -> Density.Params:
            lo, hi = self.min_compression_ratio, self.max_compression_ratio
            if lo is not None and hi is not None and lo >= hi:
                msg = f"min_compression_ratio ({lo}) must be below max_compression_ratio ({hi})"
                raise ValueError(msg)
            return self

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        level = self.params.level
        raw = [t.encode() for t in as_array(batch.column("text")).to_pylist()]
        sizes = np.fromiter((len(b) for b in raw), np.int64, count=len(raw))
        packed = np.fromiter((len(zlib.compress(b, level)) if b else 0 for b in raw), np.int64, count=len(raw))
        return {"compression_ratio": ratio(packed, sizes), "_bytes": sizes}

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        judged = scores["_bytes"] >= p.min_bytes
        value = scores["compression_ratio"]
        rules = []
        if p.min_compression_ratio is not None:
            rules.append((judged & (value < p.min_compression_ratio), "too_compressible"))
        if p.max_compression_ratio is not None:
            rules.append((judged & (value > p.max_compression_ratio), "too_incompressible"))
        return first_reason(len(value), rules)
