"""`curate calibrate` (curation.lang.calibrate) and the language settings files recipes read
(`language_settings:`, curation.lang.settings_file).

Reference text: real German and Chinese sentences (`langid/sentences`, the Leipzig corpora), as documents of 12
consecutive sentences starting at every sentence, labelled by the langid stage in a real run (`curate run`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from curation.apply import run_stage
from curation.job import document_files
from curation.lang.calibrate import read_reference
from curation.recipe import RecipeError, load_recipe, parse_recipe
from curation.schema import REASON, documents_table
from curation.stages.gopher import GopherQuality
from curation.stages.langid import LangId
from curation.stages.registry import DOCUMENT_STAGES
from pipelines.cli import main

LANGS = ("de", "zh")
WINDOW = 12
CHAIN = """\
name: chain
sources: [{{name: ref, format: jsonl, paths: ["ref.jsonl"]}}]
{settings}
stages:
  - langid: {{keep: [de, zh]}}
  - gopher_repetition: {{}}
  - gopher_quality: {{}}
  - fineweb: {{}}
"""


def windows(testdata: Path, lang: str) -> list[str]:
    lines = [s.strip() for s in (testdata / "langid" / "sentences" / f"{lang}.txt").read_text("utf-8").splitlines()]
    lines = [s for s in lines if s]
    return ["\n".join(lines[i:i + WINDOW]) for i in range(len(lines) - WINDOW + 1)]


@pytest.fixture(scope="module")
def job(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A job folder whose documents are the reference text with the langid stage's `lang` and `lang_score`."""
    root = tmp_path_factory.mktemp("reference")
    rows = [{"text": text} for lang in LANGS for text in windows(testdata, lang)]
    (root / "ref.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    recipe = root / "recipe.yaml"
    recipe.write_text(f"""\
name: reference
output: {root}/jobs
executor: local
local: {{workers: 1}}
sources: [{{name: ref, format: jsonl, paths: ["{root}/ref.jsonl"]}}]
stages:
  - langid: {{min_score: 0}}
""")
    assert main(["run", str(recipe), "--quiet"]) == 0
    return Path(load_recipe(recipe).job_dir())


def documents(job: Path) -> pa.Table:
    return pa.concat_tables(pq.read_table(uri, columns=["text", "lang", "lang_score"])
                            for uri in document_files(job).values())


def kept_by_chain(recipe_text: str, docs: pa.Table) -> dict[str, float]:
    """The share of each language's documents the recipe's stages keep, each stage as the recipe builds it."""
    recipe = parse_recipe(recipe_text, check_paths=False)
    table = documents_table(docs.column("text").to_pylist())
    table = table.append_column("lang", docs.column("lang")).append_column("lang_score", docs.column("lang_score"))
    alive = np.ones(table.num_rows, bool)
    for _, kind, params in recipe.stage_specs():
        stage = DOCUMENT_STAGES[kind].from_params(params).ready()
        if isinstance(stage, LangId):  # its labels are the documents' own (the run above): judge them again
            mask, _ = stage.keep({"lang": np.array(docs.column("lang").to_pylist(), dtype=object),
                                  "lang_score": docs.column("lang_score").to_numpy()})
        else:
            mask = run_stage(stage, table).column(REASON).is_null().to_numpy(zero_copy_only=False)
        alive &= mask
    langs = np.array(docs.column("lang").to_pylist())
    return {lang: float(alive[langs == lang].mean()) for lang in LANGS}


def test_calibration_keeps_the_chosen_share_of_the_reference_when_the_stages_run_with_it(job, tmp_path, capsys):
    settings = tmp_path / "settings.yaml"
    assert main(["calibrate", str(job), "--out", str(settings), "--keep", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "de: 89 documents" in out and "zh: 89 documents" in out and "gopher_quality.max_avg_word_length" in out
    written = yaml.safe_load(settings.read_text("utf-8"))
    assert set(written["stages"]["langid"]["min_score"]) == set(LANGS)  # the documents carry langid's scores
    zh = written["stages"]["gopher_quality"]["languages"]["zh"]
    assert 1 < zh["min_avg_word_length"] < zh["max_avg_word_length"] < 5  # segmented words, tighter than shipped
    assert "stop_words" not in zh and "stop_words" not in written["stages"]["gopher_quality"]["languages"]["de"]
    docs = documents(job)
    assert sorted(set(docs.column("lang").to_pylist())) == list(LANGS)

    shipped = kept_by_chain(CHAIN.format(settings=""), docs)
    calibrated = kept_by_chain(CHAIN.format(settings=f"language_settings: {settings}"), docs)
    assert shipped == {"de": 1.0, "zh": 1.0}  # clean text: the shipped settings keep it all
    for lang in LANGS:  # measured: at least the chosen share, and about it (89 documents, 14 bounds each)
        assert 0.9 <= calibrated[lang] <= 0.97, calibrated
        measured = written["calibration"]["languages"][lang]
        assert measured["kept_after"] == pytest.approx(calibrated[lang], abs=1e-4)
        assert measured["kept_by_bounds"] >= 0.9


def test_jsonl_with_a_language_given(testdata, tmp_path):
    path = tmp_path / "de.jsonl"
    path.write_text("".join(json.dumps({"body": t}, ensure_ascii=False) + "\n" for t in windows(testdata, "de")))
    reference = read_reference([str(path)], text_field="body", lang="de")
    assert len(reference.text) == 89 and set(reference.lang) == {"de"} and set(reference.lang_score) == {None}
    out = tmp_path / "s.yaml"
    assert main(["calibrate", str(path), "--text-field", "body", "--lang", "en", "--out", str(out)]) == 1
    assert not out.exists()  # English is the stages' own params: nothing to write


def test_the_share_of_characters_in_repeated_lines_is_calibrated(testdata, tmp_path):
    # A third of the reference repeats its first two sentences at its end: ~14% of its characters are in
    # repeated lines, over German's shipped 0.1 (fineweb's char_dup_ratio), so the shipped settings drop them.
    docs = [t + "\n" + "\n".join(t.split("\n")[:2]) if i % 3 == 0 else t for i, t in enumerate(windows(testdata, "de"))]
    path = tmp_path / "de.jsonl"
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in docs), "utf-8")
    out = tmp_path / "s.yaml"
    assert main(["calibrate", str(path), "--lang", "de", "--keep", "0.95", "--out", str(out)]) == 0
    written = yaml.safe_load(out.read_text("utf-8"))
    assert 0.1 < written["stages"]["fineweb"]["languages"]["de"]["char_dup_ratio"] < 0.25
    measured = written["calibration"]["languages"]["de"]
    # after: all but a few, which Gopher's share of characters in repeated lines (0.2, not per language) drops
    assert measured["kept_before"] < 0.7 and measured["kept_after"] > 0.9


def test_stop_words_are_written_from_the_reference_where_the_shipped_list_fails_it(testdata, tmp_path, capsys):
    # Shona in three-sentence documents: FineWeb-2's list finds two stop words in under a third of them
    lines = [s for s in (testdata / "langid" / "sentences" / "sn.txt").read_text("utf-8").splitlines() if s.strip()]
    docs = ["\n".join(lines[i:i + 3]) for i in range(len(lines) - 2)]
    path = tmp_path / "sn.jsonl"
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in docs), "utf-8")
    out = tmp_path / "s.yaml"
    assert main(["calibrate", str(path), "--lang", "sn", "--keep", "0.9", "--out", str(out)]) == 0
    assert "gopher_quality.stop_words" in capsys.readouterr().out
    written = yaml.safe_load(out.read_text("utf-8"))
    stop_words = written["stages"]["gopher_quality"]["languages"]["sn"]["stop_words"]
    assert 8 <= len(stop_words) <= 64 and "uye" in stop_words  # "and"
    table = pa.table({"text": pa.array(docs, pa.large_string()), "lang": pa.array(["sn"] * len(docs))})
    under_two = {name: float(np.mean(stage.score(table)["gopher_stop_words"] < 2)) for name, stage in (
        ("shipped", GopherQuality()), ("written", GopherQuality(languages={"sn": {"stop_words": stop_words}})))}
    assert under_two["shipped"] > 0.6 and under_two["written"] <= 1 - 0.9, under_two  # keep: 0.9


