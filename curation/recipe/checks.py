"""Checks between a recipe's keys that no one key's schema can state: names that refer to sources, stage order,
tokenizer, pack and mixture given together."""

from __future__ import annotations

import pyarrow as pa

from curation.dedup.bloom_dedup import BloomDedup
from curation.dedup.minhash_dedup import MinhashDedup
from curation.recipe.models import Recipe
from curation.stages.extract import Extract
from curation.stages.registry import CORPUS_STAGES, DOCUMENT_STAGES
from curation.yaml_model import Located


def cross_checks(recipe: Recipe) -> list[Located]:
    out: list[Located] = []
    names = [s.name for s in recipe.sources]
    for i, name in enumerate(names):
        if names.index(name) != i:
            out.append((("sources", i, "name"), f"source name {name!r} is used twice"))
    out += _token_checks(recipe, names)
    out += _page_checks(recipe)
    out += _score_checks(recipe)
    seen_corpus = rewriting = None
    for i, (_, kind, params) in enumerate(recipe.stage_specs()):
        if kind in CORPUS_STAGES and rewriting:
            out.append((("stages", i, kind), f"corpus stage {kind!r} after {rewriting!r}, which rewrites text: "
                        "put paragraph-level bloom_dedup last among the corpus stages"))
        if kind == BloomDedup.name and getattr(params, "level", None) == "paragraph":
            rewriting = kind
        if kind in CORPUS_STAGES:
            seen_corpus = seen_corpus or kind
        elif seen_corpus:
            out.append((("stages", i, kind), f"document stage {kind!r} after corpus stage {seen_corpus!r}: "
                        "corpus stages (deduplication) come after all document stages"))
        for j, src in enumerate(getattr(params, "only", None) or []):
            if src not in names:
                out.append((("stages", i, kind, "only", j), f"no source named {src!r} (sources: {', '.join(names)})"))
    return out


def _score_checks(recipe: Recipe) -> list[Located]:
    """A deduplication stage's `score_column` names a number column that a document stage before it adds (a filter's
    scores, with `keep_scores`): a name none gave ended the run in a traceback, after every document stage had run."""
    out: list[Located] = []
    numbers: list[str] = []
    for i, (name, kind, params) in enumerate(recipe.stage_specs()):
        if kind in DOCUMENT_STAGES:
            added = DOCUMENT_STAGES[kind].from_params(params).added()
            numbers += [column for column, kind_of in added.items()
                        if pa.types.is_integer(kind_of) or pa.types.is_floating(kind_of)]
        elif (column := getattr(params, "score_column", None)) is not None and column not in numbers:
            given = ", ".join(dict.fromkeys(numbers)) or "none"
            out.append((("stages", i, kind, "score_column"), f"no stage before {name!r} adds a number column "
                        f"{column!r} (those added: {given}; a filter adds its scores with `keep_scores: true`)"))
    return out


def _page_checks(recipe: Recipe) -> list[Located]:
    """A WARC source's documents are pages, their text null until `extract` makes it (and those of a JSONL or
    Parquet source with `html_field`): a stage that reads text (and the packing) before any `extract` for it judged
    nothing, or kept documents without text."""
    out: list[Located] = []
    for i, source in enumerate(recipe.sources):
        if source.html_field is not None and source.format not in ("jsonl", "parquet"):
            out.append((("sources", i, "html_field"), f"`html_field` names a field of JSONL or Parquet rows; "
                        f"{source.format} sources have none"))
            continue
        if source.format != "warc" and source.html_field is None:
            continue
        for j, (name, kind, params) in enumerate(recipe.stage_specs()):
            if (only := getattr(params, "only", None)) is not None and source.name not in only:
                continue
            if kind == Extract.name:
                break
            stage = DOCUMENT_STAGES.get(kind)
            if stage is None or ("html" not in stage.input_columns and stage.input_columns != ("url",)):
                out.append((("stages", j, kind), f"stage {name!r} reads text, and source {source.name!r} "
                            f"({source.format}{' with html_field' if source.html_field else ''}) has its pages' HTML "
                            "only until an `extract` stage before it makes their text"))
                break
        else:
            what = "WARC pages" if source.html_field is None else f"pages (`html_field: {source.html_field}`)"
            out.append((("sources", i, "html_field" if source.html_field else "format"), f"source {source.name!r} "
                        f"reads {what}, whose text none of the `stages` makes: add `- extract: {{}}` (`only: [...]` "
                        "names the sources it reads)" + (", or read WET files (`format: wet`), which hold the text"
                                                         if source.html_field is None else "")))
    return out


def _token_checks(recipe: Recipe, names: list[str]) -> list[Located]:
    out: list[Located] = []
    if (recipe.tokenizer is None) != (recipe.pack is None):
        given, missing = ("tokenizer", "pack") if recipe.pack is None else ("pack", "tokenizer")
        out.append(((given,), f"`{given}` needs `{missing}` as well: tokens are packed into shards"))
    if recipe.mixture is not None:
        if recipe.pack is None:
            out.append((("mixture",), "`mixture` weighs output tokens: it needs `tokenizer` and `pack`"))
        kind = "weights" if recipe.mixture.weights is not None else "tokens"
        given = recipe.mixture.sources()
        for name in given:
            if name not in names:
                out.append((("mixture", kind, name), f"no source named {name!r} (sources: {', '.join(names)})"))
        for name in names:
            if name not in given:
                out.append((("mixture", kind), f"source {name!r} has no entry; give it 0 to leave it out"))
        sizes = any(kind == MinhashDedup.name and getattr(params, "cluster_size", False)
                    for _, kind, params in recipe.stage_specs())
        if recipe.mixture.rehydrate is not None and not sizes:
            out.append((("mixture", "rehydrate"), "`rehydrate` repeats documents by their duplicate cluster's size: "
                        "it needs `minhash_dedup: {cluster_size: true}` among the stages"))
    return out


