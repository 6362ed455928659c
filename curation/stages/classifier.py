"""A fastText classifier as a filter: quality (DCLM-style), toxicity, or any binary label.

The model is a fastText supervised model (`curate train-classifier` writes one, with its sidecar
JSON; DCLM's or another model trained elsewhere works too). Score = probability of the positive
label. Keep rule: `score >= threshold`, or the best `top_fraction` of documents by a threshold
read from the sidecar's score quantiles (DCLM kept the top 10 % of its pool by fastText score).
With `keep_below` the rule turns around (a toxicity model: keep `score < threshold`).

Training (`curation.classifier_training`) and scoring share `preprocess`, and the sidecar JSON written
next to the model records how texts were preprocessed, which label is the positive one, the
hyper-parameters, the held-out metrics and the score quantiles that turn `top_fraction` into a threshold.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curation import io
from curation.stages.base import DocumentFilter

SIDECAR_FORMAT = "curation.classifier/1"
LABEL_PREFIX = "__label__"

# Characters fastText or its Python binding treat as line or token breaks, and the Unicode line breaks:
# all become one space so that a document is one line (predict() refuses '\n') with the same tokens.
_BREAKS = r"[\s\x{0b}\x{00}\x{85}\x{a0}\x{2028}\x{2029}]+"


def label_name(label: str) -> str:
    """`hq` and `__label__hq` both name fastText's label `__label__hq`."""
    return label if label.startswith(LABEL_PREFIX) else LABEL_PREFIX + label


def preprocess(texts: pa.Array | pa.ChunkedArray | Sequence[str | None], *, lowercase: bool) -> list[str]:
    """Texts as fastText sees them at training and at scoring time: one line, whitespace collapsed.

    Newlines must go (fastText reads one example per line; the binding's predict() rejects them);
    DCLM joins lines with a space the same way. Lowercasing is the fastText tutorial's advice for
    small training sets; whatever was used in training is stored in the sidecar and reused when
    scoring, so the two can never disagree. Columnar (pyarrow compute, RE2).
    """
    array = texts if isinstance(texts, pa.Array | pa.ChunkedArray) else pa.array(list(texts), pa.string())
    array = pc.fill_null(array, "")
    array = pc.utf8_trim_whitespace(pc.replace_substring_regex(array, _BREAKS, " "))
    if lowercase:
        array = pc.utf8_lower(array)
    return array.to_pylist()


def sidecar_path(model: str) -> str:
    """The sidecar JSON of a model file: `model.bin` -> `model.json` (any other name: name + `.json`)."""
    for suffix in (".bin", ".ftz"):
        if model.endswith(suffix):
            return model[: -len(suffix)] + ".json"
    return model + ".json"


def load_sidecar(model: str) -> dict[str, Any] | None:
    """The sidecar of `model`, or None when there is none (a model trained elsewhere)."""
    path = Path(sidecar_path(model))
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != SIDECAR_FORMAT:
        msg = f"{path}: not a classifier sidecar (format {data.get('format')!r}, expected {SIDECAR_FORMAT!r})"
        raise ValueError(msg)
    return data


def threshold_for_fraction(quantiles: Sequence[float], fraction: float, *, keep_below: bool = False) -> float:
    """Score threshold that keeps `fraction` of the calibration documents (highest, or lowest with keep_below)."""
    levels = np.linspace(0.0, 1.0, len(quantiles))
    level = fraction if keep_below else 1.0 - fraction
    return float(np.interp(level, levels, np.asarray(quantiles, dtype=np.float64)))


def positive_scores(model: Any, lines: list[str], positive: str) -> np.ndarray:
    """Probability of the `positive` label for each preprocessed line (one C++ call for the batch)."""
    if not lines:
        return np.zeros(0, dtype=np.float64)
    labels, probs = model.predict(lines, k=-1)
    out = np.empty(len(lines), dtype=np.float64)
    for i, (row_labels, row_probs) in enumerate(zip(labels, probs, strict=True)):
        try:
            out[i] = row_probs[row_labels.index(positive)]
        except ValueError:
            out[i] = 0.0
    return np.clip(out, 0.0, 1.0)  # fastText adds 1e-5 inside its softmax and can print 1.00001



