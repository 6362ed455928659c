"""FineWeb's first filter, side by side: our `url` stage and datatrove's `URLFilter`, with the same lists.

The lists are those datatrove's wheel ships (its `assets/`): UT1's adult domains (4.6 million) and URLs (19,586)
in one tar archive, and its banned words, soft-banned words and banned subwords. Ours reads them from datatrove's
venv (`benchmarks/.venv-datatrove`, made by `datatrove_env.sh`); datatrove runs there, in its own process, as
FineWeb ran it (`URLFilter()`, its integrated lists; tldextract on its bundled suffix list, offline).

URL sets:
- real: the 990 pages of trafilatura's evaldata and the WARC records' target URIs of the test data (news, blogs,
  shops, forums in many languages): what a block list must leave alone;
- listed domains: entries of the domain list drawn at random (seeded), as a crawl meets them: the home page
  (`https://www.<domain>/`), a page (`http://<domain>/<path>`) and a subdomain's page (`http://cdn.<domain>/x`;
  UT1's lists are written for squidGuard, where a domain blocks its subdomains);
- listed URLs: entries of the URL list as a crawl meets them: with a scheme (`http://<entry>`), below the entry
  (`https://<entry>/page-2`).

Figures: each set's share dropped, ours beside datatrove's; URLs per second per core after the lists are loaded
(process CPU time, ours in batches of 1,024 as a job runs it, datatrove's `filter` per document), and the list
loading's seconds and memory (resident set growth) beside datatrove's; the whole command's wall clock.

    .venv/bin/python benchmarks/url_filter.py [--sample N] [--speed-urls N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import PROJECT_ROOT, data_or_exit, data_root
from _results import figure, write_results

sys.path.insert(0, str(PROJECT_ROOT))
from curation.stages.url import UrlFilter

VENV = PROJECT_ROOT / "benchmarks" / ".venv-datatrove"
BATCH = 1024

DATATROVE_SIDE = r'''
import json, os, sys, time
import tldextract
from datatrove.data import Document
from datatrove.pipeline.filters import URLFilter

urls = json.load(open(sys.argv[1]))
speed = json.load(open(sys.argv[2]))
f = URLFilter()
f.tldextractor = tldextract.TLDExtract(suffix_list_urls=())  # its bundled suffix list: no network here

def resident():  # bytes, as psutil's rss (not in datatrove's venv)
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

rss = resident()
start, cpu = time.perf_counter(), time.process_time()
f.download_data()  # extracts the archive (once, into HF_HOME) and reads every list into sets
load = {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu,
        "rss_mb": (resident() - rss) / 2**20}

def verdict(url):
    result = f.filter(Document(text="", id="x", metadata={"url": url}))
    return None if result is True else result[1]

out = {name: [verdict(u) for u in group] for name, group in urls.items()}
cpu = time.process_time()
for u in speed:
    f.filter(Document(text="", id="x", metadata={"url": u}))
out["_speed_cpu"] = time.process_time() - cpu
out["_load"] = load
json.dump(out, open(sys.argv[3], "w"))
'''


def assets() -> Path:
    found = sorted(VENV.glob("lib/python3*/site-packages/datatrove/assets"))
    if not found:
        subprocess.run(["bash", str(PROJECT_ROOT / "benchmarks" / "datatrove_env.sh"), str(VENV)], check=True)
        found = sorted(VENV.glob("lib/python3*/site-packages/datatrove/assets"))
    return found[0]


def real_urls() -> list[str]:
    data = data_root()
    urls = list(json.loads((data / "html" / "trafilatura" / "evaldata.json").read_text()))
    for warc in sorted((data / "warc").rglob("*.warc*")):
        try:
            raw = gzip.decompress(warc.read_bytes()) if warc.suffix == ".gz" else warc.read_bytes()
        except (OSError, EOFError):  # the deliberately malformed fixtures
            continue
        urls += [m.decode("utf-8", "replace").strip("<> ") for m in re.findall(rb"WARC-Target-URI: ?(\S+)", raw)]
    return sorted({u for u in urls if u.startswith(("http://", "https://"))})


def listed(archive: Path, sample: int, rng: random.Random) -> dict[str, list[str]]:
    """Domain and URL entries drawn from the archive, as URLs a crawl holds."""
    import tarfile

    with tarfile.open(archive) as tar:
        lists = {m.name.rsplit("/", 1)[-1]: tar.extractfile(m).read().decode("utf-8", "replace").split()
                 for m in tar if m.isfile()}
    domains = rng.sample([d for d in lists["domains"] if not re.fullmatch(r"[\d.]+", d)], sample)
    entries = rng.sample(lists["urls"], min(sample, len(lists["urls"])))
    return {
        "listed domains: home page": [f"https://www.{d}/" for d in domains],
        "listed domains: a page": [f"http://{d}/videos/{i}.html" for i, d in enumerate(domains)],
        "listed domains: a subdomain's page": [f"http://cdn.{d}/x" for d in domains],
        "listed URLs: the entry": [f"http://{u}" for u in entries],
        "listed URLs: a page below it": [f"https://{u.rstrip('/')}/page-2" for u in entries],
    }


def ours(groups: dict[str, list[str]], speed: list[str], lists: Path) -> dict:
    rss = psutil.Process().memory_info().rss
    start, cpu = time.perf_counter(), time.process_time()
    stage = UrlFilter(blocklists=[str(lists / "url_filterblacklistsv0_3_0.tar.gz")],
                      words=[str(lists / "banned_words.txt")], soft_words=[str(lists / "soft_banned_words.txt")],
                      subwords=[str(lists / "banned_subwords.txt")]).ready()
    out: dict = {"_load": {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu,
                           "rss_mb": (psutil.Process().memory_info().rss - rss) / 2**20}}

    def judge(urls: list[str]) -> list[str | None]:
        return stage.process(pa.table({"url": pa.array(urls, pa.string())})).reasons.to_pylist()

    for name, urls in groups.items():
        out[name] = [r for i in range(0, len(urls), BATCH) for r in judge(urls[i:i + BATCH])]
    cpu = time.process_time()
    for i in range(0, len(speed), BATCH):
        judge(speed[i:i + BATCH])
    out["_speed_cpu"] = time.process_time() - cpu
    return out


def theirs(groups: dict[str, list[str]], speed: list[str], work: Path) -> dict:
    python = VENV / "bin" / "python"
    (work / "urls.json").write_text(json.dumps(groups))
    (work / "speed.json").write_text(json.dumps(speed))
    (work / "side.py").write_text(DATATROVE_SIDE)
    env = {**os.environ, "HF_HOME": str(work / "hf"), "LOGURU_LEVEL": "ERROR", "PYTHONWARNINGS": "ignore"}
    subprocess.run([str(python), str(work / "side.py"), str(work / "urls.json"), str(work / "speed.json"),
                    str(work / "out.json")], check=True, env=env)
    return json.loads((work / "out.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=2000, help="entries drawn from each list")
    parser.add_argument("--speed-urls", type=int, default=200_000, help="URLs timed (the sets, repeated)")
    args = parser.parse_args()
    data_or_exit("html/trafilatura/evaldata.json", "warc")
    lists = assets()
    rng = random.Random(42)
    groups = {"real": real_urls(), **listed(lists / "url_filterblacklistsv0_3_0.tar.gz", args.sample, rng)}
    pool = [u for urls in groups.values() for u in urls]
    speed = [pool[i % len(pool)] for i in range(args.speed_urls)]
    with tempfile.TemporaryDirectory(prefix="url-filter-") as tmp:
        a, b = ours(groups, speed, lists), theirs(groups, speed, Path(tmp))
    figures = []
    print(f"lists: datatrove's assets ({lists}); ours | datatrove")
    for name, urls in groups.items():
        n = len(urls)
        dropped_a, dropped_b = sum(r is not None for r in a[name]), sum(r is not None for r in b[name])
        same = sum((x is None) == (y is None) for x, y in zip(a[name], b[name], strict=True))
        why_a, why_b = Counter(r for r in a[name] if r), Counter(r for r in b[name] if r)
        print(f"  {name:36s} {n:5d} URLs  dropped {dropped_a / n:6.1%} | {dropped_b / n:6.1%}   same decision "
              f"{same / n:6.1%}   ({dict(why_a)} | {dict(why_b)})")
        figures.append(figure(f"{name}: URLs dropped ({n})", dropped_a / n, "share", "datatrove URLFilter",
                              dropped_b / n, note=f"same decision {same / n:.1%}; ours {dict(why_a)}; "
                              f"datatrove {dict(why_b)}"))
        differ = [(u, x, y) for u, x, y in zip(urls, a[name], b[name], strict=True) if (x is None) != (y is None)]
        for url, x, y in differ[:5]:
            print(f"      {url[:90]:90s} {x} | {y}")
    rate_a, rate_b = len(speed) / a["_speed_cpu"], len(speed) / b["_speed_cpu"]
    print(f"\n  URLs/s per core (lists loaded; {len(speed):,} URLs): {rate_a:,.0f} | {rate_b:,.0f} "
          f"({rate_a / rate_b:.1f}x)")
    print(f"  loading the lists: {a['_load']['seconds']:.1f} s, +{a['_load']['rss_mb']:.0f} MB | "
          f"{b['_load']['seconds']:.1f} s, +{b['_load']['rss_mb']:.0f} MB")
    figures += [
        figure("URLs/s per core, lists loaded", rate_a, "URLs/s", "datatrove URLFilter", rate_b,
               note=f"process CPU time over {len(speed):,} URLs (the sets repeated); ours in batches of {BATCH}"),
        figure("loading the lists (UT1 adult, datatrove's word lists)", a["_load"]["seconds"], "s",
               "datatrove URLFilter", b["_load"]["seconds"],
               note="wall clock; datatrove's includes extracting its archive to disk, as its first run does"),
        figure("memory the loaded lists take", a["_load"]["rss_mb"], "MB", "datatrove URLFilter",
               b["_load"]["rss_mb"], note="resident set growth while loading"),
    ]
    write_results("url_filter", figures)


if __name__ == "__main__":
    main()
