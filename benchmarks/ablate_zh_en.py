"""The shipped web recipes proven by models (issue 31): `curate ablate` of `recipes/web-zh-en.yaml` and
`recipes/web-en.yaml` on real pages, each against extraction alone and against FineWeb-2's own settings.

Inputs (real pages of the test data, as WARC): trafilatura's test pages (mostly German, some English, a few
Chinese) and newspaper's articles (Japanese, Thai, Arabic, Spanish, Chinese), dolma's and resiliparse's WARC
files; and half of the technical articles of `tests/fixtures/zh_en` (Colossal-AI's and the Hugging Face course's
documentation, Chinese and English, with code, lists and tables) as web pages, the other half held out.
Readability's pages (but its Chinese ones) and newspaper's Chinese page are left out: their expected texts are
the evaluation sets. web-zh-en gets them as its two sources: `zh`, the Chinese pages
(`recipes/sample/make_pages.py`'s `is_chinese`), those of the Common Crawl file among them (11 pages, each spam
or a listing: `_zh_en_data.CRAWL_DIRTY`, the Chinese junk a crawl holds), and `en`, every other page (the junk
the chain must remove: German, Japanese, menus...); web-en gets all of them as its one source.

Each ablation's base is the shipped recipe, its document stages exactly as shipped but for extraction's
`timeout_s` (30 s instead of 2: on a loaded 2-core machine a 2-second budget drops pages by chance, and the
variants that share no prefix extract twice); tokenizer, packing and (web-zh-en) the mixture's total are set
for the small data (the mixture's zh:en weights and max_epochs as shipped; total_tokens: the run's budget, so
every variant trains on about one epoch of its own mixture). Variants:

- `shipped` (`base` in the results folder): the recipe's own chain;
- `extraction-only`: extraction and nothing that filters (the baseline of the table);
- `fineweb2`: FineWeb-2's pipeline as `huggingface/fineweb-2`'s `fineweb-2-pipeline.py` runs it, so far as
  the stages express it: trafilatura favouring precision, language ID on whole documents with each
  language's own threshold (`min_score: auto`, GlotLID's approximated), Gopher repetition with its paragraph
  and line-character rules off (FineWeb-2 sets them to 0), FineWeb's rules with no short-line rule and
  char_dup 0.1, Gopher quality, no C4 (\"we do not apply the C4 filters\"), datatrove's line semantics
  (`prose_only: false`), e-mail and IP anonymisation, MinHash per language (5-grams, 14 bands of 8), no
  exact dedup, no flagged-word filter. Not expressed: GlotLID itself, dedup before the filters (corpus
  stages run after document stages here), rehydration (an option FineWeb-2's README proposes, not its
  pipeline), the URL block list and SymbolLinesFormatter;
- `shipped-datatrove-lines`: the shipped chain with `prose_only: false` on Gopher, C4 and FineWeb: every line
  judged as datatrove does, so the effect of the layout rules shows;
- `shipped-plain-text`: the shipped chain with pages extracted as plain text (`extract: {markdown: false}`), so
  the effect of training on Markdown (fenced code, marked headings and tables) against plain-text evaluation
  sets shows.

Evaluation sets, held out (`curate ablate` refuses any set found in a variant's data): `en`, 107 English
articles (readability's expected texts, as `benchmarks/ablate.py` builds them) and, for web-zh-en, `zh`: the
100 Leipzig sentences of `langid/sentences/zh.txt` in documents of 10, and newspaper's Chinese article; `en-tech`
and `zh-tech`: the running prose of the held-out technical articles (every other translation pair, both its
languages), in documents of about 2,000 characters - prose only, so that neither Markdown nor plain-text
extraction is favoured by the format of the text it is judged on; `code` (both recipes): their fenced code
blocks, what a chain that keeps code blocks is for (a prose-only evaluation counts the code a variant keeps as
tokens taken from prose).

Prints, per recipe: the table (variant, set: loss mean ± spread over seeds, difference from extraction-only,
whether it exceeds twice the pooled seed spread; bits per byte the same), each variant's curated documents and
what its stages dropped (the job folders' stats.json), a verdict per language ("shipped at least as good as
extraction-only": not worse beyond twice the pooled seed spread), and the whole command's wall clock.

    python benchmarks/ablate_zh_en.py [--recipes zh-en,en] [--tokens 65536] [--seeds 3] [--pages N] [--work DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from fastwarc.stream_io import GzipWriter

try:  # `python benchmarks/ablate_zh_en.py` puts benchmarks/ on sys.path
    import _zh_en_data as articles_data
    from _data import data_root
    from _results import code_version, figure, write_results
    from ablate import BATCH, CURATE, EVAL_CHARS, ROOT, SEQ_LEN, build_eval, timed, training, write_yaml
    from warc_corpus import DataMissing, warc_record
except ImportError:  # imported as benchmarks.ablate_zh_en
    articles_data = None  # the technical articles are read only when the benchmark runs
    from benchmarks._data import data_root
    from benchmarks._results import code_version, figure, write_results
    from benchmarks.ablate import BATCH, CURATE, EVAL_CHARS, ROOT, SEQ_LEN, build_eval, timed, training, write_yaml
    from benchmarks.warc_corpus import DataMissing, warc_record

RECIPES = {"zh-en": ROOT / "recipes" / "web-zh-en.yaml", "en": ROOT / "recipes" / "web-en.yaml"}
BASELINE = "extraction-only"
SHIPPED = "base"  # `curate ablate`'s name for the base recipe unchanged: here the shipped chain
EXTRACT = {"extract": {"timeout_s": 30}}
VOCAB = {"zh-en": 4000, "en": 2000}  # Chinese needs characters of its own beside English's pieces
ZH_SENTENCES_PER_DOC = 10
LINE_RULES = ("gopher_repetition", "gopher_quality", "c4", "fineweb")  # the stages with `prose_only`
TECH = "-tech"  # the evaluation sets of held-out technical articles: `zh-tech`, `en-tech`
CODE = "code"  # and of their code blocks


def technical_articles() -> tuple[list[Any], list[Any]]:
    """The technical articles of `tests/fixtures/zh_en` (`_zh_en_data.articles`): (crawled, held out). Every other
    translation pair, in name order, is held out in both its languages (a pair shares its code blocks)."""
    articles = articles_data.articles()
    names = sorted({a.name for a in articles})
    held_out = set(names[1::2])
    return [a for a in articles if a.name not in held_out], [a for a in articles if a.name in held_out]


def _make_pages() -> Any:
    spec = importlib.util.spec_from_file_location("make_pages", ROOT / "recipes" / "sample" / "make_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_warc(path: Path, pages: list[tuple[str, bytes]]) -> None:
    writer = GzipWriter(str(path), compression_level=6)
    try:
        for url, html in pages:
            warc_record(url, html).write(writer, checksum_data=True)
            writer.finish()  # one gzip member per record
    finally:
        writer.close()


def build_pages(out: Path, data: Path, limit: int | None) -> dict[str, list[str]]:
    """The pages as WARC: `zh` (Chinese pages) and `other` (the rest, in 4 files, and dolma's and
    resiliparse's WARC files as they are). Readability's pages but its Chinese ones, and newspaper's Chinese
    one, are held out."""
    make_pages = _make_pages()
    pages = [(url, html, make_pages.is_chinese(html)) for url, html in make_pages.pages(data)
             if url != "https://newspaper.test/chinese"]
    # readability's English articles are the `en` set; its Chinese pages are in no set
    pages = [p for p in pages if p[2] or not p[0].startswith("https://readability.test/")]
    chinese = [(url, html) for url, html, zh in pages if zh]
    others = [(url, html) for url, html, zh in pages if not zh]
    if limit is not None and limit < len(others):  # a smaller run keeps every Chinese page
        others = [others[int(i * len(others) / limit)] for i in range(limit)]
    crawled_articles = technical_articles()[0]
    for article in crawled_articles:  # as web pages, the Chinese ones among the Chinese pages
        page = (f"https://docs.test/{article.lang}/{article.name}", articles_data.page_html(article))
        (chinese if article.lang == "zh" else others).append(page)
    out.mkdir(parents=True, exist_ok=True)
    _write_warc(out / "zh.warc.gz", chinese)
    shards = [out / f"other-{k}.warc.gz" for k in range(4)]
    for k, path in enumerate(shards):
        _write_warc(path, others[k::4])
    # copied beside the pages: a source's files below one folder get ids of their paths below it, the same
    # whatever the --work folder (ids spelled with /tmp/<random> picked other copies of repeated paragraphs
    # and another tokenizer sample in every run). The Common Crawl file's Chinese pages (all of them spam or
    # listings) go with the Chinese pages, as a crawl split by language gives them to a Chinese source.
    crawled = []
    for original in [data / "warc" / "dolma" / f"sample-000{k}.warc.gz" for k in (0, 1)]:
        crawled.append(out / f"crawled-{original.parent.name}-{original.name}")
        shutil.copyfile(original, crawled[-1])
    common_crawl = data / "warc" / "resiliparse" / "warcfile.warc.gz"
    crawled_chinese = split_warc(common_crawl, out / "crawled-resiliparse-zh.warc.gz",
                                 out / "crawled-resiliparse-other.warc.gz", make_pages.is_chinese)
    crawled.append(out / "crawled-resiliparse-other.warc.gz")
    print(f"    pages: {len(chinese)} Chinese and {crawled_chinese} of Common Crawl's, {len(others)} others (with "
          f"{len(crawled_articles)} technical articles, half of each language's), and {len(crawled)} crawled WARC "
          "files (dolma's, resiliparse's other pages)")
    return {"zh": [str(out / "zh.warc.gz"), str(out / "crawled-resiliparse-zh.warc.gz")],
            "other": [*map(str, shards), *map(str, crawled)]}


def split_warc(path: Path, chosen: Path, rest: Path, choose: Any) -> int:
    """`path`'s records, unchanged, into `chosen` (those of a page `choose(html)` picks: its request, response and
    metadata) and `rest` (the others); the number of pages chosen."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    picked = {url for url, html in articles_data.warc_pages(path) if choose(html)}
    with path.open("rb") as stream:
        writers = {True: GzipWriter(str(chosen), compression_level=6), False: GzipWriter(str(rest),
                                                                                  compression_level=6)}
        try:
            for record in ArchiveIterator(stream, record_types=WarcRecordType.any_type, parse_http=False):
                writer = writers[record.headers.get("WARC-Target-URI") in picked]
                record.write(writer)
                writer.finish()
        finally:
            for writer in writers.values():
                writer.close()
    return len(picked)


