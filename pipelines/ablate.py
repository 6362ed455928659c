"""`curate ablate`: curate every variant of a recipe, pack them with one tokenizer, train the reference decoder
on each with every seed, evaluate every checkpoint, and tabulate.

1. Curation: the jobs of `curation.ablate.jobs.plan_curation`, each a `curate run` of its own (job folders
   keyed by the recipe's fingerprint, so a finished one is skipped), parents first; a job continuing from
   another's documents starts with the `restore` stage.
2. One tokenizer: the ablation's (or the base recipe's) model, or one trained on a sample of the union of the
   variants' documents, kept in the jobs folder under a key of what it is trained on; then a packing job per
   variant (its mixture, that tokenizer, the ablation's `pack`).
3. Overlap of the evaluation sets with each variant's documents (a task per documents file), refused or warned
   about (`evaluation.overlap`).
4. A run per variant and seed (`curation.ablate.training.train_run`): the same token budget, `curate train`'s
   worker loop, its checkpoints evaluated. On Ray each run is a task with `cpus_per_run` CPUs (and a GPU with
   `use_gpu`), so runs spread over the cluster; with `executor: local` they run on the local pool.
5. The table (`curation.ablate.stats`), curves and results files (`curation.ablate.results`).

Rerun with `--resume` and what is done is skipped: finished jobs, the tokenizer, evaluated checkpoints and
finished runs; an interrupted run goes on from its newest checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from curation import storage
from curation.ablate import results as layout
from curation.ablate.evalsets import LoadedSet, read_set
from curation.ablate.jobs import CurationPlan, Node, node_recipe, pack_recipe, plan_curation
from curation.ablate.mixture_search import (
    NATURAL,
    PROPOSED,
    UNIFORM,
    VERIFIED,
    fit,
    fit_verdict,
    mixture,
    natural_shares,
    propose,
    proxy_mixtures,
    realised_shares,
    recipe_with_mixture,
    rounded,
    verification,
)
from curation.ablate.overlap import eval_index, flagged_documents, overlapping_items
from curation.ablate.restore import Restore
from curation.ablate.spec import Ablation
from curation.ablate.stats import Row, table
from curation.ablate.tokenizer import train_union_tokenizer
from curation.ablate.training import RunSpec, train_run
from curation.ablate.training_config import Training
from curation.ablate.variants import variant_recipe
from curation.job import EventLog, document_files, job_folder_lock
from curation.mixture import MixtureParams
from curation.recipe import Recipe, load_recipe
from curation.stages.build import build_stages
from curation.train.loader import read_manifest
from curation.train.loop import METRICS, checkpoint_dirs, read_jsonl
from curation.train.resume import check_resume
from pipelines.executors import Executor, start_executor
from pipelines.run import interruption, run

Say = Callable[[str], None]


class OverlapError(ValueError):
    """Evaluation items found in a variant's training documents, with `evaluation.overlap: refuse`."""


@dataclass
class Job:
    """A curation or packing job of the ablation, as run."""

    recipe: Recipe
    dir: str
    stats: dict[str, Any]
    already_done: bool  # finished before this invocation (an earlier run, or another ablation's)


@dataclass
class AblationResult:
    folder: str
    rows: list[Row]
    plan: dict[str, Any]
    overlap: dict[str, Any]
    runs: dict[str, dict[int, dict[str, Any]]]  # variant -> seed -> done.json (the search's runs too)
    seconds: float
    mixture_search: dict[str, Any] | None = None  # mixture_search.json


def claim(folder: str, resume: bool) -> None:
    """As `curate train`: a folder holding an earlier ablation's training runs is resumed only when asked (one that
    stopped before training, refused for an overlapping evaluation set, is started again)."""
    if Path(storage.join(folder, layout.RUNS)).is_dir() and not resume:
        msg = f"{folder} holds an earlier run of this ablation: resume it (--resume), or give another name or output"
        raise FileExistsError(msg)


def _stats(job_dir: str) -> dict[str, Any] | None:
    path = storage.join(job_dir, "stats.json")
    return storage.read_json(path) if storage.exists(path) else None


