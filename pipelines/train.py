"""The training job: a Ray Train `TorchTrainer` whose workers train the reference model on a job's packed shards.

`train(recipe)` (or `curate train RECIPE [--resume]`) starts `recipe.workers` Ray Train workers (gloo on CPU,
NCCL on CUDA); each runs `curation.train.loop.run_worker`, which needs only torch, so any launcher that
initialises a process group can run it (`benchmarks/train_gpu.py` does, on one GPU without Ray):

- the model, FSDP2-sharded (`shard_model`: bf16 compute on CUDA, fp32 on CPU), AdamW, warmup + cosine;
- data: `PackedDataset` over the job's `train` split (rank-sharded, resumable), or a Ray Dataset handed to
  the trainer as `datasets={"train": ray_dataset(job)}` (streamed by Ray Data, split across workers);
- every step, one line of `<train_dir>/metrics.jsonl` (rank 0): step, loss, loss_smoothed, lr, grad_norm,
  tokens (positions so far), tokens_per_s, step_seconds, data_seconds, val_loss (every `val_every` steps),
  mfu (on CUDA), spike (its reason, else null) and, on a spike, documents (ids of the batch's documents);
  the same scalars go to TensorBoard (`<train_dir>/tensorboard`) when a SummaryWriter is importable;
- a spike or non-finite loss (`SpikeDetector`) is traced to its documents and appended to
  `<train_dir>/spikes.jsonl`; with `spike.skip_bad_batches` the run restores the last checkpoint, replays the
  steps after it (same data, same results) and skips the bad batch's loader position; the step that took the
  next batch instead carries the spike's reason in `spike`, its loss in `spike_loss`;
- checkpoints every `checkpoint_every` steps and at the last one, the newest `keep_checkpoints` kept, in
  `<train_dir>/checkpoints/step-NNNNNNNN/state.pt`: full (unsharded) model and optimizer state, scheduler,
  loader position, skipped batches, spike detector, loss EMA and every rank's RNG. Workers always continue
  from the newest one, so `--resume` and Ray Train's restarts (`max_failures`) continue exactly; the driver
  refuses to start a fresh run in a folder that holds one, and to resume one with a recipe its checkpoint
  cannot honour (`curation.train.resume`, against the checkpoint's `run.json`). On resume, metrics.jsonl
  drops the steps after the checkpoint (they are run again); spikes.jsonl is never rewritten, and
  events.jsonl tells each start (from which step), schedule change (more `steps`), rollback and end.
"""


from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from curation.job import job_folder_lock
from curation.train.config import TrainRecipe
from curation.train.loader import read_manifest, verify_packed
from curation.train.loop import METRICS, SPIKES, RunLog, checkpoint_dirs, read_jsonl, run_worker
from curation.train.resume import check_resume
from pipelines.net import free_port


def _read_shards(items: dict[str, np.ndarray]) -> pa.Table:
    """Ray Data map_batches: the rows of the listed shard files, each with its global row index."""
    tables = []
    for path, first in zip(items["file"].tolist(), items["first_row"].tolist(), strict=True):
        with pa.memory_map(path) as source:
            table = pa.ipc.open_stream(source).read_all()
        tables.append(table.append_column("row", pa.array(np.arange(first, first + len(table), dtype=np.int64))))
    return pa.concat_tables(tables)


def ray_dataset(job_dir: str | Path, split: str = "train", *, num_cpus: float = 0.5) -> Any:
    """A Ray Dataset of a job's packed rows (one read task per shard), to hand to the trainer as
    `train(recipe, datasets={"train": ray_dataset(job)})`.

    Columns: the packed schema (`curation.tokens.pack`) plus `row`, the row's index in the split as
    `PackedDataset` numbers it. Rows come in shard order: the pipeline already shuffled them globally (add
    `.random_shuffle()` for another order). `num_cpus` per read task is fractional so reads still run while
    the trainer's workers hold the CPUs (a 2-CPU machine would otherwise wait forever)."""
    import ray

    job_dir = Path(job_dir).resolve()
    manifest = read_manifest(job_dir)
    if split not in manifest["splits"]:
        msg = f"split {split!r} not in {job_dir}/manifest.json (has {sorted(manifest['splits'])})"
        raise ValueError(msg)
    items, first = [], 0
    for shard in manifest["splits"][split]["shards"]:
        items.append({"file": str(job_dir / shard["file"]), "first_row": first})
        first += int(shard["rows"])
    return ray.data.from_items(items).map_batches(_read_shards, batch_size=1, batch_format="numpy",
                                                   num_cpus=num_cpus)


