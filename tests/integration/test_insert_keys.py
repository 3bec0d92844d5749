"""Transaction.insert into a table with a primary key never creates a second live row of a key
(acidflow.engine.statements.insert, the rules of acidflow.format.keys): stored keys and keys
repeated in the batch are refused by default, ``on_existing="upsert"`` / ``"ignore"`` replace
or skip them, a NULL key is refused -- for pyarrow and Spark inputs, with a real SQLite catalog
and real ORC files. Unkeyed tables keep Hive's INSERT semantics."""

from __future__ import annotations

import collections

import pyarrow as pa
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.compactor.fsck import fsck_table
from acidflow.engine.conform import DuplicateKeyError
from acidflow.engine.statements.insert import ExistingKeysError, NullKeyError
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(warehouse):
    return SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))


def keyed(catalog, name="db.t", **kw):
    return catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("k", "int"), Column("v", "string")],
            primary_key=["k"],
            **kw,
        )
    )


def rows(catalog, name="db.t"):
    return sorted((r["k"], r["v"]) for r in reads.read_table(None, catalog, name).to_pylist())


def arrow(pairs):
    return pa.table({"k": [k for k, _ in pairs], "v": [v for _, v in pairs]})


def spark_df(spark, pairs):
    return spark.createDataFrame(pairs, "k int, v string")


@pytest.mark.parametrize("kind", ["arrow", "spark"])
def test_insert_of_existing_key_is_refused(spark, catalog, kind):
    """Three inserts of keys that exist used to commit 2 keys in 6 rows; now the second one is
    refused naming the table, the key and the write id holding it, and nothing of it is
    written (the transaction aborts)."""
    keyed(catalog)
    make = arrow if kind == "arrow" else (lambda p: spark_df(spark, p))
    with Transaction(catalog) as txn:
        w1 = txn.insert("db.t", make([(1, "a"), (2, "b")])).write_id
    commits = len(catalog.commit_records("db.t"))
    with pytest.raises(ExistingKeysError) as e:
        with Transaction(catalog) as txn:
            txn.insert("db.t", make([(2, "b2"), (3, "c")]))
    assert isinstance(e.value, DuplicateKeyError)
    msg = str(e.value)
    assert msg.startswith("insert into db.t: 1 primary key value(s) already in the table (key k)")
    assert f"{{'k': 2}} (write id(s) {w1})" in msg and "on_existing='upsert'" in msg
    assert (e.value.table, e.value.examples, e.value.write_ids) == ("db.t", [{"k": 2}], [[w1]])
    assert rows(catalog) == [(1, "a"), (2, "b")]
    assert len(catalog.commit_records("db.t")) == commits
    assert [f for f in fsck_table(catalog, "db.t") if f.kind == "duplicate_key"] == []


@pytest.mark.parametrize("kind", ["arrow", "spark"])
def test_keys_repeated_in_the_batch_are_refused(spark, catalog, kind):
    keyed(catalog)
    batch = [(5, "x"), (6, "y"), (5, "z")]
    data = arrow(batch) if kind == "arrow" else spark_df(spark, batch)
    for mode in ("error", "ignore"):
        with pytest.raises(ExistingKeysError, match=r"1 repeated within the batch.*\{'k': 5\}"):
            with Transaction(catalog) as txn:
                txn.insert("db.t", data, on_existing=mode)
    assert rows(catalog) == []


@pytest.mark.parametrize("kind", ["arrow", "spark"])
def test_on_existing_upsert_and_ignore(spark, catalog, kind):
    """``"upsert"`` replaces the stored rows (split-update), ``"ignore"`` inserts only the new
    keys and leaves the stored rows as they were."""
    keyed(catalog)
    make = arrow if kind == "arrow" else (lambda p: spark_df(spark, p))
    with Transaction(catalog) as txn:
        txn.insert("db.t", make([(1, "a"), (2, "b")]))
    with Transaction(catalog) as txn:
        res = txn.insert("db.t", make([(2, "ign"), (3, "c")]), on_existing="ignore")
    assert res.rows_inserted == 1
    assert rows(catalog) == [(1, "a"), (2, "b"), (3, "c")]
    with Transaction(catalog) as txn:
        res = txn.insert("db.t", make([(1, "up"), (4, "d")]), on_existing="upsert")
    assert (res.rows_inserted, res.rows_updated) == (1, 1)
    assert rows(catalog) == [(1, "up"), (2, "b"), (3, "c"), (4, "d")]
    with Transaction(catalog) as txn:  # a batch of stored keys only: nothing to insert
        assert txn.insert("db.t", make([(1, "again")]), on_existing="ignore").rows_inserted == 0
    assert rows(catalog) == [(1, "up"), (2, "b"), (3, "c"), (4, "d")]


@pytest.mark.parametrize("kind", ["arrow", "spark"])
def test_null_key_is_refused_by_insert_and_upsert(spark, catalog, kind):
    """The NULL-key rule: a NULL key used to be stored by insert (and replaced by an upsert of
    NULL); both now refuse the batch naming the table, the column and the row count."""
    keyed(catalog)
    batch = [(None, "n1"), (7, "x"), (None, "n2")]
    data = arrow(batch) if kind == "arrow" else spark_df(spark, batch)
    for statement in ("insert", "upsert"):
        with pytest.raises(NullKeyError) as e:
            with Transaction(catalog) as txn:
                getattr(txn, statement)("db.t", data)
        assert str(e.value).startswith(
            f"{statement} into db.t: 2 row(s) with NULL in primary key column k"
        )
        assert e.value.counts == {"k": 2}
    assert rows(catalog) == []


