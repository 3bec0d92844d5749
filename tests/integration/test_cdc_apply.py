"""The CDC upsert job on real Spark, real ORC files and a real catalog: every format with late
events, several changes per key, deletes of missing keys, bad records and a new column;
idempotent reruns, aborted batches re-applied, the quarantine threshold, schema drift."""

import gzip
import json
from pathlib import Path

import pytest

from acidflow.catalog import BatchInProgressError, Column, SqlCatalog, TableDef
from acidflow.cdc.apply import CdcOptions, SchemaDriftError, apply_file, apply_path
from acidflow.cdc.changes import POSITION_COLUMN, Policies
from acidflow.quarantine import QuarantineThresholdError
from acidflow.read.table import read_table
from acidflow.tables_config import load_tables_config

pytestmark = pytest.mark.spark


@pytest.fixture(params=["driver", "spark"])
def merge_path(request, monkeypatch):
    """Where the merge does its work: the driver (key lookup read in-process, plan written by
    the driver: the defaults for small batches) or Spark (a lookup job and writer tasks, as for
    large scopes). Both must give the same tables."""
    if request.param == "spark":
        from acidflow.cdc import write as cdc_write
        from acidflow.engine import lookup

        monkeypatch.setattr(lookup, "LOCAL_LOOKUP_BYTES", -1)
        monkeypatch.setattr(cdc_write, "LOCAL_WRITE_ROWS", -1)
    return request.param


@pytest.fixture
def catalog(warehouse):
    return SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))


def rows(spark, catalog, name, cols=None):
    df = read_table(spark, catalog, name)
    out = {}
    for r in df.collect():
        d = r.asDict()
        d.pop(POSITION_COLUMN, None)
        key = d[cols[0]] if cols else tuple(sorted(d.items()))
        out[key] = d
    return out


def write(path: Path, lines, gz=False):
    text = "\n".join(json.dumps(x) if not isinstance(x, str) else x for x in lines) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


# ----------------------------------------------------------------------------- wal2json


def col(name, typ, value):
    return {"name": name, "type": typ, "value": value}


PK = [{"name": "id", "type": "integer"}]


def acc(id_, bal, note="n", extra=()):
    return [
        col("id", "integer", id_),
        col("bal", "numeric(10,2)", bal),
        col("note", "text", note),
        *extra,
    ]


def txn(lsn_begin, lsn_commit, *changes):
    out = [{"action": "B", "xid": 1, "lsn": lsn_begin}]
    for c in changes:
        out.append({"schema": "public", "table": "acc", "pk": PK, **c})
    out.append({"action": "C", "xid": 1, "lsn": lsn_commit, "nextlsn": lsn_commit})
    return out


