"""The end of `curate run`: tokenizer, tokens, mixture plan, packing, shuffled shards, manifest.

Each phase is resumable from the job folder: the tokenizer is `tokenizer.model`, each documents
file's tokens are `_work/tokens/<shard>.parquet`, each bucket's packed rows
`_work/packed/<split>/bucket-NNNNN.arrow` (+ `.json` with its counts, written after it), each output
shard `shards/<split>-NNNNN.arrow`; `manifest.json` is written last, and a job whose manifest
exists is not packed again. The mixture plan needs only the token histograms each tokenizing task
returns, never a list of documents, and every task's memory is bounded by one bucket or one shard.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from curation import storage
from curation.job import document_files
from curation.mixture import SourcePlan, plan, shares
from curation.mixture import report as mixture_report
from curation.recipe import Recipe
from curation.tokens import fertility
from curation.tokens.buckets import SPLITS, pack_bucket, processor, read_summary, tokenize_file
from curation.tokens.config import TrainTokenizer
from curation.tokens.output_shards import shard_count, write_shard
from curation.tokens.pack import Packer
from curation.tokens.tokenizer import model_problem, text_bytes, train_from_documents
from curation.tokens.vocabulary import VocabularyError
from pipelines.executors import Executor

TOKENS, PACKED, SHARDS = "_work/tokens", "_work/packed", "shards"
TRAINING = "_work/tokenizer.json"
MANIFEST_FORMAT = "curation.packed/1"

Say = Callable[[str], None]


def _gather(executor: Executor, refs: list[Any], what: str, say: Say,
            fold: Callable[[Any], None] | None = None) -> list[Any]:
    """Wait for tasks in order of completion, saying how far along they are every few seconds; with
    `fold`, each result is handed to it as it arrives (and not kept) instead of returned in order."""
    started, last, done = time.time(), 0.0, 0
    pending = list(refs)
    while pending:
        ready, pending = executor.wait(pending, timeout=5)
        done += len(ready)
        if fold is not None:
            for ref in ready:
                fold(executor.result(ref))
        if time.time() - last > 5 and pending:
            last = time.time()
            say(f"  {what}: {done}/{len(refs)} tasks done ({time.time() - started:.0f} s)")
    return [] if fold is not None else [executor.result(ref) for ref in refs]


class NothingToPack(ValueError):
    """A job with `tokenizer:` and `pack:` whose stages kept no document."""


def _tokenizer(job_dir: str, recipe: Recipe, files: list[str], executor: Executor) -> bytes:
    """The job's `tokenizer.model` (copied or trained); a trained one's coverage choice goes to
    `_work/tokenizer.json` first, so that a resumed job reports it too."""
    target = storage.join(job_dir, "tokenizer.model")
    if storage.exists(target):  # copied or trained by an earlier run of this job
        return storage.read_bytes(target)
    config = recipe.tokenizer
    if config.model:
        data = storage.read_bytes(config.model)
    else:
        mixture = recipe.mixture
        in_mixture = {} if mixture is None else {"shares": shares(mixture.sources()), "max_epochs": mixture.max_epochs}
        trained = executor.result(executor.submit(_train, files, recipe.seed, recipe.pack.validation, config.train,
                                                  **in_mixture))
        if isinstance(trained, VocabularyError):
            raise trained
        data, coverage, sizing = trained
        settings = {k: v for k, v in config.train.model_dump().items() if k != "options" or v}
        storage.write_json_atomic(storage.join(job_dir, TRAINING), settings | {
            "character_coverage": coverage["character_coverage"], "character_coverage_choice": coverage,
            "vocabulary": sizing})
    if (problem := model_problem(data)) is not None:
        msg = f"tokenizer.model: {config.model!r} is {problem}" if config.model else f"the trained model is {problem}"
        raise ValueError(msg)
    storage.write_bytes_atomic(target, data)
    return data


def _train(files: list[str], seed: int, validation: float, settings: TrainTokenizer, **in_mixture: Any) -> Any:
    """`train_from_documents`, its refusal of a vocab_size returned rather than raised: a task's exception
    reaches the driver wrapped in the worker's traceback, and the refusal is one line."""
    try:
        return train_from_documents(files, seed, validation, settings, **in_mixture)
    except VocabularyError as exc:
        return exc


