"""Run document stages over batches that also carry earlier drops: the executor-independent part of a run.

`run_stage` runs one stage over a batch; `run_shard` reads one input shard and runs every stage over
its batches (what each shard's task of an executor does, and what a small run without one does).

Rows already dropped pass through unchanged and uncounted. Rows of sources the stage is not
`only` for, and rows the stage does not judge (`Stage.applies`: pages only, some languages only)
pass by unchanged too, each counted once in a `bypassed:<why>` tally of the stage, so that what
leaves a stage (kept plus bypassed) is what reaches the next. The stage's drops are marked with
stage, reason and detail; each processed row gets its share of the stage's seconds and its bytes
in and out, so the writer can count everything per shard.
Dropped rows that will not be sampled into `rejects/` lose their text here, so they cost
nothing further downstream.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation import schema
from curation.readers import read_shard
from curation.stages.base import Processed, Stage

if TYPE_CHECKING:
    from curation.recipe import Source
    from curation.shards import Shard

STAGE_ERROR = "stage_error"  # the reason of a row on which a stage raised
BYPASSED = "bypassed"  # count key prefix of rows that went by a stage unjudged: `bypassed:<why>`
ONLY = "only"  # why: the row's source is not in the stage's `only:`


def sampled(ids: pa.Array, rate: float) -> np.ndarray:
    """Deterministic sample of ids (hex digests): the same documents at every rerun."""
    if rate >= 1.0:
        return np.ones(len(ids), dtype=bool)
    if rate <= 0.0:
        return np.zeros(len(ids), dtype=bool)
    prefix = pc.utf8_slice_codeunits(ids, 0, 8).to_pylist()
    return np.array([int(p, 16) < rate * 0xFFFFFFFF for p in prefix], dtype=bool)


def text_bytes(table: pa.Table) -> np.ndarray:
    for column in ("html", "text"):
        if column in table.column_names:
            lengths = pc.binary_length(table.column(column))
            if column == "html" and "text" in table.column_names:
                lengths = pc.if_else(lengths.is_null(), pc.binary_length(table.column("text")), lengths)
            return pc.fill_null(lengths, 0).to_numpy(zero_copy_only=False)
    return np.zeros(table.num_rows, dtype=np.int64)


def _with_columns(table: pa.Table, fields: dict[str, pa.DataType]) -> pa.Table:
    for name, dtype in fields.items():
        if name not in table.column_names:
            table = table.append_column(pa.field(name, dtype), pa.nulls(table.num_rows, dtype))
    return table


def run_stage(
    stage: Stage, batch: pa.Table, *, name: str | None = None, rejects_sample: float = 1.0
) -> pa.Table:
    """The batch after `stage` (set up first if it is not yet): kept rows transformed, new drops marked, metric
    columns added."""
    name = name or stage.name
    stage.ready()
    active, bypassed = _judged(stage, batch)
    metrics = {
        schema.metric_column("sec", name): pa.float64(),
        schema.metric_column("bin", name): pa.int64(),
        schema.metric_column("bout", name): pa.int64(),
    }
    # Stages declare the columns they add; every batch gets them (null where not computed) so that
    # all batches of a job share one schema whatever mix of rows they hold.
    counts = {schema.count_column(name, key): pa.int64() for key in stage.count_keys}
    passed = {bypass_column(name, why): pa.int64() for why in bypass_reasons(stage)}
    added = {**stage.added(), **metrics, **counts, **passed}
    todo, rest = _split(stage, batch, active)
    todo = without_earlier_columns(stage, todo)
    if todo.num_rows == 0:
        return _drop_html_if(stage, _mark_bypassed(_with_columns(batch, added), name, bypassed))

    started = time.perf_counter()
    result = process_isolated(stage, todo)
    seconds = time.perf_counter() - started

    out = result.table
    n = out.num_rows
    dropped = pc.is_valid(result.reasons).to_numpy(zero_copy_only=False)
    out = out.set_column(out.schema.get_field_index(schema.STAGE), schema.STAGE,
                         pa.array(np.where(dropped, name, None), pa.string()))
    out = out.set_column(out.schema.get_field_index(schema.REASON), schema.REASON, result.reasons.cast(pa.string()))
    details = result.details if result.details is not None else pa.nulls(n, pa.string())
    out = out.set_column(out.schema.get_field_index(schema.DETAIL), schema.DETAIL, details.cast(pa.string()))
    out = _with_columns(out, stage.added())
    out_bytes = np.where(dropped, 0, text_bytes(out))
    out = out.append_column(schema.metric_column("sec", name), pa.array(np.full(n, seconds / n)))
    out = out.append_column(schema.metric_column("bin", name), pa.array(text_bytes(todo), pa.int64()))
    out = out.append_column(schema.metric_column("bout", name), pa.array(out_bytes, pa.int64()))
    for key in stage.count_keys:
        values = (result.counts or {}).get(key)
        column = pa.array(values if values is not None else np.zeros(n, np.int64), pa.int64())
        out = out.append_column(schema.count_column(name, key), column)
    out = _with_columns(out, passed)

    forget = dropped & ~sampled(out.column("id"), rejects_sample)
    if forget.any():
        keep_text = pa.array(~forget)
        for column in ("text", "html"):
            if column in out.column_names:
                col = out.column(column)
                out = out.set_column(out.schema.get_field_index(column), column,
                                     pc.if_else(keep_text, col, pa.nulls(n, col.type)))

    passing = pc.invert(active)
    went_by = {why: mask.filter(passing) for why, mask in bypassed.items()}
    rest = _mark_bypassed(_with_columns(rest, added), name, went_by)
    rest = _drop_html_if(stage, rest)
    return pa.concat_tables([out, rest.select(out.column_names)], promote_options="permissive")


def bypass_reasons(stage: Stage) -> list[str]:
    """Why rows may go by `stage` unjudged: the same for every batch, so that every batch gets the same
    tally columns."""
    reasons = [ONLY] if stage.params.only is not None else []
    if type(stage).applies is not Stage.applies:
        reasons.append(stage.bypass_reason)
    return reasons


def bypass_column(stage: str, why: str) -> str:
    """The tally column of rows that went by `stage` for reason `why` (summed into its `counts` by the writer,
    shown as `bypassed` in stats.json)."""
    return schema.count_column(stage, f"{BYPASSED}:{why}")


def _judged(stage: Stage, batch: pa.Table) -> tuple[pa.ChunkedArray, dict[str, pa.ChunkedArray]]:
    """Which rows of `batch` `stage` judges, and per reason the live rows it lets by unjudged (a row is
    counted under the first reason only)."""
    active = pc.is_null(batch.column(schema.REASON))
    bypassed = {}
    only = stage.params.only
    if only is not None:
        ours = pc.fill_null(pc.is_in(batch.column("source"), pa.array(only, pa.string())), False)
        bypassed[ONLY] = pc.and_(active, pc.invert(ours))
        active = pc.and_(active, ours)
    handles = stage.applies(batch)
    if handles is not None:
        handles = pc.fill_null(handles, False)
        bypassed[stage.bypass_reason] = pc.and_(active, pc.invert(handles))
        active = pc.and_(active, handles)
    return active, bypassed


def _mark_bypassed(rows: pa.Table, name: str, bypassed: dict[str, pa.ChunkedArray]) -> pa.Table:
    """`rows` (those the stage did not process, with its tally columns in place: every batch has them in the
    same order) with a 1 in its tally of each reason a row went by for."""
    for why, mask in bypassed.items():
        column = bypass_column(name, why)
        rows = rows.set_column(rows.schema.get_field_index(column), column,
                               pc.if_else(mask, pa.scalar(1, pa.int64()), pa.scalar(None, pa.int64())))
    return rows


def _split(stage: Stage, batch: pa.Table, active: pa.ChunkedArray) -> tuple[pa.Table, pa.Table]:
    """(the rows `stage` handles, the others), copying as little of the raw pages as it can: a filter copies
    a binary column's bytes, and a batch of pages is megabytes (two filters copying every page of each
    batch took ~7% of the fast engine's time in one process on the FineWeb-like recipe)."""
    if pc.all(active, skip_nulls=False).as_py():
        return batch, batch.slice(0, 0)
    # rows a stage that turns pages into text passes by lose their page after it anyway
    return batch.filter(active), _drop_html_if(stage, batch).filter(pc.invert(active))


