"""Tokens by packing bucket: one documents file tokenized into buckets, one bucket mixed and packed.

A job's final documents are tokenized file by file into `_work/tokens/<shard>.parquet`, each row a
document with its source, split (validation or train), packing bucket, mixture hash and tokens,
rows grouped by bucket (one Parquet row group per bucket, so a packing task reads only its own).
A packing task then takes its bucket from every file, repeats or drops documents as the mixture
plan says, orders them by a seeded hash and packs them. Both are plain functions over files so
that any executor (Ray tasks here) can run them and a rerun finds their outputs in place.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import sentencepiece as spm

from curation import storage
from curation.lang.mixed import PARAGRAPHS
from curation.mixture import CLUSTER_SIZE, VALIDATION_SALT, MixtureParams, SourcePlan, histogram, unit_hash
from curation.tokens import fertility
from curation.tokens.pack import Packer, token_dtype
from curation.tokens.tokenizer import held_out_documents

BUCKET_SALT = 0xB0C7E7
ORDER_SALT = 0x0DE7
PACK_DOCS = 4096  # documents per Packer.add: bounds the packer's temporaries, not its output
ENCODE_DOCS = 1024  # documents per sentencepiece call in tokenize_file
SPLITS = ("train", "valid")


def processor(model: bytes) -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_proto=model)


def _token_lists(token_lists: list[list[int]], dtype: np.dtype) -> pa.ListArray:
    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = np.fromiter(itertools.chain.from_iterable(token_lists), dtype=dtype, count=int(offsets[-1]))
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))


def _encode(sp: spm.SentencePieceProcessor, texts: pa.ChunkedArray, dtype: np.dtype) -> pa.ChunkedArray:
    """Token lists of `texts`, ENCODE_DOCS at a time: sentencepiece returns Python ints (~50 bytes
    each), so only one chunk of them lives at once; the Arrow result holds 2 or 4 bytes a token."""
    chunks = [_token_lists(sp.encode(texts.slice(start, ENCODE_DOCS).to_pylist(), out_type=int, num_threads=1), dtype)
              for start in range(0, len(texts), ENCODE_DOCS)]
    return pa.chunked_array(chunks, type=pa.list_(pa.from_numpy_dtype(dtype)))


def tokenize_file(documents: str, out: str, model: bytes, *, buckets: int, seed: int,
                  validation: float, mixture: MixtureParams | None = None,
                  held_out: float | None = None) -> dict[str, Any]:
    """Tokenize one documents file into `out`; return (and store beside it) per source and split the
    documents and tokens (EOS included), the train split's token histogram, and per language the
    documents, characters and tokens (EOS left out) of the documents the tokenizer did not train on
    (`curation.tokens.fertility`): with a trained tokenizer's `held_out` share, those `held_out_documents`
    gives; None (a tokenizer given), every document. With the `mixture`'s `rehydrate`, each row keeps its
    `repeats` and weighs them in the histogram."""
    fs, path = storage.resolve(documents)
    columns = ["id", "source", "text"]
    columns += [c for c in ("lang", PARAGRAPHS) if c in pq.read_schema(path, filesystem=fs).names]
    table = storage.read_parquet(documents, columns)
    sp = processor(model)
    dtype = token_dtype(sp.get_piece_size())
    ids = table.column("id").to_pylist()
    tokens = _encode(sp, table.column("text"), dtype)
    rows = pa.table({
        "id": table.column("id"),
        "source": table.column("source"),
        "valid": pa.array(unit_hash(ids, VALIDATION_SALT) < validation),
        "bucket": pa.array((unit_hash(ids, seed ^ BUCKET_SALT) * buckets).astype(np.int32)),
        "u": pa.array(unit_hash(ids, seed)),
        "tokens": tokens,
        **_repeats(path, fs, mixture),
    }).sort_by([("bucket", "ascending"), ("id", "ascending")])
    summary = _summary(rows, sp.unk_id())
    unseen = np.ones(len(ids), bool) if held_out is None else held_out_documents(ids, held_out, validation)
    measured = table.filter(pa.array(unseen))
    sources = np.asarray(measured.column("source").to_pylist(), dtype=object)
    keys = fertility.language_keys(measured.column("text"), measured.column("lang") if "lang" in columns else None)
    chars = pc.fill_null(pc.utf8_length(measured.column("text")), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    counts = pc.list_value_length(tokens.filter(pa.array(unseen))).to_numpy(zero_copy_only=False).astype(np.int64)
    documents = np.ones(len(keys), np.int64)
    if PARAGRAPHS in columns:  # a mixed document's characters and tokens by its language parts
        row, lang, part_chars, part_tokens = fertility.by_part(
            measured.column("text"), measured.column(PARAGRAPHS),
            lambda parts: [len(t) for t in sp.encode(parts, out_type=int, num_threads=1)])
        chars[row] = counts[row] = 0
        sources, keys = np.concatenate([sources, sources[row]]), np.concatenate([keys, lang])
        chars, counts = np.concatenate([chars, part_chars]), np.concatenate([counts, part_tokens])
        documents = np.concatenate([documents, np.zeros(len(row), np.int64)])
    languages = fertility.count(sources, keys, chars, counts, documents)
    for source, counts in languages.items():
        summary[source]["languages"] = counts
    storage.write_json_atomic(summary_uri(out), summary, indent=None)  # first: the Parquet file marks the work as done
    out_fs, _ = storage.resolve(out)
    with storage.temp_path(out) as tmp, pq.ParquetWriter(tmp, rows.schema, filesystem=out_fs, compression="zstd") as w:
        bucket = rows.column("bucket").to_numpy()
        bounds = np.searchsorted(bucket, np.arange(buckets + 1))
        for b in range(buckets):  # one row group per bucket: a packing task reads only its own
            if bounds[b + 1] > bounds[b]:
                w.write_table(rows.slice(bounds[b], bounds[b + 1] - bounds[b]))
        if not rows.num_rows:
            w.write_table(rows)
    return summary


def _repeats(path: str, fs: Any, mixture: MixtureParams | None) -> dict[str, pa.Array]:
    """The `repeats` column of a documents file's rows where the mixture rehydrates by cluster size."""
    if mixture is None or mixture.rehydrate is None or CLUSTER_SIZE not in pq.read_schema(path, filesystem=fs).names:
        return {}
    sizes = pq.read_table(path, filesystem=fs, columns=[CLUSTER_SIZE]).column(CLUSTER_SIZE)
    return {"repeats": pa.array(mixture.repeats(sizes.to_numpy(zero_copy_only=False)), pa.int32())}