def build_zh_eval(out: Path, data: Path) -> int:
    """Held-out Chinese: the Leipzig sentences in documents of ZH_SENTENCES_PER_DOC, newspaper's article."""
    lines = [s.strip() for s in (data / "langid" / "sentences" / "zh.txt").read_text(encoding="utf-8").splitlines()]
    lines = [s for s in lines if s]
    docs = ["\n".join(lines[i:i + ZH_SENTENCES_PER_DOC]) for i in range(0, len(lines), ZH_SENTENCES_PER_DOC)]
    docs.append((data / "html" / "newspaper" / "chinese.expected.txt").read_text(encoding="utf-8").strip()[:EVAL_CHARS])
    out.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return len(docs)


def build_tech_eval(out: Path, lang: str) -> int:
    """Held-out technical prose of `lang`: the running prose paragraphs of the held-out articles without
    Markdown's marks (no code block, list, table, heading, link target or backtick: neither a Markdown nor a
    plain-text extraction has the advantage of its own format), in documents of about EVAL_CHARS characters."""
    import pyarrow as pa

    from curation.text.layout import bare_words

    docs = []
    for article in (a for a in technical_articles()[1] if a.lang == lang):
        current = ""
        for paragraph in bare_words(pa.array(articles_data.prose_paragraphs(article), pa.string())).to_pylist():
            if current and len(current) + len(paragraph) > EVAL_CHARS:
                docs.append(current)
                current = ""
            current = f"{current}\n{paragraph}" if current else paragraph
        docs.append(current)
    out.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs if d), encoding="utf-8")
    return len(docs)