# -- Ray Train ----------------------------------------------------------------------------------------------



def ray_init_options(address: str | None) -> dict[str, Any]:
    """`ray.init`'s arguments: join `address` (or $RAY_ADDRESS's cluster) when given, else start a Ray of our own.

    Plain `ray.init()` would join a Ray that `ray start` left on this machine. And Ray Train's
    PlacementGroupCleaner, an actor of the run, finds its cluster's state API by looking for Ray processes on
    the machine: with another Ray running it failed ("Found multiple active Ray instances") or, where `ray
    start` had recorded the other one as the latest, asked that one about our controller, which it does not
    know (Ray 2.60's code then takes the controller for dead and removes our placement group). The embedded
    Ray's dashboard, which serves the state API, gets a port chosen here, and every worker of the run is told
    it ($RAY_API_SERVER_ADDRESS)."""
    address = address or os.environ.get("RAY_ADDRESS")
    options: dict[str, Any] = {"logging_level": "WARNING"}
    if address:
        return options | {"address": address}
    port = free_port()  # an explicit dashboard port that is taken fails ray.init: never a silent other port
    # Token auth protects a Ray others reach; this one is private to the run, and its notice says nothing to act on.
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    return options | {"address": "local", "include_dashboard": True, "dashboard_port": port,
                      "runtime_env": {"env_vars": {"RAY_API_SERVER_ADDRESS": f"http://127.0.0.1:{port}"}}}


def _refuse_beyond(recipe: TrainRecipe, cpus: float, gpus: float | None) -> None:
    """`ResourcesError` where the recipe's workers need more than a Ray of this machine has (`gpus` None: not known
    yet): Ray Train would wait for them and retry its worker group for ever, as this machine's Ray cannot grow."""
    gpus_short = recipe.use_gpu and gpus is not None and recipe.workers > gpus
    if recipe.workers * recipe.cpus_per_worker > cpus or gpus_short:
        has = f"{cpus:g} CPUs" + (f", {gpus:g} GPUs" if gpus is not None else "")
        msg = (f"workers x cpus_per_worker = {recipe.workers} x {recipe.cpus_per_worker}"
               + (f" ({recipe.workers} GPUs)" if recipe.use_gpu else "") + f" is more than this machine's Ray has "
               f"({has}): lower workers or cpus_per_worker, or give --address a cluster")
        raise ResourcesError(msg)


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """Ray Train's entry on each worker: the recipe travels as JSON and is validated again here."""
    import ray.train
    import ray.train.torch

    recipe = TrainRecipe.model_validate(config["recipe"])
    context = ray.train.get_context()
    device = ray.train.torch.get_device() if recipe.use_gpu else torch.device("cpu")
    last = run_worker(recipe, context.get_world_rank(), context.get_world_size(), device,
                      shard=ray.train.get_dataset_shard("train") if config.get("ray_data") else None,
                      crash_after=config.get("crash_after"))
    ray.train.report({k: v for k, v in last.items() if isinstance(v, int | float) and not isinstance(v, bool)})


@dataclass
class TrainResult:
    train_dir: Path
    metrics: list[dict[str, Any]]  # metrics.jsonl: one line per step
    spikes: list[dict[str, Any]]  # spikes.jsonl
    seconds: float  # the whole fit(), Ray's start and stop included

    @property
    def losses(self) -> dict[int, float]:
        return {r["step"]: r["loss"] for r in self.metrics}


class ResourcesError(ValueError):
    """The workers a training recipe asks for cannot run on the Ray it has, and would wait for ever."""