def _training(job_dir: str) -> dict[str, Any] | None:
    """The settings a tokenizer trained by this job was trained with (the character coverage as chosen, and
    how), None for a model copied in: the manifest's `tokenizer_training`."""
    training = storage.join(job_dir, TRAINING)
    return storage.read_json(training) if storage.exists(training) else None


def _tokenize(job_dir: str, recipe: Recipe, files: dict[str, str], model: bytes, buckets: int,
              executor: Executor, say: Say) -> tuple[dict[str, np.ndarray], fertility.Counts, Counter[str]]:
    """Tokenize every documents file not done yet; return each source's token histogram (train split), the
    documents, characters and tokens per language, and the train split's tokens and `<unk>` tokens, summed as the
    results arrive so that the driver never holds one summary per file."""
    outs = {shard: storage.join(job_dir, TOKENS, f"{shard}.parquet") for shard in files}
    todo = [s for s in files if not storage.exists(outs[s])]
    hists: dict[str, np.ndarray] = {}
    languages: fertility.Counts = {}
    train: Counter[str] = Counter()

    def fold(summary: dict[str, Any]) -> None:
        for source, part in summary.items():
            hist = np.asarray(part["histogram"], dtype=np.int64)
            hists[source] = hists[source] + hist if source in hists else hist
            fertility.add(languages, part.get("languages", {}))
            train.update(tokens=part["tokens"]["train"], unknown=part.get("unknown_tokens", {}).get("train", 0))

    for shard in files:
        if shard not in todo:
            fold(read_summary(outs[shard]))
    model_ref = executor.share(model)
    refs = [executor.submit(tokenize_file, files[s], outs[s], model_ref, buckets=buckets, seed=recipe.seed,
                            validation=recipe.pack.validation, mixture=recipe.mixture,
                            held_out=recipe.tokenizer.held_out_share()) for s in todo]
    _gather(executor, refs, "tokenize", say, fold)
    return hists, languages, train


def _pack(job_dir: str, recipe: Recipe, tokens_files: list[str], buckets: int, plans: dict[str, SourcePlan],
          packer_args: dict[str, int], executor: Executor, say: Say) -> list[dict[str, Any]]:
    def out(split: str, b: int) -> str:
        return storage.join(job_dir, PACKED, split, f"bucket-{b:05d}.arrow")

    records = [storage.join(job_dir, PACKED, f"bucket-{b:05d}.json") for b in range(buckets)]
    todo = [b for b in range(buckets) if not storage.exists(records[b])]
    refs = [executor.submit(_pack_and_record, tokens_files, b, plans, recipe.seed, {s: out(s, b) for s in SPLITS},
                            packer_args, records[b]) for b in todo]
    _gather(executor, refs, "pack", say)
    return [{**storage.read_json(records[b]), "files": {s: out(s, b) for s in SPLITS}} for b in range(buckets)]


def _pack_and_record(tokens_files: list[str], bucket: int, plans: dict[str, SourcePlan], seed: int,
                     out: dict[str, str], packer_args: dict[str, int], record: str) -> None:
    storage.write_json_atomic(record, pack_bucket(tokens_files, bucket, plans, seed, out, packer_args))


def _shards(job_dir: str, recipe: Recipe, packed: list[dict[str, Any]], executor: Executor,
            say: Say) -> dict[str, list[dict[str, Any]]]:
    refs: dict[str, list[Any]] = {}
    for split in SPLITS:
        rows = [p[split]["rows"] for p in packed]
        files = [p["files"][split] for p in packed]
        n = shard_count(sum(rows), recipe.pack.shard_rows)
        names = [f"{SHARDS}/{split}-{k:05d}.arrow" for k in range(n)]
        refs[split] = [(name, executor.submit(write_shard, files, rows, k, recipe.pack.shard_rows, recipe.seed,
                                              storage.join(job_dir, name))) for k, name in enumerate(names)]
    counts = _gather(executor, [ref for split in SPLITS for _, ref in refs[split]], "shuffle into shards", say)
    it = iter(counts)
    return {split: [{"file": name, **next(it)} for name, _ in refs[split]] for split in SPLITS}


def _split_totals(packed: list[dict[str, Any]], shards: list[dict[str, Any]], split: str) -> dict[str, Any]:
    documents: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for p in packed:
        documents.update(p[split]["documents"])
        tokens.update(p[split]["tokens_per_source"])
    return {
        "rows": sum(s["rows"] for s in shards),
        "tokens": sum(s["tokens"] for s in shards),
        "padded_rows": sum(p[split]["padded_rows"] for p in packed),
        "documents_per_source": dict(sorted(documents.items())),
        "tokens_per_source": dict(sorted(tokens.items())),
        "shards": shards,
    }