def _run_job(recipe: Recipe, parent: str | None, address: str | None, quiet: bool = True) -> Job:
    """`curate run` of one job (skipped when finished; its progress shown unless `quiet`); a job reading
    `parent`'s documents restores them first."""
    job_dir = recipe.job_dir()
    stats = _stats(job_dir)
    if stats is not None and (recipe.pack is None or storage.exists(storage.join(job_dir, "manifest.json"))):
        return Job(recipe, job_dir, stats, True)
    stages = None
    if parent is not None:
        first = next(iter(document_files(parent).values()))  # there is one: `continuation_sources` says so
        stages = [(Restore.name, Restore(documents=first)), *build_stages(recipe)]
    result = run(recipe, address=address, quiet=quiet, stages=stages)
    return Job(recipe, result.job_dir, result.stats, False)


def curate(plan: CurationPlan, base: Recipe, jobs_folder: str, address: str | None, say: Say,
           quiet: bool = True) -> dict[str, Job]:
    """Run the plan's curation jobs, parents first (each `curate run`'s progress shown unless `quiet`); each job
    by its node key."""
    done: dict[str, Job] = {}
    for key, node in plan.jobs.items():
        parent = done[node.parent] if node.parent else None
        recipe = node_recipe(node, f"{base.name}-s{node.depth}", jobs_folder,
                             (parent.recipe, parent.dir) if parent else None)
        done[key] = job = _run_job(recipe, parent.dir if parent else None, address, quiet)
        when = "done before" if job.already_done else f"{job.stats['wall_seconds']:.1f} s"
        say(f"curation: {Path(job.dir).name} ({_stage_list(node)}) for {', '.join(node.variants)}: "
            f"{job.stats['documents']['out']:,} documents ({when})")
    return done


def _stage_list(node: Node) -> str:
    names = [next(iter(e)) for e in node.stages]
    return ("continues, " if node.parent else "") + (", ".join(names) if names else "no stage")


def tokenizer_model(ablation: Ablation, base: Recipe, documents: list[str], say: Say) -> str:
    """The path of the ablation's one tokenizer: given, or trained on the union of `documents` files and kept
    in the jobs folder under a key of what trained it (so a rerun, or another ablation, finds it)."""
    config = ablation.tokenizer or base.tokenizer
    if config.model:
        return config.model
    pack = ablation.pack or base.pack
    key = hashlib.sha256(json.dumps([config.train.model_dump(mode="json"), sorted(documents), base.seed,
                                     pack.validation], sort_keys=True).encode()).hexdigest()[:16]
    path = storage.join(ablation.jobs_folder(), "tokenizers", f"{key}.model")
    if storage.exists(path):
        say(f"tokenizer: {path} (trained before)")
        return path
    started = time.time()
    model, warning = train_union_tokenizer(documents, config.train, base.seed, pack.validation)
    storage.write_bytes_atomic(path, model)
    say(f"tokenizer: trained on the union of {len(documents)} documents files in {time.time() - started:.1f} s")
    if warning:
        say(f"warning: {warning}")
    return path


def pack(ablation: Ablation, recipes: dict[str, Recipe], documents: dict[str, Job], model: str,
         address: str | None, say: Say) -> dict[str, Job]:
    """A packing job per variant: its documents (the job `documents` names for it), its mixture, the one
    tokenizer, the ablation's `pack`."""
    base = ablation.base_recipe()
    settings = (ablation.pack or base.pack).model_dump(mode="json")
    held_out = (ablation.tokenizer or base.tokenizer).held_out_share()  # what the one tokenizer trained without
    out = {}
    for variant, recipe in recipes.items():
        curated = documents[variant]
        packing = pack_recipe(recipe, (curated.recipe, curated.dir), f"{base.name}-{variant}",
                              ablation.jobs_folder(), model, settings, held_out)
        out[variant] = job = _run_job(packing, curated.dir, address)
        train = job.stats["tokens"]["splits"]["train"]
        say(f"packed: {variant}: {train['tokens']:,} train tokens in {train['rows']:,} rows"
            f"{' (done before)' if job.already_done else ''}")
    return out


