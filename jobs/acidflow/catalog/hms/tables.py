"""Tables between acidflow and a Hive 3.1 metastore: a :class:`TableDef` as the thrift ``Table``
Hive's ``CREATE TABLE ... CLUSTERED BY (...) INTO n BUCKETS STORED AS ORC TBLPROPERTIES
('transactional'='true')`` registers, and back; the check that a metastore table is one acidflow
can read and write (full-ACID ORC).

What goes where in the thrift ``Table``: data columns -> ``sd.cols`` (Hive type strings),
partition columns -> ``partitionKeys``, buckets -> ``sd.numBuckets`` / ``sd.bucketCols``, the
ORC serde and input/output formats -> ``sd.serdeInfo`` / ``sd.inputFormat`` /
``sd.outputFormat``, table properties -> ``parameters`` (``transactional=true``,
``transactional_properties=default``, ``bucketing_version``), the acidflow-only facts Hive has
no field for -> the parameters ``acidflow.primary_key`` (comma-separated) and
``acidflow.ordering_column``. The location is a URI (``file:///...`` for a local path), as
Hive's ``Warehouse`` qualifies it.
"""

from __future__ import annotations

from pathlib import Path

from pymetastore.hive_metastore.ttypes import (
    FieldSchema,
    SerDeInfo,
    StorageDescriptor,
    Table,
)

from acidflow.catalog.errors import CatalogError
from acidflow.catalog.hms.client import ORC_INPUT, ORC_OUTPUT, ORC_SERDE
from acidflow.catalog.tabledef import EXTERNAL_PROPERTY, Column, TableDef
from acidflow.format.hivetypes import normalize_hive_type

#: Table parameters holding acidflow's upsert key and CDC ordering column.
PRIMARY_KEY_PARAM = "acidflow.primary_key"
ORDERING_PARAM = "acidflow.ordering_column"

#: Parameters the metastore or Hive's statistics add by themselves (not the table's
#: properties as acidflow defines them).
HIVE_BOOKKEEPING_PARAMS = frozenset(
    {
        "transient_lastDdlTime",
        "numFiles",
        "numFilesErasureCoded",
        "totalSize",
        "numRows",
        "rawDataSize",
        "COLUMN_STATS_ACCURATE",
        "last_modified_by",
        "last_modified_time",
    }
)


class NotAnAcidTableError(CatalogError):
    """A metastore table acidflow must not write: not transactional, insert-only, not ORC, or
    external (names the table and the reason)."""

    def __init__(self, table: str, reason: str) -> None:
        self.table = table
        self.reason = reason
        super().__init__(f"Hive table {table} cannot be used by acidflow: {reason}")


def location_uri(location: str) -> str:
    """A table location as the metastore stores it: a URI (``file:///abs/path`` for a local
    path, not percent-encoded: Hadoop's ``Path`` takes ``ds=1`` as it is and would keep
    ``ds%3D1`` literally; URIs with a scheme are kept)."""
    if "://" in location or location.startswith("file:"):
        return location
    return "file://" + str(Path(location).resolve())


