"""Code filters (`code_filters`): licence and language keep rules, then The Stack / StarCoder file rules.

Reads what the `code` reader put in `meta` (`path`, `language`, `license`, `license_class`); rows
without it (a JSONL source) have an unknown language and licence. Rules, in the order a dropped
file reports them:

- `license_not_kept`: licence class not in `licenses` (off; The Stack keeps permissive licences only).
- `language_not_kept`, `unknown_language`, `plain_text`: the language keep list (off), no language
  detected, README/LICENSE/.txt files (The Stack's language selection).
- `lock_file`, `vendored`: package-manager lock files, vendored folders (linguist's `vendor.yml`).
- `generated`: a generator marker in the first 30 lines or a generated file name (`_pb2.py`,
  `.pb.go`; linguist's `generated.rb`, StarCoder's header keywords).
- `minified`: a `.min.js`-style name, or a web language (JS, TS, CSS, JSON, HTML...) breaking the
  line rules below.
- `encoded_data`: base64/hex/`\\u` runs over half the file or one run over 1,024 chars (StarCoder2).
- `long_lines`, `long_mean_line`, `low_alnum`: longest line over 1,000, mean line over 100,
  alphanumeric share under 0.25 (Codex, The Stack, StarCoder).
- `data_like`: over half of the tokens are number literals (tables pasted into code).
- `too_short`, `too_long`: under 10 non-blank characters, over 1,000,000 characters (The Stack's cap).
- `data_file_size`: JSON/YAML/CSV/XML/TOML outside 50-5,000 characters (StarCoder).
- `too_few_comments`, `mostly_comments`: comment-share bounds (off; BigCode tried 0.01 and 0.8 in
  SantaCoder, where the upper bound also drops well-documented modules).
"""

from __future__ import annotations

import json
from typing import ClassVar, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator

from curation.code.comments import comment_fraction
from curation.code.licenses import CLASSES, is_license_file
from curation.code.paths import generated_name, is_lock_file, is_vendored, minified_name
from curation.code.source_language import TEXT, known_languages
from curation.code.stats import encoded_data, generator_marker, text_stats
from curation.stages.base import DocumentFilter, Processed, Resources

LicenseClass = Literal["permissive", "weak_copyleft", "copyleft", "restricted", "unknown"]
WEB_LANGUAGES = frozenset({"javascript", "typescript", "css", "scss", "less", "json", "html", "xhtml", "svg",
                           "map", "vue", "svelte", "handlebars"})
DATA_LANGUAGES = ["json", "yaml", "csv", "tsv", "xml", "geojson", "toml"]
# markup a licence text is written in (`LICENSE.md`, `COPYING.rst`); `license.py` is code
_PROSE = frozenset({"markdown", "rst", "asciidoc", "html", "org"})
_ENCODED_HINT = r"[A-Za-z0-9+/=]{64}|(?:[0-9a-fA-F]{2}[, ]+){8}|(?:\\u[0-9a-fA-F]{4}){8}"


