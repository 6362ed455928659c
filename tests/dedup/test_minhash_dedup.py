"""`minhash_dedup`: the stage without Ray, its Ray plan against the single-process reference, and a
recipe run end to end (real README history mixed into unrelated documents)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import ray

from curation.dedup.minhash import exact_jaccard, lsh_parameters
from curation.dedup.minhash_dedup import (
    MinhashDedup,
    near_duplicate_removals,
    parse_detail,
    shingle_sets,
    shingle_sets_jaccard,
)
from curation.recipe import RecipeError, parse_recipe
from curation.stages.registry import CORPUS_STAGES
from pipelines.dedup import corpus_stages
from pipelines.dedup import minhash as ray_fuzzy
from pipelines.executors import LocalExecutor
from pipelines.run import run

VOCAB = [f"w{i}" for i in range(20_000)]


def readme_versions(testdata: Path) -> list[str]:
    """The 329 successive versions of the requests README: real near-duplicates."""
    folder = testdata / "neardup" / "readme_history_requests"
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.iterdir())]


def web_documents(testdata: Path) -> list[str]:
    texts = []
    for f in sorted((testdata / "webtext" / "dolma_ccnet").glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as lines:
            texts += [json.loads(line)["text"] for line in lines if line.strip()]
    return texts


def generated(n: int, seed: int) -> list[str]:
    """Unrelated random documents, and every tenth a near-copy (3 of 200 words changed) of the one before."""
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    for i in range(n):
        words = rng.integers(0, len(VOCAB), 200)
        if i % 10 == 9:
            words = np.array([VOCAB.index(w) for w in texts[-1].split()])
            words[rng.choice(200, 3, replace=False)] = rng.integers(0, len(VOCAB), 3)
        texts.append(" ".join(VOCAB[w] for w in words))
    return texts


def ids_of(table: pa.Table) -> list[str]:
    return sorted(table.column("id").to_pylist())


# --------------------------------------------------------------------------------------------- no Ray


def test_parameters_defaults_and_recipe_validation():
    stage = MinhashDedup()
    assert CORPUS_STAGES["minhash_dedup"] is MinhashDedup
    params = stage.params
    assert (params.threshold, params.num_perm, params.ngram, params.unit, params.seed) == (0.8, 128, 5, "word", 1)
    assert stage.params.verify == "exact" and stage.params.score_column is None
    assert stage.lsh() == lsh_parameters(0.8, 128, false_negative_weight=0.9) == (14, 9)
    assert MinhashDedup(bands=16).lsh() == (16, 8) and MinhashDedup(bands=20, rows=5).lsh() == (20, 5)
    recipe = parse_recipe("""
name: r
sources: [{name: d, format: jsonl, paths: ["x.jsonl"]}]
stages: [{length: {min_words: 0, keep_scores: true}},
         {minhash_dedup: {threshold: 0.7, unit: char, ngram: 9, verify: estimate, score_column: n_chars}}]