def without_earlier_columns(stage: Stage, rows: pa.Table) -> pa.Table:
    """`rows` without the columns `stage` adds (not the document's own, which stages rewrite in place) that a stage
    of the same kind added earlier (another source's langid): computed anew for the rows judged here."""
    return rows.drop_columns([c for c in stage.output_columns if c in rows.column_names
                              and c not in schema.READ_SCHEMA.names])


def process_isolated(stage: Stage, rows: pa.Table) -> Processed:
    """`stage.process(rows)`, except that a row on which the stage raises becomes a drop with reason
    `stage_error` (its exception as detail) instead of failing the batch and the job. On an error
    the rows are split in halves until each failing row is alone, so a batch with k poisoned rows
    costs O(k log n) extra calls and every other row is processed normally."""
    try:
        return stage.process(rows)
    except Exception as exc:  # any error of the stage's own code: the rows are the culprit
        if rows.num_rows <= 1:
            detail = f"{type(exc).__name__}: {exc}"[:500]
            return Processed(rows, pa.array([STAGE_ERROR] * rows.num_rows, pa.string()),
                             pa.array([detail] * rows.num_rows, pa.string()))
    half = rows.num_rows // 2
    parts = [process_isolated(stage, rows.slice(0, half)), process_isolated(stage, rows.slice(half))]
    counts = {key: np.concatenate([(p.counts or {}).get(key, np.zeros(p.table.num_rows, np.int64)) for p in parts])
              for key in stage.count_keys}
    return Processed(
        pa.concat_tables([p.table for p in parts], promote_options="permissive"),
        pa.concat_arrays([p.reasons.cast(pa.string()) for p in parts]),
        pa.concat_arrays([(p.details if p.details is not None else pa.nulls(p.table.num_rows, pa.string()))
                          .cast(pa.string()) for p in parts]),
        counts or None,
    )