SETTINGS = """\
stages:
  gopher_quality:
    languages:
      de: {min_avg_word_length: 3.5, max_avg_word_length: 9}
      zh: {max_avg_word_length: 4}
  langid:
    min_score: {de: 0.8}
"""


def test_a_recipe_merges_the_file_under_its_own_entries_and_holds_the_settings_not_the_path(tmp_path):
    (tmp_path / "settings.yaml").write_text(SETTINGS)
    text = CHAIN.format(settings=f"language_settings: {tmp_path / 'settings.yaml'}").replace(
        "langid: {keep: [de, zh]}", "langid: {keep: [de, zh], min_score: 0.5}").replace(
        "gopher_quality: {}", "gopher_quality: {languages: {de: {max_avg_word_length: 12}}}")
    recipe = parse_recipe(text, check_paths=False)
    params = {kind: p for _, kind, p in recipe.stage_specs()}
    assert params["gopher_quality"].languages == {"de": {"min_avg_word_length": 3.5, "max_avg_word_length": 12},
                                                  "zh": {"max_avg_word_length": 4}}
    assert params["langid"].min_score == {"de": 0.8, "*": 0.5}  # the recipe's number: every language not named
    assert params["fineweb"].languages == {}
    inline = CHAIN.format(settings="").replace(
        "langid: {keep: [de, zh]}", "langid: {keep: [de, zh], min_score: {de: 0.8, '*': 0.5}}").replace(
        "gopher_quality: {}", "gopher_quality: {languages: {de: {min_avg_word_length: 3.5, max_avg_word_length: 12}, "
        "zh: {max_avg_word_length: 4}}}")
    assert recipe.fingerprint() == parse_recipe(inline, check_paths=False).fingerprint()
    assert "language_settings" not in recipe.model_dump()  # recipe.yaml of the job: the settings themselves


