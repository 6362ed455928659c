"""Ablations: the same small model trained on variants of a recipe's data, evaluated the same way.

An ablation file (`spec`) names a base recipe, its variants (`variants`), one tokenizer, a training budget and
evaluation sets. The pieces here are free of Ray; `pipelines.ablate` runs them:

- `variants`: a variant's overrides applied to the base recipe;
- `jobs`: which curation jobs the variants need, sharing every stage prefix two variants have in common, and
  the recipes of those jobs (`restore` lets a job continue from another job's documents);
- `tokenizer`: one sentencepiece model trained on a sample of the union of the variants' documents;
- `evalsets`, `evaluate`: held-out text (loss, bits per byte) and multiple-choice sets (accuracy);
- `overlap`: evaluation items that share an n-gram with a variant's training documents;
- `training`: one training run of a variant and seed (the reference trainer) and the evaluation of each of its
  checkpoints;
- `stats`, `results`: the result table (mean and spread over seeds, difference from the baseline) and the
  results folder.
"""