def build_code_eval(out: Path) -> int:
    """Held-out code: the fenced code blocks of the held-out articles (both languages; a block the translation
    repeats counted once), in documents of about EVAL_CHARS characters: what a model that should read code
    (the recipes keep code blocks for it) learns from the pages that hold code."""
    from curation.dedup.decontam import NgramIndex

    crawled, held_out = technical_articles()
    blocks: dict[str, None] = {}
    for article in held_out:
        current: list[str] = []
        for fenced, line in articles_data.outside_code(article.text):
            if fenced and not line.lstrip().startswith(("```", "~~~")):
                current.append(line)
            elif current:
                blocks.setdefault("\n".join(current))
                current = []
    # a block the crawled articles hold too (Colossal-AI's launch boilerplate) is not held out
    seen = NgramIndex.from_texts({"crawled": [a.text for a in crawled]}).hit_matrix(list(blocks)).sum(axis=1)
    docs, current = [], ""
    for block in (b for b, hits in zip(blocks, seen.tolist(), strict=True) if not hits):
        if current and len(current) + len(block) > EVAL_CHARS:
            docs.append(current)
            current = ""
        current = f"{current}\n\n{block}" if current else block
    docs.append(current)
    out.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs if d), encoding="utf-8")
    return len(docs)


def shipped_stages(recipe: dict[str, Any]) -> list[dict[str, Any]]:
    """The recipe's stages as shipped, extraction's time budget raised (module doc)."""
    return [{"extract": {**s["extract"], **EXTRACT["extract"]}} if "extract" in s else s for s in recipe["stages"]]