def reuse(plan: CurationPlan, curated: dict[str, Job]) -> dict[str, Any]:
    """How much curation the sharing saved: each shared job's shards and records once per variant beyond the
    first; and the jobs finished before this invocation."""
    shards = records = 0
    for key, node in plan.jobs.items():
        extra = len(node.variants) - 1
        shards += extra * curated[key].stats["shards"]["total"]
        records += extra * curated[key].stats["documents"]["records_read"]
    return {"jobs": len(plan.jobs), "shared_jobs": len(plan.shared()), "shards_not_recomputed": shards,
            "records_not_recomputed": records,
            "jobs_done_before": sum(job.already_done for job in curated.values())}


def plan_record(ablation: Ablation, recipes: dict[str, Recipe], plan: CurationPlan, curated: dict[str, Job],
                packed: dict[str, Job], model: str) -> dict[str, Any]:
    jobs = {}
    for key, node in plan.jobs.items():
        job = curated[key]
        jobs[job.dir] = {"variants": node.variants, "stages": [next(iter(e)) for e in node.stages],
                         "continues": curated[node.parent].dir if node.parent else None,
                         "shards": job.stats["shards"]["total"], "records_read": job.stats["documents"]["records_read"],
                         "documents": job.stats["documents"]["out"], "done_before": job.already_done}
    variants = {v: {"recipe": recipes[v].model_dump(mode="json"), "jobs": [curated[k].dir for k in plan.chains[v]],
                    "documents": curated[plan.chains[v][-1]].dir, "packed": packed[v].dir,
                    "train_tokens": packed[v].stats["tokens"]["splits"]["train"]["tokens"]} for v in recipes}
    return {"name": ablation.name, "baseline": ablation.baseline, "variants": variants, "jobs": jobs,
            "reuse": reuse(plan, curated), "tokenizer": model, "same_data": same_data(packed)}


def same_data(packed: dict[str, Job]) -> list[list[str]]:
    """The groups of variants whose packed train shards are byte for byte the same (by their manifests' sha256): a
    variant whose stage removed nothing that was sampled trains on its baseline's data, and differs by its seeds'
    noise alone, which a reader of the table should know."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for variant, job in packed.items():
        shards = read_manifest(job.dir)["splits"]["train"]["shards"]
        groups.setdefault(tuple(shard["sha256"] for shard in shards), []).append(variant)
    return [group for group in groups.values() if len(group) > 1]


def overlap(ablation: Ablation, sets: list[LoadedSet], plan: CurationPlan, curated: dict[str, Job],
            executor: Executor, say: Say) -> dict[str, dict[str, Any]]:
    """Per set and variant, the evaluation items found in the variant's documents; refused or warned about."""
    index = executor.share(eval_index(sets, ablation.evaluation.ngram))
    files = sorted({uri for v in plan.chains for uri in document_files(curated[plan.chains[v][-1]].dir).values()})
    handles = [executor.submit(flagged_documents, index, uri) for uri in files]
    flagged = dict(zip(files, (executor.result(h) for h in handles), strict=True))
    found: dict[str, dict[str, Any]] = {s.name: {} for s in sets}
    for variant, chain in plan.chains.items():
        texts = [t for uri in document_files(curated[chain[-1]].dir).values() for t in flagged[uri]]
        for set_name, counts in overlapping_items(sets, texts, ablation.evaluation.ngram).items():
            found[set_name][variant] = counts
    problems = [f"{n['overlapping']} of {n['items']} items of {s} in {v}'s documents (e.g. items {n['examples']})"
                for s, by in found.items() for v, n in by.items() if n["overlapping"]]
    storage.write_json_atomic(storage.join(ablation.folder(), layout.OVERLAP), found)
    if problems and ablation.evaluation.overlap == "refuse":
        msg = ("evaluation sets are not held out: " + "; ".join(problems)
               + " (remove those items, or set evaluation.overlap: warn)")
        raise OverlapError(msg)
    for line in problems:
        say(f"warning: overlap: {line}")
    if not problems:
        say(f"overlap: no evaluation item shares a {ablation.evaluation.ngram}-word n-gram with any variant's data")
    return found


