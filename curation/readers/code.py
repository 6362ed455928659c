"""Source-code shards: a repository archive, a file of a repository folder, or a The-Stack-like table.

One document per source file, with `meta` holding `repo`, `path` (inside the repository),
`language`, `size` (bytes), `license`, `license_class` and `license_source`. What is not text
becomes a counted skip, never a document: binary files (a NUL byte in the first 8,000 bytes, as
git decides, or a binary format by name), bytes that are not UTF-8, files over `max_file_bytes`,
empty files, links (never followed: a link inside an archive or met in a folder is a `link` skip; see
`curation.shards`), version-control internals (`.git/`...), and archive members whose path leads up out of
the repository (`../x`: `unsafe_path`); of members of one name (an archive appended to) the last is read, as
`tar -x` leaves it, the others are `replaced` skips. An archive that breaks off keeps
the documents read before the break and ends with a `truncated_input`/`unreadable_input` reject.

- **Archives** (`.tar`, `.tar.gz`/`.tgz`, `.tar.bz2`, `.tar.xz`, `.tar.zst`, `.zip`): one archive is
  one repository (and one shard). A single top folder (GitHub's `owner-repo-sha/`) is the
  repository root. Licence files are read first (tar: a first pass over the stream; zip: by name),
  so every document knows its licence.
- **Folders**: a folder in `paths` expands to its files, each its own shard; a file's repository is
  the nearest folder above it holding `.git` (else a licence file, else the folder the source names: a folder
  in `paths`, or each one a pattern ending in `/` matches, `checkouts/*/`; else its own folder).
- **Tables** (`.parquet`, `.jsonl[.gz|.zst|...]`): The Stack's layout, one file per row: the
  `content_field`, `path_field`, `repo_field`, `license_field` (an SPDX expression, a list of ids as
  in The Stack v1's `max_stars_repo_licenses`, or a licence class) and `language_field` columns;
  other columns are kept in `meta`. A missing language is detected from the path.
- **Notebooks** (`.ipynb`, or a row labelled Jupyter): the script its cells make (`curation.code.notebooks`), its
  kernel's language in `meta.notebook_language`; one that is no notebook JSON is a `bad_notebook` reject.
"""

from __future__ import annotations

import contextlib
import lzma
import posixpath
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pyarrow as pa
import pyarrow.fs as pafs
from pydantic import BaseModel, ConfigDict, Field

from curation import schema, storage
from curation.code.notebooks import notebook_script
from curation.code.paths import in_vcs_folder
from curation.code.repository import (
    RepoLicenses,
    column_license,
    document_license,
    folder_licenses,
    folder_root,
    wants_text,
)
from curation.code.source_language import HEAD_CHARS, NOTEBOOK, detect_language, is_binary_name, language_of_label
from curation.readers.base import DecompressionBombError, Reader, Record, is_io_error, link_target
from curation.readers.jsonl import JsonlReader
from curation.readers.parquet import parquet_rows
from curation.readers.salvage import SalvagingStream

_TAR = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tar.zstd", ".tar.lz4")
_CODECS = {".gz": "gzip", ".tgz": "gzip", ".bz2": "bz2", ".tbz2": "bz2", ".zst": "zstd", ".zstd": "zstd",
           ".lz4": "lz4", ".xz": "xz", ".txz": "xz"}
# a compressed tar whose name does not say how (a forced `archives` layout), by its first bytes
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\x28\xb5\x2f\xfd": "zstd", b"\x04\x22\x4d\x18": "lz4",
          b"\xfd7zXZ\x00": "xz"}
_TABLES = (".parquet", ".jsonl", ".ndjson", ".jsonl.gz", ".jsonl.zst", ".jsonl.bz2", ".jsonl.lz4", ".json.gz")
# what reading one zip member may raise for its content (an encrypted member, a bad CRC, a codec zipfile lacks)
# zlib.error: a member whose deflate stream is damaged (it ended the archive: the members after it were lost, all of
# them when it was the licence file read first)
_MEMBER_FAULTS = (zipfile.BadZipFile, zlib.error, OSError, NotImplementedError, EOFError, ValueError, RuntimeError)
BINARY_SNIFF = 8000  # git's buffer_is_binary looks this far


