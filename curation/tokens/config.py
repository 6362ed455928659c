"""Recipe keys of the end of the pipeline: `tokenizer:` and `pack:`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrainTokenizer(_Strict):
    """Train a sentencepiece model on a seeded sample of the curated documents (train split only), in the
    mixture's shares of the sources (`curation.tokens.tokenizer.sample_rates`)."""

    vocab_size: int = Field(32000, ge=300, le=1 << 22, description="Pieces in the vocabulary.")
    model_type: Literal["bpe", "unigram"] = Field("bpe", description="sentencepiece model type.")
    sample_bytes: int = Field(
        200 << 20, gt=0, description="About this many bytes of text (documents chosen by a seeded hash) train it.")
    character_coverage: Annotated[float, Field(gt=0, le=1)] | Literal["auto"] = Field(
        "auto", description="Share of the sample's characters the alphabet covers (the rest are spelt in bytes); "
        "auto: 0.9995 for a CJK-heavy sample, 1.0 where every character fits in 5% of the vocabulary, else 0.9995, "
        "lowered where the alphabet would take more than half of the pieces (`curation.tokens.coverage`).")
    split_digits: bool = Field(True, description="Every digit is a piece of its own (numbers spelt digit by digit).")
    byte_fallback: bool = Field(True, description="Unknown characters become byte pieces, never <unk>.")
    hard_vocab_limit: bool = Field(
        True, description="true: the vocabulary has exactly vocab_size pieces; a size the sample cannot make is "
        "refused in one line, one of many memorised phrases kept with a warning. false: it is lowered, with a "
        "warning, to what the sample supports (`curation.tokens.vocabulary`). A size below the sample's alphabet "
        "is refused either way.")
    held_out: float = Field(
        0.05, ge=0, lt=0.5, description="Share of documents, chosen by a hash of their id, left out of the sample "
        "(they are still packed): the tokens per character in the summary and manifest are measured on them and "
        "the validation split, text the tokenizer never saw.")
    options: dict[str, Any] = Field(
        default_factory=dict, description="Other sentencepiece trainer options, passed through unchanged.")

    @field_validator("options")
    @classmethod
    def _not_a_key(cls, value: dict[str, Any]) -> dict[str, Any]:
        keys = sorted(set(value) & set(cls.model_fields))
        if keys:
            msg = f"set {', '.join(keys)} as key(s) of `train`, not in `options`"
            raise ValueError(msg)
        if isinstance(value.get("eos_id"), int) and value["eos_id"] < 0:
            msg = "eos_id must be >= 0: packing ends every document with the EOS piece"
            raise ValueError(msg)
        return value


class TokenizerConfig(_Strict):
    """The sentencepiece model: an existing `.model` (path or URI) or one trained from the corpus."""

    model: str | None = Field(None, description="Path or URI of a sentencepiece `.model` file.")
    train: TrainTokenizer | None = Field(None, description="Train one from the curated documents instead.")
    held_out: float | None = Field(
        None, ge=0, lt=0.5, description="With `model`: the share of documents (by the hash of `train.held_out`) "
        "it was trained without, as `curate ablate`'s tokenizer is; tokens per character are measured on them "
        "and the validation split. Unset: on every document (the model was trained elsewhere).")

    @model_validator(mode="after")
    def _one(self) -> TokenizerConfig:
        if (self.model is None) == (self.train is None):
            msg = "give either `model` (a .model file) or `train` (its settings)"
            raise ValueError(msg)
        if self.held_out is not None and self.train is not None:
            msg = "`held_out` goes with `model`; a trained tokenizer's is `train.held_out`"
            raise ValueError(msg)
        return self

    def held_out_share(self) -> float | None:
        """The share of documents the tokenizer did not train on (besides the validation split); None: all."""
        return self.train.held_out if self.train is not None else self.held_out


class PackConfig(_Strict):
    """Packing into fixed rows of seq_len + 1 tokens, globally shuffled into Arrow IPC shards."""

    seq_len: int = Field(2048, ge=1, le=1 << 20, description="Tokens a trainer sees per row (rows hold seq_len + 1).")
    shard_rows: int = Field(8192, ge=1, description="Rows per shard file (the last shard of a split may be smaller).")
    validation: float = Field(
        0.0, ge=0, lt=1, description="Share of documents, chosen by a hash of their id, packed into `valid` "
        "shards instead of `train` (stable across reruns and seeds).")
    bucket_bytes: int = Field(
        256 << 20, gt=0, description="Text bytes per packing task; bounds each task's memory. Each task "
        "ends with one padded row.")
