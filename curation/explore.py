"""Looking inside a job folder from a notebook: what each stage dropped and why, dedup clusters, loss spikes.

`job` is a job folder path everywhere. Functions return pandas DataFrames (pandas is imported only
when they are called); the `*_table`/`*_page` helpers return Arrow or plain Python and serve the
status service too. `explain` runs one document through a recipe's document stages and shows each
decision with the scores behind it.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from curation import schema
from curation.dedup.bloom_dedup import BloomDedup
from curation.job import (
    DOCUMENTS,
    RECIPE,
    REJECTS,
    WORK_DOCUMENTS,
    WORKDIR_LINE,
    document_files,
    recorded_shards,
)
from curation.lang.codes import language_tag
from curation.progress import JobFolder, list_jobs

if TYPE_CHECKING:
    import pandas as pd

    from curation.recipe import Recipe
    from curation.stages import Stage

REMOVED = "_work/removed"
LOOKUP_FILES = 256  # documents files opened at once by `lookup`
# How files are opened: `pin(paths)` gives, for the block, the names to read them by (the service's check what
# it opened and leave out what it must not read; see `ServedJob`). By default the paths themselves.
Pin = Callable[[list[Path]], AbstractContextManager[list[Path]]]
_SURVIVOR = re.compile(r"^kept (\S+)(?: \(cluster (\S+)\))?")
_PARTITION = re.compile(r"^(stage|reason)=(.+)$")


# -- Arrow level (also used by the service) ---------------------------------------------------------


def reject_files(job: str | Path) -> dict[str, dict[str, list[Path]]]:
    """{stage: {reason: [parquet files]}} found under `rejects/`, names taken from the folders only; only
    the files of shards `_shards/` records as done (`recorded_shards`), like `document_files`."""
    root = Path(job) / REJECTS
    out: dict[str, dict[str, list[Path]]] = {}
    if not root.is_dir():
        return out
    shards = recorded_shards(job)
    for stage_dir in sorted(root.iterdir()):
        stage = _PARTITION.match(stage_dir.name)
        if not stage or stage.group(1) != "stage" or not stage_dir.is_dir():
            continue
        for reason_dir in sorted(stage_dir.iterdir()):
            reason = _PARTITION.match(reason_dir.name)
            if reason and reason.group(1) == "reason" and reason_dir.is_dir():
                files = sorted(p for p in reason_dir.iterdir() if p.suffix == ".parquet" and not p.is_symlink()
                               and (shards is None or p.stem in shards))
                if files:
                    out.setdefault(stage.group(2), {})[reason.group(2)] = files
    return out


def rows_in(files: Iterable[Path]) -> list[int]:
    """Row count of each Parquet file, from its footer only (0 for a file that is no Parquet: emptied or cut)."""
    return [footer.num_rows if (footer := _footer(f)) else 0 for f in files]


def _footer(file: Path) -> pq.FileMetaData | None:
    """A Parquet file's footer; None where the file is none (a job folder's file emptied or cut by hand or by a
    full disk: the rest of the folder stays readable)."""
    try:
        return pq.read_metadata(file)
    except (pa.ArrowInvalid, OSError):
        return None


class UnreadableFile(ValueError):
    """A job folder's Parquet file that is cut or damaged (by hand, a full disk): a rerun of the job writes it again."""


def _readable(files: Iterable[Path]) -> list[Path]:
    """The files that are Parquet files; each other one is left out with a warning naming it (the notebook's reader
    sees what the service's pages count: no rows of it)."""
    kept = []
    for f in files:
        if _footer(f) is None:
            warnings.warn(f"{f} is cut or damaged: left out (a rerun of the job writes it again)", stacklevel=3)
        else:
            kept.append(f)
    return kept


def page(files: Iterable[Path], offset: int, limit: int, columns: list[str] | None = None) -> pa.Table:
    """Rows `offset` to `offset + limit` of the files read as one table, in one pass (each file's footer, then
    its rows where the page needs them), reading no file after the page's last."""
    parts, start = [], 0
    for f in files:
        if start >= offset + limit:
            break
        n = footer.num_rows if (footer := _footer(f)) else 0
        lo, hi = max(offset - start, 0), min(offset + limit - start, n)
        if lo < hi:
            table = pq.read_table(f, columns=[c for c in columns or [] if c in pq.read_schema(f).names] or None)
            parts.append(table.slice(lo, hi - lo))
        start += n
    return pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})


