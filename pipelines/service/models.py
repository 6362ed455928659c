"""Response shapes, for the OpenAPI schema only: answers are built as dicts and sent as cached JSON bytes
(validating each of hundreds of polls per second would cost more than computing it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Counts(BaseModel):
    total: int
    done: int


class Shards(Counts):
    already_done: int = Field(0, description="Shards a previous run had finished (skipped by this run).")


class Rate(BaseModel):
    records_per_s: float | None = Field(None, description="Records read per second over the last 10 s.")
    mean_records_per_s: float | None = Field(None, description="Records read per second since the run started.")


class JobStatus(BaseModel):
    id: str = Field(..., description="The job folder's name: <recipe name>-<recipe hash prefix>.")
    name: str
    state: str = Field(..., description="pending, running, done, failed, or interrupted (its driver is gone).")
    phase: str = Field(..., description="documents, corpus:<stage>, final documents, or done.")
    error: str | None = None
    started: float | None = Field(None, description="Unix time of the latest run's start.")
    finished: float | None = None
    updated: float | None = Field(None, description="Unix time of the latest progress snapshot.")
    elapsed_seconds: float | None = None
    percent: float = Field(..., description="Shards plus corpus steps done, of all of them.")
    eta_seconds: float | None = Field(None, description="Estimated time left in the document stages.")
    shards: Shards
    corpus_steps: Counts
    records: int = Field(..., description="Input records read so far.")
    documents: int = Field(..., description="Documents kept so far (after corpus stages, once they ran).")
    rate: Rate
    stages: dict[str, list[str]] = Field(..., description="Document and corpus stage names of the recipe.")
    has: dict[str, bool] = Field(..., description="Which of stats, manifest, train metrics and rejects exist.")


class JobList(BaseModel):
    jobs: list[JobStatus]


class StageRow(BaseModel):
    stage: str
    kind: str = Field(..., description="read, document or corpus.")
    docs_in: int
    docs_out: int
    kept_percent: float | None
    dropped: dict[str, int] = Field(..., description="Documents dropped, per reason.")
    skipped: dict[str, int] = Field(..., description="Records counted that are not documents, per reason.")
    bypassed: dict[str, int] = Field(default_factory=dict, description="Rows that went by the stage unjudged, per "
                                     "reason (`only`, `not_html`, `language`): in neither docs_in nor docs_out")
    counts: dict[str, Any] = Field(default_factory=dict)
    bytes_in: int
    bytes_out: int
    seconds: float


class Funnel(BaseModel):
    job: str
    final: bool = Field(..., description="True once stats.json is written: the numbers no longer move.")
    stages: list[StageRow]


class RejectIndex(BaseModel):
    job: str
    stages: dict[str, dict[str, dict[str, int]]] = Field(
        ..., description="stage -> reason -> {dropped, sampled}: all drops, and those kept in rejects/.")


class RejectPage(BaseModel):
    job: str
    stage: str
    reason: str
    total: int = Field(..., description="Sampled rejects of this stage and reason.")
    offset: int
    limit: int
    rows: list[dict[str, Any]]


class DedupPage(BaseModel):
    job: str
    stage: str
    clusters_total: int
    removed_total: int
    offset: int
    limit: int
    clusters: list[dict[str, Any]] = Field(..., description="Each: survivor (document) and removed (documents).")


class Throughput(BaseModel):
    job: str
    started: float | None
    points: list[dict[str, float | int | None]]


class TrainCurve(BaseModel):
    job: str
    count: int = Field(..., description="Steps logged (before thinning to max_points).")
    points: list[dict[str, Any]]
    spikes: list[dict[str, Any]] = Field(..., description="spikes.jsonl entries (step, loss, reason, documents), "
                                         "else the flagged metrics lines.")
    last: dict[str, Any] | None


class AblationStatus(BaseModel):
    name: str = Field(..., description="The ablation's name: its results folder inside the ablations folder.")
    state: str = Field(..., description="pending, running, done, failed, or interrupted (its process is gone).")
    error: str | None = None
    phase: str = Field(..., description="The latest event: ablation_started, curation_done, training_started, "
                       "verification_started (mixture search), ablation_done...")
    started: float | None = None
    updated: float | None = None
    baseline: str | None = None
    variants: list[str]
    seeds: list[int] | None = None
    runs: Counts = Field(..., description="Training runs (variant x seed) finished, of those started.")
    has: dict[str, bool] = Field(..., description="results: the table and curves are written; mixture_search.")


class AblationList(BaseModel):
    ablations_dir: str | None = Field(..., description="The served ablations folder (none: `--ablations` not given).")
    ablations: list[AblationStatus]


class CurveSeries(BaseModel):
    variant: str
    seed: int
    set: str
    metric: str = Field(..., description="loss, bits_per_byte, accuracy or accuracy_norm.")
    steps: list[int]
    tokens: list[int] = Field(..., description="Tokens seen at each evaluated checkpoint.")
    values: list[float]


class AblationDetail(AblationStatus):
    about: dict[str, Any] | None = Field(None, description="results.json less its table: budget, seeds, reuse.")
    table: list[dict[str, Any]] = Field(..., description="Per variant, set and metric: mean and spread over seeds, "
                                        "difference from the baseline, whether it exceeds the seed spread.")
    curves: list[CurveSeries]
    overlap: dict[str, Any] | None = None
    mixture_search: dict[str, Any] | None = Field(None, description="mixture_search.json: proxies, fit, "
                                                  "proposal, verification.")
