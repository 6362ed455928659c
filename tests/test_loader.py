"""The trainer-side loader over packed shards: sharding, order, resume, labels, positions, provenance."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pyarrow as pa
import pytest
import torch

from curation.tokens import packed_schema
from curation.train.loader import IGNORE_INDEX, PackedDataset, PackedLoader, collate, permute

from .support.packed_job import EOS_ID, PAD_ID, build_job

SEQ_LEN = 16


@pytest.fixture(scope="module", params=[1000, 100_000], ids=["uint16", "uint32"])
def job(request, tmp_path_factory):
    return build_job(tmp_path_factory.mktemp("job"), seq_len=SEQ_LEN, vocab_size=request.param)


@pytest.fixture(scope="module")
def job16(tmp_path_factory):
    return build_job(tmp_path_factory.mktemp("job16"), seq_len=SEQ_LEN)


def plain_rows(path, split: str) -> pa.Table:
    """A split's rows in stored order, read without the loader: plain pyarrow over the manifest."""
    manifest = json.loads((path / "manifest.json").read_text())
    shards = manifest["splits"][split]["shards"]
    return pa.concat_tables(pa.ipc.open_stream(path / s["file"]).read_all() for s in shards)


def indices(batches) -> list[int]:
    return [i for b in batches for i in b["index"].tolist()]


def test_shards_readable_with_plain_pyarrow(job):
    manifest = json.loads((job.path / "manifest.json").read_text())
    vocab = manifest["vocab_size"]
    assert manifest["dtype"] == ("uint16" if vocab <= 65536 else "uint32")
    expected = packed_schema(SEQ_LEN, np.dtype(manifest["dtype"]), EOS_ID, PAD_ID)
    for split, meta in manifest["splits"].items():
        for shard in meta["shards"]:
            reader = pa.ipc.open_stream(job.path / shard["file"])
            batches = list(reader)
            assert reader.schema.equals(expected, check_metadata=True)
            assert sum(len(b) for b in batches) == shard["rows"]
        table = plain_rows(job.path, split)
        assert table.num_rows == meta["rows"] == job.splits[split].num_rows
        assert table.equals(job.splits[split])
        tokens = table.column("tokens").combine_chunks().flatten().to_numpy().reshape(table.num_rows, -1)
        assert tokens.dtype == np.dtype(manifest["dtype"]) and tokens.shape[1] == SEQ_LEN + 1
    assert len(manifest["splits"]["train"]["shards"]) > 1


def test_content_labels_and_padding(job):
    table = plain_rows(job.path, "train")
    tokens = table.column("tokens").combine_chunks().flatten().to_numpy().reshape(table.num_rows, -1)
    valid = table.column("valid").to_numpy()
    assert (valid < SEQ_LEN + 1).any(), "the fixture should put a padded row in train"
    ds = PackedDataset(job.path, batch_size=16, shuffle=False)
    seen = 0
    for batch in ds:
        rows = batch["index"].numpy()
        ids, labels = batch["input_ids"].numpy(), batch["labels"].numpy()
        assert batch["input_ids"].dtype == torch.int64 and batch["labels"].dtype == torch.int64
        assert (ids == tokens[rows, :-1]).all()
        real = np.arange(SEQ_LEN)[None, :] + 1 < valid[rows][:, None]
        assert (labels[real] == tokens[rows, 1:][real]).all()
        assert (labels[~real] == IGNORE_INDEX).all()
        seen += len(rows)
    assert seen == table.num_rows


def test_position_and_segment_ids_restart_at_document_starts(job16):
    table = plain_rows(job16.path, "train")
    ds = PackedDataset(job16.path, batch_size=32)
    for batch in ds:
        for row, pos, seg in zip(batch["index"].tolist(), batch["position_ids"].numpy(), batch["segment_ids"].numpy(),
                                 strict=True):
            valid = table.column("valid")[row].as_py()
            starts = {0} | {s for s in table.column("doc_starts")[row].as_py() if s < SEQ_LEN}
            if valid < SEQ_LEN:
                starts.add(valid)
            # doc_starts agree with the provenance pieces that begin a document
            piece = ds.pieces([row])[0]
            assert {o for o, t in zip(piece["doc_offsets"], piece["doc_token_offsets"], strict=True) if t == 0
                    and o < SEQ_LEN} == {s for s in table.column("doc_starts")[row].as_py() if s < SEQ_LEN}
            assert set(np.flatnonzero(pos == 0).tolist()) == starts
            for j in range(1, SEQ_LEN):
                assert pos[j] == (0 if j in starts else pos[j - 1] + 1)
                assert seg[j] == seg[j - 1] + (j in starts)
            assert seg[0] == 0


