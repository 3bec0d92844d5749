"""A local S3 server for tests and benchmarks: moto in server mode on 127.0.0.1.

:func:`start_s3_server` starts one (``python -m moto.server`` as a child process on a free
port: its own interpreter, so its request handling never competes for this process's GIL
with the code under test or a benchmark) and returns an :class:`S3Server` with the
endpoint and the standard AWS environment that boto3/botocore, s3fs and (through
``acidflow.spark``) Hadoop's S3A read: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``. Nothing here is product code: acidflow only
ever reads that environment.

moto keeps all objects in memory, is strongly consistent (as S3 is since December 2020: a
LIST after a PUT sees the object) and honours ``PutObject`` with ``If-None-Match: *`` (HTTP 412
``PreconditionFailed`` when the key exists), which is what ``TableFS.create_exclusive`` relies
on.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

#: fixed fake credentials (moto accepts any); the region every bucket is made in
ACCESS_KEY = "acidflow-test"
SECRET_KEY = "acidflow-test-secret"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    """A running moto S3 server.

    Attributes:
        endpoint: ``http://127.0.0.1:<port>``.
        env: the AWS environment pointing at it (``AWS_ENDPOINT_URL``, keys, region).
    """

    endpoint: str
    env: dict[str, str]
    _server: Any = field(repr=False, default=None)

    def client(self) -> Any:
        """A boto3 S3 client on this server."""
        import boto3  # deferred: only tests that use S3 import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def make_bucket(self, name: str | None = None) -> str:
        """Create a bucket (default a fresh ``acidflow-<hex>`` name) and return its name."""
        bucket = name or f"acidflow-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def apply_env(self) -> dict[str, str | None]:
        """Set :attr:`env` in ``os.environ``; returns the previous values for :meth:`restore_env`."""
        old = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        _forget_fsspec_instances()
        return old

    @staticmethod
    def restore_env(old: dict[str, str | None]) -> None:
        """Undo :meth:`apply_env`."""
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _forget_fsspec_instances()

    def stop(self) -> None:
        """Stop the server (its objects are lost)."""
        if self._server is not None:
            self._server.terminate()
            try:
                self._server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
            self._server = None


def _forget_fsspec_instances() -> None:
    """s3fs caches filesystem instances per argument set; a cached one would keep the endpoint
    of an earlier environment, so the cache is dropped when the environment changes."""
    import s3fs  # deferred: see S3Server.client

    s3fs.S3FileSystem.clear_instance_cache()


def start_s3_server(timeout_s: float = 60.0) -> S3Server:
    """Start moto's S3 server on a free port of 127.0.0.1 (benchmarks call this too) and wait
    until it answers.

    Args:
        timeout_s: how long to wait for the first answer.
    Returns:
        A running :class:`S3Server`; call :meth:`S3Server.stop` when done.
    Raises:
        RuntimeError: the server exited or did not answer within ``timeout_s``.
    """
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise RuntimeError(
                    f"moto's S3 server on {endpoint} did not start (exit code {proc.returncode})"
                ) from None
            time.sleep(0.2)
    env = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }
    return S3Server(endpoint, env, proc)


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """:func:`start_s3_server` with its environment applied, stopped and undone at the end."""
    server = start_s3_server()
    old = server.apply_env()
    try:
        yield server
    finally:
        server.restore_env(old)
        server.stop()


def point_spark_at(spark: Any, env: dict[str, str]) -> None:
    """Let a SparkSession built before the server started use it: the AWS variables go into
    the environment of Python workers started from now on (``SparkContext.environment``: Spark
    keys its Python worker daemons by that environment, so new ones start) and the S3A
    settings into the live Hadoop configuration (``acidflow.spark.apply_s3a_settings``). A
    session built with the variables already set needs neither."""
    from acidflow.spark import apply_s3a_settings  # deferred: pyspark only for Spark tests

    spark.sparkContext.environment.update(env)
    apply_s3a_settings(spark, env)
