"""Language identification: fastText (lid.176) first, a lingua second opinion where fastText is known weak.

Why two models. fastText's lid.176 (Joulin et al. 2016; the model datatrove's LanguageFilter, CCNet
and FineWeb use) labels ~30k short texts/s per core, but on the 75-language Leipzig benchmark it
reaches only ~0.89 macro accuracy: it cannot tell close languages apart (Bosnian/Croatian/Serbian,
Malay/Indonesian, Bokmål/Nynorsk/Danish, Afrikaans/Dutch, Czech/Slovak) and is weak on languages with
little training data (Somali, Yoruba). lingua (github.com/pemistahl/lingua-py, n-gram models trained
on the Leipzig corpora plus character rules) reaches ~0.95 but labels ~700 sentences/s per core with
all its languages (and holds ~1.3 GB of models). We run fastText on everything and ask lingua only where
fastText is unsure or names a language with close neighbours (~40% of benchmark sentences, fewer on long
web documents), each time on a few candidate languages. On the benchmark: 0.9596 macro accuracy over the
67 languages lid.176 knows (0.9594 on the even-numbered sentences the constants were chosen on, 0.9597 on
the odd-numbered ones held out; fastText alone 0.891, lingua alone 0.949) at ~6-8k sentences/s per
core, ~1/4 of fastText's rate. On held-out text in 124 languages (the UDHR's translations,
`benchmarks/langid_accuracy.py --udhr`): 0.832 of 12-paragraph documents (fastText alone 0.749); 1.000 in
the 67 languages lingua models (0.846), 0.634 in the 57 others (0.634: no language fastText gets right is lost
to one it cannot rank, 4. below). Text is composed (NFC) first: decomposed Vietnamese read as Tsonga, Korean
jamo as Chinese.
Bosnian and Malay sentences stay weak (0.30 and 0.27; lingua alone: 0.36 and 0.32): lingua calls more than
half of the Bosnian sentences Croatian, fastText's Latin-script `sr` takes another quarter, and one sentence
seldom holds a word that tells the standards apart (`curation.lang.close_words`, 6. below). Documents do: with
those words, 7 of the benchmark's 8 Bosnian 12-sentence documents are labelled `bs` (4 without them), and the
UDHR's Serbian in Latin script is `sr` in all of its 4 (1 without). The benchmark's Malay is another matter: its
sentences write Indonesian's `karena`, `bahwa`, `yaitu` more often than Malay's `kerana`, `bahawa`, `iaitu`
(15 such words to 5, where the Indonesian sentences hold 24 to 0; blog slang, `merilis`, `Diposting oleh`), and
all 8 of its documents are labelled `id`.

1. Script first. The dominant Unicode script of the text's letters (counted columnar with numpy) is
   checked against the scripts of the model's labels. Text in a script the model has no language for
   (Cherokee, Tifinagh, N'Ko, Ol Chiki...) or without letters comes out as `unknown` (score 0) rather
   than a confident wrong label: fastText always answers with one of its labels.
2. fastText's top-10 labels and probabilities for the text (newlines replaced by spaces).
3. Group route. When fastText's top label belongs to a group of close languages (`CLOSE_GROUPS`, from
   the DSL shared tasks and the Nordic DSL data set, see there), fastText gives the group at least
   `GROUP_MASS_MIN` in total and its top probability is below `GROUP_SURE_ABOVE`, lingua restricted to
   the group's languages it models in the text's script (high-accuracy mode) re-splits their share in a
   log-linear pool, p(l) ~ p_lingua(l) * p_fasttext(l) ** `GROUP_FASTTEXT_EXPONENT`, scaled so that the
   group's total stays fastText's. Group members lingua does not model in that script keep fastText's
   probability: lingua's Serbian is Cyrillic, and without this rule every Latin-script Serbian text would
   become Croatian or Bosnian (the benchmark, whose Serbian is Cyrillic, would not notice; it prints the
   transliterated case).
4. Unsure route. Otherwise, when fastText's top probability is below `UNSURE_BELOW`, lingua in
   low-accuracy mode (trigram models, 4-5x faster) weighs the languages it models among fastText's top
   10 (from `NAMED_MIN_P`), plus the languages fastText cannot rank: those it has no label for (Zulu,
   Xhosa, Shona...) and those its label was trained on under `RARE_LABEL_MAX` lines of (read from the
   model: Somali, Yoruba, Swahili, Irish for lid.176). The opinions are pooled linearly (Stone 1961),
   p(l) = w * p_fasttext(l) + (1 - w) * p_lingua(l) with w = `UNSURE_FASTTEXT_WEIGHT`; labels lingua does
   not weigh keep fastText's probability. When fastText's top label is a language lingua does not model
   (Galician, Occitan, Waray, Javanese...), only the languages fastText cannot rank may gain from lingua,
   however unsure fastText is, so Galician is not relabelled Portuguese nor Javanese Indonesian: lingua
   cannot weigh the top label, so its opinion over the others says nothing against it. This holds whatever
   fastText's top probability: the benchmark's 75 languages are all lingua's, so there an unmodelled top
   label is always wrong, but on the UDHR's translations (57 of 124 languages unmodelled) letting lingua
   overrule a weak unmodelled label turns Javanese, Sundanese, Interlingua, Venetian, Waray... into their
   modelled neighbours. A language fastText cannot rank that wins this way over a text of `OWN_WORDS_MIN`
   words or more must also show its own words: its stop words (FineWeb-2's) at least as frequent in the text as
   those of fastText's top label, and at least `OWN_SHARE_OF_TYPICAL` of their share of real text of that
   language (`stop_word_share`, measured on the Leipzig sentences), else fastText's answer stands. On text in a
   language neither model knows, lingua's n-grams favour the models it trained on least text: UDHR documents in
   Upper Sorbian, Haitian,
   Quechua and Venetian came out Swahili, Shona or Sesotho, Scottish Gaelic Irish (documents in the 57 languages
   lingua does not model: 0.591 -> 0.634), and Walloon, Igbo and Wolof, which no model here names, Sesotho or
   Tswana at 0.6, over their thresholds. Single sentences are too short for stop words to tell (the benchmark's
   sentences are unchanged: with the check from 25 words, macro accuracy fell 0.0007).
5. Finalists. On texts under 120 characters the unsure route's two leaders, when the runner-up has at
   least `FINALIST_RATIO_MIN` of the leader's share, are re-judged by lingua's high-accuracy mode (1- to
   5-grams; from 120 characters on lingua uses trigrams only, whatever the mode) and split their share.
   Over the whole script that mode would cost ~2 ms a sentence; over two languages ~0.13 ms. In the group
   route, texts of 120 characters or more are likewise cut into pieces under 120 characters whose lingua
   likelihoods are multiplied, so that the group is judged on 1- to 5-grams too.
6. Close standards. In both routes, where the pooled leader is Bosnian, Croatian or Serbian, Malay or
   Indonesian, or Bokmål or Nynorsk, the words that tell these standards apart (`curation.lang.close_words`:
   `tisuća`/`hiljada`, ijekavian `vrijeme`/ekavian `vreme`, `kerana`/`karena`, `ikke`/`ikkje`...) re-split
   their share: each adds `MARKER_LOG_ODDS` to the log-odds of the languages writing it (naive Bayes, a word
   taken as ten times as frequent in its languages as in the others: the least a Malay or Indonesian word had
   to be to be listed). n-gram models share nearly every n-gram across these standards; the words are what
   differs.
7. The label is the argmax and `lang_score` its pooled probability, but never less than fastText's own
   probability when the label is fastText's: a second opinion that agrees is no evidence against the label
   (lingua splits the id/ms share, so the pooled probability alone would put 21 of 100 clean Indonesian
   sentences that both label `id` under FineWeb-2's Indonesian `min_score`; with this floor ours keeps 79 of
   them, fastText alone 69).
   Without a second opinion, `lang_score` is fastText's top probability.

The constants were chosen on the even-numbered sentences of the benchmark and checked on the odd ones
(`benchmarks/langid_accuracy.py` prints both); they are per route, never per language. The groups
are linguistic choices (see `CLOSE_GROUPS`).

Labels. Output codes are ISO 639-1 where one exists, else the model's code (ISO 639-3 or a Wikipedia
code such as `als`, `bar`, `war` for lid.176), the shortest-subtag rule of BCP 47. lid.176's `no`
(trained on no.wikipedia, which is written in Bokmål) is reported as `nb`; its `sh` (Serbo-Croatian) is
spread over bs/hr/sr when the second opinion runs, and kept as `sh` otherwise. Models with labels such as
`__label__eng_Latn` (GlotLID, OpenLID, NLLB's LID) are mapped the same way (`eng_Latn` -> `en`, `zsm_Latn`
-> `ms`) and their script suffix tells which scripts they handle; `und`/`zxx` labels become `unknown`.
Recipes may write any spelling `curation.lang.codes` reads (`chi`, `zh-CN`, `zh_TW`); it reads them as these labels.

Scripts. `lang_script` (ISO 15924) names the script of a language written in two (`curation.lang.codes.
TWO_SCRIPTS`): Chinese (zh, yue, wuu) is `Hans` or `Hant` by OpenCC's character and phrase tables
(`curation.lang.han_script`), or `Hani` where no character tells (either script); Serbian, Bosnian, Uzbek,
Azerbaijani, Kazakh... are their text's dominant script; null for the languages written in one. It is a column
of its own rather than part of `lang` (`zh-Hant`) because everything downstream keys on the language (its
settings, word segmenter, flagged-word list, per-language dedup, mixtures), which Traditional and Simplified
Chinese share; the label with its script (`zh-Hant`) is what `keep`, the drop details and the counts name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator, model_validator

from curation.lang.chinese_varieties import written_cantonese, written_wu
from curation.lang.close_words import group_of, marker_votes
from curation.lang.codes import (
    HAN_COMMON,
    HAN_SCRIPTS,
    TWO_SCRIPTS,
    chinese_alone,
    did_you_mean,
    language_code,
    language_tag,
)
from curation.lang.han_script import HANS, HANT, han_scripts, japanese_and_simplified_forms, to_simplified
from curation.lang.mixed import mixed_languages, paragraph_languages, span_sizes
from curation.lang.scripts import POINTS_RE2, script_ids, script_table
from curation.lang.settings import own_scripts, script_key, settings_for
from curation.stages.base import DocumentFilter, Processed, ReadsFile, first_reason
from curation.text.columns import as_array, code_points, list_offsets, normalized
from curation.text.layout import CODE, TABLE, line_kinds, prose_text


def _codes(text: str) -> list[str]:
    """Compact tables below: whitespace-separated codes."""
    return text.split()


UNKNOWN = "unknown"
AUTO = "auto"  # `min_score`: each language's own threshold (`auto_min_score`)
AUTO_CEILING = 0.65  # the highest `auto` threshold: FineWeb's on lid.176 (see `LangIdParams.min_score`)
EVERY_LANGUAGE = "*"  # `min_score` map key: the languages the map does not name
Score = Annotated[float, Field(ge=0.0, le=1.0)]

# Routing constants (see the module docstring), chosen on the even-numbered sentences of
# benchmarks/langid_accuracy.py (the odd-numbered ones are held out).
GROUP_MASS_MIN = 0.8  # fastText mass on a group of close languages from which lingua decides within it
GROUP_SURE_ABOVE = 0.95  # fastText top probability from which the group route keeps fastText's label (above it,
#                          lingua almost never changes the label: not worth a call)
GROUP_FASTTEXT_EXPONENT = 0.15  # fastText's exponent in the log-linear pool of the group route (lingua's is 1)
UNSURE_BELOW = 0.8  # fastText top probability below which the unsure route asks lingua
UNSURE_FASTTEXT_WEIGHT = 0.4  # fastText's weight in the linear opinion pool of the unsure route
NAMED_MIN_P = 0.01  # fastText probability from which lingua weighs a named language
RARE_LABEL_MAX = 10_000  # training lines of a fastText label below which lingua always weighs that language too
MARKER_LOG_ODDS = math.log(10)  # log-odds one word of `curation.lang.close_words` adds to the languages writing it:
#                                  naive Bayes at the least frequency ratio a word needed to be listed (set, not tuned)
FINALIST_RATIO_MIN = 0.2  # the unsure route's runner-up, relative to its leader, from which the two are re-judged
FINALIST_EXPONENT = 0.0  # the pooled opinion's exponent in that re-judging (0: lingua alone)
PARAGRAPH_LETTERS_MIN = 20  # letters (combining marks included) from which a paragraph's own label counts...
SHORT_PARAGRAPH_SCORE_MIN = 0.9  # ... and the score from which a shorter one's does (`LangId.paragraphs`)
OTHER_LANGUAGE_SCORE_MIN = 0.5  # the score from which a paragraph's label other than its document's counts
FORMS_MIN = 2  # characters of forms only Japanese, or only Simplified Chinese, writes that turn a text's label...
FORMS_SHARE_MIN = 0.02  # ... and their share of its Han characters at least...
KANA_SHARE_MAX = 0.2  # ... to Chinese, when at most this share of its kana and Han letters are kana
# Chinese varieties written in Han characters, which lid.176 tells apart by a few function words: a paragraph of a
# Mandarin page labelled Wu (`小区里路由器太多` at 0.61), or one of a Cantonese post Wu at 0.35, made the page
# "mixed" and dropped where a recipe keeps zh; such a label counts from `SHORT_PARAGRAPH_SCORE_MIN` only (`_neighbours`)
SINITIC = frozenset({"zh", "yue", "wuu", "gan", "hak", "nan", "cdo", "hsn", "cjy", "lzh", "czh", "cpx", "mnp"})
OWN_WORDS_MIN = 40  # words from which a language fastText cannot rank must show its own stop words (`_own_words`)...
OWN_SHARE_OF_TYPICAL = 0.33  # ... at least this share of what they make of real text of it (Leipzig's documents of
#                              12 sentences in those languages show 0.39 of it at least; Walloon as Sesotho: 0.08)
TOP_K = 10  # fastText labels kept per text for pooling: beyond 10 the probabilities are negligible
FASTTEXT_MAX_CHARS = 100_000  # bounds the cost of a pathological document; labels settle long before
LINGUA_MAX_CHARS = 1000  # lingua reads at most this much of a text: cost grows with length, accuracy saturates
UNSURE_MAX_CHARS = 400  # ... and in the unsure route, where it weighs ~20 languages at once
HIGH_ACCURACY_MAX_CHARS = 120  # lingua's high-accuracy mode uses 1- to 5-grams only on texts shorter than this
SCRIPT_MAX_CHARS = 4096  # the dominant script is counted on the first characters of a text
DETECTOR_CACHE = 4096  # lingua detectors kept for per-text candidate sets (~90 us to build, ~0.4 kB each)
_WORD = re.compile(r"\w+")
_UZBEK_APOSTROPHE = re.compile(r"(?<=[oOgG])['’‘`ʼ](?=\w)")  # oʻ and gʻ typed with another apostrophe
_FLOOR = 1e-12  # lingua confidence 0 (ruled out by its character rules) as a log-probability
_FASTTEXT_FLOOR = 1e-3  # added to fastText probabilities in the log pool: below top 10 is not "impossible"


def _softmax(logs: dict[str, float]) -> dict[str, float]:
    top = max(logs.values())
    weights = {c: math.exp(v - top) for c, v in logs.items()}
    total = sum(weights.values())
    return {c: w / total for c, w in weights.items()}


def _agreed(best: str, pooled: float, top: str, top_p: float) -> float:
    """The score of the second opinion's label: where it keeps fastText's label, at least fastText's probability.
    Agreeing is no evidence against the label; the pooled share of a label lingua splits with a close neighbour
    (Indonesian with Malay) would otherwise fail `min_score` on text fastText alone passes."""
    return max(pooled, top_p) if best == top else pooled


def _weigh_words(text: str, pooled: dict[str, float]) -> None:
    """Each word one standard writes and its neighbours do not adds `MARKER_LOG_ODDS` to its languages'
    log-odds, within the pooled leader's group; the group's total share stays the pool's."""
    leader = max(pooled, key=pooled.__getitem__)
    group = group_of(leader)
    if group is None:
        return
    votes = marker_votes(text, group)
    if not any(votes.values()):
        return
    share = sum(pooled.get(c, 0.0) for c in group)
    logs = {c: math.log(pooled.get(c, 0.0) + _FASTTEXT_FLOOR) + MARKER_LOG_ODDS * votes[c] for c in group}
    pooled.update({c: share * p for c, p in _softmax(logs).items()})


