"""Every command, recipe fragment and Python snippet of README.md works as written.

The README's shell blocks are run in order in a folder holding a copy of `recipes/` (so `./jobs` lands there):
`curate` commands through `pipelines.cli.main`, each parsed by the real argument parser first, so a subcommand or
flag that does not exist fails. Commands on the bundled sample run for real (`curate run` with `--executor local`,
the fast path: the same output as Ray's); those that need a cluster, a service, a long training or the user's
own files are parsed, and the recipes they name validated. `make` targets are dry-run (`make -n`), and `make
demo`'s command is one the README runs. YAML blocks are validated as recipes (fragments over the quickstart's
sources), Python blocks executed against the job the commands made. Commands written inline in the prose
(`curate ...` in backticks) are parsed too; docs/*.md's commands are parsed and their recipe fragments validated.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from curation.recipe import Recipe, parse_recipe
from pipelines import cli
from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# Subcommands that need a Ray cluster, a running service, minutes of training or the user's own files (and `--help`):
# parsed, and the recipe they name validated, but not run.
NOT_RUN = {"help", "serve", "status", "submit", "logs", "stop", "train", "ablate", "train-classifier", "calibrate"}
SUBCOMMANDS = next(a.choices for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`(curate [^`]+|python [^`]+)`")


def blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(text) if lang == language]


def commands(text: str) -> list[list[str]]:
    """The commands of the shell blocks, in order, without their comments."""
    out = []
    for body in blocks(text, "sh"):
        for line in body.replace("\\\n", " ").splitlines():
            if argv := words(line):
                out.append(argv)
    return out


def words(command: str) -> list[str]:
    """A command's words, without a comment or an output redirection."""
    argv = shlex.split(command, comments=True)
    return argv[: argv.index(">")] if ">" in argv else argv


def parsed(argv: list[str]):
    """`curate`'s own parser on argv; SystemExit (an unknown subcommand or flag) becomes a failure naming it."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return cli.parser().parse_args(argv[1:])
    except SystemExit as exc:
        if exc.code == 0:  # --help
            return argparse.Namespace(command="help")
        pytest.fail(f"`{shlex.join(argv)}` is not a valid curate command: {err.getvalue().strip()}")


def check_curate(argv: list[str], where: Path, *, validate: bool) -> None:
    """Parse a `curate` command without running it; the recipe or ablation file it names must exist, and with
    `validate`, pass `curate validate` (docs/ name recipes whose inputs are the user's)."""
    args = parsed(argv)
    for name in ("recipe", "ablation"):
        path = getattr(args, name, None)
        if path and Path(path).suffix in (".yaml", ".yml"):
            assert (where / path).is_file(), f"`{shlex.join(argv)}`: no file {path}"
            if validate:
                assert cli.main(["validate", path]) == 0, f"`{shlex.join(argv)}`: {path} is not valid"


def check_command(argv: list[str], where: Path, *, validate: bool = False) -> None:
    """A command checked without running it: `curate` parsed, `make` dry-run, a `python` script present."""
    if argv[0] == "curate" and len(argv) == 2 and not argv[1].startswith("-"):  # named in passing
        assert argv[1] in SUBCOMMANDS, f"`{shlex.join(argv)}`: no such subcommand"
    elif argv[0] == "curate":
        check_curate(argv, where, validate=validate)
    elif argv[0] == "make":
        dry = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True)
        assert dry.returncode == 0, f"`{shlex.join(argv)}`: {dry.stderr.strip()}"
    else:
        assert argv[0] == "python", f"`{shlex.join(argv)}`: tests/test_readme.py does not know how to check this"
        assert (ROOT / argv[1]).is_file(), f"`{shlex.join(argv)}`: no script {argv[1]}"


def job_folder(where: Path) -> str:
    jobs = sorted(where.glob("jobs/quickstart-*"))
    assert len(jobs) == 1, f"expected one quickstart job folder, found {jobs}"
    return jobs[0].name.split("-", 1)[1]


