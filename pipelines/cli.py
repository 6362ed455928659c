"""The `curate` command."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from curation.recipe import RecipeError, json_schema, load_recipe

# What `add_subparsers` gives: each `_add_<command>` adds its sub-command to it.
Commands = argparse._SubParsersAction


_KINDS = {"curation": ("a curation recipe", "run"), "train": ("a training recipe", "train"),
          "ablation": ("an ablation", "ablate")}


def _load(path: str, consequence: str = "", loader: Callable[[str], Any] = load_recipe, kind: str = "curation"
          ) -> Any:
    """The validated recipe (or training recipe, or ablation: `loader`, of `kind`), or None after printing every
    problem; a file of another kind in one line naming its command (not a dozen unknown keys)."""
    found = _recipe_kind(path)
    if found is not None and found != kind:
        (noun, command), expected = _KINDS[found], _KINDS[kind][0]
        print(f"{path} is {noun}, not {expected}: `curate {command} {path}` runs it{consequence}", file=sys.stderr)
        return None
    try:
        return loader(path)
    except RecipeError as exc:
        print(exc, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) in {path}{consequence}", file=sys.stderr)
        return None


def _port(text: str) -> int:
    """A TCP port: uvicorn takes 70000 and listens on 70000 - 65536."""
    if not text.isdigit() or not 0 < int(text) < 65536:
        msg = f"a port from 1 to 65535, not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(text)


def _recipe_kind(path: str) -> str | None:
    """`curation`: a curation recipe has `sources:`; `train`: a training recipe names a curation job (`job:`);
    `ablation`: an ablation file names its base recipe (`recipe:`); None: none of these, or no YAML mapping (the
    parser of the kind asked for reports why, with the line)."""
    import yaml

    from curation.yaml_model import load_yaml

    try:
        data = load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):  # nested too deeply: ~400 levels
        return None
    if not isinstance(data, dict):
        return None
    return ("curation" if "sources" in data else "train" if "job" in data else "ablation" if "recipe" in data
            else None)


def _validate_ablation(path: str) -> int:
    from curation.ablate.spec import load_ablation

    ablation = _load(path, loader=load_ablation, kind="ablation")
    if ablation is None:
        return 2
    search = ablation.mixture_search
    more = f", mixture search over {search.proxies} proxies" if search else ""
    print(f"{path}: valid (ablation: {len(ablation.all_variants())} variants, {len(ablation.training.seeds)} "
          f"seeds, {len(ablation.evaluation.sets)} evaluation sets{more})")
    return 0


def _validate(args: argparse.Namespace) -> int:
    kind = _recipe_kind(args.recipe)
    if kind == "ablation":
        return _validate_ablation(args.recipe)
    if kind == "train":
        from curation.train.config import load_train_recipe

        if _load(args.recipe, loader=load_train_recipe, kind="train") is None:
            return 2
        print(f"{args.recipe}: valid (training recipe)")
        return 0
    recipe = _load(args.recipe)
    if recipe is None:
        return 2
    print(f"{args.recipe}: valid ({len(recipe.sources)} sources, {len(recipe.stages)} stages)")
    return 0


def _export(args: argparse.Namespace) -> int:
    from curation.tokens.export import export_megatron

    try:
        written = export_megatron(args.job, args.out)
    except (OSError, ValueError) as exc:  # a missing job, a half-written one, an --out that is a file
        print(f"curate export: {exc}", file=sys.stderr)
        return 2
    for split, part in written.items():
        print(f"{split}: {part['documents']:,} documents, {part['tokens']:,} tokens -> {part['prefix']}.bin/.idx")
    return 0


def _run(args: argparse.Namespace) -> int:
    recipe = _load(args.recipe, "; nothing was run")
    if recipe is None:
        return 2
    from curation.job import JobFolderError, claim_job_folder
    from curation.recipe import output_problems

    for problem in output_problems(recipe, args.output) if args.output else []:
        print(f"curate run: {problem}; nothing was run", file=sys.stderr)
        return 2
    try:  # before a status service or Ray starts: the folder must be free or this recipe's own
        claim_job_folder(recipe.job_dir(args.output), recipe.fingerprint())
    except JobFolderError as exc:
        print(f"curate run: {exc}; nothing was run", file=sys.stderr)
        return 2
    from curation.tokens.vocabulary import VocabularyError
    from pipelines.console import summary  # Ray is imported only when a job really runs
    from pipelines.run import ShardsFailed, interrupted_by_sigterm, interruption, run, storage_error
    from pipelines.tokens import NothingToPack

    service = None
    if args.serve:
        from pipelines.service.server import for_run, linger

        try:
            service = for_run(str(Path(recipe.job_dir(args.output)).parent), args.serve)
        except (ValueError, RuntimeError) as exc:
            print(f"curate run --serve: {exc}; nothing was run", file=sys.stderr)
            return 2
        print(f"status service: {service.url}", file=sys.stderr)
    try:
        with interrupted_by_sigterm():
            result = run(recipe, address=args.address, output=args.output, quiet=args.quiet, kind=args.executor)
    except JobFolderError as exc:  # raised before any work: the folder is left as it was
        print(f"curate run: {exc}; nothing was run", file=sys.stderr)
        return 2
    except ShardsFailed as exc:  # the job folder says `failed`, naming them
        print(f"curate run: {exc}", file=sys.stderr)
        return 1
    except (VocabularyError, NothingToPack) as exc:  # after curation: the job folder says `failed`, naming why
        print(f"curate run: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # the job folder cannot be written: a full disk, a read-only mount
        if isinstance(exc, ConnectionError):  # a Ray that cannot be joined: `main` says so
            raise
        print(f"curate run: {storage_error(exc, recipe.job_dir(args.output))}; the shards done are kept and no "
              "temporary file is left", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:  # SIGTERM or SIGINT: the job folder says `interrupted`
        signum = interruption(exc)
        print(f"curate run: interrupted ({signum.name}); what is done is kept: run it again to resume",
              file=sys.stderr)
        return 128 + signum
    summary(result.stats, result.job_dir)
    if service is not None:
        linger(service)
    return 0


def _serve(args: argparse.Namespace) -> int:
    import os

    from pipelines.service import serve
    from pipelines.service.control import Control

    token = os.environ.get(args.token_env)
    if args.ray_address and not token:
        print(f"curate serve: --ray-address needs a token in ${args.token_env}; job control stays off",
              file=sys.stderr)
    job_control = Control(token, args.ray_address, args.submit_output) if args.ray_address and token else None
    if not Path(args.jobs).is_dir():  # it answered `ok` with an empty list, which looks like no job ran
        print(f"curate serve: no folder at {Path(args.jobs).absolute()} yet: no job is shown until one is written "
              "there (--jobs names the folder jobs are written to)", file=sys.stderr)
    import socket

    try:  # uvicorn logged its start-up as complete, then the bind's error, and exited 3
        with socket.create_server((args.host, args.port)):
            pass
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        print(f"curate serve: cannot listen on {args.host}:{args.port}: {why} (--port, --host)", file=sys.stderr)
        return 2
    serve(args.jobs, host=args.host, port=args.port, job_control=job_control, ablations_dir=args.ablations)
    return 0


def _on_cluster(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`command`, saying in one line (exit 1) that the Ray cluster at `--address` cannot be reached or refused
    the request, rather than with the Ray client's traceback."""

    @functools.wraps(command)
    def talking(args: argparse.Namespace) -> int:
        if not args.address:
            return command(args)
        if not args.address.startswith(("http://", "https://")):  # Ray's client took `host:port` for a GCS: 35 s of
            print(f"curate {args.command}: --address is the Ray dashboard's URL, http://HEAD:8265 (got "  # retries
                  f"{args.address!r})", file=sys.stderr)
            return 2
        from pipelines.submit import cluster_errors

        try:
            return command(args)
        except cluster_errors() as exc:
            if "does not exist" in str(exc):  # the cluster answered: it has no such job
                print(f"curate {args.command}: the Ray cluster at {args.address} has no job {args.job!r}",
                      file=sys.stderr)
            else:
                print(f"curate {args.command}: the Ray cluster at {args.address} is unreachable or refused the "
                      f"request: {exc}", file=sys.stderr)
            return 1

    return talking


