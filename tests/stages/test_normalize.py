"""Normalization: mojibake repaired, Unicode composed, controls and extra whitespace removed."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pyarrow as pa

from curation import schema
from curation.apply import run_stage
from curation.schema import documents_table
from curation.stages.fineweb import FineWeb
from curation.stages.normalize import Normalize


def test_mojibake_is_repaired_and_real_text_is_left_alone():
    texts = ["The Mona Lisa doesnâ€™t have eyebrows.", "“Quotes” and ﬁ stay: 全角"]
    out = run_stage(Normalize(), documents_table(texts))
    assert out.column("text").to_pylist() == ["The Mona Lisa doesn’t have eyebrows.", "“Quotes” and ﬁ stay: 全角"]
    assert out.column("_n:normalize:encoding_fixed").to_pylist() == [1, 0]


def test_cyrillic_mojibake_is_repaired_and_text_that_is_no_utf8_is_not_called_repaired():
    """Russian UTF-8 read as cp1251 never reached ftfy, whose hint knew only Latin-1's lead bytes; and
    GBK read as latin-1, which no UTF-8 repair undoes, was half rewritten by ftfy and counted `encoding_fixed`."""
    russian = "Правительство Москвы сегодня объявило о запуске новой программы поддержки малого бизнеса."
    chinese = "新华社北京电，中国和平与发展新时代，经济和社会和谐发展。双方和平共处，合作共赢。"
    real = "Россия и С.-Петербург: «Сёла» и С«кавычками»"
    texts = [russian.encode().decode("cp1251"), chinese.encode("gbk").decode("latin-1"), real]
    out = run_stage(Normalize(), documents_table(texts))
    assert out.column("text").to_pylist() == [russian, texts[1], real]
    assert out.column("_n:normalize:encoding_fixed").to_pylist() == [1, 0, 0]


def test_unicode_is_composed_and_controls_removed():
    decomposed = unicodedata.normalize("NFD", "Café crème")
    out = run_stage(Normalize(), documents_table([decomposed + "\x00\u200b\ufeff!"])).column("text").to_pylist()
    assert out == ["Café crème!"]
    assert unicodedata.is_normalized("NFC", out[0])


def test_the_marks_of_bidirectional_display_are_removed_and_the_line_rules_see_the_full_stops():
    """A Hebrew page's RLM after each full stop (or isolates around its lines) hid the stop from FineWeb's and C4's
    line rules: clean prose dropped as line_punct_ratio. trafilatura removes them from pages; normalize now too."""
    lines = ["כל בני האדם נולדו בני חורין ושווים בערכם ובזכויותיהם, ומחוננים בתבונה ובמצפון.",
             "לכל אדם הזכות לחיים, לחירות ולבטחון אישי, ואין לשלול אותם ממנו בלי משפט צדק.",
             "לא יוחזק אדם בעבדות או בשעבוד, והעבדות וסחר העבדים על כל צורותיהם יהיו אסורים."]
    marked = "\n".join(f"\u2067{line}\u200f\u2069" for line in lines) + "\u202b\u202c\u200e\u061c"
    out = run_stage(Normalize(), documents_table([marked]))
    assert out.column("text").to_pylist() == ["\n".join(lines)]
    batch = out.append_column("lang", pa.array(["he"]))
    assert run_stage(FineWeb(), batch).column(schema.REASON).to_pylist() == [None]
    assert run_stage(FineWeb(), documents_table([marked]).append_column("lang", pa.array(["he"]))).column(
        schema.REASON).to_pylist() == ["line_punct_ratio"]  # what the marks did


def test_text_whose_letters_a_wrong_decoding_replaced_is_dropped():
    """Arabic and Hebrew with 15% of their letters U+FFFD were kept as clean documents: no stage looked."""
    arabic = "يولد جميع الناس أحراراً متساوين في الكرامة والحقوق. وقد وهبوا عقلاً وضميراً. " * 4
    lost = "".join("\ufffd" if i % 7 == 3 and c != " " else c for i, c in enumerate(arabic))
    one = "A page with a single lost character \ufffd here. " + "Many ordinary English words follow it. " * 4
    out = run_stage(Normalize(), documents_table([arabic, lost, one]))
    assert out.column(schema.REASON).to_pylist() == [None, "replaced_characters", None]
    assert out.column(schema.DETAIL).to_pylist()[1].startswith("U+FFFD for 1")
    kept = run_stage(Normalize(max_replaced_share=None), documents_table([lost]))
    assert kept.column(schema.REASON).to_pylist() == [None]


def test_a_block_in_another_encoding_loses_its_lines_not_the_document():
    """A UTF-8 article with an advert in GBK (its bytes U+FFFD, 8% of the page) was dropped whole."""
    article = ["位于幸福路的社区长者食堂本周一正式开业，为辖区内六十岁以上的老人提供平价午餐和晚餐。",
               "开业当天，不少老人早早就来排队。现在家门口就有了食堂，老人们再也不用为做饭发愁了。",
               "据了解，今年全区计划新建二十家社区长者食堂，基本实现老年人十五分钟就餐圈的目标。"]
    advert = "欢迎光临本站，开通十周年，欢迎广大会员投稿！".encode("gbk").decode("utf-8", "replace")
    out = run_stage(Normalize(), documents_table(["\n".join([*article, advert])]))
    assert out.column(schema.REASON).to_pylist() == [None]
    assert out.column("text").to_pylist() == ["\n".join(article)]
    assert out.column("_n:normalize:damaged_lines_removed").to_pylist() == [1]


def test_a_text_a_wrong_decoding_garbled_in_many_lines_is_dropped_whole(testdata):
    """Japanese in EUC-JP read as Big5: U+FFFD in 8 of its 40 lines, the others mojibake without any. Its damaged
    lines were removed and the rest kept as Chinese; many damaged lines are a wrong decoding, not one block."""
    lines = [x for x in (testdata / "langid" / "sentences" / "ja.txt").read_text("utf-8").splitlines() if x][:40]
    garbled = "\n".join(lines).encode("euc-jp").decode("big5", errors="replace")
    assert sum("\ufffd" in line for line in garbled.split("\n")) > 4
    out = run_stage(Normalize(), documents_table([garbled]))
    assert out.column(schema.REASON).to_pylist() == ["replaced_characters"]


def test_windows_1252_punctuation_stored_as_c1_controls_becomes_that_punctuation():
    """Text read as latin-1 holds cp1252's dashes and quotes as C1 controls (`don\x92t`, found in the Leipzig French
    sentences): removed as controls, they joined words and numbers (`dont`, `19902000`)."""
    texts = ["1990\x962000, don\x92t, s\x92engager, м\x92ясо", "undefined in cp1252: a\x81b"]
    out = run_stage(Normalize(), documents_table(texts))
    assert out.column("text").to_pylist() == ["1990–2000, don’t, s’engager, м’ясо", "undefined in cp1252: ab"]
    assert out.column("_n:normalize:encoding_fixed").to_pylist() == [1, 0]


def test_the_zero_width_joiners_that_spell_words_are_kept():
    """Persian writes a zero-width non-joiner inside words, Indic scripts and Sinhala a joiner or non-joiner inside
    conjuncts, emoji sequences a joiner between their parts: removing them misspells the text."""
    texts = ["می‌خواهم", "ක්‍ර", "👩‍💻"]
    out = run_stage(Normalize(), documents_table([t + "​" for t in texts])).column("text").to_pylist()
    assert out == texts


def test_whitespace_collapses_but_paragraphs_stay():
    text = "  First\tline  \r\nsecond\u00a0\u00a0line \n\n\n\n\nNext paragraph.  "
    out = run_stage(Normalize(), documents_table([text])).column("text").to_pylist()
    assert out == ["First line\nsecond line\n\nNext paragraph."]
    keep_more = run_stage(Normalize(max_blank_lines=3), documents_table([text])).column("text").to_pylist()
    assert keep_more == ["First line\nsecond line\n\n\n\nNext paragraph."]


def test_code_keeps_its_indentation_spaces_and_empty_lines():
    """Python's and YAML's indentation is syntax and a Makefile needs its tabs: a fenced block, an indented block of
    plain text and a line shaped like code keep theirs, while the prose around them is tidied (every code block
    came out flat, in every language, before)."""
    fenced = ("Read  a file:\n\n\n\n```python\ndef count(path):\n    total = 0\n\n\n    with open(path) as f:\n"
              "        total  +=  1  \n```\n\n\n\nDone.  ")
    plain = "Build it with:\n\nall:\n\tgcc  -o app  app.c\nThen  run:\n    ./app  --layers 12"
    texts = ["A  plain   page.\n\n\n\nEnd.", fenced, plain, "Nothing to see."]
    out = run_stage(Normalize(), documents_table(texts)).column("text").to_pylist()
    assert out == [
        "A plain page.\n\nEnd.",
        "Read a file:\n\n```python\ndef count(path):\n    total = 0\n\n\n    with open(path) as f:\n"
        "        total  +=  1\n```\n\nDone.",
        "Build it with:\n\nall:\n\tgcc  -o app  app.c\nThen run:\n    ./app  --layers 12",
        "Nothing to see."]


def test_empty_documents_are_dropped_and_switches_work():
    out = run_stage(Normalize(), documents_table([" \u200b\t\n ", "ok"]))
    assert out.column(schema.REASON).to_pylist() == ["empty", None]
    raw = "a  b\u0301"
    untouched = run_stage(Normalize(form="none", collapse_whitespace=False), documents_table([raw]))
    assert untouched.column("text").to_pylist() == [raw]


def test_zawgyi_encoded_burmese_is_dropped_and_unicode_burmese_kept():
    # The UDHR's Burmese (Unicode) and the same text in the Zawgyi encoding, as pyidaungsu's converter writes it
    import pyidaungsu

    unicode_text = (Path(__file__).parents[1] / "lang" / "udhr_my.txt").read_text(encoding="utf-8")
    zawgyi_text = pyidaungsu.cvt2zg(unicode_text)
    assert zawgyi_text != unicode_text
    texts = [unicode_text, zawgyi_text, "An English line with ကို one Burmese word."]
    out = run_stage(Normalize(), documents_table(texts))
    assert out.column(schema.REASON).to_pylist() == [None, "zawgyi", None]
    kept = run_stage(Normalize(zawgyi="keep"), documents_table(texts))
    assert kept.column(schema.REASON).to_pylist() == [None, None, None]
