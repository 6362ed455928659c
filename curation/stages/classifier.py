"""A fastText classifier as a filter: quality (DCLM-style), toxicity, or any binary label.

The model is a fastText supervised model (`curate train-classifier` writes one, with its sidecar
JSON; DCLM's or another model trained elsewhere works too). Score = probability of the positive
label. Keep rule: `score >= threshold`, or the best `top_fraction` of documents by a threshold
read from the sidecar's score quantiles (DCLM kept the top 10 % of its pool by fastText score).
With `keep_below` the rule turns around (a toxicity model: keep `score < threshold`).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import Field, model_validator

from curation import io
from curation.classify import (
    label_name,
    load_sidecar,
    positive_scores,
    preprocess,
    sidecar_path,
    threshold_for_fraction,
)
from curation.stages.base import DocumentFilter


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
    (`curation.classify.preprocess`, settings from the sidecar). The model is loaded once per worker process.
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
        if not hasattr(self, "model"):  # used outside an executor (a notebook, a test): set up on first use
            self.setup()
        lines = preprocess(batch.column("text"), lowercase=self.lowercase)
        return {self.params.score_column: positive_scores(self.model, lines, self.label)}

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        values = scores[self.params.score_column]
        mask = values < self.threshold if self.params.keep_below else values >= self.threshold
        return mask, np.where(mask, None, self.reason)
