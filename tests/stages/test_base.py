"""The stage contract: built through `__init__`, set up once through `ready`, shipped as params; what a filter's
base class makes of its scores."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pytest

from curation import schema
from curation.apply import run_stage
from curation.recipe import RecipeError, parse_recipe
from curation.schema import documents_table
from curation.stages import Extract, GopherQuality, Length
from curation.stages.base import DocumentFilter, first_reason
from curation.stages.build import build_corpus_stages, build_stages, set_up
from tests.support.stages import SetupCounter


def setups(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_from_params_builds_through_init():
    params = Extract.Params(deduplicate=True)
    stage = Extract.from_params(params)
    assert stage.params is params and stage._seen is None  # state `__init__` declares
    assert GopherQuality.from_params(GopherQuality.Params())._settings == {}
    with pytest.raises(TypeError, match="not both"):
        Length(Length.Params(), min_words=3)


def test_ready_sets_a_stage_up_once_and_a_shipped_copy_sets_itself_up(tmp_path: Path):
    log = tmp_path / "setups"
    stage = SetupCounter(log=str(log))
    assert stage.ready() is stage and stage.ready() is stage
    assert setups(log) == 1
    copy = pickle.loads(pickle.dumps(stage))  # what an executor ships: params only
    assert type(copy) is SetupCounter and copy.params == stage.params and not copy._set_up
    copy.ready()
    assert setups(log) == 2


def test_run_stage_sets_a_bare_stage_up(tmp_path: Path):
    log = tmp_path / "setups"
    stage = SetupCounter(log=str(log))
    run_stage(stage, documents_table(["one"]))
    run_stage(stage, documents_table(["two"]))
    assert setups(log) == 1


def test_set_up_reuses_the_stage_of_the_same_kind_name_and_params_in_a_process(tmp_path: Path):
    log = tmp_path / "setups"
    first = set_up([("counter", SetupCounter(log=str(log)))])
    again = set_up([("counter", SetupCounter(log=str(log)))])  # a later task's fresh copy
    other = set_up([("counter_2", SetupCounter(log=str(log)))])
    assert again[0][1] is first[0][1] and other[0][1] is not first[0][1]
    assert setups(log) == 2


def test_build_stages_follows_the_recipe_and_sets_nothing_up():
    recipe = parse_recipe(
        "name: built\nsources: [{name: notes, format: jsonl, paths: ['notes.jsonl']}]\n"
        "stages:\n  - length: {min_words: 3}\n  - length: {min_words: 5}\n  - toxicity: {}\n  - exact_dedup: {}\n",
        check_paths=False)
    stages = build_stages(recipe)
    assert [(name, type(stage).__name__) for name, stage in stages] == [
        ("length", "Length"), ("length_2", "Length"), ("toxicity", "Toxicity")]
    assert [stage.params.min_words for _, stage in stages[:2]] == [3, 5]
    assert not any(stage._set_up for _, stage in stages)
    assert [(name, type(stage).__name__) for name, stage in build_corpus_stages(recipe)] == [
        ("exact_dedup", "ExactDedup")]


class Shout(DocumentFilter):
    """Keeps documents with an `!`; upper-cases the text of those it keeps."""

    name = "shout"
    count_keys: ClassVar[tuple[str, ...]] = ("marks",)
    output_columns: ClassVar[dict[str, pa.DataType]] = {"shout_length": pa.int64()}

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        return self.scores_and_text(batch)[0]

    def scores_and_text(self, batch: pa.Table) -> tuple[dict[str, np.ndarray], pa.Array]:
        texts = batch.column("text").to_pylist()
        scores = {"shout_length": np.array([len(t) for t in texts]),
                  "_marks": np.array([t.count("!") for t in texts])}
        return scores, pa.array([t.upper() for t in texts], pa.string())

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return first_reason(len(scores["_marks"]), [(scores["_marks"] == 0, "calm")])


def test_a_filter_rewrites_what_it_keeps_adds_public_scores_and_counts_from_hidden_ones():
    batch = documents_table(["hello!", "quiet", "hi!!"])
    result = Shout(keep_scores=True).process(batch)
    assert result.reasons.to_pylist() == [None, "calm", None]
    assert result.table.column("text").to_pylist() == ["HELLO!", "quiet", "HI!!"]  # the dropped row as it was
    assert result.table.column("shout_length").to_pylist() == [6, 5, 4]
    assert "_marks" not in result.table.column_names and result.counts["marks"].tolist() == [1, 0, 2]
    assert "shout_length" not in Shout().process(batch).table.column_names
    out = run_stage(Shout(), batch)
    assert out.column(schema.count_column("shout", "marks")).to_pylist() == [1, 0, 2]


def test_every_drop_of_a_filter_carries_the_score_and_the_bound_that_decided_it():
    """Gopher's, C4's, FineWeb's, length and density drops had no detail (the documentation promises one): the score
    their reason names and the bound it broke, the document's own where a language sets it."""
    from curation.stages import C4, Density, FineWeb, GopherRepetition, Normalize

    texts = ["short text here.", "x " * 300, " \n\t ", "lorem ipsum dolor sit amet, consectetur. " * 20,
             "We met at noon. {It rained.} Then we left. Nobody stayed. The end came. Home at last. " * 3]
    expected = {
        GopherQuality: ["gopher_words=3, min_words=50", "gopher_mean_word_length=1, min_mean_word_length=3"],
        GopherRepetition: [None, "top_2gram_char_frac=1, bound=0.2"],  # a short text that repeats nothing is kept
        C4: ["c4_sentences=1, min_sentences=5", "c4_sentences=0, min_sentences=5", "c4_sentences=0, min_sentences=5",
             "'lorem ipsum' in the text", "a curly bracket, { or }, in the text judged"],
        Length: ["n_words=3, min_words=50"],
        Normalize: [None, None, "no text left: whitespace and control characters only"],
    }
    ids = documents_table(texts).column("id").to_pylist()
    for stage, details in expected.items():
        by_id = {row["id"]: row for row in run_stage(stage(), documents_table(texts)).to_pylist()}
        found = [by_id[i][schema.DETAIL] for i in ids[: len(details)]]
        assert found == details, (stage.name, found)
    for stage in (FineWeb, Density, GopherQuality, GopherRepetition, C4, Length):
        rows = run_stage(stage(), documents_table(texts)).to_pylist()
        assert all(row[schema.DETAIL] for row in rows if row[schema.REASON]), stage.name


def test_length_bounds_that_keep_nothing_are_refused_before_work():
    """`length: {min_words: 100, max_words: 10}` validated, and the run kept 0 of 50."""
    with pytest.raises(RecipeError, match=r"stages\[0\]\.length: min_words \(100\) must be at most max_words \(10\)"):
        parse_recipe("name: n\nsources: [{name: s, format: jsonl, paths: [a.jsonl]}]\n"
                     "stages: [{length: {min_words: 100, max_words: 10}}]\n", check_paths=False)
