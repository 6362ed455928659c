"""The training recipe (`curate train RECIPE`): which curation job to train on, the model, the optimizer, the
loop's cadence and the spike policy, validated with errors that point at the file and line.

    job: recipes/quickstart.yaml      # a curation job folder, or the curation recipe that made it
    model: {d_model: 64, n_layers: 2, n_heads: 4}
    optim: {lr: 3.0e-3, warmup_steps: 5}
    steps: 50
    batch_size: 8                     # rows per optimizer step, all workers together
    workers: 2
    spike: {window: 20, k: 6, skip_bad_batches: true}

`vocab_size` and `max_seq_len` default to the job's manifest; `optim.total_steps` (the end of the cosine
decay) defaults to `steps`. Everything else has the defaults below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from curation.train.model import ModelConfig
from curation.train.optim import OptimConfig
from curation.yaml_model import NAME_PATTERN, parse_yaml_model, read_recipe_text

RECIPE_SUFFIXES = (".yaml", ".yml")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSection(ModelConfig):
    """`ModelConfig` whose `vocab_size` and `max_seq_len` may be left to the job's manifest."""

    vocab_size: int | None = Field(None, gt=0, description="Default: the job's vocabulary size.")
    max_seq_len: int | None = Field(None, gt=0, description="Default: the job's seq_len.")


class SpikeConfig(_Strict):
    """When a step's loss counts as a spike (`curation.train.spikes.SpikeDetector`) and what then happens."""

    window: int = Field(100, ge=2, description="Steps of the running window the spike is measured against.")
    k: float = Field(6.0, gt=0, description="A loss more than k standard deviations above the window's mean.")
    min_steps: int = Field(20, ge=2, description="Steps seen before any loss can count as a spike.")
    min_std: float = Field(1e-3, ge=0, description="Floor of the standard deviation (flat stretches).")
    skip_bad_batches: bool = Field(
        False, description="On a spike or non-finite loss: restore the last checkpoint and skip that batch "
        "(without a checkpoint yet: drop that step's update). false: record it and go on.")

    @model_validator(mode="after")
    def _check(self) -> SpikeConfig:
        if self.min_steps > self.window:
            msg = f"min_steps ({self.min_steps}) must not exceed window ({self.window})"
            raise ValueError(msg)
        return self


