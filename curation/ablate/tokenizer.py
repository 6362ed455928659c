"""One tokenizer for every variant, so that their losses compare: trained once on a seeded sample of the union
of the variants' documents (each document once, however many variants keep it), or given as a model file."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curation import storage
from curation.mixture import unit_hash
from curation.tokens.config import TrainTokenizer
from curation.tokens.tokenizer import SAMPLE_SALT, held_out_documents, train_sized


def _read(uri: str, columns: list[str]) -> pa.Table:
    fs, path = storage.resolve(uri)
    return pq.read_table(path, filesystem=fs, columns=columns)


def union_bytes(files: Sequence[str]) -> int:
    """UTF-8 bytes of the text of the distinct documents (by id) in `files`."""
    seen: set[str] = set()
    total = 0
    for uri in files:
        table = _read(uri, ["id", "text"])
        sizes = pc.fill_null(pc.binary_length(table.column("text")), 0).to_numpy(zero_copy_only=False)
        for doc_id, size in zip(table.column("id").to_pylist(), sizes.tolist(), strict=True):
            if doc_id not in seen:
                seen.add(doc_id)
                total += size
    return total


def union_lines(files: Sequence[str], sample_bytes: int, seed: int, validation: float = 0.0,
                held_out_share: float = 0.0) -> Iterator[str]:
    """Lines of a seeded sample of about `sample_bytes` of the distinct documents in `files`, none of the
    held-out ones (`held_out_documents`): the choice `curation.tokens.tokenizer.sample_texts` makes for one job,
    over a union."""
    rate = min(1.0, sample_bytes / max(1, union_bytes(files)))
    seen: set[str] = set()
    for uri in files:
        table = _read(uri, ["id", "text"])
        ids = table.column("id").to_pylist()
        chosen = (unit_hash(ids, seed ^ SAMPLE_SALT) < rate) & ~held_out_documents(ids, held_out_share, validation)
        for i in np.flatnonzero(chosen).tolist():
            if ids[i] in seen:
                continue
            seen.add(ids[i])
            text = table.column("text")[i].as_py() or ""
            yield from (line for line in text.split("\n") if line.strip())


def train_union_tokenizer(files: Sequence[str], settings: TrainTokenizer, seed: int,
                          validation: float = 0.0) -> tuple[bytes, str | None]:
    """The `.model` bytes of a sentencepiece model trained on `union_lines` (deterministic: one thread, seeded),
    sized as one job's (`train_sized`: a size the sample cannot support raises `VocabularyError`, in one line),
    and the warning of a size lowered (or kept against what the sample supports), if any."""
    model, _, sizing = train_sized(lambda: union_lines(files, settings.sample_bytes, seed, validation,
                                                       settings.held_out), settings, seed)
    return model, sizing.warning()
