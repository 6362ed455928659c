"""Sentencepiece tokenizers: train one deterministically from in-memory text, load, hash, encode.

Design choices, and why:

* Training reads an in-memory iterator (`sentence_iterator=`), so the sample comes from the curated
  corpus without a temporary text file, and the caller decides (with its own seed) which documents
  go in.
* `normalization_rule_name="identity"` and `remove_extra_whitespaces=False`: the curated text is
  already normalized by our own stages (Unicode NFC, whitespace policy), and sentencepiece's default
  `nmt_nfkc` would rewrite it again (compatibility forms, full-width characters, collapsed spaces),
  so detokenized rows would no longer match the curated documents and the tokenizer would silently
  own part of the text policy. With identity rules `sp.decode(sp.encode(text))` differs from `text`
  only where sentencepiece cannot represent it (e.g. a leading space eaten by the dummy prefix).
* `byte_fallback=True` by default: characters outside the vocabulary become byte pieces instead of
  `<unk>`, so no text is lost (essential for a round trip and for code and rare scripts).
* `character_coverage="auto"` chooses the coverage from the script mix of the sample
  (`curation.tokens.coverage`: 0.9995 for CJK-heavy samples). A recipe's `tokenizer.train` defaults to
  it, and to `split_digits` (every digit its own piece, so numbers are spelt the same way in every
  language and context, as LLaMA and PaLM do); this function keeps sentencepiece's behaviour for what
  it is not told.
* Determinism: sentencepiece's global random generator is seeded before training and training runs
  on one thread by default, so the same input and seed give a byte-identical `.model` (checked by
  `model_hash`). More threads are faster but are not promised to be reproducible. The model is
  returned in memory (`model_writer=`) and written by us, because sentencepiece otherwise records
  the output path (`model_prefix`) inside the model, so the same training in two folders would
  give two hashes. No `.vocab` file is written (the pieces are inside the `.model`).
"""

from __future__ import annotations

import hashlib
import io
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import sentencepiece as spm

from curation import storage
from curation.mixture import VALIDATION_SALT, unit_hash
from curation.tokens.config import TrainTokenizer
from curation.tokens.coverage import choose_coverage
from curation.tokens.vocabulary import (
    MIN_PIECE_USES,
    SIZE_STEP,
    Sizing,
    VocabularyError,
    merged_pieces,
    piece_uses,
    too_many_memorised,
    too_small,
)

ModelType = Literal["bpe", "unigram"]
AUTO = "auto"


