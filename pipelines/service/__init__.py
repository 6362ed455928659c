"""The status service: read-only REST over job folders, a live dashboard page and Prometheus metrics.

`curate serve --jobs DIR [--ablations DIR] [--host --port]`, or `curate run RECIPE --serve [HOST:]PORT` beside a
job. Ablation folders (`curate ablate`'s) are read the same way (`ablations.ServedAblation`).
Every answer is read from the job folders directly inside DIR (`curation.progress.JobFolder`), so a
restarted service, or one started after the job, shows the same numbers. Imports neither Ray nor
the pipelines that run jobs (the Ray Jobs client only when a POST or DELETE needs it). Only regular
files whose real path lies inside their job's own folder are read (`jobs.ServedJob`): links out read
as absent.

    GET /                                        the dashboard (plotly.js from the installed plotly package)
    GET /healthz                                 liveness
    GET /metrics                                 Prometheus: job state, progress, per-stage counters, training
    GET /openapi.json                            the schema of everything below
    GET /api/jobs                                every job's status, newest first
    GET /api/jobs/{job}                          state, phase, percent, records/s, ETA, shards, corpus steps
    GET /api/jobs/{job}/funnel                   per-stage docs in/out, drops and skips per reason, bytes, seconds
    GET /api/jobs/{job}/stages/{stage}           one stage's row of the funnel
    GET /api/jobs/{job}/throughput               records, documents and shards over time, with rates
    GET /api/jobs/{job}/rejects                  stage -> reason -> {dropped, sampled}
    GET /api/jobs/{job}/rejects/{stage}/{reason} sampled rejects, ?offset=&limit=(1-500)&chars=
    GET /api/jobs/{job}/dedup                    corpus stages with removals
    GET /api/jobs/{job}/dedup/{stage}            clusters, survivor beside its removed copies, ?offset=&limit=&chars=
    GET /api/jobs/{job}/train                    loss curve points and spikes, ?since_step=&max_points=
    GET /api/jobs/{job}/manifest                 manifest.json of a packed job (404 until written)
    GET /api/jobs/{job}/stats                    stats.json (404 until the job ends)
    GET /ablations                               the ablations page: curves by tokens seen, table, mixture search
    GET /api/ablations                           every ablation under `--ablations DIR` (default ./ablations)
    GET /api/ablations/{name}                    its state, result table, curves, mixture search, overlap
    POST /api/jobs                               submit a recipe (YAML body) to a Ray cluster   (bearer token)
    DELETE /api/jobs/{ray job id}                stop a submitted job                           (bearer token)

POST and DELETE are off (403) unless the service was started with `--ray-address` and a token
(`$CURATE_SERVICE_TOKEN`); see `pipelines.service.control`.
"""

from pipelines.service.app import create_app
from pipelines.service.server import Background, serve

__all__ = ["Background", "create_app", "serve"]
