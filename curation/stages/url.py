"""The `url` stage: documents dropped by where they come from, before anything reads their text."""

from __future__ import annotations

import re
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curation import blocklists
from curation.stages.base import Processed, ReadsFile, Resources, Stage, StageParams

LIST_FILE = ReadsFile("list file")


class UrlParams(StageParams):
    blocklists: Annotated[list[str], LIST_FILE] = Field(
        default_factory=list,
        description="Tar archives of block lists laid out as UT1's (`<category>/domains`, `<category>/urls`; "
        "`blacklists.tar.gz` as Université Toulouse 1 publishes it, or datatrove's `url_filter` archive), "
        "gzipped or not: their domains and URLs are blocked, of every category or those in `categories`.",
    )
    categories: list[str] | None = Field(
        None, min_length=1, description="The categories (folders) of `blocklists` read, e.g. [adult, phishing, "
        "malware]; null: all. Files at an archive's top are always read.",
    )
    domains: Annotated[list[str], LIST_FILE] = Field(
        default_factory=list, description="Domain lists, one domain a line (hosts files and `||domain^` lines "
        "too): a domain blocks itself and every host below it.",
    )
    urls: Annotated[list[str], LIST_FILE] = Field(
        default_factory=list, description="URL lists, one URL a line, scheme optional: a URL blocks itself and "
        "every URL below it (`example.com/videos` blocks `example.com/videos/1.html`).",
    )
    allow: list[str] = Field(
        default_factory=list, description="Domains never blocked by the domain and URL lists, with the hosts below "
        "them (the word rules still apply).",
    )
    words: Annotated[list[str], LIST_FILE] = Field(
        default_factory=list, description="Word lists: a URL holding one of these words (between non-letters, "
        "any case, percent-decoded) is dropped.",
    )
    soft_words: Annotated[list[str], LIST_FILE] = Field(
        default_factory=list, description="Word lists: a URL holding `soft_min` different words of these is "
        "dropped (words that alone are ordinary in a URL: `sex` in `/sex-education/`).",
    )
    soft_min: int = Field(2, ge=1, description="How many different `soft_words` drop a URL.")
    subwords: Annotated[list[str], LIST_FILE] = Field(
        default_factory=list, description="Lists of strings looked for anywhere in a URL's letters and digits "
        "run together (`sexcam` in `my-sex-cam.example`); an entry's own spaces and signs are left out too.",
    )

    def file_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """A category no archive holds (a misspelt one blocked nothing, silently)."""
        if self.categories is None:
            return []
        held = set().union(*(blocklists.archive_categories(uri) for uri in self.blocklists))
        return [(("categories", k), f"no archive of `blocklists` has a category {name!r} (they have: "
                 f"{', '.join(sorted(held))})") for k, name in enumerate(self.categories) if name not in held]

    @model_validator(mode="after")
    def _some_list(self) -> UrlParams:
        if not (self.blocklists or self.domains or self.urls or self.words or self.soft_words or self.subwords):
            msg = "give at least one list: blocklists, domains, urls, words, soft_words or subwords"
            raise ValueError(msg)
        if self.categories is not None and not self.blocklists:
            msg = "`categories` chooses folders of `blocklists` archives: give `blocklists` too"
            raise ValueError(msg)
        return self


