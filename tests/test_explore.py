"""`curation.explore` and the progress store: on folders made here (no Ray), then on the job the service tests ran."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from curation import explore, progress
from curation.job import JobWriter, _Shard, empty_counters
from curation.progress import PROGRESS, JobFolder, LiveProgress
from curation.recipe import parse_recipe
from tests.test_service import watched_job

RECIPE = """
name: explained
sources: [{name: web, format: warc, paths: ["nowhere/*.warc.gz"]}]
stages:
  - extract: {only: [web]}
  - length: {min_words: 5}
  - gopher_quality: {keep_scores: true}
"""


def test_explain_shows_each_decision_with_its_scores_and_stops_at_the_drop():
    recipe = parse_recipe(RECIPE, check_paths=False)
    short = explore.explain({"text": "far too short", "source": "notes"}, recipe)
    assert not short.kept
    assert [(s["stage"], s["decision"]) for s in short.steps] == [("extract", "not applied"), ("length", "dropped")]
    assert short.steps[-1]["reason"] == "too_few_words" and short.steps[-1]["scores"]["n_words"] == 3
    line = ("the river runs past an old mill and the town that grew around it was built by people who came for "
            "the work and stayed for the quiet life along the water")
    words = line.split()
    rng = random.Random(1)
    sentences = " ".join(" ".join(rng.sample(words, 12)).capitalize() + "." for _ in range(12))
    page = f"<html><body><article><p>{sentences}</p></article></body></html>"
    kept = explore.explain({"html": page, "source": "web"}, recipe)
    assert [s["decision"] for s in kept.steps] == ["kept", "kept", "kept"] and kept.kept
    assert kept.steps[0]["text_changed"] and kept.text == sentences
    gopher = kept.steps[2]["scores"]
    assert gopher and all(isinstance(v, int | float) for v in gopher.values())
    assert "gopher_quality" in str(kept) and "<table" in kept._repr_html_()
    assert list(kept.to_frame()["stage"]) == ["extract", "length", "gopher_quality"]


def test_explain_judges_a_code_file_by_its_meta_as_the_job_did():
    """`explain` built its document from text, source, url and title: a kept MIT file, its row passed whole, was
    `license_not_kept (no licence found)`, and the notebook printed "kept" above that drop."""
    recipe = parse_recipe("name: c\nsources: [{name: code, format: code, paths: ['nowhere/*.tar.gz']}]\n"
                          "stages: [{code_filters: {licenses: [permissive]}}]\n", check_paths=False)
    meta = {"path": "src/app.py", "language": "Python", "license": "MIT", "license_class": "permissive"}
    row = {"id": "c1", "text": "def add(a, b):\n    return a + b\n", "source": "code", "url": float("nan"),
           "meta": json.dumps(meta)}  # a row of `explore.documents`: meta as stored, a missing url NaN
    assert explore.explain(row, recipe).kept
    assert explore.explain({**row, "meta": meta}, recipe).kept
    copyleft = explore.explain({**row, "meta": {**meta, "license": "GPL-3.0", "license_class": "copyleft"}}, recipe)
    assert (copyleft.kept, copyleft.steps[-1]["reason"]) == (False, "license_not_kept")
    assert copyleft.steps[-1]["detail"] == "GPL-3.0 (copyleft)"


MIXED = """
name: mixed
sources: [{name: notes, format: jsonl, paths: ["nowhere/*.jsonl"]}]
stages:
  - langid: {keep: [zh, en], per_paragraph: true}
  - gopher_quality: {keep_scores: KEEP}
  - c4: {terminal_punct: false, keep_scores: KEEP}
