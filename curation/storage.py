"""Paths and URIs (local, file://, s3://, gs://) through `pyarrow.fs`, globbing and atomic writes."""

from __future__ import annotations

import functools
import gzip
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

_WILDCARD = re.compile(r"[*?\[]")


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


_REMOTE_OPENED: list[int] = []  # the processes (pids) that have opened a remote filesystem


def remote_opened() -> bool:
    """Whether this process has opened a remote filesystem (S3, GCS): its client's connections and threads must not
    be forked, or the child reads the parent's responses (forked workers read one another's S3 objects)."""
    return os.getpid() in _REMOTE_OPENED


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the path inside it for a local path or a URI.

    `s3://` honours AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL (MinIO, Ceph, R2 and other S3-compatible
    stores), as the AWS SDKs and CLI do; credentials and region come from the usual AWS variables.
    """
    if "://" not in uri:
        return pafs.LocalFileSystem(), str(Path(uri).expanduser().resolve())
    if not uri.startswith("file://") and os.getpid() not in _REMOTE_OPENED:
        _REMOTE_OPENED.append(os.getpid())
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if uri.startswith("s3://") and endpoint and "?" not in uri:
        scheme, _, host = endpoint.partition("://")
        return _s3(host or scheme, scheme if host else "https"), uri[len("s3://") :]
    return pafs.FileSystem.from_uri(uri)


@functools.lru_cache(maxsize=8)
def _s3(endpoint: str, scheme: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(endpoint_override=endpoint, scheme=scheme, allow_bucket_creation=True)


def canonical(uri: str) -> str:
    """One spelling per file, so the ids derived from it do not depend on how a recipe names it."""
    if "://" not in uri:
        return str(Path(uri).expanduser().resolve())
    if uri.startswith("file://"):
        return uri[len("file://") :]
    return uri


def has_wildcard(path: str) -> bool:
    return bool(_WILDCARD.search(path))


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression of a path pattern (`*`, `?`, `[..]`, `**`), matching whole paths."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i)
            inner = pattern[i + 1 : end].replace("\\", "\\\\").replace("[", "\\[")  # `[[]`: a bracket, as in glob
            inner = "^" + inner[1:] if inner.startswith("!") else inner  # `[!x]`: glob's negation
            out.append(f"[{inner}]" if end > 0 else re.escape("["))
            i = end + 1 if end > 0 else i + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)  # a name may hold a newline: `**` still reaches it
    except re.error as exc:  # a bracket that is no character class: `[z-a]`, `x[]]`
        msg = f"bad pattern {pattern!r}: {exc}"
        raise ValueError(msg) from exc


def expand(pattern: str) -> list[str]:
    """Files matching a path or URI with `*`, `?`, `[..]` and `**`, sorted; URIs keep their scheme. Links met
    while walking a folder are neither followed nor listed (`list_files`)."""
    return [found.uri for found in list_files(pattern) if not found.link]


def expand_sized(pattern: str) -> list[tuple[str, int]]:
    """`expand` with each file's size in bytes (the listing has it: no extra request per file)."""
    return [(found.uri, found.size) for found in _expand_listed(pattern)]


def files_pattern(pattern: str) -> str:
    """A pattern of files: one ending in `/` names folders (`checkouts/*/`), each standing for all its files."""
    return pattern + "**" if pattern.endswith("/") and has_wildcard(pattern) else pattern


def _expand_listed(pattern: str) -> list[Listed]:
    pattern = files_pattern(pattern)
    fs, path = resolve(pattern)
    prefix = "" if "://" not in pattern or pattern.startswith("file://") else pattern.split("://")[0] + "://"
    if not _WILDCARD.search(path) or is_named(fs, path):
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.File:
            return [Listed(prefix + path, info.size or 0, mtime_ns=info.mtime_ns)]
        if info.type == pafs.FileType.Directory:
            return _expand_listed(pattern.rstrip("/") + "/**")
        return []
    parts = path.split("/")
    first = next(i for i, part in enumerate(parts) if _WILDCARD.search(part))
    base = "/".join(parts[:first]) or "/"
    recursive = "**" in path or len(parts) - first > 1
    selector = pafs.FileSelector(base, recursive=recursive, allow_not_found=True)
    regex = glob_regex(path)
    found = [
        Listed(prefix + info.path, info.size or 0, mtime_ns=info.mtime_ns)
        for info in fs.get_file_info(selector)
        if info.type == pafs.FileType.File and regex.match(info.path)
    ]
    return sorted(found, key=lambda listed: listed.uri)


