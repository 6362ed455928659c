"""`benchmarks/ablate_zh_en.py` proves the chains as shipped: its ablation files validate against the shipped
recipes, `shipped` is the recipe's own chain, `extraction-only` filters nothing, `shipped-datatrove-lines` judges
every line on each of the chain's stages that can set layout aside, `fineweb2` is FineWeb-2's pipeline. No Ray,
no training: the files only."""

from __future__ import annotations

import argparse

import pytest
import yaml

from benchmarks import ablate_zh_en as bench
from curation.ablate.spec import load_ablation
from curation.ablate.variants import variant_recipe
from curation.stages.registry import ALL_STAGES

from ..conftest import SAMPLE


@pytest.fixture(params=["zh-en", "en"])
def ablation(request, tmp_path):
    pages = {"zh": [str(SAMPLE / "crawl-00000.warc.gz")], "other": [str(SAMPLE / "crawl-00001.warc.gz")]}
    sets = {}
    for name in ("en", "zh"):
        sets[name] = tmp_path / f"{name}.jsonl"
        sets[name].write_text('{"text": "held out"}\n')
    args = argparse.Namespace(tokens=4096, seeds=3)
    path = bench.ablation_file(tmp_path, request.param, pages, sets, args)
    shipped = yaml.safe_load(bench.RECIPES[request.param].read_text(encoding="utf-8"))
    return load_ablation(path), shipped  # every variant applied to the base and checked


def stages_of(ablation, variant: str) -> list[dict]:
    recipe = variant_recipe(ablation.base_recipe(), ablation.all_variants()[variant])
    return [e.model_dump(mode="json") for e in recipe.stages]


def params(kind: str, settings: dict) -> dict:
    return ALL_STAGES[kind].Params.model_validate(settings).model_dump(mode="json")


def test_shipped_is_the_recipes_own_chain(ablation):
    spec, shipped = ablation
    assert spec.baseline == bench.BASELINE
    stages = stages_of(spec, bench.SHIPPED)
    assert [next(iter(s)) for s in stages] == [next(iter(s)) for s in shipped["stages"]]
    for mine, theirs in zip(stages, shipped["stages"], strict=True):
        kind = next(iter(theirs))
        expected = {**theirs[kind], **bench.EXTRACT["extract"]} if kind == "extract" else theirs[kind]
        assert params(kind, mine[kind]) == params(kind, expected)


def test_extraction_only_filters_nothing(ablation):
    spec, _ = ablation
    assert [next(iter(s)) for s in stages_of(spec, bench.BASELINE)] == ["extract"]


def test_datatrove_lines_turns_off_every_layout_rule_of_the_chain(ablation):
    spec, shipped = ablation
    with_layout = [next(iter(s)) for s in shipped["stages"]
                   if "prose_only" in ALL_STAGES[next(iter(s))].Params.model_fields]
    assert with_layout  # the shipped chains judge prose: the variant has something to turn off
    for entry in stages_of(spec, "shipped-datatrove-lines"):
        kind = next(iter(entry))
        assert entry[kind].get("prose_only", True) is (kind not in with_layout)


def test_fineweb2_is_fineweb2s_pipeline(ablation):
    spec, shipped = ablation
    stages = {next(iter(s)): next(iter(s.values())) for s in stages_of(spec, "fineweb2")}
    assert "c4" not in stages and "exact_dedup" not in stages and "toxicity" not in stages
    assert stages["fineweb"]["max_short_line_ratio"] is None and stages["fineweb"]["max_char_dup_ratio"] == 0.1
    assert all(stages[k]["prose_only"] is False for k in ("gopher_repetition", "gopher_quality", "fineweb"))
    assert stages["langid"]["min_score"] == "auto" and stages["langid"]["per_paragraph"] is False
    keep = next(s["langid"]["keep"] for s in shipped["stages"] if "langid" in s)
    assert stages["langid"]["keep"] == keep and stages["minhash_dedup"]["by_language"] is True


def test_plain_text_differs_from_the_shipped_chain_by_its_extraction_only(ablation):
    spec, _ = ablation
    base, plain = stages_of(spec, bench.SHIPPED), stages_of(spec, "shipped-plain-text")
    assert [next(iter(s)) for s in plain] == [next(iter(s)) for s in base]
    for ours, theirs in zip(plain, base, strict=True):
        kind = next(iter(ours))
        assert ours[kind] == ({**theirs[kind], "markdown": False} if kind == "extract" else theirs[kind])
    assert next(s["extract"]["markdown"] for s in base if "extract" in s)  # the shipped chains extract Markdown
