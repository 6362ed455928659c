"""The document batch contract shared by readers, stages and the job writer.

A batch is a `pa.Table` with the document columns below. While a batch flows through a
pipeline it also carries bookkeeping columns (prefix `_`): a row dropped by a stage stays in
the batch, marked with the stage and reason, so that the writer can count it, sample it into
`rejects/` and know when every row of an input shard has arrived.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

DOCUMENT_FIELDS = [
    pa.field("id", pa.string(), nullable=False),
    pa.field("source", pa.string()),
    pa.field("url", pa.string()),
    pa.field("title", pa.string()),
    pa.field("text", pa.string()),
    pa.field("meta", pa.string()),  # JSON object: provenance and the input's other fields
]

# Raw page bytes, present between reading and extraction only.
HTML = pa.field("html", pa.binary())

SHARD = "_shard"  # the input shard a row came from
STAGE = "_reject_stage"  # null while the row is kept
REASON = "_reject_reason"
DETAIL = "_reject_detail"
SHARD_ROWS = "_shard_rows"  # set on the end-of-shard marker row only
END_OF_SHARD = "_end_of_shard"  # REASON of that marker row
SKIPPED = "skipped"  # REASON prefix of records that are counted but are not documents

BOOKKEEPING_FIELDS = [
    pa.field(SHARD, pa.string()),
    pa.field(STAGE, pa.string()),
    pa.field(REASON, pa.string()),
    pa.field(DETAIL, pa.string()),
    pa.field(SHARD_ROWS, pa.int64()),
]

READ_SCHEMA = pa.schema([*DOCUMENT_FIELDS, HTML, *BOOKKEEPING_FIELDS])


JOB_HASH_CHARS = 10  # of a recipe's fingerprint in its job folder's name, `<name>-<hash>`

def metric_column(kind: str, stage: str) -> str:
    """Per-row measurement column a stage run adds: seconds, bytes in or bytes out."""
    return f"_{kind}:{stage}"


def count_column(stage: str, key: str) -> str:
    """Per-row tally a stage reports (summed into its `counts` in stats.json)."""
    return f"_n:{stage}:{key}"


# What ids hash. 2: the source's name and the file's path below the source's root (`curation.shards`); 1 hashed
# the file's absolute path. Part of `Recipe.fingerprint`, so a job of another scheme is never resumed into: its
# shards, named the other way, would be read again.
ID_SCHEME = 2


def document_id(name: str, position: int) -> str:
    """Stable id of the record at `position` of the input `name` (`read_shard`: source and file below its root):
    reruns, and the same files elsewhere, give the same ids."""
    return hashlib.blake2b(utf8_or_raw(f"{name}#{position}"), digest_size=12).hexdigest()


def utf8_or_raw(text: str) -> bytes:
    """`text` in UTF-8; a file name that is not UTF-8 (its bytes escaped as lone surrogates, as Python lists
    such names) back to its bytes on disk, so that it has an id too."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # surrogates that are no escaped bytes
        return text.encode("utf-8", "surrogatepass")


def is_bookkeeping(column: str) -> bool:
    return column.startswith("_")


def documents_table(texts: list[str | None], source: str = "local") -> pa.Table:
    """A batch of documents as a stage receives it (no drops yet), for running stages by hand:
    notebooks, benchmarks, tests. Ids derive from the position, as a reader's would."""
    n = len(texts)
    columns = {
        "id": [document_id(source, i) for i in range(n)], "source": [source] * n, "url": [None] * n,
        "title": [None] * n, "text": texts, "meta": ["{}"] * n, SHARD: [source] * n,
        STAGE: [None] * n, REASON: [None] * n, DETAIL: [None] * n, SHARD_ROWS: [None] * n,
    }
    return pa.table(columns, schema=READ_SCHEMA.remove(READ_SCHEMA.get_field_index("html")))
