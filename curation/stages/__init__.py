"""Document stages by recipe name."""

from __future__ import annotations

from curation.stages.base import DocumentFilter, Processed, Resources, Stage, StageParams
from curation.stages.extract import Extract
from curation.stages.length import Length
from curation.stages.normalize import Normalize

STAGES: dict[str, type[Stage]] = {s.name: s for s in (Extract, Normalize, Length)}

__all__ = [
    "STAGES", "DocumentFilter", "Extract", "Length", "Normalize", "Processed", "Resources", "Stage", "StageParams",
]