def _mixture_report(plans: dict[str, SourcePlan], achieved: dict[str, int]) -> dict[str, Any]:
    return mixture_report(plans, achieved)  # the real shortfall or excess per source, and its cause


def pack_job(job_dir: str, recipe: Recipe, shard_names: list[str], executor: Executor, *, say: Say,
             versions: dict[str, str]) -> dict[str, Any]:
    """Tokenize, mix, pack and shuffle the job's final documents; write and return the manifest."""
    manifest_uri = storage.join(job_dir, "manifest.json")
    if storage.exists(manifest_uri):
        written, why = _written(job_dir, manifest_uri)
        if written is not None:
            say("tokens: manifest.json exists, shards already written")
            return written
        say(f"tokens: {why}: packed again")
        storage.delete(manifest_uri)
    started = time.time()
    # the files of this run's shards the job recorded (shards that kept nothing have none), never another file
    wanted = set(shard_names)
    docs = {s: uri for s, uri in document_files(job_dir).items() if s in wanted}
    files = [docs[s] for s in sorted(docs)]
    if not files:
        msg = ("tokens: no document is left to tokenize and pack; the job folder's rejects/ holds those dropped, "
               "each with its stage and reason")
        raise NothingToPack(msg)
    model = _tokenizer(job_dir, recipe, files, executor)
    sp = processor(model)
    trained = _training(job_dir)
    say(f"tokenizer: {sp.get_piece_size():,} pieces ({'trained' if recipe.tokenizer.train else 'loaded'})" + (
        f", character coverage {trained['character_coverage']:g} ({trained['character_coverage_choice']['rule']})"
        if trained else ""))
    warning = (trained or {}).get("vocabulary", {}).get("warning")
    if warning:
        say(f"warning: {warning}")
    buckets = max(1, math.ceil(text_bytes(files) / recipe.pack.bucket_bytes)) if files else 1
    histograms, languages, train = _tokenize(job_dir, recipe, docs, model, buckets, executor, say)
    unknown = _unknown(train["tokens"], train["unknown"])
    if unknown["warning"]:
        say(f"warning: {unknown['warning']}")
    empty = np.zeros_like(next(iter(histograms.values())))
    for source in recipe.sources:  # a source whose documents were all dropped keeps its target, reported missed
        histograms.setdefault(source.name, empty)
    plans = plan(recipe.mixture, histograms)
    for source, p in sorted(plans.items()):
        why = "no documents" if not p.available_tokens else "max_epochs reached" if p.capped else "whole documents"
        note = f", SHORT by {p.shortfall_tokens:,} ({why})" if p.shortfall_tokens else ""
        say(f"  mixture {source}: {p.available_tokens:,} tokens available, target {p.target_tokens:,}, "
            f"{p.rate:.3f} epochs planned{note}")
    packer_args = {"seq_len": recipe.pack.seq_len, "eos_id": sp.eos_id(), "pad_id": sp.pad_id(),
                   "vocab_size": sp.get_piece_size()}
    tokens_files = [storage.join(job_dir, TOKENS, f"{s}.parquet") for s in sorted(docs)]
    packed = _pack(job_dir, recipe, tokens_files, buckets, plans, packer_args, executor, say)
    shards = _shards(job_dir, recipe, packed, executor, say)
    splits = {split: _split_totals(packed, shards[split], split) for split in SPLITS}
    layout = Packer(**packer_args)
    manifest = {
        "format": MANIFEST_FORMAT,
        "seq_len": recipe.pack.seq_len,
        "dtype": layout.dtype.name,
        "eos_id": layout.eos_id,
        "pad_id": layout.pad_id,
        "vocab_size": sp.get_piece_size(),
        "tokenizer": {"file": "tokenizer.model", "sha256": hashlib.sha256(model).hexdigest()},
        **({"tokenizer_training": trained} if trained else {}),
        "recipe_hash": recipe.fingerprint(),
        "seed": recipe.seed,
        "buckets": buckets,
        "validation_share": recipe.pack.validation,
        "mixture": _mixture_report(plans, splits["train"]["tokens_per_source"]),
        "fertility": fertility.report([languages]),
        "fertility_measured_on": _measured_on(recipe),
        "unknown_tokens": unknown,
        "splits": splits,
        "versions": versions,
        "seconds": round(time.time() - started, 3),
    }
    storage.write_json_atomic(manifest_uri, manifest)
    return manifest