def _own_words(text: str, label: str, top: str) -> bool:
    """Whether `label`'s stop words (FineWeb-2's, `curation.lang.settings`) make up at least as much of the text as
    those of fastText's top label and at least `OWN_SHARE_OF_TYPICAL` of what they make of real text of `label`, or
    the text is too short to tell (module docstring, 4.)."""
    words = _WORD.findall(text[:FASTTEXT_MAX_CHARS].lower())
    if len(words) < OWN_WORDS_MIN:
        return True
    share, typical = _stop_share(words, label), settings_for(label)[0].stop_word_share
    return share >= _stop_share(words, top) and (typical is None or share >= OWN_SHARE_OF_TYPICAL * typical)


@cache
def _stop_words(lang: str) -> frozenset[str]:
    settings, fallback = settings_for(lang)
    return frozenset() if fallback else frozenset(w.lower() for w in settings.stop_words)


def _stop_share(words: list[str], lang: str) -> float:
    stops = _stop_words(lang)
    return sum(w in stops for w in words) / len(words) if words and stops else 0.0


def _pieces(text: str, size: int) -> list[str]:
    """`text` cut at spaces into pieces of at most `size` characters (a longer word is its own piece)."""
    pieces: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > size:
            pieces.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        pieces.append(current)
    return pieces


# Groups of close languages that lid.176 confuses; lingua decides within a group. Sources: the DSL
# shared tasks (Zampieri et al. 2014, 2015: bs/hr/sr, bg/mk, cs/sk, id/ms), the Nordic DSL data set
# (Haas & Derczynski 2021: da/nb/nn/sv), Afrikaans as Dutch's daughter language, Slovene next to
# Croatian (lid.176 labels ~8% of Croatian sentences Slovene), Azerbaijani next to Turkish (both Oghuz
# Turkic; lid.176 labels ~5% of Azerbaijani sentences Turkish) and Chinese next to Japanese (lid.176 labels
# ~4% of Chinese sentences, written in Han characters only, Japanese; lingua's rules call text with kana
# Japanese and Han-only text Chinese, so a kanji-only Japanese headline fastText is under
# `GROUP_SURE_ABOVE` sure of becomes `zh`). `sh` is lid.176's Serbo-Croatian label.
CLOSE_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"bs", "hr", "sr", "sl", "sh"}),
    frozenset({"bg", "mk", "sr"}),
    frozenset({"cs", "sk"}),
    frozenset({"id", "ms"}),
    frozenset({"da", "nb", "nn", "sv"}),
    frozenset({"af", "nl"}),
    frozenset({"az", "tr"}),
    frozenset({"ja", "zh"}),
)


