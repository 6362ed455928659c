"""Decontamination: planted GSM8K and HumanEval items (and Chinese and Japanese ones) are found, real untouched
documents are not flagged."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from curation.dedup.decontam import NgramIndex, benchmark_files


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def real_docs(testdata: Path) -> list[str]:
    docs = [r["text"] for f in sorted((testdata / "webtext" / "dolma_ccnet").glob("*.jsonl.gz")) for r in read_jsonl(f)]
    readme = sorted((testdata / "neardup" / "readme_history_requests").iterdir())
    return docs + [p.read_text(encoding="utf-8", errors="replace") for p in readme[::4]]


@pytest.fixture(scope="module")
def index(testdata: Path) -> NgramIndex:
    return NgramIndex.from_paths(testdata / "benchmarks")


def plant(doc: str, item: str) -> str:
    """Put an item between two paragraphs of a real document, as a crawled page quoting it would."""
    paragraphs = doc.split("\n")
    middle = len(paragraphs) // 2
    return "\n".join([*paragraphs[:middle], item, *paragraphs[middle:]])


def test_index_names_and_size(index: NgramIndex):
    assert index.names == ["gsm8k/test", "gsm8k/test_socratic", "humaneval/HumanEval"]
    assert index.items == 2 * 1319 * 2 + 164 * 3  # each field of each item is one text
    assert index.short_items < 50  # a few one-line answers and tests
    assert 100_000 < len(index) < 1_000_000 and index.nbytes == 10 * len(index)
    assert (index.hashes[1:] >= index.hashes[:-1]).all()


def test_planted_items_are_all_found_and_clean_documents_never(testdata: Path, index: NgramIndex,
                                                                real_docs: list[str]):
    clean = index.find(real_docs)
    assert clean.column("benchmark").null_count == len(real_docs)
    assert sum(clean.column("hits").to_pylist()) == 0
    rng = np.random.default_rng(0)
    gsm8k = read_jsonl(testdata / "benchmarks" / "gsm8k" / "test.jsonl")
    humaneval = read_jsonl(testdata / "benchmarks" / "humaneval" / "HumanEval.jsonl.gz")
    planted, expected = [], []
    for k, i in enumerate(rng.choice(len(gsm8k), 25, replace=False)):
        item = gsm8k[i]["question"]
        if k % 3 == 1:  # a copy that lost its case and punctuation still counts
            item = item.upper().replace(",", "").replace("?", " ?")
        if k % 3 == 2:
            item = gsm8k[i]["answer"].replace("\n", " ")
        planted.append(plant(real_docs[k % len(real_docs)], item))
        expected.append("gsm8k/test")  # also in test_socratic: ties go to the first name
    for k, i in enumerate(rng.choice(len(humaneval), 25, replace=False)):
        item = humaneval[i]["prompt"] + humaneval[i]["canonical_solution"]
        if k % 2:  # reindented, as a blog's code block might be
            item = "\n".join(line.strip() for line in item.splitlines())
        planted.append(plant(real_docs[(k + 7) % len(real_docs)], item))
        expected.append("humaneval/HumanEval")
    found = index.find(planted)
    assert found.column("benchmark").to_pylist() == expected
    assert min(found.column("hits").to_pylist()) >= 1
    per_benchmark = index.hit_matrix(planted[:25])
    assert (per_benchmark[:, 0] > 0).all() and (per_benchmark[:, 2] == 0).all()


def test_csv_jsonl_and_folders_with_configurable_fields(tmp_path: Path):
    words = " ".join(f"word{i}" for i in range(20))
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "qa.csv").write_text(f"q,a\n\"{words}\",short answer\n", encoding="utf-8")
    with gzip.open(tmp_path / "evals" / "code.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps({"q": "too short to index", "a": words.upper()}) + "\n")
    assert set(benchmark_files(tmp_path / "evals")) == {"qa", "code"}
    index = NgramIndex.from_paths(tmp_path / "evals", fields=["q", "a"], ngram=13)
    assert index.items == 4 and index.short_items == 2
    found = index.find([f"intro. {words}. outro", "word1 word2 word3", None])
    assert found.column("hits").to_pylist() == [8, 0, 0]  # 20 words hold 8 distinct 13-grams
    assert found.column("benchmark").to_pylist() in (["code", None, None], ["qa", None, None])
    named = NgramIndex.from_paths({"mine": tmp_path / "evals" / "qa.csv"}, fields=["q"])
    assert named.names == ["mine"] and named.find([words]).column("benchmark").to_pylist() == ["mine"]
    with pytest.raises(FileNotFoundError):
        NgramIndex.from_paths(tmp_path / "missing")


@pytest.mark.parametrize("lang", ["zh", "ja"])
def test_benchmark_questions_written_without_spaces_are_found_in_their_language(testdata: Path, tmp_path: Path,
                                                                              lang: str):
    """Real Chinese or Japanese sentences, two to an item, as an evaluation set; pages of other real
    sentences with an item copied into some: every copy found (words segmented on both sides), no other
    page flagged; split at whitespace and punctuation only, most items would be too short to index."""
    lines = [s for s in (testdata / "langid" / "sentences" / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
             if s.strip()]
    items = [lines[i] + lines[i + 1] for i in range(0, 40, 2)]
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps({"question": q}, ensure_ascii=False) + "\n"
                                                 for q in items), encoding="utf-8")
    index = NgramIndex.from_paths(tmp_path / "eval.jsonl")
    assert index.items == 20 and index.short_items == 0
    pages = ["".join(lines[i:i + 6]) for i in range(40, 100, 6)]
    planted = [page[: len(page) // 2] + items[k] + page[len(page) // 2:] for k, page in enumerate(pages)]
    found = index.find(planted + pages, [lang] * (2 * len(pages)))
    assert found.column("benchmark").to_pylist() == ["eval"] * len(pages) + [None] * len(pages)
    assert min(found.column("hits").to_pylist()[: len(pages)]) >= 3
    assert index.find(planted).column("benchmark").to_pylist() == ["eval"] * len(pages)  # no `lang`: by script
    whitespace_words = [len(re.findall(r"[^\W_]+", item)) for item in items]
    assert sum(n < index.ngram for n in whitespace_words) > len(items) // 2
