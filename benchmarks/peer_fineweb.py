"""Side by side with datatrove: our FineWeb-like recipe against datatrove's FineWeb example pipeline.

On the same WARC corpus (`warc_corpus.build_warc_corpus`: the ~1,160 real pages of the test data as
WARC response records, `--copies N` times with distinct URLs, in `--files` .warc.gz files), on the
same cores, in one run:

  ours        `pipelines.run.run` of the recipe below on 1 and on 2 cores, on an embedded Ray or with
              `--executor local` on the local executor (no Ray; 1 core: in-process, 2: 2 worker processes):
              html_langid en (language ID on the raw page: pages surely not English skip
              extraction; `--no-html-langid` leaves it out) -> extract (trafilatura, favor precision,
              no comments, deduplicate: datatrove's Trafilatura settings; `--extract-engine fast`)
              -> langid en (min_score 0.65, fastText alone as datatrove's; `--langid-second-opinion`: our
              default, lingua where fastText is unsure) -> gopher_repetition -> gopher_quality
              -> c4 (terminal_punct false) -> fineweb -> minhash_dedup -> tokenizer + pack, the four
              quality filters with datatrove's semantics (`prose_only: false`: every line judged, words
              its tokenizer's); then once more on the most cores with the filters as we ship them
              (`prose_only: true`, `--no-shipped-rules` leaves this run out): its agreement, rule by
              rule, says what our defaults change, and is held against no target;
  datatrove   0.10.1, in its own venv (`benchmarks/.venv-datatrove`, made by `datatrove_env.sh`),
              its FineWeb example (WarcReader, Trafilatura(favour_precision=True), LanguageFilter(en,
              0.65), GopherRepetitionFilter, GopherQualityFilter, C4QualityFilter(filter_no_terminal_punct
              =False), FineWebQualityFilter, each filter with its exclusion writer, JsonlWriter; the four
              MinHash stages; then DocumentTokenizer) with LocalPipelineExecutor, 1 and 2 tasks on as
              many workers (`benchmarks/_datatrove_fineweb.py`), with our trafilatura (installed beside its
              venv; `--datatrove-trafilatura own`: the version its venv pins, <1.12, whose extracted texts
              differ from ours on many pages, so that the agreement measures extractors as much as filters).

Same thresholds: every filter default is datatrove's (see quality_agreement.py); trafilatura's
per-page time limit is `--timeout-s` on both sides; MinHash is datatrove's FineWeb configuration
on both sides: word 5-grams, 14 bands x 8 rows (112 hashes), and by default no verification of
candidates (datatrove has none; `--minhash-verify exact` gives ours its usual exact Jaccard check).
The corpus records carry `WARC-Identified-Payload-Type: text/html`, as Common Crawl's do (without it
datatrove's reader runs libmagic on every payload; our reader ignores the header). It is built once
per shape in `--cache`: document ids hash the input file's path, so the same path gives the same
survivors of near-duplicate pairs, hence the same agreement figure, on every invocation.

Tokenizers: one of each kind is trained once, beforehand and untimed, on our extraction of every page
(cached in `--cache`): a sentencepiece BPE model (ours, `tokenizer: {model: ...}`, packed into
`--seq-len` + 1 rows) and a Hugging Face `tokenizers` byte-level BPE `tokenizer.json` of the same
vocabulary size for datatrove's DocumentTokenizer (trained in datatrove's venv).

Cores: each side runs in a fresh subprocess pinned (CPU affinity, inherited by every process it
starts) to the first 1 or 2 CPUs: datatrove with as many tasks and workers, ours with as many
Ray CPUs (`ray.num_cpus`) or local workers (`local.workers`).

Measured per configuration, the subprocess's whole process tree sampled with psutil every 0.1 s
(Ray's daemons and workers, or the local executor's workers (forked, or from a forkserver); datatrove's forkserver
workers and trafilatura sandboxes):
  - wall time: ours = `run()`, less Ray's start-up and shutdown on Ray (the local pool's start and
    close count, as datatrove's pools' do); datatrove = the sum of its five executors' `run()`;
    neither counts interpreter start-up;
  - documents/s per core = WARC records read / wall / cores, end to end;
  - per stage: documents in / seconds in the stage, summed over workers (ours: stats.json
    `stages[*].seconds`; datatrove: each step's `time_stats` from its stats). Stages ours times as
    driver wall time (minhash_dedup in stats.json; tokenize+pack = manifest `seconds`) are charged
    wall x cores;
  - peak memory: the largest sum of PSS over the process tree (and of RSS, which counts shared pages in every
    process, so it overstates both sides);
  - CPU seconds of the whole tree within the timed window, per process group (driver, Ray daemons,
    Ray workers; datatrove's main process and workers), and documents per CPU-second: unlike wall
    time it hardly moves when other work shares the cores (the load average before and after each
    run is printed, with a warning when it exceeds 1.5 x the CPUs);
  - output size: token files, documents, whole output folder; tokens written;
  - agreement of kept documents keyed by URL: |kept by both| / |kept by either| (the figure held
    against the target), and the share of input URLs with the same keep/drop decision, with the
    stage and rule on each side that dropped the documents they disagree on (datatrove's step and its
    filter's reason), counted per rule, and why (the other copy of a near-duplicate pair kept; same
    text, different decision; different text, i.e. extraction); how many documents kept by both have
    identical text; for the run with our shipped rules, Gopher's share of words with a letter, each
    side's count on its own text of every page both quality filters judged (scored after the run,
    outside the measured processes): how many pages one side's count passes and the other's fails,
    how many of them ours kept and datatrove dropped for it, and a few examples with both shares (ours
    counts whitespace words of the prose, as Gopher did; datatrove counts its word tokenizer's tokens,
    each punctuation mark one);
  - our parallel efficiency: docs/s with 2 workers / (2 x docs/s with 1 worker).
The printout says which figures are below the issue's targets (issue 10): end to end at least 3x
datatrove's docs/s per core, agreement at least 97%, peak memory no higher, parallel efficiency at
least 80%.

    .venv/bin/python benchmarks/peer_fineweb.py [--copies N] [--files 8] [--pages N] [--cpus 1,2]
        [--vocab 8000] [--seq-len 2048] [--timeout-s 2] [--minhash-verify none|estimate|exact]
        [--executor ray|local] [--cache DIR] [--keep DIR] [--skip-datatrove]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
PROJECT_ROOT = HERE.parent
sys.path.insert(0, str(PROJECT_ROOT))
sys.path.insert(0, str(HERE))

import warc_corpus  # noqa: E402
from _results import code_version, figure, write_results  # noqa: E402
from warc_corpus import DataMissing, build_warc_corpus, real_pages  # noqa: E402

from pipelines.allocator import ENVIRONMENT as ALLOCATOR_ENVIRONMENT  # noqa: E402

DT_VENV = HERE / ".venv-datatrove"
DT_PYTHON = DT_VENV / "bin" / "python"
DT_SCRIPT = HERE / "_datatrove_fineweb.py"

TARGET_SPEEDUP, TARGET_AGREEMENT, TARGET_EFFICIENCY = 3.0, 0.97, 0.80
COPY_SUFFIX = re.compile(r"[?&]copy=\d+$")  # warc_corpus.copy_url's mark of copies 1, 2, ...
MINHASH = {"ngram": 5, "bands": 14, "rows": 8}  # datatrove's FineWeb MinhashConfig
LANG_THRESHOLD = 0.65
SEED = 42
OUR_STAGES = ["read", "html_langid", "extract", "langid", "gopher_repetition", "gopher_quality", "c4", "fineweb",
              "minhash_dedup"]
# datatrove's steps of its first executor, in order, named as our stages
DT_FILTER_STEPS = ["read", "extract", "langid", "gopher_repetition", "gopher_quality", "c4", "fineweb", "write"]
ALPHA_WORDS, DT_ALPHA_REASON = 0.8, "gopher_below_alpha_threshold"  # both sides' bound; datatrove's reason
JUDGED_BY_GOPHER_QUALITY = ("gopher_quality", "c4", "fineweb", "minhash_dedup")  # our stages from gopher_quality on
SHIPPED_TAG = "shipped-rules"

GATE = "  - html_langid: {{keep: [en], below: {below}}}\n"
RECIPE = """\
name: peer-fineweb-{cpus}
output: {output}
seed: {seed}
executor: {executor}
ray: {{num_cpus: {cpus}}}
local: {{workers: {cpus}}}
sources:
  - {{name: web, format: warc, paths: ["{corpus}/*.warc.gz"]}}
