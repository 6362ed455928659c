"""Toxicity filters on real tweets: our fastText classifier vs the flagged-word list, on Davidson et al.

Data: `toxicity/davidson/labeled_data.csv` (t-davidson/hate-speech-and-offensive-language, MIT;
24,783 tweets, class 0 hate speech, 1 offensive language, 2 neither) under `$CURATION_TESTDATA`
or ../shared/data (beside the project). Task: flag hate + offensive, keep "neither".

Method: tweets are HTML-unescaped and de-duplicated (same text after the classifier's preprocessing;
texts with conflicting classes dropped), then split in two seeded, class-stratified halves. The
classifier is trained with `curation.classifier_training.train_classifier` (our `curate train-classifier`:
DCLM hyper-parameters, its own 10 % held-out split) on half A and measured on half B through the
`classifier` stage (`keep_below`, threshold 0.5, and the best-F1 threshold of its held-out split).
The word-list filter (`toxicity` stage) is measured on half B too: a tweet is flagged if it has
>= 1 flagged word, and at the stage's default ratio (0.01), with its default ignore list and with
better-profanity's full list, and with dolma's LDNOOBW list (C4's rule) as the peer list.

Figures: recall of hate + offensive, recall of hate alone, false-positive rate on "neither",
precision, F1. Beside them: "flag everything" (the floor any filter must beat on precision), and
Davidson et al. 2017 (ICWSM), whose 3-class logistic regression reports precision 0.91, recall
0.90, F1 0.90 (weighted) - a different task (3 classes), cited as the paper's scale.

    .venv/bin/python benchmarks/toxicity.py [--seed 42]
"""

from __future__ import annotations

import argparse
import csv
import html
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from curation import schema
from curation.apply import run_stage
from curation.classifier_training import Corpus, roc_auc, train_classifier
from curation.stages.classifier import FastTextClassifier, load_sidecar, preprocess
from curation.stages.toxicity import Toxicity

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _data import data_root
    from _results import figure, write_results
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._data import data_root
    from benchmarks._results import figure, write_results


def load_davidson(path: Path) -> tuple[list[str], np.ndarray]:
    """Davidson CSV -> (texts, classes): the adapter lives here, not in the library."""
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    texts = [html.unescape(r["tweet"]) for r in rows]
    classes = np.array([int(r["class"]) for r in rows])
    keys = preprocess(texts, lowercase=True)
    first: dict[str, int] = {}
    conflict: set[str] = set()
    for i, key in enumerate(keys):
        if key in first and classes[first[key]] != classes[i]:
            conflict.add(key)
        first.setdefault(key, i)
    keep = [i for k, i in first.items() if k not in conflict and k]
    print(f"davidson: {len(rows):,} tweets, {len(rows) - len(keep):,} duplicates/conflicts removed, {len(keep):,} left")
    return [texts[i] for i in keep], classes[keep]


