"""Configuration: environment first, files second, code defaults last.

Keys (environment variables):

* ``ACIDFLOW_WAREHOUSE`` -- table root: a local path or an fsspec URL (``file:///...``,
  ``s3://...``). Default ``./warehouse`` under the current directory.
* ``ACIDFLOW_CATALOG_URL`` -- SQLAlchemy URL of the transaction catalog. Default: a SQLite
  file ``_acidflow_catalog.db`` inside the warehouse (hidden from ACID listings by its ``_``).
* ``ACIDFLOW_TXN_TIMEOUT`` -- seconds without heartbeat before the housekeeper aborts a
  transaction (Hive ``hive.txn.timeout``, default 300).

Object storage (a warehouse ``s3://bucket/prefix``): acidflow adds no S3 keys of its own. The
endpoint, credentials and region are the standard AWS environment that botocore (hence s3fs,
in the driver and in Spark's Python tasks) reads and that ``acidflow.spark`` hands to Hadoop's
S3A for Spark: ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``; a custom endpoint such as
MinIO is used with path-style addressing by S3A), ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``,
``AWS_PROFILE``. ``ACIDFLOW_HADOOP_AWS_JARS`` -- folder of the S3A jars for Spark (default
``.cache/hadoop-aws`` of the repository, filled by ``make hadoop-aws``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TXN_TIMEOUT_S = 300


@dataclass(frozen=True)
class Settings:
    """Resolved settings.

    Attributes:
        warehouse: table root (local absolute path or fsspec URL).
        catalog_url: SQLAlchemy URL of the catalog database.
        txn_timeout_s: heartbeat timeout in seconds (Hive ``hive.txn.timeout``).
    """

    warehouse: str
    catalog_url: str
    txn_timeout_s: int = DEFAULT_TXN_TIMEOUT_S


def load_settings(warehouse: str | None = None, catalog_url: str | None = None) -> Settings:
    """Resolve settings from arguments, then the environment, then defaults.

    Args:
        warehouse: overrides ``ACIDFLOW_WAREHOUSE``.
        catalog_url: overrides ``ACIDFLOW_CATALOG_URL``.
    Returns:
        A :class:`Settings`; a local warehouse path is made absolute (not created).
    """
    wh = warehouse or os.environ.get("ACIDFLOW_WAREHOUSE") or "warehouse"
    if "://" not in wh:
        wh = str(Path(wh).absolute())
    url = catalog_url or os.environ.get("ACIDFLOW_CATALOG_URL")
    if not url:
        if "://" in wh and not wh.startswith("file://"):
            raise ValueError(
                "ACIDFLOW_CATALOG_URL must be set when the warehouse is not local "
                f"(warehouse={wh!r})"
            )
        local = wh[len("file://") :] if wh.startswith("file://") else wh
        url = f"sqlite:///{Path(local) / '_acidflow_catalog.db'}"
    timeout = int(os.environ.get("ACIDFLOW_TXN_TIMEOUT", DEFAULT_TXN_TIMEOUT_S))
    return Settings(warehouse=wh, catalog_url=url, txn_timeout_s=timeout)
