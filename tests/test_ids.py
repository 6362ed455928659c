"""Document ids and shard names come from where a file lies below its source's root, not from where that root
lies: the same data elsewhere is the same job (same samples, same packed shards)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from curation import schema
from curation.recipe import parse_recipe
from curation.shards import list_shards
from pipelines.run import run

WORDS = ["the", "of", "river", "stone", "light", "garden", "winter", "table", "music", "paper", "window",
         "city", "green", "silent", "morning"]


def write_data(root: Path) -> None:
    rng = random.Random(3)
    for sub, n in (("a", 120), ("b", 80)):
        (root / sub).mkdir(parents=True)
        lines = (" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "." for _ in range(n))
        (root / sub / "part.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in lines))


def packing_recipe(data: Path) -> str:
    # a tokenizer sample, a mixture and a validation split smaller than the whole: each chosen by id hash
    return f"""\
name: ids
executor: local
local: {{workers: 1}}
sources:
  - {{name: web, format: jsonl, paths: ["{data}/a"]}}
  - {{name: more, format: jsonl, paths: ["{data}/b/part.jsonl"]}}
mixture: {{weights: {{web: 0.5, more: 0.5}}, total_tokens: 6000}}
tokenizer: {{train: {{vocab_size: 300, model_type: bpe, sample_bytes: 8000}}}}
pack: {{seq_len: 64, shard_rows: 32, validation: 0.2}}
"""


def outputs(job: Path) -> dict[str, object]:
    docs = sorted(job.glob("documents/*.parquet"))
    return {"shards": {p.name: p.read_bytes() for p in sorted(job.glob("shards/*.arrow"))},
            "tokenizer": (job / "tokenizer.model").read_bytes(),
            "documents": {p.name: pq.read_table(p, columns=["id", "text"]).to_pylist() for p in docs}}


def test_the_same_files_in_another_folder_give_the_same_ids_samples_and_packed_shards(tmp_path: Path):
    write_data(tmp_path / "one")
    shutil.copytree(tmp_path / "one", tmp_path / "two" / "deeper")
    jobs = []
    for data in (tmp_path / "one", tmp_path / "two" / "deeper"):
        result = run(parse_recipe(packing_recipe(data)), output=str(tmp_path / "jobs" / data.name), quiet=True)
        jobs.append(outputs(Path(result.job_dir)))
    first, second = jobs
    assert len(first["shards"]) > 2 and sum(len(d) for d in first["documents"].values()) == 200
    assert first == second  # with ids of the absolute path, the tokenizer and every packed shard differed


def test_keys_are_paths_below_the_source_root_and_stay_when_files_are_added(tmp_path: Path):
    write_data(tmp_path / "data")
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(tmp_path / "data" / "a" / "part.jsonl", tmp_path / "elsewhere" / "part.jsonl")

    def shards(paths: list[str]) -> dict[str, str]:
        source = {"name": "s", "format": "jsonl", "paths": paths}
        return {s.key: s.name for s in list_shards(parse_recipe(json.dumps({"name": "k", "sources": [source]})))}

    below = shards([f"{tmp_path}/data/**/*.jsonl"])
    assert list(below) == ["a/part.jsonl", "b/part.jsonl"]
    (tmp_path / "data" / "c").mkdir()
    (tmp_path / "data" / "c" / "new.jsonl").write_text('{"text": "x"}\n')
    after = shards([f"{tmp_path}/data/**/*.jsonl"])
    assert list(after) == [*below, "c/new.jsonl"] and {k: after[k] for k in below} == below  # the others kept
    # two patterns naming files of one name: keys below the folder both lie in, so they stay apart
    both = shards([f"{tmp_path}/data/a/part.jsonl", f"{tmp_path}/elsewhere/part.jsonl"])
    assert sorted(both) == ["data/a/part.jsonl", "elsewhere/part.jsonl"] and len(set(both.values())) == 2


def test_a_job_of_the_other_id_scheme_is_not_resumed_into(tmp_path: Path, monkeypatch):
    """Its shards are named the other way: resumed into, each would be read again beside its old output."""
    write_data(tmp_path / "data")
    recipe = parse_recipe(packing_recipe(tmp_path / "data").split("mixture:")[0])
    monkeypatch.setattr(schema, "ID_SCHEME", 1)
    old = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    written = {p: p.read_bytes() for p in Path(old.job_dir).rglob("*") if p.is_file()}
    monkeypatch.setattr(schema, "ID_SCHEME", 2)
    new = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    assert new.job_dir != old.job_dir and new.shards_skipped == 0 and new.stats["documents"]["out"] == 200
    assert {p: p.read_bytes() for p in Path(old.job_dir).rglob("*") if p.is_file()} == written
