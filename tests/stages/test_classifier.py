"""fastText classifier: training with a held-out split and sidecar, the `classifier` stage, the CLI."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError

from curation import schema
from curation.apply import run_stage
from curation.classifier_training import (
    Corpus,
    Hyperparameters,
    binary_metrics,
    read_jsonl_texts,
    recipe_texts,
    roc_auc,
    train_classifier,
)
from curation.schema import documents_table
from curation.stages.classifier import (
    FastTextClassifier,
    load_sidecar,
    preprocess,
    sidecar_path,
    threshold_for_fraction,
)
from tests.conftest import ROOT

GOOD = ["research", "study", "analysis", "theory", "evidence", "results", "method", "data", "history", "science"]
BAD = ["buy", "cheap", "free", "click", "casino", "bonus", "offer", "deal", "discount", "winner", "prize"]
COMMON = ["the", "a", "of", "and", "to", "in", "is", "for", "on", "with", "this", "that", "it"]
SMALL = Hyperparameters(dim=16, epoch=15, lr=0.5)  # small and sure of itself: the tests stay fast


def _doc(rng: random.Random, words: list[str]) -> str:
    lines = [" ".join(rng.choice(words if rng.random() < 0.6 else COMMON) for _ in range(8)) for _ in range(3)]
    return "\n".join(lines).capitalize()  # newlines and capitals: preprocessing must handle both


def _write(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(texts)))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("clf")
    rng = random.Random(0)
    _write(folder / "pos.jsonl", [_doc(rng, GOOD) for _ in range(200)])
    _write(folder / "neg.jsonl", [_doc(rng, BAD) for _ in range(200)])
    _write(folder / "pool.jsonl", [_doc(rng, GOOD if i % 4 == 0 else BAD) for i in range(200)])  # 25 % good
    return folder


@pytest.fixture(scope="module")
def model(data: Path) -> str:
    output = str(data / "models" / "quality.bin")
    train_classifier(
        read_jsonl_texts([str(data / "pos.jsonl")]),
        read_jsonl_texts([str(data / "neg.jsonl")]),
        output,
        seed=7,
        holdout=0.2,
        calibration=read_jsonl_texts([str(data / "pool.jsonl")]),
        hyperparameters=SMALL,
    )
    return output


def test_preprocess_makes_one_line_and_lowercases_only_when_asked():
    texts = ["Hello\nWorld\r\n\tAgain  ", None, "A\u2028B\x0bC"]
    assert preprocess(texts, lowercase=True) == ["hello world again", "", "a b c"]
    assert preprocess(pa.array(texts), lowercase=False) == ["Hello World Again", "", "A B C"]


@pytest.mark.subprocess
def test_training_writes_model_and_sidecar_with_heldout_metrics(model: str, data: Path):
    assert Path(model).is_file() and sidecar_path(model).endswith("quality.json")
    car = load_sidecar(model)
    assert car is not None
    assert car["positive_label"] == "__label__hq" and sorted(car["labels"]) == ["__label__cc", "__label__hq"]
    assert car["preprocess"]["lowercase"] is True
    assert car["hyperparameters"]["wordNgrams"] == 2 and car["hyperparameters"]["dim"] == 16
    assert car["hyperparameters"]["bucket"] <= 2_000_000  # sized to the data, not an 800 MB default
    assert car["data"]["positive"]["heldout"] == 40 and car["data"]["negative"]["train"] == 160
    m = car["heldout_metrics"]
    assert m["n"] == 80 and m["f1"] > 0.9 and m["precision"] > 0.9 and m["recall"] > 0.9 and m["auc"] > 0.95
    assert set(car["quantiles"]) == {"heldout", "heldout_positive", "heldout_negative", "pool"}
    assert all(len(q) == car["quantile_levels"] for q in car["quantiles"].values())
    assert car["quantiles"]["heldout"] == sorted(car["quantiles"]["heldout"])


@pytest.mark.subprocess
def test_training_is_reproducible_with_a_seed(model: str, data: Path, tmp_path: Path):
    pos, neg = read_jsonl_texts([str(data / "pos.jsonl")]), read_jsonl_texts([str(data / "neg.jsonl")])
    again = train_classifier(pos, neg, str(tmp_path / "again.bin"), seed=7, holdout=0.2, hyperparameters=SMALL)
    first = load_sidecar(model)
    assert first is not None
    assert again["heldout_metrics"] == first["heldout_metrics"]
    assert again["quantiles"]["heldout"] == first["quantiles"]["heldout"]


@pytest.mark.subprocess
def test_duplicates_and_contradicting_labels_are_removed(tmp_path: Path):
    rng = random.Random(1)
    pos = [_doc(rng, GOOD) for _ in range(30)]
    neg = [_doc(rng, BAD) for _ in range(30)]
    car = train_classifier(
        Corpus(pos + pos[:5] + ["shared text"]),  # 5 copies, and one text in both classes
        Corpus([*neg, "Shared\ntext"]),  # the same line once preprocessed
        str(tmp_path / "m.bin"),
        hyperparameters=SMALL,
    )
    assert car["data"]["positive"]["distinct"] == 31 and car["data"]["in_both_classes_removed"] == 1
    assert car["data"]["positive"]["train"] + car["data"]["positive"]["heldout"] == 30


@pytest.mark.subprocess
def test_stage_keeps_documents_above_the_threshold(model: str):
    rng = random.Random(5)
    texts = [_doc(rng, GOOD) for _ in range(10)] + [_doc(rng, BAD) for _ in range(10)] + [None, ""]
    out = run_stage(FastTextClassifier(model=model, threshold=0.5), documents_table(texts))
    rows = out.to_pylist()
    assert [r[schema.REASON] for r in rows[:10]] == [None] * 10
    assert [r[schema.REASON] for r in rows[10:20]] == ["low_quality_score"] * 10
    assert all(0.5 <= r["quality_score"] <= 1 for r in rows[:10]) and all(r["quality_score"] < 0.5 for r in rows[10:20])
    assert out.schema.field("quality_score").type == pa.float32()


@pytest.mark.subprocess
def test_top_fraction_uses_the_calibrated_threshold(model: str, data: Path):
    pool = read_jsonl_texts([str(data / "pool.jsonl")]).texts  # scored at training time for the `pool` quantiles
    stage = FastTextClassifier(model=model, top_fraction=0.2)
    out = run_stage(stage, documents_table(pool))
    kept = np.mean([r is None for r in out.column(schema.REASON).to_pylist()])
    assert kept == pytest.approx(0.2, abs=0.02)
    car = load_sidecar(model)
    assert car is not None
    assert stage.threshold == pytest.approx(threshold_for_fraction(car["quantiles"]["pool"], 0.2))
    heldout = FastTextClassifier(model=model, top_fraction=0.5, calibrate_on="heldout")
    heldout.setup()
    assert heldout.threshold == pytest.approx(
        float(np.interp(0.5, np.linspace(0, 1, 1001), car["quantiles"]["heldout"]))
    )


@pytest.mark.subprocess
def test_keep_below_with_own_column_and_reason(model: str):
    rng = random.Random(9)
    texts = [_doc(rng, GOOD), _doc(rng, BAD)]
    stage = FastTextClassifier(
        model=model, label="hq", threshold=0.5, keep_below=True, score_column="hq_prob", reason="too_academic"
    )
    rows = run_stage(stage, documents_table(texts)).to_pylist()
    assert [r[schema.REASON] for r in rows] == ["too_academic", None]
    assert "quality_score" not in rows[0] and rows[0]["hq_prob"] >= 0.5
    default = FastTextClassifier(model=model, threshold=0.5, keep_below=True, score_column="toxicity_score")
    default.setup()
    assert default.reason == "high_toxicity_score"


@pytest.mark.subprocess
def test_clear_errors(model: str, tmp_path: Path):
    with pytest.raises(FileNotFoundError, match=r"model file not found: .*nope\.bin \(recipe key `model`"):
        FastTextClassifier(model=str(tmp_path / "nope.bin"), threshold=0.5).setup()
    bare = tmp_path / "bare.bin"
    shutil.copy(model, bare)  # a model without its sidecar
    with pytest.raises(ValueError, match=r"top_fraction needs the calibration sidecar .*bare\.json"):
        FastTextClassifier(model=str(bare), top_fraction=0.1).setup()
    FastTextClassifier(model=str(bare), threshold=0.5).setup()  # a threshold needs no sidecar
    with pytest.raises(ValueError, match=r"label '__label__toxic' is not one of the model's labels"):
        FastTextClassifier(model=model, label="toxic", threshold=0.5).setup()
    with pytest.raises(ValueError, match="contradicts the model's training"):
        FastTextClassifier(model=model, threshold=0.5, lowercase=False).setup()
    with pytest.raises(ValueError, match=r"calibrate_on 'nothing'"):
        FastTextClassifier(model=model, top_fraction=0.1, calibrate_on="nothing").setup()
    with pytest.raises(ValidationError, match="exactly one of `threshold`"):
        FastTextClassifier(model=model)
    with pytest.raises(ValidationError, match="exactly one of `threshold`"):
        FastTextClassifier(model=model, threshold=0.5, top_fraction=0.1)


def test_metrics_against_brute_force():
    rng = np.random.default_rng(3)
    truth = rng.random(300) < 0.4
    scores = np.round(np.where(truth, rng.random(300) * 0.7 + 0.3, rng.random(300) * 0.7), 2)  # with ties
    pairs = [(p > n) + 0.5 * (p == n) for p in scores[truth] for n in scores[~truth]]
    assert roc_auc(scores, truth) == pytest.approx(np.mean(pairs))
    m = binary_metrics(np.array([0.9, 0.8, 0.3, 0.6, 0.1]), np.array([1, 1, 1, 0, 0]))
    assert (m["precision"], m["recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert m["best_f1"] == pytest.approx(6 / 7) and m["best_f1_threshold"] == 0.3


def test_positives_from_a_recipe(data: Path, tmp_path: Path):
    recipe = tmp_path / "pos.yaml"
    recipe.write_text(
        f"name: positives\nsources:\n  - {{name: good, format: jsonl, paths: ['{data / 'pos.jsonl'}']}}\n"
        "stages:\n  - length: {min_words: 1}\n"
    )
    corpus = recipe_texts(str(recipe), limit=50)
    assert len(corpus.texts) == 50 and corpus.sources == [str(data / "pos.jsonl")]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "train-classifier", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.subprocess
def test_cli_trains_and_reports(data: Path, tmp_path: Path):
    out = tmp_path / "cli" / "model.bin"
    done = _cli("--positive", str(data / "pos.jsonl"), "--negative", str(data / "neg.jsonl"), "--output", str(out),
                "--dim", "16", "--epoch", "15", "--lr", "0.5", "--seed", "3", "--label", "good")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "precision" in done.stdout and "AUC" in done.stdout and str(out) in done.stdout
    car = json.loads(out.with_suffix(".json").read_text())
    assert car["positive_label"] == "__label__good" and car["seed"] == 3
    missing = _cli("--positive", str(tmp_path / "none.jsonl"), "--negative", str(data / "neg.jsonl"),
                   "--output", str(tmp_path / "x.bin"))  # fmt: skip
    assert missing.returncode == 2 and "no file matches" in missing.stderr
    one_sided = _cli("--positive", str(data / "pos.jsonl"), "--output", str(tmp_path / "x.bin"))
    assert one_sided.returncode == 2 and "give positives" in one_sided.stderr


def test_a_misnamed_text_field_is_said_not_counted_as_no_examples(tmp_path: Path):
    """`train-classifier --text-field body` over files without `body` said only "0 positive, 0 negative"."""
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"text": f"line {i}"}) + "\n" for i in range(3)))
    with pytest.raises(ValueError, match=r"a\.jsonl: none of its lines has a 'body' field \(3 without it; "
                                         r"--text-field names it\)"):
        read_jsonl_texts([str(tmp_path / "a.jsonl")], text_field="body")
    assert len(read_jsonl_texts([str(tmp_path / "a.jsonl")]).texts) == 3
