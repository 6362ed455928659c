"""Extraction quality: our `Extract` stage against plain `trafilatura.extract` with its defaults.

Both extractors see the same raw (gunzipped) page bytes and the page URL where one is known.
Ours is `Extract(timeout_s=None).extract_one(body, url, None)`: no declared HTTP charset (the test
pages come without headers), so it decodes with its own detection; no per-page time limit, so a slow
page is scored rather than dropped (the stage's default `timeout_s=2.0` would drop pages slower than
that; the number of such pages is printed). The peer is `trafilatura.extract(body, url=url)`, which
decodes the bytes itself.

Two corpora of real third-party pages, read from `$CURATION_TESTDATA` or else `../shared/data`
relative to the project root (the script exits 0 with a message when neither exists):

1. `html/trafilatura/evaldata.json` (trafilatura's own evaluation set): per page, snippets that must
   be in the output (`with`) and boilerplate that must not (`without`). Scored as trafilatura's
   `tests/eval_common.py` does: collapse every whitespace run to one space and strip, on both
   sides, then a plain substring test; a found `with` snippet is a TP, a missing one an FN, a
   found `without` snippet an FP, a missing one a TN; counts are summed over the corpus
   (micro-averaged precision, recall, F1, accuracy). A page is looked up in `cache/` before `eval/`,
   as trafilatura does.
2. `html/readability/pages/*` (mozilla/readability test pages): the text of `expected.html` (tags
   stripped with lxml) against the extracted text, with `\\w+` tokens as in the ScrapingHub
   article-extraction benchmark: bag-of-words (single tokens) and, for reference, the benchmark's
   own 4-token shingles. Per-page TP/FP/FN are normalised to sum to 1; precision is averaged over
   pages with output, recall over all pages, and F1 is the harmonic mean of the two averages (the
   benchmark's formulas). These pages have no real URL, so both extractors get `url=None`.

Run from the project root:

    .venv/bin/python benchmarks/extraction_quality.py [--limit N] [--show-diffs N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html
import trafilatura
from trafilatura.utils import detect_encoding as trafilatura_guesses

from curation.stages import Extract
from curation.stages.extract import decode_html

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _data import data_root
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._data import data_root

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT_S = 2.0  # ExtractParams.timeout_s default, for the "would time out" count
WS = re.compile(r"\s+")
TOKEN = re.compile(r"\w+")


def norm(text: str) -> str:
    """Whitespace normalisation used by trafilatura's evaluation before substring matching."""
    return WS.sub(" ", text).strip()


# --------------------------------------------------------------------------- running the extractors


@dataclass
class Run:
    text: str | None
    seconds: float
    error: str | None = None


