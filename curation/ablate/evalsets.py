"""Evaluation sets read from JSONL: held-out documents, or multiple-choice items {context, choices, answer}
(HellaSwag, ARC, PIQA and the like, after a one-line conversion)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from curation import storage
from curation.yaml_model import NAME_PATTERN


class EvalSet(BaseModel):
    """An evaluation set: held-out text (`text`: loss and bits per byte) or multiple choice (`choice`: JSONL of
    {context, choices, answer}, accuracy by the log-likelihood of each choice)."""

    name: str = Field(..., pattern=NAME_PATTERN, description="The set's name in the result table.")
    path: str = Field(..., description="JSONL file (gzipped or not), or a glob of them.")
    kind: Literal["text", "choice"] = Field("text", description="text: one document per line; choice: items.")
    text_field: str = Field("text", description="text: the field holding the document.")
    max_items: int | None = Field(None, gt=0, description="Evaluate on the first N items only.")

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Choice:
    context: str
    choices: tuple[str, ...]
    answer: int  # index into choices


@dataclass
class LoadedSet:
    name: str
    kind: str  # "text" or "choice"
    texts: list[str] = field(default_factory=list)  # kind text
    items: list[Choice] = field(default_factory=list)  # kind choice

    def __len__(self) -> int:
        return len(self.texts) if self.kind == "text" else len(self.items)

    def overlap_texts(self) -> list[str]:
        """What must not be in any training document: a document, or an item's context and right answer."""
        if self.kind == "text":
            return self.texts
        return [f"{item.context} {item.choices[item.answer]}" for item in self.items]


def _choice(row: object, where: str) -> Choice:
    if not isinstance(row, dict):
        msg = f"{where}: an item is a JSON object {{context, choices, answer}}"
        raise ValueError(msg)
    context, choices, answer = row.get("context"), row.get("choices"), row.get("answer")
    if not isinstance(context, str):
        msg = f"{where}: `context` must be a string"
        raise ValueError(msg)
    if not (isinstance(choices, list) and len(choices) >= 2 and all(isinstance(c, str) for c in choices)):
        msg = f"{where}: `choices` must be a list of at least two strings"
        raise ValueError(msg)
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(choices):
        msg = f"{where}: `answer` must be the index of the right choice (0 to {len(choices) - 1}), got {answer!r}"
        raise ValueError(msg)
    return Choice(context, tuple(choices), answer)


def _text(row: object, text_field: str, where: str) -> str:
    text = row.get(text_field) if isinstance(row, dict) else None
    if not isinstance(text, str):
        msg = f"{where}: no string field {text_field!r}"
        raise ValueError(msg)
    return text


def read_set(spec: EvalSet) -> LoadedSet:
    """The set's documents or items, files in name order, lines in file order (at most `max_items`)."""
    out = LoadedSet(spec.name, spec.kind)
    for uri in sorted(storage.expand(spec.path)):
        with storage.open_text_stream(uri) as stream:
            lines = stream.read().decode("utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            if spec.max_items is not None and len(out) >= spec.max_items:
                return out
            where = f"{uri}:{number}"
            try:
                row = json.loads(line)
            except ValueError as exc:
                msg = f"{where}: not JSON ({exc})"
                raise ValueError(msg) from None
            if spec.kind == "text":
                out.texts.append(_text(row, spec.text_field, where))
            else:
                out.items.append(_choice(row, where))
    return out