def _neighbours(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where `a` and `b` (labels, pairwise) are two languages a paragraph is too short to tell apart, which its
    whole document tells better: close ones (`CLOSE_GROUPS`: an ekavian Serbian paragraph read as Bosnian at 0.63
    made a Serbian article "mixed sr+bs") or Chinese varieties (`SINITIC`: a Mandarin paragraph read as Wu at 0.61).
    """
    together = [np.isin(a, list(group)) & np.isin(b, list(group)) for group in (*CLOSE_GROUPS, SINITIC)]
    return (a != b) & np.logical_or.reduce(together)


# Labels that stand for several output languages (spread evenly when pooling).
STANDS_FOR: dict[str, tuple[str, ...]] = {"sh": ("bs", "hr", "sr")}
# Macrolanguage codes a user may write in `keep`, and what they keep.
KEEP_EXPANDS: dict[str, tuple[str, ...]] = {"no": ("nb", "nn"), "sh": ("bs", "hr", "sr", "sh")}
_HAN_LANGUAGES = [code for code, scripts in TWO_SCRIPTS.items() if scripts == HAN_SCRIPTS]
_OTHER_TWO_SCRIPTS = [code for code, scripts in TWO_SCRIPTS.items() if scripts != HAN_SCRIPTS]
TO_SIMPLIFIED = "to_simplified"  # count key: documents converted from Traditional to Simplified Chinese

# lid.176's labels (fastText's language identification model, CC BY-SA 3.0), in the model's order.
LID176_LABELS = _codes(
    "en ru de fr it ja es ceb tr pt uk eo pl sv nl he zh hu ar ca fi cs fa sr el vi bg ko no mk ro id th hy da "
    "ta hi hr sh be ka te kk war lt gl sk bn eu sl kn ml mr et az ms sq la bs nn ur lv my tt af oc nds ky ast tl "
    "is ia si gu km br ba uz bo pa vo als ne cy jbo fy mn lb ce ug tg sco sa cv jv min io or as new ga mg an ckb "
    "sw bar lmo yi arz mhr azb sah pnb su bpy pms ilo wuu ku ps ie xmf yue gom li mwl kw sd hsb scn gd pam bh "
    "mai vec mt dv wa mzn am qu eml cbk tk rm os vls yo lo lez so myv diq mrj dsb frr ht gn bxr kv sc nah krc "
    "bcl nap gv av rue xal pfl dty hif co lrc vep tyv"
)

# Scripts (ISO 15924) of lid.176 labels not written in Latin script.
_LID176_SCRIPTS: dict[str, tuple[str, ...]] = {
    **{c: ("Cyrl",) for c in _codes("ru uk be bg mk sr kk ky tg tt ba cv ce os sah mn bxr kv mhr mrj myv krc "
                                    "xal av lez rue tyv")},
    **{c: ("Arab",) for c in _codes("ar arz azb ckb fa ps ur ug sd pnb mzn lrc")},
    **{c: ("Deva",) for c in _codes("hi mr ne sa mai bh new dty gom")},
    **{c: ("Hani",) for c in _codes("zh wuu yue")},
    "ja": ("Hani", "Hira", "Kana"), "ko": ("Hang", "Hani"), "he": ("Hebr",), "yi": ("Hebr",), "el": ("Grek",),
    "hy": ("Armn",), "ka": ("Geor",), "xmf": ("Geor",), "bn": ("Beng",), "as": ("Beng",), "bpy": ("Beng",),
    "pa": ("Guru",), "gu": ("Gujr",), "or": ("Orya",), "ta": ("Taml",), "te": ("Telu",), "kn": ("Knda",),
    "ml": ("Mlym",), "si": ("Sinh",), "th": ("Thai",), "lo": ("Laoo",), "bo": ("Tibt",), "my": ("Mymr",),
    "km": ("Khmr",), "am": ("Ethi",), "dv": ("Thaa",),
}
# Scripts of ISO 15924 suffixes that mean several scripts.
_SCRIPT_ALIASES: dict[str, tuple[str, ...]] = {
    "Jpan": ("Hani", "Hira", "Kana"), "Kore": ("Hang", "Hani"), "Hans": ("Hani",), "Hant": ("Hani",),
    "Hrkt": ("Hira", "Kana"),
}

# ISO 639-3 (and 639-2/T) -> ISO 639-1, for models with three-letter labels. The second half maps
# individual languages that models label separately to their macrolanguage's 639-1 code.
_ISO3_TO_1: dict[str, str] = dict(
    pair.split(":") for pair in _codes(
        "aar:aa abk:ab ave:ae afr:af aka:ak amh:am arg:an ara:ar asm:as ava:av aym:ay aze:az bak:ba bel:be "
        "bul:bg bis:bi bam:bm ben:bn bod:bo bre:br bos:bs cat:ca che:ce cha:ch cos:co cre:cr ces:cs chu:cu "
        "chv:cv cym:cy dan:da deu:de div:dv dzo:dz ewe:ee ell:el eng:en epo:eo spa:es est:et eus:eu fas:fa "
        "ful:ff fin:fi fij:fj fao:fo fra:fr fry:fy gle:ga gla:gd glg:gl grn:gn guj:gu glv:gv hau:ha heb:he "
        "hin:hi hmo:ho hrv:hr hat:ht hun:hu hye:hy her:hz ina:ia ind:id ile:ie ibo:ig iii:ii ipk:ik ido:io "
        "isl:is ita:it iku:iu jpn:ja jav:jv kat:ka kon:kg kik:ki kua:kj kaz:kk kal:kl khm:km kan:kn kor:ko "
        "kau:kr kas:ks kur:ku kom:kv cor:kw kir:ky lat:la ltz:lb lug:lg lim:li lin:ln lao:lo lit:lt lub:lu "
        "lav:lv mlg:mg mah:mh mri:mi mkd:mk mal:ml mon:mn mar:mr msa:ms mlt:mt mya:my nau:na nob:nb nde:nd "
        "nep:ne ndo:ng nld:nl nno:nn nor:no nbl:nr nav:nv nya:ny oci:oc oji:oj orm:om ori:or oss:os pan:pa "
        "pli:pi pol:pl pus:ps por:pt que:qu roh:rm run:rn ron:ro rus:ru kin:rw san:sa srd:sc snd:sd sme:se "
        "sag:sg sin:si slk:sk slv:sl smo:sm sna:sn som:so sqi:sq srp:sr ssw:ss sot:st sun:su swe:sv swa:sw "
        "tam:ta tel:te tgk:tg tha:th tir:ti tuk:tk tgl:tl tsn:tn ton:to tur:tr tso:ts tat:tt twi:tw tah:ty "
        "uig:ug ukr:uk urd:ur uzb:uz ven:ve vie:vi vol:vo wln:wa wol:wo xho:xh yid:yi yor:yo zha:za zho:zh "
        "zul:zu hbs:sh "
        "arb:ar zsm:ms pes:fa prs:fa cmn:zh ekk:et lvs:lv swh:sw npi:ne uzn:uz azj:az khk:mn plt:mg ory:or "
        "pbt:ps pbu:ps gaz:om als:sq ydd:yi quy:qu quz:qu kmr:ku gug:gn fuv:ff"
    )
)
_NO_LANGUAGE = {"und", "zxx", "mis", "mul"}

def dominant_scripts(texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Per text: the script with most letters (ISO 15924 code, "" when none) and the number of letters.

    Columnar: the first `SCRIPT_MAX_CHARS` characters of every text are joined, decoded to codepoints
    once, mapped through `script_table` and counted per text with one `bincount`.
    """
    _, names = script_table()
    codepoints, lengths = code_points(pc.utf8_slice_codeunits(texts, 0, SCRIPT_MAX_CHARS))
    n = len(lengths)
    ids = script_ids(codepoints)
    k = len(names)
    owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
    counts = np.bincount(owner * k + ids, minlength=n * k).reshape(n, k)[:, 1:]
    letters = counts.sum(axis=1)
    best = np.where(letters > 0, counts.argmax(axis=1) + 1, 0)
    return np.array(names, dtype=object)[best], letters


def bundled_model_path() -> Path:
    """lid.176.ftz as shipped inside this package (curation/lang/data/lid.176.NOTICE.md: its source and licence)."""
    path = Path(str(resources.files("curation.lang") / "data" / "lid.176.ftz"))
    if not path.is_file():
        msg = (f"langid: the bundled model {path} is missing from this install of curation (reinstall it: "
               "pip install --force-reinstall curation), or set `model:` to a fastText language-ID model file")
        raise FileNotFoundError(msg)
    return path


def load_model(model: str | None, stage: str) -> tuple[Any, Path]:
    """The fastText language-ID model at `model` (a stage's recipe key), else the bundled lid.176, and its path."""
    import fasttext

    path = Path(model).expanduser() if model else bundled_model_path()
    if not path.is_file():
        msg = f"{stage}: fastText model file not found: {path} (recipe key `model`)"
        raise FileNotFoundError(msg)
    try:
        return fasttext.load_model(str(path)), path
    except ValueError as err:
        msg = f"{stage}: {path} is not a fastText model file (recipe key `model`): {err}"
        raise ValueError(msg) from err


def normalize_label(label: str) -> tuple[str, tuple[str, ...] | None]:
    """A model label (`__label__de`, `__label__deu_Latn`, `__label__no`) -> (output code, its scripts or None)."""
    raw = label.removeprefix("__label__")
    code, _, script = raw.partition("_")
    code = code.lower()
    if code in _NO_LANGUAGE:
        return UNKNOWN, None
    code = _ISO3_TO_1.get(code, code)
    if code == "no":
        code = "nb"  # lid.176's `no` is no.wikipedia, written in Bokmål
    scripts = _SCRIPT_ALIASES.get(script, (script,)) if script else None
    return code, scripts


def label_scripts(code: str, scripts: tuple[str, ...] | None) -> tuple[str, ...]:
    """Scripts a label's language is written in: its own suffix, else lid.176's table, else Latin."""
    if scripts is not None:
        return scripts
    return _LID176_SCRIPTS.get(code, ("Latn",))


def expand_keep(codes: Sequence[str]) -> frozenset[str]:
    """`keep` codes as output languages: three-letter codes mapped to two, macrolanguages expanded, scripts dropped
    (`zh-Hant` -> zh; see `kept_scripts`)."""
    out: set[str] = set()
    for code in codes:
        code = code.partition("-")[0]
        code = _ISO3_TO_1.get(code, code)
        out.update(KEEP_EXPANDS.get(code, (code,)))
    return frozenset(out)


def kept_scripts(codes: Sequence[str]) -> dict[str, frozenset[str] | None]:
    """`keep` codes (normalised, `zh-Hant`) -> per output language the scripts kept (None: every script). Chinese
    text in characters both scripts share (`Hani`) is kept under either."""
    out: dict[str, frozenset[str] | None] = {}
    for tag in codes:
        _, _, script = tag.partition("-")
        for code in expand_keep([tag]):
            if not script or out.get(code, frozenset()) is None:
                out[code] = None
            else:
                extra = {script, HAN_COMMON} if script in HAN_SCRIPTS else {script}
                out[code] = (out.get(code) or frozenset()) | extra
    return out


def keep_codes(value: Sequence[str], stage: str) -> list[str]:
    """A `keep` list normalised (`curation.lang.codes.language_tag`: `zh-CN` -> zh-Hans, `chi` -> zh), without
    repeats; refused where it names a Chinese variety (`yue`) without `zh`, which would keep no Mandarin."""
    tags = list(dict.fromkeys(str(language_tag(str(code))) for code in value))
    alone = chinese_alone(tags)
    if alone:
        msg = f"{stage} `keep`: {alone}"
        raise ValueError(msg)
    return tags


def judged_codes(value: Sequence[str], stage: str, known: frozenset[str] = frozenset()) -> list[str]:
    """The document languages a later stage judges (`toxicity`'s `languages`), as `lang` holds them: read by
    `curation.lang.codes` (zh-CN and chi are zh: a script or region is dropped, `lang` has none), macrolanguages
    expanded (`no`: nb, nn). Refused where the bundled model labels no document so and `known` (the codes the
    stage has data for) lacks it, since such an entry judges nothing, or where it names Chinese varieties without zh."""
    codes = list(dict.fromkeys(c for raw in value for c in sorted(expand_keep([language_code(str(raw))]))))
    alone = chinese_alone(codes)
    if alone:
        msg = f"{stage} `languages`: {alone}"
        raise ValueError(msg)
    never = [c for c in codes if c not in bundled_outputs(second_opinion=True) and c not in known]
    if never:
        msg = (f"{stage} `languages`: langid labels no document {never}, so they would judge nothing"
               f"{''.join(did_you_mean(c) for c in never)}")
        raise ValueError(msg)
    return codes


def check_keep(keep: Sequence[str] | None, outputs: frozenset[str], model: str) -> None:
    """A `keep` code the model can never output would silently drop everything: fail instead."""
    never = [code for code in keep or () if not expand_keep([code]) & outputs]
    if never:
        hints = "".join(did_you_mean(code) for code in never)
        msg = f"`keep` names languages that model {model} never outputs: {never}{hints}"
        raise ValueError(msg)


@cache
def bundled_outputs(second_opinion: bool) -> frozenset[str]:
    """What the stage can output with the bundled lid.176 model, known without loading it."""
    codes = {normalize_label(label)[0] for label in LID176_LABELS} | {UNKNOWN}
    if second_opinion:
        from lingua import Language

        codes |= {lang.iso_code_639_1.name.lower() for lang in Language.all()}
    return frozenset(codes)


def two_scripts(lang: np.ndarray, dominant: np.ndarray, texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """`lang_script` per text: for a language of `TWO_SCRIPTS`, Chinese as `Hans`, `Hant` or `Hani`
    (`curation.lang.han_script`: OpenCC's tables), the others as their dominant script where it is one of the
    language's two; None for languages written in one script."""
    out = np.full(len(lang), None, dtype=object)
    han = np.flatnonzero(np.isin(lang, _HAN_LANGUAGES))
    if len(han):
        out[han] = han_scripts(pc.fill_null(texts, "").take(pa.array(han)).to_pylist())
    for i in np.flatnonzero(np.isin(lang, _OTHER_TWO_SCRIPTS)).tolist():
        if dominant[i] in TWO_SCRIPTS[lang[i]]:
            out[i] = dominant[i]
    return out


_NOT_CHINESE_HAN = frozenset({"ja", "ko"})  # languages written in Han characters too, not Chinese


def _simplified_where(text: str, spans: list[dict[str, Any]], config: str, chosen: Callable[[str | None], bool]) -> str:
    """`text` with the pieces `chosen` (by their paragraph's label; None: between paragraphs, as code and tables are)
    made Simplified by OpenCC's `config`, the others as they were."""
    cuts, at = [], 0
    for span in sorted(spans, key=lambda span: span["start"]):
        cuts += [(at, span["start"], None), (span["start"], span["end"], span["lang"])]
        at = span["end"]
    cuts.append((at, len(text), None))
    pieces = [text[a:b] for a, b, _ in cuts]
    todo = [k for k, (_, _, label) in enumerate(cuts) if pieces[k] and chosen(label)]
    for k, converted in zip(todo, to_simplified([pieces[k] for k in todo], config), strict=True):
        pieces[k] = converted
    return "".join(pieces)


def _han_parts(lang: np.ndarray, spans_of: list[list[dict[str, Any]]], texts: pa.Array) -> dict[int, tuple[str, str]]:
    """Per document labelled a language not written in Han whose paragraphs include some labelled one that is (zh,
    yue, wuu): that language (the one of most such paragraphs) and the script of those paragraphs (`two_scripts`)."""
    found: dict[int, tuple[str, list[str]]] = {}
    for i, spans in enumerate(spans_of):
        if lang[i] in _HAN_LANGUAGES:
            continue
        han = [s for s in spans if s["lang"] in _HAN_LANGUAGES]
        if han:
            main = max({s["lang"] for s in han}, key=lambda code: sum(s["lang"] == code for s in han))
            text = texts[i].as_py() or ""
            found[i] = (main, [text[s["start"]:s["end"]] for s in han if s["lang"] == main])
    if not found:
        return {}
    scripts = han_scripts(["\n".join(lines) for _, lines in found.values()])
    return {i: (code, written) for (i, (code, _)), written in zip(found.items(), scripts, strict=True)}


def _labels(lang: np.ndarray, script: np.ndarray | None) -> np.ndarray:
    """`lang` with its script where it has one (`zh-Hant`): the label `keep` and the counts name."""
    labels = np.array(lang, dtype=object)
    if script is None:
        return labels
    rows = np.flatnonzero(script != None)  # noqa: E711 -- elementwise over an object array
    labels[rows] = [f"{c}-{s}" for c, s in zip(labels[rows], script[rows], strict=True)]
    return labels


@cache
def auto_min_score(lang: str, script: str | None = None) -> float:
    """`min_score: auto` for documents labelled `lang` (written in `script`: Serbian in Latin script has FineWeb-2's
    `srp_Latn` threshold): FineWeb-2's threshold, at most `AUTO_CEILING`."""
    return min(settings_for(lang, script=script)[0].language_score, AUTO_CEILING)



def _chinese(lang: np.ndarray, texts: pa.Array) -> None:
    """Chinese told from its varieties and neighbours by the characters each writes, in place: texts labelled
    Mandarin that are written Cantonese (`curation.lang.chinese_varieties`) relabelled `yue`, and texts labelled
    Cantonese or Wu that are not written so, Mandarin (lid.176 names a Tang poem `yue`, 0.5% of COLD's Mandarin posts
    `wuu`); Han text Japanese or Chinese by their forms (`_japanese_or_chinese`); and Han text without Hangul labelled
    Korean, Mandarin (`父亲在她旁边坐下` was `ko` at 0.98)."""
    chinese = np.flatnonzero(np.isin(lang, ["zh", "yue"]))
    if len(chinese):
        lang[chinese] = np.where(written_cantonese(texts.take(pa.array(chinese))), "yue", "zh")
    wu = np.flatnonzero(lang == "wuu")
    if len(wu):
        lang[wu] = np.where(written_wu(texts.take(pa.array(wu))), "wuu", "zh")
    korean = np.flatnonzero(lang == "ko")
    if len(korean):
        chosen = texts.take(pa.array(korean))
        hangul = pc.count_substring_regex(chosen, r"\p{Hangul}").to_numpy(zero_copy_only=False)
        han = pc.count_substring_regex(chosen, r"\p{Han}").to_numpy(zero_copy_only=False)
        lang[korean[(hangul == 0) & (han > 0)]] = "zh"
    _japanese_or_chinese(lang, texts)


# Japanese's own marks besides the forms of OpenCC's tables: its iteration mark (時々, 人々) and kanji made in Japan
# (働 込 畑 峠 辻 栃 枠 匂 凪 雫 榊), which Chinese does not write
JAPANESE_MARKS_RE2 = "[々〆働込畑峠辻栃枠匂凪雫榊]"


def _japanese_or_chinese(lang: np.ndarray, texts: pa.Array) -> None:
    """Han text told Japanese or Chinese by the forms only one of them writes (`han_script.japanese_and_simplified_
    forms`), in place: a Chinese travel guide's paragraph with a few kana words in brackets (`参观浅草寺`, せんそうじ)
    was Japanese, a line of kanji (`日本経済新聞社会部記者`) Chinese. A label turns at `FORMS_MIN` characters of the
    other's forms (`FORMS_SHARE_MIN` of its Han ones), more than of its own; Japanese turns Chinese only where at
    most `KANA_SHARE_MAX` of the kana and Han letters are kana, or where it has no kana and no form only Japanese
    writes."""
    rows = np.flatnonzero(np.isin(lang, ["zh", "ja"]))
    if not len(rows):
        return
    chosen = texts.take(pa.array(rows))
    japanese, simplified = japanese_and_simplified_forms(chosen)
    kana = pc.count_substring_regex(chosen, r"[\p{Hiragana}\p{Katakana}]").to_numpy(zero_copy_only=False)
    han = pc.count_substring_regex(chosen, r"\p{Han}").to_numpy(zero_copy_only=False)
    own = pc.count_substring_regex(chosen, JAPANESE_MARKS_RE2).to_numpy(zero_copy_only=False)
    enough = np.maximum(FORMS_MIN, FORMS_SHARE_MIN * han)
    # Han without kana or a form only Japanese writes is Chinese (lingua's rule): 妹子是四川人 was `ja` at 0.96
    to_chinese = (lang[rows] == "ja") & (((simplified >= enough) & (simplified > japanese) & (
        kana <= KANA_SHARE_MAX * (kana + han))) | ((kana == 0) & (japanese == 0) & (own == 0) & (han > 0)))
    to_japanese = (lang[rows] == "zh") & (japanese >= enough) & (japanese > simplified)
    lang[rows[to_chinese]] = "zh"
    lang[rows[to_japanese]] = "ja"


def _with_sinitic_mass(lang: np.ndarray, score: np.ndarray, rows: np.ndarray, mass: np.ndarray) -> None:
    """The score of each of `rows` labelled a Chinese variety raised to the probability fastText gave all of them
    (`mass`, per row), in place."""
    chinese = np.flatnonzero(np.isin(lang[rows], list(SINITIC)))
    score[rows[chinese]] = np.minimum(np.maximum(score[rows[chinese]], mass[chinese]), 1.0)


def map_keys(key: str) -> list[str]:
    """The keys a per-language map's `key` stands for: the output codes it names (`cmn_Hani` -> zh, `no` -> nb, nn),
    or the language in one of its own scripts where it has settings per script (`srp_Latn` -> sr-Latn)."""
    if key == EVERY_LANGUAGE:
        return [key]
    tag = language_tag(key)
    if tag.script is not None and tag.script in own_scripts(tag.code):
        return [script_key(tag.code, tag.script)]
    return expand_keep([language_code(key)])


def one_script(key: str, setting: str) -> None:
    """Refuse a key of a per-language map that names one script of a language (`zh-Hant`, `zh-TW`) where the settings
    are the language's, both its scripts' (`languages: {zh-Hant: ...}` validated and changed Simplified Chinese's
    too); a language with settings per script (`own_scripts`: `sr-Latn`) has a key per script."""
    if key == EVERY_LANGUAGE:
        return
    tag = language_tag(key)
    if tag.script is not None and tag.script not in own_scripts(tag.code):
        msg = (f"{setting}.{key}: `{setting}` is per language, not per script, and {key} is {tag.code} in one "
               f"script: both scripts share {tag.code}'s, so write {tag.code}")
        raise ValueError(msg)


class LangIdParams(DocumentFilter.Params):
    keep_scores: bool = Field(
        False,
        description="Also add fastText's own top label and probability before the second opinion (`lang_fasttext`, "
        "`lang_fasttext_score`). `lang` and `lang_score` are always added.",
    )
    keep: list[str] | None = Field(
        None,
        description="Languages to keep: ISO 639-1 codes (`zh`, `de`), ISO 639-2/3 codes (`chi`, `zho`, `cmn`, "
        "`deu`) or BCP-47 tags (`zh-CN`, `zh_TW`, `pt-BR`), read as `curation.lang.codes` says (regions dropped, but "
        "a Chinese region's script kept: zh-CN is zh-Hans). A script keeps that script only, for the languages "
        "written in two (`zh-Hans`, `zh-Hant`, `sr-Latn`; see `lang_script`). `no` keeps nb and nn, `sh` keeps bs, "
        "hr and sr; `unknown` keeps text in scripts the model has no language for; Chinese varieties (`yue`, `wuu`) "
        "only with `zh` (Mandarin). null keeps every language (datatrove's LanguageFilter: `languages=None`).",
    )
    to_simplified: Literal["t2s", "tw2s", "tw2sp", "hk2s"] | None = Field(
        None,
        description="Convert Traditional Chinese documents (`lang_script: Hant`; their titles too) to Simplified with "
        "OpenCC, by this "
        "configuration: `t2s` (characters and phrases), `tw2s` / `hk2s` (Taiwan's / Hong Kong's character forms "
        "too), `tw2sp` (and Taiwan's words: 軟體 -> 软件). Converted documents are labelled `Hans` (counted as "
        "`to_simplified`) and kept by `keep: [zh-Hans]`; with `per_paragraph`, so are the Traditional paragraphs of a "
        "document labelled another language (a page of English and Chinese paragraphs). null: text unchanged.",
    )
    min_score: Score | Literal["auto"] | dict[str, Score] = Field(
        AUTO,
        description="Drop documents whose language score is below this (`low_lang_score`): a number for every "
        "language (FineWeb: 0.65 on lid.176, Penedo et al. 2024; CCNet used 0.5), `auto` for each language's own, "
        "or a map of language code (read as `keep`'s, its script dropped: a threshold is per language; or \"*\", "
        "every language not named) -> number, `auto` for the languages it does not name. `auto`: FineWeb-2's "
        "threshold for the language (`language_score` in curation.lang.settings: "
        "its median GlotLID confidence less one standard deviation, within 0.3-0.9, Penedo et al. 2025), at most "
        f"{AUTO_CEILING} (FineWeb's, which English keeps). Why the ceiling: FineWeb-2's values are GlotLID "
        "confidences, and lid.176 with this stage's second opinion is less sure of languages it knows well "
        "(Mongolian documents: 38% kept at FineWeb-2's 0.889); where FineWeb-2 found a language's confidence low "
        "(languages with little training text, close neighbours) lid.176's is low too: Zulu, Xhosa, Shona, Sotho, "
        "Tswana, Tsonga, Ganda, Maori (no lid.176 label: named by the second opinion) and Somali, Yoruba (few "
        "training lines) score under 0.65 on every clean document and are kept at their 0.3.",
    )
    model: Annotated[str | None, ReadsFile("model file")] = Field(
        None,
        description="Path to a fastText language-ID model (.bin or .ftz), e.g. lid.176.bin or GlotLID's "
        "model.bin; labels like `__label__eng_Latn` are mapped to ISO 639-1. null: lid.176.ftz as shipped in "
        "this package (curation/lang/data). Nothing is ever downloaded.",
    )
    per_paragraph: bool = Field(
        False,
        description="Also label each paragraph (each non-blank line of `text`, as extractors such as trafilatura "
        "write one paragraph per line) into `lang_paragraphs`: a list of {start, end, lang, score}, with start "
        "and end character offsets into `text`; a line of fewer than 20 letters scored under 0.9, one mostly of "
        "digits and symbols, one scored under its label's `min_score`, or one labelled a close neighbour of the "
        "text's language under 0.9 (Bosnian in a Serbian text, Wu in a Mandarin one) takes the whole text's label. "
        "A document "
        "whose paragraphs hold two languages or more, each at least 20% of their characters, is mixed "
        "(`curation.stages.parts`): its `lang` is the language of most of them, its `lang_score` its paragraphs' "
        "scores weighed by their characters, it is kept when every one of its languages is (`keep`), and the "
        "filters after it judge each language's paragraphs by that language's rules. Otherwise `lang` stays the "
        "whole text's label.",
    )
    mixed_documents: Literal["keep", "drop"] = Field(
        "keep",
        description="With `per_paragraph`: `drop` drops documents in several languages (`lang_mixed`), for a "
        "recipe that keeps only whole documents of one language.",
    )
    second_opinion: bool = Field(
        True,
        description="Ask lingua (restricted to a few candidate languages) where fastText is unsure or its label is "
        "one of a group of close languages it confuses (bs/hr/sr, id/ms, nb/nn/da/sv, af/nl, cs/sk, bg/mk, az/tr, "
        "ja/zh): macro accuracy 0.89 -> 0.96 on the Leipzig sentences (benchmarks/langid_accuracy.py) at ~4x "
        "fastText's cost per sentence. false: fastText's label and probability as they are (datatrove's "
        "LanguageFilter).",
    )

    @field_validator("keep")
    @classmethod
    def _codes(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else keep_codes(value, "langid")

    @field_validator("min_score")
    @classmethod
    def _score_codes(cls, value: float | str | dict[str, float]) -> float | str | dict[str, float]:
        if not isinstance(value, dict):
            return value
        out: dict[str, float] = {}
        for key, score in value.items():
            code = str(key).strip()
            one_script(code, "min_score")
            out.update(dict.fromkeys(map_keys(code), score))
        return out

    @model_validator(mode="after")
    def _keep_is_possible(self) -> LangIdParams:
        """With the bundled model the recipe is checked before any work starts; other models in `setup`."""
        if self.to_simplified and self.keep is not None:
            han = {code: scripts for code, scripts in kept_scripts(self.keep).items() if code in _HAN_LANGUAGES}
            if not han:
                msg = f"`to_simplified` converts Chinese documents, and `keep` {self.keep} keeps none: add zh to `keep`"
                raise ValueError(msg)
            if all(scripts is not None and HANS not in scripts for scripts in han.values()):
                msg = (f"`to_simplified` makes Traditional documents Simplified, and `keep` {self.keep} keeps "
                       "Traditional only: keep zh-Hans (or zh)")
                raise ValueError(msg)
        if self.model is None:
            check_keep(self.keep, bundled_outputs(self.second_opinion), "lid.176.ftz")
        return self


@dataclass
class _Opinion:
    """Per-text results of `LangId.identify`."""

    lang: np.ndarray  # object: output codes
    score: np.ndarray  # float32
    fasttext_lang: np.ndarray  # object: fastText's own top label (as an output code)
    fasttext_score: np.ndarray  # float32
    route: np.ndarray  # object: "unknown", "fasttext", "group", "unsure"
    script: np.ndarray  # object: dominant script
    lang_script: np.ndarray | None = None  # object: `lang_script` (None where the language has one script)

    def __post_init__(self) -> None:  # fastText adds 1e-5 inside its softmax: a sure label scored 1.00001
        np.minimum(self.score, 1.0, out=self.score)
        np.minimum(self.fasttext_score, 1.0, out=self.fasttext_score)


class LangId(DocumentFilter):
    """Label each document's language (`lang`, `lang_score`) and keep the languages asked for.

    Drop reasons, first match wins: `lang_unknown` (script without a language in the model, or no
    letters; detail: the script; such rows have `lang_score` 0 and are kept only with `min_score: 0` and
    no `keep`, or with `unknown` in `keep`), `lang_not_kept` (detail: language and score),
    `low_lang_score` (detail: language, score and the bound it broke, `uz-Latn 0.38 < 0.63`). `lang`, `lang_script`
    and `lang_score` are always added: later stages (per-language quality thresholds as in FineWeb-2, mixtures)
    read them; `keep_scores` adds fastText's own answer (`lang_fasttext`, `lang_fasttext_score`) to see what the
    second opinion changed.
    `keep: [zh-Hans]` keeps one script; `to_simplified` converts Traditional Chinese documents (labelled `Hans`
    afterwards) before `keep` judges them. Counts (stats.json): the documents per label with a script of the
    two-script languages `keep` names (`zh-Hans`, `zh-Hant`, `zh-Hani`; zh's when `keep` is null, as labelled,
    before conversion) and `to_simplified`, the documents converted.

    See the module docstring for how the label is decided. The models are loaded once per worker in
    `setup` (fastText ~1 MB at once; lingua's n-gram models lazily, up to ~0.5 GB when all 75 of its
    languages occur) and reused by every later batch there.
    """

    name = "langid"
    Params = LangIdParams
    base_columns: ClassVar[dict[str, pa.DataType]] = {"lang": pa.string(), "lang_script": pa.string(),
                                                      "lang_score": pa.float32()}
    score_columns: ClassVar[dict[str, pa.DataType]] = {"lang_fasttext": pa.string(),
                                                       "lang_fasttext_score": pa.float32()}
    paragraph_type: ClassVar[pa.DataType] = pa.list_(pa.struct([
        ("start", pa.int32()), ("end", pa.int32()), ("lang", pa.string()), ("score", pa.float32())]))

    @property
    def output_columns(self) -> dict[str, pa.DataType]:  # type: ignore[override]
        """`lang`, `lang_score` always; fastText's own label with `keep_scores`; paragraphs with `per_paragraph`."""
        columns = dict(self.base_columns)
        if self.params.keep_scores:
            columns.update(self.score_columns)
        if self.params.per_paragraph:
            columns["lang_paragraphs"] = self.paragraph_type
        return columns

    def setup(self) -> None:
        self._model, path = load_model(self.params.model, "langid")
        raw = list(self._model.get_labels())
        normalized = [normalize_label(label) for label in raw]
        self._codes = {label: code for label, (code, _) in zip(raw, normalized, strict=True)}
        scripts: set[str] = set()
        for code, label_script in normalized:
            if code != UNKNOWN:
                scripts.update(label_scripts(code, label_script))
        self._scripts = frozenset(scripts)
        self._label_scripts = {label: frozenset(label_scripts(code, label_script))
                               for label, (code, label_script) in zip(raw, normalized, strict=True)}
        self._label_of = {code: label for label, code in reversed(self._codes.items())}
        self._lingua: dict[tuple[frozenset[str], str], Any] = {}
        self._lingua_fixed: frozenset[tuple[frozenset[str], str]] = frozenset()
        self._lingua_codes: dict[str, Any] = {}
        self._lingua_script: dict[str, frozenset[str]] = {}
        self._lingua_by_script: dict[str, frozenset[str]] = {}
        self._neighbours: dict[str, frozenset[str]] = {}
        self._unranked: dict[str, frozenset[str]] = {}
        if self.params.second_opinion:
            self._setup_lingua()
            self._unranked = self._unranked_languages(normalized)
        self.outputs = frozenset(c for c, _ in normalized) | frozenset(self._lingua_codes) | {UNKNOWN}
        check_keep(self.params.keep, self.outputs, str(path))
        self._keep = None if self.params.keep is None else kept_scripts(self.params.keep)

    def _setup_lingua(self) -> None:
        """Candidate sets and their lingua detectors: one per close-language group and one per script.

        Detectors are built here, once; lingua loads each language's n-gram models on first use and
        shares them between detectors, so only the languages a corpus needs are ever loaded. The unsure
        route's candidate sets and finalist pairs (chosen per text) get detectors on first use, kept in a
        bounded cache: a build costs ~90 us whatever the languages, a call on a short text ~12 us per language.
        """
        from lingua import Language

        self._lingua_codes = {lang.iso_code_639_1.name.lower(): lang for lang in Language.all()}
        self._lingua_code_of = {lang: code for code, lang in self._lingua_codes.items()}
        by_script: dict[str, set[str]] = {}
        for code in self._lingua_codes:
            for script in _LID176_SCRIPTS.get(code, ("Latn",)):
                by_script.setdefault(script, set()).add(code)
        self._lingua_by_script = {s: frozenset(c) for s, c in by_script.items()}
        self._lingua_script = {s: c for s, c in self._lingua_by_script.items() if len(c) > 1}
        for group in CLOSE_GROUPS:
            for code in group:
                known = frozenset(c for c in group if c in self._lingua_codes)
                self._neighbours[code] = self._neighbours.get(code, frozenset()) | known
        for candidates in set(self._neighbours.values()):
            for in_script in self._lingua_by_script.values():
                if len(candidates & in_script) > 1:
                    self._detector(candidates & in_script, "high")
        for candidates in self._lingua_script.values():
            self._detector(candidates, "low")
        self._lingua_fixed = frozenset(self._lingua)

    def _unranked_languages(self, normalized: list[tuple[str, tuple[str, ...] | None]]) -> dict[str, frozenset[str]]:
        """Per script, the lingua languages the fastText model has no label for or saw few lines of.

        fastText stores each label's count of training lines; a label seen on ~2k lines (lid.176's Somali
        and Yoruba) loses to well-trained neighbours on text it should win, so its rank says little.
        """
        _, counts = self._model.get_labels(include_freq=True)
        lines = {code: int(count) for (code, _), count in zip(normalized, counts, strict=True)}
        ranked = {code for code, count in lines.items() if count >= RARE_LABEL_MAX}
        return {script: frozenset(c for c in in_script if c not in ranked)
                for script, in_script in self._lingua_by_script.items()}

    def _detector(self, candidates: frozenset[str], mode: str) -> Any:
        key = (candidates, mode)
        detector = self._lingua.get(key)
        if detector is None:
            from lingua import LanguageDetectorBuilder

            if len(self._lingua) >= DETECTOR_CACHE:  # candidate sets vary per text: bound the cache, keep setup's
                for old in [k for k in self._lingua if k not in self._lingua_fixed][: DETECTOR_CACHE // 2]:
                    del self._lingua[old]
            builder = LanguageDetectorBuilder.from_languages(*[self._lingua_codes[c] for c in sorted(candidates)])
            if mode == "low":
                builder = builder.with_low_accuracy_mode()
            detector = self._lingua[key] = builder.build()
        return detector

    def _lingua_opinion(self, text: str, candidates: frozenset[str], mode: str,
                        max_chars: int = LINGUA_MAX_CHARS) -> dict[str, float]:
        """lingua's confidence per candidate (the top `TOP_K`; the rest cannot win a pool)."""
        if len(candidates) < 2:
            return dict.fromkeys(candidates, 1.0)
        detector = self._detector(candidates, mode)
        code_of = self._lingua_code_of
        if len(text) > max_chars:
            cut = text.rfind(" ", 0, max_chars)
            text = text[: cut if cut > 0 else max_chars]
        if mode == "low" or len(text) < HIGH_ACCURACY_MAX_CHARS:
            values = detector.compute_language_confidence_values(text)  # sorted, most likely first
            return {code_of[v.language]: v.value for v in values[:TOP_K]}
        # From 120 characters on lingua uses trigrams only, even in high-accuracy mode. Its 1- to 5-gram
        # models are kept by asking about pieces under 120 characters and multiplying their likelihoods
        # (lingua's confidences are normalised likelihoods over the candidates, so log-odds add up).
        logs = dict.fromkeys(candidates, 0.0)
        for piece in _pieces(text, HIGH_ACCURACY_MAX_CHARS - 1):
            values = {code_of[v.language]: v.value for v in detector.compute_language_confidence_values(piece)}
            if not values:
                continue  # no letters in this piece
            for code in candidates:
                logs[code] += math.log(max(values.get(code, 0.0), _FLOOR))
        return _softmax(logs)

    def identify(self, texts: pa.Array | pa.ChunkedArray | Sequence[str | None], *, scripts: bool = True
                 ) -> _Opinion:
        """Label texts (see the module docstring), with `lang_script` unless `scripts` is false. Needs `setup()`."""
        if not isinstance(texts, pa.Array | pa.ChunkedArray):
            texts = pa.array(texts, pa.string())
        opinion = self._identify(texts)
        if scripts:
            opinion.lang_script = two_scripts(opinion.lang, opinion.script, texts)
        return opinion

    def _identify(self, texts: pa.Array | pa.ChunkedArray) -> _Opinion:
        head = pc.utf8_slice_codeunits(pc.fill_null(texts, ""), 0, FASTTEXT_MAX_CHARS)
        # The models learnt composed text: decomposed (NFD) Vietnamese reads as Tsonga, Korean jamo as Chinese.
        head = normalized(head, "NFC")
        head = pc.replace_substring_regex(head, POINTS_RE2, "")  # as the models learnt Hebrew and Arabic
        # one line each; the Ethiopic wordspace as the space it stands for (fastText splits words at spaces)
        flat = pc.replace_substring_regex(head, r"[\r\n\v\f\x{85}\x{2028}\x{2029}\x{1361}]+", " ")
        n = len(flat)
        script, letters = dominant_scripts(flat)
        lang = np.full(n, UNKNOWN, dtype=object)
        score = np.zeros(n, dtype=np.float32)
        ft_lang = np.full(n, UNKNOWN, dtype=object)
        ft_score = np.zeros(n, dtype=np.float32)
        route = np.full(n, UNKNOWN, dtype=object)
        known = (letters > 0) & np.array([s in self._scripts for s in script], dtype=bool)
        rows = np.flatnonzero(known)
        if len(rows) == 0:
            return _Opinion(lang, score, ft_lang, ft_score, route, script)
        values = flat.take(pa.array(rows)).to_pylist() if len(rows) < n else flat.to_pylist()
        labels, probs = self._in_script(values, script[rows])
        self._uzbek_apostrophes(values, script[rows], labels, probs)
        codes = self._codes
        top = np.array([codes[row[0]] for row in labels], dtype=object)
        top_p = np.array([row[0] for row in probs], dtype=np.float32)
        ft_lang[rows], ft_score[rows] = top, top_p
        lang[rows], score[rows], route[rows] = top, top_p, "fasttext"
        # lid.176 splits a Cantonese or Wu text's probability between its variety and Mandarin (yue 0.45 and zh 0.45:
        # each under its threshold, a clean post dropped): a Chinese variety's score is the mass of all of them
        sinitic = np.array([sum(float(p) for label, p in zip(row, ps, strict=True) if codes[label] in SINITIC)
                            for row, ps in zip(labels, probs, strict=True)], np.float32)
        if not self._lingua_codes:
            _with_sinitic_mass(lang, score, rows, sinitic)
            _chinese(lang, flat)
            return _Opinion(lang, score, ft_lang, ft_score, route, script)
        # Only texts fastText is unsure of, or whose label has close neighbours, go on (~40% of sentences).
        grouped = np.isin(top, list(self._neighbours)) & (top_p < GROUP_SURE_ABOVE)
        asked = np.flatnonzero((top_p < UNSURE_BELOW) | grouped)
        for j in asked:
            i = rows[j]
            second = self._second_opinion(values[j], script[i], top[j], float(top_p[j]), labels[j], probs[j])
            if second is not None:
                lang[i], score[i], route[i] = second
        _with_sinitic_mass(lang, score, rows, sinitic)
        _chinese(lang, flat)
        return _Opinion(lang, score, ft_lang, ft_score, route, script)

    def _uzbek_apostrophes(self, values: list[str], scripts: np.ndarray, labels: list, probs: list) -> None:
        """Texts with Uzbek among their labels read again with the apostrophe of its o and g as the models learnt
        it (U+02BB), where that makes them Uzbek, in place: typed `o'` or U+2019, as most of its web is, a clean
        article scored 0.38 against its bound of 0.63 (0.89 with U+02BB). Only those: Welsh writes `o'r` ("of the")
        in every sentence."""
        codes = self._codes
        asked = [j for j, row in enumerate(labels) if any(codes[label] == "uz" for label in row)
                 and _UZBEK_APOSTROPHE.search(values[j])]
        if not asked:
            return
        folded = [_UZBEK_APOSTROPHE.sub("ʻ", values[j]) for j in asked]
        again, again_p = self._in_script(folded, scripts[asked])
        for k, j in enumerate(asked):
            if codes[again[k][0]] == "uz":
                values[j], labels[j], probs[j] = folded[k], again[k], again_p[k]

    def _in_script(self, values: list[str], scripts: np.ndarray) -> tuple[list, list]:
        """fastText's top labels of each text, in a script other than Latin only those of languages written in it:
        on a short text its labels can be any language ("旅游", travel, read as English; a Chinese headline as
        Breton), and a second opinion then pools the wrong ones too. Where none of them is, lingua restricted to
        the script's languages names it (fastText's labels stay where lingua models no language of the script).
        Latin-script text keeps every label: romanised Serbian, Hindi or Russian is written that way."""
        labels, probs = (list(out) for out in self._model.predict(values, k=TOP_K))
        of = self._label_scripts
        wider = []
        for j in np.flatnonzero(scripts != "Latn").tolist():  # romanised text of any language is real
            row, script = labels[j], scripts[j]
            fits = [k for k, label in enumerate(row) if script in of[label]]
            if not fits:
                wider.append(j)
            elif len(fits) < len(row):
                labels[j], probs[j] = tuple(row[k] for k in fits), np.asarray(probs[j])[fits]
        for j in wider:  # none of the ten is in its script: lingua over the script's languages, where it has them
            modelled = frozenset(c for c in self._lingua_by_script.get(scripts[j], ()) if c in self._label_of)
            if modelled:
                opinion = self._lingua_opinion(values[j], modelled, "high")
                best = max(opinion, key=opinion.__getitem__)
                labels[j], probs[j] = (self._label_of[best],), np.array([opinion[best]], np.float32)
        return labels, probs

    def _second_opinion(
        self, text: str, script: str, top: str, top_p: float, labels: Sequence[str], probs: Sequence[float]
    ) -> tuple[str, float, str] | None:
        """(label, pooled score, route) from the group or unsure route; None keeps fastText's answer."""
        codes = self._codes
        dist: dict[str, float] = {}
        for label, p in zip(labels, probs, strict=True):
            code = codes[label]
            share = STANDS_FOR.get(code, (code,))
            for c in share:
                dist[c] = dist.get(c, 0.0) + float(p) / len(share)
        in_script = self._lingua_by_script.get(script, frozenset())
        # lingua re-splits only the mass of the group's languages it models in the text's script; the
        # others keep fastText's probability. lingua's Serbian is Cyrillic: on Latin-script text fastText's
        # `sr` stands against lingua's bs/hr/sl share instead of always losing to it.
        group = self._neighbours.get(top, frozenset())
        judged = group & in_script
        if len(judged) > 1 and top_p < GROUP_SURE_ABOVE and sum(dist.get(c, 0.0) for c in group) >= GROUP_MASS_MIN:
            pooled = self._resplit(text, judged, dist, GROUP_FASTTEXT_EXPONENT)
            pooled.update({c: dist.get(c, 0.0) for c in group - judged})
            _weigh_words(text, pooled)
            best = max(pooled, key=pooled.__getitem__)
            return best, _agreed(best, pooled[best], top, top_p), "group"
        if top_p >= UNSURE_BELOW or script not in self._lingua_script:
            return None
        # lingua weighs the languages fastText names, plus those fastText cannot rank (no label, or a label
        # trained on few lines: lid.176 saw ~2k lines of Somali and of Yoruba, millions of English).
        unranked = self._unranked.get(script, frozenset())
        candidates = frozenset(c for c, p in dist.items() if c in in_script and p >= NAMED_MIN_P) | unranked
        # A top label lingua does not model (Galician, Occitan, Waray, Latin-script Serbian...) is not handed
        # to a neighbour that fastText itself ranks lower (Portuguese...), only to a language fastText cannot
        # rank: an unsure guess such as Lombard for Yoruba is how fastText fails on those.
        gainers = candidates if top in in_script or top in STANDS_FOR else unranked
        if len(candidates) < 2 or not gainers:
            return None
        opinion = self._lingua_opinion(text, candidates, "low", UNSURE_MAX_CHARS)
        w = UNSURE_FASTTEXT_WEIGHT
        pooled = dict(dist)  # the labels lingua does not judge keep fastText's probability
        pooled.update({c: w * dist.get(c, 0.0) + (1 - w) * opinion.get(c, 0.0) for c in gainers})
        if len(text) < HIGH_ACCURACY_MAX_CHARS:
            self._rejudge_finalists(text, pooled, gainers)
        _weigh_words(text, pooled)
        best = max(pooled, key=pooled.__getitem__)
        if best in unranked and best != top and not _own_words(text, best, top):
            return None
        return best, _agreed(best, pooled[best], top, top_p), "unsure"

    def _resplit(self, text: str, judged: frozenset[str], dist: dict[str, float], exponent: float
                 ) -> dict[str, float]:
        """lingua (high-accuracy mode) re-splits the share `dist` gives to `judged`: a log-linear pool in which
        `dist` has weight `exponent` and lingua weight 1 (Genest & Zidek 1986), so the total stays `dist`'s."""
        opinion = self._lingua_opinion(text, judged, "high")
        share = sum(dist.get(c, 0.0) for c in judged)
        logs = {c: math.log(max(opinion.get(c, 0.0), _FLOOR))
                + exponent * math.log(dist.get(c, 0.0) + _FASTTEXT_FLOOR) for c in judged}
        return {c: share * p for c, p in _softmax(logs).items()}

    def _rejudge_finalists(self, text: str, pooled: dict[str, float], candidates: frozenset[str]) -> None:
        """Short texts: lingua's high-accuracy mode (1- to 5-grams) re-splits the two leaders' pooled share.

        High-accuracy mode over all ~50 languages of a script would cost ~2 ms a text; over the two leaders
        it costs ~0.13 ms, and pairs recur, so their detectors are built once.
        """
        leaders = sorted(pooled, key=pooled.__getitem__, reverse=True)[:2]
        if (len(leaders) == 2 and all(c in candidates for c in leaders)
                and pooled[leaders[1]] >= FINALIST_RATIO_MIN * pooled[leaders[0]]):
            pooled.update(self._resplit(text, frozenset(leaders), pooled, FINALIST_EXPONENT))

    def paragraphs(self, texts: pa.Array | pa.ChunkedArray, lang: np.ndarray, score: np.ndarray) -> pa.Array:
        """`lang_paragraphs`: each non-blank line of each text but its code and tables, with offsets and label.

        A line whose own label cannot be trusted takes its document's (`lang`, `score`: the whole texts'): one of
        fewer than `PARAGRAPH_LETTERS_MIN` letters scored under `SHORT_PARAGRAPH_SCORE_MIN`, one mostly of digits
        and symbols, one scored under its label's `min_score`, one labelled another language than its document's
        under `OTHER_LANGUAGE_SCORE_MIN` (a Swahili reply read as Xhosa at 0.39), or a close neighbour of its
        document's language (`_neighbours`) under `SHORT_PARAGRAPH_SCORE_MIN`; but never where its script is not
        Latin and not one its document's language is written in. A calendar read as Yoruba or a copyright line read
        as Irish would otherwise make an English page "mixed", and drop it where a recipe keeps some languages.
        """
        spans: list[tuple[int, int, int]] = []  # (document, start, end)
        pieces: list[str] = []
        values = as_array(texts)
        lines = pc.split_pattern(values, "\n")
        layout = np.isin(line_kinds(lines.flatten(), list_offsets(lines)), (CODE, TABLE)).tolist()[::-1]
        for doc, text in enumerate(values.to_pylist()):
            start = 0
            for line in text.split("\n"):
                end = start + len(line)
                if not layout.pop() and line.strip():  # code and tables are in no language
                    spans.append((doc, start, end))
                    pieces.append(line)
                start = end + 1
        lines = pa.array(pieces, pa.string())
        opinion = self.identify(lines, scripts=False)
        letters, visible = (pc.utf8_length(pc.replace_substring_regex(lines, other, "")).to_numpy(zero_copy_only=False)
                            for other in (r"[^\pL\pM]+", r"\s+"))  # a run at a time: 4x faster than per character
        sure = (letters >= PARAGRAPH_LETTERS_MIN) | (opinion.score >= SHORT_PARAGRAPH_SCORE_MIN)
        passed = opinion.score >= self.min_scores(opinion.lang, opinion.lang_script)
        trusted = sure & (2 * letters >= visible) & passed
        line_doc = np.array([doc for doc, _, _ in spans], np.int64)
        if len(line_doc):
            other = opinion.lang != lang[line_doc]
            neighbour = _neighbours(opinion.lang, lang[line_doc])
            trusted &= ~neighbour | (opinion.score >= SHORT_PARAGRAPH_SCORE_MIN)
            trusted &= ~other | (opinion.score >= OTHER_LANGUAGE_SCORE_MIN)
            # a line of a script its document's language is not written in keeps its own label: a line of Han in a
            # page of pinyin was Malay, as the page was (any language may be romanised: Latin lines are left be)
            trusted |= np.array([script != "Latn" and script not in label_scripts(code, None) for script, code in zip(
                opinion.script, lang[line_doc], strict=True)], bool) & (opinion.lang != UNKNOWN)
            # a line of kanji in a Japanese page (a statute's 第一章 総則, an address, a name) or of hanja in a Korean
            # one is the page's language unless it is a Chinese sentence (its full-width comma or full stop) or writes
            # forms only Simplified Chinese does: Han without kana is Chinese alone, and such a page was "mixed ja+zh"
            # and dropped by `keep: [ja]`
            han = np.flatnonzero(np.isin(lang[line_doc], list(_NOT_CHINESE_HAN)) & np.isin(opinion.lang, list(SINITIC)))
            if len(han):
                chosen = lines.take(pa.array(han))
                _, simplified = japanese_and_simplified_forms(chosen)
                sentence = pc.match_substring_regex(chosen, "[，。]").to_numpy(zero_copy_only=False)
                trusted[han[(simplified < FORMS_MIN) & ~sentence]] = False
        out: list[list[dict[str, Any]]] = [[] for _ in range(len(texts))]
        for j, (doc, start, end) in enumerate(spans):
            label, confidence = (opinion.lang[j], opinion.score[j]) if trusted[j] else (lang[doc], score[doc])
            out[doc].append({"start": start, "end": end, "lang": label, "score": float(confidence)})
        return pa.array(out, self.paragraph_type)

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        return self._scores(self.identify(prose_text(batch.column("text"))))

    def _scores(self, opinion: _Opinion) -> dict[str, np.ndarray]:
        scores = {"lang": opinion.lang, "lang_script": opinion.lang_script, "lang_score": opinion.score,
                  "lang_fasttext": opinion.fasttext_lang, "lang_fasttext_score": opinion.fasttext_score}
        labels = _labels(opinion.lang, opinion.lang_script)
        for key in self.count_keys:
            if key != TO_SIMPLIFIED:
                scores[f"_{key}"] = (labels == key).astype(np.int64)
        return scores

    @property
    def count_keys(self) -> tuple[str, ...]:  # type: ignore[override]
        """Documents per label with a script (`zh-Hans`...), of the two-script languages `keep` names (null: zh),
        and the documents `to_simplified` converted."""
        named = ["zh"] if self.params.keep is None else expand_keep(self.params.keep)
        labels = [f"{code}-{script}" for code in sorted(named) if code in TWO_SCRIPTS
                  for script in (*TWO_SCRIPTS[code], *((HAN_COMMON,) if TWO_SCRIPTS[code] == HAN_SCRIPTS else ()))]
        return (*labels, *((TO_SIMPLIFIED,) if self.params.to_simplified else ()))

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        lang, score = scores["lang"], scores["lang_score"]
        unknown = lang == UNKNOWN
        not_kept = np.zeros(len(lang), dtype=bool) if self._keep is None else ~np.isin(lang, list(self._keep))
        script = scores.get("lang_script")
        for code, scripts in (self._keep or {}).items():
            if scripts is not None and script is not None:
                rows = np.flatnonzero(lang == code)
                not_kept[rows] |= np.array([s not in scripts for s in script[rows]], dtype=bool)
        low = score < self.min_scores(lang, script)
        if self._keep is not None and UNKNOWN in self._keep:
            low &= ~unknown  # kept on purpose: an unknown label has no score to compare
        return first_reason(len(lang), [(unknown & (not_kept | low), "lang_unknown"), (not_kept, "lang_not_kept"),
                                        (low, "low_lang_score")])

    def min_scores(self, lang: np.ndarray, script: np.ndarray | None = None) -> float | np.ndarray:
        """The least language score of every document, by its label and, for `auto`, the script it is written in
        (`lang_script`; see `LangIdParams.min_score`)."""
        value = self.params.min_score
        if isinstance(value, float | int):
            return float(value)
        own = value if isinstance(value, dict) else {}

        def threshold(label: str) -> float:
            code, _, written = label.partition("\t")
            if written and script_key(code, written) in own:  # `sr-Latn`: Serbian in Latin script
                return own[script_key(code, written)]
            if code in own:
                return own[code]
            return own[EVERY_LANGUAGE] if EVERY_LANGUAGE in own else auto_min_score(code, written or None)

        scripts = [""] * len(lang) if script is None else ["" if s is None else str(s) for s in script]
        labels = np.array([f"{code}\t{s}" for code, s in zip(np.asarray(lang, dtype=str).tolist(), scripts,
                                                              strict=True)])
        codes, index = np.unique(labels, return_inverse=True)
        return np.array([threshold(c) for c in codes.tolist()], np.float32)[index]

    def process(self, batch: pa.Table) -> Processed:
        """`score`, `to_simplified`, then `keep`, each drop with its detail (the script, or the label and score).
        A dropped document keeps its own text (`judged`), so its label stays the one it was judged by. The text
        read is its prose: an article's code blocks and tables are in no language (`curation.text.layout`)."""
        opinion = self.identify(prose_text(batch.column("text")))
        scores = self._scores(opinion)
        mixed: dict[int, list[str]] = {}
        han_parts: dict[int, tuple[str, str]] = {}
        spans_of: list[list[dict[str, Any]]] | None = None
        if self.params.per_paragraph:
            scores["_paragraphs"] = paragraphs = self.paragraphs(batch.column("text"), opinion.lang, opinion.score)
            whole = scores["lang"].copy()  # the whole text's labels (`_label_mixed` relabels in place)
            spans_of = paragraphs.to_pylist()
            mixed = self._label_mixed(scores, spans_of, as_array(batch.column("text")))
            if (relabelled := np.flatnonzero(scores["lang"] != whole)).size:  # its script is its new label's
                scores["lang_script"] = scores["lang_script"].copy()
                scores["lang_script"][relabelled] = two_scripts(
                    scores["lang"][relabelled], opinion.script[relabelled],
                    prose_text(batch.column("text")).take(pa.array(relabelled)))
            han_parts = _han_parts(scores["lang"], spans_of, as_array(batch.column("text")))
        text = self._to_simplified(batch, scores, han_parts, spans_of) if self.params.to_simplified else None
        mask, reasons = self.keep(scores)
        if text is not None:
            scores["lang_script"] = np.where(mask, scores["lang_script"], opinion.lang_script)
            scores[f"_{TO_SIMPLIFIED}"] &= mask
            batch = self._titles_simplified(batch, np.flatnonzero(scores[f"_{TO_SIMPLIFIED}"]))
        labels = _labels(scores["lang"], scores["lang_script"])
        details = np.full(len(mask), None, dtype=object)
        for i, languages in mixed.items():
            if self.params.mixed_documents == "drop":
                mask[i], reasons[i] = False, "lang_mixed"
            elif mask[i] and self._keep is not None and not self._keeps_all(languages, han_parts.get(i)):
                mask[i], reasons[i] = False, "lang_not_kept"
        bounds = np.broadcast_to(self.min_scores(scores["lang"], scores["lang_script"]), mask.shape)
        for i in np.flatnonzero(~mask):
            code, written = han_parts.get(i, ("", ""))  # a Chinese part names its script: `mixed en+zh-Hant`
            parts = [f"{c}-{written}" if c == code else c for c in mixed.get(i, [])]
            mixed_as = "mixed " + "+".join(parts) if parts else None
            if reasons[i] == "lang_unknown":
                details[i] = f"script {opinion.script[i]}" if opinion.script[i] else "no letters"
            elif reasons[i] == "low_lang_score":  # the score and the bound it broke, as every filter's detail
                said = f"{labels[i]} {scores['lang_score'][i]:.2f} < {bounds[i]:.2f}"
                details[i] = f"{mixed_as}: {said}" if mixed_as else said
            else:
                details[i] = mixed_as or f"{labels[i]} {opinion.score[i]:.2f}"
        return self.judged(batch, scores, mask, reasons, text=text, details=pa.array(details, type=pa.string()))

    def _keeps_all(self, languages: list[str], han_part: tuple[str, str] | None) -> bool:
        """Whether `keep` keeps every language of a mixed document, its Chinese paragraphs (`han_part`: their language
        and script, where the document is labelled another) in their script: a page of English and Traditional
        paragraphs was kept by `keep: [zh-Hans, en]`."""
        if not set(languages) <= set(self._keep or {}):
            return False
        if han_part is None or han_part[0] not in languages:
            return True
        scripts = (self._keep or {}).get(han_part[0])
        return scripts is None or han_part[1] in scripts

    def _to_simplified(self, batch: pa.Table, scores: dict[str, np.ndarray], han_parts: dict[int, tuple[str, str]],
                       spans_of: list[list[dict[str, Any]]] | None) -> pa.Array | None:
        """The batch's text with its Traditional Chinese documents in Simplified, which are then labelled `Hans`
        (`_to_simplified`: the rows converted), and the Traditional Chinese paragraphs of documents labelled another
        language (`han_parts`: a Hong Kong page of English and Chinese paragraphs, English by its words); None where
        the batch has none. With paragraph labels (`spans_of`) only Chinese is converted: a Japanese page quoting a
        Taiwanese paragraph had its Japanese made Simplified Chinese too (駐車場 -> 驻车场)."""
        script = scores["lang_script"]
        converted = script == HANT
        parts = [i for i, (_, written) in han_parts.items() if written == HANT]
        converted[parts] = True
        scores[f"_{TO_SIMPLIFIED}"] = converted.astype(np.int64)
        if not converted.any():
            return None
        for i in parts:
            han_parts[i] = (han_parts[i][0], HANS)
        rows = np.flatnonzero(converted)
        texts = np.array(pc.fill_null(batch.column("text"), "").to_pylist(), dtype=object)
        config = self.params.to_simplified
        if spans_of is None:
            texts[rows] = to_simplified(texts[rows].tolist(), config)
        for i in rows.tolist() if spans_of is not None else ():
            code = han_parts[i][0] if i in han_parts else None  # a part's language, or all but Han's other languages
            texts[i] = _simplified_where(texts[i], spans_of[i], config, lambda label, code=code: (
                label == code if code is not None else label not in _NOT_CHINESE_HAN))
        scores["lang_script"] = np.where(script == HANT, HANS, script)
        return pa.array(texts, pa.string())

    def _titles_simplified(self, batch: pa.Table, rows: np.ndarray) -> pa.Table:
        """`batch` with the titles of the documents converted to Simplified (`rows`) converted too: a Taiwanese
        page's text was Simplified under its Traditional title."""
        if not len(rows) or "title" not in batch.column_names:
            return batch
        titles = np.array(batch.column("title").to_pylist(), dtype=object)
        named = rows[titles[rows] != None]  # noqa: E711 -- elementwise over an object array
        titles[named] = to_simplified(titles[named].tolist(), self.params.to_simplified)
        index = batch.schema.get_field_index("title")
        return batch.set_column(index, batch.schema.field(index), pa.array(titles, batch.schema.field(index).type))

    @staticmethod
    def _label_mixed(scores: dict[str, np.ndarray], spans_of: list[list[dict[str, Any]]], texts: pa.Array
                     ) -> dict[int, list[str]]:
        """Documents labelled by their paragraphs where those are mixed (`curation.stages.parts`) or are mostly in
        another language than the whole text's label (an article's code read as English): `lang` the language of
        most of their words (`curation.lang.mixed.span_sizes`), `lang_score` their paragraphs' scores weighed so.
        Returns the mixed documents: document -> its languages."""
        mixed = {}
        for i, spans in enumerate(spans_of):
            text = texts[i].as_py() if len({s["lang"] for s in spans}) > 1 else None  # one language: no words to count
            languages = mixed_languages(spans, text)
            main = next(iter(paragraph_languages(spans, text)), None)
            if languages:
                mixed[i] = languages
            if languages or (main is not None and main != scores["lang"][i]):
                sizes = np.array(span_sizes(spans, text), np.float64)
                scores["lang"][i] = main
                scores["lang_score"][i] = float(np.dot(sizes, [s["score"] for s in spans]) / max(sizes.sum(), 1))
        return mixed

    def added(self) -> dict[str, pa.DataType]:
        """`output_columns`: the label whatever `keep_scores` says (later stages read it)."""
        return self.output_columns

    def added_columns(self, batch: pa.Table, scores: dict[str, np.ndarray]) -> dict[str, pa.Array]:
        """`output_columns`: the label whatever `keep_scores` says (later stages read it)."""
        paragraphs = scores.get("_paragraphs")
        if paragraphs is None and "lang_paragraphs" in self.output_columns:
            paragraphs = self.paragraphs(batch.column("text"), scores["lang"], scores["lang_score"])
        return {column: paragraphs if column == "lang_paragraphs" else pa.array(scores[column], type=dtype)
                for column, dtype in self.output_columns.items()}
