"""Extraction quality and speed: `Extract` (engines `trafilatura` and `fast`) against plain trafilatura.

Three extractors see the same raw (gunzipped) page bytes and the page URL where one is known:

- **plain trafilatura**: `trafilatura.extract(body, url=url, ...)`, which decodes the bytes itself;
- **Extract, engine trafilatura** ("ours" in the difference listings):
  `Extract(timeout_s=None).extract_one(body, url, None)`;
- **Extract, engine fast**: `Extract(engine="fast", timeout_s=None).extract_one(body, url, None)`
  (`curation/extract/fast.py`).

All three get the same settings: trafilatura's defaults unless `--favor`, `--no-comments` or
`--no-tables` say otherwise. `extract_one` gets no declared HTTP charset (the test pages come without
headers), so it decodes with its own detection; no per-page time limit, so a slow page is scored
rather than dropped (the stage's default `timeout_s=2.0` would drop pages slower than that; the
number of such pages is printed). Each page is extracted by the three in turn, the order rotating
from page to page so that none gains from warm caches; pages/s per core is pages over the CPU time
(`time.process_time`) of the calls, which moves less than wall time when other work shares the
machine (wall-clock pages/s is printed too). `Extract`'s figures include its decoding and its
attribute-count scan (~0.6 ms per page here).

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
   benchmark's formulas). These pages have no real URL, so the extractors get `url=None`.

3. Markdown, what the web recipes extract (`markdown: true`): `Extract(markdown=True)` against plain trafilatura's
   Markdown (`output_format="markdown", include_formatting=True`) on both corpora, scored as above. Markdown's
   marks (list bullets, heading hashes) cost both sides alike; trafilatura's escapes (`api\\_key`, `\\[sic\\]`)
   and inline `<sup>` tags cost plain trafilatura, which `Extract` turns back into the page's text
   (`curation.extract.trafilatura.tidy_markdown`). `--no-markdown` leaves this part out.

Targets (issue 10): the fast engine's F1 within 0.01 of `Extract`'s with engine trafilatura on both
corpora (a larger drop is flagged `BELOW TARGET`), at about 10x its pages per CPU-second.

Run from the project root:

    .venv/bin/python benchmarks/extraction_quality.py [--limit N] [--show-diffs N]
        [--favor balanced|precision|recall] [--no-comments] [--no-tables] [--no-markdown]
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

from curation.extract.fast import fast_extract
from curation.extract.html import decode_html, too_many_attributes
from curation.stages import Extract
from curation.stages.extract import ExtractParams

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _data import data_root
    from _results import figure, write_results
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._data import data_root
    from benchmarks._results import figure, write_results

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
    seconds: float  # wall
    cpu: float  # CPU time of this process (the extractors are single-threaded)
    error: str | None = None


def timed(fn: Callable[[], str | None]) -> Run:
    start, cpu = time.perf_counter(), time.process_time()
    try:
        text = fn()
    except Exception as exc:  # counted as empty output, as the stage drops it as `extract_error`
        return Run(None, time.perf_counter() - start, time.process_time() - cpu, f"{type(exc).__name__}: {exc}"[:200])
    return Run(text, time.perf_counter() - start, time.process_time() - cpu)


PEER, OURS, FAST = "peer", "ours", "fast"  # plain trafilatura, Extract(engine=trafilatura), Extract(engine=fast)
LABELS = {PEER: "plain trafilatura", OURS: "Extract trafilatura", FAST: "Extract fast"}


@dataclass
class Page:
    name: str
    url: str | None
    body: bytes
    runs: dict[str, Run] = field(default_factory=dict)

    @property
    def ours(self) -> Run:
        return self.runs[OURS]

    @property
    def peer(self) -> Run:
        return self.runs[PEER]


Extractors = dict[str, Callable[[Page], str | None]]


def extractors(settings: dict[str, object]) -> Extractors:
    """The three extractors, all with the same trafilatura settings."""
    favor = settings["favor"]
    peer_kwargs = {
        "favor_precision": favor == "precision", "favor_recall": favor == "recall",
        "include_comments": settings["include_comments"], "include_tables": settings["include_tables"],
    }
    stages = {engine: Extract(engine=engine, timeout_s=None, **settings) for engine in ("trafilatura", "fast")}
    for stage in stages.values():
        stage.setup()
    return {
        PEER: lambda p: trafilatura.extract(p.body, url=p.url, **peer_kwargs),
        OURS: lambda p: stages["trafilatura"].extract_one(p.body, p.url, None)[0],
        FAST: lambda p: stages["fast"].extract_one(p.body, p.url, None)[0],
    }


def extract_all(pages: list[Page], runners: Extractors) -> None:
    if pages:  # warm-up, untimed: the first call of each pays for lazy imports and caches
        for run in runners.values():
            run(pages[0])
    order = list(runners)
    for i, page in enumerate(pages):  # rotate who goes first, so none gains from warm caches
        for who in order[i % 3 :] + order[: i % 3]:
            page.runs[who] = timed(lambda p=page, w=who: runners[w](p))


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
    """The charset our `decode_html` decoded the page in, and how many of its bytes it replaced."""
    html, used = decode_html(body, None)
    bad = html.count("\ufffd")
    return f"{used} ({bad} undecodable bytes replaced)" if bad else used


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


F1_TOLERANCE = 0.01  # issue 10: the fast engine's F1 may be at most this much below the trafilatura engine's
SPEED_TARGET = 10.0  # ... at about this many times its pages per CPU-second

Row = tuple[str, dict[str, float], str, str]  # metric, value per extractor, format, what the last column shows


def table(title: str, rows: Iterable[Row]) -> None:
    """One row per metric: the three extractors, then fast against Extract trafilatura."""
    print(f"\n{title}")
    heads = [LABELS[w] for w in (PEER, OURS, FAST)]
    print(f"  {'metric':<28} | {heads[0]:>17} | {heads[1]:>19} | {heads[2]:>12} | fast vs Extract trafilatura")
    print(f"  {'-' * 28}-+-{'-' * 17}-+-{'-' * 19}-+-{'-' * 12}-+-{'-' * 28}")
    for name, values, fmt, compare in rows:
        fast, ours = values[FAST], values[OURS]
        if compare == "diff":
            last = f"{fast - ours:+.4f}" + ("  BELOW TARGET" if fast < ours - F1_TOLERANCE else "")
        elif compare == "ratio":
            last = f"{fast / ours:.2f}x" if ours else "inf"
        else:
            last = ""
        print(f"  {name:<28} | {values[PEER]:>17{fmt}} | {ours:>19{fmt}} | {fast:>12{fmt}} | {last}")


def speed_rows(pages: list[Page]) -> Iterator[Row]:
    def per(fn: Callable[[Run], float]) -> dict[str, float]:
        return {who: sum(fn(p.runs[who]) for p in pages) for who in (PEER, OURS, FAST)}

    yield "empty output (pages)", per(lambda r: empty(r.text)), "d", ""
    yield "errors (pages)", per(lambda r: r.error is not None), "d", ""
    cpu, wall = per(lambda r: r.cpu), per(lambda r: r.seconds)
    yield "pages/s per core (CPU time)", {w: len(pages) / cpu[w] for w in cpu}, ".1f", "ratio"
    yield "pages/s (1 core, wall)", {w: len(pages) / wall[w] for w in wall}, ".1f", "ratio"


def report_differences(label: str, pages: list[Page], show: int, effect: Callable[[Page], str]) -> None:
    """List pages whose output differs, why (decoding or the call), and what it does to their score."""
    differ = [p for p in pages if (p.ours.text or "") != (p.peer.text or "")]
    print(
        f"  Extract trafilatura's output differs from plain trafilatura's on {len(differ)}/{len(pages)} {label} pages"
    )
    for page in differ[:show]:
        print(f"    - {page.name[:90]}\n        {diagnose(page)}; {effect(page)}")
    if len(differ) > show:
        print(f"    ... and {len(differ) - show} more (--show-diffs N)")
    for who in (OURS, FAST):
        slow = sum(p.runs[who].seconds > DEFAULT_TIMEOUT_S for p in pages)
        print(f"  {slow} page(s) took {LABELS[who]} > {DEFAULT_TIMEOUT_S:g} s (dropped under the default timeout)")
    for page in pages:
        for who, run in page.runs.items():
            if run.error:
                print(f"    ! {LABELS[who]} failed on {page.name[:80]}: {run.error}")


def report_fast_losses(pages: list[Page], show: int, score: Callable[[Page, str], float], unit: str) -> None:
    """The pages where the fast engine scores furthest below Extract trafilatura (where to look next)."""
    losses = sorted(((score(p, OURS) - score(p, FAST), p) for p in pages), key=lambda x: -x[0])
    worse = [(d, p) for d, p in losses if d > 0]
    print(f"  fast engine scores below Extract trafilatura on {len(worse)}/{len(pages)} pages; largest drops ({unit}):")
    for drop, page in worse[:show]:
        chars = [len(page.runs[w].text or "") for w in (OURS, FAST)]
        print(f"    - {drop:.3f}  {page.name[:90]}  (output chars: trafilatura {chars[0]}, fast {chars[1]})")


def markdown_figures(settings: dict[str, object], pages: list[Page], annotations: dict[str, dict], rpages: list[Page],
                     expected: dict[str, str], on: str) -> list[dict]:
    """Part 3: `Extract(markdown=True)` against plain trafilatura's Markdown on both corpora; its figures."""
    stage = Extract(timeout_s=None, markdown=True, **settings)
    stage.setup()
    peer_kwargs = {"favor_precision": settings["favor"] == "precision", "favor_recall": settings["favor"] == "recall",
                   "include_comments": settings["include_comments"], "include_tables": settings["include_tables"],
                   "output_format": "markdown", "include_formatting": True}
    runners = {PEER: lambda p: trafilatura.extract(p.body, url=p.url, **peer_kwargs),
               OURS: lambda p: stage.extract_one(p.body, p.url, None)[0]}
    texts = {who: {p.name: runners[who](p) for p in pages + rpages} for who in runners}
    evaldata = {}
    for who in runners:
        confusion = Confusion()
        for page in pages:
            confusion.add(annotations[page.name], texts[who][page.name])
        evaldata[who] = confusion.metrics()["F1"]
    readability = {who: overlap_scores([tp_fp_fn(expected[p.name], texts[who][p.name] or "", 1) for p in rpages])[2]
                   for who in runners}
    escaped = {who: sum(bool(re.search(r"\\[*_`~\[\]<]|</?su[pb]>", t or "")) for t in texts[who].values())
               for who in runners}
    print(f"\n3. Markdown (markdown: true, the web recipes' extraction) against plain trafilatura's Markdown, "
          f"{len(pages)} + {len(rpages)} pages")
    print(f"  evaldata F1: Extract {evaldata[OURS]:.4f}, trafilatura {evaldata[PEER]:.4f} "
          f"(ratio {ratio(evaldata[OURS], evaldata[PEER])}); readability token F1: Extract {readability[OURS]:.4f}, "
          f"trafilatura {readability[PEER]:.4f} (ratio {ratio(readability[OURS], readability[PEER])})")
    print(f"  pages whose text holds an escape or a <sup>/<sub> tag (inside code too): Extract {escaped[OURS]}, "
          f"trafilatura {escaped[PEER]}")
    note = f"pages with an escape or <sup>/<sub> tag: ours {escaped[OURS]}, trafilatura's {escaped[PEER]}"
    return [
        figure(f"evaldata F1, Extract trafilatura, Markdown {on}", evaldata[OURS], "", "plain trafilatura, Markdown",
               evaldata[PEER], target=">= plain trafilatura", met=evaldata[OURS] >= evaldata[PEER], note=note),
        figure(f"readability token F1, Extract trafilatura, Markdown {on}", readability[OURS], "",
               "plain trafilatura, Markdown", readability[PEER], target=">= plain trafilatura",
               met=readability[OURS] >= readability[PEER]),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, default=None, help="at most N pages from each corpus")
    parser.add_argument("--show-diffs", type=int, default=10, help="list up to N differing pages per corpus")
    parser.add_argument("--favor", choices=("balanced", "precision", "recall"), default="balanced",
                        help="trafilatura's trade-off, for all three extractors")
    parser.add_argument("--no-comments", action="store_true", help="include_comments=False for all three")
    parser.add_argument("--no-tables", action="store_true", help="include_tables=False for all three")
    parser.add_argument("--no-markdown", action="store_true", help="leave out part 3, Markdown against trafilatura's")
    args = parser.parse_args()

    root = data_root()
    eval_root, readability_root = root / "html" / "trafilatura", root / "html" / "readability" / "pages"
    if not (eval_root / "evaldata.json").is_file() or not readability_root.is_dir():
        print(f"test data not found under {root} (set CURATION_TESTDATA); nothing to measure")
        return 0

    logging.disable(logging.ERROR)  # trafilatura logs every unparsable page; the counts are reported
    settings = {"favor": args.favor, "include_comments": not args.no_comments, "include_tables": not args.no_tables}
    runners = extractors(settings)
    print(f"trafilatura {trafilatura.__version__}; data: {root}; load average {os.getloadavg()[0]:.2f} at start")
    print(f"settings for all three: {settings}")
    print("plain trafilatura: trafilatura.extract(body, url=url, <settings>)")
    print("Extract <engine>: Extract(engine=<engine>, timeout_s=None, <settings>).extract_one(body, url, None)")

    started = time.perf_counter()
    pages, annotations, missing = eval_pages(eval_root, args.limit)
    extract_all(pages, runners)
    confusion = {who: Confusion() for who in (PEER, OURS, FAST)}
    for page in pages:
        for who, c in confusion.items():
            c.add(annotations[page.name], page.runs[who].text)
    metrics = {who: c.metrics() for who, c in confusion.items()}
    snippets = sum(getattr(confusion[OURS], k) for k in ("tp", "fn", "fp", "tn"))
    table(
        f"1. trafilatura evaldata: {len(pages)} pages ({missing} missing), {snippets} snippets, "
        "whitespace-normalised substring match",
        [
            *((k, {w: metrics[w][k] for w in metrics}, ".4f", "diff" if k == "F1" else "") for k in metrics[OURS]),
            *speed_rows(pages),
        ],
    )

    def snippet_effect(page: Page) -> str:
        item = annotations[page.name]
        counts = []
        for run in (page.ours, page.peer):
            c = Confusion()
            c.add(item, run.text)
            counts.append(f"with {c.tp}/{c.tp + c.fn}, without {c.fp}/{c.fp + c.tn}")
        return "snippets found: ours {}; trafilatura {}".format(*counts)

    def snippets_right(page: Page, who: str) -> float:
        c = Confusion()
        c.add(annotations[page.name], page.runs[who].text)
        return c.tp + c.tn

    report_differences("evaldata", pages, args.show_diffs, snippet_effect)
    report_fast_losses(pages, args.show_diffs, snippets_right, "snippets right")

    rpages, expected = readability_pages(readability_root, args.limit)
    extract_all(rpages, runners)
    scores = {}
    for who in (PEER, OURS, FAST):
        for n in (1, 4):
            rows = [tp_fp_fn(expected[p.name], p.runs[who].text or "", n) for p in rpages]
            scores[who, n] = overlap_scores(rows)
    names = ("precision", "recall", "F1")
    table(
        f"2. readability test pages: {len(rpages)} pages, \\w+ tokens vs text of expected.html",
        [
            *((f"token {m}", {w: scores[w, 1][i] for w in (PEER, OURS, FAST)}, ".4f", "diff" if m == "F1" else "")
              for i, m in enumerate(names)),
            ("4-shingle F1 (ScrapingHub)", {w: scores[w, 4][2] for w in (PEER, OURS, FAST)}, ".4f", ""),
            *speed_rows(rpages),
        ],
    )

    def token_effect(page: Page) -> str:
        f1s = [overlap_scores([tp_fp_fn(expected[page.name], run.text or "", 1)])[2] for run in (page.ours, page.peer)]
        return "page token F1: ours {:.4f}, trafilatura {:.4f}".format(*f1s)

    def page_f1(page: Page, who: str) -> float:
        return overlap_scores([tp_fp_fn(expected[page.name], page.runs[who].text or "", 1)])[2]

    report_differences("readability", rpages, args.show_diffs, token_effect)
    report_fast_losses(rpages, args.show_diffs, page_f1, "page token F1")

    f1_eval = metrics[OURS]["F1"] / metrics[PEER]["F1"] if metrics[PEER]["F1"] else float("inf")
    f1_read = scores[OURS, 1][2] / scores[PEER, 1][2] if scores[PEER, 1][2] else float("inf")
    tolerance = 0.0
    verdict = f1_eval >= 1.0 - tolerance and f1_read >= 1.0 - tolerance
    print(
        f"\nExtract trafilatura at least as good as plain trafilatura (F1 ratio >= {1.0 - tolerance:.3f}): {verdict} "
        f"(evaldata F1 ratio {f1_eval:.4f}, readability token F1 ratio {f1_read:.4f})"
    )
    drops = {
        "evaldata": metrics[OURS]["F1"] - metrics[FAST]["F1"],
        "readability": scores[OURS, 1][2] - scores[FAST, 1][2],
    }
    within = all(d <= F1_TOLERANCE for d in drops.values())
    print(
        f"fast engine F1 within {F1_TOLERANCE} of Extract trafilatura: {within} ("
        + ", ".join(f"{k} {-d:+.4f}" for k, d in drops.items()) + ")" + ("" if within else "  BELOW TARGET")
    )
    everything = pages + rpages
    cpu = {w: sum(p.runs[w].cpu for p in everything) for w in (PEER, OURS, FAST)}
    rates = {w: len(everything) / cpu[w] if cpu[w] else float("inf") for w in cpu}
    speedup = {w: rates[FAST] / rates[w] for w in (PEER, OURS)}
    print(
        f"speed over all {len(everything)} pages, pages/s per core (CPU time), interleaved: plain trafilatura "
        f"{rates[PEER]:.1f}, Extract trafilatura {rates[OURS]:.1f}, Extract fast {rates[FAST]:.1f}: "
        f"{speedup[OURS]:.1f}x Extract trafilatura, {speedup[PEER]:.1f}x plain trafilatura (target ~{SPEED_TARGET:g}x)"
        + ("" if min(speedup.values()) >= SPEED_TARGET else "  BELOW TARGET")
    )
    # Interleaving keeps the comparison fair but runs the fast engine on caches trafilatura just filled
    # with its own data; a stage runs one engine. So each Extract engine again, alone over all pages.
    alone = {}
    for who in (OURS, FAST):
        start = time.process_time()
        for page in everything:
            runners[who](page)
        alone[who] = len(everything) / (time.process_time() - start)
    print(
        f"each Extract engine alone over the {len(everything)} pages, pages/s per core (CPU time): trafilatura "
        f"{alone[OURS]:.1f}, fast {alone[FAST]:.1f}: {alone[FAST] / alone[OURS]:.1f}x"
    )
    # where the fast stage's time goes: its share before the engine (decoding, the attribute scan)
    htmls = [decode_html(page.body, None)[0] for page in everything]
    start = time.process_time()
    for html in htmls:
        too_many_attributes(html, ExtractParams().max_tag_attributes)
    scan = time.process_time() - start
    start = time.process_time()
    for html, page in zip(htmls, everything, strict=True):
        fast_extract(html, page.url, favor=settings["favor"], include_comments=settings["include_comments"],
                     include_tables=settings["include_tables"])
    engine = time.process_time() - start
    print(
        f"fast_extract alone on decoded pages: {len(everything) / engine:.1f} pages/s per core "
        f"({engine / len(everything) * 1000:.2f} ms/page); Extract's attribute scan before it: "
        f"{scan / len(everything) * 1000:.2f} ms/page"
    )
    on = f"({args.favor}{', no comments' if args.no_comments else ''}{', no tables' if args.no_tables else ''})"
    peer = "Extract trafilatura"
    markdown = [] if args.no_markdown else markdown_figures(settings, pages, annotations, rpages, expected, on)
    print(f"runtime {time.perf_counter() - started:.1f} s; load average {os.getloadavg()[0]:.2f} at the end")

    write_results("extraction_quality", [
        figure(f"evaldata F1, fast engine {on}, {len(pages)} pages", metrics[FAST]["F1"], "", peer,
               metrics[OURS]["F1"], target=f"at most {F1_TOLERANCE} below", met=drops["evaldata"] <= F1_TOLERANCE),
        figure(f"readability token F1, fast engine {on}, {len(rpages)} pages", scores[FAST, 1][2], "", peer,
               scores[OURS, 1][2], target=f"at most {F1_TOLERANCE} below", met=drops["readability"] <= F1_TOLERANCE),
        figure(f"evaldata F1, Extract trafilatura {on}", metrics[OURS]["F1"], "", "plain trafilatura",
               metrics[PEER]["F1"], target=">= plain trafilatura", met=f1_eval >= 1.0),
        figure(f"readability token F1, Extract trafilatura {on}", scores[OURS, 1][2], "", "plain trafilatura",
               scores[PEER, 1][2], target=">= plain trafilatura", met=f1_read >= 1.0),
        figure(f"fast engine alone, {len(everything)} pages", alone[FAST], "pages/s per core", f"{peer} alone",
               alone[OURS], target=f"~{SPEED_TARGET:g}x", met=alone[FAST] / alone[OURS] >= SPEED_TARGET),
        *markdown,
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