def _summary(rows: pa.Table, unk_id: int) -> dict[str, Any]:
    lengths = pc.list_value_length(rows.column("tokens")).to_numpy(zero_copy_only=False) + 1  # + EOS
    tokens = rows.column("tokens")
    at = pc.list_parent_indices(tokens).to_numpy()[pc.list_flatten(tokens).to_numpy() == unk_id]
    unknown = np.bincount(at, minlength=rows.num_rows)  # per document: text the tokenizer could not spell
    repeats = rows.column("repeats").to_numpy() if "repeats" in rows.column_names else None
    sources = np.asarray(rows.column("source").to_pylist(), dtype=object)
    valid = rows.column("valid").to_numpy(zero_copy_only=False)
    u = rows.column("u").to_numpy()
    out: dict[str, Any] = {}
    for source in sorted(set(sources)):
        mine = sources == source
        train = mine & ~valid
        out[source] = {
            "documents": {"train": int(train.sum()), "valid": int((mine & valid).sum())},
            "tokens": {"train": int(lengths[train].sum()), "valid": int(lengths[mine & valid].sum())},
            "unknown_tokens": {"train": int(unknown[train].sum())},
            "histogram": histogram(u[train], lengths[train], None if repeats is None else repeats[train]).tolist(),
        }
    return out


def summary_uri(tokens_file: str) -> str:
    return tokens_file.removesuffix(".parquet") + ".json"


def read_summary(tokens_file: str) -> dict[str, Any]:
    return storage.read_json(summary_uri(tokens_file))


def _bucket_rows(uri: str, bucket: int) -> pa.Table | None:
    """The rows of one bucket in a tokens file: its row group, found from the footer's statistics
    (one row group per bucket), read without the dataset machinery a filter would start."""
    fs, path = storage.resolve(uri)
    with fs.open_input_file(path) as f:
        parquet = pq.ParquetFile(f)
        column = parquet.schema_arrow.get_field_index("bucket")
        meta = parquet.metadata
        groups = [g for g in range(meta.num_row_groups)
                  if meta.row_group(g).num_rows and meta.row_group(g).column(column).statistics.min == bucket]
        if not groups:
            return None
        repeats = ["repeats"] if "repeats" in parquet.schema_arrow.names else []  # rehydrated by the mixture
        return parquet.read_row_groups(groups, columns=["id", "source", "valid", "u", "tokens", *repeats])


