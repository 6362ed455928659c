"""The training loop that runs on each worker, without Ray: `run_worker` needs only torch and an
initialised process group, so Ray Train (`pipelines.train`) and any other launcher (the GPU benchmark,
torchrun) run the same code. What it does, step by step, is described in `pipelines.train`.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import torch
import torch.distributed as dist

from curation.train.config import TrainRecipe
from curation.train.loader import IGNORE_INDEX, PackedDataset, PackedLoader, read_manifest
from curation.train.model import Transformer, shard_model
from curation.train.optim import (
    build_optimizer,
    build_scheduler,
    forward_backward,
    optimizer_step,
    resume_scheduler,
)
from curation.train.resume import RUN_FILE, run_record
from curation.train.spikes import EMA, SpikeDetector

METRICS, SPIKES, EVENTS = "metrics.jsonl", "spikes.jsonl", "events.jsonl"
CHECKPOINTS, TENSORBOARD = "checkpoints", "tensorboard"
MAX_LOGGED_DOCUMENTS = 64  # per metrics line; spikes.jsonl keeps all of them
# Dense bf16 tensor-core peaks (FLOP/s) from NVIDIA's datasheets, for MFU: the first name that matches wins.
PEAK_BF16 = (("H200", 989.4e12), ("H100 PCIe", 756e12), ("H100", 989.4e12), ("A100", 312e12))


def peak_bf16_flops(device: torch.device) -> float | None:
    """The datasheet bf16 peak of a CUDA device, or None where it is not known (CPU, other GPUs)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_BF16 if key in name), None)


# -- data ---------------------------------------------------------------------------------------------------


@dataclass
class StepData:
    micro: list[dict[str, torch.Tensor]]  # this rank's micro-batches of one step
    position: Any  # where the stream stood before it: what skip_bad_batches skips
    rows: list[int]  # global row indices in the split (empty when the stream has none)
    documents: Callable[[], list[list[str]]]  # doc ids per row, computed only for a spike


class LoaderStream:
    """A step's micro-batches from the packed loader, endlessly over epochs, passing over bad positions."""

    rewindable = True

    def __init__(self, dataset: PackedDataset, micro_batches: int, loader_workers: int = 0,
                 pin_memory: bool = False) -> None:
        if dataset.rows_per_epoch == 0:
            msg = (f"split {dataset.split!r} has {dataset.num_rows} rows: none for rank {dataset.rank} "
                   f"of {dataset.world_size}")
            raise ValueError(msg)
        self.dataset, self.micro_batches = dataset, micro_batches
        self.loader = PackedLoader(dataset, num_workers=loader_workers, pin_memory=pin_memory)
        self.bad: set[tuple[int, int]] = set()
        self._it = None

    def position(self) -> tuple[int, int]:
        state = self.loader.state_dict()
        return int(state["epoch"]), int(state["rows"])

    def _next(self) -> dict[str, torch.Tensor]:
        while True:
            if self._it is None:
                self._it = iter(self.loader)
            try:
                return next(self._it)
            except StopIteration:
                self._it = None  # the epoch is over and the loader's state already points at the next one

    def next_step(self) -> StepData:
        while self.position() in self.bad:
            for _ in range(self.micro_batches):
                self._next()
        position = self.position()
        micro = [self._next() for _ in range(self.micro_batches)]
        rows = [r for mb in micro for r in mb["index"].tolist()]
        return StepData(micro, position, rows, lambda: self.dataset.provenance(rows))

    def state_dict(self) -> dict[str, Any]:
        return self.loader.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.loader.load_state_dict(state)
        self._it = None  # a live iterator (and its workers) would go on from the old position


