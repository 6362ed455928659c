"""`curate train --resume` with a changed recipe: more `steps` continue the LR schedule from where it stood
(no jump back up the cosine), changes the checkpoint cannot honour are refused in one line before anything
starts, and the embedded Ray of a training run is its own even where another Ray runs on the machine.

The training runs here are one worker in this process (`run_worker` on a gloo group of one): what Ray Train's
workers run, without Ray's ~20 s per fit.
"""

from __future__ import annotations

import json
import math
import socket
from itertools import pairwise
from pathlib import Path

import pytest
import torch

from curation.train.config import parse_train_recipe
from curation.train.loop import EVENTS, METRICS, checkpoint_dirs, read_jsonl, run_worker
from curation.train.optim import CosineSchedule, OptimConfig, build_scheduler, lr_factor, resume_scheduler
from curation.train.resume import RUN_FILE, ResumeError, check_resume

from .test_train_job import build_train_job

LR, MIN_LR, WARMUP = 1e-2, 1e-3, 2
FIRST_STEPS, CRASH, MORE_STEPS = 10, 4, 20


def recipe_text(job: Path, train_dir: Path, **overrides) -> str:
    body = {
        "job": str(job), "train_dir": str(train_dir), "seed": 7,
        "model": {"d_model": 32, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 64},
        "optim": {"lr": LR, "min_lr": MIN_LR, "warmup_steps": WARMUP, "weight_decay": 0.0},
        "steps": FIRST_STEPS, "batch_size": 4, "workers": 1, "checkpoint_every": CRASH, "tensorboard": False,
        "spike": {"window": 10, "min_steps": 8},
    }
    for key, value in overrides.items():
        body[key] = body[key] | value if isinstance(value, dict) else value
    return json.dumps(body)  # JSON is YAML


@pytest.fixture(scope="module")
def process_group(tmp_path_factory):
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this test process")
    threads = torch.get_num_threads()  # run_worker sets it to the recipe's CPUs
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path_factory.mktemp("pg") / "store"), 1),
                            rank=0, world_size=1)
    yield
    dist.destroy_process_group()
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("job")
    build_train_job(path, train_rows=96)
    return path


@pytest.fixture(scope="module")
def interrupted(process_group, job, tmp_path_factory) -> Path:
    """A 10-step run that failed after step 4, its checkpoint taken mid-decay of the cosine."""
    train_dir = tmp_path_factory.mktemp("run") / "train"
    recipe = parse_train_recipe(recipe_text(job, train_dir))
    with pytest.raises(RuntimeError, match="simulated failure after step 4"):
        run_worker(recipe, 0, 1, torch.device("cpu"), crash_after=CRASH)
    assert [p.name for p in checkpoint_dirs(train_dir)] == [f"step-{CRASH:08d}"]
    return train_dir


def test_resumed_with_more_steps_the_lr_goes_on_from_where_it_stood(interrupted, job):
    recipe = parse_train_recipe(recipe_text(job, interrupted, steps=MORE_STEPS))
    assert recipe.optim.total_steps == MORE_STEPS  # it follows steps: the change that used to re-start the cosine
    check_resume(recipe, checkpoint_dirs(interrupted)[-1], json.loads((job / "manifest.json").read_text()))
    run_worker(recipe, 0, 1, torch.device("cpu"))

    metrics = read_jsonl(interrupted / METRICS)
    assert [r["step"] for r in metrics] == list(range(1, MORE_STEPS + 1))
    lrs = [r["lr"] for r in metrics]
    old = [LR * lr_factor(i, warmup_steps=WARMUP, total_steps=FIRST_STEPS, min_ratio=MIN_LR / LR)
           for i in range(FIRST_STEPS)]
    assert lrs[:CRASH] == pytest.approx(old[:CRASH])
    # The first resumed step uses the LR the interrupted run would have used (the bug: 9.3e-3, back up the curve).
    assert lrs[CRASH] == pytest.approx(old[CRASH])
    decay = lrs[WARMUP:]
    assert all(b <= a for a, b in pairwise(decay))  # the decay never turns back up
    biggest_old_change = max(abs(b - a) for a, b in pairwise(old[WARMUP:]))
    assert max(abs(b - a) for a, b in pairwise(decay)) <= biggest_old_change
    ratio, start = MIN_LR / LR, old[CRASH] / LR  # the tail: a cosine from there to min_lr at the new end
    progress = (MORE_STEPS - 1 - CRASH) / (MORE_STEPS - CRASH)
    assert lrs[-1] == pytest.approx(LR * (ratio + (start - ratio) * 0.5 * (1 + math.cos(math.pi * progress))))
    assert min(lrs) >= MIN_LR
    schedule = [e for e in read_jsonl(interrupted / EVENTS) if e["event"] == "schedule"]
    assert len(schedule) == 1 and schedule[0]["step"] == CRASH and schedule[0]["total_steps"] == MORE_STEPS
    assert schedule[0]["lr"] == pytest.approx(old[CRASH])
    record = json.loads((checkpoint_dirs(interrupted)[-1] / RUN_FILE).read_text())
    assert record["step"] == MORE_STEPS and record["recipe"]["optim"]["total_steps"] == MORE_STEPS


