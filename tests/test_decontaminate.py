"""Decontamination: planted benchmark items are found, ordinary documents are not."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pytest

from curation import schema
from curation.apply import run_stage
from curation.recipe import RecipeError, parse_recipe
from curation.schema import documents_table
from curation.stages import Decontaminate


def test_planted_items_are_found_and_clean_text_is_not(testdata: Path, tmp_path: Path):
    gsm = [json.loads(line) for line in (testdata / "benchmarks/gsm8k/test.jsonl").read_text().splitlines()[:20]]
    with gzip.open(testdata / "benchmarks/humaneval/HumanEval.jsonl.gz", "rt") as f:
        human = [json.loads(line) for line in f][:10]
    notes = [json.loads(line)["text"] for line in
             gzip.decompress((Path(__file__).parents[1] / "recipes/sample/notes.jsonl.gz").read_bytes()).splitlines()
             if line.startswith(b'{"text": "F')]
    planted = [f"Some intro text. {g['question']} And then the page goes on." for g in gsm[:5]]
    planted.append("Code from a blog:\n" + human[0]["prompt"] + human[0]["canonical_solution"])
    # a copy in full-width Latin, as CJK pages write it: the same words in Unicode's compatibility form (NFKC)
    planted.append("".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in gsm[5]["question"]))
    stage = Decontaminate(benchmarks=[str(testdata / "benchmarks")])
    stage.setup()
    out = run_stage(stage, documents_table(planted + notes))
    reasons = out.column(schema.REASON).to_pylist()
    assert reasons == ["contaminated"] * len(planted) + [None] * len(notes)
    assert out.column("contamination").to_pylist()[:7] == ["gsm8k/test"] * 5 + ["humaneval/HumanEval", "gsm8k/test"]
    assert out.column(schema.DETAIL).to_pylist()[0].startswith("gsm8k/test: ")
    assert stage.count_keys == ("gsm8k/test", "gsm8k/test_socratic", "humaneval/HumanEval")
    assert pa.compute.sum(out.column("_n:decontaminate:gsm8k/test")).as_py() == 6
    marked = Decontaminate(benchmarks=[str(testdata / "benchmarks/gsm8k/test.jsonl")], action="mark")
    marked.setup()
    kept = run_stage(marked, documents_table(planted[:1]))
    assert kept.column(schema.REASON).to_pylist() == [None]
    assert kept.column("contamination").to_pylist() == ["test"]


def test_a_chinese_question_copied_into_a_page_is_found_by_the_pages_language(testdata: Path, tmp_path: Path):
    lines = [s for s in (testdata / "langid/sentences/zh.txt").read_text(encoding="utf-8").splitlines() if s.strip()]
    question = lines[0] + lines[1]
    (tmp_path / "cmmlu.jsonl").write_text(json.dumps({"question": question}, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    pages = ["".join(lines[10:16]), "".join(lines[16:22])]
    batch = documents_table([pages[0] + question, pages[1]])
    batch = batch.append_column("lang", pa.array(["zh", "zh"]))
    stage = Decontaminate(benchmarks=[str(tmp_path / "cmmlu.jsonl")])
    stage.setup()
    out = run_stage(stage, batch)
    assert out.column(schema.REASON).to_pylist() == ["contaminated", None]
    assert out.column("contamination").to_pylist() == ["cmmlu", None]
    mislabelled = batch.set_column(batch.schema.get_field_index("lang"), "lang", pa.array(["en", "zh"]))
    # labelled English, its Chinese is still Chinese words (`with_unspaced_runs`): it was read as one word a clause,
    # and the copied question was not found
    assert run_stage(stage, mislabelled).column(schema.REASON).to_pylist() == ["contaminated", None]


def test_a_benchmark_that_gives_nothing_to_look_for_is_refused_before_work(tmp_path: Path):
    """A misnamed field or items shorter than `ngram` words indexed nothing: the stage kept every copy, silently. A
    benchmark file that is no JSON failed the run's start with a traceback."""
    (tmp_path / "mmlu.json").write_text(json.dumps([{"input": "Which of the following best describes the primary "
                                                     "function of the mitochondria in a eukaryotic cell today?"}]))
    (tmp_path / "short.jsonl").write_text(json.dumps({"question": "What is two plus two?"}) + "\n")
    (tmp_path / "fine.jsonl").write_text(json.dumps({"question": " ".join(f"word{i}" for i in range(20))}) + "\n")
    (tmp_path / "broken.jsonl").write_text('{"question": "x"\n')
    (tmp_path / "docs.jsonl").write_text(json.dumps({"text": "a page"}) + "\n")

    def problems(benchmarks: list[str], extra: str = "") -> str:
        recipe = (f"name: d\noutput: {tmp_path}/jobs\nsources:\n  - {{name: d, format: jsonl, paths: "
                  f"['{tmp_path}/docs.jsonl']}}\nstages:\n  - decontaminate: {{benchmarks: {json.dumps(benchmarks)}"
                  f"{extra}}}\n")
        with pytest.raises(RecipeError) as err:
            parse_recipe(recipe)
        return str(err.value)

    found = problems([str(tmp_path / n) for n in ("fine.jsonl", "mmlu.json", "short.jsonl", "broken.jsonl")])
    assert "benchmarks[0]" not in found
    assert "benchmarks[1]: benchmark 'mmlu' gives no n-gram of 13 words to look for" in found
    assert "benchmarks[2]: benchmark 'short' gives no n-gram" in found
    assert "benchmarks[3]: cannot read" in found and "broken.jsonl, line 1" in found
    assert "benchmark 'mmlu'" not in problems([str(tmp_path / "mmlu.json"), str(tmp_path / "broken.jsonl")],
                                              ", fields: [input]")