def batch_from_arrow(table: pa.Table | pa.RecordBatch, seq_len: int) -> dict[str, torch.Tensor]:
    """The loader's training tensors (see `curation.train.loader`) from packed rows in Arrow form, as a Ray
    Dataset delivers them; `index` is the `row` column when present, else -1."""
    n, s = table.num_rows, seq_len
    tokens = pa.concat_arrays(table.column("tokens").chunks) if isinstance(table, pa.Table) else table["tokens"]
    starts_col = table.column("doc_starts")
    starts_list = pa.concat_arrays(starts_col.chunks) if isinstance(table, pa.Table) else starts_col
    rows = tokens.flatten().to_numpy(zero_copy_only=False).reshape(n, s + 1)
    valid = table.column("valid").to_numpy().astype(np.int64)
    input_ids = torch.from_numpy(rows[:, :-1].astype(np.int64))
    labels = rows[:, 1:].astype(np.int64)
    positions = np.arange(s, dtype=np.int64)
    labels[positions[None, :] >= (valid - 1)[:, None]] = IGNORE_INDEX  # label i is real only while i + 1 < valid
    starts = np.zeros((n, s), dtype=bool)
    starts[:, 0] = True
    padded = np.flatnonzero(valid < s)
    starts[padded, valid[padded]] = True  # the padding is a segment of its own
    values = starts_list.flatten().to_numpy(zero_copy_only=False)
    parents = starts_list.value_parent_indices().to_numpy(zero_copy_only=False)
    inside = values < s
    starts[parents[inside], values[inside]] = True
    segment_ids = np.cumsum(starts, axis=1) - 1
    first = np.maximum.accumulate(np.where(starts, positions, 0), axis=1)
    index = table.column("row").to_numpy() if "row" in table.column_names else np.full(n, -1)
    return {"input_ids": input_ids, "labels": torch.from_numpy(labels),
            "position_ids": torch.from_numpy(positions - first), "segment_ids": torch.from_numpy(segment_ids),
            "index": torch.from_numpy(index.astype(np.int64))}


class RayDataStream:
    """A step's micro-batches from this worker's shard of a Ray Dataset of packed rows (`ray_dataset`).

    Not rewindable: Ray Data does not promise a worker the same rows in the same order twice, so a spike's
    batch can only have its update dropped, and a resumed run skips as many batches as were consumed."""

    rewindable = False

    def __init__(self, shard: Any, micro_batches: int, rows: int, seq_len: int) -> None:
        self.shard, self.micro_batches, self.rows, self.seq_len = shard, micro_batches, rows, seq_len
        self.consumed = 0  # micro-batches handed out
        self.bad: set[int] = set()
        self._it = None

    def _next(self) -> tuple[dict[str, torch.Tensor], list[list[str]]]:
        while True:
            if self._it is None:  # every worker restarts together: Ray splits the rows equally
                self._it = iter(self.shard.iter_batches(batch_size=self.rows, batch_format="pyarrow"))
            try:
                table = next(self._it)
            except StopIteration:
                self._it = None
                continue
            self.consumed += 1
            docs = table.column("doc_ids").to_pylist() if "doc_ids" in table.column_names else [[]] * len(table)
            return batch_from_arrow(table, self.seq_len), docs

    def next_step(self) -> StepData:
        position = self.consumed
        pairs = [self._next() for _ in range(self.micro_batches)]
        micro = [b for b, _ in pairs]
        docs = [d for _, ds in pairs for d in ds]
        return StepData(micro, position, [r for mb in micro for r in mb["index"].tolist()], lambda: docs)

    def state_dict(self) -> dict[str, Any]:
        return {"consumed": self.consumed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        while self.consumed < int(state["consumed"]):
            self._next()




def _finite(value: Any) -> Any:
    """JSON has no NaN: the status service serves these lines with allow_nan=False."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The file's JSON lines; a line cut short by a crash is left out, not an error."""
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _summary_writer(log_dir: Path, purge_step: int) -> Any:
    """torch's SummaryWriter (needs the `tensorboard` package), else tensorboardX's, else None."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            return None
    # purge_step drops events of steps >= it that a crashed or rolled-back run had written.
    return SummaryWriter(str(log_dir), purge_step=purge_step)


class RunLog:
    """metrics.jsonl, spikes.jsonl and TensorBoard of one run, written by rank 0."""

    TB_KEYS = {"loss": "train/loss", "loss_smoothed": "train/loss_smoothed", "lr": "train/lr",
               "grad_norm": "train/grad_norm", "val_loss": "val/loss", "tokens_per_s": "perf/tokens_per_s",
               "step_seconds": "perf/step_seconds", "data_seconds": "perf/data_seconds", "mfu": "perf/mfu"}

    def __init__(self, train_dir: Path, tensorboard: bool) -> None:
        self.dir, self.tensorboard, self.writer = train_dir, tensorboard, None
        self.dir.mkdir(parents=True, exist_ok=True)

    def restart_at(self, step: int) -> None:
        """Drop metrics after `step` (they are about to be run again) and reopen TensorBoard there."""
        path = self.dir / METRICS
        kept = [r for r in read_jsonl(path) if r.get("step", 0) <= step]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept))
        tmp.replace(path)  # atomic: the status service never sees half a file
        if self.writer is not None:
            self.writer.close()
        self.writer = _summary_writer(self.dir / TENSORBOARD, step + 1) if self.tensorboard else None

    def step(self, row: dict[str, Any]) -> None:
        row = {k: _finite(v) for k, v in row.items()}
        with (self.dir / METRICS).open("a") as f:
            f.write(json.dumps(row, allow_nan=False) + "\n")
        if self.writer is not None:
            for key, tag in self.TB_KEYS.items():
                if isinstance(row.get(key), int | float):
                    self.writer.add_scalar(tag, row[key], row["step"])
            self.writer.flush()

    def spike(self, entry: dict[str, Any]) -> None:
        self._append(SPIKES, entry)

    def event(self, event: str, **fields: Any) -> None:
        """A (re)start, rollback or end of the run: what the metrics, rewritten on resume, no longer show."""
        self._append(EVENTS, {"event": event, "time": time.time(), **fields})

    def _append(self, name: str, entry: dict[str, Any]) -> None:
        with (self.dir / name).open("a") as f:
            f.write(json.dumps({k: _finite(v) for k, v in entry.items()}, allow_nan=False) + "\n")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


# -- checkpoints --------------------------------------------------------------------------------------------


def checkpoint_dirs(train_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first (a checkpoint's folder appears only once written, by a rename)."""
    root = train_dir / CHECKPOINTS
    found = [p for p in root.glob("step-*") if (p / "state.pt").is_file()] if root.is_dir() else []
    return sorted(found, key=step_of)


def step_of(checkpoint: Path) -> int:
    """The step a checkpoint folder (`step-00000120`) was saved at."""
    return int(checkpoint.name.split("-")[1])


def _rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate(),
             "numpy": [x.tolist() if isinstance(x, np.ndarray) else x for x in np.random.get_state()]}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(_tuples(state["python"]))
    kind, keys, *rest = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), *rest))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def _tuples(x: Any) -> Any:
    return tuple(_tuples(v) for v in x) if isinstance(x, list | tuple) else x