def test_wal2json_batches_late_events_drift_and_idempotence(spark, catalog, tmp_path, merge_path):
    land = tmp_path / "landing"
    write(
        land / "b1.jsonl.gz",
        txn(
            "0/100",
            "0/1F0",
            {"action": "I", "columns": acc(1, 10)},
            {"action": "I", "columns": acc(2, 20)},
            {"action": "I", "columns": acc(3, 30)},
            {"action": "U", "columns": acc(1, 11)},
            {"action": "U", "columns": acc(1, 12)[:2]},
        ),  # note unchanged (TOAST-like)
        gz=True,
    )
    # a line that is not JSON is a bad record unless it is the last line (a cut file:
    # tests/unit/test_cdc_incomplete.py), so the broken line comes first here
    write(
        land / "b2.jsonl",
        ["{broken line"]
        + txn(
            "0/200",
            "0/2F0",
            {"action": "D", "identity": [col("id", "integer", 2)]},
            {"action": "D", "identity": [col("id", "integer", 9)]},  # missing key
            {
                "action": "I",
                "columns": acc(4, 40, extra=[col("tag", "character varying(5)", "new")]),
            },
            {"action": "U", "columns": acc(3, "abc")},
        ),
    )  # bad value -> quarantine
    opts = CdcOptions(
        fmt="wal2json", target_db="src", auto_create=True, num_buckets=2, quarantine_threshold=0.5
    )
    r1, r2 = apply_path(spark, catalog, str(land), opts)
    assert r1.batch_id == "wal2json:0000000000000100-00000000000001F0"
    assert r1.tables["src.acc"]["rows_inserted"] == 3 and r1.tables["src.acc"]["events"] == 5
    t = catalog.get_table("src.acc")
    assert t.primary_key == ["id"] and t.num_buckets == 2
    assert t.column_names() == ["id", "bal", "note", POSITION_COLUMN, "tag"]  # drift: appended
    assert t.columns[-1].hive_type == "varchar(5)"
    st = r2.tables["src.acc"]
    assert (st["rows_deleted"], st["deletes_of_missing"], st["rows_inserted"]) == (1, 1, 1)
    assert r2.quarantined == 2
    q = [json.loads(x) for x in Path(r2.quarantine_file).read_text().splitlines()]
    assert {x["reason"].split(":")[0] for x in q} == {"column bal", "not JSON"}
    assert all(x["source"].startswith("b2.jsonl:") and x["raw"] for x in q)
    got = rows(spark, catalog, "src.acc", ["id"])
    assert sorted(got) == [1, 3, 4]
    assert str(got[1]["bal"]) == "12.00" and got[1]["note"] == "n" and got[1]["tag"] is None
    assert got[4]["tag"] == "new" and str(got[3]["bal"]) == "30.00"
    recs = catalog.commit_records("src.acc")
    assert recs[-1].stats["ignored_late"] == 0 and recs[-1].stats["deletes_of_missing"] == 1
    assert recs[-1].stats["batch_id"] == r2.batch_id

    # rerun: both batches skipped, table unchanged
    before = rows(spark, catalog, "src.acc", ["id"])
    assert [r.status for r in apply_path(spark, catalog, str(land), opts)] == ["skipped"] * 2
    assert rows(spark, catalog, "src.acc", ["id"]) == before
    assert len(catalog.commit_records("src.acc")) == 2

    # the same LSN range re-cut into another file is the same batch
    write(
        tmp_path / "recut" / "r.jsonl",
        txn("0/100", "0/1F0", {"action": "U", "columns": acc(1, 99)}),
    )
    assert apply_path(spark, catalog, str(tmp_path / "recut"), opts)[0].status == "skipped"
    # an older transaction arriving late (other batch id): its events are not newer than the
    # stored rows and are ignored
    write(
        tmp_path / "late" / "r.jsonl",
        txn(
            "0/180",
            "0/1A0",
            {"action": "U", "columns": acc(1, 99)},
            {"action": "U", "columns": acc(3, 99)},
        ),
    )
    (r3,) = apply_path(spark, catalog, str(tmp_path / "late"), opts)
    assert r3.status == "applied" and r3.tables["src.acc"]["ignored_late"] == 2
    assert rows(spark, catalog, "src.acc", ["id"]) == before


def test_schema_drift_fail_and_threshold_abort_leave_nothing(spark, catalog, tmp_path):
    cfg = tmp_path / "tables.yaml"
    cfg.write_text("""
database: src
tables:
  - source: public.acc
    name: acc
    columns: [{name: id, type: int}, {name: bal, type: "decimal(10,2)"}, {name: note, type: string}]
    primary_key: [id]
    num_buckets: 2
""")
    tables = load_tables_config(cfg)
    f1 = write(
        tmp_path / "in" / "a.jsonl",
        txn(
            "0/10",
            "0/20",
            {"action": "I", "columns": acc(1, 1)},
            {"action": "I", "columns": acc(2, 1, extra=[col("x", "integer", 1)])},
        ),
    )
    with pytest.raises(SchemaDriftError, match="new column.*x"):
        apply_file(spark, catalog, str(f1), CdcOptions(tables=tables, schema_drift="fail"))
    assert rows(spark, catalog, "src.acc", ["id"]) == {}
    assert catalog.get_batch("wal2json:0000000000000010-0000000000000020").state == "aborted"

    bad = write(
        tmp_path / "in2" / "b.jsonl",
        txn(
            "0/30",
            "0/40",
            {"action": "I", "columns": acc(5, "x")},
            {"action": "I", "columns": acc(6, 1)},
        ),
    )
    with pytest.raises(QuarantineThresholdError, match="1 of 2 records are bad") as e:
        apply_file(spark, catalog, str(bad), CdcOptions(tables=tables))
    assert Path(e.value.path).exists()
    assert rows(spark, catalog, "src.acc", ["id"]) == {}
    # the aborted batch is applied again once allowed
    (r,) = apply_path(
        spark, catalog, str(bad.parent), CdcOptions(tables=tables, quarantine_threshold=0.5)
    )
    assert r.status == "applied" and sorted(rows(spark, catalog, "src.acc", ["id"])) == [6]
    # drift 'add' applies the first file too now
    (r,) = apply_path(spark, catalog, str(f1.parent), CdcOptions(tables=tables))
    assert sorted(rows(spark, catalog, "src.acc", ["id"])) == [1, 2, 6]


