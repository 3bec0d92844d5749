"""A major compaction's verification without a second read of the new base
(``acidflow.compactor.verify=writer``, the default): the workers digest the snapshot rows they
read and the events they hand to the ORC writer, and every written file is checked against its
footer. The digest is the one a read-back gives (columnar and pyorc-written types); a merge bug
that drops or alters a row, and a short file, still fail the compaction with nothing published;
``readback`` still reads the new base back. In-process workers (no Spark), real files, a real
catalog."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.format.bucketing import encode_bucket_property
from acidflow.maintenance import rewrite
from acidflow.read import snapshot
from tests.support import acidtables as at

B0 = encode_bucket_property(0, 0)
CFG = CompactorConfig(heartbeat_s=0, target_file_bytes=0)
COLS = [
    Column("id", "bigint"),
    Column("name", "string"),
    Column("m", "decimal(12,3)"),
    Column("day", "date"),
    Column("ts", "timestamp"),
    Column("b", "boolean"),
    Column("d", "double"),
]
# varchar goes through pyorc (files.columnar_writable): the other writer
PYORC_COLS = [Column("id", "int"), Column("v", "varchar(8)")]


def row(k: int, tag: str = "a") -> tuple:
    return (
        k,
        f"{tag}{k}" if k % 5 else None,
        decimal.Decimal(k * 1001) / 1000,
        dt.date(1970, 1, 1) + dt.timedelta(days=k * 13),
        dt.datetime(2001, 2, 3, 4, 5, 6, 789012) + dt.timedelta(seconds=k * 37),
        k % 3 == 0,
        k / 7,
    )


def history(catalog, name: str, pyorc: bool = False) -> None:
    """Three writes on ``name``: inserts in two buckets, an update of two rows, a delete."""
    catalog.create_table(TableDef(name=name, columns=PYORC_COLS if pyorc else COLS))
    make = (lambda k, tag="a": (k, f"{tag}{k}")) if pyorc else row
    at.write(
        catalog,
        name,
        {0: [make(k) for k in range(0, 40, 2)], 1: [make(k) for k in range(1, 40, 2)]},
    )
    at.write(catalog, name, {0: [make(k, "u") for k in (0, 2)]}, [(1, B0, 0), (1, B0, 1)])
    at.write(catalog, name, deletes=[(1, B0, 5)])


def listing(catalog, name: str) -> list[str]:
    return sorted(p.name for p in Path(catalog.get_table(name).location).iterdir())


def major(catalog, name: str, cfg: CompactorConfig = CFG, **kw):
    info = initiator.request_compaction(catalog, name, None, "major")
    return worker.run_worker(None, catalog, cq_id=info.id, config=cfg, **kw)


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """Paths of every data file ``snapshot.read_task`` reads from now on."""
    seen: list[str] = []
    real = snapshot.read_task

    def spy(tfs, task, *a, **kw):
        seen.extend(f.path for f in task.data_files)
        return real(tfs, task, *a, **kw)

    monkeypatch.setattr(snapshot, "read_task", spy)
    return seen


@pytest.mark.parametrize("pyorc", [False, True], ids=["columnar", "pyorc"])
def test_writer_digest_is_the_read_back_digest_without_reading_the_base(catalog, reads, pyorc):
    history(catalog, "db.w", pyorc)
    history(catalog, "db.r", pyorc)
    expected = at.rows(catalog, "db.w")
    out_w = major(catalog, "db.w")
    assert out_w.state == "ready for cleaning", out_w.report
    assert not [p for p in reads if "/base_" in p]  # the new base is never read
    out_r = major(
        catalog, "db.r", CompactorConfig(heartbeat_s=0, target_file_bytes=0, verify="readback")
    )
    assert out_r.state == "ready for cleaning", out_r.report
    assert [p for p in reads if "/.compact_tmp_" in p and "/base_" in p]  # read back
    # the same rows and ROW__IDs in both tables: the writers' digest equals the read-back one
    assert out_w.report["after"] == out_r.report["after"] == out_w.report["before"]
    assert out_w.report["after"]["rows"] == len(expected) == 39
    assert at.rows(catalog, "db.w") == at.rows(catalog, "db.r") == expected


def _drop_last(table: pa.Table) -> pa.Table:
    return table.slice(0, table.num_rows - 1)


def _alter_one(table: pa.Table) -> pa.Table:
    i = table.column_names.index("d")
    values = table.column(i).to_pylist()
    values[3] = values[3] + 1.0
    return table.set_column(i, "d", pa.array(values, pa.float64()))


@pytest.mark.parametrize("bug", [_drop_last, _alter_one], ids=["dropped-row", "altered-value"])
def test_merge_bug_fails_verification_and_publishes_nothing(catalog, monkeypatch, bug):
    history(catalog, "db.t")
    names, rows = listing(catalog, "db.t"), at.rows(catalog, "db.t")
    real = rewrite._sorted_by_key
    monkeypatch.setattr(rewrite, "_sorted_by_key", lambda t: bug(real(t)))
    out = major(catalog, "db.t")
    assert out.state == "failed" and "verification failed" in out.report["error"]
    assert "VerificationError" in catalog.get_compaction(out.cq_id).error
    assert listing(catalog, "db.t") == names  # no base, no temp directory left
    assert at.rows(catalog, "db.t") == rows


def test_short_file_fails_on_its_footer(catalog):
    """A written file cut short before verification: its footer is not what its writer
    wrote (the digests alone would agree); the compaction fails naming the file."""
    history(catalog, "db.t")
    names, rows = listing(catalog, "db.t"), at.rows(catalog, "db.t")
    cut: list[str] = []

    def truncate(tmp: str) -> None:
        path = os.path.join(tmp, "base_0000003", "bucket_00001")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 7)
        cut.append(path)

    out = major(catalog, "db.t", tamper=truncate)
    assert out.state == "failed", out.report
    error = catalog.get_compaction(out.cq_id).error
    assert "VerificationError" in error and cut[0] in error
    assert listing(catalog, "db.t") == names
    assert at.rows(catalog, "db.t") == rows
