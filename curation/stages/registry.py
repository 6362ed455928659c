"""Every stage a recipe can name, by that name: document stages (one batch at a time, `curation.stages`) and
corpus stages (deduplication over every document, `curation.dedup`). The one place a new stage is registered.

Not imported by `curation.stages` itself: corpus stages import `curation.stages.base`, so a registry in the
package's `__init__` would import them while they import it.
"""

from __future__ import annotations

from curation.dedup.bloom_dedup import BloomDedup
from curation.dedup.corpus_stage import CorpusStage
from curation.dedup.exact_dedup import ExactDedup
from curation.dedup.minhash_dedup import MinhashDedup
from curation.stages.base import Stage
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
from curation.stages.url import UrlFilter

DOCUMENT_STAGES: dict[str, type[Stage]] = {
    s.name: s
    for s in (
        UrlFilter, HtmlLangId, Extract, Normalize, LangId, Length, GopherQuality, GopherRepetition, C4, FineWeb,
        Density, Toxicity, FastTextClassifier, PiiRedaction, Decontaminate, CodeFilters, CodeSecrets,
    )
}
CORPUS_STAGES: dict[str, type[CorpusStage]] = {s.name: s for s in (ExactDedup, MinhashDedup, BloomDedup)}
ALL_STAGES: dict[str, type[Stage] | type[CorpusStage]] = {**DOCUMENT_STAGES, **CORPUS_STAGES}
