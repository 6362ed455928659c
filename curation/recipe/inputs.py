"""Checks of what a recipe names on the filesystem, before any work starts: inputs and models exist, no file is
read by two sources, no input pattern reaches into a job folder under `output`."""

from __future__ import annotations

import glob
import re
import stat
from pathlib import Path

import pyarrow.fs as pa_fs

from curation import storage
from curation.recipe.models import Recipe
from curation.shards import list_shards
from curation.stages.base import named_files
from curation.tokens.tokenizer import model_problem
from curation.yaml_model import Located


def path_checks(recipe: Recipe) -> list[Located]:
    """Inputs and models a recipe names must exist before any work starts."""
    out: list[Located] = []
    matched: dict[tuple[int, int], list[str]] = {}
    for i, source in enumerate(recipe.sources):
        for j, pattern in enumerate(source.paths):
            try:
                matched[i, j] = storage.expand(pattern)
            except (OSError, ValueError) as exc:
                out.append((("sources", i, "paths", j), f"cannot list {pattern!r}: {exc}"))
                continue
            if not matched[i, j]:
                out.append((("sources", i, "paths", j), _nothing_matches(pattern)))
            for uri in matched[i, j]:
                if not uri.isascii() and _not_utf8(uri):
                    out.append((("sources", i, "paths", j), f"{pattern!r} matches {uri!r}, whose name is not UTF-8: "
                                "no reader can open it (pyarrow takes UTF-8 paths); rename it"))
            if unread := next((u for u in matched[i, j] if u.lower().endswith(_UNREAD.get(source.format, ()))), None):
                suffix = "." + unread.rsplit(".", 1)[1]
                out.append((("sources", i, "paths", j), f"{pattern!r} matches {unread!r}: {suffix} files are not read "
                            f"as {source.format} (compressed {_READ[source.format]}); decompress them, or compress "
                            "them so"))
    out += _shared_files(recipe, matched)
    out += _reads_output(recipe, matched)
    if recipe.tokenizer is not None and recipe.tokenizer.model:
        model = recipe.tokenizer.model
        if not storage.exists(model):
            out.append((("tokenizer", "model"), f"no tokenizer model at {model!r}"))
        elif (problem := model_problem(storage.read_bytes(model))) is not None:
            out.append((("tokenizer", "model"), f"{model!r} is {problem}"))
    for i, (_, kind, params) in enumerate(recipe.stage_specs()):
        missing = [(key, f"no {mark.what} at {path!r}") for key, path, mark in named_files(params)
                   if not (storage.exists(path) or (mark.folders and storage.is_folder(path)))]
        for key, message in missing or params.file_problems():
            out.append((("stages", i, kind, *key), message))
    return out


_SPECIAL = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"))


def _nothing_matches(pattern: str) -> str:
    """Why a pattern gave no input: a path that exists but is no regular file (a FIFO: reading it could block) is
    named as what it is, not as missing."""
    if not storage.is_remote(pattern) and not storage.has_wildcard(pattern):
        try:
            mode = Path(pattern).stat().st_mode
        except OSError:
            mode = 0
        kind = next((name for test, name in _SPECIAL if test(mode)), None)
        if kind:
            return f"{pattern!r} is {kind}, not a regular file: only regular files are read"
    return f"no file matches {pattern!r}"


# Compressions a format's files may look compressed with that its reader does not undo (it read them as text: an
# `.xz` JSONL was one `invalid_utf8` reject, a `.bz2` WARC "Invalid WARC header")
_ARCHIVES = (".xz", ".lzma", ".br", ".zip", ".7z", ".rar", ".z")
_UNREAD = {"jsonl": _ARCHIVES, "warc": (*_ARCHIVES, ".bz2"), "wet": (*_ARCHIVES, ".bz2")}
_READ = {"jsonl": "with gzip, zstd, bz2 or lz4, or not", "warc": "with gzip, zstd or lz4, or not",
         "wet": "with gzip, zstd or lz4, or not"}


