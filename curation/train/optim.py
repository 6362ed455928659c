"""AdamW, the warmup-then-cosine learning-rate schedule, and one training step with gradient accumulation.

The schedule is a `CosineSchedule` object, not a function, so that torch saves it with the scheduler's state:
a resumed run knows the schedule it was on and, when `total_steps` changed, goes on from the LR it had
(`CosineSchedule.resumed_to`) instead of jumping onto the new curve.

A step is split in two so a caller can look at the loss (the spike detector) before deciding to apply it:
`forward_backward` accumulates gradients over micro-batches, `optimizer_step` clips and applies them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import nn

from curation.train.model import IGNORE_INDEX


class OptimConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lr: float = Field(default=3e-4, gt=0, description="Peak learning rate (AdamW), reached after warmup.")
    min_lr: float = Field(default=3e-5, ge=0, description="Learning rate at the end of the cosine decay.")
    warmup_steps: int = Field(default=100, ge=0, description="Steps of linear warmup up to lr.")
    total_steps: int = Field(default=10_000, gt=0, description="Step at which the cosine decay reaches "
                             "min_lr (a training recipe's default: its `steps`).")
    weight_decay: float = Field(default=0.1, ge=0, description="AdamW weight decay of the linear layers' "
                                "matrices (norms, biases and embeddings are not decayed).")
    betas: tuple[float, float] = Field(default=(0.9, 0.95), description="AdamW's beta1 and beta2.")
    eps: float = Field(default=1e-8, gt=0, description="AdamW's epsilon.")
    grad_clip: float | None = Field(default=1.0, gt=0, description="Clip the gradient norm to this; null: "
                                    "measure the norm, never clip.")

    @model_validator(mode="after")
    def _check(self) -> OptimConfig:
        if self.min_lr > self.lr:
            msg = f"min_lr ({self.min_lr}) must not exceed lr ({self.lr})"
            raise ValueError(msg)
        if self.warmup_steps > self.total_steps:
            msg = f"warmup_steps ({self.warmup_steps}) must not exceed total_steps ({self.total_steps})"
            raise ValueError(msg)
        return self


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Decay only matrices of linear layers: norms, biases and embedding tables are left alone (a tied
    embedding doubles as the output head and stays undecayed). Call after FSDP sharding, on its params."""
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    decay, no_decay = [], []
    for p in model.parameters():
        if not p.requires_grad:
            continue
        (decay if p.ndim >= 2 and id(p) not in embeddings else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, cfg: OptimConfig) -> torch.optim.AdamW:
    return torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps)


def lr_factor(step: int, *, warmup_steps: int, total_steps: int, min_ratio: float) -> float:
    """Multiplier of the peak LR before optimizer step `step` (0-based): linear warmup (step+1)/(warmup+1),
    so the first step does not have LR 0, peak at `warmup_steps`, cosine down to `min_ratio` at
    `total_steps`, then held there."""
    if step < warmup_steps:
        return (step + 1) / (warmup_steps + 1)
    if step >= total_steps:
        return min_ratio
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass
class CosineSchedule:
    """`lr_factor` as a callable LambdaLR saves in its state_dict (torch keeps a callable object's `__dict__`,
    never a function). `from_step`/`from_factor`, when set, replace the cosine from that step on by one running
    from `from_factor` down to `min_ratio` at `total_steps`: a run resumed with another total_steps."""

    warmup_steps: int
    total_steps: int
    min_ratio: float
    from_step: int = 0
    from_factor: float | None = None

    @classmethod
    def of(cls, cfg: OptimConfig) -> CosineSchedule:
        return cls(cfg.warmup_steps, cfg.total_steps, cfg.min_lr / cfg.lr)

    def __call__(self, step: int) -> float:
        if self.from_factor is None or step < self.from_step:
            return lr_factor(step, warmup_steps=self.warmup_steps, total_steps=self.total_steps,
                             min_ratio=self.min_ratio)
        if step >= self.total_steps:
            return self.min_ratio
        progress = (step - self.from_step) / max(1, self.total_steps - self.from_step)
        return self.min_ratio + (self.from_factor - self.min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    def resumed_to(self, total_steps: int, step: int) -> CosineSchedule:
        """This schedule continued at `step` towards another `total_steps` without a jump: before the decay
        began (warmup does not depend on total_steps) simply the new curve; after it, the LR of `step` decays
        by a cosine to `min_ratio` at `total_steps` (a schedule already at its end stays there)."""
        if total_steps == self.total_steps:
            return self
        if step < self.warmup_steps and self.from_factor is None:
            return replace(self, total_steps=total_steps)
        return replace(self, total_steps=total_steps, from_step=step, from_factor=self(step))


def build_scheduler(optimizer: torch.optim.Optimizer, cfg: OptimConfig) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR over a `CosineSchedule`; its state_dict holds the step and the schedule, so a resumed run
    continues the curve (`resume_scheduler`)."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, CosineSchedule.of(cfg))


def resume_scheduler(scheduler: torch.optim.lr_scheduler.LambdaLR, state: dict, total_steps: int) -> bool:
    """Load a scheduler's state and continue its schedule towards `total_steps` (`CosineSchedule.resumed_to`),
    setting the optimizer's LR for the next step from it; True when the schedule was re-fit. A state saved
    without its schedule (an older checkpoint) keeps the one the scheduler was built with."""
    scheduler.load_state_dict(state)
    saved = scheduler.lr_lambdas[0]
    step = scheduler.last_epoch  # optimizer steps taken: the index of the next one
    schedule = saved.resumed_to(total_steps, step)
    scheduler.lr_lambdas = [schedule] * len(scheduler.lr_lambdas)
    for group, base in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, strict=True):
        group["lr"] = base * schedule(step)
    return schedule is not saved


