"""The ablation file: its errors name the key and line; variants applied to the base recipe; the curation plan
that shares the stage prefixes variants have in common. No Ray, no training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from curation.ablate.jobs import plan_curation
from curation.ablate.spec import load_ablation, parse_ablation
from curation.ablate.variants import Variant, variant_recipe
from curation.recipe import Recipe, RecipeError, load_recipe

from ..conftest import ROOT, SAMPLE

EVAL = ROOT / "recipes" / "eval"


def base_recipe(tmp_path, stages: list | None = None) -> str:
    body = {
        "name": "sample", "output": str(tmp_path / "jobs"), "executor": "local", "local": {"workers": 1},
        "sources": [{"name": "web", "format": "warc", "paths": [str(SAMPLE / "crawl-*.warc.gz")]},
                    {"name": "notes", "format": "jsonl", "paths": [str(SAMPLE / "notes.jsonl.gz")]}],
        "stages": stages if stages is not None else [
            {"extract": {"engine": "trafilatura", "timeout_s": 60, "only": ["web"]}}, {"length": {"min_words": 50}}],
        "mixture": {"weights": {"web": 0.7, "notes": 0.3}, "total_tokens": 3000},
        "tokenizer": {"train": {"vocab_size": 400, "hard_vocab_limit": False}},
        "pack": {"seq_len": 64, "shard_rows": 16},
    }
    path = tmp_path / "base.yaml"
    path.write_text(json.dumps(body))
    return str(path)


def load_base(tmp_path, stages: list | None = None) -> Recipe:
    return load_recipe(base_recipe(tmp_path, stages), check_paths=False)


def test_the_bundled_ablation_is_valid(monkeypatch):
    monkeypatch.chdir(ROOT)  # its paths are the repository's, as `curate ablate recipes/ablation.yaml` runs there
    ablation = load_ablation("recipes/ablation.yaml")
    assert list(ablation.all_variants()) == ["base", "no-length", "natural-mixture"]
    assert ablation.training.seeds == [0, 1, 2]


def test_errors_name_the_key_and_the_line(tmp_path):
    base = base_recipe(tmp_path)
    text = f"""name: broken
recipe: {base}
baseline: nope
variants:
  a: {{remove: [lenght]}}
  b: {{settings: {{length: {{min_words: many}}}}}}
  c: {{mixture: {{weights: {{web: 1, books: 1}}}}}}
training:
  tokens: 64
  optim: {{warmup_steps: 500}}
evaluation:
  sets:
    - {{name: held-out, path: {tmp_path}/nowhere.jsonl}}
