"""A variant's overrides applied to the base recipe: the curation recipe the variant stands for."""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from curation.mixture import MixtureParams
from curation.recipe import Recipe, RecipeError, Source, StageEntry, parse_recipe
from curation.stages.registry import ALL_STAGES, CORPUS_STAGES

Problems = list[tuple[tuple[Any, ...], str]]


class Variant(BaseModel):
    """Overrides of the base recipe, applied in this order: `stages`, `remove`, `settings`, `add`; `sources` and
    `mixture` replace the base's."""

    model_config = ConfigDict(extra="forbid")

    description: str | None = Field(None, description="What the variant tests, for the result table's readers.")
    stages: list[StageEntry] | None = Field(None, description="The whole list of stages, instead of the base's.")
    remove: list[str] = Field(default_factory=list, description="Stages to leave out, by name (`length`, or "
                              "`length_2` for a kind's second stage).")
    settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per stage name, keys that replace the stage's settings.")
    add: list[StageEntry] = Field(default_factory=list, description="Stages appended after the document stages "
                                  "(before any corpus stage).")
    sources: list[Source] | None = Field(None, description="The sources, instead of the base's.")
    mixture: MixtureParams | None = Field(None, description="Output token shares, instead of the base's "
                                          "(`mixture: null` leaves every source at its natural share).")


def _kind(entry: dict[str, Any]) -> str:
    return next(iter(entry))


def stage_names(entries: list[dict[str, Any]]) -> list[str]:
    """Each stage's name as `Recipe.stage_specs` gives it: its kind, `kind_2` for the kind's second one..."""
    seen: dict[str, int] = {}
    names = []
    for entry in entries:
        kind = _kind(entry)
        seen[kind] = seen.get(kind, 0) + 1
        names.append(kind if seen[kind] == 1 else f"{kind}_{seen[kind]}")
    return names


def _body(base: Recipe, variant: Variant) -> tuple[dict[str, Any], Problems]:
    """The variant's recipe as a mapping, and what in its overrides names nothing or does not validate."""
    body = base.model_dump(mode="json")
    problems: Problems = []
    entries = body["stages"] if variant.stages is None else [e.model_dump(mode="json") for e in variant.stages]
    names = stage_names(entries)
    for i, name in enumerate(variant.remove):
        if name not in names:
            problems.append((("remove", i), f"no stage named {name!r} (stages: {', '.join(names) or 'none'})"))
    for name, settings in variant.settings.items():
        if name not in names:
            problems.append((("settings", name), f"no stage named {name!r} (stages: {', '.join(names) or 'none'})"))
            continue
        entry = entries[names.index(name)]
        kind = _kind(entry)
        merged = {**entry[kind], **settings}
        try:
            ALL_STAGES[kind].Params.model_validate(merged)
        except ValidationError as exc:
            problems += [(("settings", name, *e["loc"]), e["msg"]) for e in exc.errors()]
            continue
        entries[names.index(name)] = {kind: merged}
    kept = [e for e, n in zip(entries, names, strict=True) if n not in variant.remove]
    added = [e.model_dump(mode="json") for e in variant.add]
    at = max((i + 1 for i, e in enumerate(kept) if _kind(e) not in CORPUS_STAGES), default=0)
    body["stages"] = kept[:at] + added + kept[at:]
    if variant.sources is not None:
        body["sources"] = [s.model_dump(mode="json") for s in variant.sources]
    if "mixture" in variant.model_fields_set:
        body["mixture"] = None if variant.mixture is None else variant.mixture.model_dump(mode="json")
    return body, problems


def _override_of(variant: Variant, path: str) -> tuple[Any, ...]:
    """The variant's key a problem of its recipe (at `path` in it) comes from; () for the base's own."""
    top = path.split(".", 1)[0].split("[", 1)[0]
    keys = {"stages": ("stages", "add", "settings", "remove"), "sources": ("sources",), "mixture": ("mixture",)}
    given = variant.model_fields_set
    return next(((key,) for key in keys.get(top, ()) if key in given), ())


def variant_problems(base: Recipe, variant: Variant) -> Problems:
    """Each problem of a variant, located at its own keys: overrides that name no stage or do not validate, and
    what the recipe they make breaks (a mixture naming a removed source, a corpus stage before a document
    stage, an input that does not exist)."""
    body, problems = _body(base, variant)
    if problems:
        return problems
    try:
        parse_recipe(yaml.safe_dump(body, sort_keys=False), "<variant>")
    except RecipeError as exc:
        return [(_override_of(variant, p.path), f"{p.path}: {p.message}" if p.path else p.message)
                for p in exc.problems]
    return []


def variant_recipe(base: Recipe, variant: Variant) -> Recipe:
    """The variant's curation recipe (its overrides were checked when the ablation was loaded)."""
    body, problems = _body(base, variant)
    if problems:
        msg = "; ".join(f"{'.'.join(map(str, loc))}: {message}" for loc, message in problems)
        raise ValueError(msg)
    return parse_recipe(yaml.safe_dump(body, sort_keys=False), "<variant>", check_paths=False)
