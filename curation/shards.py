"""Input shards: every file matched by a source's paths, named stably for resume.

A symbolic link met while walking a folder or matching a wildcard is never followed: what it names may lie
anywhere (a repository's link to the system's password file). It is a shard of its own, spelled so that it
reaches `read_shard` as the link itself, which counts it as one `link` skip without opening it, whatever the
format. A link named in `paths` itself is the user's choice and is read.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from curation import io, schema

if TYPE_CHECKING:
    from curation.recipe import Recipe


@dataclass(frozen=True)
class Shard:
    name: str  # unique in the job, stable across reruns: source, file stem, hash of the URI
    source: str
    uri: str
    size: int = 0  # bytes, as listed


def shard_name(source: str, uri: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", uri.rsplit("/", 1)[-1])[:60]
    # a file name that is not UTF-8 hashes as its bytes on disk
    digest = hashlib.blake2b(schema.utf8_or_raw(io.canonical(uri)), digest_size=5).hexdigest()
    return f"{source}-{stem}-{digest}"


def list_shards(recipe: Recipe) -> list[Shard]:
    shards: dict[str, Shard] = {}
    for source in recipe.sources:
        for pattern in source.paths:
            for found in io.list_files(pattern):
                uri = io.literal_uri(found.uri) if found.link else found.uri
                name = shard_name(source.name, uri)
                shards.setdefault(name, Shard(name, source.name, uri, found.size))
    return list(shards.values())
