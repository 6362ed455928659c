"""docs/reference.md is generated from the recipe models: it must be what the models say now."""

from __future__ import annotations

import difflib

from curation.reference import COMMAND, reference
from curation.stages.registry import ALL_STAGES
from tests.conftest import ROOT

REFERENCE = ROOT / "docs" / "reference.md"


def test_committed_reference_is_current():
    committed = REFERENCE.read_text(encoding="utf-8") if REFERENCE.is_file() else ""
    current = reference()
    if committed != current:
        diff = "".join(list(difflib.unified_diff(committed.splitlines(True), current.splitlines(True),
                                                 "docs/reference.md", "generated", n=0))[:40])
        raise AssertionError(f"docs/reference.md is stale: run `{COMMAND}` (or `make reference`)\n{diff}")


def test_reference_names_every_stage_and_key():
    text = reference()
    for name, stage in ALL_STAGES.items():
        assert f"### `{name}`" in text
        section = text.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for key in stage.Params.model_fields:
            assert f"| `{key}` |" in section, f"{name}.{key} is missing from the reference"
    for key in ("sources", "stages", "mixture", "tokenizer", "pack", "language_settings"):
        assert f"| `{key}` |" in text


def test_every_key_is_described():
    """A key without a description is an empty cell: give it `Field(description=...)` in its model."""
    undescribed = [line for line in reference().splitlines() if line.startswith("| `") and line.endswith("|  |")]
    assert not undescribed, undescribed