"""


def test_explain_gives_the_scores_the_stage_decided_by_with_or_without_keep_scores():
    """`explain` scored a document in two languages as one text, though the stage judges it part by part: without
    keep_scores it showed 145 words and 8 lines removed for a document the run kept whole with 349 words."""
    chinese = ["北京市今天发布了新的交通政策，市民可以更方便地使用公共交通工具出行。",
               "该政策将于下个月开始实施，相关部门表示会认真听取市民的意见和建议。",
               "专家认为，这项政策有助于缓解城市交通拥堵问题，也能减少空气污染。",
               "很多市民对此表示欢迎，希望政府能够继续推出更多便民措施。"]
    english = ["The city announced a new transport policy today, and residents welcomed the change.",
               "The policy takes effect next month, and officials promised to listen to every comment.",
               "Experts say the plan should ease congestion in the centre and reduce air pollution.",
               "Many people hope that the government will continue to improve public services."]
    text = "\n".join(chinese * 2 + english * 2)
    runs = [explore.explain(text, parse_recipe(MIXED.replace("KEEP", keep), check_paths=False))
            for keep in ("false", "true")]
    assert all(run.kept for run in runs)
    without, with_scores = ({s["stage"]: s["scores"] for s in run.steps} for run in runs)
    for stage in ("gopher_quality", "c4"):
        assert without[stage] == with_scores[stage]
    assert without["c4"]["c4_lines_kept"] == 16 and without["c4"]["c4_lines_removed"] == 0


def test_explain_refuses_text_that_is_no_utf8_in_one_line():
    """A lone surrogate (json.loads of "\\ud800") raised UnicodeEncodeError from deep in pyarrow."""
    recipe = parse_recipe(RECIPE, check_paths=False)
    with pytest.raises(ValueError, match=r"^explain: the document's text holds '\\ud800' at 3, which is no UTF-8"):
        explore.explain("ok \ud800 text", recipe)


def test_a_jobs_relative_paths_are_read_from_where_it_ran_not_from_the_notebooks_folder(tmp_path, monkeypatch):
    """A job whose recipe named `bench/gsm8k.jsonl`: `explain(doc, JOB)` from `notebooks/` raised FileNotFoundError
    (recipe.yaml did not say where `curate run` ran)."""
    from pipelines.run import recipe_as_run

    question = "Janet's ducks lay sixteen eggs per day and she eats three of them for breakfast every single morning"
    (tmp_path / "work" / "bench").mkdir(parents=True)
    (tmp_path / "work" / "bench" / "items.jsonl").write_text(json.dumps({"question": question}) + "\n")
    text = RECIPE.replace("  - gopher_quality: {keep_scores: true}\n",
                          "  - decontaminate: {benchmarks: [bench/items.jsonl]}\n")
    monkeypatch.chdir(tmp_path / "work")
    written = recipe_as_run(parse_recipe(text, check_paths=False))
    job = tmp_path / "jobs" / "explained-0123456789"
    job.mkdir(parents=True)
    (job / "recipe.yaml").write_text(written)
    monkeypatch.chdir(tmp_path)  # a notebook's folder
    steps = explore.explain(f"As asked: {question}.", job).steps
    assert [(s["stage"], s["decision"], s["reason"]) for s in steps][-1] == ("decontaminate", "dropped", "contaminated")


def test_explain_of_a_reject_the_read_stage_made_says_it_has_no_text():
    """A `read` reject's row has no text (NaN in pandas): `explain(row, job)` raised ArrowTypeError."""
    recipe = parse_recipe(RECIPE, check_paths=False)
    with pytest.raises(ValueError, match=r"^explain: the document has no text or html \(it was dropped as "
                                         r"invalid_utf8 before it had any\)$"):
        explore.explain({"id": "x", "text": float("nan"), "stage": "read", "reason": "invalid_utf8"}, recipe)


def write_documents(job: Path, ids: list[str]) -> None:
    (job / "documents").mkdir(parents=True)
    pq.write_table(pa.table({"id": ids, "source": ["web"] * len(ids), "url": [f"https://x/{i}" for i in ids],
                             "title": [None] * len(ids), "text": [f"text of {i}" for i in ids]}),
                   job / "documents" / "part.parquet")


def test_a_job_that_kept_nothing_samples_an_empty_frame_with_the_documents_columns(tmp_path):
    """The notebook's `explore.documents(JOB, n=5)[["id", "source", "url", "title"]]` raised KeyError there."""
    (tmp_path / "empty-0123456789").mkdir()
    frame = explore.documents(tmp_path / "empty-0123456789", n=5)
    assert frame.empty and list(frame.columns) == ["id", "source", "url", "title", "text", "meta"]
    assert frame[["id", "source", "url", "title"]].empty


