"""The Ray layer: recipes become Ray tasks (Ray Data for shuffles and training feeds), the CLI, the status service."""

import os

from pipelines.allocator import ENVIRONMENT

# Read by Ray Data when it is first imported: our own progress line replaces its bars.
os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
# Read by Arrow and glibc when a process starts: this one, when nothing imported pyarrow before, and the
# workers it starts (pipelines/allocator.py).
for _name, _value in ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)
