"""The English word splitter: words as datatrove's English word tokenizer (spaCy) gives them.

Why a word splitter of our own: datatrove 0.10.1 (the reference implementation of the Gopher, C4 and
FineWeb heuristics that FineWeb was built with) splits English text into words with
`spacy.blank("en")`, and every word-based score (word counts, mean word length, stop words, n-gram
repetition, FineWeb's list ratio, C4's sentence count) depends on exactly where it splits: "don't"
is two words ("do", "n't"), "U.S." one, "e-mail" three. spaCy is a heavy dependency and slow per
document, so `WordSplitter` re-implements the behaviour of spaCy 3.8's English tokenizer: split on
whitespace, then strip prefixes and suffixes and split infixes with rules of the same shape
(punctuation, quotes, currency and units after numbers, "." after lower-case letters or two
capitals, hyphens between letters, ...), with English special cases (contractions, abbreviations,
times, emoticons) and URLs kept whole. The rules are written here from spaCy's documented behaviour;
`benchmarks/quality_agreement.py` measures how often the resulting keep/drop decisions agree with
datatrove's. Languages written without spaces get their own segmenters in `curation.lang.words`,
which returns the same `Words`.

Why it is fast: the batch is split on whitespace and the pieces dictionary-encoded by Arrow, so the
Python rules run once per *distinct* piece (and are memoised across batches); words become integer
ids into a vocabulary whose per-word features (length, symbol-only, has a letter, sentence role) are
numpy arrays, so per-document sums are numpy segment sums (`curation.text.columns`) and n-gram
repetition is a few sorts (`curation.text.repetition`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.text.columns import as_array, split_whitespace

# Unicode's Sentence_Terminal characters (".", "!", "?", "。", "।", ...): FineWeb's line-end test
# and the sentence boundaries of C4's sentence count (datatrove's TERMINAL_PUNCTUATION; spaCy's
# sentencizer uses nearly the same list).
SENTENCE_TERMINALS = (
    "!.?\u0589\u061d\u061e\u061f\u06d4\u0700\u0701\u0702\u07f9\u0837\u0839\u083d\u083e\u0964\u0965"
    "\u104a\u104b\u1362\u1367\u1368\u166e\u1735\u1736\u17d4\u17d5\u17d6\u17d9\u17da\u1803\u1809\u1944"
    "\u1945\u1aa8\u1aa9\u1aaa\u1aab\u1b5a\u1b5b\u1b5e\u1b5f\u1b7d\u1b7e\u1c3b\u1c3c\u1c7e\u1c7f\u203c"
    "\u203d\u2047\u2048\u2049\u2e2e\u2e3c\u2e53\u2e54\u3002\ua4ff\ua60e\ua60f\ua6f3\ua6f7\ua876\ua877"
    "\ua8ce\ua8cf\ua92f\ua9c8\ua9c9\uaa5d\uaa5e\uaa5f\uaaf0\uaaf1\uabeb\ufe52\ufe56\ufe57\uff01\uff0e"
    "\uff1f\uff61\U00010a56\U00010a57\U00010f55\U00010f56\U00010f57\U00010f58\U00010f59\U00010f86"
    "\U00010f87\U00010f88\U00010f89\U00011047\U00011048\U000110be\U000110bf\U000110c0\U000110c1"
    "\U00011141\U00011142\U00011143\U000111c5\U000111c6\U000111cd\U000111de\U000111df\U00011238"
    "\U00011239\U0001123b\U0001123c\U000112a9\U0001144b\U0001144c\U000115c2\U000115c3\U000115c9"
    "\U000115ca\U000115cb\U000115cc\U000115cd\U000115ce\U000115cf\U000115d0\U000115d1\U000115d2"
    "\U000115d3\U000115d4\U000115d5\U000115d6\U000115d7\U00011641\U00011642\U0001173c\U0001173d"
    "\U0001173e\U00011944\U00011946\U00011a42\U00011a43\U00011a9b\U00011a9c\U00011c41\U00011c42"
    "\U00011ef7\U00011ef8\U00011f43\U00011f44\U00016a6e\U00016a6f\U00016af5\U00016b37\U00016b38"
    "\U00016b44\U00016e98\U0001bc9f\U0001da88"
)
# Characters a "symbol" word consists of only (Gopher's word count and mean word length skip such
# words): ASCII and CJK punctuation, arrows, control characters, plus the sentence terminals
# (datatrove's PUNCTUATION_SET).
SYMBOL_CHARS = (
    "!/—”:％１〈&(、━\\【#%「」，】；+^]~“《„';’{|∶´[=-`*．（–？！：$～«〉,><》)?）。…@_.\"}►»"
    + "".join(chr(c) for a, b in ((0, 9), (11, 13), (13, 32), (127, 160)) for c in range(a, b))
    + SENTENCE_TERMINALS
)
_SYMBOLS = frozenset(SYMBOL_CHARS)
_SENTENCE_END = frozenset(SENTENCE_TERMINALS)


# ---------------------------------------------------------------------------------------------
# spaCy-English-compatible splitting of one whitespace-free piece
# ---------------------------------------------------------------------------------------------

_PUNCT = "… …… , : ; ! ? ¿ ؟ ¡ ( ) [ ] { } < > _ # * & 。 ？ ！ ， 、 ； ： ～ · । ، ۔ ؛ ٪".split()  # noqa: SIM905
_QUOTES = "' \" ” “ ` ‘ ´ ’ ‚ , „ » « 「 」 『 』 （ ） 〔 〕 【 】 《 》 〈 〉 〈 〉 ⟦ ⟧".split()  # noqa: SIM905
_CURRENCY = "$ £ € ¥ ฿ US$ C$ A$ ₽ ﷼ ₴ ₠ ₡ ₢ ₣ ₤ ₥ ₦ ₧ ₨ ₩ ₪ ₫ ₭ ₮ ₯ ₰ ₱ ₲ ₳ ₵ ₶ ₷ ₸ ₹ ₺ ₻ ₼ ₾ ₿".split()  # noqa: SIM905
_UNITS = (  # noqa: SIM905
    "km km² km³ m m² m³ dm dm² dm³ cm cm² cm³ mm mm² mm³ ha µm nm yd in ft kg g mg µg t lb oz m/s km/h "
    "kmh mph hPa Pa mbar mb MB kb KB gb GB tb TB T G M K % км км² км³ м м² м³ дм дм² дм³ см см² см³ мм "
    "мм² мм³ нм кг г мг м/с км/ч кПа Па мбар Кб КБ кб Мб МБ мб Гб ГБ гб Тб ТБ"
).split()
_HYPHENS = "- – — -- --- —— ~".split()  # noqa: SIM905


# Scripts without case that spaCy counts as letters, lower- and upper-case alike, as whole Unicode
# blocks (so their digits and punctuation count too): Ethiopic, Bengali, Hebrew, Arabic/Persian,
# Sinhala, Devanagari, Kannada, Tamil, Telugu, Hangul, Kana, CJK.
_CASELESS_BLOCKS = [
    (0x1200, 0x137F), (0x0980, 0x09FF), (0x0591, 0x05F4), (0xFB1D, 0xFB4F), (0x0620, 0x064A), (0x066E, 0x06D5),
    (0x06E5, 0x06FF), (0x0750, 0x077F), (0x08A0, 0x08BD), (0xFB50, 0xFBB1), (0xFBD3, 0xFD3D), (0xFD50, 0xFDC7),
    (0xFDF0, 0xFDFB), (0xFE70, 0xFEFC), (0x1EE00, 0x1EEBB), (0x0D80, 0x0DFF), (0x0900, 0x097F), (0x0C80, 0x0CFF),
    (0x0B80, 0x0BFF), (0x0C00, 0x0C7F), (0xAC00, 0xD7AF), (0x1100, 0x11FF), (0x3040, 0x30FF), (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF), (0x20000, 0x2EBEF), (0x2E80, 0x2FDF), (0x2FF0, 0x303F), (0x31C0, 0x31EF), (0x3200, 0x33FF),
    (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0x1F200, 0x1F2FF), (0x2F800, 0x2FA1F),
]


@lru_cache(maxsize=1)
def _letter_classes() -> tuple[str, str, str, str]:
    """Regex classes (contents, without brackets) of letters, lower-case-like and upper-case-like
    letters (cased letters of every script, plus the caseless blocks above for both cases, as in
    spaCy) and other symbols (Unicode category So: emoji, dingbats, ©, °).

    Unlike spaCy, every other letter (Lo) and combining mark (Mn, Mc) counts as a caseless letter too:
    spaCy's list leaves out Gujarati, Gurmukhi, Oriya, Malayalam, Thaana, Georgian and more, so there a
    word ending in a vowel sign or virama kept its full stop ("છે." one word: the sentence end unseen by
    C4, the stop word "છે" missed by Gopher). The scripts spaCy lists, and English, split as before."""
    caseless = {cp for a, b in _CASELESS_BLOCKS for cp in range(a, b + 1)}
    lower: list[int] = []
    upper: list[int] = []
    icons: list[int] = []
    for cp in range(0x80, 0x2FFFF):
        cat = unicodedata.category(chr(cp))
        if cat == "Ll":
            lower.append(cp)
        elif cat in ("Lu", "Lt"):
            upper.append(cp)
        elif cat == "So":
            icons.append(cp)
        elif cat in ("Lo", "Mn", "Mc"):
            caseless.add(cp)
    return (
        _ranges(sorted({*lower, *upper, *caseless}), "A-Za-z"),
        _ranges(sorted({*lower, *caseless}), "a-z"),
        _ranges(sorted({*upper, *caseless}), "A-Z"),
        _ranges(icons),
    )


def _ranges(cps: list[int], ascii_part: str = "") -> str:
    out = [ascii_part]
    start = prev = None
    for cp in cps:
        if prev is not None and cp == prev + 1:
            prev = cp
            continue
        if start is not None:
            out.append(_range(start, prev))
        start = prev = cp
    if start is not None:
        out.append(_range(start, prev))
    return "".join(out)


def _range(a: int, b: int) -> str:
    return re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"


def _alternation(pieces: Iterable[str]) -> str:
    return "|".join(pieces)


def _escape_all(items: Iterable[str]) -> list[str]:
    return [re.escape(i) for i in items]


@lru_cache(maxsize=1)
def _rules() -> tuple[re.Pattern, re.Pattern, re.Pattern, re.Pattern, re.Pattern]:
    """Prefix, suffix, infix and URL patterns shaped like spaCy 3.8's English defaults.

    As in spaCy, a prefix is the first alternative matching at the start, a suffix the leftmost
    match that runs to the end, and infixes are all non-overlapping matches inside.
    """
    a, al, au, icons = _letter_classes()
    q = "".join(re.escape(c) for c in _QUOTES)
    p = "".join(re.escape(c) for c in "".join(_PUNCT))
    ellipses = [r"\.\.+", "…"]
    icon = [f"[{icons}]"]
    prefixes = [
        "§", "%", "=", "—", "–", r"\+(?![0-9])", *_escape_all(_PUNCT), *ellipses, *_escape_all(_QUOTES),
        *_escape_all(_CURRENCY), *icon,
    ]
    suffixes = (
        _escape_all(_PUNCT) + ellipses + _escape_all(_QUOTES) + icon + ["'s", "'S", "’s", "’S", "—", "–"]
        + [
            r"(?<=[0-9])\+",
            r"(?<=°[FfCcKk])\.",
            r"(?<=[0-9])(?:" + _alternation(_escape_all(_CURRENCY)) + ")",
            r"(?<=[0-9])(?:" + _alternation(_escape_all(_UNITS)) + ")",
            # spaCy's class here also holds "|", "(", "?", ":" and ")" (an artefact of how it is
            # assembled), so "." after them is a suffix too.
            rf"(?<=[0-9{al}%²\-\+{p}|(?:{q})])\.",
            rf"(?<=[{au}][{au}])\.",
        ]
    )
    infixes = ellipses + icon + [
        r"(?<=[0-9])[+\-\*^](?=[0-9-])",
        rf"(?<=[{al}{q}])\.(?=[{au}{q}])",
        rf"(?<=[{a}]),(?=[{a}])",
        rf"(?<=[{a}0-9])(?:{_alternation(_escape_all(_HYPHENS))})(?=[{a}])",
        rf"(?<=[{a}0-9])[:<>=/](?=[{a}])",
    ]
    url = (
        r"^(?:[\w\+\-\.]{2,}://)?(?:\S+(?::\S*)?@)?"
        r"(?:(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}"
        r"(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))"
        r"|(?:(?:[A-Za-z0-9\u00a1-\uffff][A-Za-z0-9\u00a1-\uffff_-]{0,62})?[A-Za-z0-9\u00a1-\uffff]\.)+"
        rf"(?:[{al}]{{2,63}}))(?::\d{{2,5}})?(?:[/?#]\S*)?$"
    )
    # an infix needs one of these characters; most pieces have none, and a plain search is cheap
    infix_trigger = "[" + re.escape(".…+-*^,~:<>=/" + "".join(_HYPHENS)) + icons + "]"
    return (
        re.compile(_alternation("^" + x for x in prefixes)),
        re.compile(_alternation(x + "$" for x in suffixes)),
        re.compile(_alternation(infixes)),
        re.compile(url),
        re.compile(infix_trigger),
    )


def _cased(word: str) -> tuple[str, str]:
    return word, word.title()


@lru_cache(maxsize=1)
def _special_cases() -> dict[str, tuple[str, ...]]:
    """Pieces spaCy's English tokenizer splits (or keeps) as a unit: contractions, abbreviations,
    times, emoticons. Each entry maps the piece to its words; the words join back to the piece."""
    special: dict[str, tuple[str, ...]] = {}

    def add(*parts: str) -> None:
        special["".join(parts)] = parts

    for w in _cased("i"):
        add(w, "'m"), add(w, "m"), add(w, "'m", "a"), add(w, "m", "a")
    for pron in ("i", "you", "he", "she", "it", "we", "they"):
        for w in _cased(pron):
            for apos in ("'", ""):
                for c in ("ll", "d"):
                    add(w, apos + c), add(w, apos + c, apos + "ve")
    for pron, ending in [*((p, "ve") for p in ("i", "you", "we", "they")),
                         *((p, "re") for p in ("you", "we", "they")),
                         *((p, "s") for p in ("he", "she", "it"))]:
        for w in _cased(pron):
            add(w, "'" + ending), add(w, ending)
    for word, number in [("who", None), ("what", None), ("when", None), ("where", None), ("why", None),
                         ("how", None), ("there", None), ("that", 1), ("this", 1), ("these", 2), ("those", 2)]:
        for w in _cased(word):
            if number != 2:
                add(w, "'s")
            for apos in ("'", ""):
                for c in ("ll", "d"):
                    add(w, apos + c), add(w, apos + c, apos + "ve")
                if number != 1:
                    add(w, apos + "re"), add(w, apos + "ve")
    for verb in ("ca", "could", "do", "does", "did", "had", "may", "might", "must", "need", "ought", "sha",
                 "should", "wo", "would"):
        for w in _cased(verb):
            add(w, "n't"), add(w, "nt"), add(w, "n't", "'ve"), add(w, "nt", "ve")
    for verb in ("could", "might", "must", "should", "would"):
        for w in _cased(verb):
            add(w, "'ve"), add(w, "ve")
    for verb in ("ai", "are", "is", "was", "were", "have", "has", "dare"):
        for w in _cased(verb):
            add(w, "n't"), add(w, "nt")
    for word in ("doin", "goin", "nothin", "nuthin", "ol", "somethin"):
        for w in _cased(word):
            add(w), add(w + "'")
    for word in ("em", "ll", "nuff"):
        add(word), add("'" + word)
    for hour in range(1, 13):
        for period in ("a.m.", "am", "p.m.", "pm"):
            add(str(hour), period)
    for parts in [("y'", "all"), ("y", "all"), ("how", "'d", "'y"), ("How", "'d", "'y"), ("not", "'ve"),
                  ("not", "ve"), ("Not", "'ve"), ("Not", "ve"), ("can", "not"), ("Can", "not"), ("gon", "na"),
                  ("Gon", "na"), ("got", "ta"), ("Got", "ta"), ("let", "'s"), ("Let", "'s"), ("c'm", "on"),
                  ("C'm", "on")]:
        add(*parts)
    whole = (
        "'S 's \u2018S \u2018s and/or w/o 're 'Cause 'cause 'cos 'Cos 'coz 'Coz 'cuz 'Cuz 'bout ma'am Ma'am "
        "o'clock O'clock lovin' Lovin' lovin Lovin havin' Havin' havin Havin doin' Doin' goin' Goin' "
        # abbreviations: months, US states, titles, Latin
        "Mt. Ak. Ala. Apr. Ariz. Ark. Aug. Calif. Colo. Conn. Dec. Del. Feb. Fla. Ga. Ia. Id. Ill. Ind. Jan. "
        "Jul. Jun. Kan. Kans. Ky. La. Mar. Mass. Mich. Minn. Miss. N.C. N.D. N.H. N.J. N.M. N.Y. Neb. Nebr. "
        "Nev. Nov. Oct. Okla. Ore. Pa. S.C. Sep. Sept. Tenn. Va. Wash. Wis. "
        "'d a.m. Adm. Bros. co. Co. Corp. D.C. Dr. e.g. E.g. E.G. Gen. Gov. i.e. I.e. I.E. Inc. Jr. Ltd. Md. "
        "Messrs. Mo. Mont. Mr. Mrs. Ms. p.m. Ph.D. Prof. Rep. Rev. Sen. St. vs. v.s. "
        # language-independent ones
        "' '' C++ \\t \\n \\\") "
        + " ".join(f"{c}." for c in "abcdefghijklmnopqrstuvwxyzäöü")
        + " :) :-) :)) :-)) (: (-: =) (= :] :-] [: =] 8) 8-) ;) ;-) (; (-; :( :-( :(( ): )-: =( >:( :') :'( :/ "
        ":-/ :-> ;_; "
        "=/ :| :-| :P :-P :p :-p :O :-O :o :-o :* :-* :3 :> :D :-D ;D =D xD XD 8D ^_^ ^^ >.< -_- o_o o_O O_o "
        "O_O o.O O.o o.o 0_o <3 <33 </3 ¯\\(ツ)/¯"
    )
    for word in whole.split():
        add(word)
    for unit in "cfkCFK":
        add("°", unit, ".")
    for word in ("Ill", "ill", "Its", "its", "Hell", "hell", "Shell", "shell", "Shed", "shed", "were", "Were",
                 "Well", "well", "Whore", "whore"):
        special.pop(word, None)
    for key, parts in list(special.items()):  # every apostrophe form also with the typographic one
        if "'" in key:
            special[key.replace("'", "’")] = tuple(x.replace("'", "’") for x in parts)
    return special


# Characters that are split off the end of a piece whatever precedes them (spaCy's punctuation and
# quote suffixes), for the fast path of `split_piece`.
_ALWAYS_SUFFIX = frozenset(",;:!?)]}\"'”“`‘´’»«")


@lru_cache(maxsize=1)
def _special_spans() -> tuple[dict[tuple[str, ...], tuple[str, ...]], int]:
    """Special cases that the affix rules would cut into several words (":)", "z.", "''"), by those
    words: spaCy finds such runs of words after splitting and puts the special case back."""
    spans = {}
    for key, parts in _special_cases().items():
        cut = _split_affixes(key, {})
        if len(cut) > 1:
            spans[cut] = parts
    return spans, max((len(k) for k in spans), default=0)


def split_piece(piece: str) -> tuple[str, ...]:
    """The words of one whitespace-free piece, as spaCy 3.8's English tokenizer would give them."""
    if not piece:
        return ()
    special = _special_cases()
    if piece in special:
        return special[piece]
    if piece.isalpha():  # no prefix, suffix or infix rule applies to letters only
        return (piece,)
    last = piece[-1]
    if last in _ALWAYS_SUFFIX and piece[:-1].isalpha():  # "word," "word!": the commonest shape
        core = piece[:-1]
        return (*special.get(core, (core,)), last)
    words = _split_affixes(piece, special)
    if len(words) > 1:
        spans, longest = _special_spans()
        i, merged = 0, []
        while i < len(words):
            for size in range(min(longest, len(words) - i), 1, -1):
                parts = spans.get(words[i:i + size])
                if parts is not None:
                    merged.extend(parts)
                    i += size
                    break
            else:
                merged.append(words[i])
                i += 1
        words = tuple(merged)
    return words