def train_tokenizer(
    texts: Iterable[str],
    out_prefix: Path | str,
    vocab_size: int,
    model_type: ModelType = "bpe",
    seed: int = 0,
    byte_fallback: bool = True,
    *,
    character_coverage: float | Literal["auto"] = 0.9995,
    normalization_rule_name: str = "identity",
    max_sentence_length: int = 1 << 16,
    input_sentence_size: int = 0,
    num_threads: int = 1,
    pad_id: int = -1,
    **extra: Any,
) -> Path:
    """Train a sentencepiece model on `texts` and return the path of `<out_prefix>.model`.

    Each text is one training "sentence". `max_sentence_length` (bytes) is raised from
    sentencepiece's 4192 because documents are longer than sentences and would otherwise be skipped
    silently. `input_sentence_size=0` uses every text; a positive value lets sentencepiece sample
    that many with the seeded generator. `extra` passes any other trainer option through unchanged.
    Special ids keep sentencepiece's defaults (unk=0, bos=1, eos=2, no pad unless `pad_id` >= 0).
    `character_coverage="auto"` holds `texts` in memory to read them twice (`train_from_documents`
    reads its files twice instead).
    """
    if model_type not in ("bpe", "unigram"):
        msg = f"model_type must be 'bpe' or 'unigram', not {model_type!r}"
        raise ValueError(msg)
    if character_coverage == AUTO:
        texts = list(texts)
        character_coverage = choose_coverage(texts, vocab_size).character_coverage
    out_prefix = Path(out_prefix)
    out_prefix.parent.mkdir(parents=True, exist_ok=True)
    model = out_prefix.with_name(out_prefix.name + ".model")
    proto = io.BytesIO()
    spm.set_random_generator_seed(int(seed))
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=proto,
        vocab_size=int(vocab_size),
        model_type=model_type,
        byte_fallback=byte_fallback,
        character_coverage=character_coverage,
        normalization_rule_name=normalization_rule_name,
        remove_extra_whitespaces=False,
        max_sentence_length=max_sentence_length,
        input_sentence_size=input_sentence_size,
        shuffle_input_sentence=True,
        num_threads=num_threads,
        pad_id=pad_id,
        minloglevel=2,
        **extra,
    )
    data = proto.getvalue()
    if not data:
        msg = "sentencepiece returned no model"
        raise RuntimeError(msg)
    tmp = model.with_name(model.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(model)  # atomic: a reader never sees half a model
    return model


def load_tokenizer(path: Path | str) -> spm.SentencePieceProcessor:
    """Load a `.model` file (local path) into a processor."""
    return spm.SentencePieceProcessor(model_file=str(path))


def model_problem(data: bytes) -> str | None:
    """Why these bytes are no tokenizer a job can pack with (None: they are one): not a sentencepiece model, one
    without pieces (an empty file loads as such), or one without an EOS piece, which ends every packed document."""
    if not data:  # loads as a model of no pieces, which says "Model is not initialized" on stderr at each use
        return "an empty file, no sentencepiece model"
    try:
        sp = spm.SentencePieceProcessor(model_proto=data)
    except RuntimeError as exc:
        return f"not a sentencepiece model ({str(exc).splitlines()[0][:200]})"
    if sp.get_piece_size() == 0:
        return "a sentencepiece model without pieces"
    if sp.eos_id() < 0:
        return "a sentencepiece model without an EOS piece (eos_id -1): packing ends every document with one"
    return None


def model_hash(path: Path | str) -> str:
    """sha256 (hex) of the `.model` bytes: the identity of a tokenizer recorded in manifests."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def encode_batch(
    sp: spm.SentencePieceProcessor, texts: Sequence[str], num_threads: int = -1
) -> list[list[int]]:
    """Encode many texts in one call; sentencepiece's batched encode runs them on `num_threads`
    native threads (-1: all cores) outside the GIL, far faster than a Python loop of `encode`."""
    if not texts:
        return []
    return sp.encode(list(texts), out_type=int, num_threads=num_threads)


SAMPLE_SALT = 0x7E47
HELD_OUT_SALT = 0x4E1D_0075  # independent of the seed, like the validation split's: one set measures every seed


def text_bytes(files: Sequence[str]) -> int:
    """Uncompressed bytes of the `text` column, from Parquet footers (no data read)."""
    total = 0
    for uri in files:
        fs, path = storage.resolve(uri)
        meta = pq.read_metadata(path, filesystem=fs)
        column = meta.schema.to_arrow_schema().get_field_index("text")
        total += sum(meta.row_group(g).column(column).total_uncompressed_size for g in range(meta.num_row_groups))
    return total


def source_text_bytes(files: Sequence[str]) -> dict[str, int]:
    """Uncompressed bytes of the `text` column per `source`: from Parquet footers where a row group holds one
    source (its statistics say so: a documents file is one input shard), else from that row group's rows."""
    total: dict[str, int] = {}
    for uri in files:
        fs, path = storage.resolve(uri)
        parquet = pq.ParquetFile(path, filesystem=fs)
        names = parquet.schema_arrow.names
        text, source = names.index("text"), names.index("source")
        for g in range(parquet.metadata.num_row_groups):
            group = parquet.metadata.row_group(g)
            stats = group.column(source).statistics
            if stats is not None and stats.has_min_max and stats.min == stats.max and not stats.null_count:
                total[stats.min] = total.get(stats.min, 0) + group.column(text).total_uncompressed_size
                continue
            rows = parquet.read_row_group(g, columns=["source", "text"])
            sums = pa.table({"source": rows.column("source"), "n": pc.binary_length(rows.column("text"))})
            for row in sums.group_by("source").aggregate([("n", "sum")]).to_pylist():
                total[row["source"]] = total.get(row["source"], 0) + (row["n_sum"] or 0)
    return total


def sample_rates(files: Sequence[str], sample_bytes: int, shares: dict[str, float] | None = None,
                 max_epochs: float = 1.0) -> dict[str, float]:
    """Copies of each source's documents that make the tokenizer's sample (a rate below 1: that share of
    them, chosen by hash). Without `shares` every source is sampled alike, about `sample_bytes` in all. With
    the mixture's `shares` of the output, the sample has them too (by bytes of text): it is the largest one
    of at most `sample_bytes` in which no source repeats more than `max_epochs` times (the mixture's bound),
    so that a scarce source weighted up is as common in the sample as in the packed shards."""
    available = source_text_bytes(files)
    if shares is None:
        rate = min(1.0, sample_bytes / max(1, sum(available.values())))
        return dict.fromkeys(available, rate)
    wanted = {s: shares.get(s, 0.0) for s in available if available[s] > 0}
    limits = [max_epochs * available[s] / w for s, w in wanted.items() if w > 0]
    total = min([float(sample_bytes), *limits])
    return {s: total * w / available[s] for s, w in wanted.items()}


def held_out_documents(ids: Sequence[str], share: float, validation: float) -> np.ndarray:
    """Which documents no tokenizer trained by a job sees (bool per id): the `share` chosen by a hash of the id
    (`tokenizer.train.held_out`, independent of the seed like the validation split) and the validation split.
    Tokens per character are reported on them (`curation.tokens.fertility`)."""
    return (unit_hash(ids, HELD_OUT_SALT) < share) | (unit_hash(ids, VALIDATION_SALT) < validation)


def sample_texts(files: Sequence[str], rates: dict[str, float], seed: int, validation: float = 0.0,
                 held_out_share: float = 0.0) -> Iterator[str]:
    """Lines of a seeded sample of the documents in `files` (Parquet with `id`, `source` and `text`), never
    from the held-out documents (`held_out_documents`): `floor(rate)` copies of each document of a source, one more for
    the share `rate - floor(rate)` of them chosen by hash (`sample_rates`). Lines, because sentencepiece skips
    any "sentence" longer than its `max_sentence_length` and documents often are."""
    for uri in files:
        fs, path = storage.resolve(uri)
        table = pq.read_table(path, filesystem=fs, columns=["id", "source", "text"])
        ids = table.column("id").to_pylist()
        rate = np.array([rates.get(s, 0.0) for s in table.column("source").to_pylist()], dtype=np.float64)
        whole = np.floor(rate)
        copies = (whole + (unit_hash(ids, seed ^ SAMPLE_SALT) < rate - whole)).astype(np.int64)
        copies[held_out_documents(ids, held_out_share, validation)] = 0
        for text, n in zip(table.column("text").to_pylist(), copies.tolist(), strict=True):
            for _ in range(n):
                yield from (line for line in text.split("\n") if line.strip())


def train_sized(lines: Callable[[], Iterable[str]], settings: TrainTokenizer,
                seed: int) -> tuple[bytes, dict[str, Any], Sizing]:
    """Train on the sample `lines()` (read once per pass: coverage, training, piece counts) a vocabulary of
    `settings.vocab_size` pieces, or the size the sample supports (`curation.tokens.vocabulary`: a size too small is
    refused, a size too large refused with `hard_vocab_limit`, else lowered; finding that size trains again, a
    few times, only where the size asked is too large); return the
    `.model` bytes, how the character coverage was chosen (`Coverage.as_dict`; with a number, that number), and
    the sizing. With `auto`, each size tried gets the coverage chosen for it, so that the size found trains the
    same model when a recipe asks for it."""
    vocab_size, character_coverage, hard_vocab_limit = (settings.vocab_size, settings.character_coverage,
                                                        settings.hard_vocab_limit)
    coverages: dict[int, dict[str, Any]] = {}

    def coverage_for(size: int) -> dict[str, Any]:
        """The coverage a recipe asking for `size` pieces gets: the search below sizes what such a recipe trains."""
        if size not in coverages:
            coverages[size] = (choose_coverage(lines(), size).as_dict() if character_coverage == AUTO else
                               {"character_coverage": character_coverage, "rule": "set by the recipe"})
        return coverages[size]

    with tempfile.TemporaryDirectory() as tmp:

        def fit(size: int) -> Path:
            chosen = coverage_for(size)["character_coverage"]
            try:  # sentencepiece's own hard limit is off: the sizing below says what a short sample gives
                model = train_tokenizer(lines(), Path(tmp) / "tokenizer", size, settings.model_type, seed,
                                        settings.byte_fallback, character_coverage=chosen, hard_vocab_limit=False,
                                        split_digits=settings.split_digits, **settings.options)
            except RuntimeError as exc:
                refusal = too_small(exc, size, chosen)
                if refusal is None:
                    msg = f"tokenizer.train: sentencepiece failed on the sample: {exc}"
                    raise VocabularyError(msg) from None
                raise refusal from None
            return model

        def memorised(model: Path) -> tuple[int, int, int]:
            """Pieces, memorised pieces and merged pieces of a model."""
            sp = load_tokenizer(model)
            merged = merged_pieces(sp)
            return sp.get_piece_size(), int((piece_uses(sp, lines())[merged] < MIN_PIECE_USES).sum()), int(merged.sum())

        if next(iter(lines()), None) is None:  # sentencepiece's own word: `[!sentences_.empty()]`, in a traceback
            msg = ("tokenizer.train: no text is left for the tokenizer's sample: the validation split "
                   "(pack.validation) and the held-out share took every document; lower them, or give more documents")
            raise VocabularyError(msg)
        model = fit(vocab_size)
        possible, rare, merged = memorised(model)
        supported, best = possible, model.read_bytes()
        if too_many_memorised(rare, possible):  # the largest size that passes, by halves; no merge at all passes
            lo, hi = possible - merged, possible
            while hi - lo > max(SIZE_STEP, lo // 100):
                mid = (lo + hi) // 2
                pieces, mid_rare, _ = memorised(fit(mid))
                lo, hi = (pieces, hi) if not too_many_memorised(mid_rare, pieces) else (lo, mid)
            supported = lo
        sizing = Sizing(vocab_size, possible, rare, supported, hard_vocab_limit)
        refusal = sizing.refusal()
        if refusal is not None:
            raise refusal
        if not hard_vocab_limit and supported < possible:
            best = fit(supported).read_bytes()
            return best, coverage_for(supported), sizing
        return best, coverage_for(vocab_size), sizing


def train_from_documents(files: Sequence[str], seed: int, validation: float, settings: TrainTokenizer, *,
                         shares: dict[str, float] | None = None,
                         max_epochs: float = 1.0) -> tuple[bytes, dict[str, Any], dict[str, Any]]:
    """Train on a seeded sample of curated documents, in the mixture's `shares` where given (`sample_rates`),
    none of the held-out ones; return the `.model` bytes, how its character coverage was chosen and how its
    size (`train_sized`)."""
    rates = sample_rates(files, settings.sample_bytes, shares, max_epochs)
    model, coverage, sizing = train_sized(lambda: sample_texts(files, rates, seed, validation, settings.held_out),
                                          settings, seed)
    return model, coverage, sizing.as_dict()
