"""The table layouts the predicate UPDATE/DELETE and MERGE tests share (keyed and unkeyed,
partitioned and not, bucketed and not), a table of one layout filled by a real Spark insert,
and the helpers that read a table or a directory tree as comparable values."""

from __future__ import annotations

import collections
from pathlib import Path

from acidflow.catalog import Column, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads

SCHEMA = "id int, v string, amt bigint, region string"

# layout name -> TableDef keyword arguments (region is a partition column where named)
LAYOUTS = {
    "keyed": {"primary_key": ["id"]},
    "keyed-bucketed": {"primary_key": ["id"], "num_buckets": 4},
    "keyed-partitioned": {"primary_key": ["id", "region"], "partitioned": True},
    "keyed-partitioned-bucketed": {
        "primary_key": ["id", "region"],
        "partitioned": True,
        "num_buckets": 2,
        "bucket_columns": ["id"],
    },
    "unkeyed": {},
    "unkeyed-partitioned-bucketed": {
        "partitioned": True,
        "num_buckets": 3,
        "bucket_columns": ["id"],
    },
}


def make(spark, catalog, layout: str, rows: list[tuple], name: str = "db.t") -> TableDef:
    """Create ``name`` (columns id, v, amt, region) in ``layout`` and insert ``rows``
    (tuples in :data:`SCHEMA` order) in one transaction."""
    opts = dict(LAYOUTS[layout])
    partitioned = opts.pop("partitioned", False)
    cols = [Column("id", "int"), Column("v", "string"), Column("amt", "bigint")]
    pcols = [Column("region", "string")] if partitioned else []
    if not partitioned:
        cols.append(Column("region", "string"))
    table = catalog.create_table(TableDef(name=name, columns=cols, partition_columns=pcols, **opts))
    with Transaction(catalog) as txn:
        txn.insert(name, spark.createDataFrame(rows, SCHEMA))
    return table


def table_rows(catalog, name: str = "db.t") -> collections.Counter:
    """The table's visible rows as a multiset of (id, v, amt, region)."""
    return collections.Counter(
        (r["id"], r["v"], r["amt"], r["region"])
        for r in reads.read_table(None, catalog, name).to_pylist()
    )


def tree(path: Path) -> list[str]:
    """Every file and directory under ``path``, relative, sorted."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))
