"""The Ray layer: recipes become Ray tasks (Ray Data for shuffles and training feeds), the CLI, the status service."""

import os

# Read by Ray Data when it is first imported: our own progress line replaces its bars.
os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
