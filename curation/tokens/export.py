"""Export a packed job to other trainers' formats: Megatron-LM's indexed dataset (`.bin`/`.idx`).

Megatron and NeMo build their own samples from whole documents, so the export writes documents,
not rows: each packing bucket's rows (`_work/packed/<split>/bucket-*.arrow`, before the global
shuffle) hold the bucket's document copies back to back, each ending with EOS, in packing order.
Their real tokens, cut where a document starts, give every document copy exactly once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from curation import storage
from curation.tokens.megatron import MegatronWriter
from curation.tokens.output_shards import read_rows

PACKED = "_work/packed"


def bucket_documents_flat(uri: str) -> tuple[np.ndarray, np.ndarray]:
    """All real tokens of a bucket file and the length of each document copy in them (EOS included)."""
    table = read_rows(uri)
    if not table.num_rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    width = int(table.schema.metadata[b"seq_len"]) + 1
    tokens = table.column("tokens").combine_chunks().flatten().to_numpy().reshape(table.num_rows, width)
    valid = table.column("valid").to_numpy()
    flat = tokens[np.arange(width) < valid[:, None]]  # rows are full except the last: the stream in order
    offsets = table.column("doc_offsets").combine_chunks()
    starts_in_row = offsets.flatten().to_numpy()
    row_of_piece = np.repeat(np.arange(table.num_rows), pc.list_value_length(offsets).to_numpy())
    first_piece = table.column("doc_token_offsets").combine_chunks().flatten().to_numpy() == 0
    starts = (row_of_piece * width + starts_in_row)[first_piece]
    return flat, np.diff(np.append(starts, flat.size))


def export_megatron(job_dir: str, out_dir: str | Path, splits: tuple[str, ...] = ("train", "valid")) -> dict[str, Any]:
    """Write `<out_dir>/<split>_text_document.{bin,idx}` per split; return documents and tokens per split."""
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        msg = f"{out_dir} is a file: the export writes a folder of .bin/.idx files"
        raise NotADirectoryError(msg)
    path = storage.join(job_dir, "manifest.json")
    if not storage.exists(path):
        msg = (f"{path} not found: not a packed job folder (or the job has not finished packing); the recipe needs "
               "`tokenizer` and `pack`")
        raise FileNotFoundError(msg)
    try:
        manifest = storage.read_json(path)
    except ValueError as exc:  # cut or edited by hand
        msg = f"{path} is not the JSON a finished job writes ({exc}): rerun the job to write it again"
        raise ValueError(msg) from None
    written = {}
    for split in splits:
        buckets = [storage.join(job_dir, PACKED, split, f"bucket-{b:05d}.arrow") for b in range(manifest["buckets"])]
        missing = [b for b in buckets if not storage.exists(b)]
        if missing:
            msg = f"{missing[0]} is missing: export needs the job's _work/packed folder (rerun the job to rebuild it)"
            raise FileNotFoundError(msg)
        prefix = Path(out_dir) / f"{split}_text_document"
        with MegatronWriter(prefix, manifest["vocab_size"]) as writer:
            for uri in buckets:
                writer.add_documents(*bucket_documents_flat(uri))
        written[split] = {"prefix": str(prefix), "documents": writer.documents, "tokens": writer.tokens}
    return written