def dedup_stages(job: str | Path) -> list[str]:
    """Corpus stages whose removals are in `_work/removed/`."""
    folder = Path(job) / REMOVED
    return sorted(p.stem for p in folder.glob("*.parquet")) if folder.is_dir() else []


def removed_table(job: str | Path, stage: str, *, pin: Pin = contextlib.nullcontext) -> pa.Table:
    """(id, reason, detail, survivor, cluster) of every document `stage` removed."""
    path = Path(job) / REMOVED / f"{stage}.parquet"
    if not path.exists():
        removing = [s for s in dedup_stages(job) if sum(rows_in([Path(job) / REMOVED / f"{s}.parquet"]))]
        msg = f"no removals of corpus stage {stage!r} in {job}: " + (
            f"those that removed documents are {', '.join(removing)}" if removing else "none of its stages removed any")
        raise LookupError(msg)
    with pin([path]) as named:
        columns = ["id", "reason", "detail"]
        try:
            table = pq.read_table(named[0], columns=columns) if named else pa.table({c: pa.array([], pa.string())
                                                                                    for c in columns})
        except (pa.ArrowInvalid, OSError) as exc:
            msg = f"{path} is cut or damaged ({exc}); a rerun of the job writes it again"
            raise UnreadableFile(msg) from exc
    parsed = [_SURVIVOR.match(d or "") for d in table.column("detail").to_pylist()]
    survivors = pa.array([m.group(1) if m else None for m in parsed], pa.string())
    clusters = pa.array([m.group(2) if m else None for m in parsed], pa.string())
    return table.append_column("survivor", survivors).append_column("cluster", clusters)


def cluster_table(job: str | Path, stage: str, *, pin: Pin = contextlib.nullcontext) -> list[dict[str, Any]]:
    """One entry per survivor, its removed copies listed; largest clusters first, then by survivor id."""
    table = removed_table(job, stage, pin=pin)
    groups: dict[str, dict[str, Any]] = {}
    for row in table.to_pylist():
        key = row["survivor"] or row["id"]  # removals without a survivor (paragraph dedup) stand alone
        group = groups.setdefault(key, {"survivor": row["survivor"], "cluster": row["cluster"], "removed": []})
        group["removed"].append({"id": row["id"], "reason": row["reason"], "detail": row["detail"]})
    return sorted(groups.values(), key=lambda g: (-len(g["removed"]), g["survivor"] or ""))


def lookup(job: str | Path, ids: list[str] | str, columns: tuple[str, ...] = ("id", "source", "url", "title", "text"),
           *, before_corpus: bool = True, in_rejects: bool = True,
           pin: Pin = contextlib.nullcontext) -> dict[str, dict[str, Any]]:
    """Documents by id (one id or a list): as they were before corpus stages (dedup removed ones are only there), or
    `before_corpus=False`: as finally written, falling back to the earlier copy; then, with `in_rejects`, the sampled
    rejects of the ids not found (with their `stage`, `reason` and `detail`). An id found nowhere is not in the
    answer."""
    ids = [ids] if isinstance(ids, str) else list(ids)
    folders = [WORK_DOCUMENTS, DOCUMENTS]
    found: dict[str, dict[str, Any]] = {}
    for folder in folders if before_corpus else folders[::-1]:
        _find(list(document_files(job, folder).values()), ids, columns, found, pin)
    for stage, by in reject_files(job).items() if in_rejects else ():
        for reason, files in by.items():
            before = set(found)
            _find(files, ids, (*columns, "detail"), found, pin)
            for new in set(found) - before:
                found[new] |= {"stage": stage, "reason": reason}
    return found


def _find(files: list[Any], ids: list[str], columns: tuple[str, ...], found: dict[str, dict[str, Any]],
          pin: Pin) -> None:
    """The rows of `ids` not yet `found` in `files`, added to it; `LOOKUP_FILES` files opened at once."""
    for at in range(0, len(files), LOOKUP_FILES):
        missing = [i for i in ids if i not in found]
        if not missing:
            return
        with pin(files[at : at + LOOKUP_FILES]) as named:
            if not named:
                continue
            dataset = pads.dataset(named, format="parquet")
            wanted = [c for c in columns if c in dataset.schema.names]
            table = dataset.to_table(columns=wanted, filter=pc.field("id").isin(missing))
        found.update((row["id"], row) for row in table.to_pylist())


