"""The layer rules import-linter cannot state (its contracts, in pyproject.toml, run in `make test` too)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import grimp
import pytest

from tests.conftest import ROOT

PACKAGES = ("curation", "pipelines")


def group(graph: grimp.ImportGraph, module: str) -> list[str]:
    """Every module in a loop with `module`, and `module` (alone: it is in none)."""
    return sorted(graph.find_upstream_modules(module) & graph.find_downstream_modules(module) | {module})


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One shortest loop for each group of modules that import one another, directly or not. Imports inside
    functions count (a loop they hold open is still a loop), and so do imports made only for type checkers (a
    reader still has to hold both modules in mind at once)."""
    cycles: list[list[str]] = []
    looped: set[str] = set()
    for module in sorted(graph.modules):
        if module in looped or len(members := group(graph, module)) == 1:
            continue
        looped |= set(members)
        back = (graph.find_shortest_chain(importer=imported, imported=module)
                for imported in sorted(graph.find_modules_directly_imported_by(module) & set(members)))
        cycles.append([module, *min(back, key=len)])
    return cycles


def described(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    """`a (line 12) -> b (line 40) -> a`: where each import of the loop is made."""
    hops = [f"{importer} (line {graph.get_import_details(importer=importer, imported=imported)[0]['line_number']})"
            for importer, imported in itertools.pairwise(cycle)]
    return " -> ".join([*hops, cycle[-1]])


def test_no_module_of_curation_or_pipelines_is_in_an_import_cycle():
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False, cache_dir=None)
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(
        f"{described(graph, cycle)}\n  of the modules {', '.join(group(graph, cycle[0]))}" for cycle in cycles)


def test_import_cycles_finds_a_loop_held_open_by_an_import_inside_a_function(tmp_path, monkeypatch):
    package = tmp_path / "loopy"
    package.mkdir()
    files = {
        "__init__.py": "",
        "a.py": "from loopy import b\n",
        "b.py": "def later():\n    from loopy import a\n",
        "c.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from loopy import d\n",
        "d.py": "from loopy import c\n",  # a loop only for type checkers: a loop all the same
        "e.py": "from loopy import a\n",  # imports into the loop, not part of it
    }
    for name, text in files.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("loopy", exclude_type_checking_imports=False, cache_dir=None)
    assert import_cycles(graph) == [["loopy.a", "loopy.b", "loopy.a"], ["loopy.c", "loopy.d", "loopy.c"]]
    assert described(graph, ["loopy.a", "loopy.b", "loopy.a"]) == "loopy.a (line 1) -> loopy.b (line 2) -> loopy.a"


@pytest.mark.subprocess
def test_importing_the_status_service_imports_no_ray():
    """It imports Ray only inside the functions that submit a job to a cluster: serving job folders must not
    pay for Ray's import. A fresh process, as import-linter counts imports inside functions too."""
    script = ("import importlib, json, pkgutil, sys\nimport pipelines.service as service\n"
              "names = [m.name for m in pkgutil.walk_packages(service.__path__, 'pipelines.service.')]\n"
              "for name in names:\n    importlib.import_module(name)\n"
              "print(json.dumps([sorted(names), sorted(m for m in sys.modules if m.split('.')[0] == 'ray')]))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    imported, ray = json.loads(done.stdout)
    assert imported == sorted(f"pipelines.service.{path.stem}" for path in (ROOT / "pipelines" / "service").glob("*.py")
                              if path.stem != "__init__")  # every module of it: a wrong path would find none
    assert ray == []