stages:
{gate}  - extract: {{engine: {engine}, timeout_s: {timeout}, favor: precision, include_comments: false,
             deduplicate: true}}
  - langid: {{keep: [en], min_score: {lang}, second_opinion: {second}}}
  - gopher_repetition: {{prose_only: {prose}}}
  - gopher_quality: {{prose_only: {prose}}}
  - c4: {{terminal_punct: false, prose_only: {prose}}}
  - fineweb: {{prose_only: {prose}}}
  - minhash_dedup: {{num_perm: {perm}, bands: {bands}, rows: {rows}, ngram: {ngram}, verify: {verify}}}
tokenizer: {{model: {model}}}
pack: {{seq_len: {seq_len}}}
rejects: {{sample: 1.0, max_per_reason: 10000000}}
"""


# ------------------------------------------------------------------------------------------- corpus


def _with_payload_type(original):
    def record(url: str, body: bytes):
        rec = original(url, body)
        rec.headers["WARC-Identified-Payload-Type"] = "text/html"
        return rec

    return record


def build_corpus(cache: Path, copies: int, files: int, pages: int | None) -> list[Path]:
    """build_warc_corpus, with the payload type Common Crawl records carry, once per shape under `cache`.

    The folder's path is part of every document id (ids hash the input URI), and ids decide which copy
    of a near-duplicate pair survives: built anew in a temporary folder, the corpus gave agreement
    figures that moved from one invocation to the next; in one place they repeat.
    """
    out = cache / f"corpus-{pages or 'all'}x{copies}-{files}"
    done = out / "complete"
    if not done.exists():
        shutil.rmtree(out, ignore_errors=True)
        original = warc_corpus.warc_record
        warc_corpus.warc_record = _with_payload_type(original)
        try:
            build_warc_corpus(out, copies=copies, files=files, pages=pages)
        finally:
            warc_corpus.warc_record = original
        done.touch()
    return sorted(out.glob("*.warc.gz"))


# ------------------------------------------------------------------------------ tokenizers (untimed)


def _extract_page(args: tuple[str, dict]) -> str | None:
    import gzip

    from curation.stages import Extract

    path, params = args
    try:
        text, _ = Extract(timeout_s=None, **params).extract_one(gzip.decompress(Path(path).read_bytes()), None, None)
    except Exception:  # a page the extractor cannot handle is not in the training text
        return None
    return text if text and text.strip() else None


def prepare_tokenizers(cache: Path, pages: int | None, vocab: int, cpus: int, dt: bool) -> tuple[Path, Path | None]:
    """(sentencepiece .model, tokenizer.json or None), trained once on our extraction of every page."""
    cache.mkdir(parents=True, exist_ok=True)
    tag = f"{pages or 'all'}-{vocab}"
    texts = cache / f"texts-{pages or 'all'}.jsonl"
    if not texts.is_file():
        started = time.perf_counter()
        jobs = [(str(p.path), {"favor": "precision", "include_comments": False}) for p in real_pages(limit=pages)]
        with multiprocessing.get_context("spawn").Pool(cpus) as pool:
            extracted = pool.map(_extract_page, jobs, chunksize=8)
        tmp = texts.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for text in extracted:
                if text:
                    f.write(json.dumps({"text": text}) + "\n")
        tmp.replace(texts)
        print(f"  training text: {sum(bool(t) for t in extracted)} pages extracted in "
              f"{time.perf_counter() - started:.0f} s -> {texts}")
    sp_model = cache / f"sp-bpe-{tag}.model"
    if not sp_model.is_file():
        from curation.tokens.tokenizer import train_tokenizer

        def lines():
            with texts.open(encoding="utf-8") as f:
                for line in f:
                    yield from (x for x in json.loads(line)["text"].split("\n") if x.strip())

        train_tokenizer(lines(), sp_model.with_suffix(""), vocab, "bpe", seed=SEED)
    hf_json = cache / f"hf-bpe-{tag}.json"
    if dt and not hf_json.is_file():
        subprocess.run([str(DT_PYTHON), str(DT_SCRIPT), "train-tokenizer", str(texts), str(hf_json), str(vocab)],
                       check=True)
    return sp_model, (hf_json if dt else None)


# -------------------------------------------------------------------------------- process sampling


@dataclass
class Sampled:
    wall_s: float = 0.0
    peak_rss: int = 0
    peak_pss: int = 0  # proportional set size: a shared page divided among the processes mapping it
    peak_procs: int = 0
    peak_groups: dict[str, int] = field(default_factory=dict)
    cpu_s: float = 0.0
    # (epoch seconds, CPU seconds so far per process group)
    cpu_series: list[tuple[float, dict[str, float]]] = field(default_factory=list)

    def cpu_between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds of the tree per process group between two epoch times (to the sampling interval)."""
        def at(t: float) -> dict[str, float]:
            before = [c for when, c in self.cpu_series if when <= t]
            return before[-1] if before else {}

        first, last = at(start), at(end)
        return {g: last[g] - first.get(g, 0.0) for g in last}