# -- DataFrames for notebooks ----------------------------------------------------------------------


def _job(job: str | Path) -> Path:
    """`job` as a folder, or `FileNotFoundError` naming where it was looked for: a wrong path gave empty frames,
    and a notebook's relative `CURATION_JOB` (the kernel runs in `notebooks/`) an opaque `KeyError` later."""
    path = Path(job)
    if not path.is_dir():
        msg = f"no job folder at {path.absolute()}"
        raise FileNotFoundError(msg)
    if not any((path / name).exists() for name in ("recipe.yaml", "events.jsonl", "stats.json", DOCUMENTS)) and (
            inside := list_jobs(path)):  # the jobs root: every frame was empty, then a KeyError
        names = ", ".join(p.name for p in inside[:3]) + (", ..." if len(inside) > 3 else "")
        msg = f"{path} is a folder of jobs, not a job: give one of them ({names})"
        raise ValueError(msg)
    return path


def _frame(rows: Any) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows)


def funnel(job: str | Path) -> pd.DataFrame:
    """Per stage: documents in and out, kept share, drops and skips per reason, bytes, seconds."""
    _job(job)
    return _frame(JobFolder(job).funnel())


def reasons(job: str | Path) -> pd.DataFrame:
    """Per stage and reason: documents dropped, and how many of them were kept as samples in `rejects/`."""
    _job(job)
    sampled = {(s, r): sum(rows_in(f)) for s, by in reject_files(job).items() for r, f in by.items()}
    rows = [{"stage": row["stage"], "reason": reason, "dropped": n, "sampled": sampled.get((row["stage"], reason), 0)}
            for row in JobFolder(job).funnel() for reason, n in row["dropped"].items()]
    frame = _frame(rows or {"stage": [], "reason": [], "dropped": [], "sampled": []})
    return frame.sort_values("dropped", ascending=False, ignore_index=True)


def _of_language(table: pa.Table, lang: str | None, what: str) -> pa.Table:
    """The rows labelled `lang` (any spelling `curation.lang.codes` reads: zh-CN is zh; with a script, zh-Hant, that
    script too), or all of them; rows without a label (dropped before language ID ran) are none of a language's."""
    if lang is None:
        return table
    tag = language_tag(lang)
    if "lang" not in table.column_names:
        if table.num_rows == 0:
            return table
        msg = f"the {what} have no `lang`: the recipe has no langid stage before them"
        raise ValueError(msg)
    keep = pc.fill_null(pc.equal(table.column("lang"), tag.code), False)
    if tag.script is not None and "lang_script" in table.column_names:
        keep = pc.and_(keep, pc.fill_null(pc.equal(table.column("lang_script"), tag.script), False))
    return table.filter(keep)


def _choosable(files: list[Path], source: str | None, lang: str | None, what: str) -> np.ndarray:
    """Positions (over the files read as one) of the rows of `source` and `lang`, read from those columns alone."""
    wanted = (["source"] if source is not None else []) + (["lang", "lang_script"] if lang is not None else [])
    parts, start = [], 0
    for f, n in zip(files, rows_in(files), strict=True):
        names = pq.read_schema(f).names
        part = pq.read_table(f, columns=[c for c in wanted if c in names])
        parts.append(part.append_column("_row", pa.array(np.arange(start, start + n), pa.int64())))
        start += n
    light = pa.concat_tables(parts, promote_options="permissive")
    if source is not None:
        light = light.filter(pc.fill_null(pc.equal(light.column("source"), source), False))
    return _of_language(light, lang, what).column("_row").to_numpy()


