"""The ablation file (`curate ablate ablation.yaml`), validated with errors that point at its file and line.

    name: filters
    recipe: recipes/quickstart.yaml          # the base curation recipe: variant `base`, the baseline
    variants:
      no-length: {remove: [length]}          # leave a stage out
      strict: {settings: {length: {min_words: 120}}}   # change a stage's settings
      web-only: {mixture: {weights: {web: 1, notes: 0}}}
    tokenizer: {train: {vocab_size: 1000}}   # one for every variant (default: the base recipe's)
    pack: {seq_len: 128, shard_rows: 64}     # default: the base recipe's
    training: {model: {d_model: 64, n_layers: 2, n_heads: 4}, tokens: 65536, batch_size: 4, seeds: [0, 1, 2]}
    evaluation:
      sets:
        - {name: articles, path: eval/articles.jsonl}                # held-out text: loss, bits per byte
        - {name: choice, path: eval/choice.jsonl, kind: choice}      # {context, choices, answer}: accuracy
    mixture_search: {variant: base, proxies: 16, proxy: {tokens: 16384}}   # optional: RegMix over base's sources

Results go to `<output>/<name>/` (`curation.ablate.results`); the variants' curation job folders to `jobs`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from curation import storage
from curation.ablate.evalsets import EvalSet
from curation.ablate.mixture_search import VERIFIED, MixtureSearch
from curation.ablate.results import PROXY_PREFIX
from curation.ablate.training_config import Training
from curation.ablate.variants import Variant, variant_problems, variant_recipe
from curation.recipe import Recipe, RecipeError, load_recipe, unknown_stage
from curation.tokens.config import PackConfig, TokenizerConfig
from curation.train.config import TrainRecipe
from curation.yaml_model import NAME_PATTERN, parse_yaml_model, read_recipe_text

BASE = "base"  # the variant that is the base recipe unchanged, unless the file defines one of that name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evaluation(_Strict):
    sets: list[EvalSet] = Field(..., min_length=1, description="Held-out text and multiple-choice sets, each "
                                "evaluated on every checkpoint.")
    overlap: Literal["refuse", "warn"] = Field(
        "refuse", description="An evaluation item sharing an n-gram with a variant's training documents: refuse "
        "to train (the sets must be held out) or warn and go on.")
    ngram: int = Field(13, ge=5, description="Words of the n-grams compared (GPT-3's 13).")
    spread: float = Field(2.0, gt=0, description="A difference from the baseline counts when it exceeds this "
                          "many seed spreads (standard deviations over seeds).")
    batch_size: int = Field(16, gt=0, description="Sequences per forward pass of the evaluation.")


class Ablation(_Strict):
    """Variants of a curation recipe, each trained on and evaluated the same way."""

    name: str = Field(..., pattern=NAME_PATTERN, description="The ablation's name: results in <output>/<name>/.")
    recipe: str = Field(..., description="The base curation recipe (a path).")
    output: str = Field("./ablations", description="Folder of ablation results.")
    jobs: str | None = Field(None, description="Folder of the variants' curation job folders (default: "
                             "<output>/<name>/jobs); ablations sharing one reuse each other's jobs.")
    baseline: str = Field(BASE, pattern=NAME_PATTERN, description="The variant the others are compared with.")
    variants: dict[str, Variant] = Field(default_factory=dict, description=f"By name; `{BASE}`, the base recipe "
                                         "unchanged, is added unless given.")
    tokenizer: TokenizerConfig | None = Field(None, description="One tokenizer for every variant: a model, or "
                                              "trained on a sample of the union of their documents. Default: the "
                                              "base recipe's.")
    pack: PackConfig | None = Field(None, description="Packing of every variant. Default: the base recipe's.")
    training: Training = Field(..., description="How every variant's model is trained: model, budget, seeds.")
    evaluation: Evaluation = Field(..., description="What every checkpoint is evaluated on.")
    mixture_search: MixtureSearch | None = Field(None, description="Proxies trained on random mixtures of a "
                                                 "variant's sources, a regression of their loss on the weights, "
                                                 "and its proposal verified (`curation.ablate.mixture_search`).")

    @field_validator("variants")
    @classmethod
    def _names(cls, variants: dict[str, Variant]) -> dict[str, Variant]:
        bad = [name for name in variants if re.fullmatch(NAME_PATTERN, name) is None]
        if bad:
            msg = f"variant names are letters, digits, `_`, `.` and `-`: {', '.join(map(repr, bad))}"
            raise ValueError(msg)
        taken = [name for name in variants if name in VERIFIED or name.startswith(PROXY_PREFIX)]
        if taken:
            msg = f"{', '.join(map(repr, taken))}: names of the mixture search's runs (`{PROXY_PREFIX}*`, " \
                  f"{', '.join(VERIFIED)}); give the variant another"
            raise ValueError(msg)
        return variants

    def folder(self) -> str:
        return storage.join(self.output, self.name)

    def jobs_folder(self) -> str:
        return self.jobs or storage.join(self.folder(), "jobs")

    def all_variants(self) -> dict[str, Variant]:
        """The file's variants, `base` (no override) first unless the file defines it."""
        return self.variants if BASE in self.variants else {BASE: Variant(), **self.variants}

    def base_recipe(self) -> Recipe:
        return self.packed_as_variants(load_recipe(self.recipe, check_paths=False))

    def packed_as_variants(self, recipe: Recipe) -> Recipe:
        """`recipe` with this ablation's `tokenizer` and `pack`, where given: every variant is packed with them
        (so a variant's `mixture:` is valid although the base recipe packs nothing)."""
        return recipe.model_copy(update={key: value for key, value in (("tokenizer", self.tokenizer),
                                                                        ("pack", self.pack)) if value is not None})

    def search_set(self) -> str | None:
        """The evaluation set the mixture search minimises a score of (None: no search, or no text set)."""
        if self.mixture_search is None:
            return None
        texts = [s.name for s in self.evaluation.sets if s.kind == "text"]
        return self.mixture_search.set or (texts[0] if texts else None)

    def train_recipe(self, job: str, train_dir: str, seed: int, seq_len: int, name: str = "run",
                     training: Training | None = None) -> TrainRecipe:
        """The `curate train` recipe of one run: every run of the ablation has the same but for job and seed
        (the mixture search's proxies have their own `training`)."""
        t = training or self.training
        steps = t.steps(seq_len)
        every = t.checkpoint_every(steps)
        return TrainRecipe.model_validate({
            "name": name, "job": job, "train_dir": train_dir, "seed": seed,
            "model": t.model.model_dump(exclude_none=True), "optim": t.optim.model_dump(exclude_unset=True),
            "steps": steps, "batch_size": t.batch_size, "micro_batches": t.micro_batches,
            "checkpoint_every": every, "keep_checkpoints": math.ceil(steps / every) + 1, "workers": 1,
            "use_gpu": t.use_gpu, "cpus_per_worker": t.cpus_per_run, "tensorboard": False,
            "spike": t.spike.model_dump()})