def local_location(uri: str) -> str:
    """The inverse of :func:`location_uri` for local tables: ``file:/a/b`` or ``file:///a/b``
    -> ``/a/b``; other schemes are kept as they are."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    if uri.startswith("file:"):
        return uri[len("file:") :]
    return uri


def check_acid_orc(table: Table) -> None:
    """Refuse a metastore table that is not a Hive 3 full-ACID ORC table.

    Raises:
        NotAnAcidTableError: ``transactional`` is not ``true``, ``transactional_properties`` is
            ``insert_only``, the serde / input format is not ORC's, or the table is a view
            or external (names the table and the reason).
    """
    name = f"{table.dbName}.{table.tableName}"
    params = {k: str(v) for k, v in (table.parameters or {}).items()}
    if table.tableType not in (None, "MANAGED_TABLE"):
        raise NotAnAcidTableError(
            name, f"table type {table.tableType} (a transactional table is a managed table)"
        )
    if params.get("transactional", "false").strip().lower() != "true":
        raise NotAnAcidTableError(
            name, "not transactional (TBLPROPERTIES has no 'transactional'='true')"
        )
    props = params.get("transactional_properties", "default").strip().lower()
    if props != "default":
        raise NotAnAcidTableError(
            name,
            f"transactional_properties={props!r} (insert-only "
            "tables have no ROW__ID; acidflow writes full ACID)",
        )
    sd = table.sd
    serde = sd.serdeInfo.serializationLib if sd is not None and sd.serdeInfo else None
    if sd is None or serde != ORC_SERDE or sd.inputFormat != ORC_INPUT:
        raise NotAnAcidTableError(
            name,
            f"not stored as ORC (serde {serde}, input format "
            f"{sd.inputFormat if sd is not None else None})",
        )


def to_hms_table(table: TableDef, owner: str) -> Table:
    """The thrift ``Table`` of ``table`` (validated, with its location set): a managed,
    bucketed (when ``num_buckets > 0``) transactional ORC table with ``bucketing_version`` and
    the ``acidflow.*`` parameters."""
    params = {k: v for k, v in table.properties.items() if k != EXTERNAL_PROPERTY}
    params["bucketing_version"] = str(table.bucketing_version)
    if table.primary_key:
        params[PRIMARY_KEY_PARAM] = ",".join(table.primary_key)
    if table.ordering_column:
        params[ORDERING_PARAM] = table.ordering_column
    if table.external:  # acidflow's flag (outside the warehouse), not Hive's EXTERNAL
        params[EXTERNAL_PROPERTY] = "true"
    sd = StorageDescriptor(
        cols=[FieldSchema(c.name, c.hive_type, c.comment) for c in table.columns],
        location=location_uri(table.location),
        inputFormat=ORC_INPUT,
        outputFormat=ORC_OUTPUT,
        compressed=False,
        numBuckets=table.num_buckets if table.num_buckets > 0 else -1,
        serdeInfo=SerDeInfo(name=None, serializationLib=ORC_SERDE, parameters={}),
        bucketCols=list(table.bucket_columns) if table.num_buckets > 0 else [],
        sortCols=[],
        parameters={},
    )
    return Table(
        tableName=table.table_name,
        dbName=table.db_name,
        owner=owner,
        sd=sd,
        partitionKeys=[FieldSchema(c.name, c.hive_type, None) for c in table.partition_columns],
        parameters=params,
        tableType="MANAGED_TABLE",
    )


def update_hms_table(current: Table, table: TableDef) -> Table:
    """``current`` (as the metastore returned it) with the columns, properties and acidflow
    parameters of ``table``, for ``alter_table``; Hive's own parameters (statistics,
    ``transient_lastDdlTime``) are kept."""
    new = to_hms_table(table, current.owner or "acidflow")
    params = {k: v for k, v in (current.parameters or {}).items() if k in HIVE_BOOKKEEPING_PARAMS}
    params.update(new.parameters)
    current.parameters = params
    current.sd.cols = new.sd.cols
    return current


def from_hms_table(table: Table, warehouse: str) -> TableDef:
    """The :class:`TableDef` of a metastore table (checked with :func:`check_acid_orc` first):
    columns with normalised Hive types, partition columns, buckets, properties without Hive's
    bookkeeping (no ``bucketing_version`` = 1, as Hive reads it), primary key and ordering
    column from the ``acidflow.*`` parameters. A location
    outside ``warehouse`` makes the definition ``external`` (acidflow's flag).

    Raises:
        NotAnAcidTableError: see :func:`check_acid_orc`.
    """
    check_acid_orc(table)
    params = {
        k: str(v) for k, v in (table.parameters or {}).items() if k not in HIVE_BOOKKEEPING_PARAMS
    }
    pk = [k for k in params.pop(PRIMARY_KEY_PARAM, "").split(",") if k]
    ordering = params.pop(ORDERING_PARAM, None) or None
    location = local_location(table.sd.location or "")
    root = str(Path(warehouse).resolve())
    external = params.get(EXTERNAL_PROPERTY, "false") == "true" or not (
        location == root or location.startswith(root.rstrip("/") + "/")
    )
    buckets = table.sd.numBuckets if table.sd.numBuckets and table.sd.numBuckets > 0 else 0
    return TableDef(
        name=f"{table.dbName}.{table.tableName}".lower(),
        columns=[
            Column(c.name.lower(), normalize_hive_type(c.type), c.comment or None)
            for c in table.sd.cols
        ],
        partition_columns=[
            Column(c.name.lower(), normalize_hive_type(c.type)) for c in (table.partitionKeys or [])
        ],
        primary_key=pk,
        ordering_column=ordering,
        bucket_columns=[c.lower() for c in (table.sd.bucketCols or [])] if buckets else [],
        num_buckets=buckets,
        bucketing_version=int(params.get("bucketing_version", "1")),
        properties=params,
        location=location,
        external=external,
    )
