"""Write the real web pages of the third-party test data as WARC files, the input of the language recipes.

`recipes/web-zh-en.yaml` and `recipes/web-multilingual.yaml` run on real pages: those of the test data
in `../shared/data` (or `$CURATION_TESTDATA`; its README lists them: trafilatura's and mozilla
readability's test pages, Apache-2.0, newspaper's, MIT; 1,168 pages, many languages, mostly German).
They are loose HTML files, which no reader of a recipe takes, so this script wraps each one in a WARC
response record (under its original URL where the test data gives one) and writes them to
`build/samples/pages/`, which git ignores: the project does not ship third-party text.

- `zh.warc.gz`: the Chinese pages (`is_chinese`: 9 pages, from Xinhua, Guangming, QQ, Baidu Baike,
  Pixnet...);
- `pages-NN.warc.gz`: every other page, in `SHARDS` files.

Deterministic: the same test data gives byte-identical files.

    python recipes/sample/make_pages.py [--data DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from make_sample import http_response, warc_record  # noqa: E402

OUT = ROOT / "build" / "samples" / "pages"
SHARDS = 4
MIN_HAN = 300
KANA_SHARE_FOR_JAPANESE = 0.05
_CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9_-]+)""", re.I)


def data_root() -> Path:
    return Path(os.environ.get("CURATION_TESTDATA", ROOT.parent / "shared" / "data"))


def pages(root: Path) -> list[tuple[str, bytes]]:
    """(url, html) of every page of the test data, in a fixed order."""
    html = root / "html"
    urls = {entry["file"]: url for url, entry in
            json.loads((html / "trafilatura" / "evaldata.json").read_text(encoding="utf-8")).items()}
    found: list[tuple[str, Path]] = []
    for folder in ("cache", "eval"):
        for path in sorted((html / "trafilatura" / folder).glob("*.html.gz")):
            name = path.name.removesuffix(".gz")
            found.append((urls.get(name) or urls.get(path.name) or f"https://trafilatura.test/{folder}/{name}", path))
    for path in sorted((html / "readability" / "pages").glob("*/source.html.gz")):
        found.append((f"https://readability.test/{path.parent.name}/", path))
    for path in sorted((html / "newspaper").glob("*.html.gz")):
        found.append((f"https://newspaper.test/{path.name.removesuffix('.html.gz')}", path))
    return [(url, gzip.decompress(path.read_bytes())) for url, path in found]


def is_chinese(html: bytes) -> bool:
    """Whether a page is written in Chinese: at least `MIN_HAN` Han characters, few kana (Japanese) and
    fewer Hangul (Korean) beside them. Counted on the page's UTF-8 bytes (markup is ASCII): a Han character
    of the main block starts with a byte E4-E9, kana with E3 81-83, a Hangul syllable with EA-ED."""
    declared = _CHARSET.search(html[:4096])
    charset = declared.group(1).decode().lower() if declared else "utf-8"
    if charset not in ("utf-8", "utf8"):
        with contextlib.suppress(LookupError):  # an unknown charset: read as UTF-8
            html = html.decode(charset, errors="replace").encode("utf-8")
    han = sum(html.count(bytes([lead])) for lead in range(0xE4, 0xEA))
    kana = sum(html.count(bytes([0xE3, second])) for second in (0x81, 0x82, 0x83))
    hangul = sum(html.count(bytes([lead])) for lead in range(0xEA, 0xEE))
    return han >= MIN_HAN and kana < KANA_SHARE_FOR_JAPANESE * han and hangul < han


def write(root: Path, out: Path, only_chinese: bool = False) -> dict[str, int]:
    """Write the WARC files (only `zh.warc.gz` with `only_chinese`); return how many pages each holds."""
    out.mkdir(parents=True, exist_ok=True)
    chinese: list[bytes] = []
    others: list[list[bytes]] = [[] for _ in range(SHARDS)]
    for k, (url, html) in enumerate(pages(root)):
        if is_chinese(html):
            chinese.append(warc_record("response", url, http_response(html, "text/html")))
        elif not only_chinese:
            others[k % SHARDS].append(warc_record("response", url, http_response(html, "text/html")))
    files = {"zh.warc.gz": chinese}
    if not only_chinese:
        files |= {f"pages-{k:02d}.warc.gz": records for k, records in enumerate(others)}
    for name, records in files.items():
        tmp = out / f"{name}.tmp"
        tmp.write_bytes(b"".join(records))
        tmp.replace(out / name)
    return {name: len(records) for name, records in files.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=data_root(), help="the test data folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if not (args.data / "html").is_dir():
        print(f"no test data at {args.data} (set CURATION_TESTDATA or --data)", file=sys.stderr)
        return 1
    for name, count in write(args.data, args.out).items():
        print(f"{args.out / name}: {count} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