class CodeOptions(BaseModel):
    """Options of the `code` source format."""

    model_config = ConfigDict(extra="forbid")

    layout: Literal["auto", "archives", "files", "tables"] = Field(
        "auto", description="auto: by extension (archives, tables, else a file of a repository folder); or force one.")
    max_file_bytes: int = Field(1_000_000, gt=0, description="Larger files are skipped (`too_large`); The Stack: 1 MB.")
    content_field: str = Field("content", description="tables: the column holding the file's text.")
    path_field: str = Field("path", description="tables: the file's path in its repository (The Stack v1: "
                            "max_stars_repo_path).")
    repo_field: str = Field("repo", description="tables: the repository name (The Stack v1: max_stars_repo_name).")
    license_field: str = Field("license", description="tables: SPDX expression, list of SPDX ids or licence class "
                               "(The Stack v1: max_stars_repo_licenses).")
    language_field: str = Field("language", description="tables: the language, if given (The Stack v1: lang).")


def _skip(position: int, why: str, detail: str | None = None, size: int = 0) -> Record:
    return Record(position, reason=f"skipped:{why}", detail=detail, raw_bytes=size)


def _last_positions(paths: Iterable[str]) -> dict[str, int]:
    """The position of the last member of each path among an archive's members, in order."""
    return {path: position for position, path in enumerate(paths)}


def _replaced(position: int, path: str, size: int) -> Record:
    """A member that a later one of the same name replaces, as `tar -x` and `unzip` leave it (an archive appended
    to holds a file twice): one document per path."""
    return _skip(position, "replaced", f"{path}: a later member of the archive has its name", size)


