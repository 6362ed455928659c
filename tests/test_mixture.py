"""Mixture plans, the row permutation and the recipe keys of tokenization, without Ray."""

from __future__ import annotations

import numpy as np
import pytest

from curation.mixture import MixtureParams, histogram, plan, shares, unit_hash
from curation.recipe import RecipeError, parse_recipe
from curation.tokens.shuffle import permute


def hists(tokens_per_doc: dict[str, np.ndarray], seed: int = 0) -> tuple[dict[str, np.ndarray], dict]:
    out, u = {}, {}
    for source, lengths in tokens_per_doc.items():
        u[source] = unit_hash([f"{source}-{i}" for i in range(lengths.size)], seed)
        out[source] = histogram(u[source], lengths)
    return out, u


def achieved(plans: dict, tokens_per_doc: dict[str, np.ndarray], u: dict) -> dict[str, int]:
    return {s: int((plans[s].copies(u[s]) * tokens_per_doc[s]).sum()) for s in plans}


@pytest.fixture(scope="module")
def corpus() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"web": rng.integers(50, 3000, 20_000), "books": rng.integers(2000, 20_000, 400),
            "code": rng.integers(10, 500, 5_000)}


def test_weights_without_total_use_the_scarcest_source_once(corpus):
    h, u = hists(corpus)
    plans = plan(MixtureParams(weights={"web": 0.5, "books": 0.3, "code": 0.2}), h)
    got = shares(achieved(plans, corpus, u))
    limiting = min(plans.values(), key=lambda p: p.rate)
    assert max(p.rate for p in plans.values()) == pytest.approx(1.0)  # nothing repeated
    assert limiting.rate < 1.0
    for source, target in {"web": 0.5, "books": 0.3, "code": 0.2}.items():
        assert abs(got[source] - target) < 0.01


def test_total_tokens_upsamples_up_to_max_epochs_then_reports_the_shortfall(corpus):
    h, u = hists(corpus)
    books = int(corpus["books"].sum())
    params = MixtureParams(weights={"web": 0.7, "books": 0.3, "code": 0}, total_tokens=books * 10, max_epochs=2.5)
    plans = plan(params, h)
    assert plans["books"].rate == 2.5 and plans["books"].shortfall_tokens > 0
    got = achieved(plans, corpus, u)
    assert got["code"] == 0
    assert abs(got["books"] - 2.5 * books) / books < 0.01  # 2.5 epochs exactly (to a histogram bin)
    assert plans["books"].target_tokens - got["books"] == pytest.approx(plans["books"].shortfall_tokens, rel=0.01)
    assert abs(got["web"] - 7 * books) / (7 * books) < 0.01  # 0.7 of 10x books; web is large enough


def test_token_budgets_and_up_sampling_copies(corpus):
    h, u = hists(corpus)
    code = int(corpus["code"].sum())
    plans = plan(MixtureParams(tokens={"web": 1_000_000, "books": 0, "code": int(code * 1.5)}), h)
    copies = plans["code"].copies(u["code"])
    assert set(np.unique(copies)) == {1, 2}  # every document once, about half of them twice
    got = achieved(plans, corpus, u)
    assert abs(got["web"] - 1_000_000) < 2000 and abs(got["code"] - 1.5 * code) < 0.01 * code
    assert got["books"] == 0


def test_same_seed_same_documents_other_seed_others(corpus):
    params = MixtureParams(weights={"web": 0.5, "books": 0.5, "code": 0})
    a_h, a_u = hists(corpus, seed=1)
    b_h, b_u = hists(corpus, seed=2)
    first = plan(params, a_h)["web"].copies(a_u["web"])
    again = plan(params, hists(corpus, seed=1)[0])["web"].copies(a_u["web"])
    other = plan(params, b_h)["web"].copies(b_u["web"])
    assert np.array_equal(first, again) and not np.array_equal(first, other)


def test_flat_form_and_params_errors():
    assert MixtureParams.model_validate({"web": 0.7, "code": 0.3}).weights == {"web": 0.7, "code": 0.3}
    with pytest.raises(ValueError, match="either `weights`"):
        MixtureParams.model_validate({"weights": {"a": 1}, "tokens": {"a": 5}})
    with pytest.raises(ValueError, match="at least one source"):
        MixtureParams.model_validate({"a": 0})
    with pytest.raises(ValueError, match="goes with `weights`"):
        MixtureParams.model_validate({"tokens": {"a": 5}, "total_tokens": 10})


def test_rehydration_repeats_follow_fineweb2s_published_weights_or_a_given_map():
    sizes = np.array([1, 2, 3, 4, 5, 99, 100, 999, 1000, 5000])
    fineweb2 = MixtureParams(weights={"web": 1}, rehydrate="fineweb2")
    assert fineweb2.repeats(sizes).tolist() == [1, 2, 3, 3, 5, 5, 8, 8, 1, 1]  # FineWeb-2's README, bisect as there
    given = MixtureParams.model_validate({"weights": {"web": 1}, "rehydrate": {2: 3, 10: 2}})
    assert given.repeats(np.array([1, 2, 9, 10, 50])).tolist() == [1, 3, 3, 2, 2]  # below the smallest: once
    assert given.repeats(None) is None and MixtureParams(weights={"web": 1}).repeats(sizes) is None
    for bad in ({0: 2}, {2: 0}):
        with pytest.raises(ValueError, match="`rehydrate` maps cluster sizes"):
            MixtureParams.model_validate({"weights": {"web": 1}, "rehydrate": bad})


