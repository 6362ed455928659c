"""Recipe YAML -> validated pydantic models, with errors that point at file, line and column."""

from __future__ import annotations

import difflib
import glob
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import pyarrow.fs as pa_fs
import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, create_model, field_validator

from curation import schema, storage
from curation.dedup.bloom_dedup import BloomDedup
from curation.dedup.corpus_stage import CorpusStage
from curation.dedup.exact_dedup import ExactDedup
from curation.dedup.minhash_dedup import MinhashDedup
from curation.lang import settings_file
from curation.mixture import MixtureParams
from curation.readers import READERS, CodeOptions
from curation.shards import list_shards
from curation.stages import STAGES, StageParams
from curation.tokens.config import PackConfig, TokenizerConfig

# Names become file names (`<name>-<hash>/`, `<source>-<file stem>-<hash>.parquet.<time>.tmp`), of at most 255
# bytes on every common filesystem: 100 characters leave room for the rest.
MAX_NAME_CHARS = 100
# Nodes a recipe may have once its YAML aliases are expanded: a real recipe has a few hundred; eight levels of
# nine aliases ("billion laughs") have 43 million, which the checks below would walk one by one.
MAX_YAML_NODES = 100_000
CORPUS_STAGES: dict[str, type[CorpusStage]] = {s.name: s for s in (ExactDedup, MinhashDedup, BloomDedup)}
ALL_STAGES = {**STAGES, **CORPUS_STAGES}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Strict):
    """An input: files of one format under one name (the name the mixture and `only:` refer to)."""

    name: str = Field(..., pattern=r"^[A-Za-z0-9_.-]+$", max_length=MAX_NAME_CHARS,
                      description="Source name, unique in the recipe (it starts its shards' file names).")
    format: Literal["warc", "wet", "jsonl", "parquet", "code"] = Field(
        ..., description="Input file format; `code`: repository archives or folders, or The-Stack-like tables.")
    paths: list[str] = Field(
        ...,
        min_length=1,
        description="Files, globs (`*`, `**`) or URIs (s3://, gs://, file://); one file is one shard.",
    )
    text_field: str = Field("text", description="jsonl/parquet: the field holding the document text.")
    url_field: str = Field("url", description="jsonl/parquet: the field holding the document URL, if any.")
    max_record_bytes: int = Field(10 << 20, gt=0, description="Records larger than this are rejects (`too_large`).")
    code: CodeOptions | None = Field(None, description="code: layout, file size limit, table columns (CodeOptions).")
    max_decompressed_bytes: int | None = Field(
        None, gt=0, description="A compressed input inflating past this many bytes is one `decompression_bomb` "
        "reject, the rest of it unread (null: no absolute bound; warc/wet: gzip files are counted only when set).")
    max_decompression_ratio: float | None = Field(
        100.0, gt=0, description="A compressed input inflating to more than this many times its size, once past "
        "4 GiB, is a `decompression_bomb` (null: no ratio bound).")
    read_attempts: int = Field(
        3, ge=1, description="Attempts at reading an input that fails for an I/O reason (file gone, storage "
        "error); then its shard fails, is not recorded as done, and a rerun reads it.")
    read_backoff_s: float = Field(0.5, ge=0, description="Wait before the second attempt, doubled before each next.")

    def reader(self) -> Any:
        extra = {"code": self.code or CodeOptions()} if self.format == "code" else {}
        return READERS[self.format](
            text_field=self.text_field, url_field=self.url_field, max_record_bytes=self.max_record_bytes,
            max_decompressed_bytes=self.max_decompressed_bytes, max_decompression_ratio=self.max_decompression_ratio,
            read_attempts=self.read_attempts, read_backoff_s=self.read_backoff_s, **extra
        )


class RayConfig(_Strict):
    address: str | None = Field(
        None, description='null: start an embedded local Ray (or join $RAY_ADDRESS when set); "auto" or '
        "ray://host:10001 joins a cluster.")
    num_cpus: int | None = Field(None, gt=0, description="CPUs of the embedded local Ray (default: all).")


class LocalConfig(_Strict):
    workers: int | None = Field(
        None, gt=0, description="`executor: local`: worker processes (default: this machine's CPUs); 1 runs "
        "everything in the calling process.")


