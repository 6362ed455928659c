"""Document stages by recipe name."""

from __future__ import annotations

from curation.stages.base import DocumentFilter, Processed, Resources, Stage, StageParams
from curation.stages.extract import Extract
from curation.stages.length import Length

STAGES: dict[str, type[Stage]] = {s.name: s for s in (Extract, Length)}

__all__ = ["STAGES", "DocumentFilter", "Extract", "Length", "Processed", "Resources", "Stage", "StageParams"]
