"""Language codes as recipes write them: one reading in every stage that takes languages (curation.lang.codes)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError

from curation.lang.codes import chinese_alone, language_code, language_tag
from curation.recipe import RecipeError, parse_recipe
from curation.stages.gopher import GopherQuality
from curation.stages.html_langid import HtmlLangId
from curation.stages.langid import LangId, bundled_outputs
from curation.stages.languages import document_languages
from curation.stages.toxicity import Toxicity

SPELLINGS = {
    # ISO 639-1, any case and spacing
    "zh": "zh", " ZH ": "zh", "de": "de",
    # ISO 639-2/B and /T, ISO 639-3 individual languages lid.176 labels by their macrolanguage
    "chi": "zh", "zho": "zh", "cmn": "zh", "ger": "de", "deu": "de", "fre": "fr", "fra": "fr", "arb": "ar",
    "zsm": "ms", "nob": "nb", "nno": "nn", "tgl": "tl", "fil": "tl",
    # deprecated codes
    "iw": "he", "in": "id", "ji": "yi",
    # BCP-47 with region and script subtags, `-` or `_`, any case; a Chinese region implies its script
    "zh-CN": "zh-Hans", "zh_cn": "zh-Hans", "zh-SG": "zh-Hans", "zh-TW": "zh-Hant", "zh_TW": "zh-Hant",
    "ZH-hk": "zh-Hant", "zh-MO": "zh-Hant", "zh-Hans": "zh-Hans", "zh-Hant": "zh-Hant", "zh-Hant-TW": "zh-Hant",
    "zh-Hans-HK": "zh-Hans", "cmn-Hant": "zh-Hant", "cmn_Hani": "zh", "zh-cmn-Hans": "zh-Hans",
    "zh-CHS": "zh-Hans", "zh_CHT": "zh-Hant",  # .NET's old names
    "en-US": "en", "en_GB": "en", "pt-BR": "pt", "en-Latn": "en", "ja-Jpan": "ja",
    "sr-Latn": "sr-Latn", "sr-Cyrl-RS": "sr-Cyrl", "sr-RS": "sr",  # Serbia writes both: a region says no script
    # lid.176's own spellings, which langcodes alone would rewrite
    "sh": "sh", "tl": "tl", "bh": "bh", "yue": "yue", "wuu": "wuu", "no": "no", "unknown": "unknown",
}


@pytest.mark.parametrize(("raw", "expected"), SPELLINGS.items())
def test_spellings_read_as_langid_labels(raw: str, expected: str):
    assert str(language_tag(raw)) == expected
    assert language_code(raw) == expected.partition("-")[0]


def test_every_code_the_bundled_model_outputs_reads_as_itself():
    """A recipe may always write a label as `lang` holds it (lid.176's `sh`, `bh`, `tl`, lingua's `zu`...)."""
    outputs = bundled_outputs(second_opinion=True)
    assert {c for c in outputs if language_code(c) != c} == set()


@pytest.mark.parametrize(("raw", "hint"), [
    ("chinese", "did you mean zh?"), ("Mandarin", "did you mean zh?"), ("english", "did you mean en?"),
    ("cn", "did you mean zh-Hans (CN is a country code)?"), ("hk", "did you mean zh-Hant (HK is a country code)?"),
    ("jp", "did you mean ja (JP is a country code)?"),
    ("zhs", "did you mean zh (zh-Hans, zh-Hant for one script)?"), ("chs", "did you mean zh (zh-Hans, zh-Hant"),
    ("Hant", "did you mean zh (zh-Hans, zh-Hant"), ("zhongwen", "did you mean zh (zh-Hans, zh-Hant"),
])
def test_no_language_is_refused_with_the_code_meant(raw: str, hint: str):
    with pytest.raises(ValueError, match="is no language code") as err:
        language_tag(raw)
    assert hint in str(err.value)


@pytest.mark.parametrize(("raw", "why"), [
    ("xq", "is no language code"), ("", "is no language code"), ("x-foo", "is no language code"),
    ("123", "is no language code"), ("zh-Latn", "zh is labelled zh-Hans or zh-Hant, never zh-Latn"),
    ("en-Cyrl", "labels name en without a script"), ("sr-Arab", "sr is labelled sr-Cyrl or sr-Latn"),
])
def test_codes_no_label_can_match_are_refused(raw: str, why: str):
    with pytest.raises(ValueError, match=why):
        language_tag(raw)


def test_hindi_in_latin_letters_says_what_keeping_hi_keeps():
    """Hinglish is labelled en by lid.176: the message said only "write hi", which then kept none of it."""
    with pytest.raises(ValueError) as err:
        language_tag("hi-Latn")
    assert str(err.value) == (
        "'hi-Latn': labels name hi without a script (Deva here); write hi, which keeps hi in whatever script the "
        "model names it: the shipped lid.176 knows hi in Deva only (hi in Latn letters it labels as other languages, "
        "often en), a model naming Latn too (GlotLID, langid's `model:`) labels that text hi")


def test_real_codes_a_chinese_team_may_mean_as_chinese_get_the_zh_hint():
    """`chn` (Chinook jargon) and `cht` (Cholón) are languages, but no model here outputs them."""
    for code in ("chn", "cht"):
        with pytest.raises(ValidationError, match=rf"never outputs: \['{code}'\]; did you mean zh "):
            LangId(keep=[code])


def test_chinese_varieties_alone_are_refused_with_the_zh_hint():
    assert "yue is Cantonese" in chinese_alone(["yue"]) and "[zh, yue]" in chinese_alone(["yue"])
    assert "wuu is Wu" in chinese_alone(["en", "wuu"])
    assert chinese_alone(["zh", "yue"]) is None and chinese_alone(["zh-Hant", "yue"]) is None
    assert chinese_alone(["en"]) is None
    for build in (lambda: LangId(keep=["yue"]), lambda: HtmlLangId(keep=["yue"]),
                  lambda: Toxicity(languages=["yue", "en"])):
        with pytest.raises(ValidationError, match="Standard \\(Mandarin\\) Chinese, which is `zh`"):
            build()
    assert LangId(keep=["zh", "yue"]).params.keep == ["zh", "yue"]


def test_every_stage_reads_the_same_spellings_alike():
    """BCP 47 tags, ISO 639-3 codes and underscores are read alike in every key that takes languages."""
    assert LangId(keep=["zh-CN", "zho", "en-US"]).params.keep == ["zh-Hans", "zh", "en"]
    assert LangId(min_score={"chi": 0.6, "*": 0.7}).params.min_score == {"zh": 0.6, "*": 0.7}
    # a script of a language whose scripts share its settings names none of its own: `languages: {zh-Hant: ...}`
    # changed Simplified's too
    for build in (lambda: LangId(min_score={"zh_TW": 0.5}), lambda: GopherQuality(languages={"zh-Hant": {}})):
        with pytest.raises(ValidationError, match=r"is per language, not per script, and \S+ is zh in one"):
            build()
    # Serbian has settings per script (FineWeb-2's srp_Cyrl and srp_Latn): a key per script
    assert GopherQuality(languages={"srp_Latn": {"dup_line_frac": 0.5}}).params.languages == {
        "sr-Latn": {"dup_line_frac": 0.5}}
    assert LangId(min_score={"sr_Latn": 0.5}).params.min_score == {"sr-Latn": 0.5}
    assert HtmlLangId(keep=["zh-CN", "zh_TW", "en"]).params.keep == ["zh", "en"]
    assert Toxicity(languages=["zh-CN", "eng"]).params.languages == ["zh", "en"]
    assert Toxicity(languages=["no"]).params.languages == ["nb", "nn"]
    assert GopherQuality(languages={"cmn_Hani": {"min_avg_word_length": 1}}).params.languages == {
        "zh": {"min_avg_word_length": 1}}


def test_toxicity_judges_the_language_a_bcp47_code_names():
    """`languages: [zh-CN]` used to validate and then bypass every document (no `lang` is ever `zh-cn`)."""
    stage = Toxicity(languages=["zh-CN", "en"])
    batch = pa.table({"text": ["你好", "hello", "bonjour"], "lang": ["zh", "en", "fr"]})
    assert stage.applies(batch).to_pylist() == [True, True, False]


def test_toxicity_refuses_languages_no_document_is_labelled_with():
    with pytest.raises(ValidationError, match=r"langid labels no document \['ab'\]"):
        Toxicity(languages=["ab"])
    with pytest.raises(ValidationError, match=r"did you mean zh-Hant \(TW is a country code\)"):
        Toxicity(languages=["tw"])  # Twi to ISO, Taiwan to whoever typed it
    with pytest.raises(ValidationError, match="no flagged-word list for sw"):  # English's would judge nothing
        Toxicity(languages=["sw"])


def test_a_languages_key_in_another_spelling_reaches_the_documents():
    """`languages: {cmn: ...}` used to be accepted and never applied: documents are labelled `zh`."""
    stage = GopherQuality(languages={"cmn": {"min_avg_word_length": 0.5}})
    batch = pa.table({"text": ["你好世界"], "lang": ["zh"]})
    langs = document_languages(batch, stage.params.languages, {})
    assert langs.group.tolist() == [0] and langs.groups[0].min_avg_word_length == 0.5
    assert np.all(langs.fallback == 0)
    with pytest.raises(ValidationError, match="names zh, as another key"):
        GopherQuality(languages={"zh": {}, "cmn": {"min_avg_word_length": 1}})
    with pytest.raises(ValidationError, match="English is judged by the stage's own params"):
        GopherQuality(languages={"eng": {"min_avg_word_length": 1}})
    with pytest.raises(ValidationError, match=r"langid labels no document tw .*did you mean zh-Hant"):
        GopherQuality(languages={"tw": {"min_avg_word_length": 1}})
    assert GopherQuality(languages={"gsw": {}}).params.languages == {"gsw": {}}  # FineWeb-2 has its settings


RECIPE = """\
name: zh-en
sources:
  - {name: web, format: warc, paths: ["x.warc.gz"]}