@dataclass
class Trainer:
    """One worker's training state and the collective operations on it."""

    recipe: TrainRecipe
    rank: int
    world_size: int
    device: torch.device
    model: Transformer
    optimizer: torch.optim.Optimizer
    scheduler: Any
    stream: LoaderStream | RayDataStream
    detector: SpikeDetector
    ema: EMA
    train_dir: Path
    step: int = 0
    tokens: int = 0
    log: RunLog | None = None
    pending: dict[int, dict[str, Any]] = field(default_factory=dict)  # step -> skipped spike, for its line

    def save(self) -> None:
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
            get_optimizer_state_dict,
        )

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)  # gathered on rank 0 only
        model = get_model_state_dict(self.model, options=options)
        optim = get_optimizer_state_dict(self.model, self.optimizer, options=options)
        rngs = [None] * self.world_size
        dist.all_gather_object(rngs, _rng_state())
        if self.rank == 0:
            root = self.train_dir / CHECKPOINTS
            final, tmp = root / f"step-{self.step:08d}", root / f".step-{self.step:08d}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            torch.save({"model": model, "optimizer": optim, "scheduler": self.scheduler.state_dict(),
                        "extra": self._extra(rngs)}, tmp / "state.pt")
            # What the driver checks a resumed recipe against, without loading the weights.
            record = run_record(self.recipe, read_manifest(self.recipe.job_dir()), self.step,
                                self.stream.state_dict())
            (tmp / RUN_FILE).write_text(json.dumps(record, indent=2))
            shutil.rmtree(final, ignore_errors=True)
            tmp.replace(final)
            for old in checkpoint_dirs(self.train_dir)[:-self.recipe.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        dist.barrier()

    def _extra(self, rngs: list[Any]) -> dict[str, Any]:
        return {"step": self.step, "tokens": self.tokens, "data": self.stream.state_dict(),
                "bad": sorted(list(p) if isinstance(p, tuple) else p for p in self.stream.bad),
                "detector": self.detector.state_dict(), "ema": self.ema.state_dict(), "rng": rngs,
                "world_size": self.world_size}

    def restore(self, path: Path) -> None:
        """Load a checkpoint: rank 0 reads the file and broadcasts, so only it needs to see the folder."""
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            set_model_state_dict,
            set_optimizer_state_dict,
        )

        state = torch.load(path / "state.pt", map_location="cpu", weights_only=True) if self.rank == 0 else {}
        options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        set_model_state_dict(self.model, state.get("model", {}), options=options)
        set_optimizer_state_dict(self.model, self.optimizer, state.get("optimizer", {}), options=options)
        box = [(state.get("scheduler"), state.get("extra"))]
        dist.broadcast_object_list(box, src=0)
        scheduler, extra = box[0]
        refit = resume_scheduler(self.scheduler, scheduler, self.recipe.optim.total_steps)
        if self.log is not None and refit:
            self.log.event("schedule", step=int(extra["step"]), total_steps=self.recipe.optim.total_steps,
                           lr=self.optimizer.param_groups[0]["lr"])
        self.step, self.tokens = int(extra["step"]), int(extra["tokens"])
        self.stream.load_state_dict(extra["data"])
        self.stream.bad |= {tuple(p) if isinstance(p, list) else p for p in extra["bad"]}  # and those found since
        self.detector.load_state_dict(extra["detector"])
        self.ema.load_state_dict(extra["ema"])
        _set_rng_state(extra["rng"][self.rank % len(extra["rng"])])
        if self.log is not None:
            self.log.restart_at(self.step)

    # -- the steps ------------------------------------------------------------------------------------------
    def validate(self, dataset: PackedDataset | None) -> float | None:
        """Mean loss over every label of the valid split (or its first `val_batches` batches per rank)."""
        if dataset is None or dataset.num_rows == 0:
            return None
        size = dataset.batch_size
        starts = list(range(0, dataset.rows_per_epoch, size))[:self.recipe.val_batches]
        count = torch.tensor(len(starts), device=self.device)
        dist.all_reduce(count, op=dist.ReduceOp.MAX)
        totals = torch.zeros(2, dtype=torch.float64, device=self.device)
        self.model.eval()
        with torch.no_grad():
            for b in range(int(count)):
                if b < len(starts):
                    lo = starts[b]
                    batch = dataset.batch(dataset.rank_rows(lo, min(lo + size, dataset.rows_per_epoch), epoch=0))
                else:
                    # FSDP needs every rank in every forward: a rank out of rows runs one that counts nothing.
                    batch = dataset.batch([0])
                    batch["labels"].fill_(IGNORE_INDEX)
                batch = {k: v.to(self.device) for k, v in batch.items()}
                out = self.model(batch["input_ids"], batch["position_ids"], batch["segment_ids"],
                                 labels=batch["labels"])
                totals += torch.stack([out.loss.double() * out.num_tokens, out.num_tokens.double()])
        self.model.train()
        dist.all_reduce(totals)
        return float(totals[0] / totals[1]) if totals[1] > 0 else None

    def record_spike(self, data: StepData, loss: float, reason: str, action: str) -> list[str]:
        """Every rank's rows and their documents, gathered into one spikes.jsonl entry; the document ids."""
        parts = [None] * self.world_size
        dist.all_gather_object(parts, (data.rows, data.documents()))
        rows = [r for part in parts for r in part[0]]
        documents = list(dict.fromkeys(d for part in parts for doc_ids in part[1] for d in doc_ids))
        if self.log is not None:
            self.log.spike({"step": self.step + 1, "time": time.time(), "loss": loss, "reason": reason,
                            "action": action, "split": "train", "rows": rows, "documents": documents})
        return documents


