"""Bloom-filter deduplication of documents or paragraphs (dolma's recipe), deterministic.

Units (whole documents, or lines: dolma's paragraphs) are hashed and routed by hash prefix to a
fixed number of Bloom-filter shards. Each shard sees its units in (document id, line) order, so
"seen before" means "an earlier unit in id order has the same hash": the same answer for any
number of workers and any order of input shards. The shard count is a recipe key, never the
cluster size, because each shard's false positives depend on what it holds. On a cluster
`pipelines.dedup.bloom` runs each shard in a task of its own; `result` runs them one after another.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.dedup.bloom import BloomShard, paragraph_outcome, shard_of, split_paragraphs
from curation.dedup.corpus_stage import REMOVALS, REWRITES, CorpusResult, CorpusStage
from curation.dedup.exact import content_hash
from curation.stages.base import StageParams

UNITS = pa.schema([("id", pa.string()), ("index", pa.int32()), ("key", pa.binary(16)), ("shard", pa.int32())])


class BloomDedupParams(StageParams):
    level: Literal["document", "paragraph"] = Field(
        "paragraph", description="document: drop later copies of a text; paragraph: remove lines seen before "
        "and drop documents that lose more than `max_removed_share` (dolma).")
    capacity: int = Field(100_000_000, gt=0, description="Distinct units expected in the whole corpus; split "
                          "evenly over the shards (each filter still grows past it, at a lower speed).")
    error_rate: float = Field(0.001, gt=0, lt=0.5, description="False-positive rate each filter is sized for "
                              "(a false positive removes a new unit); the realised rate is in stats.json.")
    shards: int = Field(16, ge=1, description="Bloom-filter shards; part of the result (fix it per corpus).")
    max_removed_share: float = Field(0.5, ge=0, le=1, description="paragraph: drop a document whose removed "
                                     "lines exceed this share of its characters (dolma's paragraph dedup: 0.5).")
    min_paragraph_chars: int = Field(1, ge=1, description="paragraph: shorter lines are never deduplicated.")


class BloomDedup(CorpusStage):
    """Remove repeated documents or lines: reasons `duplicate` (document) or `duplicate_paragraphs`.

    Kept documents of the paragraph level lose their repeated lines (the final documents hold the
    rewritten text). stats.json gets the units seen and removed and each filter's memory and
    realised false-positive rate (measured with random probes).
    """

    name = "bloom_dedup"
    Params = BloomDedupParams
    runner = "bloom"
    always_shuffled = True  # its filters hold the whole corpus: on a cluster a task per filter shard holds one
    may_rewrite = True

    def units(self, documents: pa.Table) -> pa.Table:
        """One row per unit: document id, line index, 128-bit key and the shard it goes to."""
        ids, text = documents.column("id").combine_chunks(), documents.column("text")
        if self.params.level == "document":
            keys = content_hash(text, lowercase=False, collapse_whitespace=False)
            index = pa.array(np.zeros(len(ids), np.int32))
        else:
            lines = split_paragraphs(text, min_chars=self.params.min_paragraph_chars)
            first = np.searchsorted(lines.doc, lines.doc, side="left")
            counted = pc.is_valid(lines.key)
            ids = ids.take(pa.array(lines.doc)).filter(counted)
            index = pa.array((np.arange(len(lines.doc)) - first).astype(np.int32)).filter(counted)
            keys = lines.key.filter(counted)
        shard = pa.array(shard_of(keys, self.params.shards), pa.int32())
        return pa.table([ids, index, keys, shard], schema=UNITS)

    def repeated(self, units: pa.Table, shard: int) -> tuple[pa.Table, dict[str, Any]]:
        """Units of one shard seen before (in id, line order), and the filter's statistics."""
        units = units.sort_by([("id", "ascending"), ("index", "ascending")])
        bloom = BloomShard(max(self.params.capacity // self.params.shards, 1000), self.params.error_rate)
        new = bloom.add_if_new(units.column("key").combine_chunks())
        stats = {"shard": shard, **bloom.stats(probes=20_000)}
        return units.filter(pa.array(~new)).select(["id", "index"]), stats

    def outcome(self, documents: pa.Table, repeated: pa.Table) -> tuple[pa.Table, pa.Table]:
        """(removals, rewrites: id and new text) for documents with repeated units."""
        ids = documents.column("id").combine_chunks()
        if self.params.level == "document":
            gone = pc.is_in(ids, repeated.column("id")).to_numpy(zero_copy_only=False)
            removed = ids.filter(pa.array(gone))
            return _removals(removed, "duplicate", "an earlier document has the same text"), _rewrites([], [])
        lines = split_paragraphs(documents.column("text"), min_chars=self.params.min_paragraph_chars)
        first = np.searchsorted(lines.doc, lines.doc, side="left")
        tag = pc.binary_join_element_wise(ids.take(pa.array(lines.doc)),
                                          pa.array((np.arange(len(lines.doc)) - first).astype(str)), ":")
        seen = pc.binary_join_element_wise(repeated.column("id"), pc.cast(repeated.column("index"), pa.string()), ":")
        new = ~pc.is_in(tag, seen).to_numpy(zero_copy_only=False)
        texts, drop, share = paragraph_outcome(len(ids), lines, new, max_removed_share=self.params.max_removed_share)
        changed = (share > 0) & ~drop
        removals = _removals(ids.filter(pa.array(drop)), "duplicate_paragraphs",
                             [f"{s:.0%} of the text was seen before" for s in share[drop]])
        # a paragraph removed leaves the blank lines around it: no run of them where it stood, none at the ends
        rewritten = pc.utf8_trim(pc.replace_substring_regex(texts.filter(pa.array(changed)), r"\n{3,}", "\n\n"), "\n")
        return removals, _rewrites(ids.filter(pa.array(changed)), rewritten)

    def report(self, shard_stats: list[dict[str, Any]], repeated: int) -> dict[str, Any]:
        """stats.json's `bloom` counters from each shard's `repeated` statistics and the units repeated."""
        return {
            "units": sum(s["added"] + s["seen"] for s in shard_stats),
            "units_repeated": repeated,
            "filter_memory_bytes": sum(s["memory_bytes"] for s in shard_stats),
            "error_rate_asked": self.params.error_rate,
            "false_positive_rate_measured": max((s["measured_false_positive_rate"] for s in shard_stats), default=0.0),
            "shards": len(shard_stats),
        }

    def result(self, documents: pa.Table, signatures: np.ndarray | None = None) -> CorpusResult:
        """Every shard's filter in turn over `documents`, then the outcome of the documents with repeated units."""
        units = self.units(documents)
        shard = units.column("shard")
        found = [self.repeated(units.filter(pc.equal(shard, s)).drop_columns(["shard"]), s)
                 for s in pc.unique(shard).to_pylist()]
        repeated = pa.concat_tables([UNITS.empty_table().select(["id", "index"]), *(r for r, _ in found)])
        report = {"bloom": self.report([stats for _, stats in found], repeated.num_rows)}
        if repeated.num_rows == 0:
            return CorpusResult(REMOVALS.empty_table(), documents.num_rows, REWRITES.empty_table(), report)
        removals, rewrites = self.outcome(documents.filter(pc.is_in(documents.column("id"), repeated.column("id"))),
                                          repeated)
        return CorpusResult(removals.sort_by("id"), documents.num_rows, rewrites.sort_by("id"), report)


def _removals(ids: pa.Array, reason: str, detail: str | list[str]) -> pa.Table:
    details = detail if isinstance(detail, list) else [detail] * len(ids)
    return pa.table([ids, pa.array([reason] * len(ids), pa.string()), pa.array(details, pa.string())],
                    schema=REMOVALS)


def _rewrites(ids: Any, texts: Any) -> pa.Table:
    return pa.table([pa.array(ids, pa.string()), pa.array(texts, pa.string())], schema=REWRITES)
