"""Precision of the `pii` stage on real web text, checked automatically, with dolma's regexes beside it.

Data (under `$CURATION_TESTDATA` or ../shared/data (beside the project)): `webtext/dolma_ccnet/*.jsonl.gz` (Common
Crawl documents) and the text our `extract` stage gets from every real page under `html/`
(trafilatura's and mozilla/readability's test pages, mostly German and English).

Every redaction is printed with its kind and context (all of them when there are few, else a
sample per kind) and checked against its kind (an identity number by its checksum, a card number by Luhn's): an
e-mail must be a syntactically valid address (RFC 5321 lengths, dot-atom local part, LDH domain labels,
alphabetic TLD), an IP must parse with `ipaddress`, a phone number must have 7-15 digits and nothing but
digits and separators (space, + ( ) . - / and the en dash of German typography). Precision per kind = share
of redactions that pass. Then the original texts are scanned for version strings
(`v1.2.3`, `version 10.0.0.1`, `Chrome/120.0.0.0`, bare `1.2.3`) and dates (2024-01-15,
15.01.2024, 01/15/2024, 2024/01/15), ISBNs and decimal numbers (3.14, 689.2196447): every one
that overlaps a redaction is a false positive that a syntactic check cannot see (target: 0).

Peer: the regexes of dolma's `pii_regex_with_counts_fast_v2` tagger (allenai/dolma,
python/dolma/taggers/pii.py, Apache-2.0), reproduced here for the measurement only, with its e-mail
post-check; the same checks run on its matches. This is a precision check: recall needs labelled
PII, which this data does not have.

    .venv/bin/python benchmarks/pii_precision.py [--pages N] [--show N]
"""

from __future__ import annotations

import argparse
import gzip
import ipaddress
import json
import os
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from curation.stages import Extract
from curation.stages.pii import PiiRedaction
from curation.text.identifiers import is_resident_id, luhn

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _data import data_root
    from _results import figure, write_results
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._data import data_root
    from benchmarks._results import figure, write_results

try:  # python benchmarks/pii_precision.py puts benchmarks/ on sys.path
    from warc_corpus import DataMissing, real_pages
except ImportError:  # imported as benchmarks.pii_precision
    from benchmarks.warc_corpus import DataMissing, real_pages

_DOLMA = {  # dolma FastPiiRegex patterns, for the peer measurement
    "email": re.compile(r"[.\s@,?!;:)(]*([^\s@]+@[^\s@,?!;:)(]+?)[.\s@,?!;:)(]?[\s\n\r]"),
    "phone": re.compile(r"\s+\(?(\d{3})\)?[-\. ]*(\d{3})[-. ]?(\d{4})"),
    "ip": re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)"),
}
_ATEXT = re.compile(r"^[\w!#$%&'*+/=?^`{|}~-]+(?:\.[\w!#$%&'*+/=?^`{|}~-]+)*$")
_LABEL = re.compile(r"^[^\W_](?:[^\W_]|-){0,61}(?<!-)$")
_VERSIONS = [
    re.compile(r"(?i)\b(?:v|ver|version|release|build|rev|firmware)\.?\s*\d+(?:\.\d+)+"),
    re.compile(r"\b[A-Za-z][\w-]*/\d+(?:\.\d+)+"),  # user-agent and package tokens: Chrome/120.0.0.0
    re.compile(r"(?<![\d.])\d{1,3}\.\d{1,3}\.\d{1,3}(?![\d]|\.\d)"),  # bare three-part versions
]
_ISBNS = [
    re.compile(r"(?i)\bISBN(?:-1[03])?:?\s*[\dX][\dX -]{8,16}[\dX]\b"),
    re.compile(r"(?<![\d-])97[89]-\d{1,5}-\d{1,7}-\d{1,7}-\d(?![\d-])"),
]
_DECIMALS = [re.compile(r"(?<![\d.,])\d+[.,]\d+(?![\d]|[.,]\d|-\d)")]  # 3.14, 689.2196447, 1,5: one separator
_DATES = [
    re.compile(r"(?<!\d)\d{4}-\d{1,2}-\d{1,2}(?!\d)"),
    re.compile(r"(?<![\d.])\d{1,2}\.\d{1,2}\.(?:\d{4}|\d{2})(?![\d]|\.\d)"),
    re.compile(r"(?<![\d/])\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})(?![\d/])"),
    re.compile(r"(?<!\d)\d{4}/\d{1,2}/\d{1,2}(?!\d)"),
]