def test_a_wrong_job_path_or_stage_name_is_an_error_not_an_empty_frame(tmp_path):
    """`funnel("jobs/nope")` and `rejects(job, "lenght")` gave empty frames; the notebook, given a `CURATION_JOB`
    relative to the repository while its kernel runs in `notebooks/`, then failed with `KeyError: 'docs_in'`."""
    with pytest.raises(FileNotFoundError, match=f"no job folder at {tmp_path / 'nope'}"):
        explore.funnel(tmp_path / "nope")
    job = tmp_path / "job-0123456789"
    write_documents(job, ["a"])
    sampled = job / "rejects" / "stage=length" / "reason=too_few_words"
    sampled.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["b"], "text": ["b"], "detail": ["n_words=1, min_words=50"]}), sampled / "s.parquet")
    with pytest.raises(ValueError, match=r"no stage 'lenght' in .*: its stages are length"):
        explore.rejects(job, "lenght")
    assert list(explore.rejects(job, "length")["id"]) == ["b"]
    with pytest.raises(ValueError, match=r"stage 'length' of .* dropped nothing for 'typo': its reasons are "
                                         r"too_few_words"):
        explore.rejects(job, "length", "typo")
    assert list(explore.rejects(job, "length", "too_few_words")["id"]) == ["b"]
    with pytest.raises(ValueError, match="the rejects have no `lang`: the recipe has no langid stage before them"):
        explore.rejects(job, lang="zh")
    with pytest.raises(ValueError, match="the documents have no `lang`"):
        explore.documents(job, lang="zh")


def test_samples_are_read_row_by_row_and_are_the_rows_asked_for(tmp_path):
    """`documents(job, n=5)`, `rejects(..., limit=5)` and `samples` read the whole job into memory (1 GB for five
    documents of a 300 MB job): they now read the columns that choose, then the rows chosen, file by file."""
    job = tmp_path / "big-0123456789"
    (job / "documents").mkdir(parents=True)
    for part in range(3):
        ids = [f"d{part}-{i}" for i in range(500)]
        pq.write_table(pa.table({"id": ids, "source": ["web", "notes"] * 250, "url": ids, "title": ids,
                                 "text": [f"text of {i}" for i in ids], "lang": ["zh", "en", "de", "en"] * 125}),
                       job / "documents" / f"part-{part}.parquet", row_group_size=128)
    frame = explore.documents(job, n=7, seed=3)
    assert len(frame) == 7 and list(frame["text"]) == [f"text of {i}" for i in frame["id"]]
    assert list(explore.documents(job, n=7, seed=3)["id"]) == list(frame["id"])  # seeded
    zh_web = explore.documents(job, n=2000, source="web", lang="zh")
    assert len(zh_web) == 375 and set(zh_web["lang"]) == {"zh"} and set(zh_web["source"]) == {"web"}
    assert explore.documents(job, n=0).empty and len(explore.documents(job, n=10**6)) == 1500
    with pytest.raises(ValueError, match="n is a number of documents, 0 or more, not -1"):
        explore.documents(job, n=-1)
    for reason in ("too_few_words", "too_many_words"):
        folder = job / "rejects" / "stage=length" / f"reason={reason}"
        folder.mkdir(parents=True)
        for part in range(2):
            ids = [f"{reason}-{part}-{i}" for i in range(300)]
            pq.write_table(pa.table({"id": ids, "text": ids, "detail": ids, "lang": ["en", "zh", "ja"] * 100}),
                           folder / f"part-{part}.parquet", row_group_size=64)
    first = explore.rejects(job, limit=650)
    assert len(first) == 650 and first["id"].iloc[-1] == "too_many_words-0-49"  # over groups, in their order
    assert list(first["reason"].unique()) == ["too_few_words", "too_many_words"]
    assert explore.rejects(job, limit=0).empty and len(explore.rejects(job, lang="ja")) == 400
    picked = explore.samples(job, per_reason=4, lang="zh", chars=8)
    assert picked.groupby("reason").size().to_dict() == {"too_few_words": 4, "too_many_words": 4}
    assert all(text == i[:8] for text, i in zip(picked["text"], picked["id"], strict=True))
    with pytest.raises(ValueError, match=r"a reason \('too_few_words'\) is of a stage: give the stage too"):
        explore.rejects(job, reason="too_few_words")
    with pytest.raises(ValueError, match="limit is a number of rows, 0 or more, not -1"):
        explore.rejects(job, limit=-1)


