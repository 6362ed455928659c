"""Starting and stopping jobs over REST: `POST /api/jobs` (a recipe YAML body) submits it to a Ray
cluster through the Ray Jobs API, `DELETE /api/jobs/{id}` stops a submitted job.

Both are off unless the service was started with a bearer token and a cluster to submit to
(`curate serve --ray-address http://HEAD:8265`, token in `$CURATE_SERVICE_TOKEN`): reading stays
open, changing needs the token. The Ray client is imported only when a request needs it.
A cluster that cannot be reached, or answers other than as a Ray dashboard does, is a 502 whose
detail names the cluster's address and what went wrong: the request was fine, its upstream was not.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import APIRouter, Header, HTTPException, Request
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool

from curation.recipe import RecipeError, parse_recipe

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

MAX_RECIPE_BYTES = 1 << 20
router = APIRouter(prefix="/api")
T = TypeVar("T")
RayJobId = Annotated[str, PathParam(pattern=r"^[A-Za-z0-9_-]{1,100}$", description="Ray job submission id")]


@dataclass(frozen=True)
class Control:
    token: str
    ray_address: str
    output: str | None = None  # where submitted jobs write, as the cluster sees it (default: the recipe's)


def _authorized(request: Request, authorization: str | None) -> Control:
    control: Control | None = request.app.state.control
    if control is None:
        raise HTTPException(status_code=403, detail="job control is off: start the service with --ray-address and "
                            "a token in $CURATE_SERVICE_TOKEN")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(given.encode(), control.token.encode()):
        raise HTTPException(status_code=401, detail="a valid bearer token is required",
                            headers={"WWW-Authenticate": "Bearer"})
    return control


@router.post("/jobs", status_code=201, summary="Submit a recipe (YAML body) to the Ray cluster; needs the token",
             openapi_extra={"requestBody": {"required": True,
                                            "content": {"application/yaml": {"schema": {"type": "string"}}}}})
async def submit_job(request: Request, authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
    control = _authorized(request, authorization)
    body = await _bounded_body(request)
    if not body:
        raise HTTPException(status_code=422, detail="the body must be a recipe in YAML; it is empty")
    try:
        text = body.decode("utf-8")
        # On a worker thread: a recipe may take long to check (its paths listed on a slow store), and the event
        # loop answers every other request meanwhile (`/healthz` among them).
        recipe = await run_in_threadpool(parse_recipe, text, "<posted recipe>")
    except UnicodeDecodeError:
        raise HTTPException(status_code=422, detail="the recipe is not UTF-8") from None
    except RecipeError as exc:
        raise HTTPException(status_code=422, detail=[str(p) for p in exc.problems]) from None
    job_id = await run_in_threadpool(_on_cluster, control, _submit, text, control)  # blocking HTTP, an upload
    return {"job_id": job_id, "recipe": recipe.name, "job_dir": recipe.job_dir(control.output)}


async def _bounded_body(request: Request) -> bytes:
    """The body, read no further than `MAX_RECIPE_BYTES`: a larger one is a 413 before it is all received."""
    too_large = HTTPException(status_code=413, detail=f"a recipe is at most {MAX_RECIPE_BYTES} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_RECIPE_BYTES:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_RECIPE_BYTES:
            raise too_large
    return bytes(body)


def _on_cluster(control: Control, call: Callable[..., T], *args: Any) -> T:
    """`call(*args)`, talking to the cluster; its failures become a 502 saying which cluster and why.
    Callers turn the RuntimeErrors that mean something else (no such job) into their own answers first."""
    from pipelines.submit import cluster_errors

    try:
        return call(*args)
    except cluster_errors() as exc:
        detail = f"the Ray cluster at {control.ray_address} is unreachable or refused the request: {exc}"
        raise HTTPException(status_code=502, detail=detail) from None


def _submit(text: str, control: Control) -> str:
    from pipelines.submit import submit

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recipe.yaml"
        path.write_text(text, encoding="utf-8")
        return submit(str(path), control.ray_address, output=control.output)


def _connect(control: Control) -> JobSubmissionClient:
    from pipelines.submit import client

    return client(control.ray_address)  # checks that a Ray dashboard answers there


def _stop(jobs: JobSubmissionClient, job_id: str) -> bool:
    try:
        jobs.get_job_info(job_id)
    except RuntimeError:  # the dashboard answered, without that job
        raise HTTPException(status_code=404, detail=f"no submitted job {job_id!r}") from None
    return jobs.stop_job(job_id)


@router.delete("/jobs/{job_id}", summary="Stop a job submitted to the Ray cluster; needs the token")
def stop_job(request: Request, job_id: RayJobId, authorization: Annotated[str | None, Header()] = None
             ) -> dict[str, Any]:
    control = _authorized(request, authorization)
    jobs = _on_cluster(control, _connect, control)
    return {"job_id": job_id, "stopped": _on_cluster(control, _stop, jobs, job_id)}
