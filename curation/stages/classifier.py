"""A fastText classifier as a filter: quality (DCLM-style), toxicity, or any binary label.

The model is a fastText supervised model (`curate train-classifier` writes one, with its sidecar
JSON; DCLM's or another model trained elsewhere works too). Score = probability of the positive
label. Keep rule: `score >= threshold`, or the best `top_fraction` of documents by a threshold
read from the sidecar's score quantiles (DCLM kept the top 10 % of its pool by fastText score).
With `keep_below` the rule turns around (a toxicity model: keep `score < threshold`).

Training (`curation.classifier_training`) and scoring share `Preprocessing`, and the sidecar JSON written
next to the model records how texts were preprocessed, which label is the positive one, the
hyper-parameters, the held-out metrics and the score quantiles that turn `top_fraction` into a threshold.
Texts are split into the words of their language (`curation.lang.words`, the segmentation the word-based
filters use): split at whitespace, a Chinese, Japanese or Thai sentence is one token and a classifier
trained on them learns nothing (issue 31). A model whose sidecar does not say so (older models, DCLM's)
is scored on whitespace tokens, as it was trained.
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curation import storage
from curation.lang.han_script import TO_SIMPLIFIED, to_simplified
from curation.lang.words import LANGUAGE_WORDS, SPACES, segmenter_of
from curation.stages.base import DocumentFilter, ReadsFile
from curation.stages.parts import labelled_languages

SIDECAR_FORMAT = "curation.classifier/1"
CHINESE = "zh"
CALIBRATED = "calibrated"
LABEL_PREFIX = "__label__"

# Characters fastText or its Python binding treat as line or token breaks, and the Unicode line breaks:
# all become one space so that a document is one line (predict() refuses '\n') with the same tokens.
_BREAKS = r"[\s\x{0b}\x{00}\x{85}\x{a0}\x{2028}\x{2029}]+"


def label_name(label: str) -> str:
    """`hq` and `__label__hq` both name fastText's label `__label__hq`."""
    return label if label.startswith(LABEL_PREFIX) else LABEL_PREFIX + label


# Source quirks of social-media text (`social`): what tells a tweet from a forum post, not a toxic text from a
# clean one. A classifier trained on tweets learns "@user" and "RT" as strongly as any slur, and they are
# absent elsewhere (Davidson's tweets -> Stormfront's sentences).
_URLS = r"(?i)\b(?:https?://|www\.)\S+"
_MENTIONS = r"@[\p{L}\p{N}_]+:?"
_RETWEET = r"\bRT\b:?"
_HASH = r"#(\p{L})"  # a hashtag keeps its word
_ENTITIES = r"&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);"  # HTML entities: emoji as &#128514;, &amp;
# Emoji, pictographs, modifiers, variation selectors, joiners, private use
_EMOJI = r"[\p{So}\p{Sk}\p{Co}\x{fe00}-\x{fe0f}\x{200d}\x{20e3}\x{1f3fb}-\x{1f3ff}]+"