class TrainRecipe(_Strict):
    """A training job on the packed shards of one curation job."""

    name: str = Field("train", pattern=NAME_PATTERN, description="Name of the run (Ray Train's too).")
    job: str = Field(..., description="The curation job folder (holding manifest.json), or the curation recipe "
                     "that made it (its job folder under the recipe's output).")
    train_dir: str | None = Field(None, description="Folder of metrics, spikes and checkpoints. Default: "
                                  "<job>/train, where the status service reads the loss curve.")
    seed: int = Field(42, description="Seed of the model's initialisation and of the loader's row order.")
    model: ModelSection = Field(default_factory=ModelSection, description="The decoder's shape.")
    optim: OptimConfig = Field(default_factory=OptimConfig, description="AdamW and its learning-rate schedule.")
    steps: int = Field(..., gt=0, description="Optimizer steps of the run; a resumed run goes on to this step, "
                       "its LR decaying from where it stood to min_lr at the new end (give optim.total_steps to "
                       "lengthen a run without changing its LR schedule).")
    micro_batches: int = Field(1, gt=0, description="Gradient accumulation: each worker's rows of a step are "
                               "cut into this many forward/backward passes.")
    val_every: int = Field(0, ge=0, description="Validation loss on the `valid` split every N steps and at the "
                           "last step; 0: never.")
    val_batches: int | None = Field(None, gt=0, description="Validate on at most this many batches per worker "
                                    "(default: the whole split).")
    checkpoint_every: int = Field(0, ge=0, description="Checkpoint every N steps and at the last step; "
                                  "0: never (no resume, and skip_bad_batches can only drop updates).")
    keep_checkpoints: int = Field(3, ge=1, description="Checkpoints kept (the newest).")
    workers: int = Field(1, gt=0, description="Ray Train workers (one GPU each with use_gpu).")
    # After workers and micro_batches: its check reads them (and so points at this key's line).
    batch_size: int = Field(..., gt=0, description="Rows per optimizer step, all workers together.")
    use_gpu: bool = Field(False, description="CUDA and NCCL, bf16 compute; false: CPU, gloo, fp32.")
    cpus_per_worker: float = Field(1.0, gt=0, description="CPUs Ray reserves per worker (leave some for Ray "
                                   "Data when a Ray Dataset feeds the trainer).")
    loader_workers: int = Field(0, ge=0, description="DataLoader worker processes per trainer worker.")
    max_failures: int = Field(0, ge=0, description="Ray Train restarts of a failed worker group, each from the "
                              "last checkpoint.")
    loss_smoothing: float = Field(0.98, ge=0, lt=1, description="EMA factor of `loss_smoothed`.")
    tensorboard: bool = Field(True, description="Also write TensorBoard events to <train_dir>/tensorboard "
                              "(when torch's or tensorboardX's writer is importable).")
    spike: SpikeConfig = Field(default_factory=SpikeConfig, description="What counts as a loss spike, and "
                               "what then happens.")

    @model_validator(mode="before")
    @classmethod
    def _schedule_follows_steps(cls, data: Any) -> Any:
        # The cosine decay ends at the last step unless the recipe says otherwise, and a short run's default
        # warmup is a tenth of it (OptimConfig's 100 steps would not fit in it).
        if not isinstance(data, dict) or not isinstance(data.get("optim") or {}, dict):
            return data
        steps = data.get("steps")
        if isinstance(steps, int) and steps > 0:
            optim = dict(data.get("optim") or {})
            optim.setdefault("total_steps", steps)
            if isinstance(optim["total_steps"], int) and optim["total_steps"] > 0:
                default = OptimConfig.model_fields["warmup_steps"].default
                optim.setdefault("warmup_steps", min(default, optim["total_steps"] // 10))
            data = {**data, "optim": optim}
        return data

    @field_validator("batch_size")
    @classmethod
    def _whole_micro_batches(cls, batch_size: int, info: ValidationInfo) -> int:
        workers, micro = info.data.get("workers"), info.data.get("micro_batches")
        if workers and micro and batch_size % (workers * micro):
            msg = f"{batch_size} rows do not divide into workers x micro_batches ({workers} x {micro})"
            raise ValueError(msg)
        return batch_size

    @property
    def micro_batch_rows(self) -> int:
        """Rows of one forward/backward pass on one worker."""
        return self.batch_size // (self.workers * self.micro_batches)

    def job_dir(self) -> Path:
        """The curation job folder: `job` itself, or the job folder its curation recipe writes."""
        if Path(self.job).suffix in RECIPE_SUFFIXES:
            from curation.recipe import load_recipe  # the curation recipe's stages are heavy imports

            return Path(load_recipe(self.job, check_paths=False).job_dir())
        return Path(self.job)

    def output_dir(self) -> Path:
        return Path(self.train_dir) if self.train_dir else self.job_dir() / "train"

    def model_for(self, manifest: dict[str, Any]) -> ModelConfig:
        """The model's config, with what the recipe leaves out taken from the job's manifest."""
        fields = self.model.model_dump(exclude_none=True)
        fields.setdefault("vocab_size", int(manifest["vocab_size"]))
        fields.setdefault("max_seq_len", int(manifest["seq_len"]))
        return ModelConfig.model_validate(fields)


def _manifest_checks(recipe: TrainRecipe) -> list[tuple[tuple[Any, ...], str]]:
    """The job must exist and fit the model: its shards are read by every worker."""
    from curation.train.loader import read_manifest

    try:
        manifest = read_manifest(recipe.job_dir())
    except Exception as exc:  # a missing folder, a curation recipe that fails, a bad manifest: all one problem
        return [(("job",), f"{exc} (run the curation job with tokenizer and pack first)")]
    out: list[tuple[tuple[Any, ...], str]] = []
    if recipe.model.vocab_size is not None and recipe.model.vocab_size < int(manifest["vocab_size"]):
        out.append((("model", "vocab_size"), f"{recipe.model.vocab_size} is smaller than the job's vocabulary "
                    f"({manifest['vocab_size']})"))
    if recipe.model.max_seq_len is not None and recipe.model.max_seq_len < int(manifest["seq_len"]):
        out.append((("model", "max_seq_len"), f"{recipe.model.max_seq_len} is shorter than the job's rows "
                    f"(seq_len {manifest['seq_len']})"))
    rows = int(manifest["splits"].get("train", {}).get("rows", 0))
    if recipe.batch_size > rows:
        out.append((("batch_size",), f"{recipe.batch_size} is more than the job's {rows} train rows: every step "
                    "would train on fewer rows than it says"))
    if recipe.val_every and "valid" not in manifest["splits"]:
        out.append((("val_every",), "the job has no `valid` split (pack.validation: 0); set val_every: 0"))
    elif recipe.val_every and not manifest["splits"]["valid"].get("rows"):
        out.append((("val_every",), "the job's `valid` split holds no row (too few documents for its "
                    "pack.validation share): no validation loss could be measured; set val_every: 0, or pack the job "
                    "with a larger pack.validation"))
    return out


def parse_train_recipe(text: str, file: str = "<train recipe>", *, check_paths: bool = True) -> TrainRecipe:
    """Validate a training recipe; `check_paths` also reads the job's manifest and checks the model fits it."""
    return parse_yaml_model(text, file, TrainRecipe, _manifest_checks if check_paths else None,
                            what="a training recipe is a YAML mapping (name:, job:, model: ...)")


def load_train_recipe(path: str | Path, *, check_paths: bool = True) -> TrainRecipe:
    return parse_train_recipe(read_recipe_text(path), str(path), check_paths=check_paths)
