"""Simplified and Traditional Chinese told apart (`lang_script`), kept by script and converted, on real pages."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import opencc
import pytest
from pydantic import ValidationError

from curation import schema
from curation.apply import run_stage
from curation.lang.han_script import HANS, HANT, han_scripts, to_simplified
from curation.stages.langid import LangId
from tests.stages.test_langid import ENGLISH, batch_of

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def simplified(testdata: Path) -> str:
    """A real article from a mainland news site (newspaper's test page), in Simplified characters."""
    return (testdata / "html/newspaper/chinese.expected.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def traditional(testdata: Path) -> str:
    """A real Taiwanese blog post (readability's `pixnet` page, `lang="zh-TW"`), in Traditional characters."""
    html = gzip.decompress((testdata / "html/readability/pages/pixnet/expected.html.gz").read_bytes()).decode()
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_real_simplified_and_traditional_pages_are_told_apart(simplified: str, traditional: str):
    assert han_scripts([simplified, traditional]) == [HANS, HANT]
    # each converted by OpenCC itself into the other script
    assert han_scripts([opencc.OpenCC("s2t").convert(simplified), opencc.OpenCC("t2s").convert(traditional)]) == [
        HANT, HANS]
    # characters both scripts write (中文, 人口, 日本) are either: `Hani`
    assert han_scripts(["中文", "人口", "日本", "", "abc"]) == ["Hani"] * 5


def test_langid_labels_the_script_of_chinese_and_serbian(simplified: str, traditional: str):
    latin = (HERE / "udhr_sr_latn.txt").read_text(encoding="utf-8").split("\n\n")[0]
    out = run_stage(LangId(min_score=0.0), batch_of([simplified, traditional, "中文", ENGLISH, latin])).to_pylist()
    assert [(r["lang"], r["lang_script"]) for r in out] == [
        ("zh", "Hans"), ("zh", "Hant"), ("zh", "Hani"), ("en", None), ("sr", "Latn")]


def test_keep_by_script(simplified: str, traditional: str):
    batch = batch_of([simplified, traditional, "中文", ENGLISH])
    hans = run_stage(LangId(keep=["zh-Hans", "en"], min_score=0.0), batch).to_pylist()
    assert [r[schema.REASON] for r in hans] == [None, "lang_not_kept", None, None]
    assert hans[1][schema.DETAIL].startswith("zh-Hant ")
    hant = run_stage(LangId(keep=["zh_TW"], min_score=0.0), batch).to_pylist()  # a region implies its script
    assert [r[schema.REASON] for r in hant] == ["lang_not_kept", None, None, "lang_not_kept"]
    both = run_stage(LangId(keep=["zh"], min_score=0.0), batch).to_pylist()
    assert [r[schema.REASON] for r in both] == [None, None, None, "lang_not_kept"]
    also = run_stage(LangId(keep=["zh-Hant", "zh"], min_score=0.0), batch).to_pylist()  # zh: every script
    assert [r[schema.REASON] for r in also] == [None, None, None, "lang_not_kept"]


def test_per_script_counts(simplified: str, traditional: str):
    """What stats.json's `counts` of the stage sums: the documents per label with a script."""
    out = run_stage(LangId(min_score=0.0), batch_of([simplified, traditional, traditional, "中文", ENGLISH]))
    counts = {key: sum(out.column(schema.count_column("langid", key)).to_pylist())
              for key in LangId(min_score=0.0).count_keys}
    assert counts == {"zh-Hans": 1, "zh-Hant": 2, "zh-Hani": 1}
    serbian = LangId(keep=["sr", "zh-Hans"], to_simplified="t2s").count_keys
    assert serbian == ("sr-Cyrl", "sr-Latn", "zh-Hans", "zh-Hant", "zh-Hani", "to_simplified")
    assert LangId(keep=["en"]).count_keys == ()


def test_traditional_converted_to_simplified_and_kept_as_such(simplified: str, traditional: str):
    stage = LangId(keep=["zh-Hans"], min_score=0.0, to_simplified="t2s")
    out = run_stage(stage, batch_of([simplified, traditional, ENGLISH]))
    rows = out.to_pylist()
    assert [r[schema.REASON] for r in rows] == [None, None, "lang_not_kept"]
    assert rows[0]["text"] == simplified  # Simplified text is left as it is
    assert rows[1]["text"] == opencc.OpenCC("t2s").convert(traditional) != traditional
    assert rows[1]["text"].startswith("一波波 接续性 低温寒流报到 已将新竹尖石乡后山")
    assert [r["lang_script"] for r in rows[:2]] == [HANS, HANS]
    assert han_scripts([rows[1]["text"]]) == [HANS]
    assert out.column(schema.count_column("langid", "to_simplified")).to_pylist() == [0, 1, 0]
    assert out.column(schema.count_column("langid", "zh-Hant")).to_pylist() == [0, 1, 0]  # as it was labelled


def test_a_dropped_traditional_document_keeps_its_own_text(traditional: str):
    out = run_stage(LangId(keep=["zh-Hans"], min_score=0.99999, to_simplified="t2s"), batch_of([traditional]))
    row = out.to_pylist()[0]
    assert row[schema.REASON] == "low_lang_score" and row["text"] == traditional  # rejects/ show what was read
    assert row["lang_script"] == HANT and row[schema.DETAIL].startswith("zh-Hant ")  # as that text was judged
    assert row[schema.count_column("langid", "to_simplified")] == 0


def test_taiwan_phrases_convert_with_tw2sp():
    assert to_simplified(["軟體和滑鼠"], "tw2sp") == ["软件和鼠标"]  # Taiwan's words, not only its characters
    assert to_simplified(["軟體和滑鼠"]) == ["软体和滑鼠"]


def test_to_simplified_without_chinese_to_keep_is_refused():
    with pytest.raises(ValidationError, match="`to_simplified` converts Chinese documents"):
        LangId(keep=["en"], to_simplified="t2s")
    with pytest.raises(ValidationError, match="keeps Traditional only"):
        LangId(keep=["zh-TW", "en"], to_simplified="t2s")  # would convert, then drop, every Traditional document
    with pytest.raises(ValidationError, match="to_simplified"):
        LangId(to_simplified="s2t")  # not a conversion to Simplified
    assert LangId(to_simplified="t2s").params.keep is None


def test_cyrillic_and_latin_serbian_kept_by_script(testdata: Path):
    cyrillic = " ".join((testdata / "langid/sentences/sr.txt").read_text(encoding="utf-8").splitlines()[:12])
    latin = (HERE / "udhr_sr_latn.txt").read_text(encoding="utf-8").split("\n\n")[0]
    out = run_stage(LangId(keep=["sr-Latn"], min_score=0.0), batch_of([cyrillic, latin])).to_pylist()
    assert [(r["lang"], r["lang_script"], r[schema.REASON]) for r in out] == [
        ("sr", "Cyrl", "lang_not_kept"), ("sr", "Latn", None)]
    assert np.all([r[schema.DETAIL] is None or r[schema.DETAIL].startswith("sr-Cyrl") for r in out])


def test_a_job_counts_scripts_in_stats_and_its_summary(simplified: str, traditional: str, tmp_path: Path):
    import io
    import json

    import pyarrow.parquet as pq
    from rich.console import Console

    from curation.recipe import parse_recipe
    from pipelines.console import summary
    from pipelines.run import run

    notes = tmp_path / "zh.jsonl"
    texts = [simplified, traditional, traditional[:400], ENGLISH]
    notes.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    recipe = parse_recipe(f"""\
name: zh-scripts
executor: local
local: {{workers: 1}}
sources: [{{name: notes, format: jsonl, paths: ["{notes}"]}}]
stages:
  - langid: {{keep: [zh-CN, en], min_score: 0.3, to_simplified: t2s}}
""")
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    stats = json.loads(Path(result.job_dir, "stats.json").read_text())
    langid = next(row for row in stats["stages"] if row["stage"] == "langid")
    assert langid["counts"] == {"zh-Hans": 1, "zh-Hant": 2, "zh-Hani": 0, "to_simplified": 2}
    assert langid["docs_out"] == 4
    documents = pq.read_table(Path(result.job_dir, "documents")).to_pylist()
    assert sorted(str(d["lang_script"]) for d in documents) == ["Hans", "Hans", "Hans", "None"]
    assert {d["text"] for d in documents} == {simplified, ENGLISH, *to_simplified([traditional, traditional[:400]])}
    out = io.StringIO()
    summary(stats, result.job_dir, Console(file=out, width=200))
    assert "langid counts: to_simplified 2, zh-Hans 1, zh-Hant 2" in out.getvalue()


def test_the_shipped_japanese_and_simplified_forms_are_opencc_s():
    """`han_forms.json` is what `make_han_forms.py` derives from the installed OpenCC tables: Japanese's 経, 駅, 図 and
    not the characters Chinese writes too (国, 学), Taiwan's forms (為, 衛) or OpenCC's old variants' (研, 概)."""
    from curation.lang.han_script import _forms, derive_forms

    japanese, simplified = _forms()
    assert (japanese, simplified) == derive_forms()
    assert all(c in japanese for c in "経駅図済") and not any(c in japanese for c in "国学為衛研概沪")
    assert all(c in simplified for c in "东观们这") and not any(c in simplified for c in "国学")
