"""MinHash by language, without Ray: each language's words as shingles (English unchanged, bit for bit),
near-duplicates of real Chinese and Japanese text found, dedup per language, cluster sizes (a recipe run on
the local executor)."""

from __future__ import annotations

import gzip
import json
import unicodedata
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.dedup.corpus_stage import AddedColumns
from curation.dedup.exact_dedup import ExactDedup
from curation.dedup.minhash import (
    MinHasher,
    exact_jaccard,
    fuzzy_duplicates,
    hash_tokens,
    language_tokens,
    ngram_hashes,
    pairs_jaccard,
    shingle_hashes,
    word_tokens,
)
from curation.dedup.minhash_dedup import CLUSTER_SIZE, MinhashDedup, MinhashDedupParams, parse_detail
from curation.recipe import parse_recipe
from pipelines.run import run

UNSPACED = ("zh", "ja")


def sentences(testdata: Path, lang: str) -> list[str]:
    return [s for s in (testdata / "langid" / "sentences" / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
            if s.strip()]


def documents(testdata: Path, lang: str, per: int = 10) -> list[str]:
    """Real sentences, `per` to a document (Chinese and Japanese run on without spaces)."""
    lines = sentences(testdata, lang)
    joint = "" if lang in UNSPACED else " "
    return [joint.join(lines[i:i + per]) for i in range(0, len(lines) - per + 1, per)]


def english(testdata: Path) -> list[str]:
    texts = []
    for f in sorted((testdata / "webtext" / "dolma_ccnet").glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as lines:
            texts += [json.loads(line)["text"] for line in lines if line.strip()]
    return texts


def changed(text: str, k: int, rng: np.random.Generator) -> str:
    """`text` with `k` of its letters replaced by other letters of it: a near-duplicate."""
    chars = list(text)
    letters = [i for i, c in enumerate(chars) if c.isalpha()]
    for i in rng.choice(letters, k, replace=False):
        chars[i] = next(c for c in (text[j] for j in rng.permutation(letters)) if c != chars[i])
    return "".join(chars)


def legacy_jaccard(a: list[str], b: list[str]) -> np.ndarray:
    """Jaccard of word 5-grams as before languages: words split at anything not a letter or digit."""
    tokens, offsets = word_tokens(a + b)
    sets = ngram_hashes(hash_tokens(tokens), offsets, 5).unique_sets()
    return pairs_jaccard(sets, np.arange(len(a)), np.arange(len(a), 2 * len(a)))


def test_english_and_documents_without_a_language_keep_their_words_bit_for_bit(testdata):
    texts = english(testdata)
    tokens, offsets = word_tokens(texts)
    for langs in (None, ["en"] * len(texts), [None] * len(texts), ["en_Latn"] * len(texts)):
        got, got_offsets = language_tokens(texts, langs)
        assert got.equals(tokens) and (got_offsets == offsets).all()
    before = MinHasher().signatures_of(ngram_hashes(hash_tokens(tokens), offsets, 5))
    assert (MinHasher().signatures(texts, ["en"] * len(texts)) == before).all()
    zh = documents(testdata, "zh")
    mixed = MinHasher().signatures(texts + zh, ["en"] * len(texts) + ["zh"] * len(zh))  # one batch, two languages
    assert (mixed[: len(texts)] == before).all()


def test_unspaced_languages_are_segmented_and_others_keep_their_marks():
    tokens, offsets = language_tokens(["我们今天去北京大学，看iPhone拍照。", "สวัสดีครับ ผมชื่อ", "हिन्दी भाषा है।",
                                       "हिन्दी भाषा है।", "Hello, World!"], ["zh", "th", "hi", None, "en"])
    words = [tokens[offsets[i]:offsets[i + 1]].to_pylist() for i in range(5)]
    assert words[0] == ["我们", "今天", "去", "北京大学", "看", "iphone", "拍照"]  # punctuation words dropped
    assert words[1] == ["สวัสดี", "ครับ", "ผม", "ชื่อ"]
    assert words[2] == ["हिन्दी", "भाषा", "है"]  # vowel signs are part of the word
    assert words[3] == words[2]  # no language: the same (split at its vowel signs, it was ह न द भ ष ह)
    assert words[4] == ["hello", "world"]
    # without a `lang`, the script decides: the same words as with one
    assert language_tokens(["我们今天去北京大学"])[0].equals(language_tokens(["我们今天去北京大学"], ["zh"])[0])


def test_a_chinese_english_page_has_the_same_words_whichever_language_it_is_labelled():
    """Segmented by the script of most of its letters (or its label), a page of Chinese and English halves was one
    "word" per Chinese clause where that was Latin or `en`: a copy with one more English sentence, or labelled the
    other language, shared almost no shingle with it (Jaccard 0.17 against 0.93)."""
    zh = ("大规模语言模型的训练通常分为预训练和微调两个阶段，预训练阶段需要海量的文本数据。"
          "数据的质量直接决定了模型的能力，因此在训练之前需要对网页数据进行清洗。")
    en = ("Large language models are trained in two stages, and the first needs the most data. The quality of that "
          "data decides much of what the model can do, so web pages are cleaned before training begins.")
    page, longer = f"{zh}\n{en}", f"{zh}\n{en} Deduplication matters as much as filtering."
    tokens, offsets = language_tokens([page, page, page, longer], ["en", "zh", None, None])
    words = [tokens[offsets[i]:offsets[i + 1]].to_pylist() for i in range(4)]
    assert words[0] == words[1] == words[2] and "微调" in words[0] and "quality" in words[0]
    assert words[3][: len(words[0])] == words[0]
    # a few Chinese letters (a footer) leave an English page's words as they were: segmenters split `wasn't` otherwise
    english = "It wasn't the first time the team shipped a release that couldn't be rolled back in 30m or less. " * 3
    footed = language_tokens([english + "转载自 GitHub"], ["en"])[0].to_pylist()
    assert footed == [*language_tokens([english], ["en"])[0].to_pylist(), "转载自", "github"]


def test_inflections_are_distinct_words_and_a_decomposed_copy_is_a_copy():
    """Split at combining marks, a Hindi text and the same words with other vowel signs (लड़का/लड़के, जाता/जाते: 5-word
    shingles sharing none) were near-duplicates, one removed; a French text typed decomposed (NFD) shared no
    shingle with itself composed. Without a language as with one."""
    hindi = "वह लड़का रोज़ सुबह स्कूल जाता है और शाम को घर लौटकर अपनी माँ के साथ खाना बनाता है " * 3
    swapped = hindi.replace("ा", "\0").replace("े", "ा").replace("\0", "े").replace("ि", "\0").replace("ी", "ि")
    french = "Le café de la côte était fermé à cause de la grève générale des employés du réseau ferré " * 3
    decomposed = unicodedata.normalize("NFD", french)
    for langs in (None, ["hi", "fr", "hi", "fr"]):
        similarity = exact_jaccard([hindi, french], [swapped, decomposed], langs=langs)
        assert similarity[0] < 0.1 and similarity[1] == 1.0


@pytest.mark.parametrize("lang", UNSPACED)
def test_real_near_duplicates_are_found_and_distinct_documents_are_not(testdata, lang):
    base = documents(testdata, lang)
    rng = np.random.default_rng(3)
    near = [changed(text, 3, rng) for text in base]  # 3 characters of ~450 changed
    langs = [lang] * (2 * len(base))
    similarity = exact_jaccard(base, near, langs=langs)
    assert similarity.min() >= 0.8 > legacy_jaccard(base, near).max()  # a whitespace tokenizer missed them all
    ids = [f"{lang}{i:02d}" for i in range(len(base))] + [f"{lang}{i:02d}x" for i in range(len(base))]
    removed, _ = fuzzy_duplicates(ids, base + near, settings=MinhashDedupParams(), langs=langs)
    assert removed.column("id").to_pylist() == ids[len(base):]  # each near copy, and nothing else
    assert removed.column("survivor_id").to_pylist() == ids[:len(base)]
    others = exact_jaccard(base, base[1:] + base[:1], langs=langs)
    assert others.max() < 0.05  # distinct documents share almost no shingle


def test_by_language_pairs_only_documents_of_one_language(testdata):
    french = documents(testdata, "fr")[:4]
    texts = french + french  # the same pages, the second time labelled Italian by a language classifier
    docs = pa.table({"id": [f"d{i}" for i in range(8)], "text": texts, "lang": ["fr"] * 4 + ["it"] * 4,
                     "source": ["web"] * 8})
    assert MinhashDedup().result(docs).removals.column("id").to_pylist() == ["d4", "d5", "d6", "d7"]
    assert MinhashDedup(by_language=True).result(docs).removals.num_rows == 0
    relabelled = docs.set_column(2, "lang", pa.array(["fr"] * 8))
    assert MinhashDedup(by_language=True).result(relabelled).removals.column("id").to_pylist() == [
        "d4", "d5", "d6", "d7"]
    signed = MinhashDedup(by_language=True).signed(docs).column("keys").to_pylist()
    assert not set(signed[0]) & set(signed[4]) and signed[0] == MinhashDedup(by_language=True).signed(
        relabelled).column("keys").to_pylist()[4]  # salted by the language, the same for the same language


def test_cluster_sizes_of_survivors_come_from_the_removals(testdata):
    zh = documents(testdata, "zh")[:4]
    rng = np.random.default_rng(5)
    texts = [zh[0], changed(zh[0], 2, rng), changed(zh[0], 2, rng), zh[1], changed(zh[1], 2, rng), zh[2], zh[3]]
    ids = ["a0", "a1", "a2", "b0", "b1", "c0", "d0"]
    docs = pa.table({"id": ids, "text": texts, "lang": ["zh"] * 7})
    stage = MinhashDedup(cluster_size=True)
    result = stage.result(docs)
    assert result.removals.column("id").to_pylist() == ["a1", "a2", "b1"]
    assert {parse_detail(d)[0] for d in result.removals.column("detail").to_pylist()} == {"a0", "b0"}
    added = stage.added(result.removals)
    assert isinstance(added, AddedColumns) and added.values.to_pylist() == [
        {"id": "a0", CLUSTER_SIZE: 3}, {"id": "b0", CLUSTER_SIZE: 2}]
    kept = added.apply(docs.filter(pa.array([i not in ("a1", "a2", "b1") for i in ids])))
    assert kept.column(CLUSTER_SIZE).to_pylist() == [3, 2, 1, 1] and kept.schema.field(CLUSTER_SIZE).type == pa.int64()
    assert MinhashDedup().added(result.removals) is None  # off by default: the documents keep their columns
    # exact copies exact_dedup removed before count too (FineWeb-2 has no exact stage): a0 has two verbatim, one of
    # its near copies (a1) one, c0 (in no near cluster) one; they were clusters of 3 and of 1
    exact = ExactDedup().result(pa.table({"id": ["a0", "a0x", "a0y", "a1", "a1x", "c0", "c0x"],
                                          "text": [zh[0]] * 3 + [texts[1]] * 2 + [zh[2]] * 2})).removals
    assert exact.column("id").to_pylist() == ["a0x", "a0y", "a1x", "c0x"]
    with_copies = stage.added(result.removals, exact.append_column("stage", pa.array(["exact_dedup"] * 4)))
    assert with_copies.values.to_pylist() == [{"id": "a0", CLUSTER_SIZE: 3 + 2 + 1}, {"id": "b0", CLUSTER_SIZE: 2},
                                              {"id": "c0", CLUSTER_SIZE: 2}]


def test_shingle_units_and_documents_without_words():
    assert len(shingle_hashes(["", "。，！"], langs=["zh", "zh"]).hashes) == 0
    assert MinhashDedup(unit="char").hasher().unit == "char"
    sigs = MinHasher().signatures(["", "我们今天去北京大学"], ["zh", None])
    assert (sigs[0] == 0xFFFFFFFF).all() and not (sigs[1] == 0xFFFFFFFF).all()


def test_a_recipe_run_gives_kept_documents_their_cluster_size_and_the_mixture_rehydrates(testdata, tmp_path):
    zh, en = documents(testdata, "zh"), english(testdata)[:6]
    rng = np.random.default_rng(8)
    texts = zh + en + [changed(zh[0], 2, rng), changed(zh[0], 3, rng), changed(zh[4], 2, rng)]
    rows = [{"text": t, "url": f"https://x/{i}"} for i, t in enumerate(texts)]  # no `lang`: Chinese by its script
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                         encoding="utf-8")
    recipe = parse_recipe(f"""
name: sizes
executor: local
local: {{workers: 1}}
sources: [{{name: web, format: jsonl, paths: ["{tmp_path}/docs.jsonl"]}}]
stages: [{{minhash_dedup: {{cluster_size: true}}}}]
mixture: {{weights: {{web: 1}}, rehydrate: fineweb2}}
tokenizer: {{train: {{vocab_size: 1000, hard_vocab_limit: false}}}}
pack: {{seq_len: 64}}
""")
    job = Path(run(recipe, output=str(tmp_path / "out"), quiet=True).job_dir)
    kept = pq.read_table(job / "documents")
    sizes = dict(zip(kept.column("url").to_pylist(), kept.column(CLUSTER_SIZE).to_pylist(), strict=True))
    rejects = pq.read_table(job / "rejects" / "stage=minhash_dedup" / "reason=near_duplicate")
    assert CLUSTER_SIZE not in rejects.column_names and len(sizes) == len(texts) - 3 == kept.num_rows
    clusters = {3: {f"https://x/{i}" for i in (0, 16, 17)}, 2: {f"https://x/{i}" for i in (4, 18)}}
    for size, members in clusters.items():  # one member kept (the smallest id), with its cluster's size
        [survivor] = members & set(sizes)
        assert sizes.pop(survivor) == size and members - {survivor} <= set(rejects.column("url").to_pylist())
    assert set(sizes.values()) == {1} and rejects.num_rows == 3
    manifest = json.loads((job / "manifest.json").read_text())
    # every document once, the survivors as often as FineWeb-2's weights say: 3 (cluster of 3) and 2 (of 2)
    assert manifest["splits"]["train"]["documents_per_source"] == {"web": kept.num_rows - 2 + 3 + 2}
    assert manifest["mixture"]["web"]["achieved_tokens"] == manifest["mixture"]["web"]["available_tokens"]


def test_by_language_compares_mixed_documents_by_their_languages(testdata: Path):
    """Two copies of a page of alternating Arabic and English paragraphs, one with two more Arabic ones, the other two
    more English: `ar` and `en` by which holds more, and never compared by `by_language` (Jaccard 0.88, both kept)."""
    arabic, english = sentences(testdata, "ar")[:12], sentences(testdata, "en")[:12]
    shared = [p for pair in zip(arabic[:10], english[:10], strict=True) for p in pair]
    texts = ["\n".join([*shared, *arabic[10:]]), "\n".join([*shared, *english[10:]])]

    def spans(text: str) -> list[dict]:
        out, at = [], 0
        for line in text.split("\n"):
            out.append({"start": at, "end": at + len(line), "lang": "ar" if line in arabic else "en", "score": 1.0})
            at += len(line) + 1
        return out

    documents = pa.table({"id": ["a", "b"], "text": texts, "lang": ["ar", "en"],
                          "lang_paragraphs": [spans(t) for t in texts]})
    stage = MinhashDedup(threshold=0.8, by_language=True)
    assert stage.result(documents).removals.column("id").to_pylist() == ["b"]
    signed = stage.signed(documents).column("keys").to_pylist()
    assert set(signed[0]) & set(signed[1])  # the Ray plan's band keys meet as well
    assert stage.result(documents.drop_columns(["lang_paragraphs"])).removals.num_rows == 0  # by majority: apart
