"""`curate ablate` end to end on the bundled sample: the session's tiny ablation (`tests.support.ablation`: two
variants, one seed, 16 steps, a mixture search) on Ray; an evaluation set holding a training document stops it
before training; an ablation killed with SIGKILL mid-training resumes (`--resume`) to the table of the
uninterrupted one, run without Ray.

The three share one jobs folder: the later two find the first one's curation, packing and tokenizer done
(job folders are keyed by the recipe, and where it runs is not part of the key), and train only."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from curation.ablate.evalsets import read_set
from curation.ablate.jobs import plan_curation
from curation.ablate.results import read_results
from curation.ablate.spec import load_ablation
from curation.ablate.variants import variant_recipe
from curation.train.loop import METRICS, checkpoint_dirs, read_jsonl
from pipelines.ablate import OverlapError, curate, overlap, run_ablation
from pipelines.cli import main
from pipelines.executors import LocalExecutor
from tests.support.ablation import EVAL, EVERY, STEPS, tiny_ablation, write_ablation

from ..conftest import ROOT

VARIANTS = ("base", "no-length")
MIXTURES = ("mixture-proposed", "mixture-natural", "mixture-uniform")


@pytest.fixture(scope="module")
def tiny(ray_session, tmp_path_factory):
    return tiny_ablation(tmp_path_factory)


@pytest.fixture(scope="module")
def jobs(tiny) -> Path:
    return tiny.jobs


@pytest.fixture(scope="module")
def finished(tiny):
    return tiny.result


def document_ids(job: str) -> set[str]:
    return {i for f in sorted(Path(job, "documents").glob("*.parquet"))
            for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()}


def test_a_tiny_ablation_gives_a_table_of_real_numbers(finished):
    results = read_results(finished.folder)
    assert [(r["variant"], r["set"], r["metric"]) for r in results.table] == [
        (v, s, m) for v in (*VARIANTS, *MIXTURES) for s, ms in (("held-out", ("loss", "bits_per_byte")),
                                                                ("choice", ("accuracy", "accuracy_norm"))) for m in ms]
    for variant in VARIANTS:
        done = finished.runs[variant][0]
        assert done["steps"] == STEPS
        loss = results.row(variant, "held-out", "loss")
        assert math.isfinite(loss["mean"]) and 0 < loss["mean"] < math.log(400) + 1
        assert loss["values"] == [done["final"]["held-out"]["loss"]]  # the run's own last evaluation
        assert results.row(variant, "choice", "accuracy")["mean"] in {i / 8 for i in range(9)}  # of 8 items
        curve = results.curves.filter(pc.equal(results.curves["variant"], variant)).to_pylist()
        losses = [r for r in curve if (r["set"], r["metric"]) == ("held-out", "loss")]
        assert [r["step"] for r in losses] == list(range(EVERY, STEPS + 1, EVERY))  # every checkpoint evaluated
        assert losses[-1]["value"] == loss["mean"] and losses[0]["value"] > losses[-1]["value"]  # it learned
        assert losses[-1]["tokens"] == done["tokens"] > 0
        run = Path(finished.folder, "runs", variant, "seed-0")
        assert [p.name for p in checkpoint_dirs(run)] == [f"step-{STEPS:08d}"]  # evaluated ones removed
    no_length = results.row("no-length", "held-out", "loss")
    assert no_length["difference"] == pytest.approx(no_length["mean"] - results.row("base", "held-out", "loss")["mean"])
    assert no_length["exceeds"] is None  # one seed: no spread to compare with


def test_the_variants_documents_differ_and_their_shared_extraction_ran_once(finished):
    plan = finished.plan
    base, no_length = plan["variants"]["base"], plan["variants"]["no-length"]
    assert no_length["jobs"] == [no_length["documents"]] and base["jobs"] == [no_length["documents"], base["documents"]]
    extracted, kept = document_ids(no_length["documents"]), document_ids(base["documents"])
    assert kept < extracted and len(kept) == plan["jobs"][base["documents"]]["documents"]  # length dropped some
    assert plan["jobs"][no_length["documents"]]["variants"] == ["no-length", "base"]
    assert plan["reuse"] == {"jobs": 2, "shared_jobs": 1, "shards_not_recomputed": 3,
                             "records_not_recomputed": plan["jobs"][no_length["documents"]]["records_read"],
                             "jobs_done_before": 0}
    assert base["train_tokens"] != no_length["train_tokens"] and plan["same_data"] == []


def test_variants_that_packed_the_same_shards_are_named_with_a_note(finished, tmp_path):
    """A variant whose stage removed nothing that was sampled trained on its baseline's very data: the table showed
    `+0.0000 ... no` and never said so."""
    from types import SimpleNamespace

    from pipelines.ablate import same_data, summary

    base = finished.plan["variants"]["base"]["packed"]
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(Path(base, "manifest.json"), copy / "manifest.json")
    packed = {name: SimpleNamespace(dir=str(folder)) for name, folder in (
        ("base", base), ("no-length", finished.plan["variants"]["no-length"]["packed"]), ("same", copy))}
    assert same_data(packed) == [["base", "same"]]
    console = Console(record=True, width=200)
    about = {**finished.plan, "same_data": [["base", "same"]]}
    summary(dataclasses.replace(finished, plan=about), console)
    assert "note: base, same trained on the same packed data (identical train shards)" in console.export_text()
    assert finished.overlap == {s: {v: {"items": n, "overlapping": 0, "examples": [], "unchecked": 0}
                                    for v in ("base", "no-length")} for s, n in (("held-out", 6), ("choice", 8))}


def test_an_evaluation_set_holding_a_training_document_stops_the_ablation(finished, jobs, tmp_path):
    leaked = tmp_path / "leaked.jsonl"
    text = pq.read_table(next(Path(finished.plan["variants"]["base"]["documents"], "documents").glob("*.parquet")),
                         columns=["text"]).column("text")[0].as_py()
    leaked.write_text(json.dumps({"text": text}) + "\n" + (EVAL / "held-out.jsonl").read_text())
    path = write_ablation(tmp_path, jobs, executor="local", sets=[{"name": "leaked", "path": str(leaked)}])
    with pytest.raises(OverlapError, match=r"1 of 7 items of leaked in base's documents \(e.g. items \[0\]\)"):
        run_ablation(load_ablation(path), quiet=True)
    found = json.loads(Path(tmp_path, "ablations", "tiny", "overlap.json").read_text())
    assert {v: n["overlapping"] for v, n in found["leaked"].items()} == {"base": 1, "no-length": 1}
    assert not Path(tmp_path, "ablations", "tiny", "runs").exists()  # nothing trained
    with pytest.raises(OverlapError):  # so run again as it was, not taken for an earlier run to resume
        run_ablation(load_ablation(path), quiet=True)

    refused = load_ablation(path)  # with `overlap: warn`, the same finding is a warning and the ablation goes on
    warned = refused.model_copy(update={"evaluation": refused.evaluation.model_copy(update={"overlap": "warn"})})
    base = warned.base_recipe()
    plan = plan_curation({v: variant_recipe(base, spec) for v, spec in warned.all_variants().items()})
    lines: list[str] = []
    curated = curate(plan, base, warned.jobs_folder(), None, lines.append)
    assert all(job.already_done for job in curated.values())  # the first ablation's jobs
    assert overlap(warned, [read_set(s) for s in warned.evaluation.sets], plan, curated, LocalExecutor(1),
                   lines.append) == found
    assert [line for line in lines if line.startswith("warning")] == [
        f"warning: overlap: 1 of 7 items of leaked in {v}'s documents (e.g. items [0])" for v in ("base", "no-length")]


def test_an_ablation_killed_mid_training_resumes_to_the_uninterrupted_table(finished, jobs, tmp_path, capsys):
    path = write_ablation(tmp_path, jobs, executor="local")
    run = tmp_path / "ablations" / "tiny" / "runs" / "base" / "seed-0"
    first = run / "checkpoints" / f"step-{EVERY:08d}" / "state.pt"
    process = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "ablate", str(path), "--quiet"], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while not first.is_file() and process.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, process.stderr.read().decode()[-2000:]
    steps = [r["step"] for r in read_jsonl(run / METRICS)]
    assert checkpoint_dirs(run) and max(steps) < STEPS and not (run / "done.json").exists()  # killed mid-training

    assert main(["ablate", str(path), "--quiet"]) == 2  # an earlier run is there: resumed only when asked
    assert main(["ablate", str(path), "--resume", "--quiet"]) == 0
    printed = capsys.readouterr()
    assert "an earlier run of this ablation: resume it (--resume)" in printed.err
    assert "tiny: last checkpoint, mean over seeds (baseline base)" in printed.out
    assert "│ no-length │ held-out │ loss" in printed.out and f"results: {run.parents[2]}" in printed.out
    resumed, uninterrupted = read_results(str(run.parents[2])), read_results(finished.folder)
    # the same numbers, to the last digit, without Ray this time (and without the shared one's mixture search)
    assert resumed.table == [r for r in uninterrupted.table if r["variant"] in VARIANTS]
    curves = uninterrupted.curves
    assert resumed.curves.equals(curves.filter(pc.is_in(curves["variant"], pa.array(VARIANTS))))
    losses = [r["loss"] for r in read_jsonl(run / METRICS)]
    assert losses == [r["loss"] for r in read_jsonl(Path(finished.folder, "runs", "base", "seed-0") / METRICS)]

    # its finished runs are this spec's: a changed model is refused, not answered with the old model's numbers
    spec = json.loads(path.read_text())
    spec["training"]["model"] |= {"d_model": 48, "n_heads": 2, "n_kv_heads": 2}
    path.write_text(json.dumps(spec))
    assert main(["ablate", str(path), "--resume", "--quiet"]) == 2
    assert "model.d_model 32 -> 48" in capsys.readouterr().err


def test_the_mixture_search_trains_proxies_fits_them_and_verifies_its_proposal(finished):
    record = read_results(finished.folder).mixture_search
    assert record == finished.mixture_search and record["variant"] == "base" and record["set"] == "held-out"
    base_manifest = json.loads(Path(finished.plan["variants"]["base"]["packed"], "manifest.json").read_text())
    available = {s: m["available_tokens"] for s, m in base_manifest["mixture"].items()}
    assert record["natural"] == pytest.approx({s: n / sum(available.values()) for s, n in available.items()})
    proxies = record["proxies"]
    assert [p["name"] for p in proxies] == ["proxy-0", "proxy-1", "proxy-2", "proxy-3"]
    assert len({tuple(p["weights"].values()) for p in proxies}) == 4  # four different mixtures
    for number, proxy in enumerate(proxies):
        manifest = json.loads(Path(proxy["packed"], "manifest.json").read_text())
        tokens = manifest["splits"]["train"]["tokens_per_source"]
        assert proxy["shares"] == pytest.approx({s: tokens[s] / sum(tokens.values()) for s in ("notes", "web")},
                                                abs=1e-6)  # what the regression sees: the shares packing took
        assert proxy["seeds"] == [number] and list(finished.runs[proxy["name"]]) == [number]  # a seed each
        done = finished.runs[proxy["name"]][number]
        assert done["steps"] == 4 and proxy["values"] == [done["final"]["held-out"]["loss"]] == [proxy["score"]]
    assert record["fit"]["kind"] == "quadratic" and record["fit"]["proxies"] == 4
    proposal = record["proposal"]
    assert sum(proposal["weights"].values()) == pytest.approx(1, abs=1e-3) and set(proposal["predicted"]) == set(
        MIXTURES)
    measured = record["verification"]["mixtures"]
    results = read_results(finished.folder)
    for name in MIXTURES:  # trained with the ablation's own budget and seeds, in the table beside the variants
        assert finished.runs[name][0]["steps"] == STEPS
        assert measured[name]["values"] == [results.row(name, "held-out", "loss")["mean"]]
        assert Path(record["verified"][name]["packed"]).is_dir()
    assert record["verified"]["mixture-proposed"]["weights"] == proposal["weights"]
    assert record["verified"]["mixture-uniform"]["weights"] == {"notes": 0.5, "web": 0.5}
    lowest = measured["mixture-proposed"]["mean"] <= min(measured[n]["mean"] for n in MIXTURES[1:])
    assert record["verification"]["proposal_at_most_others"] is lowest
    assert not set(results.curves["variant"].to_pylist()) & {p["name"] for p in proxies}  # proxies: not compared

    from pipelines.ablate import summary

    console = Console(width=240, record=True, file=io.StringIO())
    summary(finished, console)
    printed = console.export_text()
    assert "mixture search over base's sources: held-out loss; quadratic fit on 4 proxies" in printed
    assert "│ mixture-uniform  │ notes 0.500, web 0.500 │" in printed
    assert "the proposed mixture's loss: " in printed and "the natural mixture's (" in printed
    assert "one seed; lower on " in printed and " of 1 seeds), " in printed  # one seed: no spread to judge by
    assert "the fit predicts the proposal " in printed and " leave-one-out error (" in printed


def test_the_proposal_is_written_into_the_searched_variants_recipe(finished, tiny, tmp_path):
    from curation.recipe import load_recipe
    from pipelines.ablate import write_proposal

    out = tmp_path / "proposed.yaml"
    text = write_proposal(load_ablation(tiny.path), finished, str(out))
    assert text.startswith("# tiny: variant base of ablation tiny, with the mixture its search proposed\n")
    written, base = load_recipe(out), load_recipe(tiny.path.parent / "base.yaml")
    assert written.mixture.weights == finished.mixture_search["proposal"]["weights"]
    assert written.mixture.total_tokens == base.mixture.total_tokens == 3000
    same = base.model_copy(update={"mixture": written.mixture})
    assert written.fingerprint() == same.fingerprint()  # nothing else changed


def test_write_recipe_needs_a_mixture_search(tmp_path, capsys):
    path = write_ablation(tmp_path, tmp_path / "jobs", executor="local")
    assert main(["ablate", str(path), "--write-recipe", str(tmp_path / "out.yaml")]) == 2
    assert "has no mixture_search; nothing was run" in capsys.readouterr().err
    assert not (tmp_path / "ablations").exists()


def test_a_second_ablation_into_a_folder_another_one_writes_is_refused(tmp_path, capsys):
    """Two `curate ablate` of one ablation at once both trained every run: metrics.jsonl held 63 lines of 32 steps."""
    from curation.job import job_folder_lock

    path = write_ablation(tmp_path, tmp_path / "jobs", executor="local")
    folder = load_ablation(path).folder()
    with job_folder_lock(folder):
        assert main(["ablate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"curate ablate: ablation folder {folder} is being written by process {os.getpid()}" in err
