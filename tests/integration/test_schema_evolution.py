"""Schema evolution on real ORC files (``acidflow.tableops.schema.alter_table``, ``acidflow
table alter``), on partitioned and unpartitioned, bucketed and unbucketed tables:

* rename, widen and comment are metadata-only (not one file added or changed) and the old files
  read right through the new schema, ROW__IDs unchanged (pyarrow here, Spark below);
* a read as of an older write id gets the names and types of its time;
* refusals (narrowing, incompatible, bucketing column, partition column, drop/reorder without
  --rewrite) write nothing and allocate no write id;
* drop and reorder with ``rewrite`` give the same rows, ROW__IDs kept, and time travel before the
  rewrite still reads the old layout;
* a major compaction after a widening writes the new type; compaction and clean keep it right;
* every change is a commit with the operation ``schema``.
"""

from __future__ import annotations

import decimal
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.conform import SchemaMismatchError
from acidflow.engine.transaction import Transaction
from acidflow.format.orc import files as acid_files
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS
from acidflow.tableops.schema import SchemaChangeError, alter_table

CFG = CompactorConfig(heartbeat_s=0.5)
SHAPES = [
    pytest.param(p, b, id=f"{'part' if p else 'flat'}-{'b2' if b else 'unbucketed'}")
    for p in (False, True)
    for b in (0, 2)
]


def make_table(catalog, name: str, partitioned: bool, buckets: int) -> TableDef:
    return catalog.create_table(
        TableDef(
            name=name,
            columns=[
                Column("id", "int"),
                Column("qty", "int"),
                Column("price", "decimal(8,2)"),
                Column("note", "varchar(10)"),
                Column("score", "float"),
            ],
            partition_columns=[Column("ds", "string")] if partitioned else [],
            primary_key=["id"],
            num_buckets=buckets,
        )
    )


def batch(ids, tag: str, partitioned: bool, **cols) -> pa.Table:
    data = {
        "id": pa.array(ids, pa.int32()),
        "qty": pa.array([i * 3 + len(tag) for i in ids], pa.int32()),
        "price": pa.array([decimal.Decimal(i * 125) / 100 for i in ids], pa.decimal128(8, 2)),
        "note": pa.array([f"{tag}{i}" for i in ids], pa.string()),
        "score": pa.array([i / 8 for i in ids], pa.float32()),
    }
    data.update(cols)
    if partitioned:
        data["ds"] = pa.array(["d1" if i % 2 else "d2" for i in ids], pa.string())
    return pa.table(data)


def upsert(catalog, name: str, rows: pa.Table) -> None:
    with Transaction(catalog, heartbeat_s=0) as txn:
        txn.upsert(name, rows)


def by_id(table: pa.Table) -> dict[int, dict]:
    return {r["id"]: r for r in table.to_pylist()}


def files_of(catalog, name: str) -> dict[str, float]:
    root = Path(catalog.get_table(name).location)
    return {str(p.relative_to(root)): p.stat().st_mtime for p in root.rglob("*") if p.is_file()}


def write_two_batches(catalog, name: str, partitioned: bool) -> None:
    upsert(catalog, name, batch(list(range(12)), "a", partitioned))  # w1
    upsert(catalog, name, batch([1, 2, 3, 12, 13], "bb", partitioned))  # w2


