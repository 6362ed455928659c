"""Evaluation items that are not held out: those sharing an n-gram with a variant's training documents.

Two passes of `curation.dedup.decontam.NgramIndex` (13-word n-grams by default, the words MinHash and
decontamination use; n-grams of fewer than three words with a letter are not compared): the evaluation sets'
n-grams are indexed and every training document is looked up (`flagged_documents`, a task per documents
file); then the few documents that matched are indexed and each evaluation item is looked up in them
(`overlapping_items`), which says how many items of each set overlap a variant's data. An item shorter than
the n-gram cannot be compared: it is counted as `unchecked`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curation import storage
from curation.ablate.evalsets import LoadedSet
from curation.dedup.decontam import NgramIndex

TRAIN = "train"
EXAMPLES = 5  # item indices named per set and variant


def eval_index(sets: list[LoadedSet], ngram: int) -> NgramIndex:
    return NgramIndex.from_texts({s.name: s.overlap_texts() for s in sets}, ngram)


def flagged_documents(index: NgramIndex, documents: str) -> list[str]:
    """Texts of the documents in a documents file that share an n-gram with any evaluation set."""
    fs, path = storage.resolve(documents)
    texts = pq.read_table(path, filesystem=fs, columns=["text"]).column("text")
    hits = index.hit_matrix(texts)
    rows = np.flatnonzero(hits.sum(axis=1) > 0) if hits.size else np.zeros(0, dtype=np.int64)
    return [texts[int(i)].as_py() for i in rows]


def overlapping_items(sets: list[LoadedSet], flagged: list[str], ngram: int) -> dict[str, dict[str, Any]]:
    """Per set: its items, how many overlap the training documents `flagged` holds (those `flagged_documents`
    found), the first few of them (indices) and how many are too short to compare."""
    train = NgramIndex.from_texts({TRAIN: flagged}, ngram) if flagged else None
    out = {}
    for s in sets:
        texts = s.overlap_texts()
        unchecked = NgramIndex.from_texts({s.name: texts}, ngram).short_items
        hit = (train.hit_matrix(pa.array(texts, pa.string()))[:, 0] > 0) if train is not None and texts else (
            np.zeros(len(texts), dtype=bool))
        indices = np.flatnonzero(hit).tolist()
        out[s.name] = {"items": len(texts), "overlapping": len(indices), "examples": indices[:EXAMPLES],
                       "unchecked": unchecked}
    return out