def _absolute(path: str) -> str:
    """A local path as every worker sees it, whatever its working folder."""
    return path if storage.is_remote(path) else str(Path(path).absolute())


def run_specs(ablation: Ablation, packed: dict[str, Job], model: str, training: Training | None = None,
              seeds: dict[str, list[int]] | None = None) -> list[RunSpec]:
    """Every run's spec (with `training`, the ablation's by default; `seeds` by variant, else `training`'s); a
    run with checkpoints, finished or not, must resume as `curate train --resume` would (else refused here, before
    any starts)."""
    training = training or ablation.training
    specs = []
    sets = [s.model_dump(mode="json") | {"path": _absolute(s.path)} for s in ablation.evaluation.sets]
    for variant, job in packed.items():
        manifest = read_manifest(job.dir)
        for seed in seeds[variant] if seeds else training.seeds:
            train_dir = str(Path(layout.run_dir(ablation.folder(), variant, seed)).resolve())
            recipe = ablation.train_recipe(str(Path(job.dir).resolve()), train_dir, seed, int(manifest["seq_len"]),
                                           name=f"{variant}-seed{seed}", training=training)
            saved = checkpoint_dirs(Path(train_dir))
            if saved:  # a finished run too: its results must be this spec's (a changed model once reused them)
                check_resume(recipe, saved[-1], manifest)
            specs.append(RunSpec(variant, seed, recipe.model_dump(mode="json"), sets, _absolute(model),
                                 ablation.evaluation.batch_size))
    return specs


def _submit(executor: Executor, training: Training, spec: RunSpec, on_ray: bool) -> Any:
    if on_ray:  # the run's own resources: its CPUs, a GPU with use_gpu
        import ray

        task = ray.remote(train_run).options(num_cpus=training.cpus_per_run, num_gpus=int(training.use_gpu),
                                              max_retries=0)
        return task.remote(spec)
    return executor.submit(train_run, spec)


def _stop(executor: Executor, pending: list[Any], on_ray: bool) -> None:
    """Interrupted: no run may go on writing its folder (a resumed one would write it too)."""
    if on_ray:
        import ray

        for handle in pending:
            ray.cancel(handle, force=True)
    executor.abort()


def train(ablation: Ablation, specs: list[RunSpec], executor: Executor, on_ray: bool, console: Console,
          quiet: bool) -> dict[str, dict[int, dict[str, Any]]]:
    """Every run, spread over the executor, with a bar per run (steps done, from its metrics.jsonl)."""
    steps = {(s.variant, s.seed): int(s.recipe["steps"]) for s in specs}
    pending = {_submit(executor, ablation.training, spec, on_ray): spec for spec in specs}
    done: dict[str, dict[int, dict[str, Any]]] = {}
    bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       console=console, transient=False) if not quiet and console.is_terminal else None
    bars = {(s.variant, s.seed): bar.add_task(f"{s.variant} seed {s.seed}", total=steps[s.variant, s.seed])
            for s in specs} if bar else {}
    if bar:
        bar.start()
    try:
        while pending:
            ready, _ = executor.wait(list(pending), timeout=1.0)
            for handle in ready:
                spec = pending.pop(handle)
                record = executor.result(handle)
                done.setdefault(spec.variant, {})[spec.seed] = record
                if not bar and not quiet:
                    console.print(f"run {spec.variant} seed {spec.seed}: {record['steps']} steps, "
                                  f"{record['tokens']:,} tokens", highlight=False, soft_wrap=True)
            for (variant, seed), task in bars.items():
                if variant in done and seed in done[variant]:
                    bar.update(task, completed=steps[variant, seed])
                else:
                    rows = read_jsonl(Path(layout.run_dir(ablation.folder(), variant, seed)) / METRICS)
                    bar.update(task, completed=rows[-1]["step"] if rows else 0)
    except (KeyboardInterrupt, SystemExit):
        _stop(executor, list(pending), on_ray)
        raise
    finally:
        if bar:
            bar.stop()
    return {v: dict(sorted(done[v].items())) for v in dict.fromkeys(s.variant for s in specs) if v in done}


