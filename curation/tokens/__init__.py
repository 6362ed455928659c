"""Tokenization and packing: the engine-free core of the end of the pipeline.

`tokenizer` trains/loads sentencepiece models; `pack` joins tokenized documents into fixed
`seq_len + 1` rows with document boundaries and provenance, as Arrow tables a trainer can read
without this package (the schema is documented in `curation.tokens.pack`).
"""

from curation.tokens.pack import Packer, packed_schema, token_dtype
from curation.tokens.tokenizer import encode_batch, load_tokenizer, model_hash, train_tokenizer

__all__ = [
    "Packer",
    "encode_batch",
    "load_tokenizer",
    "model_hash",
    "packed_schema",
    "token_dtype",
    "train_tokenizer",
]
