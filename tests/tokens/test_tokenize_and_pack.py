"""Tokenizer training and packing (engine-free): determinism, exact round trip, row layout."""

from __future__ import annotations

import gzip
import importlib.util
import json
import random

import numpy as np
import pyarrow as pa
import pytest

from curation.tokens import Packer, encode_batch, load_tokenizer, model_hash, train_tokenizer
from curation.tokens.pack import packed_schema, token_dtype
from tests.conftest import SAMPLE


def _sample_texts() -> list[str]:
    """Bundled notes and article paragraphs, plus seeded recombinations: a few hundred documents."""
    texts = []
    for line in gzip.decompress((SAMPLE / "notes.jsonl.gz").read_bytes()).split(b"\n"):
        try:  # the sample holds deliberately broken records; keep the readable ones
            texts.append(json.loads(line)["text"])
        except (ValueError, KeyError, TypeError):
            continue
    spec = importlib.util.spec_from_file_location("make_sample", SAMPLE / "make_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for _title, paragraphs in module.ARTICLES.values():
        texts.extend(paragraphs)
    sentences = [s.strip() + "." for t in texts for s in t.split(".") if s.strip()]
    rng = random.Random(7)
    docs = list(texts)
    for _ in range(300):
        docs.append(" ".join(rng.sample(sentences, rng.randint(1, 6))))
    return docs


TEXTS = _sample_texts()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_tokenizer(TEXTS, tmp_path_factory.mktemp("tok") / "sp", vocab_size=400, model_type="bpe", seed=1)


@pytest.fixture(scope="module")
def sp(model):
    return load_tokenizer(model)


def _docs(sp, n=None):
    texts = TEXTS[:n] if n else TEXTS
    ids = [f"doc-{i}" for i in range(len(texts))]
    return ids, texts, encode_batch(sp, texts)


def _pack(sp, ids, tokens, seq_len, batch=37):
    packer = Packer.for_tokenizer(sp, seq_len)
    tables = [packer.add(ids[i : i + batch], tokens[i : i + batch]) for i in range(0, len(ids), batch)]
    tables.append(packer.finish())
    return packer, pa.concat_tables(tables)


def _reassemble(table):
    """Per document, the concatenated token pieces, read only through the documented schema."""
    rows = table.to_pylist()
    pieces: dict[str, list[tuple[int, list[int]]]] = {}
    for row in rows:
        for doc_id, start, length, doc_offset in zip(
            row["doc_ids"], row["doc_offsets"], row["doc_lengths"], row["doc_token_offsets"], strict=True
        ):
            pieces.setdefault(doc_id, []).append((doc_offset, row["tokens"][start : start + length]))
    out = {}
    for doc_id, parts in pieces.items():
        seq: list[int] = []
        for doc_offset, part in parts:
            assert doc_offset == len(seq), "pieces of a document are contiguous and in order"
            seq.extend(part)
        out[doc_id] = seq
    return out


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_training_is_deterministic(tmp_path, model_type):
    a = train_tokenizer(TEXTS, tmp_path / "a" / "sp", vocab_size=400, model_type=model_type, seed=3)
    b = train_tokenizer(TEXTS, tmp_path / "b" / "sp", vocab_size=400, model_type=model_type, seed=3)
    assert a.name == "sp.model"
    assert model_hash(a) == model_hash(b)
    sp = load_tokenizer(a)
    assert sp.get_piece_size() == 400
    assert sp.piece_to_id("<0xE2>") != sp.unk_id()  # byte fallback pieces exist
    assert sp.decode(sp.encode("naïve — ünïcödé ✓")) == "naïve — ünïcödé ✓"


def test_train_rejects_unknown_model_type(tmp_path):
    with pytest.raises(ValueError, match="model_type"):
        train_tokenizer(TEXTS, tmp_path / "sp", vocab_size=400, model_type="word", seed=0)


def test_encode_batch_matches_single_encode(sp):
    texts = TEXTS[:20]
    assert encode_batch(sp, texts) == [sp.encode(t) for t in texts]
    assert encode_batch(sp, []) == []


@pytest.mark.parametrize("seq_len", [7, 64, 255])
def test_round_trip_every_document_exactly_once(sp, seq_len):
    ids, texts, tokens = _docs(sp)
    packer, table = _pack(sp, ids, tokens, seq_len)
    assert table.schema.equals(packed_schema(seq_len, np.uint16), check_metadata=False)
    assert table.column("tokens").type.list_size == seq_len + 1
    assert table.column("tokens").type.value_type == pa.uint16()
    seqs = _reassemble(table)
    assert sorted(seqs) == sorted(ids), "no document lost or doubled"
    eos = sp.eos_id()
    for doc_id, text, toks in zip(ids, texts, tokens, strict=True):
        seq = seqs[doc_id]
        assert seq == [*toks, eos]
        assert sp.decode(seq[:-1]) == sp.decode(sp.encode(text))
    total = sum(len(t) + 1 for t in tokens)
    assert packer.tokens == total == sum(table.column("valid").to_pylist())
    assert packer.documents == len(ids)
    assert len(table) == -(-total // (seq_len + 1))


def test_row_layout_and_padded_last_row(sp):
    ids, _texts, tokens = _docs(sp, 50)
    seq_len = 100
    w = seq_len + 1
    total = sum(len(t) + 1 for t in tokens)
    assert total % w, "the test needs a partial last row"
    _packer, table = _pack(sp, ids, tokens, seq_len, batch=5)
    grid = table.column("tokens").combine_chunks().flatten().to_numpy().reshape(len(table), -1)
    assert grid.dtype == np.uint16 and grid.shape[1] == w
    valid = table.column("valid").to_pylist()
    assert valid[:-1] == [w] * (len(table) - 1)
    assert valid[-1] == total % w
    pad = sp.pad_id() if sp.pad_id() >= 0 else sp.eos_id()
    assert (grid[-1, valid[-1] :] == pad).all()
    for row in table.to_pylist():
        # pieces tile [0, valid) in order; doc_starts are exactly the pieces beginning a document
        offsets, lengths = row["doc_offsets"], row["doc_lengths"]
        assert offsets[0] == 0
        assert [o + n for o, n in zip(offsets, lengths, strict=True)] == [*offsets[1:], row["valid"]]
        starts = [o for o, d in zip(offsets, row["doc_token_offsets"], strict=True) if d == 0]
        assert row["doc_starts"] == starts
        # each document ends with EOS right before the next document starts
        for s in starts:
            if s:
                assert row["tokens"][s - 1] == sp.eos_id()


def test_long_documents_split_over_rows(sp):
    long_text = " ".join(TEXTS[:40])
    tokens = encode_batch(sp, ["short one", long_text, "tail"])
    seq_len = 31
    assert len(tokens[1]) > 5 * (seq_len + 1)
    _packer, table = _pack(sp, ["a", "b", "c"], tokens, seq_len, batch=1)
    rows = table.to_pylist()
    b_rows = [r for r in rows if "b" in r["doc_ids"]]
    assert len(b_rows) >= 5
    middle = [r for r in b_rows if r["doc_ids"] == ["b"]]
    assert middle and all(r["doc_lengths"] == [seq_len + 1] and r["doc_starts"] == [] for r in middle)
    seqs = _reassemble(table)
    assert seqs["b"] == [*tokens[1], sp.eos_id()]
    assert sp.decode(seqs["b"]) == sp.decode(sp.encode(long_text))


def test_batching_does_not_change_rows(sp):
    ids, _texts, tokens = _docs(sp, 120)
    _p, one = _pack(sp, ids, tokens, 50, batch=len(ids))
    _p, many = _pack(sp, ids, tokens, 50, batch=3)
    _p, arrays = _pack(sp, ids, [np.asarray(t, dtype=np.int32) for t in tokens], 50, batch=11)
    assert one.equals(many) and one.equals(arrays)


def test_exact_fit_has_no_padding_row_and_empty_documents_kept():
    packer = Packer(seq_len=3, eos_id=2, pad_id=0, vocab_size=100)
    out = packer.add(["x", "empty", "y"], [[5, 6], [], [7, 8, 9, 10]])  # 3 + 1 + 5 = 9 tokens, w = 4
    assert len(out) == 2
    last = packer.finish()
    assert len(last) == 1 and last.column("valid").to_pylist() == [1]
    assert last.column("tokens").to_pylist() == [[2, 0, 0, 0]]
    table = pa.concat_tables([out, last])
    assert _reassemble(table) == {"x": [5, 6, 2], "empty": [2], "y": [7, 8, 9, 10, 2]}
    exact = Packer(seq_len=3, eos_id=2, vocab_size=100)
    assert len(exact.add(["a"], [[1, 1, 1]])) == 1
    assert len(exact.finish()) == 0


def test_dtype_choice_and_id_checks():
    assert token_dtype(65536) == np.uint16
    assert token_dtype(65537) == np.uint32
    big = Packer(seq_len=4, eos_id=1, vocab_size=100_000)
    table = pa.concat_tables([big.add(["a"], [[70_000, 3]]), big.finish()])
    assert table.column("tokens").type.value_type == pa.uint32()
    assert table.column("tokens").to_pylist()[0][:3] == [70_000, 3, 1]
    small = Packer(seq_len=4, eos_id=1)
    with pytest.raises(ValueError, match="outside"):
        small.add(["a"], [[70_000]])
    with pytest.raises(ValueError, match="document ids"):
        small.add(["a", "b"], [[1]])