def timed(fn: Callable[[], str | None]) -> Run:
    start = time.perf_counter()
    try:
        text = fn()
    except Exception as exc:  # counted as empty output, as the stage drops it as `extract_error`
        return Run(None, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"[:200])
    return Run(text, time.perf_counter() - start)


@dataclass
class Page:
    name: str
    url: str | None
    body: bytes
    ours: Run = field(init=False)
    peer: Run = field(init=False)


def extract_all(pages: list[Page], stage: Extract) -> None:
    if pages:  # warm-up, untimed: the first call of each pays for lazy imports and caches
        stage.extract_one(pages[0].body, pages[0].url, None)
        trafilatura.extract(pages[0].body, url=pages[0].url)
    for i, page in enumerate(pages):  # alternate who goes first, so neither gains from warm caches
        if i % 2:
            page.peer = timed(lambda p=page: trafilatura.extract(p.body, url=p.url))
        page.ours = timed(lambda p=page: stage.extract_one(p.body, p.url, None)[0])
        if not i % 2:
            page.peer = timed(lambda p=page: trafilatura.extract(p.body, url=p.url))


def empty(text: str | None) -> bool:
    return not text or not text.strip()


# --------------------------------------------------------------------------- loading the corpora


def eval_pages(root: Path, limit: int | None) -> tuple[list[Page], dict[str, dict], int]:
    """Pages of trafilatura's evaluation set, their annotations by page name, and how many are missing."""
    annotations = json.loads((root / "evaldata.json").read_text(encoding="utf-8"))
    pages: list[Page] = []
    by_name: dict[str, dict] = {}
    missing = 0
    for url, item in annotations.items():
        if limit is not None and len(pages) >= limit:
            break
        path = next(
            (
                root / sub / name
                for sub in ("cache", "eval")
                for name in (item["file"] + ".gz", item["file"])
                if (root / sub / name).is_file()
            ),
            None,
        )
        if path is None:
            missing += 1
            continue
        raw = path.read_bytes()
        body = gzip.decompress(raw) if path.suffix == ".gz" else raw
        pages.append(Page(url, url, body))
        by_name[url] = item
    return pages, by_name, missing


def readability_pages(root: Path, limit: int | None) -> tuple[list[Page], dict[str, str]]:
    """Pages of mozilla/readability's test set and the whitespace-collapsed text of their expected output."""
    pages: list[Page] = []
    expected: dict[str, str] = {}
    for folder in sorted(p for p in root.iterdir() if (p / "source.html.gz").is_file()):
        if limit is not None and len(pages) >= limit:
            break
        pages.append(Page(folder.name, None, gzip.decompress((folder / "source.html.gz").read_bytes())))
        html = gzip.decompress((folder / "expected.html.gz").read_bytes()).decode("utf-8")
        expected[folder.name] = norm(lxml.html.fromstring(html).text_content())
    return pages, expected


# --------------------------------------------------------------------------- scoring


@dataclass
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, item: dict, text: str | None) -> None:
        out = norm(text) if text else ""
        found_with = sum(norm(s) in out for s in item["with"]) if out else 0
        found_without = sum(norm(s) in out for s in item["without"]) if out else 0
        self.tp += found_with
        self.fn += len(item["with"]) - found_with
        self.fp += found_without
        self.tn += len(item["without"]) - found_without

    def metrics(self) -> dict[str, float]:
        def div(a: int, b: int) -> float:
            return a / b if b else 0.0

        return {
            "precision": div(self.tp, self.tp + self.fp),
            "recall": div(self.tp, self.tp + self.fn),
            "F1": div(2 * self.tp, 2 * self.tp + self.fp + self.fn),
            "accuracy": div(self.tp + self.tn, self.tp + self.tn + self.fp + self.fn),
            "`with` snippets found": div(self.tp, self.tp + self.fn),
            "`without` snippets absent": div(self.tn, self.tn + self.fp),
        }


def ngrams(text: str, n: int) -> Counter[tuple[str, ...]]:
    tokens = TOKEN.findall(text)
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i : i + n])


