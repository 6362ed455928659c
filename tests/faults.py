"""Faults for tests: a `curate run` watched through its job's events, the processes it started (to kill
one, or to find any left behind), and a Ray cluster whose worker node can be removed on demand.

    python -m tests.faults cluster   # prints {"address": ...}; a line "remove" on stdin removes its worker
                                     # node once it runs a task and adds a fresh one (answers
                                     # {"removed": [pids], "busy": [tasks]}); the end of stdin shuts it down

The cluster runs in a process of its own: a process can join only one Ray, and the test session has its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from tests.conftest import ROOT

CURATE = str(Path(sys.executable).parent / "curate")


def events(job: Path) -> list[str]:
    """The events the job has recorded so far, in order (a line still being written is left out)."""
    path = job / "events.jsonl"
    if not path.is_file():
        return []
    names = []
    for line in path.read_text().splitlines():
        try:
            names.append(json.loads(line)["event"])
        except json.JSONDecodeError:
            break
    return names


def without_ray_address() -> dict[str, str]:
    """This environment without RAY_ADDRESS: a `curate run` started with it starts its own Ray, or joins the
    address it is given, never the test session's."""
    return {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}


class Run:
    """`curate run` as a process of its own session, watched through its job folder. Every process it starts
    is remembered as it is seen, so that one outliving the run is found even after its parent died."""

    def __init__(self, recipe: Path, output: Path, job: Path, *args: str) -> None:
        self.job, self.output = job, output
        self.log = output.parent / f"{output.name}.log"
        with self.log.open("wb") as log:  # a file, not a pipe: a full pipe would stall the run
            self.proc = subprocess.Popen([CURATE, "run", str(recipe), "--output", str(output), "--quiet", *args],
                                         cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         env=without_ray_address(), start_new_session=True)
        self.seen: dict[int, psutil.Process] = {}

    def descendants(self) -> list[psutil.Process]:
        """The run's processes now (each also remembered)."""
        try:
            found = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        self.seen.update((p.pid, p) for p in found)
        return found

    def output_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def wait_for(self, ready: Callable[[list[str]], bool], what: str, timeout: float = 120) -> list[str]:
        """Poll the job's events until `ready(events)`; return them. The run must still be going."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            seen = events(self.job)
            if ready(seen):
                return seen
            self.descendants()
            assert self.proc.poll() is None, f"the run ended before {what}:\n{self.output_tail()}"
            time.sleep(0.01)
        raise AssertionError(f"no {what} after {timeout} s:\n{self.output_tail()}")

    def find(self, victim: Callable[[psutil.Process], bool], what: str, until: Callable[[list[str]], bool],
             among: int | None = None, timeout: float = 60) -> psutil.Process:
        """The first process of the run (or a descendant of the process `among`: the Ray it joined) for which
        `victim` holds, looked for until `until(events)` (the phase ended: a kill now would miss it)."""
        deadline = time.time() + timeout
        while time.time() < deadline and not until(events(self.job)):
            found = self.descendants() if among is None else psutil.Process(among).children(recursive=True)
            for process in found:
                try:
                    if victim(process):
                        return process
                except psutil.Error:  # it ended meanwhile
                    continue
            time.sleep(0.005)
        raise AssertionError(f"no {what} seen before the phase ended (events: {events(self.job)})")

    def end(self, timeout: float = 120) -> int:
        """Wait for the run to end by itself; its exit status."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the run did not end within {timeout} s:\n{self.output_tail()}") from None

    def kill(self) -> None:
        """SIGKILL to the driver alone (as the kernel's OOM killer or `kill -9` would), then reap it."""
        self.descendants()
        self.proc.kill()
        self.proc.wait(timeout=30)

    def survivors(self, grace: float = 15) -> list[psutil.Process]:
        """The processes of this run still alive after up to `grace` seconds (less where only Ray's orphaned
        agents are left, which take longer): every descendant ever seen, any process of its session, and any
        process naming its output folder (a forked local worker)."""
        deadline = time.time() + grace
        while (alive := self._suspects()) and not all(map(orphaned_ray_agent, alive)) and time.time() < deadline:
            time.sleep(0.2)
        return alive

    def _suspects(self) -> list[psutil.Process]:
        suspects = dict(self.seen)
        for p in psutil.process_iter(["pid", "cmdline"]):
            try:
                if os.getsid(p.pid) == self.proc.pid or str(self.output) in " ".join(p.info["cmdline"] or []):
                    suspects[p.pid] = p
            except (OSError, psutil.Error):
                continue
        return [p for p in suspects.values() if living(p)]

    def clean_up(self, spare: list[psutil.Process] = ()) -> None:
        """Whatever the test found, leave nothing of this run behind for the rest of the session (but the
        processes in `spare`, watched further)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        for p in self._suspects():
            if p not in spare:
                with contextlib.suppress(psutil.Error):
                    p.kill()


def living(p: psutil.Process) -> bool:
    """Running (is_running also checks that the pid was not reused), not a zombie waiting to be reaped."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def describe(p: psutil.Process) -> str:
    try:
        return f"{p.pid} {' '.join(p.cmdline()).strip()[:160]}"
    except psutil.Error:
        return str(p.pid)