def test_rehydrated_documents_weigh_their_repeats_in_the_plan_and_in_the_copies(corpus):
    rng = np.random.default_rng(4)
    lengths = {"web": corpus["web"], "code": corpus["code"]}
    sizes = {"web": rng.choice([1, 1, 1, 2, 3, 7, 150, 2000], len(lengths["web"])), "code": None}
    params = MixtureParams(weights={"web": 0.6, "code": 0.4}, total_tokens=3 * int(corpus["code"].sum()),
                           rehydrate="fineweb2")  # code up-sampled 1.2x, web down-sampled
    repeats = {s: params.repeats(sizes[s]) for s in lengths}
    u = {s: unit_hash([f"{s}-{i}" for i in range(n.size)], 0) for s, n in lengths.items()}
    plans = plan(params, {s: histogram(u[s], lengths[s], repeats[s]) for s in lengths})
    assert plans["web"].available_tokens == int((lengths["web"] * repeats["web"]).sum())  # rehydrated tokens
    assert plans["code"].available_tokens == int(lengths["code"].sum())  # no cluster sizes: each document once
    copies = {s: plans[s].copies(u[s], repeats[s]) for s in lengths}
    for source, share in (("web", 0.6), ("code", 0.4)):
        got = int((copies[source] * lengths[source]).sum())
        assert abs(got - share * params.total_tokens) < 0.01 * share * params.total_tokens
    taken = copies["web"] > 0
    per_size = {size: set(np.unique(copies["web"][taken & (sizes["web"] == size)] // plans["web"].copies(
        u["web"][taken & (sizes["web"] == size)])).tolist()) for size in (1, 2, 3, 7, 150, 2000)}
    assert per_size == {1: {1}, 2: {2}, 3: {3}, 7: {5}, 150: {8}, 2000: {1}}  # each copy the plan takes, repeated


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 1000, 4097])
def test_permutation_is_a_seeded_bijection(n):
    p = permute(np.arange(n), n, seed=7)
    assert sorted(p.tolist()) == list(range(n))
    assert np.array_equal(p, permute(np.arange(n), n, seed=7))
    assert np.array_equal(p[n // 2:], permute(np.arange(n // 2, n), n, seed=7))  # any slice, same images
    if n > 3:
        assert not np.array_equal(p, permute(np.arange(n), n, seed=8))
    with pytest.raises(ValueError):
        permute(np.array([n]), n, seed=7)


RECIPE = """\
name: t
sources:
  - {name: web, format: jsonl, paths: ["x.jsonl"]}
  - {name: code, format: jsonl, paths: ["y.jsonl"]}
"""


@pytest.mark.parametrize(("tail", "where", "message"), [
    ("tokenizer: {train: {vocab_size: 1000}}\n", "5:12: tokenizer", "needs `pack`"),
    ("pack: {seq_len: 128}\n", "5:7: pack", "needs `tokenizer`"),
    ("tokenizer: {train: {}}\npack: {}\nmixture: {web: 0.7, kode: 0.3}\n", "7:27: mixture.weights.kode",
     "no source named 'kode'"),
    ("tokenizer: {train: {}}\npack: {}\nmixture: {web: 1}\n", "7:10: mixture.weights", "source 'code' has no entry"),
    ("tokenizer: {model: a.model, train: {}}\npack: {}\n", "5:12: tokenizer", "either `model`"),
    ("tokenizer: {train: {}}\npack: {seq_len: 0}\n", "6:17: pack.seq_len", "greater than or equal to 1"),
    ("tokenizer: {model: nowhere.model}\npack: {}\n", "5:20: tokenizer.model", "no tokenizer model"),
])
def test_recipe_errors_name_key_and_line(tail, where, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("x.jsonl", "y.jsonl"):
        (tmp_path / name).write_text("{}\n")
    with pytest.raises(RecipeError) as err:
        parse_recipe(RECIPE + tail, "r.yaml")
    assert any(f"r.yaml:{where}" in str(p) and message in str(p) for p in err.value.problems), str(err.value)


def test_token_budgets_written_with_an_exponent_are_numbers():
    """docs/tokens.md writes `tokens: {web: 5e9}`, which YAML reads as a string: it was refused."""
    from curation.mixture import MixtureParams

    assert MixtureParams(tokens={"web": "5e9", "code": "1_000"}).tokens == {"web": 5_000_000_000, "code": 1000}
    assert MixtureParams(weights={"web": 1.0}, total_tokens="2e9").total_tokens == 2_000_000_000