def test_every_row_once_across_ranks_and_workers(job16):
    n = job16.splits["train"].num_rows
    assert n % 2 == 0
    per_rank = []
    for rank in range(2):
        ds = PackedDataset(job16.path, rank=rank, world_size=2, seed=3, batch_size=5)
        got = indices(PackedLoader(ds, num_workers=2))
        # the workers' batches come back in the rank's order
        assert got == ds.rank_rows(0, ds.rows_per_rank, epoch=0).tolist()
        per_rank.append(got)
    assert len(per_rank[0]) == len(per_rank[1]) == n // 2
    assert sorted(per_rank[0] + per_rank[1]) == list(range(n))


@pytest.mark.parametrize("remainder", ["drop", "wrap", "uneven"])
def test_remainder_policies(job16, remainder):
    n, world = job16.splits["train"].num_rows, 3
    assert n % world
    ranks = [indices(PackedDataset(job16.path, rank=r, world_size=world, batch_size=7, remainder=remainder))
             for r in range(world)]
    counts = [len(r) for r in ranks]
    everything = [i for r in ranks for i in r]
    if remainder == "drop":
        assert counts == [n // world] * world and len(set(everything)) == len(everything)
    elif remainder == "wrap":
        assert counts == [-(-n // world)] * world and set(everything) == set(range(n))
        assert len(everything) - n == world - n % world
    else:
        assert sorted(everything) == list(range(n)) and max(counts) - min(counts) == 1


def test_order_deterministic_per_seed_and_epoch(job16):
    def order(seed: int, epoch: int) -> list[int]:
        return indices(PackedDataset(job16.path, seed=seed, epoch=epoch, batch_size=8))

    n = job16.splits["train"].num_rows
    assert order(0, 0) == order(0, 0)
    assert sorted(order(0, 0)) == list(range(n))
    assert order(0, 0) != order(0, 1)
    assert order(0, 0) != order(1, 0)
    assert order(0, 0) != list(range(n))
    ds = PackedDataset(job16.path, batch_size=8)
    first, second = indices(ds), indices(ds)  # a finished epoch moves on to the next
    assert first == order(0, 0) and second == order(0, 1) and ds.epoch == 2


def test_resume_in_process(job16):
    full = indices(PackedDataset(job16.path, seed=5, batch_size=6))
    ds = PackedDataset(job16.path, seed=5, batch_size=6)
    it = iter(ds)
    head = indices([next(it) for _ in range(7)])
    state = ds.state_dict()
    assert state["rows"] == 42 and state["epoch"] == 0
    fresh = PackedDataset(job16.path, batch_size=6)  # seed comes from the state
    fresh.load_state_dict(state)
    fresh.set_epoch(0)  # a resumed loop calling set_epoch with the same epoch keeps its place
    assert head + indices(fresh) == full
    other = PackedDataset(job16.path, batch_size=4)
    other.load_state_dict(state)
    assert head + indices(other) == full
    assert other.state_dict()["epoch"] == 1 and other.state_dict()["rows"] == 0


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("workers_after", [1, 2, 3])
def test_resume_with_workers(job16, workers_after):
    full = indices(PackedDataset(job16.path, rank=1, world_size=2, seed=9, batch_size=4))
    loader = PackedLoader(PackedDataset(job16.path, rank=1, world_size=2, seed=9, batch_size=4), num_workers=2)
    head = []
    for k, batch in enumerate(loader):
        head.append(batch)
        if k == 6:  # mid-round: worker 0 has prefetched batches the trainer never took
            break
    state = loader.state_dict()
    assert state["rows"] == 28
    resumed = PackedLoader(PackedDataset(job16.path, rank=1, world_size=2, batch_size=4), num_workers=workers_after)
    resumed.load_state_dict(state)
    assert len(resumed) == -(-(len(full) - 28) // 4)
    assert indices(head) + indices(resumed) == full
    assert resumed.state_dict()["epoch"] == 1


def test_resume_on_another_world_size(job16):
    n = job16.splits["train"].num_rows
    consumed = []
    states = []
    for rank in range(2):
        ds = PackedDataset(job16.path, rank=rank, world_size=2, seed=4, batch_size=5)
        it = iter(ds)
        consumed += indices([next(it), next(it)])
        states.append(ds.state_dict())
    assert states[0] == states[1]
    rest = []
    for rank in range(4):
        ds = PackedDataset(job16.path, rank=rank, world_size=4)
        ds.load_state_dict(states[0])
        rest += indices(ds)
    kept = (n // 4) * 4  # "drop" on four ranks leaves out the last n % 4 positions
    assert sorted(consumed + rest) == sorted(permute(np.arange(kept), n, 4, 0).tolist())
    with pytest.raises(ValueError, match="evenly"):
        PackedDataset(job16.path, rank=0, world_size=3).load_state_dict(states[0])


def test_drop_last_and_len(job16):
    ds = PackedDataset(job16.path, batch_size=10, drop_last=True)
    batches = list(ds)
    assert all(len(b["index"]) == 10 for b in batches)
    assert len(batches) == ds.rows_per_rank // 10
    ds2 = PackedDataset(job16.path, batch_size=10)
    assert len(ds2) == len(list(ds2)) == -(-ds2.rows_per_rank // 10)


def test_memory_mapped_without_copies(job16):
    ds = PackedDataset(job16.path)
    before = pa.total_allocated_bytes()
    chunks = ds._open()
    assert len(chunks) > 2  # several shards of several record batches
    assert pa.total_allocated_bytes() - before < 1024  # buffers stay inside the memory maps
    view = chunks[0].tokens
    assert not view.flags.owndata and not view.flags.writeable
    assert len(pickle.dumps(ds)) < 20_000  # workers get paths, not the data
    assert pickle.loads(pickle.dumps(ds))._chunks is None


def test_provenance_traces_rows_to_documents(job16):
    table = plain_rows(job16.path, "train")
    ds = PackedDataset(job16.path, batch_size=8)
    batch = next(iter(ds))
    rows = batch["index"]
    assert ds.provenance(rows) == [table.column("doc_ids")[i].as_py() for i in rows.tolist()]
    for row, piece in zip(rows.tolist(), ds.pieces(rows), strict=True):
        tokens = table.column("tokens")[row].as_py()
        for doc, offset, length, token_offset in zip(*piece.values(), strict=True):
            own = np.append(job16.docs[doc], EOS_ID)
            assert tokens[offset:offset + length] == own[token_offset:token_offset + length].tolist()


def test_collate_joins_batches(job16):
    it = iter(PackedDataset(job16.path, batch_size=3))
    a, b = next(it), next(it)
    joined = collate([a, b])
    assert joined["input_ids"].shape == (6, SEQ_LEN)
    assert joined["index"].tolist() == a["index"].tolist() + b["index"].tolist()


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 1000, 1025])
def test_permute_is_a_bijection(n):
    got = permute(np.arange(n), n, 7, 2)
    assert sorted(got.tolist()) == list(range(n))
    assert (permute(np.arange(n)[::-1], n, 7, 2) == got[::-1]).all()


def test_errors(job16, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"manifest\.json"):
        PackedDataset(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="format"):
        PackedDataset(tmp_path)
    with pytest.raises(ValueError, match="split"):
        PackedDataset(job16.path, split="test")
    with pytest.raises(ValueError, match="rank"):
        PackedDataset(job16.path, rank=2, world_size=2)
    with pytest.raises(ValueError, match="remainder"):
        PackedDataset(job16.path, remainder="pad")
    with pytest.raises(ValueError, match="another job or split"):
        PackedDataset(job16.path, split="valid").load_state_dict(PackedDataset(job16.path).state_dict())
    with pytest.raises(ValueError, match="persistent_workers"):
        PackedLoader(PackedDataset(job16.path), num_workers=1, persistent_workers=True)
    with pytest.raises(IndexError):
        PackedDataset(job16.path).provenance([10**6])
    manifest = json.loads((job16.path / "manifest.json").read_text())
    manifest["splits"]["train"]["shards"][0]["rows"] += 1
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "shards").symlink_to(job16.path / "shards")
    (broken / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="the manifest says"):
        next(iter(PackedDataset(broken)))
    manifest["splits"]["train"]["shards"][0]["rows"] -= 1
    manifest["dtype"] = "uint32"
    (broken / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="tokens are"):
        next(iter(PackedDataset(broken)))


def test_spawned_workers_reopen_the_shards(job16):
    ds = PackedDataset(job16.path, batch_size=64)
    ds._open()  # mapped in the parent; the spawned worker must get paths and map them itself
    got = indices(PackedLoader(ds, num_workers=1, multiprocessing_context="spawn"))
    assert got == ds.rank_rows(0, ds.rows_per_rank, epoch=0).tolist()


def test_a_token_id_past_the_vocabulary_is_refused_naming_the_row(tmp_path):
    """A shard with flipped bytes gave token 65535 with a vocabulary of 1,000: the loader used directly (no sha256 of
    the shards, as `curate train` checks) handed it to the model, whose embedding lookup fails far from the cause."""
    from curation.train.loader import PackedDataError

    build_job(tmp_path, seq_len=SEQ_LEN)
    shard = tmp_path / json.loads((tmp_path / "manifest.json").read_text())["splits"]["train"]["shards"][0]["file"]
    rows = pa.ipc.open_stream(shard.read_bytes()).read_all()  # in memory: the file is rewritten under it
    tokens = rows.column("tokens").combine_chunks()
    values = tokens.values.to_numpy().copy()
    values[5 * (SEQ_LEN + 1) + 3] = 65535  # in the sixth row
    flipped = pa.FixedSizeListArray.from_arrays(pa.array(values), type=tokens.type)
    with pa.OSFile(str(shard), "wb") as sink, pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows.set_column(rows.schema.get_field_index("tokens"), rows.schema.field("tokens"), flipped))
    ds = PackedDataset(tmp_path, "train", seed=1, batch_size=4, shuffle=False)
    assert ds.batch([0, 1, 2, 3])["input_ids"].max() < 1000
    with pytest.raises(PackedDataError, match="row 5 of the train split holds a token id past the vocabulary"):
        ds.batch([4, 5, 6])
