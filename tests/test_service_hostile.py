"""The status service against hostile job folders and a missing cluster, through a real uvicorn server on loopback.

Links planted in job folders (a `reason=` folder linked to another job's rejects, `stats.json` and friends
linked out of the jobs folder, a FIFO where a snapshot should be, a job folder that is itself a link out)
must read as absent on every endpoint that reads files; job control with an unreachable or non-Ray
dashboard answers 502 with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.net import free_port, free_ports
from pipelines.service.control import MAX_RECIPE_BYTES, Control
from pipelines.service.server import Background
from tests.conftest import ROOT, SAMPLE
from tests.support.waiting import wait_until
from tests.test_service import write_job

LINKS = "links-0123456789"
SHARDS_LINKED = "shards-0123456789"
OTHER = "other-0123456789"
CUT = "cut-0123456789"  # rejects files emptied and cut
DOCUMENT_LINKED = "doclink-0123456789"  # a documents file linked out
ESCAPED = "escaped-0123456789"  # the job folder itself is a link out of the jobs folder
POINTED = "pointed-0123456789"  # a real folder whose events.jsonl and recipe.yaml are links out
LEAKS = ("SECRET", "OTHER-JOB")  # in every file a link leads to; never in an answer about the linked job



def write_parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def shard_record(job: Path, shard: str, counters: dict) -> None:
    (job / "_shards").mkdir(exist_ok=True)
    (job / "_shards" / f"{shard}.json").write_text(json.dumps({"counters": counters}))


def length_counters(docs_in: int, dropped: dict[str, int]) -> dict:
    out = docs_in - sum(dropped.values())
    return {"read": {"docs_in": docs_in, "docs_out": docs_in},
            "length": {"docs_in": docs_in, "docs_out": out, "dropped": dropped}}


def reject(text: str) -> list[dict]:
    return [{"id": f"r-{text}", "source": "web", "url": "https://example.com/", "text": text, "detail": None}]


def removal(doc: str, detail: str) -> dict:
    return {"id": doc, "reason": "duplicate", "detail": detail}


def documents(text: str) -> list[dict]:
    return [{"id": i, "source": "web", "url": None, "title": None, "text": text} for i in ("d1", "d2")]


def build_outside(outside: Path) -> None:
    """What the links lead to: files a service must never show, each holding SECRET."""
    outside.mkdir()
    (outside / "stats.json").write_text(json.dumps({"secret": "SECRET-stats"}))
    (outside / "manifest.json").write_text(json.dumps({"secret": "SECRET-manifest"}))
    (outside / "events.jsonl").write_text(json.dumps({"time": 1.0, "event": "job_started", "note": "SECRET"}) + "\n")
    (outside / "recipe.yaml").write_text("name: SECRET\n")
    (outside / "train").mkdir()
    (outside / "train" / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 1.0, "note": "SECRET"}) + "\n")
    (outside / "shard.json").write_text(json.dumps({"counters": length_counters(999_999, {"SECRET": 1})}))
    write_parquet(outside / "reject.parquet", reject("SECRET-reject"))
    write_parquet(outside / "removed.parquet", [removal("x2", "kept SECRET (cluster s)")])
    write_parquet(outside / "documents" / "crawl-0.parquet", documents("SECRET-document"))
    write_job(outside, name="escaped-job", done=True)


def build_links_job(root: Path, outside: Path) -> None:
    """A finished job whose every file the service reads, but the `ok` rejects and one dedup stage, leads out."""
    job = write_job(root, name=LINKS, done=True)
    shard_record(job, "crawl-0", length_counters(3, {"ok": 1}))
    for name in ("stats.json", "manifest.json"):
        (job / name).unlink(missing_ok=True)
        (job / name).symlink_to(outside / name)
    (job / "_progress.json").unlink()
    os.mkfifo(job / "_progress.json")  # reading it would block the server for good
    shutil.rmtree(job / "train")
    (job / "train").symlink_to(outside / "train")
    rejects = job / "rejects" / "stage=length"
    write_parquet(rejects / "reason=ok" / "crawl-0.parquet", reject("own reject"))
    rejects.joinpath("reason=too_short").symlink_to(root / OTHER / "rejects" / "stage=length" / "reason=too_short")
    (rejects / "reason=too_few_words").mkdir()
    (rejects / "reason=too_few_words" / "crawl-0.parquet").symlink_to(outside / "reject.parquet")
    removed = job / "_work" / "removed"
    write_parquet(removed / "minhash_dedup.parquet", [removal("d2", "kept d1 (cluster c1)")])
    (removed / "exact_dedup.parquet").symlink_to(outside / "removed.parquet")
    (job / "_work" / "documents").symlink_to(outside / "documents")


def build_jobs(root: Path, outside: Path) -> None:
    other = write_job(root, name=OTHER, done=True)
    shard_record(other, "crawl-0", length_counters(2, {"too_short": 1}))
    write_parquet(other / "rejects" / "stage=length" / "reason=too_short" / "crawl-0.parquet", reject("OTHER-JOB"))
    cut = write_job(root, name=CUT, done=True)  # files emptied or cut (by hand, a full disk): no Parquet in them
    shard_record(cut, "crawl-0", length_counters(2, {"too_short": 1}))
    good = write_parquet(cut / "rejects" / "stage=length" / "reason=too_short" / "crawl-0.parquet", reject("kept"))
    (good.parent / "crawl-1.parquet").write_bytes(good.read_bytes()[:200])
    (cut / "rejects" / "stage=length" / "reason=emptied").mkdir()
    (cut / "rejects" / "stage=length" / "reason=emptied" / "crawl-0.parquet").write_bytes(b"")
    removals = write_parquet(cut / "_work" / "removed" / "minhash_dedup.parquet",
                             [removal("d2", "kept d1 (cluster c1)")])
    removals.write_bytes(removals.read_bytes()[:100])
    (cut / "manifest.json").write_text('{"splits": {"train": ')
    write_parquet(other / "_work" / "removed" / "minhash_dedup.parquet", [removal("d2", "kept d1 (cluster c1)")])
    write_parquet(other / "_work" / "documents" / "crawl-0.parquet", documents("OTHER-JOB document"))
    linked = write_job(root, name=DOCUMENT_LINKED, done=True)
    shard_record(linked, "crawl-0", length_counters(2, {}))
    write_parquet(linked / "_work" / "removed" / "minhash_dedup.parquet", [removal("d2", "kept d1 (cluster c1)")])
    (linked / "_work" / "documents").mkdir()
    (linked / "_work" / "documents" / "crawl-0.parquet").symlink_to(outside / "documents" / "crawl-0.parquet")
    build_links_job(root, outside)
    shards = root / SHARDS_LINKED  # no snapshot, no stats: the funnel would come from `_shards/` records
    shards.mkdir()
    (shards / "recipe.yaml").write_text("name: shards\nsources: [{name: web, format: warc, paths: [x.warc.gz]}]\n"
                                        "stages:\n  - length: {min_words: 5}\n")
    (shards / "events.jsonl").write_text(json.dumps({"time": 1.0, "event": "job_started", "shards": 2}) + "\n")
    shard_record(shards, "crawl-0", length_counters(5, {}))
    (shards / "_shards" / "evil.json").symlink_to(outside / "shard.json")
    (root / ESCAPED).symlink_to(outside / "escaped-job")
    pointed = root / POINTED
    pointed.mkdir()
    (pointed / "events.jsonl").symlink_to(outside / "events.jsonl")
    (pointed / "recipe.yaml").symlink_to(outside / "recipe.yaml")
    for name in ("sp ace-0123456789", "données-0123456789"):  # made by hand: no job id names them
        write_job(root, name=name, done=True)


@dataclass
class Served:
    url: str

    def get(self, path: str, status: int = 200) -> dict:
        response = httpx.get(self.url + path, timeout=10)
        assert response.status_code == status, (path, response.status_code, response.text[:300])
        for leak in LEAKS:
            assert leak not in response.text, (path, response.text[:300])
        return response.json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "jobs", base / "outside"
    root.mkdir()
    build_outside(outside)
    build_jobs(root, outside)
    service = Background(root, port=free_port()).start()
    try:
        yield Served(service.url)
    finally:
        service.stop()


def test_the_job_list_leaves_out_job_folders_linked_out_or_made_of_links(served):
    """...and folders no job id names (`sp ace`, `données`): listed, every request for them was a 422."""
    listed = sorted(j["id"] for j in served.get("/api/jobs")["jobs"])
    assert listed == [CUT, DOCUMENT_LINKED, LINKS, OTHER, SHARDS_LINKED]
    for job in (ESCAPED, POINTED):
        for path in ("", "/funnel", "/stats", "/manifest", "/rejects", "/dedup", "/train", "/throughput"):
            served.get(f"/api/jobs/{job}{path}", 404)


def test_files_linked_out_of_the_job_read_as_absent(served):
    status = served.get(f"/api/jobs/{LINKS}")
    assert status["state"] == "done"
    assert status["has"] == {"stats": False, "manifest": False, "train": False, "rejects": True}
    assert served.get(f"/api/jobs/{LINKS}/stats", 404)["detail"] == f"job {LINKS!r} has no stats.json yet"
    assert served.get(f"/api/jobs/{LINKS}/manifest", 404)["detail"] == f"job {LINKS!r} has no manifest.json yet"
    empty = {"job": LINKS, "count": 0, "points": [], "spikes": [], "last": None}
    assert served.get(f"/api/jobs/{LINKS}/train") == empty  # the polled fast path
    assert served.get(f"/api/jobs/{LINKS}/train?since_step=0&via=fastapi") == empty  # FastAPI's route
    funnel = served.get(f"/api/jobs/{LINKS}/funnel")  # from its own `_shards/` record, not stats.json or the FIFO
    assert funnel["final"] is False
    assert [(r["stage"], r["docs_in"], r["docs_out"], r["dropped"]) for r in funnel["stages"]] == [
        ("read", 3, 3, {}), ("length", 3, 2, {"ok": 1})]
    assert served.get(f"/api/jobs/{LINKS}/stages/length")["dropped"] == {"ok": 1}
    assert served.get(f"/api/jobs/{LINKS}/throughput")["points"] == []  # its `_progress.json` is a FIFO: never read


def test_rejects_through_links_are_not_served_the_jobs_own_are(served):
    assert served.get(f"/api/jobs/{LINKS}/rejects") == {
        "job": LINKS, "stages": {"length": {"ok": {"dropped": 1, "sampled": 1}}}}
    page = served.get(f"/api/jobs/{LINKS}/rejects/length/ok")
    assert page["total"] == 1 and [r["text"] for r in page["rows"]] == ["own reject"]
    for reason in ("too_short", "too_few_words"):  # another job's folder; a file linked out
        served.get(f"/api/jobs/{LINKS}/rejects/length/{reason}", 404)
    theirs = httpx.get(f"{served.url}/api/jobs/{OTHER}/rejects/length/too_short", timeout=10).json()
    assert [r["text"] for r in theirs["rows"]] == ["OTHER-JOB"]  # under its own job, where it belongs


def test_rejects_files_emptied_or_cut_count_no_rows_and_the_others_are_served(served):
    """An empty or cut rejects file made both rejects endpoints answer 500 (pyarrow: no Parquet footer)."""
    index = served.get(f"/api/jobs/{CUT}/rejects")["stages"]["length"]
    assert index["too_short"]["sampled"] == 1 and index["emptied"]["sampled"] == 0
    page = served.get(f"/api/jobs/{CUT}/rejects/length/too_short")
    assert page["total"] == 1 and [r["id"] for r in page["rows"]] == ["r-kept"]
    assert served.get(f"/api/jobs/{CUT}/rejects/length/emptied")["total"] == 0
    # a cut removals file answered 500; it is the job folder's state, said in a line that names no server path
    answer = httpx.get(f"{served.url}/api/jobs/{CUT}/dedup/minhash_dedup", timeout=10)
    assert answer.status_code == 409, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith(f"{CUT}/_work/removed/minhash_dedup.parquet is cut or damaged")
    # a manifest cut short is said so (it was "has no manifest.json yet", beside `has.manifest: true`)
    assert served.get(f"/api/jobs/{CUT}/manifest", 409)["detail"] == (
        f"the manifest.json of job {CUT!r} is cut or damaged; a rerun of the job writes it again")


def test_dedup_removals_and_documents_through_links_are_not_served(served):
    assert served.get(f"/api/jobs/{LINKS}/dedup") == {"job": LINKS, "stages": ["minhash_dedup"]}
    served.get(f"/api/jobs/{LINKS}/dedup/exact_dedup", 404)
    ids_only = [{"survivor": {"id": "d1"}, "cluster": "c1",
                 "removed": [{"id": "d2", "reason": "duplicate", "detail": "kept d1 (cluster c1)"}]}]
    assert served.get(f"/api/jobs/{LINKS}/dedup/minhash_dedup")["clusters"] == ids_only  # _work/documents leads out
    assert served.get(f"/api/jobs/{DOCUMENT_LINKED}/dedup/minhash_dedup")["clusters"] == ids_only  # one file does
    own = httpx.get(f"{served.url}/api/jobs/{OTHER}/dedup/minhash_dedup", timeout=10).json()["clusters"]
    assert own[0]["survivor"]["text"] == own[0]["removed"][0]["text"] == "OTHER-JOB document"  # its own documents


def test_a_shard_record_linked_out_hides_the_records_and_metrics_show_no_leak(served):
    status = served.get(f"/api/jobs/{SHARDS_LINKED}")
    assert status["shards"] == {"total": 2, "done": 0, "already_done": 0}
    assert served.get(f"/api/jobs/{SHARDS_LINKED}/funnel")["stages"] == []
    metrics = httpx.get(served.url + "/metrics", timeout=10)
    assert metrics.status_code == 200 and "SECRET" not in metrics.text and "999999" not in metrics.text
    assert f'curation_job_state{{job="{LINKS}",state="done"}} 1.0' in metrics.text
    assert ESCAPED not in metrics.text and POINTED not in metrics.text


# -- job control without a cluster --------------------------------------------------------------------


def test_job_control_without_a_reachable_ray_dashboard_answers_502_with_the_reason(tmp_path):
    nothing, http, *service_ports = free_ports(4)  # together: `nothing` is never bound, so never drawn again
    unused = f"http://127.0.0.1:{nothing}"  # nothing listens there
    not_ray = Background(tmp_path, port=http).start()  # an HTTP server, but no Ray dashboard
    services = [Background(tmp_path, port=number, job_control=Control("s3cret", address)).start()
                for number, address in zip(service_ports, (unused, not_ray.url), strict=True)]
    recipe = (ROOT / "recipes" / "quickstart.yaml").read_text().replace("recipes/sample/", f"{SAMPLE}/")
    auth = {"Authorization": "Bearer s3cret"}
    try:
        unreachable, wrong = services
        assert httpx.post(f"{unreachable.url}/api/jobs", content=recipe).status_code == 401  # the token comes first
        # the body's size is judged before any cluster is asked: too large is a 413, said with or without a length
        huge = b"#" * (MAX_RECIPE_BYTES + 1)
        chunked = (huge[i:i + 65536] for i in range(0, len(huge), 65536))  # no Content-Length header
        for content in (huge, chunked):
            response = httpx.post(f"{unreachable.url}/api/jobs", content=content, headers=auth, timeout=60)
            assert response.status_code == 413, response.text
            assert response.json()["detail"] == f"a recipe is at most {MAX_RECIPE_BYTES} bytes"
        empty = httpx.post(f"{unreachable.url}/api/jobs", content=b"", headers=auth, timeout=60)
        assert empty.status_code == 422 and "empty" in empty.json()["detail"], empty.text
        for service, address, reason in ((unreachable, unused, f"Failed to connect to Ray at address: {unused}."),
                                         (wrong, not_ray.url, "Version check returned 404.")):
            for response in (httpx.post(f"{service.url}/api/jobs", content=recipe, headers=auth, timeout=60),
                             httpx.delete(f"{service.url}/api/jobs/raysubmit_abc", headers=auth, timeout=60)):
                assert response.status_code == 502, response.text
                assert response.headers["content-type"] == "application/json"
                detail = response.json()["detail"]
                assert detail.startswith(f"the Ray cluster at {address} is unreachable or refused the request"), detail
                assert reason in detail, detail
    finally:
        for service in (*services, not_ray):
            service.stop()


# -- a slow disk under concurrent requests ------------------------------------------------------------


def test_a_slow_read_holds_up_no_other_request_and_is_done_once(tmp_path, monkeypatch):
    from pipelines.service.jobs import ServedJob

    job = write_job(tmp_path, done=True)
    reads, reading, release = [], threading.Event(), threading.Event()
    funnel = ServedJob.funnel

    def stuck_funnel(self: ServedJob) -> list[dict]:  # a network disk that hangs until the test lets it go
        reads.append(self.id)
        reading.set()
        release.wait(timeout=60)
        return funnel(self)

    monkeypatch.setattr(ServedJob, "funnel", stuck_funnel)
    service = Background(tmp_path, port=free_port()).start()
    jobs = service.server.config.app.state.jobs
    try:
        with httpx.Client(base_url=service.url, timeout=60) as client, ThreadPoolExecutor(6) as pool:
            polls = [pool.submit(client.get, f"/api/jobs/{job.name}/funnel") for _ in range(6)]
            assert reading.wait(timeout=30)
            health = client.get("/healthz", timeout=10)  # with the read on the event loop: a timeout
            assert health.status_code == 200 and not release.is_set()
            assert health.json() == {"status": "ok", "jobs_dir": str(tmp_path.resolve()), "readable": True}
            assert client.get("/healthz?via=fastapi").content == health.content
            wait_until(lambda: jobs.computing.get(("funnel", job.name), (None, [0]))[1][0] >= 6,
                       "all six polls waiting on the one read", timeout=30, every=0.01)
            release.set()
            answers = [p.result() for p in polls]
        assert [a.status_code for a in answers] == [200] * 6 and len({a.content for a in answers}) == 1
        assert reads == [job.name], "six polls at once, one read"
    finally:
        release.set()
        service.stop()


# -- a link swapped in between the check and the read -------------------------------------------------------


def swapped_after_check(monkeypatch: pytest.MonkeyPatch, target: Path, secret: Path) -> list[Path]:
    """Once the service's check (`holds`) has passed `target`, replace it with a link to `secret`, as a writer
    racing the service would: the read that follows must not follow it. Returns the targets swapped."""
    from pipelines.service import jobs

    checked, swapped = jobs.holds, []

    def holds_then_swap(root: Path, real_root: str, path: str | Path, *, folder: bool = False) -> bool:
        held = checked(root, real_root, path, folder=folder)
        if held and Path(root, path) == target and not swapped:
            link = target.with_name(target.name + ".swap")
            link.symlink_to(secret)
            link.replace(target)
            swapped.append(target)
        return held

    monkeypatch.setattr(jobs, "holds", holds_then_swap)
    return swapped


def read_stats(job: Path) -> object:
    from pipelines.service.jobs import ServedJob

    return ServedJob(job).stats()


def read_events(job: Path) -> object:
    from pipelines.service.jobs import ServedJob

    return ServedJob(job).status()


def read_metrics(job: Path) -> object:
    from pipelines.service.jobs import ServedJob

    return ServedJob(job).train_metrics()


def read_rejects(job: Path) -> object:
    from curation import explore
    from pipelines.service.jobs import ServedJob

    files = [job / "rejects" / "stage=length" / "reason=short" / "crawl-0.parquet"]
    return explore.page(ServedJob(job).pinned_each(files), 0, 10).to_pylist()


def read_documents(job: Path) -> object:
    from curation import explore
    from pipelines.service.jobs import ServedJob

    return explore.lookup(job, ["d1", "d2"], pin=ServedJob(job).pinned_all)


def read_removed(job: Path) -> object:
    from curation import explore
    from pipelines.service.jobs import ServedJob

    return explore.cluster_table(job, "minhash_dedup", pin=ServedJob(job).pinned_all)


def read_ablation(job: Path) -> object:
    from pipelines.service.ablations import ServedAblation

    return ServedAblation(job)._json("results.json")


SWAPS = {  # the file swapped: how the service reads it, and what that read shows of the job's own file
    "stats.json": (read_stats, "records_read"), "events.jsonl": (read_events, '"finished": 110.0'),
    "train/metrics.jsonl": (read_metrics, '"loss": 2.99'),
    "rejects/stage=length/reason=short/crawl-0.parquet": (read_rejects, "own reject"),
    "_work/documents/crawl-0.parquet": (read_documents, "own document"),
    "_work/removed/minhash_dedup.parquet": (read_removed, "kept d1"), "results.json": (read_ablation, "seeds")}


@pytest.mark.parametrize("relative", list(SWAPS))
def test_a_link_swapped_in_after_the_check_is_not_followed(relative, tmp_path, monkeypatch):
    job = write_job(tmp_path / "jobs", done=True)
    shard_record(job, "crawl-0", length_counters(2, {"short": 1}))
    write_parquet(job / "rejects" / "stage=length" / "reason=short" / "crawl-0.parquet", reject("own reject"))
    write_parquet(job / "_work" / "documents" / "crawl-0.parquet", documents("own document"))
    write_parquet(job / "_work" / "removed" / "minhash_dedup.parquet", [removal("d2", "kept d1 (cluster c1)")])
    (job / "results.json").write_text(json.dumps({"table": [], "seeds": [0]}))
    target = job / relative
    secret = tmp_path / "outside" / target.name
    secret.parent.mkdir()
    if "removed" in relative:
        write_parquet(secret, [removal("SECRET", "kept SECRET (cluster SECRET)")])
    elif target.suffix == ".parquet":
        write_parquet(secret, documents("SECRET") if "documents" in relative else reject("SECRET"))
    else:
        secret.write_text(json.dumps({"time": 1.0, "event": "job_started", "step": 1, "loss": 1.0,
                                      "secret": "SECRET"}) + "\n")
    read, own = SWAPS[relative]
    assert own in json.dumps(read(job), default=str)
    swapped = swapped_after_check(monkeypatch, target, secret)
    after = json.dumps(read(job), default=str)  # a new reader: nothing cached
    assert swapped == [target], "the swap should have happened between the check and the read"
    assert "SECRET" not in after, after


def test_a_status_url_that_is_no_url_and_a_port_out_of_range_are_refused_in_one_line(capsys):
    """`--url notaurl` ended in a traceback; uvicorn took port 70000 and listened on 70000 - 65536."""
    from pipelines.cli import main
    from pipelines.service.server import for_run

    assert main(["status", "--url", "notaurl"]) == 2
    assert "no status service at notaurl" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "70000"])
    assert exited.value.code == 2 and "a port from 1 to 65535, not '70000'" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"a port from 1 to 65535, not '99999'"):
        for_run("/tmp", "99999")


@pytest.mark.subprocess
def test_serve_says_so_when_its_jobs_folder_is_not_there(tmp_path: Path):
    """Started from another folder (or `--jobs` misspelt), the service answered `ok` with no job, and nothing said
    why."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "serve", "--jobs", str(tmp_path / "nojobs"),
                                "--port", str(free_port())], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(30)
    assert first.startswith(f"curate serve: no folder at {tmp_path / 'nojobs'} yet: no job is shown")


def test_a_stats_json_written_since_the_cached_answer_is_served_not_called_damaged(tmp_path: Path):
    """Polled while a job ran, /stats answered 409 "cut or damaged" for a healthy job: the answer cached before the
    file was written (none yet) beside a fresh look that found the file."""
    job = tmp_path / "jobs" / "fresh-0123456789"
    job.mkdir(parents=True)
    (job / "recipe.yaml").write_text("name: fresh\n")
    service = Background(tmp_path / "jobs", port=free_port()).start()
    try:
        url = f"{service.url}/api/jobs/{job.name}/stats"
        assert httpx.get(url, timeout=10).status_code == 404
        (job / "stats.json").write_text(json.dumps({"documents": {"out": 1}}))
        answer = httpx.get(url, timeout=10)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"documents": {"out": 1}}
    finally:
        service.stop()