def _suffix_length(suffix_re: re.Pattern, s: str) -> int:
    """Length of the suffix of `s`: the leftmost match that runs to the end. Suffixes are at most 4
    characters except runs of dots, so only the tail is searched (look-behinds still see before it)."""
    if not s:
        return 0
    tail = max(5, len(s) - len(s.rstrip(".")) + 1)
    m = suffix_re.search(s, max(0, len(s) - tail))
    return m.end() - m.start() if m else 0


def _split_affixes(piece: str, special: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    prefix_re, suffix_re, infix_re, url_re, infix_trigger = _rules()
    prefixes: list[str] = []
    suffixes: list[str] = []
    s = piece
    last = -1
    while s and len(s) != last:
        if s in special:
            break
        last = len(s)
        m = prefix_re.match(s)
        pre = m.end() if m else 0
        if pre and s[pre:] in special:
            prefixes.append(s[:pre])
            s = s[pre:]
            break
        suf = _suffix_length(suffix_re, s[pre:])
        if suf and s[:-suf] and s[:-suf] in special:
            suffixes.append(s[-suf:])
            s = s[:-suf]
            break
        if pre and suf and pre + suf <= len(s):
            prefixes.append(s[:pre])
            suffixes.append(s[-suf:])
            s = s[pre:-suf]
        elif pre:
            prefixes.append(s[:pre])
            s = s[pre:]
        elif suf:
            suffixes.append(s[-suf:])
            s = s[:-suf]
        if s in special:
            break
    words = prefixes
    if s:
        if s in special:
            words.extend(special[s])
        elif ("." in s and url_re.match(s)) or not infix_trigger.search(s):
            words.append(s)
        else:
            start = 0
            for m in infix_re.finditer(s):
                if m.start() == 0:  # an infix at the very start stays with what follows
                    continue
                if m.start() != start:
                    words.append(s[start:m.start()])
                if m.end() != m.start():
                    words.append(m.group())
                start = m.end()
            if start < len(s):
                words.append(s[start:])
    words.extend(reversed(suffixes))
    return tuple(w for w in words if w.strip())


# ---------------------------------------------------------------------------------------------
# Batches of documents as word ids
# ---------------------------------------------------------------------------------------------


def _sentence_role(word: str) -> int:
    """2: a sentence terminal ("." "!" "?"), 1: other punctuation, 0: anything else (spaCy's
    sentencizer starts a sentence at the first role-0 word after a role-2 one), 3: a word that ends with a
    terminal spaCy's rules leave attached (Ethiopic "ነው።", Armenian "է" with U+0589: their blocks count as letters),
    which ends its sentence as a role-2 word after it would. ASCII terminals stay inside "U.S." as in spaCy."""
    if word in _SENTENCE_END:
        return 2
    if all(unicodedata.category(c)[0] == "P" for c in word):
        return 1
    return 3 if word[-1] in _SENTENCE_END and not word[-1].isascii() else 0


@dataclass
class Words:
    """The words of a batch of documents: ids into the splitter's vocabulary, document by document."""

    ids: np.ndarray  # int64, all documents' words in order
    offsets: np.ndarray  # int64, n_docs + 1: document i's words are ids[offsets[i]:offsets[i + 1]]
    splitter: WordSplitter

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def doc_index(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.offsets) - 1), self.counts)

    def feature(self, name: str) -> np.ndarray:
        """A feature of every word (see `WordSplitter.features`), as int64."""
        return self.splitter.features(name)[self.ids]

    def strings(self, doc: int) -> list[str]:
        vocab = self.splitter.vocab
        return [vocab[i] for i in self.ids[self.offsets[doc]:self.offsets[doc + 1]]]


