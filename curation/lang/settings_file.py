"""Language settings files: per-language stage settings kept outside a recipe (`curate calibrate` writes them),
which a recipe names with `language_settings: path`.

The file has the shape of the recipe's own stage keys, per stage, per language:

    stages:
      gopher_quality: {languages: {de: {min_avg_word_length: 3.9, max_avg_word_length: 7.2}}}
      fineweb: {languages: {de: {line_punct_thr: 0.21}}}
      langid: {min_score: {de: 0.84}}
    calibration: {...}   # what made the file (read by no stage)

Only per-language settings: `languages` of the stages that have them, and langid's per-language `min_score`.
When a recipe is loaded each of its stages named in the file gets the file's settings merged under its own
(`merged`): the recipe's entry for a language wins setting by setting, a recipe's single `min_score` number
stands for the languages the file does not name. So the validated recipe, and the job that records it, holds
the settings themselves and not the file's path.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from curation.stages.base import StageParams
from curation.stages.langid import AUTO, EVERY_LANGUAGE, LangId
from curation.stages.languages import LanguageParams
from curation.stages.registry import DOCUMENT_STAGES

LANGUAGES = "languages"
MIN_SCORE = "min_score"
STAGES_KEY = "stages"


def _per_language_key(kind: str) -> str:
    return MIN_SCORE if kind == LangId.name else LANGUAGES


@cache
def settings_file_model() -> type[BaseModel]:
    """The file's schema: a section per stage with per-language settings, validated as that stage's params."""
    strict = ConfigDict(extra="forbid")
    sections: dict[str, Any] = {
        kind: (stage.Params | None, Field(None, description=f"{kind}'s `{_per_language_key(kind)}`."))
        for kind, stage in DOCUMENT_STAGES.items() if issubclass(stage.Params, LanguageParams) or kind == LangId.name}
    stages = create_model("LanguageSettingsStages", __config__=strict, **sections)
    return create_model(
        "LanguageSettingsFile", __config__=strict,
        stages=(stages, Field(..., description="Per stage, its per-language settings.")),
        calibration=(dict[str, Any], Field(default_factory=dict, description="How the file was made (read by "
                                           "no stage).")))


def checks(settings: BaseModel) -> list[tuple[tuple[Any, ...], str]]:
    """Problems a schema cannot state: a section may set its stage's per-language key only."""
    out: list[tuple[tuple[Any, ...], str]] = []
    for kind in type(settings.stages).model_fields:
        params = getattr(settings.stages, kind)
        own = _per_language_key(kind)
        for key in sorted((params.model_fields_set if params is not None else set()) - {own}):
            out.append(((STAGES_KEY, kind, key), f"a language settings file sets per-language settings only "
                        f"(`{own}` here); put `{key}` in the recipe"))
    return out


def merged(kind: str, params: StageParams, settings: BaseModel) -> StageParams:
    """`params` (a recipe's stage of kind `kind`) with the file's settings for that stage under its own."""
    section = getattr(settings.stages, kind, None)
    key = _per_language_key(kind)
    if section is None or key not in section.model_fields_set:
        return params
    if key == MIN_SCORE:
        return params.model_copy(update={MIN_SCORE: _min_scores(params.min_score, section.min_score)})
    ours, theirs = params.languages, section.languages
    languages = {code: {**theirs.get(code, {}), **ours.get(code, {})} for code in {**theirs, **ours}}
    return params.model_copy(update={LANGUAGES: languages})


def _min_scores(ours: float | str | dict[str, float], theirs: float | str | dict[str, float]
                ) -> float | str | dict[str, float]:
    """langid's `min_score` from the recipe's (`ours`) and the file's: a single number is the score of every
    language not named; `auto` names none."""
    def as_map(value: float | str | dict[str, float]) -> dict[str, float]:
        if isinstance(value, dict):
            return value
        return {} if value == AUTO else {EVERY_LANGUAGE: float(value)}

    combined = {**as_map(theirs), **as_map(ours)}
    return combined or AUTO
