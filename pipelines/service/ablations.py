"""The ablations folder as the service sees it (`curate serve --ablations DIR`): each ablation's results folder
(`curation.ablate.results`), directly inside DIR, read as the job folders are (`jobs`): an ablation name is
never joined into a path before it is found among DIR's folders, and inside an ablation's folder only regular
files whose real path lies inside that folder are read (`pinned`); a link out, a FIFO, reads as absent.

While an ablation runs, its curves are read from the runs' evaluation files (`runs/<variant>/seed-<s>/eval/`),
the mixture search's proxies left out; once it is done, from curves.parquet, with results.json's table.
"""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path
from typing import Annotated, Any

import pyarrow.parquet as pq
from fastapi import APIRouter, HTTPException, Request, Response
from fastapi import Path as PathParam

from curation.ablate import results as layout
from curation.ablate.stats import METRICS
from curation.progress import pid_alive
from pipelines.service import models
from pipelines.service.jobs import JOB_ID, JOB_ID_RE, AnswerCache, dumps, holds, pinned

_STEP_FILE = re.compile(r"step-[0-9]{8}\.json")
_SEED = re.compile(r"seed-(-?[0-9]{1,18})")
EVENTS = "events.jsonl"
FINISHED = {"ablation_done": "done", "ablation_failed": "failed", "ablation_interrupted": "interrupted"}


class ServedAblation:
    """An ablation's results folder, read only through files it holds."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        self.real = os.path.realpath(path)

    def holds(self, relative: str, *, folder: bool = False) -> bool:
        return holds(self.path, self.real, relative, folder=folder)

    def exists(self) -> bool:
        return self.holds(layout.ABLATION)

    def _text(self, relative: str) -> str | None:
        """The text of a file the folder holds (read through the descriptor checked: `pinned`), or None."""
        with pinned(self.path, self.real, relative) as named:
            try:
                return None if named is None else named.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return None  # being replaced

    def _json(self, relative: str) -> Any:
        try:
            return json.loads(self._text(relative) or "")
        except ValueError:
            return None  # being replaced, or not ours to read

    def events(self) -> list[dict[str, Any]]:
        """The events of the latest run (from its `ablation_started` on)."""
        rows = []
        for line in (self._text(EVENTS) or "").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line being written
            if isinstance(row, dict):
                rows.append(row)
        starts = [i for i, row in enumerate(rows) if row.get("event") == "ablation_started"]
        return rows[starts[-1]:] if starts else rows

    def _children(self, relative: str, pattern: re.Pattern[str] | None = None) -> list[str]:
        """Names of the folders (or, with `pattern`, the files matching it) held directly inside `relative`."""
        if not self.holds(relative, folder=True):
            return []
        with os.scandir(self.path / relative) as entries:
            names = sorted(e.name for e in entries)
        if pattern is None:
            return [n for n in names if JOB_ID_RE.fullmatch(n) and self.holds(f"{relative}/{n}", folder=True)]
        return [n for n in names if pattern.fullmatch(n) and self.holds(f"{relative}/{n}")]

    def runs(self, *, proxies: bool = False) -> list[tuple[str, int]]:
        """(variant, seed) of every run folder; the mixture search's proxies only with `proxies`."""
        out = []
        for variant in self._children(layout.RUNS):
            if variant.startswith(layout.PROXY_PREFIX) and not proxies:
                continue
            for seed in self._children(f"{layout.RUNS}/{variant}"):
                match = _SEED.fullmatch(seed)
                if match:
                    out.append((variant, int(match[1])))
        return out

    def status(self) -> dict[str, Any]:
        events = self.events()
        started = events[0] if events and events[0].get("event") == "ablation_started" else {}
        names = [e.get("event") for e in events]
        end = next((e for e in reversed(events) if e.get("event") in FINISHED), None)
        state, error = ("pending", None) if not events else ("running", None)
        if end is not None:
            state, error = FINISHED[end["event"]], end.get("error")
        elif started.get("host") == socket.gethostname() and not pid_alive(int(started.get("pid") or 0)):
            state = "interrupted"  # its process is gone without a last word (killed)
        runs = self.runs(proxies=True)
        total = sum(int(e.get("runs", 0)) for e in events if e.get("event") in ("training_started",
                                                                                  "verification_started"))
        done = sum(self.holds(f"{layout.RUNS}/{v}/seed-{s}/{layout.DONE}") for v, s in runs)
        about = self._json(layout.RESULTS) or {}
        plan = self._json(layout.PLAN) or {}
        planned = list(plan.get("variants", {}))
        return {"name": self.name, "state": state, "error": error, "phase": names[-1] if names else "pending",
                "started": started.get("time"), "updated": events[-1].get("time") if events else None,
                "baseline": about.get("baseline", plan.get("baseline")),
                "variants": [*planned, *sorted({v for v, _ in self.runs()} - set(planned))],
                "seeds": about.get("seeds"), "runs": {"done": done, "total": max(total, done)},
                "has": {"results": self.holds(layout.RESULTS) and self.holds(layout.CURVES),
                        "mixture_search": self.holds(layout.MIXTURE)}}

    def curves(self, finished: bool) -> list[dict[str, Any]]:
        """One series per variant, seed, set and metric: tokens, steps and values by checkpoint."""
        series: dict[tuple[str, int, str, str], dict[str, Any]] = {}

        def add(variant: str, seed: int, step: int, tokens: int, set_name: str, metric: str, value: float) -> None:
            key = (variant, seed, set_name, metric)
            line = series.setdefault(key, {"variant": variant, "seed": seed, "set": set_name, "metric": metric,
                                           "steps": [], "tokens": [], "values": []})
            line["steps"].append(step)
            line["tokens"].append(tokens)
            line["values"].append(value)

        if finished:
            with pinned(self.path, self.real, layout.CURVES) as named:
                rows = pq.read_table(named).to_pylist() if named is not None else []
            for row in rows:
                add(row["variant"], row["seed"], row["step"], row["tokens"], row["set"], row["metric"], row["value"])
        else:
            for variant, seed in self.runs():
                folder = f"{layout.RUNS}/{variant}/seed-{seed}/{layout.EVAL}"
                for name in self._children(folder, _STEP_FILE):
                    record = self._json(f"{folder}/{name}") or {}
                    for set_name, scores in (record.get("sets") or {}).items():
                        for metric, value in scores.items():
                            if metric in METRICS:
                                add(variant, seed, int(record["step"]), int(record["tokens"]), set_name, metric,
                                    float(value))
        return [series[key] for key in sorted(series)]

    def detail(self) -> dict[str, Any]:
        """The status, results.json's table and the rest of it (`about`), the curves: from curves.parquet once
        the latest run is done, else from the runs' evaluations so far (a resumed ablation's table is the
        earlier run's until it ends)."""
        status = self.status()
        results = self._json(layout.RESULTS) if status["has"]["results"] else None
        table = results.pop("table", []) if results else []
        finished = results is not None and status["state"] == "done"
        return {**status, "about": results, "table": table, "curves": self.curves(finished),
                "overlap": self._json(layout.OVERLAP), "mixture_search": self._json(layout.MIXTURE)}


