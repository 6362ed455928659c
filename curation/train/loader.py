"""Read a job's packed shards into a training loop: memory-mapped, sharded by rank and worker, resumable.

`PackedDataset(job_dir, split, rank, world_size, seed, epoch, batch_size)` is a PyTorch
`IterableDataset` over `<job>/shards/<split>-NNNNN.arrow` (Arrow IPC streams of packed rows, see
`curation.tokens.pack`) that yields whole batches, so use it with `DataLoader(batch_size=None)` or,
simpler, `PackedLoader`, which also keeps the resume position when it runs DataLoader workers.

Each batch is a dict of tensors with `B` rows of `S = seq_len` positions:

    input_ids    int64 [B, S]  tokens[:-1]
    labels       int64 [B, S]  tokens[1:], -100 where the label is padding (position i + 1 >= valid)
    position_ids int64 [B, S]  0 at every segment start (row start, each document start, the padding)
    segment_ids  int64 [B, S]  0, 1, 2, ... per segment of the row: attend only within equal ids
    index        int64 [B]     the row's global index in the split; `provenance(index)` gives its doc ids

The five tensors are views of one int64 buffer (a worker then hands over one shared-memory segment
per batch); `.clone()` one to keep it on its own. Use::

    ds = PackedDataset(job_dir, "train", rank=rank, world_size=world_size, seed=42, batch_size=8)
    loader = PackedLoader(ds, num_workers=1, pin_memory=True)
    loader.load_state_dict(checkpoint["data"])          # when resuming
    for batch in loader:
        ...                                             # one optimizer step
        checkpoint["data"] = loader.state_dict()        # saved with the model: resumes at the next row

Memory and copies: every shard is `pa.memory_map`-ed and read with `ipc.open_stream(...).read_all()`,
which leaves the record batches' buffers inside the map (nothing is allocated; the stream must not
be compressed). Tokens are numpy views of those pages. The one copy per batch is the gather of its
rows into `input_ids`/`labels`, numpy views of the batch's int64 torch buffer, which widens
uint16/uint32 in the same pass; nothing is copied after it (a worker's buffer is placed in shared
memory before it is filled), until `pin_memory` or `.to(device)`.

Order: a pseudo-random permutation of the split's `N` row indices keyed by `(seed, epoch)` (a Feistel
network with cycle walking, computed per batch, so no O(N) permutation is held in memory). Rank `r`
of `W` takes positions `r, r + W, r + 2W, ...` of it; the rank's rows are cut into batches from its
first row, and batch `b` goes to DataLoader worker `b % num_workers`, the order in which the
DataLoader hands batches out, so a rank sees its rows in one fixed order whatever the worker count.

Rows that do not divide by `W` (`remainder`): "drop" (default) gives every rank `N // W` rows and
leaves out the last `N % W` positions of the epoch's permutation (other rows each epoch);
"wrap" gives every rank `ceil(N / W)` rows, re-reading the first positions of the permutation;
"uneven" reads every row exactly once, with ranks differing by one row (evaluation without FSDP).
`drop_last=True` trims a rank's epoch to whole batches.

Resume: the state is (seed, epoch, rows the rank has consumed this epoch). Rows count when the batch
holding them is handed to the trainer, so a `state_dict()` saved after a step resumes at exactly the
next row, also with another batch size or worker count; with another world size when the rows
consumed by all ranks together divide by it. The position advances by itself when the dataset is
iterated in this process (no workers); with DataLoader workers the iteration runs on copies, so
`PackedLoader` (or a loop calling `advance(len(batch["index"]))`) counts in the trainer's process.
When an epoch's last batch is taken the state moves to the next epoch's first row; `set_epoch(e)`
with the current epoch keeps the position (a resumed loop may call it), another starts epoch `e`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from curation.tokens import shuffle
from curation.tokens.output_shards import file_sha256
from curation.train.model import IGNORE_INDEX

FORMAT = "curation.packed/1"
STATE_FORMAT = "curation.loader/1"
REMAINDERS = ("drop", "wrap", "uneven")
# How a damaged shard is mended: a rerun packs again the shards that are gone (one damaged in place keeps its size,
# and a rerun takes it for whole)
REPACK = "run the job's recipe again (`curate run`): the shards that are gone are packed again"



def permute(positions: np.ndarray, n: int, seed: int, epoch: int) -> np.ndarray:
    """Row index at each position of the (seed, epoch) permutation of range(n), for any subset of
    positions at once (a bijection computed per position: no list of n rows is ever held)."""
    return shuffle.permute(positions, n, (seed, epoch, 0x9ACED))


@dataclass(frozen=True)
class _Chunk:
    """One record batch of a shard, as numpy views on the memory map."""

    tokens: np.ndarray  # [rows, seq_len + 1], uint16 or uint32
    valid: np.ndarray  # [rows] int32
    start_offsets: np.ndarray  # [rows + 1] int32 into `starts`
    starts: np.ndarray  # doc_starts values, int32
    batch: pa.RecordBatch  # for provenance


def _numpy(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=True)


class PackedDataError(ValueError):
    """A job's packed files are not what its manifest records: replaced, truncated or damaged after packing."""


