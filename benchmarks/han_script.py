"""Simplified or Traditional: how often `lang_script` is right, and what it costs `langid` on Chinese text.

Documents: the Leipzig Chinese sentences (`$CURATION_TESTDATA/langid/sentences/zh.txt`, else `../shared/data`;
Simplified), 1, 3 and 12 sentences a document, and the same documents converted by OpenCC (`s2t`) into
Traditional; plus two real pages, the newspaper test page (Simplified) and readability's `pixnet` (a Taiwanese
blog, Traditional). Printed per set: the share labelled with the right script, the share labelled `Hani`
(no character tells: either script), the share labelled with the wrong one.

Cost: CPU seconds of `LangId.identify` (the stage's labels, with the second opinion) with `lang_script` beside
without it, on the 12-sentence documents in both scripts: the ratio is what the script costs the stage on
Chinese text (on other text it costs nothing: only documents labelled zh, yue or wuu are judged). And
`to_simplified` (OpenCC t2s) in MB per CPU second beside `identify`'s.

    python benchmarks/han_script.py [--passes 3]
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._data import data_or_exit
from benchmarks._results import figure, write_results
from curation.lang.han_script import HANS, HANT, converter, han_scripts, to_simplified
from curation.stages.langid import LangId


def documents(sentences: list[str], size: int) -> list[str]:
    return ["".join(sentences[i:i + size]) for i in range(0, len(sentences) - size + 1, size)]


def cpu(fn, passes: int) -> float:
    """The fastest of `passes` runs, CPU seconds (the machine is shared: wall time measures the neighbours)."""
    best = float("inf")
    for _ in range(passes):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    root = data_or_exit("langid/sentences/zh.txt", "html/readability/pages/pixnet", "html/newspaper")
    sentences = (root / "langid/sentences/zh.txt").read_text(encoding="utf-8").splitlines()
    s2t = converter("s2t")
    pixnet = gzip.decompress((root / "html/readability/pages/pixnet/expected.html.gz").read_bytes()).decode()
    pages = {HANS: [(root / "html/newspaper/chinese.expected.txt").read_text(encoding="utf-8")],
             HANT: [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", pixnet))]}
    figures = []
    print(f"{'documents':<34} {'n':>4} {'right':>7} {'Hani':>7} {'wrong':>7}")
    for size in (1, 3, 12):
        simplified = documents(sentences, size)
        for script, texts in ((HANS, simplified), (HANT, [s2t.convert(t) for t in simplified])):
            labels = han_scripts(texts)
            n = len(labels)
            right = sum(label == script for label in labels) / n
            either = sum(label == "Hani" for label in labels) / n
            print(f"{f'Leipzig, {size} sentences, {script}':<34} {n:>4} {right:>7.3f} {either:>7.3f} "
                  f"{1 - right - either:>7.3f}")
            figures.append(figure(f"script right, Leipzig {size} sentences, {script}", right, "share",
                                  note=f"undecided (Hani) {either:.3f}"))
    for script, texts in pages.items():
        right = float(han_scripts(texts) == [script] * len(texts))
        print(f"{f'real page, {script}':<34} {len(texts):>4} {right:>7.3f}")
        figures.append(figure(f"script right, real page, {script}", right, "share"))

    stage = LangId(min_score=0.0)
    stage.setup()
    twelve = documents(sentences, 12)
    texts = (twelve + [s2t.convert(t) for t in twelve]) * 20  # ~0.6 MB: long enough to time
    stage.identify(texts)  # warm: lingua's models load on first use
    without = cpu(lambda: stage.identify(texts, scripts=False), args.passes)
    with_scripts = cpu(lambda: stage.identify(texts), args.passes)
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    convert = cpu(lambda: to_simplified(texts), args.passes)
    print(f"\nlangid on {len(texts)} documents ({megabytes:.2f} MB): {megabytes / without:.2f} MB/s without "
          f"lang_script, {megabytes / with_scripts:.2f} MB/s with it: {with_scripts / without:.3f}x the CPU time")
    print(f"to_simplified (OpenCC t2s): {megabytes / convert:.1f} MB/s, {convert / without:.3f}x langid's CPU time")
    figures += [figure("langid with lang_script", megabytes / with_scripts, "MB/s per core", "langid without it",
                       megabytes / without),
                figure("to_simplified (OpenCC t2s)", megabytes / convert, "MB/s per core", "langid without lang_script",
                       megabytes / without)]
    write_results("han_script", figures)


if __name__ == "__main__":
    main()
