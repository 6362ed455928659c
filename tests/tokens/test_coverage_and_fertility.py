"""A trained tokenizer's character coverage from the script mix of its sample, its digit splitting, and the
tokens per character by language that a job reports (on real sentences of the test data)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm
from pydantic import ValidationError

from curation.lang.scripts import letters_by_script, script_counts
from curation.tokens import fertility
from curation.tokens.config import TrainTokenizer
from curation.tokens.coverage import character_histogram, choose_coverage
from curation.tokens.tokenizer import train_from_documents, train_tokenizer


def sentences(testdata: Path, lang: str) -> list[str]:
    return [s for s in (testdata / "langid" / "sentences" / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
            if s.strip()]


def test_letters_by_script_of_a_histogram_match_the_per_text_count(testdata):
    for lang in ("zh", "ja", "ko", "ru", "hi", "de"):
        text = "\n".join(sentences(testdata, lang))
        assert letters_by_script(character_histogram([text])) == script_counts(text, sample=len(text))


def test_coverage_follows_the_script_mix(testdata):
    chinese, english = sentences(testdata, "zh"), sentences(testdata, "en")
    cjk = choose_coverage(chinese + english, vocab_size=32000)
    assert cjk.character_coverage == 0.9995 and cjk.rule.startswith("CJK-heavy") and cjk.cjk_share > 0.3
    small = choose_coverage(english, vocab_size=32000)  # ~80 distinct characters, 5% of 32,000 is 1,600
    assert small.character_coverage == 1.0 and small.rule.startswith("every character fits") and small.cjk_share == 0
    crowded = choose_coverage(english, vocab_size=1000)  # more than 50 distinct characters
    assert crowded.character_coverage == 0.9995 and "spelt in bytes" in crowded.rule
    japanese = choose_coverage(sentences(testdata, "ja"), vocab_size=300_000)  # would fit, but CJK-heavy
    assert japanese.character_coverage == 0.9995
    a_little_chinese = choose_coverage(english * 20 + chinese[:3], vocab_size=100_000)
    assert 0 < a_little_chinese.cjk_share < 0.1 and a_little_chinese.character_coverage == 1.0


def test_auto_coverage_trains_the_model_of_the_chosen_number(testdata, tmp_path):
    texts = sentences(testdata, "zh") + sentences(testdata, "en")
    vocab = 1300  # 0.9995 of these ~1,200 distinct characters is an alphabet of 1,199: more than 1,300 - 259
    with pytest.raises(RuntimeError, match="Vocabulary size is smaller than required_chars"):
        train_tokenizer(texts, tmp_path / "default", vocab, "bpe", seed=3, hard_vocab_limit=False)
    coverage = choose_coverage(texts, vocab)
    assert coverage.character_coverage == 0.98 and "lowered from 0.9995 to 0.98" in coverage.rule
    auto = train_tokenizer(iter(texts), tmp_path / "auto", vocab, "bpe", seed=3, character_coverage="auto",
                           hard_vocab_limit=False)
    chosen = train_tokenizer(texts, tmp_path / "chosen", vocab, "bpe", seed=3,
                             character_coverage=coverage.character_coverage, hard_vocab_limit=False)
    assert hashlib.sha256(auto.read_bytes()).digest() == hashlib.sha256(chosen.read_bytes()).digest()
    sp = spm.SentencePieceProcessor(model_file=str(auto))
    single = sum(len(sp.id_to_piece(i)) == 1 and not sp.is_byte(i) for i in range(sp.get_piece_size()))
    assert single < 900  # 886 characters cover 98%
    assert all(sp.decode(sp.encode(t)) == t for t in texts)  # the rarest spelt in bytes


def test_recipe_defaults_split_digits_and_choose_coverage(testdata, tmp_path):
    settings = TrainTokenizer(vocab_size=2000, hard_vocab_limit=False)
    assert settings.character_coverage == "auto" and settings.split_digits and settings.byte_fallback
    texts = [f"{s} {i * 7919} 年 {2000 + i}" for i, s in enumerate(sentences(testdata, "zh") * 3)]
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(texts))], "source": ["zh"] * len(texts),
                             "text": texts}), path)
    model, coverage, _ = train_from_documents([str(path)], 1, 0.0, settings)
    assert coverage["character_coverage"] >= 0.98 and coverage["rule"].startswith("CJK-heavy")
    assert coverage["cjk_share"] > 0.9
    sp = spm.SentencePieceProcessor(model_proto=model)
    pieces = [sp.id_to_piece(i).lstrip("\u2581") for i in range(sp.get_piece_size())
              if not (sp.is_byte(i) or sp.is_control(i) or sp.is_unknown(i))]
    with_digits = [p for p in pieces if any(c.isdigit() for c in p)]
    assert with_digits and all(len(p) == 1 for p in with_digits)
    assert sp.decode(sp.encode(texts[5])) == texts[5]
    _, fixed, _ = train_from_documents([str(path)], 1, 0.0,
                                    settings.model_copy(update={"character_coverage": 1.0}))
    assert fixed == {"character_coverage": 1.0, "rule": "set by the recipe"}


def test_trainer_keys_are_not_options():
    with pytest.raises(ValidationError, match="split_digits"):
        TrainTokenizer(options={"split_digits": False})
    with pytest.raises(ValidationError):
        TrainTokenizer(character_coverage=1.5)
    assert TrainTokenizer(character_coverage=0.99, options={"max_sentencepiece_length": 8}).character_coverage == 0.99


def test_fertility_by_language_and_by_script_without_one():
    texts = pa.array(["北京是首都", "Hello world", "12 34", "東京", None])
    langs = pa.array(["zh", "en", None, "", None])
    keys = fertility.language_keys(texts, langs)
    assert keys.tolist() == ["zh", "en", "und", "und-Hani", "und"]
    assert fertility.language_keys(texts, None).tolist() == ["und-Hani", "und-Latn", "und", "und-Hani", "und"]
    sources = np.array(["web", "web", "web", "books", "web"], dtype=object)
    counts = fertility.count(sources, keys, np.array([5, 11, 5, 2, 0]), np.array([3, 2, 4, 2, 0]))
    assert counts == {"books": {"und-Hani": [1, 2, 2]},
                      "web": {"en": [1, 11, 2], "und": [2, 5, 4], "zh": [1, 5, 3]}}
    report = fertility.report(counts.values())
    assert list(report) == ["en", "und", "zh", "und-Hani"]  # most characters first
    assert report["zh"] == {"documents": 1, "characters": 5, "tokens": 3, "tokens_per_char": 0.6}
    assert fertility.report([{"und": [1, 0, 0]}])["und"]["tokens_per_char"] is None