def build_trainer(recipe: TrainRecipe, rank: int, world_size: int, device: torch.device,
                  shard: Any = None) -> tuple[Trainer, PackedDataset | None]:
    """Model, optimizer, data and logs of one worker (the process group must be up)."""
    from torch.distributed.device_mesh import init_device_mesh

    job = recipe.job_dir()
    manifest = read_manifest(job)
    torch.manual_seed(recipe.seed)  # the same initial weights on every rank
    model = Transformer(recipe.model_for(manifest))
    shard_model(model, init_device_mesh(device.type, (world_size,)))
    optimizer = build_optimizer(model, recipe.optim)
    scheduler = build_scheduler(optimizer, recipe.optim)
    rows = recipe.micro_batch_rows
    if shard is None:
        dataset = PackedDataset(job, "train", rank, world_size, seed=recipe.seed, batch_size=rows)
        # whole batches only, where an epoch holds one: every step trains on as many tokens, so runs of one budget
        # (an ablation's variants) see the same tokens (a short last batch per epoch gave a small corpus fewer)
        dataset.drop_last = dataset.rows_per_rank >= rows
        stream: LoaderStream | RayDataStream = LoaderStream(dataset, recipe.micro_batches, recipe.loader_workers,
                                                            pin_memory=device.type == "cuda")
    else:
        stream = RayDataStream(shard, recipe.micro_batches, rows, int(manifest["seq_len"]))
    valid = None
    if recipe.val_every and "valid" in manifest["splits"]:
        # "uneven": every valid row exactly once; the ranks' batch counts are evened out in validate().
        valid = PackedDataset(job, "valid", rank, world_size, batch_size=rows, shuffle=False, remainder="uneven")
    spike = recipe.spike
    detector = SpikeDetector(spike.window, spike.k, spike.min_steps, spike.min_std)
    train_dir = recipe.output_dir()
    trainer = Trainer(recipe, rank, world_size, device, model, optimizer, scheduler, stream, detector,
                      EMA(recipe.loss_smoothing), train_dir, log=RunLog(train_dir, recipe.tensorboard) if rank == 0
                      else None)
    return trainer, valid