def _status(args: argparse.Namespace) -> int:
    if args.address:  # a job submitted with `curate submit`: ask the Ray Jobs API
        from pipelines.submit import job_status

        if not args.job:
            print("curate status --address needs the job id `curate submit` printed", file=sys.stderr)
            return 2
        info = job_status(args.address, args.job)
        info["recipe"] = (info.get("metadata") or {}).get("recipe")
        for key in ("job_id", "recipe", "status", "message", "entrypoint", "start_time", "end_time"):
            value = info.get(key)
            if key.endswith("_time") and value:  # milliseconds since the epoch
                value = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value / 1000))
            print(f"{key.replace('_', ' ')}: {value if value not in (None, '') else '-'}")
        return 0 if info["status"] != "FAILED" else 1
    from pipelines.service.client import status

    return status(args.url, args.job, watch=args.watch)


def _submit(args: argparse.Namespace) -> int:
    from pipelines.submit import submit

    try:
        job_id = submit(args.recipe, args.address, output=args.output)
    except RecipeError as exc:
        print(exc, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) in {args.recipe}; nothing was submitted", file=sys.stderr)
        return 2
    print(job_id)
    if args.wait:
        import time

        from pipelines.submit import TERMINAL, client

        while (state := client(args.address).get_job_status(job_id)) not in TERMINAL:
            time.sleep(1)
        print(f"{job_id}: {state.value}", file=sys.stderr)
        return 0 if state.value == "SUCCEEDED" else 1
    return 0


