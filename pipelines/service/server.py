"""Running the service: in the foreground (`curate serve`) or on a thread beside a job (`curate run --serve`)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import uvicorn

from pipelines.service.app import create_app
from pipelines.service.control import Control


def _config(jobs_dir: str | Path, host: str, port: int, log_level: str,
            job_control: Control | None = None, ablations_dir: str | Path | None = None) -> uvicorn.Config:
    # A deep backlog: hundreds of dashboards may connect at once.
    return uvicorn.Config(create_app(jobs_dir, job_control=job_control, ablations_dir=ablations_dir), host=host,
                          port=port, log_level=log_level, access_log=False, backlog=4096, timeout_keep_alive=30)


def serve(jobs_dir: str | Path, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info",
          job_control: Control | None = None, ablations_dir: str | Path | None = None) -> None:
    """Serve until interrupted."""
    uvicorn.Server(_config(jobs_dir, host, port, log_level, job_control, ablations_dir)).run()


class Background:
    """The service on a daemon thread of this process (uvicorn leaves signals to the main thread there)."""

    def __init__(self, jobs_dir: str | Path, host: str = "127.0.0.1", port: int = 8000,
                 log_level: str = "warning", job_control: Control | None = None,
                 ablations_dir: str | Path | None = None) -> None:
        self.server = uvicorn.Server(_config(jobs_dir, host, port, log_level, job_control, ablations_dir))
        self.thread = threading.Thread(target=self.server.run, name="curation-service", daemon=True)
        self.url = f"http://{host}:{port}"

    def start(self, timeout: float = 10.0) -> Background:
        self.thread.start()
        deadline = time.time() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.time() > deadline:
                msg = f"the status service did not start on {self.url}"
                raise RuntimeError(msg)
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def for_run(output: str, address: str) -> Background:
    """The service over a job's output folder, started before the job (`curate run --serve [HOST:]PORT`)."""
    from curation import storage

    if storage.is_remote(output):
        msg = f"--serve needs a local output folder, not {output}: run `curate serve` where the folder is readable"
        raise ValueError(msg)
    host, _, port = address.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        msg = f"--serve takes [HOST:]PORT, a port from 1 to 65535, not {address!r}"
        raise ValueError(msg)
    Path(output).mkdir(parents=True, exist_ok=True)
    return Background(output, host or "127.0.0.1", int(port)).start()


LINGER_S = 15.0  # how long a run from a script serves its ended job: `curate status --watch` sees its last state


def linger(service: Background) -> None:
    """After the job: keep serving until Ctrl-C when someone watches a terminal; from a script, `LINGER_S` more (a
    watcher polling every few seconds met a service gone before it saw `done`, and ended in an error)."""
    import sys

    if not sys.stdin.isatty():
        time.sleep(LINGER_S)
        service.stop()
        return
    print(f"the status service goes on at {service.url} (Ctrl-C to stop)", file=sys.stderr)
    try:
        while service.thread.is_alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        service.stop()