@dataclass(frozen=True)
class Preprocessing:
    """How texts become fastText lines, at training and at scoring time alike (recorded in the sidecar).

    `words`: split into the words of each document's language (`curation.lang.words`, the segmentation the
    word-based filters use: jieba for Chinese, Sudachi for Japanese...) and join them with one space; without
    it a text is split at whitespace only, and a Chinese sentence is one token (issue 31). `social`: drop the
    quirks of social-media sources (mentions, URLs, retweet markers, hashtag signs, HTML entities, emoji).
    `lexicon`: append one `FLAGGED_TOKEN` per flagged word (the `toxicity` stage's lists, each document by its
    language's; at most `LEXICON_CAP`), a feature shared by every source. `simplified`: Chinese documents (`zh`)
    in Traditional characters are read in Simplified (OpenCC's `t2s`, `curation.lang.han_script`): a model
    trained on one script sees the other's words as unknown (COLD's model, Simplified, scored its test set
    converted to Traditional at macro F1 0.718 against 0.795). `ngrams`: a lexicon of phrases (Davidson's hate
    n-grams for English, `classifier_training.read_ngram_lexicon`): one `NGRAM_TOKEN` per occurrence (whole words,
    any case; at most `LEXICON_CAP`). The phrases themselves are recorded in the sidecar, so that a model scores
    as trained wherever it runs, without the file it was trained with.
    """

    lowercase: bool
    words: bool = False
    social: bool = False
    lexicon: bool = False
    simplified: bool = False
    ngrams: tuple[str, ...] = ()

    @classmethod
    def of_sidecar(cls, sidecar: dict[str, Any] | None, lowercase: bool) -> Preprocessing:
        """The preprocessing a model was trained with; a sidecar without these keys: whitespace (older models)."""
        recorded = (sidecar or {}).get("preprocess", {})
        return cls(lowercase=lowercase, words=bool(recorded.get("words")), social=bool(recorded.get("social")),
                   lexicon=bool(recorded.get("lexicon")), simplified=bool(recorded.get("simplified")),
                   ngrams=tuple(recorded.get("ngrams") or ()))

    def describe(self) -> dict[str, Any]:
        """The sidecar's `preprocess` entry."""
        return {
            "lowercase": self.lowercase,
            "whitespace": "collapsed to one space (newlines included)",
            "words": "curation.lang.words, by each document's lang (else its script)" if self.words else False,
            "social": self.social,
            "lexicon": f"{FLAGGED_TOKEN} per flagged word (toxicity stage lists, at most {LEXICON_CAP})"
            if self.lexicon else False,
            "simplified": f"OpenCC {TO_SIMPLIFIED} for {CHINESE} texts" if self.simplified else False,
            "ngrams": list(self.ngrams) if self.ngrams else False,  # {NGRAM_TOKEN} per occurrence of one
        }

    def lines(self, texts: pa.Array | pa.ChunkedArray | Sequence[str | None],
              langs: pa.Array | pa.ChunkedArray | Sequence[str | None] | None = None, *,
              words_as: pa.Array | pa.ChunkedArray | Sequence[str | None] | None = None) -> list[str]:
        """One fastText line per text; `langs`: each text's language code (null or None: by its script);
        `words_as`: the language whose words each text is split into, where it is not its own."""
        array = texts if isinstance(texts, pa.Array | pa.ChunkedArray) else pa.array(list(texts), pa.string())
        array = pc.fill_null(array, "")
        if self.simplified and langs is not None:
            array = _in_simplified(array, langs)
        if self.social:
            for pattern, replacement in ((_URLS, " "), (_MENTIONS, " "), (_RETWEET, " "), (_ENTITIES, " "),
                                         (_HASH, r"\1"), (_EMOJI, " ")):
                array = pc.replace_substring_regex(array, pattern, replacement)
        array = pc.utf8_trim_whitespace(pc.replace_substring_regex(array, _BREAKS, " "))
        flagged = _flagged_suffixes(array, langs) if self.lexicon else None  # on the words as written
        ngrams = _ngram_suffixes(array, self.ngrams) if self.ngrams else None
        if self.lowercase:
            array = pc.utf8_lower(array)
        if self.words:
            array = _joined_words(array, langs if words_as is None else words_as)
        for suffix in (ngrams, flagged):
            if suffix is not None:
                array = pc.binary_join_element_wise(array, suffix, "")
        return array.to_pylist()


def _in_simplified(texts: pa.Array | pa.ChunkedArray,
                   langs: pa.Array | pa.ChunkedArray | Sequence[str | None]) -> pa.Array | pa.ChunkedArray:
    """`texts` with the Chinese ones (`langs`: zh) in Simplified characters."""
    codes = langs if isinstance(langs, pa.Array | pa.ChunkedArray) else pa.array(list(langs), pa.string())
    rows = np.flatnonzero(pc.fill_null(pc.equal(codes, CHINESE), False).to_numpy(zero_copy_only=False))
    if not len(rows):
        return texts
    values = texts.to_pylist()
    for row, text in zip(rows.tolist(), to_simplified([values[i] for i in rows.tolist()]), strict=True):
        values[row] = text
    return pa.array(values, pa.string())


FLAGGED_TOKEN = "__flagged__"
LEXICON_CAP = 3  # a fourth flagged word says little more than a third


def _joined_words(texts: pa.Array | pa.ChunkedArray,
                  langs: pa.Array | pa.ChunkedArray | Sequence[str | None] | None) -> pa.Array:
    """Each text as its words (`curation.lang.words`) joined by one space; columnar past the segmenter."""
    words = LANGUAGE_WORDS.split(texts, langs)
    # only the batch's own words: the shared vocabulary grows to millions of entries
    present, inverse = np.unique(words.ids, return_inverse=True)
    vocab = LANGUAGE_WORDS.vocab
    flat = pa.array([vocab[i] for i in present.tolist()], pa.large_string()).take(pa.array(inverse.ravel()))
    lists = pa.LargeListArray.from_arrays(pa.array(words.offsets, pa.int64()), flat)
    return pc.binary_join(lists, pa.scalar(" ", pa.large_string())).cast(pa.string())


