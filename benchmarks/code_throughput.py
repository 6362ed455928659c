"""Throughput of the code recipe: files/s and MB/s per core, per step and through Ray.

Corpus: repository archives (`.tar.gz`, one per installed library: its folder and `.dist-info`)
made in a temporary folder from the venv's site-packages, nothing downloaded (`--packages N`
picks the first N of the benchmark's library list).

1. **One core, no Ray**, per step, CPU seconds (`time.process_time`, so other load on the machine
   hardly moves them): the `code` reader (two passes over each gzip stream: licence files, then
   documents), `code_filters` (recipes/code.yaml's settings), `code_secrets`, `pii` (e-mail, IP).
   Limits printed beside them: the floor of any reader, a loop that only gunzips, untars and
   decodes UTF-8 (ratio = ours / floor); and BigCode's basic filter in plain Python (the peer of
   `code_filters`).
2. **Through Ray**: `pipelines.run.run` of recipes/code.yaml with an embedded Ray of 1 and 2 CPUs,
   its document stages alone and then with its exact and MinHash dedup: files/s per core by wall
   time (less Ray's start-up and shutdown, over the CPUs) and files per CPU-second of every process
   of the run (driver, Ray daemons, workers; psutil), which hardly moves when other work shares
   the machine. Ratio to step 1's recipe total: what the engine costs per file.

    .venv/bin/python benchmarks/code_throughput.py [--packages 30] [--cpus 1,2] [--no-ray]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from curation import schema
from curation.apply import run_stage
from curation.readers import CodeReader, read_shard
from curation.recipe import parse_recipe
from curation.stages.code_filters import CodeFilters
from curation.stages.code_secrets import CodeSecrets
from curation.stages.pii import PiiRedaction

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _results import LOAD_AT_START, code_version, figure, write_results
    from code_filters import BROAD, HAND_WRITTEN, SITE, basic_filter_keeps
    from read_extract_throughput import timed_executor
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._results import LOAD_AT_START, code_version, figure, write_results
    from benchmarks.code_filters import BROAD, HAND_WRITTEN, SITE, basic_filter_keeps
    from benchmarks.read_extract_throughput import timed_executor

ROOT = Path(__file__).resolve().parents[1]


def build_corpus(out: Path, packages: list[str]) -> list[Path]:
    dists = importlib.metadata.packages_distributions()
    archives = []
    for package in packages:
        top = package.split("/")[0]
        names = {n.lower().replace("-", "_") for n in dists.get(top, [])}
        archive = out / f"{package.replace('/', '_')}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(SITE / package, arcname=f"{top}-repo/{package}",
                    filter=lambda i: None if "__pycache__" in i.name else i)
            for dist in SITE.glob("*.dist-info"):
                if dist.name.split("-")[0].lower() in names:
                    tar.add(dist, arcname=f"{top}-repo/{dist.name}")
        archives.append(archive)
    return archives


def floor(archives: list[Path]) -> tuple[int, int, float]:
    """(files, bytes, CPU seconds) of gunzip + untar + UTF-8 decode: what any reader must do."""
    started = time.process_time()
    files = size = 0
    for archive in archives:
        with tarfile.open(archive, "r|gz") as tar:
            for member in tar:
                if member.isfile():
                    data = tar.extractfile(member).read()  # type: ignore[union-attr]
                    with contextlib.suppress(UnicodeDecodeError):
                        data.decode("utf-8")
                    files += 1
                    size += len(data)
    return files, size, time.process_time() - started


def steps(archives: list[Path]) -> dict[str, Any]:
    recipe = parse_recipe((ROOT / "recipes" / "code.yaml").read_text(), check_paths=False)
    params = {kind: params for _, kind, params in recipe.stage_specs()}
    stages = [("code_filters", CodeFilters.from_params(params["code_filters"])),
              ("code_secrets", CodeSecrets.from_params(params["code_secrets"])),
              ("pii", PiiRedaction.from_params(params["pii"]))]
    seconds = dict.fromkeys(["read", *(n for n, _ in stages), "basic filter (peer)"], 0.0)
    records = documents = size = 0
    for archive in archives:
        started = time.process_time()
        batch = pa.concat_tables(read_shard(CodeReader(), str(archive), source="code", shard=archive.name,
                                            batch_rows=64))
        seconds["read"] += time.process_time() - started
        records += batch.num_rows - 1
        batch = batch.filter(pa.compute.is_null(batch.column(schema.REASON)))
        documents += batch.num_rows
        size += sum(len(t.encode()) for t in batch.column("text").to_pylist())
        for name, stage in stages:
            started = time.process_time()
            batch = run_stage(stage, batch, name=name)
            seconds[name] += time.process_time() - started
        started = time.process_time()
        basic_filter_keeps(batch)
        seconds["basic filter (peer)"] += time.process_time() - started
    return {"records": records, "documents": documents, "bytes": size, "seconds": seconds}


def cpu_seconds() -> dict[int, float]:
    """CPU seconds so far of this process and its descendants (the embedded Ray's daemons and workers)."""
    import psutil

    me = psutil.Process()
    out = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            out[proc.pid] = t.user + t.system
        except psutil.Error:
            continue
    return out


def through_ray(archives: list[Path], cpus: int, out: Path, *, dedup: bool) -> dict[str, Any]:
    import pipelines.run as run_module

    text = (ROOT / "recipes" / "code.yaml").read_text()
    text = text.replace('["data/repos/*.tar.gz", "data/repos/*.zip"]', json.dumps([str(a) for a in archives]))
    text = text.replace("ray: {address: null}", f"ray: {{address: null, num_cpus: {cpus}}}")
    if not dedup:
        text = "\n".join(line for line in text.splitlines() if "_dedup:" not in line)
    recipe = parse_recipe(text)
    spent: dict[str, float] = {}
    snapshots: dict[str, dict[int, float]] = {}
    with timed_executor(run_module, spent, started=lambda: snapshots.setdefault("up", cpu_seconds()),
                        stopping=lambda: snapshots.setdefault("down", cpu_seconds())):
        started = time.perf_counter()
        result = run_module.run(recipe, output=str(out / f"cpus{cpus}-{dedup}"), quiet=True)
        total = time.perf_counter() - started
    net = total - spent.get("start", 0.0) - spent.get("close", 0.0)
    cpu = sum(v - snapshots["up"].get(pid, 0.0) for pid, v in snapshots["down"].items())
    return {"net": net, "total": total, "start": spent.get("start", 0.0), "cpu": cpu, "stats": result.stats}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=int, default=30, help="how many libraries (archives) to read")
    parser.add_argument("--cpus", default="1,2", help="embedded Ray sizes to run the recipe with")
    parser.add_argument("--no-ray", action="store_true", help="only the one-core measurement")
    args = parser.parse_args()
    print(f"load average {LOAD_AT_START:.2f}; commit {code_version()}")
    packages = ([*HAND_WRITTEN, *BROAD])[: args.packages]
    with tempfile.TemporaryDirectory() as tmp:
        archives = build_corpus(Path(tmp), packages)
        mb = sum(a.stat().st_size for a in archives) / 1e6
        files, size, floor_seconds = floor(archives)
        print(f"corpus: {len(archives)} archives ({mb:.1f} MB gzipped), {files:,} files, {size / 1e6:.1f} MB")
        got = steps(archives)
        docs, mbytes = got["documents"], got["bytes"] / 1e6
        print(f"\n1. one core, no Ray: {got['records']:,} files read, {docs:,} documents ({mbytes:.1f} MB of text)")
        print(f"   {'step':22} {'files/s':>10} {'MB/s':>8}   (read: files and MB in the archives; stages: documents)")
        floor_rate = files / floor_seconds
        print(f"   {'floor: gunzip+decode':22} {floor_rate:>10,.0f} {size / 1e6 / floor_seconds:>8.1f}")
        for name, seconds in got["seconds"].items():
            count, volume = (got["records"], size / 1e6) if name == "read" else (docs, mbytes)
            print(f"   {name:22} {count / seconds:>10,.0f} {volume / seconds:>8.1f}")
        work = sum(v for k, v in got["seconds"].items() if k != "basic filter (peer)")
        one_core = got["records"] / work
        print(f"   {'recipe steps together':22} {one_core:>10,.0f} {mbytes / work:>8.1f}")
        read_rate = got["records"] / got["seconds"]["read"]
        print(f"   read / floor = {read_rate / floor_rate:.2f} (two passes over each gzip stream); code_filters / "
              f"basic filter = {got['seconds']['basic filter (peer)'] / got['seconds']['code_filters']:.2f}x "
              "the peer's speed")
        corpus = f"{len(archives)} archives, {files:,} files"
        figures = [figure(f"recipe steps together, one core, {corpus}", one_core, "files/s per core",
                          "floor: gunzip+untar+decode", floor_rate, note=f"{mbytes / work:.1f} MB/s of text"),
                   figure(f"reader, {corpus}", read_rate, "files/s per core", "floor: gunzip+untar+decode",
                          floor_rate)]
        if not args.no_ray:
            print("\n2. recipes/code.yaml through pipelines.run, embedded Ray; CPU = every process of the run "
                  "(driver, Ray daemons, workers) from Ray up to its shutdown")
            for dedup in (False, True):
                for cpus in (int(c) for c in args.cpus.split(",")):
                    r = through_ray(archives, cpus, Path(tmp), dedup=dedup)
                    per_cpu_second = got["records"] / r["cpu"]
                    label = "with exact + MinHash dedup" if dedup else "document stages only"
                    print(f"   {label}, {cpus} CPU: wall {r['net']:.1f} s net of Ray start-up {r['start']:.1f} s; "
                          f"{got['records'] / r['net'] / cpus:,.0f} files/s per core by wall, "
                          f"{per_cpu_second:,.0f} files and {mbytes / r['cpu']:.2f} MB per CPU-second "
                          f"(ratio to one core without Ray {per_cpu_second / one_core:.2f}); "
                          f"documents out {r['stats']['documents']['out']:,}")
                    figures.append(figure(f"recipes/code.yaml on Ray, {label}, {cpus} CPU", per_cpu_second,
                                          "files per CPU-second", "one core without Ray", one_core))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    write_results("code_throughput", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