@pytest.mark.parametrize(("body", "line", "expected"), [
    (SETTINGS.replace("min_avg_word_length: 3.5", "min_avg_wordlength: 3.5"), 4,
     "stages.gopher_quality.languages.de: unknown setting(s) ['min_avg_wordlength']"),
    (SETTINGS.replace("  langid:", "  gopher_quality_2: {}\n  langid:"), 6, "stages.gopher_quality_2: unknown key"),
    (SETTINGS + "  fineweb: {max_new_line_ratio: 0.2}\n", 8,
     "stages.fineweb.max_new_line_ratio: a language settings file sets per-language settings only (`languages` "
     "here); put `max_new_line_ratio` in the recipe"),
    (SETTINGS.replace("{de: 0.8}", "{de: 1.8}"), 7, "stages.langid.min_score"),
    ("stages: [\n", 2, "not valid YAML"),
])
def test_a_bad_settings_file_is_an_error_at_its_line(tmp_path, body, line, expected):
    path = tmp_path / "settings.yaml"
    path.write_text(body)
    with pytest.raises(RecipeError) as error:
        parse_recipe(CHAIN.format(settings=f"language_settings: {path}"), check_paths=False)
    assert str(error.value).startswith(f"{path}:{line}:") and expected in str(error.value), str(error.value)


def test_a_settings_file_that_cannot_be_read_is_an_error_at_the_recipe_key(tmp_path):
    text = CHAIN.format(settings=f"language_settings: {tmp_path / 'missing.yaml'}")
    with pytest.raises(RecipeError, match=r"^<recipe>:3:\d+: language_settings: cannot read the language settings "
                       r"file .*missing.yaml'"):
        parse_recipe(text, check_paths=False)


_LATIN = dict(zip("абвгдђежзијклљмнњопрстћуфхцчџш", ["a", "b", "v", "g", "d", "đ", "e", "ž", "z", "i", "j", "k", "l",
                                                  "lj", "m", "n", "nj", "o", "p", "r", "s", "t", "ć", "u", "f", "h",
                                                  "c", "č", "dž", "š"], strict=True))


def latin_serbian(text: str) -> str:
    return "".join(_LATIN.get(c, _LATIN.get(c.lower(), c).capitalize() if c.lower() in _LATIN else c) for c in text)


def test_a_language_with_settings_per_script_is_calibrated_per_script(testdata, tmp_path, capsys):
    """`--lang sr-Latn` lost its script: the summary's shipped bounds were Cyrillic Serbian's, and the file wrote
    Latin Serbian's bounds under `sr`, by which every Cyrillic document was then judged (and dropped)."""
    cyrillic = windows(testdata, "sr")
    path = tmp_path / "sr.jsonl"
    path.write_text("".join(json.dumps({"text": latin_serbian(t)}, ensure_ascii=False) + "\n" for t in cyrillic))
    out = tmp_path / "s.yaml"
    assert main(["calibrate", str(path), "--lang", "sr-Latn", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "sr-Latn: " in printed and "warning" not in printed
    written = yaml.safe_load(out.read_text("utf-8"))
    assert set(written["stages"]["gopher_repetition"]["languages"]) == {"sr-Latn"}
    before = next(line for line in printed.splitlines() if "top_n_grams[2]" in line).split()[1]
    assert float(before) == 0.189  # FineWeb-2's srp_Latn, not srp_Cyrl's 0.176
    recipe = parse_recipe(f"name: r\nlanguage_settings: {out}\nsources: [{{name: s, format: jsonl, paths: [a.jsonl]}}]"
                          "\nstages: [{gopher_repetition: {}}]\n", check_paths=False)
    params = {kind: p for _, kind, p in recipe.stage_specs()}
    assert set(params["gopher_repetition"].languages) == {"sr-Latn"}
    # the documents' own script where `--lang` names none
    assert set(read_reference([str(path)], lang="sr").lang) == {"sr-Latn"}


def test_a_reference_in_another_language_or_too_small_is_said_so(testdata, tmp_path, capsys):
    path = tmp_path / "kk.jsonl"
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in windows(testdata, "kk")[:20]))
    out = str(tmp_path / "s.yaml")
    assert main(["calibrate", str(path), "--lang", "sr", "--min-documents", "10", "--out", out]) == 0
    printed = capsys.readouterr().out
    assert "warning: langid labels 20 of 20 of these documents otherwise (kk 20): is `--lang sr-Cyrl` their" in printed
    assert "warning: 20 documents, fewer than 50" in printed