def _drop_html_if(stage: Stage, table: pa.Table) -> pa.Table:
    """Once a stage has turned html into text, no later row needs the html bytes."""
    if "html" in stage.input_columns and "text" in stage.output_columns and "html" in table.column_names:
        return table.drop_columns(["html"])
    return table


PAGE_BATCH_BYTES = 4 << 20  # raw pages per batch of the page stages (their decoded copies come on top)


def run_shard(shard: Shard, source: Source, stages: list[tuple[str, Stage]], *, batch_rows: int,
              rejects_sample: float) -> Iterator[pa.Table]:
    """One shard's batches after every document stage, the end-of-shard marker in the last; raises
    `InputReadError` (after the batches made until then) where its input cannot be read to its end.

    Raw pages are large (~140 kB each, decoded copies on top) and the text extracted from them small: the
    page stages (language ID on HTML, extraction) take batches of at most `PAGE_BATCH_BYTES` of pages,
    whose outputs are joined into batches of `batch_rows` for the text stages, whose cost per batch is
    what small batches would multiply. On the FineWeb-like recipe this lowers a worker's peak by ~30 MB.
    """
    pages = _page_stages(stages)
    extracted: list[pa.Table] = []
    for batch in read_shard(source.reader(), shard.uri, source=source.name, shard=shard.name, key=shard.key,
                            batch_rows=batch_rows, listed=True,
                            **({"max_batch_bytes": PAGE_BATCH_BYTES} if pages else {})):
        extracted.append(_run(stages[:pages], batch, rejects_sample))
        if sum(t.num_rows for t in extracted) >= batch_rows:
            yield _joined(stages[pages:], extracted, rejects_sample)
            extracted = []
    if extracted:  # the end-of-shard marker is in the last one
        yield _joined(stages[pages:], extracted, rejects_sample)


def _page_stages(stages: list[tuple[str, Stage]]) -> int:
    """How many leading stages read raw pages: up to the last one that takes `html`."""
    return max((i + 1 for i, (_, stage) in enumerate(stages) if "html" in stage.input_columns), default=0)


def _run(stages: list[tuple[str, Stage]], batch: pa.Table, rejects_sample: float) -> pa.Table:
    """`batch` after `stages`, less raw pages: nothing after them keeps those (documents and rejects hold text)."""
    for name, stage in stages:
        batch = run_stage(stage, batch, name=name, rejects_sample=rejects_sample)
    return batch.drop_columns(["html"]) if "html" in batch.column_names else batch


def _joined(stages: list[tuple[str, Stage]], batches: list[pa.Table], rejects_sample: float) -> pa.Table:
    """The text stages on the page stages' outputs, joined; one chunk per column, as shipped (each stage's split
    and concatenation leave ~5 chunks, each deserialized apart)."""
    return _run(stages, pa.concat_tables(batches), rejects_sample).combine_chunks()