class CodeFilterParams(DocumentFilter.Params):
    licenses: list[LicenseClass] | None = Field(
        None, description="Keep files whose licence class is one of these (permissive, weak_copyleft, copyleft, "
        "restricted, unknown); default: any. The Stack keeps [permissive].")
    languages: list[str] | None = Field(
        None, description="Keep only these languages (identify's names: python, javascript, c++, shell...); "
        "default: any detected language.")
    drop_unknown_language: bool = Field(True, description="Drop files whose language is not detected.")
    drop_plain_text: bool = Field(True, description="Drop plain-text files (README, LICENSE, .txt) and licence "
                                  "texts whatever their suffix (LICENSE.md, COPYING.rst); a README.md is Markdown, "
                                  "kept as The Stack keeps it.")
    drop_lock_files: bool = Field(True, description="Drop package-manager lock files (package-lock.json, ...).")
    drop_vendored: bool = Field(True, description="Drop files under vendored folders (node_modules/, vendor/, ...).")
    drop_generated: bool = Field(True, description="Drop files with a generator marker or a generated file name.")
    drop_minified: bool = Field(True, description="Drop minified web files (by name or by the line rules).")
    max_line_length: int = Field(1000, ge=1, description="Longest line allowed, characters (Codex, The Stack).")
    max_mean_line: float = Field(100, gt=0, description="Highest mean line length allowed (Codex, The Stack).")
    min_alnum_fraction: float = Field(0.25, ge=0, le=1, description="Lowest alphanumeric share (Codex).")
    max_encoded_fraction: float = Field(0.5, ge=0, le=1, description="Highest share of encoded-data runs "
                                        "(StarCoder2).")
    max_encoded_run: int = Field(1024, ge=1, description="Longest encoded-data run allowed (StarCoder2).")
    max_numeric_fraction: float = Field(0.5, ge=0, le=1, description="Highest share of number-literal tokens.")
    min_chars: int = Field(10, ge=0, description="Fewest non-blank characters a file may have.")
    max_chars: int = Field(1_000_000, ge=1, description="Most characters a file may have (The Stack: 1 MB).")
    data_languages: list[str] = Field(default_factory=lambda: list(DATA_LANGUAGES),
                                      description="Data formats held to the data size bounds (StarCoder).")
    min_data_chars: int = Field(50, ge=0, description="Fewest characters of a data file (StarCoder: 50).")
    max_data_chars: int = Field(5000, ge=1, description="Most characters of a data file (StarCoder: 5,000).")
    min_comment_fraction: float | None = Field(
        None, ge=0, le=1, description="Drop files with a smaller comment share (BigCode tried 0.01); default off.")
    max_comment_fraction: float | None = Field(
        None, ge=0, le=1, description="Drop files with a larger comment share (BigCode tried 0.8); default off.")

    @field_validator("languages", "data_languages")
    @classmethod
    def _known(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        names = [v.strip().lower() for v in value]
        unknown = sorted(set(names) - known_languages())
        if unknown:
            msg = f"unknown language names {unknown}; names are identify's tags (python, javascript, c++, shell...)"
            raise ValueError(msg)
        return names


def _meta(raw: str | None) -> dict:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class CodeFilters(DocumentFilter):
    """Licence and language keep rules and file-quality rules for source code (table in the module doc)."""

    name = "code_filters"
    Params = CodeFilterParams
    resources = Resources(cpus=0.5)
    input_columns = ("text", "meta")
    output_columns: ClassVar[dict[str, pa.DataType]] = {
        "code_max_line": pa.int64(), "code_mean_line": pa.float64(), "code_alnum": pa.float64(),
        "code_encoded": pa.float64(), "code_numeric": pa.float64(), "code_comments": pa.float64(),
    }

    def process(self, batch: pa.Table) -> Processed:
        """The rules in order, file by file, each drop with its detail; the costlier measures only for the files
        the cheaper rules left in (hence no `score` then `keep`)."""
        p = self.params
        n = batch.num_rows
        texts = pc.fill_null(batch.column("text"), "")
        metas = [_meta(m) for m in batch.column("meta").to_pylist()]
        stats = text_stats(texts)
        may_encode = pc.match_substring_regex(texts, _ENCODED_HINT).to_numpy(zero_copy_only=False)
        text_list = texts.to_pylist() if isinstance(texts, pa.Array) else texts.combine_chunks().to_pylist()
        reasons = np.full(n, None, dtype=object)
        details = np.full(n, None, dtype=object)
        for i in range(n):
            reasons[i], details[i] = self._by_name_and_lines(metas[i], text_list[i], stats, i)
        # the costlier measures only for the files still in, unless they are kept as scores
        todo = np.ones(n, bool) if p.keep_scores else np.array([r is None for r in reasons], bool)
        encoded = np.zeros(n)
        longest_run = np.zeros(n, np.int64)
        for i in np.flatnonzero(todo & may_encode):
            encoded[i], longest_run[i] = encoded_data(text_list[i])
        comments = np.full(n, np.nan)
        if p.keep_scores or p.min_comment_fraction is not None or p.max_comment_fraction is not None:
            for i in np.flatnonzero(todo):
                comments[i] = comment_fraction(text_list[i], metas[i].get("language"))
        for i in np.flatnonzero(np.array([r is None for r in reasons], bool)):
            reasons[i], details[i] = self._by_content(metas[i].get("language"), stats, i, encoded[i],
                                                      int(longest_run[i]), comments[i])
        scores = {"code_max_line": stats["max_line"], "code_mean_line": stats["mean_line"],
                  "code_alnum": stats["alnum"], "code_encoded": encoded, "code_numeric": stats["numeric"],
                  "code_comments": comments}
        kept = np.array([r is None for r in reasons], bool)
        return self.judged(batch, scores, kept, reasons, details=pa.array(details, pa.string()))

    def _by_name_and_lines(self, meta: dict, text: str, stats: dict[str, np.ndarray], i: int,
                           ) -> tuple[str | None, str | None]:
        """Licence, language, path rules, generator markers and minified files."""
        p = self.params
        path, language = str(meta.get("path") or ""), meta.get("language")
        license_class = meta.get("license_class") if meta.get("license_class") in CLASSES else "unknown"
        if p.licenses is not None and license_class not in p.licenses:
            return "license_not_kept", f"{meta.get('license') or 'no licence found'} ({license_class})"
        if p.drop_lock_files and is_lock_file(path):  # before the language: `yarn.lock` has none
            return "lock_file", path
        if language is None:
            if p.drop_unknown_language or p.languages is not None:
                return "unknown_language", path or None
        elif p.languages is not None and language not in p.languages:
            return "language_not_kept", language
        elif p.drop_plain_text and (language == TEXT or (language in _PROSE and is_license_file(path))):
            return "plain_text", path or None  # LICENSE.md is a licence's text, no Markdown to learn
        if p.drop_vendored and is_vendored(path):
            return "vendored", path
        if p.drop_generated:
            marker = generator_marker(text)
            if marker:
                return "generated", marker
            name = generated_name(path)
            if name:
                return "generated", f"file name {name}"
        max_line, mean_line = int(stats["max_line"][i]), float(stats["mean_line"][i])
        long_lines = max_line > p.max_line_length or mean_line > p.max_mean_line
        if p.drop_minified and (minified_name(path) or (language in WEB_LANGUAGES and long_lines)):
            return "minified", f"longest line {max_line}, mean {mean_line:.0f}"
        return None, None

    def _by_content(self, language: str | None, stats: dict[str, np.ndarray], i: int, encoded: float,
                    longest_run: int, comments: float) -> tuple[str | None, str | None]:
        """Encoded data, the line and character rules, sizes and comment bounds."""
        p = self.params
        max_line, mean_line = int(stats["max_line"][i]), float(stats["mean_line"][i])
        chars, nonblank = int(stats["chars"][i]), int(stats["nonblank"][i])
        lines = f"longest line {max_line}, mean {mean_line:.0f}"
        if encoded > p.max_encoded_fraction or longest_run > p.max_encoded_run:
            return "encoded_data", f"{encoded:.0%} encoded, longest run {longest_run}"
        if max_line > p.max_line_length:
            return "long_lines", lines
        if mean_line > p.max_mean_line:
            return "long_mean_line", lines
        if stats["alnum"][i] < p.min_alnum_fraction:
            return "low_alnum", f"{stats['alnum'][i]:.2f}"
        if stats["numeric"][i] > p.max_numeric_fraction:
            return "data_like", f"{stats['numeric'][i]:.0%} number tokens"
        if nonblank < p.min_chars:
            return "too_short", f"{nonblank} non-blank characters"
        if chars > p.max_chars:
            return "too_long", f"{chars} characters"
        if language in p.data_languages and not p.min_data_chars <= chars <= p.max_data_chars:
            return "data_file_size", f"{language}, {chars} characters"
        if p.min_comment_fraction is not None and comments < p.min_comment_fraction:
            return "too_few_comments", f"{comments:.3f}"
        if p.max_comment_fraction is not None and comments > p.max_comment_fraction:
            return "mostly_comments", f"{comments:.3f}"
        return None, None
