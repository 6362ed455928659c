"""A live progress line while a job runs, and the funnel table at its end."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from curation import schema, storage
from curation.mixture import warnings as mixture_warnings


class Progress:
    """Shards done of total, documents read, documents/s; plain lines when not on a terminal."""

    def __init__(self, total_shards: int, done_shards: int, enabled: bool = True) -> None:
        self.enabled = enabled
        self.total, self.done = total_shards, done_shards
        self.rows = 0
        self.started = time.time()
        self.last_line = 0.0
        self.console = Console(stderr=True)
        self.bar = RichProgress(
            TextColumn("shards"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(), console=self.console, transient=False,
        ) if enabled and self.console.is_terminal else None
        self.task = self.bar.add_task("run", total=total_shards, completed=done_shards, rate="") if self.bar else None

    def __enter__(self) -> Progress:
        if self.bar:
            self.bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.bar:
            self.bar.stop()

    def say(self, line: str) -> None:
        """One line of what the job does now (stderr), unless quiet."""
        if self.enabled:
            self.console.print(line, highlight=False)

    def update(self, batch: pa.Table, shards_completed: int) -> None:
        reasons = batch.column(schema.REASON).to_pylist()
        self.rows += sum(1 for r in reasons if r != schema.END_OF_SHARD)
        self.done += shards_completed
        elapsed = max(time.time() - self.started, 1e-9)
        rate = f"{self.rows:,} records, {self.rows / elapsed:,.1f}/s"
        if self.bar:
            self.bar.update(self.task, completed=self.done, rate=rate)
        elif self.enabled and (time.time() - self.last_line > 5 or self.done == self.total):
            self.last_line = time.time()
            print(f"shards {self.done}/{self.total}  {rate}", file=sys.stderr, flush=True)


def funnel_table(title: str, stages: list[dict[str, Any]]) -> Table:
    """One row per stage (`stats.json`'s stages, or the status service's funnel): documents in and out (those that
    went by unjudged included), the share of the judged ones kept, and per reason those dropped, the records skipped
    as no documents and those that went by unjudged."""
    table = Table(title=title, title_justify="left")
    for column in ("stage", "in", "out", "kept %", "dropped", "skipped (not documents)", "went by (unjudged)",
                   "MB in", "s"):
        left = column in ("stage", "dropped", "skipped (not documents)", "went by (unjudged)")
        table.add_column(column, justify="left" if left else "right")

    def reasons(counts: dict[str, int]) -> str:
        return "\n".join(f"{k} {v:,}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) or "-"

    for row in stages:
        # what went by is in and out too, so that one stage's out is the next one's in; kept % is of those judged
        passed = sum((row.get("bypassed") or {}).values())
        kept = f"{100.0 * row['docs_out'] / row['docs_in']:.1f}" if row["docs_in"] else "-"
        if passed and row["docs_in"]:  # "0.0" beside in 30, out 26 read as nothing kept: 0 of the 4 judged
            kept += f" of {row['docs_in']:,}"
        table.add_row(row["stage"], f"{row['docs_in'] + passed:,}", f"{row['docs_out'] + passed:,}", kept,
                      reasons(row["dropped"]), reasons(row.get("skipped") or {}), reasons(row.get("bypassed") or {}),
                      f"{row['bytes_in'] / 1e6:.2f}", f"{row['seconds']:.2f}")
    return table


def summary(stats: dict[str, Any], job_dir: str, console: Console | None = None) -> None:
    """The per-stage funnel, drop reasons and where the output is."""
    console = console or Console(width=None if Console().is_terminal else 120)
    console.print(funnel_table(f"{stats['job']}: funnel", stats["stages"]))
    for row in stats["stages"]:  # tallies a stage reports (langid's documents per script, pii's redactions...)
        counted = {k: v for k, v in (row.get("counts") or {}).items() if v}
        if counted:
            console.print(f"{row['stage']} counts: " + ", ".join(f"{k} {v:,}" for k, v in sorted(counted.items())),
                          markup=False, highlight=False)
    shards = stats["shards"]
    docs = stats["documents"]
    console.print(
        f"{docs['out']:,} documents kept of {docs['records_read']:,} records read "
        f"from {shards['total']} shards ({shards['skipped_already_done']} already done) "
        f"in {stats['wall_seconds']:.1f} s"
    )
    written = ["documents/", "rejects/", "stats.json", "events.jsonl", "recipe.yaml"]
    if "tokens" in stats:
        _token_summary(stats["tokens"], console)
        written = ["shards/", "manifest.json", "tokenizer.model", *written]
    here = [name for name in written if storage.exists(storage.join(job_dir, name.rstrip("/")))
            or storage.is_folder(storage.join(job_dir, name.rstrip("/")))]  # a job that kept nothing has no documents/
    console.print(f"output: {job_dir}  ({', '.join(here)})")


def _token_summary(tokens: dict[str, Any], console: Console) -> None:
    """The mixture, target beside achieved, and the packed splits."""
    table = Table(title="mixture (train tokens, EOS included)", title_justify="left")
    columns = ("source", "available", "target", "achieved", "target %", "achieved %", "epochs", "shortfall", "excess")
    for column in columns:
        table.add_column(column, justify="left" if column == "source" else "right")
    for source, m in tokens["mixture"].items():
        table.add_row(source, f"{m['available_tokens']:,}", f"{m['target_tokens']:,}", f"{m['achieved_tokens']:,}",
                      f"{100 * m['target_share']:.2f}", f"{100 * m['achieved_share']:.2f}", f"{m['epochs']:.3f}",
                      *(f"{m[key]:,}" if m.get(key) else "-" for key in ("shortfall_tokens", "excess_tokens")))
    console.print(table)
    for line in mixture_warnings(tokens["mixture"]):
        console.print(f"warning: {line}", style="yellow", markup=False, highlight=False)
    for split, part in tokens["splits"].items():
        console.print(f"{split}: {part['tokens']:,} tokens in {part['rows']:,} rows of {tokens['seq_len'] + 1} "
                      f"({part['padded_rows']} padded) in {part['shards']} shards")
    for line in tokens.get("warnings", []):
        console.print(f"warning: {line}", style="yellow", markup=False, highlight=False)
    _fertility(tokens.get("fertility", {}), tokens.get("fertility_measured_on", {}), console)


def _fertility(languages: dict[str, dict[str, Any]], measured_on: dict[str, Any], console: Console) -> None:
    """Tokens per character by language, on text the tokenizer did not train on: what it does to each language."""
    on = ("held-out documents" if measured_on.get("documents") == "held_out" else
          "every document, the tokenizer was not trained on them" if measured_on else "")
    if not languages:
        if on == "held-out documents":
            console.print(f"tokens per character: no held-out documents ({measured_on['rule']}); raise "
                          "tokenizer.train.held_out", markup=False, highlight=False)
        return
    title = f"tokens per character by language, on {on} (EOS left out)" if on else (
        "tokens per character by language (EOS left out)")
    table = Table(title=title, title_justify="left")
    for column in ("language", "documents", "characters", "tokens", "tokens/char"):
        table.add_column(column, justify="left" if column == "language" else "right")
    for lang, f in languages.items():
        per_char = "-" if f["tokens_per_char"] is None else f"{f['tokens_per_char']:.3f}"
        table.add_row(lang, f"{f['documents']:,}", f"{f['characters']:,}", f"{f['tokens']:,}", per_char)
    console.print(table)
