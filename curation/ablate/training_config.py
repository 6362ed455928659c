"""The proxy model and its budget, as an ablation file's `training:` gives it: the same for every variant and seed
(its own module, as the mixture search's proxies read it too)."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator

from curation.train.config import ModelSection, SpikeConfig
from curation.train.optim import OptimConfig


class Training(BaseModel):
    """The proxy model and its budget: the same for every variant and seed."""

    model_config = ConfigDict(extra="forbid")

    model: ModelSection = Field(default_factory=ModelSection, description="The reference decoder's shape "
                                "(vocab_size and max_seq_len follow the tokenizer and pack.seq_len).")
    optim: OptimConfig = Field(default_factory=OptimConfig, description="AdamW and its schedule (total_steps "
                               "defaults to the run's steps).")
    tokens: int = Field(..., gt=0, description="Tokens (positions) each run trains on; steps = tokens / "
                        "(batch_size x pack.seq_len), rounded up.")
    batch_size: int = Field(8, gt=0, description="Rows per optimizer step.")
    micro_batches: int = Field(1, gt=0, description="Gradient accumulation: forward/backward passes per step.")
    seeds: list[int] = Field([0, 1, 2], min_length=1, description="A run per variant and seed; the spread over "
                             "seeds is what a difference between variants must exceed.")
    eval_every: int | None = Field(None, gt=0, description="Steps between checkpoints, each evaluated (the "
                                   "curves); default: a quarter of the run. The last step is always evaluated.")
    use_gpu: bool = Field(False, description="Train and evaluate each run on a GPU (one per run).")
    cpus_per_run: float = Field(1.0, gt=0, description="CPUs a run takes (its torch threads, on CPU).")
    spike: SpikeConfig = Field(default_factory=SpikeConfig, description="Loss spikes: recorded (see `curate train`).")

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            msg = f"seeds must differ, got {seeds}"
            raise ValueError(msg)
        return seeds

    def steps(self, seq_len: int) -> int:
        return math.ceil(self.tokens / (self.batch_size * seq_len))

    def checkpoint_every(self, steps: int) -> int:
        return self.eval_every or max(1, steps // 4)
