"""The job folder: documents, rejects and counters written per input shard, atomically.

Batches arrive in any order, rows of many shards mixed. The writer streams each shard's kept
documents and sampled rejects into temporary files, counts everything, and once the shard's
end-of-shard marker and all its rows have arrived, renames the files into place and records the
shard as done (`_shards/<shard>.json`, written last). A rerun skips shards recorded as done and
rewrites the others under the same names, so nothing is lost or doubled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curation import schema, storage
from curation.apply import BYPASSED, sampled
from curation.shards import GONE
from curation.stages.base import with_text

if TYPE_CHECKING:
    from curation.dedup.corpus_stage import AddedColumns

DOCUMENTS = "documents"
INPUTS_USED = "_work/inputs.json"  # the shards whose documents the corpus stages and packing take
FINAL = "_work/final"  # a record per shard whose final documents are written (after the corpus stages)
WORK_DOCUMENTS = "_work/documents"  # documents before corpus stages, when a recipe has any
REJECTS = "rejects"
SHARDS = "_shards"
RECIPE = "recipe.yaml"
LOCK = "_lock"  # held by the run writing the folder (`job_folder_lock`)
RECIPE_HASH_LINE = "# recipe hash: "  # the line of recipe.yaml naming the recipe that wrote the folder
WORKDIR_LINE = "# working directory: "  # ... and the folder its relative paths were read from
ROW_GROUP_BYTES = 4 << 20


def empty_counters(stages: list[str]) -> dict[str, dict[str, Any]]:
    return {
        s: {"docs_in": 0, "docs_out": 0, "dropped": {}, "skipped": {}, "counts": {}, "bytes_in": 0, "bytes_out": 0,
            "seconds": 0.0}
        for s in stages
    }


def merge_counters(total: dict[str, dict[str, Any]], part: dict[str, dict[str, Any]]) -> None:
    for stage, counts in part.items():
        into = total.setdefault(stage, empty_counters([stage])[stage])
        for key, value in counts.items():
            if isinstance(value, dict):
                for reason, n in value.items():
                    into[key][reason] = into[key].get(reason, 0) + n
            else:
                into[key] += value


# -- whose folder it is, and which of its files are the job's -----------------------------------


class JobFolderError(ValueError):
    """A job folder `curate run` must not write into: a path through a file, or a folder holding files that
    are not this job's."""


def claim_job_folder(job_dir: str, recipe_hash: str | None = None) -> None:
    """Raise `JobFolderError` unless `job_dir` can be (or already is) this job's folder: absent, empty, or
    holding a `recipe.yaml` written by `curate run` (of `recipe_hash` when given: a rerun resumes), or,
    without one, `_shards/` records (a `JobWriter` used directly). Anything else would be mixed into the
    job's output and read as part of it."""
    fs, path = storage.resolve(job_dir)
    if not storage.is_remote(job_dir):
        _no_file_on_the_way(Path(path), job_dir)
        try:  # a folder that cannot be made (`--output /proc/x`, a read-only mount) is said before any work
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot make the job folder {job_dir}: {exc.strerror or exc} (`output`, --output)"
            raise JobFolderError(msg) from exc
    written_by = _recipe_hash(fs, storage.join(path, RECIPE))
    if written_by == "":
        msg = (f"job folder {job_dir} holds a recipe.yaml curate run did not write: give `output` (--output) "
               "another folder, or empty this one")
        raise JobFolderError(msg)
    if written_by is not None:
        if recipe_hash is None or written_by == recipe_hash:
            return
        msg = (f"job folder {job_dir} holds the output of another recipe (recipe.yaml: hash {written_by[:10]}, "
               f"this recipe's is {recipe_hash[:10]}): give `output` (--output) another folder")
        raise JobFolderError(msg)
    if _is_folder(fs, storage.join(path, SHARDS)):
        return
    selector = pa.fs.FileSelector(path, recursive=True, allow_not_found=True)
    stray = sorted(i.path for i in fs.get_file_info(selector)
                   if i.type == pa.fs.FileType.File and not i.path.endswith(".tmp") and i.base_name != LOCK)
    if stray:
        example = stray[0][len(path.rstrip("/")) + 1 :]
        what = f"{len(stray)} files curate run did not write, e.g. {example}" if len(stray) > 1 else (
            f"a file curate run did not write: {example}")
        msg = f"job folder {job_dir} exists and holds {what}; give `output` (--output) another folder, or empty it"
        raise JobFolderError(msg)