class Ablations(AnswerCache):
    """The ablations folder: every ablation directly inside it, answers cached for `ttl` seconds."""

    def __init__(self, root: str | Path, *, ttl: float = 0.5) -> None:
        super().__init__(ttl=ttl)
        self.root = Path(root).resolve()

    def names(self) -> list[str]:
        try:
            entries = sorted(p for p in self.root.iterdir() if JOB_ID_RE.fullmatch(p.name))
        except OSError:
            return []
        return [p.name for p in entries if p.is_dir() and p.resolve().parent == self.root and
                ServedAblation(p).exists()]

    def get(self, name: str) -> ServedAblation | None:
        """The ablation named `name` if the folder holds it (looked up among its entries, never joined)."""
        if name not in self.names():
            return None
        return ServedAblation(self.root / name)

    def listing(self) -> list[dict[str, Any]]:
        """Every ablation's status, the latest started first."""
        found = [ServedAblation(self.root / name).status() for name in self.names()]
        return sorted(found, key=lambda s: s["started"] or 0, reverse=True)


# -- the routes (plain `def`: FastAPI runs them on worker threads, off the event loop) ------------------------

router = APIRouter(prefix="/api")
AblationName = Annotated[str, PathParam(pattern=JOB_ID, max_length=200, description="The ablation's name (its "
                                         "results folder), e.g. quickstart-ablation")]


def _ablations(request: Request) -> Ablations | None:
    return request.app.state.ablations


@router.get("/ablations", response_model=None, responses={200: {"model": models.AblationList}},
            summary="Every ablation under the served ablations folder, the latest started first")
def ablation_list(request: Request) -> Response:
    registry = _ablations(request)
    if registry is None:
        return Response(dumps({"ablations_dir": None, "ablations": []}), media_type="application/json")
    body = registry.cached(("ablations",), lambda: dumps({"ablations_dir": str(registry.root),
                                                          "ablations": registry.listing()}))
    return Response(body, media_type="application/json")


@router.get("/ablations/{name}", response_model=None, responses={200: {"model": models.AblationDetail}},
            summary="One ablation: state, result table, curves by tokens seen, mixture search, overlap")
def ablation_detail(request: Request, name: AblationName) -> Response:
    registry = _ablations(request)
    found = registry.get(name) if registry is not None else None
    if found is None:
        raise HTTPException(status_code=404, detail=f"no ablation {name!r}")
    return Response(registry.cached(("ablation", name), lambda: dumps(found.detail())), media_type="application/json")
