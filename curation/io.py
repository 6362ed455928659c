"""Paths and URIs (local, file://, s3://, gs://) through `pyarrow.fs`, globbing and atomic writes."""

from __future__ import annotations

import functools
import json
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

_WILDCARD = re.compile(r"[*?\[]")


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the path inside it for a local path or a URI.

    `s3://` honours AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL (MinIO, Ceph, R2 and other S3-compatible
    stores), as the AWS SDKs and CLI do; credentials and region come from the usual AWS variables.
    """
    if "://" not in uri:
        return pafs.LocalFileSystem(), str(Path(uri).expanduser().resolve())
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


def _glob_regex(pattern: str) -> re.Pattern[str]:
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
            out.append(pattern[i : end + 1] if end > 0 else re.escape("["))
            i = end + 1 if end > 0 else i + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def expand(pattern: str) -> list[str]:
    """Files matching a path or URI with `*`, `?`, `[..]` and `**`, sorted; URIs keep their scheme."""
    return [uri for uri, _ in expand_sized(pattern)]


def expand_sized(pattern: str) -> list[tuple[str, int]]:
    """`expand` with each file's size in bytes (the listing has it: no extra request per file)."""
    fs, path = resolve(pattern)
    prefix = "" if "://" not in pattern or pattern.startswith("file://") else pattern.split("://")[0] + "://"
    if not _WILDCARD.search(path):
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.File:
            return [(prefix + path, info.size or 0)]
        if info.type == pafs.FileType.Directory:
            return expand_sized(pattern.rstrip("/") + "/**")
        return []
    parts = path.split("/")
    first = next(i for i, part in enumerate(parts) if _WILDCARD.search(part))
    base = "/".join(parts[:first]) or "/"
    recursive = "**" in path or len(parts) - first > 1
    selector = pafs.FileSelector(base, recursive=recursive, allow_not_found=True)
    regex = _glob_regex(path)
    found = [
        (prefix + info.path, info.size or 0)
        for info in fs.get_file_info(selector)
        if info.type == pafs.FileType.File and regex.match(info.path)
    ]
    return sorted(found)


_CODECS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2", ".lz4": "lz4"}


def open_text_stream(uri: str) -> pa.NativeFile:
    """A sequential stream of a file's bytes, decompressed by its extension (same for every filesystem)."""
    fs, path = resolve(uri)
    stream = fs.open_input_stream(path, compression=None)
    codec = next((c for ext, c in _CODECS.items() if path.endswith(ext)), None)
    return pa.CompressedInputStream(stream, codec) if codec else stream


def exists(uri: str) -> bool:
    """Whether a file is at this path or URI (a folder does not count)."""
    fs, path = resolve(uri)
    return fs.get_file_info(path).type == pafs.FileType.File


def write_bytes_atomic(uri: str, data: bytes) -> None:
    """Write under a temporary name, then rename: readers never see half a file."""
    fs, path = resolve(uri)
    parent = path.rsplit("/", 1)[0]
    fs.create_dir(parent, recursive=True)
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    with fs.open_output_stream(tmp) as out:
        out.write(data)
    fs.move(tmp, path)


def write_json_atomic(uri: str, obj: Any, *, indent: int | None = 2) -> None:
    """`indent=None` for files only programs read: json's C encoder runs only without indentation (a token
    histogram took ~5 ms to write indented)."""
    write_bytes_atomic(uri, (json.dumps(obj, indent=indent, sort_keys=False, default=str) + "\n").encode())


def read_json(uri: str) -> Any:
    fs, path = resolve(uri)
    with fs.open_input_stream(path) as f:
        return json.loads(f.read())


@contextmanager
def temp_path(uri: str) -> Iterator[str]:
    """A temporary sibling of `uri` that becomes `uri` when the block ends without an error."""
    fs, path = resolve(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        yield tmp
    except BaseException:
        if fs.get_file_info(tmp).type == pafs.FileType.File:
            fs.delete_file(tmp)
        raise
    fs.move(tmp, path)


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