"""
    with pytest.raises(RecipeError) as caught:
        parse_ablation(text, "broken.yaml")
    found = {(p.line, p.path) for p in caught.value.problems}
    assert found == {
        (3, "baseline"),
        (5, "variants.a.remove[0]"),
        (6, "variants.b.settings.length.min_words"),
        (7, "variants.c.mixture"),  # books is no source, and notes has no entry: two problems, one key
        (10, "training.optim"),  # 64 tokens are one step: warmup cannot fit
        (13, "evaluation.sets[0].path"),
    }
    messages = str(caught.value)
    assert "broken.yaml:5:16: variants.a.remove[0]: no stage named 'lenght' (stages: extract, length)" in messages
    assert "no source named 'books'" in messages and "warmup_steps (500) must not exceed total_steps (1)" in messages


def test_schema_errors_come_with_their_line_too(tmp_path):
    text = f"name: x\nrecipe: {base_recipe(tmp_path)}\nvariants:\n  a: {{colour: red}}\n  b: {{add: [{{c4x: {{}}}}]}}\n"
    with pytest.raises(RecipeError) as caught:
        parse_ablation(text, "x.yaml")
    found = {(p.line, p.path): p.message for p in caught.value.problems}
    assert found[4, "variants.a.colour"].startswith("unknown key")
    assert "did you mean 'c4'" in found[5, "variants.b.add[0]"]
    assert (1, "training") in found and (1, "evaluation") in found  # required keys, at the file's top


def test_a_variant_overrides_stages_settings_sources_and_mixture(tmp_path):
    base = load_base(tmp_path)
    settings = variant_recipe(base, Variant(settings={"length": {"min_words": 120}}))
    assert settings.stages[1].length.min_words == 120 and settings.stages[0] == base.stages[0]
    removed = variant_recipe(base, Variant(remove=["length"], add=[{"c4": {}}, {"exact_dedup": {}}]))
    assert [next(iter(type(e).model_fields)) for e in removed.stages] == ["extract", "c4", "exact_dedup"]
    added = variant_recipe(base.model_copy(update={"stages": [*base.stages, *removed.stages[2:]]}),
                           Variant(add=[{"gopher_quality": {}}]))  # before the corpus stage, after the others
    assert [next(iter(type(e).model_fields)) for e in added.stages] == ["extract", "length", "gopher_quality",
                                                                       "exact_dedup"]
    natural = variant_recipe(base, Variant.model_validate({"mixture": None}))
    assert natural.mixture is None and base.mixture is not None
    notes_only = variant_recipe(base, Variant.model_validate(yaml.safe_load(
        f"{{sources: [{{name: notes, format: jsonl, paths: ['{SAMPLE}/notes.jsonl.gz']}}], "
        "stages: [{length: {min_words: 50}}], mixture: {weights: {notes: 1}}}")))
    assert [s.name for s in notes_only.sources] == ["notes"] and notes_only.mixture.weights == {"notes": 1}
    assert variant_recipe(base, Variant()).fingerprint() == base.fingerprint()  # `base` is the recipe unchanged


def _kinds(stages: list) -> list[str]:
    return [next(iter(entry)) for entry in stages]


def test_shared_stage_prefixes_run_once(tmp_path):
    base = load_base(tmp_path)
    recipes = {
        "base": base,
        "no-length": variant_recipe(base, Variant(remove=["length"])),
        "gopher": variant_recipe(base, Variant(add=[{"gopher_quality": {}}])),
        "natural": variant_recipe(base, Variant.model_validate({"mixture": None})),
    }
    plan = plan_curation(recipes)
    jobs = list(plan.jobs.values())
    # extract (every variant), then length (three), then gopher_quality (one): each stage once
    assert [(_kinds(n.stages), n.depth, sorted(n.variants)) for n in jobs] == [
        (["extract"], 1, ["base", "gopher", "natural", "no-length"]),
        (["length"], 2, ["base", "gopher", "natural"]),
        (["gopher_quality"], 3, ["gopher"]),
    ]
    extract, length, gopher = (n.key for n in jobs)
    assert plan.jobs[length].parent == extract and plan.jobs[gopher].parent == length
    assert plan.chains == {"base": [extract, length], "no-length": [extract], "gopher": [extract, length, gopher],
                           "natural": [extract, length]}  # a mixture is packing's: same documents as base
    assert len(plan.shared()) == 2


def test_a_prefix_is_not_cut_where_a_later_stage_needs_the_pages(tmp_path):
    """Documents keep no raw pages: chains parting before extraction each read the sources themselves."""
    base = load_base(tmp_path, stages=[{"html_langid": {"keep": ["en"]}}, {"extract": {}}])
    other = variant_recipe(base, Variant(settings={"extract": {"include_tables": False}}))
    plan = plan_curation({"base": base, "precise": other})
    assert [(n.parent, _kinds(n.stages)) for n in plan.jobs.values()] == [
        (None, ["html_langid", "extract"]), (None, ["html_langid", "extract"])]


def test_curate_validate_recognises_an_ablation_file(tmp_path, monkeypatch, capsys):
    from pipelines.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["validate", "recipes/ablation.yaml"]) == 0
    assert capsys.readouterr().out == ("recipes/ablation.yaml: valid (ablation: 3 variants, 3 seeds, 2 evaluation "
                                       "sets)\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text(f"name: b\nrecipe: {base_recipe(tmp_path)}\nvariants: {{a: {{remove: [lenght]}}}}\n"
                      "training: {tokens: 64}\nevaluation: {sets: [{name: s, path: nowhere.jsonl}]}\n")
    assert main(["validate", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "broken.yaml:3:25: variants.a.remove[0]: no stage named 'lenght'" in err and "2 problem(s)" in err


def test_a_mixture_variant_of_a_base_recipe_that_packs_nothing_takes_the_ablations_packing(tmp_path):
    body = json.loads(Path(base_recipe(tmp_path)).read_text())
    for key in ("mixture", "tokenizer", "pack"):
        del body[key]
    (tmp_path / "bare.yaml").write_text(json.dumps(body))
    text = f"""name: mixes
recipe: {tmp_path / "bare.yaml"}
variants:
  web-heavy: {{mixture: {{web: 0.9, notes: 0.1}}}}
tokenizer: {{train: {{vocab_size: 400}}}}
pack: {{seq_len: 64}}
training: {{tokens: 4096, batch_size: 4, optim: {{warmup_steps: 2}}}}
evaluation: {{sets: [{{name: held-out, path: {EVAL}/held-out.jsonl}}]}}
"""
    ablation = parse_ablation(text, "mixes.yaml")
    recipe = variant_recipe(ablation.base_recipe(), ablation.variants["web-heavy"])
    assert recipe.mixture.weights == {"web": 0.9, "notes": 0.1} and recipe.pack.seq_len == 64
    with pytest.raises(RecipeError, match="mixture: `mixture` weighs output tokens: it needs `tokenizer` and `pack`"):
        parse_ablation(text.replace("tokenizer: {train: {vocab_size: 400}}\npack: {seq_len: 64}\n", ""), "bare.yaml")