@pytest.mark.parametrize("partitioned,buckets", SHAPES)
def test_rename_widen_comment_are_metadata_only(catalog, partitioned, buckets):
    name = "db.evo"
    make_table(catalog, name, partitioned, buckets)
    write_two_batches(catalog, name, partitioned)
    before = reads.read_table(None, catalog, name, row_id=True)
    files = files_of(catalog, name)

    steps = [
        dict(rename_column=("qty", "quantity")),
        dict(change_type=("quantity", "bigint")),
        dict(change_type=("price", "decimal(12,3)")),
        dict(change_type=("note", "string")),
        dict(change_type=("score", "double")),
        dict(comment=("id", "the key")),
    ]
    results = [alter_table(catalog, name, **s) for s in steps]
    assert [r.write_id for r in results] == [3, 4, 5, 6, 7, 8]
    assert files_of(catalog, name) == files, "a metadata-only change wrote or touched a file"

    after = reads.read_table(None, catalog, name, row_id=True)
    schema = after.schema
    assert schema.field("quantity").type == pa.int64() and "qty" not in schema.names
    assert schema.field("price").type == pa.decimal128(12, 3)
    assert schema.field("score").type == pa.float64()
    old, new = by_id(before), by_id(after)
    assert set(old) == set(new) == set(range(14))
    for i, r in old.items():
        n = new[i]
        assert n["ROW__ID"] == r["ROW__ID"]
        assert (n["quantity"], n["note"], n["score"]) == (r["qty"], r["note"], r["score"])
        assert n["price"] == r["price"]
    assert catalog.get_table(name).columns[0].comment == "the key"
    # Hive maps acidflow's named row structs by name unless told otherwise
    assert catalog.get_table(name).properties["orc.force.positional.evolution"] == "true"

    # time travel: the schema of each write id's time
    assert reads.read_table(None, catalog, name, as_of_write_id=2).schema.names[:5] == [
        "id",
        "qty",
        "price",
        "note",
        "score",
    ]
    at3 = reads.read_table(None, catalog, name, as_of_write_id=3)
    assert at3.schema.field("quantity").type == pa.int32()
    assert (
        reads.read_table(None, catalog, name, as_of_write_id=4).schema.field("quantity").type
        == pa.int64()
    )
    assert by_id(at3)[2]["quantity"] == old[2]["qty"]

    # the timeline: one commit per change, operation "schema"
    recs = catalog.commit_records(name)
    assert [r.stats["operations"] for r in recs][2:] == [["schema"]] * 6
    assert recs[3].stats["schema_change"] == {
        "op": "change_type",
        "column": "quantity",
        "from": "int",
        "to": "bigint",
        "before": [
            {"name": "id", "type": "int"},
            {"name": "quantity", "type": "int"},
            {"name": "price", "type": "decimal(8,2)"},
            {"name": "note", "type": "varchar(10)"},
            {"name": "score", "type": "float"},
        ],
    }

    # new rows in the new types next to the old files, then a major compaction writes them
    rows = batch([2, 40], "c", partitioned)
    rows = rows.set_column(1, "quantity", pa.array([2**40, 7], pa.int64()))
    rows = rows.set_column(
        2, "price", pa.array([decimal.Decimal("123456.789")] * 2, pa.decimal128(12, 3))
    )
    rows = rows.set_column(4, "score", pa.array([0.1, 0.2], pa.float64()))
    upsert(catalog, name, rows)
    live = by_id(reads.read_table(None, catalog, name))
    assert live[2]["quantity"] == 2**40 and live[40]["price"] == decimal.Decimal("123456.789")
    table = catalog.get_table(name)
    for part in [None] if not partitioned else ["ds=d1", "ds=d2"]:
        info = initiator.request_compaction(catalog, name, part, "major")
        out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
        assert out is not None and out.state == "ready for cleaning", out and out.report
    cleaner.run_cleaner(catalog)
    tfs = TableFS(table.location)
    bases = [p for p in Path(table.location).rglob("bucket_*") if p.parent.name.startswith("base_")]
    assert bases
    for p in bases:
        row = acid_files.file_info(tfs, str(p)).row_schema
        assert row.field(1).type == pa.int64() and row.field(2).type == pa.decimal128(12, 3)
        assert row.field(4).type == pa.float64()
    assert by_id(reads.read_table(None, catalog, name)) == live


@pytest.mark.parametrize("partitioned,buckets", SHAPES)
def test_refusals_write_nothing(catalog, partitioned, buckets):
    name = "db.refuse"
    make_table(catalog, name, partitioned, buckets)
    write_two_batches(catalog, name, partitioned)
    files = files_of(catalog, name)
    states = catalog.write_id_states(name)
    definition = catalog.get_table(name).to_dict()
    bad = [
        (dict(change_type=("qty", "smallint")), "narrowing"),
        (dict(change_type=("price", "decimal(8,1)")), "scale"),
        (dict(change_type=("note", "int")), "metastore refuses"),
        (dict(change_type=("note", "varchar(5)")), "truncate"),
        (dict(change_type=("score", "string")), "text forms"),
        (dict(drop_columns=["note"]), "--rewrite"),
        (dict(reorder=["note", "id", "qty", "price", "score"]), "--rewrite"),
        (dict(drop_columns=["id"], rewrite=True), "primary key"),
        (dict(rename_column=("qty", "note")), "exists"),
        (dict(rename_column=("nope", "x")), "no column"),
        (dict(rename_column=("qty", "x"), comment=("id", "y")), "exactly one"),
    ]
    if partitioned:
        bad.append((dict(rename_column=("ds", "day")), "partition column"))
    if buckets:
        bad.append((dict(change_type=("id", "bigint")), "bucketing"))
    for kwargs, why in bad:
        with pytest.raises(SchemaChangeError) as exc:
            alter_table(catalog, name, **kwargs)
        assert why in str(exc.value) and name in str(exc.value), (kwargs, str(exc.value))
    assert files_of(catalog, name) == files
    assert catalog.write_id_states(name) == states
    assert catalog.get_table(name).to_dict() == definition
    assert catalog.schema_history(name) == []


