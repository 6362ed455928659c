"""The tokenizer's training sample: each source as common as the mixture makes it in the packed shards."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.tokens.tokenizer import sample_rates, sample_texts, source_text_bytes


def write(path, source: str | list[str], texts: list[str]) -> str:
    sources = source if isinstance(source, list) else [source] * len(texts)
    ids = [f"{path.stem}-{i}" for i in range(len(texts))]
    pq.write_table(pa.table({"id": ids, "source": sources, "text": texts}), path)
    return str(path)


@pytest.fixture
def files(tmp_path):
    big = write(tmp_path / "en.parquet", "en", [f"english line {i} " * 20 for i in range(400)])
    small = write(tmp_path / "zh.parquet", "zh", [f"中文 {i} " * 20 for i in range(40)])
    # a file whose row group mixes sources: its footer cannot say whose bytes they are, its rows can
    mixed = write(tmp_path / "mixed.parquet", ["en", "zh"], ["a" * 100, "b" * 300])
    return [big, small, mixed]


def test_bytes_per_source_from_footers_and_from_rows(files):
    big, small, mixed = files
    assert source_text_bytes([mixed]) == {"en": 100, "zh": 300}  # counted from the rows
    # a footer counts the column's uncompressed bytes: the texts, their lengths and page headers
    assert 7_800 < source_text_bytes([small])["zh"] < 1.1 * 7_800
    found = source_text_bytes(files)
    assert found["zh"] == source_text_bytes([small])["zh"] + 300
    assert found["en"] == source_text_bytes([big])["en"] + 100


def test_without_a_mixture_every_source_is_sampled_alike(files):
    rates = sample_rates(files, sample_bytes=10_000)
    assert set(rates) == {"en", "zh"} and rates["en"] == rates["zh"] < 1


def test_the_sample_has_the_mixtures_shares_and_repeats_no_more_than_it(files):
    available = source_text_bytes(files)
    rates = sample_rates(files, 1 << 30, {"en": 0.5, "zh": 0.5}, max_epochs=4)
    # zh, the scarce source, repeats max_epochs times; en gives as many bytes
    assert rates["zh"] == pytest.approx(4.0)
    assert rates["en"] * available["en"] == pytest.approx(rates["zh"] * available["zh"])
    lines = Counter(line for line in sample_texts(files, rates, seed=1) if line.startswith("中文"))
    assert set(lines.values()) == {4} and len(lines) == 40
    zh = sum(len(line.encode()) for line in sample_texts(files, rates, 1) if not line.isascii())
    total = sum(len(line.encode()) for line in sample_texts(files, rates, 1))
    assert zh / total == pytest.approx(0.5, abs=0.05)


def test_a_small_budget_keeps_the_shares_and_a_zero_weight_leaves_a_source_out(files):
    available = source_text_bytes(files)
    rates = sample_rates(files, 2_000, {"en": 0.75, "zh": 0.25})
    assert rates["en"] * available["en"] == pytest.approx(1_500)
    assert rates["zh"] * available["zh"] == pytest.approx(500)
    assert sample_rates(files, 2_000, {"en": 1.0, "zh": 0.0})["zh"] == 0
    assert not any(not line.isascii() for line in sample_texts(files, {"en": 1.0, "zh": 0.0}, seed=1))


def test_the_validation_split_is_never_sampled(files):
    assert list(sample_texts(files, {"en": 3.0, "zh": 3.0}, seed=1, validation=0.999999)) == []
