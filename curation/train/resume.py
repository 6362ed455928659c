"""What `--resume` may change: a checkpoint records the run it belongs to (`run.json` beside `state.pt`), and the
driver compares a resumed recipe with it before any worker starts, so a change that the checkpoint would
silently override, or that cannot load, is refused in one line instead of failing (or misleading) later.

Allowed: `steps` and `optim.total_steps` (the LR goes on from its value at the checkpoint and decays to
`min_lr` at the new end: `curation.train.optim.CosineSchedule.resumed_to`), `batch_size`, `micro_batches` and
`workers` (the packed loader resumes at the exact next row; another worker count only where the rows read so
far divide by it), and everything about cadence, logging, spikes and resources. Refused: the model, the job's
data, the seed and the optimizer's settings other than `total_steps` and `grad_clip`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from curation.train.config import TrainRecipe

RUN_FILE = "run.json"
# Settings a checkpoint fixes, with why (the optimizer's state holds its lr, betas, eps and weight decay, and the
# schedule's shape is in the scheduler's state).
OPTIM_FIXED = ("lr", "min_lr", "warmup_steps", "weight_decay", "betas", "eps")
DATA_KEYS = ("seq_len", "vocab_size", "train_rows", "recipe_hash", "tokenizer_sha256")


class ResumeError(ValueError):
    """A resumed recipe changes what its checkpoint fixes."""


def data_identity(manifest: dict[str, Any]) -> dict[str, Any]:
    """What identifies a job's training data: rows, their length, the tokenizer and the recipe that made them."""
    return {"seq_len": int(manifest["seq_len"]), "vocab_size": manifest.get("vocab_size"),
            "train_rows": manifest["splits"].get("train", {}).get("rows"),
            "recipe_hash": manifest.get("recipe_hash"),
            "tokenizer_sha256": (manifest.get("tokenizer") or {}).get("sha256")}


def run_record(recipe: TrainRecipe, manifest: dict[str, Any], step: int, loader: dict[str, Any]) -> dict[str, Any]:
    """`run.json` of a checkpoint: the recipe as run, the model it built, the data and the loader's position."""
    return {"step": step, "recipe": recipe.model_dump(mode="json"),
            "model": recipe.model_for(manifest).model_dump(mode="json"), "data": data_identity(manifest),
            "loader": loader}


def read_run_record(checkpoint: Path) -> dict[str, Any] | None:
    """A checkpoint's run.json, or None for a checkpoint written before checkpoints had one."""
    path = checkpoint / RUN_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _changes(prefix: str, old: dict[str, Any], new: dict[str, Any], keys: tuple[str, ...] | None = None) -> list[str]:
    keys = keys or tuple(dict.fromkeys([*old, *new]))
    return [f"{prefix}{k} {old.get(k)} -> {new.get(k)}" for k in keys if old.get(k) != new.get(k)]


def resume_problems(record: dict[str, Any], recipe: TrainRecipe, manifest: dict[str, Any]) -> list[str]:
    """Each change of `recipe` against a checkpoint's run record that resuming cannot honour, with why."""
    old, new, step = record["recipe"], recipe.model_dump(mode="json"), int(record["step"])
    problems = []
    if changed := _changes("model.", record["model"], recipe.model_for(manifest).model_dump(mode="json")):
        problems.append(f"{', '.join(changed)} (the checkpoint holds the model as it was)")
    if changed := _changes("job's ", record["data"], data_identity(manifest), DATA_KEYS):
        problems.append(f"{', '.join(changed)} (the checkpoint was trained on other data)")
    if old["seed"] != new["seed"]:
        problems.append(f"seed {old['seed']} -> {new['seed']} (the checkpoint goes on with its weights and its "
                        "row order)")
    if changed := _changes("optim.", old["optim"], new["optim"], OPTIM_FIXED):
        problems.append(f"{', '.join(changed)} (the checkpoint's optimizer state and LR schedule hold the old "
                        "values: the LR would jump)")
    total = recipe.optim.total_steps
    if total != old["optim"]["total_steps"] and total < step:
        problems.append(f"optim.total_steps {old['optim']['total_steps']} -> {total} ends before the "
                        f"checkpoint's step {step} (the LR would drop to min_lr at once)")
    problems += _loader_problems(record["loader"], old, new)
    return problems


def _loader_problems(loader: dict[str, Any], old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    if "consumed" in loader:  # a Ray Dataset's stream resumes by skipping as many batches as it took
        if changed := _changes("", old, new, ("batch_size", "workers", "micro_batches")):
            return [f"{', '.join(changed)} (a run fed by a Ray Dataset resumes by counting its batches)"]
        return []
    consumed = int(loader["rows"]) * int(loader["world_size"])
    if new["workers"] != loader["world_size"] and consumed % new["workers"]:
        return [f"workers {loader['world_size']} -> {new['workers']} (the {consumed} rows read so far this "
                f"epoch do not divide among {new['workers']} workers)"]
    return []


def check_resume(recipe: TrainRecipe, checkpoint: Path, manifest: dict[str, Any]) -> None:
    """Raise `ResumeError` (one line) when `recipe` cannot continue `checkpoint` as it says; a checkpoint without
    a run record is not checked."""
    record = read_run_record(checkpoint)
    if record is None:
        return
    problems = resume_problems(record, recipe, manifest)
    if problems:
        msg = (f"cannot resume {checkpoint.parent.parent} at step {record['step']} with this recipe: "
               f"{'; '.join(problems)}. Put these back as they were, or start a new run in another train_dir")
        raise ResumeError(msg)
