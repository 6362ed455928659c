"""Document stages: one module each (their registry by recipe name: `curation.stages.registry`)."""

from __future__ import annotations

from curation.stages.base import DocumentFilter, Processed, Resources, Stage, StageParams
from curation.stages.c4 import C4
from curation.stages.classifier import FastTextClassifier
from curation.stages.code_filters import CodeFilters
from curation.stages.code_secrets import CodeSecrets
from curation.stages.decontaminate import Decontaminate
from curation.stages.density import Density
from curation.stages.extract import Extract
from curation.stages.fineweb import FineWeb
from curation.stages.gopher import GopherQuality, GopherRepetition
from curation.stages.html_langid import HtmlLangId
from curation.stages.langid import LangId
from curation.stages.length import Length
from curation.stages.normalize import Normalize
from curation.stages.pii import PiiRedaction
from curation.stages.toxicity import Toxicity

__all__ = [
    "C4", "CodeFilters", "CodeSecrets", "Decontaminate", "Density", "DocumentFilter", "Extract",
    "FastTextClassifier", "FineWeb", "GopherQuality", "GopherRepetition", "HtmlLangId", "LangId",
    "Length", "Normalize", "PiiRedaction", "Processed", "Resources", "Stage", "StageParams", "Toxicity",
]
