"""Scoring a trained model on the evaluation sets: loss and bits per byte on held-out text, accuracy on
multiple-choice items.

Text: each document is scored as the trainer sees one, its tokens followed by EOS, each predicted from what
comes before it in the document, the first one from EOS (which ends the document before it in a packed row).
A document longer than the model's rows is scored in windows of `seq_len` predictions, each starting afresh.
`loss` is nats per predicted token (EOS included); `bits_per_byte` divides the same total by ln 2 and the
documents' UTF-8 bytes, so models with different tokenizers compare (Gao et al. 2020, The Pile).

Multiple choice: each choice is scored by the summed log-likelihood of its tokens given EOS and the context
(the continuation's tokens are those the context and choice make together past the context's own, as
lm-evaluation-harness takes them; a context not ending in whitespace and a choice not starting with it are
joined by a space). `accuracy`: the right choice scores highest; `accuracy_norm`: highest per UTF-8 byte of the
choice. With a tiny model both sit near chance (1 / choices): loss and bits per byte carry the signal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from curation.ablate.evalsets import Choice, LoadedSet
from curation.train.model import Transformer

Scored = tuple[list[int], int]  # (tokens, index of the first scored target): targets are tokens[1:]


@torch.no_grad()
def sequence_logprobs(model: Transformer, sequences: Sequence[Scored], device: torch.device,
                      batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per sequence: the summed log-probability of its scored targets and how many there are. Each sequence
    fits the model (at most max_seq_len + 1 tokens); batches are padded to their longest."""
    sums = np.zeros(len(sequences), dtype=np.float64)
    counts = np.zeros(len(sequences), dtype=np.int64)
    order = sorted(range(len(sequences)), key=lambda i: (len(sequences[i][0]), i))
    model.eval()
    for start in range(0, len(order), batch_size):
        chosen = order[start:start + batch_size]
        width = max(len(sequences[i][0]) for i in chosen) - 1
        inputs = torch.zeros((len(chosen), width), dtype=torch.int64)
        targets = torch.zeros_like(inputs)
        scored = torch.zeros((len(chosen), width), dtype=torch.bool)
        for row, i in enumerate(chosen):
            tokens, first = sequences[i]
            n = len(tokens) - 1
            inputs[row, :n] = torch.tensor(tokens[:-1])
            targets[row, :n] = torch.tensor(tokens[1:])
            scored[row, first:n] = True
        positions = torch.arange(width).expand(len(chosen), width)
        # Padding sits after every real token: causal attention keeps it out of what is scored.
        logits = model(inputs.to(device), positions.to(device)).logits.float()
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, targets.to(device)[..., None])[..., 0].cpu()
        logprobs = torch.where(scored, logprobs, torch.zeros_like(logprobs)).double()
        sums[chosen] = logprobs.sum(dim=1).numpy()
        counts[chosen] = scored.sum(dim=1).numpy()
    return sums, counts


def text_windows(tokens: list[int], eos: int, seq_len: int) -> list[Scored]:
    """A document's sequences: EOS, its tokens, EOS, cut into windows of at most `seq_len` predictions."""
    full = [eos, *tokens, eos]
    return [(full[start:start + seq_len + 1], 0) for start in range(0, len(full) - 1, seq_len)]


def text_scores(model: Transformer, sp: Any, texts: list[str], seq_len: int, device: torch.device,
                batch_size: int) -> dict[str, Any]:
    encoded = sp.encode(texts, out_type=int, num_threads=1)
    windows = [w for tokens in encoded for w in text_windows(tokens, sp.eos_id(), seq_len)]
    sums, counts = sequence_logprobs(model, windows, device, batch_size)
    nats, predicted = -float(sums.sum()), int(counts.sum())
    size = sum(len(t.encode("utf-8")) for t in texts)
    return {"loss": nats / max(1, predicted), "bits_per_byte": nats / (math.log(2) * max(1, size)),
            "documents": len(texts), "tokens": predicted, "bytes": size}


def _joined(context: str, choice: str) -> tuple[str, str]:
    """(context, continuation) as scored: trailing whitespace of the context moves to the continuation."""
    if context and choice and not context[-1].isspace() and not choice[0].isspace():
        choice = " " + choice
    stripped = context.rstrip()
    return stripped, context[len(stripped):] + choice


def choice_sequences(sp: Any, item: Choice, seq_len: int) -> list[Scored]:
    """One sequence per choice: EOS, the context's tokens, the choice's; cut from the left to fit."""
    out = []
    for choice in item.choices:
        context, continuation = _joined(item.context, choice)
        ctx = sp.encode(context, out_type=int) if context else []
        whole = sp.encode(context + continuation, out_type=int)
        cont = whole[len(ctx):] if whole[:len(ctx)] == ctx and len(whole) > len(ctx) else sp.encode(
            continuation, out_type=int)
        tokens = [sp.eos_id(), *ctx, *cont]
        cut = max(0, len(tokens) - (seq_len + 1))
        out.append((tokens[cut:], max(0, len(tokens) - 1 - len(cont) - cut)))
    return out


def choice_scores(model: Transformer, sp: Any, items: list[Choice], seq_len: int, device: torch.device,
                  batch_size: int) -> dict[str, Any]:
    sequences = [seq for item in items for seq in choice_sequences(sp, item, seq_len)]
    sums, _ = sequence_logprobs(model, sequences, device, batch_size)
    right = right_norm = 0
    at = 0
    for item in items:
        scores = sums[at:at + len(item.choices)]
        sizes = np.array([max(1, len(c.encode("utf-8"))) for c in item.choices])
        at += len(item.choices)
        right += int(np.argmax(scores) == item.answer)
        right_norm += int(np.argmax(scores / sizes) == item.answer)
    n = max(1, len(items))
    chance = float(np.mean([1 / len(item.choices) for item in items])) if items else 0.0
    return {"accuracy": right / n, "accuracy_norm": right_norm / n, "items": len(items), "chance": chance}


def evaluate(model: Transformer, sp: Any, sets: list[LoadedSet], seq_len: int, device: torch.device,
             batch_size: int) -> dict[str, dict[str, Any]]:
    """Every set's scores, by set name."""
    out = {}
    for s in sets:
        if s.kind == "text":
            out[s.name] = text_scores(model, sp, s.texts, seq_len, device, batch_size)
        else:
            out[s.name] = choice_scores(model, sp, s.items, seq_len, device, batch_size)
    return out
