"""The FastAPI application: JSON API, `/healthz`, `/metrics`, the dashboard page and its static files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from pipelines.service import ablations, control, metrics, routes
from pipelines.service.jobs import Jobs, NotCached, cached_only

STATIC = Path(__file__).with_name("static")


def plotly_js() -> Path | None:
    """plotly.js as shipped inside the `plotly` Python package: the dashboard needs no CDN and no build."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "package_data" / "plotly.min.js"
    return path if path.is_file() else None


JSON_HEADERS = [(b"content-type", b"application/json")]


class StatusApp(FastAPI):
    """FastAPI, with the polled status GETs answered before it: their cached bytes go straight to the server.

    Profiled under 200 back-to-back clients during a job, a cached poll through FastAPI spent ~3/4 of its
    CPU in the framework (middleware, route matching, parameter validation, dependency solving, the Response
    object), ~1/10 checking that the job's folder exists and ~1% building the answer; uvicorn's HTTP
    handling and the socket writes are the rest. `routes.hot_answer` picks out the polls it can answer for certain;
    everything else (other paths, odd queries, unknown jobs, invalid ids) goes through FastAPI as before,
    with its 404s and 422s. The answer and its headers are the same either way (`Response(content=...,
    media_type="application/json")` sends these two headers; uvicorn adds date and server to both).
    `/healthz` is answered here too: it is what load balancers and probes poll most (through FastAPI it
    cost ~4x the service CPU of a cached status poll).
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and not scope.get("root_path"):
            body = await self._hot_answer(scope["path"], scope["query_string"])
            if body is not None:
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-length", str(len(body)).encode()), *JSON_HEADERS]})
                await send({"type": "http.response.body", "body": body})
                return
        await super().__call__(scope, receive, send)

    async def _hot_answer(self, path: str, query: bytes) -> bytes | None:
        """`routes.hot_answer`: from the cache on the event loop; what needs the disk on a worker thread, so
        that a slow read (a long metrics file, a network disk) never holds up the other connections."""
        try:
            with cached_only():
                return routes.hot_answer(self.state.jobs, path, query)
        except NotCached:
            return await run_in_threadpool(routes.hot_answer, self.state.jobs, path, query)


def create_app(jobs_dir: str | Path, *, ttl: float = 0.5, job_control: control.Control | None = None,
               ablations_dir: str | Path | None = None) -> FastAPI:
    """The service over every job folder directly inside `jobs_dir`; answers are at most `ttl` s old.
    With `job_control`, `POST /api/jobs` and `DELETE /api/jobs/{id}` submit and stop jobs (bearer token);
    with `ablations_dir`, `/api/ablations` and the `/ablations` page show the ablations inside it."""
    app = StatusApp(
        title="curation status",
        version="1",
        description="Status of curation and training jobs: progress, funnels, rejects, dedup clusters, training "
        "curves, read from the job folders under the served jobs folder; with a token, jobs submitted to and "
        "stopped on a Ray cluster.",
        docs_url=None,  # Swagger UI and ReDoc load their scripts from a CDN; /openapi.json is served
        redoc_url=None,
    )
    app.state.jobs = Jobs(jobs_dir, ttl=ttl)
    app.state.control = job_control
    app.state.ablations = ablations.Ablations(ablations_dir, ttl=ttl) if ablations_dir is not None else None
    registry = metrics.registry(app.state.jobs)
    app.include_router(routes.router)
    app.include_router(control.router)
    app.include_router(ablations.router)

    @app.get("/healthz", response_model=None, summary="Liveness: the service answers and can read its jobs folder",
             responses={200: {"content": {"application/json": {"example": {"status": "ok", "jobs_dir": "/jobs",
                                                                             "readable": True}}}}})
    def healthz() -> Response:
        return Response(routes.healthz_answer(app.state.jobs), media_type="application/json")

    @app.get("/metrics", response_model=None, summary="Prometheus metrics of every job")
    def prometheus() -> Response:
        return Response(metrics.exposition(app.state.jobs, registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", response_model=None, include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/ablations", response_model=None, include_in_schema=False)
    async def ablations_page() -> FileResponse:
        return FileResponse(STATIC / "ablations.html", headers={"Cache-Control": "no-cache"})

    @app.get("/static/vendor/plotly.min.js", response_model=None, include_in_schema=False)
    async def plotly() -> FileResponse:
        path = plotly_js()
        if path is None:
            raise HTTPException(status_code=404, detail="the plotly package is not installed")
        return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