def _checks(ablation: Ablation) -> list[tuple[tuple[Any, ...], str]]:
    """What pydantic cannot see: the base recipe, each variant applied to it, the settings every variant
    shares, the evaluation files."""
    try:
        base = ablation.packed_as_variants(load_recipe(ablation.recipe))
    except RecipeError as exc:
        return [(("recipe",), f"the base recipe has {len(exc.problems)} problem(s): "
                 + "; ".join(str(p) for p in exc.problems))]
    out: list[tuple[tuple[Any, ...], str]] = []
    variants = ablation.all_variants()
    if ablation.baseline not in variants:
        out.append((("baseline",), f"no variant named {ablation.baseline!r} (variants: {', '.join(variants)})"))
    for name, variant in ablation.variants.items():
        out += [(("variants", name, *loc), msg) for loc, msg in variant_problems(base, variant)]
    tokenizer, pack = ablation.tokenizer or base.tokenizer, ablation.pack or base.pack
    if tokenizer is None:
        out.append((("tokenizer",), "the base recipe has no tokenizer: give one here (model or train)"))
    elif tokenizer.model and not storage.exists(tokenizer.model):
        out.append((("tokenizer", "model"), f"no tokenizer model at {tokenizer.model!r}"))
    if pack is None:
        out.append((("pack",), "the base recipe has no `pack`: give one here (seq_len, shard_rows)"))
    else:
        out += _training_checks(ablation, pack.seq_len)
    names = [s.name for s in ablation.evaluation.sets]
    for i, spec in enumerate(ablation.evaluation.sets):
        if names.index(spec.name) != i:
            out.append((("evaluation", "sets", i, "name"), f"set name {spec.name!r} is used twice"))
        if not storage.expand(spec.path):
            out.append((("evaluation", "sets", i, "path"), f"no file matches {spec.path!r}"))
    if ablation.mixture_search is not None:
        out += _search_checks(ablation, base, variants, pack.seq_len if pack else None)
    return out