""", check_paths=False)
    [_, (name, kind, params)] = recipe.stage_specs()
    assert (name, kind, params.threshold, params.unit, params.verify) == ("minhash_dedup", "minhash_dedup", 0.7, "char",
                                                                         "estimate")
    head = "name: r\nsources: [{name: d, format: jsonl, paths: [x]}]\n"
    for bad in ("{bands: 20, rows: 7}", "{verify: maybe}", "{threshold: 1.0}"):
        with pytest.raises(RecipeError, match="minhash_dedup"):
            parse_recipe(head + f"stages: [{{minhash_dedup: {bad}}}]", check_paths=False)
    with pytest.raises(RecipeError, match="bands x rows = 200 x 0 does not fit num_perm = 128"):  # not "x None"
        parse_recipe(head + "stages: [{minhash_dedup: {bands: 200}}]", check_paths=False)


def test_verification_payloads_give_the_library_similarities(testdata):
    texts = readme_versions(testdata)[:60]
    stage = MinhashDedup()
    sets = shingle_sets(stage.hasher().shingles(texts))
    a, b = np.arange(59), np.arange(1, 60)
    got = shingle_sets_jaccard(sets.take(pa.array(a)), sets.take(pa.array(b)))
    assert (got == exact_jaccard([texts[i] for i in a], [texts[i] for i in b])).all()
    assert 0.5 < np.median(got) < 1.0  # consecutive versions are near-duplicates
    estimate = MinhashDedup(verify="estimate")
    sigs = estimate.payload(texts)
    assert sigs.type == pa.list_(pa.uint32(), 128) == estimate.payload_type()
    assert np.abs(estimate.similarity(sigs.take(pa.array(a)), sigs.take(pa.array(b))) - got).mean() < 0.05


def test_signed_rows_skip_empty_texts_and_details_parse():
    stage = MinhashDedup(score_column="q")
    docs = pa.table({"id": ["a", "b", "c"], "text": ["some words here and there too", "", None], "q": [1, 2, None]})
    signed = stage.signed(docs)
    assert signed.column("usable").to_pylist() == [True, False, False]
    assert signed.column("score").to_pylist() == [1.0, 2.0, None]
    assert [len(k) for k in signed.column("keys").to_pylist()] == [14, 14, 14]
    removed = near_duplicate_removals(["x"], ["d7"], ["00000000000000ff"]).to_pylist()
    assert removed == [{"id": "x", "reason": "near_duplicate", "detail": "kept d7 (cluster 00000000000000ff)"}]
    assert parse_detail("kept d0001 (cluster 8f00000000000001)") == ("d0001", "8f00000000000001")
    with pytest.raises(ValueError, match="near_duplicate"):
        parse_detail("kept d0001")


# --------------------------------------------------------------------------------------------- Ray


@pytest.fixture(scope="module")
def parquet_corpus(testdata, tmp_path_factory) -> tuple[list[str], pa.Table]:
    """README versions, web and generated documents (with a score, some null) in 3 Parquet shards."""
    texts = readme_versions(testdata) + web_documents(testdata) + generated(200, 5) + ["", "   "]
    rng = np.random.default_rng(7)
    ids = [f"{rng.integers(1 << 40):010x}" for _ in texts]
    scores = pa.array([None if i % 7 == 0 else float(s) for i, s in enumerate(rng.choice([0.1, 0.5, 0.9], len(texts)))])
    table = pa.table({"id": ids, "text": texts, "source": ["docs"] * len(texts), "q": scores})
    folder = tmp_path_factory.mktemp("fuzzy_docs")
    order = rng.permutation(len(texts))
    files = []
    for k, part in enumerate(np.array_split(order, 3)):
        files.append(str(folder / f"shard{k}.parquet"))
        pq.write_table(table.take(pa.array(part)), files[-1])
    return files, table


def test_ray_plan_equals_the_single_process_reference_for_any_workers_and_order(ray_session, parquet_corpus):
    files, table = parquet_corpus
    stage = MinhashDedup(score_column="q")
    reference = stage.reference(table)
    assert 300 < reference.num_rows < table.num_rows - 200
    two = ray_fuzzy.fuzzy_dedup(files, stage)
    assert two.removals.equals(reference)  # same ids, survivors and clusters
    assert two.seen == table.num_rows and two.rounds >= 2 and two.verified_pairs < two.candidate_pairs
    context = ray.data.DataContext.get_current()
    limits = context.execution_options.resource_limits
    context.execution_options.resource_limits = limits.copy(cpu=1)  # one worker, one partition, shards reversed
    try:
        one = ray_fuzzy.fuzzy_dedup(files[::-1], stage, partitions=1)
    finally:
        context.execution_options.resource_limits = limits
    assert one.removals.equals(reference)


@pytest.mark.parametrize("verify", ["exact", "estimate", "none"])
def test_local_executor_signs_each_file_in_a_task_of_its_own_and_removes_what_the_reference_does(
        parquet_corpus, tmp_path, monkeypatch, verify):
    files, table = parquet_corpus
    stage = MinhashDedup(verify=verify, score_column="q")
    gone = ids_of(stage.reference(table))[:30]  # removed by an earlier stage: never seen
    earlier = pa.table({"id": gone, "stage": ["exact_dedup"] * 30, "reason": ["duplicate"] * 30,
                        "detail": ["kept x"] * 30})
    expected = stage.reference(table.filter(pc.invert(pc.is_in(table["id"], pa.array(gone)))))
    pool = LocalExecutor(2)
    try:
        two = corpus_stages._stage_result(str(tmp_path / "two"), files, "minhash_dedup", stage, earlier, pool)
    finally:
        pool.close()
    signed: list[str] = []
    sign = corpus_stages._signatures
    monkeypatch.setattr(corpus_stages, "_signatures", lambda file, *args: signed.append(file) or sign(file, *args))
    one = corpus_stages._stage_result(str(tmp_path / "one"), files, "minhash_dedup", stage, earlier, LocalExecutor(1))
    assert signed == files  # in-process, where the calls can be counted: one per file
    for removals, seen, _, _ in (one, two):
        assert removals.replace_schema_metadata(None).equals(expected.cast(removals.schema.remove_metadata()))
        assert seen == table.num_rows - 30
    with pytest.raises(ValueError, match="signatures of shape"):
        stage.reference(table, stage.hasher().signatures(table.column("text"))[:-1])


def test_estimate_and_unverified_modes_equal_their_references(ray_session, parquet_corpus):
    files, table = parquet_corpus
    estimate = MinhashDedup(verify="estimate")
    earlier = pa.array(ids_of(estimate.reference(table))[:50])  # removed by an earlier stage: never seen
    later = ray_fuzzy.fuzzy_dedup(files, estimate, earlier)
    assert later.seen == table.num_rows - 50
    assert later.removals.equals(estimate.reference(table.filter(pc.invert(pc.is_in(table["id"], earlier)))))
    unverified = MinhashDedup(verify="none")
    assert ray_fuzzy.fuzzy_dedup(files, unverified).removals.equals(unverified.reference(table))


def test_recipe_run_removes_the_reference_near_duplicates_and_resumes(ray_session, testdata, tmp_path, monkeypatch):
    readme, others = readme_versions(testdata), web_documents(testdata) + generated(60, 3)
    shards = {"a": readme[::2] + others[::2], "b": readme[1::2] + others[1::2]}
    for name, texts in shards.items():
        rows = [{"text": t, "url": f"https://{name}/{i}"} for i, t in enumerate(texts)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = parse_recipe(f"""
