"""Tables from Spark: ``df.write.format("acid")`` creates a missing table (the definition
``catalog.create_table`` stores) from the DataFrame and the table-definition options, an
embedded catalog never used initialises itself, a server catalog never initialised names its
URL and ``acidflow catalog init``, and ``acidflow.spark.register`` gives every table its Spark
SQL name ``db.t``, read through the ``acid`` source at each query's own snapshot. Real
parts: the shared Spark session, SQLite / PostgreSQL catalogs, ORC files on disk."""

from __future__ import annotations

import datetime as dt
import decimal
import re
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from acidflow import datasource
from acidflow import spark as acidspark
from acidflow.catalog import Column, SqlCatalog, TableDef, load_catalog
from acidflow.catalog.errors import CatalogDatabaseError
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads
from tests.integration.test_datasource import ms

pytestmark = pytest.mark.spark

ACC = "sales.acc"


@pytest.fixture
def catalog(warehouse, spark):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    datasource.register(spark)  # bind the source to this test's warehouse (env of the fixture)
    yield cat
    cat.close()


def rows(spark, ids, v="x"):
    """(id bigint, v string, amt decimal(10,2), ts timestamp, ds string), 4 Spark partitions."""
    data = [
        (
            i,
            f"{v}{i}",
            decimal.Decimal(i) / 4,
            dt.datetime(2024, 1, 1) + dt.timedelta(hours=i),
            "a" if i % 3 else "b",
        )
        for i in ids
    ]
    return spark.createDataFrame(
        data, "id bigint, v string, amt decimal(10,2), ts timestamp, ds string"
    ).repartition(4)


def write(df, name="sales.acc", mode="append", **options):
    w = df.write.format("acid").mode(mode)
    for k, v in options.items():
        w = w.option(k, v)
    w.save(name)


KEYED = {"primaryKey": "id,ds", "buckets": "4", "partitionBy": "ds"}


def test_write_creates_keyed_bucketed_partitioned_table(spark, catalog):
    """primaryKey (composite), buckets and partitionBy define the new table; its files are in
    Hive's layout (a delta per write id, bucket files per the bucket count, partition
    directories); acidflow's read_table and spark.read.format("acid") read the rows."""
    df = rows(spark, range(40))
    write(df, **KEYED, orderingColumn="ts")
    t = catalog.get_table(ACC)
    assert [(c.name, c.hive_type) for c in t.columns] == [
        ("id", "bigint"),
        ("v", "string"),
        ("amt", "decimal(10,2)"),
        ("ts", "timestamp"),
    ]
    assert [(c.name, c.hive_type) for c in t.partition_columns] == [("ds", "string")]
    assert t.primary_key == ["id", "ds"] and t.bucket_columns == ["id"]
    assert t.num_buckets == 4 and t.ordering_column == "ts" and t.bucketing_version == 2
    assert catalog.commit_records(ACC)[-1].operations == ["insert"]

    expected = ms(df.collect())
    assert ms(reads.read_table(spark, catalog, ACC).collect()) == expected
    assert ms(spark.read.format("acid").load(ACC).collect()) == expected

    root = Path(t.location)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("bucket_*"))
    assert files and all(
        re.fullmatch(r"ds=[ab]/delta_0000001_0000001_\d{4}/bucket_0000[0-3]", f) for f in files
    ), files
    assert {f[-1] for f in files} == {"0", "1", "2", "3"}  # 40 keys fill all 4 buckets


def test_append_into_created_table_refuses_existing_keys(spark, catalog):
    write(rows(spark, range(10)), **KEYED)
    with pytest.raises(Exception, match=r"(?s)insert into.*sales\.acc.*onExisting=upsert"):
        write(rows(spark, range(5, 15), v="y"))
    assert reads.read_table(None, catalog, ACC).num_rows == 10
    write(rows(spark, range(5, 15), v="y"), onExisting="upsert", **KEYED)  # same options: fine
    got = {r["id"]: r["v"] for r in reads.read_table(None, catalog, ACC).to_pylist()}
    assert got == {i: ("x" if i < 5 else "y") + str(i) for i in range(15)}