def run_worker(recipe: TrainRecipe, rank: int, world_size: int, device: torch.device, *, shard: Any = None,
               crash_after: int | None = None) -> dict[str, Any]:
    """The training loop of one worker, from the newest checkpoint in the train folder if there is one.
    `crash_after` raises after that step of a run that started from scratch (a simulated failure, for tests:
    the run it is resumed by goes on). Returns the last metrics line."""
    if device.type == "cpu":
        torch.set_num_threads(max(1, int(recipe.cpus_per_worker)))  # Ray's CPUs, not the machine's
    else:
        torch.cuda.set_device(device)  # NCCL's object collectives (checkpoints, spikes) use the current device
    t, valid = build_trainer(recipe, rank, world_size, device, shard)
    saved = checkpoint_dirs(t.train_dir)
    if saved:
        t.restore(saved[-1])
    elif t.log is not None:
        t.log.restart_at(0)  # a worker group restarted before its first checkpoint starts over
    fresh = t.step == 0
    if t.log is not None:
        t.log.event("start", step=t.step, workers=world_size, device=device.type)
    peak = peak_bf16_flops(device)
    flops_per_token = t.model.cfg.flops_per_token(int(read_manifest(recipe.job_dir())["seq_len"]))
    last: dict[str, Any] = {}
    t.model.train()
    while t.step < recipe.steps:
        start = time.perf_counter()
        data = t.stream.next_step()
        data_seconds = time.perf_counter() - start
        result = forward_backward(t.model, data.micro, device)
        reason = t.detector.update(result.loss)
        documents: list[str] = []
        skip = not math.isfinite(result.loss)
        if reason is not None:
            saved = checkpoint_dirs(t.train_dir) if recipe.checkpoint_every else []
            rewind = recipe.spike.skip_bad_batches and t.stream.rewindable and bool(saved)
            action = ("rolled back to the last checkpoint; batch skipped" if rewind else
                      "update dropped" if recipe.spike.skip_bad_batches or skip else "recorded")
            documents = t.record_spike(data, result.loss, reason, action)
            if recipe.spike.skip_bad_batches:
                t.stream.bad.add(data.position)
                skip = True
            if rewind:
                step = t.step + 1
                t.optimizer.zero_grad(set_to_none=True)
                t.restore(saved[-1])
                if t.log is not None:
                    t.log.event("rollback", step=step, to_step=t.step, reason=reason)
                t.pending[step] = {"spike": f"{reason}; batch skipped, rolled back to step {t.step}",
                                   "spike_loss": result.loss, "documents": documents[:MAX_LOGGED_DOCUMENTS]}
                continue
        step_result = optimizer_step(t.model, t.optimizer, t.scheduler, recipe.optim.grad_clip, skip=skip)
        if device.type == "cuda":
            torch.cuda.synchronize()  # time the GPU's work, not its queue
        seconds = time.perf_counter() - start
        t.step += 1
        positions = sum(mb["input_ids"].numel() for mb in data.micro) * world_size
        t.tokens += positions
        row = {"step": t.step, "loss": result.loss, "loss_smoothed": t.ema.update(result.loss),
               "lr": step_result.lr, "grad_norm": step_result.grad_norm, "tokens": t.tokens,
               "tokens_per_s": positions / seconds, "step_seconds": seconds, "data_seconds": data_seconds,
               "spike": reason, "time": time.time()}
        if reason is not None:
            row["documents"] = documents[:MAX_LOGGED_DOCUMENTS]
        if not step_result.applied:
            row["update_dropped"] = True  # a spike's under skip_bad_batches, or a non-finite loss or gradient
        row.update(t.pending.pop(t.step, {}))
        if peak:
            row["mfu"] = positions / world_size / seconds * flops_per_token / peak
        if recipe.val_every and (t.step % recipe.val_every == 0 or t.step == recipe.steps):
            row["val_loss"] = t.validate(valid)
        if t.log is not None:
            t.log.step(row)
        if recipe.checkpoint_every and (t.step % recipe.checkpoint_every == 0 or t.step == recipe.steps):
            t.save()
        if crash_after is not None and t.step == crash_after and fresh:
            msg = f"simulated failure after step {t.step}"
            raise RuntimeError(msg)
        last = row
    if t.log is not None:
        t.log.event("end", step=t.step)
        t.log.close()
    return last
