"""`curate calibrate`: per-language thresholds from a reference corpus, FineWeb-2's method as a command.

FineWeb-2 set each language's filter thresholds from the distribution of each filter's statistic over reference
text in that language (Penedo et al. 2025, "FineWeb2: One Pipeline to Scale Them All", arXiv:2506.20920); its
results are the settings shipped in `curation.lang.settings`. A user whose language gets poor defaults, or who
trusts some text of their own more, runs the same method on that text: every statistic the stages threshold
per language is computed by the stages' own `score` (never re-implemented here), and each bound is put at the
quantile of its statistic that keeps the chosen share of the reference documents.

`keep` is the least share of each language's reference documents that all calibrated bounds together keep: every
bound sits at the same tail quantile of its statistic, the tail chosen so that the bounds together keep `keep` or
just more (as close as the reference's size allows: on 89 documents and 16 bounds a step is a few per cent; on
707 German web pages `keep` 0.9 gave 90.5%), since with 16 bounds each at `keep` alone far fewer documents would
pass. The rules without a per-language setting (word counts, bullet and ellipsis lines, C4's sentences...) are
the stages' own for every language and are not calibrated: document length depends on how the reference was cut
into documents, not on the language. What is written is measured: the stages are run again with the written
settings, and the share that all their rules keep is reported beside the share the shipped settings kept, with
the drops of the rules not calibrated listed apart (a reference that such a rule drops much of says which recipe
setting to look at).

Stop words: where the shipped list leaves more of the reference without Gopher's two stop words than `keep`
allows (FineWeb-2 took each list from frequent words of the language, often on Wikipedia: lists of one function
word beside stub words, or of Korean morphemes), a list is written from the reference: its words (with a letter)
found in the most documents, as many as it takes for `keep` of the documents to hold two (8 at least, 64 at most),
and the stages are judged with it.

Short lines: FineWeb's short-line bound is a length in characters, and a line of the same words is 10 characters
in Chinese where it is 30 in English; it is written as English's 30 scaled by the reference's characters per word
over English's (`curation.lang.settings.scaled_short_line`), the way the shipped values were measured.

Calibrated: Gopher quality's mean word length bounds and least share of words with a letter, Gopher
repetition's duplicate-line share and n-gram fractions, FineWeb's line punctuation share, newlines per word and
share of characters in repeated lines, Gopher quality's stop words where the shipped list fails the reference
(above), and langid's `min_score` where the documents carry the langid stage's `lang_score`. English is judged
by the stages' own params, not per-language settings: it is reported, not calibrated.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import yaml

from curation import schema, storage
from curation.job import document_files, recorded_shards
from curation.lang.codes import language_tag
from curation.lang.scripts import script_of_text
from curation.lang.settings import own_scripts, scaled_short_line, script_key, settings_for
from curation.lang.settings_file import LANGUAGES, MIN_SCORE, STAGES_KEY, settings_file_model
from curation.lang.words import chars_per_word
from curation.lang.words import split as split_words
from curation.readers import READERS, read_shard
from curation.stages.base import DocumentFilter
from curation.stages.fineweb import FineWeb
from curation.stages.gopher import ALPHA_WORDS_CAP, GopherQuality, GopherRepetition
from curation.stages.langid import LangId, auto_min_score
from curation.yaml_model import parse_yaml_model

MIN, MAX = "min", "max"  # a document below a `min` bound, or above a `max` bound, is dropped
LANG, LANG_SCORE, LANG_SCRIPT = "lang", "lang_score", "lang_script"
BATCH = 256  # documents scored at once
DIGITS = 3  # bounds are written rounded outwards to this many decimals (as FineWeb-2's are)
EXACT_TAILS, SCANNED_TAILS = 1000, 400  # tails tried per language (see `_tail`)
ENGLISH = frozenset({"en", "eng"})
STOP_WORDS, MAX_STOP_WORDS = 8, 64  # a list written from the reference: its fewest and most words (Gopher: 8)
STOP_WORDS_REASON = f"{GopherQuality.name}:too_few_stop_words"
MIN_DOCUMENTS = 50  # fewest reference documents calibrated on by default: a quantile of fewer says little
CHECKED = 500  # documents of a given language whose language is checked
FAR = 4.0  # a bound this many times the shipped one, or this many times under it, is pointed out


@dataclass(frozen=True)
class Bound:
    """A per-language threshold: the stage and setting it is written as, the per-document statistic the stage
    compares with it (a score of the stage's `score`), the side of that comparison and the stage's drop reason."""

    stage: str
    setting: str  # a `curation.lang.settings.LanguageSettings` field, or langid's `min_score`
    statistic: str
    side: str  # MIN or MAX
    reason: str
    n: int | None = None  # the n-gram size, for the n-gram maps
    ceiling: float | None = None  # the stage holds the bound to at most this (Gopher's `ALPHA_WORDS_CAP`)

    @property
    def name(self) -> str:
        return f"{self.stage}.{self.setting}" + (f"[{self.n}]" if self.n is not None else "")

    def shipped(self, lang: str) -> float | None:
        """The bound the shipped settings give `lang` (a language, or one in its own script: `sr-Latn`; langid: its
        `auto` score)."""
        code, script = _split(lang)
        if self.stage == LangId.name:
            return auto_min_score(code, script)
        value = getattr(settings_for(code, script=script)[0], self.setting)
        return value.get(self.n) if self.n is not None else value

    def effective(self, value: float) -> float:
        return min(value, self.ceiling) if self.ceiling is not None else value

    def drops(self, statistic: np.ndarray, value: float) -> np.ndarray:
        """Which documents the bound at `value` drops, as the stage compares (NaN: no statistic, never dropped)."""
        value = self.effective(value)
        with np.errstate(invalid="ignore"):
            return statistic < value if self.side == MIN else statistic > value


BOUNDS: tuple[Bound, ...] = (
    Bound(GopherQuality.name, "min_avg_word_length", "gopher_mean_word_length", MIN, "short_mean_word_length"),
    Bound(GopherQuality.name, "max_avg_word_length", "gopher_mean_word_length", MAX, "long_mean_word_length"),
    Bound(GopherQuality.name, "max_non_alpha_words_ratio", "gopher_alpha_words_ratio", MIN, "too_few_alpha_words",
          ceiling=ALPHA_WORDS_CAP),
    Bound(GopherRepetition.name, "dup_line_frac", "dup_line_frac", MAX, "dup_line_frac"),
    *(Bound(GopherRepetition.name, "top_n_grams", f"top_{n}gram_char_frac", MAX, f"top_{n}gram", n) for n in (2, 3, 4)),
    *(Bound(GopherRepetition.name, "dup_n_grams", f"dup_{n}gram_char_frac", MAX, f"dup_{n}gram", n)
      for n in range(5, 11)),
    Bound(FineWeb.name, "line_punct_thr", "fw_line_punct_ratio", MIN, "line_punct_ratio"),
    Bound(FineWeb.name, "new_line_ratio", "fw_new_line_ratio", MAX, "list_ratio"),
    Bound(FineWeb.name, "char_dup_ratio", "fw_char_dup_ratio", MAX, "char_dup_ratio"),
)
LANGID_BOUND = Bound(LangId.name, MIN_SCORE, LANG_SCORE, MIN, "low_lang_score")  # where documents carry langid's
CALIBRATED_REASONS = frozenset(f"{b.stage}:{b.reason}" for b in (*BOUNDS, LANGID_BOUND))
CALIBRATED_STAGES = (GopherRepetition, GopherQuality, FineWeb)  # whose statistics are calibrated, in chain order


@dataclass
class Reference:
    """The reference documents: text, language and (where the corpus has it) langid's score."""

    text: list[str] = field(default_factory=list)
    lang: list[str] = field(default_factory=list)
    lang_score: list[float | None] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # documents not used, by why
    given: bool = False  # the language was given (`--lang`), not read from the documents


@dataclass
class LanguageResult:
    lang: str
    documents: int
    tail: float  # the share of the documents each bound alone may drop
    kept_by_bounds: float  # the share the calibrated bounds keep, together
    bounds: dict[Bound, tuple[float | None, float | None]]  # bound -> (shipped, calibrated; None: shipped kept)
    kept_before: float  # measured: the share the stages keep with the shipped settings
    kept_after: float  # ... with the calibrated ones
    drops_after: Counter  # "stage:reason" -> documents, with the calibrated settings
    stop_words: list[str] | None = None  # written from the reference (None: the shipped list stays)
    short_line_length: tuple[int, int] | None = None  # FineWeb's short line: shipped, and from the reference
    stop_words_failed: float = 0.0  # the share of the reference the shipped list left under two stop words
    labelled_otherwise: Counter = field(default_factory=Counter)  # where the language was given: langid's other labels


@dataclass
class Calibration:
    keep: float
    languages: list[LanguageResult]
    skipped: dict[str, str]  # language -> why it was not calibrated
    unused: Counter  # documents not used, by why
    seconds: float

    def settings(self) -> dict[str, Any]:
        """The settings file's content (see `curation.lang.settings_file`)."""
        stages: dict[str, Any] = {}
        for result in self.languages:
            for stage, settings in _by_stage({b: after for b, (_, after) in result.bounds.items()}).items():
                if stage == LangId.name:
                    stages.setdefault(stage, {MIN_SCORE: {}})[MIN_SCORE][result.lang] = settings[MIN_SCORE]
                else:
                    stages.setdefault(stage, {LANGUAGES: {}})[LANGUAGES][result.lang] = settings
            for stage, written in _written(result).items():
                stages.setdefault(stage, {LANGUAGES: {}})[LANGUAGES].setdefault(result.lang, {}).update(written)
        calibration = {
            "by": "curate calibrate", "keep": self.keep,
            "languages": {r.lang: {"documents": r.documents, "tail": round(r.tail, 5),
                                   "kept_by_bounds": round(r.kept_by_bounds, 4),
                                   "kept_before": round(r.kept_before, 4), "kept_after": round(r.kept_after, 4)}
                          for r in self.languages},
        }
        return {"calibration": calibration, STAGES_KEY: stages}


def read_reference(inputs: Iterable[str], *, text_field: str = "text", lang: str | None = None) -> Reference:
    """Documents of JSONL/Parquet files (paths or globs) or job folders (their `documents/`); each document's
    language is `lang` when given (any spelling `curation.lang.codes` reads: `zh-CN` is zh), else its own `lang`
    field (the langid stage's column in a job's documents). A language with settings per script (Serbian: FineWeb-2's
    srp_Cyrl and srp_Latn) is calibrated per script, `sr-Latn`: the script `lang` names, else the document's
    `lang_script`, else its text's."""
    given = language_tag(lang) if lang else None
    reference = Reference(given=given is not None)
    for uri, reader in _files(inputs, text_field):
        for batch in read_shard(reader, uri, source="reference", shard=Path(uri).name):
            live = batch.filter(pc.is_null(batch.column(schema.REASON)))  # not read rejects, nor the end marker
            for text, meta in zip(live.column("text").to_pylist(), live.column("meta").to_pylist(), strict=True):
                fields = json.loads(meta) if meta else {}
                code = given.code if given else str(fields.get(LANG) or "").strip().lower()
                if not text or not text.strip():
                    reference.skipped["empty text"] += 1
                elif not code:
                    reference.skipped["no lang (give --lang, or run langid first)"] += 1
                else:
                    reference.text.append(text)
                    reference.lang.append(_label(code, given.script if given else fields.get(LANG_SCRIPT), text))
                    score = fields.get(LANG_SCORE)
                    reference.lang_score.append(float(score) if score is not None and lang is None else None)
    return reference


def _label(code: str, script: str | None, text: str) -> str:
    """A reference document's language: `code`, or `code` in its script (`sr-Latn`: `script`, else its text's)
    where the language has settings per script."""
    scripts = own_scripts(code)
    if not scripts:  # most languages: no script to find
        return code
    script = script or script_of_text(text)
    return script_key(code, script) if script in scripts else code


def _files(inputs: Iterable[str], text_field: str) -> Iterator[tuple[str, Any]]:
    for given in inputs:
        if recorded_shards(given) is not None:  # a job folder: the documents it kept
            reader = READERS["parquet"](text_field="text")
            yield from ((uri, reader) for uri in document_files(given).values())
            continue
        uris = storage.expand(given)
        if not uris:
            msg = f"no file matches {given!r}"
            raise FileNotFoundError(msg)
        for uri in uris:
            kind = "parquet" if uri.endswith(".parquet") else "jsonl"
            yield uri, READERS[kind](text_field=text_field)


def calibrate(reference: Reference, keep: float = 0.95, *, min_documents: int = MIN_DOCUMENTS) -> Calibration:
    """Bounds per language keeping `keep` of its reference documents (module doc), measured with the stages."""
    if not 0 < keep <= 1:
        msg = f"keep is a share of the documents, in (0, 1]; got {keep}"
        raise ValueError(msg)
    started = time.perf_counter()
    counts = Counter(reference.lang)
    skipped = {code: "English is judged by the stages' own params: set them in the recipe"
               for code in counts if code in ENGLISH}
    skipped |= {code: f"{n} documents, fewer than {min_documents}" for code, n in counts.items()
                if code not in ENGLISH and n < min_documents}
    results = []
    for code in sorted(c for c in counts if c not in skipped):
        rows = [i for i, c in enumerate(reference.lang) if c == code]
        texts = [reference.text[i] for i in rows]
        scores = [reference.lang_score[i] for i in rows]
        results.append(_calibrate_language(code, texts, scores, keep))
        if reference.given:
            results[-1].labelled_otherwise = _labelled_otherwise(code, texts)
    return Calibration(keep, results, skipped, reference.skipped, time.perf_counter() - started)


def _labelled_otherwise(lang: str, texts: list[str]) -> Counter:
    """The languages the langid stage gives those of `texts` (at most `CHECKED` of them) it labels other than `lang`:
    `--lang sr-Latn` on Kazakh text calibrated Serbian's bounds on it, without a word."""
    stage = LangId()
    stage.setup()
    code = _split(lang)[0]
    return Counter(label for label in stage.identify(texts[:CHECKED], scripts=False).lang.tolist() if label != code)


def _split(lang: str) -> tuple[str, str | None]:
    """A reference's language label as (code, script): `sr-Latn` -> (sr, Latn), `de` -> (de, None)."""
    code, _, script = lang.partition("-")
    return code, script or None


def _calibrate_language(lang: str, texts: list[str], lang_scores: list[float | None], keep: float) -> LanguageResult:
    code, script = _split(lang)
    stats, kept_before, _ = _judge(lang, texts, lang_scores, {})
    bounds = [b for b in (*BOUNDS, LANGID_BOUND) if b.statistic in stats and np.isfinite(stats[b.statistic]).any()]
    tail = _tail(lang, bounds, stats, keep)
    values = _values(bounds, stats, tail)
    failed = float(np.mean(stats["gopher_stop_words"] < (GopherQuality.Params().min_stop_words or 0)))
    stop_words = _frequent_words(code, texts, keep) if failed > 1 - keep else None
    short_line = (settings_for(code, script=script)[0].short_line_length,
                  scaled_short_line(chars_per_word(texts, code)))
    result = LanguageResult(lang, len(texts), tail, _kept(lang, bounds, stats, tail),
                            {b: (b.shipped(lang), v) for b, v in values.items()}, kept_before, 0.0, Counter(),
                            stop_words=stop_words, stop_words_failed=failed, short_line_length=short_line)
    _, result.kept_after, result.drops_after = _judge(
        lang, texts, lang_scores, {b: v for b, v in values.items() if v is not None}, _written(result))
    return result


def _written(result: LanguageResult) -> dict[str, dict[str, Any]]:
    """stage -> settings calibrated from the reference itself rather than from a statistic's quantile."""
    written: dict[str, dict[str, Any]] = {}
    if result.stop_words:
        written[GopherQuality.name] = {"stop_words": result.stop_words}
    if result.short_line_length:
        written[FineWeb.name] = {"short_line_length": result.short_line_length[1]}
    return written


def _frequent_words(lang: str, texts: list[str], keep: float) -> list[str]:
    """The shortest run, from `STOP_WORDS` to `MAX_STOP_WORDS` words, of the words with a letter found in the most
    documents (ties: the first met) with which `keep` of the documents hold Gopher's two stop words."""
    words = split_words(texts, [lang] * len(texts))
    letter = (words.feature("alpha") == 1) & (words.feature("symbol") == 0)
    ids, doc = words.ids[letter], words.doc_index[letter]
    base = int(ids.max(initial=0)) + 1
    in_documents = np.bincount(np.unique(doc * base + ids) % base, minlength=base)
    ranked = np.argsort(-in_documents, kind="stable")[:min(MAX_STOP_WORDS, int((in_documents > 0).sum()))]
    rank = np.full(base, len(ranked))
    rank[ranked] = np.arange(len(ranked))
    counts = np.zeros((len(texts), len(ranked) + 1), np.int64)  # occurrences per document and word rank
    np.add.at(counts, (doc, rank[ids]), 1)
    enough = (np.cumsum(counts[:, :-1], axis=1) >= 2).mean(axis=0)  # with the first k + 1 words
    reached = np.flatnonzero(enough >= keep)
    size = max(STOP_WORDS, int(reached[0]) + 1 if len(reached) else len(ranked))
    return [words.splitter.vocab[i] for i in ranked[:size]]


def _judge(lang: str, texts: list[str], lang_scores: list[float | None], bounds: dict[Bound, float],
           written: dict[str, dict[str, Any]] | None = None) -> tuple[dict[str, np.ndarray], float, Counter]:
    """The documents' statistics, and the share the stages keep with `bounds` (and the `written` settings) over
    the shipped settings (and the drops by stage and reason), each stage run as a recipe would build it."""
    overrides = _by_stage(bounds)
    for stage, settings in (written or {}).items():
        overrides.setdefault(stage, {}).update(settings)
    stages: list[DocumentFilter] = [kind(languages={lang: overrides[kind.name]} if kind.name in overrides else {})
                                    for kind in CALIBRATED_STAGES]
    code, script = _split(lang)
    reasons = np.full(len(texts), None, dtype=object)
    stats: dict[str, list[np.ndarray]] = {}
    for start in range(0, len(texts), BATCH):
        chunk = texts[start:start + BATCH]
        table = pa.table({"text": pa.array(chunk, pa.large_string()), LANG: pa.array([code] * len(chunk)),
                          LANG_SCRIPT: pa.array([script] * len(chunk), pa.string())})
        for stage in stages:
            scores = stage.score(table)
            for name, values in scores.items():
                if not name.startswith("_"):
                    stats.setdefault(name, []).append(np.asarray(values, np.float64))
            _, why = stage.keep(scores)
            part = reasons[start:start + len(chunk)]
            first = np.array([r is None for r in part]) & np.array([w is not None for w in why])
            part[first] = [f"{stage.name}:{w}" for w in why[first]]
    out = {name: np.concatenate(parts) for name, parts in stats.items()}
    if any(s is not None for s in lang_scores):
        out[LANG_SCORE] = np.array([np.nan if s is None else s for s in lang_scores], np.float64)
        langid = LangId(min_score={lang: overrides[LangId.name][MIN_SCORE]} if LangId.name in overrides else "auto")
        labels, scripts = np.array([code] * len(texts)), np.array([script or ""] * len(texts))
        low = out[LANG_SCORE] < langid.min_scores(labels, scripts)
        reasons[low & np.array([r is None for r in reasons])] = f"{LangId.name}:low_lang_score"
    kept = sum(r is None for r in reasons) / max(len(texts), 1)
    return out, kept, Counter(r for r in reasons if r is not None)



def _by_stage(values: dict[Bound, float | None]) -> dict[str, dict[str, Any]]:
    """stage -> {setting: value} (an n-gram setting: {n: value}) of the bounds that have a value."""
    out: dict[str, dict[str, Any]] = {}
    for bound, value in values.items():
        if value is None:
            continue
        settings = out.setdefault(bound.stage, {})
        if bound.n is None:
            settings[bound.setting] = value
        else:
            settings.setdefault(bound.setting, {})[bound.n] = value
    return out


def _values(bounds: list[Bound], stats: dict[str, np.ndarray], tail: float) -> dict[Bound, float | None]:
    """Each bound at the quantile of its statistic that drops at most `tail` of the documents, rounded outwards
    (so that rounding never drops a document the exact bound keeps). None where that quantile is the reference's
    best value (no duplicated line, every line punctuated, in most documents): such a bound would drop every
    document less clean than the reference's best, and the reference says nothing of where its tail starts, so
    the shipped setting stays."""
    out: dict[Bound, float | None] = {}
    scale = 10 ** DIGITS
    for bound in bounds:
        values = stats[bound.statistic]
        finite = values[np.isfinite(values)]
        if bound.side == MIN:
            value, best = float(np.quantile(finite, tail, method="lower")), finite.max()
            out[bound] = None if value >= best else round(math.floor(value * scale) / scale, DIGITS)
        else:
            value, best = float(np.quantile(finite, 1 - tail, method="higher")), finite.min()
            out[bound] = None if value <= best else round(math.ceil(value * scale) / scale, DIGITS)
    return out


def _kept(lang: str, bounds: list[Bound], stats: dict[str, np.ndarray], tail: float) -> float:
    """The share of the documents that all bounds keep at `tail` (a bound not calibrated: at its shipped value)."""
    dropped = np.zeros(len(next(iter(stats.values()))), bool)
    for bound, value in _values(bounds, stats, tail).items():
        value = value if value is not None else bound.shipped(lang)
        if value is not None:
            dropped |= bound.drops(stats[bound.statistic], value)
    return float(1 - dropped.mean()) if len(dropped) else 1.0


def _tail(lang: str, bounds: list[Bound], stats: dict[str, np.ndarray], keep: float) -> float:
    """The tail at which all bounds together keep the least share of the documents that is still at least `keep`
    (the largest such tail among equals). Tried: every tail where a quantile of a reference of fewer than
    `EXACT_TAILS` documents moves, else `SCANNED_TAILS` evenly spaced ones; not a bisection, since the share is
    not monotonic in the tail (a bound reaching the reference's best value goes back to its shipped setting,
    and rounding moves bounds by steps)."""
    n = len(next(iter(stats.values())))
    most = 1 - keep
    exact = np.arange(0, math.floor(most * (n - 1)) + 1) / max(n - 1, 1)
    tails = exact if len(exact) <= EXACT_TAILS else np.linspace(0, most, SCANNED_TAILS)
    best_tail, best_kept = 0.0, 2.0
    for tail in [*tails.tolist(), most]:
        kept = _kept(lang, bounds, stats, tail)
        if keep <= kept <= best_kept:
            best_tail, best_kept = tail, kept
    return best_tail


def write_settings(calibration: Calibration, path: str | Path, inputs: list[str]) -> None:
    """Write the settings file (YAML), checked against the schema a recipe loads it with."""
    content = calibration.settings()
    content["calibration"]["inputs"] = list(inputs)
    header = ("# Per-language stage settings written by `curate calibrate` (curation.lang.calibrate).\n"
              "# Name this file in a recipe (`language_settings: <path>`); the recipe's own entries win.\n")
    text = header + yaml.safe_dump(content, sort_keys=False, allow_unicode=True)
    parse_yaml_model(text, str(path), settings_file_model())
    Path(path).write_text(text, encoding="utf-8")


def summary(calibration: Calibration) -> str:
    """A readable report: per language, its documents, the share kept before and after, each bound."""
    lines = [f"calibrated {len(calibration.languages)} language(s) to keep {calibration.keep:.1%} of their "
             f"reference documents ({calibration.seconds:.1f} s)"]
    for r in calibration.languages:
        lines.append(f"{r.lang}: {r.documents} documents; each bound at a {r.tail:.2%} tail: together they keep "
                     f"{r.kept_by_bounds:.1%} of them; every rule of the stages keeps {r.kept_before:.1%} with the "
                     f"shipped settings, {r.kept_after:.1%} with these")
        if r.labelled_otherwise.total() > min(r.documents, CHECKED) / 2:
            other, n = r.labelled_otherwise.most_common(1)[0]
            lines.append(f"  warning: langid labels {r.labelled_otherwise.total()} of {min(r.documents, CHECKED)} of "
                         f"these documents otherwise ({other} {n}): is `--lang {r.lang}` their language?")
        if r.documents < MIN_DOCUMENTS:
            lines.append(f"  warning: {r.documents} documents, fewer than {MIN_DOCUMENTS}: a quantile of so few may "
                         f"sit far from where the language's text is; check the bounds marked {FAR:g}x or more")
        for bound, (before, after) in r.bounds.items():
            shown = "-" if before is None else f"{before:g}"
            if after is None:
                lines.append(f"  {bound.name:<42} {shown:>8}    (kept: the reference is at its best value)")
                continue
            note = f"  (the stage caps it at {bound.ceiling:g})" if bound.ceiling and after > bound.ceiling else ""
            factor = max(after / before, before / after) if before and after else 0
            if factor >= FAR:
                note += f"  ({factor:.0f}x {'over' if after > before else 'under'} the shipped)"
            lines.append(f"  {bound.name:<42} {shown:>8} -> {after:g}{note}")
        if r.stop_words:
            code, script = _split(r.lang)
            shipped = (f"the shipped list left {r.stop_words_failed:.1%} under two"
                       if settings_for(code, script=script)[0].stop_words else "no list shipped")
            lines.append(f"  {'gopher_quality.stop_words':<42} {shipped}: the {len(r.stop_words)} words in most "
                         f"documents: {' '.join(r.stop_words[:12])}{' ...' if len(r.stop_words) > 12 else ''}")
        if r.short_line_length:
            lines.append(f"  {'fineweb.short_line_length':<42} {r.short_line_length[0]:>8} -> "
                         f"{r.short_line_length[1]} (30 characters scaled by the reference's characters per word)")
        reasons = CALIBRATED_REASONS | ({STOP_WORDS_REASON} if r.stop_words else set())
        for calibrated, what in ((True, "by calibrated settings"), (False, "by rules not calibrated per language")):
            drops = [f"{why} {n}" for why, n in r.drops_after.most_common() if (why in reasons) == calibrated]
            if drops:
                lines.append(f"  dropped {what}: {', '.join(drops)}")
    lines += [f"{code}: not calibrated: {why}" for code, why in sorted(calibration.skipped.items())]
    lines += [f"{n} documents not used: {why}" for why, n in calibration.unused.most_common()]
    return "\n".join(lines)
