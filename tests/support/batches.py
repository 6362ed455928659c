"""Document batches for stage tests: the columns a batch has when it reaches a stage."""

from __future__ import annotations

import pyarrow as pa

from curation import schema


def doc_batch(texts: list[str | None], source: str = "web") -> pa.Table:
    """One document per text, no drops yet, ids that look like real ones (hex digests)."""
    rows = [{"id": schema.document_id("test", i), "source": source, "url": None, "title": None, "text": t,
             "meta": "{}", schema.SHARD: "x", schema.STAGE: None, schema.REASON: None, schema.DETAIL: None,
             schema.SHARD_ROWS: None} for i, t in enumerate(texts)]
    return pa.Table.from_pylist(rows, schema=schema.READ_SCHEMA.remove(schema.READ_SCHEMA.get_field_index("html")))
