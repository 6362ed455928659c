"""Where the real third-party test data is: `$CURATION_TESTDATA`, else `../shared/data` beside the project."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def data_root() -> Path:
    return Path(os.environ.get("CURATION_TESTDATA") or PROJECT_ROOT.parent / "shared" / "data")


def data_or_exit(*needed: str) -> Path:
    """The test data's root when it holds every `needed` path, else say so and exit 0, writing nothing (as the
    README of benchmarks/ says a benchmark does without its data)."""
    root = data_root()
    missing = [name for name in needed if not (root / name).exists()]
    if not root.is_dir() or missing:
        print(f"test data not found at {root / (missing[0] if missing else '')} (set CURATION_TESTDATA): nothing to "
              "measure")
        sys.exit(0)
    return root
