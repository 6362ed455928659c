"""Ablations (issue 21): what `curate ablate` costs, and what it finds on real data.

(a) cost: a 4-variant x 3-seed ablation of the real pages (~1M tokens per run by default), its whole
    `curate ablate` command timed from scratch (curation, tokenizer, packing, every run trained and every
    checkpoint evaluated, two runs at a time on this machine's two cores), beside the same twelve trainings
    run one by one with `curate train` (a whole command each: Ray started, one Ray Train worker, no
    evaluation), the recipes taken from the ablation's own runs (by default the first three, the twelve's
    total estimated from them: `--one-by-one 0` runs all).
(b) real data: that ablation's `full-chain` variant (extraction, then language ID, the Gopher, C4 and FineWeb
    rules, the flagged-word filter, PII redaction, exact, fuzzy and paragraph dedup) against `base` (the same
    pages with extraction alone) on an evaluation set of clean article text neither contains
    (mozilla/readability's expected texts; `curate ablate` checks the overlap): the table, and whether the
    filtered variant's loss is lower by more than twice the seed spread.
(c) mixture search over four real sources (web pages, tweets, grade-school maths, a README's history), the
    same evaluation set: proxies, the fit, the proposal, and the proposal's loss against the natural and the
    uniform mixture, each trained with the ablation's own budget and seeds.

The real pages are trafilatura's test pages (readability's are left out: their expected texts are the
evaluation set), wrapped as WARC records (`warc_corpus`). Everything goes under --work (default a temporary
folder); sizes are flags.

    python benchmarks/ablate.py [--parts cost,real,mixture] [--tokens 1048576] [--seeds 3] [--pages N]
                                [--proxies 16] [--proxy-tokens N] [--mixture-tokens N] [--search-seed 0]
                                [--one-by-one 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import lxml.html
import yaml
from fastwarc.stream_io import GzipWriter

try:  # `python benchmarks/ablate.py` puts benchmarks/ on sys.path
    from _results import code_version, figure, write_results
    from warc_corpus import DataMissing, real_pages, warc_record
except ImportError:  # imported as benchmarks.ablate
    from benchmarks._results import code_version, figure, write_results
    from benchmarks.warc_corpus import DataMissing, real_pages, warc_record

if TYPE_CHECKING:
    from curation.ablate.results import Results

ROOT = Path(__file__).resolve().parents[1]
CURATE = [sys.executable, "-m", "pipelines.cli"]
# What `curate ablate` adds after extraction in the full chain: recipes/web-en.yaml's stages after `extract`.
FULL_CHAIN = [{"normalize": {}}, {"langid": {"keep": ["en"], "min_score": 0.65}}, {"gopher_repetition": {}},
              {"gopher_quality": {}}, {"c4": {"terminal_punct": False}}, {"fineweb": {}},
              {"toxicity": {"max_ratio": 0.01}}, {"pii": {"redact": ["email", "ip", "phone"]}}, {"exact_dedup": {}},
              {"minhash_dedup": {"threshold": 0.8, "num_perm": 128, "ngram": 5}},
              {"bloom_dedup": {"level": "paragraph", "max_removed_share": 0.5}}]
VARIANTS = {
    "full-chain": {"description": "extraction, then web-en's filters and dedup", "add": FULL_CHAIN},
    "langid-en": {"description": "extraction, then English only", "add": FULL_CHAIN[:2]},
    "dedup-only": {"description": "extraction, then exact, fuzzy and paragraph dedup", "add": FULL_CHAIN[-3:]},
}
MODEL = {"d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 192}
VOCAB = 2000
EVAL_CHARS = 2000  # an article's first characters: a few hundred tokens each, a bounded evaluation
# readability pages whose article is also among trafilatura's pages: `curate ablate`'s overlap check refused
# the evaluation set while it held them ("1 of 108 items of articles in base's documents")
NOT_HELD_OUT = {"medicalnewstoday"}


def build_pages(out: Path, limit: int | None) -> list[Path]:
    """The trafilatura test pages (not readability's) as WARC response records, in four files."""
    pages = [p for p in real_pages() if "readability" not in p.path.parts]
    if limit is not None and limit < len(pages):
        pages = [pages[int(i * len(pages) / limit)] for i in range(limit)]
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"pages-{i}.warc.gz" for i in range(4)]
    writers = [GzipWriter(str(p), compression_level=6) for p in paths]
    try:
        for n, page in enumerate(pages):
            warc_record(page.url, page.html()).write(writers[n % 4], checksum_data=True)
            writers[n % 4].finish()  # one gzip member per record
    finally:
        for w in writers:
            w.close()
    return paths


