"""Input shards: every file matched by a source's paths, named stably for resume.

A symbolic link met while walking a folder or matching a wildcard is never followed: what it names may lie
anywhere (a repository's link to the system's password file). It is a shard of its own, spelled so that it
reaches `read_shard` as the link itself, which counts it as one `link` skip without opening it, whatever the
format. A link named in `paths` itself is the user's choice and is read.

A shard's name and its documents' ids derive from the file's path below its source's root (the folder all of
the source's `paths` name their files below), never from where that root lies: the same data copied or
mounted elsewhere is the same job (the same ids, so the same tokenizer and mixture samples, and the same
order of shards).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow.fs as pafs

from curation import schema, storage
from curation.code.paths import in_vcs_folder


class Sources(Protocol):
    """What the listing reads of a recipe: its sources, each with a `name` and `paths` (`curation.recipe.Recipe`,
    not imported here: the recipe's checks list shards)."""

    sources: Sequence[Any]


@dataclass(frozen=True)
class Shard:
    name: str  # unique in the job, stable across reruns: source, file stem, hash of the key
    source: str
    uri: str
    key: str  # the file's path below its source's root: what its documents' ids hash
    size: int = 0  # bytes, as listed
    mtime_ns: int | None = None  # last modified, as listed (None: a link, never read through)


def shard_name(source: str, key: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", key.rsplit("/", 1)[-1])[:60]
    # a file name that is not UTF-8 hashes as its bytes on disk
    digest = hashlib.blake2b(schema.utf8_or_raw(key), digest_size=5).hexdigest()
    return f"{source}-{stem}-{digest}"


def source_root(patterns: list[str]) -> str:
    """The deepest folder every pattern names its files below ("" where they share none: a local and a remote
    one). From the patterns alone, not the files they match, so a file added later changes no other key."""
    roots = [storage.pattern_root(p).split("/") for p in patterns]
    common = 0
    while all(len(r) > common and r[common] == roots[0][common] for r in roots):
        common += 1
    return "/".join(roots[0][:common])


def file_key(uri: str, root: str) -> str:
    """A file's path below `root` (its whole canonical spelling where it lies elsewhere)."""
    spelled = storage.canonical(uri)
    return spelled[len(root) + 1 :] if root and spelled.startswith(root + "/") else spelled


def list_shards(recipe: Sources) -> list[Shard]:
    """The recipe's input files, each a shard; a version-control folder's files (`.git/`...) are no input, in a
    repository folder that `**` walks or anywhere else, and a file with several names (hard links) is read once by a
    source, by the first of its names (two sources reading it are refused: `curation.recipe.inputs`)."""
    shards: dict[str, Shard] = {}
    for source in recipe.sources:
        names: set[tuple[int, int]] = set()  # files with several names: one is read (two shards doubled its documents)
        root = source_root(source.paths)
        for pattern in source.paths:
            for found in storage.list_files(pattern):
                uri = storage.literal_uri(found.uri) if found.link else found.uri
                key = file_key(uri, root)
                if in_vcs_folder(key) or found.linked_file in names:
                    continue
                if found.linked_file is not None:
                    names.add(found.linked_file)
                name = shard_name(source.name, key)
                shards.setdefault(name, Shard(name, source.name, uri, key, found.size, found.mtime_ns))
    return list(shards.values())


def input_fingerprint(shard: Shard) -> dict[str, int] | None:
    """What tells that a shard's input changed without reading it: its size and modification time, as listed
    (None for a link, which is never read through)."""
    return None if shard.mtime_ns is None else {"size": shard.size, "mtime_ns": shard.mtime_ns}


GONE = "is gone: no file the recipe's paths list reads as it now"


def changed_while_read(shard: Shard, before: dict[str, int] | None) -> str | None:
    """How a shard's input differs now from `before`, its fingerprint as its read began, or None: a file cut, grown,
    rewritten or swapped for a link while it was read gave part of one version, which a record of the listed size
    and time kept for good (a rerun found the file restored, and skipped it: 26,675 documents lost)."""
    if before is None:
        return None
    if storage.is_link(shard.uri):
        return f"{shard.uri} is a link now"
    fs, path = storage.resolve(shard.uri)
    info = fs.get_file_info(path)
    if info.type != pafs.FileType.File:
        return f"{shard.uri} is gone"
    now = {"size": info.size or 0, "mtime_ns": info.mtime_ns}
    return None if now == before else f"{shard.uri} changed ({_difference(before, now)})"


def _difference(before: dict[str, int], now: dict[str, int]) -> str:
    """What differs between two fingerprints, in words: the size, or the modification time to the nanosecond it is
    compared at (rounded to milliseconds, two times that differ read the same)."""
    if before["size"] != now["size"]:
        return f"size {before['size']} -> {now['size']} bytes"
    when = [time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ns // 10**9)) + f".{ns % 10**9:09d}"
            for ns in (before["mtime_ns"], now["mtime_ns"])]
    return f"modified {when[0]} -> {when[1]}, same size"


def changed_inputs(shards: list[Shard], done: dict[str, dict]) -> dict[str, str]:
    """{shard: how its input changed} for the shards `done` records (`_shards/` records) whose input is not
    the file they were read from: another size or modification time than the record's `input` (a record
    without one, written before inputs were fingerprinted, is taken as is), or no longer listed."""
    changed = {}
    for shard in shards:
        before = (done.get(shard.name) or {}).get("input")
        now = input_fingerprint(shard)
        if before and now is None:  # read as a file, a link now (swapped while the job ran, or since): not followed
            changed[shard.name] = f"{shard.uri} is a link now, which is not followed"
        elif before and now != before:
            changed[shard.name] = f"{shard.uri} changed ({_difference(before, now)})"
    listed = {shard.name for shard in shards}
    for name in sorted(set(done) - listed):  # its documents would stay in the job's output
        changed[name] = GONE
    return changed
