"""A local S3 server (moto) on the loopback interface, with the AWS variables that point pyarrow and curation at it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pyarrow.fs as pafs
import pytest


@contextlib.contextmanager
def local_s3() -> Iterator[tuple[pafs.S3FileSystem, dict[str, str]]]:
    """(a filesystem on the server, the environment set while the block runs), the server stopped after it."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    try:
        with pytest.MonkeyPatch.context() as mp:
            for key, value in env.items():
                mp.setenv(key, value)
            yield pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", allow_bucket_creation=True), env
    finally:
        server.stop()
