"""A filter's detail for each document it drops: the score its reason names and the bound that score broke.

A filter's reason names a rule (`too_few_words`, `line_punct_ratio`, `dup_5gram`); its scores and parameters are named
after what they measure (`gopher_words`, `fw_line_punct_ratio`, `min_words`). The detail of a drop is the scores
sharing most words with the reason, and the bound: the document's own where the filter sets one per document (`_...`:
a language's threshold, Gopher's bound for each n), else the parameter the reason names, as `gopher_words=32,
min_words=50`. A filter that says more (langid's labels, a dedup's survivor) gives its own details instead.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

_NGRAM_REASON = re.compile(r"^(top|dup)_(\d+)gram$")
_LOWER, _UPPER = frozenset({"few", "short", "low"}), frozenset({"many", "long", "high"})
_NOT_NAMES = _LOWER | _UPPER | {"too", "min", "max", "gopher", "c4", "fineweb", "fw"}


def _words(name: str) -> set[str]:
    return set(name.strip("_").split("_")) - _NOT_NAMES


def named_by(reason: str | None, values: dict[str, Any]) -> list[str]:
    """The keys of scores (or params) sharing most words with `reason` and holding fewest others (`gopher_words`
    for `too_few_words`, not `gopher_stop_words`), per-document bounds (`_...`) last."""
    want = _words(reason or "")
    fit = {key: (len(want & _words(key)), -len(_words(key) - want)) for key, v in values.items()
           if isinstance(v, np.ndarray | int | float) and not isinstance(v, bool)}
    best = max(fit.values(), default=(0, 0))
    return sorted((key for key, f in fit.items() if f == best and best[0]), key=lambda key: key.startswith("_"))


def _bound(reason: str, params: dict[str, Any]) -> list[str]:
    """The parameters bounding what `reason` names: `min_...` for a reason of too few, `max_...` of too many."""
    keys = [key for key in named_by(reason, params) if _words(reason) <= _words(key)]
    side = "min_" if set(reason.split("_")) & _LOWER else "max_" if set(reason.split("_")) & _UPPER else ""
    return [key for key in keys if key.startswith(side)] or keys


def number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float | np.floating) else str(value)


def deciding_details(reasons: np.ndarray, mask: np.ndarray, scores: dict[str, Any], params: dict[str, Any],
                     explained: dict[str, str | tuple[str, ...]] | None = None) -> pa.Array:
    """Per row, the detail of its drop (see the module doc); null where kept. `explained`: for a reason no score is
    named after, its detail (a text) or the score and parameter keys that give it."""
    details = np.full(len(mask), None, dtype=object)
    numeric = {key: v for key, v in params.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    explained = {"empty": "no text", **(explained or {})}
    for reason in {r for r in reasons[~mask] if r}:
        rows = np.flatnonzero(~mask & (reasons == reason))
        given = explained.get(reason)
        if isinstance(given, str):
            details[rows] = given
            continue
        if given is not None:  # a per-document bound (`_max_x`) where the scores hold one, else the parameter
            given = [key if key in scores or key in numeric else key.lstrip("_") for key in given]
            details[rows] = [", ".join(f"{key}={number(scores[key][row] if key in scores else numeric[key])}"
                                       for key in given) for row in rows.tolist()]
            continue
        named = named_by(reason, scores)
        if not named:
            continue
        columns = [(key, scores[key][rows]) for key in named]
        gram = _NGRAM_REASON.match(reason)
        bounds = scores.get(f"_{gram.group(1)}_bounds") if gram else None  # gopher_repetition's, one per n
        if isinstance(bounds, dict) and int(gram.group(2)) in bounds:
            columns.append(("bound", np.broadcast_to(bounds[int(gram.group(2))], len(mask))[rows]))
        elif not any(key.startswith("_") for key in named):  # no bound per document: the stage's own
            columns += [(key, np.full(len(rows), numeric[key])) for key in _bound(reason, numeric)]
        for i, row in enumerate(rows.tolist()):
            details[row] = ", ".join(f"{key}={number(values[i])}" for key, values in columns)
    return pa.array(details, pa.string())