def _rows(files: list[Path], wanted: np.ndarray) -> pa.Table:
    """Rows `wanted` (sorted positions over the files read as one), a file's batches read one at a time and only
    the files holding some: a notebook's sample of a large job read all of it (1 GB for 5 documents)."""
    parts, start = [], 0
    for f, n in zip(files, rows_in(files), strict=True):
        here = wanted[(wanted >= start) & (wanted < start + n)] - start
        at, mine = 0, []
        try:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=4096) if len(here) else ():
                inside = here[(here >= at) & (here < at + batch.num_rows)] - at
                if len(inside):
                    mine.append(pa.Table.from_batches([batch.take(pa.array(inside, pa.int64()))]))
                at += batch.num_rows
            parts += mine
        except (pa.ArrowInvalid, OSError) as exc:  # its footer reads, its data no longer does: damaged in place
            warnings.warn(f"{f} is cut or damaged ({str(exc).splitlines()[0]}): left out; delete it, and a rerun of "
                          "the job writes it again", stacklevel=3)
        start += n
    return pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})


def rejects(job: str | Path, stage: str | None = None, reason: str | None = None, *,
            limit: int | None = None, lang: str | None = None) -> pd.DataFrame:
    """Sampled rejects with `stage`, `reason` and `detail` columns, optionally of one stage and reason, and of one
    language (`lang`: `zh`, `zh-Hant`; the rejects of stages after langid have one); the first `limit` of them,
    read no further than they are."""
    _job(job)
    if limit is not None and limit < 0:
        msg = f"limit is a number of rows, 0 or more, not {limit}"
        raise ValueError(msg)
    return _rejects_frame(job, stage, reason, lang, lambda rows: rows, limit)


def samples(job: str | Path, per_reason: int = 3, *, seed: int = 0, chars: int = 300,
            lang: str | None = None) -> pd.DataFrame:
    """A few rejects per stage and reason (seeded), text cut to `chars`: the first look at what went; `lang`: of one
    language only (as `rejects`)."""
    _job(job)
    if per_reason < 0:
        msg = f"per_reason is a number of rows, 0 or more, not {per_reason}"
        raise ValueError(msg)
    rng = np.random.default_rng(seed)
    frame = _rejects_frame(job, None, None, lang,
                           lambda rows: np.sort(rng.choice(rows, min(per_reason, len(rows)), replace=False)))
    if len(frame):  # an empty frame's text column has no strings to cut
        frame["text"] = frame["text"].fillna("").astype(str).str.slice(0, chars)
    return frame[[c for c in ("stage", "reason", "id", "url", "detail", "text") if c in frame.columns]]


def _rejects_frame(job: str | Path, stage: str | None, reason: str | None, lang: str | None,
                   choose: Callable[[np.ndarray], np.ndarray], limit: int | None = None) -> pd.DataFrame:
    """The rejects of each stage and reason (of `lang`) that `choose(positions)` picks, read row by row, the first
    `limit` of them in all."""
    _check_stage_and_reason(job, stage, reason)
    if lang is not None:
        language_tag(lang)  # a code that is none is said so, not taken below for rejects without a `lang`
    tables, left, labelled = [], limit, False
    for s, by in reject_files(job).items():
        for r, files in by.items():
            if stage not in (None, s) or reason not in (None, r) or not (readable := _readable(files)):
                continue
            try:
                rows = choose(_choosable(readable, None, lang, "rejects"))
            except ValueError:  # no `lang` in this stage's rejects (dropped before langid): none of a language
                continue
            labelled = True
            if left is not None:
                rows, left = rows[:left], left - min(left, len(rows))
            table = _rows(readable, rows)
            n = table.num_rows
            tables.append(table.append_column("stage", pa.array([s] * n, pa.string())).append_column(
                "reason", pa.array([r] * n, pa.string())))
    if lang is not None and not labelled and reject_files(job):
        msg = "the rejects have no `lang`: the recipe has no langid stage before them"
        raise ValueError(msg)
    if not tables:
        return _frame({"id": [], "stage": [], "reason": [], "detail": [], "text": []})
    return pa.concat_tables(tables, promote_options="permissive").to_pandas()


def _check_stage_and_reason(job: str | Path, stage: str | None, reason: str | None) -> None:
    """A misspelt stage or reason gave an empty frame, as a stage that dropped nothing does: `ValueError` naming
    the job's stages, or the stage's reasons."""
    if stage is None:
        if reason is not None:
            msg = f"a reason ({reason!r}) is of a stage: give the stage too"
            raise ValueError(msg)
        return
    known = {row["stage"] for row in JobFolder(job).funnel()} | set(reject_files(job))
    if stage not in known:
        msg = f"no stage {stage!r} in {job}: its stages are {', '.join(sorted(known))}"
        raise ValueError(msg)
    if reason is not None:
        reasons = {r for row in JobFolder(job).funnel() if row["stage"] == stage for r in row["dropped"]}
        reasons |= set(reject_files(job).get(stage, {}))
        if reason not in reasons:
            msg = (f"stage {stage!r} of {job} dropped nothing for {reason!r}: its reasons are "
                   f"{', '.join(sorted(reasons)) or 'none'}")
            raise ValueError(msg)