def _open_shard(path: Path, seq_len: int, dtype: np.dtype) -> list[_Chunk]:
    # Closing the file right away frees its descriptor; the mapping lives on with the buffers
    # that point into it, so many shards do not run into the open-files limit.
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_stream(source).read_all()
    except (OSError, pa.ArrowInvalid) as exc:  # cut short, or not an Arrow stream at all
        msg = f"{path}: not a whole Arrow stream of packed rows ({exc}): truncated or damaged; delete it and {REPACK}"
        raise PackedDataError(msg) from None
    kind = table.schema.field("tokens").type if "tokens" in table.schema.names else None
    if not (pa.types.is_fixed_size_list(kind) and kind.list_size == seq_len + 1
            and kind.value_type == pa.from_numpy_dtype(dtype)):
        msg = f"{path}: tokens are {kind}, the manifest says fixed_size_list<{dtype.name}>[{seq_len + 1}]"
        raise ValueError(msg)
    chunks = []
    for batch in table.to_batches():
        if not len(batch):
            continue
        tokens, starts = batch.column("tokens"), batch.column("doc_starts")
        chunks.append(_Chunk(
            tokens=_numpy(tokens.flatten()).reshape(len(batch), seq_len + 1),
            valid=_numpy(batch.column("valid")),
            start_offsets=_numpy(starts.offsets),
            starts=_numpy(starts.values),
            batch=batch,
        ))
    return chunks


def read_manifest(job_dir: str | Path) -> dict[str, Any]:
    """The job's manifest.json, checked for the fields the loader needs."""
    path = Path(job_dir) / "manifest.json"
    if not path.is_file():
        msg = f"{path} not found: not a packed job folder (or the job has not finished packing)"
        raise FileNotFoundError(msg)
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        msg = f"{path}: format {manifest.get('format')!r}, expected {FORMAT!r}"
        raise ValueError(msg)
    for key in ("seq_len", "dtype", "splits"):
        if key not in manifest:
            msg = f"{path}: missing key {key!r}"
            raise ValueError(msg)
    return manifest


def verify_packed(job_dir: str | Path, manifest: dict[str, Any]) -> None:
    """Raise `PackedDataError` (one line, naming the file) unless the job's files are those its manifest records:
    the tokenizer and each shard by sha256 where the manifest has one (a shard without one is opened whole)."""
    job_dir = Path(job_dir)
    recorded = manifest.get("tokenizer") or {}
    model = job_dir / str(recorded.get("file") or "tokenizer.model")
    if model.is_file() and recorded.get("sha256"):  # the trainer reads token ids only: a job may come without one
        _same_file(model, str(recorded["sha256"]), "the tokenizer was replaced after packing")
    seq_len, dtype = int(manifest["seq_len"]), np.dtype(manifest["dtype"])
    for split, part in sorted(manifest["splits"].items()):
        for shard in part["shards"]:
            path = job_dir / shard["file"]
            if not path.is_file():
                msg = f"{path}: missing ({split} shard {shard['file']} of {job_dir / 'manifest.json'})"
                raise PackedDataError(msg)
            if shard.get("sha256"):
                _same_file(path, str(shard["sha256"]), "truncated, damaged or replaced after packing")
            else:
                _open_shard(path, seq_len, dtype)


def _same_file(path: Path, expected: str, meaning: str) -> None:
    found = file_sha256(str(path))
    if found != expected:
        msg = (f"{path}: sha256 {found[:16]}... is not the {expected[:16]}... manifest.json records: {meaning}; "
               f"delete it and {REPACK}")
        raise PackedDataError(msg)


