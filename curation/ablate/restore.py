"""`restore`: documents read back from a job's documents files, made whole again.

A job that continues from another job's documents reads them as `parquet` sources: the reader gives each
row a new id (from the file and position), the source's name, and puts every other column (the document's
own id, source, title and metadata, and the columns its stages added: `lang`, scores...) into `meta` as JSON.
This stage, first in such a job, puts them back where they were, with the types the documents file has, so
the stages after it see exactly what they would have seen in one job running every stage.
"""

from __future__ import annotations

import functools
import json
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field

from curation import schema, storage
from curation.stages.base import Processed, Stage, StageParams

OWN = ("id", "source", "title", "meta")  # document fields the reader replaced


@functools.cache
def _documents_schema(uri: str) -> pa.Schema:
    fs, path = storage.resolve(uri)
    return pq.read_schema(path, filesystem=fs)


class Restore(Stage):
    """Give documents read back from a job's documents files their own fields and columns again."""

    name: ClassVar[str] = "restore"
    input_columns: ClassVar[tuple[str, ...]] = ("meta",)

    class Params(StageParams):
        documents: str = Field(..., description="A documents file of the job read: its schema gives the columns.")

    @property
    def output_columns(self) -> dict[str, pa.DataType]:  # type: ignore[override]
        """The columns earlier stages added, besides the document fields."""
        own = {f.name for f in schema.DOCUMENT_FIELDS}
        return {f.name: f.type for f in _documents_schema(self.params.documents) if f.name not in own}

    def process(self, batch: pa.Table) -> Processed:
        written = _documents_schema(self.params.documents)
        metas = [json.loads(m) for m in batch.column("meta").to_pylist()]
        table = batch
        for name in (*OWN, *self.output_columns):
            table = _set(table, written.field(name), [m.get(name) for m in metas])
        return Processed(table, pa.nulls(table.num_rows, pa.string()))


def _set(table: pa.Table, column: pa.Field, values: list[object]) -> pa.Table:
    array = pa.array(values, column.type)
    if column.name in table.column_names:
        return table.set_column(table.schema.get_field_index(column.name), column, array)
    return table.append_column(column, array)