def _group(proc: psutil.Process, root: int) -> str:
    if proc.pid == root:
        return "main"
    try:
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return "other"
    if "ray::" in cmd or "default_worker.py" in cmd:
        return "ray workers" if "Agent" not in cmd else "ray daemons"
    if "ray" in cmd:
        return "ray daemons"
    if "forkserver" in cmd or "multiprocess" in cmd or "multiprocessing" in cmd:
        return "workers"
    with contextlib.suppress(psutil.Error):
        if proc.ppid() == root and cmd == " ".join(psutil.Process(root).cmdline()):
            return "workers"  # forked from the main process (our local executor's workers)
    return "other"


def run_sampled(cmd: list[str], cores: int, log: Path, env: dict[str, str] | None = None,
                interval: float = 0.1) -> Sampled:
    """Run `cmd` on the first `cores` CPUs (its whole process tree inherits the affinity), output to `log`,
    summing RSS over its process tree every `interval` s; CPU seconds of every process seen."""
    out = Sampled()
    started = time.perf_counter()
    allowed = sorted(os.sched_getaffinity(0))[:cores]
    with log.open("wb") as sink:
        child = subprocess.Popen(cmd, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                 preexec_fn=lambda: os.sched_setaffinity(0, allowed))
    root = psutil.Process(child.pid)
    cpu: dict[tuple[int, float], float] = {}  # (pid, create_time) -> last seen user+system seconds
    groups: dict[int, str] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                procs = []
            total, total_pss, by_group = 0, 0, Counter()
            for p in procs:
                try:
                    with p.oneshot():
                        memory = p.memory_full_info()
                        rss = memory.rss
                        t = p.cpu_times()
                        key = (p.pid, p.create_time())
                    cpu[key] = t.user + t.system
                    if p.pid not in groups:
                        groups[p.pid] = _group(p, root.pid)
                    total += rss
                    total_pss += memory.pss
                    by_group[groups[p.pid]] += rss
                except psutil.Error:
                    continue
            if total > out.peak_rss:
                out.peak_rss, out.peak_procs, out.peak_groups = total, len(procs), dict(by_group)
            out.peak_pss = max(out.peak_pss, total_pss)
            per_group: Counter[str] = Counter()
            for (pid, _), seconds in cpu.items():
                per_group[groups.get(pid, "other")] += seconds
            out.cpu_series.append((time.time(), dict(per_group)))
            done.wait(interval)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    rc = child.wait()
    done.set()
    thread.join()
    out.wall_s = time.perf_counter() - started
    out.cpu_s = sum(cpu.values())
    if rc != 0:
        tail = log.read_bytes()[-4000:].decode(errors="replace")
        raise RuntimeError(f"{' '.join(cmd[:3])} ... exited with {rc}; the end of {log}:\n{tail}")
    return out


def folder_bytes(path: Path, pattern: str = "**/*") -> int:
    return sum(p.stat().st_size for p in path.glob(pattern) if p.is_file()) if path.exists() else 0


# ---------------------------------------------------------------------------------------- our side


def child_ours(config_path: str) -> int:
    """In a fresh process: run() of the recipe, timing Ray's start-up/shutdown and the run's phases."""
    from read_extract_throughput import timed, timed_executor

    import pipelines.run as run_module
    from curation.recipe import parse_recipe

    cfg = json.loads(Path(config_path).read_text())
    recipe = parse_recipe(cfg["recipe"], check_paths=True)
    spent: dict[str, float] = {}
    window: dict[str, float] = {}
    with (
        timed_executor(run_module, spent, started=lambda: window.setdefault("start", time.time()),
                       stopping=lambda: window.setdefault("end", time.time())),
        timed(run_module, "run_corpus_stages", spent),
        timed(run_module, "pack_job", spent),
    ):
        started, began = time.perf_counter(), time.time()
        result = run_module.run(recipe, output=cfg["output"], quiet=True)
        total = time.perf_counter() - started
        window.setdefault("run", [began, time.time()])
    job = Path(result.job_dir)
    manifest = json.loads((job / "manifest.json").read_text()) if (job / "manifest.json").is_file() else {}
    import pyarrow.dataset as ds

    def sha1(text: str | None) -> str | None:
        return hashlib.sha1(text.encode()).hexdigest() if text is not None else None

    documents = ds.dataset(str(job / "documents"), format="parquet").to_table(columns=["url", "text"])
    kept = documents.column("url").to_pylist()
    texts = {u: sha1(t) for u, t in zip(kept, documents.column("text").to_pylist(), strict=True)}
    dropped: dict[str, list[str]] = {}
    if (job / "rejects").is_dir():
        rejects = ds.dataset(str(job / "rejects"), format="parquet", partitioning="hive")
        table = rejects.to_table(columns=["url", "stage", "reason", "text"])
        for url, stage, reason, text in zip(*(table.column(c).to_pylist() for c in ("url", "stage", "reason", "text")),
                                            strict=True):
            dropped.setdefault(f"{stage}/{reason}", []).append(url)
            texts.setdefault(url, sha1(text))
    out = {
        "run_s": total,
        "start_s": spent.get("start", 0.0),
        "close_s": spent.get("close", 0.0),
        "corpus_s": spent.get("run_corpus_stages", 0.0),
        "pack_s": spent.get("pack_job", 0.0),
        "window": [window["start"], window["end"]] if recipe.executor == "ray" else window["run"],
        "stats": result.stats,
        "manifest_seconds": manifest.get("seconds"),
        "tokens": {s: v["tokens"] for s, v in manifest.get("splits", {}).items()},
        "job_dir": str(job),
        "kept_urls": kept,
        "dropped": dropped,
        "texts": texts,
    }
    Path(cfg["result"]).write_text(json.dumps(out))
    return 0


