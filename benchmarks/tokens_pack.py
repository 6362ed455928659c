"""Tokenize + pack on real texts: packing overhead, memory as input grows 10x, round trip, Megatron export.

Texts: the CCNet documents of `webtext/dolma_ccnet` plus the main text of every real HTML page
(trafilatura's and mozilla/readability's, extracted with resiliparse), repeated with distinct ids
to reach `--docs`. A BPE sentencepiece model is trained on them with `train_tokenizer`.

(a) tokens/s on one thread: plain `SentencePieceProcessor.encode` (batches of `--batch` texts,
    `num_threads=1`) against the same encode followed by `Packer.add` (and `finish`), best of
    `--repeats`, interleaved. Target: packing overhead under 20%.
(b) memory: a streaming encode -> `Packer.add` -> Arrow IPC file loop over `--mem-docs` and 10x
    that many documents, each size in a fresh subprocess; peak RSS of the loop (VmHWM reset
    before it) minus RSS before it. Target: 10x / 1x at most 1.3.
(c) round trip: every packed row is cut at its recorded provenance (doc_ids, doc_offsets,
    doc_lengths, doc_token_offsets), pieces are joined per document, and the detokenized result is
    compared with `sp.decode(sp.encode(text))`. Must be 0 mismatches, 0 lost, 0 doubled.
(d) Megatron export: the documents rebuilt in (c) are written with `MegatronWriter` and read back by
    a reader written here (struct + numpy.memmap); every document must equal encode(text) + [eos].
    Rates are printed beside a raw `ndarray.tofile` / memmap read of the same bytes (the limit).
    If megatron-core happens to be importable, its `IndexedDataset` reads the files as well.

    python benchmarks/tokens_pack.py [--docs 2500] [--mem-docs 1000] [--vocab 8000] [--seq-len 2048]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from curation.tokens import Packer, load_tokenizer, train_tokenizer
from curation.tokens.megatron import MegatronWriter, megatron_dtype

try:  # python benchmarks/tokens_pack.py puts benchmarks/ on sys.path
    from _data import data_root
    from _results import code_version, figure, write_results
    from warc_corpus import DataMissing, real_pages
except ImportError:  # python -m benchmarks.tokens_pack
    from benchmarks._data import data_root
    from benchmarks._results import code_version, figure, write_results
    from benchmarks.warc_corpus import DataMissing, real_pages

TARGET_OVERHEAD = 0.20
TARGET_MEMORY = 1.3
MB = 1 << 20
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}


def load_texts() -> list[str]:
    """Real texts in a stable order: CCNet documents, then the main text of each real HTML page."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    pages = real_pages()  # DataMissing when the data folder is absent
    texts: list[str] = []
    for path in sorted((data_root() / "webtext" / "dolma_ccnet").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            texts += [json.loads(line)["text"] for line in lines if line.strip()]
    for page in pages:
        html = page.html()
        text = extract_plain_text(bytes_to_str(html, detect_encoding(html)), main_content=True)
        if text.strip():
            texts.append(text)
    return [t for t in texts if t.strip()]


def repeat(texts: list[str], n: int) -> tuple[list[str], list[str]]:
    return [f"doc-{i:07d}" for i in range(n)], [texts[i % len(texts)] for i in range(n)]


def batches(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


# (a) -------------------------------------------------------------------------------------------

def time_plain(sp, texts: list[str], batch: int) -> tuple[float, float, int]:
    """Wall and CPU seconds of encoding every text, and the token count."""
    w0, c0 = time.perf_counter(), time.process_time()
    tokens = 0
    for chunk in batches(texts, batch):
        tokens += sum(len(t) for t in sp.encode(chunk, out_type=int, num_threads=1))
    return time.perf_counter() - w0, time.process_time() - c0, tokens


def time_packed(sp, ids: list[str], texts: list[str], batch: int, seq_len: int) -> tuple[float, float, float, int]:
    """Wall and CPU seconds of encode + pack, CPU seconds inside the packer alone, and the encoder's tokens."""
    packer = Packer.for_tokenizer(sp, seq_len)
    in_packer = 0.0
    w0, c0 = time.perf_counter(), time.process_time()
    for id_chunk, chunk in zip(batches(ids, batch), batches(texts, batch), strict=True):
        encoded = sp.encode(chunk, out_type=int, num_threads=1)
        c1 = time.process_time()
        packer.add(id_chunk, encoded)
        in_packer += time.process_time() - c1
    c1 = time.process_time()
    packer.finish()
    c2 = time.process_time()
    in_packer += c2 - c1
    return time.perf_counter() - w0, c2 - c0, in_packer, packer.tokens - packer.documents  # less the EOS


def throughput(sp, ids: list[str], texts: list[str], args: argparse.Namespace) -> list[dict]:
    plain, packed = [], []
    for _ in range(args.repeats):  # interleaved, so drift in machine load hits both alike
        wall, cpu, tokens = time_plain(sp, texts, args.batch)
        plain.append((cpu, wall))
        wall, cpu, in_packer, packed_tokens = time_packed(sp, ids, texts, args.batch, args.seq_len)
        packed.append((cpu, wall, in_packer))
    if packed_tokens != tokens:
        raise RuntimeError(f"the packer saw {packed_tokens} tokens, the encoder made {tokens}")
    plain_cpu, plain_wall = min(plain)
    packed_cpu, packed_wall, _ = min(packed)
    in_packer = min(p[2] for p in packed)
    overhead = packed_cpu / plain_cpu - 1
    print(f"\n(a) one thread, {len(texts):,} docs, {tokens:,} tokens, batches of {args.batch}, seq_len "
          f"{args.seq_len}, best of {args.repeats} (tokens/s per core = tokens / CPU seconds)")
    print(f"    {'':34} {'M tok/s/core':>12} {'CPU s':>7} {'wall s':>7}")
    for name, cpu, wall in (("peer: plain sp.encode", plain_cpu, plain_wall),
                            ("sp.encode + Packer.add/finish", packed_cpu, packed_wall),
                            ("inside Packer.add/finish only", in_packer, float("nan"))):
        print(f"    {name:34} {tokens / cpu / 1e6:12.3f} {cpu:7.2f} {wall:7.2f}")
    verdict = "ok" if overhead < TARGET_OVERHEAD else "OVER TARGET"
    print(f"    packing overhead {overhead:+.1%} (CPU, end to end; target < {TARGET_OVERHEAD:.0%}): {verdict}; "
          f"time inside the packer = {in_packer / plain_cpu:.1%} of plain encode")
    print("    STACK-NOTES peer figure: BPE encode 2.0M tok/s on 2 threads")
    return [figure(f"sp.encode + Packer.add/finish, {len(texts):,} docs, seq_len {args.seq_len}", tokens / packed_cpu,
                   "tokens/s per core", "plain sp.encode", tokens / plain_cpu,
                   target=f"< {TARGET_OVERHEAD:.0%} overhead", met=overhead < TARGET_OVERHEAD)]


# (b) -------------------------------------------------------------------------------------------

def rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def child_memory(args: argparse.Namespace) -> int:
    """One size of (b), in its own process: encode + pack + write rows, streaming."""
    sp = load_tokenizer(args.model)
    texts = json.loads(Path(args.texts).read_text(encoding="utf-8"))
    n = args.child_docs
    # Warm up on a few documents first: the first calls map pyarrow's IPC and compute code and
    # sentencepiece's tables (about 100 MB here), a one-off cost that would otherwise hide growth.
    warm = Packer.for_tokenizer(sp, args.seq_len)
    with ipc.new_file(pa.BufferOutputStream(), warm.schema) as writer:
        writer.write_table(warm.add(["w"] * 8, sp.encode(texts[:8], out_type=int, num_threads=1)))
        writer.write_table(warm.finish())
    del warm
    before = rss_kb("VmRSS")
    try:  # reset the high-water mark so the peak is the loop's own
        Path("/proc/self/clear_refs").write_text("5")
        reset = True
    except OSError:
        reset = False
    packer = Packer.for_tokenizer(sp, args.seq_len)
    out = Path(args.texts).with_name(f"rows-{n}.arrow")
    rows = biggest = 0
    with pa.OSFile(str(out), "wb") as sink, ipc.new_file(sink, packer.schema) as writer:
        for start in range(0, n, args.batch):
            idx = range(start, min(start + args.batch, n))
            chunk = [texts[i % len(texts)] for i in idx]
            encoded = sp.encode(chunk, out_type=int, num_threads=1)
            biggest = max(biggest, sum(map(len, encoded)))
            table = packer.add([f"doc-{i:08d}" for i in idx], encoded)
            rows += table.num_rows
            writer.write_table(table)
        table = packer.finish()
        rows += table.num_rows
        writer.write_table(table)
    out.unlink()
    print(json.dumps({"docs": n, "before_kb": before, "peak_kb": rss_kb("VmHWM"), "reset": reset,
                      "rows": rows, "tokens": packer.tokens, "biggest_batch": biggest}))
    return 0


def memory(model: Path, texts: list[str], workdir: Path, args: argparse.Namespace) -> list[dict]:
    # The 1x input is a whole number of batches and 10x is it ten times over, so both see the same
    # batches: the peak follows the largest batch (Python int lists from encode), which would
    # otherwise differ by how repeated texts happen to group, not by the input's size.
    n1 = -(-args.mem_docs // args.batch) * args.batch
    texts_file = workdir / "texts.json"
    texts_file.write_text(json.dumps(repeat(texts, n1)[1]), encoding="utf-8")
    results = []
    for n in (n1, 10 * n1):
        cmd = [sys.executable, __file__, "--child-docs", str(n), "--model", str(model), "--texts", str(texts_file),
               "--seq-len", str(args.seq_len), "--batch", str(args.batch)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["seconds"] = time.perf_counter() - t0
        results.append(result)
    print(f"\n(b) peak RSS of a streaming encode -> Packer.add -> Arrow IPC loop, fresh process per size "
          f"(1x: {n1:,} of the real texts; 10x: those 10 times over; batches of {args.batch})")
    for r in results:
        grow = (r["peak_kb"] - r["before_kb"]) / 1024
        print(f"    {r['docs']:>8,} docs {r['tokens']:>12,} tokens {r['rows']:>7,} rows: before loop "
              f"{r['before_kb'] / 1024:6.1f} MB, loop peak {r['peak_kb'] / 1024:6.1f} MB, increase {grow:6.1f} MB; "
              f"largest batch {r['biggest_batch']:,} tokens ({r['seconds']:.1f} s)"
              f"{'' if r['reset'] else ' [peak not reset: whole-process peak]'}")
    small, large = results
    grow_ratio = (large["peak_kb"] - large["before_kb"]) / max(small["peak_kb"] - small["before_kb"], 1)
    peak_ratio = large["peak_kb"] / small["peak_kb"]
    verdict = "ok" if grow_ratio <= TARGET_MEMORY else "OVER TARGET"
    print(f"    10x / 1x: increase {grow_ratio:.2f}x, whole peak {peak_ratio:.2f}x "
          f"(target <= {TARGET_MEMORY}x): {verdict}")
    return [figure(f"packer loop: peak increase, {large['docs']:,} / {small['docs']:,} docs", grow_ratio, "x",
                   "limit", TARGET_MEMORY, target=f"<= {TARGET_MEMORY}x", met=grow_ratio <= TARGET_MEMORY,
                   note=f"whole process {peak_ratio:.2f}x")]


# (c) -------------------------------------------------------------------------------------------

def pack_all(sp, ids: list[str], texts: list[str], args: argparse.Namespace) -> tuple[pa.Table, list[list[int]]]:
    packer = Packer.for_tokenizer(sp, args.seq_len)
    tables, encoded = [], []
    for id_chunk, chunk in zip(batches(ids, args.batch), batches(texts, args.batch), strict=True):
        tokens = sp.encode(chunk, out_type=int, num_threads=-1)
        encoded += tokens
        tables.append(packer.add(id_chunk, tokens))
    tables.append(packer.finish())
    return pa.concat_tables(tables), encoded


def rebuild(table: pa.Table, eos: int) -> tuple[dict[str, np.ndarray], int]:
    """Every document's token sequence from the packed rows, using only the provenance columns;
    returns the documents and the number of pieces out of order (gaps, overlaps, doubles)."""
    width = table.schema.field("tokens").type.list_size
    tokens = table.column("tokens").combine_chunks().flatten().to_numpy().reshape(-1, width)

    def flat(name: str) -> np.ndarray:
        return table.column(name).combine_chunks().flatten().to_numpy(zero_copy_only=False)

    lists = table.column("doc_ids").combine_chunks()
    row_of = np.repeat(np.arange(table.num_rows), np.diff(lists.offsets.to_numpy()))
    doc_ids, offsets, lengths, token_offsets = flat("doc_ids"), flat("doc_offsets"), flat("doc_lengths"), \
        flat("doc_token_offsets")
    pieces: dict[str, list[np.ndarray]] = defaultdict(list)
    sizes: dict[str, int] = defaultdict(int)
    bad = 0
    for row, doc, off, n, tok_off in zip(row_of, doc_ids, offsets, lengths, token_offsets, strict=True):
        if tok_off != sizes[doc]:
            bad += 1
        pieces[doc].append(tokens[row, off:off + n])
        sizes[doc] += int(n)
    docs = {doc: np.concatenate(parts) for doc, parts in pieces.items()}
    bad += sum(1 for d in docs.values() if d.size == 0 or d[-1] != eos)
    return docs, bad


def round_trip(sp, ids: list[str], texts: list[str], args: argparse.Namespace) -> tuple[dict, list]:
    table, encoded = pack_all(sp, ids, texts, args)
    docs, bad_pieces = rebuild(table, sp.eos_id())
    lost = sum(1 for i in ids if i not in docs)
    extra = len(set(docs) - set(ids))
    mismatches = 0
    for doc_id, text in zip(ids, texts, strict=True):
        if doc_id in docs and sp.decode(docs[doc_id][:-1].tolist()) != sp.decode(sp.encode(text)):
            mismatches += 1
    exact = sum(1 for doc_id, text in zip(ids, texts, strict=True)
                if doc_id in docs and sp.decode(docs[doc_id][:-1].tolist()) == text)
    verdict = "FAILED" if mismatches or lost or extra or bad_pieces else "ok"
    print(f"\n(c) round trip through {table.num_rows:,} packed rows of {args.seq_len + 1}: {len(ids):,} docs; "
          f"mismatches vs sp.decode(sp.encode(text)) {mismatches}, lost {lost}, unknown ids {extra}, "
          f"pieces out of order or doubled {bad_pieces} (all must be 0): {verdict}")
    print(f"    identical to the original text itself: {exact:,} of {len(ids):,} (the rest differ only where "
          "sentencepiece cannot represent the text, e.g. a leading space)")
    return docs, encoded


# (d) -------------------------------------------------------------------------------------------

def read_megatron(prefix: Path) -> tuple[dict, list[np.ndarray]]:
    """An independent reader of a Megatron `.idx`/`.bin` pair (struct + numpy.memmap)."""
    idx = Path(f"{prefix}.idx")
    with open(idx, "rb") as f:
        magic, version, code, n_seq, n_doc = struct.unpack("<9sQBQQ", f.read(34))
    if magic != b"MMIDIDX\x00\x00" or version != 1:
        raise ValueError(f"not a Megatron index: {magic!r} version {version}")
    lengths = np.memmap(idx, dtype="<i4", mode="r", offset=34, shape=(n_seq,))
    pointers = np.memmap(idx, dtype="<i8", mode="r", offset=34 + 4 * n_seq, shape=(n_seq,))
    doc_index = np.memmap(idx, dtype="<i8", mode="r", offset=34 + 12 * n_seq, shape=(n_doc,))
    dtype = np.dtype(DTYPES[code]).newbyteorder("<")
    # a plain ndarray view of the map: slicing a np.memmap subclass costs ~50 us per document
    data = np.memmap(Path(f"{prefix}.bin"), dtype=dtype, mode="r").view(np.ndarray)
    step = dtype.itemsize
    sequences = [data[p // step:p // step + n] for p, n in zip(pointers.tolist(), lengths.tolist(), strict=True)]
    header = {"code": code, "dtype": dtype.name, "sequences": n_seq, "doc_index": np.asarray(doc_index)}
    return header, sequences


def best_of(n: int, fn) -> float:
    seconds = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - t0)
    return min(seconds)


def megatron_export(sp, ids: list[str], docs: dict[str, np.ndarray], encoded: list[list[int]], workdir: Path) -> None:
    order = [d for d in ids if d in docs]
    lengths = np.array([docs[d].size for d in order])
    flat = np.concatenate([docs[d] for d in order])
    prefix = workdir / "megatron" / "corpus_text_document"
    vocab = sp.get_piece_size()
    raw = workdir / "raw.bin"

    def vectorized() -> None:
        with MegatronWriter(prefix, vocab_size=vocab) as writer:
            writer.add_documents(flat, lengths)  # rebuilt documents already end with EOS (= --append-eod)

    def one_by_one() -> None:
        with MegatronWriter(workdir / "megatron" / "one_by_one", vocab_size=vocab) as writer:
            for d in order:
                writer.add_document(docs[d])

    def raw_write() -> None:  # the limit: the same bytes, no index, no checks, no fsync
        flat.astype(dtype).tofile(raw)

    dtype = megatron_dtype(vocab)
    write_s, loop_s, raw_s = (best_of(3, f) for f in (vectorized, one_by_one, raw_write))
    def read() -> None:
        nonlocal header, sequences, checksum
        header, sequences = read_megatron(prefix)
        checksum = sum(int(s.sum(dtype=np.int64)) for s in sequences)

    def raw_read() -> None:  # the limit: one pass over the same bytes, no index
        nonlocal raw_sum
        raw_sum = int(np.memmap(raw, dtype=dtype, mode="r").sum(dtype=np.int64))

    header, sequences, checksum, raw_sum = {}, [], 0, -1
    read_s, raw_read_s = best_of(3, read), best_of(3, raw_read)
    eos = sp.eos_id()
    wrong = sum(1 for seq, toks in zip(sequences, encoded, strict=True)
                if seq.size != len(toks) + 1 or seq[-1] != eos or not np.array_equal(seq[:-1], toks))
    index_ok = header["sequences"] == len(encoded) and np.array_equal(header["doc_index"], np.arange(len(encoded) + 1))
    tokens, mbytes = flat.size, flat.size * dtype.itemsize / MB
    print(f"\n(d) Megatron export: {len(order):,} documents, {tokens:,} tokens, {header['dtype']} "
          f"(code {header['code']}), {mbytes:.1f} MB .bin + {Path(f'{prefix}.idx').stat().st_size / 1024:.0f} kB .idx")
    print(f"    write add_documents  {tokens / write_s / 1e6:8.1f} M tok/s {mbytes / write_s:8.0f} MB/s   "
          f"(limit, raw tofile without fsync: {tokens / raw_s / 1e6:.1f} M tok/s, ratio {raw_s / write_s:.2f})")
    print(f"    write add_document   {tokens / loop_s / 1e6:8.1f} M tok/s   (one call per document)")
    print(f"    read + sum per doc   {tokens / read_s / 1e6:8.1f} M tok/s {mbytes / read_s:8.0f} MB/s   "
          f"(limit, one memmap sum: {tokens / raw_read_s / 1e6:.1f} M tok/s, ratio {raw_read_s / read_s:.2f})")
    print(f"    every document == encode(text) + [eos]: {len(encoded) - wrong:,} of {len(encoded):,}; index "
          f"{'ok' if index_ok else 'WRONG'}; checksum {'ok' if checksum == raw_sum else 'WRONG'}: "
          f"{'ok' if not wrong and index_ok and checksum == raw_sum else 'FAILED'}")
    try:
        from megatron.core.datasets.indexed_dataset import IndexedDataset
    except Exception:  # optional peer reader: not a project dependency
        print("    (megatron-core not importable here: its own IndexedDataset was not tried)")
        return
    dataset = IndexedDataset(str(prefix))
    same = sum(1 for i, toks in enumerate(encoded) if np.array_equal(dataset[i], [*toks, eos]))
    print(f"    megatron-core IndexedDataset reads {len(dataset):,} sequences; equal documents: {same:,}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=2500, help="documents for (a), (c), (d); real texts repeated")
    p.add_argument("--mem-docs", type=int, default=1000, help="1x size of (b); 10x is also run")
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--batch", type=int, default=256, help="documents per encode/Packer.add call")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--child-docs", type=int, help=argparse.SUPPRESS)  # internal: one size of (b)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--texts", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child_docs:
        return child_memory(args)

    print(f"load average at start: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; code {code_version()}")
    try:
        t0 = time.perf_counter()
        base = load_texts()
    except DataMissing as e:
        print(f"skipped: {e}")
        return 0
    chars = sum(len(t) for t in base)
    print(f"{len(base):,} real texts, {chars / 1e6:.1f} M characters, loaded in {time.perf_counter() - t0:.1f} s")
    with tempfile.TemporaryDirectory(prefix="tokens-pack-") as tmp:
        workdir = Path(tmp)
        t0 = time.perf_counter()
        model = train_tokenizer(base, workdir / "sp", vocab_size=args.vocab, model_type="bpe", seed=0,
                                num_threads=os.cpu_count() or 1)
        sp = load_tokenizer(model)
        print(f"trained BPE vocab {args.vocab} on all of them in {time.perf_counter() - t0:.1f} s")
        ids, texts = repeat(base, args.docs)
        figures = throughput(sp, ids, texts, args) + memory(model, base, workdir, args)
        docs, encoded = round_trip(sp, ids, texts, args)
        megatron_export(sp, ids, docs, encoded, workdir)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    write_results("tokens_pack", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
