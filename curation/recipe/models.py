"""The recipe's pydantic models: what each key holds, its default and its bounds (`curate schema` prints them)."""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, create_model, field_validator

from curation import schema, storage
from curation.mixture import MixtureParams
from curation.readers import READERS, CodeOptions
from curation.stages.base import StageParams, named_files
from curation.stages.registry import ALL_STAGES
from curation.tokens.config import PackConfig, TokenizerConfig
from curation.yaml_model import NAME_PATTERN

# Names become file names (`<name>-<hash>/`, `<source>-<file stem>-<hash>.parquet.<time>.tmp`), of at most 255
# bytes on every common filesystem: 100 characters leave room for the rest.
MAX_NAME_CHARS = 100


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Strict):
    """An input: files of one format under one name (the name the mixture and `only:` refer to)."""

    name: str = Field(..., pattern=NAME_PATTERN, max_length=MAX_NAME_CHARS,
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
    html_field: str | None = Field(
        None, description="jsonl/parquet: the field holding each page's raw HTML instead of its text (a crawl "
        "exported as rows): the `extract` stage makes the text, as of WARC pages; `text_field` is then not read.")
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
        extra = {"code": self.code or CodeOptions(), "paths": self.paths} if self.format == "code" else {}
        return READERS[self.format](
            text_field=self.text_field, url_field=self.url_field, max_record_bytes=self.max_record_bytes,
            max_decompressed_bytes=self.max_decompressed_bytes, max_decompression_ratio=self.max_decompression_ratio,
            read_attempts=self.read_attempts, read_backoff_s=self.read_backoff_s, html_field=self.html_field, **extra
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


def unknown_stage(error: dict[str, Any]) -> str | None:
    """A `StageEntry` naming no stage, worded for `parse_yaml_model(describe=)`: the name given, the stages there
    are and the closest of them (None for any other error)."""
    given = error["input"] if error["type"] == "stage_name" else None
    if not (isinstance(given, dict) and len(given) == 1):
        return None
    name = next(iter(given))
    close = difflib.get_close_matches(str(name), ALL_STAGES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown stage {name!r} (stages: {', '.join(ALL_STAGES)}){hint}"


class Recipe(_Strict):
    """A curation job: where documents come from, what stages they pass, where the output goes."""

    name: str = Field(
        ..., pattern=NAME_PATTERN, max_length=MAX_NAME_CHARS,
        description="Job name; the job folder is output/<name>-<hash>."
    )
    output: str = Field("./jobs", description="Folder or URI under which the job folder is made.")
    seed: int = Field(42, ge=0, le=2**32 - 1, description="Seed of every random choice (sampling, shuffles); "
                      "0 to 2^32 - 1, what sentencepiece and numpy take.")
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
        """Hash of everything that decides the output (not where it runs or is written), its local paths absolute:
        `data/x.jsonl` run here and the absolute path `curate submit` sends are one recipe, one job folder. What the
        files its stages and tokenizer read hold is part of it (`storage.content_digest`): a job whose domain list
        changed while it ran kept its first shards by the old list and its others by the new one."""
        how = {"executor", "ray", "local", "output", "stall_timeout_s"}
        retries = {"__all__": {"read_attempts", "read_backoff_s"}}  # how hard a read is tried, not what it gives
        recipe = self.with_absolute_paths()
        body = recipe.model_dump(mode="json", exclude={**dict.fromkeys(how, True), "sources": retries})
        body["_ids"] = schema.ID_SCHEME
        files = [path for _, _, params in recipe.stage_specs() for _, path, _ in named_files(params)]
        files += [recipe.tokenizer.model] if recipe.tokenizer is not None and recipe.tokenizer.model else []
        if files:  # (a recipe naming none keeps the folder it always had)
            body["_files"] = {path: storage.content_digest(path) for path in files}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def with_absolute_paths(self) -> Recipe:
        """This recipe with every local path it names relative to the folder `curate` runs in made absolute (on a
        cluster the recipe runs in Ray's copy of a working folder, where `recipes/sample/*.warc.gz` names nothing and
        `./jobs` is a temporary folder)."""

        def absolute(path: str) -> str:
            return path if storage.is_remote(path) or Path(path).is_absolute() else str(
                Path(path).expanduser().absolute())

        body = self.model_dump(mode="json")
        body["output"] = absolute(body["output"])
        for source in body["sources"]:
            source["paths"] = [absolute(p) for p in source["paths"]]
        if (body.get("tokenizer") or {}).get("model"):
            body["tokenizer"]["model"] = absolute(body["tokenizer"]["model"])
        for i, (_, kind, params) in enumerate(self.stage_specs()):
            for key, path, _mark in named_files(params):
                holder = body["stages"][i][kind]
                if len(key) == 1:
                    holder[key[0]] = absolute(path)
                else:
                    holder[key[0]][key[1]] = absolute(path)
        return Recipe.model_validate(body)

    def job_dir(self, output: str | None = None) -> str:
        """The job folder, a local one as an absolute path: Ray's workers on a cluster run in another folder, and
        `./jobs` there is not the folder `curate` runs in."""
        folder = output or self.output
        return storage.join(folder if storage.is_remote(folder) else storage.canonical(folder),
                            f"{self.name}-{self.fingerprint()[:schema.JOB_HASH_CHARS]}")