def run_command(argv: list[str], where: Path) -> None:
    """A README command: run when it works on the bundled sample alone, else checked as `check_command` does."""
    if any("<hash>" in a for a in argv):
        argv = [a.replace("<hash>", job_folder(where)) for a in argv]
    args = parsed(argv) if argv[0] == "curate" else None
    if args is None or args.command in NOT_RUN or getattr(args, "serve", None) or getattr(args, "address", None):
        check_command(argv, where, validate=True)
        return
    if args.command == "run" and args.executor is None:
        argv = [*argv, "--executor", "local"]
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv[1:])
    assert code == 0, f"`{shlex.join(argv)}` exited {code}"


def check_recipe_fragment(text: str) -> None:
    """A whole recipe, or keys of one over the quickstart's name and sources: keys, types and cross-references."""
    fragment = yaml.safe_load(text)
    assert set(fragment) <= set(Recipe.model_fields), f"not recipe keys: {set(fragment) - set(Recipe.model_fields)}"
    base = yaml.safe_load((ROOT / "recipes" / "quickstart.yaml").read_text())
    recipe = {"name": "fragment", "sources": base["sources"], **fragment}
    stages = recipe.get("stages") or []
    if not any("extract" in stage for stage in stages):  # a fragment of keys, not a recipe: its pages' text is made
        recipe["stages"] = [{"extract": {}}, *stages]
    parse_recipe(yaml.safe_dump(recipe, allow_unicode=True), "README fragment", check_paths=False)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "recipes", where / "recipes")
    return where


@pytest.fixture(scope="module")
def ran_readme(workdir) -> Path:
    """The README's shell commands, run in order in `workdir`."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        for argv in commands(README.read_text(encoding="utf-8")):
            run_command(argv, workdir)
    return workdir


@pytest.mark.subprocess  # curate and make, as a user runs them
def test_readme_commands(ran_readme):
    text = README.read_text(encoding="utf-8")
    run = [argv for argv in commands(text) if argv[:2] == ["curate", "run"]]
    assert ["make", "demo"] in commands(text) and ["make", "test"] in commands(text)
    demo = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True).stdout
    shown = {shlex.join(argv[1:]) for argv in run}
    assert any(line.split("curate ", 1)[-1] in shown for line in demo.splitlines() if "curate run" in line), \
        "`make demo` runs a command the README does not"
    assert (ran_readme / "megatron").is_dir()  # `curate export` wrote there


@pytest.mark.subprocess
def test_readme_python_snippets(ran_readme, monkeypatch):
    monkeypatch.chdir(ran_readme)
    snippets = blocks(README.read_text(encoding="utf-8"), "python")
    assert snippets
    for code in snippets:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code.replace("<hash>", job_folder(ran_readme)), "README.md", "exec"), {})


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_recipe_fragments_are_valid(page):
    for text in blocks(page.read_text(encoding="utf-8"), "yaml"):
        keys = set(yaml.safe_load(text))
        if keys <= set(Recipe.model_fields):
            check_recipe_fragment(text)
        else:  # keys of an ablation file, over the bundled one
            from curation.ablate.spec import Ablation

            assert keys <= set(Ablation.model_fields), f"{page.name}: neither recipe nor ablation keys: {keys}"
            base = yaml.safe_load((ROOT / "recipes" / "ablation.yaml").read_text())
            Ablation.model_validate({**base, **yaml.safe_load(text)})


@pytest.mark.subprocess  # `make -n` for make commands
@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_every_command_parses(page):
    """Shell blocks of docs/ and commands written inline in the prose: real subcommands, flags and files."""
    text = page.read_text(encoding="utf-8")
    inline = [words(c) for c in INLINE.findall(text)]
    for argv in (commands(text) if page != README else []) + inline:
        check_command([a.replace("<hash>", "0") for a in argv], ROOT)


def anchors(page: Path) -> set[str]:
    """GitHub's ids of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", BLOCK.sub("", page.read_text(encoding="utf-8")), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_links_lead_somewhere(page):
    """Every relative link names a file that exists, and a heading of it where it names one."""
    text = BLOCK.sub("", page.read_text(encoding="utf-8"))
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", text):
        if target.startswith(("http://", "https://")):
            continue
        linked = (page.parent / target).resolve() if target else page
        assert linked.exists(), f"{page.name}: link to {target}, which does not exist"
        if anchor:
            assert anchor in anchors(linked), f"{page.name}: no heading #{anchor} in {target or page.name}"