@dataclass
class Search:
    """The mixture search as it goes: the proxies' packing jobs, then the fit, the proposal and its verification."""

    natural: dict[str, float]
    training: Training  # the proxies'
    proxies: dict[str, Job]
    seeds: dict[str, list[int]]  # by proxy
    record: dict[str, Any]


def _mixture_variants(ablation: Ablation, recipes: dict[str, Recipe], weights: dict[str, dict[str, float]],
                      tokens: int) -> dict[str, Recipe]:
    """The searched variant's recipe with each of `weights` as its mixture, over the `tokens` a run trains on."""
    search = ablation.mixture_search
    searched = ablation.all_variants()[search.variant]
    base = ablation.base_recipe()
    return {name: variant_recipe(base, searched.model_copy(update={"mixture": MixtureParams.model_validate(
        mixture(recipes[search.variant], w, tokens, search.max_epochs))})) for name, w in weights.items()}


def _shares(job: Job, sources: list[str]) -> dict[str, float]:
    return dict(zip(sources, (round(x, 6) for x in realised_shares(read_manifest(job.dir), sources)), strict=True))


def search_proxies(ablation: Ablation, recipes: dict[str, Recipe], documents: Job, packed: Job, model: str,
                   address: str | None, say: Say) -> Search:
    """Pack the proxies' mixtures of the searched variant's documents (`documents`, packed unmixed or with its
    own mixture as `packed`: its manifest gives the natural shares)."""
    search = ablation.mixture_search
    natural = natural_shares(read_manifest(packed.dir))
    training = search.proxy.apply(ablation.training)
    weights = proxy_mixtures(search, natural)
    seeds = search.proxy_seeds(ablation.training)
    proxy_recipes = _mixture_variants(ablation, recipes, weights, training.tokens)
    say(f"mixture search: {len(weights)} proxies over {', '.join(natural)} of {search.variant} (natural shares "
        f"{_weights(natural)}), {training.tokens:,} tokens each")
    proxies = pack(ablation, proxy_recipes, dict.fromkeys(proxy_recipes, documents), model, address, say)
    record = {"variant": search.variant, "set": ablation.search_set(), "metric": search.metric,
              "sources": list(natural), "natural": natural,
              "proxy_training": {"tokens": training.tokens, "model": training.model.model_dump(exclude_none=True)},
              "proxies": [{"name": n, "weights": w, "shares": _shares(proxies[n], list(natural)),
                           "seeds": seeds[n], "packed": proxies[n].dir} for n, w in weights.items()]}
    return Search(natural, training, proxies, seeds, record)


def fit_search(ablation: Ablation, found: Search, runs: dict[str, dict[int, dict[str, Any]]], say: Say) -> None:
    """The proxies' scores, the regression on their shares and its proposal, into `found.record`."""
    search, record = ablation.mixture_search, found.record
    sources = record["sources"]
    for proxy in record["proxies"]:
        proxy["values"] = [runs[proxy["name"]][seed]["final"][record["set"]][search.metric]
                           for seed in sorted(runs[proxy["name"]])]
        proxy["score"] = sum(proxy["values"]) / len(proxy["values"])
    shares = np.array([[p["shares"][s] for s in sources] for p in record["proxies"]])
    fitted = fit(shares, np.array([p["score"] for p in record["proxies"]]), search.regression, search.seed)
    proposal = propose(fitted, search, found.natural, shares)
    verdict = fit_verdict(proposal.predicted, fitted.loo_mae)
    record["fit"], record["proposal"] = {**fitted.about(), "verdict": verdict}, proposal.as_dict()
    rho = "-" if fitted.loo_spearman is None else f"{fitted.loo_spearman:.2f}"
    say(f"mixture search: {search.regression} fit on {fitted.proxies} proxies, leave-one-out Spearman {rho}; "
        f"proposed {_weights(proposal.weights)} (predicted {record['set']} {search.metric} "
        f"{proposal.predicted[PROPOSED]:.4f}, natural {proposal.predicted[NATURAL]:.4f}, "
        f"uniform {proposal.predicted[UNIFORM]:.4f}); {verdict}")


