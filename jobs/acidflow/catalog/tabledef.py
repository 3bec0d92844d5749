"""Table definitions and names, backend-neutral: what every catalog backend stores for a table.

:class:`TableDef` is the Hive table of a full-ACID ORC table (``TBLS`` + ``COLUMNS_V2`` +
``PARTITION_KEYS`` + ``BUCKETING_COLS`` + ``TABLE_PARAMS`` in the metastore; a ``Table`` thrift
object over HMS); :class:`Column` one of its columns. Hive type strings are normalised by the one
Hive type parser, :func:`acidflow.format.hivetypes.normalize_hive_type`.

Names: tables are ``db.table`` in lower case (a bare ``t`` is ``default.t``), partitions are
spec strings ``"k=v/k2=v2"`` (Hive's partition name, keys in table order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

from acidflow.format.bucketing import MAX_BUCKET_ID
from acidflow.format.hivetypes import normalize_hive_type
from acidflow.storage.retention import check_retention_properties

DEFAULT_DB = "default"
#: Properties every acidflow table carries (Hive: full ACID = ``transactional='true'`` with the
#: default transactional properties, not insert-only).
TABLE_PROPERTIES_FIXED = {"transactional": "true", "transactional_properties": "default"}
#: Most buckets a table may have: bucket ids 0..MAX_BUCKET_ID fit BucketCodec V1's 12 bits.
MAX_BUCKETS = MAX_BUCKET_ID + 1

#: table property of a table allowed outside the warehouse (see :attr:`TableDef.external`)
EXTERNAL_PROPERTY = "acidflow.external"

NAME_RE = re.compile(r"^[a-z0-9_]+$")


def as_utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (a naive value is taken to be UTC already)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def normalize_table_name(name: str) -> str:
    """Return ``db.table`` in lower case; a bare ``t`` becomes ``default.t``.

    Raises:
        ValueError: empty parts, more than one dot, or characters other than ``[a-z0-9_]``.
    """
    if not isinstance(name, str):
        raise ValueError(f"table name must be a string, got {name!r}")
    full = name.strip().lower()
    if "." not in full:
        full = f"{DEFAULT_DB}.{full}"
    parts = full.split(".")
    if len(parts) != 2 or not all(NAME_RE.match(p) for p in parts):
        raise ValueError(f"invalid table name {name!r}: expected 'db.table' of [a-z0-9_]")
    return full


def split_table_name(name: str) -> tuple[str, str]:
    """``"db.t"`` (or ``"t"``) -> ``("db", "t")`` after :func:`normalize_table_name`."""
    db, tbl = normalize_table_name(name).split(".")
    return db, tbl


def parse_partition_spec(spec: str) -> list[tuple[str, str]]:
    """``"ds=2024-01-01/region=eu"`` -> ``[("ds", "2024-01-01"), ("region", "eu")]``.

    Keys are lower-cased; values are kept as given (Hive's escaped path form).

    Raises:
        ValueError: empty spec, a part without ``=``, an empty key or value.
    """
    if not isinstance(spec, str) or not spec.strip("/"):
        raise ValueError(f"invalid partition spec {spec!r}")
    out = []
    for part in spec.strip("/").split("/"):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or value == "":
            raise ValueError(f"invalid partition spec {spec!r}: expected 'k=v/k2=v2'")
        out.append((key.strip().lower(), value))
    return out


@dataclass
class Column:
    """One column: ``name`` (lower-cased) and ``hive_type`` (a Hive type string such as
    ``"int"``, ``"varchar(20)"``, ``"decimal(10,2)"``, ``"array<string>"``), and an optional
    ``comment`` (Hive ``COLUMNS_V2.COMMENT``; not part of the data)."""

    name: str
    hive_type: str
    comment: str | None = None

    def __post_init__(self) -> None:
        self.name = str(self.name).strip().lower()
        try:
            self.hive_type = normalize_hive_type(self.hive_type)
        except ValueError:
            self.hive_type = re.sub(r"\s+", " ", str(self.hive_type).strip().lower())

    def to_dict(self) -> dict[str, str]:
        """``{"name": ..., "type": ...}`` (the YAML shape), with ``"comment"`` when set."""
        out = {"name": self.name, "type": self.hive_type}
        if self.comment:
            out["comment"] = self.comment
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Column":
        """Build from ``{"name", "type"|"hive_type"}`` or a ``Column``.

        Raises:
            ValueError: missing keys.
        """
        if isinstance(data, Column):
            return cls(data.name, data.hive_type, data.comment)
        if (
            not isinstance(data, dict)
            or "name" not in data
            or not ("type" in data or "hive_type" in data)
        ):
            raise ValueError(f"column must be a mapping with 'name' and 'type', got {data!r}")
        extra = set(data) - {"name", "type", "hive_type", "comment"}
        if extra:
            raise ValueError(f"unknown column keys {sorted(extra)} in {data!r}")
        return cls(
            data["name"],
            data["type"] if "type" in data else data["hive_type"],
            data.get("comment") or None,
        )


def _columns_from(value: Any, what: str) -> list[Column]:
    if value is None:
        return []
    if isinstance(value, dict):  # {name: type}
        return [Column(k, v) for k, v in value.items()]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{what} must be a list of columns or a name->type mapping")
    return [Column.from_dict(c) for c in value]


@dataclass
class TableDef:
    """Definition of one full-ACID ORC table, as stored in the catalog and in YAML.

    Attributes:
        name: ``"db.table"`` in lower case (a bare ``"t"`` becomes ``"default.t"``).
        columns: data columns in file order.
        partition_columns: partition columns in directory order (not stored in the files).
        primary_key: upsert key column names (data or partition columns); may be empty.
        ordering_column: data column whose larger value wins among events for one key
            (CDC precombine); optional.
        bucket_columns: CLUSTERED BY columns; defaults to ``primary_key`` when
            ``num_buckets > 0``.
        num_buckets: number of buckets, ``0`` = unbucketed (all rows in ``bucket_00000``).
        bucketing_version: Hive bucketing hash version, 1 or 2 (Hive 3 default 2).
        properties: table properties (Hive ``TBLPROPERTIES``); ``transactional='true'``,
            ``transactional_properties='default'`` and ``bucketing_version`` are always set.
        location: table root; empty = ``<warehouse>/<db>.db/<table>`` filled in by
            :meth:`Catalog.create_table`. A relative location is relative to the warehouse
            (never to the working directory) and may not leave it with ``..``; an absolute
            path or URL outside the warehouse needs ``external``.
        table_id: catalog id, set by the catalog.
        created_at: creation time (UTC), set by the catalog.
        external: the table may live outside the warehouse; stored as the table property
            ``acidflow.external=true`` (not Hive's ``EXTERNAL``, which means an unmanaged
            table - something a transactional table cannot be). YAML key ``external``.
    """

    name: str
    columns: list[Column]
    partition_columns: list[Column] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    ordering_column: str | None = None
    bucket_columns: list[str] = field(default_factory=list)
    num_buckets: int = 0
    bucketing_version: int = 2
    properties: dict[str, str] = field(default_factory=dict)
    location: str = ""
    table_id: int | None = None
    created_at: datetime | None = None
    external: bool = False

    def __post_init__(self) -> None:
        name = str(self.name).strip().lower()
        self.name = name if "." in name else f"{DEFAULT_DB}.{name}"
        self.columns = [c if isinstance(c, Column) else Column.from_dict(c) for c in self.columns]
        self.partition_columns = [
            c if isinstance(c, Column) else Column.from_dict(c) for c in self.partition_columns
        ]
        self.primary_key = [str(k).strip().lower() for k in self.primary_key]
        self.bucket_columns = [str(k).strip().lower() for k in self.bucket_columns]
        if self.ordering_column is not None:
            self.ordering_column = str(self.ordering_column).strip().lower() or None
        self.num_buckets = int(self.num_buckets)
        self.bucketing_version = int(self.bucketing_version)
        if self.num_buckets > 0 and not self.bucket_columns:
            # CLUSTERED BY takes data columns only: the key minus its partition columns
            pcols = {c.name for c in self.partition_columns}
            self.bucket_columns = [k for k in self.primary_key if k not in pcols]
        props = {str(k): str(v) for k, v in (self.properties or {}).items()}
        for key, value in TABLE_PROPERTIES_FIXED.items():
            props.setdefault(key, value)
        props.setdefault("bucketing_version", str(self.bucketing_version))
        if self.external:
            props[EXTERNAL_PROPERTY] = "true"
        self.external = props.get(EXTERNAL_PROPERTY, "false").strip().lower() == "true"
        self.properties = props
        self.location = self.location or ""

    # -- views ---------------------------------------------------------------------------
    @property
    def db_name(self) -> str:
        """Database part of :attr:`name`."""
        return self.name.split(".", 1)[0]

    @property
    def table_name(self) -> str:
        """Table part of :attr:`name`."""
        return self.name.split(".", 1)[1]

    def column_names(self) -> list[str]:
        """Data column names in order (partition columns excluded; Hive ``columns``)."""
        return [c.name for c in self.columns]

    def hive_types(self) -> list[str]:
        """Data column types in order, parallel to :meth:`column_names` (Hive ``columns.types``)."""
        return [c.hive_type for c in self.columns]

    def partition_column_names(self) -> list[str]:
        """Partition column names in order."""
        return [c.name for c in self.partition_columns]

    @property
    def is_partitioned(self) -> bool:
        """True when the table has partition columns."""
        return bool(self.partition_columns)

    # -- checks ----------------------------------------------------------------------------
    def validate(self) -> None:
        """Check the definition; returns ``None``.

        Raises:
            ValueError: bad table/column names or types, duplicate columns, key / ordering /
                bucket columns that are not columns, inconsistent bucketing, or properties
                that would make the table something other than full ACID.
        """
        normalize_table_name(self.name)
        if not self.columns:
            raise ValueError(f"table {self.name}: at least one data column is required")
        seen: set[str] = set()
        for col in [*self.columns, *self.partition_columns]:
            if not NAME_RE.match(col.name):
                raise ValueError(f"table {self.name}: invalid column name {col.name!r}")
            if col.name in seen:
                raise ValueError(f"table {self.name}: duplicate column {col.name!r}")
            seen.add(col.name)
            col.hive_type = normalize_hive_type(col.hive_type)
        for col in self.partition_columns:
            if "<" in col.hive_type:
                raise ValueError(
                    f"table {self.name}: partition column {col.name!r} must have "
                    f"a primitive type, not {col.hive_type!r}"
                )
        data = set(self.column_names())
        if len(set(self.primary_key)) != len(self.primary_key):
            raise ValueError(f"table {self.name}: duplicate primary key columns {self.primary_key}")
        for key in self.primary_key:
            if key not in seen:
                raise ValueError(f"table {self.name}: unknown primary key column {key!r}")
        if self.ordering_column is not None and self.ordering_column not in data:
            raise ValueError(f"table {self.name}: unknown ordering column {self.ordering_column!r}")
        if not 0 <= self.num_buckets <= MAX_BUCKETS:
            raise ValueError(f"table {self.name}: num_buckets must be 0..{MAX_BUCKETS}")
        if self.num_buckets == 0 and self.bucket_columns:
            raise ValueError(f"table {self.name}: bucket_columns given but num_buckets is 0")
        if self.num_buckets > 0 and not self.bucket_columns:
            raise ValueError(
                f"table {self.name}: num_buckets > 0 needs bucket_columns (or a primary_key)"
            )
        if len(set(self.bucket_columns)) != len(self.bucket_columns):
            raise ValueError(f"table {self.name}: duplicate bucket columns {self.bucket_columns}")
        for key in self.bucket_columns:
            if key not in data:
                raise ValueError(
                    f"table {self.name}: unknown bucket column {key!r} (must be a data column)"
                )
        if self.bucketing_version not in (1, 2):
            raise ValueError(f"table {self.name}: bucketing_version must be 1 or 2")
        check_fixed_properties(self.name, self.properties, self.bucketing_version)

    # -- YAML ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain dict for YAML/JSON: columns as ``[{"name", "type"}]``; ``table_id``,
        ``created_at`` (ISO 8601) and ``external`` only when set."""
        out: dict[str, Any] = {
            "name": self.name,
            "columns": [c.to_dict() for c in self.columns],
            "partition_columns": [c.to_dict() for c in self.partition_columns],
            "primary_key": list(self.primary_key),
            "ordering_column": self.ordering_column,
            "bucket_columns": list(self.bucket_columns),
            "num_buckets": self.num_buckets,
            "bucketing_version": self.bucketing_version,
            "properties": dict(self.properties),
            "location": self.location,
        }
        if self.table_id is not None:
            out["table_id"] = self.table_id
        if self.created_at is not None:
            out["created_at"] = self.created_at.isoformat()
        if self.external:
            out["external"] = True
        return out

    _KEYS: ClassVar[frozenset[str]] = frozenset(
        {
            "name",
            "columns",
            "partition_columns",
            "primary_key",
            "ordering_column",
            "bucket_columns",
            "num_buckets",
            "bucketing_version",
            "properties",
            "location",
            "table_id",
            "created_at",
            "external",
        }
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TableDef":
        """Inverse of :meth:`to_dict`. Columns may also be a ``{name: type}`` mapping; a
        ``bucketing_version`` given only in ``properties`` is honoured.

        Raises:
            ValueError: not a mapping, unknown keys, missing ``name``/``columns``.
        """
        if not isinstance(data, dict):
            raise ValueError(f"table definition must be a mapping, got {type(data).__name__}")
        unknown = set(data) - cls._KEYS
        if unknown:
            raise ValueError(f"unknown table definition keys: {sorted(unknown)}")
        if "name" not in data or "columns" not in data:
            raise ValueError("table definition needs 'name' and 'columns'")
        props = {str(k): str(v) for k, v in (data.get("properties") or {}).items()}
        bv = data.get("bucketing_version", props.get("bucketing_version", 2))
        created = data.get("created_at")
        if isinstance(created, str):
            created = as_utc(datetime.fromisoformat(created))
        return cls(
            name=data["name"],
            columns=_columns_from(data["columns"], "columns"),
            partition_columns=_columns_from(data.get("partition_columns"), "partition_columns"),
            primary_key=list(data.get("primary_key") or []),
            ordering_column=data.get("ordering_column"),
            bucket_columns=list(data.get("bucket_columns") or []),
            num_buckets=int(data.get("num_buckets") or 0),
            bucketing_version=int(bv),
            properties=props,
            location=data.get("location") or "",
            table_id=data.get("table_id"),
            created_at=created,
            external=_as_bool(data.get("external", False), "external"),
        )


def _as_bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0", "", "none"):
        return False
    raise ValueError(f"{what} must be true or false, got {value!r}")


def check_fixed_properties(table: str, props: dict[str, str], bucketing_version: int) -> None:
    """Check that ``props`` keep the table full ACID and agree with its bucketing version.

    Raises:
        ValueError: ``transactional`` / ``transactional_properties`` other than
            ``'true'`` / ``'default'``, a ``bucketing_version`` property that disagrees, or a
            bad ``acidflow.history.retain.*`` value (``acidflow.storage.retention``).
    """
    for key, value in TABLE_PROPERTIES_FIXED.items():
        if str(props.get(key, value)).lower() != value:
            raise ValueError(
                f"table {table}: property {key}={props[key]!r} is not allowed; "
                f"acidflow tables are full ACID ({key}={value!r})"
            )
    if str(props.get("bucketing_version", bucketing_version)) != str(bucketing_version):
        raise ValueError(
            f"table {table}: property bucketing_version="
            f"{props['bucketing_version']!r} disagrees with bucketing_version="
            f"{bucketing_version}"
        )
    # --- retention (acidflow.history.retain.commits / .hours)
    check_retention_properties(table, props)