def documents(job: str | Path, n: int = 10, *, seed: int = 0, source: str | None = None,
              lang: str | None = None) -> pd.DataFrame:
    """A seeded random sample of `n` kept documents (of one source, of one language: `zh`, `zh-Hant`, if given),
    read row by row. While a job's corpus stages have not run yet, its documents are those kept so far
    (`_work/documents/`, before deduplication), with a warning."""
    _job(job)
    if n < 0:
        msg = f"n is a number of documents, 0 or more, not {n}"
        raise ValueError(msg)
    files = _readable(document_files(job).values())
    if not files and (work := _readable(document_files(job, WORK_DOCUMENTS).values())):
        warnings.warn(f"{job}: its corpus stages have not run yet; these are the documents kept so far, before "
                      "deduplication", stacklevel=2)
        files = work
    if not files:  # a job that kept nothing has no documents file: its frame still has the documents' columns
        return pa.schema(schema.DOCUMENT_FIELDS).empty_table().to_pandas()
    rows = _choosable(files, source, lang, "documents")
    chosen = np.sort(np.random.default_rng(seed).choice(rows, min(n, len(rows)), replace=False))
    table = _rows(files, chosen)
    return (table if table.num_rows else pq.read_schema(files[0]).empty_table()).to_pandas()


def dedup_clusters(job: str | Path, stage: str | None = None) -> pd.DataFrame:
    """One row per removed duplicate: its stage, reason, survivor and cluster (all corpus stages by default), and
    `final_survivor`: the copy that reached the output, where a later stage removed the survivor too (an exact
    duplicate's survivor a near duplicate of another page: its reject named a document the output does not hold)."""
    _job(job)
    if stage is not None and stage not in dedup_stages(job):
        removed_table(job, stage)  # says which stages removed documents
    frames = []
    for s in dedup_stages(job):
        table = removed_table(job, s)
        frames.append(table.append_column("stage", pa.array([s] * table.num_rows, pa.string())))
    if not frames:
        return _frame({"id": [], "reason": [], "detail": [], "survivor": [], "cluster": [], "stage": [],
                       "final_survivor": []})
    frame = pa.concat_tables(frames).to_pandas()
    survivor_of = {i: s for i, s in zip(frame["id"], frame["survivor"], strict=True) if isinstance(s, str)}

    def final(survivor: object) -> object:
        seen = set()
        while isinstance(survivor, str) and survivor in survivor_of and survivor not in seen:
            seen.add(survivor)
            survivor = survivor_of[survivor]
        return survivor

    frame["final_survivor"] = [final(s) for s in frame["survivor"]]
    return frame if stage is None else frame[frame["stage"] == stage].reset_index(drop=True)