def test_batch_in_progress_is_refused(spark, catalog, tmp_path):
    f = write(tmp_path / "c.jsonl", txn("0/50", "0/60", {"action": "I", "columns": acc(1, 1)}))
    other = catalog.open_transaction()
    catalog.register_batch(other, "wal2json:0000000000000050-0000000000000060", "cdc")
    with pytest.raises(BatchInProgressError):
        apply_file(spark, catalog, str(f), CdcOptions(target_db="src", auto_create=True))
    catalog.abort_transaction(other)
    assert (
        apply_file(spark, catalog, str(f), CdcOptions(target_db="src", auto_create=True)).status
        == "applied"
    )


def test_keyless_table_and_multi_table_batch_commit_together(spark, catalog, tmp_path):
    hist = [
        col("tid", "integer", 1),
        col("delta", "integer", 5),
        col("mtime", "timestamp without time zone", "2024-01-01 00:00:00.5"),
    ]
    lines = [
        {"action": "B", "lsn": "0/10"},
        {"action": "I", "schema": "public", "table": "hist", "columns": hist},
        {"action": "I", "schema": "public", "table": "hist", "columns": hist},
        {"action": "I", "schema": "public", "table": "acc", "pk": PK, "columns": acc(1, 1)},
        {"action": "C", "lsn": "0/20"},
        {"action": "B", "lsn": "0/30"},
        {"action": "D", "schema": "public", "table": "hist", "identity": hist},  # FULL
        {
            "action": "D",
            "schema": "public",
            "table": "hist",
            "identity": hist[:1],
        },  # not FULL: quarantined
        {"action": "C", "lsn": "0/40"},
    ]
    f = write(tmp_path / "k.jsonl", lines)
    (r,) = apply_path(
        spark,
        catalog,
        str(f),
        CdcOptions(target_db="src", auto_create=True, quarantine_threshold=0.5),
    )
    assert catalog.get_table("src.hist").primary_key == []
    # two inserted, one of them deleted again in the same batch: one net insert, no delete event
    assert r.tables["src.hist"]["rows_inserted"] == 1 and r.tables["src.hist"]["rows_deleted"] == 0
    assert "REPLICA IDENTITY FULL" in Path(r.quarantine_file).read_text()
    h = read_table(spark, catalog, "src.hist").collect()
    assert len(h) == 1 and h[0]["delta"] == 5  # inserted twice, one deleted in the same batch
    ra, rh = catalog.commit_records("src.acc")[-1], catalog.commit_records("src.hist")[-1]
    assert ra.txn_id == rh.txn_id == r.txn_id

    # second batch: delete the stored duplicate row by its full image
    f2 = write(
        tmp_path / "k2.jsonl",
        [
            {"action": "B", "lsn": "0/50"},
            {"action": "D", "schema": "public", "table": "hist", "identity": hist},
            {"action": "C", "lsn": "0/60"},
        ],
    )
    (r2,) = apply_path(spark, catalog, str(f2), CdcOptions(target_db="src"))
    assert r2.tables["src.hist"]["rows_deleted"] == 1
    assert read_table(spark, catalog, "src.hist").count() == 0


def gg(op, pos, ts, after=None, before=None):
    return {
        "table": "SHOP.CUST",
        "op_type": op,
        "op_ts": ts,
        "current_ts": ts,
        "pos": pos,
        "primary_keys": ["ID"],
        "before": before,
        "after": after,
    }


