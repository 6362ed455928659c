"""`curate submit | logs | stop` and Ray-job status: recipes run on a cluster through the Ray Jobs API.

The recipe is validated here first (a bad recipe never reaches the cluster), then shipped as loaded (its
language settings file merged in, as in the job's own recipe.yaml) with the project's own packages in the
job's runtime_env, so the cluster runs the same code as this checkout (its nodes need the project's
dependencies installed: the image in deploy/). The job's entrypoint
is `python -m pipelines.cli run recipe.yaml --address auto --executor ray` on the cluster's head
(a recipe's `executor: local` would leave the cluster's other nodes idle); input and
output paths in the recipe must be reachable from the cluster (object storage or a shared volume).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ray.job_submission import JobStatus, JobSubmissionClient

import curation
import pipelines
from curation.recipe import load_recipe
from pipelines.run import recipe_as_run

TERMINAL = {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED}
AGENT_WAIT_SECONDS = 120


def auth_headers() -> dict[str, str]:
    """The bearer token of a Ray cluster with token authentication, found where Ray's own tools look
    (`RAY_AUTH_TOKEN`, the file at `RAY_AUTH_TOKEN_PATH`, `~/.ray/auth_token`); none without one."""
    token = os.environ.get("RAY_AUTH_TOKEN")
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH", Path.home() / ".ray" / "auth_token"))
    if not token and path.is_file():
        token = path.read_text().strip()
    return {"Authorization": f"Bearer {token}"} if token else {}


def client(address: str) -> JobSubmissionClient:
    return JobSubmissionClient(address, headers=auth_headers())


def cluster_errors() -> tuple[type[Exception], ...]:
    """What the Ray Jobs client raises when the cluster is not there or refuses us: no connection (its own
    ConnectionError), a failed HTTP exchange (requests'), a token it does not accept, and RuntimeError, its word
    for an answer it did not expect (not a Ray dashboard, an old Ray, a refused submission, no such job)."""
    import requests
    from ray.exceptions import AuthenticationError

    return (ConnectionError, requests.RequestException, AuthenticationError, RuntimeError)


def submit(recipe_path: str, address: str, *, output: str | None = None, submission_id: str | None = None) -> str:
    """Submit a validated recipe; return the Ray job's submission id."""
    recipe = load_recipe(recipe_path).with_absolute_paths()  # raises RecipeError before anything reaches the cluster
    staging = Path(tempfile.mkdtemp(prefix="curate-submit-"))
    try:
        # the recipe as loaded, not its file: what it names to be read at load time (a language settings file,
        # relative to this working directory) is merged in, and the cluster cannot reach it
        (staging / "recipe.yaml").write_text(recipe_as_run(recipe), encoding="utf-8")
        command = "python -m pipelines.cli run recipe.yaml --address auto --executor ray --quiet"
        if output:
            command += f" --output {output}"
        runtime_env = {
            "working_dir": str(staging),
            # the project's packages travel with the job, so the cluster runs this checkout's code
            "py_modules": [str(Path(curation.__file__).parent), str(Path(pipelines.__file__).parent)],
        }
        jobs = client(address)
        deadline = time.time() + AGENT_WAIT_SECONDS
        while True:
            try:
                return jobs.submit_job(entrypoint=command, runtime_env=runtime_env, submission_id=submission_id,
                                       metadata={"recipe": recipe.name, "recipe_hash": recipe.fingerprint()})
            except RuntimeError as exc:  # a head that has just started has no job agent for some seconds
                if "No available agent" not in str(exc) or time.time() > deadline:
                    raise
                time.sleep(2)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def job_status(address: str, job_id: str) -> dict[str, Any]:
    info = client(address).get_job_info(job_id)
    return {"job_id": job_id, "status": str(info.status.value), "message": info.message,
            "entrypoint": info.entrypoint, "metadata": info.metadata, "start_time": info.start_time,
            "end_time": info.end_time}


def logs(address: str, job_id: str) -> str:
    return client(address).get_job_logs(job_id)


def stop(address: str, job_id: str) -> bool:
    return client(address).stop_job(job_id)
