"""Read-only JSON endpoints over the jobs folder (`/api/...`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response

from curation import explore
from curation.job import DOCUMENTS, WORK_DOCUMENTS
from pipelines.service import models
from pipelines.service.jobs import JOB_ID, JOB_ID_RE, NAME, Jobs, ServedJob, dumps

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


def _job(request: Request, job: str) -> ServedJob:
    folder = _jobs(request).get(job)
    if folder is None:
        raise HTTPException(status_code=404, detail=f"no job {job!r}")
    return folder


def _cut(row: dict[str, Any], chars: int) -> dict[str, Any]:
    text = row.get("text")
    if isinstance(text, str) and len(text) > chars:
        row = {**row, "text": text[:chars], "text_truncated": True, "text_chars": len(text)}
    return row


# -- the polled answers ------------------------------------------------------------------------------
# What dashboards poll, as cached JSON bytes: built here once per `ttl`, and sent both by the routes
# below and by `hot_answer` (the same bytes either way: the tests compare them).


def healthz_answer(registry: Jobs) -> bytes:
    return registry.cached(("healthz",), lambda: dumps(
        {"status": "ok", "jobs_dir": str(registry.root), "readable": registry.root.is_dir()}))


def jobs_answer(registry: Jobs) -> bytes:
    def compute() -> bytes:
        folders = [registry.get(i) for i in registry.ids()]
        return dumps({"jobs": [f.status() for f in folders if f is not None]})

    return registry.cached(("jobs",), compute)


def status_answer(registry: Jobs, folder: ServedJob) -> bytes:
    return registry.cached(("status", folder.id), lambda: dumps(folder.status()))


def _funnel(folder: ServedJob) -> dict[str, Any]:
    return {"job": folder.id, "final": folder.status()["state"] == "done" and folder.stats() is not None,
            "stages": folder.funnel()}


def funnel_answer(registry: Jobs, folder: ServedJob) -> bytes:
    return registry.cached(("funnel", folder.id), lambda: dumps(_funnel(folder)))


def throughput_answer(registry: Jobs, folder: ServedJob) -> bytes:
    return registry.cached(("throughput", folder.id), lambda: dumps({"job": folder.id, **folder.throughput()}))


def _thin(rows: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    """At most `most` points, evenly strided; spikes and the last step always stay."""
    if len(rows) <= most:
        return rows
    stride = math.ceil(len(rows) / most)
    return [r for i, r in enumerate(rows) if i % stride == 0 or r.get("spike") or i == len(rows) - 1]


SINCE_STEP_DEFAULT, MAX_POINTS_DEFAULT, MAX_POINTS_RANGE = 0, 2000, (10, 100_000)


def train_answer(registry: Jobs, folder: ServedJob, since_step: int = SINCE_STEP_DEFAULT,
                 max_points: int = MAX_POINTS_DEFAULT) -> bytes:
    def compute() -> bytes:
        rows = [r for r in folder.train_metrics() if r["step"] > since_step]
        return dumps({"job": folder.id, "count": len(rows), "points": _thin(rows, max_points),
                      "spikes": [r for r in folder.train_spikes() if r["step"] > since_step],
                      "last": rows[-1] if rows else None})

    return registry.cached(("train", folder.id, since_step, max_points), compute)


_TRAIN_QUERY = re.compile(rb"(since_step|max_points)=([0-9]{1,9})")
WHOLE: dict[str, Callable[[Jobs], bytes]] = {"/api/jobs": jobs_answer, "/healthz": healthz_answer}
PER_JOB: dict[str, Callable[[Jobs, ServedJob], bytes]] = {
    "": status_answer, "funnel": funnel_answer, "throughput": throughput_answer, "train": train_answer}


def hot_answer(registry: Jobs, path: str, query: bytes) -> bytes | None:
    """The answer to `GET path?query` when it is one of the polled ones, its job exists and its query is
    plainly valid; else None, and FastAPI's routing, validation and errors (404, 422) take the request.

    Only what is certainly valid is answered here (a job id matching `JOB_ID`, a train query of known keys
    with plain in-range numbers): the rest falls through, so this path never answers what the routes
    would refuse. It saves what costs most per poll once the answer is cached: route matching, parameter
    validation, dependency solving and a Response object (`benchmarks/service_load.py`: the service's CPU
    per poll went from 0.19 to 0.06 ms).
    """
    build_whole = WHOLE.get(path)
    if build_whole is not None:
        return build_whole(registry) if not query else None
    if not path.startswith("/api/jobs/"):
        return None
    job, _, tail = path[10:].partition("/")
    build = PER_JOB.get(tail)
    if build is None or not JOB_ID_RE.fullmatch(job):  # fullmatch: `$` alone lets "id\n" through
        return None
    if query:
        if tail != "train":
            return None
        params: dict[bytes, int] = {}
        for pair in query.split(b"&"):
            m = _TRAIN_QUERY.fullmatch(pair)
            if m is None or m[1] in params:
                return None
            params[m[1]] = int(m[2])
        since_step = params.get(b"since_step", SINCE_STEP_DEFAULT)
        max_points = params.get(b"max_points", MAX_POINTS_DEFAULT)
        if not MAX_POINTS_RANGE[0] <= max_points <= MAX_POINTS_RANGE[1]:
            return None
        folder = registry.get(job)
        return None if folder is None else train_answer(registry, folder, since_step, max_points)
    folder = registry.get(job)
    return None if folder is None else build(registry, folder)


# -- the routes -------------------------------------------------------------------------------------


@router.get("/jobs", response_model=None, responses={200: {"model": models.JobList}}, summary="All jobs, newest first")
def jobs(request: Request) -> Response:
    return _json(jobs_answer(_jobs(request)))


@router.get("/jobs/{job}", response_model=None, responses={200: {"model": models.JobStatus}},
            summary="State, phase, percent done, rate and ETA of one job")
def job_status(request: Request, job: JobId) -> Response:
    return _json(status_answer(_jobs(request), _job(request, job)))


@router.get("/jobs/{job}/funnel", response_model=None, responses={200: {"model": models.Funnel}},
            summary="Per-stage funnel: documents in and out, drops and skips per reason, bytes, seconds")
def funnel(request: Request, job: JobId) -> Response:
    return _json(funnel_answer(_jobs(request), _job(request, job)))


@router.get("/jobs/{job}/stages/{stage}", response_model=None, responses={200: {"model": models.StageRow}},
            summary="One stage's counters")
def stage(request: Request, job: JobId, stage: Name) -> Response:
    folder = _job(request, job)
    rows = _jobs(request).cached(("funnel-rows", job), folder.funnel)
    row = next((r for r in rows if r["stage"] == stage), None)
    if row is None:
        raise HTTPException(status_code=404, detail=f"no stage {stage!r} in job {job!r}")
    return _json(dumps(row))


@router.get("/jobs/{job}/throughput", response_model=None, responses={200: {"model": models.Throughput}},
            summary="Records read, documents kept and shards done over time, with rates")
def throughput(request: Request, job: JobId) -> Response:
    return _json(throughput_answer(_jobs(request), _job(request, job)))


def _reject_files(request: Request, folder: ServedJob) -> dict[str, dict[str, list]]:
    """{stage: {reason: [files]}} of the job's sampled rejects, only files the job's folder holds."""

    def compute() -> dict[str, dict[str, list]]:
        out: dict[str, dict[str, list]] = {}
        for stage_name, by in explore.reject_files(folder.path).items():
            for reason, files in by.items():
                if held := folder.held(files):
                    out.setdefault(stage_name, {})[reason] = held
        return out

    return _jobs(request).cached(("reject-files", folder.id), compute)


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
                entry["sampled"] = sum(explore.rows_in(folder.pinned_each(paths)))
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
        table = explore.page(folder.pinned_each(files), offset, limit, list(DOCUMENT_COLUMNS))
        total = sum(explore.rows_in(folder.pinned_each(files)))
        return dumps({"job": job, "stage": stage, "reason": reason, "total": total,
                      "offset": offset, "limit": limit, "rows": [_cut(r, chars) for r in table.to_pylist()]})

    return _json(_jobs(request).cached(("reject-page", job, stage, reason, offset, limit, chars), compute))


def _dedup_stages(folder: ServedJob) -> list[str]:
    return [s for s in explore.dedup_stages(folder.path) if folder.holds(f"{explore.REMOVED}/{s}.parquet")]


def _lookup(folder: ServedJob, ids: list[str]) -> dict[str, dict[str, Any]]:
    """`explore.lookup`, unless a documents folder of the job leads out of it or holds a link out: then ids only."""
    if not (folder.folder_held(DOCUMENTS) and folder.folder_held(WORK_DOCUMENTS)):
        return {}
    return explore.lookup(folder.path, ids, in_rejects=False, pin=folder.pinned_all)


@router.get("/jobs/{job}/dedup", response_model=None, summary="Corpus stages with removals to look at")
def dedup_index(request: Request, job: JobId) -> Response:
    folder = _job(request, job)
    return _json(_jobs(request).cached(("dedup", job), lambda: dumps({"job": job, "stages": _dedup_stages(folder)})))


@router.get("/jobs/{job}/dedup/{stage}", response_model=None, responses={200: {"model": models.DedupPage}},
            summary="Dedup clusters: each survivor beside the documents removed as its copies, largest first")
def dedup_page(request: Request, job: JobId, stage: Name, offset: Offset = 0, limit: Limit = 10,
               chars: Chars = 2000) -> Response:
    folder = _job(request, job)
    if stage not in _dedup_stages(folder):
        raise HTTPException(status_code=404, detail=f"no removals of corpus stage {stage!r} in job {job!r}")

    def compute() -> bytes:
        try:
            clusters = explore.cluster_table(folder.path, stage, pin=folder.pinned_all)
        except explore.UnreadableFile as exc:  # a damaged file is the job folder's state, not the server's fault
            raise HTTPException(status_code=409, detail=str(exc).replace(str(folder.path), job)) from exc
        chosen = clusters[offset : offset + limit]
        ids = [i for c in chosen for i in ([c["survivor"]] if c["survivor"] else []) + [r["id"] for r in c["removed"]]]
        docs = _lookup(folder, ids)
        out = [{"survivor": _cut(docs.get(c["survivor"], {"id": c["survivor"]}), chars) if c["survivor"] else None,
                "cluster": c["cluster"],
                "removed": [_cut({**docs.get(r["id"], {"id": r["id"]}), **r}, chars) for r in c["removed"]]}
               for c in chosen]
        return dumps({"job": job, "stage": stage, "clusters_total": len(clusters),
                      "removed_total": sum(len(c["removed"]) for c in clusters), "offset": offset, "limit": limit,
                      "clusters": out})

    return _json(_jobs(request).cached(("dedup-page", job, stage, offset, limit, chars), compute))


@router.get("/jobs/{job}/train", response_model=None, responses={200: {"model": models.TrainCurve}},
            summary="Training metrics (loss curve points) and spikes from <job>/train/metrics.jsonl, spikes.jsonl")
def train(request: Request, job: JobId,
                since_step: Annotated[int, Query(ge=0, description="Only steps after this one.")] = SINCE_STEP_DEFAULT,
                max_points: Annotated[int, Query(ge=MAX_POINTS_RANGE[0], le=MAX_POINTS_RANGE[1],
                                                 description="Thin to about this many.")] = MAX_POINTS_DEFAULT
                ) -> Response:
    return _json(train_answer(_jobs(request), _job(request, job), since_step, max_points))


def _document(request: Request, job: str, name: str, read: str) -> Response:
    folder = _job(request, job)
    value = _jobs(request).cached((name, job), getattr(folder, read))
    if value is None and folder.holds(name):
        # written since the answer cached (a running job's stats.json appears): read again, not called damaged
        value = getattr(folder, read)()
        if value is None:  # there, and no JSON: the job folder's state, said as such
            raise HTTPException(status_code=409, detail=f"the {name} of job {job!r} is cut or damaged; a rerun of "
                                "the job writes it again")
    if value is None:
        raise HTTPException(status_code=404, detail=f"job {job!r} has no {name} yet")
    return _json(dumps(value))


@router.get("/jobs/{job}/manifest", response_model=None, summary="manifest.json of a tokenized, packed job")
def manifest(request: Request, job: JobId) -> Response:
    return _document(request, job, "manifest.json", "manifest")


@router.get("/jobs/{job}/stats", response_model=None, summary="stats.json, written when a job finishes")
def stats(request: Request, job: JobId) -> Response:
    return _document(request, job, "stats.json", "stats")
