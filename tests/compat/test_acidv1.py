"""ACID v1 tables (Hive 0.14-2.x), written by Hive 2.3.10's own ``OrcRecordUpdater`` (legacy,
in-place updates), read by acidflow exactly as Hive 2.3's ``OrcRawRecordMerger`` reads them
(rows and ROW__IDs), and ``acidflow table upgrade`` rewriting them into Hive 3 bases that Hive
3.1.3's reader reads the same.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc
import pytest
from typer.testing import CliRunner

from acidflow import datasource
from acidflow.catalog import Column, TableDef
from acidflow.cli.app import app
from acidflow.compactor.upgrade import upgrade_table
from acidflow.engine.transaction import Transaction
from acidflow.format.acidv1 import ACID_VERSION_PROPERTY, AcidV1WriteError
from acidflow.format.orc import files as acid_files
from acidflow.format.writeids import ValidWriteIdList
from acidflow.read import table as reads
from acidflow.read.acidv1 import MixedAcidVersionError
from acidflow.tableops.adopt import adopt
from tests.compat.hive23v1 import COLUMNS, read_v1, write_bucket
from tests.compat.hive23v1 import Event as E

pytestmark = pytest.mark.spark

#: txn 5 aborted: its events must stay invisible (they would change (1,0,0), delete (2,0,0)
#: and add a row in bucket 1)
ABORTED = [5]
HWM = 6


def write_v1_table(spark, root: Path) -> Path:
    """A two-bucket v1 table: ``base_0000002`` (rows of txns 1 and 2), in-place updates and
    deletes in ``delta_3_3`` and ``delta_4_4`` (row (1,0,0) updated in both), an aborted
    ``delta_5_5``, and a Hive 2.x statement-id delta ``delta_6_6_0000``."""
    d = str(root)
    # base_2: what a Hive 2 major compaction of txns 1-2 writes (rowIds restart per txn)
    write_bucket(
        spark, d, bucket=0, min_txn=0, max_txn=2, base=True,
        events=[E("insert", 1, (1, "a")), E("insert", 1, (2, "b")), E("insert", 2, (3, "c"))],
    )  # fmt: skip
    write_bucket(spark, d, bucket=1, min_txn=0, max_txn=2, base=True,
                 events=[E("insert", 1, (4, "d"))])  # fmt: skip
    write_bucket(
        spark, d, bucket=0, min_txn=3, max_txn=3,
        events=[E("update", 3, (1, "a3"), (1, 0, 0)), E("delete", 3, key=(1, 0, 1))],
    )  # fmt: skip
    write_bucket(spark, d, bucket=1, min_txn=3, max_txn=3, events=[E("insert", 3, (5, "e"))])
    write_bucket(spark, d, bucket=0, min_txn=4, max_txn=4,
                 events=[E("update", 4, (1, "a4"), (1, 0, 0))])  # fmt: skip
    write_bucket(spark, d, bucket=1, min_txn=4, max_txn=4,
                 events=[E("update", 4, (5, "e4"), (3, 1, 0))])  # fmt: skip
    write_bucket(
        spark, d, bucket=0, min_txn=5, max_txn=5,
        events=[E("update", 5, (1, "a5"), (1, 0, 0)), E("delete", 5, key=(2, 0, 0))],
    )  # fmt: skip
    write_bucket(spark, d, bucket=1, min_txn=5, max_txn=5, events=[E("insert", 5, (6, "x"))])
    write_bucket(spark, d, bucket=0, min_txn=6, max_txn=6, statement_id=0,
                 events=[E("insert", 6, (7, "g"))])  # fmt: skip
    write_bucket(spark, d, bucket=1, min_txn=6, max_txn=6, statement_id=0,
                 events=[E("update", 6, (4, "d6"), (1, 1, 0))])  # fmt: skip
    return root


@pytest.fixture(scope="module")
def v1_table(spark, tmp_path_factory) -> Path:
    return write_v1_table(spark, tmp_path_factory.mktemp("acidv1") / "t")


def ours(rows: list[dict]) -> list[tuple]:
    return sorted(
        (
            (r["ROW__ID"]["writeid"], r["ROW__ID"]["bucketid"], r["ROW__ID"]["rowid"]),
            (r["id"], r["name"]),
        )
        for r in rows
    )


def test_fixture_is_hive2_v1(v1_table):
    dirs = sorted(p.name for p in v1_table.iterdir() if p.is_dir())
    assert dirs == [
        "base_0000002",
        "delta_0000003_0000003",
        "delta_0000004_0000004",
        "delta_0000005_0000005",
        "delta_0000006_0000006_0000",
    ]
    assert not list(v1_table.glob("*/_orc_acid_version"))
    f = paorc.ORCFile(str(v1_table / "delta_0000004_0000004" / "bucket_00000"))
    assert acid_files.ACID_VERSION_KEY.encode() not in (f.metadata or {})
    ops = f.read().column("operation").to_pylist()
    assert ops == [acid_files.OPERATION_UPDATE]


@pytest.mark.parametrize(
    "hwm, aborted",
    [(HWM, ABORTED), (HWM, []), (4, []), (3, [])],
    ids=["aborted5", "all", "hwm4", "hwm3"],
)
def test_v1_read_equals_hive23(spark, v1_table, hwm, aborted):
    hive = read_v1(spark, str(v1_table), high_watermark=hwm, aborted_txns=aborted)
    plan = reads.plan_path(str(v1_table), high_watermark=hwm, aborted_write_ids=aborted)
    assert ours(reads.run_plan(None, plan, row_id=True).to_pylist()) == hive
    if (hwm, aborted) == (HWM, ABORTED):
        assert hive == [
            ((1, 0, 0), (1, "a4")),  # updated in delta_3 and delta_4; txn 5's update aborted
            ((1, 1, 0), (4, "d6")),  # updated under a statement id
            ((2, 0, 0), (3, "c")),  # txn 5's delete aborted
            ((3, 1, 0), (5, "e4")),
            ((6, 0, 0), (7, "g")),
        ]
        spark_rows = reads.run_plan(spark, plan, row_id=True).toPandas().to_dict("records")
        assert ours(spark_rows) == hive
        # a row filter and columns on v1 files: applied to the merged rows
        some = reads.run_plan(None, plan, columns=["name"], where=[("id", ">=", 4)])
        assert some.column_names == ["name"]
        assert sorted(some.column("name").to_pylist()) == ["d6", "e4", "g"]


def test_mixed_v1_v2_directory_is_refused(v1_table, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(v1_table, t)
    v2 = t / "delta_0000007_0000007_0000"
    shutil.copytree(t / "delta_0000003_0000003", v2)
    (v2 / acid_files.ACID_VERSION_FILE).write_text("2")
    with pytest.raises(MixedAcidVersionError) as err:
        reads.run_plan(None, reads.plan_path(str(t)), row_id=True)
    text = str(err.value)
    assert "base_0000002" in text and "delta_0000007_0000007_0000" in text
    assert "acidflow table upgrade" in text


@pytest.mark.slow
def test_upgrade_then_hive31_reads_what_hive23_read(spark, v1_table, catalog, warehouse):
    from tests.compat.hive31 import Hive31Oracle, require_hive31_tools

    arts = require_hive31_tools()
    loc = warehouse / "legacy.db" / "t"
    shutil.copytree(v1_table, loc)
    before = read_v1(spark, str(loc), high_watermark=HWM, aborted_txns=ABORTED)
    td = TableDef(
        "legacy.t",
        [Column(n, t) for n, t in COLUMNS],
        location=str(loc),
        num_buckets=2,
        bucket_columns=["id"],
    )
    # v1 txn ids are the write ids (Hive 3's upgrade starts the table's write ids above them)
    adopted = adopt(catalog, td, ValidWriteIdList("legacy.t", HWM, aborted_write_ids=ABORTED))
    assert adopted.properties[ACID_VERSION_PROPERTY] == "1"
    row = pa.table({"id": pa.array([99], pa.int64()), "name": pa.array(["new"], pa.string())})
    with pytest.raises(AcidV1WriteError, match="acidflow table upgrade legacy.t"):
        with Transaction(catalog) as txn:  # v2 events beside v1 ones: refused, nothing written
            txn.insert("legacy.t", row)
    assert ours(reads.read_table(None, catalog, "legacy.t", row_id=True).to_pylist()) == before
    datasource.register(spark)  # bind format("acid") to this test's warehouse
    acid = spark.read.format("acid").option("rowid", "true").load("legacy.t")
    assert ours(acid.toPandas().to_dict("records")) == before

    report = upgrade_table(catalog, "legacy.t")
    assert report.partitions == [""] and report.write_id == HWM + 1
    assert report.before == report.after and report.before.rows == len(before)
    base = loc / f"base_{HWM + 1:07d}"
    assert (base / acid_files.ACID_VERSION_FILE).read_text() == "2"
    assert ours(reads.read_table(None, catalog, "legacy.t", row_id=True).to_pylist()) == before
    valid = catalog.valid_write_ids("legacy.t")
    with Hive31Oracle(arts) as oracle:
        hive3 = oracle.read(loc, COLUMNS, valid, num_buckets=2)
    assert sorted((r.row_id_struct, r.values) for r in hive3) == before

    # now v2: nothing to do, said so (the CLI too)
    again = upgrade_table(catalog, "legacy.t")
    assert again.nothing_to_do and again.write_id is None
    out = CliRunner().invoke(app, ["table", "upgrade", "legacy.t"])
    assert out.exit_code == 0, out.output
    assert "nothing to do" in out.output

    # upgraded: writable again, and the new row reads beside the upgraded ones
    assert catalog.get_table("legacy.t").properties[ACID_VERSION_PROPERTY] == "2"
    with Transaction(catalog) as txn:
        txn.insert("legacy.t", row)
    after = reads.read_table(None, catalog, "legacy.t").to_pylist()
    assert len(after) == len(before) + 1
