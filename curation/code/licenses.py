"""Licences of source files: what the files say, what the repository's licence files say, and a class.

- **File headers.** An `SPDX-License-Identifier:` tag (parsed and normalised by license-expression,
  so `GPL-3.0` becomes `GPL-3.0-only`) or one of the standard notices a licence asks its users to
  put at the top of each file ("Licensed under the Apache License, Version 2.0", the GNU "either
  version 2 of the License, or (at your option) any later version" paragraph, MPL's "subject to
  the terms of the Mozilla Public License, v. 2.0"...).
- **Licence files** (LICENSE, LICENCE, COPYING, UNLICENSE, COPYRIGHT with any suffix, and REUSE's
  `LICENSES/<SPDX id>.txt`). Their text is compared with the SPDX licence texts that `identify`
  ships (choosealicense.com's 35, MIT to AGPL) by containment of word 5-gram shingles, which
  survives filled-in copyright lines, reflowed text and licences appended one after another
  (numpy's or grpcio's LICENSE lists bundled components after the project's own licence). A
  candidate must contain 75% of a reference's shingles and, where its text goes beyond another
  candidate's (BSD-3-Clause-Clear's patent sentence over BSD-3-Clause, ISC's notice-in-copies
  clause over 0BSD), half of that part; a licence whose text lies inside another found one (BSD-2 in
  BSD-3, ECL-2.0 in Apache-2.0) gives way. Files the texts miss are read for the standard
  notices and, when only a line long, for a licence name ("Apache 2.0"); a notice standing before the
  first licence text counts too (tqdm's LICENCE: MPL-2.0's notice, then MIT's text). The first licence
  of a file is the project's; what follows it describes bundled components and is not used. Licences in
  separate files are all the project's (`AND`), or alternatives (`OR`) where a licence file naming none
  says so ("either of the licenses", "at your option": cryptography, packaging).
- **Class**: ScanCode's category of each licence (its LicenseDB index, shipped inside
  license-expression): Permissive and Public Domain are `permissive`, Copyleft Limited (LGPL, MPL,
  EPL) `weak_copyleft`, Copyleft (GPL, AGPL) `copyleft`, anything else (proprietary, commercial,
  source-available...) `restricted`; nothing found or not recognised is `unknown`. An `AND`
  expression takes its most restrictive part, an `OR` its most permissive (the user may choose).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re

from license_expression import ExpressionError, LicenseSymbol, Licensing, get_spdx_licensing

CLASSES = ("permissive", "weak_copyleft", "copyleft", "restricted", "unknown")
_RANK = {c: i for i, c in enumerate(CLASSES)}
_CATEGORY = {"Permissive": "permissive", "Public Domain": "permissive", "Copyleft Limited": "weak_copyleft",
             "Copyleft": "copyleft"}

_LICENSE_FILE = re.compile(r"(?i)^(?:un)?licen[cs]es?(?:[-._ ].*)?$|^copying(?:[-._ ].*)?$|^copyright(?:\.\w+)?$")
_PLAIN_FILE = re.compile(r"(?i)^(?:(?:un)?licen[cs]e|copying|copyright)(?:\.(?:txt|md|rst|markdown))?$")
_REUSE_FILE = re.compile(r"(?:^|/)LICENSES/([A-Za-z0-9.+-]+)\.(?:txt|md)$")
_SPDX_TAG = re.compile(r"SPDX-License-Identifier:\s*([^\n]+?)\s*(?:\*/|-->|#}|\"\"\"|'''|$)", re.MULTILINE)
_COPYRIGHT_LINE = re.compile(r"(?im)^\W*(?:copyright\b|\(c\)|©).*$")
_WORD = re.compile(r"[a-z0-9]+")
# A licence file naming no licence itself that says the others are alternatives: dual licensing (OR)
_CHOICE = re.compile(r"(?i)\beither\b|at your (?:own )?option|dual[- ]licen[cs]|choose (?:either|one)")

_MIT_CONDITION = "the above copyright notice and this permission notice shall be included in all copies"
SHINGLE = 5
MIN_CONTAINMENT = 0.75  # filled-in names and reflowed lines cost a BSD-3 file up to ~0.2 of its shingles
MIN_OWN = 0.5
HEADER_CHARS = 4000

_GPL = r"(?:general public license|gpl)"
_NOTICES = [  # (pattern over lowercased words joined by single spaces, SPDX id); checked in this order
    (r"licensed under the apache license version 2 0", "Apache-2.0"),
    (r"subject to the terms of the mozilla public license v(?:ersion)? 2 0", "MPL-2.0"),
    # licences `identify` ships no text of: MPL 1.1 (its header notice, or its text's first words), Perl's dual
    # licence (the notice of every CPAN module), the Artistic License 2.0 and 1.0 (its preamble)
    (r"subject to the mozilla public license version 1 1|mozilla public license version 1 1 1 definitions",
     "MPL-1.1"),
    (r"under the same terms as (?:the )?perl(?: 5)?(?: programming language system)? itself",
     "Artistic-1.0-Perl OR GPL-1.0-or-later"),
    (r"the artistic license 2 0", "Artistic-2.0"),
    (r"the intent of this document is to state the conditions under which a package may be copied",
     "Artistic-1.0"),
    (r"gnu affero " + _GPL + r" as published by the free software foundation either version 3 of the license "
     r"or at your option any later version", "AGPL-3.0-or-later"),
    (r"gnu (?:lesser|library) " + _GPL + r" as published by the free software foundation either version "
     r"(2 1|2|3) of the license or at your option any later version", "LGPL-{}-or-later"),
    (r"gnu (?:lesser|library) " + _GPL + r" (?:as published by the free software foundation )?version (2 1|2|3)",
     "LGPL-{}-only"),
    (r"gnu " + _GPL + r" as published by the free software foundation either version (2|3) of the license or "
     r"at your option any later version", "GPL-{}-or-later"),
    (r"gnu " + _GPL + r" (?:as published by the free software foundation )?version (2|3)", "GPL-{}-only"),
    (r"python software foundation license|psf license agreement", "PSF-2.0"),
    (r"eclipse public license v(?:ersion)? 2 0", "EPL-2.0"),
    (r"eclipse public license v(?:ersion)? 1 0", "EPL-1.0"),
    (r"(?:released|licensed|distributed|available|licenced) under the (?:terms of the )?(?:the )?mit license",
     "MIT"),
    (r"(?:released|licensed|distributed|available) under (?:the )?(?:terms of the )?(?:new|modified|revised|"
     r"3 clause) bsd license", "BSD-3-Clause"),
    (r"(?:released|licensed|distributed|available) under (?:the )?(?:terms of the )?(?:simplified|2 clause|"
     r"freebsd) bsd license", "BSD-2-Clause"),
    (r"this is free and unencumbered software released into the public domain", "Unlicense"),
    # restrictions a permissive text beside them does not lift: of no permissive class whatever stands with them
    (r"commons clause", "LicenseRef-Commons-Clause"),
    (r"unauthori[sz]ed copying of this file via any medium is strictly prohibited|proprietary and confidential",
     "LicenseRef-Proprietary"),
]
_RESTRICTIONS = frozenset({"LicenseRef-Commons-Clause", "LicenseRef-Proprietary"})
_NOTICE_RES = [(re.compile(r"\b" + p + r"\b"), spdx) for p, spdx in _NOTICES]
_NAMES = {  # a licence file that is only a name
    "apache 2 0": "Apache-2.0", "apache license 2 0": "Apache-2.0", "apache license version 2 0": "Apache-2.0",
    "apache v2": "Apache-2.0", "apache2": "Apache-2.0", "mit": "MIT", "mit license": "MIT",
    "bsd 3 clause": "BSD-3-Clause", "bsd 2 clause": "BSD-2-Clause", "gplv2": "GPL-2.0-only",
    "gplv3": "GPL-3.0-only", "lgplv3": "LGPL-3.0-only", "mpl 2 0": "MPL-2.0", "public domain": "Unlicense",
}  # fmt: skip


@functools.cache
def licensing() -> Licensing:
    return get_spdx_licensing()


@functools.cache
def _categories() -> dict[str, str]:
    resource = importlib.resources.files("license_expression") / "data" / "scancode-licensedb-index.json"
    out: dict[str, str] = {}
    for entry in json.loads(resource.read_text(encoding="utf-8")):
        category = _CATEGORY.get(entry.get("category") or "", "restricted")
        for key in [entry.get("spdx_license_key"), *(entry.get("other_spdx_license_keys") or [])]:
            if key:
                out.setdefault(key.lower(), category)
    return out


def _words(text: str) -> list[str]:
    return _WORD.findall(_COPYRIGHT_LINE.sub(" ", text.lower()))


def _shingles(words: list[str]) -> dict[str, int]:
    """Shingle -> position of its first occurrence; list numbering ("1.", "(2)") is left out."""
    words = [w for w in words if not (len(w) <= 2 and w.isdigit())]
    out: dict[str, int] = {}
    for i in range(len(words) - SHINGLE + 1):
        out.setdefault(" ".join(words[i : i + SHINGLE]), i)
    return out


@functools.cache
def _references() -> list[tuple[str, frozenset[str]]]:
    from identify.vendor.licenses import LICENSES

    return [(normalize(spdx) or spdx, frozenset(_shingles(_words(text)))) for spdx, text in LICENSES]


@functools.lru_cache(maxsize=4096)  # a repository's files share a handful of expressions
def normalize(expression: str) -> str | None:
    """An SPDX expression in its canonical spelling (deprecated ids replaced); None if it does not parse."""
    try:
        return str(licensing().parse(expression, validate=True, strict=False))
    except (ExpressionError, ValueError, TypeError, AttributeError):
        return None


def _from_texts(shingles: dict[str, int]) -> list[tuple[int, str]]:
    have = set(shingles)
    found = [(spdx, ref) for spdx, ref in _references() if len(ref & have) >= MIN_CONTAINMENT * len(ref)]
    accepted = []
    for spdx, ref in found:
        beyond = [ref - other for name, other in found if name != spdx]
        if any(len(own) >= 10 and len(own & have) < MIN_OWN * len(own) for own in beyond):
            continue  # its text beyond another candidate's is missing: that other licence it is
        accepted.append((spdx, ref))
    if found and not accepted:  # each lacks its own part (Apache's text without its appendix, against ECL-2.0's)
        accepted = [max(found, key=lambda candidate: len(candidate[1] & have) / len(candidate[1]))]
    out = []
    for spdx, ref in accepted:
        inside = any(len(other) > len(ref) and len(ref & other) >= 0.8 * len(ref) for _, other in accepted)
        if not inside:
            out.append((min(shingles[s] for s in ref & have), spdx))
    return out


def _from_notices(joined: str) -> list[tuple[int, str]]:
    out = []
    for regex, spdx in _NOTICE_RES:
        m = regex.search(joined)
        if m:
            version = m.group(1) if regex.groups else None
            name = spdx.format(version.replace(" ", ".") + (".0" if " " not in version else "")) if version else spdx
            out.append((joined.count(" ", 0, m.start()), name))
    return out


def licenses_in_file(text: str) -> list[str]:
    """SPDX ids of the licences a licence file holds, in the order they appear."""
    words = _words(text)
    if not words:
        return []
    joined = " ".join(words)
    if tags := _spdx_tags(text):  # a licence file that is only a tag (`SPDX-License-Identifier: MIT`)
        return tags
    if len(words) <= 8:
        name = _NAMES.get(joined) or normalize(text.strip())
        return [name] if name else []
    # a notice before the first licence text names the project's licence too (tqdm's LICENCE: MPL-2.0's
    # Exhibit A, then MIT's text for some files); a notice inside a licence's own text comes after its start
    first = {}
    texts = _from_texts(_shingles(words))
    if _MIT_CONDITION not in joined:  # MIT No Attribution: MIT's text without its one condition (no SPDX text here)
        texts = [(at, "MIT-0" if spdx == "MIT" else spdx) for at, spdx in texts]
    for at, spdx in sorted(texts + _from_notices(joined)):
        first.setdefault(spdx, at)
    return sorted(first, key=first.__getitem__)


def _spdx_tags(text: str) -> list[str]:
    """The expressions of a text's `SPDX-License-Identifier:` tags, canonical; a tag that does not parse
    (`LicenseRef-Proprietary`, a typo) is the file's own word still: kept as written, of class unknown, never the
    repository's licence instead."""
    return list(dict.fromkeys(normalize(m.group(1)) or m.group(1)[:100] for m in _SPDX_TAG.finditer(text)))


