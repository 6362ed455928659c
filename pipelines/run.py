"""`curate run`: validate, start the executor (or join Ray), stream the plan into the job folder, summarise."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import time
from dataclasses import dataclass, field
from typing import Any

import yaml

from curation import io
from curation.job import DOCUMENTS, WORK_DOCUMENTS, EventLog, JobWriter, funnel
from curation.progress import LiveProgress
from curation.recipe import Recipe
from curation.shards import list_shards
from curation.stages import Stage
from pipelines import plan
from pipelines.allocator import lean_allocator
from pipelines.corpus import EarlySignatures, run_corpus_stages
from pipelines.executor import Executor, start_executor
from pipelines.progress import Progress
from pipelines.tokens import pack_job, token_stats

VERSIONED = ("curation", "ray", "pyarrow", "trafilatura", "resiliparse", "fastwarc", "pydantic")


@functools.cache  # metadata lookups cost ~30 ms a call; a run asks four times
def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def recipe_as_run(recipe: Recipe) -> str:
    header = [
        "# recipe as run by curate; the comments record where and with what",
        f"# recipe hash: {recipe.fingerprint()}",
    ]
    header += [f"# {name}: {version}" for name, version in versions().items()]
    body = yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    return "\n".join(header) + "\n" + body


@dataclass
class RunResult:
    job_dir: str
    stats: dict[str, Any]
    shards_skipped: int
    finished: list[str] = field(default_factory=list)


def run(
    recipe: Recipe,
    *,
    address: str | None = None,
    output: str | None = None,
    quiet: bool = False,
    stages: list[tuple[str, Stage]] | None = None,
    executor: str | None = None,
) -> RunResult:
    """Run a validated recipe to completion; `stages` replaces the recipe's (tests, custom stages),
    `executor` the recipe's executor (ray, local)."""
    lean_allocator()  # this process writes every batch (and in-process, makes them)
    job_dir = recipe.job_dir(output)
    shards = list_shards(recipe)
    stages = plan.recipe_stages(recipe) if stages is None else stages
    corpus_stages = plan.recipe_corpus_stages(recipe)
    stage_names = [name for name, _ in stages]
    writer = JobWriter(job_dir, stage_names, rejects_sample=recipe.rejects.sample,
                       max_rejects_per_reason=recipe.rejects.max_per_reason,
                       documents=WORK_DOCUMENTS if corpus_stages else DOCUMENTS)
    done = writer.resume()
    todo = [s for s in shards if s.name not in done]
    io.write_bytes_atomic(io.join(job_dir, "recipe.yaml"), recipe_as_run(recipe).encode())
    events = EventLog(job_dir)
    events.emit("job_started", shards=len(shards), already_done=len(shards) - len(todo), versions=versions())
    started = time.time()
    progress = Progress(total_shards=len(shards), done_shards=len(shards) - len(todo), enabled=not quiet)
    live = LiveProgress(job_dir, writer)  # the status service's live counters (`_progress.json`)
    finished: list[str] = []
    corpus_counters: dict[str, dict[str, Any]] = {}
    start = time.time()
    packing = recipe.pack is not None and not io.exists(io.join(job_dir, "manifest.json"))
    pool: Executor | None = start_executor(recipe, address, executor) if todo or corpus_stages or packing else None
    manifest = None
    start_seconds = time.time() - start
    early = EarlySignatures(job_dir, corpus_stages, pool) if pool is not None else None
    try:
        if todo:
            with progress:
                for batch in plan.stream(recipe, todo, stages, pool):
                    completed = writer.add(batch)
                    for name in completed:
                        events.emit("shard_done", shard=name, documents=writer.done[name]["documents"])
                        if early is not None:
                            early.start(name)
                    finished += completed
                    progress.update(batch, len(completed))
                    live.update(force=bool(completed))
        if writer.incomplete():
            msg = f"rows of these shards never arrived: {', '.join(writer.incomplete())}"
            raise RuntimeError(msg)
        if corpus_stages:
            events.emit("corpus_stages_started", stages=[name for name, _ in corpus_stages])
            progress.say(f"corpus stages: {', '.join(name for name, _ in corpus_stages)} over all documents")

            def corpus_step_done(step: str, counts: dict[str, Any]) -> None:
                events.emit("corpus_step_done", step=step, **counts)
                if "docs_in" in counts:
                    progress.say(f"  {step}: {counts['docs_in']:,} documents in, {counts['docs_out']:,} kept "
                                 f"({counts['seconds']:.1f} s)")

            corpus_counters = run_corpus_stages(job_dir, corpus_stages, [s.name for s in shards], pool,
                                                rejects_sample=recipe.rejects.sample,
                                                max_rejects=recipe.rejects.max_per_reason, on_done=corpus_step_done,
                                                early=early)
        if recipe.pack is not None:
            events.emit("packing_started")
            progress.say("tokens: tokenize, mix, pack and shuffle into shards")
            manifest = pack_job(job_dir, recipe, [s.name for s in shards], pool, say=progress.say,
                                versions=versions())
            events.emit("packing_done", **{s: manifest["splits"][s]["tokens"] for s in manifest["splits"]})
    except BaseException as exc:
        events.emit("job_failed", error=f"{type(exc).__name__}: {exc}", shards_done=len(writer.done))
        raise
    finally:
        if pool is not None:
            pool.close()
    stats = _stats(recipe, writer, shards, time.time() - started, len(shards) - len(todo), corpus_counters)
    stats["executor"] = executor or recipe.executor
    stats["executor_start_seconds"] = round(start_seconds, 3)  # part of wall_seconds
    if manifest is not None:
        stats["tokens"] = token_stats(manifest)
    io.write_json_atomic(io.join(job_dir, "stats.json"), stats)
    events.emit("job_done", documents=stats["documents"]["out"], seconds=stats["wall_seconds"])
    return RunResult(job_dir, stats, len(shards) - len(todo), finished)


def _stats(recipe: Recipe, writer: JobWriter, shards: list[Any], seconds: float, skipped: int,
           corpus: dict[str, dict[str, Any]]) -> dict[str, Any]:
    totals = {**writer.totals(), **corpus}
    read = totals["read"]
    out = sum(r["documents"] for r in writer.done.values())
    out -= sum(sum(c["dropped"].values()) for c in corpus.values())
    return {
        "job": recipe.name,
        "recipe_hash": recipe.fingerprint(),
        "seed": recipe.seed,
        "wall_seconds": round(seconds, 3),
        "shards": {"total": len(shards), "done": len(writer.done), "skipped_already_done": skipped},
        "documents": {
            "records_read": read["docs_in"],
            "in": read["docs_out"],
            "out": out,
        },
        "stages": funnel(totals),
        "versions": versions(),
    }