def article_text(html: bytes) -> str:
    """The text of an expected main-content page: its blocks' text, one per line."""
    root = lxml.html.fromstring(html.decode("utf-8", errors="replace"))  # the test pages' encoding
    blocks = [re.sub(r"\s+", " ", b.text_content()).strip() for b in root.iter("p", "h1", "h2", "h3", "li", "pre")]
    return "\n".join(b for b in blocks if b)


def build_eval(out: Path, data: Path) -> int:
    """readability's expected article texts (English or unlabelled pages), cut to EVAL_CHARS, as JSONL."""
    rows = []
    for folder in sorted((data / "html" / "readability" / "pages").iterdir()):
        if folder.name in NOT_HELD_OUT:
            continue
        meta = json.loads((folder / "expected-metadata.json").read_text(encoding="utf-8"))
        if (meta.get("lang") or "en").lower()[:2] != "en":
            continue
        text = article_text(gzip.decompress((folder / "expected.html.gz").read_bytes()))
        if len(text.split()) >= 100:
            rows.append({"text": text[:EVAL_CHARS].rsplit(" ", 1)[0], "page": folder.name})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def _jsonl_gz(path: Path, texts: list[str]) -> None:
    path.write_bytes(gzip.compress("".join(json.dumps({"text": t}) + "\n" for t in texts).encode(), mtime=0))


