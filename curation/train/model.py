"""A small LLaMA-style decoder-only transformer to train on packed shards, and its FSDP2 wrapping.

RMSNorm before each sublayer, rotary position embeddings driven by `position_ids` (which restart at
every document start in a packed row), a SwiGLU MLP, grouped-query attention and a causal mask that
is also block-diagonal over `segment_ids`, so no token sees another document packed in the same row.
It is a reference model: plain PyTorch modules, no fused kernels, readable over fast.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import nn

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh

IGNORE_INDEX = -100


class ModelConfig(BaseModel):
    """Shape of the model. `n_kv_heads` defaults to `n_heads` (plain multi-head attention) and
    `ffn_hidden` to LLaMA's 8/3·d_model rounded up to a multiple of 64."""

    model_config = ConfigDict(extra="forbid")

    vocab_size: int = Field(gt=0)
    d_model: int = Field(default=512, gt=0, description="Width of the residual stream.")
    n_layers: int = Field(default=8, gt=0, description="Transformer blocks.")
    n_heads: int = Field(default=8, gt=0, description="Attention heads (d_model must be a multiple).")
    n_kv_heads: int | None = Field(default=None, gt=0, description="Key/value heads of grouped-query "
                                   "attention (n_heads must be a multiple). Default: n_heads.")
    ffn_hidden: int | None = Field(default=None, gt=0, description="Hidden width of the SwiGLU feed-forward "
                                   "layer. Default: 8/3 d_model rounded up to a multiple of 64.")
    max_seq_len: int = Field(default=2048, gt=0)
    rope_theta: float = Field(default=10_000.0, gt=0, description="Base of the rotary embeddings' frequencies.")
    tie_embeddings: bool = Field(default=False, description="The output head shares the embedding table.")
    norm_eps: float = Field(default=1e-5, gt=0, description="Epsilon of RMSNorm.")
    init_std: float = Field(default=0.02, gt=0, description="Standard deviation of the initial weights.")
    document_mask: bool = Field(default=True, description="Attention stays inside each packed document; "
                                "false: plain causal attention across the row.")

    @model_validator(mode="after")
    def _check_heads(self) -> ModelConfig:
        if self.n_kv_heads is None:
            self.n_kv_heads = self.n_heads
        if self.ffn_hidden is None:
            self.ffn_hidden = 64 * math.ceil(8 * self.d_model / 3 / 64)
        if self.d_model % self.n_heads:
            msg = f"d_model ({self.d_model}) must be a multiple of n_heads ({self.n_heads})"
            raise ValueError(msg)
        if self.n_heads % self.n_kv_heads:
            msg = f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})"
            raise ValueError(msg)
        if self.head_dim % 2:
            msg = f"head_dim (d_model / n_heads = {self.head_dim}) must be even for rotary embeddings"
            raise ValueError(msg)
        return self

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def _layer_matmul_params(self) -> int:
        kv = 2 * self.d_model * self.n_kv_heads * self.head_dim
        attention = 2 * self.d_model * self.d_model + kv
        return attention + 3 * self.d_model * self.ffn_hidden

    def num_params(self, embedding: bool = True) -> int:
        """Trainable parameters, a tied embedding counted once (equals the built model's count).
        `embedding=False` leaves out the input embedding table but keeps the output head."""
        per_layer = self._layer_matmul_params() + 2 * self.d_model  # + two RMSNorm weights
        table = self.vocab_size * self.d_model
        total = self.n_layers * per_layer + self.d_model + table  # + final norm, + output head
        if embedding and not self.tie_embeddings:
            total += table
        return total

    def flops_per_token(self, seq_len: int | None = None) -> int:
        """Training FLOPs per token for MFU (PaLM, appendix B): 6 per weight of every matmul, the output
        head included and the embedding lookup not, plus 12·n_layers·d_attn·seq_len for attention scores
        and values. Causal masking's halving is not taken, as is conventional."""
        seq_len = self.max_seq_len if seq_len is None else seq_len
        matmul = self.n_layers * self._layer_matmul_params() + self.vocab_size * self.d_model
        return 6 * matmul + 12 * self.n_layers * self.n_heads * self.head_dim * seq_len