def verify_search(ablation: Ablation, recipes: dict[str, Recipe], documents: Job, found: Search, model: str,
                  address: str | None, say: Say) -> dict[str, Job]:
    """Pack the proposal, the natural and the uniform mixture for the ablation's own training."""
    sources = found.record["sources"]
    weights = {PROPOSED: found.record["proposal"]["weights"], NATURAL: rounded(list(found.natural.values()), sources),
               UNIFORM: rounded([1.0] * len(sources), sources)}
    verified = _mixture_variants(ablation, recipes, weights, ablation.training.tokens)
    packed = pack(ablation, verified, dict.fromkeys(verified, documents), model, address, say)
    found.record["verified"] = {n: {"weights": weights[n], "shares": _shares(packed[n], sources),
                                    "packed": packed[n].dir} for n in verified}
    return packed


def _weights(weights: dict[str, float]) -> str:
    return ", ".join(f"{s} {w:.3f}" for s, w in weights.items())


def write_proposal(ablation: Ablation, result: AblationResult, path: str) -> str:
    """Write the searched variant's curation recipe with the proposed mixture to `path` (the base recipe's own
    tokenizer and pack, or the ablation's where it has none); return its text."""
    record = result.mixture_search
    raw = load_recipe(ablation.recipe, check_paths=False)
    missing = {key: getattr(ablation, key) for key in ("tokenizer", "pack") if getattr(raw, key) is None}
    base = raw.model_copy(update={key: value for key, value in missing.items() if value is not None})
    recipe = variant_recipe(base, ablation.all_variants()[record["variant"]])
    measured = (record.get("verification") or {}).get("mixtures", {})
    scores = ", ".join(f"{n.removeprefix('mixture-')} {m['mean']:.4f}" for n, m in measured.items())
    header = (f"{recipe.name}: variant {record['variant']} of ablation {result.plan['name']}, with the mixture its "
              f"search proposed\n{record['set']} {record['metric']}: predicted "
              f"{record['proposal']['predicted'][PROPOSED]:.4f}" + (f"; measured {scores}" if scores else ""))
    text = recipe_with_mixture(recipe, record["proposal"]["weights"], header)
    storage.write_bytes_atomic(path, text.encode())
    return text


def _ablation_text(ablation: Ablation, text: str | None) -> str:
    body = text if text is not None else yaml.safe_dump(ablation.model_dump(mode="json"), sort_keys=False)
    return f"# ablation as run by curate ablate\n# hash: {hashlib.sha256(body.encode()).hexdigest()}\n{body}"


def run_ablation(ablation: Ablation, *, text: str | None = None, resume: bool = False, address: str | None = None,
                 quiet: bool = False, console: Console | None = None) -> AblationResult:
    """Run a validated ablation to its result table; `text` is the ablation file as written (kept in the results
    folder; default: the model as YAML). One run at a time writes an ablation's folder (two at once trained every
    step twice: `JobFolderBusy`)."""
    with job_folder_lock(ablation.folder(), "ablation folder"):
        return _run_ablation(ablation, text=text, resume=resume, address=address, quiet=quiet, console=console)


