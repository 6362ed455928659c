"""The reference transformer, its optimizer and schedule, the loss-spike detector and FSDP2 wrapping, on CPU."""

from __future__ import annotations

import functools
import json
import math
import random

import pytest
import torch

from curation.train.model import (
    ModelConfig,
    Transformer,
    apply_rope,
    document_causal_mask,
    rope_cos_sin,
    shard_model,
)
from curation.train.optim import (
    OptimConfig,
    build_optimizer,
    build_scheduler,
    forward_backward,
    lr_factor,
    optimizer_step,
    param_groups,
)
from curation.train.spikes import EMA, SpikeDetector

VOCAB = 64


def tiny(**overrides) -> ModelConfig:
    base = {"vocab_size": VOCAB, "d_model": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 64,
            "max_seq_len": 32}
    return ModelConfig(**(base | overrides))


def model_for(cfg: ModelConfig, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(cfg).eval()


def pack(docs: list[list[int]], seq_len: int) -> dict[str, torch.Tensor]:
    """One packed row as the loader gives it: positions restart per document, padding is its own segment
    and has label -100, labels are the next token within the document (-100 on each document's last)."""
    ids, pos, seg, labels = [], [], [], []
    for s, doc in enumerate(docs):
        ids += doc
        pos += range(len(doc))
        seg += [s] * len(doc)
        labels += [*doc[1:], -100]
    pad = seq_len - len(ids)
    ids, pos, seg, labels = ids + [0] * pad, pos + [0] * pad, seg + [len(docs)] * pad, labels + [-100] * pad
    return {k: torch.tensor([v]) for k, v in
            {"input_ids": ids, "position_ids": pos, "segment_ids": seg, "labels": labels}.items()}


def run(model: Transformer, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    with torch.no_grad():
        return model(batch["input_ids"], batch["position_ids"], batch["segment_ids"]).logits


def test_shapes_parameter_count_and_flops():
    for tie in (False, True):
        cfg = tiny(tie_embeddings=tie)
        model = model_for(cfg)
        assert cfg.num_params() == sum(p.numel() for p in model.parameters())
        batch = pack([[1, 2, 3, 4, 5], [6, 7, 8]], seq_len=12)
        out = model(batch["input_ids"], batch["position_ids"], batch["segment_ids"], labels=batch["labels"])
        assert out.logits.shape == (1, 12, VOCAB)
        assert out.loss.dim() == 0 and math.isfinite(out.loss.item()) and out.num_tokens.item() == 6
    cfg = tiny()
    assert cfg.num_params(embedding=False) == cfg.num_params() - VOCAB * 32
    attention = 12 * 2 * 32 * 32
    assert cfg.flops_per_token(32) - cfg.flops_per_token(0) == attention
    assert cfg.flops_per_token(0) == 6 * (cfg.num_params(embedding=False) - 5 * 32)  # norms do no matmuls
    assert ModelConfig(vocab_size=10, d_model=512).ffn_hidden == 1408  # 8/3 * 512, rounded up to 64


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        tiny(n_kv_heads=3)
    with pytest.raises(ValueError, match="multiple of n_heads"):
        tiny(n_heads=5)
    model = model_for(tiny(max_seq_len=8))
    ids = torch.zeros(1, 9, dtype=torch.long)
    with pytest.raises(ValueError, match="longer than max_seq_len"):
        model(ids, ids)


def test_an_all_padding_batch_has_zero_loss_not_nan():
    batch = pack([], seq_len=8)
    out = model_for(tiny())(batch["input_ids"], batch["position_ids"], batch["segment_ids"], labels=batch["labels"])
    assert out.loss.item() == 0.0 and out.num_tokens.item() == 0


def test_loss_falls_when_overfitting_a_tiny_batch():
    torch.manual_seed(0)
    model = Transformer(tiny())
    rows = [pack([torch.randint(1, VOCAB, (n,)).tolist() for n in lengths], seq_len=16)
            for lengths in ([9, 5], [16], [3, 4, 6])]
    batch = {k: torch.cat([r[k] for r in rows]) for k in rows[0]}
    cfg = OptimConfig(lr=1e-2, min_lr=1e-3, warmup_steps=5, total_steps=50, weight_decay=0.0)
    optimizer, losses = build_optimizer(model, cfg), []
    scheduler = build_scheduler(optimizer, cfg)
    for _ in range(50):
        losses.append(forward_backward(model, [batch]).loss)
        step = optimizer_step(model, optimizer, scheduler, cfg.grad_clip)
        assert step.applied and math.isfinite(step.grad_norm)
    assert losses[0] > math.log(VOCAB) - 0.5
    assert losses[-1] < 0.25 * losses[0]


def test_a_document_sees_nothing_of_the_others_in_its_row_unless_masking_is_off():
    doc_a, doc_b = [5, 9, 13, 2, 7, 40], [3, 8, 21, 33, 1]
    batch = pack([doc_a, doc_b], seq_len=14)
    changed = pack([[60, 61, 62, 63, 59, 58], doc_b], seq_len=14)
    b = slice(6, 11)
    masked = model_for(tiny())
    before, after = run(masked, batch), run(masked, changed)
    torch.testing.assert_close(before[:, b], after[:, b], rtol=0, atol=1e-6)
    assert not torch.allclose(before[:, :6], after[:, :6])
    # Positions restart and the mask is block-diagonal: doc B packed second equals doc B alone.
    torch.testing.assert_close(before[:, b], run(masked, pack([doc_b], seq_len=14))[:, :5], rtol=1e-5, atol=1e-5)

    leaky = model_for(tiny(document_mask=False))
    leaky.load_state_dict(masked.state_dict())
    assert not torch.allclose(run(leaky, batch)[:, b], run(leaky, changed)[:, b], atol=1e-4)


def test_mask_is_causal_and_block_diagonal():
    mask = document_causal_mask(torch.tensor([[0, 0, 1, 1, 1, 2]]))[0, 0]
    expected = torch.tensor([
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [0, 0, 1, 0, 0, 0],
        [0, 0, 1, 1, 0, 0],
        [0, 0, 1, 1, 1, 0],
        [0, 0, 0, 0, 0, 1],
    ], dtype=torch.bool)
    assert torch.equal(mask, expected)


def test_rope_scores_depend_on_relative_position_and_positions_drive_the_model():
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)

    def score(m: int, n: int) -> float:
        cos_q, sin_q = rope_cos_sin(torch.tensor([[m]]), 8, 10_000.0)
        cos_k, sin_k = rope_cos_sin(torch.tensor([[n]]), 8, 10_000.0)
        return (apply_rope(q, cos_q, sin_q) * apply_rope(k, cos_k, sin_k)).sum().item()

    assert score(7, 3) == pytest.approx(score(104, 100), abs=1e-4)
    assert score(7, 3) != pytest.approx(score(7, 6), abs=1e-3)
    cos, sin = rope_cos_sin(torch.tensor([[13]]), 8, 10_000.0)
    assert apply_rope(q, cos, sin).norm().item() == pytest.approx(q.norm().item(), rel=1e-5)

    model = model_for(tiny())
    batch = pack([[4, 9, 14, 19, 24, 29, 34, 39]], seq_len=8)
    restarted = dict(batch, position_ids=torch.tensor([[0, 1, 2, 3, 0, 1, 2, 3]]))
    assert not torch.allclose(run(model, batch)[:, 4:], run(model, restarted)[:, 4:], atol=1e-4)


def test_grouped_query_attention_equals_multi_head_with_shared_key_value_heads():
    gqa = model_for(tiny(n_heads=4, n_kv_heads=2))
    assert gqa.layers[0].attention.wk.weight.shape == (2 * 8, 32)
    mha = model_for(tiny(n_heads=4, n_kv_heads=4))
    state = gqa.state_dict()
    for name, w in state.items():
        if name.endswith(("wk.weight", "wv.weight")):
            state[name] = w.view(2, 8, 32).repeat_interleave(2, dim=0).reshape(4 * 8, 32)
    mha.load_state_dict(state)
    batch = pack([[1, 2, 3, 4], [5, 6, 7, 8, 9, 10]], seq_len=12)
    torch.testing.assert_close(run(gqa, batch), run(mha, batch), rtol=1e-5, atol=1e-5)


def test_gradient_accumulation_weighs_micro_batches_by_their_tokens():
    torch.manual_seed(1)
    rows = [pack([[3, 4, 5, 6, 7, 8, 9, 10, 11, 12]], seq_len=12), pack([[20, 21, 22]], seq_len=12)]
    whole = {k: torch.cat([r[k] for r in rows]) for k in rows[0]}

    def grads(micro_batches: list[dict]) -> tuple[float, list[torch.Tensor]]:
        model = model_for(tiny())
        result = forward_backward(model, micro_batches)
        assert result.num_tokens == 11
        return result.loss, [p.grad.clone() for p in model.parameters()]

    loss_one, one = grads([whole])
    loss_two, two = grads(rows)
    assert loss_one == pytest.approx(loss_two, rel=1e-5)
    for a, b in zip(one, two, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_schedule_warmup_peak_and_end():
    factor = functools.partial(lr_factor, warmup_steps=10, total_steps=110, min_ratio=0.1)
    assert factor(0) == pytest.approx(1 / 11) and factor(9) == pytest.approx(10 / 11)
    assert factor(10) == pytest.approx(1.0)
    assert factor(60) == pytest.approx(0.55)  # halfway down the cosine
    assert factor(110) == pytest.approx(0.1) and factor(500) == pytest.approx(0.1)

    model = model_for(tiny())
    cfg = OptimConfig(lr=1e-3, min_lr=1e-4, warmup_steps=10, total_steps=110)
    optimizer = build_optimizer(model, cfg)
    scheduler = build_scheduler(optimizer, cfg)
    lrs = []
    for _ in range(111):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert lrs[0] == pytest.approx(1e-3 / 11) and lrs[10] == pytest.approx(1e-3) and lrs[110] == pytest.approx(1e-4)
    assert max(lrs) == pytest.approx(1e-3)

    with pytest.raises(ValueError, match="min_lr"):
        OptimConfig(lr=1e-4, min_lr=1e-3)


def test_weight_decay_leaves_norms_and_embeddings_alone():
    for tie in (False, True):
        model = model_for(tiny(tie_embeddings=tie))
        decay, no_decay = param_groups(model, 0.1)
        names = {id(p): n for n, p in model.named_parameters()}
        decayed = {names[id(p)] for p in decay["params"]}
        assert all(n.endswith(("wq.weight", "wk.weight", "wv.weight", "wo.weight", "w1.weight", "w2.weight",
                               "w3.weight", "output.weight")) for n in decayed)
        assert ("output.weight" in decayed) is not tie
        assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_non_finite_gradients_skip_the_update_but_not_the_schedule():
    model = model_for(tiny())
    cfg = OptimConfig(warmup_steps=2, total_steps=10)
    optimizer = build_optimizer(model, cfg)
    scheduler = build_scheduler(optimizer, cfg)
    before = [p.detach().clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = torch.full_like(p, math.nan)
    step = optimizer_step(model, optimizer, scheduler, 1.0)
    assert not step.applied and math.isnan(step.grad_norm) and scheduler.last_epoch == 1
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def noisy_losses(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [3.0 - 0.002 * i + rng.gauss(0, 0.03) for i in range(n)]


def test_spike_detector_flags_a_planted_spike_and_nan_but_not_noise():
    detector = SpikeDetector(window=50, k=6.0, min_steps=20)
    assert [detector.update(x) for x in noisy_losses(300, seed=0)] == [None] * 300
    reason = detector.update(4.0)
    assert reason is not None and reason.startswith("loss spike") and "last 50 steps" in reason
    assert detector.update(float("nan")).startswith("non-finite")
    assert detector.update(float("inf")).startswith("non-finite")
    assert detector.update(2.4) is None and detector.flagged == 3 and detector.steps == 304
    # Before min_steps there is no baseline, so nothing but non-finite values is flagged.
    fresh = SpikeDetector(min_steps=20)
    assert fresh.update(3.0) is None and fresh.update(50.0) is None
    assert fresh.update(float("nan")) is not None


def test_spike_detector_follows_a_lasting_level_shift():
    detector = SpikeDetector(window=20, k=4.0, min_steps=10)
    flags = [detector.update(x) for x in [2.0 + 0.01 * (i % 3) for i in range(30)] + [2.5] * 200]
    assert flags[30] is not None and flags[-1] is None


def test_spike_detector_resumes_exactly_from_its_state():
    losses = noisy_losses(200, seed=1)
    losses[120], losses[150] = 6.0, float("nan")
    straight = SpikeDetector(window=30, min_steps=10)
    expected = [straight.update(x) for x in losses]

    first = SpikeDetector(window=30, min_steps=10)
    got = [first.update(x) for x in losses[:100]]
    state = json.loads(json.dumps(first.state_dict()))  # as a checkpoint would store it
    resumed = SpikeDetector()
    resumed.load_state_dict(state)
    got += [resumed.update(x) for x in losses[100:]]
    assert got == expected and resumed.state_dict() == straight.state_dict()
    assert sum(r is not None for r in got) == 2


def test_ema_is_bias_corrected_ignores_non_finite_values_and_resumes():
    ema = EMA(beta=0.9)
    assert math.isnan(ema.value)
    assert ema.update(4.0) == pytest.approx(4.0)
    assert ema.update(float("nan")) == pytest.approx(4.0)
    for _ in range(200):
        ema.update(2.0)
    assert ema.value == pytest.approx(2.0, abs=1e-6)
    copy = EMA()
    copy.load_state_dict(ema.state_dict())
    assert copy.update(3.0) == ema.update(3.0)


@pytest.mark.parametrize("param_dtype", [None, torch.bfloat16], ids=["fp32", "bf16"])
def test_fsdp2_wrap_runs_a_training_step_on_cpu(tmp_path, param_dtype):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor

    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this test process")
    cfg = tiny(tie_embeddings=True)
    reference = model_for(cfg)
    batch = pack([[1, 2, 3, 4, 5, 6], [7, 8, 9]], seq_len=12)
    with torch.no_grad():
        expected = reference(batch["input_ids"], batch["position_ids"], batch["segment_ids"], labels=batch["labels"])
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        model = model_for(cfg)
        shard_model(model, init_device_mesh("cpu", (1,)), param_dtype=param_dtype)
        assert isinstance(model.layers[0].attention.wq.weight, DTensor)
        opt_cfg = OptimConfig(lr=1e-2, warmup_steps=0, total_steps=10)
        optimizer = build_optimizer(model, opt_cfg)
        scheduler = build_scheduler(optimizer, opt_cfg)
        first = forward_backward(model, [batch, batch])
        tolerance = 1e-5 if param_dtype is None else 2e-2  # bf16 compute, as on CUDA
        assert first.loss == pytest.approx(expected.loss.item(), rel=tolerance) and first.num_tokens == 14
        step = optimizer_step(model, optimizer, scheduler, opt_cfg.grad_clip)
        assert step.applied and math.isfinite(step.grad_norm) and step.grad_norm > 0
        assert forward_backward(model, [batch]).loss < first.loss
    finally:
        dist.destroy_process_group()