class Rejects(_Strict):
    sample: float = Field(1.0, ge=0, le=1, description="Share of dropped documents written to rejects/.")
    max_per_reason: int = Field(
        1000, ge=0, description="At most this many rejects per stage and reason from each input shard."
    )


def _stage_tag(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        return next(iter(value))
    if isinstance(value, BaseModel):
        return next(iter(type(value).model_fields))
    return None


def _none_is_empty(value: Any) -> Any:
    return {} if value is None else value  # `- normalize:` with nothing after it means defaults


def _entry_model(name: str, params: type[StageParams]) -> type[BaseModel]:
    return create_model(
        f"{name.title().replace('_', '')}Stage",
        __config__=ConfigDict(extra="forbid"),
        __doc__=(ALL_STAGES[name].__doc__ or "").strip(),
        __validators__={"none_is_empty": field_validator(name, mode="before")(_none_is_empty)},
        **{name: (params, Field(default_factory=params))},
    )


StageEntry = Annotated[
    Union[tuple(Annotated[_entry_model(n, s.Params), Tag(n)] for n, s in ALL_STAGES.items())],  # noqa: UP007
    Discriminator(
        _stage_tag,
        custom_error_type="stage_name",
        custom_error_message=f"a stage is a mapping with one key, the stage name: one of {', '.join(ALL_STAGES)}",
    ),
]


class Recipe(_Strict):
    """A curation job: where documents come from, what stages they pass, where the output goes."""

    name: str = Field(
        ..., pattern=r"^[A-Za-z0-9_.-]+$", max_length=MAX_NAME_CHARS,
        description="Job name; the job folder is output/<name>-<hash>."
    )
    output: str = Field("./jobs", description="Folder or URI under which the job folder is made.")
    seed: int = Field(42, description="Seed of every random choice (sampling, shuffles).")
    executor: Literal["ray", "local"] = Field(
        "ray", description="ray: Ray tasks (embedded or a cluster, see `ray`); local: this machine's processes, "
        "no Ray (a laptop or a small job: no cluster's fixed memory and start-up; same output).")
    ray: RayConfig = Field(default_factory=RayConfig, description="Which Ray runs the job (`executor: ray`).")
    local: LocalConfig = Field(default_factory=LocalConfig, description="The process pool of `executor: local`.")
    stall_timeout_s: float | None = Field(
        600.0, gt=0, description="A shard task that hands over no batch for this long (a worker stopped, a "
        "storage mount hung) is stopped: on Ray it is run again on a fresh worker (up to 3 times, then the shard "
        "fails), locally its shard fails, visibly, and a rerun reads it. null: wait for ever.")
    sources: list[Source] = Field(..., min_length=1, description="Inputs, each a named set of files of one format.")
    stages: list[StageEntry] = Field(default_factory=list, description="Document stages, in order.")
    rejects: Rejects = Field(default_factory=Rejects, description="How many dropped documents are kept in rejects/.")
    mixture: MixtureParams | None = Field(
        None, description="Output token shares or budgets per source (needs `tokenizer` and `pack`).")
    tokenizer: TokenizerConfig | None = Field(None, description="sentencepiece model to tokenize with (with `pack`).")
    pack: PackConfig | None = Field(None, description="Pack tokens into shuffled Arrow shards (with `tokenizer`).")
    language_settings: str | None = Field(
        None, exclude=True, description="A language settings file (YAML or JSON, as `curate calibrate` writes it; "
        "see curation.lang.settings_file), read when the recipe is loaded: each stage it names gets its "
        "per-language settings under the recipe's own (`languages:`; langid's `min_score`), the recipe's entry "
        "for a language winning setting by setting. The loaded recipe (and the job's recipe.yaml) holds the "
        "merged settings, not this path; a relative path is from the working directory, as every path here.")

    def stage_specs(self) -> list[tuple[str, str, StageParams]]:
        """(unique name, stage kind, params) per stage; a kind used twice gets `kind_2`, `kind_3`..."""
        seen: dict[str, int] = {}
        out = []
        for entry in self.stages:
            kind = next(iter(type(entry).model_fields))
            seen[kind] = seen.get(kind, 0) + 1
            out.append((kind if seen[kind] == 1 else f"{kind}_{seen[kind]}", kind, getattr(entry, kind)))
        return out

    def fingerprint(self) -> str:
        """Hash of everything that decides the output (not where it runs or is written)."""
        how = {"executor", "ray", "local", "output", "stall_timeout_s"}
        retries = {"__all__": {"read_attempts", "read_backoff_s"}}  # how hard a read is tried, not what it gives
        body = self.model_dump(mode="json", exclude={**dict.fromkeys(how, True), "sources": retries})
        body["_ids"] = schema.ID_SCHEME
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def job_dir(self, output: str | None = None) -> str:
        return storage.join(output or self.output, f"{self.name}-{self.fingerprint()[:10]}")


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


def _locate(root: yaml.Node | None, loc: tuple[Any, ...], at_key: bool = False) -> tuple[yaml.Node | None, str]:
    """The YAML node a pydantic error location points to (or its nearest parent) and a dotted path.

    Parts that are not keys of the current mapping are union tags (the stage name, repeated by
    pydantic) or keys that are missing: a missing key is named in the path, the node stays its parent.
    """
    node, path = root, ""
    for part in loc:
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


def _describe(error: dict[str, Any]) -> str:
    kind, msg = error["type"], error["msg"]
    if kind == "extra_forbidden":
        return "unknown key (not part of the recipe schema; see `curate schema`)"
    if kind == "stage_name":
        given = error["input"]
        if isinstance(given, dict) and len(given) == 1:
            name = next(iter(given))
            close = difflib.get_close_matches(str(name), ALL_STAGES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return f"unknown stage {name!r} (stages: {', '.join(ALL_STAGES)}){hint}"
        return msg
    if kind == "missing":
        return "required key is missing"
    if kind == "string_too_long":
        return (f"{msg}, got {len(error['input'])}: it names files and folders of the job, and a file name may "
                "have at most 255 bytes")
    if kind == "literal_error":
        return f"{msg}, got {error['input']!r}"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{msg}, got {error['input']!r}"
    return msg


def _cross_checks(recipe: Recipe) -> list[tuple[tuple[Any, ...], str]]:
    out: list[tuple[tuple[Any, ...], str]] = []
    names = [s.name for s in recipe.sources]
    for i, name in enumerate(names):
        if names.index(name) != i:
            out.append((("sources", i, "name"), f"source name {name!r} is used twice"))
    out += _token_checks(recipe, names)
    seen_corpus = rewriting = None
    for i, (_, kind, params) in enumerate(recipe.stage_specs()):
        if kind in CORPUS_STAGES and rewriting:
            out.append((("stages", i, kind), f"corpus stage {kind!r} after {rewriting!r}, which rewrites text: "
                        "put paragraph-level bloom_dedup last among the corpus stages"))
        if kind == BloomDedup.name and getattr(params, "level", None) == "paragraph":
            rewriting = kind
        if kind in CORPUS_STAGES:
            seen_corpus = seen_corpus or kind
        elif seen_corpus:
            out.append((("stages", i, kind), f"document stage {kind!r} after corpus stage {seen_corpus!r}: "
                        "corpus stages (deduplication) come after all document stages"))
        for j, src in enumerate(getattr(params, "only", None) or []):
            if src not in names:
                out.append((("stages", i, kind, "only", j), f"no source named {src!r} (sources: {', '.join(names)})"))
    return out


def _token_checks(recipe: Recipe, names: list[str]) -> list[tuple[tuple[Any, ...], str]]:
    out: list[tuple[tuple[Any, ...], str]] = []
    if (recipe.tokenizer is None) != (recipe.pack is None):
        given, missing = ("tokenizer", "pack") if recipe.pack is None else ("pack", "tokenizer")
        out.append(((given,), f"`{given}` needs `{missing}` as well: tokens are packed into shards"))
    if recipe.mixture is not None:
        if recipe.pack is None:
            out.append((("mixture",), "`mixture` weighs output tokens: it needs `tokenizer` and `pack`"))
        kind = "weights" if recipe.mixture.weights is not None else "tokens"
        given = recipe.mixture.sources()
        for name in given:
            if name not in names:
                out.append((("mixture", kind, name), f"no source named {name!r} (sources: {', '.join(names)})"))
        for name in names:
            if name not in given:
                out.append((("mixture", kind), f"source {name!r} has no entry; give it 0 to leave it out"))
        sizes = any(kind == MinhashDedup.name and getattr(params, "cluster_size", False)
                    for _, kind, params in recipe.stage_specs())
        if recipe.mixture.rehydrate is not None and not sizes:
            out.append((("mixture", "rehydrate"), "`rehydrate` repeats documents by their duplicate cluster's size: "
                        "it needs `minhash_dedup: {cluster_size: true}` among the stages"))
    return out


def _path_checks(recipe: Recipe) -> list[tuple[tuple[Any, ...], str]]:
    """Inputs and models a recipe names must exist before any work starts."""
    out: list[tuple[tuple[Any, ...], str]] = []
    matched: dict[tuple[int, int], list[str]] = {}
    for i, source in enumerate(recipe.sources):
        for j, pattern in enumerate(source.paths):
            try:
                matched[i, j] = storage.expand(pattern)
            except OSError as exc:
                out.append((("sources", i, "paths", j), f"cannot list {pattern!r}: {exc}"))
                continue
            if not matched[i, j]:
                out.append((("sources", i, "paths", j), f"no file matches {pattern!r}"))
    out += _shared_files(recipe, matched)
    out += _reads_output(recipe, matched)
    if recipe.tokenizer is not None and recipe.tokenizer.model and not storage.exists(recipe.tokenizer.model):
        out.append((("tokenizer", "model"), f"no tokenizer model at {recipe.tokenizer.model!r}"))
    for i, (_, kind, params) in enumerate(recipe.stage_specs()):
        model = getattr(params, "model", None)
        if isinstance(model, str) and not storage.exists(model):
            out.append((("stages", i, kind, "model"), f"no model file at {model!r}"))
        for j, path in enumerate(getattr(params, "benchmarks", None) or []):
            if not Path(path).exists():
                out.append((("stages", i, kind, "benchmarks", j), f"no benchmark file or folder at {path!r}"))
    return out


# What a job writes in its folder (`curation.job`), `{}` standing for a shard's name: an input pattern matching
# one of these in a job folder would read that job's output as input, more of it on every run.
JOB_FILES = ("documents/{}.parquet", "_work/documents/{}.parquet", "rejects/stage=x/reason=y/{}.parquet",
             "_shards/{}.json", "shards/train-00000.arrow", "recipe.yaml", "stats.json", "events.jsonl",
             "_progress.json", "manifest.json", "tokenizer.model")


def _job_folder_holding(fs: pa_fs.FileSystem, root: str, path: str, seen: dict[str, bool]) -> str | None:
    """The job folder directly under `root` (`output`) that `path` lies in, if it is one (it holds a
    recipe.yaml or `_shards/`); `seen` remembers the folders looked at."""
    if not path.startswith(f"{root.rstrip('/')}/"):
        return None
    top = f"{root.rstrip('/')}/{path[len(root.rstrip('/')) + 1 :].split('/')[0]}"
    if top == path:
        return None
    if top not in seen:
        seen[top] = (fs.get_file_info(f"{top}/recipe.yaml").type == pa_fs.FileType.File
                     or fs.get_file_info(f"{top}/_shards").type == pa_fs.FileType.Directory)
    return top if seen[top] else None


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """What `pattern` matches, as a regular expression over `storage.resolve` spellings (a folder: all below it)."""
    fs, path = storage.resolve(pattern)
    if not storage.has_wildcard(path):
        is_folder = fs.get_file_info(path).type == pa_fs.FileType.Directory
        return storage.glob_regex(f"{path.rstrip('/')}/**" if is_folder else glob.escape(path))
    return storage.glob_regex(path)


def _reads_output(recipe: Recipe, matched: dict[tuple[int, int], list[str]]) -> list[tuple[tuple[Any, ...], str]]:
    """Input patterns reaching into a job folder under `output`: this job's (files it matches there now, or
    files this job will write there, before the folder is even made) or another's (files it matches there)."""
    try:
        fs, root = storage.resolve(recipe.output)
        own = storage.resolve(recipe.job_dir())[1]
    except OSError:
        return []  # an output that cannot be looked at is the run's to report, where it writes
    remote, seen = storage.is_remote(recipe.output), {}
    out: list[tuple[tuple[Any, ...], str]] = []
    for i, source in enumerate(recipe.sources):
        shard = f"{source.name}-file-0123456789"
        for j, pattern in enumerate(source.paths):
            if storage.is_remote(pattern) != remote:
                continue
            regex = _pattern_regex(pattern)
            found = [storage.resolve(u)[1] for u in matched.get((i, j), [])]
            job, reached = own, next((f"{own}/{f.format(shard)}" for f in JOB_FILES
                                      if regex.match(f"{own}/{f.format(shard)}")), None)
            for path in found if reached is None else []:
                if (job := _job_folder_holding(fs, root, path, seen)) is not None:
                    reached = path
                    break
            if reached is not None:
                whose = "this job's folder" if job == own else "the job folder"
                out.append((("sources", i, "paths", j),
                            f"{pattern!r} reaches {whose} {job} under `output` ({reached}): a job would read "
                            "its own output as input, more of it on every run; narrow the pattern or give "
                            "`output` a folder outside the inputs"))
    return out


def output_problems(recipe: Recipe, output: str) -> list[str]:
    """What `_reads_output` finds when the job is written under `output` instead (`curate run --output`)."""
    moved = recipe.model_copy(update={"output": output})
    matched = {(i, j): storage.expand(p) for i, source in enumerate(recipe.sources) for j, p in enumerate(source.paths)}
    return [f"sources[{loc[1]}].paths[{loc[3]}]: {msg}" for loc, msg in _reads_output(moved, matched)]


def _shared_files(recipe: Recipe, matched: dict[tuple[int, int], list[str]]) -> list[tuple[tuple[Any, ...], str]]:
    """A file read by two sources: its documents would come twice, under the same ids (ids derive from the
    file's canonical URI and the record's position, not the source). Files are compared by canonical URI, so
    `x`, `./x`, its absolute path and overlapping globs are one file. Within one source, a file matched twice
    is read once (one shard)."""
    first: dict[str, tuple[int, int]] = {}
    clashes: dict[tuple[int, int, int, int], list[str]] = {}
    for (i, j), uris in matched.items():
        for uri in uris:
            i0, j0 = first.setdefault(storage.canonical(uri), (i, j))
            if i0 != i:
                clashes.setdefault((i0, j0, i, j), []).append(uri)
    if clashes:
        clashes = _read_as_shards(recipe, clashes)
    out: list[tuple[tuple[Any, ...], str]] = []
    for (i0, j0, i, j), uris in clashes.items():
        more = f" (and {len(uris) - 1} more files)" if len(uris) > 1 else ""
        out.append((("sources", i, "paths", j),
                    f"sources {recipe.sources[i].name!r} and {recipe.sources[i0].name!r} (sources[{i0}].paths[{j0}]: "
                    f"{recipe.sources[i0].paths[j0]!r}) both read {uris[0]!r}{more}: a file may belong to one source "
                    "only (its documents would be read twice, with the same ids)"))
    return out


def _read_as_shards(recipe: Recipe, clashes: dict[tuple[int, int, int, int], list[str]],
                    ) -> dict[tuple[int, int, int, int], list[str]]:
    """The clashes of files that really become shards of both sources (a link met in a folder is not read
    through, so it is no copy of its target)."""
    by_source: dict[str, set[str]] = {}
    for shard in list_shards(recipe):
        by_source.setdefault(shard.source, set()).add(storage.canonical(shard.uri))
    names = [s.name for s in recipe.sources]
    kept = {}
    for (i0, j0, i, j), uris in clashes.items():
        both = by_source.get(names[i], set()) & by_source.get(names[i0], set())
        real = [u for u in uris if storage.canonical(u) in both]
        if real:
            kept[i0, j0, i, j] = real
    return kept


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


def _bounded_aliases(root: yaml.Node | None, text: str, file: str) -> None:
    """Refuse a document whose aliases expand it past `MAX_YAML_NODES`, naming the first alias's line."""
    if _expanded_nodes(root) <= MAX_YAML_NODES:
        return
    alias = next((e for e in yaml.parse(text) if isinstance(e, yaml.AliasEvent)), None)
    mark = alias.start_mark if alias is not None else None
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    raise RecipeError([Problem(file, line, col, "", f"YAML aliases (*name) expand this document past "
                               f"{MAX_YAML_NODES:,} values: write the values out, or repeat fewer")])


def parse_yaml_model(text: str, file: str, model: type[BaseModel],
                     checks: Callable[[Any], list[tuple[tuple[Any, ...], str]]] | None = None, *,
                     what: str = "expected a YAML mapping of keys") -> Any:
    """Validate YAML `text` as `model`; raise `RecipeError` listing every problem at its file:line:column.
    `checks(validated)` may add (location, message) problems of its own (cross-references, paths)."""
    try:
        root = yaml.compose(text)
        _bounded_aliases(root, text, file)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise RecipeError([Problem(file, line, col, "", f"not valid YAML: {exc.problem}")]) from None
    except RecursionError:
        raise RecipeError([Problem(file, 1, 1, "", "not valid YAML: nested too deeply")]) from None
    if not isinstance(data, dict):
        raise RecipeError([Problem(file, 1, 1, "", what)])
    problems = _duplicate_keys(root, file)

    def problem(loc: tuple[Any, ...], message: str, at_key: bool = False) -> Problem:
        node, path = _locate(root, loc, at_key)
        mark = node.start_mark if node is not None else None
        return Problem(file, mark.line + 1 if mark else 1, mark.column + 1 if mark else 1, path, message)

    try:
        validated = model.model_validate(data)
    except ValidationError as exc:
        problems += [problem(e["loc"], _describe(e), e["type"] == "extra_forbidden") for e in exc.errors()]
        raise RecipeError(problems) from None
    problems += [problem(loc, msg) for loc, msg in (checks(validated) if checks else [])]
    if problems:
        raise RecipeError(problems)
    return validated


def parse_recipe(text: str, file: str = "<recipe>", *, check_paths: bool = True) -> Recipe:
    """Validate a recipe; raise `RecipeError` listing every problem with its line and column (a problem in
    its language settings file, at that file's line and column)."""
    recipe = parse_yaml_model(
        text, file, Recipe, lambda r: _cross_checks(r) + (_path_checks(r) if check_paths else []),
        what="a recipe is a YAML mapping (name:, sources:, stages: ...)")
    return _with_language_settings(recipe, text, file) if recipe.language_settings else recipe


def _with_language_settings(recipe: Recipe, text: str, file: str) -> Recipe:
    """`recipe` with its `language_settings` file merged into the stages it names (curation.lang.settings_file)."""
    path = str(recipe.language_settings)
    try:
        body = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        node, where = _locate(yaml.compose(text), ("language_settings",))
        mark = node.start_mark if node is not None else None
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise RecipeError([Problem(file, mark.line + 1 if mark else 1, mark.column + 1 if mark else 1, where,
                                   f"cannot read the language settings file {path!r}: {reason}")]) from None
    settings = parse_yaml_model(body, path, settings_file.settings_file_model(), settings_file.checks,
                                what="a language settings file is a YAML mapping (stages: ...)")
    stages = []
    for entry in recipe.stages:
        kind = next(iter(type(entry).model_fields))
        stages.append(entry.model_copy(update={kind: settings_file.merged(kind, getattr(entry, kind), settings)}))
    return recipe.model_copy(update={"stages": stages})


def read_recipe_text(path: str | Path) -> str:
    """A recipe file's text; a file that cannot be read is a `RecipeError` like any other problem."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise RecipeError([Problem(str(path), 1, 1, "", f"cannot read the recipe: {reason}")]) from None


def load_recipe(path: str | Path, *, check_paths: bool = True) -> Recipe:
    return parse_recipe(read_recipe_text(path), str(path), check_paths=check_paths)


def json_schema() -> dict[str, Any]:
    schema = Recipe.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "curation recipe"
    return schema
