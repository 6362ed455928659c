"""The curation jobs an ablation needs: each stage prefix that variants share runs once.

Every variant's recipe is a chain: its sources, then its stages in order. Chains are laid over each other
as a tree, a node per stage prefix (keyed by the sources and the stages up to it). A node becomes a job
(a job folder, `curate run`'s own) where a variant's chain ends (its documents) and where two or more chains
part (the prefix they share); a job runs the stages between the job it continues from and itself. The first
job of a chain reads the sources; the next ones read the documents of the job before them, as `parquet`
sources, through the `restore` stage (`curation.ablate.restore`), which gives every document back its id,
source, title, metadata and the columns earlier stages added: the continuing job's documents are those of
the variant's recipe run in one job. Job folders are keyed by the recipe's fingerprint, so a job that an
earlier run (or another ablation sharing the jobs folder) finished is not run again.

Documents hold no raw pages: a prefix is cut only where no later stage of any chain through it reads them
(extraction, language ID on HTML), else those chains run the prefix's stages themselves.

Packing comes after: each variant's documents are packed by a job of their own (no stage; the variant's
mixture, the ablation's one tokenizer and its `pack`), so variants that differ only in their mixture share
all of their curation.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from curation.job import document_files
from curation.recipe import Recipe
from curation.shards import list_shards
from curation.stages.registry import DOCUMENT_STAGES

# Continuing jobs read documents the previous job wrote: none may be refused for its size.
NO_LIMIT = 1 << 62


@dataclass
class Node:
    key: str  # the stage prefix: hash of the sources and the stages up to here
    depth: int  # stages from the sources
    parent: str | None  # the job whose documents it reads; None: it reads the sources
    stages: list[dict[str, Any]]  # the stage entries it runs (those after its parent's)
    recipe: Recipe  # a variant recipe through it: sources, seed, rejects, executor
    variants: list[str] = field(default_factory=list)  # variants whose chain of jobs holds it


@dataclass
class CurationPlan:
    jobs: dict[str, Node]  # parents before their children
    chains: dict[str, list[str]]  # variant -> its jobs in order, the last one holding its documents

    def documents_job(self, variant: str) -> Node:
        return self.jobs[self.chains[variant][-1]]

    def shared(self) -> list[Node]:
        return [node for node in self.jobs.values() if len(node.variants) > 1]


def _entries(recipe: Recipe) -> list[dict[str, Any]]:
    return [entry.model_dump(mode="json") for entry in recipe.stages]


def _root(recipe: Recipe) -> dict[str, Any]:
    """What decides a chain's documents besides its stages (as the fingerprint sees it, less the end of it)."""
    how = {"executor", "ray", "local", "output", "name", "stages", "mixture", "tokenizer", "pack"}
    return recipe.model_dump(mode="json", exclude={**dict.fromkeys(how, True),
                                                   "sources": {"__all__": {"read_attempts", "read_backoff_s"}}})


def _keys(recipe: Recipe) -> list[str]:
    root, entries = _root(recipe), _entries(recipe)
    return [hashlib.sha256(json.dumps([root, entries[:k]], sort_keys=True).encode()).hexdigest()[:16]
            for k in range(len(entries) + 1)]


def reads_pages(entry: dict[str, Any]) -> bool:
    kind = next(iter(entry))
    return kind in DOCUMENT_STAGES and "html" in DOCUMENT_STAGES[kind].input_columns


