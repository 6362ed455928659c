"""The training job on Ray Train (2 CPU workers, gloo): the loss falls, a run interrupted and resumed repeats the
uninterrupted one, a planted corrupt batch is detected, traced to its documents and skipped, and a Ray Dataset
of the shards trains as well.

Ray Train costs ~15-25 s per fit() here, so the runs are few and module-scoped: `skip_run` (uninterrupted,
with a planted spike and skip_bad_batches), `resumed_run` (the same recipe, failing after step CRASH, restarted by
Ray Train and resumed from its newest checkpoint) and `ray_data_run`; each test asserts on their folders.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import time

import numpy as np
import pyarrow as pa
import pytest
import torch

from curation.recipe import RecipeError
from curation.tokens import Packer
from curation.train.config import TrainRecipe, load_train_recipe, parse_train_recipe
from curation.train.loader import PackedDataset, permute
from curation.train.loop import (
    CHECKPOINTS,
    EVENTS,
    SPIKES,
    batch_from_arrow,
    checkpoint_dirs,
    read_jsonl,
)

from .conftest import ROOT
from .support.packed_job import EOS_ID, PAD_ID, build_job, write_split

SEQ_LEN, VOCAB, PLANT_TOKEN = 32, 128, 127  # normal documents never use PLANT_TOKEN
WORKERS, BATCH, MICRO = 2, 8, 2
STEPS, EVERY, SPIKE_STEP, CRASH = 30, 5, 22, 27
SEED = 7
RAY_ACTOR_LINE = re.compile(r"(\x1b\[\d+m)?\(\w+ pid=\d+")  # Ray prefixes what its actors print


def progression_docs(rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """Learnable documents: arithmetic progressions mod 60 (token = 2 + (a + k * stride) % 60)."""
    docs = []
    for _ in range(count):
        a, stride, n = rng.integers(0, 60), rng.integers(1, 4), rng.integers(8, 60)
        docs.append(2 + (a + stride * np.arange(n)) % 60)
    return docs


def pack(ids: list[str], docs: list[np.ndarray]) -> pa.Table:
    packer = Packer(SEQ_LEN, eos_id=EOS_ID, pad_id=PAD_ID, vocab_size=VOCAB)
    return pa.concat_tables([packer.add(ids, docs), packer.finish()]).combine_chunks()


def build_train_job(path, *, train_rows: int = 280, plant_step: int | None = None) -> list[str]:
    """A packed job of progression documents; with `plant_step`, every row that the 2 ranks read at that step
    (the loader's order for SEED, epoch 0) is a planted document: PLANT_TOKEN repeated. Returns their ids."""
    rng = np.random.default_rng(0)
    normal = pack([f"doc-{i:05d}" for i in range(2000)], progression_docs(rng, 2000))
    valid = normal.slice(0, 16)
    normal = normal.slice(16)
    planted_ids: list[str] = []
    if plant_step is None:
        train = normal.slice(0, train_rows)
    else:
        per_rank = BATCH // WORKERS
        positions = np.concatenate([np.arange((plant_step - 1) * per_rank, plant_step * per_rank) * WORKERS + r
                                    for r in range(WORKERS)])
        targets = set(permute(positions, train_rows, SEED, 0).tolist())
        planted_ids = [f"planted-{i}" for i in range(len(targets))]
        # A document of SEQ_LEN tokens plus its EOS fills exactly one row.
        planted = pack(planted_ids, [np.full(SEQ_LEN, PLANT_TOKEN)] * len(targets))
        rows, k, j = [], 0, 0
        for i in range(train_rows):
            if i in targets:
                rows.append(planted.slice(j, 1))
                j += 1
            else:
                rows.append(normal.slice(k, 1))
                k += 1
        train = pa.concat_tables(rows).combine_chunks()
    splits = {}
    for name, table in (("train", train), ("valid", valid)):
        shards = write_split(path, name, table, rows_per_shard=64, batch_rows=16)
        splits[name] = {"rows": table.num_rows, "tokens": sum(s["tokens"] for s in shards), "shards": shards}
    manifest = {"format": "curation.packed/1", "seq_len": SEQ_LEN, "dtype": "uint16", "eos_id": EOS_ID,
                "pad_id": PAD_ID, "vocab_size": VOCAB, "seed": 0, "splits": splits,
                "tokenizer": {"file": "tokenizer.model", "sha256": "0" * 64}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return planted_ids


def recipe_text(job, train_dir, **overrides) -> str:
    body = {
        "job": str(job), "train_dir": str(train_dir), "seed": SEED,
        "model": {"d_model": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 64},
        "optim": {"lr": 1e-2, "min_lr": 1e-3, "warmup_steps": 3, "weight_decay": 0.0},
        "steps": STEPS, "batch_size": BATCH, "micro_batches": MICRO, "workers": WORKERS, "cpus_per_worker": 1,
        "val_every": 10, "checkpoint_every": EVERY, "keep_checkpoints": 2,
        "spike": {"window": 10, "min_steps": 8, "k": 6, "skip_bad_batches": True},
    } | overrides
    return json.dumps(body)  # JSON is YAML


# -- without Ray ---------------------------------------------------------------------------------------------


def test_recipe_errors_point_at_lines(tmp_path):
    build_train_job(tmp_path / "job")
    text = (f"job: {tmp_path / 'job'}\nsteps: 10\nbatch_size: 3\nworkers: 2\n"
            "model: {d_model: 64, n_heads: 3, max_seq_len: 16}\nspike: {window: 5, min_steps: 8}\n")
    with pytest.raises(RecipeError) as err:
        parse_train_recipe(text, "t.yaml")
    lines = str(err.value).splitlines()
    assert any(line.startswith("t.yaml:5:8: model:") and "multiple of n_heads" in line for line in lines)
    assert any(line.startswith("t.yaml:6:8: spike:") and "min_steps" in line for line in lines)
    assert any(line.startswith("t.yaml:3:13: batch_size:") and "(2 x 1)" in line for line in lines)
    text = f"job: {tmp_path / 'job'}\nsteps: 10\nbatch_size: 4\nmodel: {{max_seq_len: 16}}\n"
    with pytest.raises(RecipeError, match=r"t.yaml:4:\d+: model.max_seq_len: 16 is shorter than the job's rows"):
        parse_train_recipe(text, "t.yaml")
    with pytest.raises(RecipeError, match=r"t.yaml:3:13: batch_size: 400 is more than the job's 280 train rows"):
        parse_train_recipe(f"job: {tmp_path / 'job'}\nsteps: 10\nbatch_size: 400\n", "t.yaml")
    with pytest.raises(RecipeError, match=r"t.yaml:1:6: job: .*manifest.json not found"):
        parse_train_recipe(f"job: {tmp_path / 'nothing'}\nsteps: 1\nbatch_size: 1\n", "t.yaml")
    manifest = json.loads((tmp_path / "job" / "manifest.json").read_text())
    empty = tmp_path / "empty-valid"  # a job of few documents, none of which fell in pack.validation's share
    shutil.copytree(tmp_path / "job", empty)
    (empty / "manifest.json").write_text(json.dumps(manifest | {"splits": manifest["splits"] | {
        "valid": manifest["splits"]["valid"] | {"rows": 0, "shards": []}}}))
    with pytest.raises(RecipeError, match=r"t.yaml:4:12: val_every: the job's `valid` split holds no row"):
        parse_train_recipe(f"job: {empty}\nsteps: 10\nbatch_size: 4\nval_every: 5\n", "t.yaml")
    recipe = parse_train_recipe(f"job: {tmp_path / 'job'}\nsteps: 10\nbatch_size: 4\n", "t.yaml")
    assert recipe.optim.total_steps == 10 and recipe.optim.warmup_steps == 1  # the schedule follows `steps`
    assert recipe.output_dir() == tmp_path / "job" / "train"  # where the status service reads the curve
    cfg = recipe.model_for(json.loads((tmp_path / "job" / "manifest.json").read_text()))
    assert (cfg.vocab_size, cfg.max_seq_len) == (VOCAB, SEQ_LEN)


def test_curate_train_reports_recipe_problems_before_starting_anything(tmp_path, capsys):
    from pipelines.cli import main

    (tmp_path / "bad.yaml").write_text(f"job: {tmp_path}\nsteps: 0\nbatch_size: 2\n")
    assert main(["train", str(tmp_path / "bad.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'bad.yaml'}:2:8: steps: Input should be greater than 0" in err
    assert "1 problem(s)" in err and "nothing was run" in err


@pytest.mark.subprocess
def test_more_workers_than_this_machine_s_ray_has_are_refused_in_one_line(tmp_path):
    """Ray Train waited for them and retried its worker group for ever (a 2-CPU Ray, 4 workers of 1 CPU)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    build_train_job(tmp_path / "job")
    cpus = os.cpu_count() or 1
    (tmp_path / "t.yaml").write_text(recipe_text(tmp_path / "job", tmp_path / "train", workers=cpus + 1,
                                                 batch_size=cpus + 1, micro_batches=1))
    out = subprocess.run([sys.executable, "-m", "pipelines.cli", "train", str(tmp_path / "t.yaml")], cwd=ROOT,
                         capture_output=True, text=True, timeout=240, env={**os.environ, "RAY_ADDRESS": ""})
    assert out.returncode == 2, out.stderr[-2000:]
    assert f"workers x cpus_per_worker = {cpus + 1} x 1.0 is more than this machine's Ray has" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.subprocess
def test_sigterm_and_sigint_stop_curate_train_and_its_workers_and_say_so(tmp_path):
    """SIGTERM made `curate train` abort with Ray's native stack dump (exit 134) while its workers went on training
    and checkpointing; Ctrl-C (SIGINT) went to Ray Train's own handler, which ended it with status 1 and no word.
    Now it stops them, says so in one line, and `--resume` goes on from the last checkpoint. Both trainings run at
    once, each with its own embedded Ray: most of each one's time is Ray's start, which the other's fills."""
    import os
    import signal
    import subprocess
    import sys

    processes = {}
    for signum in ("SIGTERM", "SIGINT"):
        folder = tmp_path / signum
        build_train_job(folder / "job")
        (folder / "t.yaml").write_text(recipe_text(folder / "job", folder / "train", workers=1, micro_batches=1,
                                                   steps=100_000, checkpoint_every=2))
        processes[signum] = subprocess.Popen(
            [sys.executable, "-m", "pipelines.cli", "train", str(folder / "t.yaml")], cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, "RAY_ADDRESS": ""})
    errors = {}
    for signum, process in processes.items():
        metrics = tmp_path / signum / "train" / "metrics.jsonl"
        deadline = time.time() + 240
        while len(read_jsonl(metrics)) < 5 and process.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        process.send_signal(getattr(signal, signum))
        errors[signum] = process.communicate(timeout=120)[1]
    steps = {signum: len(read_jsonl(tmp_path / signum / "train" / "metrics.jsonl")) for signum in processes}
    time.sleep(5)
    for signum, process in processes.items():
        err, train = errors[signum], tmp_path / signum / "train"
        assert process.returncode == 128 + getattr(signal, signum), err[-3000:]
        assert f"curate train: interrupted ({signum}); its checkpoints are kept" in err
        assert "SIGTERM received" not in err
        # Ray's own actors may log a warning with a traceback on a loaded machine ("safe to ignore", Ray says); those
        # lines come prefixed with the actor's name, and only the driver's own lines are this command's output
        driver_lines = [line for line in err.splitlines() if not RAY_ACTOR_LINE.match(line)]
        assert not any("Traceback" in line for line in driver_lines), err[-3000:]
        assert len(read_jsonl(train / "metrics.jsonl")) == steps[signum]  # no worker goes on training
        assert checkpoint_dirs(train)
        # said in events.jsonl too: the next record was the resume's `start`
        events = read_jsonl(train / EVENTS)
        assert events[0]["event"] == "start"
        assert (events[-1]["event"], events[-1]["signal"]) == ("interrupted", signum)


def test_a_second_training_into_a_train_folder_another_one_writes_is_refused(tmp_path, capsys):
    """A second `curate train` into a train_dir while the first ran resumed the first's checkpoints, unasked."""
    from curation.job import job_folder_lock
    from pipelines.cli import main

    build_train_job(tmp_path / "job")
    (tmp_path / "t.yaml").write_text(recipe_text(tmp_path / "job", tmp_path / "train", workers=1))
    with job_folder_lock(str(tmp_path / "train")):
        assert main(["train", str(tmp_path / "t.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"curate train: train folder {tmp_path / 'train'} is being written by process {os.getpid()}" in err


def test_bundled_train_recipe_names_the_quickstart_job(monkeypatch):
    monkeypatch.chdir(ROOT)  # its paths are relative to where `curate train` runs, the project root
    recipe = load_train_recipe("recipes/train.yaml", check_paths=False)
    assert recipe.job_dir().name.startswith("quickstart-") and recipe.workers == 2 and not recipe.use_gpu


def test_ray_rows_become_the_loaders_tensors(tmp_path):
    built = build_job(tmp_path, seq_len=SEQ_LEN)  # random documents, padded rows, several shards and batches
    table = built.splits["train"]
    table = table.append_column("row", pa.array(np.arange(table.num_rows)))
    assert (table.column("valid").to_numpy() <= SEQ_LEN).sum() >= 2  # padded rows are among them
    ours = batch_from_arrow(table, SEQ_LEN)
    theirs = PackedDataset(tmp_path, "train").batch(np.arange(table.num_rows))
    for key, tensor in theirs.items():
        assert torch.equal(ours[key], tensor), key


# -- on Ray --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def planted_job(tmp_path_factory):
    path = tmp_path_factory.mktemp("planted")
    return path, build_train_job(path, plant_step=SPIKE_STEP)


@pytest.fixture(scope="module")
def skip_run(ray_session, planted_job, tmp_path_factory):
    from pipelines.train import train

    job, _ = planted_job
    recipe = parse_train_recipe(recipe_text(job, tmp_path_factory.mktemp("skip") / "train"))
    return train(recipe)


@pytest.fixture(scope="module")
def resumed_run(ray_session, planted_job, tmp_path_factory):
    """The same recipe, failing after step CRASH; Ray Train restarts the workers, which resume from the newest
    checkpoint (the path `--resume` takes too), all in one fit()."""
    from pipelines.train import train

    job, _ = planted_job
    recipe = parse_train_recipe(recipe_text(job, tmp_path_factory.mktemp("resumed") / "train", max_failures=1))
    result = train(recipe, crash_after=CRASH)
    with pytest.raises(FileExistsError, match="--resume"):
        train(recipe)  # a fresh run never overwrites one: the driver refuses before Ray starts anything
    return result


def test_two_workers_train_and_the_loss_falls(skip_run):
    metrics = skip_run.metrics
    assert [r["step"] for r in metrics] == list(range(1, STEPS + 1))
    losses = [r["loss"] for r in metrics]
    assert losses[0] > math.log(60) and np.mean(losses[-5:]) < 0.6 * losses[0]
    vals = [r["val_loss"] for r in metrics if r.get("val_loss") is not None]
    assert len(vals) == STEPS // 10 and vals[-1] < vals[0]
    for row in metrics:
        assert row["lr"] > 0 and row["grad_norm"] >= 0 and row["tokens_per_s"] > 0
        assert 0 <= row["data_seconds"] <= row["step_seconds"] and row["time"] <= time.time()
        assert row["tokens"] == row["step"] * BATCH * SEQ_LEN
    print(f"\nloss {losses[0]:.3f} -> {losses[-1]:.3f}, val {vals[0]:.3f} -> {vals[-1]:.3f}, "
          f"fit {skip_run.seconds:.1f} s")
    kept = checkpoint_dirs(skip_run.train_dir)
    assert [p.name for p in kept] == [f"step-{STEPS - EVERY:08d}", f"step-{STEPS:08d}"]  # keep_checkpoints: 2
    assert not list((skip_run.train_dir / CHECKPOINTS).glob(".*"))  # no half-written checkpoint left
    assert list((skip_run.train_dir / "tensorboard").glob("events.out.tfevents.*"))  # tensorboardX, from ray[train]


def test_planted_batch_is_detected_traced_and_skipped(skip_run, planted_job):
    _, planted = planted_job
    assert len(skip_run.spikes) == 1
    spike = skip_run.spikes[0]
    assert spike["step"] == SPIKE_STEP and "loss spike" in spike["reason"]
    assert sorted(spike["documents"]) == sorted(planted)  # every row of the batch, on both ranks, traced
    assert len(spike["rows"]) == BATCH and "rolled back" in spike["action"]
    line = skip_run.metrics[SPIKE_STEP - 1]
    assert "batch skipped, rolled back to step 20" in line["spike"]
    assert line["spike_loss"] == spike["loss"] > 2 * line["loss"]  # the replacement batch trained normally
    assert sorted(line["documents"]) == sorted(planted)
    assert all(r["spike"] is None for r in skip_run.metrics if r["step"] != SPIKE_STEP)
    events = read_jsonl(skip_run.train_dir / EVENTS)
    assert [(e["event"], e["step"]) for e in events] == [("start", 0), ("rollback", SPIKE_STEP), ("end", STEPS)]
    assert events[1]["to_step"] == 20


def test_interrupted_and_resumed_run_repeats_the_uninterrupted_one(skip_run, resumed_run):
    assert [r["step"] for r in resumed_run.metrics] == list(range(1, STEPS + 1))  # 26, 27 dropped and run again
    events = [(e["event"], e["step"]) for e in read_jsonl(resumed_run.train_dir / EVENTS)]
    last_saved = CRASH - CRASH % EVERY
    assert events == [("start", 0), ("rollback", SPIKE_STEP), ("start", last_saved), ("end", STEPS)]
    whole = skip_run.losses
    for step, loss in resumed_run.losses.items():
        assert loss == pytest.approx(whole[step], rel=1e-5), step
    assert [s["step"] for s in resumed_run.spikes] == [SPIKE_STEP]  # found before the failure, kept
    print(f"\nfailed after step {CRASH}, restarted and resumed: fit {resumed_run.seconds:.1f} s")


@pytest.fixture(scope="module")
def ray_data_run(ray_session, tmp_path_factory):
    from pipelines.train import ray_dataset, train

    job = tmp_path_factory.mktemp("raydata")
    build_train_job(job, train_rows=96)
    # The workers take 1 CPU of 2 together: Ray Data's read tasks need the other.
    text = recipe_text(job, job / "train", steps=8, val_every=0, checkpoint_every=0, cpus_per_worker=0.5)
    recipe = TrainRecipe.model_validate(json.loads(text))
    hungry = recipe.model_copy(update={"cpus_per_worker": 1.0})
    with pytest.raises(ValueError, match="leave Ray Data some"):  # instead of Ray Data waiting forever
        train(hungry, datasets={"train": ray_dataset(job)})
    return train(recipe, datasets={"train": ray_dataset(job)})


def test_a_ray_dataset_of_the_shards_trains(ray_data_run):
    losses = [r["loss"] for r in ray_data_run.metrics]
    assert len(losses) == 8 and all(math.isfinite(x) for x in losses)
    assert np.mean(losses[-3:]) < losses[0]
    assert not (ray_data_run.train_dir / SPIKES).exists()
    print(f"\nray data: loss {losses[0]:.3f} -> {losses[-1]:.3f}, fit {ray_data_run.seconds:.1f} s")