@dataclass(frozen=True)
class Listed:
    """A file a walk found; `link`: a symbolic link met on the way (to a file, a folder or nothing), not followed."""

    uri: str
    size: int = 0
    link: bool = False
    mtime_ns: int | None = None  # when it was last modified, as listed (with `size`: how a change is told)
    # (device, inode) of a local file with several names (hard links), which one shard reads; None for the others
    linked_file: tuple[int, int] | None = None


def walk_files(folder: str, *, limit: int | None = None, prune: Callable[[str], bool] | None = None,
               recursive: bool = True) -> Iterator[Listed]:
    """Regular files under a folder, never following a link: each link comes back itself (`link=True`) and a
    folder it names is not entered, so a walk stays inside `folder`. Stops after looking at `limit` entries;
    `prune(name)` says which subfolders not to enter. Object stores have no links: their listing as is."""
    if is_remote(folder):
        fs, path = resolve(folder)
        prefix = folder.split("://")[0] + "://"
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=recursive, allow_not_found=True))
        for seen, info in enumerate(infos, 1):
            if limit is not None and seen > limit:
                return
            folders = info.path[len(path.rstrip("/")) + 1 :].split("/")[:-1]
            if info.type == pafs.FileType.File and not (prune and any(map(prune, folders))):
                yield Listed(prefix + info.path, info.size or 0, mtime_ns=info.mtime_ns)
        return
    pending = [resolve(folder)[1]]
    seen = 0
    while pending:
        current = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name, reverse=True)
        except FileNotFoundError:
            continue
        for entry in entries:
            seen += 1
            if limit is not None and seen > limit:
                return
            if entry.is_symlink():
                yield Listed(entry.path, 0, link=True)
            elif entry.is_dir(follow_symlinks=False):
                if recursive and not (prune and prune(entry.name)):
                    pending.append(entry.path)
            elif entry.is_file(follow_symlinks=False):  # not a FIFO, socket or device: reading one could block
                st = entry.stat(follow_symlinks=False)
                yield Listed(entry.path, st.st_size, mtime_ns=st.st_mtime_ns,
                             linked_file=(st.st_dev, st.st_ino) if st.st_nlink > 1 else None)


def file_identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of a local file with several names (hard links), which are one file; None for a file with one
    name, or one that cannot be asked."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if st.st_nlink > 1 else None


_DIGESTS: dict[tuple[str, int, int], str] = {}  # (path, size, mtime in ns) -> digest: each file read once