def fineweb2_stages(keep: list[str]) -> list[dict[str, Any]]:
    """FineWeb-2's pipeline in this project's stages (module doc: what it leaves out)."""
    datatrove = {"prose_only": False}
    return [
        {"extract": {**EXTRACT["extract"], "favor": "precision"}},
        {"normalize": {}},  # FTFY (FineWeb-2's final touches)
        {"langid": {"keep": keep, "min_score": "auto"}},
        {"gopher_repetition": {**datatrove, "max_dup_para_frac": None, "max_dup_para_char_frac": None,
                               "max_dup_line_char_frac": None}},
        {"fineweb": {**datatrove, "max_short_line_ratio": None, "max_char_dup_ratio": 0.1}},
        {"gopher_quality": {**datatrove, "min_stop_words": 2}},
        {"pii": {"redact": ["email", "ip"]}},  # datatrove's PIIFormatter: e-mails and IP addresses
        {"minhash_dedup": {"ngram": 5, "num_perm": 112, "bands": 14, "rows": 8, "by_language": True}},
    ]


def variants(stages: list[dict[str, Any]], keep: list[str]) -> dict[str, Any]:
    names = [next(iter(s)) for s in stages]
    return {
        BASELINE: {"description": "extraction alone", "stages": [EXTRACT]},
        "fineweb2": {"description": "FineWeb-2's pipeline and settings", "stages": fineweb2_stages(keep)},
        "shipped-datatrove-lines": {"description": "the shipped chain, every line judged (prose_only: false)",
                                    "settings": {n: {"prose_only": False} for n in LINE_RULES if n in names}},
        "shipped-plain-text": {"description": "the shipped chain, pages extracted as plain text (markdown: false)",
                               "settings": {"extract": {"markdown": False}}},
    }


def ablation_file(work: Path, which: str, pages: dict[str, list[str]], sets: dict[str, Path],
                  args: argparse.Namespace) -> Path:
    recipe = yaml.safe_load(RECIPES[which].read_text(encoding="utf-8"))
    if which == "zh-en":
        recipe["sources"] = [{"name": "zh", "format": "warc", "paths": pages["zh"]},
                             {"name": "en", "format": "warc", "paths": pages["other"]}]
        recipe["mixture"] = {**recipe["mixture"], "total_tokens": args.tokens}
    else:
        recipe["sources"] = [{"name": "web", "format": "warc", "paths": pages["zh"] + pages["other"]}]
    recipe["stages"] = shipped_stages(recipe)
    recipe |= {"name": f"web-{which}", "output": str(work / "jobs"), "executor": "ray", "ray": {"num_cpus": 2}}
    base = write_yaml(work / f"web-{which}.yaml", recipe)
    keep = next(s["langid"]["keep"] for s in recipe["stages"] if "langid" in s)
    return write_yaml(work / f"ablate-{which}.yaml", {
        # curation kept beside the results: a rerun in the same --work with another budget reuses it
        "name": f"web-{which}", "recipe": str(base), "output": str(work / "ablations"), "jobs": str(work / "jobs"),
        "baseline": BASELINE,
        "variants": variants(recipe["stages"], keep),
        "tokenizer": {"train": {"vocab_size": VOCAB[which], "hard_vocab_limit": False}},
        "pack": {"seq_len": SEQ_LEN, "shard_rows": 512, "validation": 0.0},
        # evaluated once, at the end: evaluation, not training, dominates a small run on CPU
        "training": training(args.tokens, args.seeds, gpu=False) | {"eval_every": math.ceil(args.tokens / (
            BATCH * SEQ_LEN))},
        "evaluation": {"sets": [{"name": name, "path": str(path)} for name, path in sets.items()], "batch_size": 32}})


