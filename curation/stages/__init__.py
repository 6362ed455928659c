"""Document stages by recipe name."""

from __future__ import annotations

from curation.stages.base import DocumentFilter, Processed, Resources, Stage, StageParams
from curation.stages.classifier import FastTextClassifier
from curation.stages.extract import Extract
from curation.stages.langid import LangId
from curation.stages.length import Length
from curation.stages.normalize import Normalize
from curation.stages.pii import PiiRedaction
from curation.stages.toxicity import FlaggedWords

STAGES: dict[str, type[Stage]] = {
    s.name: s for s in (Extract, Normalize, LangId, Length, FlaggedWords, FastTextClassifier, PiiRedaction)
}

__all__ = [
    "STAGES", "DocumentFilter", "Extract", "FastTextClassifier", "FlaggedWords", "LangId", "Length", "Normalize",
    "PiiRedaction", "Processed", "Resources", "Stage", "StageParams",
]
