"""Recipes: every problem reported with file, line, column, key path and what was expected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from curation.recipe import RecipeError, json_schema, load_recipe, parse_recipe
from tests.conftest import ROOT

GOOD = """\
name: ok
sources:
  - {name: web, format: warc, paths: ["recipes/sample/*.warc.gz"]}
stages:
  - extract: {timeout_s: 1}
  - length:
"""


def problems(text: str, **kw) -> list[str]:
    with pytest.raises(RecipeError) as err:
        parse_recipe(text, "r.yaml", **kw)
    return [str(p) for p in err.value.problems]


def test_valid_recipe_parses_with_defaults(monkeypatch):
    monkeypatch.chdir(ROOT)
    recipe = parse_recipe(GOOD, "r.yaml")
    names = [(name, kind) for name, kind, _ in recipe.stage_specs()]
    assert names == [("extract", "extract"), ("length", "length")]
    assert recipe.stage_specs()[0][2].timeout_s == 1
    assert recipe.stage_specs()[1][2].min_words == 50  # `- length:` with no value means its defaults


def test_unknown_key_points_at_the_key():
    text = GOOD.replace("timeout_s: 1", "timeout_s: 1, tiemout: 3")
    assert problems(text, check_paths=False) == [
        "r.yaml:5:29: stages[0].extract.tiemout: unknown key (not part of the recipe schema; see `curate schema`); "
        "did you mean 'timeout_s'?"
    ]
    far = GOOD.replace("timeout_s: 1", "timeout_s: 1, xyzzy: 3")  # nothing close: no guess
    assert problems(far, check_paths=False)[0].endswith("see `curate schema`)")


def test_every_problem_is_reported_with_line_and_expectation():
    text = """\
name: bad name
sources:
  - {name: web, format: warcc, paths: []}
stages:
  - extract: {timeout_s: -1}
  - lenght: {}
  - length: {min_words: many}
