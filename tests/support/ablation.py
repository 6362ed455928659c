"""The tiny ablation the tests share: the bundled sample, two variants (the base recipe and one without its
length filter), one seed, 16 steps of a one-layer model, and a mixture search of four 4-step proxies over the
sample's two sources; run once per session on the session's Ray (`tiny_ablation`), for the ablation, service,
dashboard and notebook tests. Other tests write variants of it (`write_ablation`) that share its jobs folder:
they find its curation, tokenizer and packing done."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, SAMPLE

EVAL = ROOT / "recipes" / "eval"
STEPS, EVERY = 16, 4
SEARCH = {"proxies": 4, "proxy": {"tokens": 4 * 4 * 64}, "candidates": 2000, "top": 20}


def write_ablation(folder: Path, jobs: Path, *, executor: str, sets: list[dict] | None = None,
                   search: dict[str, Any] | None = None) -> Path:
    """The ablation file (and its base recipe) in `folder`; results under `folder/ablations/tiny`."""
    folder.mkdir(parents=True, exist_ok=True)
    base = {
        "name": "tiny", "executor": executor, "local": {"workers": 1}, "seed": 42,
        "sources": [{"name": "web", "format": "warc", "paths": [str(SAMPLE / "crawl-*.warc.gz")]},
                    {"name": "notes", "format": "jsonl", "paths": [str(SAMPLE / "notes.jsonl.gz")]}],
        # a timeout a loaded machine never reaches: the documents must not depend on the machine's load
        "stages": [{"extract": {"engine": "trafilatura", "timeout_s": 300, "only": ["web"]}},
                   {"length": {"min_words": 50}}],
        "mixture": {"weights": {"web": 0.7, "notes": 0.3}, "total_tokens": 3000},
        "tokenizer": {"train": {"vocab_size": 1000}}, "pack": {"seq_len": 512},  # the ablation's own replace these
    }
    (folder / "base.yaml").write_text(json.dumps(base))
    ablation = {
        "name": "tiny", "recipe": str(folder / "base.yaml"), "output": str(folder / "ablations"), "jobs": str(jobs),
        "variants": {"no-length": {"remove": ["length"]}},
        "tokenizer": {"train": {"vocab_size": 400, "hard_vocab_limit": False}},
        "pack": {"seq_len": 64, "shard_rows": 16},
        "training": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 64},
                     "optim": {"lr": 3e-3, "min_lr": 3e-4, "warmup_steps": 2, "weight_decay": 0.0},
                     "tokens": STEPS * 4 * 64, "batch_size": 4, "seeds": [0], "eval_every": EVERY},
        "evaluation": {"sets": sets or [{"name": "held-out", "path": str(EVAL / "held-out.jsonl")},
                                        {"name": "choice", "path": str(EVAL / "choice.jsonl"), "kind": "choice"}]},
    }
    if search is not None:
        ablation["mixture_search"] = search
    path = folder / "ablation.yaml"
    path.write_text(json.dumps(ablation))
    return path


@dataclass
class Tiny:
    path: Path  # the ablation file
    jobs: Path  # its jobs folder
    output: Path  # the folder holding its results folder (what `curate serve --ablations` serves)
    result: Any  # pipelines.ablate.AblationResult


_TINY: list[Tiny] = []


def tiny_ablation(tmp_path_factory: pytest.TempPathFactory) -> Tiny:
    """The shared ablation, run once per session (needs the session's Ray started)."""
    if _TINY:
        return _TINY[0]
    from curation.ablate.spec import load_ablation
    from pipelines.ablate import run_ablation

    folder, jobs = tmp_path_factory.mktemp("tiny-ablation"), tmp_path_factory.mktemp("tiny-jobs")
    path = write_ablation(folder, jobs, executor="ray", search=SEARCH)
    _TINY.append(Tiny(path, jobs, folder / "ablations", run_ablation(load_ablation(path), quiet=True)))
    return _TINY[0]
