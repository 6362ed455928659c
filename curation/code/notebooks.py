"""Jupyter notebooks as the scripts they hold: code cells as they are, Markdown cells as comments, outputs left out.

A notebook file is JSON: its cells' sources among execution counts, metadata and outputs (plots as base64 PNG, tables
as HTML), which are not code a model should learn, and made a notebook with a plot `encoded_data` to `code_filters`.
StarCoder trained on notebooks converted to scripts (its `jupyter-scripts`, made with jupytext, Markdown cells as
comments); this is that conversion, in jupytext's "light" shape: each cell's source, one blank line between cells,
a Markdown cell's lines commented in the kernel's language. Raw cells are left out (their format is unknown), as
are outputs. nbformat 4 (cells) and 3 (worksheets of cells, code under `input`) are read.
"""

from __future__ import annotations

import json
from typing import Any

# The line comment of a kernel's language (`metadata.kernelspec.language`, else `metadata.language_info.name`);
# any other is commented with `#`, as Python, R, Julia, Ruby and shells are
_COMMENTS = {
    **dict.fromkeys(("c", "c++", "cpp", "c#", "csharp", "java", "javascript", "typescript", "scala", "kotlin",
                     "go", "rust", "swift", "groovy", "dart", "f#", "fsharp"), "//"),
    **dict.fromkeys(("matlab", "octave", "wolfram language", "mathematica"), "%"),
    **dict.fromkeys(("sql", "haskell", "lua"), "--"),
}


def kernel_language(notebook: dict[str, Any]) -> str:
    """The language a notebook's code cells are written in, lowercased (`python` where it says none)."""
    metadata = notebook.get("metadata") if isinstance(notebook.get("metadata"), dict) else {}
    for key in ("kernelspec", "language_info"):
        entry = metadata.get(key)
        name = entry.get("language" if key == "kernelspec" else "name") if isinstance(entry, dict) else None
        if isinstance(name, str) and name.strip():
            return name.strip().lower()
    return "python"


def notebook_script(raw: str) -> tuple[str, str]:
    """The script a notebook's JSON holds, and its kernel's language; `ValueError` saying why where `raw` is no
    notebook (not JSON, or JSON without cells)."""
    try:
        notebook = json.loads(raw)
    except ValueError as exc:
        msg = f"not JSON ({exc})"
        raise ValueError(msg) from None
    if not isinstance(notebook, dict):
        msg = f"a JSON {type(notebook).__name__}, not a notebook"
        raise ValueError(msg)
    cells = notebook.get("cells")
    if cells is None and isinstance(notebook.get("worksheets"), list):  # nbformat 3
        cells = [c for sheet in notebook["worksheets"] if isinstance(sheet, dict) for c in sheet.get("cells") or []]
    if not isinstance(cells, list):
        msg = "no cells"
        raise ValueError(msg)
    language = kernel_language(notebook)
    comment = _COMMENTS.get(language, "#")
    parts = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        source = _text(cell.get("source", cell.get("input")))  # nbformat 3 keeps a code cell's under `input`
        if not source.strip():
            continue
        if kind == "code":
            parts.append(source.rstrip())
        elif kind in ("markdown", "heading"):
            parts.append("\n".join(f"{comment} {line}".rstrip() for line in source.rstrip().splitlines()))
    return "\n\n".join(parts) + ("\n" if parts else ""), language


def _text(source: Any) -> str:
    """A cell's source: a string, or the list of lines nbformat writes."""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""