def test_documents_of_a_job_before_its_corpus_stages_are_those_kept_so_far_with_a_warning(tmp_path):
    """While `exact_dedup` waited for the read to end, `documents()` gave none beside a funnel of 19 kept."""
    job = tmp_path / "running-0123456789"
    write_documents(job, ["a", "b"])
    (job / "_work").mkdir()
    (job / "documents").rename(job / "_work" / "documents")
    with pytest.warns(UserWarning, match="its corpus stages have not run yet; these are the documents kept so far"):
        assert sorted(explore.documents(job, n=5)["id"]) == ["a", "b"]


def test_spike_documents_through_packed_row_provenance(tmp_path):
    job = tmp_path / "packed-0123456789"
    write_documents(job, ["a", "b", "c", "d"])
    (job / "shards").mkdir()
    rows = pa.table({"doc_ids": pa.array([["a", "b"], ["b", "c"], ["d"]], pa.list_(pa.string()))})
    with ipc.new_file(job / "shards" / "shard-00000.arrow", rows.schema) as writer:
        writer.write_table(rows)
    (job / "train").mkdir()
    lines = [{"step": 1, "loss": 3.0}, {"step": 2, "loss": 9.0, "spike": True,
                                        "batch": {"shard": "shards/shard-00000.arrow", "rows": [1, 2]}},
             {"step": 3, "loss": 3.1, "spike": True, "batch": {"shard": "../../etc/passwd", "rows": [0]}},
             {"step": "bad", "loss": 1.0}]
    (job / "train" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"step": 4, "lo')
    assert list(explore.train_metrics(job)["step"]) == [1, 2, 3]  # the bad line and the half-written one left out
    assert list(explore.spikes(job)["step"]) == [2, 3]
    docs = explore.spike_documents(job, 2)
    assert list(docs["id"]) == ["b", "c", "d"] and list(docs["text"]) == ["text of b", "text of c", "text of d"]
    with pytest.raises(ValueError, match="outside the job folder"):
        explore.spike_documents(job, 3)
    with pytest.raises(LookupError):
        explore.spike_documents(job, 99)


def test_live_progress_snapshots_done_and_open_shards_throttled_with_a_bounded_series(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "SERIES_POINTS", 16)
    job = tmp_path / "live-0123456789"
    writer = JobWriter(str(job), ["length"])
    counters = empty_counters(writer.stages)
    counters["read"].update(docs_in=10, docs_out=10)
    counters["length"].update(docs_in=10, docs_out=7, dropped={"too_few_words": 3})
    writer.done["a"] = {"shard": "a", "documents": 7, "counters": counters}
    live = LiveProgress(str(job), writer, interval=3600)
    first = json.loads((job / PROGRESS).read_text())
    assert first["records"] == 10 and first["documents"] == 7 and first["shards_done"] == 1
    opened = _Shard("b", counters=empty_counters(writer.stages))
    opened.counters["read"].update(docs_in=4, docs_out=4)
    opened.counters["length"].update(docs_in=4, docs_out=4)
    writer.open["b"] = opened
    live.update()  # within the interval: nothing written
    assert json.loads((job / PROGRESS).read_text())["records"] == 10
    live.update(force=True)
    snapshot = json.loads((job / PROGRESS).read_text())
    assert snapshot["records"] == 14 and snapshot["documents"] == 11 and snapshot["shards_open"] == 1
    length = next(s for s in snapshot["stages"] if s["stage"] == "length")
    assert length["dropped"] == {"too_few_words": 3} and length["docs_in"] == 14
    live.gap = 0.0
    for _ in range(3 * 16):
        live.update(force=True)
    points = json.loads((job / PROGRESS).read_text())["series"]["points"]
    assert 8 <= len(points) <= 17 and points[-1][1] == 14
    assert JobFolder(job).funnel()[1]["docs_in"] == 14  # no events yet: the live counters


# -- on the job the service tests ran -------------------------------------------------------------


@pytest.fixture(scope="session")
def job(ray_session, tmp_path_factory):
    return watched_job(tmp_path_factory)


def test_funnel_reasons_and_rejects_agree_with_stats(job):
    stats = json.loads((job.job_dir / "stats.json").read_text())
    funnel = explore.funnel(job.job_dir)
    assert list(funnel["stage"]) == [s["stage"] for s in stats["stages"]]
    assert list(funnel["docs_out"]) == [s["docs_out"] for s in stats["stages"]]
    reasons = explore.reasons(job.job_dir)
    assert {(r.stage, r.reason, r.dropped, r.sampled) for r in reasons.itertuples()} == {
        ("length", "too_few_words", 7, 7), ("exact_dedup", "duplicate", 7, 7)}
    rejects = explore.rejects(job.job_dir, "length")
    assert len(rejects) == 7 and set(rejects["reason"]) == {"too_few_words"}
    assert len(explore.rejects(job.job_dir)) == 14 and len(explore.rejects(job.job_dir, limit=3)) == 3
    samples = explore.samples(job.job_dir, per_reason=2)
    assert samples.groupby(["stage", "reason"]).size().to_dict() == {("exact_dedup", "duplicate"): 2,
                                                                     ("length", "too_few_words"): 2}
    kept = explore.documents(job.job_dir, n=5, source="notes")
    assert len(kept) == 5 and set(kept["source"]) == {"notes"}


def test_explain_agrees_with_the_job_on_its_rejects_and_kept_documents(job):
    rejected = explore.rejects(job.job_dir, "length", "too_few_words")
    for row in rejected.itertuples():
        explained = explore.explain({"text": row.text, "source": row.source}, job.job_dir)
        assert (explained.steps[-1]["stage"], explained.steps[-1]["reason"]) == ("length", "too_few_words")
    kept = explore.documents(job.job_dir, n=3, source="notes")
    for row in kept.itertuples():
        assert explore.explain({"text": row.text, "source": "notes"}, job.job_dir).kept


def test_a_pairs_similarity_is_its_shingles_jaccard_in_its_language():
    """Words split at whitespace made each Chinese paragraph one word: copies minhash_dedup removed at 0.8 showed
    0.0 when their punctuation differed, and an auditor would call them false positives."""
    text = ("大规模语言模型的训练通常分为预训练和微调两个阶段。预训练阶段需要海量的文本数据，"
            "模型在这些数据上学习语言的统计规律。数据的质量直接决定了模型的能力，因此在训练之前需要对网页数据进行清洗。")
    copy = text.replace("，", ",").replace("。", ".")
    pair = explore.SideBySide("minhash_dedup", {"id": "a", "text": text, "lang": "zh"},
                              [{"id": "b", "text": copy, "lang": "zh"}], shingling={"ngram": 5, "unit": "word"})
    assert pair.similarity(pair.removed[0]) >= 0.8
    other = {"id": "c", "text": "分词器的选择也会影响训练效率。对于中英文混合的语料，我们通常训练一个共享的词表。",
             "lang": "zh"}
    assert pair.similarity(other) < 0.2


def test_a_survivor_a_later_stage_removed_leads_to_the_copy_in_the_output(tmp_path):
    """exact_dedup's reject said "kept X" of an X minhash_dedup removed later: a removed page's kept copy was not in
    the output. `final_survivor` follows the chain."""
    import pyarrow.parquet as pq

    removed = tmp_path / "_work" / "removed"
    removed.mkdir(parents=True)
    (tmp_path / "recipe.yaml").write_text("name: j\n")
    rows = {"exact_dedup": [("a2", "a1"), ("a3", "a1")], "minhash_dedup": [("a1", "b1"), ("c2", "c1")]}
    for stage, pairs in rows.items():
        pq.write_table(pa.table({"id": [i for i, _ in pairs], "reason": ["duplicate"] * 2,
                                 "detail": [f"kept {k}" for _, k in pairs]}), removed / f"{stage}.parquet")
    clusters = explore.dedup_clusters(tmp_path)
    assert dict(zip(clusters["id"], clusters["final_survivor"], strict=True)) == {
        "a2": "b1", "a3": "b1", "a1": "b1", "c2": "c1"}
    exact = explore.dedup_clusters(tmp_path, "exact_dedup")
    assert exact["id"].tolist() == ["a2", "a3"] and set(exact["final_survivor"]) == {"b1"}


def test_dedup_pair_side_by_side(job):
    clusters = explore.dedup_clusters(job.job_dir)
    assert len(clusters) == 7 and set(clusters["stage"]) == {"exact_dedup"}
    assert clusters["survivor"].notna().all()
    pair = explore.dedup_pair(job.job_dir, "exact_dedup")
    assert len(pair.removed) == 5 and all(pair.similarity(d) == 1.0 for d in pair.removed)
    assert all(d["detail"] == f"kept {pair.survivor['id']}" for d in pair.removed)
    html = pair._repr_html_()
    assert pair.survivor["id"] in html and all(d["id"] in html for d in pair.removed)
    small = explore.dedup_pair(job.job_dir, survivor=clusters["survivor"].value_counts().index[-1])
    assert len(small.removed) == 1 and small.survivor["source"] == "notes"
    with pytest.raises(LookupError):
        explore.dedup_pair(job.job_dir, survivor="no-such-id")
    # a stage that removed nothing or is not in the job: pyarrow's FileNotFoundError, from deep inside it
    with pytest.raises(LookupError, match=r"no removals of corpus stage 'minhash_dedup' in .*: those that "
                                          r"removed documents are exact_dedup"):
        explore.dedup_pair(job.job_dir, "minhash_dedup")


def test_files_cut_in_a_job_folder_are_left_out_with_a_warning_or_named(tmp_path):
    """A rejects or documents file cut (by hand, a full disk) raised pyarrow's ArrowInvalid from `rejects` and
    `documents`, where the service counts no rows of it; a cut removals file is named."""
    import shutil

    from tests.test_service import write_job

    job = write_job(tmp_path, done=True)
    for name in ("a", "b"):
        (job / "_shards" / f"{name}.json").write_text("{}")
    shard = job / "rejects" / "stage=length" / "reason=too_short"
    shard.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["r1"], "text": ["short"], "detail": ["n_words=1"]}), shard / "a.parquet")
    shutil.copy(shard / "a.parquet", shard / "b.parquet")
    (shard / "b.parquet").write_bytes((shard / "b.parquet").read_bytes()[:50])
    with pytest.warns(UserWarning, match=r"b\.parquet is cut or damaged: left out"):
        assert explore.rejects(job)["id"].tolist() == ["r1"]
    removed = job / explore.REMOVED
    removed.mkdir(parents=True)
    (removed / "exact_dedup.parquet").write_bytes(b"PAR1")
    with pytest.raises(explore.UnreadableFile, match=r"exact_dedup\.parquet is cut or damaged"):
        explore.dedup_clusters(job)


