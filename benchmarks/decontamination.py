"""Decontamination: every planted benchmark item is found, no untouched document is flagged.

Indexes GSM8K (test, test_socratic) and HumanEval from the test data with the `decontaminate`
stage's defaults (13-word normalized n-grams), then:

- plants each item (a GSM8K question, a HumanEval prompt + solution) inside a real document: the
  text extracted from a real page, the item spliced in the middle; counts how many are found and
  attributed to the right benchmark;
- runs the untouched corpus (every real page's extracted text and the CCNet documents) and counts
  documents flagged (target 0);
- prints documents/s per core of the stage, and the index size.

    .venv/bin/python benchmarks/decontamination.py [--pages N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time

from curation.apply import run_stage
from curation.schema import documents_table
from curation.stages import Decontaminate, Extract

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _data import data_root
    from _results import figure, write_results
    from warc_corpus import DataMissing, real_pages
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._data import data_root
    from benchmarks._results import figure, write_results
    from benchmarks.warc_corpus import DataMissing, real_pages



def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, default=None, help="use an evenly spread subset of the real pages")
    args = p.parse_args(argv)
    root = data_root()
    try:
        pages = real_pages(limit=args.pages)
    except DataMissing as exc:
        print(f"decontamination: {exc}; skipped")
        return 0
    extract = Extract(timeout_s=None)
    texts = [t for t in (extract.extract_one(page.html(), page.url, None)[0] for page in pages) if t]
    for path in sorted((root / "webtext").glob("**/*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            texts += [json.loads(line)["text"] for line in f if line.strip()]
    items: list[tuple[str, str]] = []
    for name in ("test", "test_socratic"):
        for line in (root / "benchmarks/gsm8k" / f"{name}.jsonl").read_text().splitlines():
            items.append((f"gsm8k/{name}", json.loads(line)["question"]))
    with gzip.open(root / "benchmarks/humaneval/HumanEval.jsonl.gz", "rt") as f:
        items += [("humaneval/HumanEval", (r := json.loads(line))["prompt"] + r["canonical_solution"]) for line in f]

    stage = Decontaminate(benchmarks=[str(root / "benchmarks")])
    started = time.process_time()
    stage.setup()
    print(f"index: {len(stage.index):,} n-grams of {len(stage.count_keys)} benchmarks, "
          f"{stage.index.nbytes / 1e6:.1f} MB, built in {time.process_time() - started:.1f} s CPU")

    planted = []
    for i, (_, item) in enumerate(items):
        host = texts[i % len(texts)]
        middle = len(host) // 2
        planted.append(f"{host[:middle]}\n{item}\n{host[middle:]}")
    started = time.process_time()
    out = run_stage(stage, documents_table(planted))
    seconds = time.process_time() - started
    found = out.column("contamination").to_pylist()
    right = sum(f == name for f, (name, _) in zip(found, items, strict=True))
    hit = sum(f is not None for f in found)
    print(f"planted: {len(items):,} items in real documents; found {hit:,} ({hit / len(items):.4f}), "
          f"attributed to their own benchmark {right:,} (GSM8K questions also appear in test_socratic)")
    misses = [(name, item[:80]) for f, (name, item) in zip(found, items, strict=True) if f is None]
    for name, head in misses[:5]:
        print(f"  missed {name}: {head!r}")

    clean = run_stage(stage, documents_table(texts))
    flagged = [(t[:80], f) for t, f in zip(texts, clean.column("contamination").to_pylist(), strict=True) if f]
    print(f"untouched corpus: {len(texts):,} documents, flagged {len(flagged)} (target 0)")
    for head, f in flagged[:5]:
        print(f"  flagged as {f}: {head!r}")
    print(f"stage speed: {len(planted) / seconds:,.0f} documents/s per core (planted documents, CPU time)")
    print(f"targets: all planted items found: {'yes' if hit == len(items) else 'no'}; "
          f"no untouched document flagged: {'yes' if not flagged else 'no'}")
    write_results("decontamination", [
        figure(f"planted benchmark items found ({len(items):,} GSM8K and HumanEval)", hit / len(items), "share",
               target="all", met=hit == len(items)),
        figure(f"untouched documents flagged (of {len(texts):,})", len(flagged), "documents", target="0",
               met=not flagged),
        figure("stage speed, planted documents", len(planted) / seconds, "docs/s per core"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
