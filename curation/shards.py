"""Input shards: every file matched by a source's paths, named stably for resume."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from curation import io
from curation.recipe import Recipe


@dataclass(frozen=True)
class Shard:
    name: str  # unique in the job, stable across reruns: source, file stem, hash of the URI
    source: str
    uri: str
    size: int = 0  # bytes, as listed


def shard_name(source: str, uri: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", uri.rsplit("/", 1)[-1])[:60]
    digest = hashlib.blake2b(io.canonical(uri).encode(), digest_size=5).hexdigest()
    return f"{source}-{stem}-{digest}"


def list_shards(recipe: Recipe) -> list[Shard]:
    shards: dict[str, Shard] = {}
    for source in recipe.sources:
        for pattern in source.paths:
            for uri, size in io.expand_sized(pattern):
                name = shard_name(source.name, uri)
                shards.setdefault(name, Shard(name, source.name, uri, size))
    return list(shards.values())
