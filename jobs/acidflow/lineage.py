"""What a job read and wrote, reported to the process that submitted it (the Airflow operator),
for OpenLineage events and Airflow asset events.

A job (``cdc-upsert``, ``ingest``, ``compact --worker``) calls :func:`report_lineage` at its end;
when the environment names a file in :data:`LINEAGE_ENV` (``AcidflowSparkSubmitOperator`` sets
one per task try) the report is written there as one JSON object, else nothing happens::

    {"job": "cdc-upsert",
     "inputs":  [{"namespace": "file", "name": "/landing/0001.json"}],
     "outputs": [{"namespace": "acid://<catalog id>", "name": "app.users", "changed": true}]}

Names follow OpenLineage's naming conventions: a local file is namespace ``file`` with its
absolute path as name (an fsspec URL ``s3://bucket/key`` becomes namespace ``s3://bucket``,
name ``key``); a table is namespace ``acid://<catalog id>`` (the catalog's stable UUID, the same
for every URL that reaches it) and name ``db.table``. The Airflow asset of a table is the URI
``acid://<catalog id>/db.table``. ``changed`` is false for an output whose rows did not change
(a compaction rewrites files only): no asset event is emitted for it, so a DAG scheduled on the
tables' assets is not triggered by the compactor.

The file is written by the Spark driver, which runs in the ``spark-submit`` process's machine
in client mode (``local[N]`` and the standalone master as acidflow deploys them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

#: environment variable naming the report file
LINEAGE_ENV = "ACIDFLOW_LINEAGE_FILE"
#: URI scheme of table namespaces and assets
TABLE_SCHEME = "acid"


def table_namespace(catalog_id: str) -> str:
    """``acid://<catalog id>``: the OpenLineage namespace of the catalog's tables."""
    return f"{TABLE_SCHEME}://{catalog_id}"


def table_asset_uri(catalog_id: str, table: str) -> str:
    """``acid://<catalog id>/<db.table>``: the Airflow asset URI of a table."""
    return f"{table_namespace(catalog_id)}/{table}"


def file_dataset(path: str) -> dict[str, str]:
    """OpenLineage ``{"namespace", "name"}`` of a file path or fsspec URL (``file`` + absolute
    path for local files, ``scheme://authority`` + key otherwise)."""
    if "://" in path and not path.startswith("file://"):
        u = urlsplit(path)
        return {"namespace": f"{u.scheme}://{u.netloc}", "name": u.path.lstrip("/")}
    local = path[len("file://") :] if path.startswith("file://") else path
    return {"namespace": "file", "name": str(Path(local).absolute())}


def table_dataset(catalog_id: str, table: str, changed: bool = True) -> dict[str, Any]:
    """OpenLineage dataset of a table plus whether its rows changed."""
    return {"namespace": table_namespace(catalog_id), "name": table, "changed": changed}


def report_lineage(
    job: str,
    inputs: Iterable[Mapping[str, Any]],
    outputs: Iterable[Mapping[str, Any]],
    environ: Mapping[str, str] | None = None,
) -> Path | None:
    """Write the report to ``$ACIDFLOW_LINEAGE_FILE`` (replacing it), or do nothing when unset.

    Args:
        job: the subcommand (``cdc-upsert``, ``ingest``, ``compact``).
        inputs, outputs: datasets from :func:`file_dataset` / :func:`table_dataset`
            (duplicates dropped, order kept).
    Returns:
        The file written, or ``None``.
    Raises:
        OSError: the file cannot be written (names it).
    """
    target = (os.environ if environ is None else environ).get(LINEAGE_ENV)
    if not target:
        return None

    def unique(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        for d in items:
            key = (str(d["namespace"]), str(d["name"]))
            if key in seen:
                if "changed" in d or "changed" in seen[key]:
                    seen[key]["changed"] = bool(seen[key].get("changed") or d.get("changed"))
            else:
                seen[key] = dict(d)
        return list(seen.values())

    path = Path(target)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"job": job, "inputs": unique(inputs), "outputs": unique(outputs)}))
    os.replace(tmp, path)
    return path


def read_lineage(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The report at ``path``; ``None`` when the job wrote none (it failed first, or it reads
    nothing and writes nothing).

    Raises:
        ValueError: the file is not a report (names the file).
    """
    p = Path(path)
    if not p.exists() or p.stat().st_size == 0:
        return None
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not a lineage report: {exc}") from None
    if not isinstance(data, dict) or not {"inputs", "outputs"} <= set(data):
        raise ValueError(f"{p}: not a lineage report (needs inputs and outputs)")
    return data