def alpha_shares(recipe: str, job: Path) -> dict[str, float]:
    """url -> the share of words with a letter our gopher_quality (with the recipe's params) gives every page of a
    run's `job` folder that reached it, scored again after the run, untimed: rejects hold the text a stage
    dropped, documents the text after C4's line removals."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from curation.recipe import parse_recipe
    from curation.stages.build import build_stages

    stages = build_stages(parse_recipe(recipe, check_paths=False))  # the job is all it reads
    stage = next(s for _, s in stages if s.name == "gopher_quality").ready()
    tables = [ds.dataset(str(job / "documents"), format="parquet").to_table()]
    if (job / "rejects").is_dir():
        rejects = ds.dataset(str(job / "rejects"), format="parquet", partitioning="hive")
        tables.append(rejects.to_table(filter=ds.field("stage").isin(list(JUDGED_BY_GOPHER_QUALITY))))
    shares: dict[str, float] = {}
    for table in tables:
        columns = [c for c in ("text", "lang") if c in table.column_names]
        for batch in table.select(["url", *columns]).to_batches(max_chunksize=256):
            batch = pa.Table.from_batches([batch])
            ratio = stage.score(batch.select(columns))["gopher_alpha_words_ratio"]
            shares.update(zip(batch.column("url").to_pylist(), ratio.tolist(), strict=True))
    return shares


@dataclass
class Side:
    name: str
    cores: int
    docs: int  # WARC records read
    wall_s: float  # end to end, interpreter and Ray start-up excluded
    sampled: Sampled
    cpu_groups: dict[str, float]  # CPU seconds per process group within the timed window (wall_s)
    stages: dict[str, tuple[int, float]]  # stage -> (documents in, core-seconds)
    kept: set[str]
    dropped_by: dict[str, str]  # url -> stage/reason that dropped it
    texts: dict[str, str | None]  # url -> sha1 of its text where it was kept or dropped
    out_tokens_bytes: int
    out_docs_bytes: int
    out_total_bytes: int
    tokens: int
    docs_out: int
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after the run
    notes: list[str] = field(default_factory=list)
    alpha: dict[str, float] = field(default_factory=dict)  # url -> Gopher's share of words with a letter
    shipped_rules: bool = False  # ours with the quality filters' shipped defaults (prose_only), not datatrove's

    @property
    def per_core(self) -> float:
        return self.docs / self.wall_s / self.cores

    @property
    def cpu_window_s(self) -> float:
        return sum(self.cpu_groups.values())

    @property
    def per_cpu_s(self) -> float:
        return self.docs / self.cpu_window_s if self.cpu_window_s else float("nan")


def _executor_label(executor: str, cpus: int) -> str:
    if executor == "ray":
        return f"ray.num_cpus={cpus}"
    return "local, in-process" if cpus == 1 else f"local, {cpus} worker processes"


def run_ours(corpus_dir: Path, work: Path, cores: int, model: Path, args: argparse.Namespace, tag: str = "",
             shipped_rules: bool = False) -> Side:
    """Our recipe on the first `cores` CPUs, with as many Ray CPUs or local workers; the four quality filters
    with datatrove's semantics (`prose_only: false`), or as we ship them (`shipped_rules`)."""
    cpus = cores
    tag = tag or (SHIPPED_TAG if shipped_rules else "")
    load_before = os.getloadavg()[0]
    out = work / f"ours-{cores}{tag}"
    recipe = RECIPE.format(cpus=cpus, executor=args.executor, output=out, seed=SEED, corpus=corpus_dir,
                           timeout=args.timeout_s, lang=LANG_THRESHOLD, perm=MINHASH["bands"] * MINHASH["rows"],
                           verify=args.minhash_verify, model=model, seq_len=args.seq_len, engine=args.extract_engine,
                           second=str(args.langid_second_opinion).lower(), prose=str(shipped_rules).lower(),
                           gate="" if args.no_html_langid else GATE.format(below=args.gate_below),
                           **MINHASH)
    cfg = {"recipe": recipe, "output": str(out), "result": str(work / f"ours-{cores}{tag}.json")}
    cfg_path = work / f"ours-{cores}{tag}.config.json"
    cfg_path.write_text(json.dumps(cfg))
    # Ray's workers import this checkout's `curation`, like the driver, not whatever the venv points at; a
    # private Ray temp dir, so that ray.init(address=None) starts its own Ray instead of joining a cluster
    # that `ray start` left on this machine (it reads <temp dir>/ray_current_cluster)
    ray_tmp = tempfile.mkdtemp(prefix="pfray-")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("RAY_ADDRESS", None)
    try:
        sampled = run_sampled([sys.executable, str(Path(__file__).resolve()), "--child-ours", str(cfg_path)], cores,
                              work / f"ours-{cores}{tag}.log", env)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    r = json.loads(Path(cfg["result"]).read_text())
    stats = r["stats"]
    rows = {row["stage"]: row for row in stats["stages"]}
    wall = r["run_s"] - (r["start_s"] + r["close_s"] if args.executor == "ray" else 0.0)  # datatrove's pools count
    stages: dict[str, tuple[int, float]] = {}
    for name in OUR_STAGES:
        if name in rows:
            seconds = rows[name]["seconds"] * (cores if name == "minhash_dedup" else 1)  # driver wall x cores
            stages[name] = (rows[name]["docs_in"], seconds)
    if r["manifest_seconds"] is not None:
        stages["tokenize+pack"] = (stats["documents"]["out"], r["manifest_seconds"] * cores)
    job = Path(r["job_dir"])
    dropped_by = {url: key for key, urls in r["dropped"].items() for url in urls}
    side = Side(
        name=f"ours{tag and ' ' + tag}, {cores} core{'s' * (cores > 1)} ({_executor_label(args.executor, cpus)})",
        cores=cores,
        docs=stats["documents"]["records_read"], wall_s=wall,
        sampled=sampled, cpu_groups=sampled.cpu_between(*r["window"]), stages=stages, kept=set(r["kept_urls"]),
        dropped_by=dropped_by, texts=r["texts"], out_tokens_bytes=folder_bytes(job / "shards"),
        out_docs_bytes=folder_bytes(job / "documents"),
        out_total_bytes=folder_bytes(job), tokens=sum(r["tokens"].values()), docs_out=stats["documents"]["out"],
        load=(load_before, os.getloadavg()[0]), alpha=alpha_shares(recipe, job), shipped_rules=shipped_rules,
    )
    drops = {name: rows[name]["dropped"] for name in OUR_STAGES if rows.get(name, {}).get("dropped")}
    side.notes.append("dropped: " + "; ".join(f"{k} {v}" for k, v in drops.items()))
    doc_phase = r["run_s"] - r["start_s"] - r["close_s"] - r["corpus_s"] - r["pack_s"]
    side.notes.append(f"run() {r['run_s']:.1f} s = executor start-up {r['start_s']:.1f} + document stages "
                      f"{doc_phase:.1f} + corpus stages (minhash + final documents) {r['corpus_s']:.1f} + "
                      f"tokenize/pack {r['pack_s']:.1f} + executor close {r['close_s']:.1f}")
    if args.keep is None:
        shutil.rmtree(out, ignore_errors=True)
    return side


# ---------------------------------------------------------------------------------- datatrove side


def ensure_datatrove() -> bool:
    if DT_PYTHON.exists():
        return True
    script = HERE / "datatrove_env.sh"
    print(f"datatrove's venv is missing: creating it with `bash {script.relative_to(PROJECT_ROOT)}` ...")
    try:
        subprocess.run(["bash", str(script), str(DT_VENV)], check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"  could not create it ({exc}); run `bash benchmarks/datatrove_env.sh` by hand. Measuring ours only.")
        return False
    return DT_PYTHON.exists()


def _count(stats: dict[str, Any], *keys: str) -> int:
    for key in keys:
        value = stats.get(key)
        if isinstance(value, dict):
            value = value.get("total")
        if value:
            return int(value)
    return 0


def _seconds(step: dict[str, Any]) -> float:
    t = step.get("time_stats") or {}
    return float(t.get("total", 0.0)) if isinstance(t, dict) else float(t or 0.0)


