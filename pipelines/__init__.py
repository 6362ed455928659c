"""The Ray layer: recipes become Ray Data plans; the CLI and, later, the status service live here."""

import os

# Read by Ray Data when it is first imported: our own progress line replaces its bars.
os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
