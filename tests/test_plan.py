"""A shard's task: page stages on small batches of raw pages, text stages on joined batches."""

from __future__ import annotations

import pyarrow as pa

from curation import apply, schema
from curation.recipe import parse_recipe
from curation.shards import list_shards
from curation.stages import Extract
from pipelines import plan
from tests.conftest import SAMPLE
from tests.support.stages import BatchSizes


def _shard_output(tag: str, page_batch_bytes: int, monkeypatch) -> tuple[pa.Table, list[int], list[int]]:
    monkeypatch.setattr(apply, "PAGE_BATCH_BYTES", page_batch_bytes)
    warc = SAMPLE / "crawl-00001.warc.gz"
    recipe = parse_recipe(f"name: pages\nsources: [{{name: web, format: warc, paths: ['{warc}']}}]\n"
                          "stages: [extract: {}]\n")
    (shard,) = list_shards(recipe)
    stages = [("pages", BatchSizes(tag=f"{tag}-pages")), ("extract", Extract()),
              ("texts", BatchSizes(tag=f"{tag}-texts"))]
    batches = list(plan.shard_batches((shard, recipe.sources[0]), 4, stages, 1.0))
    return pa.concat_tables(batches), BatchSizes.seen[f"{tag}-pages"], BatchSizes.seen[f"{tag}-texts"]


def test_page_stages_take_small_batches_and_text_stages_joined_ones(monkeypatch):
    small, pages, texts = _shard_output("small", 1, monkeypatch)
    assert set(pages) == {1} and len(pages) == small.num_rows  # a page at a time (and the end-of-shard marker)
    assert texts == [4] * (small.num_rows // 4) + [small.num_rows % 4] * (small.num_rows % 4 > 0)  # joined
    assert small.column(schema.REASON)[-1].as_py() == schema.END_OF_SHARD and "html" not in small.column_names
    whole, pages, _ = _shard_output("whole", 32 << 20, monkeypatch)
    assert pages[0] == 4  # without the bound, batches of `batch_rows`
    columns = ["id", "text", schema.STAGE, schema.REASON]
    assert small.select(columns).equals(whole.select(columns))  # the same rows, in the same order
