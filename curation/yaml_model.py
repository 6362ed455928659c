"""YAML text -> a validated pydantic model, every problem reported at its file, line and column.

Recipes (`curation.recipe`), training recipes, ablation files and language settings files are all read here:
`parse_yaml_model` validates, `RecipeError` lists the `Problem`s, `locate` finds the YAML node a pydantic
error location points to.
"""

from __future__ import annotations

import copy
import difflib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

# Nodes a recipe may have once its YAML aliases are expanded: a real recipe has a few hundred; eight levels of
# nine aliases ("billion laughs") have 43 million, which the checks below would walk one by one.
MAX_YAML_NODES = 100_000



class YamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's booleans, `true` and `false` only: YAML 1.1 also reads `yes`, `no`, `on`
    and `off` as booleans, and `no` is Norwegian's language code (`keep: [no, sv]` was `[False, 'sv']`). A boolean
    key still takes `yes` and `on`: pydantic reads those strings as true."""


YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
YamlLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))


def load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=YamlLoader)


def compose_yaml(text: str) -> yaml.Node | None:
    return yaml.compose(text, Loader=YamlLoader)


# (location as pydantic gives it, message): a problem found after validation, located like a validation error.
Located = tuple[tuple[Any, ...], str]


@dataclass
class Problem:
    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class RecipeError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def locate(root: yaml.Node | None, loc: tuple[Any, ...], at_key: bool = False) -> tuple[yaml.Node | None, str]:
    """The YAML node a pydantic error location points to (or its nearest parent) and a dotted path.

    Parts that are not keys of the current mapping are union tags (the stage name, repeated by
    pydantic) or keys that are missing: a missing key is named in the path, the node stays its parent.
    """
    node, path = root, ""
    for part in loc:
        if part == "[key]":  # pydantic's mark of an error in a mapping's key, the key the part before names
            continue
        if isinstance(node, yaml.MappingNode):
            match = next(((key, value) for key, value in node.value if key.value == part), None)
            if match is not None:
                node = match[0] if at_key and part == loc[-1] else match[1]
            elif path.rsplit(".", 1)[-1] == part:
                continue
            path += f".{part}" if path else str(part)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            path += f"[{part}]"
    return node, path


def problem_at(root: yaml.Node | None, file: str, loc: tuple[Any, ...], message: str,
               at_key: bool = False) -> Problem:
    """`message` as a `Problem` at the node `loc` points to in `root` (the file's start when there is none)."""
    node, path = locate(root, loc, at_key)
    mark = node.start_mark if node is not None else None
    return Problem(file, mark.line + 1 if mark else 1, mark.column + 1 if mark else 1, path, message)


def _duplicate_keys(node: yaml.Node, file: str) -> list[Problem]:
    problems = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if key.value in seen:
                m = key.start_mark
                problems.append(Problem(file, m.line + 1, m.column + 1, key.value, "key given twice"))
            seen.add(key.value)
            problems += _duplicate_keys(value, file)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            problems += _duplicate_keys(item, file)
    return problems


@functools.cache
def _key_names(model: type[BaseModel]) -> tuple[str, ...]:
    """Every key name of `model` and the models inside it (its JSON schema's properties)."""
    schema = model.model_json_schema()
    names = set(schema.get("properties", {}))
    for definition in schema.get("$defs", {}).values():
        names.update(definition.get("properties", {}))
    return tuple(sorted(names))


def _did_you_mean(model: type[BaseModel], error: dict[str, Any]) -> str:
    """`; did you mean 'min_words'?` for an unknown key close to a key of the schema (`min_word`, `sourcs`)."""
    if error["type"] != "extra_forbidden" or not error["loc"]:
        return ""
    close = difflib.get_close_matches(str(error["loc"][-1]), _key_names(model), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


# of the names that name files and folders: a job's, a source's, a run's. The first a letter or a digit: `.x` is a
# hidden folder, `-x` an option to a command, and the status service (`pipelines.service.jobs.JOB_ID`) serves neither
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


def _describe(error: dict[str, Any]) -> str:
    kind, msg = error["type"], error["msg"]
    if kind == "extra_forbidden":
        return "unknown key (not part of the recipe schema; see `curate schema`)"
    if kind == "missing":
        return "required key is missing"
    if kind == "string_too_long":
        return (f"{msg}, got {len(error['input'])}: it names files and folders of the job, and a file name may "
                "have at most 255 bytes")
    if kind == "string_pattern_mismatch" and error.get("ctx", {}).get("pattern") == NAME_PATTERN:
        return (f"a name of letters, digits, `_`, `.` and `-` only, beginning with a letter or a digit (it names "
                f"files and folders), got {error['input']!r}")
    if kind == "literal_error":
        return f"{msg}, got {error['input']!r}"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{msg}, got {error['input']!r}"
    return msg.removeprefix("Value error, ")


def _expanded_nodes(root: yaml.Node | None) -> int:
    """How many nodes `root` has once every alias is expanded, counted without expanding any: an alias is the
    very node it names, so each node's size is counted once (a recursive alias, once as well)."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        if id(node) not in sizes:
            sizes[id(node)] = 1
            if isinstance(node, yaml.MappingNode):
                sizes[id(node)] = 1 + sum(size(k) + size(v) for k, v in node.value)
            elif isinstance(node, yaml.SequenceNode):
                sizes[id(node)] = 1 + sum(size(item) for item in node.value)
        return sizes[id(node)]

    return size(root) if root is not None else 0


def _inside_itself(root: yaml.Node | None) -> yaml.Node | None:
    """A node that an alias inside it names (`a: &a [*a]`: a value without end), or None."""
    done: set[int] = set()
    path: set[int] = set()

    def walk(node: yaml.Node) -> yaml.Node | None:
        if id(node) in path:
            return node
        if id(node) in done or not isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            return None
        path.add(id(node))
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
        found = next((hit for child in children if (hit := walk(child)) is not None), None)
        path.discard(id(node))
        done.add(id(node))
        return found

    return walk(root) if root is not None else None


def _bounded_aliases(root: yaml.Node | None, text: str, file: str) -> None:
    """Refuse a document whose aliases expand it past `MAX_YAML_NODES`, naming the first alias's line, or an alias
    inside the value it names, naming that value's line."""
    if (looped := _inside_itself(root)) is not None:
        mark = looped.start_mark
        raise RecipeError([Problem(file, mark.line + 1, mark.column + 1, "", "a YAML alias (*name) inside the value "
                                   "it names (&name) makes a value without end: write the value out")])
    if _expanded_nodes(root) <= MAX_YAML_NODES:
        return
    alias = next((e for e in yaml.parse(text) if isinstance(e, yaml.AliasEvent)), None)
    mark = alias.start_mark if alias is not None else None
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    raise RecipeError([Problem(file, line, col, "", f"YAML aliases (*name) expand this document past "
                               f"{MAX_YAML_NODES:,} values: write the values out, or repeat fewer")])


def parse_yaml_model(text: str, file: str, model: type[BaseModel],
                     checks: Callable[[Any], list[Located]] | None = None, *,
                     what: str = "expected a YAML mapping of keys",
                     describe: Callable[[dict[str, Any]], str | None] | None = None) -> Any:
    """Validate YAML `text` as `model`; raise `RecipeError` listing every problem at its file:line:column.
    `checks(validated)` may add (location, message) problems of its own (cross-references, paths);
    `describe(error)` may word a pydantic error of the model's own (None: the usual wording)."""
    try:
        root = compose_yaml(text)
        _bounded_aliases(root, text, file)
        data = load_yaml(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise RecipeError([Problem(file, line, col, "", f"not valid YAML: {exc.problem}")]) from None
    except RecursionError:
        raise RecipeError([Problem(file, 1, 1, "", "not valid YAML: nested too deeply")]) from None
    if not isinstance(data, dict):
        raise RecipeError([Problem(file, 1, 1, "", what)])
    problems = _duplicate_keys(root, file)
    try:
        validated = model.model_validate(data)
    except ValidationError as exc:
        problems += [problem_at(root, file, e["loc"], (describe and describe(e)) or _describe(e) + _did_you_mean(
            model, e), e["type"] == "extra_forbidden") for e in exc.errors()]
        if checks:
            problems += [problem_at(root, file, loc, msg) for loc, msg in _checks_of_the_rest(data, model, checks,
                                                                                            exc.errors())]
        raise RecipeError(problems) from None
    problems += [problem_at(root, file, loc, msg) for loc, msg in (checks(validated) if checks else [])]
    if problems:
        raise RecipeError(problems)
    return validated


def _checks_of_the_rest(data: dict[str, Any], model: type[BaseModel], checks: Callable[[Any], list[Located]],
                        errors: list[Any]) -> list[Located]:
    """`checks` of the keys that did validate, so that one invalid key does not hide the other problems: the
    top-level keys in error are left out (at their defaults), unless one is required (nothing to check then)."""
    repaired = _without_unknown_keys(data, errors)
    if repaired is not None:  # only misspelt keys: the recipe without them is what the user meant, checks and all
        try:
            return checks(model.model_validate(repaired))
        except ValidationError:
            pass
    bad = {e["loc"][0] for e in errors if e["loc"]}
    fields = model.model_fields
    if not bad or any(key in fields and fields[key].is_required() for key in bad):
        return []
    try:
        rest = model.model_validate({k: v for k, v in data.items() if k not in bad})
    except ValidationError:
        return []
    # a problem at a key in error, or naming one (`tokenizer` needs `pack`, `pack` being the key left out), is that
    # key's own, already reported
    named = re.compile(r"\b(?:" + "|".join(re.escape(str(key)) for key in bad) + r")\b")
    return [(loc, msg) for loc, msg in checks(rest) if not (loc and loc[0] in bad) and not named.search(msg)]


def _without_unknown_keys(data: dict[str, Any], errors: list[Any]) -> dict[str, Any] | None:
    """`data` without the keys the errors call unknown (`text_fild:`), when those are all the errors; else None."""
    if not errors or any(e["type"] != "extra_forbidden" for e in errors):
        return None
    repaired = copy.deepcopy(data)
    for error in errors:
        *path, key = error["loc"]
        node: Any = repaired
        try:
            for step in path:
                node = node[step]
            del node[key]
        except (KeyError, IndexError, TypeError):  # a path through a union's tag: not a plain key to drop
            return None
    return repaired


def read_recipe_text(path: str | Path) -> str:
    """A recipe file's text; a file that cannot be read is a `RecipeError` like any other problem."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise RecipeError([Problem(str(path), 1, 1, "", f"cannot read the recipe: {reason}")]) from None