def label(variant: str) -> str:
    return "shipped" if variant == SHIPPED else variant


def funnel(plan: dict[str, Any], variant: str) -> tuple[int, str]:
    """A variant's curated documents, and what each of its stages dropped (the job folders' stats.json)."""
    reasons: dict[str, Counter[str]] = {}
    documents = 0
    for job in plan["variants"][variant]["jobs"]:
        stats = json.loads((Path(job) / "stats.json").read_text())
        documents = stats["documents"]["out"]
        for row in stats["stages"]:
            if row["dropped"]:
                reasons.setdefault(row["stage"], Counter()).update(row["dropped"])
    parts = [f"{stage} -{sum(why.values())} ({', '.join(f'{r} {n}' for r, n in why.most_common(3))})"
             for stage, why in reasons.items()]
    return documents, "; ".join(parts) or "nothing dropped"


def languages(documents: str) -> str:
    """A variant's curated documents by source and script of their text (Han-heavy or not): what its zh and
    en sources kept."""
    import pyarrow.parquet as pq

    counts: Counter[str] = Counter()
    for path in sorted(Path(documents, "documents").glob("*.parquet")):
        for row in pq.read_table(path, columns=["source", "text"]).to_pylist():
            han = sum("\u4e00" <= c <= "\u9fff" for c in row["text"])
            counts[f"{row['source']}:{'han' if han > 0.3 * len(row['text']) else 'other'}"] += 1
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))


def report(folder: Path, sets: list[str]) -> list[dict]:
    """Prints the funnel and the loss table; its figures: the shipped chain's loss against extraction alone."""
    from curation.ablate.results import read_results

    results = read_results(str(folder))
    plan = results.plan
    found = {s: {label(v): n["overlapping"] for v, n in results.overlap[s].items()} for s in sets}
    print(f"    evaluation items found in each variant's data (must be 0): {found}")
    for variant, entry in plan["variants"].items():
        documents, dropped = funnel(plan, variant)
        langs = languages(entry["documents"])
        print(f"    {label(variant):24} {documents:5} documents ({langs}), {entry['train_tokens']:>9,} tokens packed; "
              f"{dropped}")
    print(f"    {'variant':24} {'set':7} {'metric':14} {'mean ± spread':>18} {'vs ' + BASELINE:>20} "
          "exceeds 2 pooled spreads")
    for row in results.table:
        if row["metric"] not in ("loss", "bits_per_byte"):
            continue
        spread = "" if row["spread"] is None else f" ± {row['spread']:.4f}"
        diff = "" if row["difference"] is None else f"{row['difference']:+.4f}"
        verdict = "" if row["exceeds"] is None else ("yes" if row["exceeds"] else "no")
        print(f"    {label(row['variant']):24} {row['set']:7} {row['metric']:14} {row['mean']:8.4f}{spread:10} "
              f"{diff:>20} {verdict}")
    figures = []
    for s in sets:
        for other in (v for v in plan["variants"] if v not in (SHIPPED, BASELINE)):
            difference, bound = compared(results.row(other, s, "loss"), results.row(SHIPPED, s, "loss"))
            print(f"    {s}: {other} minus shipped {difference:+.4f} nats (twice the pooled seed spread {bound:.4f}): "
                  + ("within it" if abs(difference) <= bound else "lower" if difference < 0 else "higher"))
        difference, bound = compared(results.row(SHIPPED, s, "loss"), results.row(BASELINE, s, "loss"))
        print(f"    {s}: shipped minus extraction-only {difference:+.4f} nats, twice the pooled seed spread "
              f"{bound:.4f}: shipped at least as good as extraction-only: {'no' if difference > bound else 'yes'}"
              f"{' (better beyond twice the spread)' if -difference > bound else ''}")
        shipped, baseline = results.row(SHIPPED, s, "loss"), results.row(BASELINE, s, "loss")
        figures.append(figure(f"{folder.name}: shipped chain's loss on the {s} set", shipped["mean"], "loss", BASELINE,
                              baseline["mean"], target="at most extraction-only's, within 2 pooled seed spreads",
                              met=difference <= bound))
    return figures