name: fuzzy
sources: [{{name: docs, format: jsonl, paths: ["{tmp_path}/a.jsonl", "{tmp_path}/b.jsonl"]}}]
stages: [{{minhash_dedup: {{}}}}]
""")
    monkeypatch.setattr(corpus_stages, "SINGLE_TASK_DOCUMENTS", 0)  # the shuffles, as on a large corpus
    first = run(recipe, output=str(tmp_path / "out"), quiet=True)
    job = Path(first.job_dir)
    curated = pq.read_table(job / "_work" / "documents")
    reference = MinhashDedup().reference(curated)
    rejects = pq.read_table(job / "rejects" / "stage=minhash_dedup" / "reason=near_duplicate")
    assert ids_of(rejects) == ids_of(reference) and rejects.num_rows > 300
    kept = set(pq.read_table(job / "documents").column("id").to_pylist())
    assert kept.isdisjoint(ids_of(rejects)) and len(kept) == curated.num_rows - rejects.num_rows
    details = [parse_detail(d) for d in rejects.column("detail").to_pylist()]
    assert {survivor for survivor, _ in details} <= kept  # every reject names a kept survivor
    stats = json.loads((job / "stats.json").read_text())
    [counts] = [s for s in stats["stages"] if s["stage"] == "minhash_dedup"]
    assert (counts["docs_in"], counts["docs_out"]) == (curated.num_rows, len(kept))
    assert counts["dropped"] == {"near_duplicate": rejects.num_rows}
    assert stats["documents"]["out"] == len(kept)
    removed_file = job / "_work" / "removed" / "minhash_dedup.parquet"
    written = removed_file.stat().st_mtime_ns

    def fail(*args, **kwargs):
        raise AssertionError("the rerun recomputed the near-duplicates")

    monkeypatch.setattr(ray_fuzzy, "removals", fail)
    again = run(recipe, output=str(tmp_path / "out"), quiet=True)
    assert again.shards_skipped == 2 and removed_file.stat().st_mtime_ns == written
    [recount] = [s for s in again.stats["stages"] if s["stage"] == "minhash_dedup"]
    assert {**recount, "seconds": 0} == {**counts, "seconds": 0}
    assert set(pq.read_table(job / "documents").column("id").to_pylist()) == kept

    monkeypatch.setattr(corpus_stages, "SINGLE_TASK_DOCUMENTS", 20_000)  # small: one task, never the shuffles
    small = Path(run(recipe, output=str(tmp_path / "small"), quiet=True).job_dir)
    assert pq.read_table(small / "_work" / "removed" / "minhash_dedup.parquet").equals(pq.read_table(removed_file))
    assert set(pq.read_table(small / "documents").column("id").to_pylist()) == kept


def test_ray_plan_by_language_on_real_chinese_equals_the_reference(ray_session, testdata, tmp_path):
    """Chinese pages with near copies (3 characters changed) and French pages repeated under a second
    label: the shuffles remove what the one-process reference does, per language."""
    lines = [s for s in (testdata / "langid" / "sentences" / "zh.txt").read_text(encoding="utf-8").splitlines()
             if s.strip()]
    zh = ["".join(lines[i:i + 10]) for i in range(0, 100, 10)]
    rng = np.random.default_rng(2)
    near = []
    for text in zh:
        chars = list(text)
        for i in rng.choice(len(chars), 3, replace=False):
            chars[i] = "国" if chars[i] != "国" else "家"
        near.append("".join(chars))
    fr = [s for s in (testdata / "langid" / "sentences" / "fr.txt").read_text(encoding="utf-8").splitlines()]
    french = [" ".join(fr[i:i + 10]) for i in range(0, 40, 10)]
    texts = zh + near + french + french
    langs = ["zh"] * 20 + ["fr"] * 4 + ["it"] * 4
    table = pa.table({"id": [f"d{i:03d}" for i in range(len(texts))], "text": texts, "source": ["web"] * len(texts),
                      "lang": langs})
    files = []
    for k, part in enumerate(np.array_split(rng.permutation(len(texts)), 2)):
        files.append(str(tmp_path / f"shard{k}.parquet"))
        pq.write_table(table.take(pa.array(part)), files[-1])
    stage = MinhashDedup(by_language=True, cluster_size=True)
    reference = stage.reference(table)
    assert ids_of(reference) == [f"d{i:03d}" for i in range(10, 20)]  # the near copies; French twice, two labels
    assert ray_fuzzy.fuzzy_dedup(files, stage).removals.equals(reference)
    assert set(stage.added(reference).values.column("minhash_cluster_size").to_pylist()) == {2}