class CodeReader(Reader):
    """Source files as documents (see the module doc); `code:` in the source holds its options."""

    format: ClassVar[str] = "code"

    def __init__(self, *, code: CodeOptions | None = None, paths: Sequence[str] = (), **kwargs: Any) -> None:
        """`paths`: the source's, whose folders (named, or matched by a pattern ending in `/`) are repositories."""
        super().__init__(**kwargs)
        self.code = code or CodeOptions()
        self.paths = tuple(paths)

    def records(self, uri: str) -> Iterator[Record]:
        layout = self.code.layout
        if layout == "auto":
            lower = uri.lower()
            layout = ("archives" if lower.endswith((*_TAR, ".zip")) else
                      "tables" if lower.endswith(_TABLES) else "files")
        if layout == "tables":
            yield from self._table(uri)
        elif layout == "files":
            yield self._loose(uri)
        elif uri.lower().endswith(".zip"):
            yield from self._zip(uri)
        else:
            yield from self._tar(uri)

    def document(self, position: int, repo: str, path: str, data: bytes, licenses: RepoLicenses | None,
                 extra: dict[str, Any] | None = None) -> Record:
        """A file's bytes -> a document record, or a skip saying why it is not one."""
        size = len(data)
        if size == 0:
            return _skip(position, "empty", path)
        if size > self.code.max_file_bytes:
            return _skip(position, "too_large", f"{path}: {size} bytes", size)
        if b"\0" in data[:BINARY_SNIFF]:
            return _skip(position, "binary", path, size)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return _skip(position, "undecodable", f"{path}: {exc.reason} at byte {exc.start}", size)
        return self._text_record(position, repo, path, text, size, licenses, extra)

    def _text_record(self, position: int, repo: str, path: str, text: str, size: int,
                     licenses: RepoLicenses | None, extra: dict[str, Any] | None = None,
                     language: str | None = None) -> Record:
        language = language or detect_language(path, text[:HEAD_CHARS])
        if language == NOTEBOOK:  # its cells as a script: the JSON, its metadata and outputs are no code
            try:
                text, kernel = notebook_script(text)
            except ValueError as exc:
                return Record(position, reason="bad_notebook", detail=f"{path}: {exc}"[:300], raw_bytes=size,
                              meta={"repo": repo, "path": path, "language": language, "size": size})
            if not text:
                return _skip(position, "empty", f"{path}: a notebook without cells", size)
            extra = {**(extra or {}), "notebook_language": kernel}
        meta: dict[str, Any] = {"repo": repo, "path": path, "language": language, "size": size}
        meta.update(document_license(text, path, licenses))
        if extra:
            meta.update(extra)
        return Record(position, title=path, text=text, meta=meta, raw_bytes=size)

    def _member(self, position: int, repo: str, path: str, size: int, read: Callable[[int], bytes],
                licenses: RepoLicenses) -> Record:
        if _escapes(path):
            return _skip(position, "unsafe_path", path, size)
        if in_vcs_folder(path):
            return _skip(position, "vcs", path, size)
        if is_binary_name(path):
            return _skip(position, "binary", path, size)
        if size > self.code.max_file_bytes:
            return _skip(position, "too_large", f"{path}: {size} bytes", size)
        return self.document(position, repo, path, read(self.code.max_file_bytes + 1), licenses)

    # -- archives ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _tar_stream(self, uri: str) -> Iterator[tarfile.TarFile]:
        """The archive as a stream; a compressed one inflated here, not by tarfile, so that every byte it
        inflates to (a member skipped too: tarfile reads past it) is spent from the file's budget."""
        fs, path = storage.resolve(uri)
        codec = next((c for ext, c in _CODECS.items() if path.lower().endswith(ext)), None) or _sniffed(fs, path)
        with fs.open_input_file(path) as raw:
            stream = raw if codec is None else self.inflate_budget(uri).counting(_inflating(raw, codec))
            # ignore_zeros: past a header that is no header, read on to the next one, as `tar` does ("Skipping to next
            # header"); tarfile alone ended the archive there without a word, every later member lost
            with tarfile.open(fileobj=stream, mode="r|", ignore_zeros=True) as tar:
                yield tar

    def _tar(self, uri: str) -> Iterator[Record]:
        names: list[str] = []
        texts: dict[str, str] = {}
        members: list[str] = []  # every name, files or not, in order: a later one of a name replaces it
        try:  # first pass: names (for the root folder) and licence files
            with self._tar_stream(uri) as tar:
                for member in (m for m in tar if not m.isdir()):
                    members.append(readable_name(member.name))
                    if member.isfile():
                        names.append(readable_name(member.name))
                        if wants_text(member.name, member.size):
                            handle = tar.extractfile(member)
                            text = (handle.read() if handle else b"").decode("utf-8", "replace")
                            texts[readable_name(member.name)] = text
        except (tarfile.TarError, OSError, EOFError, ValueError, lzma.LZMAError) as exc:
            if is_io_error(exc):  # the storage's fault: read_shard reads the file again
                raise
            # a break or a bomb: the second pass meets it at the same byte, after the documents before it
        root = _root(names)
        licenses = RepoLicenses({_strip(n, root): t for n, t in texts.items()})
        repo = _repo_name(uri, root)
        last = _last_positions(_strip(name, root) for name in members)
        position = k = 0  # records given, and members read (`last` counts them)
        with self._tar_stream(uri) as tar:
            for member in _skips_counted(tar):
                if isinstance(member, _Gap):
                    yield Record(position, reason="unreadable_member", detail=member.detail)
                    position += 1
                    continue
                path = _strip(readable_name(member.name), root)
                if last.get(path, k) > k:
                    yield _replaced(position, path, member.size)
                elif not member.isfile():
                    yield _skip(position, "link" if member.issym() or member.islnk() else "not_a_file", path)
                else:
                    handle = tar.extractfile(member)
                    yield self._member(position, repo, path, member.size,
                                       handle.read if handle else (lambda _n: b""), licenses)
                position, k = position + 1, k + 1

    def _zip(self, uri: str) -> Iterator[Record]:
        fs, path = storage.resolve(uri)
        with fs.open_input_file(path) as f, zipfile.ZipFile(f) as archive:
            budget = self.inflate_budget(uri, f.size())
            infos = [i for i in archive.infolist() if not i.is_dir()]
            root = _root([i.filename for i in infos])
            texts = {}
            for info in infos:
                if wants_text(info.filename, info.file_size) and not _zip_link(info):
                    try:
                        texts[_strip(info.filename, root)] = archive.read(info).decode("utf-8", "replace")
                    except _MEMBER_FAULTS as exc:
                        _raise_unless_content(exc)
            licenses = RepoLicenses(texts)
            repo = _repo_name(uri, root)
            last = _last_positions(_strip(info.filename, root) for info in infos)
            for position, info in enumerate(infos):
                name = _strip(info.filename, root)
                if last[name] > position:
                    yield _replaced(position, name, info.file_size)
                    continue
                if _zip_link(info):  # its data is the link's target, not a file's text
                    yield _skip(position, "link", name)
                    continue
                budget.spend(info.file_size)  # as declared: zipfile inflates a member to no more than that
                try:
                    with archive.open(info) as member:
                        yield self._member(position, repo, name, info.file_size, member.read, licenses)
                except _MEMBER_FAULTS as exc:
                    _raise_unless_content(exc)
                    detail = f"{name}: {type(exc).__name__}: {exc}"[:500]
                    yield Record(position, reason="unreadable_member", detail=detail)

    # -- a file of a repository folder ---------------------------------------------------------------

    def _loose(self, uri: str) -> Record:
        fs, path = storage.resolve(uri)
        path = storage.canonical(uri)
        root, relative = _in_repository(path, named_folder(self.paths, path))
        relative = readable_name(relative)
        info = fs.get_file_info(path)
        if in_vcs_folder(relative):
            return _skip(0, "vcs", relative, info.size or 0)
        if is_binary_name(relative):
            return _skip(0, "binary", relative, info.size or 0)
        if info.size is not None and info.size > self.code.max_file_bytes:
            return _skip(0, "too_large", f"{relative}: {info.size} bytes", info.size)
        with fs.open_input_file(path) as f:
            data = f.read(self.code.max_file_bytes + 1)
        return self.document(0, root.rsplit("/", 1)[-1], relative, data, folder_licenses(root))

    def link(self, path: str) -> Record:
        """A link met in a folder, named by its path inside its repository."""
        _, relative = _in_repository(path, named_folder(self.paths, path))
        return _skip(0, "link", f"{readable_name(relative)} -> {link_target(path)}"[:500])

    # -- The-Stack-like tables ---------------------------------------------------------------------

    def _table(self, uri: str) -> Iterator[Record]:
        if uri.lower().endswith(".parquet"):
            fs, path = storage.resolve(uri)
            with fs.open_input_file(path) as f:
                # a string that is not UTF-8 skips its row only, not the rest of its batch and file
                rows = parquet_rows(f, budget=self.inflate_budget(uri, f.size()))
                for position, row, invalid in rows:
                    if row is not None:
                        yield self._row(position, row)
                    elif invalid.reason == "invalid_utf8":
                        yield _skip(position, "undecodable", invalid.detail)
                    else:  # a row group that cannot be read
                        yield Record(position, reason=invalid.reason, detail=invalid.detail)
            return
        yield from _Rows(self).records(uri)

    def _row(self, position: int, row: dict[str, Any]) -> Record:
        o = self.code
        content = row.pop(o.content_field, None)
        if isinstance(content, bytes):
            if b"\0" in content[:BINARY_SNIFF]:
                return _skip(position, "binary", None, len(content))
            try:
                content = content.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                return _skip(position, "undecodable", f"{exc.reason} at byte {exc.start}", len(content))
        if not isinstance(content, str):
            kind = "missing" if content is None else type(content).__name__
            return Record(position, reason="no_text_field", detail=f"field {o.content_field!r} is {kind}")
        size = len(content.encode("utf-8", "surrogatepass"))
        path, repo = str(row.pop(o.path_field, None) or ""), str(row.pop(o.repo_field, None) or "")
        url = row.pop(self.url_field, None)
        path = _relative(path) if path else path  # as an archive member's: `a/./b/../c.py` is `a/c.py`
        if _escapes(path):  # as in an archive: a consumer writing files by `meta.path` would write outside its folder
            return _skip(position, "unsafe_path", path, size)
        if size == 0:
            return _skip(position, "empty", path)
        if size > o.max_file_bytes:
            return _skip(position, "too_large", f"{path}: {size} bytes", size)
        if "\0" in content[:BINARY_SNIFF]:
            return _skip(position, "binary", path, size)
        language = row.pop(o.language_field, None)
        declared = row.pop(o.license_field, None)
        record = self._text_record(position, repo, path, content, size, None, row,
                                   language=language_of_label(str(language)) if language else None)
        if record.meta["license"] is None:  # a header in the file itself beats the column
            record.meta.update(column_license(declared))
        record.url = None if url is None else str(url)
        return record


