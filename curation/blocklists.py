"""Block lists of domains, URLs and words, read once per worker and matched against documents' URLs.

The lists a user has: UT1's blacklists (Université Toulouse 1 Capitole; the adult list is the one FineWeb and
RefinedWeb filter with), one entry a line in `<category>/domains` and `<category>/urls` of a tar archive; a
domain list of another origin, a hosts file (`0.0.0.0 example.com`) or adblock-style lines (`||example.com^`);
word lists. Lines are read as such: `#` comments and blank lines are skipped, a leading `*.` or `.` is dropped,
`.gz`/`.zst` files are decompressed by their extension.

Matching is squidGuard's, the filter UT1's lists are written for:
- a domain entry blocks that host and every host below it (`example.com`: `www.example.com`, `a.b.example.com`);
  an IP address blocks itself;
- a URL entry (`example.com/videos`) blocks that URL and every URL below it (`example.com/videos/1.html`),
  the host's `www.` (`www2.`...) dropped; scheme, port, user, query and fragment play no part.
Hosts are compared lowercased and IDNA-encoded (`bücher.de` is `xn--bcher-kva.de`), as lists write them, and
paths lowercased and percent-decoded.

Domains and URLs are kept as 64-bit hashes (xxh3) in a sorted numpy array: UT1's 4.6 million adult domains
take 36 MB a worker instead of ~450 MB as a Python set, and a batch's lookups are one `searchsorted`. Two
different entries share a hash with odds of about one in 4 * 10^12 for such a list, per lookup.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import idna as idna_codec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curation import storage

CHUNK_BYTES = 1 << 24  # a list is hashed 16 MB at a time: UT1's 124 MB of domains never sit in memory as lines
LIST_NAMES = ("domains", "urls")  # the files of a UT1 category folder

_HASH = xxhash.xxh3_64_intdigest
_IP = re.compile(r"^(?:\d{1,3}\.){3}\d{1,3}$|:")  # an IPv4 address, or an IPv6 one (urlsplit drops its brackets)
_WWW = re.compile(r"^www\d*\.")
# Domain lines that need more than lowercasing: a character no host name has, a leading `.`/`*`, a trailing `.`
_ODD_DOMAIN = re.compile(rb"^.*[^a-z0-9_.\n-].*$|^[.*].*$|^.*\.$", re.MULTILINE)
_HOST_BYTES = b"abcdefghijklmnopqrstuvwxyz0123456789_.-\n"
# What separates the words of a URL (RE2, in pyarrow): Python's `\W` would cut Hindi words at their vowel signs
SEPARATORS = r"[^\p{L}\p{N}\p{M}]+"
ASCII_SEPARATORS = r"[^a-z0-9]+"  # the same for a lowercased ASCII text
# Host and path of a URL, its scheme optional (`example.com/a`); userinfo up to the netloc's last `@`, as urlsplit
_URL_PARTS = (r"^\s*(?:(?:[A-Za-z][A-Za-z0-9+.-]*:)?//)?(?:[^/?#\s]*@)?(?P<host>\[[^\]/?#]*\]|[^:/?#\s]*)"
              r"(?::[0-9]*)?(?P<path>[^?#\s]*)")
_URL_PARTS_RE = re.compile(_URL_PARTS)


@dataclass(frozen=True)
class HashSet:
    """Entries as sorted xxh3 hashes of their UTF-8 bytes (an entry listed twice is there twice)."""

    hashes: np.ndarray

    @classmethod
    def of(cls, parts: Iterable[np.ndarray]) -> HashSet:
        return cls(np.sort(np.concatenate([np.empty(0, np.uint64), *parts])))  # numpy 2's unique: 5 s for UT1

    def __len__(self) -> int:
        return len(self.hashes)

    def contains(self, keys: Sequence[str]) -> np.ndarray:
        """Whether each key is an entry."""
        found = np.fromiter((_HASH(k.encode()) for k in keys), np.uint64, count=len(keys))
        if not len(self.hashes):
            return np.zeros(len(keys), bool)
        order = np.argsort(found)  # sorted queries walk the table in order: ~2x fewer cache misses
        at = np.empty(len(keys), np.int64)
        at[order] = np.searchsorted(self.hashes, found[order])
        return self.hashes[np.minimum(at, len(self.hashes) - 1)] == found


def idna(host: str) -> str:
    """A host name as lists write it: lowercased, ASCII where it can be (IDNA 2008 with UTS #46, as browsers and
    crawls record it: `straße.de` is `xn--strae-oqa.de`, which Python's IDNA 2003 codec made `strasse.de`), no
    trailing dot."""
    host = host.strip().rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return idna_codec.encode(host, uts46=True).decode("ascii")
    except (idna_codec.IDNAError, UnicodeError):  # a label too long, a character IDNA refuses: compared as written
        return host


def url_parts(url: str) -> tuple[str, str] | None:
    """(host, path) of a URL, the host as `idna` writes it and the path lowercased without its trailing `/`;
    a URL written without its scheme (`example.com/a`) too. None where no host can be read."""
    found = _URL_PARTS_RE.match(url)
    host = found and _host(found.group("host").lower().rstrip("."))
    return (host, _path(found.group("path").lower().rstrip("/"))) if host else None


def hosts_and_paths(urls: pa.Array) -> tuple[list[str | None], list[str]]:
    """`url_parts` of every URL of a batch, RE2 over all of them (None: no host)."""
    parts = pc.extract_regex(pc.fill_null(urls, ""), _URL_PARTS)
    hosts = pc.utf8_rtrim(pc.utf8_lower(pc.fill_null(parts.field("host"), "")), ".").to_pylist()
    paths = pc.utf8_rtrim(pc.utf8_lower(pc.fill_null(parts.field("path"), "")), "/").to_pylist()
    return [_host(h) for h in hosts], [_path(p) for p in paths]


def _path(path: str) -> str:
    """A lowercased path as lists compare it: percent-decoded (`/%e6%96%b0%e9%97%bb` is `/新闻`, as a list may write
    it and a WARC's target URI records it)."""
    return unquote(path).lower() if "%" in path else path


def _host(found: str) -> str | None:
    """An extracted host (lowercased, no trailing dot) as `idna` writes it; None for none (`http://[::1` too)."""
    if found.isascii() and not found.startswith("["):
        return found or None
    return idna(found.strip("[]")) or None


def domain_keys(host: str) -> list[str]:
    """The host and every domain above it, each a domain entry that blocks it (an IP address: itself)."""
    if _IP.search(host):
        return [host]
    labels = host.split(".")
    return [".".join(labels[i:]) for i in range(len(labels)) if labels[i]]


def url_keys(host: str, path: str) -> list[str]:
    """The URL and every URL above it (`host/a/b`: `host`, `host/a`, `host/a/b`), each a URL entry that blocks it."""
    base = _WWW.sub("", host)
    keys = [base]
    for segment in path.split("/"):
        if segment:
            keys.append(f"{keys[-1]}/{segment}")
    return keys


def decoded(urls: pa.Array) -> pa.Array:
    """URLs lowercased and percent-decoded, as the word rules read them (`/Free%20Porn/` -> `/free porn/`)."""
    lowered = pc.utf8_lower(pc.fill_null(urls, ""))
    escaped = np.flatnonzero(pc.match_substring(lowered, "%").to_numpy(zero_copy_only=False))
    if not len(escaped):
        return lowered
    values = lowered.to_pylist()
    for i in escaped.tolist():
        values[i] = unquote(values[i]).lower()
    return pa.array(values, pa.string())


def url_words(texts: pa.Array) -> pa.ListArray:
    """The words of each (decoded) URL: its runs of letters, digits and combining marks (empty ones at its ends)."""
    return _by_script(texts, pc.split_pattern_regex)


def squeezed(texts: pa.Array) -> pa.Array:
    """Each text's letters, digits and combining marks alone: where a subword is looked for (`sexcam` in
    `my-sex-cam.example`), and how a subword entry is written (`2 girls 1 cup` is `2girls1cup`)."""
    return _by_script(texts, lambda part, pattern: pc.replace_substring_regex(part, pattern, ""))


def _by_script(texts: pa.Array, op: Callable[[pa.Array, str], pa.Array]) -> pa.Array:
    """`op(texts, separators)`, ASCII texts with `ASCII_SEPARATORS` (RE2's Unicode classes cost ~4x: 5.8 against
    1.5 us a URL), the others with `SEPARATORS`, in the order of `texts`."""
    plain = pc.string_is_ascii(texts).to_numpy(zero_copy_only=False)
    if plain.all():
        return op(texts, ASCII_SEPARATORS)
    rows = [np.flatnonzero(plain), np.flatnonzero(~plain)]
    parts = [op(texts.take(pa.array(r)), p) for r, p in zip(rows, (ASCII_SEPARATORS, SEPARATORS), strict=True)]
    order = np.empty(len(texts), np.int64)
    order[np.concatenate(rows)] = np.arange(len(texts))
    return pa.concat_arrays(parts).take(pa.array(order))


def domain_entries(line: str) -> list[str]:
    """The domains one line of a domain list names (none for a comment, a hosts file's line may name several)."""
    fields = line.split("#", 1)[0].split()
    if len(fields) > 1 and _IP.search(fields[0]):  # a hosts file: `0.0.0.0 example.com www.example.com`
        fields = fields[1:]
    out = []
    for field in fields:
        field = field.removeprefix("||").removesuffix("^").lstrip("*.")
        parts = url_parts(field) if "/" in field else (idna(field), "")
        if parts and parts[0]:
            out.append(parts[0])
    return out


def url_entry(line: str) -> str | None:
    """The URL one line of a URL list names, as `url_keys` spells it (None for a comment or a blank line)."""
    line = line.split("#", 1)[0].strip()
    parts = url_parts(line) if line else None
    return url_keys(*parts)[-1] if parts else None


def hashed_domains(block: bytes) -> np.ndarray:
    """The hashes of a block of whole lines of a domain list. Plain lines (nearly all of a real list) are hashed
    as they are, in one pass; the others are read by `domain_entries`. A comment hashed as a plain line matches
    nothing: no host has a space or a `#`."""
    block = block.lower().replace(b"\r", b"")
    plain = np.fromiter(map(_HASH, block.split(b"\n")), np.uint64)
    if not block.translate(None, _HOST_BYTES) and not _odd_ends(block):
        return plain  # the usual case, found in C and numpy: no line needs more (a regex over UT1's takes ~2 s)
    odd = [_HASH(entry.encode()) for m in _ODD_DOMAIN.finditer(block)
           for entry in domain_entries(m.group().decode("utf-8", "replace"))]
    return np.concatenate([plain, np.array(odd, np.uint64)])


def _odd_ends(block: bytes) -> bool:
    """Whether a line of `block` starts with `.` or `*` or ends with `.`."""
    chars = np.frombuffer(b"\n" + block + b"\n", np.uint8)
    breaks = np.flatnonzero(chars == ord("\n"))
    starts, ends = chars[breaks[:-1] + 1], chars[breaks[1:] - 1]
    return bool(np.isin(starts, [ord("."), ord("*")]).any() or (ends == ord(".")).any())


def hashed_urls(block: bytes) -> np.ndarray:
    """The hashes of a block of whole lines of a URL list (each line read by `url_entry`: lists are short)."""
    entries = (url_entry(line) for line in block.decode("utf-8", "replace").splitlines())
    return np.array([_HASH(e.encode()) for e in entries if e], np.uint64)


def _lines_in_blocks(stream: Any) -> Iterator[bytes]:
    """A file's bytes (a pyarrow stream, a tar member) as blocks of whole lines."""
    rest = b""
    while chunk := stream.read(CHUNK_BYTES):
        block = rest + chunk
        cut = block.rfind(b"\n") + 1
        rest = block[cut:]
        if cut:
            yield block[:cut]
    if rest:
        yield rest


def read_list(uri: str, hashed: Callable[[bytes], np.ndarray]) -> list[np.ndarray]:
    """A plain list file, hashed block by block (`hashed_domains` or `hashed_urls`)."""
    with storage.open_text_stream(uri) as stream:
        return [hashed(block) for block in _lines_in_blocks(stream)]


def read_archive(uri: str, categories: Sequence[str] | None) -> dict[str, list[np.ndarray]]:
    """A UT1-style tar archive's `domains` and `urls` files, hashed: those of the given categories (the folder
    each file is in), or all; files at the archive's top are always read. Links in the archive are not followed."""
    wanted = set(categories) if categories is not None else None
    found: dict[str, list[np.ndarray]] = {name: [] for name in LIST_NAMES}
    readers = {"domains": hashed_domains, "urls": hashed_urls}
    with storage.open_text_stream(uri) as stream, tarfile.open(fileobj=stream, mode="r|*") as archive:
        for member in archive:
            folders, _, name = member.name.strip("/").rpartition("/")
            category = folders.rpartition("/")[2]
            if not member.isfile() or name not in found or (wanted is not None and folders and category not in wanted):
                continue
            data = archive.extractfile(member)
            if data is not None:
                found[name] += [readers[name](block) for block in _lines_in_blocks(data)]
    return found


def archive_categories(uri: str) -> set[str]:
    """The categories (folders holding a `domains` or `urls` file) of a UT1-style archive."""
    held = set()
    with storage.open_text_stream(uri) as stream, tarfile.open(fileobj=stream, mode="r|*") as archive:
        for member in archive:
            folders, _, name = member.name.strip("/").rpartition("/")
            if member.isfile() and name in LIST_NAMES and folders:
                held.add(folders.rpartition("/")[2])
    return held


def read_words(uri: str) -> frozenset[str]:
    """A word list: one word or phrase a line, lowercased; `#` comments and blank lines skipped."""
    with storage.open_text_stream(uri) as stream:
        text = stream.read().decode("utf-8", "replace")
    return frozenset(w for line in text.splitlines() if (w := line.split("#", 1)[0].strip().lower()))
