"""Secret redaction (`code_secrets`): API keys, tokens, private keys and passwords become a placeholder.

Detection is `curation.code.secrets` (detect-secrets' plugins, whole private-key blocks, and the
checks that keep examples and references out). Two RE2 patterns run column-wise over the batch
first, so the Python plugins only see files that mention a token shape or a secret keyword.
Tallies per kind go to stats.json under the stage's `counts`.
"""

from __future__ import annotations

import json
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.code.secrets import CREDENTIAL_FILE_HINT, KEYWORD_HINT, KINDS, TOKEN_HINT, find_secrets
from curation.stages.base import Processed, Resources, Stage, StageParams, with_text

Kind = Literal["private_key", "aws", "github", "gitlab", "slack", "jwt", "password", "api_key"]


class CodeSecretsParams(StageParams):
    redact: list[Kind] = Field(
        default_factory=lambda: list(KINDS),
        description="Kinds to redact: private_key, aws, github, gitlab, slack, jwt, password (keyword assignments "
        "and URL credentials), api_key (Stripe, Twilio, SendGrid, npm, PyPI, OpenAI, Discord, Telegram, Azure...).",
    )
    placeholder: str = Field("<SECRET>", description="What a secret becomes.")
    placeholders: dict[Kind, str] = Field(default_factory=dict, description="A different placeholder per kind.")
    max_secrets: int | None = Field(
        None, ge=0, description="Drop files with more secrets than this (`too_many_secrets`); default: never drop.")


def _path_and_language(raw: str | None) -> tuple[str, str | None]:
    try:
        meta = json.loads(raw) if raw else {}
    except ValueError:
        return "", None
    if not isinstance(meta, dict):
        return "", None
    return str(meta.get("path") or ""), meta.get("language")


class CodeSecrets(Stage):
    """Replace secrets in source files with a placeholder; never drops by default (see the module doc)."""

    name = "code_secrets"
    Params = CodeSecretsParams
    resources = Resources(cpus=0.5)
    input_columns = ("text", "meta")
    count_keys = KINDS

    def redact_text(self, text: str, path: str = "", language: str | None = None, *, tokens: bool = True,
                    keywords: bool = True) -> tuple[str, dict[str, int]]:
        """The text with its secrets replaced, and how many of each kind."""
        p = self.params
        counts = dict.fromkeys(KINDS, 0)
        parts, at = [], 0
        for start, end, kind in find_secrets(text, path, language, tokens=tokens, keywords=keywords):
            if kind not in p.redact:
                continue
            parts += [text[at:start], p.placeholders.get(kind, p.placeholder)]
            at = end
            counts[kind] += 1
        return ("".join(parts) + text[at:] if parts else text), counts

    def process(self, batch: pa.Table) -> Processed:
        n = batch.num_rows
        column = pc.fill_null(batch.column("text"), "")
        tokens = pc.match_substring_regex(column, TOKEN_HINT).to_numpy(zero_copy_only=False)
        keywords = pc.match_substring_regex(column, KEYWORD_HINT).to_numpy(zero_copy_only=False)
        counts = {kind: np.zeros(n, dtype=np.int64) for kind in KINDS}
        texts = batch.column("text").to_pylist()
        metas = batch.column("meta").to_pylist() if "meta" in batch.column_names else [None] * n
        if "meta" in batch.column_names:
            meta = pc.fill_null(batch.column("meta"), "")
            keywords |= pc.match_substring_regex(meta, CREDENTIAL_FILE_HINT).to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(tokens | keywords):
            path, language = _path_and_language(metas[i])
            texts[i], found = self.redact_text(texts[i], path, language, tokens=bool(tokens[i]),
                                               keywords=bool(keywords[i]))
            for kind, count in found.items():
                counts[kind][i] = count
        table = with_text(batch, pa.array(texts, pa.string()))
        reasons = pa.nulls(n, pa.string())
        if self.params.max_secrets is not None:
            total = sum(counts.values())
            reasons = pa.array(np.where(total > self.params.max_secrets, "too_many_secrets", None), pa.string())
        return Processed(table, reasons, counts=counts)