def _not_utf8(name: str) -> bool:
    """A local name holding bytes that are no UTF-8 (Python spells them as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# What a job writes in its folder (`curation.job`), `{}` standing for a shard's name: an input pattern matching
# one of these in a job folder would read that job's output as input, more of it on every run.
JOB_FILES = ("documents/{}.parquet", "_work/documents/{}.parquet", "rejects/stage=x/reason=y/{}.parquet",
             "_shards/{}.json", "shards/train-00000.arrow", "recipe.yaml", "stats.json", "events.jsonl",
             "_progress.json", "manifest.json", "tokenizer.model")


def _job_folder_holding(fs: pa_fs.FileSystem, root: str, path: str, seen: dict[str, bool]) -> str | None:
    """The job folder directly under `root` (`output`) that `path` lies in, if it is one (it holds a
    recipe.yaml or `_shards/`); `seen` remembers the folders looked at."""
    if not path.startswith(f"{root.rstrip('/')}/"):
        return None
    top = f"{root.rstrip('/')}/{path[len(root.rstrip('/')) + 1 :].split('/')[0]}"
    if top == path:
        return None
    if top not in seen:
        seen[top] = (fs.get_file_info(f"{top}/recipe.yaml").type == pa_fs.FileType.File
                     or fs.get_file_info(f"{top}/_shards").type == pa_fs.FileType.Directory)
    return top if seen[top] else None


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """What `pattern` matches, as a regular expression over `storage.resolve` spellings (a folder: all below it)."""
    fs, path = storage.resolve(storage.files_pattern(pattern))
    if not storage.has_wildcard(path) or storage.is_named(fs, path):
        is_folder = fs.get_file_info(path).type == pa_fs.FileType.Directory
        return storage.glob_regex(f"{path.rstrip('/')}/**" if is_folder else glob.escape(path))
    return storage.glob_regex(path)


def _reads_output(recipe: Recipe, matched: dict[tuple[int, int], list[str]]) -> list[Located]:
    """Input patterns reaching into a job folder under `output`: this job's (files it matches there now, or
    files this job will write there, before the folder is even made) or another's (files it matches there)."""
    try:
        fs, root = storage.resolve(recipe.output)
        own = storage.resolve(recipe.job_dir())[1]
    except OSError:
        return []  # an output that cannot be looked at is the run's to report, where it writes
    remote, seen = storage.is_remote(recipe.output), {}
    out: list[Located] = []
    for i, source in enumerate(recipe.sources):
        shard = f"{source.name}-file-0123456789"
        for j, pattern in enumerate(source.paths):
            if storage.is_remote(pattern) != remote or (i, j) not in matched:  # a bad pattern is reported already
                continue
            regex = _pattern_regex(pattern)
            found = [storage.resolve(u)[1] for u in matched.get((i, j), [])]
            job, reached = own, next((f"{own}/{f.format(shard)}" for f in JOB_FILES
                                      if regex.match(f"{own}/{f.format(shard)}")), None)
            for path in found if reached is None else []:
                if (job := _job_folder_holding(fs, root, path, seen)) is not None:
                    reached = path
                    break
            if reached is not None:
                whose = "this job's folder" if job == own else "the job folder"
                out.append((("sources", i, "paths", j),
                            f"{pattern!r} reaches {whose} {job} under `output` ({reached}): a job would read "
                            "its own output as input, more of it on every run; narrow the pattern or give "
                            "`output` a folder outside the inputs"))
    return out


def output_problems(recipe: Recipe, output: str) -> list[str]:
    """What `_reads_output` finds when the job is written under `output` instead (`curate run --output`)."""
    moved = recipe.model_copy(update={"output": output})
    matched = {(i, j): storage.expand(p) for i, source in enumerate(recipe.sources) for j, p in enumerate(source.paths)}
    return [f"sources[{loc[1]}].paths[{loc[3]}]: {msg}" for loc, msg in _reads_output(moved, matched)]


def _shared_files(recipe: Recipe, matched: dict[tuple[int, int], list[str]]) -> list[Located]:
    """A file read by two sources: its documents would come twice, under the same ids (ids derive from the
    file's canonical URI and the record's position, not the source). Files are compared by canonical URI, so
    `x`, `./x`, its absolute path and overlapping globs are one file, and two names of one file (a hard link) too.
    Within one source, a file matched twice is read once (one shard)."""
    first: dict[object, tuple[int, int]] = {}
    clashes: dict[tuple[int, int, int, int], list[str]] = {}
    for (i, j), uris in matched.items():
        for uri in uris:
            i0, j0 = first.setdefault(_same_file(uri), (i, j))
            if i0 != i:
                clashes.setdefault((i0, j0, i, j), []).append(uri)
    if clashes:
        clashes = _read_as_shards(recipe, clashes)
    out: list[Located] = []
    for (i0, j0, i, j), uris in clashes.items():
        more = f" (and {len(uris) - 1} more files)" if len(uris) > 1 else ""
        out.append((("sources", i, "paths", j),
                    f"sources {recipe.sources[i].name!r} and {recipe.sources[i0].name!r} (sources[{i0}].paths[{j0}]: "
                    f"{recipe.sources[i0].paths[j0]!r}) both read {uris[0]!r}{more}: a file may belong to one source "
                    "only (its documents would be read twice, with the same ids)"))
    return out


def _same_file(uri: str) -> object:
    """What is one file however it is named: its canonical URI, or a local file's (device, inode) where it has several
    names (hard links)."""
    return (None if storage.is_remote(uri) else storage.file_identity(uri)) or storage.canonical(uri)


def _read_as_shards(recipe: Recipe, clashes: dict[tuple[int, int, int, int], list[str]],
                    ) -> dict[tuple[int, int, int, int], list[str]]:
    """The clashes of files that really become shards of both sources (a link met in a folder is not read
    through, so it is no copy of its target)."""
    by_source: dict[str, set[object]] = {}
    for shard in list_shards(recipe):
        by_source.setdefault(shard.source, set()).add(_same_file(shard.uri))
    names = [s.name for s in recipe.sources]
    kept = {}
    for (i0, j0, i, j), uris in clashes.items():
        both = by_source.get(names[i], set()) & by_source.get(names[i0], set())
        real = [u for u in uris if _same_file(u) in both]
        if real:
            kept[i0, j0, i, j] = real
    return kept