def clip_grad_norm(params: Iterable[torch.Tensor], max_norm: float | None) -> float:
    """Total L2 norm of the gradients before clipping, clipped to `max_norm` (None: only measured).
    With FSDP2 the norm comes back as a DTensor; it is made whole so every rank sees the same number."""
    norm = torch.nn.utils.clip_grad_norm_(list(params), math.inf if max_norm is None else max_norm, foreach=True)
    if hasattr(norm, "full_tensor"):
        norm = norm.full_tensor()
    return float(norm)


class MicroBatchResult(NamedTuple):
    loss: float  # mean over every label of the step (all micro-batches, all ranks)
    num_tokens: int  # labels counted, all ranks together


_MODEL_KEYS = ("input_ids", "position_ids", "segment_ids", "labels")


def _world() -> tuple[int, bool]:
    ready = torch.distributed.is_available() and torch.distributed.is_initialized()
    return (torch.distributed.get_world_size() if ready else 1), ready


def forward_backward(
    model: nn.Module, micro_batches: list[Mapping[str, torch.Tensor]], device: torch.device | str | None = None
) -> MicroBatchResult:
    """Accumulate the gradient of the mean loss over every label of the step.

    Each micro-batch's summed loss is divided by the step's total label count (across ranks), not by its
    own: micro-batches and ranks then weigh by their tokens, as one large batch would. FSDP averages
    gradients over ranks, hence the factor world_size. Batches hold input_ids, position_ids, labels and
    optionally segment_ids."""
    if not micro_batches:
        msg = "forward_backward needs at least one micro-batch"
        raise ValueError(msg)
    if device is not None:
        # Only what the model reads: loader batches also carry row indices for provenance.
        micro_batches = [{k: mb[k].to(device, non_blocking=True) for k in _MODEL_KEYS if k in mb}
                         for mb in micro_batches]
    world, distributed = _world()
    counted = torch.stack([(mb["labels"] != IGNORE_INDEX).sum() for mb in micro_batches]).sum()
    if distributed:
        torch.distributed.all_reduce(counted)
    scale = world / counted.clamp(min=1).float()
    syncable = hasattr(model, "set_requires_gradient_sync")
    loss_sum = torch.zeros((), device=counted.device)
    for i, mb in enumerate(micro_batches):
        if syncable:
            # Reduce-scatter gradients once, on the last micro-batch, not after every backward.
            model.set_requires_gradient_sync(i == len(micro_batches) - 1)
        out = model(mb["input_ids"], mb["position_ids"], mb.get("segment_ids"), labels=mb["labels"])
        summed = out.loss * out.num_tokens
        (summed * scale).backward()
        loss_sum += summed.detach().float()
    if distributed:
        torch.distributed.all_reduce(loss_sum)
    total = int(counted)
    return MicroBatchResult(float(loss_sum) / max(total, 1), total)


class StepResult(NamedTuple):
    grad_norm: float  # before clipping
    lr: float  # the LR the update used
    applied: bool  # False when skipped: asked to, or the gradient norm was not finite


def optimizer_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    max_norm: float | None,
    *,
    skip: bool = False,
) -> StepResult:
    """Clip, apply and zero the gradients, then advance the schedule. A non-finite norm (or `skip`) drops
    the update but still advances the schedule, so the LR stays a function of the step, as on resume."""
    grad_norm = clip_grad_norm(model.parameters(), max_norm)
    lr = optimizer.param_groups[0]["lr"]
    applied = not skip and math.isfinite(grad_norm)
    if applied:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    with warnings.catch_warnings():
        # A skipped first update makes PyTorch warn that the schedule steps before the optimizer: intended here.
        warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before")
        scheduler.step()
    return StepResult(grad_norm, lr, applied)
