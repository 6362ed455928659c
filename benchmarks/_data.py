"""Where the real third-party test data is: `$CURATION_TESTDATA`, else `../shared/data` beside the project."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def data_root() -> Path:
    return Path(os.environ.get("CURATION_TESTDATA") or PROJECT_ROOT.parent / "shared" / "data")