@pytest.mark.parametrize("partitioned,buckets", SHAPES)
def test_drop_and_reorder_with_rewrite(catalog, partitioned, buckets):
    name = "db.rw"
    make_table(catalog, name, partitioned, buckets)
    write_two_batches(catalog, name, partitioned)
    before = by_id(reads.read_table(None, catalog, name, row_id=True))

    r = alter_table(catalog, name, reorder=["note", "score", "id", "price", "qty"], rewrite=True)
    assert r.write_id == 3 and r.rows_rewritten == len(before) == 14
    got = reads.read_table(None, catalog, name, row_id=True)
    assert got.schema.names[:5] == ["note", "score", "id", "price", "qty"]
    assert by_id(got) == before, "rows or ROW__IDs changed by the reorder"
    for p in r.files:
        assert "/base_0000003/" in p
        assert acid_files.file_info(TableFS(p), p).row_schema.names == [
            "note",
            "score",
            "id",
            "price",
            "qty",
        ]

    r = alter_table(catalog, name, drop_columns=["note"], rewrite=True)
    assert r.write_id == 4
    got = by_id(reads.read_table(None, catalog, name, row_id=True))
    assert got == {i: {k: v for k, v in row.items() if k != "note"} for i, row in before.items()}

    # time travel to before the rewrites: the old layout and values
    assert by_id(reads.read_table(None, catalog, name, as_of_write_id=2, row_id=True)) == before
    at3 = reads.read_table(None, catalog, name, as_of_write_id=3)
    assert at3.schema.names[:5] == ["note", "score", "id", "price", "qty"]

    # later writes, a major compaction and the cleaner keep it right
    rows = batch([1, 50], "n", partitioned).drop(["note"])
    upsert(
        catalog,
        name,
        rows.select(["score", "id", "price", "qty"] + (["ds"] if partitioned else [])),
    )
    expect = by_id(reads.read_table(None, catalog, name))
    assert expect[50]["qty"] == 50 * 3 + 1 and set(expect) == set(range(14)) | {50}
    for part in [None] if not partitioned else ["ds=d1", "ds=d2"]:
        info = initiator.request_compaction(catalog, name, part, "major")
        out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
        assert out is not None and out.state == "ready for cleaning", out and out.report
    cleaner.run_cleaner(catalog)
    assert by_id(reads.read_table(None, catalog, name)) == expect
    ops = [rec.stats.get("schema_change", {}).get("op") for rec in catalog.commit_records(name)]
    assert ops[2:4] == ["reorder", "drop_columns"]


def test_rewrite_waits_for_no_open_writer(catalog):
    """A rewrite refuses while another transaction holds an open write id below its own (its
    files would be in the old layout under the new base); nothing is written."""
    name = "db.busy"
    make_table(catalog, name, False, 0)
    upsert(catalog, name, batch([1, 2], "a", False))
    other = catalog.open_transaction()
    catalog.allocate_write_id(other, name)  # w2, open, no lock yet
    files = files_of(catalog, name)
    with pytest.raises(SchemaChangeError, match=r"write ids \[2\]"):
        alter_table(catalog, name, drop_columns=["note"], rewrite=True)
    assert files_of(catalog, name) == files
    assert catalog.get_table(name).column_names()[3] == "note"
    catalog.abort_transaction(other)
    assert alter_table(catalog, name, drop_columns=["note"], rewrite=True).rows_rewritten == 2


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "acidflow.cli", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )


def test_cli_table_alter(catalog):
    name = "db.cli"
    make_table(catalog, name, True, 2)
    upsert(catalog, name, batch([1, 2, 3], "a", True))
    out = run_cli("table", "alter", name, "--rename-column", "qty", "quantity")
    assert out.returncode == 0, out.stderr
    assert "rename_column committed at write id 2" in out.stdout and "quantity int" in out.stdout
    out = run_cli("table", "alter", name, "--change-type", "quantity", "bigint", "--json")
    assert out.returncode == 0, out.stderr
    assert '"write_id": 3' in out.stdout and '{"name": "quantity", "type": "bigint"}' in out.stdout
    out = run_cli("table", "alter", name, "--change-type", "quantity", "int")
    assert out.returncode == 1 and "SchemaChangeError" in out.stderr
    assert "quantity from bigint to int" in out.stderr
    out = run_cli("table", "alter", name, "--drop-column", "note")
    assert out.returncode == 1 and "--rewrite" in out.stderr
    out = run_cli("table", "alter", name, "--drop-column", "note", "--rewrite")
    assert out.returncode == 0, out.stderr
    assert "3 rows rewritten" in out.stdout and "note" not in out.stdout.split("\n", 1)[1]
    out = run_cli("table", "alter", name, "--comment", "id", "the key")
    assert out.returncode == 0 and "id int  -- the key" in out.stdout
    assert [c.name for c in catalog.get_table(name).columns] == ["id", "quantity", "price", "score"]


@pytest.mark.spark
@pytest.mark.slow
def test_spark_reads_the_evolved_table_like_pyarrow(spark, catalog):
    name = "db.sp"
    make_table(catalog, name, True, 2)
    write_two_batches(catalog, name, True)
    alter_table(catalog, name, rename_column=("qty", "quantity"))
    alter_table(catalog, name, change_type=("quantity", "bigint"))
    alter_table(catalog, name, change_type=("price", "decimal(10,2)"))
    for as_of in (None, 2):
        ours = reads.read_table(None, catalog, name, as_of_write_id=as_of, row_id=True)
        df = reads.read_table(spark, catalog, name, as_of_write_id=as_of, row_id=True)
        assert df.columns == ours.schema.names
        got = sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["id"])
        want = sorted(ours.to_pylist(), key=lambda r: r["id"])
        assert got == want
    assert dict(reads.read_table(spark, catalog, name).dtypes)["quantity"] == "bigint"


@pytest.mark.slow
def test_alter_table_on_a_hive_metastore(hive_metastore, tmp_path):
    """The same verbs on a ``thrift://`` catalog (a real Hive 3.1.3 metastore): Hive's table
    and its partitions get the new columns, the metastore refuses what Hive refuses, a rewrite
    passes, and reads (now and as of an old write id) follow the side catalog's history."""
    from acidflow.catalog import load_catalog
    from tests.support.hms import require_hive_artifacts, reset_metastore

    require_hive_artifacts()
    reset_metastore(hive_metastore.url)
    catalog = load_catalog(hive_metastore.url, warehouse=str(tmp_path / "warehouse"))
    try:
        name = "db.hmsevo"
        make_table(catalog, name, True, 2)
        write_two_batches(catalog, name, True)
        before = by_id(reads.read_table(None, catalog, name, row_id=True))
        alter_table(catalog, name, rename_column=("qty", "quantity"))
        alter_table(catalog, name, change_type=("quantity", "bigint"))
        hms = catalog._hms_table("db", "hmsevo")
        assert [(c.name, c.type) for c in hms.sd.cols][1] == ("quantity", "bigint")
        assert hms.parameters["orc.force.positional.evolution"] == "true"
        part = catalog.conn.call("get_partition", "db", "hmsevo", ["d1"])
        assert [c.name for c in part.sd.cols][1] == "quantity"
        with pytest.raises(SchemaChangeError, match="narrowing"):
            alter_table(catalog, name, change_type=("quantity", "int"))
        r = alter_table(
            catalog, name, reorder=["note", "quantity", "id", "price", "score"], rewrite=True
        )
        assert r.rows_rewritten == len(before)
        hms = catalog._hms_table("db", "hmsevo")
        assert [c.name for c in hms.sd.cols] == ["note", "quantity", "id", "price", "score"]
        got = by_id(reads.read_table(None, catalog, name, row_id=True))
        assert {
            i: {("qty" if k == "quantity" else k): v for k, v in row.items()}
            for i, row in got.items()
        } == before
        assert by_id(reads.read_table(None, catalog, name, as_of_write_id=2, row_id=True)) == before
    finally:
        catalog.close()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("engine", ["spark", "arrow"])
