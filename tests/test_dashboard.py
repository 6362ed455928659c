"""The dashboard pages in headless Debian Chromium: funnel and loss curve drawn (read from the DOM), a screenshot;
the ablations page: the variants' curves, the result table and the mixture search."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from tests.support.ablation import EVERY, STEPS
from tests.test_service import watched_job

pytestmark = pytest.mark.ray

# As root, in a closed network: no sandbox, and no background connections Chromium would wait on.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--window-size=1400,1500", "--virtual-time-budget=15000"]


@pytest.fixture(scope="session")
def job(ray_session, tmp_path_factory):
    return watched_job(tmp_path_factory)


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is not installed (make install puts it there)")
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    return path


class Charts(HTMLParser):
    """Per chart container (id), the attributes of the container and the classes of every element inside."""

    CHARTS = ("funnel", "reasons", "throughput", "loss")

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str | None] = []
        self.attrs: dict[str, dict[str, str]] = {}
        self.inside: dict[str, list[tuple[str, dict[str, str]]]] = {c: [] for c in self.CHARTS}
        self.texts: dict[str, list[str]] = {c: [] for c in self.CHARTS}

    def _current(self) -> str | None:
        return next((c for c in reversed(self.stack) if c), None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        chart = a.get("id") if a.get("id") in self.CHARTS else None
        if chart:
            self.attrs[chart] = a
        current = self._current()
        if current:
            self.inside[current].append((tag, a))
        if tag not in ("path", "rect", "line", "circle", "br", "img", "input", "meta", "link", "use"):
            self.stack.append(chart)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        current = self._current()
        if current:
            self.inside[current].append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("path", "rect", "line", "circle", "br", "img", "input", "meta", "link", "use") and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        current = self._current()
        if current and data.strip():
            self.texts[current].append(data.strip())


def classes(elements: list[tuple[str, dict[str, str]]]) -> set[str]:
    return {c for _, a in elements for c in a.get("class", "").split()}


def test_dashboard_draws_funnel_and_loss_curve(job, chromium, tmp_path):
    url = f"{job.url}/?job={job.job_dir.name}"
    common = [chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    charts = Charts()
    charts.feed(dom.stdout)

    funnel = charts.attrs["funnel"]
    assert "js-plotly-plot" in funnel["class"], "plotly did not draw the funnel"
    assert int(funnel["data-drawn"]) == 5  # records read, then read, extract, length, exact_dedup
    assert "trace" in classes(charts.inside["funnel"]) and "bars" in classes(charts.inside["funnel"])
    bars = [a for tag, a in charts.inside["funnel"] if tag == "path" and a.get("d", "").startswith("M")]
    assert len(bars) >= 5, "one drawn bar per funnel step"
    labels = " ".join(charts.texts["funnel"])
    for word in ("records read", "extract", "length", "exact_dedup", "41", "27"):
        assert word in labels, word

    loss = charts.attrs["loss"]
    assert "js-plotly-plot" in loss["class"] and int(loss["data-drawn"]) == 300
    lines = [a["d"] for tag, a in charts.inside["loss"] if tag == "path" and "js-line" in a.get("class", "")]
    assert lines and max(len(re.findall(r"[ML]", d)) for d in lines) >= 100, "the loss line has its points"
    assert {"loss", "smoothed", "spike"} <= set(charts.texts["loss"])
    assert int(charts.attrs["reasons"]["data-drawn"]) == 2 and int(charts.attrs["throughput"]["data-drawn"]) >= 2

    shot = tmp_path / "dashboard.png"
    run = subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    print(f"dashboard screenshot: {shot}")


def _between(dom: str, start: str, end: str) -> str:
    at = dom.index(start)
    return dom[at:dom.index(end, at)]


def test_ablation_page_compares_the_variants_curves(ray_session, tmp_path_factory, chromium, tmp_path):
    from pipelines.net import free_port
    from pipelines.service import Background
    from tests.support.ablation import tiny_ablation

    tiny = tiny_ablation(tmp_path_factory)
    (tmp_path / "jobs").mkdir()
    service = Background(tmp_path / "jobs", port=free_port(), ablations_dir=tiny.output).start()
    try:
        url = f"{service.url}/ablations?ablation=tiny"
        common = [chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
        dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120)
        assert dom.returncode == 0, dom.stderr[-2000:]
        page = dom.stdout
        curves = re.search(r'<div id="curves"[^>]*>', page)[0]
        assert "js-plotly-plot" in curves, "plotly did not draw the curves"
        assert 'data-drawn="5"' in curves  # base, no-length and the three verified mixtures
        drawn = _between(page, 'id="curves"', 'id="results"')
        lines = re.findall(r'<path class="js-line"[^>]* d="([^"]+)"', drawn)
        points = [len(re.findall(r"[ML]", d)) for d in lines]
        assert points.count(STEPS // EVERY) == 10  # per variant, its seed's line and the mean, one point a checkpoint
        assert "held-out · loss" in _between(page, 'id="curve-select"', "</select>")
        rows = _between(page, 'id="results"', "</table>")
        assert rows.count("<tr") == 1 + 5 * 4 and "mixture-proposed" in rows
        mixture = _between(page, 'id="mixture-panel"', "</table>")
        assert "hidden" not in mixture.split(">", 1)[0] and mixture.count("<tr") == 1 + 3
        assert "quadratic fit on 4 proxies" in mixture
        natural = re.search(r"<tr><td>mixture-natural</td>.*?</tr>", mixture)[0]
        assert re.search(r"<td>–</td><td>[01] of 1</td></tr>$", natural), natural  # one seed: no spread
        verdict = _between(page, 'id="mixture-verdict"', "</p>")
        assert "the fit predicts the proposal " in verdict and "leave-one-out error (" in verdict
        listed = _between(page, 'id="ablations"', "</table>")
        assert 'data-ablation="tiny"' in listed and "9 / 9" in listed
    finally:
        service.stop()