def tp_fp_fn(expected: str, predicted: str, n: int) -> tuple[float, float, float]:
    """Bag-of-n-grams overlap of one page, normalised to sum to 1 (ScrapingHub benchmark)."""
    true, pred = ngrams(expected, n), ngrams(predicted, n)
    tp = float(sum((true & pred).values()))
    fp = float(sum(pred.values()) - tp)
    fn = float(sum(true.values()) - tp)
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def overlap_scores(rows: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Precision (mean over pages with output), recall (mean over pages), F1 of the two means."""

    def precision(tp: float, fp: float, fn: float) -> float:
        return 1.0 if fp == fn == 0 else 0.0 if tp == fp == 0 else tp / (tp + fp)

    def recall(tp: float, fp: float, fn: float) -> float:
        return 1.0 if fp == fn == 0 else 0.0 if tp == fn == 0 else tp / (tp + fn)

    p_values = [precision(*r) for r in rows if r[0] + r[1] > 0]
    r_values = [recall(*r) for r in rows if r[0] + r[2] > 0]
    p = statistics.mean(p_values) if p_values else 0.0
    r = statistics.mean(r_values) if r_values else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


# --------------------------------------------------------------------------- diagnosing differences


def peer_charset(body: bytes) -> str:
    """The charset `trafilatura.utils.decode_file` ends up using for these bytes."""
    try:
        body.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    for guess in trafilatura_guesses(body):
        try:
            body.decode(guess)
            return guess
        except (LookupError, UnicodeDecodeError):
            continue
    return "utf-8 (errors=replace)"


def ours_charset(body: bytes) -> str:
    """The charset our `decode_html` detects, and the one that really decoded the page if it fell back."""
    html, detected = decode_html(body, None)
    for codec in (detected, "utf-8", "cp1252"):  # resiliparse's bytes_to_str fallbacks
        try:
            if body.decode(codec) == html:
                return detected if codec == detected else f"{detected} (invalid, bytes_to_str fell back to {codec})"
        except (LookupError, UnicodeDecodeError):
            continue
    return detected


def diagnose(page: Page) -> str:
    ours_html, _ = decode_html(page.body, None)
    peer_html = trafilatura.utils.decode_file(page.body)
    if ours_html != peer_html:
        n = sum(a != b for a, b in zip(ours_html, peer_html, strict=False)) + abs(len(ours_html) - len(peer_html))
        return f"decoding differs ({n} chars): ours {ours_charset(page.body)}, trafilatura {peer_charset(page.body)}"
    return "same decoded text: the extraction call differs"


# --------------------------------------------------------------------------- report


def ratio(ours: float, peer: float) -> str:
    if peer == 0:
        return "=" if ours == 0 else "inf"
    return f"{ours / peer:.4f}"


def table(title: str, rows: Iterable[tuple[str, float, float, str]]) -> None:
    print(f"\n{title}")
    print(f"  {'metric':<28} | {'ours':>10} | {'trafilatura defaults':>20} | {'ratio':>7}")
    print(f"  {'-' * 28}-+-{'-' * 10}-+-{'-' * 20}-+-{'-' * 7}")
    for name, ours, peer, fmt in rows:
        print(f"  {name:<28} | {ours:>10{fmt}} | {peer:>20{fmt}} | {ratio(ours, peer):>7}")


def speed_rows(pages: list[Page]) -> Iterator[tuple[str, float, float, str]]:
    ours_s, peer_s = sum(p.ours.seconds for p in pages), sum(p.peer.seconds for p in pages)
    yield (
        "empty output (pages)",
        sum(empty(p.ours.text) for p in pages),
        sum(empty(p.peer.text) for p in pages),
        "d",
    )
    yield (
        "errors (pages)",
        sum(p.ours.error is not None for p in pages),
        sum(p.peer.error is not None for p in pages),
        "d",
    )
    yield "pages/s (1 core, wall)", len(pages) / ours_s, len(pages) / peer_s, ".1f"


def report_differences(label: str, pages: list[Page], show: int, effect: Callable[[Page], str]) -> None:
    """List pages whose output differs, why (decoding or the call), and what it does to their score."""
    differ = [p for p in pages if (p.ours.text or "") != (p.peer.text or "")]
    slow = [p for p in pages if p.ours.seconds > DEFAULT_TIMEOUT_S]
    print(f"  output differs from trafilatura defaults on {len(differ)}/{len(pages)} {label} pages", end="")
    print(f"; {len(slow)} page(s) took ours > {DEFAULT_TIMEOUT_S:g} s (dropped under the default timeout)")
    for page in differ[:show]:
        print(f"    - {page.name[:90]}\n        {diagnose(page)}; {effect(page)}")
    if len(differ) > show:
        print(f"    ... and {len(differ) - show} more (--show-diffs N)")
    for page in pages:
        for who in ("ours", "peer"):
            if getattr(page, who).error:
                print(f"    ! {who} failed on {page.name[:80]}: {getattr(page, who).error}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, default=None, help="at most N pages from each corpus")
    parser.add_argument("--show-diffs", type=int, default=10, help="list up to N differing pages per corpus")
    args = parser.parse_args()

    root = data_root()
    eval_root, readability_root = root / "html" / "trafilatura", root / "html" / "readability" / "pages"
    if not (eval_root / "evaldata.json").is_file() or not readability_root.is_dir():
        print(f"test data not found under {root} (set CURATION_TESTDATA); nothing to measure")
        return 0

    logging.disable(logging.ERROR)  # trafilatura logs every unparsable page; the counts are reported
    stage = Extract(timeout_s=None)
    stage.setup()
    print(f"trafilatura {trafilatura.__version__}; data: {root}; load average {os.getloadavg()[0]:.2f} at start")
    print("ours: Extract(timeout_s=None).extract_one(body, url, declared=None)")
    print("peer: trafilatura.extract(body, url=url)  (all defaults)")

    started = time.perf_counter()
    pages, annotations, missing = eval_pages(eval_root, args.limit)
    extract_all(pages, stage)
    ours, peer = Confusion(), Confusion()
    for page in pages:
        ours.add(annotations[page.name], page.ours.text)
        peer.add(annotations[page.name], page.peer.text)
    mo, mp = ours.metrics(), peer.metrics()
    snippets = ours.tp + ours.fn + ours.fp + ours.tn
    table(
        f"1. trafilatura evaldata: {len(pages)} pages ({missing} missing), {snippets} snippets, "
        "whitespace-normalised substring match",
        [*((k, mo[k], mp[k], ".4f") for k in mo), *speed_rows(pages)],
    )

    def snippet_effect(page: Page) -> str:
        item = annotations[page.name]
        counts = []
        for run in (page.ours, page.peer):
            c = Confusion()
            c.add(item, run.text)
            counts.append(f"with {c.tp}/{c.tp + c.fn}, without {c.fp}/{c.fp + c.tn}")
        return "snippets found: ours {}; trafilatura {}".format(*counts)

    report_differences("evaldata", pages, args.show_diffs, snippet_effect)

    rpages, expected = readability_pages(readability_root, args.limit)
    extract_all(rpages, stage)
    scores = {}
    for who in ("ours", "peer"):
        for n in (1, 4):
            rows = [tp_fp_fn(expected[p.name], getattr(p, who).text or "", n) for p in rpages]
            scores[who, n] = overlap_scores(rows)
    names = ("precision", "recall", "F1")
    token_rows = [(f"token {m}", scores["ours", 1][i], scores["peer", 1][i], ".4f") for i, m in enumerate(names)]
    table(
        f"2. readability test pages: {len(rpages)} pages, \\w+ tokens vs text of expected.html",
        [
            *token_rows,
            ("4-shingle F1 (ScrapingHub)", scores["ours", 4][2], scores["peer", 4][2], ".4f"),
            *speed_rows(rpages),
        ],
    )

    def token_effect(page: Page) -> str:
        f1s = [overlap_scores([tp_fp_fn(expected[page.name], run.text or "", 1)])[2] for run in (page.ours, page.peer)]
        return "page token F1: ours {:.4f}, trafilatura {:.4f}".format(*f1s)

    report_differences("readability", rpages, args.show_diffs, token_effect)

    f1_eval = mo["F1"] / mp["F1"] if mp["F1"] else float("inf")
    f1_read = scores["ours", 1][2] / scores["peer", 1][2] if scores["peer", 1][2] else float("inf")
    tolerance = 0.0
    verdict = f1_eval >= 1.0 - tolerance and f1_read >= 1.0 - tolerance
    print(f"\nruntime {time.perf_counter() - started:.1f} s")
    print(
        f"ours at least as good as trafilatura defaults (F1 ratio >= {1.0 - tolerance:.3f}): {verdict} "
        f"(evaldata F1 ratio {f1_eval:.4f}, readability token F1 ratio {f1_read:.4f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
