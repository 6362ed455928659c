"""A stateful stage for tests: records where and how often its `setup` ran."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
from pydantic import Field

from curation import schema
from curation.stages import Processed, Resources, Stage, StageParams


class SetupCounter(Stage):
    """Keeps every row; each `setup` appends the worker's pid to a file, as a model load would run."""

    name = "setup_counter"
    output_columns: ClassVar[dict[str, pa.DataType]] = {"worker_pid": pa.int64()}

    class Params(StageParams):
        log: str = Field(..., description="File that gets one line per setup.")

    def setup(self) -> None:
        with Path(self.params.log).open("a") as f:
            f.write(f"{os.getpid()}\n")

    def process(self, batch: pa.Table) -> Processed:
        pids = pa.array([os.getpid()] * batch.num_rows, pa.int64())
        return Processed(batch.append_column("worker_pid", pids), pa.nulls(batch.num_rows, pa.string()))


class Poisoned(Stage):
    """Raises on any batch holding a document whose text contains `marker`, as a buggy model might."""

    name = "poisoned"
    output_columns: ClassVar[dict[str, pa.DataType]] = {"checked": pa.bool_()}

    class Params(StageParams):
        marker: str = Field("POISON", description="Text that makes the stage raise.")

    def process(self, batch: pa.Table) -> Processed:
        texts = batch.column("text").to_pylist()
        if any(self.params.marker in (t or "") for t in texts):
            msg = f"cannot handle {self.params.marker}"
            raise RuntimeError(msg)
        checked = pa.array([True] * batch.num_rows)
        return Processed(batch.append_column("checked", checked), pa.nulls(batch.num_rows, pa.string()))


class NodeRecorder(Stage):
    """Keeps every row and records the Ray node that processed it (tests of multi-node runs)."""

    name = "node_recorder"
    resources = Resources(cpus=0.5)
    output_columns: ClassVar[dict[str, pa.DataType]] = {"node": pa.string()}

    def process(self, batch: pa.Table) -> Processed:
        import ray  # tests only: curation's own stages never import Ray

        node = ray.get_runtime_context().get_node_id()
        return Processed(batch.append_column("node", pa.array([node] * batch.num_rows, pa.string())),
                         pa.nulls(batch.num_rows, pa.string()))


class CrashOnce(Stage):
    """Kills its worker process the first time it sees `marker` (as the OOM killer would), once per `flag` file."""

    name = "crash_once"

    class Params(StageParams):
        flag: str = Field(..., description="Created before the crash; while it exists the stage keeps every row.")
        marker: str = Field("CRASH", description="Text that kills the worker.")

    def process(self, batch: pa.Table) -> Processed:
        texts = batch.column("text").to_pylist()
        if any(self.params.marker in (t or "") for t in texts) and not Path(self.params.flag).exists():
            Path(self.params.flag).write_text(str(os.getpid()))
            os._exit(1)
        return Processed(batch, pa.nulls(batch.num_rows, pa.string()))


class CrashAlways(Stage):
    """Kills its worker process every time it sees `marker` (a page that always exhausts memory)."""

    name = "crash_always"

    class Params(StageParams):
        marker: str = Field("CRASH", description="Text that kills the worker.")

    def process(self, batch: pa.Table) -> Processed:
        if any(self.params.marker in (t or "") for t in batch.column("text").to_pylist()):
            os._exit(1)
        return Processed(batch, pa.nulls(batch.num_rows, pa.string()))


class ShardLog(Stage):
    """Keeps every row; appends `<shard> <time>` to a file for each batch, so tests can see the order shards ran in."""

    name = "shard_log"

    class Params(StageParams):
        log: str = Field(..., description="File that gets one line per batch.")

    def process(self, batch: pa.Table) -> Processed:
        with Path(self.params.log).open("a") as f:
            f.write(f"{batch.column(schema.SHARD)[0].as_py()} {time.time()}\n")
        return Processed(batch, pa.nulls(batch.num_rows, pa.string()))


class BrokenSetup(Stage):
    """Cannot set up (a model file that will not load): every task that runs it fails."""

    name = "broken_setup"

    def setup(self) -> None:
        msg = "model file is corrupt"
        raise RuntimeError(msg)

    def process(self, batch: pa.Table) -> Processed:
        return Processed(batch, pa.nulls(batch.num_rows, pa.string()))


class BatchSizes(Stage):
    """Keeps every row; records the size of each batch it is given (dropped rows too) under its `tag`."""

    name = "batch_sizes"
    seen: ClassVar[dict[str, list[int]]] = {}

    class Params(StageParams):
        tag: str = Field(..., description="Where this instance's sizes are recorded in `seen`.")

    def applies(self, batch: pa.Table) -> None:
        self.seen.setdefault(self.params.tag, []).append(batch.num_rows)

    def process(self, batch: pa.Table) -> Processed:
        return Processed(batch, pa.nulls(batch.num_rows, pa.string()))


class Appender(Stage):
    """Keeps every row; the first batch it sees appends a line to `path`, as a crawler still writing an input would."""

    name = "appender"

    class Params(StageParams):
        path: str = Field(..., description="The file that gets one more line.")
        line: str = Field(..., description="What is appended.")

    def process(self, batch: pa.Table) -> Processed:
        with Path(self.params.path).open("a") as f:
            f.write(self.params.line)
        return Processed(batch, pa.nulls(batch.num_rows, pa.string()))