def test_unkeyed_tables_keep_insert_semantics(spark, catalog):
    catalog.create_table(TableDef(name="db.log", columns=[Column("k", "int")]))
    for data in (pa.table({"k": [1, 1]}), spark.createDataFrame([(1,)], "k int")):
        with Transaction(catalog) as txn:
            txn.insert("db.log", data)
    got = collections.Counter(r["k"] for r in reads.read_table(None, catalog, "db.log").to_pylist())
    assert got == {1: 3}
    with pytest.raises(ValueError, match="needs a primary key"):
        with Transaction(catalog) as txn:
            txn.insert("db.log", pa.table({"k": [2]}), on_existing="ignore")


def test_insert_sees_the_transactions_earlier_statements(spark, catalog):
    """Two inserts of one key in one transaction: the second sees the first (the transaction's
    own snapshot) and is refused."""
    keyed(catalog, partition_columns=[Column("ds", "string")])
    with pytest.raises(ExistingKeysError, match="already in the table"):
        with Transaction(catalog) as txn:
            txn.insert("db.t", pa.table({"k": [1], "v": ["a"], "ds": ["d1"]}))
            txn.insert("db.t", pa.table({"k": [1], "v": ["b"], "ds": ["d2"]}))
    assert reads.read_table(None, catalog, "db.t").num_rows == 0


@pytest.mark.parametrize("kind", ["arrow", "spark"])
def test_insert_overwrite_refuses_repeated_and_null_keys(spark, catalog, kind):
    """An INSERT OVERWRITE of a keyed table used to write every row it was given: a key on two
    rows became two live rows. Now a repeated or NULL key refuses it, naming the table and the
    key, and the stored rows stay; stored keys are replaced, not refused."""
    keyed(catalog)
    make = arrow if kind == "arrow" else (lambda p: spark_df(spark, p))
    with Transaction(catalog) as txn:
        txn.insert("db.t", make([(1, "a"), (2, "b")]))
    commits = len(catalog.commit_records("db.t"))
    with pytest.raises(ExistingKeysError) as e:
        with Transaction(catalog) as txn:
            txn.insert_overwrite("db.t", make([(2, "b2"), (3, "c"), (3, "c2")]))
    msg = str(e.value)
    assert msg.startswith("insert overwrite db.t: 1 repeated within the batch (key k)")
    assert "{'k': 3} (repeated)" in msg and "keep one row of each key" in msg
    with pytest.raises(NullKeyError, match="insert overwrite db.t: 1 row"):
        with Transaction(catalog) as txn:
            txn.insert_overwrite("db.t", make([(None, "n"), (4, "d")]))
    assert rows(catalog) == [(1, "a"), (2, "b")]
    assert len(catalog.commit_records("db.t")) == commits
    with Transaction(catalog) as txn:
        txn.insert_overwrite("db.t", make([(2, "b2"), (3, "c")]))
    assert rows(catalog) == [(2, "b2"), (3, "c")]
    assert [f for f in fsck_table(catalog, "db.t") if f.kind == "duplicate_key"] == []


@pytest.mark.parametrize("kind", ["arrow", "spark"])
def test_partition_overwrite_refuses_a_key_stored_in_another_partition(spark, catalog, kind):
    """A key names one row of the table: a partition overwrite (explicit or dynamic) of a
    table whose key does not name the partition is refused when one of its keys is stored in
    a partition it does not replace; keys in the replaced partition are not refused."""
    catalog.create_table(
        TableDef(
            name="db.p",
            columns=[Column("k", "int"), Column("v", "string")],
            partition_columns=[Column("ds", "string")],
            primary_key=["k"],
        )
    )

    def make(triples):
        if kind == "arrow":
            return pa.table({c: [t[i] for t in triples] for i, c in enumerate(["k", "v", "ds"])})
        return spark.createDataFrame(triples, "k int, v string, ds string")

    def stored():
        return sorted(
            (r["k"], r["v"], r["ds"]) for r in reads.read_table(None, catalog, "db.p").to_pylist()
        )

    with Transaction(catalog) as txn:
        w1 = txn.insert("db.p", make([(1, "a", "d1"), (2, "b", "d2")])).write_id
    for partitions in ([{"ds": "d1"}], None):
        with pytest.raises(ExistingKeysError) as e:
            with Transaction(catalog) as txn:
                txn.insert_overwrite("db.p", make([(1, "a2", "d1"), (2, "b2", "d1")]), partitions)
        assert str(e.value).startswith(
            "insert overwrite db.p: 1 primary key value(s) already in the table (key k)"
        )
        assert e.value.examples == [{"k": 2}] and e.value.write_ids == [[w1]]
        assert "a partition this overwrite does not replace" in str(e.value)
    assert stored() == [(1, "a", "d1"), (2, "b", "d2")]
    with Transaction(catalog) as txn:  # key 1 lives in d1, which this replaces
        txn.insert_overwrite("db.p", make([(1, "a2", "d1"), (3, "c", "d1")]))
    assert stored() == [(1, "a2", "d1"), (2, "b", "d2"), (3, "c", "d1")]
    assert [f for f in fsck_table(catalog, "db.p") if f.kind == "duplicate_key"] == []
