"""Share of a source file that is comments (docstrings count for Python), by comment syntax family.

One regex per family matches, left to right, string literals (skipped, so `"//"` in a string is
no comment) and comments (counted); Python's statement-level triple-quoted strings are docstrings
and count as comments, as in BigCode's comment-ratio filter (SantaCoder, Ben Allal et al. 2023).
Languages outside these families get NaN, which no bound rejects.
"""

from __future__ import annotations

import re

_STR = r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
_C_LIKE = re.compile(rf"(?P<s>{_STR}|`(?:\\.|[^`\\])*`)|(?P<c>//[^\n]*|/\*[\s\S]*?(?:\*/|\Z))")
_HASH = re.compile(rf"(?P<s>{_STR})|(?P<c>#[^\n]*)")
# Every alternative starts with a quote or `#`, so the regex engine skips ahead to those characters;
# whether a triple-quoted string is a docstring is decided after the match (`_is_docstring`).
_PYTHON = re.compile(rf"(?P<s>\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'''[\s\S]*?(?:'''|\Z)|{_STR})|(?P<c>#[^\n]*)")
_DASH = re.compile(
    rf"(?P<s>{_STR})|(?P<c>--\[(?P<eq>=*)\[[\s\S]*?\](?P=eq)\]|--[^\n]*|\{{-[\s\S]*?-\}}|/\*[\s\S]*?\*/)"
)
_PERCENT = re.compile(rf"(?P<s>{_STR})|(?P<c>%[^\n]*)")
_SEMICOLON = re.compile(r"(?P<s>\"(?:\\.|[^\"\\])*\")|(?P<c>;[^\n]*|#\|[\s\S]*?\|#)")
_MARKUP = re.compile(r"(?P<c><!--[\s\S]*?(?:-->|\Z))")
_CSS = re.compile(rf"(?P<s>{_STR})|(?P<c>/\*[\s\S]*?(?:\*/|\Z))")
_SCSS = _C_LIKE
_BANG = re.compile(rf"(?P<s>{_STR})|(?P<c>![^\n]*)")

_FAMILIES: dict[str, re.Pattern[str]] = {}
for _names, _regex in [
    ("c c++ c# java javascript typescript go rust swift kotlin scala dart objective-c objective-c++ groovy "
     "proto cuda hlsl metal solidity zig php d vala verilog system-verilog jsonnet json5 gleam thrift "
     "idl cue prisma astro svelte-script", _C_LIKE),
    ("python cython gyp scons wsgi twisted tiltfile", _PYTHON),
    ("shell ruby perl r yaml toml makefile dockerfile cmake powershell nim julia elixir crystal coffee tcl "
     "nix terraform hcl gitignore dotenv graphql bazel starlark meson puppet awk fish", _HASH),
    ("sql haskell lua luau elm ada vhdl purescript idris literate-haskell", _DASH),
    ("tex erlang matlab prolog bib", _PERCENT),
    ("clojure clojurescript scheme lisp asm edn", _SEMICOLON),
    ("html xml xhtml markdown vue svelte xsl xsd svg", _MARKUP),
    ("css", _CSS),
    ("scss less sass stylus", _SCSS),
    ("fortran", _BANG),
]:
    _FAMILIES.update(dict.fromkeys(_names.split(), _regex))


def has_comment_syntax(language: str | None) -> bool:
    return language in _FAMILIES


def comment_fraction(text: str, language: str | None) -> float:
    """Characters in comments (and Python docstrings) over all non-blank characters; NaN if unknown."""
    regex = _FAMILIES.get(language or "")
    if regex is None:
        return float("nan")
    total = len(text) - sum(text.count(c) for c in " \t\n\r")
    if total <= 0:
        return float("nan")
    in_comments = 0
    for m in regex.finditer(text):
        comment = m.group("c")
        if comment is None and regex is _PYTHON and _is_docstring(text, m.start(), m.group("s")):
            comment = m.group("s")
        if comment:
            in_comments += len(comment) - sum(comment.count(c) for c in " \t\n\r")
    return in_comments / total


def _is_docstring(text: str, start: int, string: str) -> bool:
    """A triple-quoted string that is a statement of its own: only a string prefix before it on its line."""
    if not string.startswith(('"""', "'''")):
        return False
    line_start = text.rfind("\n", 0, start) + 1
    return text[line_start:start].strip(" \t").lstrip("rRuU") == ""