class UrlFilter(Stage):
    """Drop documents by their URL: `blocked_domain`, `blocked_url` (the domain and URL lists, matched as
    squidGuard matches UT1's lists: `curation.blocklists`), `banned_word`, `soft_banned_words`, `banned_subword`
    (the word lists). The detail names the entry that matched. Documents without a URL pass unjudged
    (`bypassed: no_url`).

    FineWeb's first filter, and RefinedWeb's: their block list is UT1's adult category, plus word rules on the
    URL. No list ships with this package and none is downloaded: a recipe names the files it has. Recipe:
    `url: {blocklists: [lists/blacklists.tar.gz], categories: [adult]}`.
    """

    name = "url"
    Params = UrlParams
    resources = Resources(cpus=0.25)
    input_columns = ("url",)
    bypass_reason = "no_url"

    def setup(self) -> None:
        p = self.params
        found: dict[str, list[np.ndarray]] = {name: [] for name in blocklists.LIST_NAMES}
        for uri in p.blocklists:
            for name, parts in blocklists.read_archive(uri, p.categories).items():
                found[name] += parts
        for uri in p.domains:
            found["domains"] += blocklists.read_list(uri, blocklists.hashed_domains)
        for uri in p.urls:
            found["urls"] += blocklists.read_list(uri, blocklists.hashed_urls)
        self.domains = blocklists.HashSet.of(found["domains"])
        self.urls = blocklists.HashSet.of(found["urls"])
        self.allowed = frozenset(blocklists.idna(d) for d in p.allow)
        self.words, self.soft_words = (pa.array(sorted(_union(blocklists.read_words(u) for u in uris)), pa.string())
                                       for uris in (p.words, p.soft_words))
        entries = pa.array(sorted(_union(blocklists.read_words(u) for u in p.subwords)), pa.string())
        self.subwords = sorted(set(blocklists.squeezed(entries).to_pylist()) - {""})
        self.subword_pattern = "|".join(map(re.escape, self.subwords))  # RE2, over each batch's URLs at once

    def applies(self, batch: pa.Table) -> pa.ChunkedArray | None:
        url = batch.column("url")
        return pc.fill_null(pc.greater(pc.utf8_length(url), 0), False)

    def process(self, batch: pa.Table) -> Processed:
        urls = batch.column("url").combine_chunks()
        found = {**self._worded(urls), **self._listed(urls)}  # a listed domain or URL is named before a word
        reasons = [found.get(i, (None, None))[0] for i in range(len(urls))]
        details = [found.get(i, (None, None))[1] for i in range(len(urls))]
        return Processed(batch, pa.array(reasons, pa.string()), pa.array(details, pa.string()))

    def _listed(self, urls: pa.Array) -> dict[int, tuple[str, str]]:
        """{row: (reason, entry)} of the rows the domain and URL lists block, every row's keys looked up at once;
        the host's own entry named before its parent domain's."""
        lookups = {reason: ([], []) for reason, table in self._lists() if len(table)}
        if not lookups:
            return {}
        for i, (host, path) in enumerate(zip(*blocklists.hosts_and_paths(urls), strict=True)):
            if host is None:
                continue
            domains = blocklists.domain_keys(host)
            if self.allowed.intersection(domains):
                continue
            for reason, (rows, keys) in lookups.items():
                found = domains if reason == "blocked_domain" else blocklists.url_keys(host, path)
                rows += [i] * len(found)
                keys += found
        out: dict[int, tuple[str, str]] = {}
        for reason, table in self._lists():
            rows, keys = lookups.get(reason, ([], []))
            for j in np.flatnonzero(table.contains(keys)).tolist():
                out.setdefault(rows[j], (reason, keys[j]))
        return out

    def _lists(self) -> tuple[tuple[str, blocklists.HashSet], ...]:
        return ("blocked_domain", self.domains), ("blocked_url", self.urls)

    def _worded(self, urls: pa.Array) -> dict[int, tuple[str, str]]:
        """{row: (reason, detail)} of the rows the word lists drop: RE2 and set lookups over the batch's words,
        then Python on the few that hold one."""
        if not (len(self.words) or len(self.soft_words) or self.subwords):
            return {}
        texts = blocklists.decoded(urls)
        out: dict[int, tuple[str, str]] = {}
        if len(self.words) or len(self.soft_words):
            lists = blocklists.url_words(texts)
            words, rows = pc.list_flatten(lists), pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
            soft: dict[int, set[str]] = {}
            for row, word in _members(words, rows, self.soft_words):
                soft.setdefault(row, set()).add(word)
            for row, found in soft.items():
                if len(found) >= self.params.soft_min:
                    out[row] = "soft_banned_words", ", ".join(sorted(found))
            for row, word in sorted(_members(words, rows, self.words), key=lambda hit: hit[1]):
                if out.get(row, ("",))[0] != "banned_word":
                    out[row] = "banned_word", word
        if self.subwords:
            letters = blocklists.squeezed(texts)
            hits = pc.match_substring_regex(letters, self.subword_pattern)
            for i in np.flatnonzero(hits.to_numpy(zero_copy_only=False)).tolist():
                text = letters[i].as_py()
                out.setdefault(i, ("banned_subword", next(w for w in self.subwords if w in text)))
        return out


def _members(words: pa.Array, rows: np.ndarray, listed: pa.Array) -> list[tuple[int, str]]:
    """(row, word) of the batch's words that are in `listed`."""
    if not len(listed):
        return []
    hit = pc.is_in(words, value_set=listed).to_numpy(zero_copy_only=False)
    return list(zip(rows[hit].tolist(), words.filter(pa.array(hit)).to_pylist(), strict=True))


def _union(sets: Any) -> frozenset[str]:
    return frozenset().union(*sets)