class WordSplitter:
    """Splits documents into words as datatrove's English word tokenizer (spaCy) does; see module doc.

    Pieces and words are memoised (about 250 bytes per distinct piece); the memo is cleared before
    a batch once it holds more than `max_pieces` pieces (~120 MB at the default), so ids are only
    meaningful within one `split` call's result.
    """

    def __init__(self, max_pieces: int = 500_000) -> None:
        self.max_pieces = max_pieces
        self.clear()

    def clear(self) -> None:
        """Forget the memoised pieces and words (ids of earlier results become meaningless)."""
        self._piece_ids: dict[str, tuple[int, ...]] = {}
        self._word_ids: dict[str, int] = {}
        self.vocab: list[str] = []
        self._features: dict[str, list] = {"length": [], "symbol": [], "alpha": [], "role": []}
        self._arrays: dict[str, np.ndarray] = {}

    def word_id(self, word: str) -> int | None:
        """The id of `word` if it has been seen since the memo was last cleared."""
        return self._word_ids.get(word)

    def features(self, name: str) -> np.ndarray:
        """Per-vocabulary-word feature: `length` (characters), `symbol` (only punctuation/symbol
        characters), `alpha` (has a letter), `role` (sentence role, see `_sentence_role`)."""
        values = self._features[name]
        array = self._arrays.get(name)
        if array is None or len(array) != len(values):
            array = self._arrays[name] = np.array(values, dtype=np.int64)
        return array

    def _add_word(self, word: str) -> int:
        i = len(self.vocab)
        self._word_ids[word] = i
        self.vocab.append(word)
        f = self._features
        f["length"].append(len(word))
        f["symbol"].append(all(c in _SYMBOLS for c in word))
        f["alpha"].append(any(c.isalpha() for c in word))
        f["role"].append(_sentence_role(word))
        return i

    def _ids_of_piece(self, piece: str) -> tuple[int, ...]:
        ids = self._piece_ids.get(piece)
        if ids is None:
            get = self._word_ids.get
            ids = tuple(get(w) if w in self._word_ids else self._add_word(w) for w in split_piece(composed(piece)))
            self._piece_ids[piece] = ids
        return ids

    def split(self, texts: pa.Array | pa.ChunkedArray | Sequence[str | None]) -> Words:
        """Words of every document (null counts as empty)."""
        if len(self._piece_ids) > self.max_pieces:
            self.clear()
        if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
            texts = pa.array(texts, pa.large_string())
        texts = as_array(texts)
        pieces = split_whitespace(texts)
        n_pieces = pc.list_value_length(pieces).to_numpy(zero_copy_only=False).astype(np.int64)
        encoded = pc.dictionary_encode(pieces.flatten())
        piece_ids = [self._ids_of_piece(p) for p in encoded.dictionary.to_pylist()]
        return _expand(piece_ids, encoded.indices.to_numpy(zero_copy_only=False), n_pieces, self)

    def words(self, text: str) -> list[str]:
        """The words of one text (for tests and inspection)."""
        return self.split([text]).strings(0)


