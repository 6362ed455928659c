"""The `curate` command."""

from __future__ import annotations

import argparse
import json
import sys

from curation.recipe import RecipeError, json_schema, load_recipe


def _validate(args: argparse.Namespace) -> int:
    try:
        recipe = load_recipe(args.recipe)
    except RecipeError as exc:
        print(exc, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) in {args.recipe}", file=sys.stderr)
        return 2
    print(f"{args.recipe}: valid ({len(recipe.sources)} sources, {len(recipe.stages)} stages)")
    return 0


def _run(args: argparse.Namespace) -> int:
    try:
        recipe = load_recipe(args.recipe)
    except RecipeError as exc:
        print(exc, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) in {args.recipe}; nothing was run", file=sys.stderr)
        return 2
    from pipelines.progress import summary  # Ray is imported only when a job really runs
    from pipelines.run import run

    result = run(recipe, address=args.address, output=args.output, quiet=args.quiet)
    summary(result.stats, result.job_dir)
    return 0


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(json_schema(), indent=2))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curate", description="Data-curation pipelines for LLM pre-training, on Ray.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a recipe (embedded local Ray unless an address is given)")
    run.add_argument("recipe")
    run.add_argument("--address", help="Ray address: auto, ray://host:10001 (default: the recipe's ray.address)")
    run.add_argument("--output", help="folder under which the job folder is made (default: the recipe's output)")
    run.add_argument("--quiet", action="store_true", help="no progress display")
    run.set_defaults(func=_run)
    validate = sub.add_parser("validate", help="check a recipe and report every problem with its line")
    validate.add_argument("recipe")
    validate.set_defaults(func=_validate)
    schema = sub.add_parser("schema", help="print the recipe JSON Schema (for editor completion)")
    schema.set_defaults(func=_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