def test_a_documents_file_damaged_in_place_is_left_out_with_a_warning_naming_it(tmp_path, monkeypatch):
    """Bytes flipped inside a documents file (its size and footer kept): `documents()` raised pyarrow's ArrowInvalid
    ("Invalid or truncated PLAIN-encoded BYTE_ARRAY data"), naming no file. Its data pages are made to fail here."""
    from tests.test_service import write_job

    job = write_job(tmp_path, done=True)
    (job / "documents").mkdir()
    for name in ("a", "b"):
        (job / "_shards" / f"{name}.json").write_text("{}")
        rows = [f"{name} document {i} " + "words of its own " * 20 for i in range(300)]
        pq.write_table(pa.table({"id": [f"{name}{i:05d}" for i in range(300)], "source": ["s"] * 300, "text": rows}),
                       job / "documents" / f"{name}.parquet")
    batches = pq.ParquetFile.iter_batches

    def damaged(self, *args, **kwargs):
        if str(getattr(self, "_path", "")).endswith("b.parquet"):
            raise pa.ArrowInvalid("Invalid or truncated PLAIN-encoded BYTE_ARRAY data")
        return batches(self, *args, **kwargs)

    opened = pq.ParquetFile.__init__

    def remember(self, source, *args, **kwargs):
        opened(self, source, *args, **kwargs)
        self._path = source

    monkeypatch.setattr(pq.ParquetFile, "__init__", remember)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", damaged)
    with pytest.warns(UserWarning, match=r"b\.parquet is cut or damaged \(Invalid or truncated .*\): left out"):
        found = explore.documents(job, n=600)
    assert len(found) == 300 and set(found["id"].str[0]) == {"a"}


