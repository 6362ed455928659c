"""Words by language: one segmentation path for every word-based rule, chosen by each document's `lang`.

Why: the English splitter (`curation.text.splitter.WORDS`, spaCy's English rules) splits on whitespace, so a
Chinese or Thai document is a handful of "words" as long as a sentence, and every word-based rule
(Gopher's counts, stop words and mean word length, n-gram repetition, C4's words per line, FineWeb's
newlines per word) drops it. FineWeb-2 (datatrove `utils/word_tokenizers.py`) segments each language
with a tokenizer made for it; this module does the same with packages that install from wheels and ship
their dictionaries (nothing is downloaded at run time):

| lang (lid.176)            | segmenter                                    | FineWeb-2 used                   |
|---------------------------|----------------------------------------------|----------------------------------|
| zh, wuu, yue              | jieba-rs (`rjieba.cut`)                      | spaCy zh with jieba              |
| ja                        | Sudachi, core dictionary, split mode A       | spaCy ja (Sudachi, mode A)       |
| th                        | pythainlp `newmm-safe`                       | the same                         |
| km                        | khmer-nltk                                   | the same                         |
| lo                        | laonlp                                       | the same                         |
| my                        | pyidaungsu's word CRF (model in its wheel)   | the same (datatrove's)           |
| bo                        | syllables with their tsheg (botok downloads its dictionary at first use) | botok |
| everything else           | the English splitter (`curation.text.splitter`) | spaCy/NLTK/Stanza per language |

Korean is written with spaces between words (eojeol), so it keeps the space-delimited splitter; FineWeb-2
split Korean further into morphemes (Kiwi: more, shorter words), so its Korean stop words (particles) never
match a whitespace word: `curation.lang.settings` ships eojeol-level ones for Korean instead.

A document without a `lang` (or with a code we do not know) is segmented by its text's script.

What counts as a word, as in FineWeb-2 and the English splitter: every token but whitespace, punctuation
included; the `symbol` feature marks punctuation-only words, which Gopher's word count and mean length
skip. Inside a document of a segmented language, a whitespace piece without a letter of that script
(a Latin word, a number, a URL) goes through the English rules, so such pieces are split as in an
English document and share the English memo; a piece with letters of the script goes to the segmenter
whole, Latin letters attached to it included (jieba and Sudachi split "iPhone拍照" at the script change).

Same result shape as `curation.text.splitter.Words` (word ids into a vocabulary, offsets per document, per-word
features length/symbol/alpha/role), so the columnar rule code works unchanged: `LANGUAGE_WORDS.split(
texts, langs)` where it called `WORDS.split(texts)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.lang.scripts import script_of_text
from curation.text.columns import as_array, combined
from curation.text.splitter import Words, WordSplitter, composed

Segment = Callable[[str], list[str]]

# Sudachi rejects inputs over 49,149 bytes; a whitespace-free piece is cut into chunks this long first
# (4 bytes per character at most). A cut can split one word in two, once per 10,000 characters.
_SUDACHI_MAX_CHARS = 12_000
# Segmenters of Thai, Khmer and Lao run a dictionary search over the whole piece; long pieces are
# cut so one hostile piece cannot take minutes (newmm-safe does this for Thai itself).
_MAX_PIECE_CHARS = 5_000

SEGMENTED_LANGUAGES = {
    "zh": "zh", "wuu": "zh", "yue": "zh", "cmn": "zh", "lzh": "zh", "gan": "zh", "hak": "zh", "nan": "zh",
    "ja": "ja", "jpn": "ja",
    "th": "th", "tha": "th",
    "km": "km", "khm": "km",
    "lo": "lo", "lao": "lo",
    "my": "my", "mya": "my",
    "bo": "bo", "bod": "bo", "dz": "bo", "dzo": "bo",
}
"""Language codes (ISO 639-1 as lid.176 gives them, and ISO 639-3) -> segmenter."""

SEGMENTED_SCRIPTS = {"Hani": "zh", "Jpan": "ja", "Thai": "th", "Khmr": "km", "Laoo": "lo", "Mymr": "my",
                     "Tibt": "bo"}
"""Scripts written without spaces between words -> segmenter, for documents without a known language."""

SPACES = "spaces"  # the English splitter

# The letters of each segmented script: a whitespace piece with one of them goes to the language's
# segmenter whole (one call per piece: a call per run of letters costs more than the segmenting), a piece
# without any (a Latin word, a number, punctuation) to the English rules.
_SCRIPT_LETTERS = {
    "zh": re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]"),
    "ja": re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]"),
    "th": re.compile("[\u0e00-\u0e7f]"),
    "km": re.compile("[\u1780-\u17ff\u19e0-\u19ff]"),
    "lo": re.compile("[\u0e80-\u0eff]"),
    "my": re.compile("[\u1000-\u109f]"),
    "bo": re.compile("[\u0f00-\u0fff]"),
}

_ANY_UNSPACED_LETTER = re.compile("|".join(pattern.pattern for pattern in _SCRIPT_LETTERS.values()))
_SCRIPT_SAMPLE = 4000  # characters whose letters vote for a text's script


# ---------------------------------------------------------------------------------------------
# The segmenters, each loaded once per process on first use
# ---------------------------------------------------------------------------------------------


# full-width digits and Latin letters as ASCII (one code point each; full-width punctuation is Chinese's own)
HALF_WIDTH = {c: c - 0xFEE0 for first, last in ((0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A))
              for c in range(first, last + 1)}


@lru_cache(maxsize=1)
def _chinese() -> Segment:
    import rjieba

    return rjieba.cut


@lru_cache(maxsize=1)
def _japanese() -> Segment:
    from sudachipy import Dictionary, SplitMode

    # Mode A (short units), as spaCy's Japanese tokenizer that FineWeb-2's settings were computed with.
    tokenizer = Dictionary(dict="core").tokenizer(mode=SplitMode.A)

    def segment(piece: str) -> list[str]:
        words: list[str] = []
        for start in range(0, len(piece), _SUDACHI_MAX_CHARS):
            words.extend(m.surface() for m in tokenizer.tokenize(piece[start:start + _SUDACHI_MAX_CHARS]))
        return words

    return segment


# Words pythainlp's dictionary lacks whose pieces it makes into other words: กูล ("-kul", lineage), which ends
# a great many surnames (ปัญญาธรานุกูล, ชัยกูล), came out กู (a rude "I") and ล, and the toxicity stage dropped a byline
THAI_WORDS = frozenset({"กูล"})


@lru_cache(maxsize=1)
def _thai() -> Segment:
    from pythainlp.corpus.common import thai_words
    from pythainlp.tokenize import word_tokenize
    from pythainlp.util import dict_trie

    words = dict_trie(set(thai_words()) | THAI_WORDS)
    return lambda piece: word_tokenize(piece, engine="newmm-safe", keep_whitespace=False, custom_dict=words)


@lru_cache(maxsize=1)
def _khmer() -> Segment:
    import logging

    from khmernltk import word_tokenize

    logging.getLogger("khmer-nltk").setLevel(logging.WARNING)  # it logs every model load at INFO
    return lambda piece: _chunked(piece, lambda p: word_tokenize(p, return_tokens=True))


@lru_cache(maxsize=1)
def _lao() -> Segment:
    from laonlp.tokenize import word_tokenize

    return lambda piece: _chunked(piece, word_tokenize)


@lru_cache(maxsize=1)
def _burmese() -> Segment:
    import pycrfsuite
    from pyidaungsu.tokenize import Tokenize

    # pyidaungsu's character CRF (the word tokenizer datatrove gives Burmese). Its own `tokenize(form="word")`
    # reopens the model file on every call; one tagger per process instead.
    tokenize = Tokenize()
    tagger = pycrfsuite.Tagger()
    tagger.open(str(resources.files("pyidaungsu") / "model" / "tokenizer.crfsuite"))
    return lambda piece: _chunked(piece, lambda p: tokenize.segment_sentence(tagger, p).split())


def _chunked(piece: str, segment: Segment) -> list[str]:
    if len(piece) <= _MAX_PIECE_CHARS:
        return segment(piece)
    return [w for start in range(0, len(piece), _MAX_PIECE_CHARS)
            for w in segment(piece[start:start + _MAX_PIECE_CHARS])]


# Tibetan syllables end with a tsheg (U+0F0B/U+0F0C), which stays with the syllable as in botok's tokens;
# shads and other marks (U+0F0D-U+0F14) are words of their own.
_TIBETAN_TOKENS = re.compile(r"[\u0f0d-\u0f14]+|[^\u0f0b\u0f0c\u0f0d-\u0f14]+[\u0f0b\u0f0c]*|[\u0f0b\u0f0c]+")


def _tibetan(piece: str) -> list[str]:
    return _TIBETAN_TOKENS.findall(piece)


_LOADERS: dict[str, Callable[[], Segment]] = {
    "zh": _chinese, "ja": _japanese, "th": _thai, "km": _khmer, "lo": _lao,
    "my": _burmese, "bo": lambda: _tibetan,
}


def segmenter_of(lang: str | None, text: str = "") -> str:
    """The segmenter a document of language `lang` goes to: a key of `_LOADERS`, or `SPACES`. Without
    a known language, the script of `text` decides."""
    kind = _segmenter_of_code(lang) if lang else None
    if kind:
        return kind
    if _ANY_UNSPACED_LETTER.search(text, 0, _SCRIPT_SAMPLE) is None:  # most texts: one regex scan in C
        return SPACES
    return SEGMENTED_SCRIPTS.get(script_of_text(text, _SCRIPT_SAMPLE) or "", SPACES)


@lru_cache(maxsize=4096)
def _segmenter_of_code(lang: str) -> str | None:
    """The segmenter of a language code ("zh", "cmn", "cmn_Hani"); None for a code we do not know."""
    from curation.lang.settings import known_language

    code, _, script = lang.strip().partition("_")
    code = code.lower()
    if code in SEGMENTED_LANGUAGES:
        return SEGMENTED_LANGUAGES[code]
    if script:
        return SEGMENTED_SCRIPTS.get(script.title(), SPACES)
    return SPACES if known_language(code) else None


def warm_up(langs: Sequence[str] = ()) -> None:
    """Load the segmenters of `langs` now (a stage's `setup`), not in the first batch: Sudachi's dictionary
    takes about a second, khmer-nltk's model a few."""
    for kind in {SEGMENTED_LANGUAGES.get(lang) for lang in langs} - {None}:
        _LOADERS[kind]()


# ---------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------


class LanguageWords(WordSplitter):
    """Splits a batch of documents into words, each by its language's segmenter; see module doc.

    One vocabulary for all languages (the English splitter's memo and features are inherited), so a
    batch mixing languages gives one `Words`. Besides the piece memo, the vocabulary is cleared before a
    batch once it holds more than `max_words` words (segmented languages add words without pieces).

    Segmented pieces are memoised too, per segmenter, up to `max_segmented_chars` characters of pieces
    (then that memo alone starts again; the ids it held stay valid). Why: every word-based stage of a
    batch splits the same documents (gopher_repetition, gopher_quality, fineweb, length) or their lines
    (c4, whose lines are the documents' whitespace pieces), so the segmenter, the costliest step of a
    Chinese or Thai chain, runs once per piece and worker instead of once per stage. The memo is keyed by
    content, so it holds across stages that drop documents or rewrite text, and stages stay independent.
    """

    def __init__(self, max_pieces: int = 500_000, max_words: int = 2_000_000,
                 max_segmented_chars: int = 8_000_000) -> None:
        self.max_words = max_words
        self.max_segmented_chars = max_segmented_chars
        super().__init__(max_pieces)

    def clear(self) -> None:
        """Forget the memoised pieces (segmented ones too) and words."""
        super().clear()
        self.clear_segmented()

    def clear_segmented(self) -> None:
        """Forget the memoised segmentations only (words and ids stay valid): what a batch of new unspaced
        text meets, since such pieces (whole lines) rarely repeat across batches."""
        self._segmented: dict[str, dict[str, tuple[int, ...]]] = {}
        self._segmented_chars = 0

    def split(self, texts: pa.Array | pa.ChunkedArray | Sequence[str | None],
              langs: pa.Array | pa.ChunkedArray | Sequence[str | None] | None = None) -> Words:
        """Words of every document (null counts as empty); `langs`: each document's language code (null or
        absent: segmented by its script)."""
        if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
            texts = pa.array(texts, pa.large_string())
        texts = as_array(texts)
        kinds = self._kinds(texts, langs)
        if len(self.vocab) > self.max_words or len(self._piece_ids) > self.max_pieces:
            self.clear()
        if not len(kinds) or (kinds == SPACES).all():
            return super().split(texts)
        parts = []
        # the space-delimited part first: the English splitter may clear the memo before it splits, which
        # must not happen after other parts of this batch have their ids
        for kind in sorted(np.unique(kinds), key=lambda kind: kind != SPACES):
            docs = np.flatnonzero(kinds == kind)
            subset = texts.take(pa.array(docs))
            words = super().split(subset) if kind == SPACES else self._segment(subset, kind)
            parts.append((docs, words))
        if len(parts) == 1:
            return parts[0][1]
        return _merge(parts, len(texts), self)

    def words(self, text: str, lang: str | None = None) -> list[str]:
        """The words of one text (for tests and inspection)."""
        return self.split([text], [lang]).strings(0)

    def _kinds(self, texts: pa.Array, langs: pa.Array | pa.ChunkedArray | Sequence[str | None] | None) -> np.ndarray:
        n = len(texts)
        if langs is None:
            langs = pa.nulls(n, pa.string())
        elif not isinstance(langs, (pa.Array, pa.ChunkedArray)):
            langs = pa.array(list(langs), pa.string())
        if len(langs) != n:
            msg = f"{len(langs)} languages for {n} texts"
            raise ValueError(msg)
        encoded = pc.dictionary_encode(langs.cast(pa.string()))
        encoded = combined(encoded)
        by_code = [(_segmenter_of_code(code) if code else None) or "" for code in encoded.dictionary.to_pylist()]
        indices = encoded.indices.fill_null(len(by_code)).to_numpy(zero_copy_only=False)
        kinds = np.array([*by_code, ""], dtype=object)[indices]
        unknown = np.flatnonzero(kinds == "")  # no language, or one we do not know: the text's script decides
        if len(unknown):
            # `segmenter_of`'s first test for the whole batch at once, in C: most texts have no unspaced letter
            heads = pc.utf8_slice_codeunits(texts.take(pa.array(unknown)), 0, _SCRIPT_SAMPLE)
            maybe = pc.match_substring_regex(heads, _ANY_UNSPACED_LETTER.pattern).fill_null(False)
            maybe = maybe.to_numpy(zero_copy_only=False)
            kinds[unknown[~maybe]] = SPACES
            for i in unknown[maybe].tolist():
                kinds[i] = segmenter_of(None, texts[i].as_py())
        return kinds.astype(str)

    def _segment(self, texts: pa.Array, kind: str) -> Words:
        """Words of documents of one segmented language, piece by piece (split at whitespace, which is
        never a word: FineWeb-2's `strip_strings`)."""
        segment = _LOADERS[kind]()
        letters = _SCRIPT_LETTERS[kind]
        if self._segmented_chars > self.max_segmented_chars:
            self.clear_segmented()
        memo = self._segmented.setdefault(kind, {})
        known = memo.get
        ids: list[int] = []
        ends = np.zeros(len(texts) + 1, np.int64)
        for doc, text in enumerate(texts.to_pylist(), start=1):
            for piece in text.split():
                piece_ids = known(piece)
                if piece_ids is None:
                    if letters.search(piece) is None:  # memoised by the English rules
                        piece_ids = self._ids_of_piece(piece)
                    else:
                        piece_ids = memo[piece] = self._ids_of_segments(piece, segment)
                        self._segmented_chars += len(piece)
                ids.extend(piece_ids)
            ends[doc] = len(ids)
        return Words(np.array(ids, np.int64), ends, self)

    def _ids_of_segments(self, piece: str, segment: Segment) -> tuple[int, ...]:
        """Ids of the segmenter's words of a piece."""
        # substrings of a whitespace-free piece: no whitespace token to drop; full-width digits and letters as their
        # ASCII twins (jieba cut `２０２３年` into five words, four of them no letter: a notice was too_few_alpha_words)
        words = segment(composed(piece).translate(HALF_WIDTH))
        get = self._word_ids.get
        ids = list(map(get, words))
        if None in ids:  # new words (a word new in this piece may occur twice in it: look it up again)
            for k, i in enumerate(ids):
                if i is None:
                    ids[k] = known if (known := get(words[k])) is not None else self._add_word(words[k])
        return tuple(ids)


def _merge(parts: list[tuple[np.ndarray, Words]], n_docs: int, splitter: WordSplitter) -> Words:
    """Words of subsets of the documents (same vocabulary) put back in document order."""
    counts = np.zeros(n_docs, np.int64)
    for docs, words in parts:
        counts[docs] = words.counts
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    ids = np.empty(int(offsets[-1]), np.int64)
    for docs, words in parts:
        shift = np.repeat(offsets[docs] - words.offsets[:-1], words.counts)
        ids[np.arange(len(words.ids)) + shift] = words.ids
    return Words(ids, offsets, splitter)


LANGUAGE_WORDS = LanguageWords()
"""The process-wide splitter by language (its memo is shared by all stages in a worker; not thread-safe)."""


def split(texts: pa.Array | pa.ChunkedArray | Sequence[str | None],
          langs: pa.Array | pa.ChunkedArray | Sequence[str | None] | None = None) -> Words:
    """Words of a batch of documents by language, with the process-wide splitter."""
    return LANGUAGE_WORDS.split(texts, langs)


def segmenters(texts: pa.Array | pa.ChunkedArray | Sequence[str | None],
               langs: pa.Array | pa.ChunkedArray | Sequence[str | None] | None = None) -> np.ndarray:
    """The segmenter of every document (a key of `_LOADERS`, or `SPACES`), as `split` chooses it: stages
    that count whitespace words for space-delimited languages count segmented words for the others."""
    if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
        texts = pa.array(texts, pa.large_string())
    return LANGUAGE_WORDS._kinds(as_array(texts), langs)


UNSPACED_MIN_LETTERS, UNSPACED_MIN_SHARE = 20, 0.1  # of a spaced text's letters, for its unspaced ones to count


def with_unspaced_runs(texts: pa.Array, kinds: np.ndarray) -> np.ndarray:
    """`kinds` (`segmenters` of `texts`) with each text of a spaced language whose letters are in good part of a
    script written without spaces (`UNSPACED_MIN_LETTERS` of them, `UNSPACED_MIN_SHARE` of its letters) given that
    script's segmenter (`SEGMENTED_SCRIPTS`; by the script of most such letters): deduplication segmented a
    Chinese-English page by the script of most of its letters, and two copies a sentence apart, one labelled `en`
    and one `zh`, shared no shingle. A few such letters (an English page's footer `转载自 GitHub`) leave it spaced:
    the segmenters split English contractions their own way."""
    spaced = np.flatnonzero(kinds == SPACES)
    if not len(spaced):
        return kinds
    has = pc.match_substring_regex(texts.take(pa.array(spaced)), _ANY_UNSPACED_LETTER.pattern)
    out = np.array(kinds, dtype=object)
    for i in spaced[has.to_numpy(zero_copy_only=False)].tolist():
        sample = (texts[i].as_py() or "")[:_SCRIPT_SAMPLE]
        letters = "".join(_ANY_UNSPACED_LETTER.findall(sample))
        if len(letters) >= max(UNSPACED_MIN_LETTERS, UNSPACED_MIN_SHARE * sum(c.isalpha() for c in sample)):
            out[i] = SEGMENTED_SCRIPTS.get(script_of_text(letters) or "", SPACES)
    return out.astype(str)


def segment(text: str, lang: str | None = None) -> list[str]:
    """The words of one text in language `lang` (None: by its script), for tests and inspection."""
    return LANGUAGE_WORDS.words(text, lang)


def chars_per_word(texts: Sequence[str], lang: str | None) -> float:
    """Characters (spaces included) per word of `texts` in language `lang`, words as the filters split them
    (punctuation marks not counted as words); 0.0 for text without words. What makes a length in characters
    (FineWeb's short line) mean the same in every language."""
    lines = pa.array([t for t in texts if t and t.strip()], pa.large_string())
    if not len(lines):
        return 0.0
    words = LANGUAGE_WORDS.split(lines, pa.array([lang] * len(lines), pa.string()))
    wordlike = int((1 - words.feature("symbol")).sum())
    return float(pc.sum(pc.utf8_length(lines)).as_py()) / wordlike if wordlike else 0.0
