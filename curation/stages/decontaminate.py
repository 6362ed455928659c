"""Benchmark decontamination: documents sharing word n-grams with evaluation sets (words by language)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from curation.dedup.decontam import DEFAULT_FIELDS, NgramIndex, benchmark_files
from curation.stages.base import Processed, ReadsFile, Stage, StageParams
from curation.stages.languages import LANG


class DecontaminateParams(StageParams):
    benchmarks: Annotated[list[str], ReadsFile("benchmark file or folder", folders=True)] = Field(
        ..., min_length=1,
        description="Benchmark files or folders (JSONL, JSON, CSV, gzipped or not). A file is one benchmark, "
        "named by its stem; a folder's files are named by their path below it (gsm8k/test).",
    )
    fields: list[str] | None = Field(
        None, description="Fields holding benchmark text (default: question, answer, prompt, canonical_solution, "
        "test: GSM8K's and HumanEval's).",
    )
    ngram: int = Field(13, ge=5, description="Words per n-gram, normalized (GPT-3's 13-gram overlap, Brown et al. "
                       "2020, appendix C); words by language: a document's by its `lang`, a benchmark item's by its "
                       "script (Chinese, Japanese, Thai... segmented).")
    action: Literal["drop", "mark"] = Field(
        "drop", description="drop: contaminated documents become rejects; mark: they stay, with the columns set."
    )


    def file_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """A benchmark that gives no n-gram to look for (a field misnamed, or only items shorter than `ngram` words)
        turned decontamination off without a word; a file that is no JSON, CSV or UTF-8 failed the run's start."""
        fields = ", ".join(self.fields or DEFAULT_FIELDS)
        problems: list[tuple[tuple[str | int, ...], str]] = []
        for j, path in enumerate(self.benchmarks):
            try:
                index = NgramIndex.from_paths(path, self.fields, self.ngram)
            except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                problems.append((("benchmarks", j), f"cannot read {path!r}: {exc}"[:500]))
                continue
            indexed = np.bincount(index.owner, minlength=len(index.names))
            problems += [(("benchmarks", j), f"benchmark {name!r} gives no n-gram of {self.ngram} words to look for: "
                          f"none of its records has text in a field of `fields` ({fields}) that long")
                         for name, count in zip(index.names, indexed.tolist(), strict=True) if not count]
        return problems


class Decontaminate(Stage):
    """Find documents that contain benchmark n-grams; drop (`contaminated`, detail: benchmark and hits) or mark.

    Adds `contamination` (the benchmark with most hits, null when clean) and `contamination_hits`;
    counts documents per benchmark in stats.json. The index is built once per worker in `setup`.
    """

    name = "decontaminate"
    Params = DecontaminateParams
    output_columns: ClassVar[dict[str, pa.DataType]] = {"contamination": pa.string(), "contamination_hits": pa.int32()}

    @property
    def count_keys(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(sorted(benchmark_files(self.params.benchmarks)))

    def setup(self) -> None:
        self.index = NgramIndex.from_paths(self.params.benchmarks, self.params.fields, self.params.ngram)

    def process(self, batch: pa.Table) -> Processed:
        found = self.index.find(batch.column("text"), batch.column(LANG) if LANG in batch.column_names else None)
        benchmark, hits = found.column("benchmark"), found.column("hits")
        table = batch.append_column("contamination", benchmark).append_column("contamination_hits", hits)
        names = np.asarray(benchmark.to_pylist(), dtype=object)
        counts = {key: (names == key).astype(np.int64) for key in self.count_keys}
        hit = names != None  # noqa: E711 -- elementwise over an object array
        if self.params.action == "mark":
            return Processed(table, pa.nulls(batch.num_rows, pa.string()), counts=counts)
        reasons = pa.array(np.where(hit, "contaminated", None), pa.string())
        details = pa.array([f"{b}: {h} n-grams" if b else None for b, h in zip(names, hits.to_pylist(), strict=True)],
                           pa.string())
        return Processed(table, reasons, details, counts=counts)