def test_changes_a_checkpoint_cannot_honour_are_refused_in_one_line(interrupted, job, tmp_path, capsys):
    from pipelines.cli import main

    other = tmp_path / "other-job"
    build_train_job(other, train_rows=64)  # other data: fewer rows
    changed = recipe_text(other, interrupted, steps=40, seed=8, model={"d_model": 64}, optim={"lr": 2e-2},
                          workers=3, batch_size=3)
    path = tmp_path / "changed.yaml"
    path.write_text(changed)
    assert main(["train", str(path), "--resume"]) == 2  # refused before Ray or a worker starts
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"curate train: cannot resume {interrupted} at step ")
    for part in ("model.d_model 32 -> 64", "job's train_rows 96 -> 64", "seed 7 -> 8", "optim.lr 0.01 -> 0.02",
                 "workers 1 -> 3", "the LR would jump", "Put these back as they were"):
        assert part in err, part
    assert "steps" not in err.replace("total_steps", "")  # more steps alone are fine

    manifest = json.loads((job / "manifest.json").read_text())
    checkpoint = checkpoint_dirs(interrupted)[-1]
    record = json.loads((checkpoint / RUN_FILE).read_text())
    step, total = record["step"], record["recipe"]["optim"]["total_steps"]
    shorter = parse_train_recipe(recipe_text(job, interrupted, steps=step + 5, optim={"total_steps": step - 1}))
    with pytest.raises(ResumeError, match=rf"optim.total_steps {total} -> {step - 1} ends before the "
                                          rf"checkpoint's step {step}"):
        check_resume(shorter, checkpoint, manifest)
    fine = parse_train_recipe(recipe_text(job, interrupted, steps=step + 5, batch_size=8, val_every=2,
                                          optim={"grad_clip": 0.5}))
    check_resume(fine, checkpoint, manifest)  # more steps, bigger batches, another cadence or clip: allowed


def _lrs(scheduler, steps: int) -> list[float]:
    out = []
    for _ in range(steps):
        out.append(scheduler.optimizer.param_groups[0]["lr"])
        scheduler.optimizer.step()
        scheduler.step()
    return out


