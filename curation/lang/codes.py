"""Language codes as recipes write them -> the codes the `langid` stage writes in `lang` (and `lang_script`).

Every stage key that names languages (`langid`'s `keep` and `min_score`, `html_langid`'s `keep`, the
`languages:` maps of the per-language filters, `toxicity`'s `languages`) reads its codes through
`language_tag` or `language_code`, so that one spelling means the same language everywhere and a code no
stage could ever meet is refused before any work starts.

Accepted: ISO 639-1 (`zh`, `de`), ISO 639-2/B and /T (`chi`, `zho`, `ger`, `deu`, `fre`, `fra`), ISO 639-3
(`cmn` and `arb`, which lid.176 labels by their macrolanguage, become `zh` and `ar`; `nob` -> `nb`), deprecated
codes (`iw` -> `he`) and BCP-47 tags with script and region subtags, in any case, with `-` or `_` (`zh-CN`,
`zh_TW`, `zh-Hans`, `zh-Hant-TW`, `en-US`, `pt-BR`, `sr-Latn`). The parsing and the ISO 639 and BCP-47 data are
the `langcodes` package's (with `language_data`: CLDR's likely subtags and language names), not a table here.
The output is ISO 639-1 where one exists, else the three-letter code, and lid.176's own spelling for the few
codes `langcodes` would rewrite (`_MODEL_SPELLINGS`).

Regions: the langid stage labels languages, not countries, so a region is dropped (`en-US` and `en-GB` are `en`),
except where it is the convention for a script: `zh-CN`, `zh-SG` (and `zh-MY`) mean Simplified Chinese, `zh-TW`,
`zh-HK`, `zh-MO` Traditional (CLDR's likely subtags).

Scripts: `TWO_SCRIPTS` lists the languages the langid stage labels with a script (`lang_script`), because they are
written in two; `zh-Hans` / `zh-Hant` (and `yue`, `wuu`) are told apart by OpenCC's data
(`curation.lang.han_script`), the others (`sr-Cyrl` / `sr-Latn`, `uz`, `az`...) by the text's dominant script.
A script subtag of another language must be its one script (`en-Latn` is `en`; `en-Cyrl` is refused).

Refused, with a hint: codes that are no language (`english` -> did you mean `en`?; `cn`, a country -> `zh`;
`zhs`, `chn` and other spellings of Chinese -> `zh`; `zh-Latn`, a script the stage never labels zh with). The hint
comes from the language's name, a country's likely language (CLDR) or the Chinese spellings; codes of real
languages no model here outputs (`ab`) are refused by the stages that know their model's labels, with the same hint.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import NamedTuple

import langcodes

UNKNOWN = "unknown"  # the langid stage's label of text in no language its model knows

# Languages written in two scripts, as the langid stage labels them (`lang_script`). Chinese languages: Simplified
# or Traditional characters (OpenCC); the others: the dominant Unicode script of the text (CLDR lists both scripts
# as in use for each).
HAN_SCRIPTS = ("Hans", "Hant")
HAN_COMMON = "Hani"
"""`lang_script` of Chinese text with no character that only one of the two scripts writes: it is both."""
TWO_SCRIPTS: dict[str, tuple[str, ...]] = {
    "zh": HAN_SCRIPTS, "yue": HAN_SCRIPTS, "wuu": HAN_SCRIPTS,
    "sr": ("Cyrl", "Latn"), "bs": ("Latn", "Cyrl"), "sh": ("Latn", "Cyrl"), "uz": ("Latn", "Cyrl"),
    "az": ("Latn", "Cyrl"), "kk": ("Cyrl", "Latn"), "tt": ("Cyrl", "Latn"), "mn": ("Cyrl", "Mong"),
    "pa": ("Guru", "Arab"), "ku": ("Latn", "Arab"), "ms": ("Latn", "Arab"),
}

# Individual languages of the ISO 639-3 macrolanguage `zh` that have codes of their own (lid.176 labels two of
# them, `yue` and `wuu`); `cmn` (Mandarin) is what lid.176 and this stage call `zh`.
CHINESE_VARIETIES: dict[str, str] = {
    "yue": "Cantonese", "wuu": "Wu", "gan": "Gan", "hak": "Hakka", "nan": "Min Nan", "cdo": "Min Dong",
    "cjy": "Jin", "cpx": "Pu-Xian", "czh": "Huizhou", "czo": "Min Zhong", "hsn": "Xiang", "mnp": "Min Bei",
    "lzh": "Literary Chinese", "cnp": "Northern Ping", "csp": "Southern Ping",
}

# lid.176 codes `langcodes` would rewrite (to a newer code or to their macrolanguage's): kept as the model writes
# them, since they are what `lang` holds. `sh` is lid.176's Serbo-Croatian, `tl` its Tagalog, `bh` its Bihari.
_MODEL_SPELLINGS = frozenset({"bcl", "bh", "bxr", "diq", "eml", "mhr", "pnb", "sh", "tl"})
# Where the langid stage labels a language otherwise than `langcodes` writes it: Tagalog (`tgl`, `tl`) is Filipino
# to `langcodes`, `tl` to lid.176; Serbo-Croatian `hbs` is lid.176's `sh` (keeping bs, hr and sr), not Latin-script
# Serbian; individual languages the stage labels by their macrolanguage, as it maps a model's labels (`twi`, `pbt`...).
_AS_LABELLED = {"fil": "tl", "hbs": "sh", "twi": "tw", "pbt": "ps", "pbu": "ps", "quy": "qu",
                "quz": "qu", "fuv": "ff"}
# .NET's and Windows' old names of the two scripts, which `langcodes` would read as bare `zh`.
_LEGACY_CHINESE = {"zh-chs": "Hans", "zh-cht": "Hant"}
# What a Chinese team may type for Chinese that is no code of it (`chn` is Chinook, `ch` Chamorro, `cht` Cholón):
# each hinted at `zh`.
_CHINESE_LOOKALIKES = ("zh", "ch", "cn", "hans", "hant", "hani")

_HINT = ("language codes are ISO 639-1 (`zh`, `de`), ISO 639-2/3 (`zho`, `deu`) or BCP-47 tags (`zh-Hant`, "
         "`pt-BR`)")


class LanguageTag(NamedTuple):
    """A language as the langid stage labels it: `code` (its `lang`) and, for a language of `TWO_SCRIPTS`, the
    script asked for (its `lang_script`; None: either)."""

    code: str
    script: str | None = None

    def __str__(self) -> str:
        return f"{self.code}-{self.script}" if self.script else self.code


def language_code(raw: str) -> str:
    """`raw` (any spelling of a language, see the module doc) -> the langid stage's code; the script and
    region are dropped (for settings that are per language: Traditional and Simplified Chinese share them)."""
    return language_tag(raw).code


@cache
def language_tag(raw: str) -> LanguageTag:
    """`raw` -> (the langid stage's code, the script it asks for or None); ValueError with a hint if no language."""
    text = str(raw).strip()
    bare = text.lower()
    if bare in _MODEL_SPELLINGS or bare == UNKNOWN:
        return LanguageTag(bare)
    if bare in _AS_LABELLED:
        return LanguageTag(_AS_LABELLED[bare])
    if bare.replace("_", "-") in _LEGACY_CHINESE:
        return LanguageTag("zh", _LEGACY_CHINESE[bare.replace("_", "-")])
    tag = text.replace("_", "-")
    try:
        parsed = langcodes.Language.get(tag, normalize=True)
        # Macrolanguages for three-letter codes only (cmn -> zh, arb -> ar): a two-letter code is what it says
        # (`tw` is Twi, not its macrolanguage Akan: a typed `tw` is more likely Taiwan, see `did_you_mean`).
        macro = len(tag.partition("-")[0]) > 2
        standard = langcodes.Language.get(langcodes.standardize_tag(tag, macro=macro))
    except (langcodes.LanguageTagError, ValueError):
        parsed = standard = None
    code = standard.language if standard is not None else None
    if standard is None or not code or not code.isalpha() or len(code) > 3 or not parsed.is_valid():
        msg = f"{raw!r} is no language code: {_HINT}{did_you_mean(text)}"
        raise ValueError(msg)
    code = _AS_LABELLED.get(code, code)
    return LanguageTag(code, _script(raw, code, standard))


def _script(raw: str, code: str, tag: langcodes.Language) -> str | None:
    """The script `tag` asks for: written, or implied by a Chinese region; None where the language has one."""
    scripts = TWO_SCRIPTS.get(code)
    script = tag.script
    if script is None and tag.territory and scripts == HAN_SCRIPTS:
        script = tag.maximize().script  # zh-TW -> Hant, zh-CN -> Hans (CLDR's likely subtags)
    if script is None or (script == HAN_COMMON and scripts == HAN_SCRIPTS):
        return None  # `Hani` (FineWeb-2's `cmn_Hani`): Han characters, either script
    if scripts is not None:
        if script not in scripts:
            msg = f"{raw!r}: {code} is labelled {' or '.join(f'{code}-{s}' for s in scripts)}, never {code}-{script}"
            raise ValueError(msg)
        return script
    own = langcodes.Language.get(code).maximize().script
    if script != own:
        msg = (f"{raw!r}: labels name {code} without a script ({own} here); write {code}, which keeps {code} in "
               f"whatever script the model names it: the shipped lid.176 knows {code} in {own} only ({code} in "
               f"{script} letters it labels as other languages, often en), a model naming {script} too (GlotLID, "
               "langid's `model:`) labels that text "
               f"{code}")
        raise ValueError(msg)
    return None


def did_you_mean(raw: str) -> str:
    """`; did you mean zh?` for a language's name (`chinese`, `Mandarin`) or a country code (`cn`, `tw`), else ''."""
    text = str(raw).strip()
    guess: str | None = None
    try:
        guess = str(language_tag(langcodes.find(text).to_tag())) if text.isalpha() and len(text) > 3 else None
    except (LookupError, ValueError):
        guess = None
    if guess is None and len(text) == 2 and text.isalpha():
        region = langcodes.Language.get(f"und-{text.upper()}")
        likely = region.maximize()
        if not region.territory_name().startswith("Unknown") and likely.language:
            try:
                guess = f"{language_tag(f'{likely.language}-{text.upper()}')} ({text.upper()} is a country code)"
            except ValueError:
                guess = None
    if guess is None and text.lower().startswith(_CHINESE_LOOKALIKES):
        guess = "zh (zh-Hans, zh-Hant for one script)"
    return f"; did you mean {guess}?" if guess else ""


def chinese_alone(codes: Iterable[LanguageTag | str]) -> str | None:
    """The refusal of a language list that names Chinese varieties (`yue`, `wuu`...) but not `zh`: lid.176 labels
    Standard (Mandarin) Chinese `zh`, so such a list keeps or judges no Mandarin. None when the list is fine."""
    named = {str(c).partition("-")[0] for c in codes}
    varieties = sorted(named & set(CHINESE_VARIETIES))
    if not varieties or "zh" in named:
        return None
    which = ", ".join(f"{c} is {CHINESE_VARIETIES[c]}" for c in varieties)
    return (f"{which}, not Standard (Mandarin) Chinese, which is `zh`: with {varieties} alone Mandarin documents "
            f"are left out; write [zh, {', '.join(varieties)}] for both, or zh for Mandarin")
