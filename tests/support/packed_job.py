"""A tiny packed job folder, laid out as the pipeline writes one (the contract `curation.train.loader` reads).

`<job>/manifest.json` and `<job>/shards/<split>-NNNNN.arrow`: Arrow IPC *stream* files of several
record batches each, rows packed by `curation.tokens.Packer` from random documents and shuffled
globally before they are split into `valid` and `train`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from curation.tokens import Packer

EOS_ID = 1
PAD_ID = 0


@dataclass
class BuiltJob:
    path: Path
    docs: dict[str, np.ndarray]  # document id -> its tokens (without EOS)
    splits: dict[str, pa.Table]  # split -> its rows in stored order (shard after shard)


def write_split(job_dir: Path, split: str, table: pa.Table, rows_per_shard: int, batch_rows: int) -> list[dict]:
    """Write `table` as stream shards of `rows_per_shard` rows in record batches of `batch_rows`."""
    (job_dir / "shards").mkdir(parents=True, exist_ok=True)
    entries = []
    for k, lo in enumerate(range(0, table.num_rows, rows_per_shard)):
        part = table.slice(lo, rows_per_shard)
        name = f"shards/{split}-{k:05d}.arrow"
        with pa.OSFile(str(job_dir / name), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            for batch in part.to_batches(max_chunksize=batch_rows):
                writer.write_batch(batch)
        tokens = int(part.column("valid").to_numpy().sum())
        entries.append({"file": name, "rows": part.num_rows, "tokens": tokens})
    return entries


def build_job(job_dir: Path, *, seq_len: int = 16, vocab_size: int = 1000, docs: int = 300,
              max_doc_len: int = 40, packers: int = 3, valid_rows: int = 8, rows_per_shard: int = 40,
              batch_rows: int = 7, seed: int = 0) -> BuiltJob:
    """Pack `docs` random documents (lengths 0..max_doc_len, some longer than a row) with `packers`
    packers (each ends in one padded row), shuffle the rows and write `valid_rows` of them as the
    valid split, the rest as train. vocab_size > 65536 gives uint32 shards."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, max_doc_len + 1, size=docs)
    texts = {f"doc-{i:05d}": rng.integers(2, vocab_size, size=n) for i, n in enumerate(lengths)}
    ids = list(texts)
    tables = []
    packer = None
    for group in np.array_split(np.arange(docs), packers):
        packer = Packer(seq_len, eos_id=EOS_ID, pad_id=PAD_ID, vocab_size=vocab_size)
        chosen = [ids[i] for i in group]
        tables += [packer.add(chosen, [texts[d] for d in chosen]), packer.finish()]
    rows = pa.concat_tables(tables).combine_chunks()
    rows = rows.take(pa.array(rng.permutation(rows.num_rows)))  # the pipeline's global shuffle
    splits = {"valid": rows.slice(0, valid_rows), "train": rows.slice(valid_rows)}
    manifest_splits = {}
    for split, table in splits.items():
        shards = write_split(job_dir, split, table, rows_per_shard, batch_rows)
        manifest_splits[split] = {"rows": table.num_rows, "tokens": sum(s["tokens"] for s in shards),
                                  "shards": shards}
    manifest = {
        "format": "curation.packed/1", "seq_len": seq_len, "dtype": packer.dtype.name, "eos_id": EOS_ID,
        "pad_id": PAD_ID, "vocab_size": vocab_size, "tokenizer": {"file": "tokenizer.model", "sha256": "0" * 64},
        "seed": seed, "splits": manifest_splits,
    }
    (job_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return BuiltJob(job_dir, texts, splits)
