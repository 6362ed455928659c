"""Agreement and speed of our quality filters against datatrove 0.10.1's, on real extracted pages.

Peers: datatrove's GopherRepetitionFilter, GopherQualityFilter, C4QualityFilter
(filter_no_terminal_punct=False) and FineWebQualityFilter, i.e. FineWeb's heuristic filter chain
in FineWeb's order, against our `gopher_repetition`, `gopher_quality`, `c4: {terminal_punct: false}`
and `fineweb` stages with the same thresholds (every default is datatrove's).

Data: every page of `html/trafilatura/{cache,eval}/*.html.gz` and
`html/readability/pages/*/source.html.gz` under `$CURATION_TESTDATA` (else `../shared/data`),
extracted once with our extractor (`Extract(timeout_s=None).extract_one(page, None, None)`) and
cached as JSONL in a temporary folder (`--cache`), so both sides read identical text. Extraction is
not timed.

Stop words: most of these pages are German. Gopher's rule needs two of eight English stop words,
so with the default list nearly every non-English page would be dropped for its language, on both
sides alike, which would inflate agreement and say nothing about quality. Both sides therefore get
the same list: Gopher's eight English words plus their German counterparts (`--stop-words en` for
English only). Pages in other languages are still dropped by that rule, on both sides.

What runs:
  1. each filter alone on every document (original text): per filter, keep rate and drop share per
     rule on both sides, and the share of documents with the same keep/drop decision;
  2. the chain (each filter sees the survivors of the previous; FineWeb sees C4's cleaned text):
     the share with the same final decision (and dropping filter, reason, output text), and
     documents/s per core for both sides: documents over the CPU seconds (process time) of the
     filtering only, each side in one process. Ours runs through `curation.apply.run_stage` in
     batches of 512 (bookkeeping included); datatrove's calls each filter's `filter(doc)` directly,
     without its executor. After one warm-up document (so spaCy's and our rule tables are loaded)
     the chain runs twice over the corpus: the first pass starts with cold word caches (our word
     memo cleared; spaCy's tokenizer cache already holds the words of step 1), the second shows
     the steady state of a long-running worker. The per-filter figures of step 1 start cold too.

Ours judge every line here (`prose_only: false`), as datatrove does: the benchmark checks that the semantics are
the same. `--prose-only` runs ours as shipped, code, tables and headings left out of the statistics
(`curation.text.layout`): the agreement then says how many real pages that changes.

datatrove lives in its own virtual environment (`benchmarks/.venv-datatrove`, created by
`benchmarks/datatrove_env.sh` when missing), never in the project's.

    .venv/bin/python benchmarks/quality_agreement.py [--limit N] [--show 8] [--stop-words en+de|en]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks._data import data_root  # noqa: E402
from benchmarks._results import LOAD_AT_START, figure, write_results  # noqa: E402
from curation import schema  # noqa: E402
from curation.apply import run_stage  # noqa: E402
from curation.stages.c4 import C4  # noqa: E402
from curation.stages.fineweb import FineWeb  # noqa: E402
from curation.stages.gopher import GOPHER_STOP_WORDS, GopherQuality, GopherRepetition  # noqa: E402

DATA = data_root()
VENV = PROJECT_ROOT / "benchmarks" / ".venv-datatrove"
GERMAN_STOP_WORDS = ["der", "die", "das", "und", "zu", "von", "mit", "sein", "haben", "dass"]
FILTERS = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]  # FineWeb's order
BATCH = 512

# our reason -> datatrove's, where the names differ
REASON_NAMES = {
    "too_few_words": "gopher_short_doc", "too_many_words": "gopher_long_doc",
    "short_mean_word_length": "gopher_below_avg_threshold", "long_mean_word_length": "gopher_above_avg_threshold",
    "too_many_hashes": "gopher_too_many_hashes", "too_many_ellipses": "gopher_too_many_ellipsis",
    "too_many_bullet_lines": "gopher_too_many_bullets", "too_many_ellipsis_lines": "gopher_too_many_end_ellipsis",
    "too_few_alpha_words": "gopher_below_alpha_threshold", "too_few_stop_words": "gopher_enough_stop_words",
    **{f"top_{n}gram": f"top_{n}_gram" for n in range(2, 5)},
    **{f"dup_{n}gram": f"duplicated_{n}_n_grams" for n in range(5, 11)},
}

DATATROVE_SIDE = r'''
import json, sys, time
from datatrove.data import Document
from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                        GopherRepetitionFilter)

docs = [json.loads(line) for line in open(sys.argv[1])]
stop_words = json.loads(sys.argv[3])

def make():
    return {"gopher_repetition": GopherRepetitionFilter(), "gopher_quality": GopherQualityFilter(stop_words=stop_words),
            "c4": C4QualityFilter(filter_no_terminal_punct=False), "fineweb": FineWebQualityFilter()}

def verdict(result):
    if isinstance(result, tuple):
        return result[1] or "dropped"
    return None if result else "dropped"

for f in make().values():  # warm-up: loads spaCy
    f.filter(Document(text="Warm up with a short sentence. And another one.", id="w"))
out = {"alone": {}, "alone_cpu": {}, "chain": [], "chain_cpu": 0.0, "kept_text": {}}
for name, f in make().items():
    start = time.process_time()
    out["alone"][name] = [verdict(f.filter(Document(text=d["text"], id=d["id"]))) for d in docs]
    out["alone_cpu"][name] = time.process_time() - start
chain = make()
for second in (False, True):  # the same pass twice: the second runs with spaCy's word cache warm
    start = time.process_time()
    for d in docs:
        doc = Document(text=d["text"], id=d["id"])
        result = None
        for name, f in chain.items():
            reason = verdict(f.filter(doc))
            if reason is not None:
                result = [name, reason]
                break
        if not second:
            out["chain"].append(result)
            if result is None:
                out["kept_text"][d["id"]] = doc.text
    out["chain_cpu_warm" if second else "chain_cpu"] = time.process_time() - start
json.dump(out, open(sys.argv[2], "w"))
'''


def pages(root: Path) -> list[Path]:
    tra = root / "html" / "trafilatura"
    return (sorted((tra / "cache").glob("*.html.gz")) + sorted((tra / "eval").glob("*.html.gz"))
            + sorted((root / "html" / "readability" / "pages").glob("*/source.html.gz")))


def extract_texts(root: Path, cache: Path, limit: int | None) -> list[dict]:
    """Our extractor's text of every page, cached as JSONL (id = the page's path under the data root)."""
    if not cache.is_file():
        from curation.stages import Extract

        extractor = Extract(timeout_s=None)
        cache.parent.mkdir(parents=True, exist_ok=True)
        started = time.time()
        tmp = cache.with_suffix(".tmp")
        with tmp.open("w") as out:
            for path in pages(root):
                try:
                    text, _ = extractor.extract_one(gzip.decompress(path.read_bytes()), None, None)
                except Exception:  # a page the extractor cannot handle is simply not in the corpus
                    text = None
                if text and text.strip():
                    out.write(json.dumps({"id": str(path.relative_to(root)), "text": text}) + "\n")
        tmp.rename(cache)
        print(f"extracted texts cached in {cache} ({time.time() - started:.0f} s)")
    docs = [json.loads(line) for line in cache.open()]
    if limit:
        step = max(1, len(docs) // limit)
        docs = docs[::step][:limit]
    return docs


def ensure_datatrove() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run(["bash", str(PROJECT_ROOT / "benchmarks" / "datatrove_env.sh"), str(VENV)], check=True)
    return python


PROSE_ONLY = [False]  # `--prose-only`: ours as shipped (layout set aside), not datatrove's semantics


def our_stages(stop_words: list[str], keep_scores: bool = False) -> dict:
    keys = {"keep_scores": keep_scores, "prose_only": PROSE_ONLY[0]}
    return {
        "gopher_repetition": GopherRepetition(**keys),
        "gopher_quality": GopherQuality(stop_words=stop_words, **keys),
        "c4": C4(terminal_punct=False, **keys),
        "fineweb": FineWeb(**keys),
    }


def as_batch(docs: list[dict]) -> pa.Table:
    n = len(docs)
    columns = {"id": pa.array([d["id"] for d in docs], pa.string()),
               "source": pa.array(["pages"] * n, pa.string()),
               "url": pa.nulls(n, pa.string()), "title": pa.nulls(n, pa.string()),
               "text": pa.array([d["text"] for d in docs], pa.string()), "meta": pa.nulls(n, pa.string())}
    for field in schema.BOOKKEEPING_FIELDS:
        columns[field.name] = pa.nulls(n, field.type)
    return pa.table(columns)


def ours(docs: list[dict], stop_words: list[str]) -> dict:
    """Our decisions (reason or None) per filter alone and for the chain, with CPU seconds."""
    warm = as_batch([{"id": "w", "text": "Warm up with a short sentence. And another one."}])
    for stage in our_stages(stop_words).values():
        run_stage(stage, warm)
    batches = [as_batch(docs[i:i + BATCH]) for i in range(0, len(docs), BATCH)]
    out: dict = {"alone": {}, "alone_cpu": {}, "scores": {}}
    from curation.text.splitter import WORDS

    for name, stage in our_stages(stop_words, keep_scores=True).items():
        WORDS.clear()  # each filter starts with a cold word memo
        start = time.process_time()
        results = [run_stage(stage, b) for b in batches]
        out["alone_cpu"][name] = time.process_time() - start
        table = pa.concat_tables(results)
        order = {rid: i for i, rid in enumerate(table.column("id").to_pylist())}
        reasons = table.column(schema.REASON).to_pylist()
        out["alone"][name] = [reasons[order[d["id"]]] for d in docs]
        score_cols = [c for c in stage.output_columns if c in table.column_names]
        rows = table.select(["id", *score_cols]).to_pylist()
        out["scores"][name] = {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in rows}
    WORDS.clear()
    chain = our_stages(stop_words)
    for second in (False, True):  # the same pass twice: the second runs with the word memo warm
        start = time.process_time()
        finals = []
        for batch in batches:
            for stage in chain.values():
                batch = run_stage(stage, batch)
            finals.append(batch)
        out["chain_cpu_warm" if second else "chain_cpu"] = time.process_time() - start
    table = pa.concat_tables(finals)
    order = {rid: i for i, rid in enumerate(table.column("id").to_pylist())}
    stages, reasons = table.column(schema.STAGE).to_pylist(), table.column(schema.REASON).to_pylist()
    out["chain"] = [None if reasons[order[d["id"]]] is None else [stages[order[d["id"]]], reasons[order[d["id"]]]]
                    for d in docs]
    kept = table.filter(pc.is_null(table.column(schema.REASON)))
    out["kept_text"] = dict(zip(kept.column("id").to_pylist(), kept.column("text").to_pylist(), strict=True))
    return out


def theirs(docs: list[dict], stop_words: list[str], workdir: Path) -> dict:
    python = ensure_datatrove()
    inp, outp, script = workdir / "docs.jsonl", workdir / "datatrove.json", workdir / "datatrove_side.py"
    with inp.open("w") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    script.write_text(DATATROVE_SIDE)
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "LOGURU_LEVEL": "ERROR"}
    subprocess.run([str(python), str(script), str(inp), str(outp), json.dumps(stop_words)], check=True, env=env)
    return json.loads(outp.read_text())


def report(docs: list[dict], a: dict, b: dict, show: int) -> list[dict]:
    """Prints the comparison; its figures: the same decision as datatrove and docs/s, per filter and chained."""
    n = len(docs)
    figures = []
    print(f"\n{n} documents; drop share per rule, each filter alone on the original text "
          "(ours | datatrove; reasons in datatrove's names):")
    for name in FILTERS:
        ra = Counter(REASON_NAMES.get(r, r) for r in a["alone"][name] if r is not None)
        rb = Counter(r for r in b["alone"][name] if r is not None)
        keep_a = sum(r is None for r in a["alone"][name]) / n
        keep_b = sum(r is None for r in b["alone"][name]) / n
        same = sum((x is None) == (y is None) for x, y in zip(a["alone"][name], b["alone"][name], strict=True)) / n
        print(f"  {name:18s} keep {keep_a:6.1%} | {keep_b:6.1%}   same decision {same:6.1%}   "
              f"docs/s per core {n / a['alone_cpu'][name]:8.1f} | {n / b['alone_cpu'][name]:8.1f}")
        figures.append(figure(f"{name} alone: same decision as datatrove ({n} documents)", same, "share",
                              note=f"keep {keep_a:.1%}, datatrove {keep_b:.1%}"))
        for reason in sorted(set(ra) | set(rb), key=lambda r: -(ra[r] + rb[r])):
            print(f"      {reason:32s} {ra[reason] / n:6.1%} | {rb[reason] / n:6.1%}")
    chain_a, chain_b = a["chain"], b["chain"]
    pairs = list(zip(chain_a, chain_b, strict=True))
    same = sum((x is None) == (y is None) for x, y in pairs)
    same_filter = sum((x is None and y is None) or bool(x and y and x[0] == y[0]) for x, y in pairs)
    same_reason = sum(x == y or bool(x and y and x[0] == y[0] and REASON_NAMES.get(x[1], x[1]) == y[1])
                      for x, y in pairs)
    kept_a, kept_b = sum(x is None for x in chain_a), sum(y is None for y in chain_b)
    both_kept = [i for i, (x, y) in enumerate(pairs) if x is None and y is None]
    same_text = sum(a["kept_text"][docs[i]["id"]] == b["kept_text"][docs[i]["id"]] for i in both_kept)
    print("\nchain gopher_repetition -> gopher_quality -> c4 (terminal_punct off) -> fineweb:")
    print(f"  kept: ours {kept_a / n:.1%}, datatrove {kept_b / n:.1%}")
    print(f"  same final keep/drop decision: {same}/{n} = {same / n:.2%}")
    print(f"  ... and dropped by the same filter: {same_filter / n:.2%}, for the same reason: {same_reason / n:.2%}")
    print(f"  kept by both with identical output text (after C4's line removal): {same_text}/{len(both_kept)}")
    for key, label in (("chain_cpu", "first pass, cold word caches"), ("chain_cpu_warm", "second pass, warm")):
        print(f"  docs/s per core ({label}): ours {n / a[key]:.1f} ({a[key]:.2f} CPU s), "
              f"datatrove {n / b[key]:.1f} ({b[key]:.2f} CPU s), ours/datatrove {b[key] / a[key]:.1f}x")
        figures.append(figure(f"the chain, {label}", n / a[key], "docs/s per core", "datatrove", n / b[key]))
    figures.append(figure(f"the chain: same final decision as datatrove ({n} documents)", same / n, "share",
                          note=f"same filter {same_filter / n:.2%}, same reason {same_reason / n:.2%}"))
    shown = 0
    print(f"\nsome disagreements, filter alone (up to {show}):")
    for name in FILTERS:
        for i, (x, y) in enumerate(zip(a["alone"][name], b["alone"][name], strict=True)):
            if (x is None) != (y is None) and shown < show:
                scores = a["scores"][name].get(docs[i]["id"], {})
                brief = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in scores.items())
                print(f"  {name}: {docs[i]['id']}: ours {x or 'keep'}, datatrove {y or 'keep'}\n      {brief}")
                shown += 1
    if not shown:
        print("  none")
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="an evenly spread subset of N documents")
    ap.add_argument("--show", type=int, default=8, help="disagreements to list")
    ap.add_argument("--stop-words", choices=["en+de", "en"], default="en+de")
    ap.add_argument("--prose-only", action="store_true",
                    help="our filters as shipped, code, tables and headings set aside (default: every line judged, "
                    "datatrove's semantics, which this benchmark checks)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "curation-quality-agreement"
                    / "texts.jsonl", help="JSONL of extracted texts (made if missing)")
    args = ap.parse_args()
    PROSE_ONLY[0] = args.prose_only
    if not (DATA / "html").is_dir():
        print(f"test data not found at {DATA} (set CURATION_TESTDATA); nothing to measure")
        return 0
    print(f"load average at start: {LOAD_AT_START:.2f}")
    stop_words = GOPHER_STOP_WORDS + (GERMAN_STOP_WORDS if args.stop_words == "en+de" else [])
    docs = extract_texts(DATA, args.cache, args.limit)
    with tempfile.TemporaryDirectory() as tmp:
        b = theirs(docs, stop_words, Path(tmp))
    a = ours(docs, stop_words)
    write_results("quality_agreement", report(docs, a, b, args.show))
    return 0


if __name__ == "__main__":
    sys.exit(main())
