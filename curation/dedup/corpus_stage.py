"""The corpus-stage contract: a decision that needs every document (deduplication), engine-free.

A document stage judges each document alone; a corpus stage sees the whole corpus once the
document stages are done. Every corpus stage says:

- `columns()`: the document columns it reads (`sees` then leaves out the documents it must not see);
- `result(documents)`: its whole decision in one process, a `CorpusResult`: the documents it
  removes, the kept documents whose text it rewrites, how many it saw and what it reports to
  stats.json. It is the reference any spread-out run must equal, and what runs a small corpus;
- `runner`: the module of `pipelines/dedup/` that reaches the same result over a cluster with
  shuffles (None: the stage always runs in one process). Its own steps (`ExactDedup.keys`,
  `MinhashDedup.signed`, `BloomDedup.units`...) are what that runner spreads;
- optionally `signatures(documents)` (with `signed_per_file`): per-document work that an executor
  without shuffles runs a task per file, in parallel, before `result` (`minhash_dedup`'s MinHash);
- optionally `added_columns()` and `added_values(removals, earlier)`: columns it gives every kept document
  (`minhash_dedup`'s `minhash_cluster_size`), read off its removals and the earlier stages', so a rerun that
  finds them stored finds the columns too; the final documents get them (`AddedColumns`).

Decisions depend only on the set of documents, never on the order rows arrive in, so any number of
workers and any shard order give the same result.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.stages.base import Configured

REMOVALS = pa.schema([("id", pa.string()), ("reason", pa.string()), ("detail", pa.string())])
REWRITES = pa.schema([("id", pa.string()), ("text", pa.string())])


class CorpusResult(NamedTuple):
    """What a corpus stage decided, however it ran."""

    removals: pa.Table  # REMOVALS: each removed document with its reason and detail
    seen: int  # documents the stage saw
    rewrites: pa.Table  # REWRITES: kept documents with a new text (empty unless `may_rewrite`)
    report: dict[str, Any]  # extra entries of the stage's stats.json counters (JSON)


class AddedColumns(NamedTuple):
    """Columns a corpus stage gives the kept documents: `values` (`id` and the columns) for the documents
    whose value is not its column's default, `defaults` (column -> typed value) for all the others."""

    values: pa.Table
    defaults: dict[str, pa.Scalar]

    def apply(self, documents: pa.Table) -> pa.Table:
        """`documents` with the columns (replaced where they have them already)."""
        at = pc.index_in(documents.column("id"), value_set=self.values.column("id").combine_chunks())
        for name, default in self.defaults.items():
            column = pc.fill_null(self.values.column(name).combine_chunks().take(at), default)
            field = pa.field(name, default.type)
            where = documents.schema.get_field_index(name)
            documents = (documents.set_column(where, field, column) if where >= 0
                         else documents.append_column(field, column))
        return documents


class CorpusStage(Configured, ABC):
    input_columns: ClassVar[tuple[str, ...]] = ("id", "text")
    optional_columns: ClassVar[tuple[str, ...]] = ()  # read where the documents have them (`lang`)
    runner: ClassVar[str | None] = None  # its module in pipelines/dedup/; None: one process only
    # Spread over the cluster whatever the corpus size, where the executor shuffles.
    always_shuffled: ClassVar[bool] = False
    # `signatures` is per-document work: without shuffles, a task per file does it, in parallel.
    signed_per_file: ClassVar[bool] = False
    may_rewrite: ClassVar[bool] = False  # rewrites kept documents' text (stats.json counts them)

    def columns(self) -> list[str]:
        """Document columns the stage reads."""
        score = getattr(self.params, "score_column", None)
        return [*self.input_columns, *([score] if score else [])]

    def readable_columns(self, present: list[str]) -> list[str]:
        """What to read of documents with the columns `present`: `columns()`, `source`, and the
        `optional_columns` they have."""
        return sorted({*self.columns(), "source", *(c for c in self.optional_columns if c in present)})

    def sees(self, documents: pa.Table, removed: pa.Array | pa.ChunkedArray) -> pa.Table:
        """The documents this stage sees: of its `only` sources, less those earlier stages `removed` (ids)."""
        only = self.params.only
        if only is not None:
            documents = documents.filter(pc.is_in(documents.column("source"), pa.array(only, pa.string())))
        return documents.filter(pc.invert(pc.is_in(documents.column("id"), removed)))

    def signatures(self, documents: pa.Table) -> np.ndarray | None:
        """Per document, work that needs no other document (where `signed_per_file`), for `result`."""
        return None

    @abstractmethod
    def result(self, documents: pa.Table, signatures: np.ndarray | None = None) -> CorpusResult:
        """The stage's decision over `documents` in one process. `signatures`: `self.signatures(documents)`,
        where computed elsewhere (a task per file)."""

    def added_columns(self) -> dict[str, pa.Scalar]:
        """Columns the stage gives every kept document, with the value of those `added_values` does not list."""
        return {}

    def added_values(self, removals: pa.Table, earlier: pa.Table) -> pa.Table:
        """`id` and the `added_columns` of the kept documents whose values are not the defaults, from the
        stage's removals and the earlier corpus stages' (both REMOVALS)."""
        return pa.table({"id": pa.array([], pa.string())})

    def added(self, removals: pa.Table, earlier: pa.Table | None = None) -> AddedColumns | None:
        """What the final documents get from this stage (None: nothing); `earlier`: the removals of the corpus
        stages before it."""
        defaults = self.added_columns()
        earlier = REMOVALS.empty_table() if earlier is None else earlier.select(REMOVALS.names)
        return AddedColumns(self.added_values(removals, earlier), defaults) if defaults else None

    def reference(self, documents: pa.Table, signatures: np.ndarray | None = None) -> pa.Table:
        """The removals of `result`: what any spread-out run must remove."""
        return self.result(documents, signatures).removals
