"""What a file's path alone says: lock file, vendored copy, generated or minified by name.

Vendored folders follow GitHub linguist's `vendor.yml` (the common entries: package managers'
install folders, `vendor/`, `third_party/`, Python's `_vendor/`...); generated and minified
names its `generated.rb` (`*_pb2.py`, `*.pb.go`, `*.min.js`, source maps...). Lock files are
identify's lock tags plus the lock files of the package managers identify does not know.
"""

from __future__ import annotations

import re

from identify.identify import tags_from_filename

VCS = ("/.git/", "/.hg/", "/.svn/", "/.bzr/")  # version control's own folders: no source of the project


def in_vcs_folder(path: str) -> bool:
    """Whether a path (inside its repository, or any key below an input's root) lies in a version-control folder."""
    return any(vcs in f"/{path}" for vcs in VCS)


_LOCK_TAGS = {"cargo-lock", "gemfile-lock", "pipfile-lock", "poetry-lock", "uv-lock", "go-sum"}
_LOCK_NAMES = {
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "composer.lock",
    "podfile.lock", "mix.lock", "pubspec.lock", "flake.lock", "packages.lock.json", "gradle.lockfile",
    "package.resolved", "conda-lock.yml", "pdm.lock", "cartfile.resolved", "deno.lock", "manifest.toml",
}  # fmt: skip

_VENDORED = re.compile(
    r"(?:^|/)(?:node_modules|bower_components|jspm_packages|vendor|vendors|_vendor|vendored|third[_-]?party|"
    r"3rd[_-]?party|extern|externals?|deps|Godeps/_workspace|Pods|Carthage/Build|\.yarn|site-packages|"
    r"dist-packages|\.venv|venv|\.tox|\.bundle|bundle/ruby|\.cargo/registry)/",
    re.IGNORECASE,
)
_GENERATED_NAME = re.compile(
    r"(?:_pb2(?:_grpc)?\.pyi?|\.pb\.(?:go|cc|h|c|swift|dart)|\.pb\.gw\.go|_grpc\.pb\.go|\.pb-c\.[ch]|"
    r"_generated\.\w+|\.g\.dart|\.freezed\.dart|\.designer\.cs|\.g\.cs|\.generated\.\w+|\.(?:m?js|css)\.map)$",
    re.IGNORECASE,
)
_MINIFIED_NAME = re.compile(r"[.-]min\.(?:js|mjs|css)$|\.bundle\.js$|\.chunk\.(?:js|css)$", re.IGNORECASE)


def is_lock_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.lower() in _LOCK_NAMES or bool(_LOCK_TAGS & tags_from_filename(name))


def is_vendored(path: str) -> bool:
    return bool(_VENDORED.search(path))


def generated_name(path: str) -> str | None:
    """The generator suffix in the file name (`_pb2.py`), if any."""
    m = _GENERATED_NAME.search(path)
    return m.group(0) if m else None


def minified_name(path: str) -> str | None:
    m = _MINIFIED_NAME.search(path)
    return m.group(0) if m else None