@dataclass
class SideBySide:
    """A survivor beside the copies a dedup stage removed; shows as an HTML table in a notebook."""

    stage: str
    survivor: dict[str, Any]
    removed: list[dict[str, Any]]
    chars: int = 1500
    shingling: dict[str, Any] = field(default_factory=dict)  # the stage's `ngram`, `unit` and `lowercase`

    def similarity(self, other: dict[str, Any]) -> float:
        """The Jaccard similarity of the two texts' shingles as the stage compares them: n-grams of each one's
        language's words (or characters). Words split at whitespace made a Chinese paragraph one word, and copies
        the stage removed at 0.8 showed 0.0."""
        from curation.dedup.minhash import shingle_hashes  # numpy work, for a notebook's question only

        docs = [self.survivor, other]
        found = shingle_hashes([d.get("text") or "" for d in docs], langs=[d.get("lang") for d in docs],
                               **self.shingling)
        a, b = (set(found.hashes[found.offsets[i]:found.offsets[i + 1]].tolist()) for i in (0, 1))
        return round(len(a & b) / len(a | b), 3) if a | b else 1.0

    def _cell(self, doc: dict[str, Any], label: str) -> str:
        text = html.escape((doc.get("text") or "")[: self.chars])
        ident, url = html.escape(doc.get("id") or ""), html.escape(doc.get("url") or "")
        head = f"<b>{label}</b> <code>{ident}</code><br><small>{url}</small>"
        return f"<td style='vertical-align:top;text-align:left;white-space:pre-wrap'>{head}<hr>{text}</td>"

    def _repr_html_(self) -> str:
        cells = [self._cell(self.survivor, "kept")]
        cells += [self._cell(d, f"removed ({self.stage}, similarity {self.similarity(d)})") for d in self.removed]
        return f"<table><tr>{''.join(cells)}</tr></table>"

    def __str__(self) -> str:
        lines = [f"kept {self.survivor.get('id')}: {(self.survivor.get('text') or '')[:200]!r}"]
        lines += [f"removed {d.get('id')} (similarity {self.similarity(d)}): {(d.get('text') or '')[:200]!r}"
                  for d in self.removed]
        return "\n".join(lines)


def dedup_pair(job: str | Path, stage: str | None = None, survivor: str | None = None) -> SideBySide:
    """A dedup cluster side by side: the given survivor's, else the largest cluster of `stage` (or the first
    corpus stage that removed anything)."""
    _job(job)
    stages = [stage] if stage else dedup_stages(job)
    for s in stages:
        clusters = [c for c in cluster_table(job, s) if c["survivor"] and survivor in (None, c["survivor"])]
        if clusters:
            chosen = clusters[0]
            docs = lookup(job, [chosen["survivor"], *(r["id"] for r in chosen["removed"])])
            removed = [{**docs.get(r["id"], {"id": r["id"]}), **r} for r in chosen["removed"]]
            return SideBySide(s, docs.get(chosen["survivor"], {"id": chosen["survivor"]}), removed,
                              shingling=_shingling(job, s))
    msg = f"no dedup cluster in {job}" + (f" for survivor {survivor}" if survivor else "")
    if stage == BloomDedup.name:
        msg += ": bloom_dedup keeps no record of which document it kept, its rejects name no survivor"
    raise LookupError(msg)


# -- training curves -----------------------------------------------------------------------------


def _shingling(job: str | Path, stage: str) -> dict[str, Any]:
    """How a job's dedup stage `stage` made shingles (`ngram`, `unit`, `lowercase`: minhash_dedup's), as far as its
    recipe says; {} (the default shingles) for one that makes none."""
    from curation.recipe import RecipeError

    try:
        recipe, _ = _recipe(job)
    except (OSError, RecipeError):  # a job without its recipe, or one no longer valid: the default shingles
        return {}
    params = next((p for name, _, p in recipe.stage_specs() if name == stage), None)
    return {key: getattr(params, key) for key in ("ngram", "unit", "lowercase") if hasattr(params, key)}


def train_metrics(job: str | Path) -> pd.DataFrame:
    """Every step the trainer logged in `train/metrics.jsonl` (see `curation.progress` for the fields), with
    `spiked`: whether the step was flagged (`spike` holds the reason)."""
    _job(job)
    frame = _frame(JobFolder(job).train_metrics() or {"step": [], "loss": []})
    if "spike" not in frame.columns:
        frame["spike"] = None
    frame["spiked"] = [bool(v) and v == v for v in frame["spike"]]  # v == v: NaN is not a spike
    return frame.sort_values("step", ignore_index=True)


def spikes(job: str | Path) -> pd.DataFrame:
    """Flagged steps: the trainer's `train/spikes.jsonl` (step, loss, reason, action, documents), else the
    flagged lines of metrics.jsonl."""
    _job(job)
    return _frame(JobFolder(job).train_spikes() or {"step": [], "loss": [], "reason": []})