def compared(row: dict[str, Any], other: dict[str, Any]) -> tuple[float, float]:
    """`row`'s mean loss minus `other`'s, and twice their pooled seed spread."""
    pooled = math.sqrt(((row["spread"] or 0) ** 2 + (other["spread"] or 0) ** 2) / 2)
    return row["mean"] - other["mean"], 2 * pooled


def ablate(work: Path, which: str, pages: dict[str, list[str]], sets: dict[str, Path],
           args: argparse.Namespace) -> list[dict]:
    ablation = ablation_file(work, which, pages, sets, args)
    folder = work / "ablations" / f"web-{which}"
    shutil.rmtree(folder, ignore_errors=True)  # an earlier run's results (its curation jobs are kept)
    seconds = timed([*CURATE, "ablate", str(ablation), "--quiet"], work / f"ablate-{which}.log")
    reuse = json.loads((folder / "plan.json").read_text())["reuse"]
    done_before = reuse["jobs_done_before"]
    print(f"  web-{which}.yaml: `curate ablate` of 4 variants x {args.seeds} seeds, {args.tokens:,} tokens a run: "
          f"{seconds:.0f} s, the whole command ("
          + (f"{done_before} of its {reuse['jobs']} curation jobs done by an earlier run in this --work)"
             if done_before else "from scratch)"))
    return [figure(f"web-{which}.yaml: `curate ablate`, 4 variants x {args.seeds} seeds", seconds, "s"),
            *report(folder, list(sets))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recipes", default="zh-en,en", help="comma-separated: zh-en, en")
    p.add_argument("--tokens", type=int, default=1 << 16, help="tokens per run")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--pages", type=int, default=None, help="an evenly spread subset of the loose pages")
    p.add_argument("--work", help="working folder (default: a temporary one, removed at the end)")
    args = p.parse_args(argv)
    started = time.perf_counter()
    try:
        data = data_root()
        if not (data / "html" / "readability").is_dir() or not (data / "langid" / "sentences").is_dir():
            raise DataMissing(f"no real test data under {data} (set CURATION_TESTDATA to its folder)")
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(args.work or tmp)
            work.mkdir(parents=True, exist_ok=True)
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"ablate_zh_en benchmark at {code_version()}; {os.cpu_count()} CPUs, load average {load}")
            sets = {lang: work / f"eval-{lang}.jsonl" for lang in ("en", "zh", "en" + TECH, "zh" + TECH, CODE)}
            print(f"    evaluation sets: en {build_eval(sets['en'], data)} readability articles, zh "
                  f"{build_zh_eval(sets['zh'], data)} documents (Leipzig sentences, newspaper's article); en{TECH} "
                  f"{build_tech_eval(sets['en' + TECH], 'en')} and zh{TECH} {build_tech_eval(sets['zh' + TECH], 'zh')} "
                  f"documents of held-out technical prose; {CODE} {build_code_eval(sets[CODE])} documents of their "
                  "code blocks")
            pages = build_pages(work / "pages", data, args.pages)
            figures = []
            for which in args.recipes.split(","):
                mine = sets if which == "zh-en" else {k: v for k, v in sets.items() if not k.startswith("zh")}
                figures += ablate(work, which, pages, mine, args)
        write_results("ablate_zh_en", figures)
    except DataMissing as exc:
        print(f"ablate_zh_en: {exc}; nothing run")
    print(f"  the whole benchmark: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