def local_worker(driver_pid: int) -> Callable[[psutil.Process], bool]:
    """A worker of `--executor local`: forked from the driver, so it carries the driver's command line."""
    driver = psutil.Process(driver_pid).cmdline()
    return lambda p: p.ppid() == driver_pid and p.cmdline() == driver


def busy_ray_worker(p: psutil.Process) -> bool:
    """A Ray worker running a task: its title is `ray::<task>` (`ray::IDLE` while it waits for one; the
    node's agents are `ray::DashboardAgent`, `ray::RuntimeEnvAgent`)."""
    title = " ".join(p.cmdline()).strip()  # Ray pads the title it writes over its argv with empty arguments
    return title.startswith("ray::") and not title.startswith("ray::IDLE") and not title.endswith("Agent")


def orphaned_ray_agent(p: psutil.Process) -> bool:
    """One of a Ray node's agents whose raylet died. It ends by itself, but only after trying to tell the GCS
    (dead too, where the whole Ray went) that its raylet died: ~60 s (Ray's `gcs_rpc_server_reconnect_timeout_s`)."""
    try:
        title, parent = " ".join(p.cmdline()).strip(), p.parent()
        return title.startswith("ray::") and title.endswith("Agent") and (parent is None or parent.name() != "raylet")
    except psutil.Error:
        return False


class ClusterHost:
    """`python -m tests.faults cluster` in a process of its own: a Ray head (no CPU) and a worker node on this
    machine."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.faults", "cluster"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=without_ray_address(), start_new_session=True)
        self.address = self._answer()["address"]
        self.seen: dict[int, psutil.Process] = {}
        self.removed: list[psutil.Process] = []  # the worker node's processes, once removed

    def _answer(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, f"the cluster host ended (exit status {self.proc.wait(timeout=30)})"
        return json.loads(line)

    def processes(self) -> list[psutil.Process]:
        found = psutil.Process(self.proc.pid).children(recursive=True)
        self.seen.update((p.pid, p) for p in found)
        return found

    def remove_worker_node(self) -> list[str]:
        """Remove the worker node (its raylet and workers are killed) while it runs a task; return the tasks
        it was running."""
        self.processes()
        self.proc.stdin.write("remove\n")
        self.proc.stdin.flush()
        answer = self._answer()
        for pid in answer["removed"]:  # one started since `processes` looked, and still alive, is watched too
            with contextlib.suppress(psutil.Error):
                self.seen.setdefault(pid, psutil.Process(pid))
        self.removed = [self.seen[pid] for pid in answer["removed"] if pid in self.seen]
        return answer["busy"]

    def shut_down(self, timeout: float = 60) -> None:
        if self.proc.poll() is not None:
            return
        self.processes()
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def survivors(self, among: list[psutil.Process] | None = None, grace: float = 15) -> list[psutil.Process]:
        """Those of `among` (default: every process the host ever had) still alive after up to `grace` seconds
        (less where only Ray's orphaned agents are left)."""
        among = list(self.seen.values()) if among is None else among
        deadline = time.time() + grace
        while ((alive := [p for p in among if living(p)]) and not all(map(orphaned_ray_agent, alive))
               and time.time() < deadline):
            time.sleep(0.2)
        return alive


def _busy_tasks(node: object, timeout: float = 30) -> list[str]:
    """The titles of the node's workers running a task, once there is one (the node is removed then: with
    work on it)."""
    raylet = psutil.Process(node.all_processes["raylet"][0].process.pid)
    deadline = time.time() + timeout
    while time.time() < deadline:
        busy = []
        for p in raylet.children():
            try:
                if busy_ray_worker(p):
                    busy.append(" ".join(p.cmdline()).strip())
            except psutil.Error:
                continue
        if busy:
            return busy
        time.sleep(0.01)
    return []


def _host_cluster() -> None:
    import ray
    from ray.cluster_utils import Cluster

    # The head has no CPU, so every task runs on the worker node: whichever phase the node is removed in, it is
    # removed with that phase's work on it. A replacement joins then, as an autoscaler would bring one up.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    print(json.dumps({"address": cluster.address}), flush=True)
    try:
        for line in sys.stdin:
            if line.strip() == "remove":
                busy = _busy_tasks(worker)
                processes = [psutil.Process(info.process.pid) for infos in worker.all_processes.values()
                             for info in infos]
                pids = {p.pid for top in processes for p in [top, *top.children(recursive=True)]}
                cluster.remove_node(worker, allow_graceful=False)  # as a machine that fails: SIGKILL, no goodbye
                worker = cluster.add_node(num_cpus=2)
                print(json.dumps({"removed": sorted(pids), "busy": busy}), flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    if sys.argv[1:] == ["cluster"]:
        _host_cluster()
