"""Recipe YAML -> validated pydantic models, with errors that point at file, line and column.

The entry point: `parse_recipe` / `load_recipe` give a `Recipe` or raise `RecipeError`. Its parts: the models
(`models`), the checks between keys (`checks`) and on the filesystem (`inputs`), the YAML reading and locating
(`curation.yaml_model`) and the stages a recipe can name (`curation.stages.registry`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curation.lang import settings_file
from curation.recipe.checks import cross_checks
from curation.recipe.inputs import output_problems, path_checks
from curation.recipe.models import MAX_NAME_CHARS, RayConfig, Recipe, Source, StageEntry, unknown_stage
from curation.yaml_model import Problem, RecipeError, compose_yaml, parse_yaml_model, problem_at, read_recipe_text

__all__ = [
    "MAX_NAME_CHARS", "Problem", "RayConfig", "Recipe", "RecipeError", "Source", "StageEntry", "json_schema",
    "load_recipe", "output_problems", "parse_recipe", "unknown_stage",
]


def parse_recipe(text: str, file: str = "<recipe>", *, check_paths: bool = True) -> Recipe:
    """Validate a recipe; raise `RecipeError` listing every problem with its line and column (a problem in
    its language settings file, at that file's line and column)."""
    recipe = parse_yaml_model(
        text, file, Recipe, lambda r: cross_checks(r) + (path_checks(r) if check_paths else []),
        what="a recipe is a YAML mapping (name:, sources:, stages: ...)", describe=unknown_stage)
    return _with_language_settings(recipe, text, file) if recipe.language_settings else recipe


def _with_language_settings(recipe: Recipe, text: str, file: str) -> Recipe:
    """`recipe` with its `language_settings` file merged into the stages it names (curation.lang.settings_file)."""
    path = str(recipe.language_settings)
    try:
        body = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise RecipeError([problem_at(compose_yaml(text), file, ("language_settings",),
                                      f"cannot read the language settings file {path!r}: {reason}")]) from None
    settings = parse_yaml_model(body, path, settings_file.settings_file_model(), settings_file.checks,
                                what="a language settings file is a YAML mapping (stages: ...)")
    stages = []
    for entry in recipe.stages:
        kind = next(iter(type(entry).model_fields))
        stages.append(entry.model_copy(update={kind: settings_file.merged(kind, getattr(entry, kind), settings)}))
    return recipe.model_copy(update={"stages": stages})


def load_recipe(path: str | Path, *, check_paths: bool = True) -> Recipe:
    return parse_recipe(read_recipe_text(path), str(path), check_paths=check_paths)


def json_schema() -> dict[str, Any]:
    schema = Recipe.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "curation recipe"
    return schema
