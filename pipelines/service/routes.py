"""Read-only JSON endpoints over the jobs folder (`/api/...`)."""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response

from curation import inspect
from curation.progress import JobFolder
from pipelines.service import models
from pipelines.service.jobs import JOB_ID, NAME, Jobs, dumps

router = APIRouter(prefix="/api")

JobId = Annotated[str, Path(pattern=JOB_ID, max_length=200, description="Job folder name, e.g. quickstart-1a2b3c4d5e")]
Name = Annotated[str, Path(pattern=NAME, max_length=200)]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="Rows to skip.")]
Limit = Annotated[int, Query(ge=1, le=500, description="Rows to return.")]
Chars = Annotated[int, Query(ge=0, le=100_000, description="Cut texts to this many characters.")]
DOCUMENT_COLUMNS = ("id", "source", "url", "title", "text", "meta", "detail")


def _json(value: bytes) -> Response:
    return Response(content=value, media_type="application/json")


def _jobs(request: Request) -> Jobs:
    return request.app.state.jobs


def _job(request: Request, job: str) -> JobFolder:
    folder = _jobs(request).get(job)
    if folder is None:
        raise HTTPException(status_code=404, detail=f"no job {job!r}")
    return folder


def _cut(row: dict[str, Any], chars: int) -> dict[str, Any]:
    text = row.get("text")
    if isinstance(text, str) and len(text) > chars:
        row = {**row, "text": text[:chars], "text_truncated": True, "text_chars": len(text)}
    return row


@router.get("/jobs", response_model=None, responses={200: {"model": models.JobList}}, summary="All jobs, newest first")
async def jobs(request: Request) -> Response:
    registry = _jobs(request)

    def compute() -> bytes:
        folders = [registry.get(i) for i in registry.ids()]
        return dumps({"jobs": [f.status() for f in folders if f is not None]})

    return _json(registry.cached(("jobs",), compute))


@router.get("/jobs/{job}", response_model=None, responses={200: {"model": models.JobStatus}},
            summary="State, phase, percent done, rate and ETA of one job")
async def job_status(request: Request, job: JobId) -> Response:
    folder = _job(request, job)
    return _json(_jobs(request).cached(("status", job), lambda: dumps(folder.status())))


def _funnel(folder: JobFolder) -> dict[str, Any]:
    return {"job": folder.id, "final": folder.status()["state"] == "done" and folder.stats() is not None,
            "stages": folder.funnel()}


@router.get("/jobs/{job}/funnel", response_model=None, responses={200: {"model": models.Funnel}},
            summary="Per-stage funnel: documents in and out, drops and skips per reason, bytes, seconds")
async def funnel(request: Request, job: JobId) -> Response:
    folder = _job(request, job)
    return _json(_jobs(request).cached(("funnel", job), lambda: dumps(_funnel(folder))))


@router.get("/jobs/{job}/stages/{stage}", response_model=None, responses={200: {"model": models.StageRow}},
            summary="One stage's counters")
async def stage(request: Request, job: JobId, stage: Name) -> Response:
    folder = _job(request, job)
    rows = _jobs(request).cached(("funnel-rows", job), folder.funnel)
    row = next((r for r in rows if r["stage"] == stage), None)
    if row is None:
        raise HTTPException(status_code=404, detail=f"no stage {stage!r} in job {job!r}")
    return _json(dumps(row))


@router.get("/jobs/{job}/throughput", response_model=None, responses={200: {"model": models.Throughput}},
            summary="Records read, documents kept and shards done over time, with rates")
async def throughput(request: Request, job: JobId) -> Response:
    folder = _job(request, job)
    return _json(_jobs(request).cached(("throughput", job), lambda: dumps({"job": job, **folder.throughput()})))


def _reject_files(request: Request, folder: JobFolder) -> dict[str, dict[str, list]]:
    return _jobs(request).cached(("reject-files", folder.id), lambda: inspect.reject_files(folder.path))


@router.get("/jobs/{job}/rejects", response_model=None, responses={200: {"model": models.RejectIndex}},
            summary="Stages and reasons with dropped documents: how many, and how many were sampled")
def reject_index(request: Request, job: JobId) -> Response:
    folder = _job(request, job)

    def compute() -> bytes:
        files = _reject_files(request, folder)
        out: dict[str, dict[str, dict[str, int]]] = {}
        for row in folder.funnel():
            for reason, n in row["dropped"].items():
                out.setdefault(row["stage"], {})[reason] = {"dropped": n, "sampled": 0}
        for stage_name, by in files.items():
            for reason, paths in by.items():
                entry = out.setdefault(stage_name, {}).setdefault(reason, {"dropped": 0, "sampled": 0})
                entry["sampled"] = sum(inspect.rows_in(paths))
        return dumps({"job": job, "stages": out})

    return _json(_jobs(request).cached(("rejects", job), compute))


