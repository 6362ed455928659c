"""The language of a source file from its name, extension or shebang line.

The mapping is `identify`'s (the file classifier pre-commit uses: 340+ extensions, special file
names such as `Makefile` or `Dockerfile`, and script interpreters), not a hand list. identify
gives a set of tags per file ({'text', 'python'}, {'text', 'header', 'c', 'c++'}); the language
is the tag that is not about encoding or kind, and where several remain (a `.h` file, `bash`
and `shell`) the most general one: the tag identify attaches to the most extensions (`c++` over
`header`, `shell` over `bash`, `xml` over `msbuild`), with linguist's choice for the few cases
that rule gets wrong (`.ipynb` is Jupyter; a `.h` is C unless its text shows C++ or Objective-C), and
linguist's names for the few extensions identify lacks (`.f`, `.el`, `.lisp`, `.rkt`, `.tcl`, `.d`...).
Plain-text files (README, LICENSE, .txt) are `text`.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections import Counter

from identify import extensions, interpreters
from identify.identify import ENCODING_TAGS, MODE_TAGS, TYPE_TAGS, tags_from_filename, tags_from_interpreter

TEXT = "text"
# Tags that say what kind of file it is, not which language it is written in.
_NOT_LANGUAGES = TYPE_TAGS | MODE_TAGS | ENCODING_TAGS | {
    "header", "image", "audio", "video", "font", "archive", "plain-text", "binary",
}
NOTEBOOK = "jupyter"  # a Jupyter notebook's language name (`curation.code.notebooks` reads it as a script)
_PREFERRED = {"h": "c", "ipynb": NOTEBOOK}  # linguist's default where "most general" is wrong
# Extensions of languages GitHub linguist knows and identify does not (The Stack holds them), by linguist's name
_MORE_EXTENSIONS = {
    "f": "fortran", "for": "fortran", "el": "emacs-lisp", "lisp": "common-lisp", "lsp": "common-lisp",
    "cl": "common-lisp", "rkt": "racket", "tcl": "tcl", "d": "d", "ada": "ada", "adb": "ada", "ads": "ada",
    "cob": "cobol", "cbl": "cobol", "vhdl": "vhdl", "awk": "awk", "hx": "haxe",
}  # fmt: skip
# What tells a `.h` of C++ or Objective-C from one of C (C is linguist's default): directives and keywords C lacks
_OBJECTIVE_C = re.compile(r"^\s*(?:@(?:interface|protocol|property|end|implementation|class)\b|#import\s)", re.M)
_CPP = re.compile(r"^\s*(?:template\s*<|namespace\s+\w+\s*\{|class\s+\w+[^;]*\{|(?:public|private|protected):|"
                  r"#\s*include\s*<(?:string|vector|map|memory|iostream|cstdint|cstddef|array|utility|functional)>)"
                  r"|\bstd::\w", re.M)
HEAD_CHARS = 8192
"""Characters of a file's start that `detect_language` reads: its shebang line, a header's C++ or Objective-C."""
_GCC_DEPENDENCIES = re.compile(r"^[^\s:#]+\.o\s*:")  # a `.d` that gcc -MD wrote is make's, not D's
_ALIASES = {  # identify's short or dialect tags -> the language name used in meta and recipes
    "ts": "typescript", "tsx": "typescript", "jsx": "javascript", "pyi": "python", "pyz": "python",
    "c#script": "c#", "f#script": "f#", "python2": "python", "python3": "python",
}  # fmt: skip


# GitHub linguist's names (The Stack's `lang` column) whose identify tag is spelt otherwise
_LINGUIST = {
    "jupyter notebook": NOTEBOOK, "batchfile": "batch", "protocol buffer": "proto", "visual basic": "vb",
    "visual basic .net": "vb", "assembly": "asm", "coffeescript": "coffee",
}  # fmt: skip


def language_of_label(label: str) -> str:
    """The language name of a table's label (The Stack's linguist names: `Jupyter Notebook` -> `jupyter`), as files
    of that language read from a folder are named, so that `code_filters: {languages: ...}` selects both alike."""
    name = label.strip().lower()
    return _LINGUIST.get(name, _ALIASES.get(name, name))


@functools.cache
def _generality() -> Counter[str]:
    counts: Counter[str] = Counter()
    for tags in (*extensions.EXTENSIONS.values(), *extensions.NAMES.values(), *interpreters.INTERPRETERS.values()):
        counts.update(tags)
    return counts


def language_from_tags(tags: set[str] | frozenset[str], extension: str = "") -> str | None:
    """The language among identify tags (None when they name no language)."""
    if extension in _PREFERRED and _PREFERRED[extension] in tags:
        return _PREFERRED[extension]
    if "binary" in tags:
        return None
    candidates = [t for t in tags if t not in _NOT_LANGUAGES]
    if not candidates:
        return TEXT if "plain-text" in tags else None
    generality = _generality()
    best = max(candidates, key=lambda t: (generality[t], t))
    return _ALIASES.get(best, best)


def shebang_interpreter(head: str) -> str | None:
    """The interpreter a `#!` first line names (`/usr/bin/env -S python3 -u` -> `python3`)."""
    if not head.startswith("#!"):
        return None
    line = head[2:].split("\n", 1)[0].strip()
    try:
        parts = shlex.split(line)
    except ValueError:  # unbalanced quotes: split as the kernel does
        parts = line.split()
    if parts[:1] == ["/usr/bin/env"] or (parts and parts[0].endswith("/env")):
        parts = [p for p in parts[1:] if not p.startswith("-") and "=" not in p]
    return parts[0].rsplit("/", 1)[-1] if parts else None


def detect_language(path: str, head: str = "") -> str | None:
    """Language of the file at `path` (inside its repository) whose text starts with `head`."""
    name = path.rsplit("/", 1)[-1]
    extension = name.rsplit(".", 1)[-1].lower() if "." in name.lstrip(".") else ""
    language = language_from_tags(tags_from_filename(name), extension) or _MORE_EXTENSIONS.get(extension)
    if extension == "h" and head:
        return "objective-c" if _OBJECTIVE_C.search(head) else "c++" if _CPP.search(head) else "c"
    if extension == "d" and _GCC_DEPENDENCIES.match(head):
        return "makefile"
    if language is not None and language != TEXT:
        return language
    interpreter = shebang_interpreter(head) if head else None
    if interpreter:
        scripted = language_from_tags(tags_from_interpreter(interpreter))
        if scripted is not None:
            return scripted
    return language


def is_binary_name(path: str) -> bool:
    """Whether identify knows the file name as a binary format (images, archives, fonts...)."""
    return "binary" in tags_from_filename(path.rsplit("/", 1)[-1])


def known_languages() -> frozenset[str]:
    """Every language name `detect_language` can return (for validating recipe keep lists)."""
    names = {TEXT}
    for tags in (*extensions.EXTENSIONS.values(), *extensions.NAMES.values(), *interpreters.INTERPRETERS.values()):
        language = language_from_tags(tags)
        if language:
            names.add(language)
        names.update(_ALIASES.get(t, t) for t in tags if t not in _NOT_LANGUAGES)
    names.update(_PREFERRED.values(), _MORE_EXTENSIONS.values(), ("objective-c", "makefile"))
    return frozenset(names)
