"""`curate run`: validate, start the executor (or join Ray), stream the plan into the job folder, summarise."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pyarrow as pa
import yaml

import curation
from curation import storage
from curation.dedup.corpus_stage import CorpusStage
from curation.job import (
    DOCUMENTS,
    RECIPE_HASH_LINE,
    REJECTS,
    WORK_DOCUMENTS,
    WORKDIR_LINE,
    EventLog,
    JobFolderError,
    JobWriter,
    claim_job_folder,
    document_files,
    finalized,
    funnel,
    job_folder_lock,
)
from curation.progress import LiveProgress
from curation.recipe import Recipe
from curation.shards import Shard, changed_inputs, changed_while_read, input_fingerprint, list_shards
from curation.stages import Stage
from curation.stages.build import build_corpus_stages, build_stages
from pipelines import plan
from pipelines.allocator import lean_allocator
from pipelines.console import Progress
from pipelines.dedup.corpus_stages import EarlySignatures, run_corpus_stages
from pipelines.executors import Executor, ItemFailed, start_executor
from pipelines.tokens import is_packed, pack_job, token_stats

VERSIONED = ("curation", "ray", "pyarrow", "trafilatura", "resiliparse", "fastwarc", "pydantic")


@functools.cache  # metadata lookups cost ~30 ms a call; a run asks four times
@functools.cache
def code_fingerprint() -> str:
    """A hash of this installation's `curation` and `pipelines` sources: the package version stays 0.1.0 from one
    commit to the next, so a job resumed after the code changed is told by this (`_open_job`)."""
    digest = hashlib.blake2b(digest_size=6)
    for package in (Path(curation.__file__).parent, Path(__file__).parent):
        for path in sorted(package.rglob("*.py")):
            digest.update(path.relative_to(package.parent).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "curation_code": code_fingerprint()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _codes_of_earlier_runs(job_dir: str) -> set[str]:
    """The `curation_code` each earlier start of the job recorded (`events.jsonl`; starts before it was recorded,
    none)."""
    uri = storage.join(job_dir, "events.jsonl")
    codes: set[str] = set()
    if not storage.exists(uri):
        return codes
    for line in storage.read_bytes(uri).decode("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError, AttributeError):
            event = json.loads(line)
            if event.get("event") == "job_started" and (code := (event.get("versions") or {}).get("curation_code")):
                codes.add(code)
    return codes


def recipe_as_run(recipe: Recipe) -> str:
    header = [
        "# recipe as run by curate; the comments record where and with what",
        f"{RECIPE_HASH_LINE}{recipe.fingerprint()}",
        f"{WORKDIR_LINE}{Path.cwd()}",
    ]
    header += [f"# {name}: {version}" for name, version in versions().items()]
    body = yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    return "\n".join(header) + "\n" + body


class ShardsFailed(RuntimeError):
    """Shards whose input could not be read (after the reader's retries): the others are done and recorded,
    the job ends `failed` before its corpus stages and packing, and a rerun reads these again."""

    def __init__(self, failed: dict[str, str], *, done: int, total: int) -> None:
        self.failed = failed
        names = "; ".join(f"{shard} ({error})" for shard, error in sorted(failed.items()))
        super().__init__(f"{len(failed)} of {total} shards could not be read: {names}; {done} shards are done "
                         "and kept: run it again to read the others")


class Interrupted(KeyboardInterrupt):
    """A signal asked the run to stop (SIGTERM, as SIGINT raises KeyboardInterrupt): the job ends `interrupted`
    with what is done kept, and a rerun resumes it."""

    def __init__(self, signum: int) -> None:
        self.signum = signal.Signals(signum)
        super().__init__(self.signum.name)


_received: list[signal.Signals] = []  # what `interrupted_by_sigterm` turned into `Interrupted`


def interruption(exc: KeyboardInterrupt) -> signal.Signals:
    """The signal behind an interrupt: Ray's waits turn whatever a signal handler raised into a plain
    KeyboardInterrupt, so the one `interrupted_by_sigterm` received counts first."""
    if isinstance(exc, Interrupted):
        return exc.signum
    return _received[-1] if _received else signal.SIGINT


@contextlib.contextmanager
def interrupted_by_sigterm() -> Iterator[None]:
    """While the block runs, SIGTERM raises `Interrupted` in this (the main) thread, as SIGINT raises
    KeyboardInterrupt, so the run stops its workers and says how it ended; a second one ends the process."""

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signum, signal.SIG_DFL)  # cleaning up must not be interrupted again: a second one kills
        _received.append(signal.Signals(signum))
        raise Interrupted(signum)

    _received.clear()
    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


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
    kind: str | None = None,
) -> RunResult:
    """Run a validated recipe to completion; `stages` replaces the recipe's (tests, custom stages),
    `kind` the recipe's executor (ray, local)."""
    lean_allocator()  # this process writes every batch (and in-process, makes them)
    job_dir = recipe.job_dir(output)
    claim_job_folder(job_dir, recipe.fingerprint())  # before the lock: a folder not this job's gets no `_lock`
    with job_folder_lock(job_dir):
        return _run(recipe, job_dir, address=address, quiet=quiet, stages=stages, kind=kind)


def _run(recipe: Recipe, job_dir: str, *, address: str | None, quiet: bool, stages: list[tuple[str, Stage]] | None,
         kind: str | None) -> RunResult:
    stages = build_stages(recipe) if stages is None else stages
    corpus_stages = build_corpus_stages(recipe)
    job, todo = _open_job(recipe, job_dir, [name for name, _ in stages], corpus_stages, quiet=quiet)
    started = time.time()
    live = LiveProgress(job_dir, job.writer)  # the status service's live counters (`_progress.json`)
    corpus_counters: dict[str, dict[str, Any]] = {}
    # a manifest whose shards are lost or cut is packing to do again, with an executor (it was started for none)
    packing = recipe.pack is not None and not is_packed(job_dir)
    executor: Executor | None = None
    manifest = None
    try:
        start = time.time()
        executor = start_executor(recipe, address, kind) if todo or corpus_stages or packing else None
        start_seconds = time.time() - start
        early = EarlySignatures(job_dir, corpus_stages, executor) if executor else None
        into = _Outputs(job.writer, job.events, job.progress, live, early, {s.name: s for s in todo})
        if todo:
            _run_document_stages(job, todo, stages, executor, into)
        _check_every_shard_arrived(job, into)
        if corpus_stages or recipe.pack is not None:
            job.writer.record_inputs_used([s.name for s in job.shards])
        if corpus_stages:
            corpus_counters = _run_corpus_stages(job, corpus_stages, executor, into.early)
        if recipe.pack is not None:
            manifest = _pack(job, executor)
    except BaseException as exc:
        # stopped at once on an interrupt, and on a failed write (a full disk): its other tasks would go on writing
        # temporary files after the folder was cleared of them
        if executor is not None and isinstance(exc, KeyboardInterrupt | SystemExit | OSError):
            executor.abort()
            executor = None
        _record_failure(job, exc)
        raise
    finally:
        if executor is not None:
            executor.close()
    stats = _stats(recipe, job.writer, job.shards, time.time() - started, len(job.shards) - len(todo), corpus_counters)
    stats["executor"] = kind or recipe.executor
    stats["executor_start_seconds"] = round(start_seconds, 3)  # part of wall_seconds
    if manifest is not None:
        stats["tokens"] = token_stats(manifest)
    for folder in (DOCUMENTS, REJECTS):  # the summary names them: there, empty, where nothing was kept or dropped
        fs, path = storage.resolve(storage.join(job_dir, folder))
        fs.create_dir(path, recursive=True)
    storage.write_json_atomic(storage.join(job_dir, "stats.json"), stats)
    job.events.emit("job_done", documents=stats["documents"]["out"], seconds=stats["wall_seconds"])
    return RunResult(job_dir, stats, len(job.shards) - len(todo), into.finished)


@dataclass
class _Job:
    """What the steps of a run share: the recipe, its job folder and what reports on it."""

    recipe: Recipe
    dir: str
    shards: list[Shard]
    writer: JobWriter
    events: EventLog
    progress: Progress


def _open_job(recipe: Recipe, job_dir: str, stage_names: list[str], corpus_stages: list[tuple[str, CorpusStage]], *,
              quiet: bool) -> tuple[_Job, list[Shard]]:
    """The job folder resumed (shards recorded as done and whose input has not changed stay done), the recipe
    written beside it, the start told; and the shards still to run."""
    shards = list_shards(recipe)
    writer = JobWriter(job_dir, stage_names, rejects_sample=recipe.rejects.sample,
                       rejects_max_per_reason=recipe.rejects.max_per_reason,
                       documents=WORK_DOCUMENTS if corpus_stages else DOCUMENTS, recipe_hash=recipe.fingerprint())
    done = writer.resume()
    changed = changed_inputs(shards, done) | writer.damaged
    if changed:  # documents of the old file would stay beside the new file's: read those shards again
        writer.forget(changed)
    todo = [s for s in shards if s.name not in done]
    # a file added once the job's documents went into dedup or packing would miss them (a shard of theirs whose
    # record alone was lost is read again: its documents come out the same)
    used = writer.inputs_used()
    writer.refuse_after_later_steps({s.name: f"{s.uri} was added" for s in todo if used is None or s.name not in used})
    writer.inputs = {s.name: input_fingerprint(s) for s in todo}
    storage.write_bytes_atomic(storage.join(job_dir, "recipe.yaml"), recipe_as_run(recipe).encode())
    events = EventLog(job_dir)
    if len(todo) < len(shards) and (before := _codes_of_earlier_runs(job_dir) - {code_fingerprint()}):
        # the done shards stay as the earlier code wrote them, on every rerun: said, not refused (an upgrade may be
        # meant)
        earlier = ", ".join(sorted(before))
        events.emit("code_changed", before=earlier, now=code_fingerprint())
        if not quiet:
            print(f"warning: {job_dir} was begun by other code (curation sources {earlier}, now "
                  f"{code_fingerprint()}): its {len(shards) - len(todo)} done shards are kept as that code wrote "
                  "them; remove the folder (or give another `output`) to run every shard with this code",
                  file=sys.stderr)
    # the records of the shards done before: a resumed job's mean rate is of what this run reads
    already_read = sum(((record.get("counters") or {}).get("read") or {}).get("docs_in", 0)
                       for record in writer.done.values())
    events.emit("job_started", shards=len(shards), already_done=len(shards) - len(todo), versions=versions(),
                records_already_read=already_read,
                **({"inputs_changed": changed} if changed else {}))
    progress = Progress(total_shards=len(shards), done_shards=len(shards) - len(todo), enabled=not quiet)
    return _Job(recipe, job_dir, shards, writer, events, progress), todo


def _run_document_stages(job: _Job, todo: list[Shard], stages: list[tuple[str, Stage]], executor: Executor | None,
                         into: _Outputs) -> None:
    """Every shard still to do through the document stages, its outputs taken into the job folder as they come."""
    outputs = plan.stream(job.recipe, todo, stages, executor)
    try:
        with job.progress:
            for out in outputs:
                into.take(out)
    except (KeyboardInterrupt, SystemExit):
        executor.abort()  # the workers stop now, not after their shards
        raise
    finally:
        outputs.close()  # its tasks end (or are left) before the executor closes


def _check_every_shard_arrived(job: _Job, into: _Outputs) -> None:
    """Nothing may use the documents of a partial input set: no corpus stage, no packing."""
    if into.failed:
        raise ShardsFailed(into.failed, done=len(job.writer.done), total=len(job.shards))
    if job.writer.incomplete():
        msg = f"rows of these shards never arrived: {', '.join(job.writer.incomplete())}"
        raise RuntimeError(msg)


def _run_corpus_stages(job: _Job, corpus_stages: list[tuple[str, CorpusStage]], executor: Executor | None,
                       early: EarlySignatures | None) -> dict[str, dict[str, Any]]:
    """The corpus stages (deduplication) over all documents of the job; their counters."""
    job.events.emit("corpus_stages_started", stages=[name for name, _ in corpus_stages])
    job.progress.say(f"corpus stages: {', '.join(name for name, _ in corpus_stages)} over all documents")

    def corpus_step_done(step: str, counts: dict[str, Any]) -> None:
        job.events.emit("corpus_step_done", step=step, **counts)
        if "docs_in" in counts:
            job.progress.say(f"  {step}: {counts['docs_in']:,} documents in, {counts['docs_out']:,} kept "
                             f"({counts['seconds']:.1f} s)")

    _refuse_lost_work_documents(job)
    return run_corpus_stages(job.dir, corpus_stages, [s.name for s in job.shards], executor,
                             rejects_sample=job.recipe.rejects.sample,
                             rejects_max_per_reason=job.recipe.rejects.max_per_reason, on_done=corpus_step_done,
                             early=early)


def _refuse_lost_work_documents(job: _Job) -> None:
    """`JobFolderError` where a shard's documents are gone both before the corpus stages (`_work/documents/`) and
    after them (`documents/`): the run skipped it as a shard that kept nothing, and said `done` with its documents
    missing. Its input cannot be read again alone: the corpus stages' results stand on every shard's documents."""
    kept = document_files(job.dir, WORK_DOCUMENTS)
    lost = sorted(name for name, record in job.writer.done.items() if record.get("documents") and name not in kept)
    gone = [name for name in lost if name not in finalized(job.dir, lost)]
    if gone:
        more = f" (and {len(gone) - 1} more shards)" if len(gone) > 1 else ""
        msg = (f"the documents of shard {gone[0]}{more} are gone from {WORK_DOCUMENTS}/ and {DOCUMENTS}/ of "
               f"{job.dir}, and the corpus stages' results stand on them: give `output` (--output) another folder, "
               "or remove this one to start again")
        raise JobFolderError(msg)


def _pack(job: _Job, executor: Executor | None) -> dict[str, Any]:
    """The job's documents tokenized, mixed, packed and shuffled into shards; their manifest."""
    job.events.emit("packing_started")
    job.progress.say("tokens: tokenize, mix, pack and shuffle into shards")
    manifest = pack_job(job.dir, job.recipe, [s.name for s in job.shards], executor, say=job.progress.say,
                        versions=versions())
    job.events.emit("packing_done", **{s: manifest["splits"][s]["tokens"] for s in manifest["splits"]})
    return manifest


def _record_failure(job: _Job, exc: BaseException) -> None:
    """A run that did not finish: no temporary file of a write that failed stays, and its last event says why."""
    if isinstance(exc, OSError):  # the job folder cannot be written (a full disk): no half file stays
        _drop_temporaries(job.writer)
    with contextlib.suppress(OSError):  # the same full disk may refuse the last event too
        _ended(job.events, exc, len(job.writer.done))


@dataclass
class _Outputs:
    """Where the document stages' outputs go as they arrive: the job folder, its events and the progress shown."""

    writer: JobWriter
    events: EventLog
    progress: Progress
    live: LiveProgress
    early: EarlySignatures | None
    shards: dict[str, Shard] = field(default_factory=dict)  # those read: their inputs are checked as each is done
    finished: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # shard -> why its input could not be read

    def take(self, out: pa.Table | ItemFailed) -> None:
        if isinstance(out, ItemFailed):  # what arrived of it is dropped; the other shards go on
            self.writer.discard(out.item)
            self._failed(out.item, out.error)
            return
        completed = []
        for name in self.writer.add(out):
            shard = self.shards.get(name)
            if shard is not None and (how := changed_while_read(shard, self.writer.inputs.get(name))) is not None:
                self.writer.forget({name: how})  # part of one version of the file: undone, read again by a rerun
                self._failed(name, f"its input changed while it was read: {how}")
                continue
            completed.append(name)
            self.events.emit("shard_done", shard=name, documents=self.writer.done[name]["documents"])
            if self.early is not None:
                self.early.start(name)
        self.finished += completed
        self.progress.update(out, len(completed))
        self.live.update(force=bool(completed))

    def _failed(self, shard: str, error: str) -> None:
        self.failed[shard] = error
        self.events.emit("shard_failed", shard=shard, error=error)
        self.progress.say(f"shard {shard} failed: {error}")
        self.live.update(force=True)


def storage_error(exc: OSError, job_dir: str) -> str:
    """One line for a failed write: the path (the job folder where the error names none) and the cause (pyarrow's
    errors carry the errno in their text only)."""
    found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
    number = exc.errno or (int(found.group(1)) if found else None)
    cause = os.strerror(number) if number else (str(exc).splitlines() or [type(exc).__name__])[0]
    return f"{exc.filename or job_dir}: {cause}"


def _drop_temporaries(writer: JobWriter) -> None:
    """Remove the temporary files of the shards still open and any other `*.tmp` of the job folder, as far
    as the storage lets."""
    for name in writer.incomplete():
        with contextlib.suppress(OSError):
            writer.discard(name)
    with contextlib.suppress(OSError):
        storage.remove_temporaries(writer.dir)


def _ended(events: EventLog, exc: BaseException, shards_done: int) -> None:
    """The last event of a run that did not finish: interrupted (a signal: resumable as is) or failed."""
    if isinstance(exc, KeyboardInterrupt):
        events.emit("job_interrupted", signal=interruption(exc).name, shards_done=shards_done)
        return
    failed = {"failed_shards": exc.failed} if isinstance(exc, ShardsFailed) else {}
    events.emit("job_failed", error=f"{type(exc).__name__}: {exc}", shards_done=shards_done, **failed)


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