def header_license(text: str) -> str | None:
    """The licence a source file declares in its header: SPDX tags first, then a standard notice."""
    head = text[:HEADER_CHARS]
    if tags := _spdx_tags(head):
        return " AND ".join(tags)
    lowered = head.lower()
    if "licen" not in lowered and "perl" not in lowered:  # every notice says licence/license or Perl: most stop here
        return None
    found = _from_notices(" ".join(_words(head)))
    return min(found)[1] if found else None


def is_license_file(path: str) -> bool:
    """Whether a repository file (path inside the repository) is a licence file."""
    return bool(_LICENSE_FILE.match(path.rsplit("/", 1)[-1]) or _REUSE_FILE.search(path))


def folder_license(files: dict[str, str]) -> str | None:
    """The licence expression of one folder from its licence files (name -> text).

    A plainly named file (LICENSE, COPYING.txt...) speaks for the folder; files with a suffix
    (LICENSE.APACHE, LICENSE-MIT) only when no plain one names a licence (dual-licensed projects
    such as cryptography put each licence in its own file), and their licences are alternatives (OR).
    REUSE's LICENSES/<id>.txt name their id.
    """
    plain, other, choice, reuse_only = [], [], False, True
    for name, text in sorted(files.items()):
        reuse = _REUSE_FILE.search(name)
        found = licenses_in_file(text)
        # a file's first licence is the project's (the others are its bundled components'), but a restriction
        # binds whatever stands before it (MIT's text, then the Commons Clause)
        ids = found[:1] + [spdx for spdx in found[1:] if spdx in _RESTRICTIONS]
        if reuse and (n := normalize(reuse.group(1))):
            ids = [n]
        reuse_only &= bool(reuse)
        (plain if _PLAIN_FILE.match(name.rsplit("/", 1)[-1]) else other).extend(ids)
        choice |= not ids and bool(_CHOICE.search(text))  # cryptography's LICENSE: "either of the licenses"
    chosen = list(dict.fromkeys(plain or other))
    if not chosen:
        return None
    # licences in files of their own names (LICENSE-MIT, LICENSE-APACHE: Rust's `MIT OR Apache-2.0`) are a choice;
    # REUSE's LICENSES/ holds every licence some file of the project is under
    joiner = " OR " if choice or not (plain or reuse_only) else " AND "
    return chosen[0] if len(chosen) == 1 else joiner.join(f"({c})" if " " in c else c for c in chosen)


@functools.lru_cache(maxsize=4096)
def license_class(expression: str | None) -> str:
    """permissive, weak_copyleft, copyleft, restricted or unknown (see the module doc)."""
    if not expression:
        return "unknown"
    try:
        parsed = licensing().parse(expression, validate=False, strict=False)
    except (ExpressionError, ValueError, TypeError, AttributeError):
        return "unknown"
    return _class_of(parsed) if parsed is not None else "unknown"


def _class_of(node: object) -> str:
    symbol = getattr(node, "license_symbol", node)  # `X WITH exception` is X's class
    if isinstance(symbol, LicenseSymbol):
        return _categories().get(str(symbol.key).lower(), "unknown")
    parts = [_class_of(arg) for arg in getattr(node, "args", ())]
    if not parts:
        return "unknown"
    pick = min if type(node).__name__ == "OR" else max
    return pick(parts, key=_RANK.__getitem__)
