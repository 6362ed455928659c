"""The recipe reference (docs/reference.md) as Markdown, rendered from the pydantic models that validate recipes:
every key of a curation recipe, of each document and corpus stage, of a training recipe and of an ablation file,
with its type, default and description. `curate schema --markdown` prints it; tests/test_reference.py checks
that the committed file is current."""

from __future__ import annotations

import json
import types
import typing
from typing import Any

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

from curation.recipe import Recipe
from curation.stages.registry import ALL_STAGES, CORPUS_STAGES, DOCUMENT_STAGES

COMMAND = "curate schema --markdown > docs/reference.md"
_BOUNDS = ((annotated_types.Gt, "gt", ">"), (annotated_types.Ge, "ge", ">="),
           (annotated_types.Lt, "lt", "<"), (annotated_types.Le, "le", "<="))
# A union of the models recipe.py makes for `stages:` entries (one per stage), named by what it holds.
_STAGE = "stage: `<name>: {keys}` ([document](#document-stages), [corpus](#corpus-stages))"


def _name(model: type[BaseModel]) -> str:
    return model.__qualname__.replace(".", "")  # `Length.Params` -> `LengthParams`, its heading and anchor


def _unwrapped(annotation: Any) -> Any:
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation


def _is_stage_entry(model: Any) -> bool:
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return False
    return len(model.model_fields) == 1 and next(iter(model.model_fields)) in ALL_STAGES


def _type(annotation: Any, found: list[type[BaseModel]]) -> str:
    """`annotation` in words a recipe author reads; the models it names are appended to `found`."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type(args[0], found)
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType) and all(_is_stage_entry(_unwrapped(a)) for a in args):
        return _STAGE
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type(a, found) for a in args)
    if origin in (list, tuple, set, frozenset):
        inner = [a for a in args if a is not Ellipsis]
        return f"list of {_type(inner[0], found)}" if inner else "list"
    if origin is dict:
        return f"map {_type(args[0], found)} → {_type(args[1], found)}" if args else "map"
    if annotation is type(None):
        return "null"
    if annotation is Any:
        return "any"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation not in found:
            found.append(annotation)
        return f"[{_name(annotation)}](#{_name(annotation).lower()})"
    return getattr(annotation, "__name__", str(annotation))


def _bounds(field: FieldInfo) -> str:
    out = [f"{sign} {getattr(m, attr)}" for m in field.metadata for kind, attr, sign in _BOUNDS
           if isinstance(m, kind)]
    return f" ({', '.join(out)})" if out else ""


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    try:
        value = field.get_default(call_default_factory=True, validated_data={})
    except ValidationError:  # a factory of a model with required keys: the key is optional, its keys are not
        return "none (its required keys must be given)"
    if value is PydanticUndefined:
        return ""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
        return "its keys' defaults" if value else "`{}`"
    return f"`{json.dumps(to_jsonable_python(value), ensure_ascii=False)}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(model: type[BaseModel], found: list[type[BaseModel]]) -> list[str]:
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for key, field in model.model_fields.items():
        kind = _type(field.annotation, found)
        lines.append(f"| `{key}` | {kind}{_bounds(field)} | {_default(field)} | {_cell(field.description or '')} |")
    return lines


def _summary(obj: Any) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join((obj.__doc__ or "").strip().split("\n\n")[0].split())


def _models(found: list[type[BaseModel]], done: set[type[BaseModel]]) -> list[str]:
    """A section per model the tables so far name, and per model those name in turn, each once in the whole
    reference (a later table links to the first)."""
    lines: list[str] = []
    while todo := [m for m in found if m not in done]:
        model = todo[0]
        done.add(model)
        lines += ["", f"### {_name(model)}", "", *([_summary(model), ""] if _summary(model) else []),
                  *_table(model, found)]
    return lines


def _section(title: str, intro: str, root: type[BaseModel], done: set[type[BaseModel]]) -> list[str]:
    found: list[type[BaseModel]] = []
    done.add(root)
    return [f"## {title}", "", intro, "", *_table(root, found), *_models(found, done), ""]


def _stages(title: str, intro: str, stages: dict[str, Any], done: set[type[BaseModel]]) -> list[str]:
    lines, found = [f"## {title}", "", intro], []
    for name, stage in stages.items():
        lines += ["", f"### `{name}`", "", _summary(stage), "", *_table(stage.Params, found)]
    return [*lines, *_models(found, done), ""]


def reference() -> str:
    """docs/reference.md: the whole reference, deterministic for a given version of the models."""
    from curation.ablate.spec import Ablation
    from curation.train.config import TrainRecipe

    done: set[type[BaseModel]] = set()
    lines = [
        "# Recipe reference",
        "",
        f"Generated from the recipe models by `{COMMAND}` (or `make reference`); do not edit it by hand. "
        "`curate schema` prints the same as JSON Schema, for editor completion; `curate validate FILE` checks a "
        "recipe, a training recipe or an ablation file against it.",
        "",
        "- [Curation recipe](#curation-recipe) (`curate run`)",
        "- [Document stages](#document-stages)",
        "- [Corpus stages](#corpus-stages)",
        "- [Training recipe](#training-recipe) (`curate train`)",
        "- [Ablation file](#ablation-file) (`curate ablate`)",
        "",
        *_section("Curation recipe", _summary(Recipe) + " Unknown keys are errors.", Recipe, done),
        *_stages("Document stages", "Each document stage judges or rewrites one document at a time, in the order "
                 "of `stages:`. Every stage also takes `only:` (a list of source names).", DOCUMENT_STAGES, done),
        *_stages("Corpus stages", "Corpus stages come after every document stage and see the whole corpus.",
                 CORPUS_STAGES, done),
        *_section("Training recipe", _summary(TrainRecipe), TrainRecipe, done),
        *_section("Ablation file", _summary(Ablation), Ablation, done),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"
