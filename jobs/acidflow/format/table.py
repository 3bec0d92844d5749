"""A full-ACID table as Hive's rules see it: columns, partition keys, buckets, location.

Protocols only: ``acidflow.catalog.TableDef`` (and any other table definition with these
attributes) fits. They mirror what Hive's ``Table`` / ``StorageDescriptor`` carry that the
format's rules read: columns with their Hive type strings, partition keys, bucket columns,
``bucketing_version`` and the table's location.
"""

from __future__ import annotations

from typing import Mapping, Protocol, Sequence


class ColumnDef(Protocol):
    """A table column: name and Hive type string."""

    @property
    def name(self) -> str: ...

    @property
    def hive_type(self) -> str: ...


class TableDesc(Protocol):
    """A full-ACID table as the writers and readers of this package see it."""

    @property
    def name(self) -> str: ...

    @property
    def location(self) -> str: ...

    @property
    def columns(self) -> Sequence[ColumnDef]: ...

    @property
    def partition_columns(self) -> Sequence[ColumnDef]: ...

    @property
    def primary_key(self) -> Sequence[str]: ...

    @property
    def bucket_columns(self) -> Sequence[str]: ...

    @property
    def num_buckets(self) -> int: ...

    @property
    def bucketing_version(self) -> int: ...

    @property
    def properties(self) -> Mapping[str, str]:
        """Table properties (Hive ``TBLPROPERTIES``)."""
        ...