def test_goldengate_late_events_several_changes_and_new_column(spark, catalog, tmp_path):
    d = tmp_path / "gg"
    write(
        d / "001.json",
        [
            gg("I", "0001", "2024-01-01 00:00:01", {"ID": 1, "NAME": "a", "AGE": 1}),
            gg("I", "0002", "2024-01-01 00:00:01", {"ID": 2, "NAME": "b", "AGE": 2}),
            "garbage",  # a bad record; as the last line it would be a cut file
            gg(
                "U",
                "0003",
                "2024-01-01 00:00:02",
                {"ID": 1, "AGE": 5, "NAME_isMissing": True},
                {"ID": 1},
            ),
            gg("U", "0004", "2024-01-01 00:00:03", {"ID": 1, "NAME": "a2", "AGE": 6}, {"ID": 1}),
            gg("D", "0005", "2024-01-01 00:00:03", None, {"ID": 7}),
        ],
    )
    write(
        d / "002.json",
        [
            gg("U", "0002", "2024-01-01 00:00:02", {"ID": 1, "NAME": "late", "AGE": 0}, {"ID": 1}),
            gg("U", "0009", "2024-01-01 00:00:09", {"ID": 2, "AGE": 3, "CITY": "Oslo"}, {"ID": 2}),
            gg("I", "0010", "2024-01-01 00:00:10", {"ID": 3, "NAME": "c", "AGE": 9, "CITY": None}),
        ],
    )
    opts = CdcOptions(
        fmt="goldengate", target_db="shop", auto_create=True, quarantine_threshold=0.2
    )
    r1, r2 = apply_path(spark, catalog, str(d), opts)
    assert r1.quarantined == 1 and r1.tables["shop.cust"]["deletes_of_missing"] == 1
    assert r2.tables["shop.cust"]["ignored_late"] == 1
    got = rows(spark, catalog, "shop.cust", ["id"])
    assert got[1] == {"id": 1, "name": "a2", "age": 6, "city": None}
    assert got[2] == {"id": 2, "name": "b", "age": 3, "city": "Oslo"}
    assert got[3]["name"] == "c"
    assert [r.status for r in apply_path(spark, catalog, str(d), opts)] == ["skipped"] * 2


def test_partitioned_table_prunes_by_key_and_keeps_row_ids(spark, catalog, tmp_path, merge_path):
    """A table partitioned by a key column: the lookup reads only the touched partitions
    and buckets; updates and deletes hit the right partition; both merge paths agree."""
    catalog.create_table(
        TableDef(
            name="shop.visits",
            columns=[
                Column("id", "bigint"),
                Column("v", "string"),
                Column(POSITION_COLUMN, "string"),
            ],
            partition_columns=[Column("region", "string")],
            primary_key=["region", "id"],
            num_buckets=2,
            ordering_column=POSITION_COLUMN,
        )
    )

    def ev(op, pos, region, id_, v=None):
        img = {"REGION": region, "ID": id_, **({"V": v} if v is not None else {})}
        return {
            "table": "SHOP.VISITS",
            "op_type": op,
            "op_ts": "2024-02-01 00:00:00",
            "pos": pos,
            "primary_keys": ["REGION", "ID"],
            "before": None if op == "I" else {"REGION": region, "ID": id_},
            "after": None if op == "D" else img,
        }

    d = tmp_path / "visits"
    write(
        d / "1.json",
        [
            ev("I", "01", "eu", 1, "a"),
            ev("I", "02", "us", 1, "b"),
            ev("I", "03", "eu", 2, "c"),
            ev("I", "04", "us", 2, "d"),
        ],
    )
    write(
        d / "2.json",
        [
            ev("U", "05", "eu", 1, "a2"),
            ev("D", "06", "us", 2),
            ev("U", "01", "us", 1, "late"),
            ev("I", "07", "ap", 9, "z"),
        ],
    )
    opts = CdcOptions(fmt="goldengate", target_db="shop", quality_gate=False)
    _, r2 = apply_path(spark, catalog, str(d), opts)
    assert r2.tables["shop.visits"]["ignored_late"] == 1
    assert r2.tables["shop.visits"]["rows_updated"] == 1
    assert r2.tables["shop.visits"]["rows_deleted"] == 1
    got = {
        (r["region"], r["id"]): r["v"] for r in read_table(None, catalog, "shop.visits").to_pylist()
    }
    assert got == {("eu", 1): "a2", ("us", 1): "b", ("eu", 2): "c", ("ap", 9): "z"}
    ids = read_table(None, catalog, "shop.visits", row_id=True).to_pylist()
    assert len({(r["region"], tuple(r["ROW__ID"].values())) for r in ids}) == 4
    # the ORC statistics bound every stored position (what lets in-order batches skip reading
    # the position column in their lookup)
    from acidflow.engine import lookup

    table = catalog.get_table("shop.visits")
    known, newest = lookup.stored_column_max(
        lookup.plan_current(catalog, table, None), POSITION_COLUMN
    )
    stored = [r[POSITION_COLUMN] for r in ids]
    assert known and newest >= max(stored) and newest.startswith("2024-02-01 00:00:00.000000|07")
    # per file: a batch whose oldest event is at position 05 reads the positions of batch 2's
    # delta only; batch 1's delta (positions 01..04) is known older and its positions unread
    older, rest = lookup.split_by_column_bound(
        lookup.plan_current(catalog, table, None), POSITION_COLUMN, "2024-02-01 00:00:00.000000|05"
    )

    def dirs(cur):
        return {f.path.split("/")[-2] for t in cur.plan.tasks for f in t.data_files}

    assert dirs(older) and all(n.startswith("delta_0000001_") for n in dirs(older))
    assert dirs(rest) and all(n.startswith("delta_0000002_") for n in dirs(rest))
    write(
        d / "3.json",
        [
            ev("U", "08", "eu", 2, "c2"),  # stored in batch 1's delta
            ev("U", "05", "eu", 1, "late2"),
        ],
    )  # late against batch 2's 05
    r3 = apply_file(spark, catalog, str(d / "3.json"), opts)
    assert r3.tables["shop.visits"]["ignored_late"] == 1
    assert r3.tables["shop.visits"]["rows_updated"] == 1
    got = {
        (r["region"], r["id"]): r["v"] for r in read_table(None, catalog, "shop.visits").to_pylist()
    }
    assert got == {("eu", 1): "a2", ("us", 1): "b", ("eu", 2): "c2", ("ap", 9): "z"}