def test_overwrite_creates_then_replaces(spark, catalog):
    """mode("overwrite") creates a missing table (no key, unpartitioned, unbucketed), then
    replaces its rows (insert overwrite: a base)."""
    write(rows(spark, range(6)), mode="overwrite")
    t = catalog.get_table(ACC)
    assert t.primary_key == [] and t.num_buckets == 0 and t.partition_columns == []
    assert [c.name for c in t.columns] == ["id", "v", "amt", "ts", "ds"]
    second = rows(spark, range(100, 103), v="z")
    write(second, mode="overwrite")
    assert ms(reads.read_table(spark, catalog, ACC).collect()) == ms(second.collect())
    assert [r.operations for r in catalog.commit_records(ACC)[-2:]] == [
        ["insert_overwrite"],
        ["insert_overwrite"],
    ]
    root = Path(t.location)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("bucket_*"))
    # an unbucketed table: one bucket file per writing task (Hive's writer ids), in a base
    assert files and all(re.fullmatch(r"base_000000[12]/bucket_\d{5}", f) for f in files), files


def test_options_conflicting_with_the_table_are_refused(spark, catalog):
    """A table-definition option that differs from the table's: refused before anything is
    written, naming the table, the option, the table's value and the given one (the error of
    the planning worker, TableOptionConflictError, comes back as Spark's exception text)."""
    write(rows(spark, range(10)), **KEYED)
    txns = len(catalog.list_transactions())
    for option, given, have in [
        ("primaryKey", "id", "id,ds"),
        ("buckets", "8", "4"),
        ("partitionBy", "v", "ds"),
        ("orderingColumn", "ts", ""),
    ]:
        with pytest.raises(Exception) as err:
            write(rows(spark, range(50, 52)), **{option: given})
        assert "TableOptionConflictError" in str(err.value)
        assert (
            f"table {ACC}: option {option}={given!r} conflicts with the existing table's "
            f"{option}={have!r}"
        ) in str(err.value)
    assert len(catalog.list_transactions()) == txns
    assert reads.read_table(None, catalog, ACC).num_rows == 10


def test_bad_create_options_and_unknown_options_are_refused(spark, catalog):
    with pytest.raises(Exception, match="unknown option.*primarykeys"):
        write(rows(spark, range(3)), primaryKeys="id")
    with pytest.raises(Exception, match="option partitionBy names nope"):
        write(rows(spark, range(3)), partitionBy="nope")
    with pytest.raises(Exception, match="unknown primary key column 'nope'"):
        write(rows(spark, range(3)), primaryKey="nope")
    with pytest.raises(Exception, match="option buckets='x' is not an integer"):
        write(rows(spark, range(3)), buckets="x")
    assert catalog.list_tables() == []


def test_fresh_sqlite_catalog_initialises_on_first_write(spark, tmp_path):
    """An embedded catalog URL that names no file yet: the first write creates and migrates
    it, then creates the table and writes."""
    url = f"sqlite:///{tmp_path / 'new' / 'catalog.db'}"
    wh = tmp_path / "wh"
    assert not (tmp_path / "new").exists()
    df = rows(spark, range(5))
    write(df, catalog=url, warehouse=str(wh))
    with load_catalog(url, warehouse=str(wh), migrate=False) as cat:
        assert [t.name for t in cat.list_tables()] == [ACC]
        assert ms(reads.read_table(spark, cat, ACC).collect()) == ms(df.collect())
    assert (
        spark.read.format("acid").option("catalog", url).option("warehouse", str(wh)).load(ACC)
    ).count() == 5


