"""A recipe as tasks: one task per input shard runs every document stage on its batches.

Fusing the stages into the shard's task keeps a batch in one process from its WARC record to the
driver: no copy between stages, no pool of stage actors holding CPUs that reading needs, and as
many extractions at once as there are CPUs. A stage's `setup` (a model load) runs once per worker
process, which reuses the stage for every later batch and task there, as an actor would. Each task
is a generator: its batches reach the driver (and the job folder) as they are made; a shard whose
input cannot be read (after the reader's retries) ends with an `ItemFailed` instead, and the others
go on. On Ray, plain tasks rather than a Ray Data read: Ray Data adds nothing to a plan of
independent shard tasks but its two coordinator actors (~2.6 CPU-s and ~260 MB a job, measured on
the FineWeb recipe). The plan never looks inside a stage: only at its declared resources.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from curation.apply import run_stage
from curation.corpus import CorpusStage
from curation.readers import read_shard
from curation.readers.base import InputReadError
from curation.recipe import CORPUS_STAGES, Recipe, Source
from curation.shards import Shard
from curation.stages import STAGES, Stage
from pipelines.allocator import lean_allocator
from pipelines.executor import Executor, ItemFailed

_READY: dict[str, Stage] = {}  # per worker process: a stage is set up once and reused by later tasks


def _ready(name: str, stage: Stage) -> Stage:
    key = f"{type(stage).__module__}.{type(stage).__qualname__}:{name}:{stage.params.model_dump_json()}"
    if key not in _READY:
        stage.setup()
        _READY[key] = stage
    return _READY[key]


PAGE_BATCH_BYTES = 4 << 20  # raw pages per batch of the page stages (their decoded copies come on top)


def _page_stages(stages: list[tuple[str, Stage]]) -> int:
    """How many leading stages read raw pages: up to the last one that takes `html`."""
    return max((i + 1 for i, (_, stage) in enumerate(stages) if "html" in stage.input_columns), default=0)


def shard_batches(work: tuple[Shard, Source], batch_rows: int, stages: list[tuple[str, Stage]],
                  rejects_sample: float) -> Iterator[pa.Table | ItemFailed]:
    """One shard's batches after every document stage (a task of its own), or, where its input cannot be
    read to its end, the batches already made and then `ItemFailed` (the caller discards those).

    Raw pages are large (~140 kB each, decoded copies on top) and the text extracted from them small: the
    page stages (language ID on HTML, extraction) take batches of at most `PAGE_BATCH_BYTES` of pages,
    whose outputs are joined into batches of `batch_rows` for the text stages, whose cost per batch is
    what small batches would multiply. On the FineWeb-like recipe this lowers a worker's peak by ~30 MB.
    """
    lean_allocator()  # in every worker process, whichever executor started it
    shard, source = work
    ready = [(name, _ready(name, stage)) for name, stage in stages]
    try:
        yield from _shard_batches(shard, source, batch_rows, ready, rejects_sample)
    except InputReadError as exc:  # the storage's fault, not the content's: the shard fails, not the run
        yield ItemFailed(shard.name, f"{type(exc).__name__}: {exc}")


def _shard_batches(shard: Shard, source: Source, batch_rows: int, ready: list[tuple[str, Stage]],
                   rejects_sample: float) -> Iterator[pa.Table]:
    pages = _page_stages(ready)
    extracted: list[pa.Table] = []
    for batch in read_shard(source.reader(), shard.uri, source=source.name, shard=shard.name, batch_rows=batch_rows,
                            **({"max_batch_bytes": PAGE_BATCH_BYTES} if pages else {})):
        extracted.append(_run(ready[:pages], batch, rejects_sample))
        if sum(t.num_rows for t in extracted) >= batch_rows:
            yield _joined(ready[pages:], extracted, rejects_sample)
            extracted = []
    if extracted:  # the end-of-shard marker is in the last one
        yield _joined(ready[pages:], extracted, rejects_sample)


def _run(stages: list[tuple[str, Stage]], batch: pa.Table, rejects_sample: float) -> pa.Table:
    """`batch` after `stages`, less raw pages: nothing after them keeps those (documents and rejects hold text)."""
    for name, stage in stages:
        batch = run_stage(stage, batch, name=name, rejects_sample=rejects_sample)
    return batch.drop_columns(["html"]) if "html" in batch.column_names else batch


def _joined(stages: list[tuple[str, Stage]], batches: list[pa.Table], rejects_sample: float) -> pa.Table:
    """The text stages on the page stages' outputs, joined; one chunk per column, as shipped (each stage's split
    and concatenation leave ~5 chunks, each deserialized apart)."""
    return _run(stages, pa.concat_tables(batches), rejects_sample).combine_chunks()


def recipe_stages(recipe: Recipe) -> list[tuple[str, Stage]]:
    """Document stages as (unique name, stage) in recipe order; set up where they run, not here."""
    return [(name, STAGES[kind].from_params(params)) for name, kind, params in recipe.stage_specs() if kind in STAGES]


def recipe_corpus_stages(recipe: Recipe) -> list[tuple[str, CorpusStage]]:
    """Corpus stages (deduplication) as (unique name, stage), which run after all document stages."""
    return [(name, CORPUS_STAGES[kind].from_params(params))
            for name, kind, params in recipe.stage_specs() if kind in CORPUS_STAGES]


def stream(recipe: Recipe, shards: list[Shard], stages: list[tuple[str, Stage]], executor: Executor, *,
           read_batch_rows: int = 128) -> Iterator[pa.Table | ItemFailed]:
    """Every shard's batches after the document stages, in the order they are made (shards mixed), and an
    `ItemFailed` for each shard whose input could not be read."""
    need = max([s.resources.cpus for _, s in stages], default=1.0)  # the most demanding stage's CPUs
    # Largest first: a large shard started last would keep one CPU busy while the others idle.
    sources = {s.name: s for s in recipe.sources}
    todo = [(shard, sources[shard.source]) for shard in sorted(shards, key=lambda shard: -shard.size)]
    return executor.stream(shard_batches, todo, read_batch_rows, stages, recipe.rejects.sample, cpus=need)