rejects: {sample: 2}
"""
    found = problems(text, check_paths=False)
    assert found[0] == ("r.yaml:1:7: name: a name of letters, digits, `_`, `.` and `-` only, beginning with a letter "
                        "or a digit (it names files and folders), got 'bad name'")
    # `_x`, `.x` and `-x` made job folders the status service neither listed nor opened, nor `curate status` found
    for name in ("_under", ".dot", "-dash"):
        assert problems(f"name: '{name}'\nsources: [{{name: s, format: jsonl, paths: [a.jsonl]}}]\n",
                        check_paths=False)[0].startswith("r.yaml:1:7: name: a name of letters")
    assert ("r.yaml:3:25: sources[0].format: Input should be 'warc', 'wet', 'jsonl', 'parquet' or 'code', "
            "got 'warcc'") in found
    assert any(p.startswith("r.yaml:3:39: sources[0].paths: List should have at least 1 item") for p in found)
    assert "r.yaml:5:26: stages[0].extract.timeout_s: Input should be greater than 0" in found
    assert any(p.startswith("r.yaml:6:5: stages[1]: unknown stage 'lenght'") and "did you mean 'length'" in p
               for p in found)
    assert any(p.startswith("r.yaml:7:25: stages[2].length.min_words: Input should be a valid integer") for p in found)
    assert "r.yaml:8:19: rejects.sample: Input should be less than or equal to 1" in found
    assert len(found) == 7


def test_missing_required_key_names_it():
    assert problems("name: x\nstages: []\n") == ["r.yaml:1:1: sources: required key is missing"]


def test_duplicate_keys_and_yaml_syntax_errors():
    assert any("key given twice" in p for p in problems(GOOD + "name: again\n", check_paths=False))
    assert problems("name: [unclosed\n")[0].startswith("r.yaml:2:1: not valid YAML")


def test_cross_references_and_paths_are_checked_before_work(tmp_path):
    text = GOOD.replace("timeout_s: 1", "only: [nosuch]").replace("recipes/sample/*.warc.gz", f"{tmp_path}/*.warc")
    found = problems(text)
    assert any("stages[0].extract.only[0]: no source named 'nosuch' (sources: web)" in p for p in found)
    assert any(p.startswith("r.yaml:3:39: sources[0].paths[0]: no file matches") for p in found)


def test_no_is_norwegian_not_false_and_yes_still_switches_on(monkeypatch):
    monkeypatch.chdir(ROOT)
    text = GOOD.replace("timeout_s: 1", "timeout_s: 1, markdown: yes") + (
        "  - langid: {keep: [no, sv]}\n  - gopher_quality: {languages: {no: {stop_words: [og, er]}}}\n")
    specs = {kind: params for _, kind, params in parse_recipe(text, "r.yaml").stage_specs()}
    assert specs["langid"].keep == ["no", "sv"]  # YAML 1.1 read [False, 'sv']: "Input should be a valid string"
    assert set(specs["gopher_quality"].languages) == {"nb", "nn"}
    assert specs["extract"].markdown is True


def test_a_path_naming_a_pipe_says_what_it_is_not_that_nothing_matches(tmp_path):
    os.mkfifo(tmp_path / "crawl.warc")
    found = problems(GOOD.replace("recipes/sample/*.warc.gz", f"{tmp_path}/crawl.warc"))
    assert f"r.yaml:3:39: sources[0].paths[0]: '{tmp_path}/crawl.warc' is a named pipe, not a regular file: only " \
        "regular files are read" in found, found


def test_fingerprint_ignores_where_a_job_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    a = parse_recipe(GOOD, "r.yaml")
    b = parse_recipe(GOOD + "output: /elsewhere\nray: {address: auto}\n", "r.yaml")
    c = parse_recipe(GOOD + "seed: 7\n", "r.yaml")
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_schema_documents_every_stage_and_key():
    schema = json_schema()
    text = json.dumps(schema)
    for key in ("extract", "length", "timeout_s", "min_words", "max_per_reason", "text_field"):
        assert key in text
    assert schema["properties"]["sources"]["type"] == "array"
    assert "description" in schema["$defs"]["Source"]["properties"]["paths"]


@pytest.mark.parametrize("recipe", sorted((ROOT / "recipes").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_recipes_are_valid(recipe: Path, monkeypatch):
    monkeypatch.chdir(ROOT)
    if recipe.name == "train.yaml":  # a training recipe: its job exists once the quickstart has run
        from curation.train.config import load_train_recipe

        load_train_recipe(recipe, check_paths=False)
        return
    if recipe.name == "ablation.yaml":  # an ablation of the quickstart: its base recipe and evaluation sets ship
        from curation.ablate.spec import load_ablation

        load_ablation(recipe)
        return
    # Only the quickstart's inputs ship with the project; the others point at a user's data.
    load_recipe(recipe, check_paths=recipe.name == "quickstart.yaml")


@pytest.mark.subprocess
def test_cli_validate_and_schema(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("timeout_s: 1", "timeout_s: soon"))
    cli = [sys.executable, "-m", "pipelines.cli"]
    out = subprocess.run([*cli, "validate", str(bad)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2
    assert f"{bad}:5:26: stages[0].extract.timeout_s: Input should be a valid number" in out.stderr
    ok = subprocess.run([*cli, "validate", "recipes/quickstart.yaml"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    schema = subprocess.run([*cli, "schema"], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(schema.stdout)["title"] == "curation recipe"
    run = subprocess.run([*cli, "run", str(bad)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2 and "nothing was run" in run.stderr
    # `curate schema | head`: the reader closes the pipe early, which ended in a BrokenPipeError traceback
    piped = subprocess.Popen([*cli, "schema"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert piped.stdout.read(10) and piped.stdout.close() is None
    assert piped.wait() == 0 and b"Traceback" not in piped.stderr.read()


def test_missing_model_file_is_reported_before_work(monkeypatch):
    monkeypatch.chdir(ROOT)
    text = GOOD + "  - classifier: {model: models/nothing-here.bin, threshold: 0.5}\n"
    assert "r.yaml:7:25: stages[2].classifier.model: no model file at 'models/nothing-here.bin'" in problems(text)


def test_every_file_a_stage_reads_is_checked_before_work(monkeypatch, tmp_path):
    """Each key marked `ReadsFile`, whatever its name: a toxicity word list once passed validation and failed the
    run; a list of files names the one missing; a folder is a benchmark but not a word list."""
    monkeypatch.chdir(ROOT)
    (tmp_path / "bench").mkdir()
    text = GOOD + (f"  - toxicity: {{wordlist: {tmp_path}}}\n"
                   f"  - decontaminate: {{benchmarks: [{tmp_path / 'bench'}, {tmp_path / 'gone.jsonl'}]}}\n")
    found = problems(text)
    assert f"r.yaml:7:26: stages[2].toxicity.wordlist: no word-list file at '{tmp_path}'" in found
    assert any(f"stages[3].decontaminate.benchmarks[1]: no benchmark file or folder at '{tmp_path / 'gone.jsonl'}'"
               in p for p in found), found
    assert len(found) == 2, found


def test_a_tokenizer_model_that_cannot_pack_is_refused_before_work(monkeypatch, tmp_path):
    """A truncated, garbage or empty `.model`, or one without EOS, passed validation and failed after all the curation
    with a traceback; a trained tokenizer's `options: {eos_id: -1}` too."""
    import sentencepiece as spm

    monkeypatch.chdir(ROOT)
    text = "Tide pools hold anemones, crabs and small fish between the rocks.\n" * 50
    (tmp_path / "corpus.txt").write_text(text + "Every pool is a small world of its own.\n" * 50)
    spm.SentencePieceTrainer.train(input=str(tmp_path / "corpus.txt"), model_prefix=str(tmp_path / "good"),
                                   vocab_size=30, eos_id=-1, minloglevel=2)
    noeos = (tmp_path / "good.model").read_bytes()
    for name, data in {"empty": b"", "garbage": b"\x00garbage" * 20, "noeos": noeos, "cut": noeos[:100]}.items():
        (tmp_path / f"{name}.model").write_bytes(data)
    expected = {"empty": "an empty file, no sentencepiece model",
                "garbage": "not a sentencepiece model (", "cut": "not a sentencepiece model (",
                "noeos": "a sentencepiece model without an EOS piece (eos_id -1)"}
    for name, why in expected.items():
        found = problems(GOOD + f"tokenizer: {{model: {tmp_path / name}.model}}\npack: {{seq_len: 64}}\n")
        assert len(found) == 1 and f"tokenizer.model: '{tmp_path / name}.model' is {why}" in found[0], found
    found = problems(GOOD + "tokenizer: {train: {vocab_size: 500, options: {eos_id: -1}}}\npack: {seq_len: 64}\n")
    assert "eos_id must be >= 0: packing ends every document with the EOS piece" in found[0], found