def spike_documents(job: str | Path, step: int) -> pd.DataFrame:
    """The documents in the batch of `step`: as spikes.jsonl or the metrics line lists them, or through the
    provenance of the packed rows the line names."""
    _job(job)
    folder = JobFolder(job)
    rows = [r for r in folder.train_spikes() if r["step"] == step] or [
        r for r in folder.train_metrics() if r["step"] == step]
    if not rows:
        msg = f"step {step} is not in {Path(job) / 'train'}"
        raise LookupError(msg)
    row = rows[-1]
    ids = list(row.get("documents") or [])
    batch = row.get("batch") or {}
    if not ids and batch.get("shard"):
        import pyarrow.ipc as ipc

        shard = (Path(job) / batch["shard"]).resolve()
        if not shard.is_relative_to(Path(job).resolve()):
            msg = f"batch shard {batch['shard']!r} is outside the job folder"
            raise ValueError(msg)
        with pa.memory_map(str(shard)) as source:
            try:
                reader = ipc.open_file(source)
            except pa.ArrowInvalid:  # packed shards are written as IPC streams
                source.seek(0)
                reader = ipc.open_stream(source)
            table = reader.read_all().select(["doc_ids"])
        for r in batch.get("rows", []):
            ids += [i for i in table.column("doc_ids")[r].as_py() if i not in ids]
    docs = lookup(job, ids, before_corpus=False)
    columns = ["id", "source", "url", "title", "text"]
    return _frame([{c: docs.get(i, {"id": i}).get(c) for c in columns} for i in ids] or {c: [] for c in columns})


# -- explain ---------------------------------------------------------------------------------------


@dataclass
class Explanation:
    """Each document stage's decision on one document, with its scores; the last text it had."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    kept: bool = True
    text: str | None = None

    def to_frame(self) -> pd.DataFrame:
        return _frame(self.steps)

    def _repr_html_(self) -> str:
        verdict = "kept" if self.kept else f"dropped by {self.steps[-1]['stage']} ({self.steps[-1]['reason']})"
        return f"<p><b>{verdict}</b></p>" + self.to_frame().to_html(index=False)

    def __str__(self) -> str:
        lines = []
        for s in self.steps:
            scores = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in s["scores"].items())
            why = f" {s['reason']}" + (f" ({s['detail']})" if s["detail"] else "") if s["reason"] else ""
            lines.append(f"{s['stage']:<20} {s['decision']}{why}  {scores}")
        return "\n".join(lines)


def _recipe(recipe: Recipe | str | Path) -> tuple[Recipe, str | None]:
    """A recipe, from a recipe file or a job folder, and the folder its relative paths are relative to: for a job's
    recipe.yaml, the one `curate run` ran in (its header says which), not the notebook's (a benchmark, a model, a
    block list named `bench/gsm8k.jsonl` was not found)."""
    from curation.recipe import Recipe, parse_recipe

    if isinstance(recipe, Recipe):
        return recipe, None
    path = Path(recipe)
    path = path / RECIPE if path.is_dir() else path
    text = path.read_text(encoding="utf-8")
    ran_in = next((line[len(WORKDIR_LINE):] for line in text.splitlines()[:8] if line.startswith(WORKDIR_LINE)), None)
    ran_in = ran_in if ran_in and Path(ran_in).is_dir() else None
    with contextlib.chdir(ran_in) if ran_in else contextlib.nullcontext():  # `language_settings:` is read here
        return parse_recipe(text, str(path.absolute()), check_paths=False), ran_in


def _stages(recipe: Recipe) -> list[tuple[str, Stage]]:
    """The recipe's document stages, set up once per session (a model loads on the first `explain` only)."""
    from curation.stages.build import build_stages, set_up  # the status service imports this module: not the stages

    return set_up(build_stages(recipe))


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return value


def _first_row(scores: dict[str, Any]) -> dict[str, Any]:
    """Each score of the first document, as a plain scalar: a score that is itself a mapping (a stage's
    thresholds per n-gram size, each an array over the documents where they depend on the language) becomes
    one entry per key, `name[key]`."""
    out: dict[str, Any] = {}
    for name, values in scores.items():
        if isinstance(values, dict):
            out.update(_first_row({f"{name}[{key}]": v for key, v in values.items()}))
        elif isinstance(values, pa.Array | pa.ChunkedArray):  # langid's labelled paragraphs
            out[name] = _listed(values[0].as_py())
        else:  # a bound the same for every document is one number
            out[name] = _plain(values[0] if np.ndim(values) else values)
    return out


