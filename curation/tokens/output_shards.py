"""Output shards: packed rows globally shuffled into Arrow IPC stream files, and their manifest.

Every packing bucket of a split wrote its rows to one file; together they are rows 0..R-1 of the
split (bucket after bucket). Output shard k holds positions k*S .. k*S+S-1 of a seeded permutation
of those R rows (`curation.tokens.shuffle.permute`), so any row can land in any shard, in any
order, and each shard is written by one task that reads only the rows it needs. Shards are Arrow
IPC *stream* files (what `pyarrow.ipc.open_stream` and Hugging Face `datasets.Dataset.from_file`
read), written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from curation import storage
from curation.tokens.shuffle import permute

SHUFFLE_SALT = 0x5A0F
BATCH_ROWS = 1024  # rows per record batch in a shard: a reader can stream without loading a whole shard


def read_rows(uri: str) -> pa.Table:
    """All rows of a packed file: memory-mapped (zero copy, pages read on demand) when local."""
    fs, path = storage.resolve(uri)
    source = pa.memory_map(path) if isinstance(fs, pafs.LocalFileSystem) else fs.open_input_file(path)
    return pa.ipc.open_stream(source).read_all()


def shard_count(rows: int, shard_rows: int) -> int:
    return -(-rows // shard_rows)


def write_shard(bucket_files: list[str], bucket_rows: list[int], index: int, shard_rows: int, seed: int,
                out: str) -> dict[str, Any]:
    """Write output shard `index` of a split whose buckets hold `bucket_rows` rows; return its counts, sha256 and
    bytes. A shard already there is complete (shards are renamed into place), so a rerun only counts it; one that
    does not read whole (cut or damaged since) is written again."""
    fs, path = storage.resolve(out)
    if storage.exists(out):
        try:
            return _described(read_rows(out), out)
        except ValueError:  # pyarrow's ArrowInvalid: not a whole stream
            fs.delete_file(path)
    offsets = np.concatenate([[0], np.cumsum(bucket_rows)]).astype(np.int64)
    total = int(offsets[-1])
    positions = np.arange(index * shard_rows, min(total, (index + 1) * shard_rows), dtype=np.int64)
    rows = permute(positions, total, seed ^ SHUFFLE_SALT)
    bucket = np.searchsorted(offsets, rows, side="right") - 1
    pieces, order = [], []
    for b in np.unique(bucket):
        mine = np.flatnonzero(bucket == b)
        pieces.append(read_rows(bucket_files[b]).take(pa.array(rows[mine] - offsets[b])))
        order.append(mine)
    table = pa.concat_tables(pieces).take(pa.array(np.argsort(np.concatenate(order), kind="stable")))
    with storage.temp_path(out) as tmp, fs.open_output_stream(tmp, compression=None) as sink, \
            pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=BATCH_ROWS)
    return _described(table, out)


def _described(table: pa.Table, out: str) -> dict[str, Any]:
    """A shard's entry in the manifest: its counts, its sha256 (the trainer checks it before it trains) and its
    bytes (a rerun of the job checks them: a listing, no file read)."""
    fs, path = storage.resolve(out)
    return shard_counts(table) | {"sha256": file_sha256(out), "bytes": fs.get_file_info(path).size}


def file_sha256(uri: str) -> str:
    """sha256 (hex) of a file, read in 8 MiB pieces: what a manifest records of each file it names."""
    fs, path = storage.resolve(uri)
    digest = hashlib.sha256()
    with fs.open_input_stream(path) as f:
        while piece := f.read(8 << 20):
            digest.update(piece)
    return digest.hexdigest()


def shard_counts(table: pa.Table) -> dict[str, int]:
    return {"rows": table.num_rows, "tokens": int(pc.sum(table.column("valid")).as_py() or 0)}
