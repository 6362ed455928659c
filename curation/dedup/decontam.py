"""Benchmark decontamination: an index of the n-grams of evaluation sets, looked up per document.

GPT-3 style: a document that shares any 13-word sequence with a benchmark item is contaminated.
Words are the same tokens as MinHash's (composed, lowercase, runs of letters, marks and digits, punctuation dropped,
`curation.dedup.minhash.language_tokens`), so "$18" in a crawled copy matches "18" in GSM8K, and
follow the language: a document's by its `lang`, a benchmark item's by its script, so Chinese and
Japanese (written without spaces) are segmented into words on both sides and a Chinese question
copied into a page is found. The index is a sorted numpy array of 64-bit n-gram
hashes with the benchmark each came from: 10 bytes per n-gram (GSM8K test + test_socratic and
HumanEval: 285k n-grams, 2.8 MB), small enough to ship to every worker as a broadcast object.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.dedup.exact import TextColumn, as_string_array
from curation.dedup.minhash import hash_tokens, language_tokens, ngram_hashes, shingle_hashes
from curation.text.columns import normalized

DEFAULT_FIELDS = ("question", "answer", "prompt", "canonical_solution", "test")
_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".csv", ".csv.gz")


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8")
    return path.open(encoding="utf-8")


def _records(path: Path) -> Iterable[Mapping[str, object]]:
    """Rows of a JSONL, JSON (a list of objects) or CSV file, gzipped or not."""
    name = path.name.removesuffix(".gz")
    with _open_text(path) as f:
        if name.endswith(".csv"):
            yield from csv.DictReader(f)
        elif name.endswith(".json"):
            data = json.load(f)
            yield from data if isinstance(data, list) else [data]
        else:
            for number, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield json.loads(line.rstrip())
                    except ValueError as exc:
                        msg = f"{path.name}, line {number}: {exc}"
                        raise ValueError(msg) from exc


def benchmark_files(paths: str | Path | Sequence[str | Path] | Mapping[str, str | Path]) -> dict[str, list[Path]]:
    """Benchmark name -> files. A file is named by its stem; a folder's files by their path below it
    without suffix (`gsm8k/test`); a mapping names its entries explicitly."""
    if isinstance(paths, Mapping):
        named = {name: _expand(Path(p)) for name, p in paths.items()}
        return {name: [f for f, _ in files] for name, files in named.items()}
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: dict[str, list[Path]] = {}
    for p in paths:
        for file, name in _expand(Path(p)):
            out.setdefault(name, []).append(file)
    return out


def _expand(path: Path) -> list[tuple[Path, str]]:
    def stem(f: Path) -> str:
        name = f.name
        for suffix in sorted(_SUFFIXES, key=len, reverse=True):
            if name.endswith(suffix):
                return name[: -len(suffix)]
        return f.stem

    if path.is_dir():
        files = sorted(f for f in path.rglob("*") if f.is_file() and f.name.endswith(_SUFFIXES))
        return [(f, str(f.relative_to(path).parent / stem(f)).removeprefix("./")) for f in files]
    if path.is_file():
        return [(path, stem(path))]
    msg = f"benchmark path not found: {path}"
    raise FileNotFoundError(msg)


@dataclass
class NgramIndex:
    """Sorted 64-bit n-gram hashes (`hashes`) and the benchmark index of each (`owner`, into `names`).

    An n-gram found in two benchmarks is stored once per benchmark. Items (fields) with fewer than
    `ngram` words cannot be matched and are counted in `short_items`.
    """

    names: list[str]
    hashes: np.ndarray  # uint64, sorted
    owner: np.ndarray  # uint16
    ngram: int = 13
    items: int = 0
    short_items: int = 0

    @classmethod
    def from_texts(cls, benchmarks: Mapping[str, Sequence[str]], ngram: int = 13,
                   min_letter_words: int = 3) -> NgramIndex:
        """Index benchmark name -> item texts (each field of each item is one text).

        n-grams with fewer than `min_letter_words` tokens holding a letter are not indexed: runs of
        numbers ("1 2 3 ... 13" in a HumanEval test and in a web page's pagination) prove nothing.
        """
        names = sorted(benchmarks)
        all_hashes, owners, items, short = [], [], 0, 0
        for b, name in enumerate(names):
            texts = [t for t in benchmarks[name] if t]
            tokens, offsets = language_tokens(_compatible(texts))  # an item's language is its script's
            shingles = ngram_hashes(hash_tokens(tokens), offsets, ngram)
            # A text shorter than `ngram` words yields one shingle of its length, which can never equal a
            # document's n-gram: leave it out, report it.
            long_text = np.diff(offsets) >= ngram
            informative = _informative(tokens, offsets, ngram, min_letter_words)
            items += len(texts)
            short += int(np.count_nonzero(~long_text))
            h = np.unique(shingles.hashes[np.repeat(long_text, shingles.counts())][informative])
            all_hashes.append(h)
            owners.append(np.full(len(h), b, dtype=np.uint16))
        hashes = np.concatenate(all_hashes) if all_hashes else np.zeros(0, np.uint64)
        owner = np.concatenate(owners) if owners else np.zeros(0, np.uint16)
        order = np.lexsort((owner, hashes))
        return cls(names, hashes[order], owner[order], ngram, items, short)

    @classmethod
    def from_paths(cls, paths: str | Path | Sequence[str | Path] | Mapping[str, str | Path],
                   fields: Sequence[str] | None = None, ngram: int = 13,
                   min_letter_words: int = 3) -> NgramIndex:
        """Index benchmark files (JSONL, JSON, CSV, gzipped or not, or folders of them).

        `fields`: the columns holding text to protect (default: question, answer, prompt,
        canonical_solution, test: GSM8K's and HumanEval's). Each field is indexed on its own, so
        n-grams never span two fields; fields a file lacks are skipped.
        """
        fields = tuple(fields or DEFAULT_FIELDS)
        texts: dict[str, list[str]] = {}
        for name, files in benchmark_files(paths).items():
            out = texts.setdefault(name, [])
            for file in files:
                for record in _records(file):
                    if not isinstance(record, Mapping):
                        msg = f"{file.name}: a record is {type(record).__name__}, not an object of fields"
                        raise ValueError(msg)
                    out.extend(str(record[f]) for f in fields if record.get(f) not in (None, ""))
        return cls.from_texts(texts, ngram, min_letter_words)

    def __len__(self) -> int:
        return len(self.hashes)

    @property
    def nbytes(self) -> int:
        return self.hashes.nbytes + self.owner.nbytes

    def hit_matrix(self, texts: TextColumn, langs: TextColumn | None = None) -> np.ndarray:
        """(documents x benchmarks) int32: distinct benchmark n-grams each document contains; `langs`: the
        documents' languages (None or null: by their script)."""
        shingles = shingle_hashes(_compatible(texts), ngram=self.ngram, unit="word", langs=langs)
        n_docs = len(shingles)
        out = np.zeros((n_docs, len(self.names)), dtype=np.int32)
        if not len(self.hashes) or not len(shingles.hashes):
            return out
        doc = np.repeat(np.arange(n_docs), shingles.counts())
        lo = np.searchsorted(self.hashes, shingles.hashes, side="left")
        hi = np.searchsorted(self.hashes, shingles.hashes, side="right")
        found = hi > lo
        if not found.any():
            return out
        # Expand matches to every benchmark that owns the n-gram (usually one).
        n_match = (hi - lo)[found]
        rows = np.repeat(np.flatnonzero(found), n_match)
        within = np.arange(n_match.sum()) - np.repeat(np.cumsum(n_match) - n_match, n_match)
        entry = np.repeat(lo[found], n_match) + within
        triples = np.unique(np.stack([doc[rows], self.owner[entry].astype(np.int64),
                                      shingles.hashes[rows].view(np.int64)], axis=1), axis=0)
        np.add.at(out, (triples[:, 0], triples[:, 1]), 1)
        return out

    def find(self, texts: TextColumn, langs: TextColumn | None = None) -> pa.Table:
        """Per document: `benchmark` (the one with most n-gram hits; null when clean) and `hits` (its count).

        `hit_matrix` gives every benchmark's count when a document matches several.
        """
        hits = self.hit_matrix(texts, langs)
        if hits.shape[1] == 0:
            return pa.table({"benchmark": pa.nulls(hits.shape[0], pa.string()),
                             "hits": pa.array(np.zeros(hits.shape[0], np.int32))})
        best = hits.argmax(axis=1)
        count = hits[np.arange(len(best)), best]
        names = np.array(self.names, dtype=object)[best]
        return pa.table({
            "benchmark": pa.array(np.where(count > 0, names, None), pa.string()),
            "hits": pa.array(count.astype(np.int32)),
        })



def _compatible(texts: TextColumn) -> pa.Array:
    """Texts in Unicode's compatibility form (NFKC): a copy in full-width letters (U+FF21..., as CJK pages
    write Latin) or with ligatures is the text it copies."""
    return normalized(as_string_array(texts), "NFKC")


def _informative(tokens: pa.Array, offsets: np.ndarray, n: int, min_letter_words: int) -> np.ndarray:
    """Per full n-gram window (documents of at least `n` tokens, in order): enough tokens with a letter?"""
    lengths = np.diff(offsets)
    full = lengths >= n
    counts = np.where(full, lengths - n + 1, 0)
    doc = np.repeat(np.arange(len(lengths)), counts)
    start = offsets[:-1][doc] + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    letters = pc.match_substring_regex(tokens, r"\p{L}").to_numpy(zero_copy_only=False)
    cumulative = np.concatenate([[0], np.cumsum(letters)])
    return cumulative[start + n] - cumulative[start] >= min_letter_words
