"""Flagged-word ratio filter: the share of a document's words that are on a profanity/obscenity list.

The heuristic of C4 (Raffel et al. 2020: drop any page with a word of the LDNOOBW list), made a
ratio as in BigScience ROOTS (Laurençon et al. 2022; `flagged_words_max_cutoff` 0.01 for English
in bigscience-workshop/data-preparation, `parameters_filtering.py`) and data-juicer's
`flagged_words_filter`, so that one swear word in a long article does not remove it.

The word list is the one the installed `better-profanity` package ships
(`better_profanity/profanity_wordlist.txt`, ~900 English entries incl. leetspeak spellings and
phrases); this repository copies no list. Its slow API is not used: the file is read once and
matched column-wise with pyarrow (lowercased, split at non-alphanumerics, set lookups; phrases and
spaced-out spellings such as "f.u.c.k" match as n-grams of the same tokens). The list is English:
with a `lang` column (the langid stage) only English documents are checked by default.
"""

from __future__ import annotations

import importlib.resources
import re
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.stages.base import DocumentFilter, Resources

# A word is a run of letters, combining marks, digits or underscore; everything else separates words.
_SEPARATORS = r"[^\p{L}\p{M}\p{N}_]+"
_SYMBOLS = re.compile(r"[^\w\s.\-]")

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


class FlaggedWordsParams(DocumentFilter.Params):
    max_ratio: float = Field(
        0.01,
        ge=0,
        le=1,
        description="Drop documents whose share of flagged words is above this (BigScience ROOTS, English: "
        "0.01; 0 drops any document with a flagged word, as C4 did).",
    )
    wordlist: str | None = Field(
        None, description="A word-list file, one entry a line; default: the list better-profanity ships."
    )
    ignore: list[str] = Field(
        default_factory=lambda: list(DEFAULT_IGNORED),
        description="Entries not to flag (default: ordinary, clinical and identity words of better-profanity's "
        "list; [] keeps the whole list).",
    )
    extra: list[str] = Field(default_factory=list, description="Entries to flag besides the list's.")
    languages: list[str] | None = Field(
        default_factory=lambda: ["en"],
        description="Apply only to documents whose `lang` (from langid) is one of these, since the list is "
        "English; documents without a `lang` value are checked; null: every document.",
    )


class FlaggedWords(DocumentFilter):
    """Drop English documents with too high a share of flagged words (`flagged_words`).

    Scores: `flagged_words` (words covered by a list entry; a phrase covers all its words) and
    `flagged_words_ratio` (that over the document's word count).
    """

    name = "toxicity"
    Params = FlaggedWordsParams
    resources = Resources(cpus=0.25)
    output_columns: ClassVar[dict[str, pa.DataType]] = {
        "flagged_words": pa.int64(),
        "flagged_words_ratio": pa.float32(),
    }
    bypass_reason = "language"  # rows whose `lang` is not one of `languages`

    def applies(self, batch: pa.Table) -> pa.ChunkedArray | None:
        """English word list, English documents: another language's words are not its profanity
        (Polish "nad", German "dick", Portuguese "Fux" are on better-profanity's list)."""
        languages = self.params.languages
        if languages is None or "lang" not in batch.column_names:
            return None
        lang = batch.column("lang")
        return pc.or_(pc.is_null(lang), pc.is_in(lang, value_set=pa.array(languages, pa.string())))

    def setup(self) -> None:
        p = self.params
        if p.wordlist is None:
            entries = better_profanity_words()
        else:
            path = Path(p.wordlist)
            if not path.is_file():
                msg = f"toxicity: word list not found: {p.wordlist} (recipe key `wordlist`)"
                raise FileNotFoundError(msg)
            entries = path.read_text(encoding="utf-8").splitlines()
        # An entry spelled with symbols (sh!t, shi+, a$$) cannot be matched on words: tokenized it would
        # become another, innocent word ("shi", "sh"), so it is left out. Dots, hyphens, spaces separate
        # words (f.u.c.k, ass-fucker, 2 girls 1 cup match as n-grams); a trailing * is a stem marker.
        entries = [e.strip().rstrip("*") for e in [*entries, *p.extra]]
        entries = [e for e in entries if e and not _SYMBOLS.search(e)]
        tokens, rows, real = tokenize(pa.array(entries, pa.string()))
        tokens, rows = tokens.filter(pa.array(real)), rows[real]
        ignored = {" ".join(t) for t in self._split(pa.array(p.ignore, pa.string()))}
        by_length: dict[int, set[str]] = {}
        for words in np.split(np.asarray(tokens.to_pylist(), dtype=object), np.flatnonzero(np.diff(rows)) + 1):
            if len(words) and (entry := " ".join(words)) not in ignored:
                by_length.setdefault(len(words), set()).add(entry)
        # Per n-gram length: the set of entries and the set of their first words (to join n-grams only there).
        self._grams = {
            n: (pa.array(sorted(e), pa.string()), pa.array(sorted({x.split(" ")[0] for x in e}), pa.string()))
            for n, e in sorted(by_length.items())
        }
        self._ready = True

    @staticmethod
    def _split(texts: pa.Array) -> list[list[str]]:
        tokens, rows, real = tokenize(texts)
        tokens, rows = tokens.filter(pa.array(real)), rows[real]
        out: list[list[str]] = [[] for _ in range(len(texts))]
        for word, row in zip(tokens.to_pylist(), rows, strict=True):
            out[row].append(word)
        return out

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        if not getattr(self, "_ready", False):
            self.setup()
        n = batch.num_rows
        words, rows, real = tokenize(batch.column("text"))
        total = np.bincount(rows[real], minlength=n)
        covered = np.zeros(len(words), dtype=bool)
        for size, (entries, firsts) in self._grams.items():
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
                gram = pc.binary_join_element_wise(gram, words.take(pa.array(starts + k)), " ")
            hits = starts[pc.is_in(gram, value_set=entries).to_numpy(zero_copy_only=False)]
            for k in range(size):
                covered[hits + k] = True
        flagged = np.bincount(rows[covered], minlength=n)
        ratio = np.where(total > 0, flagged / np.maximum(total, 1), 0.0)
        return {"flagged_words": flagged.astype(np.int64), "flagged_words_ratio": ratio.astype(np.float32)}

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        bad = scores["flagged_words_ratio"] > np.float32(self.params.max_ratio)
        return ~bad, np.where(bad, "flagged_words", None)