def halves(classes: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = [], []
    for c in np.unique(classes):
        idx = rng.permutation(np.flatnonzero(classes == c))
        a.append(idx[: len(idx) // 2])
        b.append(idx[len(idx) // 2 :])
    return np.sort(np.concatenate(a)), np.sort(np.concatenate(b))


def batch(texts: list[str]) -> pa.Table:
    n = len(texts)
    return pa.table(
        {
            "id": [f"{i:08x}" for i in range(n)],
            "source": ["tweets"] * n,
            "text": texts,
            schema.STAGE: pa.nulls(n, pa.string()),
            schema.REASON: pa.nulls(n, pa.string()),
            schema.DETAIL: pa.nulls(n, pa.string()),
        }
    )


def figures(flagged: np.ndarray, classes: np.ndarray) -> dict[str, float]:
    toxic = classes != 2
    tp = int(np.sum(flagged & toxic))
    precision = tp / max(int(flagged.sum()), 1)
    recall = tp / max(int(toxic.sum()), 1)
    return {
        "recall": recall,
        "hate_recall": float(np.mean(flagged[classes == 0])),
        "fpr": float(np.mean(flagged[~toxic])),
        "precision": precision,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
    }


def stage_flags(stage: FastTextClassifier | Toxicity, texts: list[str]) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    out = run_stage(stage, batch(texts))
    seconds = time.perf_counter() - started
    return np.array([r is not None for r in out.column(schema.REASON).to_pylist()]), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    csv_path = data_root() / "toxicity" / "davidson" / "labeled_data.csv"
    if not csv_path.is_file():
        print(f"skipped: {csv_path} not found (set CURATION_TESTDATA to the test data folder)")
        return 0
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    texts, classes = load_davidson(csv_path)
    a, b = halves(classes, args.seed)
    test_texts, test_classes = [texts[i] for i in b], classes[b]
    counts = {name: int(np.sum(test_classes == c)) for c, name in enumerate(("hate", "offensive", "neither"))}
    print(f"halves (seed {args.seed}): train {len(a):,}, test {len(b):,} ({counts})")

    rows: list[tuple[str, dict[str, float], str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        model = str(Path(tmp) / "toxic.bin")
        started = time.perf_counter()
        car = train_classifier(
            Corpus([texts[i] for i in a if classes[i] != 2], [str(csv_path)]),
            Corpus([texts[i] for i in a if classes[i] == 2], [str(csv_path)]),
            model,
            label="toxic",
            negative_label="ok",
            seed=args.seed,
        )
        print(f"trained in {time.perf_counter() - started:.1f} s; own held-out split: "
              f"F1 {car['heldout_metrics']['f1']:.3f}, AUC {car['heldout_metrics']['auc']:.3f}, "
              f"best-F1 threshold {car['heldout_metrics']['best_f1_threshold']:.3f}")  # fmt: skip
        assert load_sidecar(model) is not None
        for threshold, label in ((0.5, "0.5"), (car["heldout_metrics"]["best_f1_threshold"], "best-F1 of held-out")):
            stage = FastTextClassifier(model=model, label="toxic", threshold=threshold, keep_below=True,
                                       score_column="toxicity_score", reason="toxic")  # fmt: skip
            flagged, seconds = stage_flags(stage, test_texts)
            rows.append((f"fastText classifier, threshold {label} ({threshold:.3f})", figures(flagged, test_classes),
                         f"{len(test_texts) / seconds:,.0f} docs/s incl. load"))  # fmt: skip
        # The sidecar's quantiles at work: keep the least toxic 95 % of held-out "neither" tweets -> FPR ~5 %.
        stage = FastTextClassifier(model=model, label="toxic", top_fraction=0.95, calibrate_on="heldout_negative",
                                   keep_below=True, score_column="toxicity_score", reason="toxic")  # fmt: skip
        flagged, seconds = stage_flags(stage, test_texts)
        rows.append((f"fastText, top_fraction 0.95 of held-out neither ({stage.threshold:.3f})",
                     figures(flagged, test_classes), f"{len(test_texts) / seconds:,.0f} docs/s"))  # fmt: skip
        scored = run_stage(FastTextClassifier(model=model, label="toxic", threshold=0.0), batch(test_texts))
        auc = roc_auc(scored.column("quality_score").to_numpy(zero_copy_only=False), test_classes != 2)
        print(f"classifier ROC AUC on the test half: {auc:.3f}")

    lists = [
        ("word list (default ignore)", {}),
        ("word list (full better-profanity)", {"ignore": []}),
    ]
    ldnoobw = data_root() / "toxicity" / "lexicons" / "dolma_naughty_words_en.txt"
    if ldnoobw.is_file():
        lists.append(("peer: LDNOOBW list (C4/dolma)", {"wordlist": str(ldnoobw), "ignore": []}))
    for name, params in lists:
        stage = Toxicity(keep_scores=True, **params)
        started = time.perf_counter()
        scores = stage.score(batch(test_texts))
        seconds = time.perf_counter() - started
        speed = f"{len(test_texts) / seconds:,.0f} docs/s"
        rows.append((f"{name}, >= 1 flagged word", figures(scores["flagged_words"] >= 1, test_classes), speed))
        at_default, _ = stage_flags(stage, test_texts)
        rows.append((f"{name}, ratio > {stage.params.max_ratio} (default)", figures(at_default, test_classes), speed))
    rows.append(("floor: flag everything", figures(np.ones(len(b), bool), test_classes), ""))

    print()
    print(f"{'filter (test half, ' + str(len(b)) + ' tweets)':<58} {'recall':>7} {'hate r':>7} {'FPR':>7} "
          f"{'prec':>7} {'F1':>7}  speed")  # fmt: skip
    for name, f, speed in rows:
        print(f"{name:<58} {f['recall']:7.3f} {f['hate_recall']:7.3f} {f['fpr']:7.3f} {f['precision']:7.3f} "
              f"{f['f1']:7.3f}  {speed}")  # fmt: skip
    print(f"{'reference: Davidson et al. 2017, 3-class LR (weighted)':<58} {0.90:7.3f} {'':>7} {'':>7} {0.91:7.3f} "
          f"{0.90:7.3f}")  # fmt: skip
    peer_name, peer = next(((n, f) for n, f, _ in rows if n.startswith("peer: LDNOOBW") and ">= 1" in n),
                           ("floor: flag everything", rows[-1][1]))
    results = []
    for name, f, _ in rows:
        theirs = (None, None) if name.startswith("peer: ") else (peer_name.removeprefix("peer: "), peer["recall"])
        results.append(figure(f"{name}: recall", f["recall"], "share", *theirs,
                              note=f"FPR {f['fpr']:.3f}, precision {f['precision']:.3f}, F1 {f['f1']:.3f}, hate "
                                   f"recall {f['hate_recall']:.3f}; {len(b)} test tweets"))
    write_results("toxicity", [*results, figure("classifier ROC AUC, test half", auc, "")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