def test_paragraph_bloom_dedup_must_come_last_among_corpus_stages(monkeypatch):
    monkeypatch.chdir(ROOT)
    text = GOOD + "  - bloom_dedup: {}\n  - exact_dedup: {}\n"
    assert any("stages[3].exact_dedup: corpus stage 'exact_dedup' after 'bloom_dedup', which rewrites text" in p
               for p in problems(text))
    parse_recipe(GOOD + "  - bloom_dedup: {level: document}\n  - exact_dedup: {}\n", "r.yaml")


def test_rehydration_needs_the_cluster_sizes_minhash_dedup_keeps(monkeypatch):
    monkeypatch.chdir(ROOT)
    packed = "tokenizer: {train: {vocab_size: 300}}\npack: {seq_len: 16}\n"
    text = GOOD + "  - minhash_dedup: {}\nmixture: {weights: {web: 1}, rehydrate: fineweb2}\n" + packed
    found = [p for p in problems(text) if "rehydrate" in p]
    assert found == ["r.yaml:8:41: mixture.rehydrate: `rehydrate` repeats documents by their duplicate cluster's "
                     "size: it needs `minhash_dedup: {cluster_size: true}` among the stages"]
    parse_recipe(text.replace("minhash_dedup: {}", "minhash_dedup: {cluster_size: true}"), "r.yaml")