def content_digest(path: str) -> str | None:
    """A digest of what a local file holds, or of every file under a local folder (with their relative paths);
    None for a path that names nothing here, or a remote one: what a recipe's word list, block list or model file
    says is part of what a job makes."""
    import xxhash

    if is_remote(path):
        return None
    root = Path(path).expanduser()
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file())
    else:
        return None
    whole = xxhash.xxh3_128()
    for file in files:
        stat = file.stat()
        key = (str(file.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in _DIGESTS:
            digest = xxhash.xxh3_128()
            with file.open("rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
            _DIGESTS[key] = digest.hexdigest()
        whole.update(f"{file.relative_to(root) if files != [root] else ''}:{_DIGESTS[key]}\n".encode())
    return whole.hexdigest()


class DamagedFile(OSError):
    """A file a job wrote that no longer reads (cut or damaged since, with its size kept): `filename` names it."""

    def __init__(self, message: str, filename: str) -> None:
        super().__init__(message)
        self.filename = filename

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # from a worker to the run: the name with it
        return type(self), (str(self.args[0]), str(self.filename))


def read_parquet(uri: str, columns: list[str] | None = None) -> pa.Table:
    """A job folder's Parquet file, read whole (`columns`: those only); `DamagedFile` naming it where its data no
    longer decompresses or decodes: the run's one line said `ZSTD decompression failed` of the whole job folder."""
    import pyarrow.parquet as pq

    fs, path = resolve(uri)
    try:
        return pq.read_table(path, columns=columns, filesystem=fs)
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        msg = (f"cut or damaged ({str(exc).splitlines()[0]}): remove it, and the job's folder where a rerun does not "
               "write it again")
        raise DamagedFile(msg, uri) from exc


def is_named(fs: pafs.FileSystem, path: str) -> bool:
    """Whether a path with wildcard characters is the name of a file or folder (`report [2].jsonl`): then it names
    that, not the files its brackets would match (`report 2.jsonl`, read instead, or none). `[[]` escapes a bracket
    where both exist and the pattern is meant."""
    return fs.get_file_info(path).type in (pafs.FileType.File, pafs.FileType.Directory)


def list_files(pattern: str) -> list[Listed]:
    """`expand_sized` for inputs, sorted: a link met while walking a folder or matching a wildcard is listed as a
    link, never followed (what it names may lie anywhere); a path named without wildcards is the user's choice
    and is followed, a link there listed as the real path of its target. A pattern ending in `/` names folders,
    which stand for their files (`files_pattern`)."""
    pattern = files_pattern(pattern)
    if is_remote(pattern):
        return _expand_listed(pattern)
    fs, path = resolve(pattern)  # resolves the links in the part the user named
    if not _WILDCARD.search(path) or is_named(fs, path):
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.File:
            return [Listed(path, info.size or 0, mtime_ns=info.mtime_ns, linked_file=file_identity(path))]
        return list_files(path.rstrip("/") + "/**") if info.type == pafs.FileType.Directory else []
    parts = path.split("/")
    first = next(i for i, part in enumerate(parts) if _WILDCARD.search(part))
    regex = glob_regex(path)
    walk = walk_files("/".join(parts[:first]) or "/", recursive="**" in path or len(parts) - first > 1)
    return sorted((found for found in walk if regex.match(found.uri)), key=lambda found: found.uri)


def pattern_root(pattern: str) -> str:
    """The folder a pattern names its files below, spelled as `canonical` spells them: a named folder itself, a
    named file's folder, or a wildcard's fixed part ("" for a wildcard in its first part)."""
    fs, path = resolve(pattern)
    prefix = pattern.split("://")[0] + "://" if is_remote(pattern) else ""
    parts = path.split("/")
    wild = next((i for i, part in enumerate(parts) if _WILDCARD.search(part)), None)
    if wild is not None:
        return prefix + "/".join(parts[:wild])
    if fs.get_file_info(path).type == pafs.FileType.Directory:
        return prefix + path.rstrip("/")
    return prefix + path.rsplit("/", 1)[0]


def literal_uri(path: str) -> str:
    """A local path as a `file://` URI, which `canonical` keeps as written where it resolves a plain path's links:
    how a link found in a folder reaches its reader as itself, not as its target."""
    return f"file://{path}"


def is_link(uri: str) -> bool:
    """Whether a local path or `file://` URI is itself a symbolic link (object stores have none)."""
    return not is_remote(uri) and Path(uri.removeprefix("file://")).is_symlink()


_CODECS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2", ".lz4": "lz4"}


def codec(uri: str) -> str | None:
    """The compression `open_text_stream` undoes for a file, from its extension in any case (`X.JSONL.GZ`: one
    `invalid_utf8` reject for the whole file, read as plain), None: plain."""
    lowered = uri.lower()
    return next((c for ext, c in _CODECS.items() if lowered.endswith(ext)), None)


def open_text_stream(uri: str) -> pa.NativeFile:
    """A sequential stream of a file's bytes, decompressed by its extension (same for every filesystem)."""
    fs, path = resolve(uri)
    stream = fs.open_input_stream(path, compression=None)
    compression = codec(path)
    return pa.CompressedInputStream(stream, compression) if compression else stream


def exists(uri: str) -> bool:
    """Whether a file is at this path or URI (a folder does not count)."""
    fs, path = resolve(uri)
    return fs.get_file_info(path).type == pafs.FileType.File


def file_sizes(folder: str, suffix: str = "") -> dict[str, int]:
    """{name without `suffix`: bytes} of the files directly in `folder` whose names end in `suffix` (none: {}): one
    listing, no file opened."""
    fs, path = resolve(folder)
    return {i.base_name.removesuffix(suffix): i.size
            for i in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
            if i.type == pafs.FileType.File and i.base_name.endswith(suffix)}


def delete(uri: str) -> None:
    """Delete the file at `uri`, if one is there."""
    fs, path = resolve(uri)
    if fs.get_file_info(path).type == pafs.FileType.File:
        fs.delete_file(path)


def is_folder(uri: str) -> bool:
    """Whether a folder is at this path or URI."""
    fs, path = resolve(uri)
    return fs.get_file_info(path).type == pafs.FileType.Directory


def write_bytes_atomic(uri: str, data: bytes) -> None:
    """Write under a temporary name, then rename: readers never see half a file."""
    fs, _ = resolve(uri)
    with temp_path(uri) as tmp, fs.open_output_stream(tmp) as out:  # a failed write (a full disk) leaves no .tmp
        out.write(data)


def write_json_atomic(uri: str, obj: Any, *, indent: int | None = 2) -> None:
    """`indent=None` for files only programs read: json's C encoder runs only without indentation (a token
    histogram took ~5 ms to write indented)."""
    write_bytes_atomic(uri, (json.dumps(obj, indent=indent, sort_keys=False, default=str) + "\n").encode())


def read_bytes(uri: str) -> bytes:
    """A file's bytes as stored (a `.gz` is not inflated)."""
    fs, path = resolve(uri)
    with fs.open_input_stream(path, compression=None) as f:
        return f.read()


def read_json(uri: str) -> Any:
    fs, path = resolve(uri)
    with fs.open_input_stream(path) as f:
        return json.loads(f.read())


@contextmanager
def temp_path(uri: str) -> Iterator[str]:
    """A temporary sibling of `uri` that becomes `uri` when the block ends without an error."""
    fs, path = resolve(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    tmp = temporary_name(path)
    try:
        yield tmp
    except BaseException:
        if fs.get_file_info(tmp).type == pafs.FileType.File:
            fs.delete_file(tmp)
        raise
    fs.move(tmp, path)


def temporary_name(path: str) -> str:
    """A sibling name for `path` while it is written: hidden (a leading `.`), as pyarrow's datasets and most tools
    skip such files (a `rejects/` dataset read a kill's 0-byte `x.parquet.<hex>.tmp` and failed), and ending `.tmp`
    (`remove_temporaries`)."""
    folder, _, name = path.rpartition("/")
    return f"{folder}/.{name}.{uuid.uuid4().hex[:8]}.tmp" if folder else f".{name}.{uuid.uuid4().hex[:8]}.tmp"


def remove_temporaries(folder: str) -> int:
    """Delete `*.tmp` files a crashed run left behind; returns how many."""
    fs, path = resolve(folder)
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    stale = [i.path for i in fs.get_file_info(selector) if i.type == pafs.FileType.File and i.path.endswith(".tmp")]
    for p in stale:
        fs.delete_file(p)
    return len(stale)


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts]) if "://" in base else str(Path(base).joinpath(*parts))


# Messages of storage faults that come as a bare OSError (pyarrow's S3/GCS clients, fastwarc's file reads);
# a bare OSError otherwise is pyarrow's word for bad content ("Truncated compressed stream", "zlib inflate
# failed", "Couldn't deserialize thrift").
_STORAGE_FAULT = re.compile(
    r"AWS Error|curl|google::cloud|timed? ?out|connection|network|unavailable|slow ?down|throttl|"
    r"stale file handle|input/output error|broken pipe|\(os error \d+\)|(?:HTTP|status|code)\D{0,16}\b50[0234]\b",
    re.IGNORECASE,
)


def is_io_error(exc: BaseException) -> bool:
    """Whether an exception says that reading failed (the file gone, a permission, a network or disk error:
    trying again may succeed), rather than that the content is bad (truncated, corrupt, not the format)."""
    if not isinstance(exc, OSError) or isinstance(exc, gzip.BadGzipFile | IsADirectoryError):
        return False  # EOFError, zlib.error, ValueError (ArrowInvalid, JSON), tar/zip errors: content
    if isinstance(exc, FileNotFoundError | PermissionError | ConnectionError | TimeoutError | InterruptedError):
        return True
    return exc.errno is not None or bool(_STORAGE_FAULT.search(str(exc)))