def _run_ablation(ablation: Ablation, *, text: str | None, resume: bool, address: str | None, quiet: bool,
                  console: Console | None) -> AblationResult:
    started = time.time()
    console = console or Console(stderr=True)

    def say(line: str) -> None:
        if not quiet:
            console.print(line, highlight=False, soft_wrap=True)

    folder = ablation.folder()
    claim(folder, resume)
    storage.write_bytes_atomic(storage.join(folder, layout.ABLATION), _ablation_text(ablation, text).encode())
    events = EventLog(folder)
    # who runs it: the status service tells a running ablation from one whose process is gone
    events.emit("ablation_started", resume=resume, pid=os.getpid(), host=socket.gethostname())
    base = ablation.base_recipe()
    recipes = {v: variant_recipe(base, spec) for v, spec in ablation.all_variants().items()}
    plan = plan_curation(recipes)
    search = ablation.mixture_search
    found: Search | None = None
    # On Ray, one Ray for the whole ablation: each job's run joins it instead of starting its own.
    on_ray = base.executor == "ray"
    executor = start_executor(base, address) if on_ray else None
    try:
        curated = curate(plan, base, ablation.jobs_folder(), address, say, quiet)
        events.emit("curation_done", jobs=len(curated))
        documents = {v: curated[chain[-1]] for v, chain in plan.chains.items()}
        model = tokenizer_model(ablation, base, sorted({uri for job in documents.values()
                                                         for uri in document_files(job.dir).values()}), say)
        packed = pack(ablation, recipes, documents, model, address, say)
        record = plan_record(ablation, recipes, plan, curated, packed, model)
        storage.write_json_atomic(storage.join(folder, layout.PLAN), record)
        copy = storage.join(folder, layout.TOKENIZER)  # a local copy: what the runs evaluate with
        with storage.open_text_stream(model) as source:
            storage.write_bytes_atomic(copy, source.read())
        r = record["reuse"]
        say(f"reuse: {r['shared_jobs']} of {r['jobs']} curation jobs shared; {r['shards_not_recomputed']:,} shards "
            f"and {r['records_not_recomputed']:,} records not curated again; {r['jobs_done_before']} jobs done before")
        executor = executor or start_executor(base, address)
        sets = [read_set(s) for s in ablation.evaluation.sets]
        found_overlap = overlap(ablation, sets, plan, curated, executor, say)
        specs = run_specs(ablation, packed, copy)
        if search is not None:  # the proxies train beside the variants
            found = search_proxies(ablation, recipes, documents[search.variant], packed[search.variant], model,
                                   address, say)
            specs += run_specs(ablation, found.proxies, copy, found.training, found.seeds)
        events.emit("training_started", runs=len(specs))
        runs = train(ablation, specs, executor, on_ray, console, quiet)
        if found is not None:
            fit_search(ablation, found, runs, say)
            storage.write_json_atomic(storage.join(folder, layout.MIXTURE), found.record)
            if search.verify:
                verified = verify_search(ablation, recipes, documents[search.variant], found, model, address, say)
                specs = run_specs(ablation, verified, copy)
                events.emit("verification_started", runs=len(specs))
                runs |= train(ablation, specs, executor, on_ray, console, quiet)
    except KeyboardInterrupt as exc:
        events.emit("ablation_interrupted", signal=interruption(exc).name)
        raise
    except BaseException as exc:
        events.emit("ablation_failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if executor is not None:
            executor.close()
    compared = [*recipes, *(VERIFIED if found is not None and search.verify else ())]
    finals = {v: {seed: r["final"] for seed, r in runs[v].items()} for v in compared}
    if found is not None and search.verify:
        scores = {v: [finals[v][seed][found.record["set"]][search.metric] for seed in sorted(finals[v])]
                  for v in VERIFIED}
        found.record["verification"] = verification(scores, ablation.evaluation.spread)
        storage.write_json_atomic(storage.join(folder, layout.MIXTURE), found.record)
    rows = table(finals, ablation.baseline, ablation.evaluation.spread)
    curve_table = layout.curves(folder, {v: ablation.training.seeds for v in compared})
    seq_len = (ablation.pack or base.pack).seq_len
    about = {"name": ablation.name, "baseline": ablation.baseline, "spread_factor": ablation.evaluation.spread,
             "seeds": ablation.training.seeds, "steps": ablation.training.steps(seq_len),
             "tokens_per_run": ablation.training.tokens, "reuse": record["reuse"]}
    layout.write_results(folder, rows, curve_table, about)
    seconds = time.time() - started
    events.emit("ablation_done", seconds=round(seconds, 3))
    return AblationResult(folder, rows, record, found_overlap, runs, seconds,
                          found.record if found is not None else None)


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary(result: AblationResult, console: Console | None = None) -> None:
    """The result table, as `curate ablate` prints it at the end."""
    console = console or Console(width=None if Console().is_terminal else 120)
    about = result.plan
    grid = Table(title=f"{about['name']}: last checkpoint, mean over seeds (baseline {about['baseline']})",
                 title_justify="left")
    for column in ("variant", "set", "metric", "mean", "spread", f"vs {about['baseline']}", "exceeds spread"):
        grid.add_column(column, justify="right" if column not in ("variant", "set", "metric") else "left")
    for row in result.rows:
        verdict = "-" if row.exceeds is None else ("yes, better" if row.better else "yes, worse" if row.exceeds
                                                   else "no")
        difference = "-" if row.difference is None else f"{row.difference:+.4f}"
        grid.add_row(row.variant, row.set, row.metric, _number(row.mean), _number(row.spread), difference, verdict)
    console.print(grid)
    r = about["reuse"]
    console.print(f"curation: {r['jobs']} jobs, {r['shared_jobs']} shared between variants "
                  f"({r['shards_not_recomputed']:,} shards, {r['records_not_recomputed']:,} records not curated "
                  f"again), {r['jobs_done_before']} done before", highlight=False, soft_wrap=True)
    for group in about.get("same_data", ()):
        console.print(f"note: {', '.join(group)} trained on the same packed data (identical train shards): their "
                      "differences are their seeds' alone", highlight=False, soft_wrap=True)
    for set_name, by_variant in result.overlap.items():
        hits = {v: n["overlapping"] for v, n in by_variant.items() if n["overlapping"]}
        if hits:
            console.print(f"warning: {set_name}: items found in training data: {hits}", highlight=False,
                          soft_wrap=True)
    if result.mixture_search is not None:
        search_summary(result.mixture_search, console)
    console.print(f"results: {result.folder} (results.json, results.parquet, curves.parquet, runs/) in "
                  f"{result.seconds:.1f} s", highlight=False, soft_wrap=True)


def search_summary(record: dict[str, Any], console: Console) -> None:
    """The mixture search's verified mixtures: weights, the fit's prediction, the measured score."""
    fitted, proposal = record["fit"], record["proposal"]
    rho = "-" if fitted["loo_spearman"] is None else f"{fitted['loo_spearman']:.2f}"
    grid = Table(title=f"mixture search over {record['variant']}'s sources: {record['set']} {record['metric']}; "
                 f"{fitted['kind']} fit on {fitted['proxies']} proxies (leave-one-out Spearman {rho})",
                 title_justify="left")
    for column in ("mixture", "weights", "shares packed", "predicted", "mean", "spread", "proposed -", "exceeds"):
        grid.add_column(column, justify="left" if column in ("mixture", "weights", "shares packed") else "right")
    checked = (record.get("verification") or {}).get("mixtures", {})
    sources = record["sources"]
    weights = {PROPOSED: proposal["weights"], NATURAL: record["natural"],
               UNIFORM: dict.fromkeys(sources, 1 / len(sources))}
    for name in VERIFIED:
        measured = checked.get(name, {})
        verdict = measured.get("exceeds")
        grid.add_row(name, _weights(weights[name]),
                     _weights(record["verified"][name]["shares"]) if "verified" in record else "-",
                     _number(proposal["predicted"][name]), _number(measured.get("mean")),
                     _number(measured.get("spread")),
                     "-" if "proposed_minus" not in measured else f"{measured['proposed_minus']:+.4f}",
                     "-" if verdict is None else ("yes" if verdict else "no"))
    console.print(grid)
    console.print(fit_verdict(proposal["predicted"], fitted["loo_mae"]), highlight=False, soft_wrap=True)
    if "verification" in record:
        console.print(f"the proposed mixture's {record['metric']}: {_against(checked, NATURAL)}, "
                      f"{_against(checked, UNIFORM)}; `curate ablate FILE --resume --write-recipe OUT.yaml` writes "
                      "it into a recipe", highlight=False, soft_wrap=True)


def _against(measured: dict[str, dict[str, Any]], name: str) -> str:
    """How the proposal's measured score compares with another verified mixture's."""
    other = measured[name]
    side = "at most" if other["proposed_minus"] <= 0 else "ABOVE"
    noise = {None: "one seed", True: "beyond the seed spread", False: "within the seed spread"}[other["exceeds"]]
    if "proposed_lower_on" in other:  # results of an earlier version have no count
        noise += f"; lower on {other['proposed_lower_on']} of {len(other['values'])} seeds"
    return f"{side} the {name.removeprefix('mixture-')} mixture's ({other['proposed_minus']:+.4f}, {noise})"
