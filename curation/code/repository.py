"""Which licence applies to a file of a repository, from the repository's licence files.

Also where a loose file's repository is (`folder_root`: the nearest folder above it holding `.git`,
else a licence file) and that folder's licence files (`folder_licenses`), for the `code` reader's
folder layout; both are cached per process, as every file of a folder is its own shard.

The nearest licence file up the folder tree wins (a vendored subfolder with its own LICENSE keeps
it); REUSE's `LICENSES/` folder speaks for its parent. Where no folder on the way up has one, the
licence of a packaging metadata folder (`*.dist-info/`, `*.egg-info/`: a wheel unpacked as a
repository keeps its LICENSE there) applies to the whole repository.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict

import pyarrow.fs as pafs

from curation import storage
from curation.code.licenses import CLASSES, folder_license, header_license, is_license_file, license_class, normalize
from curation.code.paths import VCS

MAX_LICENSE_BYTES = 1 << 20
MAX_LISTED = 100_000  # entries of a repository folder looked at for licence files (a home folder taken for one)
_METADATA = re.compile(r"(?:^|/)[^/]+\.(?:dist|egg)-info(?:/|$)")


def _parent(folder: str) -> str:
    return folder.rsplit("/", 1)[0] if "/" in folder else ""


def _folder(path: str) -> str:
    folder = _parent(path)
    return _parent(folder) if folder.rsplit("/", 1)[-1] == "LICENSES" else folder


class RepoLicenses:
    """Licence files of one repository (path inside it -> text) and the licence of any path in it."""

    def __init__(self, files: dict[str, str]) -> None:
        self._files: dict[str, dict[str, str]] = defaultdict(dict)
        for path, text in files.items():
            self._files[_folder(path)][path] = text

    @functools.cache  # noqa: B019  (one small object per repository, alive while its files are read)
    def _license(self, folder: str) -> str | None:
        files = self._files.get(folder)
        return folder_license(files) if files else None

    @functools.cached_property
    def _fallback(self) -> tuple[str | None, str | None]:
        metadata = sorted((f for f in self._files if _METADATA.search(f + "/")), key=lambda f: (f.count("/"), f))
        for folder in metadata:
            found = self._license(folder)
            if found:
                return found, self._where(folder)
        return None, None

    def _where(self, folder: str) -> str:
        return ", ".join(sorted(self._files[folder]))

    def for_path(self, path: str) -> tuple[str | None, str | None]:
        """(licence expression, licence files it comes from) for a file; (None, None) if none is found."""
        folder = _parent(path)
        while True:
            found = self._license(folder)
            if found:
                return found, self._where(folder)
            if not folder:
                return self._fallback
            folder = _parent(folder)


def document_license(text: str, path: str, repo: RepoLicenses | None) -> dict[str, str | None]:
    """`license`, `license_class` and `license_source` of one file: its own header first, then its repository; a
    licence file's is the licence its text is (MPL-2.0's names the GPL in its header: it was labelled GPL-2.0-only)."""
    if is_license_file(path):
        name = path.rsplit("/", 1)[-1]
        expression, source = folder_license({name: text}), name
    else:
        expression, source = header_license(text), "header"
    if expression is None and repo is not None:
        expression, source = repo.for_path(path)
    return {"license": expression, "license_class": license_class(expression),
            "license_source": source if expression else None}


def wants_text(path: str, size: int) -> bool:
    """Whether a repository member must be read before its documents: its licence files."""
    return size <= MAX_LICENSE_BYTES and is_license_file(path)


def column_license(value: object) -> dict[str, str | None]:
    """Licence fields from a table column: an SPDX expression, a list of ids (AND), or a licence class."""
    if isinstance(value, str) and value.strip().lower() in CLASSES:
        return {"license": None, "license_class": value.strip().lower(), "license_source": "column"}
    ids = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)] if value else []
    ids = [normalize(i) or i for i in ids if i.strip()]
    expression = " AND ".join(f"({i})" if " " in i else i for i in dict.fromkeys(ids)) or None
    return {"license": expression, "license_class": license_class(expression),
            "license_source": "column" if expression else None}


@functools.lru_cache(maxsize=4096)
def _listing(folder: str) -> tuple[str, ...]:
    fs, path = storage.resolve(folder)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError as exc:
        if storage.is_io_error(exc):  # a storage fault is not an empty folder: the shard is read again
            raise
        return ()
    return tuple(i.base_name + ("/" if i.type == pafs.FileType.Directory else "") for i in infos)


@functools.lru_cache(maxsize=1024)
def folder_root(folder: str, max_up: int = 12, floor: str | None = None) -> str:
    """The repository folder of a loose file: nearest `.git` above, else nearest licence file, else `floor` (the
    folder a source named: its files are one repository), else its own folder. Never above `floor`."""
    chain = [folder]
    while len(chain) <= max_up and "/" in chain[-1].rstrip("/") and chain[-1] != floor:
        parent = chain[-1].rsplit("/", 1)[0]
        if not parent or parent == chain[-1]:
            break
        chain.append(parent)
    for candidate in chain:
        if any(name.rstrip("/") in (".git", ".hg", ".svn") for name in _listing(candidate)):
            return candidate
    for candidate in chain:
        if any(is_license_file(name) for name in _listing(candidate) if not name.endswith("/")):
            return candidate
    return floor or folder


@functools.lru_cache(maxsize=256)
def folder_licenses(root: str, limit: int = MAX_LISTED) -> RepoLicenses:
    """Every licence file under a repository folder (listed once per process and folder), looking at no more than
    `limit` entries and never through a link: a licence file that is a link is not read, a linked folder not
    entered (the walk stays inside the repository)."""
    texts: dict[str, str] = {}
    fs, base = storage.resolve(root)
    vcs = {v.strip("/") for v in VCS}
    try:
        for found in storage.walk_files(root, limit=limit, prune=vcs.__contains__):
            path = found.uri.split("://", 1)[-1]  # inside `fs`, as `base` is
            relative = path[len(base.rstrip("/")) + 1 :]
            if found.link or not wants_text(relative, found.size):
                continue
            try:
                with fs.open_input_file(path) as f:
                    texts[relative] = f.read(MAX_LICENSE_BYTES).decode("utf-8", "replace")
            except OSError as exc:
                if storage.is_io_error(exc):  # a licence not read is not an absent one: the shard is read again
                    raise
    except OSError as exc:
        if storage.is_io_error(exc):
            raise
    return RepoLicenses(texts)  # what is not a storage fault (an unlistable folder) ends the walk there
