"""MegatronWriter, checked by a reader written here from the format description (Megatron-LM core
`indexed_dataset.py`), not with the writer's code: header, lengths, pointers, document indices,
dtype and every token."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from curation.tokens import megatron
from curation.tokens.megatron import MegatronWriter, megatron_dtype

CODES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}


def read_dataset(prefix: Path) -> dict:
    """An independent reader: struct for the header, numpy.memmap for the arrays."""
    idx = Path(f"{prefix}.idx")
    with open(idx, "rb") as f:
        head = f.read(34)
    magic, version, code, n_seq, n_doc = struct.unpack("<9sQBQQ", head)
    dtype = np.dtype(CODES[code]).newbyteorder("<")
    offset = 34
    lengths = np.memmap(idx, dtype="<i4", mode="r", offset=offset, shape=(n_seq,)) if n_seq else np.zeros(0, "<i4")
    offset += 4 * n_seq
    pointers = np.memmap(idx, dtype="<i8", mode="r", offset=offset, shape=(n_seq,)) if n_seq else np.zeros(0, "<i8")
    offset += 8 * n_seq
    doc_index = np.memmap(idx, dtype="<i8", mode="r", offset=offset, shape=(n_doc,))
    offset += 8 * n_doc
    assert offset == idx.stat().st_size, "trailing bytes in the index"
    bin_path = Path(f"{prefix}.bin")
    size = bin_path.stat().st_size
    data = np.memmap(bin_path, dtype=dtype, mode="r") if size else np.zeros(0, dtype)
    step = dtype.itemsize
    sequences = [np.asarray(data[p // step: p // step + n]) for p, n in zip(pointers, lengths, strict=True)]
    return {"magic": magic, "version": version, "code": code, "dtype": dtype, "n_seq": n_seq, "n_doc": n_doc,
            "lengths": np.asarray(lengths), "pointers": np.asarray(pointers), "doc_index": np.asarray(doc_index),
            "bin_size": size, "sequences": sequences}


def _random_docs(rng: np.random.Generator, n: int, high: int) -> list[np.ndarray]:
    docs = [rng.integers(0, high, size=int(k)) for k in rng.integers(0, 300, size=n)]
    docs[3] = np.zeros(0, dtype=np.int64)  # an empty document in the middle
    return docs


def test_round_trip_uint16(tmp_path):
    rng = np.random.default_rng(0)
    docs = _random_docs(rng, 50, 8000)
    prefix = tmp_path / "out" / "web_text_document"
    with MegatronWriter(prefix, vocab_size=8000) as w:
        for d in docs[:20]:
            w.add_document(d)
        w.add_documents(np.concatenate(docs[20:]), np.array([d.size for d in docs[20:]]))
    assert w.documents == 50 and w.tokens == sum(d.size for d in docs)

    ds = read_dataset(prefix)
    assert ds["magic"] == b"MMIDIDX\x00\x00" and ds["version"] == 1
    assert ds["code"] == 8 and ds["dtype"] == np.dtype("<u2")
    assert ds["n_seq"] == 50 and ds["n_doc"] == 51
    assert ds["lengths"].tolist() == [d.size for d in docs]
    expected_pointers = np.concatenate([[0], np.cumsum([d.size * 2 for d in docs])[:-1]])
    assert ds["pointers"].tolist() == expected_pointers.tolist()
    assert ds["doc_index"].tolist() == list(range(51))
    assert ds["bin_size"] == 2 * sum(d.size for d in docs)
    assert ds["lengths"][3] == 0 and ds["sequences"][3].size == 0
    for got, want in zip(ds["sequences"], docs, strict=True):
        np.testing.assert_array_equal(got, want)
    assert sorted(p.name for p in prefix.parent.iterdir()) == ["web_text_document.bin", "web_text_document.idx"]


def test_dtype_choice(tmp_path):
    assert megatron_dtype(32000) == np.uint16
    assert megatron_dtype(65536) == np.uint16  # ids up to 65535 still fit
    assert megatron_dtype(65537) == np.int32  # Megatron has no uint32
    assert megatron_dtype(256_000) == np.int32
    with pytest.raises(ValueError, match="does not fit"):
        megatron_dtype(1 << 32)

    top = np.array([0, 65535, 1], dtype=np.int64)
    with MegatronWriter(tmp_path / "a", vocab_size=65536) as w:
        w.add_document(top)
    ds = read_dataset(tmp_path / "a")
    assert ds["code"] == 8
    np.testing.assert_array_equal(ds["sequences"][0], top)

    big = np.array([70000, 0, 150_000, 65536], dtype=np.int64)
    with MegatronWriter(tmp_path / "b", vocab_size=150_001) as w:
        w.add_document(big)
        w.add_document(big[::-1].copy())
    ds = read_dataset(tmp_path / "b")
    assert ds["code"] == 4 and ds["dtype"] == np.dtype("<i4")
    assert ds["pointers"].tolist() == [0, 16] and ds["bin_size"] == 32
    np.testing.assert_array_equal(ds["sequences"][1], big[::-1])


def test_eod_and_empty_documents(tmp_path):
    lengths = np.array([0, 3, 0, 2, 0])
    flat = np.array([5, 6, 7, 8, 9])
    with MegatronWriter(tmp_path / "e", vocab_size=100, eod_id=2) as w:
        w.add_documents(flat, lengths)
        w.add_document(np.array([], dtype=np.int64))
        w.add_document([11])
    ds = read_dataset(tmp_path / "e")
    assert [s.tolist() for s in ds["sequences"]] == [[2], [5, 6, 7, 2], [2], [8, 9, 2], [2], [2], [11, 2]]
    assert ds["doc_index"].tolist() == list(range(8))

    with MegatronWriter(tmp_path / "none", vocab_size=100) as w:
        pass
    ds = read_dataset(tmp_path / "none")
    assert ds["n_seq"] == 0 and ds["n_doc"] == 1 and ds["doc_index"].tolist() == [0] and ds["bin_size"] == 0


def test_index_written_in_slices(tmp_path, monkeypatch):
    monkeypatch.setattr(megatron, "_CHUNK", 7)  # many slices: the running pointer must carry over
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 5, size=40)
    flat = rng.integers(0, 70_000, size=int(lengths.sum()))
    with MegatronWriter(tmp_path / "s", vocab_size=70_000) as w:
        w.add_documents(flat, lengths)
    ds = read_dataset(tmp_path / "s")
    assert ds["pointers"].tolist() == (np.concatenate([[0], np.cumsum(lengths)[:-1]]) * 4).tolist()
    assert ds["doc_index"].tolist() == list(range(41))
    np.testing.assert_array_equal(np.concatenate(ds["sequences"]), flat)


def test_errors(tmp_path):
    with MegatronWriter(tmp_path / "x", vocab_size=100) as w:
        with pytest.raises(ValueError, match="outside"):
            w.add_document(np.array([1, 100]))
        with pytest.raises(ValueError, match="outside"):
            w.add_document(np.array([-1]))
        with pytest.raises(ValueError, match="add up to"):
            w.add_documents(np.arange(5), np.array([2, 2]))
        with pytest.raises(ValueError, match="non-negative"):
            w.add_documents(np.arange(2), np.array([3, -1]))
        with pytest.raises(ValueError, match="integers"):
            w.add_document(np.array([1.5]))
        with pytest.raises(ValueError, match="1-D"):
            w.add_document(np.zeros((2, 2), dtype=np.int64))
        w.add_document(np.array([1, 2]))
    assert read_dataset(tmp_path / "x")["n_seq"] == 1  # rejected calls wrote nothing
    with pytest.raises(RuntimeError, match="closed"):
        w.add_document(np.array([1]))
    with pytest.raises(ValueError, match="eod_id"):
        MegatronWriter(tmp_path / "y", vocab_size=10, eod_id=10)


def test_exception_leaves_previous_dataset(tmp_path):
    prefix = tmp_path / "d"
    with MegatronWriter(prefix, vocab_size=50) as w:
        w.add_document(np.array([1, 2, 3]))
    before = (Path(f"{prefix}.bin").read_bytes(), Path(f"{prefix}.idx").read_bytes())
    with pytest.raises(KeyError), MegatronWriter(prefix, vocab_size=50) as w:
        w.add_document(np.array([4, 5]))
        raise KeyError("boom")
    assert (Path(f"{prefix}.bin").read_bytes(), Path(f"{prefix}.idx").read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.bin", "d.idx"]  # no temporary left


def test_megatron_core_reads_it(tmp_path):
    """When megatron-core is importable (it is not a project dependency), its own reader agrees."""
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset")
    rng = np.random.default_rng(2)
    for vocab in (32000, 100_000):
        docs = _random_docs(rng, 30, vocab)
        with MegatronWriter(tmp_path / f"m{vocab}", vocab_size=vocab, eod_id=1) as w:
            w.add_documents(np.concatenate(docs), np.array([d.size for d in docs]))
        dataset = indexed.IndexedDataset(str(tmp_path / f"m{vocab}"))
        assert len(dataset) == 30 and dataset.document_indices.tolist() == list(range(31))
        for i, d in enumerate(docs):
            np.testing.assert_array_equal(dataset[i], np.append(d, 1))
