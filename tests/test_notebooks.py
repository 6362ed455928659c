"""The notebooks execute cleanly against a job (or an ablation) the tests ran; the committed copies carry no
outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from curation.recipe import parse_recipe
from pipelines.run import run
from tests.conftest import ROOT
from tests.test_service import watched_job

pytestmark = pytest.mark.subprocess  # each notebook runs in a kernel

NOTEBOOKS = ROOT / "notebooks"


@pytest.fixture(scope="session")
def job(ray_session, tmp_path_factory):
    return watched_job(tmp_path_factory)


def execute(name: str, job_dir: str, cwd, monkeypatch) -> list[dict]:
    monkeypatch.setenv("CURATION_JOB", job_dir)  # the kernel inherits it
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(cwd)}}).execute()
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def text_of(outputs: list[dict]) -> str:
    parts = [o.get("text", "") for o in outputs if o["output_type"] == "stream"]
    parts += [json.dumps(o.get("data", {})) for o in outputs if "data" in o]
    return "\n".join(parts)


def images(outputs: list[dict]) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs)


def test_notebooks_are_committed_without_outputs():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


def test_inspect_filtered_samples_notebook(job, tmp_path, monkeypatch):
    outputs = execute("inspect_filtered_samples.ipynb", str(job.job_dir), tmp_path, monkeypatch)
    assert not [o for o in outputs if o["output_type"] == "error"]
    text = text_of(outputs)
    assert images(outputs) >= 2, "funnel and reasons plots"
    assert "== length / too_few_words" in text and "== exact_dedup / duplicate" in text
    assert "dropped too_few_words" in text and "length               kept" in text  # explain, then a longer text
    assert "similarity 1.0" in text and "https://copy.example/" in text  # the dedup pair


@pytest.fixture(scope="module")
def chinese_job(testdata, tmp_path_factory) -> str:
    """A job of Chinese documents only, through the chain of `recipes/web-zh-en.yaml` (in this process): the
    real Chinese pages of the test data as WARC (`recipes/sample/make_pages.py`) and Leipzig's Chinese
    sentences as JSONL documents, some of one sentence (too few words), one of a line repeated, one copied."""
    from tests.lang.test_zh_en_end_to_end import make_pages

    root = tmp_path_factory.mktemp("zh-job")
    assert make_pages().write(testdata, root / "pages", only_chinese=True)["zh.warc.gz"] >= 8
    lines = (testdata / "langid" / "sentences" / "zh.txt").read_text(encoding="utf-8").splitlines()
    texts = ["\n".join(lines[k:k + 8]) for k in range(0, 80, 8)] + lines[80:85] + ["\n".join([lines[90]] * 12)]
    texts.append(texts[0])
    (root / "zh.jsonl").write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts),
                                   encoding="utf-8")
    recipe = yaml.safe_load((ROOT / "recipes" / "web-zh-en.yaml").read_text(encoding="utf-8"))
    stages = [s for s in recipe["stages"] if next(iter(s)) not in ("toxicity", "pii", "minhash_dedup")]
    recipe = {"name": "zh-notebook", "output": str(root / "jobs"), "executor": "local", "local": {"workers": 1},
              "sources": [{"name": "pages", "format": "warc", "paths": [str(root / "pages" / "zh.warc.gz")]},
                          {"name": "sentences", "format": "jsonl", "paths": [str(root / "zh.jsonl")]}],
              "stages": [{"extract": {"timeout_s": 300}} if "extract" in s else s for s in stages]}
    return run(parse_recipe(yaml.safe_dump(recipe, allow_unicode=True)), quiet=True, kind="local").job_dir


def test_inspect_filtered_samples_notebook_on_a_chinese_job(chinese_job, tmp_path, monkeypatch):
    outputs = execute("inspect_filtered_samples.ipynb", chinese_job, tmp_path, monkeypatch)
    assert not [o for o in outputs if o["output_type"] == "error"]
    text = text_of(outputs)
    assert "== gopher_quality / too_few_words" in text and "== exact_dedup / duplicate" in text
    stage, reason = re.search(r"was dropped by (\w+) \((\w+)\)", text).groups()
    assert re.search(rf"\n{stage} +dropped {reason} ", text)  # explain agrees with the job
    assert re.search(r"was kept \(zh\)\n", text)
    # the kept document went through every stage, judged by Chinese thresholds (a KeyError before)
    assert re.search(r"gopher_repetition +kept .*_top_bounds\[2\]=0\.\d+", text)
    assert "similarity 1.0" in text


def test_inspect_filtered_samples_notebook_on_a_job_whose_dedup_removed_nothing(tmp_path, monkeypatch):
    """`dedup_pair` raised `LookupError` on a job whose dedup stage found no duplicate, and the notebook stopped there:
    common on a small or clean corpus. `CURATION_JOB` relative to the repository, as the README writes it, is found
    from `notebooks/`, where the kernel runs."""
    texts = [f"Note {k}: the tide came in early today, and the boats in the harbour rose with it." for k in range(4)]
    (tmp_path / "notes.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    recipe = {"name": "no-dups", "output": str(tmp_path / "jobs"), "executor": "local", "local": {"workers": 1},
              "sources": [{"name": "notes", "format": "jsonl", "paths": [str(tmp_path / "notes.jsonl")]}],
              "stages": [{"exact_dedup": {}}]}
    job_dir = Path(run(parse_recipe(yaml.safe_dump(recipe)), quiet=True, kind="local").job_dir)
    (tmp_path / "notebooks").mkdir()  # the kernel runs in notebooks/; CURATION_JOB as the README writes it
    outputs = execute("inspect_filtered_samples.ipynb", f"jobs/{job_dir.name}", tmp_path / "notebooks", monkeypatch)
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert "exact_dedup: no duplicates removed" in text_of(outputs)


def test_training_curves_notebook(job, tmp_path, monkeypatch):
    outputs = execute("training_curves.ipynb", str(job.job_dir), tmp_path, monkeypatch)
    text = text_of(outputs)
    assert "300 steps logged" in text and images(outputs) >= 2
    assert "== step 180: loss spike" in text and "3 document(s)" in text
    assert all(doc_id in text for doc_id in job.spike_documents)


def test_ablation_results_notebook(ray_session, tmp_path_factory, tmp_path, monkeypatch):
    from tests.support.ablation import tiny_ablation

    tiny = tiny_ablation(tmp_path_factory)
    monkeypatch.setenv("CURATION_ABLATION", tiny.result.folder)
    outputs = execute("ablation_results.ipynb", "", tmp_path, monkeypatch)
    assert not [o for o in outputs if o["output_type"] == "error"]
    text = text_of(outputs)
    assert "tiny: baseline base, seeds [0], 4,096 tokens per run (16 steps)" in text
    base_loss = next(r for r in tiny.result.rows if (r.variant, r.set, r.metric) == ("base", "held-out", "loss"))
    assert re.search(rf"\n\s+base held-out\s+loss\s+1 {base_loss.mean:.4f}", text)  # the table's row
    assert "quadratic fit on 4 proxies" in text and "mixture-proposed  predicted" in text
    assert "the fit predicts the proposal " in text and re.search(r"mixture-uniform .*, proposal lower on [01] of 1 "
                                                                   r"seeds\)", text)
    assert images(outputs) >= 2, "curves and the proxies' scores"