class _Rows(JsonlReader):
    """JSON Lines parsing as the jsonl format does it, each object then read as a table row."""

    def __init__(self, owner: CodeReader) -> None:
        super().__init__(**owner.options())  # the owner's bounds and retries
        self.owner = owner

    def from_mapping(self, position: int, obj: Any, size: int) -> Record:
        if not isinstance(obj, dict):
            return Record(position, reason="not_an_object", detail=type(obj).__name__, raw_bytes=size)
        return self.owner._row(position, obj)


@dataclass(frozen=True)
class _Gap:
    """Bytes of a tar archive where a member header should be and none could be read (skipped, as `tar` does)."""

    detail: str


def _skips_counted(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo | _Gap]:
    """The members but folders of a tar stream read with `ignore_zeros`, and a `_Gap` wherever it skipped bytes to
    find the next header (a damaged one: its member is lost, the ones after it are read)."""
    expected = 0
    for member in tar:
        if member.offset > expected:
            yield _Gap(f"{member.offset - expected} bytes at byte {expected} hold no member header: skipped to the "
                       "next one")
        blocks = -(-member.size // tarfile.BLOCKSIZE) if member.isreg() else 0
        expected = member.offset_data + blocks * tarfile.BLOCKSIZE
        if not member.isdir():
            yield member


def _raise_unless_content(exc: BaseException) -> None:
    """Raises `exc` again unless it is a fault of one member's content: a storage fault is read_shard's to
    retry (then the shard fails), a bomb ends the archive in one `decompression_bomb` reject."""
    if is_io_error(exc) or isinstance(exc, DecompressionBombError):
        raise exc


def _sniffed(fs: pafs.FileSystem, path: str) -> str | None:
    """The codec a file's first bytes say it is compressed with (None: a plain tar, or not a known codec)."""
    with fs.open_input_file(path) as f:
        head = f.read(6)
    return next((codec for magic, codec in _MAGIC.items() if head.startswith(magic)), None)


def _inflating(raw: pa.NativeFile, codec: str) -> Any:
    """`raw` decompressed, the members before a break kept (Arrow has no xz codec: Python's lzma inflates
    it, as tarfile would)."""
    return lzma.LZMAFile(raw) if codec == "xz" else SalvagingStream(raw, codec)


def readable_name(name: str) -> str:
    """A file name as UTF-8: tarfile and the OS hand over a name's bytes that are not UTF-8 as lone surrogates
    (`bad\\xff\\xfe.py`), which no document can hold: each becomes U+FFFD, and the file is read as any other."""
    if name.isascii():
        return name
    return schema.utf8_or_raw(name).decode("utf-8", "replace")


def named_folder(patterns: Sequence[str], path: str) -> str | None:
    """The folder holding `path` that a source names: a folder given as such, or one a pattern ending in `/`
    matches (each checkout of `checkouts/*/`). None where the file was found otherwise."""
    for pattern in patterns:
        names_folders = pattern.endswith("/") or not storage.has_wildcard(pattern)
        if storage.is_remote(pattern) or not names_folders:
            continue
        folder = storage.canonical(pattern).rstrip("/")
        prefix = "/".join(path.split("/")[: folder.count("/") + 1])
        if not path.startswith(prefix + "/"):
            continue
        if storage.glob_regex(folder).match(prefix) if storage.has_wildcard(folder) else prefix == folder:
            return prefix
    return None


def _in_repository(path: str, floor: str | None = None) -> tuple[str, str]:
    """(repository folder, path inside it) of a file of a folder; `floor`: the folder the source named, which the
    search for a repository's root does not go above, and which is the repository when nothing below says."""
    root = folder_root(path.rsplit("/", 1)[0], floor=floor)
    return root, path[len(root) + 1 :] if path.startswith(root + "/") else path.rsplit("/", 1)[-1]


def _zip_link(info: zipfile.ZipInfo) -> bool:
    """Whether a zip entry is a symbolic link (a Unix mode in its external attributes, as Info-ZIP stores it)."""
    return stat.S_ISLNK(info.external_attr >> 16)


_DRIVE = re.compile(r"[A-Za-z]:")


def _relative(name: str) -> str:
    """A member's name without its leading `./` and `/`: `tar -C repo -czf r.tgz .` names `./.git/HEAD` (stripping
    every leading `.` made it `git/HEAD`, no longer version control, and `.bashrc` `bashrc`), its `a/../b` made `b`
    (one that still leads up, `../x`, is refused: `_escapes`)."""
    while name.startswith(("./", "/")):
        name = name[2:] if name.startswith("./") else name[1:]
    return posixpath.normpath(name) if name else name


def _escapes(path: str) -> bool:
    """Whether a member's path leads out of its repository (`../x`): a consumer writing files by `meta.path`
    would write outside the folder it writes into, as tar and zip extractors refuse to. Read with `\\` as a
    separator too, and a drive (`C:`) as a root: a zip made on Windows names members so."""
    windows = posixpath.normpath(path.replace("\\", "/"))
    return any(p == ".." or p.startswith(("../", "/")) for p in (path, windows)) or _DRIVE.match(path) is not None


def _root(names: list[str]) -> str:
    """The single top folder all members share (GitHub archives' `owner-repo-sha/`), else ''."""
    relative = [_relative(n) for n in names]
    tops = {n.split("/", 1)[0] for n in relative if "/" in n}
    flat = any("/" not in n for n in relative)
    return tops.pop() if len(tops) == 1 and not flat else ""


def _strip(name: str, root: str) -> str:
    name = _relative(name)
    return name[len(root) + 1 :] if root and name.startswith(root + "/") else name


def _repo_name(uri: str, root: str) -> str:
    if root:
        return root
    name = uri.rsplit("/", 1)[-1]
    for ext in sorted((*_TAR, ".zip"), key=len, reverse=True):
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return name
