"""Near-duplicate files across repositories with recipes/code.yaml's dedup settings, on real vendored code.

pip vendors requests (`pip/_vendor/requests/`): the same modules as the installed `requests`, some
identical, some edited. recipes/code.yaml's corpus stages must fold each pair at or above its
threshold into one survivor and leave the pairs well below it, as the single-process reference of
the stages the Ray plan runs (`tests/test_code_run.py` runs them through Ray). No Ray.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pyarrow as pa

from curation.dedup.exact_dedup import ExactDedup
from curation.dedup.minhash import exact_jaccard
from curation.dedup.minhash_dedup import MinhashDedup
from curation.recipe import parse_recipe
from tests.conftest import ROOT

SITE = Path(sysconfig.get_paths()["purelib"])


def test_vendored_copies_are_near_duplicates_of_the_originals():
    recipe = parse_recipe((ROOT / "recipes" / "code.yaml").read_text(), check_paths=False)
    params = {kind: p for _, kind, p in recipe.stage_specs()}
    minhash = MinhashDedup.from_params(params["minhash_dedup"])
    assert isinstance(ExactDedup.from_params(params["exact_dedup"]), ExactDedup)
    pairs = [(v, SITE / "requests" / v.name) for v in sorted((SITE / "pip" / "_vendor" / "requests").glob("*.py"))
             if (SITE / "requests" / v.name).exists()]
    assert len(pairs) >= 10
    ids = [f"pip:{v.name}" for v, _ in pairs] + [f"requests:{o.name}" for _, o in pairs]
    texts = [v.read_text(encoding="utf-8") for v, _ in pairs] + [o.read_text(encoding="utf-8") for _, o in pairs]
    similarity = exact_jaccard(pa.array(texts[: len(pairs)]), pa.array(texts[len(pairs):]), ngram=5, unit="word")
    removed = minhash.reference(pa.table({"id": ids, "text": texts}))
    survivors_of = dict(zip(removed.column("id").to_pylist(), removed.column("detail").to_pylist(), strict=True))
    threshold = minhash.params.threshold
    for (vendored, original), jaccard in zip(pairs, similarity, strict=True):
        a, b = f"pip:{vendored.name}", f"requests:{original.name}"
        if jaccard >= threshold + 0.03:  # clear near duplicates: exactly one of the two goes
            assert (a in survivors_of) != (b in survivors_of), (vendored.name, jaccard)
        elif jaccard < threshold - 0.1:  # clearly different versions of a module stay both
            assert a not in survivors_of and b not in survivors_of, (vendored.name, jaccard)
    assert sum(j >= threshold + 0.03 for j in similarity) >= 10
    assert all(d.startswith("kept ") for d in survivors_of.values())