def _logs(args: argparse.Namespace) -> int:
    from pipelines.submit import logs

    print(logs(args.address, args.job), end="")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from pipelines.submit import stop

    print("stopped" if stop(args.address, args.job) else "not running")
    return 0


def _schema(args: argparse.Namespace) -> int:
    if args.markdown:
        from curation.reference import reference

        print(reference(), end="")
    else:
        print(json.dumps(json_schema(), indent=2))
    return 0


def _train(args: argparse.Namespace) -> int:
    from curation.train.config import load_train_recipe

    recipe = _load(args.recipe, "; nothing was run", loader=load_train_recipe, kind="train")
    if recipe is None:
        return 2
    from curation.job import JobFolderBusy
    from curation.train.loader import PackedDataError
    from curation.train.loop import checkpoint_dirs, step_of
    from curation.train.resume import ResumeError
    from pipelines.run import interrupted_by_sigterm, interruption
    from pipelines.train import ResourcesError, train  # Ray and torch are imported only when a run really starts

    saved = checkpoint_dirs(recipe.output_dir()) if args.resume else []
    resumed_at = step_of(saved[-1]) if saved else 0  # the steps after it are this run's
    try:
        with interrupted_by_sigterm():
            result = train(recipe, resume=args.resume, address=args.address)
    except (FileExistsError, JobFolderBusy, ResumeError, PackedDataError, ResourcesError) as exc:
        print(f"curate train: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # SIGTERM or SIGINT: the workers end with this process's Ray
        signum = interruption(exc)
        print(f"curate train: interrupted ({signum.name}); its checkpoints are kept: --resume goes on from the last",
              file=sys.stderr)
        return 128 + signum
    print(train_summary(result, resumed_at))
    print(f"metrics, spikes and checkpoints: {result.train_dir}")
    return 0


def train_summary(result: Any, resumed_at: int = 0) -> str:
    """The line a training ends with: the steps this run trained (a resumed run's metrics hold the ones before the
    checkpoint it resumed at too: it said "80 steps" for 20), the loss over them, the last validation loss."""
    ran = [row for row in result.metrics if row.get("step", 0) > resumed_at]
    first, last = (ran[0], ran[-1]) if ran else ({}, {})
    measured = [row["val_loss"] for row in result.metrics if isinstance(row.get("val_loss"), int | float)]
    val_loss = f"{measured[-1]:.4f}" if measured else "not measured"
    if not ran:
        return f"no step left to train ({len(result.metrics)} done) in {result.seconds:.1f} s, val_loss {val_loss}"
    steps = f"steps {first['step']}-{last['step']} of {len(result.metrics)}" if resumed_at else f"{len(ran)} steps"
    return (f"{steps} in {result.seconds:.1f} s: loss {first.get('loss', float('nan')):.4f} -> "
            f"{last.get('loss', float('nan')):.4f}, val_loss {val_loss}, {len(result.spikes)} spike(s)")


def _ablate(args: argparse.Namespace) -> int:
    from curation.ablate.spec import load_ablation

    ablation = _load(args.ablation, "; nothing was run", loader=load_ablation, kind="ablation")
    if ablation is None:
        return 2
    if args.write_recipe and ablation.mixture_search is None:
        print(f"curate ablate: --write-recipe writes the mixture search's proposal: {args.ablation} has no "
              "mixture_search; nothing was run", file=sys.stderr)
        return 2
    from curation.job import JobFolderBusy
    from curation.tokens.vocabulary import VocabularyError
    from curation.train.resume import ResumeError
    from pipelines.ablate import OverlapError, run_ablation, summary, write_proposal  # Ray: only when it runs
    from pipelines.run import interrupted_by_sigterm, interruption

    try:
        with interrupted_by_sigterm():
            result = run_ablation(ablation, text=Path(args.ablation).read_text(encoding="utf-8"), resume=args.resume,
                                  address=args.address, quiet=args.quiet)
    except (FileExistsError, JobFolderBusy, ResumeError, OverlapError, VocabularyError) as exc:
        print(f"curate ablate: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = interruption(exc)
        print(f"curate ablate: interrupted ({signum.name}); what is done is kept: --resume goes on", file=sys.stderr)
        return 128 + signum
    summary(result)
    if args.write_recipe:
        write_proposal(ablation, result, args.write_recipe)
        print(f"recipe with the proposed mixture: {args.write_recipe}")
    return 0


def _train_classifier(args: argparse.Namespace) -> int:
    from curation.classifier_training import (
        Corpus,
        Hyperparameters,
        format_report,
        read_csv_labelled,
        read_jsonl_texts,
        read_ngram_lexicon,
        recipe_texts,
        train_classifier,
        train_toxicity_preset,
    )

    if args.toxicity_preset:
        try:
            sidecar = train_toxicity_preset(args.toxicity_preset, args.data_root, args.output, args.seed)
        except (OSError, ValueError) as exc:
            print(f"train-classifier: {exc}", file=sys.stderr)
            return 2
        print(format_report(sidecar, args.output))
        return 0

    def gather(files: list[str], recipes: list[str]) -> Corpus:
        corpus = Corpus([])
        parts = [read_jsonl_texts(files, args.text_field, args.max_docs)] if files else []
        parts += [recipe_texts(r, args.max_docs) for r in recipes]
        for part in parts:
            corpus.texts += part.texts
            corpus.sources += part.sources
            corpus.skipped += part.skipped
        return corpus

    if not args.csv and (not (args.positive or args.positive_recipe) or not (args.negative or args.negative_recipe)):
        print(
            "train-classifier: give positives (--positive/--positive-recipe) and negatives "
            "(--negative/--negative-recipe), or labelled CSV files (--csv with --label-field, --positive-value)",
            file=sys.stderr,
        )
        return 2
    if args.csv and not (args.label_field and args.positive_value):
        print("train-classifier: --csv needs --label-field and --positive-value", file=sys.stderr)
        return 2
    try:
        positives = gather(args.positive, args.positive_recipe)
        negatives = gather(args.negative, args.negative_recipe)
        if args.csv:
            pos, neg = read_csv_labelled(args.csv, args.text_field, args.label_field, args.positive_value,
                                         args.max_docs)
            for corpus, part in ((positives, pos), (negatives, neg)):
                corpus.texts += part.texts
                corpus.sources += part.sources
                corpus.skipped += part.skipped
        calibration = gather(args.calibration, []) if args.calibration else None
        hp = Hyperparameters(
            lr=args.lr,
            dim=args.dim,
            ws=args.ws,
            epoch=args.epoch,
            minCount=args.min_count,
            wordNgrams=args.word_ngrams,
            loss=args.loss,
            minn=args.minn,
            maxn=args.maxn,
            bucket=args.bucket,
            thread=args.threads,
        )
        sidecar = train_classifier(
            positives,
            negatives,
            args.output,
            label=args.label,
            negative_label=args.negative_label,
            seed=args.seed,
            holdout=args.holdout,
            lowercase=not args.keep_case,
            words=not args.whitespace,
            social=args.social,
            lexicon=args.lexicon,
            ngrams=read_ngram_lexicon(args.ngram_lexicon) if args.ngram_lexicon else (),
            lang=args.lang,
            quantize=args.quantize,
            balance=args.balance,
            max_false_positive_rate=args.max_false_positive_rate,
            calibration=calibration,
            hyperparameters=hp,
        )
    except RecipeError as exc:
        print(exc, file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"train-classifier: {exc}", file=sys.stderr)
        return 2
    print(format_report(sidecar, args.output))
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from curation.lang.calibrate import MIN_DOCUMENTS, calibrate, read_reference, summary, write_settings

    try:
        reference = read_reference(args.inputs, text_field=args.text_field, lang=args.lang)
        fewest = MIN_DOCUMENTS if args.min_documents is None else args.min_documents
        result = calibrate(reference, args.keep, min_documents=fewest)
    except (OSError, ValueError) as exc:
        print(f"curate calibrate: {exc}", file=sys.stderr)
        return 2
    print(summary(result))
    if not result.languages:
        print("curate calibrate: no language to calibrate; nothing written", file=sys.stderr)
        return 1
    write_settings(result, args.out, args.inputs)
    print(f"wrote {args.out}; a recipe reads it with `language_settings: {args.out}`")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curate", description="Data-curation pipelines for LLM pre-training, on Ray.")
    sub = p.add_subparsers(dest="command", required=True)
    _add_run(sub)
    _add_serve(sub)
    _add_status(sub)
    _add_submit(sub)
    _add_job_commands(sub)
    _add_export(sub)
    _add_validate(sub)
    _add_calibrate(sub)
    _add_schema(sub)
    _add_train(sub)
    _add_ablate(sub)
    _add_train_classifier(sub)
    return p


def _add_run(sub: Commands) -> None:
    run = sub.add_parser("run", help="run a recipe (embedded local Ray unless an address is given)")
    run.add_argument("recipe")
    run.add_argument("--executor", choices=["ray", "local"],
                     help="ray: Ray tasks; local: this machine's processes, no Ray (default: the recipe's executor)")
    run.add_argument("--address", help="Ray address: auto, ray://host:10001 (default: the recipe's ray.address)")
    run.add_argument("--output", help="folder under which the job folder is made (default: the recipe's output)")
    run.add_argument("--quiet", action="store_true", help="no progress display")
    run.add_argument("--serve", nargs="?", const="127.0.0.1:8000", metavar="[HOST:]PORT",
                     help="serve the status API and dashboard while the job runs (and after, until Ctrl-C, in a "
                     "terminal; 15 s from a script); default 127.0.0.1:8000")
    run.set_defaults(func=_run)


def _add_serve(sub: Commands) -> None:
    serve = sub.add_parser("serve", help="status service: REST API, dashboard page and /metrics over a jobs folder")
    serve.add_argument("--jobs", default="./jobs", help="folder holding job folders (default: ./jobs)")
    serve.add_argument("--ablations", default="./ablations", help="folder holding ablation results folders "
                       "(`curate ablate`'s output): /api/ablations and the /ablations page (default: ./ablations)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="port, 1 to 65535 (default: 8000)")
    serve.add_argument("--ray-address", help="Ray dashboard (http://HEAD:8265) that POST /api/jobs submits to; with "
                       "a token, turns on POST and DELETE /api/jobs")
    serve.add_argument("--token-env", default="CURATE_SERVICE_TOKEN",
                       help="environment variable holding the bearer token of POST/DELETE (default: %(default)s)")
    serve.add_argument("--submit-output", help="output folder or URI of submitted jobs, as the cluster sees it")
    serve.set_defaults(func=_serve)


def _add_status(sub: Commands) -> None:
    status = sub.add_parser("status", help="jobs, or one job's progress and funnel, from a status service")
    status.add_argument("job", nargs="?", help="job id or a unique prefix of one (default: list every job)")
    status.add_argument("--url", default="http://127.0.0.1:8000", help="status service (default: %(default)s)")
    status.add_argument("--watch", type=float, metavar="SECONDS", help="refresh every SECONDS until the job ends")
    status.add_argument("--address", help="Ray dashboard address (http://HEAD:8265): status of a submitted job")
    status.set_defaults(func=_on_cluster(_status))


def _add_submit(sub: Commands) -> None:
    submit = sub.add_parser("submit", help="run a recipe on a Ray cluster through the Ray Jobs API; prints the job id")
    submit.add_argument("recipe")
    submit.add_argument("--address", required=True, help="Ray dashboard address, e.g. http://HEAD:8265")
    submit.add_argument("--output", help="job output folder or URI, as the cluster sees it")
    submit.add_argument("--wait", action="store_true", help="wait for the job to end; exit 1 unless it succeeded")
    submit.set_defaults(func=_on_cluster(_submit))


def _add_job_commands(sub: Commands) -> None:
    """`curate logs` and `curate stop`: a submitted job, by id."""
    for name, func, text in (("logs", _logs, "a submitted job's driver log"), ("stop", _stop, "stop a submitted job")):
        command = sub.add_parser(name, help=text)
        command.add_argument("job", help="the job id `curate submit` printed")
        command.add_argument("--address", required=True, help="Ray dashboard address, e.g. http://HEAD:8265")
        command.set_defaults(func=_on_cluster(func))


def _add_export(sub: Commands) -> None:
    export = sub.add_parser("export", help="write a packed job's splits in another trainer's format")
    export.add_argument("job", help="job folder (with manifest.json)")
    export.add_argument("--format", required=True, choices=["megatron"], help="megatron: Megatron-LM/NeMo .bin/.idx")
    export.add_argument("--out", required=True, help="folder for <split>_text_document.bin/.idx")
    export.set_defaults(func=_export)


def _add_validate(sub: Commands) -> None:
    validate = sub.add_parser("validate", help="check a recipe (curation, training or ablation) and report every "
                              "problem with its line")
    validate.add_argument("recipe")
    validate.set_defaults(func=_validate)


def _add_calibrate(sub: Commands) -> None:
    calibrate = sub.add_parser(
        "calibrate", help="per-language thresholds from reference text you trust (FineWeb-2's method); writes a "
        "language settings file for a recipe's `language_settings:`")
    calibrate.add_argument("inputs", nargs="+", help="JSONL or Parquet files (paths, globs) or job folders")
    calibrate.add_argument("--out", required=True, help="settings file to write (YAML)")
    calibrate.add_argument("--keep", type=float, default=0.95, help="share of each language's reference documents "
                           "the calibrated bounds keep, together (default: %(default)s)")
    calibrate.add_argument("--lang", help="the language of every document (default: each document's `lang` field, "
                           "as the langid stage writes it)")
    calibrate.add_argument("--text-field", default="text", help="JSONL/Parquet field holding the text (default: text)")
    calibrate.add_argument("--min-documents", type=int, help="fewest documents a language is calibrated on "
                           "(default: 50)")
    calibrate.set_defaults(func=_calibrate)


def _add_schema(sub: Commands) -> None:
    schema = sub.add_parser("schema", help="print the recipe JSON Schema (for editor completion)")
    schema.add_argument("--markdown", action="store_true", help="print the recipe reference instead: every key "
                        "of recipes, stages, training recipes and ablation files (docs/reference.md)")
    schema.set_defaults(func=_schema)


def _add_train(sub: Commands) -> None:
    fit = sub.add_parser("train", help="train the reference model on a job's packed shards (Ray Train, FSDP)")
    fit.add_argument("recipe", help="training recipe, e.g. recipes/train.yaml")
    fit.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in the train folder")
    fit.add_argument("--address", help="Ray address: auto, ray://host:10001 (default: a local Ray)")
    fit.set_defaults(func=_train)


def _add_ablate(sub: Commands) -> None:
    ablate = sub.add_parser("ablate", help="curate variants of a recipe, train the reference model on each with "
                            "several seeds, evaluate and compare them")
    ablate.add_argument("ablation", help="ablation file, e.g. recipes/ablation.yaml")
    ablate.add_argument("--resume", action="store_true", help="go on with an earlier run of this ablation (what is "
                        "done is kept; interrupted trainings continue from their newest checkpoint)")
    ablate.add_argument("--address", help="Ray address: auto, ray://host:10001 (default: the base recipe's)")
    ablate.add_argument("--quiet", action="store_true", help="no progress display")
    ablate.add_argument("--write-recipe", metavar="PATH", help="with mixture_search: write the searched variant's "
                        "recipe with the proposed mixture to PATH (after the run; with --resume, of a finished one)")
    ablate.set_defaults(func=_on_cluster(_ablate))


def _add_train_classifier(sub: Commands) -> None:
    train = sub.add_parser(
        "train-classifier",
        help="train a fastText classifier (quality, toxicity) from labelled JSONL; writes the model and its sidecar",
        description="Train a fastText supervised model on positives vs negatives, evaluate it on a seeded "
        "held-out split and write MODEL and its sidecar, MODEL with the suffix .json (quality.bin: quality.json; "
        "labels, hyper-parameters, held-out metrics, score quantiles for the classifier stage's top_fraction). "
        "Defaults follow DCLM (wordNgrams 2, lr 0.1, dim 100, epoch 5).",
    )
    train.add_argument("--positive", nargs="+", default=[], metavar="JSONL", help="positive examples (files, globs)")
    train.add_argument("--negative", nargs="+", default=[], metavar="JSONL", help="negative examples (files, globs)")
    train.add_argument(
        "--positive-recipe",
        nargs="+",
        default=[],
        metavar="RECIPE",
        help="positives: the documents these recipes keep (sources through stages, without Ray)",
    )
    train.add_argument(
        "--negative-recipe", nargs="+", default=[], metavar="RECIPE", help="negatives: the documents these recipes keep"
    )
    train.add_argument(
        "--calibration",
        nargs="+",
        default=[],
        metavar="JSONL",
        help="unlabelled sample of the pool to filter: its score quantiles make top_fraction exact",
    )
    train.add_argument("--toxicity-preset", metavar="LANG", help="train the shipped toxicity model of this "
                       "language (`make toxicity-models`) from its labelled set under --data-root; other options "
                       "but --output and --seed are the preset's (curation.classifier_training.TOXICITY_*)")
    train.add_argument("--data-root", default="../shared/data", help="with --toxicity-preset: the test data folder "
                       "(default: ../shared/data)")
    train.add_argument("--csv", nargs="+", default=[], metavar="CSV", help="labelled examples: CSV files with a "
                       "header; the text in --text-field, the class in --label-field")
    train.add_argument("--label-field", help="with --csv: the column holding each row's class")
    train.add_argument("--positive-value", nargs="+", default=[], metavar="VALUE",
                       help="with --csv: the classes that are positive (every other class is negative)")
    train.add_argument("--output", required=True, help="model file to write, e.g. models/quality.bin")
    train.add_argument("--lang", help="the training texts' language (zh, ja...): segments them into its words, "
                       "and documents without `lang` when scoring (default: each text's script decides)")
    train.add_argument("--whitespace", action="store_true", help="split at whitespace only, not into each "
                       "language's words (the models of before curation.lang.words)")
    train.add_argument("--social", action="store_true", help="drop social-media quirks: mentions, URLs, RT, "
                       "hashtag signs, HTML entities, emoji (for training on tweets)")
    train.add_argument("--lexicon", action="store_true", help="add a token per flagged word (the toxicity "
                       "stage's lists, by language)")
    train.add_argument("--ngram-lexicon", metavar="CSV", help="add a token per phrase of this lexicon found (first "
                       "column, after a header: Davidson's refined_ngram_dict.csv); the phrases go in the sidecar")
    _add_training_options(train)
    train.set_defaults(func=_train_classifier)


def _add_training_options(train: argparse.ArgumentParser) -> None:
    """`curate train-classifier`: how texts are prepared and split, and fastText's hyper-parameters."""
    train.add_argument("--minn", type=int, default=0, help="shortest character n-gram (default: 0, none)")
    train.add_argument("--maxn", type=int, default=0, help="longest character n-gram (default: 0, none)")
    train.add_argument("--quantize", type=int, default=None, metavar="CUTOFF", help="quantize, keeping this "
                       "many words and n-grams (a .ftz of a few MB)")
    train.add_argument("--text-field", default="text", help="JSONL field (or --csv column) holding the text "
                       "(default: text)")
    train.add_argument("--label", default="hq", help="positive label (default: hq, i.e. __label__hq as in DCLM)")
    train.add_argument("--negative-label", default="cc", help="negative label (default: cc)")
    train.add_argument("--seed", type=int, default=42, help="seed of the split, shuffling and fastText (default: 42)")
    train.add_argument("--holdout", type=float, default=0.1, help="held-out share per class (default: 0.1)")
    train.add_argument("--max-docs", type=int, default=None, help="read at most this many documents per input group")
    train.add_argument("--balance", action="store_true", help="down-sample the larger class in training")
    train.add_argument("--max-false-positive-rate", type=float, default=None, metavar="SHARE",
                       help="for a pool where positives are rare (toxicity presets: 0.1): calibrate the threshold "
                       "among those flagging at most this share of the held-out negatives, the one flagging fewest "
                       "within one standard error of the best macro F1")
    train.add_argument("--keep-case", action="store_true", help="do not lowercase (DCLM's own models keep case)")
    train.add_argument("--lr", type=float, default=0.1, help="learning rate (default: 0.1)")
    train.add_argument("--dim", type=int, default=100, help="vector size (default: 100)")
    train.add_argument("--ws", type=int, default=5, help="context window (default: 5)")
    train.add_argument("--epoch", type=int, default=5, help="epochs (default: 5)")
    train.add_argument("--min-count", type=int, default=1, help="minimal word count (default: 1)")
    train.add_argument("--word-ngrams", type=int, default=2, help="word n-gram length (default: 2, DCLM)")
    train.add_argument("--loss", default="softmax", choices=["softmax", "hs", "ova"], help="loss (default: softmax)")
    train.add_argument(
        "--bucket",
        type=int,
        default=None,
        help="n-gram hash buckets (default: min(2M, 2 x training tokens); the 2M of fastText and DCLM: 800 MB)",
    )
    train.add_argument(
        "--threads",
        type=int,
        default=1,
        help="training threads (default: 1, reproducible; more is faster but not deterministic)",
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # `curate schema | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit would fail too
        return 0
    except ConnectionError as exc:
        from pipelines.executors.base import RayUnreachable  # here: the executors cost 0.3 s to import

        if not isinstance(exc, RayUnreachable):
            raise
        print(f"curate {args.command}: {exc}", file=sys.stderr)  # a job it started says `failed`: run it again
        return 1


if __name__ == "__main__":
    sys.exit(main())