class PackedDataset(IterableDataset):
    """Batches of packed rows of one split of a job, for rank `rank` of `world_size` (module docstring)."""

    def __init__(self, job_dir: str | Path, split: str = "train", rank: int = 0, world_size: int = 1,
                 seed: int = 0, epoch: int = 0, batch_size: int = 8, *, shuffle: bool = True,
                 remainder: str = "drop", drop_last: bool = False) -> None:
        if not 0 <= rank < world_size:
            msg = f"rank {rank} outside [0, world_size={world_size})"
            raise ValueError(msg)
        if batch_size < 1:
            msg = f"batch_size must be >= 1, not {batch_size}"
            raise ValueError(msg)
        if remainder not in REMAINDERS:
            msg = f"remainder must be one of {REMAINDERS}, not {remainder!r}"
            raise ValueError(msg)
        self.job_dir = Path(job_dir)
        self.manifest = read_manifest(self.job_dir)
        if split not in self.manifest["splits"]:
            msg = f"split {split!r} not in the manifest (has {sorted(self.manifest['splits'])})"
            raise ValueError(msg)
        self.split = split
        self.seq_len = int(self.manifest["seq_len"])
        self.dtype = np.dtype(self.manifest["dtype"])
        self.shards = list(self.manifest["splits"][split]["shards"])
        self.num_rows = sum(int(s["rows"]) for s in self.shards)
        self.rank, self.world_size, self.seed = rank, world_size, seed
        self.batch_size, self.shuffle, self.remainder, self.drop_last = batch_size, shuffle, remainder, drop_last
        self.epoch, self.rows = epoch, 0
        self._chunks: list[_Chunk] | None = None  # opened lazily, in the process that reads
        self._chunk_starts = np.zeros(1, dtype=np.int64)

    # -- sizes ---------------------------------------------------------------------------------
    @property
    def rows_per_rank(self) -> int:
        """Rows this rank reads per epoch, before `drop_last`."""
        n, w = self.num_rows, self.world_size
        if self.remainder == "drop":
            return n // w
        if self.remainder == "wrap":
            return -(-n // w) if n else 0
        return len(range(self.rank, n, w))

    @property
    def rows_per_epoch(self) -> int:
        """Rows this rank reads per epoch (after `drop_last`); the epoch ends when `rows` reaches it."""
        m = self.rows_per_rank
        return m - m % self.batch_size if self.drop_last else m

    def __len__(self) -> int:
        """Batches the next iteration yields (fewer than a whole epoch after a mid-epoch resume)."""
        return -(-(self.rows_per_epoch - self._normalised()[1]) // self.batch_size)

    # -- position and resume ------------------------------------------------------------------
    def _normalised(self) -> tuple[int, int]:
        """(epoch, rows) with a finished epoch read as the start of the next one."""
        if self.rows >= self.rows_per_epoch > 0:
            return self.epoch + 1, 0
        return self.epoch, self.rows

    def set_epoch(self, epoch: int) -> None:
        """Start `epoch` from its first row; the current epoch keeps its position (resume)."""
        if epoch != self._normalised()[0]:
            self.epoch, self.rows = epoch, 0
        else:
            self.epoch, self.rows = self._normalised()

    def advance(self, rows: int) -> None:
        """Count `rows` as consumed by the trainer (what `PackedLoader` does when workers read)."""
        self.rows += rows
        if self.rows >= self.rows_per_epoch > 0:
            self.epoch, self.rows = self.epoch + 1, 0

    def state_dict(self) -> dict[str, Any]:
        """Where this rank stands: the same on every rank of a lock-stepped job, so any rank's copy loads."""
        epoch, rows = self._normalised()
        return {"format": STATE_FORMAT, "split": self.split, "num_rows": self.num_rows, "seed": self.seed,
                "epoch": epoch, "rows": rows, "world_size": self.world_size, "remainder": self.remainder,
                "shuffle": self.shuffle}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue at the row after the last one counted in `state` (its seed, epoch, shuffle and
        remainder replace this dataset's: they define the order being resumed)."""
        if state.get("format") != STATE_FORMAT:
            msg = f"not a loader state: format {state.get('format')!r}, expected {STATE_FORMAT!r}"
            raise ValueError(msg)
        if (state["split"], state["num_rows"]) != (self.split, self.num_rows):
            msg = (f"state of split {state['split']!r} with {state['num_rows']} rows does not match "
                   f"split {self.split!r} with {self.num_rows} rows: another job or split")
            raise ValueError(msg)
        rows = int(state["rows"])
        if state["world_size"] != self.world_size:
            # Ranks take strided positions, so all ranks together have read the first rows * W positions.
            consumed = rows * int(state["world_size"])
            if consumed % self.world_size:
                msg = (f"cannot resume {consumed} consumed positions on {self.world_size} ranks evenly; "
                       f"resume on {state['world_size']} ranks or at an epoch boundary")
                raise ValueError(msg)
            rows = consumed // self.world_size
        self.seed, self.epoch, self.rows = int(state["seed"]), int(state["epoch"]), rows
        self.shuffle, self.remainder = bool(state["shuffle"]), str(state["remainder"])

    # -- reading ------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        # Workers (spawn) get the paths, not the mapped tables: pickling those would copy the data.
        state = dict(self.__dict__)
        state["_chunks"] = None
        return state

    def _open(self) -> list[_Chunk]:
        if self._chunks is None:
            chunks = []
            for shard in self.shards:
                opened = _open_shard(self.job_dir / shard["file"], self.seq_len, self.dtype)
                rows = sum(len(c.valid) for c in opened)
                if rows != int(shard["rows"]):
                    msg = f"{shard['file']}: {rows} rows, the manifest says {shard['rows']}"
                    raise ValueError(msg)
                chunks.extend(opened)
            self._chunk_starts = np.cumsum([0] + [len(c.valid) for c in chunks], dtype=np.int64)
            self._chunks = chunks
        return self._chunks

    def _locate(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._open()
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= self.num_rows):
            msg = f"row indices outside [0, {self.num_rows})"
            raise IndexError(msg)
        chunk = np.searchsorted(self._chunk_starts, rows, side="right") - 1
        return chunk, rows - self._chunk_starts[chunk]

    def rank_rows(self, start: int, stop: int, epoch: int | None = None) -> np.ndarray:
        """Global row indices of this rank's rows `start:stop` in `epoch` (default: the current one)."""
        epoch = self.epoch if epoch is None else epoch
        positions = np.arange(start, stop, dtype=np.int64) * self.world_size + self.rank
        if self.remainder == "wrap" and self.num_rows:
            positions %= self.num_rows
        return permute(positions, self.num_rows, self.seed, epoch) if self.shuffle else positions

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        epoch, start = self._normalised()
        self.epoch, self.rows = epoch, start
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        end, size = self.rows_per_epoch, self.batch_size
        for b, lo in enumerate(range(start, end, size)):
            if b % workers != worker:
                continue
            hi = min(lo + size, end)
            batch = self.batch(self.rank_rows(lo, hi, epoch))
            if info is None:  # in the trainer's process: this object is the one whose state is saved
                self.advance(hi - lo)
            yield batch

    def batch(self, rows: Sequence[int] | np.ndarray) -> dict[str, torch.Tensor]:
        """The training tensors of the given global rows (the module docstring lists them)."""
        rows = np.asarray(rows, dtype=np.int64)
        chunk_ids, local = self._locate(rows)
        chunks = self._chunks
        n, s = len(local), self.seq_len
        # All five tensors are views of one buffer: a DataLoader worker then passes one shared-memory
        # segment per batch to the trainer instead of five (measured: per-tensor IPC dominated).
        buffer = torch.empty(4 * n * s + n, dtype=torch.int64)
        if get_worker_info() is not None:
            buffer.share_memory_()
        views = [buffer[k * n * s:(k + 1) * n * s].view(n, s) for k in range(4)]
        input_ids, labels, position_ids, segment_ids = (v.numpy() for v in views)
        buffer[4 * n * s:] = torch.from_numpy(rows)
        starts = np.zeros((n, s), dtype=bool)
        starts[:, 0] = True
        for i, (c, r) in enumerate(zip(chunk_ids.tolist(), local.tolist(), strict=True)):
            chunk = chunks[c]
            row = chunk.tokens[r]
            # The copy: mmap pages -> int64, widening in the same pass.
            input_ids[i] = row[:-1]
            labels[i] = row[1:]
            valid = int(chunk.valid[r])
            if valid <= s:  # label i is tokens[i + 1]: real only while i + 1 < valid
                labels[i, max(valid - 1, 0):] = IGNORE_INDEX
                if valid < s:
                    starts[i, valid] = True  # the padding is a segment of its own
            doc = chunk.starts[chunk.start_offsets[r]:chunk.start_offsets[r + 1]]
            starts[i, doc[doc < s]] = True
        self._check_ids(rows, input_ids, labels)
        np.cumsum(starts, axis=1, out=segment_ids)
        segment_ids -= 1
        positions = np.arange(s, dtype=np.int64)
        first = np.where(starts, positions, 0)  # each position's segment start, carried forward
        np.maximum.accumulate(first, axis=1, out=first)
        np.subtract(positions, first, out=position_ids)
        return {"input_ids": views[0], "labels": views[1], "position_ids": views[2], "segment_ids": views[3],
                "index": buffer[4 * n * s:]}

    def _check_ids(self, rows: np.ndarray, input_ids: np.ndarray, labels: np.ndarray) -> None:
        """Token ids past the vocabulary come from a shard changed after packing (`verify_packed` finds it by its
        sha256; a loader used directly does not hash): an embedding lookup would fail on the device, far from here."""
        vocab = self.manifest.get("vocab_size")
        if vocab is None or not len(rows) or max(int(input_ids.max()), int(labels.max())) < vocab:
            return
        row = int(rows[np.flatnonzero((input_ids >= vocab).any(axis=1) | (labels >= vocab).any(axis=1))[0]])
        msg = (f"{self.job_dir}: row {row} of the {self.split} split holds a token id past the vocabulary ({vocab}): "
               f"its shard was damaged or replaced after packing (`verify_packed` names it): delete it and {REPACK}")
        raise PackedDataError(msg)

    def provenance(self, row_indices: Sequence[int] | np.ndarray | torch.Tensor) -> list[list[str]]:
        """The document ids filling each given global row, in row order (for tracing a loss spike)."""
        return [p["doc_ids"] for p in self.pieces(row_indices)]

    def pieces(self, row_indices: Sequence[int] | np.ndarray | torch.Tensor) -> list[dict[str, list]]:
        """Each row's provenance lists: doc_ids, doc_offsets, doc_lengths, doc_token_offsets."""
        rows = np.asarray(row_indices.tolist() if isinstance(row_indices, torch.Tensor) else row_indices)
        chunk_ids, local = self._locate(rows.reshape(-1))
        out = []
        for c, r in zip(chunk_ids.tolist(), local.tolist(), strict=True):
            batch = self._chunks[c].batch
            out.append({k: batch.column(k)[r].as_py() for k in
                        ("doc_ids", "doc_offsets", "doc_lengths", "doc_token_offsets")})
        return out


def collate(batches: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Join batches along the first dimension (e.g. micro-batches into one step's batch)."""
    return {k: torch.cat([b[k] for b in batches]) for k in batches[0]}


class PackedLoader:
    """A DataLoader over a `PackedDataset` that keeps its resume position while workers read.

    Batches are counted here, in the trainer's process, as they are handed out: batches the
    workers prefetched but the trainer never took are not counted, so they are read again on resume.
    Workers are started per iteration (not persistent) so each starts from the saved position.
    """

    def __init__(self, dataset: PackedDataset, num_workers: int = 0, pin_memory: bool = False,
                 **dataloader_kwargs: Any) -> None:
        if dataloader_kwargs.get("persistent_workers"):
            msg = "persistent_workers would keep the workers' start position from an earlier epoch"
            raise ValueError(msg)
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.dataloader_kwargs = dataloader_kwargs

    def __len__(self) -> int:
        return len(self.dataset)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        ds = self.dataset
        ds.set_epoch(ds._normalised()[0])  # the copies sent to workers start where the trainer stands
        loader = DataLoader(ds, batch_size=None, num_workers=self.num_workers, pin_memory=self.pin_memory,
                            **self.dataloader_kwargs)
        for batch in loader:
            if self.num_workers:  # without workers the dataset counted the batch itself
                ds.advance(len(batch["index"]))
            yield batch

    def set_epoch(self, epoch: int) -> None:
        self.dataset.set_epoch(epoch)

    def state_dict(self) -> dict[str, Any]:
        return self.dataset.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dataset.load_state_dict(state)