class ModelOutput(NamedTuple):
    logits: torch.Tensor  # [batch, seq, vocab]
    loss: torch.Tensor | None  # mean over labels != -100; 0 when a batch has no such label
    num_tokens: torch.Tensor | None  # how many labels the loss averages, to weight accumulated micro-batches


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Statistics in fp32: bf16 sums of squares lose the precision that makes the norm stable.
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def rope_cos_sin(position_ids: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotary angles, [batch, 1, seq, head_dim], from per-token positions."""
    inv_freq = theta ** -(torch.arange(0, head_dim, 2, device=position_ids.device, dtype=torch.float32) / head_dim)
    angles = position_ids.float()[..., None] * inv_freq  # [batch, seq, head_dim / 2]
    angles = torch.cat([angles, angles], dim=-1)[:, None]
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (i, i + head_dim/2) of `x` [batch, heads, seq, head_dim] (the rotate-half layout)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x.float() * cos + rotated.float() * sin).type_as(x)


def document_causal_mask(segment_ids: torch.Tensor) -> torch.Tensor:
    """Boolean [batch, 1, seq, seq] mask, True where query i may attend key j: j <= i in the same segment.
    The diagonal is always allowed, so no row is fully masked (padding being its own segment)."""
    seq = segment_ids.shape[-1]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=segment_ids.device).tril()
    same = segment_ids[:, :, None] == segment_ids[:, None, :]
    return (same & causal)[:, None]


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.wq = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=False)
        self.wk = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.wv = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        batch, seq, _ = x.shape
        q = self.wq(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(batch, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(batch, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if self.n_kv_heads != self.n_heads:
            # Repeat K/V per query group ourselves rather than SDPA's enable_gqa: the memory-efficient
            # kernel, the fused one that takes an attn_mask, does not support it and SDPA would use math.
            groups = self.n_heads // self.n_kv_heads
            k = k[:, :, None].expand(-1, -1, groups, -1, -1).reshape(batch, self.n_heads, seq, self.head_dim)
            v = v[:, :, None].expand(-1, -1, groups, -1, -1).reshape(batch, self.n_heads, seq, self.head_dim)
        if mask is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(out.transpose(1, 2).reshape(batch, seq, -1))


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.w1 = nn.Linear(cfg.d_model, cfg.ffn_hidden, bias=False)  # gate
        self.w3 = nn.Linear(cfg.d_model, cfg.ffn_hidden, bias=False)  # up
        self.w2 = nn.Linear(cfg.ffn_hidden, cfg.d_model, bias=False)  # down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return x + self.feed_forward(self.ffn_norm(x))


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.output = None if cfg.tie_embeddings else nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        """GPT-2/OLMo practice: N(0, init_std) everywhere, the projections that write into the residual
        stream (wo, w2) scaled by 1/sqrt(2·n_layers) so its variance does not grow with depth; norms 1.
        Public so a model built on the meta device can be initialised after `to_empty()`."""
        std = self.cfg.init_std
        residual_std = std / math.sqrt(2 * self.cfg.n_layers)
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                last = name.rsplit(".", 1)[-1]
                nn.init.normal_(module.weight, mean=0.0, std=residual_std if last in ("wo", "w2") else std)
            elif isinstance(module, RMSNorm):
                nn.init.ones_(module.weight)

    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        segment_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> ModelOutput:
        """All inputs int64 [batch, seq]. `labels[t]` is the target of position t (already shifted, as the
        loader gives them); without `segment_ids`, or with `document_mask` off, attention is plainly causal."""
        if input_ids.shape != position_ids.shape or input_ids.dim() != 2:
            shapes = f"input_ids {tuple(input_ids.shape)}, position_ids {tuple(position_ids.shape)}"
            msg = f"{shapes}: both must be [batch, seq] of the same shape"
            raise ValueError(msg)
        if input_ids.shape[1] > self.cfg.max_seq_len:
            msg = f"sequence of {input_ids.shape[1]} tokens is longer than max_seq_len {self.cfg.max_seq_len}"
            raise ValueError(msg)
        mask = None
        if segment_ids is not None and self.cfg.document_mask:
            mask = document_causal_mask(segment_ids)
        h = self.tok_embeddings(input_ids)
        cos, sin = rope_cos_sin(position_ids, self.cfg.head_dim, self.cfg.rope_theta)
        for layer in self.layers:
            h = layer(h, cos, sin, mask)
        h = self.norm(h)
        logits = F.linear(h, self.tok_embeddings.weight) if self.output is None else self.output(h)
        if labels is None:
            return ModelOutput(logits, None, None)
        # Sum then divide, rather than a mean reduction: an all-padding batch gives 0, not NaN.
        flat = labels.reshape(-1)
        total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), flat, ignore_index=IGNORE_INDEX,
                                reduction="sum")
        num_tokens = (flat != IGNORE_INDEX).sum()
        return ModelOutput(logits, total / num_tokens.clamp(min=1), num_tokens)


def shard_model(
    model: Transformer,
    mesh: DeviceMesh | None = None,
    *,
    param_dtype: torch.dtype | None = None,
    reshard_after_forward: bool = True,
) -> Transformer:
    """Apply FSDP2 `fully_shard` to every block, then to the root (embeddings, final norm, head).

    Needs an initialised process group (and the optimizer built after this call). `param_dtype` defaults
    to bf16 compute with fp32 gradient reduction on CUDA and to fp32 on CPU, where bf16 matmuls are slow."""
    # Imported here so that importing the model never touches torch.distributed.
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    on_cuda = mesh.device_type == "cuda" if mesh is not None else torch.cuda.is_available()
    if param_dtype is None:
        param_dtype = torch.bfloat16 if on_cuda else torch.float32
    mp = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    last = len(model.layers) - 1
    for i, block in enumerate(model.layers):
        # The last block is needed again first thing in backward: resharding it would only regather it.
        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward and i < last)
    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
    return model