def valid_email(value: str) -> bool:
    if value.count("@") != 1 or len(value) > 254:
        return False
    local, domain = value.split("@")
    labels = domain.split(".")
    return (
        0 < len(local) <= 64
        and bool(_ATEXT.match(local))
        and len(labels) >= 2
        and all(_LABEL.match(label) for label in labels)
        and labels[-1].isalpha()
        and len(labels[-1]) >= 2
    )


def valid_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def valid_phone(value: str) -> bool:
    digits = sum(c.isdigit() for c in value)
    return 7 <= digits <= 15 and not re.search(r"[^\d\s+().\-/\u00a0\u2013]", value)


def valid_card(value: str) -> bool:
    digits = "".join(c for c in value if c.isdigit())
    return 13 <= len(digits) <= 19 and not re.search(r"[^\d -]", value) and luhn(digits)


CHECKS = {"email": valid_email, "ip": valid_ip, "phone": valid_phone, "national_id": is_resident_id,
          "card": valid_card, "messenger": lambda value: re.fullmatch(r"[1-9]\d{4,10}|[A-Za-z][\w-]{5,19}", value)}


def dolma_spans(text: str) -> list[tuple[int, int, str]]:
    spans = []
    for kind, pattern in _DOLMA.items():
        for m in pattern.finditer(text):
            if kind == "email":
                local, _, domain = m.group(1).partition("@")
                if local.strip() == "(" or "." not in domain:
                    continue
                spans.append((*m.span(1), kind))
            elif kind == "phone":
                spans.append((m.start(1) - (1 if text[m.start(1) - 1] == "(" else 0), m.end(3), kind))
            else:
                spans.append((*m.span(), kind))
    return spans


def load_texts(root: Path, pages: int | None) -> list[tuple[str, str]]:
    texts: list[tuple[str, str]] = []
    for path in sorted((root / "webtext" / "dolma_ccnet").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [(f"{path.name}#{i}", json.loads(line)["text"]) for i, line in enumerate(f) if line.strip()]
    n_web = len(texts)
    extract = Extract()
    started = time.perf_counter()
    for page in real_pages(root, limit=pages):
        try:
            text, _ = extract.extract_one(page.html(), page.url, None)
        except Exception:  # a page trafilatura cannot handle is no PII test case
            continue
        if text:
            texts.append((page.url, text))
    chars = sum(len(t) for _, t in texts) / 1e6
    print(f"texts: {n_web} dolma_ccnet documents, {len(texts) - n_web} extracted pages "
          f"({time.perf_counter() - started:.0f} s to extract), {chars:.1f} M chars")  # fmt: skip
    return texts


def context(text: str, start: int, end: int, width: int = 40) -> str:
    left = text[max(0, start - width) : start].replace("\n", "⏎")
    right = text[end : end + width].replace("\n", "⏎")
    return f"…{left}[[{text[start:end]}]]{right}…"


def overlaps(text: str, spans: list[tuple[int, int, str]], patterns: list[re.Pattern[str]]) -> list[str]:
    out = []
    for pattern in patterns:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e, _ in spans):
                out.append(context(text, *m.span()))
    return out


Finder = Callable[[str], list[tuple[int, int, str]]]