def test_warc_pages_need_an_extract_stage_before_any_stage_that_reads_text(monkeypatch):
    """A WARC source's documents have no text until `extract`: without one the recipe validated, then packing failed
    with a traceback (`None.split`), or `length` dropped every page as too short."""
    monkeypatch.chdir(ROOT)
    assert problems(GOOD.replace("  - extract: {timeout_s: 1}\n  - length:\n", "  - html_langid: {keep: [en]}\n")) == [
        "r.yaml:3:25: sources[0].format: source 'web' reads WARC pages, whose text none of the `stages` makes: "
        "add `- extract: {}` (`only: [...]` names the sources it reads), or read WET files (`format: wet`), which "
        "hold the text"]
    stage_message = ("stages[0].length: stage 'length' reads text, and source 'web' (warc) has its pages' HTML only "
                     "until an `extract` stage before it makes their text")
    assert [p.split(": ", 1)[1] for p in problems(GOOD.replace("  - extract: {timeout_s: 1}\n", ""))] == [stage_message]
    late = GOOD.replace("  - extract: {timeout_s: 1}\n  - length:\n", "  - length:\n  - extract: {}\n")
    assert [p.split(": ", 1)[1] for p in problems(late)] == [stage_message]
    other = GOOD.replace("extract: {timeout_s: 1}", "extract: {only: [notes]}").replace(
        "stages:", "  - {name: notes, format: jsonl, paths: [recipes/sample/notes.jsonl.gz]}\nstages:")
    assert [p.split(": ", 1)[1] for p in problems(other)] == [stage_message.replace("[0]", "[1]")]  # only: not web
    assert problems(GOOD.replace("extract: {timeout_s: 1}", "extract: {only: []}")) == [
        "r.yaml:5:21: stages[0].extract.only: List should have at least 1 item after validation, not 0"]
    pages = "  - html_langid: {keep: [en]}\n  - extract:"
    parse_recipe(GOOD.replace("  - extract:", pages), "r.yaml")  # page stages before it read the pages


def test_a_seed_outside_what_the_samplers_take_is_refused(monkeypatch):
    """sentencepiece takes a uint32: `seed: -1` passed validation and failed the run after all its work."""
    monkeypatch.chdir(ROOT)
    assert "r.yaml:1:7: seed: Input should be greater than or equal to 0" in problems("seed: -1\n" + GOOD)
    assert "r.yaml:1:7: seed: Input should be less than or equal to 4294967295" in problems(f"seed: {2**32}\n" + GOOD)


def test_a_pattern_that_is_no_glob_is_a_problem_of_its_key(monkeypatch):
    monkeypatch.chdir(ROOT)
    found = problems(GOOD.replace("recipes/sample/*.warc.gz", "recipes/sample/[z-a].warc.gz"))
    assert len(found) == 1 and "r.yaml:3:39: sources[0].paths[0]: cannot list" in found[0]
    assert "bad pattern" in found[0] and "bad character range z-a" in found[0]


def test_validate_answers_a_recipe_nested_too_deeply_in_one_line(tmp_path, capsys):
    from pipelines.cli import main

    deep = tmp_path / "deep.yaml"
    deep.write_text("sources: " + "[" * 1000 + "]" * 1000 + "\n")
    assert main(["validate", str(deep)]) == 2
    assert capsys.readouterr().err.splitlines()[0] == f"{deep}:1:1: not valid YAML: nested too deeply"


def test_an_input_whose_name_is_not_utf8_is_refused_before_work(tmp_path):
    """pyarrow takes UTF-8 paths only: such a file's documents were lost as one `unreadable_input`, job `done`."""
    import os

    (tmp_path / os.fsdecode(b"bad\xff.jsonl")).write_text('{"text": "fine"}\n')
    (tmp_path / "good.jsonl").write_text('{"text": "fine"}\n')
    found = problems(f'name: n\nsources:\n  - {{name: k, format: jsonl, paths: ["{tmp_path}/*.jsonl"]}}\n')
    assert len(found) == 1 and "whose name is not UTF-8" in found[0] and "bad\\udcff.jsonl" in found[0]


def test_one_invalid_key_does_not_hide_the_problems_between_the_others(monkeypatch):
    """`curate validate` says every problem at once: a bad `mixture` hid a source named twice, an `only:` naming no
    source and a missing input until it was fixed."""
    monkeypatch.chdir(ROOT)
    text = """\
name: m
sources:
  - {name: notes, format: jsonl, paths: ["recipes/sample/notes.jsonl.gz"]}
  - {name: notes, format: jsonl, paths: ["missing.jsonl"]}
stages:
  - length: {min_words: 50, only: [nope]}
mixture: {weights: {notes: 1.0}, total_tokens: -5}
"""
    assert problems(text) == [
        "r.yaml:7:48: mixture.total_tokens: Input should be greater than 0",
        "r.yaml:4:12: sources[1].name: source name 'notes' is used twice",
        "r.yaml:6:36: stages[0].length.only[0]: no source named 'nope' (sources: notes, notes)",
        "r.yaml:4:42: sources[1].paths[0]: no file matches 'missing.jsonl'",
    ]