def deb(op, lsn, after=None, before=None, table="orders"):
    return {
        "payload": {
            "op": op,
            "before": before,
            "after": after,
            "ts_ms": 1,
            "source": {"schema": "public", "table": table, "lsn": lsn},
        },
        "schema": {"type": "struct", "fields": []},
    }


def test_debezium_with_tables_config_and_policies(spark, catalog, tmp_path, merge_path):
    catalog.create_table(
        TableDef(
            name="shop.orders",
            columns=[
                Column("id", "bigint"),
                Column("qty", "int"),
                Column(POSITION_COLUMN, "string"),
            ],
            primary_key=["id"],
            num_buckets=2,
            ordering_column=POSITION_COLUMN,
        )
    )
    d = tmp_path / "deb"
    write(
        d / "1.json",
        [
            deb("r", 10, {"id": 1, "qty": 1}),
            deb("c", 11, {"id": 2, "qty": 2}),
            deb("u", 12, {"id": 1, "qty": 3}),
            deb("u", 13, {"id": 1, "qty": 4}),
            deb("d", 14, before={"id": 2}),
            deb("d", 15, before={"id": 8}),
        ],
    )
    write(
        d / "2.json",
        [
            deb("u", 12, {"id": 1, "qty": 100}),  # late
            deb("c", 20, {"id": 1, "qty": 5}),  # insert of existing
            deb("u", 21, {"id": 6, "qty": 6}),  # update of missing
            deb("d", 22, before={"id": 9}),
        ],
    )  # delete of missing
    strict = CdcOptions(
        fmt="debezium",
        target_db="shop",
        policies=Policies("quarantine", "quarantine", "quarantine"),
        quarantine_threshold=0.9,
    )
    r1, r2 = apply_path(spark, catalog, str(d), strict)
    assert r1.quarantined == 1  # delete of id 8 under 'quarantine'
    assert r2.quarantined == 3 and r2.tables["shop.orders"]["ignored_late"] == 1
    assert {k: v["qty"] for k, v in rows(spark, catalog, "shop.orders", ["id"]).items()} == {1: 4}
    # defaults on a copy of batch 2 (new content -> new batch id)
    write(
        tmp_path / "deb2" / "2b.json",
        [
            deb("c", 20, {"id": 1, "qty": 5}),
            deb("u", 21, {"id": 6, "qty": 6}),
            deb("d", 22, before={"id": 9}),
        ],
    )
    (r3,) = apply_path(
        spark, catalog, str(tmp_path / "deb2"), CdcOptions(fmt="debezium", target_db="shop")
    )
    st = r3.tables["shop.orders"]
    assert (st["inserts_of_existing"], st["updates_of_missing"], st["deletes_of_missing"]) == (
        1,
        1,
        1,
    )
    assert {k: v["qty"] for k, v in rows(spark, catalog, "shop.orders", ["id"]).items()} == {
        1: 5,
        6: 6,
    }


