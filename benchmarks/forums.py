"""Forum threads, curated: how much of their posts extraction keeps, and how many threads the chain keeps.

Users train on forums (a question and its answers is text no article gives), and the line rules were written for
articles: a thread repeats its bylines, signatures, buttons and the posts its replies quote. This measures both
steps on real threads with their posts annotated by hand: the corpus of `fhgr/harvest` (Apache-2.0; Weichselbraun
et al., "Harvest: a reliable and efficient web forum extraction", 2021), 102 threads of 60 forums (phpBB,
vBulletin, XenForo, Discourse, Vanilla and home-made ones; English, German, French, Spanish), each a JSON file of
the page's HTML and its posts. Not shipped: `--harvest DIR` (or `$CURATION_HARVEST`) is the folder
`corpus/goldDocuments` of a checkout of that repository.

1. Extraction: each thread's text as `recipes/web-multilingual.yaml` extracts it (Markdown, `normalize`) against
   the text of its annotated posts, as bags of `\\w+` tokens (lower case): token precision, recall and F1 per
   thread, their means, and the recall of the posts' distinct tokens (the annotated posts hold the quotes of other
   posts, which extraction leaves out where they repeat: that costs bag recall only); beside plain
   `trafilatura.extract` (comments and tables included, as the `extract` stage's defaults) in the same run.
2. The chain: web-multilingual's document stages on each thread page (`zh_en_documents.Chain`): threads kept and
   why the others were dropped; beside FineWeb-2's filters and settings (`multilingual.reference_verdict`, the
   language langid gave the page) on trafilatura's plain text with `favor_precision`, as FineWeb-2 extracts.

Prints the threads whose posts extraction loses most, and the whole command's wall clock.

    .venv/bin/python benchmarks/forums.py --harvest /path/to/harvest/corpus/goldDocuments [--show N]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent))
import multilingual
import zh_en_documents as bench
from _results import code_version, figure, write_results

RECIPE = "web-multilingual"
_TOKEN = re.compile(r"\w+")


@dataclass
class Thread:
    url: str
    html: str
    posts: list[str]


def threads(folder: Path) -> list[Thread]:
    """The annotated threads of harvest's corpus (the annotation is a JSON list, or its Python repr)."""
    found = []
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        gold = record["gold_standard_annotation"]
        gold = ast.literal_eval(gold) if isinstance(gold, str) else gold
        posts = [post["post_text"]["surface_form"] for post in gold if "post_text" in post]
        if posts and record.get("html"):
            found.append(Thread(record["url"], record["html"], posts))
    return found


def token_scores(gold: str, text: str) -> tuple[float, float, float, float]:
    """Precision, recall and F1 of `text`'s tokens against `gold`'s, as bags of lower-case `\\w+` tokens; and the
    recall of `gold`'s distinct tokens (the annotated posts hold their quotes: a repeat left out costs recall in the
    bag, not there)."""
    want, got = Counter(_TOKEN.findall(gold.lower())), Counter(_TOKEN.findall(text.lower()))
    common = sum((want & got).values())
    precision, recall = common / max(sum(got.values()), 1), common / max(sum(want.values()), 1)
    distinct = len(want.keys() & got.keys()) / max(len(want), 1)
    return precision, recall, 2 * precision * recall / (precision + recall) if precision + recall else 0.0, distinct


def plain_trafilatura(html: str, *, precision: bool = False) -> str:
    from trafilatura import extract

    return extract(html, include_comments=True, include_tables=True, favor_precision=precision) or ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harvest", type=Path, default=os.environ.get("CURATION_HARVEST"),
                    help="harvest's corpus/goldDocuments folder")
    ap.add_argument("--show", type=int, default=12, help="threads to print whose posts extraction loses most")
    args = ap.parse_args()
    if args.harvest is None or not Path(args.harvest).is_dir():
        print("harvest's corpus not found (--harvest or $CURATION_HARVEST: corpus/goldDocuments of a checkout of "
              "github.com/fhgr/harvest); nothing to measure")
        return 0
    started = time.time()
    found = threads(Path(args.harvest))
    print(f"forums benchmark at {code_version()}: {len(found)} annotated threads, {RECIPE} as shipped")
    chain = bench.Chain(bench.recipe(RECIPE))
    ids, pages = [t.url for t in found], [t.html.encode() for t in found]
    extracted = chain.judge(pages=pages, source="web", ids=ids, only={"extract", "normalize"})
    verdicts = chain.judge(pages=pages, source="web", ids=ids)

    ours, peer, reference_kept, both = [], [], 0, 0
    for thread, text, verdict in zip(found, extracted, verdicts, strict=True):
        gold = "\n".join(thread.posts)
        ours.append(token_scores(gold, text.row.get("text") or ""))
        peer.append(token_scores(gold, plain_trafilatura(thread.html)))
        lang = verdict.row.get("lang") or "en"
        settings = multilingual.reference_settings(lang)
        kept_by_reference = settings is None or multilingual.reference_verdict(
            plain_trafilatura(thread.html, precision=True), lang, settings) is None
        reference_kept += kept_by_reference
        both += kept_by_reference and verdict.kept

    def means(scores: list[tuple[float, ...]]) -> tuple[float, ...]:
        return tuple(mean(s[k] for s in scores) for k in range(4))

    print("\n1. Extraction: the annotated posts' tokens in the extracted text (mean over threads)")
    print(f"  {'':34s} {'precision':>9s} {'recall':>7s} {'F1':>6s} {'distinct-token recall':>22s}")
    for name, scores in ((f"{RECIPE}'s extraction", ours), ("plain trafilatura", peer)):
        p, r, f, d = means(scores)
        print(f"  {name:34s} {p:9.3f} {r:7.3f} {f:6.3f} {d:22.3f}")
    worst = sorted(range(len(found)), key=lambda i: ours[i][1])[:args.show]
    print("  threads whose posts are lost most (recall ours / trafilatura, kept by the chain or why not):")
    for i in worst:
        fate = "kept" if verdicts[i].kept else verdicts[i].why
        print(f"    {ours[i][1]:.2f} / {peer[i][1]:.2f}  {found[i].url[:80]}  {fate[:70]}")

    kept = sum(v.kept for v in verdicts)
    reasons = Counter(f"{v.stage}:{v.reason}" for v in verdicts if not v.kept)
    print(f"\n2. The chain: threads kept {kept}/{len(found)}; FineWeb-2's filters and settings on trafilatura's "
          f"precise text {reference_kept}/{len(found)}; kept by both {both}")
    print("  why ours dropped threads: " + ", ".join(f"{k} {n}" for k, n in reasons.most_common()))
    print(f"\n{time.time() - started:.0f} s wall, the whole command")
    p_ours, r_ours, f_ours, d_ours = means(ours)
    p_peer, r_peer, f_peer, d_peer = means(peer)
    write_results("forums", [
        figure("forum threads: annotated posts' token recall of the extracted text", r_ours, "recall",
               "plain trafilatura", r_peer, note=f"precision {p_ours:.3f} (trafilatura {p_peer:.3f})"),
        figure("forum threads: token F1 against the annotated posts", f_ours, "F1", "plain trafilatura", f_peer),
        figure("forum threads: the annotated posts' distinct tokens in the extracted text", d_ours, "recall",
               "plain trafilatura", d_peer),
        figure(f"forum threads kept by {RECIPE}", kept / len(found), "share",
               "FineWeb-2's filters and settings", reference_kept / len(found), note=f"kept by both {both}"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