@router.get("/jobs/{job}/rejects/{stage}/{reason}", response_model=None,
            responses={200: {"model": models.RejectPage}}, summary="Rejected documents of one stage and reason, paged")
def reject_page(request: Request, job: JobId, stage: Name, reason: Name, offset: Offset = 0, limit: Limit = 20,
                chars: Chars = 2000) -> Response:
    folder = _job(request, job)
    by_reason = _reject_files(request, folder).get(stage)
    if by_reason is None:
        raise HTTPException(status_code=404, detail=f"no rejects of stage {stage!r} in job {job!r}")
    files = by_reason.get(reason)
    if files is None:
        raise HTTPException(status_code=404, detail=f"no rejects of stage {stage!r} for reason {reason!r}")

    def compute() -> bytes:
        table = inspect.page(files, offset, limit, list(DOCUMENT_COLUMNS))
        return dumps({"job": job, "stage": stage, "reason": reason, "total": sum(inspect.rows_in(files)),
                      "offset": offset, "limit": limit, "rows": [_cut(r, chars) for r in table.to_pylist()]})

    return _json(_jobs(request).cached(("reject-page", job, stage, reason, offset, limit, chars), compute))


@router.get("/jobs/{job}/dedup", response_model=None, summary="Corpus stages with removals to look at")
def dedup_index(request: Request, job: JobId) -> Response:
    folder = _job(request, job)
    return _json(_jobs(request).cached(("dedup", job), lambda: dumps(
        {"job": job, "stages": inspect.dedup_stages(folder.path)})))


@router.get("/jobs/{job}/dedup/{stage}", response_model=None, responses={200: {"model": models.DedupPage}},
            summary="Dedup clusters: each survivor beside the documents removed as its copies, largest first")
def dedup_page(request: Request, job: JobId, stage: Name, offset: Offset = 0, limit: Limit = 10,
               chars: Chars = 2000) -> Response:
    folder = _job(request, job)
    if stage not in inspect.dedup_stages(folder.path):
        raise HTTPException(status_code=404, detail=f"no removals of corpus stage {stage!r} in job {job!r}")

    def compute() -> bytes:
        clusters = inspect.cluster_table(folder.path, stage)
        chosen = clusters[offset : offset + limit]
        ids = [i for c in chosen for i in ([c["survivor"]] if c["survivor"] else []) + [r["id"] for r in c["removed"]]]
        docs = inspect.lookup(folder.path, ids)
        out = [{"survivor": _cut(docs.get(c["survivor"], {"id": c["survivor"]}), chars) if c["survivor"] else None,
                "cluster": c["cluster"],
                "removed": [_cut({**docs.get(r["id"], {"id": r["id"]}), **r}, chars) for r in c["removed"]]}
               for c in chosen]
        return dumps({"job": job, "stage": stage, "clusters_total": len(clusters),
                      "removed_total": sum(len(c["removed"]) for c in clusters), "offset": offset, "limit": limit,
                      "clusters": out})

    return _json(_jobs(request).cached(("dedup-page", job, stage, offset, limit, chars), compute))


def _thin(rows: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    """At most `most` points, evenly strided; spikes and the last step always stay."""
    if len(rows) <= most:
        return rows
    stride = math.ceil(len(rows) / most)
    return [r for i, r in enumerate(rows) if i % stride == 0 or r.get("spike") or i == len(rows) - 1]


@router.get("/jobs/{job}/train", response_model=None, responses={200: {"model": models.TrainCurve}},
            summary="Training metrics (loss curve points) and spikes from <job>/train/metrics.jsonl, spikes.jsonl")
async def train(request: Request, job: JobId,
                since_step: Annotated[int, Query(ge=0, description="Only steps after this one.")] = 0,
                max_points: Annotated[int, Query(ge=10, le=100_000, description="Thin to about this many.")] = 2000
                ) -> Response:
    folder = _job(request, job)

    def compute() -> bytes:
        rows = [r for r in folder.train_metrics() if r["step"] > since_step]
        return dumps({"job": job, "count": len(rows), "points": _thin(rows, max_points),
                      "spikes": [r for r in folder.train_spikes() if r["step"] > since_step],
                      "last": rows[-1] if rows else None})

    return _json(_jobs(request).cached(("train", job, since_step, max_points), compute))


def _document(request: Request, job: str, name: str, read: str) -> Response:
    folder = _job(request, job)
    value = _jobs(request).cached((name, job), getattr(folder, read))
    if value is None:
        raise HTTPException(status_code=404, detail=f"job {job!r} has no {name} yet")
    return _json(dumps(value))


@router.get("/jobs/{job}/manifest", response_model=None, summary="manifest.json of a tokenized, packed job")
async def manifest(request: Request, job: JobId) -> Response:
    return _document(request, job, "manifest.json", "manifest")


@router.get("/jobs/{job}/stats", response_model=None, summary="stats.json, written when a job finishes")
async def stats(request: Request, job: JobId) -> Response:
    return _document(request, job, "stats.json", "stats")