def test_truncate_then_changes_is_an_insert_overwrite(spark, catalog, tmp_path):
    opts = CdcOptions(target_db="src", auto_create=True)
    apply_file(
        spark,
        catalog,
        str(
            write(
                tmp_path / "1.jsonl",
                txn(
                    "0/10",
                    "0/20",
                    {"action": "I", "columns": acc(1, 1)},
                    {"action": "I", "columns": acc(2, 2)},
                ),
            )
        ),
        opts,
    )
    r = apply_file(
        spark,
        catalog,
        str(
            write(
                tmp_path / "2.jsonl",
                txn(
                    "0/30",
                    "0/40",
                    {"action": "I", "columns": acc(3, 3)},  # before the truncate: gone
                    {"action": "T"},
                    {"action": "I", "columns": acc(2, 5)},
                    {"action": "U", "columns": acc(2, 6)},
                ),
            )
        ),
        opts,
    )
    st = r.tables["src.acc"]
    assert st["truncated"] == 1 and st["rows_inserted"] == 1
    got = rows(spark, catalog, "src.acc", ["id"])
    assert {k: str(v["bal"]) for k, v in got.items()} == {2: "6.00"}
    from acidflow.read.table import acid_state_of

    t = catalog.get_table("src.acc")
    assert acid_state_of(t.location, catalog.valid_write_ids("src.acc")).base.name == "base_0000002"


def test_late_events_after_a_delete_do_not_resurrect_the_key(spark, catalog, tmp_path, merge_path):
    opts = CdcOptions(fmt="goldengate", target_db="shop", auto_create=True)
    for i, batch in enumerate(
        [
            [gg("I", "0001", "2024-01-01 00:00:01", {"ID": 1, "NAME": "a", "AGE": 1})],
            [gg("D", "0005", "2024-01-01 00:00:05", None, {"ID": 1})],
            [
                gg(
                    "U",
                    "0003",
                    "2024-01-01 00:00:03",
                    {"ID": 1, "NAME": "late", "AGE": 3},
                    {"ID": 1},
                ),
                gg("I", "0004", "2024-01-01 00:00:04", {"ID": 1, "NAME": "late", "AGE": 4}),
            ],
            [gg("I", "0006", "2024-01-01 00:00:06", {"ID": 1, "NAME": "back", "AGE": 6})],
        ]
    ):
        r = apply_file(spark, catalog, str(write(tmp_path / f"{i}.json", batch)), opts)
        if i == 2:
            assert r.tables["shop.cust"]["ignored_late"] == 2
            assert rows(spark, catalog, "shop.cust", ["id"]) == {}
    assert rows(spark, catalog, "shop.cust", ["id"])[1]["name"] == "back"


def test_null_key_is_quarantined_with_the_ingest_reason(spark, catalog, tmp_path):
    """The NULL-key rule (acidflow.format.keys): a change whose key is NULL is quarantined with
    the reason ingest records for such a row, word for word; the other changes are applied."""
    lines = txn(
        "0/10",
        "0/20",
        {"action": "I", "columns": acc(1, 1)},
        {"action": "I", "columns": acc(None, 2)},
        {"action": "I", "columns": acc(3, 3)},
    )
    (r,) = apply_path(
        spark,
        catalog,
        str(write(tmp_path / "n.jsonl", lines)),
        CdcOptions(target_db="src", auto_create=True, quarantine_threshold=0.5),
    )
    assert sorted(rows(spark, catalog, "src.acc", ["id"])) == [1, 3]
    q = [json.loads(x) for x in Path(r.quarantine_file).read_text().splitlines()]
    assert [b["reason"] for b in q] == ["NULL in primary key column(s) ['id']"]
    assert r.quarantined == 1