def train(recipe: TrainRecipe, *, resume: bool = False, datasets: dict[str, Any] | None = None,
          address: str | None = None, crash_after: int | None = None) -> TrainResult:
    """Run the training job on Ray (starting a local Ray when none is up): `resume` continues from the
    newest checkpoint in the train folder, `datasets={"train": ray_dataset(job)}` streams the rows through
    Ray Data instead of the packed loader. `crash_after` is for tests (see `run_worker`). One training at a time
    writes a train folder (a second one into it resumed the first's checkpoints while it ran: `JobFolderBusy`)."""
    with job_folder_lock(str(recipe.output_dir().resolve()), "train folder"):
        return _train(recipe, resume=resume, datasets=datasets, address=address, crash_after=crash_after)


def _train(recipe: TrainRecipe, *, resume: bool, datasets: dict[str, Any] | None, address: str | None,
           crash_after: int | None) -> TrainResult:
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    from pipelines.executors.ray import join_ray, keeping_sigterm

    train_dir = recipe.output_dir().resolve()
    saved = checkpoint_dirs(train_dir)
    if not resume and (saved or read_jsonl(train_dir / METRICS)):
        msg = (f"{train_dir} holds an earlier run (checkpoints or metrics): resume it (--resume) or set "
               "another train_dir")
        raise FileExistsError(msg)
    manifest = read_manifest(recipe.job_dir())
    verify_packed(recipe.job_dir(), manifest)  # before Ray starts anything: one line, naming the file
    if saved:
        check_resume(recipe, saved[-1], manifest)
    if set(datasets or {}) - {"train"}:
        msg = f"datasets: only 'train' is read, got {sorted(datasets)}"
        raise ValueError(msg)
    train_dir.mkdir(parents=True, exist_ok=True)
    (train_dir / "train.json").write_text(json.dumps(recipe.model_dump(mode="json"), indent=2))
    own = False
    if not ray.is_initialized():
        options = ray_init_options(address)
        own = options.get("address") == "local"
        if own:  # before Ray's start (seconds): its Ray has no more CPUs than this process may run on
            _refuse_beyond(recipe, len(os.sched_getaffinity(0)), None)
        keeping_sigterm(lambda: join_ray(options))
    cpus, gpus = ray.cluster_resources().get("CPU", 0), ray.cluster_resources().get("GPU", 0)
    if own:
        _refuse_beyond(recipe, cpus, gpus)
    if datasets and recipe.workers * recipe.cpus_per_worker >= cpus:
        # Ray Data's read tasks would wait forever for a CPU the trainer's workers hold (STACK-NOTES).
        msg = (f"workers x cpus_per_worker = {recipe.workers} x {recipe.cpus_per_worker} takes all {cpus:g} CPUs "
               "of the cluster: lower cpus_per_worker to leave Ray Data some")
        raise ResourcesError(msg)
    recipe = recipe.model_copy(update={"train_dir": str(train_dir), "job": str(recipe.job_dir().resolve())})
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config={"recipe": recipe.model_dump(mode="json"), "ray_data": bool(datasets),
                           "crash_after": crash_after},
        scaling_config=ScalingConfig(num_workers=recipe.workers, use_gpu=recipe.use_gpu,
                                     resources_per_worker={"CPU": recipe.cpus_per_worker}),
        torch_config=TorchConfig(backend="nccl" if recipe.use_gpu else "gloo"),
        run_config=RunConfig(name=recipe.name, storage_path=str(train_dir / "ray"),
                             failure_config=FailureConfig(max_failures=recipe.max_failures)),
        datasets=datasets,
    )
    # Ray Train's own Ctrl-C handler aborts the run in the background and ends the process with status 1 and no word
    # (steps went on meanwhile): Ctrl-C raises KeyboardInterrupt here instead, as SIGTERM does, and `curate train`
    # says how it ended and exits 130
    trainer._register_sigint_handler = lambda controller: None  # type: ignore[method-assign]
    start = time.perf_counter()
    try:
        trainer.fit()
    except KeyboardInterrupt as exc:  # said in events.jsonl too: the next record was the resume's `start`
        from pipelines.run import interruption

        # no step: the workers may save one more checkpoint before they end with this process's Ray
        RunLog(train_dir, tensorboard=False).event("interrupted", signal=interruption(exc).name)
        raise
    return TrainResult(train_dir, read_jsonl(train_dir / METRICS), read_jsonl(train_dir / SPIKES),
                       time.perf_counter() - start)
