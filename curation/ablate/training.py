"""One run of an ablation: the reference decoder trained on a variant's packed shards with one seed, then
every checkpoint evaluated.

The training is `curate train`'s own worker loop (`curation.train.loop.run_worker`), in a process group of one
(a proxy model needs no more than one device; the runs themselves are spread over the cluster). So it resumes
as `curate train --resume` does: from the newest checkpoint in the run's folder, exactly. Checkpoints are kept
until evaluated (`eval/step-NNNNNNNN.json`, written atomically), then all but the newest are removed; `done.json`
marks a run trained and evaluated to its last step. A run started again finds what is done and goes on.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from curation import storage
from curation.ablate.evalsets import EvalSet, read_set
from curation.ablate.evaluate import evaluate
from curation.ablate.results import DONE, eval_file, read_done, read_evaluations
from curation.tokens.tokenizer import load_tokenizer
from curation.train.config import TrainRecipe
from curation.train.loop import checkpoint_dirs, run_worker, step_of
from curation.train.model import ModelConfig, Transformer
from curation.train.resume import read_run_record


@dataclass(frozen=True)
class RunSpec:
    """What a run's task needs: plain data, shipped to wherever it runs."""

    variant: str
    seed: int
    recipe: dict[str, Any]  # its `curate train` recipe (TrainRecipe as JSON)
    sets: list[dict[str, Any]]  # EvalSet as JSON
    tokenizer: str  # the ablation's .model file
    eval_batch_size: int


@contextlib.contextmanager
def process_group_of_one(device: torch.device) -> Iterator[None]:
    """An initialised torch.distributed group of this process alone, as `run_worker` needs."""
    import torch.distributed as dist

    hook = sys.excepthook  # each group wraps it in a "[rank0]:" prefixer, one more per run in a local process
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                store=dist.FileStore(str(Path(tmp) / "store"), 1), rank=0, world_size=1)
        try:
            yield
        finally:
            dist.destroy_process_group()
            sys.excepthook = hook


def load_checkpoint(checkpoint: Path, device: torch.device) -> tuple[Transformer, dict[str, Any]]:
    """The model a checkpoint holds (full state, as `Trainer.save` writes it) and its extra state (step, tokens)."""
    record = read_run_record(checkpoint)
    if record is None:
        msg = f"{checkpoint} has no run.json: not a checkpoint of this trainer"
        raise ValueError(msg)
    state = torch.load(checkpoint / "state.pt", map_location="cpu", weights_only=True)
    model = Transformer(ModelConfig.model_validate(record["model"]))
    model.load_state_dict(state["model"])
    return model.to(device), state["extra"]


def evaluate_checkpoints(recipe: TrainRecipe, spec: RunSpec, device: torch.device) -> list[dict[str, Any]]:
    """Evaluate the run's checkpoints not evaluated yet; then keep only the newest (what a resume needs)."""
    train_dir = Path(recipe.output_dir())
    saved = checkpoint_dirs(train_dir)
    todo = [c for c in saved if not eval_file(train_dir, step_of(c)).is_file()]
    if todo:
        sp = load_tokenizer(spec.tokenizer)
        sets = [read_set(EvalSet.model_validate(s)) for s in spec.sets]
        seq_len = int(json.loads((Path(recipe.job_dir()) / "manifest.json").read_text())["seq_len"])
        for checkpoint in todo:
            model, extra = load_checkpoint(checkpoint, device)
            scores = evaluate(model, sp, sets, seq_len, device, spec.eval_batch_size)
            result = {"variant": spec.variant, "seed": spec.seed, "step": int(extra["step"]),
                      "tokens": int(extra["tokens"]), "sets": scores}
            storage.write_json_atomic(str(eval_file(train_dir, step_of(checkpoint))), result)
    for old in saved[:-1]:
        shutil.rmtree(old, ignore_errors=True)
    return read_evaluations(train_dir)


def train_run(spec: RunSpec) -> dict[str, Any]:
    """Train (or go on training) and evaluate one run; return its `done.json` record."""
    recipe = TrainRecipe.model_validate(spec.recipe)
    train_dir = Path(recipe.output_dir())
    done = read_done(train_dir, recipe.steps, recipe.job)
    if done is not None:
        return done
    started = time.time()
    # The GPU this process was given (Ray sets CUDA_VISIBLE_DEVICES to it): an index, as run_worker's set_device needs.
    device = torch.device("cuda", torch.cuda.current_device()) if recipe.use_gpu else torch.device("cpu")
    threads = torch.get_num_threads()
    try:
        saved = checkpoint_dirs(train_dir)
        if not saved or step_of(saved[-1]) < recipe.steps:
            with process_group_of_one(device):
                run_worker(recipe, 0, 1, device)
        torch.set_num_threads(max(1, int(recipe.cpus_per_worker)))
        evaluations = evaluate_checkpoints(recipe, spec, device)
    finally:
        torch.set_num_threads(threads)  # in the caller's process (a local run), its own setting again
    last = evaluations[-1]
    record = {"variant": spec.variant, "seed": spec.seed, "steps": recipe.steps, "tokens": last["tokens"],
              "job": recipe.job, "final": last["sets"], "seconds": round(time.time() - started, 3)}
    storage.write_json_atomic(str(train_dir / DONE), record)
    return record
