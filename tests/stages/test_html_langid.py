"""`html_langid`: language ID on raw HTML that lets pages surely in no kept language skip extraction."""

from __future__ import annotations

import gzip
import json
import pickle

import fasttext
import pyarrow as pa
import pytest
import trafilatura
from pydantic import ValidationError

from curation.recipe import RecipeError, parse_recipe
from curation.stages import HtmlLangId
from curation.stages.langid import bundled_model_path


@pytest.fixture(scope="module")
def gate() -> HtmlLangId:
    stage = HtmlLangId(keep=["en"])
    stage.setup()
    return stage


def pages(testdata, n: int) -> list[bytes]:
    paths = sorted((testdata / "html" / "trafilatura" / "cache").glob("*.html.gz"))[:n]
    return [gzip.decompress(p.read_bytes()) for p in paths]


def batch(bodies: list[bytes | None], metas: list[str | None] | None = None) -> pa.Table:
    metas = metas or [None] * len(bodies)
    return pa.table({"html": pa.array(bodies, pa.binary()), "meta": pa.array(metas, pa.string()),
                     "text": pa.nulls(len(bodies), pa.string())})


def test_drops_only_pages_whose_extracted_text_is_not_english(gate, testdata):
    bodies = pages(testdata, 80)
    result = gate.process(batch(bodies))
    reasons, details = result.reasons.to_pylist(), result.details.to_pylist()
    model = fasttext.load_model(str(bundled_model_path()))
    dropped = [i for i, r in enumerate(reasons) if r]
    assert 20 <= len(dropped) <= 70  # trafilatura's eval pages: many German, many English
    for i in dropped:
        assert reasons[i] == "lang_not_kept" and details[i].startswith("before extraction: ")
        assert 0 < len(result.table.column("text")[i].as_py()) <= 1000  # the text it judged, for rejects/
        text = trafilatura.extract(bodies[i], favor_precision=True) or ""
        labels, probs = model.predict(" ".join(text.split()), k=5)
        english = dict(zip(labels, probs, strict=True)).get("__label__en", 0.0)
        assert english < 0.65, f"page {i}: its extracted text is English ({english:.2f}) but the gate dropped it"
    assert all(details[i] is None for i, r in enumerate(reasons) if r is None)


def test_pages_it_cannot_judge_go_on_to_extract(gate):
    many_attributes = b"<html><body><div " + b" ".join(b'a%d="x"' % i for i in range(2000)) + b">Hallo Welt</div>"
    german = ("<html><body><article><p>" + "Die Stadt liegt am Fluss und hat viele alte Häuser. " * 30
              + "</p></article></body></html>").encode()
    rows = [
        b"", b"<html><body></body></html>",  # no text to judge
        many_attributes,  # extract drops it as too_many_attributes, unparsed
        "<p>Ce texte est en français mais mal décodé</p>".encode("latin-1"),  # decoded by detection
        german,
        None,  # no html (a JSONL row): not this stage's
    ]
    metas = [None, None, None, json.dumps({"http_charset": "iso-8859-1"}), None, None]
    result = gate.process(batch(rows[:-1], metas[:-1]))
    assert result.reasons.to_pylist() == [None, None, None, "lang_not_kept", "lang_not_kept"]
    assert not gate.applies(batch(rows, metas)).to_pylist()[-1]


def test_a_window_of_the_body_is_judged_first_and_the_whole_page_where_it_does_not_drop(gate):
    german = "<p>" + "Die Stadt liegt am Fluss und hat viele alte Häuser. " * 400 + "</p>"  # 20,800 characters
    hostile = "<div " + " ".join(f"a{i}" for i in range(2000)) + ">x</div>"
    script = "<script>" + "var x = 1; " * 2000 + "</script>"  # no text
    rows = [
        f"<html><head><title>t</title></head><BODY>{german}{hostile}</BODY></html>".encode(),
        f"<html><body>{script}{german}</body></html>".encode(),  # a window without text
    ]
    assert gate.params.window_chars < len(german)
    assert gate.process(batch(rows)).reasons.to_pylist() == ["lang_not_kept", "lang_not_kept"]
    whole = HtmlLangId(keep=["en"], window_chars=None)
    whole.setup()
    # judged whole, the first page's crowded tag sends it on to `extract` unparsed; the window never reaches it
    assert whole.process(batch(rows)).reasons.to_pylist() == [None, "lang_not_kept"]


