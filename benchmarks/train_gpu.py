"""GPU check of the training job: a ~100M-parameter model under bf16 FSDP2 on CUDA, tokens/s and MFU.

Writes a synthetic packed job (random documents, seq_len 2048, vocab 32000) to a temporary folder and runs
on it the worker loop that `curate train` runs on each Ray Train worker (`curation.train.loop.run_worker`), here
on one GPU in this process with a one-rank NCCL group: Ray only launches workers, and the GPU machine need
not have it. The model: d_model 768, 12 layers, 12 heads (4 KV heads), SwiGLU 2048, tied embeddings, 100.1M
parameters. It reports the median tokens/s and step time over the steps after `--warmup`, MFU against the
device's dense bf16 peak (H100 SXM / H200: 989 TFLOP/s; `curation.train.loop.PEAK_BF16`) with the PaLM FLOPs
count of `ModelConfig.flops_per_token`, data-loading time and peak GPU memory.

Without CUDA it prints that the GPU figure is missing and exits 0. `--smoke` runs the same path on CPU
(gloo, a tiny model) to check the script itself.

    python benchmarks/train_gpu.py [--steps 30] [--batch-size 8] [--seq-len 2048] [--json OUT.json]

Needs torch, numpy, pyarrow, pydantic and pyyaml (no Ray).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a plain checkout, not installed

from benchmarks._results import figure, write_results
from curation.train.config import TrainRecipe
from curation.train.loop import METRICS, peak_bf16_flops, read_jsonl, run_worker
from pipelines.net import free_port

MODEL = {"d_model": 768, "n_layers": 12, "n_heads": 12, "n_kv_heads": 4, "ffn_hidden": 2048,
         "tie_embeddings": True}
SMOKE_MODEL = {"d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 128}


def write_job(job: Path, rows: int, seq_len: int, vocab: int, seed: int = 0) -> None:
    """Full rows of random documents (lengths ~ exponential, mean 600 tokens), in the packed schema."""
    rng = np.random.default_rng(seed)
    width = seq_len + 1
    tokens = rng.integers(3, vocab, size=(rows, width), dtype=np.uint16)
    starts, ids, offsets, lengths, token_offsets = [], [], [], [], []
    for r in range(rows):
        cuts = np.unique(np.minimum(np.cumsum(rng.exponential(600, size=16).astype(np.int64) + 1), width))
        row_starts = [0, *cuts[cuts < width].tolist()]
        starts.append(row_starts[1:])
        ids.append([f"doc-{r}-{i}" for i in range(len(row_starts))])
        offsets.append(row_starts)
        lengths.append(np.diff([*row_starts, width]).tolist())
        token_offsets.append([0] * len(row_starts))
    table = pa.table({
        "tokens": pa.FixedSizeListArray.from_arrays(pa.array(tokens.reshape(-1)), width),
        "valid": pa.array(np.full(rows, width, dtype=np.int32)),
        "doc_starts": pa.array(starts, pa.list_(pa.int32())),
        "doc_ids": pa.array(ids, pa.list_(pa.string())),
        "doc_offsets": pa.array(offsets, pa.list_(pa.int32())),
        "doc_lengths": pa.array(lengths, pa.list_(pa.int32())),
        "doc_token_offsets": pa.array(token_offsets, pa.list_(pa.int32())),
    })
    (job / "shards").mkdir(parents=True)
    with pa.OSFile(str(job / "shards/train-00000.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        for batch in table.to_batches(max_chunksize=256):
            w.write_batch(batch)
    shard = {"file": "shards/train-00000.arrow", "rows": rows, "tokens": rows * width}
    manifest = {"format": "curation.packed/1", "seq_len": seq_len, "dtype": "uint16", "eos_id": 2, "pad_id": 0,
                "vocab_size": vocab, "splits": {"train": {"rows": rows, "tokens": rows * width, "shards": [shard]}}}
    (job / "manifest.json").write_text(json.dumps(manifest))



def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the medians (allocation, autotuning)")
    p.add_argument("--batch-size", type=int, default=8, help="rows of seq_len per step")
    p.add_argument("--micro-batches", type=int, default=1)
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--smoke", action="store_true", help="CPU, gloo and a tiny model: checks the script")
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args()
    if args.smoke:
        args.seq_len, args.vocab, args.steps, args.warmup = 128, 1000, 6, 2
    elif not torch.cuda.is_available():
        print(f"GPU figure missing: no CUDA device here (torch {torch.__version__}). Run this script on an NVIDIA "
              "GPU for bf16 FSDP tokens/s and MFU of the ~100M-parameter model; the CPU path is tested by "
              "tests/test_train_job.py.")
        return 0
    use_gpu = not args.smoke
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    if use_gpu:
        torch.cuda.set_device(0)
        torch.backends.cuda.matmul.allow_tf32 = True  # fp32 leftovers (the norms' statistics, the loss)
    dist.init_process_group("nccl" if use_gpu else "gloo", rank=0, world_size=1)
    device = torch.device("cuda", 0) if use_gpu else torch.device("cpu")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            job = Path(tmp) / "job"
            write_job(job, rows=args.batch_size * (args.steps + 1), seq_len=args.seq_len, vocab=args.vocab)
            recipe = TrainRecipe.model_validate({
                "job": str(job), "train_dir": str(Path(tmp) / "train"), "steps": args.steps,
                "batch_size": args.batch_size, "micro_batches": args.micro_batches, "workers": 1,
                "use_gpu": use_gpu, "model": SMOKE_MODEL if args.smoke else MODEL, "tensorboard": False,
                "optim": {"lr": 3e-4, "warmup_steps": 2}, "spike": {"window": 10, "min_steps": 5}})
            start = time.perf_counter()
            run_worker(recipe, 0, 1, device)
            wall = time.perf_counter() - start
            metrics = read_jsonl(Path(tmp) / "train" / METRICS)
    finally:
        dist.destroy_process_group()
    cfg = recipe.model_for({"vocab_size": args.vocab, "seq_len": args.seq_len})
    timed = metrics[args.warmup:]
    tokens_per_s = statistics.median(r["tokens_per_s"] for r in timed)
    peak = peak_bf16_flops(device)
    flops = cfg.flops_per_token(args.seq_len) * tokens_per_s
    result = {
        "device": torch.cuda.get_device_name(0) if use_gpu else "cpu (smoke)", "torch": torch.__version__,
        "params": cfg.num_params(), "seq_len": args.seq_len, "batch_rows": args.batch_size, "steps": args.steps,
        "tokens_per_s": round(tokens_per_s), "step_seconds": statistics.median(r["step_seconds"] for r in timed),
        "data_seconds": statistics.median(r["data_seconds"] for r in timed), "model_tflops": flops / 1e12,
        "peak_tflops": peak / 1e12 if peak else None, "mfu": flops / peak if peak else None,
        "loss_first_last": [metrics[0]["loss"], metrics[-1]["loss"]], "wall_seconds": wall,
        "max_memory_gib": torch.cuda.max_memory_allocated() / 2**30 if use_gpu else None,
    }
    print(json.dumps(result, indent=2))
    mfu = f"{result['mfu']:.1%}" if result["mfu"] is not None else "n/a (peak unknown)"
    print(f"{result['device']}: {result['params'] / 1e6:.1f}M params, {tokens_per_s:,.0f} tokens/s, "
          f"{flops / 1e12:.1f} TFLOP/s, MFU {mfu}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    if use_gpu:  # a smoke run's CPU figures are no GPU figures
        model = f"{result['params'] / 1e6:.1f}M params, bf16 FSDP, seq_len {args.seq_len}, on {result['device']}"
        write_results("train_gpu", [
            figure(f"training tokens/s, {model}", tokens_per_s, "tokens/s",
                   note=f"step {result['step_seconds']:.3f} s, data {result['data_seconds']:.4f} s, "
                        f"peak memory {result['max_memory_gib']:.1f} GiB"),
            figure(f"model FLOP/s (ratio: MFU), {model}", flops / 1e12, "TFLOP/s", "dense bf16 peak",
                   peak / 1e12 if peak else None),
        ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