def _expand(piece_ids: list[tuple[int, ...]], indices: np.ndarray, n_pieces: np.ndarray,
            splitter: WordSplitter) -> Words:
    """Replace every piece by its words, columnar: gather each distinct piece's slice of word ids."""
    per_piece = np.fromiter((len(t) for t in piece_ids), np.int64, count=len(piece_ids))
    flat = np.fromiter((i for t in piece_ids for i in t), np.int64, count=int(per_piece.sum()))
    starts = np.concatenate([[0], np.cumsum(per_piece)])[:-1]
    counts = per_piece[indices]
    total = int(counts.sum())
    before = np.cumsum(counts) - counts
    positions = np.arange(total) - np.repeat(before, counts) + np.repeat(starts[indices], counts)
    ids = flat[positions]
    piece_ends = np.concatenate([[0], np.cumsum(counts)])
    offsets = piece_ends[np.concatenate([[0], np.cumsum(n_pieces)])]
    return Words(ids, offsets.astype(np.int64), splitter)


def composed(piece: str) -> str:
    """`piece` in Unicode's composed form (NFC). Text in decomposed form (NFD: macOS, Vietnamese typed with
    combining tone marks, Hangul as jamo) has the same words as its composed twin, so every word-based rule,
    stop and flagged words included, judges the two alike."""
    return piece if piece.isascii() or unicodedata.is_normalized("NFC", piece) else unicodedata.normalize("NFC", piece)


WORDS = WordSplitter()
"""The process-wide splitter (its memo is shared by all stages in a worker; not thread-safe)."""


def warm_up() -> None:
    """Build the splitting rules now (about half a second, once per process) rather than in the
    first batch: stages call this from `setup`."""
    _rules()
    _special_spans()