def test_a_misspelt_key_inside_a_source_hides_no_other_problem(monkeypatch):
    """`text_fild:` in a source made its whole `sources` invalid, and the cross-checks (duplicate names, mixture,
    `only:`, stage order, `pack` without `tokenizer`) came only after it was fixed: the recipe without the misspelt
    keys is checked now, as the user meant it."""
    monkeypatch.chdir(ROOT)
    text = ("name: typo\nsources:\n"
            "  - {name: web, format: jsonl, paths: ['recipes/sample/notes.jsonl.gz'], text_fild: text}\n"
            "stages:\n  - exact_dedup: {}\n  - length: {min_words: 5, only: [wbe]}\n"
            "mixture: {weights: {webb: 1.0}, total_tokens: 1000}\npack: {seq_len: 64}\n")
    found = problems(text)
    assert found[0].startswith("r.yaml:3:74: sources[0].text_fild: unknown key")
    for expected in ("pack: `pack` needs `tokenizer`", "mixture.weights.webb: no source named 'webb'",
                     "document stage 'length' after corpus stage 'exact_dedup'",
                     "stages[1].length.only[0]: no source named 'wbe'"):
        assert any(expected in p for p in found), (expected, found)


def test_what_a_named_file_holds_decides_the_job_folder(tmp_path):
    """A domain list changed between two runs of one job: its first shards were kept by the old list and the others
    by the new one, in one folder, without a word."""
    domains = tmp_path / "domains.txt"
    domains.write_text("example.org\n")
    text = (f"name: u\nsources:\n  - {{name: web, format: jsonl, paths: ['{tmp_path}/x.jsonl']}}\n"
            f"stages:\n  - url: {{domains: ['{domains}']}}\n")
    first = parse_recipe(text, "r.yaml", check_paths=False).fingerprint()
    assert parse_recipe(text, "r.yaml", check_paths=False).fingerprint() == first  # the same file, the same job
    domains.write_text("example.com\n")
    assert parse_recipe(text, "r.yaml", check_paths=False).fingerprint() != first


def test_a_dedup_score_column_names_a_number_column_a_stage_before_it_adds(monkeypatch):
    """`score_column: nonexistent` (or `text`, or a score without `keep_scores`) validated, then ended the run in a
    traceback after every document stage had run."""
    monkeypatch.chdir(ROOT)
    recipe = ("name: s\nsources:\n  - {name: web, format: jsonl, paths: ['recipes/sample/notes.jsonl.gz']}\n"
              "stages:\n  - length: {min_words: 0%s}\n  - minhash_dedup: {score_column: %s}\n")
    assert problems(recipe % ("", "n_chars")) == [
        "r.yaml:6:35: stages[1].minhash_dedup.score_column: no stage before 'minhash_dedup' adds a number column "
        "'n_chars' (those added: none; a filter adds its scores with `keep_scores: true`)"]
    assert "(those added: n_words, n_chars" in problems(recipe % (", keep_scores: true", "text"))[0]
    parse_recipe(recipe % (", keep_scores: true", "n_chars"), "r.yaml")


def test_a_file_of_another_kind_is_named_with_its_command(capsys, monkeypatch):
    """`curate run recipes/train.yaml` printed a dozen unknown keys ("model: unknown key; did you mean 'model'?")."""
    from pipelines.cli import main

    monkeypatch.chdir(ROOT)
    for command, path, said in (("run", "recipes/train.yaml", "is a training recipe, not a curation recipe: "
                                 "`curate train recipes/train.yaml` runs it; nothing was run"),
                                ("train", "recipes/ablation.yaml", "is an ablation, not a training recipe: "
                                 "`curate ablate recipes/ablation.yaml` runs it; nothing was run"),
                                ("ablate", "recipes/quickstart.yaml", "is a curation recipe, not an ablation: "
                                 "`curate run recipes/quickstart.yaml` runs it; nothing was run")):
        assert main([command, path]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [f"{path} {said}"]