Lexicon = Callable[[pa.Array, "pa.Array | pa.ChunkedArray | Sequence[str | None] | None"], np.ndarray]
_LEXICON: list[Lexicon] = []


def use_lexicon(count: Lexicon) -> None:
    """The flagged words of each text, for the lexicon feature: the toxicity stage's lists, which that module hands
    in when it is imported (it uses this one's classifier; importing it from here would make a loop). Every import
    of a stage runs `curation.stages`, which imports both."""
    _LEXICON[:] = [count]


def _flagged_suffixes(texts: pa.Array, langs: pa.Array | pa.ChunkedArray | Sequence[str | None] | None) -> pa.Array:
    """`FLAGGED_TOKEN` once per flagged word of each text (at most `LEXICON_CAP`), to append to its line."""
    return _repeated(FLAGGED_TOKEN, _LEXICON[0](texts, langs))


NGRAM_TOKEN = "__ngram__"


@lru_cache(maxsize=4)
def _ngram_pattern(phrases: tuple[str, ...]) -> str:
    """RE2: any of the phrases, longest first, as whole words (ASCII word boundaries: the lexicons are English)."""
    alternatives = "|".join(re.escape(p) for p in sorted(set(phrases), key=lambda p: (-len(p), p)))
    return rf"\b(?:{alternatives})\b"


def _ngram_suffixes(texts: pa.Array | pa.ChunkedArray, phrases: tuple[str, ...]) -> pa.Array:
    """`NGRAM_TOKEN` once per occurrence of a lexicon phrase in each text (at most `LEXICON_CAP`), to append."""
    counts = pc.count_substring_regex(texts, _ngram_pattern(phrases), ignore_case=True)
    return _repeated(NGRAM_TOKEN, np.asarray(counts.to_numpy(zero_copy_only=False), np.int64))


def _repeated(token: str, counts: np.ndarray) -> pa.Array:
    """` token` as many times as each count (at most `LEXICON_CAP`): suffixes to append to the texts' lines."""
    suffixes = np.array(["", *(f" {token}" * k for k in range(1, LEXICON_CAP + 1))])
    return pa.array(suffixes[np.minimum(counts, LEXICON_CAP)])


def preprocess(texts: pa.Array | pa.ChunkedArray | Sequence[str | None], *, lowercase: bool) -> list[str]:
    """Texts as fastText sees them at training and at scoring time: one line, whitespace collapsed.

    Newlines must go (fastText reads one example per line; the binding's predict() rejects them);
    DCLM joins lines with a space the same way. Lowercasing is the fastText tutorial's advice for
    small training sets; whatever was used in training is stored in the sidecar and reused when
    scoring, so the two can never disagree. Columnar (pyarrow compute, RE2). Word segmentation and
    the other options: `Preprocessing`.
    """
    return Preprocessing(lowercase=lowercase).lines(texts)


def sidecar_path(model: str) -> str:
    """The sidecar JSON of a model file: `model.bin` -> `model.json` (any other name: name + `.json`)."""
    for suffix in (".bin", ".ftz"):
        if model.endswith(suffix):
            return model[: -len(suffix)] + ".json"
    return model + ".json"


def load_sidecar(model: str) -> dict[str, Any] | None:
    """The sidecar of `model`, or None when there is none (a model trained elsewhere)."""
    path = Path(sidecar_path(model))
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != SIDECAR_FORMAT:
        msg = f"{path}: not a classifier sidecar (format {data.get('format')!r}, expected {SIDECAR_FORMAT!r})"
        raise ValueError(msg)
    return data


def threshold_for_fraction(quantiles: Sequence[float], fraction: float, *, keep_below: bool = False) -> float:
    """Score threshold that keeps `fraction` of the calibration documents (highest, or lowest with keep_below)."""
    levels = np.linspace(0.0, 1.0, len(quantiles))
    level = fraction if keep_below else 1.0 - fraction
    return float(np.interp(level, levels, np.asarray(quantiles, dtype=np.float64)))