def test_a_rerun_that_read_nothing_shows_no_rate(tmp_path):
    """A rerun finding every shard done showed the job's records over its 3 ms as 10,333 records/s."""
    from tests.test_service import write_job

    job = write_job(tmp_path, done=True)
    assert JobFolder(job).status()["rate"]["mean_records_per_s"] == 1.0  # 10 records in 10 s
    events = [{"time": 200.0, "event": "job_started", "shards": 4, "already_done": 4},
              {"time": 200.003, "event": "job_done"}]
    (job / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert JobFolder(job).status()["rate"]["mean_records_per_s"] is None
    # a resumed run's mean is of the records it read: 10 in all, 6 of them in shards done before, over 2 s
    events = [{"time": 200.0, "event": "job_started", "shards": 4, "already_done": 2, "records_already_read": 6},
              {"time": 202.0, "event": "job_done"}]
    (job / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert JobFolder(job).status()["rate"]["mean_records_per_s"] == 2.0  # it was 5.0: all 10 over 2 s


def test_a_jobs_name_is_its_folders_without_the_recipes_hash():
    """A folder named without the hash (`train-garbage`, made by hand) was shown as the job `train`."""
    from curation.progress import job_name

    assert job_name("web-zh-en-0123456789") == "web-zh-en"
    assert job_name("train-garbage") == "train-garbage" and job_name("solo") == "solo"


def test_a_dedup_stage_that_removed_nothing_is_not_named_as_one_with_removals(tmp_path):
    job = tmp_path / "dedup-0123456789"
    (job / explore.REMOVED).mkdir(parents=True)
    pq.write_table(pa.table({c: pa.array([], pa.string()) for c in ("id", "reason", "detail")}),
                   job / explore.REMOVED / "minhash_dedup.parquet")
    with pytest.raises(LookupError, match=r"no removals of corpus stage 'exact_dedup' in .*: none of its stages"):
        explore.dedup_clusters(job, "exact_dedup")
    pq.write_table(pa.table({"id": ["b"], "reason": ["near_duplicate"], "detail": ["kept a"]}),
                   job / explore.REMOVED / "minhash_dedup.parquet")
    with pytest.raises(LookupError, match=r"those that removed documents are minhash_dedup$"):
        explore.dedup_clusters(job, "exact_dedup")


def test_lookup_finds_a_rejects_id_and_takes_one_id_as_it_is(tmp_path):
    """A length reject's id gave {}, as did one id given as a string (its characters were looked up)."""
    job = tmp_path / "job-0123456789"
    write_documents(job, ["a"])
    sampled = job / "rejects" / "stage=length" / "reason=too_few_words"
    sampled.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["b"], "text": ["b b"], "detail": ["n_words=2, min_words=50"]}),
                   sampled / "s.parquet")
    found = explore.lookup(job, ["a", "b", "nowhere"])
    assert sorted(found) == ["a", "b"] and found["a"]["text"] == "text of a"
    assert found["b"] == {"id": "b", "text": "b b", "detail": "n_words=2, min_words=50", "stage": "length",
                          "reason": "too_few_words"}
    assert explore.lookup(job, "b")["b"]["reason"] == "too_few_words"
    assert explore.lookup(job, "b", in_rejects=False) == {}


def test_the_jobs_root_given_for_a_job_is_said_to_be_one(tmp_path):
    """`CURATION_JOB=jobs` (the root) ran the notebook into `KeyError: 'docs_in'`: every frame was empty."""
    write_documents(tmp_path / "jobs" / "quickstart-0123456789", ["a"])
    (tmp_path / "jobs" / "quickstart-0123456789" / "recipe.yaml").write_text("name: quickstart\n")
    with pytest.raises(ValueError, match=r"jobs is a folder of jobs, not a job: give one of them "
                                         r"\(quickstart-0123456789\)"):
        explore.funnel(tmp_path / "jobs")
