"""Pure parts of acidflow.sources.postgres.pull (and .lsn): LSN text, landing file names, grouping slot rows into
transactions, and the durable landing-file writer (local files only)."""

from __future__ import annotations

import gzip
import json

import pytest

from acidflow.sources.postgres import pull as P
from acidflow.sources.postgres.connection import libpq_dsn
from acidflow.sources.postgres.lsn import format_lsn, parse_lsn


def _b(xid, commit, end):
    return json.dumps(
        {"action": "B", "xid": xid, "lsn": commit, "nextlsn": end}, separators=(",", ":")
    )


def _c(xid, commit, end):
    return json.dumps(
        {"action": "C", "xid": xid, "lsn": commit, "nextlsn": end}, separators=(",", ":")
    )


def _i(xid, lsn, v):
    return json.dumps(
        {
            "action": "I",
            "xid": xid,
            "lsn": lsn,
            "schema": "public",
            "table": "t",
            "columns": [{"name": "id", "type": "integer", "value": v}],
            "pk": [{"name": "id", "type": "integer"}],
        },
        separators=(",", ":"),
    )


def test_lsn_round_trip():
    assert parse_lsn("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert format_lsn(parse_lsn("0/1921F90")) == "0/1921F90"
    assert parse_lsn("0/0") == 0
    for bad in ("", "1", "x/y", "0/123456789"):
        with pytest.raises(ValueError):
            parse_lsn(bad)


def test_landing_names_sort_by_lsn():
    ranges = [(0x1_0000_0000, 0x1_0000_0100), (0xFF, 0x1FF), (0x200, 0xFFFF_FFFF)]
    names = [P.landing_file_name(a, b) for a, b in ranges]
    assert names[1] == "wal2json_00000000000000FF_00000000000001FF.jsonl.gz"
    assert sorted(names) == [names[1], names[2], names[0]]
    assert [P.parse_landing_name(n) for n in sorted(names)] == sorted(ranges)
    assert P.parse_landing_name("/x/y/" + names[0]) == ranges[0]
    assert P.parse_landing_name(".tmp-wal2json_12.jsonl.gz") is None
    assert P.parse_landing_name("wal2json_00000000000000ff_00000000000001FF.jsonl.gz") is None
    with pytest.raises(ValueError):
        P.landing_file_name(5, 4)


def test_split_transactions_groups_and_drops_nontransactional_messages():
    rows = [
        ("0/10", "5", _b(5, "0/20", "0/30")),
        ("0/10", "5", _i(5, "0/10", 1)),
        ("0/18", "5", _i(5, "0/18", 2)),
        ("0/30", "5", _c(5, "0/20", "0/30")),
        (
            "0/31",
            "0",
            '{"action":"M","xid":null,"lsn":"0/31","transactional":false,'
            '"prefix":"p","content":"x"}',
        ),
        ("0/30", "6", _b(6, "0/40", "0/50")),
        ("0/50", "6", _c(6, "0/40", "0/50")),
    ]
    units = list(P.split_transactions(rows))
    assert [(u.commit_lsn, u.end_lsn, u.xid, u.changes) for u in units] == [
        (0x20, 0x30, "5", 2),
        (0x40, 0x50, "6", 0),
    ]
    assert units[0].lines == tuple(r[2] for r in rows[:4])


@pytest.mark.parametrize(
    "rows, message",
    [
        ([("0/1", "5", _i(5, "0/1", 1))], "outside a transaction"),
        ([("0/1", "5", _b(5, "0/2", "0/3"))], "ended inside transaction 5"),
        (
            [("0/1", "5", _b(5, "0/2", "0/3")), ("0/2", "6", _b(6, "0/4", "0/5"))],
            "without its COMMIT",
        ),
        ([("0/1", "5", _c(5, "0/2", "0/3"))], "without BEGIN"),
        ([("0/1", "5", _b(5, "0/2", "0/3")), ("0/3", "6", _c(6, "0/2", "0/3"))], "COMMIT of xid 6"),
        (
            [("0/1", "5", _b(5, "0/2", "0/3")), ("0/3", "5", '{"action":"C","xid":5}')],
            "no usable lsn",
        ),
    ],
)
def test_split_transactions_rejects_broken_streams(rows, message):
    with pytest.raises(P.PullError, match=message):
        list(P.split_transactions(rows, slot="s1"))


def test_write_landing_file(tmp_path):
    units = list(
        P.split_transactions(
            [
                ("0/10", "5", _b(5, "0/20", "0/30")),
                ("0/10", "5", _i(5, "0/10", 1)),
                ("0/30", "5", _c(5, "0/20", "0/30")),
                ("0/30", "6", _b(6, "0/40", "0/50")),
                ("0/50", "6", _c(6, "0/40", "0/50")),
            ]
        )
    )
    pf = P.write_landing_file(tmp_path, units)
    assert pf.path.name == P.landing_file_name(0x20, 0x50)
    assert (pf.first_lsn, pf.last_lsn, pf.transactions, pf.changes) == (0x20, 0x50, 2, 1)
    assert pf.batch_id == pf.path.name[: -len(".jsonl.gz")]
    assert P.read_landing_lines(pf.path) == [ln for u in units for ln in u.lines]
    # deterministic bytes (no name, mtime 0 in the gzip header)
    raw = pf.path.read_bytes()
    pf.path.rename(tmp_path / "moved")
    pf2 = P.write_landing_file(tmp_path, units)
    assert pf2.path.read_bytes() == raw
    # same range again -> refused, nothing left behind
    with pytest.raises(P.PullError, match="exists already"):
        P.write_landing_file(tmp_path, units)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([pf2.path.name, "moved"])
    assert P.write_landing_file(tmp_path, []) is None
    assert P.highest_landed_lsn(tmp_path) == 0x50
    assert P.highest_landed_lsn(tmp_path / "none") is None
    with gzip.open(pf2.path, "rt") as fh:
        assert fh.read().endswith("\n")


def test_write_landing_file_rejects_out_of_order(tmp_path):
    u1 = P.TxnUnit(0x40, 0x50, "6", ("{}", "{}"))
    u0 = P.TxnUnit(0x20, 0x30, "5", ("{}", "{}"))
    with pytest.raises(P.PullError, match="before the previous one ended"):
        P.write_landing_file(tmp_path, [u1, u0])
    assert list(tmp_path.iterdir()) == []


def test_libpq_dsn():
    assert libpq_dsn("postgresql+psycopg2://u@h:5/d") == "postgresql://u@h:5/d"
    assert libpq_dsn("postgresql://u@h/d") == "postgresql://u@h/d"
    assert libpq_dsn("host=h dbname=d") == "host=h dbname=d"


def test_landed_lsn_state_survives_archiving(tmp_path):
    assert P.highest_landed_lsn(tmp_path) is None
    P.record_landed_lsn(tmp_path, 0x1_0000_0010)
    assert (tmp_path / P.STATE_NAME).read_text() == "1/10\n"
    assert P.highest_landed_lsn(tmp_path) == 0x1_0000_0010
    (tmp_path / P.landing_file_name(0x1_0000_0020, 0x1_0000_0030)).write_bytes(b"")
    assert P.highest_landed_lsn(tmp_path) == 0x1_0000_0030
    (tmp_path / P.STATE_NAME).write_text("garbage")
    with pytest.raises(P.PullError, match="not an LSN"):
        P.highest_landed_lsn(tmp_path)
