"""The CDC source side, on real Spark, real files and a real SQLite catalog (and a private
PostgreSQL with wal2json for the pgbench load order): cut change files are never applied, poison
files stop the run with their name and can be set aside, a bad identifier quarantines only its
table, a TRUNCATE of a table not created yet waits, and a keyless auto-created table takes the
primary key its source adds later."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acidflow.catalog import SqlCatalog
from acidflow.cdc.apply import (
    CdcOptions,
    PrimaryKeyError,
    SchemaDriftError,
    apply_file,
    apply_path,
)
from acidflow.cdc.changes import POSITION_COLUMN
from acidflow.engine.statements import changes
from acidflow.quarantine import QuarantineThresholdError, quarantine_input_file
from acidflow.read.table import read_table
from acidflow.sources.records import IncompleteTransactionError, UnreadableFileError

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(warehouse):
    return SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))


def write(path: Path, lines, gz=False) -> Path:
    text = "\n".join(json.dumps(x) if not isinstance(x, str) else x for x in lines) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


def col(name, typ, value):
    return {"name": name, "type": typ, "value": value}


def ins(table, id_, v="x", pk=True, extra=()):
    return {
        "action": "I",
        "schema": "public",
        "table": table,
        "pk": [{"name": "id", "type": "integer"}] if pk else [],
        "columns": [col("id", "integer", id_), col("v", "text", v), *extra],
    }


def upd(table, id_, v):
    return {
        "action": "U",
        "schema": "public",
        "table": table,
        "pk": [{"name": "id", "type": "integer"}],
        "columns": [col("id", "integer", id_), col("v", "text", v)],
        "identity": [col("id", "integer", id_)],
    }


def dele(table, id_):
    return {
        "action": "D",
        "schema": "public",
        "table": table,
        "pk": [{"name": "id", "type": "integer"}],
        "identity": [col("id", "integer", id_)],
    }


def txn(xid, begin, commit, *changes):
    return (
        [{"action": "B", "xid": xid, "lsn": begin}]
        + list(changes)
        + [{"action": "C", "xid": xid, "lsn": begin, "nextlsn": commit}]
    )


def rows(catalog, name):
    return sorted((r["id"], r["v"]) for r in read_table(None, catalog, name).to_pylist())


# ----------------------------------------------------------------------------- cut files


def test_cut_wal2json_file_is_not_applied_and_can_be_set_aside(spark, catalog, tmp_path):
    """A change file that ends after BEGIN and some changes but before COMMIT is not applied (before
    the fix its changes were committed); the run stops there with the file, xid and LSN named; set
    aside with quarantine_input_file, the later files apply."""
    land = tmp_path / "landing"
    write(land / "1.jsonl", txn(1, "0/100", "0/1F0", ins("acc", 1), ins("acc", 2)))
    cut = write(
        land / "2.jsonl.gz",
        txn(2, "0/200", "0/2F0", ins("acc", 3), upd("acc", 1, "y"))[:-1],
        gz=True,
    )
    write(land / "3.jsonl", txn(3, "0/300", "0/3F0", ins("acc", 4)))
    opts = CdcOptions(target_db="src", auto_create=True)
    with pytest.raises(IncompleteTransactionError) as e:
        apply_path(spark, catalog, str(land), opts)
    msg = str(e.value)
    assert str(cut) in msg and "xid 2" in msg and "0/" in msg
    assert "acidflow cdc quarantine-file" in msg
    assert rows(catalog, "src.acc") == [(1, "x"), (2, "x")]  # nothing of file 2 or 3
    assert [b.details["file"] for b in catalog.list_batches("cdc")] == [str(land / "1.jsonl")]
    assert [b.source for b in catalog.list_batches("cdc")] == [str(land)]

    dest, record = quarantine_input_file(catalog.warehouse, "cdc", str(cut), "cut during copy")
    assert not cut.exists() and Path(dest).read_bytes()[:2] == b"\x1f\x8b"
    rec = json.loads(Path(record).read_text())
    assert rec["reason"] == "cut during copy" and rec["file"] == str(cut) and rec["size"] > 0
    assert len(rec["sha256"]) == 64
    reports = apply_path(spark, catalog, str(land), opts)
    assert [r.status for r in reports] == ["skipped", "applied"]
    assert rows(catalog, "src.acc") == [(1, "x"), (2, "x"), (4, "x")]


# -------------------------------------------------------------------------- poison files


def test_poison_files_stop_at_the_named_file(spark, catalog, tmp_path):
    """A binary file, a truncated .gz and invalid UTF-8 each stop the run at that file with its name
    and byte offset (before the fix: 'Aborted.' or a bare UnicodeDecodeError without a name);
    earlier files stay applied, later ones wait."""
    land = tmp_path / "landing"
    write(land / "0.jsonl", txn(1, "0/100", "0/1F0", ins("acc", 1)))
    good_gz = gzip.compress(
        (
            "\n".join(
                json.dumps(x)
                for x in txn(2, "0/200", "0/2F0", *[ins("acc", i, "y" * 50) for i in range(2, 60)])
            )
            + "\n"
        ).encode()
    )
    cases = {
        "1.jsonl": (b'{"action":"B"}\n\x00\x01\x02binary', "binary data", 15, 2),
        "2.jsonl.gz": (good_gz[: len(good_gz) // 2], "truncated .gz", len(good_gz) // 2, None),
        "3.jsonl": (b'{"action":"M"}\n{"action":"M","content":"caf\xe9"}\n', "not UTF-8", 43, 2),
    }
    opts = CdcOptions(target_db="src", auto_create=True)
    for name, (data, reason, offset, line) in cases.items():
        (land / name).write_bytes(data)
    for name, (data, reason, offset, line) in cases.items():
        with pytest.raises(UnreadableFileError) as e:
            apply_path(spark, catalog, str(land), opts)
        err = e.value
        assert err.file == str(land / name) and reason in err.reason
        assert (err.offset, err.line) == (offset, line), name
        assert str(land / name) in str(err) and "quarantine-file" in str(err)
        quarantine_input_file(catalog.warehouse, "cdc", str(land / name), "poison")
    assert rows(catalog, "src.acc") == [(1, "x")]
    write(land / "4.jsonl", txn(4, "0/400", "0/4F0", ins("acc", 9)))
    assert [r.status for r in apply_path(spark, catalog, str(land), opts)] == ["skipped", "applied"]
    assert rows(catalog, "src.acc") == [(1, "x"), (9, "x")]
    files = sorted(p.name for p in (Path(catalog.warehouse) / "_quarantine/cdc/files").iterdir())
    assert len(files) == 6 and sum(f.endswith(".json") for f in files) == 3


def test_cli_names_the_poison_file_in_one_line_and_quarantine_file_moves_it(warehouse, tmp_path):
    """The command: `acidflow cdc apply` on a truncated .gz prints one error line naming the file
    and the quarantine command (before the fix: 'Aborted.');
    `acidflow cdc quarantine-file PATH --reason TEXT` sets it aside and the next run goes on."""
    land = tmp_path / "landing"
    land.mkdir()
    bad = land / "a.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"action":"B","xid":1,"lsn":"0/1"}\n' * 50)[:40])
    write(land / "b.jsonl", txn(2, "0/200", "0/2F0", ins("acc", 5)))
    env = {**os.environ, "COLUMNS": "80"}

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "acidflow.cli", *args], capture_output=True, text=True, env=env
        )

    p = run("cdc", "apply", "--input", str(land), "--auto-create", "--target-db", "src")
    assert p.returncode == 1
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, p.stderr
    assert str(bad) in lines[0] and "truncated .gz" in lines[0]
    assert f"acidflow cdc quarantine-file {bad} --reason TEXT" in lines[0]
    assert "Aborted" not in p.stderr
    q = run("cdc", "quarantine-file", str(bad), "--reason", "cut by a failed copy")
    assert q.returncode == 0, q.stderr
    assert not bad.exists()
    (record,) = (warehouse / "_quarantine" / "cdc" / "files").glob("*.json")
    assert json.loads(record.read_text())["reason"] == "cut by a failed copy"
    p = run("cdc", "apply", "--input", str(land), "--auto-create", "--target-db", "src", "--json")
    assert p.returncode == 0, p.stderr
    cat = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))
    assert rows(cat, "src.acc") == [(5, "x")]


# -------------------------------------------------------------------- invalid identifiers


def test_bad_identifier_quarantines_only_its_table(spark, catalog, tmp_path):
    """With --auto-create, changes of a table whose name (or a column name) is not a valid Hive
    identifier are quarantined with the reason and count toward the threshold; the other tables'
    changes apply (before the fix the whole batch aborted)."""
    lines = txn(
        1,
        "0/10",
        "0/20",
        ins("acc", 1),
        ins("acc", 2),
        ins("order-items", 7),
        ins("order-items", 8),
        ins("odd", 3, extra=[col("bad col", "text", "z")]),
    )
    f = write(tmp_path / "in" / "b.jsonl", lines)
    with pytest.raises(QuarantineThresholdError, match="3 of 5 records are bad") as e:
        apply_file(spark, catalog, str(f), CdcOptions(target_db="src", auto_create=True))
    assert str(f) in str(e.value)
    assert rows(catalog, "src.acc") == []  # auto-created, but nothing committed
    r = apply_file(
        spark,
        catalog,
        str(f),
        CdcOptions(target_db="src", auto_create=True, quarantine_threshold=0.7),
    )
    assert r.status == "applied" and r.quarantined == 3 and list(r.tables) == ["src.acc"]
    assert rows(catalog, "src.acc") == [(1, "x"), (2, "x")]
    q = [json.loads(x) for x in Path(r.quarantine_file).read_text().splitlines()]
    by_table = {x["table"]: x["reason"] for x in q}
    assert "public.order-items" in by_table["public.order-items"]
    assert "not a valid Hive table name" in by_table["public.order-items"]
    assert "invalid column name 'bad col'" in by_table["public.odd"]
    assert not catalog.table_exists("src.odd")


# ------------------------------------------------------------------------ TRUNCATE first


def test_truncate_of_a_table_not_created_yet_waits_for_its_columns(spark, catalog, tmp_path):
    """The first record of a table is a TRUNCATE (pgbench -i, initial loads): the batch applies the
    other tables and counts the TRUNCATE as a no-op (before the fix: 'cannot auto-create ... no
    column names/types' for every table); the next batch's inserts create the table."""
    d = tmp_path / "in"
    write(
        d / "1.jsonl",
        txn(
            1, "0/10", "0/20", {"action": "T", "schema": "public", "table": "acc"}, ins("other", 1)
        ),
    )
    write(d / "2.jsonl", txn(2, "0/30", "0/40", ins("acc", 1), ins("acc", 2)))
    opts = CdcOptions(target_db="src", auto_create=True)
    r1, r2 = apply_path(spark, catalog, str(d), opts)
    assert r1.status == "applied" and r1.waiting == {"public.acc": 1} and r1.quarantined == 0
    assert list(r1.tables) == ["src.other"] and rows(catalog, "src.other") == [(1, "x")]
    assert r2.tables["src.acc"]["rows_inserted"] == 2
    assert catalog.get_table("src.acc").primary_key == ["id"]
    assert rows(catalog, "src.acc") == [(1, "x"), (2, "x")]
    # a batch holding only the TRUNCATE is applied as empty (its batch id is consumed)
    (r3,) = apply_path(
        spark,
        catalog,
        str(
            write(
                tmp_path / "t" / "3.jsonl",
                txn(3, "0/50", "0/60", {"action": "T", "schema": "public", "table": "later"}),
            )
        ),
        opts,
    )
    assert r3.status == "empty" and r3.waiting == {"public.later": 1}
    assert not catalog.table_exists("src.later")


# ---------------------------------------------------------------------- keys added later


def keyless_load(d: Path, ids):
    return write(d / "1.jsonl", txn(1, "0/10", "0/20", *[ins("acc", i, pk=False) for i in ids]))


def keyed_changes(d: Path):
    return write(
        d / "2.jsonl",
        txn(
            2,
            "0/30",
            "0/40",
            upd("acc", 1, "u1"),
            upd("acc", 2, "u2"),
            dele("acc", 3),
            ins("acc", 9),
        ),
    )


def test_keyless_table_takes_the_primary_key_its_source_adds(spark, catalog, tmp_path):
    """Rows loaded first (pk []), the key added afterwards (pk [id]): the auto-created keyless table
    takes the key (a catalog change in the commit record), and the updates/deletes apply by key
    (before the fix 75 % were quarantined as 'needs REPLICA IDENTITY FULL')."""
    d = tmp_path / "in"
    keyless_load(d, [1, 2, 3, 4])
    keyed_changes(d)
    opts = CdcOptions(target_db="src", auto_create=True)
    r1 = apply_file(spark, catalog, str(d / "1.jsonl"), opts)
    assert catalog.get_table("src.acc").primary_key == []
    r2 = apply_file(spark, catalog, str(d / "2.jsonl"), opts)
    assert r2.quarantined == 0
    st = r2.tables["src.acc"]
    assert (st["rows_updated"], st["rows_deleted"], st["rows_inserted"]) == (2, 1, 1)
    assert st["schema_change"]["primary_key"] == ["id"]
    t = catalog.get_table("src.acc")
    assert t.primary_key == ["id"] and t.num_buckets == 0
    assert rows(catalog, "src.acc") == [(1, "u1"), (2, "u2"), (4, "x"), (9, "x")]
    rec = catalog.commit_records("src.acc")[-1]
    assert rec.txn_id == r2.txn_id and rec.stats["schema_change"] == {
        "primary_key": ["id"],
        "previous_primary_key": [],
        "source": "public.acc",
    }
    assert r1.txn_id != r2.txn_id


def test_primary_key_learning_refuses_duplicates_and_schema_drift_fail(spark, catalog, tmp_path):
    """Duplicate stored keys stop the batch naming the keys; under --schema-drift fail the batch
    stops naming the table and the new key; nothing applied."""
    d = tmp_path / "in"
    keyless_load(d, [1, 1, 2, 3])
    keyed_changes(d)
    apply_file(spark, catalog, str(d / "1.jsonl"), CdcOptions(target_db="src", auto_create=True))
    with pytest.raises(SchemaDriftError, match=r"src\.acc.*\(id\)|\(id\).*src\.acc"):
        apply_file(
            spark,
            catalog,
            str(d / "2.jsonl"),
            CdcOptions(target_db="src", auto_create=True, schema_drift="fail"),
        )
    with pytest.raises(PrimaryKeyError) as e:
        apply_file(
            spark, catalog, str(d / "2.jsonl"), CdcOptions(target_db="src", auto_create=True)
        )
    assert e.value.duplicates == [((1,), 2)] and "{'id': 1} x2" in str(e.value)
    assert catalog.get_table("src.acc").primary_key == []
    assert rows(catalog, "src.acc") == [(1, "x"), (1, "x"), (2, "x"), (3, "x")]
    assert catalog.get_batch("wal2json:0000000000000030-0000000000000040").state == "aborted"


@pytest.mark.postgres
@pytest.mark.slow
def test_pgbench_load_order_through_a_real_slot(spark, catalog, tmp_path):
    """Real wal2json output in `pgbench -i`'s order: TRUNCATE first (its own batch), then the load
    without a key, then ALTER TABLE ADD PRIMARY KEY and updates/deletes. Every batch applies with
    nothing quarantined and the table equals the source."""
    from acidflow.sources.postgres.pull import pull
    from tests.support.postgres import (
        LOGICAL_SETTINGS,
        PostgresCluster,
        require_wal2json,
    )

    require_wal2json()
    land = tmp_path / "landing"
    with PostgresCluster(settings=LOGICAL_SETTINGS, dbname="bench") as pg:
        dsn = pg.libpq_url("bench")
        pg.execute(
            "CREATE TABLE accounts (aid int NOT NULL, abalance int, filler char(10))", "bench"
        )
        pull(dsn, "acid", land, create_slot=True)
        pg.execute("TRUNCATE accounts", "bench")
        assert len(pull(dsn, "acid", land)) == 1
        pg.execute("INSERT INTO accounts SELECT i, 0, 'f' FROM generate_series(1, 300) i", "bench")
        assert len(pull(dsn, "acid", land)) == 1
        pg.execute("ALTER TABLE accounts ADD PRIMARY KEY (aid)", "bench")
        for i in range(1, 40):
            pg.execute(
                f"UPDATE accounts SET abalance = abalance + {i} WHERE aid = {i * 7}", "bench"
            )
        pg.execute("DELETE FROM accounts WHERE aid > 290", "bench")
        pg.execute("INSERT INTO accounts VALUES (1000, 5, 'n')", "bench")
        assert len(pull(dsn, "acid", land)) == 1
        want = sorted(pg.execute("SELECT aid, abalance FROM accounts", "bench"))
    reports = apply_path(spark, catalog, str(land), CdcOptions(target_db="bench", auto_create=True))
    assert [r.status for r in reports] == ["empty", "applied", "applied"]
    assert reports[0].waiting == {"public.accounts": 1}
    assert [r.quarantined for r in reports] == [0, 0, 0]
    assert reports[2].tables["bench.accounts"]["schema_change"]["primary_key"] == ["aid"]
    assert reports[2].tables["bench.accounts"]["rows_updated"] == 39
    got = sorted(
        (r["aid"], r["abalance"]) for r in read_table(None, catalog, "bench.accounts").to_pylist()
    )
    assert got == want
    assert POSITION_COLUMN in catalog.get_table("bench.accounts").column_names()


def test_aborted_key_learning_batch_leaves_the_table_keyless_and_the_rerun_records_the_key(
    spark, catalog, tmp_path
):
    """Key learning happens inside the batch's transaction: a batch that takes the key and then
    aborts (quarantine threshold) leaves the table keyless (old code: the key stayed set though
    nothing was applied); the rerun that applies the batch sets the key and its commit record
    carries the schema_change (old code: the key was already set, so the commit that applied the
    batch had no schema_change)."""
    d = tmp_path / "in"
    keyless_load(d, [1, 2, 3, 4])
    apply_file(spark, catalog, str(d / "1.jsonl"), CdcOptions(target_db="src", auto_create=True))
    batch = txn(
        2, "0/30", "0/40", upd("acc", 1, "u1"), upd("acc", 2, "u2"), dele("acc", 3), ins("acc", 9)
    )
    f2 = write(d / "2.jsonl", batch[:2] + ["{not a record"] + batch[2:])  # 1 bad of 5
    strict = CdcOptions(target_db="src", auto_create=True, quarantine_threshold=0.0)
    with pytest.raises(QuarantineThresholdError):
        apply_file(spark, catalog, str(f2), strict)
    assert catalog.get_table("src.acc").primary_key == []
    assert catalog.get_batch("wal2json:0000000000000030-0000000000000040").state == "aborted"
    assert rows(catalog, "src.acc") == [(1, "x"), (2, "x"), (3, "x"), (4, "x")]
    r = apply_file(
        spark,
        catalog,
        str(f2),
        CdcOptions(target_db="src", auto_create=True, quarantine_threshold=0.5),
    )
    assert r.status == "applied" and r.quarantined == 1
    assert r.tables["src.acc"]["schema_change"]["primary_key"] == ["id"]
    assert catalog.get_table("src.acc").primary_key == ["id"]
    rec = catalog.commit_records("src.acc")[-1]
    assert rec.txn_id == r.txn_id and rec.stats["schema_change"] == {
        "primary_key": ["id"],
        "previous_primary_key": [],
        "source": "public.acc",
    }
    assert rows(catalog, "src.acc") == [(1, "u1"), (2, "u2"), (4, "x"), (9, "x")]


def test_key_learning_batch_that_loses_a_write_race_records_the_key_in_the_winning_attempt(
    spark, catalog, tmp_path, monkeypatch
):
    """The first attempt of a key-taking batch loses a write-set race (another writer deletes a row
    of the table before the batch commits); the key is not set by the lost attempt, and the attempt
    that commits records the schema_change in its commit record and sets the key (old code: attempt
    1 set the key, attempt 2 found it set and its commit record had no schema_change)."""
    import pyarrow as pa

    from acidflow.cdc import apply as cdc_apply
    from acidflow.engine import lookup
    from acidflow.engine.transaction import Transaction

    d = tmp_path / "in"
    keyless_load(d, [1, 2, 3, 4])
    opts = CdcOptions(target_db="src", auto_create=True)
    apply_file(spark, catalog, str(d / "1.jsonl"), opts)
    f2 = keyed_changes(d)
    keys_seen = []
    real_write = cdc_apply.write_arrow

    def racing_write(spark_, txn_, table, inserts, deletes, stats):
        keys_seen.append(list(catalog.get_table(table.name).primary_key))
        result = real_write(spark_, txn_, table, inserts, deletes, stats)
        if len(keys_seen) == 1:  # a racer deletes row 4 and commits before the batch does
            with Transaction(catalog, heartbeat_s=0) as racer:
                t = catalog.get_table("src.acc")
                found = lookup.current_rows(spark, catalog, t, racer).where("id = 4").toArrow()
                rid = found.column("ROW__ID").combine_chunks()
                deletes = pa.table(
                    [rid.field("writeid"), rid.field("bucketid"), rid.field("rowid")],
                    names=["owid", "bprop", "rowid"],
                )
                empty = found.select([c for c in found.column_names if c != "ROW__ID"]).slice(0, 0)
                changes.apply_row_changes(
                    racer,
                    "src.acc",
                    empty,
                    deletes,
                    counts={"rows_inserted": 0, "rows_updated": 0, "rows_deleted": 1},
                )
        return result

    monkeypatch.setattr(cdc_apply, "write_arrow", racing_write)
    r = apply_file(spark, catalog, str(f2), opts)
    assert r.status == "applied" and r.attempts == 2
    assert keys_seen == [[], []]  # the lost attempt did not set the key in the catalog
    assert r.tables["src.acc"]["schema_change"]["primary_key"] == ["id"]
    rec = catalog.commit_records("src.acc")[-1]
    assert rec.txn_id == r.txn_id and rec.stats["schema_change"]["primary_key"] == ["id"]
    assert catalog.get_table("src.acc").primary_key == ["id"]
    assert rows(catalog, "src.acc") == [(1, "u1"), (2, "u2"), (9, "x")]