def _listed(value: Any) -> Any:
    """A column's value as one scalar: labelled paragraphs (`lang_paragraphs`) as their count per language
    ("zh 12, en 3"), another list as its length."""
    if not isinstance(value, list):
        return value
    if all(isinstance(v, dict) and "lang" in v for v in value):
        return ", ".join(f"{lang} {n}" for lang, n in Counter(v["lang"] for v in value).most_common())
    return len(value)


def explain(text_or_doc: str | dict[str, Any], recipe: Recipe | str | Path) -> Explanation:
    """Run one document through `recipe`'s document stages (a Recipe, a recipe file or a job folder).

    A dict may carry `text` or `html` (raw page bytes or str, for `extract`), `source` (for stages
    limited with `only`), `url`, `title` and `meta` (a dict or its JSON: a code file's path, language and
    licence, which `code_filters` judges by). A row of `documents` or `rejects` is such a dict: pass it
    whole. Corpus stages need the whole corpus and are not run.
    """
    doc = {"text": text_or_doc} if isinstance(text_or_doc, str) else dict(text_or_doc)
    if not isinstance(doc.get("text"), str) and doc.get("html") is None:  # pandas' NaN where a row has no text
        why = f" (it was dropped as {doc['reason']} before it had any)" if isinstance(doc.get("reason"), str) else ""
        msg = f"explain: the document has no text or html{why}"
        raise ValueError(msg)
    if isinstance(doc.get("meta"), dict):
        doc["meta"] = json.dumps(doc["meta"], ensure_ascii=False)
    for key in ("text", "url", "title", "meta"):
        if not isinstance(value := doc.get(key), str):
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate (json.loads of "\ud800"): no UTF-8 text
            msg = (f"explain: the document's {key} holds {value[exc.start:exc.end]!r} at {exc.start}, which is no "
                   "UTF-8 text (a reader rejects such a record as `invalid_utf8`)")
            raise ValueError(msg) from None
    batch = schema.documents_table([doc.get("text")], source=doc.get("source") or "local")
    for column in ("url", "title", "meta"):
        if isinstance(doc.get(column), str):  # a row's missing url is NaN in pandas
            batch = batch.set_column(batch.schema.get_field_index(column), column, pa.array([doc[column]], pa.string()))
    if doc.get("html") is not None:
        body = doc["html"].encode() if isinstance(doc["html"], str) else doc["html"]
        batch = batch.append_column(schema.HTML, pa.array([body], pa.binary()))
    out = Explanation()
    recipe, ran_in = _recipe(recipe)
    with contextlib.chdir(ran_in) if ran_in else contextlib.nullcontext():
        _explain_stages(_stages(recipe), batch, out)
    return out


def _explain_stages(stages: list[tuple[str, Stage]], batch: pa.Table, out: Explanation) -> None:
    """`explain`'s steps: each stage's decision and scores, to the first drop."""
    from curation.apply import run_stage, without_earlier_columns
    from curation.stages import DocumentFilter

    for name, stage in stages:
        given, before = batch, batch.column("text")[0].as_py()
        batch = run_stage(stage, batch, name=name)
        row = batch.slice(0, 1).to_pylist()[0]
        processed = row.get(schema.metric_column("sec", name)) is not None
        scores: dict[str, Any] = {}
        if processed and isinstance(stage, DocumentFilter):
            # the scores the stage decided by, as `process` computes them (a mixed document's part by part, prose
            # apart from code): `score` on the whole text gave other numbers than the run's, and than keep_scores'
            scores = _first_row(stage.process(without_earlier_columns(stage, given)).scores or {})
        reason = row[schema.REASON] if row[schema.STAGE] == name else None
        plain = {f.name for f in schema.DOCUMENT_FIELDS} | {"html"}  # the text itself is not a score
        added = {c: _listed(row[c]) for c in stage.output_columns if c not in plain and row.get(c) is not None}
        decision = "dropped" if reason and not reason.startswith(schema.SKIPPED) else (
            "skipped" if reason else "kept" if processed else "not applied")
        out.steps.append({"stage": name, "decision": decision, "reason": reason,
                          "detail": row[schema.DETAIL] if reason else None, "scores": {**scores, **added},
                          "text_changed": processed and row.get("text") != before,
                          "chars": len(row.get("text") or "")})
        out.text = row.get("text")
        if reason:
            out.kept = False
            break