def our_trafilatura_for_datatrove() -> Path:
    """Our trafilatura version installed (no dependencies: datatrove's venv has the same ones) beside
    datatrove's venv, for `--datatrove-trafilatura ours`: then both sides extract with the same code."""
    import importlib.metadata

    version = importlib.metadata.version("trafilatura")
    target = DT_VENV / f"trafilatura-{version}"
    if not (target / "trafilatura").is_dir():
        subprocess.run([str(DT_PYTHON), "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                        f"trafilatura=={version}"], check=True)
    return target


def datatrove_alpha_shares(out: Path, work: Path, tasks: int, env: dict[str, str]) -> dict[str, float]:
    """url -> GopherQualityFilter's share of words with a letter of every page of a run (`out`) that reached it,
    computed in datatrove's venv after the run, untimed."""
    result = work / f"datatrove-{tasks}.alpha.json"
    subprocess.run([str(DT_PYTHON), str(DT_SCRIPT), "alpha", str(out), str(result)], env=env, check=True)
    return json.loads(result.read_text())


def run_datatrove(corpus_dir: Path, work: Path, tasks: int, tokenizer: Path, args: argparse.Namespace) -> Side:
    load_before = os.getloadavg()[0]
    out = work / f"datatrove-{tasks}"
    from curation.stages.langid import bundled_model_path

    lid = bundled_model_path()
    cfg = {"corpus": str(corpus_dir), "output": str(out), "tasks": tasks, "tokenizer": str(tokenizer),
           "lid_model": str(lid), "lang_threshold": LANG_THRESHOLD, "timeout_s": args.timeout_s, "seed": SEED,
           "minhash_ngram": MINHASH["ngram"], "minhash_buckets": MINHASH["bands"], "minhash_rows": MINHASH["rows"],
           "result": str(work / f"datatrove-{tasks}.json")}
    cfg_path = work / f"datatrove-{tasks}.config.json"
    cfg_path.write_text(json.dumps(cfg))
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "LOGURU_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1",
           "HF_HOME": str(work / "hf-home")}
    for name in ALLOCATOR_ENVIRONMENT:  # set by our `pipelines` where this process imported it: not datatrove's
        env.pop(name, None)
    if args.datatrove_trafilatura == "ours":
        env["PYTHONPATH"] = str(our_trafilatura_for_datatrove())
    sampled = run_sampled([str(DT_PYTHON), str(DT_SCRIPT), "run", str(cfg_path)], tasks,
                          work / f"datatrove-{tasks}.log", env)
    r = json.loads(Path(cfg["result"]).read_text())
    ex = {e["name"]: e for e in r["executors"]}
    steps = ex["filter"]["steps"]
    stages: dict[str, tuple[int, float]] = {}
    for name, step in zip(DT_FILTER_STEPS, steps, strict=True):
        stages[name] = (_count(step["stats"], "total", "documents"), _seconds(step))
    sig_in = _count(ex["minhash_signature"]["steps"][0]["stats"], "documents")
    minhash = sum(_seconds(s) for s in ex["minhash_signature"]["steps"])
    minhash += sum(_seconds(s) for s in ex["minhash_buckets"]["steps"]) + sum(
        _seconds(s) for s in ex["minhash_cluster"]["steps"])
    final = ex["minhash_filter_tokenize"]["steps"]  # reader, minhash filter, writer, tokenizer
    minhash += _seconds(final[0]) + _seconds(final[1])
    stages["minhash_dedup"] = (sig_in, minhash)
    stages["write documents"] = (_count(final[2]["stats"], "total", "documents"), _seconds(final[2]))
    stages["tokenize+pack"] = (stages["write documents"][0], _seconds(final[3]))
    tokens = _count(final[3]["stats"], "tokens")
    wall = sum(e["wall_s"] for e in r["executors"])
    reasons = r.get("reasons", {})
    dropped_by = {url: f"{step}/{reasons[url]}" if url in reasons else step
                  for step, urls in r["dropped"].items() for url in urls}
    side = Side(
        name=f"datatrove, {tasks} core{'s' if tasks > 1 else ''} ({tasks} task{'s' if tasks > 1 else ''})",
        cores=tasks, docs=stages["read"][0], wall_s=wall,
        sampled=sampled, cpu_groups=sampled.cpu_between(*r["window"]), stages=stages, kept=set(r["kept_urls"]),
        dropped_by=dropped_by, texts=r["texts"], out_tokens_bytes=folder_bytes(out / "tokens"),
        out_docs_bytes=folder_bytes(out / "deduped"),
        out_total_bytes=folder_bytes(out) - folder_bytes(out / "logs"), tokens=tokens, docs_out=len(r["kept_urls"]),
        load=(load_before, os.getloadavg()[0]), alpha=datatrove_alpha_shares(out, work, tasks, env),
    )
    drops = {}
    for name, step in zip(DT_FILTER_STEPS, steps, strict=True):
        counts = {k: _count(step["stats"], k) for k in step["stats"]
                  if k in ("dropped", "timeout", "clean_error", "broken_process") or k.startswith("dropped_")}
        if any(counts.values()):
            drops[name] = {k: v for k, v in counts.items() if v}
    side.notes.append("dropped: " + "; ".join(f"{k} {v}" for k, v in drops.items()))
    side.notes.append("executors: " + ", ".join(f"{e['name']} {e['wall_s']:.1f} s ({e['tasks']} tasks)"
                                                for e in r["executors"]))
    side.notes.append("steps (seconds summed over tasks): " + "; ".join(
        f"{e['name']}: " + ", ".join(f"{s['name'].encode('ascii', 'ignore').decode().strip()} {_seconds(s):.1f}"
                                     for s in e["steps"]) for e in r["executors"]))
    if args.keep is None:
        shutil.rmtree(out, ignore_errors=True)
    return side


# ------------------------------------------------------------------------------------------ report


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def flag(ok: bool) -> str:
    return "meets target" if ok else "BELOW TARGET"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [" | ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))])
             for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def stage_table(a: Side, b: Side | None) -> str:
    names = [*OUR_STAGES, "write documents", "tokenize+pack"]
    head = ["stage", "ours docs in", "ours s", "ours docs/s/core"]
    if b:
        head += ["dt docs in", "dt s", "dt docs/s/core", "ours/dt"]
    rows = [head]
    for name in names:
        if name not in a.stages and not (b and name in b.stages):
            continue
        row = [name]
        ra = None
        if name in a.stages:
            n, s = a.stages[name]
            ra = n / s if s else float("inf")
            row += [str(n), f"{s:.1f}", f"{ra:.1f}"]
        else:
            row += ["-", "(in driver)", "-"]
        if b:
            if name in b.stages:
                n, s = b.stages[name]
                rb = n / s if s else float("inf")
                row += [str(n), f"{s:.1f}", f"{rb:.1f}", f"{ra / rb:.2f}x" if ra and rb else "-"]
            else:
                row += ["-", "-", "-", "-"]
        rows.append(row)
    return table(rows)


def page_of(url: str) -> str:
    """The page a (`copy_url`) copy is of: near-duplicate removal keeps one copy, each side its own choice."""
    return COPY_SUFFIX.sub("", url)


def agreement(a: Side, b: Side, urls: list[str]) -> tuple[float, float, list[str]]:
    """Agreement by page (any copy kept: the held figure; the same as by URL without copies), the share
    of URLs with the same decision, and lines saying where and why the two differ."""
    pages_a, pages_b = {page_of(u) for u in a.kept}, {page_of(u) for u in b.kept}
    jaccard = len(pages_a & pages_b) / len(pages_a | pages_b) if pages_a | pages_b else 1.0
    both, either = a.kept & b.kept, a.kept | b.kept
    same = sum((u in a.kept) == (u in b.kept) for u in urls) / len(urls)
    lines = [f"kept: ours {len(a.kept)}, datatrove {len(b.kept)}, both {len(both)}, either {len(either)} (by URL: "
             f"{len(both) / max(1, len(either)):.2%}); pages kept: ours {len(pages_a)}, datatrove {len(pages_b)}, "
             f"both {len(pages_a & pages_b)}"]
    only_a = Counter(b.dropped_by.get(u, "read/extract (no text)") for u in a.kept - b.kept)
    only_b = Counter(a.dropped_by.get(u, "not read") for u in b.kept - a.kept)
    if only_a:
        lines.append("kept by ours only, where datatrove dropped them: "
                     + ", ".join(f"{k} {v}" for k, v in only_a.most_common()))
    if only_b:
        lines.append("kept by datatrove only, where ours dropped them: "
                     + ", ".join(f"{k} {v}" for k, v in only_b.most_common()))
    why: Counter[str] = Counter()
    for u in (a.kept ^ b.kept):
        stages = (a.dropped_by.get(u, ""), b.dropped_by.get(u, ""))
        if any(s.startswith(("minhash", "7_minhash")) for s in stages):
            why["the other copy of a near-duplicate pair survived (survivor choice)"] += 1
        elif a.texts.get(u) is None or b.texts.get(u) is None:
            why["no text on one side (read/extract)"] += 1
        elif a.texts[u] == b.texts[u]:
            why["same text, different filter decision"] += 1
        else:
            why["texts differ (extraction, or C4 edits on one side)"] += 1
    if why:
        lines.append("why they differ: " + ", ".join(f"{k} {v}" for k, v in why.most_common()))
    same_text = sum(a.texts.get(u) == b.texts.get(u) for u in both)
    lines.append(f"kept by both with identical text: {same_text} of {len(both)}")
    return jaccard, same, lines


def alpha_rule(a: Side, b: Side) -> tuple[list[str], dict[str, Any]]:
    """Gopher's share of words with a letter, the rule alone, on the pages both sides' Gopher quality filter
    judged (each side's count on its own text): where one side's count passes a page the other's fails, with
    examples among the pages ours kept and datatrove dropped for it. Lines to print, and the counts."""
    judged = sorted(set(a.alpha) & set(b.alpha))
    passes = {u: (not a.alpha[u] < ALPHA_WORDS, not b.alpha[u] < ALPHA_WORDS) for u in judged}  # NaN fails no bound
    ours_only = [u for u in judged if passes[u] == (True, False)]
    theirs_only = [u for u in judged if passes[u] == (False, True)]
    kept = [u for u in ours_only if u in a.kept and b.dropped_by.get(u, "").endswith(DT_ALPHA_REASON)]
    examples = sorted(kept, key=lambda u: (b.alpha[u] - a.alpha[u], u))[:3]
    shown = "; ".join(f"{page_of(u)} ours {a.alpha[u]:.2f} / datatrove {b.alpha[u]:.2f}" for u in examples)
    lines = [f"Gopher's share of words with a letter (>= {ALPHA_WORDS:g}), the rule alone on the {len(judged)} pages "
             f"both quality filters judged: ours (whitespace words of the prose) passes {len(ours_only)} that "
             f"datatrove's (word tokenizer: a punctuation mark is a word) fails, the reverse {len(theirs_only)}; "
             f"{len(kept)} of them kept by ours, dropped by datatrove for it" + (f", e.g. {shown}" if shown else "")]
    return lines, {"judged": len(judged), "ours_only": len(ours_only), "theirs_only": len(theirs_only),
                   "kept": len(kept), "examples": shown}


def report(ours: list[Side], theirs: list[Side], urls: list[str]) -> list[dict]:
    """Prints the comparison; its figures: speed, memory and agreement against datatrove, parallel efficiency."""
    figures = []
    print("\n== end to end (same corpus, same cores; interpreter and Ray start-up excluded)")
    rows = [["config", "load", "docs", "wall s", "docs/s/core", "CPU s", "docs/CPU-s", "peak PSS", "peak RSS", "procs",
             "docs out", "tokens", "token files", "doc files", "output total"]]
    for s in [*ours, *theirs]:
        rows.append([s.name, f"{s.load[0]:.1f}->{s.load[1]:.1f}", str(s.docs), f"{s.wall_s:.1f}", f"{s.per_core:.2f}",
                     f"{s.cpu_window_s:.1f}",
                     f"{s.per_cpu_s:.2f}", mb(s.sampled.peak_pss), mb(s.sampled.peak_rss), str(s.sampled.peak_procs),
                     str(s.docs_out),
                     f"{s.tokens:,}", mb(s.out_tokens_bytes), mb(s.out_docs_bytes), mb(s.out_total_bytes)])
    print(table(rows))
    print("  load: 1-minute load average before -> after the run; wall s: the timed window (ours: run(), on Ray less "
          "its start-up/shutdown; datatrove: its executors' run()); CPU s: CPU of the whole process tree in that "
          "window (less sensitive to other load); peak PSS / RSS: largest sum over the process tree (RSS counts a page "
          "shared by n processes n times, PSS once; PSS is held against the target)")
    busiest = max(max(s.load) for s in [*ours, *theirs])
    if busiest > 1.5 * (os.cpu_count() or 1):
        print(f"  WARNING: the load average reached {busiest:.1f} on {os.cpu_count()} CPUs: other work shared the "
              "cores, so wall-clock figures (docs/s, ratios, parallel efficiency) are unreliable; prefer docs/CPU-s "
              "and rerun on an idle machine")
    for s in [*ours, *theirs]:
        groups = ", ".join(f"{g} {mb(v)}" for g, v in sorted(s.sampled.peak_groups.items()))
        cpu = ", ".join(f"{g} {v:.1f}" for g, v in sorted(s.cpu_groups.items()))
        print(f"  {s.name}: peak RSS by process group: {groups}; CPU seconds in the timed window by group: {cpu}; "
              f"whole subprocess {s.sampled.wall_s:.1f} s wall")
        for note in s.notes:
            print(f"    {note}")
    failures = []
    by_cores = {t.cores: t for t in theirs}
    for a in ours:
        b = by_cores.get(a.cores)
        print(f"\n== {a.name} vs {b.name if b else 'no datatrove run'}: per stage (seconds summed over workers)")
        print(stage_table(a, b))
        if b is None:
            figures.append(figure(f"{a.name}: end to end, {a.docs:,} documents", a.per_core, "docs/s per core"))
            continue
        speed = a.per_core / b.per_core
        mem = a.sampled.peak_pss / b.sampled.peak_pss
        jaccard, same, lines = agreement(a, b, urls)
        whole = b.sampled.wall_s / a.sampled.wall_s
        speed_note = f"whole command {whole:.2f}x; per CPU-second {a.per_cpu_s / b.per_cpu_s:.2f}x"
        differences = "; ".join(line for line in lines if line.startswith("kept by") and "only" in line)
        if a.shipped_rules:  # what our defaults change, rule by rule: no target, the difference is deliberate
            alpha_lines, alpha = alpha_rule(a, b)
            print(f"  with our shipped rules (prose_only): end to end {speed:.2f}x datatrove's docs/s per core "
                  f"({speed_note}); agreement of kept documents {jaccard:.2%}, same decision on {same:.2%} of "
                  f"{len(urls)} input URLs")
            for line in lines + alpha_lines:
                print(f"    {line}")
            figures += [
                figure(f"{a.name}: end to end, {a.docs:,} documents", a.per_core, "docs/s per core", b.name,
                       b.per_core, note=speed_note),
                figure(f"{a.name}: agreement of kept documents (both / either, by page)", jaccard, "share",
                       note=f"our defaults judge prose, datatrove every line; same decision on {same:.2%} of "
                            f"{len(urls)} input URLs; {differences}"),
                figure(f"{a.name}: pages Gopher's letter-share rule passes by our count and fails by datatrove's",
                       alpha["ours_only"], "pages",
                       note=f"of {alpha['judged']} pages both judged; the reverse {alpha['theirs_only']}; kept by "
                            f"ours and dropped by datatrove for it {alpha['kept']}"
                            + (f": {alpha['examples']}" if alpha["examples"] else "")),
            ]
            continue
        print(f"  end to end docs/s per core: ours {a.per_core:.2f}, datatrove {b.per_core:.2f}: "
              f"{speed:.2f}x ({flag(speed >= TARGET_SPEEDUP)}: >= {TARGET_SPEEDUP:g}x)")
        print(f"  wall: ours {a.wall_s:.1f} s, datatrove {b.wall_s:.1f} s; documents per CPU-second of the process "
              f"tree (less sensitive to other load): ours {a.per_cpu_s:.2f}, datatrove {b.per_cpu_s:.2f}: "
              f"{a.per_cpu_s / b.per_cpu_s:.2f}x")
        print(f"  whole command (what `time` shows: interpreter, imports and, on Ray, its start-up and shutdown "
              f"inside): ours {a.sampled.wall_s:.1f} s, datatrove {b.sampled.wall_s:.1f} s: {whole:.2f}x "
              "(the windowed ratio above leaves start-up out)")
        print(f"  peak PSS: ours {mb(a.sampled.peak_pss)}, datatrove {mb(b.sampled.peak_pss)}: {mem:.2f}x "
              f"({flag(mem <= 1.0)}: no higher); peak RSS {a.sampled.peak_rss / b.sampled.peak_rss:.2f}x")
        print(f"  agreement of kept documents (both / either, by page): {jaccard:.2%} "
              f"({flag(jaccard >= TARGET_AGREEMENT)}: >= {TARGET_AGREEMENT:.0%}); same keep/drop decision on "
              f"{same:.2%} of {len(urls)} input URLs")
        for line in lines:
            print(f"    {line}")
        print(f"  output: tokens ours {a.tokens:,} in {mb(a.out_tokens_bytes)} (packed rows with provenance), "
              f"datatrove {b.tokens:,} in {mb(b.out_tokens_bytes)}; documents ours {mb(a.out_docs_bytes)} "
              f"(Parquet), datatrove {mb(b.out_docs_bytes)} (JSONL.gz)")
        figures += [
            figure(f"{a.name}: end to end, {a.docs:,} documents", a.per_core, "docs/s per core", b.name, b.per_core,
                   target=f">= {TARGET_SPEEDUP:g}x", met=speed >= TARGET_SPEEDUP, note=speed_note),
            figure(f"{a.name}: peak PSS of the process tree", a.sampled.peak_pss / 2**20, "MiB", b.name,
                   b.sampled.peak_pss / 2**20, target="no higher", met=mem <= 1.0),
            figure(f"{a.name}: agreement of kept documents (both / either, by page)", jaccard, "share",
                   target=f">= {TARGET_AGREEMENT:.0%}", met=jaccard >= TARGET_AGREEMENT,
                   note=f"same decision on {same:.2%} of {len(urls)} input URLs; {differences}"),
        ]
        if speed < TARGET_SPEEDUP:
            failures.append(f"speed {speed:.2f}x at {a.cores} core(s)")
        if jaccard < TARGET_AGREEMENT:
            failures.append(f"agreement {jaccard:.2%} at {a.cores} core(s)")
        if mem > 1.0:
            failures.append(f"peak memory {mem:.2f}x at {a.cores} core(s)")
    same_rules = [s for s in ours if not s.shipped_rules]
    one, two = (next((s for s in same_rules if s.cores == n), None) for n in (1, 2))
    if one and two:
        eff = two.docs / two.wall_s / (2 * one.docs / one.wall_s)
        print(f"\n== parallel efficiency, ours, 2 workers vs 1: {eff:.1%} ({flag(eff >= TARGET_EFFICIENCY)}: "
              f">= {TARGET_EFFICIENCY:.0%})")
        figures.append(figure("ours: parallel efficiency, 2 workers vs 1", eff, "share",
                              target=f">= {TARGET_EFFICIENCY:.0%}", met=eff >= TARGET_EFFICIENCY))
        if eff < TARGET_EFFICIENCY:
            failures.append(f"parallel efficiency {eff:.1%}")
        d1, d2 = by_cores.get(1), by_cores.get(2)
        if d1 and d2:
            print(f"   datatrove, 2 tasks vs 1: {d2.docs / d2.wall_s / (2 * d1.docs / d1.wall_s):.1%}")
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if failures:
        print("BELOW THE ISSUE'S TARGETS: " + "; ".join(failures))
    elif theirs:
        print("every figure meets the issue's targets")
    return figures


# -------------------------------------------------------------------------------------------- main


def growth(work: Path, base: Side, model: Path, args: argparse.Namespace) -> list[dict]:
    """Ours on a corpus `--growth` times larger (more copies, as many more files), on `base`'s cores: the
    cost growth exponent log(cost ratio) / log(size ratio), 1 for linear."""
    big_dir = build_corpus(args.cache, args.copies * args.growth, args.files * args.growth, args.pages)[0].parent
    big = run_ours(big_dir, work, base.cores, model, args, tag=f"x{args.growth}")
    size = math.log(big.docs / base.docs)
    print(f"\n== cost growth, {base.cores} core(s): {base.docs:,} -> {big.docs:,} documents")
    figures = []
    for what, a, b in (("CPU seconds", base.cpu_window_s, big.cpu_window_s), ("wall seconds", base.wall_s, big.wall_s)):
        print(f"  {what}: {a:.1f} -> {b:.1f} (x{b / a:.2f}), exponent {math.log(b / a) / size:.2f} (1 = linear)")
        figures.append(figure(f"{base.name}: cost growth exponent, {what}, {base.docs:,} -> {big.docs:,} documents",
                              math.log(b / a) / size, "", "linear", 1.0))
    print(f"  docs per CPU-second {base.per_cpu_s:.1f} -> {big.per_cpu_s:.1f}; peak PSS {mb(base.sampled.peak_pss)} -> "
          f"{mb(big.sampled.peak_pss)}")
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--copies", type=int, default=1, help="every page this many times, with distinct URLs")
    p.add_argument("--files", type=int, default=8, help="number of .warc.gz files (shards)")
    p.add_argument("--pages", type=int, default=None, help="an evenly spread subset of this many pages")
    p.add_argument("--cpus", default="1,2", help="core counts to pin each side to (datatrove: as many tasks)")
    p.add_argument("--vocab", type=int, default=8000, help="vocabulary size of both tokenizers")
    p.add_argument("--seq-len", type=int, default=2048, help="our packed rows hold seq_len + 1 tokens")
    p.add_argument("--extract-engine", choices=["trafilatura", "fast"], default="trafilatura",
                   help="our extract stage's engine (datatrove: always trafilatura)")
    p.add_argument("--no-html-langid", action="store_true",
                   help="leave out our html_langid stage (language ID on raw HTML, before extraction)")
    p.add_argument("--langid-second-opinion", action="store_true",
                   help="our langid's default: lingua where fastText is unsure (datatrove's LanguageFilter, which "
                   "the benchmark matches by default, is fastText alone)")
    p.add_argument("--gate-below", type=float, default=0.1, help="html_langid's `below`")
    p.add_argument("--datatrove-trafilatura", choices=["own", "ours"], default="ours",
                   help="datatrove's trafilatura: ours (the default: the extracted texts match, so the agreement "
                        "measures the filters, not two extractor versions), or the version its venv pins (<1.12)")
    p.add_argument("--growth", type=int, default=0,
                   help="also run ours on a corpus this many times larger (1x -> Nx): the cost growth exponent")
    p.add_argument("--executor", choices=["ray", "local"], default="ray",
                   help="ours on an embedded Ray, or on the local executor (this machine's processes, no Ray)")
    p.add_argument("--timeout-s", type=float, default=2.0, help="trafilatura's per-page time limit, both sides")
    p.add_argument("--minhash-verify", choices=["none", "estimate", "exact"], default="none",
                   help="our check of LSH candidates (datatrove: none)")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "curation-peer-fineweb",
                   help="the corpus, extracted training text and the two tokenizers (made if missing)")
    p.add_argument("--keep", type=Path, default=None, help="keep every output under this folder")
    p.add_argument("--skip-datatrove", action="store_true", help="measure ours only")
    p.add_argument("--no-shipped-rules", action="store_true",
                   help="leave out the run of ours with the quality filters as shipped (prose_only), whose agreement "
                        "says what our defaults change")
    p.add_argument("--child-ours", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child_ours:
        return child_ours(args.child_ours)
    try:
        real_pages()
    except DataMissing as exc:
        print(f"peer_fineweb: {exc}; skipped")
        return 0
    cpus_list = [int(c) for c in args.cpus.split(",")]
    print(f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} at "
          f"start; code {code_version()}")
    dt = not args.skip_datatrove and ensure_datatrove()
    if not dt and not args.skip_datatrove:
        print("datatrove side skipped: `bash benchmarks/datatrove_env.sh` creates its venv")
    if dt:
        import importlib.metadata

        theirs = "ours" if args.datatrove_trafilatura == "ours" else "the one its venv pins"
        print(f"trafilatura: ours {importlib.metadata.version('trafilatura')}, datatrove's {theirs}; our recipe: "
              f"extract engine {args.extract_engine}, html_langid {'off' if args.no_html_langid else 'on'}")
    work_ctx = tempfile.TemporaryDirectory(prefix="peer-fineweb-") if args.keep is None else None
    work = Path(work_ctx.name) if work_ctx else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        paths = build_corpus(args.cache, args.copies, args.files, args.pages)
        corpus_dir = paths[0].parent
        n_pages = len(real_pages(limit=args.pages))
        print(f"corpus: {n_pages} real pages x {args.copies} as WARC responses in {len(paths)} files, "
              f"{mb(sum(p.stat().st_size for p in paths))} gzip ({time.perf_counter() - started:.1f} s)")
        from warc_corpus import copy_url

        urls = [copy_url(pg.url, k) for pg in real_pages(limit=args.pages) for k in range(args.copies)]
        started = time.perf_counter()
        sp_model, hf_json = prepare_tokenizers(args.cache, args.pages, args.vocab, max(cpus_list), dt)
        print(f"tokenizers (vocab {args.vocab}, BPE): {sp_model.name} (sentencepiece, ours), "
              f"{hf_json.name if hf_json else '-'} (HF tokenizers, datatrove) ({time.perf_counter() - started:.1f} s)")
        ours: list[Side] = []
        theirs: list[Side] = []
        for cpus in cpus_list:  # interleaved, so that a change of load hits both sides alike
            ours.append(run_ours(corpus_dir, work, cpus, sp_model, args))
            print(f"  {ours[-1].name}: {ours[-1].wall_s:.1f} s, {ours[-1].per_core:.2f} docs/s per core; "
                  f"load average {os.getloadavg()[0]:.2f}", flush=True)
            if dt:
                theirs.append(run_datatrove(corpus_dir, work, cpus, hf_json, args))
                print(f"  {theirs[-1].name}: {theirs[-1].wall_s:.1f} s, {theirs[-1].per_core:.2f} docs/s per core; "
                      f"load average {os.getloadavg()[0]:.2f}", flush=True)
        if dt and not args.no_shipped_rules:
            ours.append(run_ours(corpus_dir, work, max(cpus_list), sp_model, args, shipped_rules=True))
            print(f"  {ours[-1].name}: {ours[-1].wall_s:.1f} s", flush=True)
        figures = report(ours, theirs, urls)
        if args.growth > 1:
            figures += growth(work, ours[-1], sp_model, args)
        write_results("peer_fineweb", figures)
    finally:
        if work_ctx:
            work_ctx.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
