"""The results folder of an ablation, `<output>/<name>/`, like a job folder: every file written whole under a
temporary name and renamed, so a reader never sees half of one and a rerun finds what is done.

    ablation.yaml      the ablation file as given (its hash in a comment)
    plan.json          per variant its curation recipe, chain of job folders and packed job; per job the
                       variants sharing it; how much curation was reused
    tokenizer.model    the one tokenizer of every variant
    overlap.json       per evaluation set and variant, the items that share an n-gram with its training data
    mixture_search.json  with `mixture_search:`, the proxies (weights, shares packed, scores), the fit, the
                       proposal and, once trained, the verification (`curation.ablate.mixture_search`)
    runs/<variant>/seed-<seed>/   a `curate train` folder (metrics.jsonl, events.jsonl, checkpoints/) with
                       eval/step-NNNNNNNN.json per evaluated checkpoint and done.json (the search's proxies'
                       runs too, as runs/proxy-NN/; they are not in the table or the curves)
    curves.parquet     every checkpoint's scores: variant, seed, step, tokens, set, metric, value
    results.json       the result table (`curation.ablate.stats.Row`s) and what it was computed with
    results.parquet    the same table
    events.jsonl       what the ablation did, when
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curation import storage
from curation.ablate.stats import METRICS, Row

ABLATION, PLAN, TOKENIZER, OVERLAP = "ablation.yaml", "plan.json", "tokenizer.model", "overlap.json"
MIXTURE = "mixture_search.json"
PROXY_PREFIX = "proxy-"  # runs/proxy-NN/: the mixture search's proxies
RUNS, CURVES, RESULTS, TABLE = "runs", "curves.parquet", "results.json", "results.parquet"
EVAL, DONE = "eval", "done.json"  # in a run's folder
CURVE_SCHEMA = pa.schema([("variant", pa.string()), ("seed", pa.int64()), ("step", pa.int64()),
                          ("tokens", pa.int64()), ("set", pa.string()), ("metric", pa.string()),
                          ("value", pa.float64())])


def run_dir(folder: str, variant: str, seed: int) -> str:
    return storage.join(folder, RUNS, variant, f"seed-{seed}")


def eval_file(train_dir: Path, step: int) -> Path:
    return train_dir / EVAL / f"step-{step:08d}.json"


def read_evaluations(train_dir: Path) -> list[dict[str, Any]]:
    """The run's checkpoint evaluations, by step."""
    folder = train_dir / EVAL
    return [json.loads(p.read_text()) for p in sorted(folder.glob("step-*.json"))] if folder.is_dir() else []


def read_done(train_dir: Path, steps: int, job: str) -> dict[str, Any] | None:
    """The run's record when it was trained and evaluated to `steps` on the packed job `job`, else None (a
    variant whose data changed, such as a mixture search's new proposal, is not done)."""
    path = train_dir / DONE
    record = json.loads(path.read_text()) if path.is_file() else None
    return record if record is not None and record["steps"] == steps and record.get("job") == job else None


def curves(folder: str, runs: dict[str, list[int]]) -> pa.Table:
    """Every evaluated checkpoint of the runs (`runs[variant]` = its seeds), one row per set and metric."""
    rows: dict[str, list[Any]] = {name: [] for name in CURVE_SCHEMA.names}
    for variant, seeds in runs.items():
        for seed in seeds:
            for record in read_evaluations(Path(run_dir(folder, variant, seed))):
                for set_name, scores in record["sets"].items():
                    for metric in (m for m in scores if m in METRICS):
                        values = (variant, seed, record["step"], record["tokens"], set_name, metric,
                                  float(scores[metric]))
                        for name, value in zip(CURVE_SCHEMA.names, values, strict=True):
                            rows[name].append(value)
    return pa.table(rows, schema=CURVE_SCHEMA)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def write_results(folder: str, rows: list[Row], curve_table: pa.Table, about: dict[str, Any]) -> None:
    """results.json (the table and `about`: baseline, spread factor, budget...), results.parquet, curves.parquet."""
    table = [r.as_dict() for r in rows]
    storage.write_bytes_atomic(storage.join(folder, CURVES), _parquet_bytes(curve_table))
    columns = {key: [r[key] for r in table] for key in Row.__dataclass_fields__}
    storage.write_bytes_atomic(storage.join(folder, TABLE), _parquet_bytes(pa.table(columns)))
    storage.write_json_atomic(storage.join(folder, RESULTS), {**about, "table": table})


@dataclass
class Results:
    """An ablation's results as `read_results` finds them (for the service, notebooks, mixture search)."""

    folder: str
    table: list[dict[str, Any]]  # results.json's rows (`Row.as_dict()`)
    about: dict[str, Any]  # results.json's other keys
    curves: pa.Table  # curves.parquet
    plan: dict[str, Any]
    overlap: dict[str, Any]
    mixture_search: dict[str, Any] | None  # mixture_search.json

    def row(self, variant: str, set_name: str, metric: str) -> dict[str, Any]:
        return next(r for r in self.table if (r["variant"], r["set"], r["metric"]) == (variant, set_name, metric))


def read_results(folder: str) -> Results:
    """The results of a finished ablation (FileNotFoundError while it has none)."""
    body = storage.read_json(storage.join(folder, RESULTS))
    fs, path = storage.resolve(storage.join(folder, CURVES))
    table = body.pop("table")
    overlap, search = storage.join(folder, OVERLAP), storage.join(folder, MIXTURE)
    plan = storage.read_json(storage.join(folder, PLAN))
    return Results(folder, table, body, pq.read_table(path, filesystem=fs), plan,
                   storage.read_json(overlap) if storage.exists(overlap) else {},
                   storage.read_json(search) if storage.exists(search) else None)