def build_sources(out: Path, data: Path) -> dict[str, Path]:
    """Three more real sources as JSONL: tweets (Davidson et al.), grade-school maths (GSM8K's questions with
    their worked answers), every version of one README (psf/requests, 2011-2026)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(data / "toxicity" / "davidson" / "labeled_data.csv", newline="", encoding="utf-8") as f:
        tweets = [row["tweet"] for row in csv.DictReader(f)]
    maths = [f"{r['question']}\n{r['answer']}" for name in ("test.jsonl", "test_socratic.jsonl")
             for r in map(json.loads, (data / "benchmarks" / "gsm8k" / name).read_text().splitlines())]
    readme = [p.read_text(encoding="utf-8", errors="replace")
              for p in sorted((data / "neardup" / "readme_history_requests").iterdir()) if p.suffix in (".rst", ".md")]
    files = {"tweets": out / "tweets.jsonl.gz", "maths": out / "maths.jsonl.gz", "readme": out / "readme.jsonl.gz"}
    for name, texts in (("tweets", tweets), ("maths", maths), ("readme", readme)):
        _jsonl_gz(files[name], texts)
    return files


SEQ_LEN, BATCH = 128, 16


def training(tokens: int, seeds: int, gpu: bool) -> dict:
    warmup = max(1, min(50, math.ceil(tokens / (SEQ_LEN * BATCH)) // 10))
    return {"model": MODEL, "optim": {"lr": 3e-3, "min_lr": 3e-4, "warmup_steps": warmup, "weight_decay": 0.1},
            "tokens": tokens, "batch_size": BATCH, "seeds": list(range(seeds)), "cpus_per_run": 1, "use_gpu": gpu}


def write_yaml(path: Path, body: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def timed(command: list[str], log: Path) -> float:
    started = time.perf_counter()
    with open(log, "ab") as sink:
        done = subprocess.run(command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}); see {log}")
    return time.perf_counter() - started


def pages_ablation(work: Path, args: argparse.Namespace, eval_set: Path) -> Path:
    pages = build_pages(work / "pages", args.pages)
    base = write_yaml(work / "pages.yaml", {
        "name": "pages", "executor": "ray", "ray": {"num_cpus": 2}, "seed": 42,
        "sources": [{"name": "web", "format": "warc", "paths": [str(p) for p in pages]}],
        "stages": [{"extract": {"timeout_s": 30}}]})
    return write_yaml(work / "pages-ablation.yaml", {
        "name": "pages", "recipe": str(base), "output": str(work / "ablations"), "variants": VARIANTS,
        "tokenizer": {"train": {"vocab_size": VOCAB, "hard_vocab_limit": False}},
        "pack": {"seq_len": SEQ_LEN, "shard_rows": 512, "validation": 0.0},
        "training": training(args.tokens, args.seeds, args.gpu),
        "evaluation": {"sets": [{"name": "articles", "path": str(eval_set)}], "batch_size": 32}})


def one_by_one(ablation: Path, work: Path, limit: int | None) -> tuple[float, int, int]:
    """The ablation's runs again with `curate train` (a whole command each), from their own recipes: all of
    them, or the first `limit` (seed by seed, a variant each in turn). Seconds, runs done, runs in all."""
    from curation.ablate.spec import load_ablation

    spec = load_ablation(ablation)
    plan = json.loads((Path(spec.folder()) / "plan.json").read_text())
    runs = [(variant, entry, seed) for seed in spec.training.seeds for variant, entry in plan["variants"].items()]
    total = 0.0
    for variant, entry, seed in runs[:limit]:
        train_dir = work / "one-by-one" / variant / f"seed-{seed}"
        recipe = spec.train_recipe(entry["packed"], str(train_dir), seed, spec.pack.seq_len,
                                   name=f"{variant}-seed{seed}")
        path = write_yaml(work / "one-by-one" / f"{variant}-{seed}.yaml", recipe.model_dump(mode="json"))
        total += timed([*CURATE, "train", str(path)], work / "one-by-one.log")
    return total, len(runs[:limit]), len(runs)


def cost_and_real(work: Path, args: argparse.Namespace, eval_set: Path) -> list[dict]:
    from curation.ablate.results import read_results

    ablation = pages_ablation(work, args, eval_set)
    shutil.rmtree(work / "ablations" / "pages", ignore_errors=True)  # from scratch: its jobs folder is inside
    seconds = timed([*CURATE, "ablate", str(ablation), "--quiet"], work / "ablate.log")
    results = read_results(str(work / "ablations" / "pages"))
    events = [json.loads(line) for line in (work / "ablations" / "pages" / "events.jsonl").read_text().splitlines()]
    at = {e["event"]: e["time"] for e in events}
    runs_dir = work / "ablations" / "pages" / "runs"
    runs = [json.loads(p.read_text()) for p in runs_dir.glob("*/seed-*/done.json")]
    speeds = sorted(statistics.median(json.loads(line)["tokens_per_s"] for line in p.read_text().splitlines())
                    for p in runs_dir.glob("*/seed-*/metrics.jsonl"))
    print(f"(a) `curate ablate` of {len(results.plan['variants'])} variants x {args.seeds} seeds, "
          f"{args.tokens:,} tokens per run: {seconds:.0f} s, the whole command from scratch "
          f"(curation and packing {at['training_started'] - at['ablation_started']:.0f} s; training and evaluation "
          f"{at['ablation_done'] - at['training_started']:.0f} s, two runs at a time; each run "
          f"{min(r['seconds'] for r in runs):.0f}-{max(r['seconds'] for r in runs):.0f} s, training at "
          f"{speeds[0]:,.0f}-{speeds[-1]:,.0f} tokens/s per run, the median step of each)")
    label = (f"`curate ablate`, {len(results.plan['variants'])} variants x {args.seeds} seeds, "
             f"{args.tokens:,} tokens a run")
    figures = [figure(label, seconds, "s")]
    if "cost" in args.parts and not args.skip_one_by_one:
        total, n, runs = one_by_one(ablation, work, args.one_by_one or None)
        figures = [figure(label, seconds, "s", "`curate train` one by one" + ("" if n == runs else " (estimated)"),
                          total / n * runs, note=f"{n} of {runs} trainings timed one by one")]
        print(f"    the same {n} trainings one by one with `curate train`: {total:.0f} s in all, the whole commands "
              f"(each starts Ray and one Ray Train worker; no checkpoint evaluated), {total / n:.0f} s each"
              + ("" if n == runs else f"; all {runs} would take ~{total / n * runs:.0f} s (estimated from these {n})"))
    if "real" in args.parts:
        figures += real_table(results)
    return figures


def real_table(results: Results) -> list[dict]:
    found = {v: n["overlapping"] for v, n in results.overlap["articles"].items()}
    print(f"(b) seeds {results.about['seeds']}; evaluation articles found in each variant's data: {found}")
    print(f"    {'variant':12} {'metric':14} {'mean':>8} {'spread':>8} {'vs base':>9} exceeds 2 spreads")
    for row in results.table:
        if row["set"] != "articles":
            continue
        spread = "-" if row["spread"] is None else f"{row['spread']:.4f}"
        diff = "-" if row["difference"] is None else f"{row['difference']:+.4f}"
        verdict = "-" if row["exceeds"] is None else ("yes" if row["exceeds"] else "no")
        print(f"    {row['variant']:12} {row['metric']:14} {row['mean']:8.4f} {spread:>8} {diff:>9} {verdict}")
    base, full = results.row("base", "articles", "loss"), results.row("full-chain", "articles", "loss")
    pooled = math.sqrt(((base["spread"] or 0) ** 2 + (full["spread"] or 0) ** 2) / 2)
    lower = full["difference"] < 0 and -full["difference"] > 2 * pooled
    print(f"    full-chain's article loss is {'LOWER' if full['difference'] < 0 else 'higher'} by "
          f"{abs(full['difference']):.4f}; twice the pooled seed spread is {2 * pooled:.4f}: "
          f"{'lower by more than twice the seed spread' if lower else 'NOT lower by more than twice the seed spread'}")
    return [figure("full-chain's loss on the evaluation articles", full["mean"], "loss", "base", base["mean"],
                   target="lower by > 2 seed spreads", met=lower,
                   note=f"twice the pooled seed spread {2 * pooled:.4f}")]


def mixture(work: Path, args: argparse.Namespace, eval_set: Path, data: Path) -> list[dict]:
    from curation.ablate.mixture_search import fit_verdict
    from curation.ablate.results import read_results

    pages = sorted((work / "pages").glob("*.warc.gz")) or build_pages(work / "pages", args.pages)
    sources = build_sources(work / "sources", data)
    base = write_yaml(work / "mix.yaml", {
        "name": "mix", "executor": "ray", "ray": {"num_cpus": 2}, "seed": 42,
        "sources": [{"name": "web", "format": "warc", "paths": [str(p) for p in pages]},
                    *({"name": n, "format": "jsonl", "paths": [str(p)]} for n, p in sources.items())],
        "stages": [{"extract": {"timeout_s": 30, "only": ["web"]}}]})
    ablation = write_yaml(work / "mix-ablation.yaml", {
        "name": "mix", "recipe": str(base), "output": str(work / "ablations"), "jobs": str(work / "ablations" / "jobs"),
        "tokenizer": {"train": {"vocab_size": VOCAB, "hard_vocab_limit": False}},
        "pack": {"seq_len": SEQ_LEN, "shard_rows": 512, "validation": 0.0},
        "training": training(args.mixture_tokens, args.seeds, args.gpu),
        "evaluation": {"sets": [{"name": "articles", "path": str(eval_set)}], "batch_size": 32},
        "mixture_search": {"proxies": args.proxies, "proxy": {"tokens": args.proxy_tokens},  # a seed per proxy
                           "seed": args.search_seed}})
    shutil.rmtree(work / "ablations" / "mix", ignore_errors=True)  # an earlier run's results (its jobs are kept)
    seconds = timed([*CURATE, "ablate", str(ablation), "--quiet"], work / "mix.log")
    record = read_results(str(work / "ablations" / "mix")).mixture_search
    fit, proposal = record["fit"], record["proposal"]
    print(f"(c) mixture search over {', '.join(record['sources'])} ({seconds:.0f} s): {fit['proxies']} proxies of "
          f"{args.proxy_tokens:,} tokens, {fit['kind']} fit, leave-one-out Spearman {fit['loo_spearman']:.2f}; "
          f"verified with {args.mixture_tokens:,} tokens x {args.seeds} seeds")
    print(f"    {fit_verdict(proposal['predicted'], fit['loo_mae'])}")
    measured = record["verification"]["mixtures"]
    for name, m in measured.items():
        weights = record["verified"][name]["shares"]
        spread = "-" if m["spread"] is None else f"{m['spread']:.4f}"
        print(f"    {name:17} shares {', '.join(f'{s} {w:.3f}' for s, w in weights.items()):48} "
              f"articles loss {m['mean']:.4f} (spread {spread}; predicted {proposal['predicted'][name]:.4f})")
    for name in ("mixture-natural", "mixture-uniform"):
        m = measured[name]
        print(f"    proposed minus {name.removeprefix('mixture-')}: {m['proposed_minus']:+.4f} "
              f"({'beyond' if m['exceeds'] else 'within'} twice the seed spread; lower on {m['proposed_lower_on']} "
              f"of {len(m['values'])} seeds)")
    lowest = record["verification"]["proposal_at_most_others"]
    print(f"    the proposal's loss is {'at most' if lowest else 'NOT at most'} that of both the natural and the "
          "uniform mixture")
    return [figure("proposed mixture's loss on the evaluation articles", measured["mixture-proposed"]["mean"], "loss",
                   f"{name.removeprefix('mixture-')} mixture", measured[name]["mean"], target="at most the others'",
                   met=lowest) for name in ("mixture-natural", "mixture-uniform")]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="cost,real,mixture", help="comma-separated: cost, real, mixture")
    p.add_argument("--tokens", type=int, default=1 << 20, help="tokens per run of (a) and (b)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--pages", type=int, default=None, help="an evenly spread subset of the trafilatura pages")
    p.add_argument("--proxies", type=int, default=16)
    p.add_argument("--proxy-tokens", type=int, default=1 << 18, help="tokens per proxy of (c)")
    p.add_argument("--mixture-tokens", type=int, default=1 << 19, help="tokens per verification run of (c)")
    p.add_argument("--search-seed", type=int, default=0, help="(c): the seed of the proxies' and candidates' mixtures")
    p.add_argument("--skip-one-by-one", action="store_true", help="(a) without the `curate train` comparison")
    p.add_argument("--one-by-one", type=int, default=3, metavar="N",
                   help="(a): the first N runs with `curate train`, the total estimated from them (0: all; "
                        "all twelve at the default size take ~20 min more)")
    p.add_argument("--gpu", action="store_true", help="train and evaluate each run on a GPU (one per run)")
    p.add_argument("--work", help="working folder (default: a temporary one, removed at the end)")
    args = p.parse_args(argv)
    args.parts = set(args.parts.split(","))
    try:
        data = Path(os.environ.get("CURATION_TESTDATA") or ROOT.parent / "shared" / "data")
        if not (data / "html" / "readability").is_dir():
            raise DataMissing(f"no real test data under {data} (set CURATION_TESTDATA to its folder)")
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(args.work or tmp)
            work.mkdir(parents=True, exist_ok=True)
            eval_set = work / "articles.jsonl"
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"ablate benchmark at {code_version()}; {os.cpu_count()} CPUs, load average {load}; evaluation "
                  f"set: {build_eval(eval_set, data)} readability articles")
            figures = cost_and_real(work, args, eval_set) if args.parts & {"cost", "real"} else []
            if "mixture" in args.parts:
                figures += mixture(work, args, eval_set, data)
        write_results("ablate", figures)
    except DataMissing as exc:
        print(f"ablate: {exc}; nothing run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
