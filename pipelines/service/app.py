"""The FastAPI application: JSON API, `/healthz`, `/metrics`, the dashboard page and its static files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST

from pipelines.service import control, metrics, routes
from pipelines.service.jobs import Jobs

STATIC = Path(__file__).with_name("static")


def plotly_js() -> Path | None:
    """plotly.js as shipped inside the `plotly` Python package: the dashboard needs no CDN and no build."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "package_data" / "plotly.min.js"
    return path if path.is_file() else None


def create_app(jobs_dir: str | Path, *, ttl: float = 0.5, job_control: control.Control | None = None) -> FastAPI:
    """The service over every job folder directly inside `jobs_dir`; answers are at most `ttl` s old.
    With `job_control`, `POST /api/jobs` and `DELETE /api/jobs/{id}` submit and stop jobs (bearer token)."""
    app = FastAPI(
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
    registry = metrics.registry(app.state.jobs)
    app.include_router(routes.router)
    app.include_router(control.router)

    @app.get("/healthz", summary="Liveness: the service answers and can read its jobs folder")
    async def healthz() -> dict[str, object]:
        root = app.state.jobs.root
        return {"status": "ok", "jobs_dir": str(root), "readable": root.is_dir()}

    @app.get("/metrics", response_model=None, summary="Prometheus metrics of every job")
    async def prometheus() -> Response:
        return Response(metrics.exposition(app.state.jobs, registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", response_model=None, include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/static/vendor/plotly.min.js", response_model=None, include_in_schema=False)
    async def plotly() -> FileResponse:
        path = plotly_js()
        if path is None:
            raise HTTPException(status_code=404, detail="the plotly package is not installed")
        return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