def _search_checks(ablation: Ablation, base: Recipe, variants: dict[str, Variant],
                   seq_len: int | None) -> list[tuple[tuple[Any, ...], str]]:
    """The searched variant must exist and have sources to mix; the set must be a text set; the proxies'
    training must make valid runs."""
    search = ablation.mixture_search
    out: list[tuple[tuple[Any, ...], str]] = []
    if search.variant not in variants:
        out.append((("mixture_search", "variant"), f"no variant named {search.variant!r} "
                    f"(variants: {', '.join(variants)})"))
    elif not variant_problems(base, variants[search.variant]):
        sources = variant_recipe(base, variants[search.variant]).sources
        if len(sources) < 2:
            out.append((("mixture_search", "variant"), f"variant {search.variant!r} has {len(sources)} source: "
                        "a mixture needs two or more"))
    texts = [s.name for s in ablation.evaluation.sets if s.kind == "text"]
    if ablation.search_set() not in texts:
        where = ("mixture_search", "set") if search.set else ("evaluation", "sets")
        out.append((where, f"the mixture search minimises the {search.metric} of a text set: "
                    f"{'no text set named ' + repr(search.set) if search.set else 'there is none'}"
                    f"{' (text sets: ' + ', '.join(texts) + ')' if texts else ''}"))
    if seq_len is not None:
        proxy = search.proxy.apply(ablation.training)
        out += [(("mixture_search", "proxy", *loc[1:]), msg)
                for loc, msg in _training_checks(ablation, seq_len, proxy)]
    return out


def _training_checks(ablation: Ablation, seq_len: int,
                     training: Training | None = None) -> list[tuple[tuple[Any, ...], str]]:
    """A run's `curate train` recipe must validate: its errors, at the training keys they come from."""
    from pydantic import ValidationError

    try:
        ablation.train_recipe("job", "train", 0, seq_len, training=training)
    except ValidationError as exc:
        out = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            key = loc if loc and loc[0] in Training.model_fields else ("tokens", *loc)
            out.append((("training", *key), error["msg"].removeprefix("Value error, ")))
        return out
    model = (training or ablation.training).model
    if model.max_seq_len is not None and model.max_seq_len < seq_len:
        return [(("training", "model", "max_seq_len"), f"{model.max_seq_len} is shorter than pack.seq_len {seq_len}")]
    return []


def parse_ablation(text: str, file: str = "<ablation>", *, check_paths: bool = True) -> Ablation:
    """Validate an ablation file; raise `RecipeError` listing every problem with its line and column.
    `check_paths` also loads the base recipe, applies every variant to it and checks the files it names."""
    return parse_yaml_model(text, file, Ablation, _checks if check_paths else None,
                            what="an ablation is a YAML mapping (name:, recipe:, variants:, training: ...)",
                            describe=unknown_stage)


def load_ablation(path: str | Path, *, check_paths: bool = True) -> Ablation:
    return parse_ablation(read_recipe_text(path), str(path), check_paths=check_paths)