def positive_scores(model: Any, lines: list[str], positive: str) -> np.ndarray:
    """Probability of the `positive` label for each preprocessed line (one C++ call for the batch)."""
    if not lines:
        return np.zeros(0, dtype=np.float64)
    labels, probs = model.predict(lines, k=-1)
    out = np.empty(len(lines), dtype=np.float64)
    for i, (row_labels, row_probs) in enumerate(zip(labels, probs, strict=True)):
        try:
            out[i] = row_probs[row_labels.index(positive)]
        except ValueError:
            out[i] = 0.0
    return np.clip(out, 0.0, 1.0)  # fastText adds 1e-5 inside its softmax and can print 1.00001



class ClassifierParams(DocumentFilter.Params):
    model: Annotated[str, ReadsFile("model file")] = Field(
        ..., description="fastText model file (.bin/.ftz), local path or URI; its sidecar is <name>.json beside it."
    )
    label: str | None = Field(
        None,
        description="Positive label (`hq` or `__label__hq`); default: the sidecar's, else `__label__hq` (DCLM).",
    )
    threshold: Annotated[float, Field(ge=0, le=1)] | Literal["calibrated"] | None = Field(
        None, description="Keep documents with score >= threshold (< threshold with keep_below); `calibrated`: "
        "the threshold of best macro F1 on the model's held-out split (its sidecar's `calibrated_threshold`; where "
        "it has a `max_false_positive_rate`, among the cuts flagging at most that share of the negatives the one "
        "flagging fewest within one standard error of the best)."
    )
    top_fraction: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Keep this share of documents, the highest-scoring (lowest with keep_below), by a threshold "
        "calibrated at training time (the sidecar's score quantiles). Needs the sidecar.",
    )
    keep_below: bool = Field(False, description="Keep low scores instead of high ones (toxicity, spam models).")
    calibrate_on: str | None = Field(
        None,
        description="Which sidecar quantiles set the top_fraction threshold: `pool` (given with --calibration), "
        "`heldout`, `heldout_positive`, `heldout_negative`; default: pool if present, else heldout.",
    )
    score_column: str = Field("quality_score", pattern=r"^[A-Za-z][A-Za-z0-9_]*$", description="Output column.")
    reason: str | None = Field(
        None, description="Drop reason; default `low_<score_column>` (`high_<score_column>` with keep_below)."
    )
    lowercase: bool | None = Field(
        None,
        description="Lowercase before scoring; default: as in training (sidecar), else False (DCLM's models). "
        "Set it only for a model without sidecar: contradicting the sidecar is an error.",
    )
    keep_scores: bool = Field(True, description="Keep the score column in the output.")

    @model_validator(mode="after")
    def _one_rule(self) -> ClassifierParams:
        if (self.threshold is None) == (self.top_fraction is None):
            msg = "give exactly one of `threshold` (a score) or `top_fraction` (a share of documents to keep)"
            raise ValueError(msg)
        return self