def is_packed(job_dir: str) -> bool:
    """Whether the job's manifest and every shard it names are as written (`_written`): nothing left to pack."""
    uri = storage.join(job_dir, "manifest.json")
    return storage.exists(uri) and _written(job_dir, uri)[0] is not None


def _written(job_dir: str, manifest_uri: str) -> tuple[dict[str, Any] | None, str | None]:
    """The job's manifest when it and every shard it names are as written, else None and why: the manifest cut,
    or a shard gone or of other bytes than the manifest records (cut, replaced). Bad shards are deleted, so
    packing again writes them anew; the others are counted, not rewritten."""
    try:
        manifest = storage.read_json(manifest_uri)
        entries = [entry for split in manifest["splits"].values() for entry in split["shards"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, "manifest.json does not parse"
    sizes = {f"{SHARDS}/{name}": size for name, size in storage.file_sizes(storage.join(job_dir, SHARDS)).items()}
    bad = [e["file"] for e in entries if e["file"] not in sizes or sizes[e["file"]] != e.get("bytes", sizes[e["file"]])]
    if not bad:
        return manifest, None
    for file in bad:
        storage.delete(storage.join(job_dir, file))
    return None, f"{bad[0]} is gone or cut" + (f" (and {len(bad) - 1} more shards)" if len(bad) > 1 else "")


def _unknown(tokens: int, unknown: int) -> dict[str, Any]:
    """How many of the train split's `tokens` are the tokenizer's `<unk>`: text it cannot spell, lost from the shards
    (a model given without byte fallback meeting characters it never saw: Chinese through an English tokenizer)."""
    share = unknown / tokens if tokens else 0.0
    warning = (f"{unknown:,} of the {tokens:,} tokens of the train split's documents, before the mixture samples "
               f"them ({share:.2%}), are <unk>: each stands for a run of characters the tokenizer cannot spell, lost "
               "from the shards (a model without byte_fallback)") if unknown else None
    return {"tokens": unknown, "share": round(share, 6), "warning": warning}


def _measured_on(recipe: Recipe) -> dict[str, Any]:
    """Which documents the manifest's `fertility` counts: text the tokenizer never trained on."""
    share = recipe.tokenizer.held_out_share()
    if share is None:
        return {"documents": "all", "rule": "every document: the tokenizer was given (tokenizer.model), not trained "
                "on this corpus"}
    key = "tokenizer.train.held_out" if recipe.tokenizer.train else "tokenizer.held_out"
    return {"documents": "held_out", "held_out_share": share, "validation_share": recipe.pack.validation,
            "rule": f"held-out documents: the {share:.1%} ({key}) left out of the tokenizer's sample by a hash of "
            f"the id, and the {recipe.pack.validation:.1%} validation split"}


def token_stats(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest's figures for stats.json: per split without the shard list, the mixture, tokens per
    character (and on which documents), and the tokenizer's warning, if any."""
    splits = {s: {k: v for k, v in part.items() if k != "shards"} | {"shards": len(part["shards"])}
              for s, part in manifest["splits"].items()}
    warnings = [manifest.get("tokenizer_training", {}).get("vocabulary", {}).get("warning"),
                manifest.get("unknown_tokens", {}).get("warning"), _no_validation(manifest)]
    return {"seq_len": manifest["seq_len"], "vocab_size": manifest["vocab_size"], "splits": splits,
            "mixture": manifest["mixture"], "fertility": manifest.get("fertility", {}),
            "fertility_measured_on": manifest.get("fertility_measured_on", {}),
            "warnings": [w for w in warnings if w], "seconds": manifest["seconds"]}


def _no_validation(manifest: dict[str, Any]) -> str | None:
    """Why a validation split asked for holds nothing: a trainer then measures no validation loss, and an export
    writes an empty file."""
    share, rows = manifest.get("validation_share") or 0, manifest["splits"].get("valid", {}).get("rows", 0)
    if not share or rows:
        return None
    return (f"the validation split is empty: pack.validation takes {share:.1%} of the documents by a hash of their id, "
            "and none of this job's fell in it; with so few documents, raise pack.validation")
