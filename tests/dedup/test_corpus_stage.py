"""The corpus-stage contract: every recipe corpus stage keeps it, and names a runner that exists. No Ray."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from curation.dedup.bloom_dedup import BloomDedup
from curation.dedup.corpus_stage import REMOVALS, REWRITES, CorpusResult, CorpusStage
from curation.stages.registry import CORPUS_STAGES
from pipelines.dedup import runner

BOILER = "Subscribe to our newsletter for more stories like this one."


def documents() -> pa.Table:
    """Exact copies, near copies and shared lines, from two sources."""
    body = " ".join(f"word{i}" for i in range(60))
    texts = [f"{body}\n{BOILER}", f"{body}\n{BOILER}", f"{body.replace('word30', 'other')}\n{BOILER}",
             f"Something else entirely, {body[:80]}\n{BOILER}", "unrelated short text", "unrelated short text"]
    return pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts,
                     "source": ["web", "web", "web", "web", "notes", "notes"]})


@pytest.mark.parametrize("kind", sorted(CORPUS_STAGES))
def test_every_corpus_stage_gives_one_result_type_and_names_a_runner(kind):
    stage = CORPUS_STAGES[kind]()
    assert isinstance(stage, CorpusStage) and stage.name == kind
    assert callable(runner(stage.runner).removals)
    docs = documents()
    result = stage.result(docs.select(sorted({*stage.columns(), "source"})))
    assert isinstance(result, CorpusResult) and result.seen == docs.num_rows
    assert result.removals.schema == REMOVALS and result.rewrites.schema == REWRITES
    assert result.removals.num_rows > 0 and result.removals.column("id").to_pylist() == sorted(
        result.removals.column("id").to_pylist())
    assert stage.reference(docs).equals(result.removals)
    assert set(result.rewrites.column("id").to_pylist()).isdisjoint(result.removals.column("id").to_pylist())
    assert stage.may_rewrite or result.rewrites.num_rows == 0


def test_a_stage_sees_its_sources_less_what_earlier_stages_removed():
    stage = CORPUS_STAGES["exact_dedup"](only=["web"])
    seen = stage.sees(documents(), pa.array(["d1"]))
    assert seen.column("id").to_pylist() == ["d0", "d2", "d3"]
    assert stage.result(seen).removals.num_rows == 0  # d1, the copy of d0, was removed earlier


def test_bloom_result_is_its_steps_one_shard_after_another():
    stage = BloomDedup(shards=3)
    docs = documents()
    result = stage.result(docs)
    units = stage.units(docs)
    repeated = [stage.repeated(units.filter(pc.equal(units.column("shard"), s)), s)
                for s in range(stage.params.shards)]
    removals, rewrites = stage.outcome(docs, pa.concat_tables([r for r, _ in repeated]))
    assert result.removals.equals(removals.sort_by("id")) and result.rewrites.equals(rewrites.sort_by("id"))
    assert result.rewrites.num_rows > 0  # the shared line leaves the documents that keep the rest
    bloom = result.report["bloom"]
    assert bloom["shards"] == 3 and bloom["units_repeated"] == sum(r.num_rows for r, _ in repeated)
    assert bloom["units"] == sum(stats["added"] + stats["seen"] for _, stats in repeated)