class FastTextClassifier(DocumentFilter):
    """Score documents with a fastText model; drop those on the wrong side of the threshold.

    Recipe: `classifier: {model: models/quality.bin, top_fraction: 0.1}` (quality, DCLM-style) or
    `classifier: {model: models/toxic.bin, label: toxic, threshold: 0.5, keep_below: true,
    score_column: toxicity_score, reason: toxic}`. The text is preprocessed exactly as in training
    (`preprocess`, settings from the sidecar). The model is loaded once per worker process.
    """

    name = "classifier"
    Params = ClassifierParams

    @property
    def output_columns(self) -> dict[str, pa.DataType]:  # type: ignore[override]
        return {self.params.score_column: pa.float32()}

    def setup(self) -> None:
        import fasttext

        p = self.params
        local = self._local_model(p.model)
        sidecar = load_sidecar(local)
        self.model: Any = fasttext.load_model(local)
        label = label_name(p.label) if p.label else (sidecar or {}).get("positive_label", "__label__hq")
        if label not in self.model.labels:
            msg = f"classifier: label {label!r} is not one of the model's labels {list(self.model.labels)} ({p.model})"
            raise ValueError(msg)
        self.label = label
        trained_lower = (sidecar or {}).get("preprocess", {}).get("lowercase")
        if p.lowercase is not None and trained_lower is not None and p.lowercase != trained_lower:
            msg = (
                f"classifier: lowercase: {p.lowercase} contradicts the model's training (lowercase "
                f"{trained_lower}, {sidecar_path(p.model)}); leave `lowercase` out"
            )
            raise ValueError(msg)
        self.lowercase = bool(trained_lower if trained_lower is not None else p.lowercase)
        self.preprocessing = Preprocessing.of_sidecar(sidecar, self.lowercase)
        self.language = (sidecar or {}).get("lang")  # segments a document without `lang` as in training
        scripts = (sidecar or {}).get("scripts")
        self.scripts = tuple(scripts) if scripts else None  # what its training texts were written in
        if p.threshold == CALIBRATED:
            self.threshold = self._threshold_of_heldout(sidecar)
        elif p.threshold is not None:
            self.threshold = float(p.threshold)
        else:
            self.threshold = self._calibrated(sidecar)
        self.reason = p.reason or f"{'high' if p.keep_below else 'low'}_{p.score_column}"

    def _local_model(self, model: str) -> str:
        if not storage.is_remote(model):
            path = Path(storage.canonical(model))
            if not path.is_file():
                msg = f"classifier: model file not found: {model} (recipe key `model`; resolved to {path})"
                raise FileNotFoundError(msg)
            return str(path)
        # A remote model (and its sidecar, if any) is copied once per worker process into a temporary folder.
        folder = Path(tempfile.mkdtemp(prefix="curation-model-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        for uri in (model, sidecar_path(model)):
            fs, path = storage.resolve(uri)
            if fs.get_file_info(path).type.name != "File":
                if uri == model:
                    msg = f"classifier: model file not found: {model} (recipe key `model`)"
                    raise FileNotFoundError(msg)
                continue
            with fs.open_input_stream(path) as src, (folder / uri.rsplit("/", 1)[-1]).open("wb") as dst:
                shutil.copyfileobj(src, dst)
        return str(folder / model.rsplit("/", 1)[-1])

    def _threshold_of_heldout(self, sidecar: dict[str, Any] | None) -> float:
        value = (sidecar or {}).get("calibrated_threshold")
        if value is None:
            msg = (f"classifier: threshold `calibrated` needs `calibrated_threshold` in the sidecar "
                   f"{sidecar_path(self.params.model)} (written by `curate train-classifier` with a held-out split); "
                   "give a number instead")
            raise ValueError(msg)
        return float(value)

    def _calibrated(self, sidecar: dict[str, Any] | None) -> float:
        p = self.params
        if sidecar is None:
            msg = (
                f"classifier: top_fraction needs the calibration sidecar {sidecar_path(p.model)} written by "
                "`curate train-classifier`, and there is none; give `threshold:` instead"
            )
            raise ValueError(msg)
        quantiles = sidecar.get("quantiles", {})
        which = p.calibrate_on or ("pool" if "pool" in quantiles else "heldout")
        if which not in quantiles:
            msg = (
                f"classifier: calibrate_on {which!r}: the sidecar {sidecar_path(p.model)} has quantiles for "
                f"{sorted(quantiles) or 'nothing (trained with holdout 0)'}"
            )
            raise ValueError(msg)
        assert p.top_fraction is not None
        return threshold_for_fraction(quantiles[which], p.top_fraction, keep_below=p.keep_below)

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        self.ready()  # also scored outside a run (a notebook): the model is loaded once
        langs = self.languages(batch)
        lines = self.preprocessing.lines(batch.column("text"), langs, words_as=self.words_as(batch, langs))
        return {self.params.score_column: positive_scores(self.model, lines, self.label)}

    def languages(self, batch: pa.Table) -> pa.ChunkedArray | list[str | None] | None:
        """Each document's language for word segmentation: its `lang`, else the training language (if any)."""
        if not (self.preprocessing.words or self.preprocessing.lexicon):
            return None
        if "lang" in batch.column_names:
            return pc.fill_null(batch.column("lang").cast(pa.string()), self.language) if self.language \
                else batch.column("lang")
        return [self.language] * batch.num_rows if self.language else None

    @staticmethod
    def words_as(batch: pa.Table, langs: pa.ChunkedArray | list[str | None] | None
                 ) -> pa.ChunkedArray | list[str | None] | None:
        """The language each document's words are split as: its own (`langs`), but where langid labelled some of
        its paragraphs in a language written without spaces (Chinese lines in an English page), that one: its
        segmenter splits the other languages' words as the English rules do, and the English rules would leave
        each run of Chinese characters one word."""
        unspaced = [next((c for c in codes if segmenter_of(c) != SPACES), None) for codes in labelled_languages(batch)]
        if langs is None or not any(unspaced):
            return langs
        values = langs if isinstance(langs, list) else langs.to_pylist()
        return [own or lang for own, lang in zip(unspaced, values, strict=True)]

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        values = scores[self.params.score_column]
        mask = values < self.threshold if self.params.keep_below else values >= self.threshold
        return mask, np.where(mask, None, self.reason)