class JobFolderBusy(JobFolderError):
    """Another run writes the job folder now (it holds `_lock`)."""


@contextlib.contextmanager
def job_folder_lock(job_dir: str, what: str = "job folder") -> Iterator[None]:
    """Hold the job folder for one run: two runs of a recipe into one folder would both do every shard (two
    trainings into one `train_dir`, two ablations into one folder, every step twice). The second raises
    `JobFolderBusy` naming the process that holds it. An flock, so a run that dies (SIGKILL, a crash) releases it
    with its last descriptor. Object stores have no locks: there, nothing is held. `what`: the folder, in words."""
    if storage.is_remote(job_dir):
        yield
        return
    path = Path(storage.resolve(job_dir)[1])
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        holder = _lock_holder(fd)
        if holder is not None:
            msg = f"{what} {job_dir} is being written by {holder}: wait for that run to end, or stop it"
            raise JobFolderBusy(msg)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()} (since {time.strftime('%F %T')})".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race with a run taking it)


ORPHANED_LOCK_WAIT_S = 10.0


def _lock_holder(fd: int) -> str | None:
    """Take the lock of `fd`: None once held, else who holds it. A run that died (SIGKILL) leaves it to the workers
    it forked, which hold its descriptor until they see it gone and end, a second or so: while the process the lock
    names is gone from this machine, it is waited for (`ORPHANED_LOCK_WAIT_S`); a rerun was refused meanwhile."""
    deadline = time.monotonic() + ORPHANED_LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "another process"
        named = re.match(r"process (\d+) on (\S+) ", holder)
        gone = named is not None and named.group(2) == socket.gethostname() and not _alive(int(named.group(1)))
        if not gone or time.monotonic() > deadline:
            return holder
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True


def _no_file_on_the_way(path: Path, job_dir: str) -> None:
    for folder in (path, *path.parents):
        if folder.is_dir():
            return
        if folder.exists() or folder.is_symlink():
            msg = f"cannot make the job folder {job_dir}: {folder} is a file, not a folder (`output`, --output)"
            raise JobFolderError(msg)


def _later_outputs(job_dir: str) -> str | None:
    """What steps after the document stages wrote in the job folder (a name for a message), or None."""
    fs, path = storage.resolve(job_dir)
    work = [i.base_name for i in fs.get_file_info(pa.fs.FileSelector(storage.join(path, "_work"), allow_not_found=True))
            if i.base_name != "documents"]
    if work:
        return f"_work/{sorted(work)[0]}"
    return next((name for name in ("manifest.json", "shards") if storage.exists(storage.join(job_dir, name))), None)


def _record(data: bytes) -> dict[str, Any] | None:
    """A JSON record of the job folder, None when it does not parse (cut short: a crash, a full disk, a hand)."""
    try:
        record = json.loads(data)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _lost_documents(job_dir: str, folder: str, done: dict[str, dict[str, Any]]) -> dict[str, str]:
    """{shard: how} for the done shards whose documents file is gone, or holds other bytes than its record says
    (cut, replaced): one listing of the folder, no file opened."""
    sizes = storage.file_sizes(storage.join(job_dir, folder), ".parquet")
    lost = {}
    for name, record in done.items():
        if not record.get("documents"):
            continue
        recorded = record.get("documents_bytes")
        if name not in sizes:
            lost[name] = f"is read again: its documents file {folder}/{name}.parquet is gone"
        elif recorded is not None and sizes[name] != recorded:
            lost[name] = (f"is read again: its documents file {folder}/{name}.parquet holds {sizes[name]} bytes, "
                          f"its record says {recorded}")
    return lost