class ClassifierParams(DocumentFilter.Params):
    model: str = Field(
        ..., description="fastText model file (.bin/.ftz), local path or URI; its sidecar is <name>.json beside it."
    )
    label: str | None = Field(
        None,
        description="Positive label (`hq` or `__label__hq`); default: the sidecar's, else `__label__hq` (DCLM).",
    )
    threshold: float | None = Field(
        None, ge=0, le=1, description="Keep documents with score >= threshold (< threshold with keep_below)."
    )
    top_fraction: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Keep this share of documents, the highest-scoring (lowest with keep_below), by a threshold "
        "calibrated at training time (the sidecar's score quantiles). Needs the sidecar.",
    )
    keep_below: bool = Field(False, description="Keep low scores instead of high ones (toxicity, spam models).")
    calibrate_on: str | None = Field(
        None,
        description="Which sidecar quantiles set the top_fraction threshold: `pool` (given with --calibration), "
        "`heldout`, `heldout_positive`, `heldout_negative`; default: pool if present, else heldout.",
    )
    score_column: str = Field("quality_score", pattern=r"^[A-Za-z][A-Za-z0-9_]*$", description="Output column.")
    reason: str | None = Field(
        None, description="Drop reason; default `low_<score_column>` (`high_<score_column>` with keep_below)."
    )
    lowercase: bool | None = Field(
        None,
        description="Lowercase before scoring; default: as in training (sidecar), else False (DCLM's models). "
        "Set it only for a model without sidecar: contradicting the sidecar is an error.",
    )
    keep_scores: bool = Field(True, description="Keep the score column in the output.")

    @model_validator(mode="after")
    def _one_rule(self) -> ClassifierParams:
        if (self.threshold is None) == (self.top_fraction is None):
            msg = "give exactly one of `threshold` (a score) or `top_fraction` (a share of documents to keep)"
            raise ValueError(msg)
        return self


class FastTextClassifier(DocumentFilter):
    """Score documents with a fastText model; drop those on the wrong side of the threshold.

    Recipe: `classifier: {model: models/quality.bin, top_fraction: 0.1}` (quality, DCLM-style) or
    `classifier: {model: models/toxic.bin, label: toxic, threshold: 0.5, keep_below: true,
    score_column: toxicity_score, reason: toxic}`. The text is preprocessed exactly as in training
    (`preprocess`, settings from the sidecar). The model is loaded once per worker process.
    """

    name = "classifier"
    Params = ClassifierParams

    @property
    def output_columns(self) -> dict[str, pa.DataType]:  # type: ignore[override]
        return {self.params.score_column: pa.float32()}

    def setup(self) -> None:
        import fasttext

        p = self.params
        local = self._local_model(p.model)
        sidecar = load_sidecar(local)
        self.model: Any = fasttext.load_model(local)
        label = label_name(p.label) if p.label else (sidecar or {}).get("positive_label", "__label__hq")
        if label not in self.model.labels:
            msg = f"classifier: label {label!r} is not one of the model's labels {list(self.model.labels)} ({p.model})"
            raise ValueError(msg)
        self.label = label
        trained_lower = (sidecar or {}).get("preprocess", {}).get("lowercase")
        if p.lowercase is not None and trained_lower is not None and p.lowercase != trained_lower:
            msg = (
                f"classifier: lowercase: {p.lowercase} contradicts the model's training (lowercase "
                f"{trained_lower}, {sidecar_path(p.model)}); leave `lowercase` out"
            )
            raise ValueError(msg)
        self.lowercase = bool(trained_lower if trained_lower is not None else p.lowercase)
        self.threshold = p.threshold if p.threshold is not None else self._calibrated(sidecar)
        self.reason = p.reason or f"{'high' if p.keep_below else 'low'}_{p.score_column}"

    def _local_model(self, model: str) -> str:
        if not io.is_remote(model):
            path = Path(io.canonical(model))
            if not path.is_file():
                msg = f"classifier: model file not found: {model} (recipe key `model`; resolved to {path})"
                raise FileNotFoundError(msg)
            return str(path)
        # A remote model (and its sidecar, if any) is copied once per worker process into a temporary folder.
        folder = Path(tempfile.mkdtemp(prefix="curation-model-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        for uri in (model, sidecar_path(model)):
            fs, path = io.resolve(uri)
            if fs.get_file_info(path).type.name != "File":
                if uri == model:
                    msg = f"classifier: model file not found: {model} (recipe key `model`)"
                    raise FileNotFoundError(msg)
                continue
            with fs.open_input_stream(path) as src, (folder / uri.rsplit("/", 1)[-1]).open("wb") as dst:
                shutil.copyfileobj(src, dst)
        return str(folder / model.rsplit("/", 1)[-1])

    def _calibrated(self, sidecar: dict[str, Any] | None) -> float:
        p = self.params
        if sidecar is None:
            msg = (
                f"classifier: top_fraction needs the calibration sidecar {sidecar_path(p.model)} written by "
                "`curate train-classifier`, and there is none; give `threshold:` instead"
            )
            raise ValueError(msg)
        quantiles = sidecar.get("quantiles", {})
        which = p.calibrate_on or ("pool" if "pool" in quantiles else "heldout")
        if which not in quantiles:
            msg = (
                f"classifier: calibrate_on {which!r}: the sidecar {sidecar_path(p.model)} has quantiles for "
                f"{sorted(quantiles) or 'nothing (trained with holdout 0)'}"
            )
            raise ValueError(msg)
        assert p.top_fraction is not None
        return threshold_for_fraction(quantiles[which], p.top_fraction, keep_below=p.keep_below)

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        self.ready()  # also scored outside a run (a notebook): the model is loaded once
        lines = preprocess(batch.column("text"), lowercase=self.lowercase)
        return {self.params.score_column: positive_scores(self.model, lines, self.label)}

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        values = scores[self.params.score_column]
        mask = values < self.threshold if self.params.keep_below else values >= self.threshold
        return mask, np.where(mask, None, self.reason)