stages:
  - html_langid: {keep: [zh_TW, en]}
  - extract: {}
  - langid: {keep: [zh-CN, en], min_score: {chi: 0.5}}
  - toxicity: {languages: [zh-CN, en]}
  - gopher_quality: {languages: {zho: {min_avg_word_length: 1}}}
"""


def test_a_recipe_with_a_chinese_teams_codes_validates_normalised():
    specs = {kind: params for _, kind, params in parse_recipe(RECIPE, "r.yaml", check_paths=False).stage_specs()}
    assert specs["html_langid"].keep == ["zh", "en"]
    assert specs["langid"].keep == ["zh-Hans", "en"] and specs["langid"].min_score == {"zh": 0.5}
    assert specs["toxicity"].languages == ["zh", "en"]
    assert specs["gopher_quality"].languages == {"zh": {"min_avg_word_length": 1}}


def test_a_bad_code_fails_the_recipe_naming_key_line_and_the_code_meant():
    bad = (RECIPE.replace("[zh-CN, en], min", "[chinese, en], min").replace("[zh-CN, en]}", "[yue, en]}")
           .replace("{zho:", "{cn:"))
    with pytest.raises(RecipeError) as err:
        parse_recipe(bad, "r.yaml", check_paths=False)
    found = [str(p) for p in err.value.problems]
    assert len(found) == 3
    assert found[0].startswith("r.yaml:7:20: stages[2].langid.keep: ") and found[0].endswith("did you mean zh?")
    assert found[1].startswith("r.yaml:8:27: stages[3].toxicity.languages: ") and "yue is Cantonese" in found[1]
    assert found[2].startswith("r.yaml:9:38: stages[4].gopher_quality.languages.cn: ")  # at the key, not the map
    assert found[2].endswith("did you mean zh-Hans (CN is a country code)?")


def test_calibrate_reads_its_language_as_the_stages_do(tmp_path, capsys):
    """`curate calibrate --lang zh-CN` used to calibrate a language `zh-cn` with no settings of its own."""
    from curation.lang.calibrate import read_reference
    from pipelines.cli import main

    path = tmp_path / "zh.jsonl"
    path.write_text('{"text": "你好，世界。"}\n', encoding="utf-8")
    assert set(read_reference([str(path)], lang="zh-CN").lang) == {"zh"}
    assert main(["calibrate", str(path), "--lang", "chinese", "--out", str(tmp_path / "s.yaml")]) == 2
    assert "did you mean zh?" in capsys.readouterr().err


def test_three_letter_codes_read_as_langid_maps_a_models_labels():
    """`keep: [hbs]` keeps what lid.176's `sh` stands for (bs, hr, sr), not Latin-script Serbian only."""
    from curation.stages.langid import _ISO3_TO_1

    assert {k: str(language_tag(k)) for k in _ISO3_TO_1 if str(language_tag(k)) != _ISO3_TO_1[k]} == {}
    assert set(LangId(keep=["hbs"]).params.keep) == {"sh"}


def test_curate_validate_reports_the_bad_code_at_its_line(tmp_path, capsys):
    from pipelines.cli import main

    path = tmp_path / "zh.yaml"
    path.write_text(RECIPE.replace("{keep: [zh_TW, en]}", "{keep: [zh_TW, cn]}"), encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr()
    assert f"{path}:5:" in err.err + err.out and "did you mean zh-Hans (CN is a country code)?" in err.err + err.out