def test_a_window_with_enough_text_in_a_kept_language_settles_the_page_unparsed():
    english = "<p>" + "The town lies on the river and has many old houses. " * 400 + "</p>"  # 21,200 characters
    hostile = "<div " + " ".join(f"a{i}" for i in range(2000)) + ">x</div>"
    script = "<script>" + "var x = 1; " * 2000 + "</script>"  # 22,000 characters without text
    rows = [
        f"<html><body>{english}{hostile}</body></html>".encode(),
        # the first window has no text: the second, 4 times as large, settles it
        f"<html><body>{script}<p>The town lies on the river.</p>{english * 3}{hostile}</body></html>".encode(),
        # neither window has text: judged whole, where the crowded tag sends it on to `extract` unparsed
        f"<html><body>{script * 4}<p>The town lies on the river.</p>{english}{hostile}</body></html>".encode(),
    ]
    stage = HtmlLangId(keep=["en"], keep_scores=True)
    stage.setup()
    result = stage.process(batch(rows))
    assert result.reasons.to_pylist() == [None, None, None]
    first, second, whole = result.table.column("html_lang_score").to_pylist()
    assert first > 0.9 and second > 0.9 and whole is None


def test_scores_are_kept_on_request_and_the_model_is_not_pickled(testdata):
    stage = HtmlLangId(keep=["en"], keep_scores=True, below=0.2)
    copy = pickle.loads(pickle.dumps(stage))
    assert not hasattr(copy, "_model") and copy.params == stage.params
    copy.setup()
    result = copy.process(batch([*pages(testdata, 5), b""]))
    scores = result.table.column("html_lang_score").to_pylist()
    assert scores[-1] is None and all(0 <= s <= 1 for s in scores[:-1])
    assert [r is not None for r in result.reasons.to_pylist()] == [s is not None and s < 0.2 for s in scores]


def test_recipe_errors_name_the_key():
    with pytest.raises(ValidationError, match="keep"):
        HtmlLangId()
    with pytest.raises(ValueError, match=r"never outputs: \['ab'\]"):
        HtmlLangId(keep=["ab"])
    recipe = parse_recipe("""
name: gate
sources: [{name: web, format: warc, paths: ["x.warc.gz"]}]
stages: [{html_langid: {keep: [en, DE], below: 0.1}}, {extract: {}}]
""", check_paths=False)
    assert recipe.stage_specs()[0][2].keep == ["en", "de"]
    with pytest.raises(RecipeError, match=r"<recipe>:4:\d+: stages\[0\]\.html_langid: .*never outputs: \['ab'\]"):
        parse_recipe("""
name: gate
sources: [{name: web, format: warc, paths: ["x.warc.gz"]}]
stages: [{html_langid: {keep: [en, ab]}}]
""", check_paths=False)
    expected = r"<recipe>:4:\d+: stages\[0\]\.html_langid\.below: Input should be less than 1"
    with pytest.raises(RecipeError, match=expected):
        parse_recipe("""
name: gate
sources: [{name: web, format: warc, paths: ["x.warc.gz"]}]
stages: [{html_langid: {keep: [en], below: 1.5}}]
""", check_paths=False)


def test_a_short_text_is_not_judged_twice_when_the_model_is_blind_to_word_order(monkeypatch):
    """lid.176 has no word n-grams: the longest lines of a text within `max_chars` are the same words, whose
    second judgement could not differ; a model with word n-grams still gets both."""
    stage = HtmlLangId(keep=["en"])
    stage.setup()
    assert stage._order_blind
    short = "<html><body><ul><li>Startseite</li><li>Kontakt</li></ul><p>Die Stadt liegt am Fluss.</p></body></html>"
    long_ = "<html><body><p>" + "Die Stadt liegt am Fluss und hat viele alte Häuser. " * 40 + "</p></body></html>"
    calls: list[str] = []
    predict = stage._model.predict
    monkeypatch.setattr(stage._model, "predict", lambda text, k: calls.append(text) or predict(text, k=k))
    once = stage._judge_html(short)
    assert len(calls) == 1 and once.score < stage.params.below
    stage._judge_html(long_)  # past max_chars: its longest lines are other words than its first 1,000 characters
    assert len(calls) == 3
    monkeypatch.setattr(stage, "_order_blind", False)
    calls.clear()
    both = stage._judge_html(short)
    assert len(calls) == 2 and sorted(calls[0].split()) == sorted(calls[1].split())
    assert both.score == pytest.approx(once.score, abs=1e-6) and both.top == once.top


def test_han_text_fasttext_calls_japanese_or_korean_goes_on_where_chinese_is_kept():
    """A short Mandarin shop page is `ja` at 0.92 to lid.176 (zh 0.05): dropped here before `langid`, which tells
    Han text without kana Chinese, could read it. A page with kana stays Japanese."""
    def page(text: str) -> bytes:
        return f"<html><body><main><p>{text}</p></main></body></html>".encode()

    mandarin = "本店长期收购二手手机、笔记本电脑、平板电脑，高价回收，上门取货，当面付款，欢迎来电咨询。"
    japanese = "東京の天気は晴れです。明日は雨が降るでしょう。"
    rows = [page(mandarin), page(japanese)]
    gate = HtmlLangId(keep=["zh", "en"]).ready()
    assert gate.process(batch(rows, [None, None])).reasons.to_pylist() == [None, "lang_not_kept"]
    assert HtmlLangId(keep=["en"]).ready().process(batch(rows[:1], [None])).reasons.to_pylist() == ["lang_not_kept"]