@pytest.mark.postgres
def test_uninitialised_server_catalog_names_url_and_command(spark, postgres_url, tmp_path):
    """A PostgreSQL catalog database never initialised: reads and writes are refused with the
    URL (password masked) and ``acidflow catalog init``; nothing is migrated behind the
    server owner's back."""
    from tests.support.postgres import create_database, drop_database

    name = f"t_{uuid.uuid4().hex[:12]}"
    plain = sa.engine.make_url(create_database(postgres_url, name))
    url = plain.set(password="s3cr3t-pw").render_as_string(hide_password=False)
    masked = plain.set(password="s3cr3t-pw").render_as_string(hide_password=True)
    try:
        for action in (
            lambda: write(rows(spark, range(3)), catalog=url, warehouse=str(tmp_path)),
            lambda: spark.read.format("acid").option("catalog", url).load(ACC).collect(),
        ):
            with pytest.raises(Exception) as err:
                action()
            text = str(err.value)
            assert f"catalog database {masked} is not initialised" in text
            assert "`acidflow catalog init`" in text and "s3cr3t-pw" not in text
        with sa.create_engine(plain).connect() as conn:
            assert sa.inspect(conn).get_table_names() == []
    finally:
        drop_database(postgres_url, name)


def test_uninitialised_catalog_error_names_command(tmp_path):
    """Without Spark: a catalog opened without migrating on a database that has no catalog
    tables says so (problem ``not-initialised``) and names the command."""
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    with SqlCatalog(url, warehouse=str(tmp_path / "wh"), migrate=False) as cat:
        with pytest.raises(CatalogDatabaseError) as err:
            cat.list_tables()
    assert err.value.problem == "not-initialised"
    assert f"catalog database {url} is not initialised" in str(err.value)
    assert "acidflow catalog init" in str(err.value)


def test_register_gives_spark_sql_names_at_each_querys_snapshot(spark, catalog):
    """acidflow.spark.register: spark.table / spark.sql on db.t equal read_table; a commit
    (insert, delete) after registering is seen by the next query; INSERT INTO commits
    through the source; a table created later needs a new register call, which also drops
    the names of dropped tables; a changed schema asks for a new register call."""
    write(rows(spark, range(20)), **KEYED)
    catalog.create_table(
        TableDef(name="ops.events", columns=[Column("id", "int"), Column("what", "string")])
    )
    try:
        names = acidspark.register(spark)
        assert names == ["ops.events", ACC]
        assert ms(spark.table(ACC).collect()) == ms(reads.read_table(spark, catalog, ACC).collect())
        assert spark.table(ACC).schema == reads.read_table(spark, catalog, ACC).schema
        assert spark.sql("select count(*) n from sales.acc where ds = 'b'").first()["n"] == 7
        assert spark.table("ops.events").count() == 0

        with Transaction(catalog) as t:
            t.insert(ACC, rows(spark, range(100, 105)))
        with Transaction(catalog) as t:
            t.delete(ACC, where="id < 3")
        expected = ms(reads.read_table(spark, catalog, ACC).collect())
        assert ms(spark.sql("select * from sales.acc").collect()) == expected
        assert sum(expected.values()) == 22

        spark.sql("INSERT INTO ops.events VALUES (1, 'a'), (2, 'b')")
        assert catalog.commit_records("ops.events")[-1].operations == ["insert"]
        assert sorted(reads.read_table(None, catalog, "ops.events").to_pylist(), key=str) == [
            {"id": 1, "what": "a"},
            {"id": 2, "what": "b"},
        ]

        write(rows(spark, range(3)), name="ops.later")
        with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
            spark.table("ops.later")
        catalog.drop_table("ops.events")
        assert acidspark.register(spark) == ["ops.later", ACC]
        assert spark.table("ops.later").count() == 3
        assert not spark.catalog.tableExists("ops.events")

        catalog.add_columns(ACC, [Column("note", "string")])
        with pytest.raises(Exception, match=r"register\(spark\) again"):
            spark.table(ACC).collect()
        acidspark.register(spark)
        assert spark.table(ACC).columns[-2:] == ["note", "ds"]
    finally:
        for db in ("sales", "ops"):
            spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