def bucket_rows(tokens_files: list[str], bucket: int) -> pa.Table | None:
    """Every document of one bucket, from every tokens file (each file read once for both splits)."""
    parts = [part for uri in tokens_files if (part := _bucket_rows(uri, bucket)) is not None]
    return pa.concat_tables(parts) if parts else None


def bucket_documents(rows: pa.Table | None, split: str, plans: dict[str, SourcePlan], seed: int) -> pa.Table:
    """The document copies of one bucket's split in packing order: (id, source, tokens).

    Train documents are repeated as their source's plan says; validation documents are taken once
    (from sources the mixture keeps), so the validation split measures the same sources without
    repeats. The order is a seeded hash of (id, copy number): the same on every rerun.
    """
    table = rows.filter(pc.equal(rows.column("valid"), split == "valid")) if rows is not None else None
    if table is None or not table.num_rows:
        return pa.table({"id": pa.array([], pa.string()), "source": pa.array([], pa.string()),
                         "tokens": pa.array([], pa.list_(pa.uint32()))})
    sources = np.asarray(table.column("source").to_pylist(), dtype=object)
    u = table.column("u").to_numpy()
    repeats = table.column("repeats").to_numpy() if "repeats" in table.column_names else None
    copies = np.zeros(table.num_rows, dtype=np.int64)
    for source, plan in plans.items():
        mine = sources == source
        copies[mine] = (plan.copies(u[mine], None if repeats is None else repeats[mine]) if split == "train"
                        else int(plan.target_tokens > 0))
    index = np.repeat(np.arange(table.num_rows), copies)
    copy = np.arange(index.size) - np.repeat(np.cumsum(copies) - copies, copies)
    ids = table.column("id").to_pylist()
    keys = unit_hash([f"{ids[i]}\x00{c}" for i, c in zip(index.tolist(), copy.tolist(), strict=True)],
                     seed ^ ORDER_SALT)
    return table.select(["id", "source", "tokens"]).take(pa.array(index[np.argsort(keys, kind="stable")]))


def pack_documents(documents: pa.Table, packer: Packer) -> Iterator[pa.Table]:
    """Rows packed from documents (id, tokens) in order, the final partial row included."""
    for start in range(0, documents.num_rows, PACK_DOCS):
        chunk = documents.slice(start, PACK_DOCS)
        tokens = chunk.column("tokens").combine_chunks()
        rows = packer.add_flat(chunk.column("id").combine_chunks(), tokens.flatten().to_numpy(),
                               pc.list_value_length(tokens).to_numpy(zero_copy_only=False))
        if rows.num_rows:
            yield rows
    last = packer.finish()
    if last.num_rows:
        yield last


def pack_bucket(tokens_files: list[str], bucket: int, plans: dict[str, SourcePlan], seed: int, out: dict[str, str],
                packer_args: dict[str, int]) -> dict[str, Any]:
    """Pack one bucket's document copies of each split into `out[split]` (an Arrow IPC stream file);
    return per split its rows, tokens, padded rows, and documents and tokens per source."""
    result = {}
    in_bucket = bucket_rows(tokens_files, bucket)
    for split in SPLITS:
        documents = bucket_documents(in_bucket, split, plans, seed)
        packer = Packer(**packer_args)
        fs, _ = storage.resolve(out[split])
        with storage.temp_path(out[split]) as tmp, fs.open_output_stream(tmp, compression=None) as sink, \
                pa.ipc.new_stream(sink, packer.schema) as writer:
            padded = 0
            for packed in pack_documents(documents, packer):
                writer.write_table(packed)
                padded += int(pc.sum(pc.less(packed.column("valid"), packer.width)).as_py() or 0)
        lengths = pc.list_value_length(documents.column("tokens")).to_numpy(zero_copy_only=False) + 1
        sources = documents.column("source").to_pylist()
        per_source: Counter[str] = Counter()
        for source, n in zip(sources, lengths.tolist(), strict=True):
            per_source[source] += n
        result[split] = {"rows": packer.rows, "tokens": packer.tokens, "padded_rows": padded,
                         "documents": dict(Counter(sources)), "tokens_per_source": dict(per_source)}
    return result