def plan_curation(recipes: dict[str, Recipe]) -> CurationPlan:
    """The jobs of variants' recipes (by variant name) and each variant's chain of them."""
    keys = {v: _keys(r) for v, r in recipes.items()}
    entries = {v: _entries(r) for v, r in recipes.items()}
    passing: dict[str, set[str]] = {}  # node -> the distinct chains (their last keys) through it
    children: dict[str, set[str]] = {}
    ends: set[str] = set()
    cuttable: dict[str, bool] = {}  # no chain through the node reads pages after it
    for v, chain in keys.items():
        ends.add(chain[-1])
        for k, key in enumerate(chain):
            passing.setdefault(key, set()).add(chain[-1])
            if k + 1 < len(chain):
                children.setdefault(key, set()).add(chain[k + 1])
            later_pages = any(reads_pages(e) for e in entries[v][k:])
            cuttable[key] = cuttable.get(key, True) and not later_pages

    def is_job(key: str, depth: int) -> bool:
        parts = depth > 0 and len(passing[key]) > 1 and len(children.get(key, ())) > 1
        return key in ends or (parts and cuttable[key])

    jobs: dict[str, Node] = {}
    chains: dict[str, list[str]] = {}
    for v, chain in sorted(keys.items(), key=lambda item: len(item[1])):
        parent, parent_depth, mine = None, 0, []
        for depth, key in enumerate(chain):
            last = depth == len(chain) - 1
            if not (last or (is_job(key, depth) and cuttable[key])):
                continue
            if key not in jobs:
                jobs[key] = Node(key, depth, parent, entries[v][parent_depth:depth], recipes[v])
            jobs[key].variants.append(v)
            mine.append(key)
            if cuttable[key] and is_job(key, depth):
                parent, parent_depth = key, depth
        chains[v] = mine
    ordered = dict(sorted(jobs.items(), key=lambda item: item[1].depth))
    return CurationPlan(ordered, {v: chains[v] for v in recipes})


def continuation_sources(parent: Recipe, parent_job: str) -> list[dict[str, Any]]:
    """`parquet` sources reading a job's documents, one per source of the job, under the source's name (the
    `restore` stage gives the documents back their own fields). A source none of whose documents is left
    has none; a job that kept no document at all is an error (its variants have nothing to train on)."""
    files = document_files(parent_job)
    if not files:
        msg = f"{parent_job} kept no documents: nothing to continue from (see its stats.json)"
        raise ValueError(msg)
    by_source: dict[str, list[str]] = {s.name: [] for s in parent.sources}
    for shard in list_shards(parent):
        if shard.name in files:
            by_source[shard.source].append(files[shard.name])
    return [{"name": name, "format": "parquet", "paths": sorted(paths), "max_record_bytes": NO_LIMIT,
             "max_decompression_ratio": None} for name, paths in by_source.items() if paths]


def _recipe(template: Recipe, name: str, output: str, **fields: Any) -> Recipe:
    body = template.model_dump(mode="json")
    body.update(name=name, output=output, mixture=None, tokenizer=None, pack=None, **fields)
    return Recipe.model_validate(body)


def node_recipe(node: Node, name: str, output: str, parent: tuple[Recipe, str] | None) -> Recipe:
    """The recipe of a curation job of the plan: its stages over the sources, or over the documents of
    `parent` (its recipe and job folder)."""
    sources = {} if parent is None else {"sources": continuation_sources(*parent)}
    return _recipe(node.recipe, name, output, stages=node.stages, **sources)


def pack_recipe(variant: Recipe, documents: tuple[Recipe, str], name: str, output: str, tokenizer_model: str,
                pack: dict[str, Any], held_out: float | None = None) -> Recipe:
    """The job packing a variant's documents (the job `documents` names) with the ablation's tokenizer (trained
    without the `held_out` share of documents, if given): no stage, the variant's mixture over the sources that
    kept documents."""
    sources = continuation_sources(*documents)
    kept = {s["name"] for s in sources}
    mixture = None
    if variant.mixture is not None:
        mixture = variant.mixture.model_dump(mode="json")
        for kind in ("weights", "tokens"):
            if mixture[kind] is not None:
                mixture[kind] = {s: w for s, w in mixture[kind].items() if s in kept}
    body = _recipe(variant, name, output, stages=[], sources=sources).model_dump(mode="json")
    tokenizer = {"model": tokenizer_model} | ({"held_out": held_out} if held_out is not None else {})
    body.update(mixture=mixture, tokenizer=tokenizer, pack=pack)
    return Recipe.model_validate(body)