def evaluate(name: str, texts: list[tuple[str, str]], finder: Finder, show: int, rng: random.Random) -> dict[str, Any]:
    found: dict[str, list[tuple[str, str, bool]]] = {k: [] for k in CHECKS}
    versions: list[str] = []
    dates: list[str] = []
    isbns: list[str] = []
    decimals: list[str] = []
    for _, text in texts:
        spans = finder(text)
        for start, end, kind in spans:
            found[kind].append((text[start:end], context(text, start, end), CHECKS[kind](text[start:end])))
        versions += overlaps(text, spans, _VERSIONS)
        dates += overlaps(text, spans, _DATES)
        isbns += overlaps(text, spans, _ISBNS)
        decimals += overlaps(text, spans, _DECIMALS)
    print(f"\n=== {name} ===")
    for kind, hits in found.items():
        bad = [h for h in hits if not h[2]]
        listed = hits if len(hits) <= show else rng.sample(hits, show)
        print(f"-- {kind}: {len(hits)} redactions, {len(bad)} fail the {kind} check"
              + ("" if len(hits) <= show else f" (showing {show} at random)"))  # fmt: skip
        for _, ctx, ok in listed:
            print(f"   {'ok ' if ok else 'BAD'} {ctx}")
        for _, ctx, _ok in bad[:show] if len(hits) > show else []:
            print(f"   BAD {ctx}")
    for label, items in (
        ("version strings", versions),
        ("dates", dates),
        ("ISBNs", isbns),
        ("decimal numbers", decimals),
    ):
        print(f"-- {label} overlapping a redaction: {len(items)}")
        for ctx in items[:show]:
            print(f"   {ctx}")
    return {
        "precision": {k: (sum(h[2] for h in v) / len(v) if v else None, len(v)) for k, v in found.items()},
        "versions": len(versions),
        "dates": len(dates),
        "isbns": len(isbns),
        "decimals": len(decimals),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=None, help="extract this many pages (default: all)")
    parser.add_argument("--show", type=int, default=40, help="print at most this many redactions per kind")
    args = parser.parse_args(argv)
    root = data_root()
    try:
        texts = load_texts(root, args.pages)
    except DataMissing as exc:
        print(f"skipped: {exc}")
        return 0
    print(f"load average: {os.getloadavg()[0]:.2f}")
    stage = PiiRedaction()
    table = pa.table({"text": [t for _, t in texts]})
    started = time.perf_counter()
    processed = stage.process(table)
    seconds = time.perf_counter() - started
    total = {k: int(v.sum()) for k, v in (processed.counts or {}).items()}
    print(f"pii stage: {len(texts)} texts in {seconds:.2f} s ({len(texts) / seconds:,.0f} docs/s, "
          f"{sum(len(t) for _, t in texts) / seconds / 1e6:.1f} M chars/s); redactions {total}")  # fmt: skip

    ours = evaluate("ours: pii stage (defaults)", texts, stage.spans, args.show, random.Random(0))
    peer = evaluate("peer: dolma regexes", texts, dolma_spans, args.show, random.Random(0))

    print(
        "\nsummary                     "
        + "".join(f"{k + ' prec (n)':>20}" for k in CHECKS)
        + "  versions  dates  ISBNs  decimals"
    )
    for name, r in (("ours", ours), ("peer: dolma regexes", peer)):
        cells = []
        for kind in CHECKS:
            p, n = r["precision"][kind]
            cells.append(f"{'-' if p is None else f'{p:.3f}'} ({n})".rjust(20))
        print(
            f"{name:<28}"
            + "".join(cells)
            + f"  {r['versions']:>8}  {r['dates']:>5}  {r['isbns']:>5}  {r['decimals']:>8}"
        )
    print(f"{'target':<28}" + "".join(f"{'1.000':>20}" for _ in CHECKS) + f"  {0:>8}  {0:>5}  {0:>5}  {0:>8}")
    figures = []
    for kind in CHECKS:
        (p, n), (peer_p, _) = ours["precision"][kind], peer["precision"][kind]
        if p is not None:
            figures.append(figure(f"{kind} precision ({n} redactions in {len(texts)} texts)", p, "", "dolma regexes",
                                  peer_p, target="1.000", met=p == 1))
    for kind in ("versions", "dates", "isbns", "decimals"):
        figures.append(figure(f"{kind} redacted by mistake", ours[kind], "spans", "dolma regexes", peer[kind],
                              target="0", met=ours[kind] == 0))
    write_results("pii_precision", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