def _is_folder(fs: pa.fs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type == pa.fs.FileType.Directory


def _recipe_hash(fs: pa.fs.FileSystem, path: str) -> str | None:
    """The recipe hash `curate run` wrote into recipe.yaml; "" for a recipe.yaml it did not write, None
    without one."""
    if fs.get_file_info(path).type != pa.fs.FileType.File:
        return None
    with fs.open_input_stream(path) as f:
        head = f.read(4096).decode("utf-8", "replace")
    line = next((x for x in head.splitlines() if x.startswith(RECIPE_HASH_LINE)), RECIPE_HASH_LINE)
    return line[len(RECIPE_HASH_LINE) :].strip()


def recorded_shards(job_dir: str | Path) -> set[str] | None:
    """Names of the shards `_shards/` records as done; None for a folder `curate run` did not make (neither
    recipe.yaml nor `_shards/`: made by hand or by another tool), whose files all count."""
    fs, path = storage.resolve(str(job_dir))
    records = fs.get_file_info(pa.fs.FileSelector(storage.join(path, SHARDS), allow_not_found=True))
    names = {i.base_name[: -len(".json")] for i in records
             if i.type == pa.fs.FileType.File and i.base_name.endswith(".json")}
    if names or _is_folder(fs, storage.join(path, SHARDS)) or storage.exists(storage.join(str(job_dir), RECIPE)):
        return names
    return None


def document_files(job_dir: str | Path, folder: str = DOCUMENTS) -> dict[str, str]:
    """{shard: uri} of the job's documents files, by shard name: `documents/` (or `_work/documents/`, before
    corpus stages) files of the shards `_shards/` records as done. Every reader of a job folder (explore,
    corpus stages, packing, the service) takes its files here, so a file the job did not write (dropped in
    by hand, left by another tool) is never read as part of it; so is a link, which a job never writes."""
    fs, path = storage.resolve(storage.join(str(job_dir), folder))
    listed = fs.get_file_info(pa.fs.FileSelector(path, allow_not_found=True))
    found = {i.base_name[: -len(".parquet")]: i.path for i in listed
             if i.type == pa.fs.FileType.File and i.base_name.endswith(".parquet")}
    shards = recorded_shards(job_dir)
    remote = storage.is_remote(str(job_dir))
    return {name: storage.join(str(job_dir), folder, f"{name}.parquet") for name in sorted(found)
            if (shards is None or name in shards) and (remote or not Path(found[name]).is_symlink())}


def _settings(table_schema: pa.Schema) -> dict[str, Any]:
    """Parquet settings of documents and rejects: zstd on text columns only and no dictionaries.

    A job writes a file per shard and per (stage, reason) of its rejects, often of a few rows and ~40
    columns (every stage's scores); a zstd context and a dictionary attempt per column chunk made most
    of the cost (~3 ms a file, 2.6 for a one-row one: ~1.1 s of the driver's CPU for the ~360 files of
    the FineWeb-like benchmark at 5x). Numbers gain little from zstd, and texts and ids are mostly
    distinct: this writes the same files in 1.7 ms each, 4% smaller.
    """
    texty = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    compression = {f.name: "zstd" if any(t(f.type) for t in texty) else "none" for f in table_schema}
    return {"compression": compression, "use_dictionary": False}


class _ParquetFile:
    """A Parquet file written under a temporary name and renamed into place on `commit`.

    Batches arrive a hundred rows or so at a time; they are held until `ROW_GROUP_BYTES` and written as
    one row group, which compresses better and reads faster than a row group per batch.
    """

    def __init__(self, uri: str, table_schema: pa.Schema) -> None:
        self.uri = uri
        self.fs, self.path = storage.resolve(uri)
        self.fs.create_dir(self.path.rsplit("/", 1)[0], recursive=True)
        self.tmp = storage.temporary_name(self.path)
        self.schema = table_schema
        self.writer = pq.ParquetWriter(self.tmp, table_schema, filesystem=self.fs, **_settings(table_schema))
        self.rows = 0
        self.held: list[pa.Table] = []
        self.held_bytes = 0

    def write(self, table: pa.Table) -> None:
        self.held.append(table.select(self.schema.names).cast(self.schema))
        self.held_bytes += table.nbytes
        self.rows += table.num_rows
        if self.held_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self.held:
            self.writer.write_table(pa.concat_tables(self.held))
        self.held, self.held_bytes = [], 0

    def commit(self) -> None:
        self._flush()
        self.writer.close()
        self.fs.move(self.tmp, self.path)

    def size(self) -> int:
        """Bytes of the committed file: its record keeps them, and a rerun tells a file cut or replaced since."""
        return self.fs.get_file_info(self.path).size


@dataclass
class _Shard:
    name: str
    expected: int | None = None
    seen: int = 0
    counters: dict[str, dict[str, Any]] = field(default_factory=dict)
    documents: _ParquetFile | None = None
    rejects: dict[tuple[str, str], _ParquetFile] = field(default_factory=dict)
    reject_counts: Counter = field(default_factory=Counter)


def _public(table: pa.Table) -> pa.Table:
    return table.drop_columns([c for c in table.column_names if schema.is_bookkeeping(c) or c == "html"])


class JobWriter:
    def __init__(self, job_dir: str, stages: list[str], *, rejects_sample: float = 1.0,
                 rejects_max_per_reason: int = 1000, documents: str = DOCUMENTS,
                 recipe_hash: str | None = None) -> None:
        self.dir = job_dir
        self.recipe_hash = recipe_hash  # the recipe whose job folder this is (a folder of another is refused)
        self.documents = documents  # DOCUMENTS, or WORK_DOCUMENTS when corpus stages follow
        self.stages = ["read", *stages]
        self.rejects_sample = rejects_sample
        self.rejects_max_per_reason = rejects_max_per_reason
        self.open: dict[str, _Shard] = {}
        self.done: dict[str, dict[str, Any]] = {}
        self.inputs: dict[str, dict[str, int] | None] = {}  # shard -> its input's fingerprint as its read began
        self.damaged: dict[str, str] = {}  # done shards whose documents a rerun found gone or cut: how

    # -- before the run ---------------------------------------------------------------------
    def resume(self) -> dict[str, dict[str, Any]]:
        """Refuse a folder that is not this job's (`claim_job_folder`); forget what a crashed run left
        half-written; return the shards already done."""
        claim_job_folder(self.dir, self.recipe_hash)
        storage.remove_temporaries(self.dir)
        fs, path = storage.resolve(storage.join(self.dir, SHARDS))
        for info in fs.get_file_info(pa.fs.FileSelector(path, allow_not_found=True)):
            if info.path.endswith(".json"):
                with fs.open_input_stream(info.path) as f:
                    record = _record(f.read())
                if record is None:  # cut by a hand (records are written whole): the shard is read again, as if lost
                    fs.delete_file(info.path)
                    continue
                self.done[info.base_name.removesuffix(".json")] = record
        if _later_outputs(self.dir) is None:  # the documents still to be used: those lost are read again
            self.damaged |= _lost_documents(self.dir, self.documents, self.done)
        return self.done

    def forget(self, shards: dict[str, str]) -> None:
        """Undo done shards (their input changed or is gone, their record or documents damaged: {shard: how}), to
        be read again: the record goes first (a crash meanwhile leaves them undone), then their documents and
        rejects, which the new read may not replace. Refused (`JobFolderError`) once later steps (corpus stages,
        packing) used the job's documents."""
        self.refuse_after_later_steps(shards)
        for name in sorted(shards):
            storage.delete(storage.join(self.dir, SHARDS, f"{name}.json"))
            self.done.pop(name, None)
        fs, _ = storage.resolve(self.dir)
        for folder in (DOCUMENTS, WORK_DOCUMENTS, REJECTS):
            _, path = storage.resolve(storage.join(self.dir, folder))
            for info in fs.get_file_info(pa.fs.FileSelector(path, recursive=True, allow_not_found=True)):
                if info.type == pa.fs.FileType.File and info.base_name.removesuffix(".parquet") in shards:
                    fs.delete_file(info.path)

    def refuse_after_later_steps(self, shards: dict[str, str]) -> None:
        """`JobFolderError` naming the first of `shards` ({shard: how its input changed}) when later steps (corpus
        stages, packing) already used the job's documents: their output would no longer be the inputs'."""
        later = _later_outputs(self.dir)
        # a shard gone that gave no documents (a `.git/` file read before they were left out) changes no later output
        shards = {name: how for name, how in shards.items()
                  if not (how == GONE and (self.done.get(name) or {}).get("documents") == 0)}
        if later and shards:
            name, how = next(iter(sorted(shards.items())))
            more = f" (and {len(shards) - 1} more shards)" if len(shards) > 1 else ""
            msg = (f"the input of shard {name} {how}{more} since the job folder {self.dir} was written, and the "
                   f"job's documents are already used by {later}: give `output` (--output) another folder, or "
                   "remove this one to start again")
            raise JobFolderError(msg)

    def record_inputs_used(self, shards: list[str]) -> None:
        """Name the shards whose documents the later steps (corpus stages, packing) take, before they start."""
        storage.write_json_atomic(storage.join(self.dir, INPUTS_USED), sorted(shards))

    def inputs_used(self) -> set[str] | None:
        """The shards the later steps took (`record_inputs_used`); None before them, or when the record is cut."""
        uri = storage.join(self.dir, INPUTS_USED)
        if not storage.exists(uri):
            return None
        with contextlib.suppress(ValueError):
            names = storage.read_json(uri)
            return set(names) if isinstance(names, list) else None
        return None

    # -- while it runs ----------------------------------------------------------------------
    def add(self, batch: pa.Table) -> list[str]:
        """Take one batch of mixed shards; return the shards this batch completed."""
        finished = []
        shard_column = batch.column(schema.SHARD)
        for name in pc.unique(shard_column).to_pylist():
            part = batch.filter(pc.equal(shard_column, name))
            shard = self.open.setdefault(name, _Shard(name, counters=empty_counters(self.stages)))
            self._take(shard, part)
            if shard.expected is not None and shard.seen >= shard.expected:
                self._commit(shard)
                finished.append(name)
        return finished

    def _take(self, shard: _Shard, part: pa.Table) -> None:
        shard.seen += part.num_rows
        reason = part.column(schema.REASON)
        marker = pc.fill_null(pc.equal(reason, schema.END_OF_SHARD), False)
        if pc.any(marker).as_py():
            shard.expected = pc.max(part.filter(marker).column(schema.SHARD_ROWS)).as_py()
        rows = part.filter(pc.invert(marker))
        self._count(shard, part, rows)
        kept = rows.filter(pc.is_null(rows.column(schema.REASON)))
        if kept.num_rows:
            docs = _public(kept)
            if shard.documents is None:
                uri = storage.join(self.dir, self.documents, f"{shard.name}.parquet")
                shard.documents = _ParquetFile(uri, docs.schema)
            shard.documents.write(docs)
        self._rejects(shard, rows)

    def _count(self, shard: _Shard, part: pa.Table, rows: pa.Table) -> None:
        """Add one batch to the shard's counters: one aggregate over all stages' metric columns
        (per-stage compute calls cost more than the counting when batches are small)."""
        stages = [s for s in self.stages if schema.metric_column("sec", s) in part.column_names]
        tallies = {s: [c for c in part.column_names if c.startswith(schema.count_column(s, ""))] for s in stages}
        seconds = part.group_by([]).aggregate([(schema.metric_column("sec", s), "sum") for s in stages])
        # The end-of-shard marker carries read time (in `part`) but is no document (not in `rows`).
        sums = rows.group_by([]).aggregate([
            *((schema.metric_column(kind, s), agg) for s in stages
              for kind, agg in (("sec", "count"), ("bin", "sum"), ("bout", "sum"))),
            *((column, "sum") for s in stages for column in tallies[s])]).to_pylist()[0]
        ended = rows.filter(pc.is_valid(rows.column(schema.REASON)))
        for row in ended.group_by([schema.STAGE, schema.REASON]).aggregate([([], "count_all")]).to_pylist():
            if row[schema.STAGE] in shard.counters:
                counts, why = shard.counters[row[schema.STAGE]], row[schema.REASON]
                key = "skipped" if why.startswith(schema.SKIPPED) else "dropped"
                short = why.split(":", 1)[1] if key == "skipped" else why
                counts[key][short] = counts[key].get(short, 0) + row["count_all"]
        for stage, spent in zip(stages, seconds.to_pylist()[0].values(), strict=True):
            counts = shard.counters[stage]
            counts["seconds"] += spent or 0.0
            counts["docs_in"] += sums[f"{schema.metric_column('sec', stage)}_count"]
            counts["docs_out"] = counts["docs_in"] - sum(counts["dropped"].values()) - sum(counts["skipped"].values())
            counts["bytes_in"] += sums[f"{schema.metric_column('bin', stage)}_sum"] or 0
            counts["bytes_out"] += sums[f"{schema.metric_column('bout', stage)}_sum"] or 0
            for column in tallies[stage]:
                key = column[len(schema.count_column(stage, "")) :]
                counts["counts"][key] = counts["counts"].get(key, 0) + (sums[f"{column}_sum"] or 0)

    def _rejects(self, shard: _Shard, rows: pa.Table) -> None:
        reason = rows.column(schema.REASON)
        dropped = pc.and_(pc.is_valid(reason), pc.invert(pc.fill_null(pc.starts_with(reason, schema.SKIPPED), False)))
        write_rejects(self.dir, shard.name, rows.filter(dropped), shard.rejects, shard.reject_counts,
                      sample=self.rejects_sample, max_per_reason=self.rejects_max_per_reason)

    def _commit(self, shard: _Shard) -> None:
        if shard.documents is not None:
            shard.documents.commit()
        for file in shard.rejects.values():
            file.commit()
        record = {
            "shard": shard.name,
            "documents": shard.documents.rows if shard.documents else 0,
            "documents_bytes": shard.documents.size() if shard.documents else 0,
            "rejects_written": sum(shard.reject_counts.values()),
            "counters": shard.counters,
            "input": self.inputs.get(shard.name),  # a rerun redoes the shard when its input is another file
        }
        storage.write_json_atomic(storage.join(self.dir, SHARDS, f"{shard.name}.json"), record)
        self.done[shard.name] = record
        del self.open[shard.name]

    # -- after it -----------------------------------------------------------------------------
    def totals(self) -> dict[str, dict[str, Any]]:
        total = empty_counters(self.stages)
        # By name, not by finishing order: float seconds summed in another order differ in the last digit.
        for name in sorted(self.done):
            merge_counters(total, self.done[name]["counters"])
        return total

    def incomplete(self) -> list[str]:
        return sorted(self.open)

    def discard(self, shard: str) -> None:
        """Forget what arrived of a shard that failed (its input could not be read to its end): its temporary
        files are deleted and nothing is recorded, so no half shard is ever read and a rerun reads it again."""
        partial = self.open.pop(shard, None)
        if partial is None:
            return
        for file in [partial.documents, *partial.rejects.values()]:
            if file is not None:
                with contextlib.suppress(OSError):  # what it still held cannot be written (a full disk)
                    file.writer.close()
                file.fs.delete_file(file.tmp)


def write_rejects(job_dir: str, shard: str, rejects: pa.Table, files: dict[tuple[str, str], _ParquetFile],
                  counts: Counter, *, sample: float, max_per_reason: int) -> None:
    """Append dropped rows (with stage, reason and detail columns) to their rejects/ files, sampled and capped."""
    if not rejects.num_rows or max_per_reason == 0:
        return
    rejects = rejects.filter(pa.array(sampled(rejects.column("id"), sample)))
    stages, reasons = rejects.column(schema.STAGE).to_pylist(), rejects.column(schema.REASON).to_pylist()
    keys = list(zip(stages, reasons, strict=True))
    for key in dict.fromkeys(keys):
        room = max_per_reason - counts[key]
        if room <= 0:
            continue
        chosen = rejects.filter(pa.array([k == key for k in keys])).slice(0, room)
        table = _public(chosen).append_column("detail", chosen.column(schema.DETAIL))
        if key not in files:
            stage, why = key
            uri = storage.join(job_dir, REJECTS, f"stage={stage}", f"reason={why}", f"{shard}.parquet")
            files[key] = _ParquetFile(uri, table.schema)
        files[key].write(table)
        counts[key] += chosen.num_rows


def finalize_shard(job_dir: str, shard: str, removed: pa.Table, rewrites: pa.Table | None = None, *,
                   sample: float, max_per_reason: int, added: Sequence[AddedColumns] = ()) -> dict[str, Any]:
    """Write a shard's final documents: its pre-corpus documents less `removed` (id, stage, reason,
    detail) and with `rewrites` (id, text) applied and the corpus stages' `added` columns, the removed
    ones into rejects/; return the per-stage counts of removals in this shard."""
    work = storage.join(job_dir, WORK_DOCUMENTS, f"{shard}.parquet")
    fs, path = storage.resolve(work)
    final = storage.join(job_dir, DOCUMENTS, f"{shard}.parquet")
    ids = storage.read_parquet(work, ["id"]).column("id")
    touched = any(t is not None and pc.any(pc.is_in(t.column("id"), ids)).as_py() for t in (removed, rewrites))
    if not touched and not added:  # nothing to change in this shard: a byte copy, not a Parquet rewrite
        with storage.temp_path(final) as tmp:
            fs.copy_file(path, tmp)
        record = {"shard": shard, "documents": len(ids), "removed": {}}
    else:
        record = _rewrite_shard(job_dir, shard, storage.read_parquet(work), final, removed, rewrites, sample=sample,
                                max_per_reason=max_per_reason, added=added)
    if record["documents"]:
        record["documents_bytes"] = fs.get_file_info(storage.resolve(final)[1]).size
    storage.write_json_atomic(storage.join(job_dir, FINAL, f"{shard}.json"), record)
    return record


def finalized(job_dir: str, shards: list[str]) -> set[str]:
    """The shards whose final documents are written as their record in `_work/final/` says: the others (never
    written, or their record cut, or their file gone or cut since) are written again."""
    recorded = set(storage.file_sizes(storage.join(job_dir, FINAL), ".json"))
    sizes = storage.file_sizes(storage.join(job_dir, DOCUMENTS), ".parquet")
    fs, folder = storage.resolve(storage.join(job_dir, FINAL))
    done = set()
    for shard in shards:
        if shard not in recorded:
            continue
        with fs.open_input_stream(f"{folder}/{shard}.json") as f:
            record = _record(f.read())
        if record is None:
            continue
        if record.get("documents"):
            size = sizes.get(shard)
            if size is None or size != record.get("documents_bytes", size):
                continue
        done.add(shard)
    return done


def _rewrite_shard(job_dir: str, shard: str, table: pa.Table, final: str, removed: pa.Table,
                   rewrites: pa.Table | None, *, sample: float, max_per_reason: int,
                   added: Sequence[AddedColumns] = ()) -> dict[str, Any]:
    if rewrites is not None and rewrites.num_rows:
        mine = rewrites.filter(pc.is_in(rewrites.column("id"), table.column("id")))
        if mine.num_rows:
            index = pc.index_in(table.column("id"), mine.column("id"))
            text = pc.if_else(pc.is_valid(index), mine.column("text").take(index), table.column("text"))
            table = with_text(table, text)  # langid's paragraph labels follow (Bloom's removed paragraphs)
    gone = pc.is_in(table.column("id"), removed.column("id"))
    kept = table.filter(pc.invert(gone))
    for columns in added:
        kept = columns.apply(kept)
    if kept.num_rows:
        out = _ParquetFile(final, kept.schema)
        out.write(kept)
        out.commit()
    dropped = table.filter(gone)  # the removals' columns by id (Arrow's join takes no list column, `lang_paragraphs`)
    at = pc.index_in(dropped.column("id"), value_set=removed.column("id"))
    for name in removed.column_names:
        if name != "id":
            dropped = dropped.append_column(name, removed.column(name).take(at))
    names = {"stage": schema.STAGE, "reason": schema.REASON, "detail": schema.DETAIL}
    dropped = dropped.rename_columns([names.get(c, c) for c in dropped.column_names])
    files: dict[tuple[str, str], _ParquetFile] = {}
    write_rejects(job_dir, shard, dropped, files, Counter(), sample=sample, max_per_reason=max_per_reason)
    for file in files.values():
        file.commit()
    return {"shard": shard, "documents": kept.num_rows,
            "removed": dict(Counter(dropped.column(schema.STAGE).to_pylist()))}


def funnel(counters: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-stage rows for stats.json and the summary table, in pipeline order.

    Rows that went by a stage unjudged (another source than its `only:`, no page, a language it does not
    judge) are tallied in its counters as `bypassed:<why>` counts; here they become the row's `bypassed`
    per reason. Every row then adds up: docs_in == docs_out + dropped + skipped (records that are no
    documents), and what leaves a stage (docs_out + bypassed) is what reaches the next (docs_in + bypassed).
    """
    prefix = f"{BYPASSED}:"
    rows = []
    for stage, values in counters.items():
        counts = dict(values.get("counts", {}))
        tallies = {key: counts.pop(key) for key in list(counts) if key.startswith(prefix)}
        bypassed = {key[len(prefix):]: n for key, n in tallies.items() if n}
        rows.append({"stage": stage, **values, "bypassed": bypassed, "counts": counts})
    return rows


class EventLog:
    """events.jsonl: one JSON object per line, appended as the job goes (rewritten on object stores)."""

    def __init__(self, job_dir: str) -> None:
        self.uri = storage.join(job_dir, "events.jsonl")
        self.local = not storage.is_remote(job_dir)
        self.lines: list[str] = []
        if not self.local:
            fs, path = storage.resolve(self.uri)
            if fs.get_file_info(path).type == pa.fs.FileType.File:
                with fs.open_input_stream(path) as f:
                    self.lines = f.read().decode().splitlines()

    def emit(self, event: str, **fields: Any) -> None:
        line = json.dumps({"time": round(time.time(), 3), "event": event, **fields}, default=str)
        if self.local:
            fs, path = storage.resolve(self.uri)
            fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            with open(path, "a+b") as f:  # appends go to the end whatever the position read from
                end, cut = f.seek(0, 2), False
                if end:
                    f.seek(end - 1)
                    cut = f.read(1) != b"\n"  # a last line cut by a crash: this event starts a line of its own
                f.write((b"\n" if cut else b"") + f"{line}\n".encode())
        else:
            self.lines.append(line)
            storage.write_bytes_atomic(self.uri, ("\n".join(self.lines) + "\n").encode())