def test_incremental_read_across_a_schema_change(spark, catalog, engine):
    """``read_incremental`` from before a rename and a widening, on Spark and in pyarrow (the
    CLI's ``cat --incremental``): deleted (old) rows come in the end's names and types, next to
    the inserted ones."""
    name = "db.inc"
    make_table(catalog, name, False, 0)
    upsert(catalog, name, batch([1, 2, 3], "a", False))  # w1
    alter_table(catalog, name, rename_column=("qty", "quantity"))  # w2
    alter_table(catalog, name, change_type=("quantity", "bigint"))  # w3
    rows = batch([2], "b", False).set_column(1, "quantity", pa.array([2**40], pa.int64()))
    upsert(catalog, name, rows)  # w4
    if engine == "spark":
        chg = reads.read_incremental(spark, catalog, name, 1)
        assert "qty" not in chg.columns and dict(chg.dtypes)["quantity"] == "bigint"
        got = sorted((r["op"], r["id"], r["quantity"]) for r in chg.collect())
    else:
        tbl = reads.read_incremental(None, catalog, name, 1)
        assert "qty" not in tbl.column_names
        assert tbl.schema.field("quantity").type == pa.int64()
        got = sorted((r["op"], r["id"], r["quantity"]) for r in tbl.to_pylist())
    assert got == [("D", 2, 2 * 3 + 1), ("I", 2, 2**40)]


def test_a_writer_that_read_the_old_schema_stops_before_writing(catalog):
    """A statement that fetched the table before a schema change committed and took its lock
    after it refuses to write (its files would be laid out for the old columns)."""
    name = "db.stale"
    make_table(catalog, name, False, 0)
    upsert(catalog, name, batch([1, 2], "a", False))
    stale = catalog.get_table(name)
    alter_table(catalog, name, reorder=["note", "id", "qty", "price", "score"], rewrite=True)
    files = files_of(catalog, name)
    with Transaction(catalog, heartbeat_s=0) as txn:
        with pytest.raises(SchemaMismatchError, match="schema changed while"):
            txn.lock_table(stale, "shared_write")
    assert files_of(catalog, name) == files


def test_a_crashed_schema_change_blocks_writers_until_the_cleaner_reverts_it(catalog):
    """``table alter`` died after the catalog took its columns (qty int -> bigint) and the
    housekeeper aborted its transaction: readers keep the committed schema, writers refuse to
    write files laid out for the aborted columns, and the cleaner puts the columns back, after
    which writes go on."""
    name = "db.crashed"
    make_table(catalog, name, False, 2)
    upsert(catalog, name, batch([1, 2], "a", False))
    txn = catalog.open_transaction(agent_info="acidflow table alter")
    catalog.allocate_write_id(txn, name)
    catalog.acquire_lock(txn, name, None, "exclusive")
    cols = catalog.get_table(name).columns
    widened = [Column(c.name, "bigint" if c.name == "qty" else c.hive_type) for c in cols]
    catalog.alter_schema(txn, name, widened, change={"op": "change_type"})
    catalog.abort_transaction(txn, "timed out")  # the writer is gone
    files = files_of(catalog, name)
    with pytest.raises(SchemaMismatchError, match="was aborted after it had replaced"):
        upsert(catalog, name, batch([3], "b", False))
    assert files_of(catalog, name) == files
    snap = reads.read_table(None, catalog, name)
    assert snap.schema.field("qty").type == pa.int32() and sorted(by_id(snap)) == [1, 2]
    report = cleaner.run_cleaner(catalog)
    assert report.schema_reverted == [name]
    assert [c.hive_type for c in catalog.get_table(name).columns if c.name == "qty"] == ["int"]
    upsert(catalog, name, batch([3], "b", False))
    rows = by_id(reads.read_table(None, catalog, name))
    assert sorted(rows) == [1, 2, 3] and rows[3]["qty"] == 3 * 3 + 1
    assert cleaner.run_cleaner(catalog).schema_reverted == []


def test_a_transaction_older_than_a_rewrite_stops_before_writing(catalog):
    """A transaction that opened before a drop-column rewrite committed reads at its snapshot
    files laid out for the old columns: its upsert refuses before writing (otherwise its key
    lookup would read the old files with the new columns, miss the stored keys and insert
    duplicates); a new transaction upserts normally."""
    name = "db.older"
    make_table(catalog, name, False, 2)
    upsert(catalog, name, batch([1, 2], "a", False))
    old = Transaction(catalog, heartbeat_s=0)
    old.begin()
    alter_table(catalog, name, drop_columns=["qty"], rewrite=True)
    files = files_of(catalog, name)
    rows = batch([2], "b", False).drop_columns(["qty"])
    with pytest.raises(
        SchemaMismatchError, match="rewrote its data .* committed after transaction"
    ):
        old.upsert(name, rows)
    old.abort("test")
    assert files_of(catalog, name) == files
    upsert(catalog, name, rows)
    got = by_id(reads.read_table(None, catalog, name))
    assert sorted(got) == [1, 2] and got[2]["note"] == "b2" and "qty" not in got[2]