def test_the_schedule_travels_in_the_scheduler_state_and_warmup_is_left_as_it_was(tmp_path):
    cfg = OptimConfig(lr=1.0, min_lr=0.1, warmup_steps=10, total_steps=100)
    param = torch.nn.Parameter(torch.zeros(1))
    scheduler = build_scheduler(torch.optim.SGD([param], lr=cfg.lr), cfg)
    _lrs(scheduler, 40)
    torch.save(scheduler.state_dict(), tmp_path / "s.pt")
    state = torch.load(tmp_path / "s.pt", weights_only=True)  # as checkpoints are read
    assert state["lr_lambdas"][0] == {"warmup_steps": 10, "total_steps": 100, "min_ratio": pytest.approx(0.1),
                                      "from_step": 0, "from_factor": None}

    longer = cfg.model_copy(update={"total_steps": 300})
    resumed = build_scheduler(torch.optim.SGD([param], lr=cfg.lr), longer)
    assert resume_scheduler(resumed, state, longer.total_steps)
    before = CosineSchedule.of(cfg)(40)
    tail = _lrs(resumed, 261)
    assert tail[0] == pytest.approx(before) and tail[-1] == pytest.approx(0.1) and max(tail) == tail[0]
    again = build_scheduler(torch.optim.SGD([param], lr=cfg.lr), longer)
    assert not resume_scheduler(again, resumed.state_dict(), longer.total_steps)  # the same total: kept as is
    assert again.lr_lambdas[0] == resumed.lr_lambdas[0]

    # Resumed during warmup: warmup does not depend on total_steps, so the new schedule is simply the new curve.
    early = CosineSchedule.of(cfg).resumed_to(300, 5)
    assert early == CosineSchedule.of(longer)
    assert [early(i) for i in range(5)] == [CosineSchedule.of(cfg)(i) for i in range(5)]
    # A schedule at its end stays there (warmup_steps == total_steps: from the peak straight to min_lr).
    ended = CosineSchedule(warmup_steps=3, total_steps=3, min_ratio=0.1)
    assert ended(3) == 0.1 and ended.resumed_to(6, 3)(3) == 0.1 and ended.resumed_to(6, 3)(5) == 0.1


# -- Ray: which Ray a training run starts or joins -----------------------------------------------------------


def test_an_embedded_training_ray_is_its_own_and_tells_its_workers_where_its_state_api_is(monkeypatch):
    from pipelines.train import ray_init_options

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    options = ray_init_options(None)
    port = options["dashboard_port"]
    assert options["address"] == "local" and options["include_dashboard"]  # never `ray start`'s Ray
    assert options["runtime_env"] == {"env_vars": {"RAY_API_SERVER_ADDRESS": f"http://127.0.0.1:{port}"}}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # free when chosen
    assert ray_init_options("auto") == {"address": "auto", "logging_level": "WARNING"}
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    assert ray_init_options(None) == {"address": "ray://head:10001", "logging_level": "WARNING"}


def test_the_summary_counts_the_steps_this_run_trained():
    """Resumed at step 60 and run to 80, `curate train` said "80 steps"; with nothing left, "40 steps in 30 s"."""
    from types import SimpleNamespace

    from pipelines.cli import train_summary

    metrics = [{"step": s, "loss": 5.0 - s / 100, **({"val_loss": 4.2} if s % 20 == 0 else {})} for s in range(1, 81)]
    done = SimpleNamespace(metrics=metrics, spikes=[], seconds=23.4)
    assert train_summary(done) == "80 steps in 23.4 s: loss 4.9900 -> 4.2000, val_loss 4.2000, 0 spike(s)"
    assert train_summary(done, resumed_at=60).startswith("steps 61-80 of 80 in 23.4 s: loss 4.3900 -> 4.2000")
    assert train_summary(done, resumed_at=80) == "no step left to train (80 done) in 23.4 s, val_loss 4.2000"


def test_every_step_trains_on_as_many_tokens_when_an_epoch_is_no_whole_number_of_batches(process_group,
                                                                                         tmp_path: Path):
    """An epoch's short last batch gave a small corpus fewer tokens in the same steps: the variants of one ablation
    budget trained on 14,848, 15,360 and 16,384 tokens."""
    job = tmp_path / "job"
    job.mkdir()
    build_train_job(job, train_rows=10)  # 10 rows, batches of 4: two whole batches and a short one per epoch
    recipe = parse_train_recipe(recipe_text(job, tmp_path / "train", steps=7, checkpoint_every=7))
    run_worker(recipe, 0, 1, torch.device("cpu"))
    tokens = [r["tokens"] for r in read_jsonl(tmp_path / "train" / METRICS)]
    assert len(tokens) == 7 and {b - a for a, b in pairwise([0, *tokens])} == {tokens[0]}
