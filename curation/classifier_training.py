"""Train a fastText document classifier (quality, toxicity, topic) and calibrate it, without Ray.

The `classifier` stage (`curation.stages.classifier.FastTextClassifier`) scores documents with a
model written here; both preprocess texts with its `preprocess`, and the sidecar JSON written next
to the model (the stage module's `sidecar_path`) records what the stage needs to score as trained.
The training texts come from JSONL files (`read_jsonl_texts`) or from what a recipe keeps
(`recipe_texts`, which runs its document stages as a job would).

Defaults follow DCLM's quality classifier (Li et al. 2024, "DataComp-LM", `baselines/
train_fasttext_classifier.py` and its README): fastText's own defaults (lr 0.1, dim 100, ws 5,
epoch 5, minCount 1) with word bigrams (`wordNgrams 2`), labels `__label__hq` / `__label__cc`.
Unlike DCLM we train on one thread with a fixed seed by default, so that a rerun on the same data
gives the same model (fastText's Hogwild training is not deterministic on several threads).
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation import schema, storage
from curation.apply import run_shard
from curation.lang.scripts import written_scripts
from curation.readers import JsonlReader
from curation.recipe import load_recipe
from curation.shards import list_shards
from curation.stages.build import build_stages, set_up
from curation.stages.classifier import (
    SIDECAR_FORMAT,
    Preprocessing,
    label_name,
    positive_scores,
    sidecar_path,
    threshold_for_fraction,
)

QUANTILE_LEVELS = 1001  # score quantiles at every 0.1 %: enough to set a top-10 % or top-1.5 % threshold


# ---------------------------------------------------------------------------------------- metrics


def binary_metrics(scores: np.ndarray, truth: np.ndarray, threshold: float = 0.5) -> dict[str, float]:
    """Precision, recall, F1, accuracy of `score >= threshold` for the positive class, plus ROC AUC."""
    truth = truth.astype(bool)
    predicted = scores >= threshold
    tp = int(np.sum(predicted & truth))
    fp = int(np.sum(predicted & ~truth))
    fn = int(np.sum(~predicted & truth))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    best_f1, best_threshold = _best_f1(scores, truth)
    return {
        "threshold": threshold,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "accuracy": float(np.mean(predicted == truth)) if len(truth) else 0.0,
        "auc": roc_auc(scores, truth),
        "best_f1": best_f1,
        "best_f1_threshold": best_threshold,
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
        "n": len(truth),
    }


def roc_auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """ROC AUC as the Mann-Whitney U statistic (ties count half); NaN with one class only."""
    truth = truth.astype(bool)
    n_pos, n_neg = int(truth.sum()), int((~truth).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    average_rank = ends - (counts - 1) / 2.0  # 1-based mean rank of each distinct score
    ranks = average_rank[inverse]
    return float((ranks[truth].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def macro_f1_threshold(scores: np.ndarray, truth: np.ndarray,
                       max_false_positive_rate: float | None = None) -> tuple[float, float]:
    """The threshold (`score >= t` is positive) of best macro F1 (both classes' F1, averaged), and its macro F1;
    with `max_false_positive_rate`, for a pool where positives are rare: among the thresholds that flag at most
    that share of the negatives, the one flagging fewest whose macro F1 is within one standard error of the best.

    The cut lies midway between two neighbouring distinct scores, not on the lowest positive: a threshold
    set on one held-out score keeps a copy of that very document on the knife's edge. Macro F1 rather than
    the positive class's: a set that is mostly positive (Davidson's tweets are 83 % toxic) rewards a low
    threshold that flags nearly everything, which a source with fewer positives pays for in precision. The
    bound is for a pool whose positives are rare (the web, for toxicity): a labelled set of balanced classes
    prices a flagged negative as it prices a missed positive, and a filter that drops one clean document in
    eight loses far more clean text than it removes toxic text where one in a hundred is toxic. For the same
    reason such a pool takes the highest of the cuts the held-out split cannot tell from the best (Breiman's
    one-standard-error rule; the error taken as a proportion's, sqrt(F1 (1 - F1) / n): a bootstrap of COLD's split
    gives the same, of Davidson's, 83 % toxic, a third more): macro F1 is flat near its peak, and where the peak
    falls there is noise (COLD's cut moved from 0.53 to 0.65 between seeds; within one error, 0.66 to 0.73).
    """
    truth = truth.astype(bool)
    if len(scores) == 0 or truth.all() or not truth.any():
        return 0.5, 0.0
    order = np.argsort(-scores, kind="stable")
    ranked, hits = scores[order], truth[order].astype(np.int64)
    tp = np.cumsum(hits)  # flagging the first k+1 documents
    k = np.arange(1, len(scores) + 1)
    fp, fn = k - tp, truth.sum() - tp
    tn = (~truth).sum() - fp
    f1_pos = 2 * tp / np.maximum(2 * tp + fp + fn, 1)
    f1_neg = 2 * tn / np.maximum(2 * tn + fn + fp, 1)
    cut = np.r_[ranked[1:] != ranked[:-1], True]
    if max_false_positive_rate is not None:
        cut &= fp <= max_false_positive_rate * (~truth).sum()
        if not cut.any():  # even the highest score is a negative's beyond the bound: flag nothing
            negatives = int((~truth).sum())
            return float(np.nextafter(ranked[0], np.inf)), negatives / (2 * negatives + int(truth.sum()))
    macro = np.where(cut, (f1_pos + f1_neg) / 2, -1.0)
    i = int(np.argmax(macro))
    if max_false_positive_rate is not None:
        error = np.sqrt(macro[i] * (1 - macro[i]) / len(scores))
        i = int(np.argmax(macro >= macro[i] - error))  # the first such cut: the fewest flagged
    below = ranked[i + 1] if i + 1 < len(ranked) else 0.0
    return float((ranked[i] + below) / 2), float(macro[i])


def _best_f1(scores: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    if not truth.any():
        return 0.0, 1.0
    order = np.argsort(-scores, kind="stable")
    sorted_scores, sorted_truth = scores[order], truth[order]
    tp = np.cumsum(sorted_truth)
    kept = np.arange(1, len(scores) + 1)
    last = np.r_[sorted_scores[1:] != sorted_scores[:-1], True]  # cut only between distinct scores
    f1 = 2 * tp / (kept + truth.sum())
    f1 = np.where(last, f1, -1.0)
    i = int(np.argmax(f1))
    return float(f1[i]), float(sorted_scores[i])


# --------------------------------------------------------------------------------------- training


@dataclass
class Hyperparameters:
    """fastText `train_supervised` options; defaults are DCLM's (fastText defaults + wordNgrams 2)."""

    lr: float = 0.1
    dim: int = 100
    ws: int = 5
    epoch: int = 5
    minCount: int = 1  # fastText's own spelling, so the sidecar reads like its docs
    wordNgrams: int = 2
    loss: str = "softmax"
    minn: int = 0  # character n-grams of each word, minn..maxn long (0: none, fastText's supervised default)
    maxn: int = 0
    bucket: int | None = None  # None: min(2M, 2 x training tokens), see `auto_bucket`
    thread: int = 1  # one thread: the same data and seed give the same model

    def as_kwargs(self, seed: int) -> dict[str, Any]:
        return {**asdict(self), "seed": seed, "verbose": 0}


def auto_bucket(tokens: int) -> int:
    """Hash buckets for word n-grams: fastText's 2M, or twice the training tokens if that is less.

    A text of N tokens has fewer than N distinct bigrams, so 2N buckets hold every n-gram of the
    training set with few collisions, while the model (buckets x dim floats: 800 MB at 2M x 100, the
    size of DCLM's classifier) stays proportionate to its data.
    """
    return int(min(2_000_000, max(10_000, 2 * tokens)))


@dataclass
class Corpus:
    """Labelled texts of one class and where they came from."""

    texts: list[str]
    sources: list[str] = field(default_factory=list)
    skipped: int = 0  # records without usable text


def _files(patterns: Iterable[str]) -> Iterator[str]:
    """Every file the patterns match (local or URI), a pattern matching none an error naming it."""
    for pattern in patterns:
        uris = storage.expand(pattern)
        if not uris:
            msg = f"no file matches {pattern!r}"
            raise FileNotFoundError(msg)
        yield from uris


def read_jsonl_texts(paths: Iterable[str], text_field: str = "text", limit: int | None = None) -> Corpus:
    """Texts of JSONL files (plain or compressed, local or URI); bad lines and empty texts are skipped."""
    reader = JsonlReader(text_field=text_field)
    corpus = Corpus([])
    for uri in _files(paths):
        corpus.sources.append(uri)
        read, missing = len(corpus.texts), 0
        for record in reader.records(uri):
            if record.reason is not None or not (record.text or "").strip():
                corpus.skipped += 1
                missing += record.reason == "no_text_field"
                continue
            corpus.texts.append(record.text)  # type: ignore[arg-type]
            if limit is not None and len(corpus.texts) >= limit:
                return corpus
        if len(corpus.texts) == read and missing:  # a misnamed field read nothing: "0 positive, 0 negative"
            msg = f"{uri}: none of its lines has a {text_field!r} field ({missing} without it; --text-field names it)"
            raise ValueError(msg)
    return corpus


def read_csv_labelled(paths: Iterable[str], text_field: str, label_field: str,
                      positive_values: Iterable[str], limit: int | None = None) -> tuple[Corpus, Corpus]:
    """(positives, negatives) of labelled CSV files (a header row; local or URI): a row is positive when its
    `label_field` is one of `positive_values`, negative otherwise; rows without text are skipped."""
    positive = {str(v) for v in positive_values}
    pos, neg = Corpus([]), Corpus([])
    for uri in _files(paths):
        pos.sources.append(uri)
        neg.sources.append(uri)
        fs, path = storage.resolve(uri)
        with fs.open_input_stream(path) as raw:
            rows = csv.DictReader(io.StringIO(raw.read().decode("utf-8-sig"), newline=""))
            for field_name in (text_field, label_field):
                if field_name not in (rows.fieldnames or []):
                    msg = f"{uri}: no column {field_name!r} (columns: {rows.fieldnames})"
                    raise ValueError(msg)
            for row in rows:
                text = (row[text_field] or "").strip()
                corpus = pos if (row[label_field] or "").strip() in positive else neg
                if not text:
                    corpus.skipped += 1
                    continue
                corpus.texts.append(text)
                if limit is not None and min(len(pos.texts), len(neg.texts)) >= limit:
                    return pos, neg
    return pos, neg


def read_ngram_lexicon(path: str) -> tuple[str, ...]:
    """The phrases of an n-gram lexicon: a CSV file whose first column is the phrase, after a header row (Davidson
    et al.'s `refined_ngram_dict.csv`: `ngram,prob`, hate speech n-grams and their probability of hate), any line
    ends; lowercased, each once."""
    fs, resolved = storage.resolve(path)
    with fs.open_input_stream(resolved) as raw:
        rows = list(csv.reader(io.StringIO(raw.read().decode("utf-8-sig"), newline="")))
    return tuple(sorted({row[0].strip().lower() for row in rows[1:] if row and row[0].strip()}))


def recipe_texts(recipe_path: str, limit: int | None = None) -> Corpus:
    """The documents a recipe keeps: its sources read and passed through its document stages as a job's shard
    tasks run them (`curation.apply.run_shard`), in this process.

    Lets a user say "positives are what this recipe produces" (e.g. Wikipedia-like sources through
    extract and normalize) without writing them out first. Only document stages apply: corpus stages
    (deduplication) need the whole corpus and are skipped. `limit` stops after that many documents.
    """
    recipe = load_recipe(recipe_path)
    stages = set_up(build_stages(recipe))
    sources = {s.name: s for s in recipe.sources}
    corpus = Corpus([])
    for shard in list_shards(recipe):
        corpus.sources.append(shard.uri)
        for batch in run_shard(shard, sources[shard.source], stages, batch_rows=256, rejects_sample=0.0):
            kept = pc.and_(pc.is_null(batch.column(schema.REASON)), pc.is_valid(batch.column("text")))
            dropped = batch.num_rows - pc.sum(pc.cast(kept, pa.int64())).as_py()
            ends = pc.sum(pc.cast(pc.equal(batch.column(schema.REASON), schema.END_OF_SHARD), pa.int64())).as_py()
            corpus.skipped += dropped - (ends or 0)
            for text in batch.filter(kept).column("text").to_pylist():
                if text.strip():
                    corpus.texts.append(text)
                    if limit is not None and len(corpus.texts) >= limit:
                        return corpus
    return corpus


def _split(n: int, holdout: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    n_held = round(n * holdout)
    if holdout > 0 and n >= 2:
        n_held = min(max(n_held, 1), n - 1)  # each class keeps at least one example on each side
    return order[n_held:], order[:n_held]


_TRAIN = """
import json, sys
import fasttext
kwargs, cutoff = json.loads(sys.argv[3]), json.loads(sys.argv[4])
model = fasttext.train_supervised(input=sys.argv[1], **kwargs)
if cutoff is not None:
    model.quantize(input=sys.argv[1], qnorm=True, retrain=True, cutoff=cutoff, thread=kwargs["thread"],
                   verbose=0)
model.save_model(sys.argv[2])
"""


def _train_in_fresh_process(train_file: Path, model_file: Path, kwargs: dict[str, Any],
                            quantize_cutoff: int | None = None) -> None:
    """`fasttext.train_supervised` in a new Python process.

    Seen with fasttext-numpy2-wheel 0.9.2: a second `train_supervised` call in the same process, on
    the same file with the same seed and one thread, gives a different model, and now and then
    fails with "Encountered NaN" - it reads memory that an earlier model freed. The first call of a
    fresh process gives the same model every time, so each training gets a fresh process.
    """
    done = subprocess.run(
        [sys.executable, "-c", _TRAIN, str(train_file), str(model_file), json.dumps(kwargs),
         json.dumps(quantize_cutoff)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        msg = f"fastText training failed: {done.stderr.strip()[-2000:]}"
        raise RuntimeError(msg)


def _quantiles(scores: np.ndarray) -> list[float] | None:
    if len(scores) == 0:
        return None
    values = np.quantile(scores, np.linspace(0.0, 1.0, QUANTILE_LEVELS))
    return [round(float(v), 6) for v in values]


@dataclass
class _Examples:
    """A class's distinct preprocessed lines (none also in the other class) and which of them train or are held out."""

    lines: list[str]
    distinct: int  # before removing those found in both classes
    train: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    heldout: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def _distinct_examples(pos_lines: list[str], neg_lines: list[str]) -> tuple[_Examples, _Examples, int]:
    """Each class's distinct non-empty lines less those found in both; and how many were in both."""
    pos_unique, neg_unique = dict.fromkeys(t for t in pos_lines if t), dict.fromkeys(t for t in neg_lines if t)
    both = pos_unique.keys() & neg_unique.keys()
    pos = _Examples([t for t in pos_unique if t not in both], len(pos_unique))
    neg = _Examples([t for t in neg_unique if t not in both], len(neg_unique))
    if len(pos.lines) < 2 or len(neg.lines) < 2:
        msg = (f"too few distinct examples to train: {len(pos.lines)} positive, {len(neg.lines)} negative "
               "(need 2 each)")
        raise ValueError(msg)
    return pos, neg, len(both)


def _split_examples(pos: _Examples, neg: _Examples, holdout: float, balance: bool, rng: np.random.Generator) -> int:
    """Sets each class's train and held-out parts (stratified); with `balance` the larger class's training part is
    down-sampled to the smaller's. Returns how many training examples balancing dropped."""
    pos.train, pos.heldout = _split(len(pos.lines), holdout, rng)
    neg.train, neg.heldout = _split(len(neg.lines), holdout, rng)
    if not balance:
        return 0
    n = min(len(pos.train), len(neg.train))
    dropped = len(pos.train) + len(neg.train) - 2 * n
    pos.train, neg.train = rng.permutation(pos.train)[:n], rng.permutation(neg.train)[:n]
    return dropped


def _fit(train: list[tuple[str, str]], model_file: Path, hp: Hyperparameters, seed: int,
         quantize: int | None) -> float:
    """Trains on the labelled lines (in a fresh process) into `model_file`; returns the seconds it took."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="curation-ft-") as tmp:
        train_file = Path(tmp) / "train.txt"
        with train_file.open("w", encoding="utf-8") as f:
            for lab, text in train:
                f.write(f"{lab} {text}\n")
        _train_in_fresh_process(train_file, model_file, hp.as_kwargs(seed), quantize)
    return time.perf_counter() - started


def _evaluate(model: Any, pos: _Examples, neg: _Examples, pos_label: str, max_false_positive_rate: float | None
              ) -> tuple[dict[str, Any] | None, float | None, dict[str, list[float]]]:
    """Held-out metrics, the threshold of best macro F1 there (`macro_f1_threshold`; None without a held-out part)
    and score quantiles."""
    held_lines = [pos.lines[i] for i in pos.heldout] + [neg.lines[i] for i in neg.heldout]
    held_truth = np.r_[np.ones(len(pos.heldout), bool), np.zeros(len(neg.heldout), bool)]
    held_scores = positive_scores(model, held_lines, pos_label)
    metrics = binary_metrics(held_scores, held_truth) if len(held_lines) else None
    calibrated = None
    if metrics:
        bound = max_false_positive_rate
        calibrated, metrics["calibrated_macro_f1"] = macro_f1_threshold(held_scores, held_truth, bound)
        metrics["calibrated_false_positive_rate"] = float(np.mean(held_scores[~held_truth] >= calibrated))
    quantiles = {
        "heldout": _quantiles(held_scores),
        "heldout_positive": _quantiles(held_scores[held_truth]),
        "heldout_negative": _quantiles(held_scores[~held_truth]),
    }
    return metrics, calibrated, {k: v for k, v in quantiles.items() if v is not None}


def _class_data(corpus: Corpus, examples: _Examples) -> dict[str, Any]:
    return {"sources": corpus.sources, "docs": len(corpus.texts), "skipped": corpus.skipped,
            "distinct": examples.distinct, "train": len(examples.train), "heldout": len(examples.heldout)}


def _write_sidecar(model_file: Path, sidecar: dict[str, Any]) -> None:
    sidecar_file = Path(sidecar_path(str(model_file)))
    tmp_sidecar = sidecar_file.with_name(sidecar_file.name + ".tmp")
    tmp_sidecar.write_text(json.dumps(sidecar, indent=1) + "\n", encoding="utf-8")
    tmp_sidecar.replace(sidecar_file)


def train_classifier(
    positives: Corpus,
    negatives: Corpus,
    output: str,
    *,
    label: str = "hq",
    negative_label: str = "cc",
    seed: int = 42,
    holdout: float = 0.1,
    lowercase: bool = True,
    words: bool = True,
    social: bool = False,
    lexicon: bool = False,
    ngrams: Sequence[str] = (),
    lang: str | None = None,
    quantize: int | None = None,
    balance: bool = False,
    max_false_positive_rate: float | None = None,
    calibration: Corpus | None = None,
    hyperparameters: Hyperparameters | None = None,
) -> dict[str, Any]:
    """Train, evaluate on a seeded stratified held-out split, save the model and its sidecar; return the sidecar.

    Exact duplicates (after preprocessing) are removed within each class, and a text found in both
    classes is removed from both, so that held-out metrics are not inflated by copies of training
    lines nor blurred by contradictory labels. With `balance`, the larger class is down-sampled in
    the training part only (DCLM trains on balanced classes). `calibration`: unlabelled documents
    like the pool the classifier will filter; their score quantiles make `top_fraction` exact for
    that pool (held-out quantiles are stored always, and are the fallback).

    Preprocessing (`curation.stages.classifier.Preprocessing`, recorded in the sidecar so that the stage
    scores as trained): `words` segments each text into its language's words (`lang`, the training texts'
    language; None: each text's script decides), `social` drops social-media quirks, `lexicon` adds a token per
    flagged word, `ngrams` a token per occurrence of one of these phrases (`read_ngram_lexicon`); with `words`,
    Chinese texts are read in Simplified characters (`simplified`). `quantize`: keep
    this many words and n-grams, quantized (fastText's `.ftz`; a few MB).
    The held-out split also calibrates a threshold: that of best macro F1 there (`calibrated_threshold`,
    `macro_f1_threshold`); with `max_false_positive_rate`, among those that flag at most that share of the held-out
    negatives, the one flagging fewest within one standard error of the best.
    """
    import fasttext

    if not 0.0 <= holdout < 1.0:
        msg = f"holdout must be in [0, 1), got {holdout}"
        raise ValueError(msg)
    if max_false_positive_rate is not None and not 0.0 <= max_false_positive_rate <= 1.0:
        msg = f"max_false_positive_rate must be in [0, 1], got {max_false_positive_rate}"
        raise ValueError(msg)
    hp = hyperparameters or Hyperparameters()
    pos_label, neg_label = label_name(label), label_name(negative_label)
    if pos_label == neg_label:
        msg = f"the positive and negative labels are the same ({pos_label})"
        raise ValueError(msg)
    # Chinese words are read in one script (Simplified), at training and at scoring time, with the words
    prep = Preprocessing(lowercase=lowercase, words=words, social=social, lexicon=lexicon, simplified=words,
                         ngrams=tuple(sorted({p.strip().lower() for p in ngrams if p.strip()})))

    def lines(texts: list[str]) -> list[str]:
        return prep.lines(texts, [lang] * len(texts) if lang else None)

    pos, neg, in_both = _distinct_examples(lines(positives.texts), lines(negatives.texts))
    rng = np.random.default_rng(seed)
    downsampled = _split_examples(pos, neg, holdout, balance, rng)
    train = [(pos_label, pos.lines[i]) for i in pos.train] + [(neg_label, neg.lines[i]) for i in neg.train]
    train = [train[i] for i in rng.permutation(len(train))]  # fastText's SGD sees the classes mixed
    if hp.bucket is None:
        hp = replace(hp, bucket=auto_bucket(sum(len(text.split(" ")) for _, text in train)))

    out_path = Path(output)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_model = out_path.with_name(out_path.name + ".tmp")
    train_seconds = _fit(train, tmp_model, hp, seed, quantize)
    model = fasttext.load_model(str(tmp_model))
    metrics, calibrated, quantiles = _evaluate(model, pos, neg, pos_label, max_false_positive_rate)
    calibration_docs = 0
    if calibration is not None and calibration.texts:
        pool = [t for t in lines(calibration.texts) if t]
        calibration_docs = len(pool)
        if (pool_quantiles := _quantiles(positive_scores(model, pool, pos_label))) is not None:
            quantiles["pool"] = pool_quantiles
    tmp_model.replace(out_path)

    sidecar = {
        "format": SIDECAR_FORMAT,
        "model": out_path.name,
        "model_bytes": out_path.stat().st_size,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "labels": list(model.labels),
        "positive_label": pos_label,
        "negative_label": neg_label,
        "preprocess": prep.describe(),
        "lang": lang,
        "scripts": written_scripts([*positives.texts, *negatives.texts]),
        "quantized": quantize,
        "calibrated_threshold": calibrated,
        "max_false_positive_rate": max_false_positive_rate,
        "hyperparameters": asdict(hp),
        "seed": seed,
        "holdout": holdout,
        "balance": balance,
        "data": {
            "positive": _class_data(positives, pos),
            "negative": _class_data(negatives, neg),
            "in_both_classes_removed": in_both,
            "downsampled": downsampled,
            "calibration_docs": calibration_docs,
        },
        "train_seconds": round(train_seconds, 3),
        "vocabulary": len(model.words),
        "heldout_metrics": metrics,
        "quantile_levels": QUANTILE_LEVELS,
        "quantiles": quantiles,
    }
    _write_sidecar(out_path, sidecar)
    return sidecar


def format_report(sidecar: dict[str, Any], output: str) -> str:
    """A readable summary of a training run (what `curate train-classifier` prints)."""
    data, hp, m = sidecar["data"], sidecar["hyperparameters"], sidecar["heldout_metrics"]
    pos, neg = data["positive"], data["negative"]
    lines = []
    for name, part in (("positives", pos), ("negatives", neg)):
        skipped = f", {part['skipped']:,} records skipped" if part["skipped"] else ""
        lines.append(
            f"{name}  {part['docs']:>8,} docs from {len(part['sources'])} file(s), {part['distinct']:,} distinct"
            + skipped
        )
    if data["in_both_classes_removed"]:
        lines.append(f"removed {data['in_both_classes_removed']:,} texts found in both classes")
    lines += [
        f"split      seed {sidecar['seed']}, holdout {sidecar['holdout']:.0%}: train {pos['train']:,} pos / "
        f"{neg['train']:,} neg, held out {pos['heldout']:,} pos / {neg['heldout']:,} neg"
        + (f" (balanced: {data['downsampled']:,} dropped from training)" if sidecar["balance"] else ""),
        "fastText   "
        + " ".join(f"{k} {v}" for k, v in hp.items())
        + f"; lowercase {sidecar['preprocess']['lowercase']}, words {bool(sidecar['preprocess'].get('words'))}, "
        f"social {sidecar['preprocess'].get('social', False)}, lexicon {bool(sidecar['preprocess'].get('lexicon'))}"
        + (f", lang {sidecar['lang']}" if sidecar.get("lang") else "")
        + (f", written in {'+'.join(sidecar['scripts'])}" if sidecar.get("scripts") else "")
        + (f", quantized (cutoff {sidecar['quantized']:,})" if sidecar.get("quantized") else ""),
        f"trained    in {sidecar['train_seconds']:.1f} s, vocabulary {sidecar['vocabulary']:,} words",
    ]
    if m:
        lines += [
            f"held-out   positive label {sidecar['positive_label']} at score >= {m['threshold']}:",
            f"           precision {m['precision']:.3f}  recall {m['recall']:.3f}  F1 {m['f1']:.3f}  "
            f"accuracy {m['accuracy']:.3f}  AUC {m['auc']:.3f}",
            f"           best F1 {m['best_f1']:.3f} at score >= {m['best_f1_threshold']:.3f}; macro F1 "
            f"{m['calibrated_macro_f1']:.3f} at score >= {sidecar['calibrated_threshold']:.3f} (`threshold: calibrated`"
            + (f": held-out negatives flagged {m['calibrated_false_positive_rate']:.1%}, at most "
               f"{sidecar['max_false_positive_rate']:.0%}, the fewest within one standard error of the best macro F1"
               if sidecar.get("max_false_positive_rate") is not None else ": the best macro F1") + ")",
        ]
    else:
        lines.append("held-out   none (holdout 0): no metrics, no held-out quantiles")
    for name, values in sidecar["quantiles"].items():
        picks = {p: threshold_for_fraction(values, 1 - p / 100) for p in (10, 50, 90, 99)}
        lines.append(f"quantiles  {name:<17} " + "  ".join(f"p{p} {v:.3f}" for p, v in picks.items()))
    lines.append(f"wrote      {output} ({sidecar['model_bytes'] / 1e6:.1f} MB) and {sidecar_path(output)}")
    return "\n".join(lines)


# ------------------------------------------------------------------------- shipped toxicity models


@dataclass(frozen=True)
class ToxicityPreset:
    """How `make toxicity-models` trains one language's model from a labelled set of the test data."""

    files: tuple[str, ...]  # CSV files, relative to the data root
    text_field: str
    label_field: str
    positive_values: tuple[str, ...]
    ngrams: str | None = None  # an n-gram lexicon (`read_ngram_lexicon`) of the same data, relative to the root


TOXICITY_PRESETS = {
    # Davidson et al. 2017 (MIT): tweets; class 0 hate speech, 1 offensive language, 2 neither.
    # Its hate n-gram lexicon (`refined_ngram_dict.csv`, 178 phrases) is a feature: hate speech of other sources
    # shares its phrases more than its tweets' words (benchmarks/toxicity_transfer.py, Stormfront's forum).
    "en": ToxicityPreset(("toxicity/davidson/labeled_data.csv",), "tweet", "class", ("0", "1"),
                         ngrams="toxicity/davidson/refined_ngram_dict.csv"),
    # COLD, Deng et al. 2022 (Apache-2.0): Weibo and Zhihu comments on race, gender, region; 1 offensive.
    "zh": ToxicityPreset(("toxicity/cold/train.csv", "toxicity/cold/dev.csv"), "TEXT", "label", ("1",)),
}

# The threshold: among the held-out split's cuts flagging at most 10 % of its clean texts, the one flagging fewest
# within one standard error of the best macro F1 (`macro_f1_threshold`). COLD's best cut flags 11 % of its clean
# comments, and on clean web text it flagged 14 % of the UDHR's and Leipzig's Chinese sentences: the web's toxic
# share is small, a flagged clean text costs more there than on a balanced set (benchmarks/toxicity_transfer.py).
TOXICITY_MAX_FALSE_POSITIVES = 0.10
# Features and training that carry across sources (benchmarks/toxicity_transfer.py): each language's words,
# their character n-grams (a misspelt or new slur shares most of them with a known one), word bigrams, the
# flagged-word lexicon as a feature, social-media quirks dropped; classes balanced (Davidson is 83 % toxic,
# a forum is not); a small quantized model, trained on one thread with a fixed seed (reproducible).
TOXICITY_TRAINING: dict[str, Any] = {"words": True, "social": True, "lexicon": True, "balance": True,
                                     "quantize": 100_000, "max_false_positive_rate": TOXICITY_MAX_FALSE_POSITIVES}
# Chinese words are one to four characters: their n-grams are their characters and character pairs.
TOXICITY_HYPERPARAMETERS = {
    "en": Hyperparameters(lr=0.2, dim=32, epoch=10, wordNgrams=2, minn=2, maxn=5, bucket=200_000),
    "zh": Hyperparameters(lr=0.1, dim=64, epoch=5, wordNgrams=2, minn=1, maxn=3, bucket=200_000),
}


def train_toxicity(positives: Corpus, negatives: Corpus, output: str, lang: str, seed: int = 42,
                   ngrams: Sequence[str] = ()) -> dict[str, Any]:
    """A toxicity model as the shipped ones are trained (labels `toxic`/`ok`), on any labelled texts; `ngrams`: the
    phrases of an n-gram lexicon (`toxicity_ngrams`: the preset's)."""
    hyperparameters = TOXICITY_HYPERPARAMETERS.get(lang, TOXICITY_HYPERPARAMETERS["en"])
    return train_classifier(positives, negatives, output, label="toxic", negative_label="ok", seed=seed, lang=lang,
                            hyperparameters=hyperparameters, ngrams=ngrams, **TOXICITY_TRAINING)


def toxicity_ngrams(lang: str, data_root: str | Path) -> tuple[str, ...]:
    """The phrases of the n-gram lexicon of `lang`'s preset, under `data_root` (none without one)."""
    preset = TOXICITY_PRESETS.get(lang)
    if preset is None or preset.ngrams is None:
        return ()
    return read_ngram_lexicon(str(Path(data_root) / preset.ngrams))


def train_toxicity_preset(lang: str, data_root: str, output: str, seed: int = 42) -> dict[str, Any]:
    """The shipped model of `lang` (`TOXICITY_PRESETS`), from the labelled set under `data_root`."""
    if lang not in TOXICITY_PRESETS:
        msg = f"no toxicity preset for {lang!r} (presets: {', '.join(TOXICITY_PRESETS)})"
        raise ValueError(msg)
    preset = TOXICITY_PRESETS[lang]
    files = [str(Path(data_root) / f) for f in preset.files]
    positives, negatives = read_csv_labelled(files, preset.text_field, preset.label_field, preset.positive_values)
    return train_toxicity(positives, negatives, output, lang, seed, ngrams=toxicity_ngrams(lang, data_root))
