"""Incomplete source transactions are never applied: every change format refuses a file whose last
transaction has no end marker, naming the file, the transaction id and the LSN / position; complete
files still parse as before."""

import json

import pytest

from acidflow.sources import formats as F
from acidflow.sources.records import IncompleteTransactionError


def j(**kw):
    return json.dumps(kw)


def change(action, lsn, id_):
    return j(
        action=action,
        schema="public",
        table="t",
        lsn=lsn,
        columns=[{"name": "id", "type": "integer", "value": id_}],
        pk=[{"name": "id", "type": "integer"}],
    )


def test_wal2json_v2_file_ending_before_commit_is_refused():
    """A v2 file cut after BEGIN and some changes (before COMMIT) raises, naming the file, xid and
    LSN; before the fix its changes were applied."""
    whole = [
        j(action="B", xid=700, lsn="0/100"),
        change("I", "0/110", 1),
        j(action="C", xid=700, lsn="0/100", nextlsn="0/1F0"),
    ]
    cut = [j(action="B", xid=701, lsn="0/200"), change("I", "0/210", 2), change("I", "0/220", 3)]
    assert len(F.parse_lines("wal2json", whole, "ok.jsonl").changes) == 1
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("wal2json", whole + cut, "cut.jsonl")
    err = e.value
    assert (err.file, err.txid, err.position, err.line) == ("cut.jsonl", 701, "0/220", 4)
    msg = str(err)
    assert "cut.jsonl:4" in msg and "xid 701" in msg and "0/220" in msg
    assert "acidflow cdc quarantine-file" in msg


def test_wal2json_v2_cut_inside_the_commit_line_and_nested_begin():
    """A COMMIT line cut in half, and a BEGIN inside an open transaction (a cut file concatenated
    with the next one) are incomplete transactions too."""
    lines = [j(action="B", xid=5, lsn="0/10"), change("I", "0/11", 1), '{"action":"C","xid":5,"l']
    with pytest.raises(IncompleteTransactionError, match="xid 5"):
        F.parse_lines("wal2json", lines, "f")
    nested = [
        j(action="B", xid=5, lsn="0/10"),
        change("I", "0/11", 1),
        j(action="B", xid=6, lsn="0/20"),
        change("I", "0/21", 2),
        j(action="C", xid=6, lsn="0/20", nextlsn="0/30"),
    ]
    with pytest.raises(IncompleteTransactionError, match="begins at line 3"):
        F.parse_lines("wal2json", nested, "f")
    # a cut BEGIN as the last line
    with pytest.raises(IncompleteTransactionError, match="xid 9"):
        F.parse_lines(
            "wal2json",
            [
                j(action="B", xid=8, lsn="0/1"),
                j(action="C", xid=8, lsn="0/1", nextlsn="0/2"),
                '{"action":"B","xid":9,"ls',
            ],
            "f",
        )


def test_wal2json_changes_without_transaction_records_still_parse():
    """Streams decoded without include-transaction have no brackets: nothing to check."""
    s = F.parse_lines("wal2json", [change("I", "0/11", 1), change("I", "0/12", 2)], "f")
    assert [c.position for c in s.changes] == [
        "0000000000000011.00000000",
        "0000000000000012.00000001",
    ]


def v1_doc(xid, nextlsn, *ids):
    return json.dumps(
        {
            "xid": xid,
            "nextlsn": nextlsn,
            "timestamp": "2024-01-01 00:00:00+00",
            "change": [
                {
                    "kind": "insert",
                    "schema": "public",
                    "table": "t",
                    "columnnames": ["id", "v"],
                    "columntypes": ["integer", "text"],
                    "columnvalues": [i, f"v{i}"],
                    "pk": {"pknames": ["id"], "pktypes": ["integer"]},
                }
                for i in ids
            ],
        }
    )


def test_wal2json_v1_documents_and_a_cut_last_document():
    """wal2json format-version 1: one document per transaction is parsed; a last line cut in the
    middle of a document raises with its xid and LSN."""
    upd = json.dumps(
        {
            "xid": 12,
            "nextlsn": "0/300",
            "change": [
                {
                    "kind": "update",
                    "schema": "public",
                    "table": "t",
                    "columnnames": ["id", "v"],
                    "columntypes": ["integer", "text"],
                    "columnvalues": [1, "w"],
                    "oldkeys": {"keynames": ["id"], "keytypes": ["integer"], "keyvalues": [1]},
                },
                {
                    "kind": "delete",
                    "schema": "public",
                    "table": "t",
                    "oldkeys": {"keynames": ["id"], "keytypes": ["integer"], "keyvalues": [2]},
                },
            ],
        }
    )
    s = F.parse_lines("wal2json", [v1_doc(11, "0/200", 1, 2), upd], "v1.json")
    assert not s.bad
    assert [(c.op, c.position) for c in s.changes] == [
        ("I", "0000000000000200.00000000"),
        ("I", "0000000000000200.00000001"),
        ("U", "0000000000000300.00000000"),
        ("D", "0000000000000300.00000001"),
    ]
    assert s.changes[2].before == {"id": 1} and s.changes[2].after == {"id": 1, "v": "w"}
    assert s.tables["public.t"].primary_key == ["id"]
    assert s.tables["public.t"].columns == {"id": "int", "v": "string"}
    assert (s.first_position, s.last_position) == ("0000000000000200", "0000000000000300")
    cut = v1_doc(13, "0/400", 3, 4)[:70]
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("wal2json", [v1_doc(11, "0/200", 1, 2), cut], "v1.json")
    assert (e.value.txid, e.value.position, e.value.line) == ("13", "0/400", 2)


def deb(op, lsn, id_, txid=None, kafka=False):
    payload = {
        "op": op,
        "after": {"id": id_},
        "before": None,
        "ts_ms": 1,
        "source": {"schema": "public", "table": "t", "lsn": lsn},
    }
    if txid is not None:
        payload["transaction"] = {"id": txid, "total_order": 1, "data_collection_order": 1}
    rec = {"schema": {"type": "struct", "fields": []}, "payload": payload}
    return json.dumps({"key": {"id": id_}, "value": rec} if kafka else rec)


def marker(status, txid, count=None, wrap=False):
    rec = {"status": status, "id": txid, "event_count": count, "data_collections": None, "ts_ms": 1}
    return json.dumps({"schema": {}, "payload": rec} if wrap else rec)


def test_debezium_transaction_metadata_begin_without_end_is_refused():
    """Debezium: with transaction metadata, BEGIN .. END brackets are markers (not bad records); a
    transaction begun but not ended in the file raises, naming its id and the LSN of its last event.
    Without metadata every event stands alone."""
    whole = [
        marker("BEGIN", "571:100"),
        deb("c", 100, 1, "571:100"),
        deb("c", 101, 2, "571:100", kafka=True),
        marker("END", "571:100", 2, wrap=True),
    ]
    s = F.parse_lines("debezium", whole, "d.json")
    assert not s.bad and len(s.changes) == 2
    cut = [marker("BEGIN", "572:200"), deb("c", 200, 3, "572:200"), deb("u", 201, 3, "572:200")]
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("debezium", whole + cut, "d.json")
    # Debezium PostgreSQL's id is "<txId>:<LSN>": the transaction is its txId part
    assert (e.value.file, e.value.txid, e.value.position, e.value.line) == ("d.json", "572", 201, 5)
    assert "END" in str(e.value)
    # BEGIN, events and END carry different LSNs in their ids (Debezium 3.6): one transaction
    real = [
        marker("BEGIN", "573:300"),
        deb("c", 300, 4, "573:300"),
        deb("c", 301, 5, "573:301"),
        marker("END", "573:305", 2),
    ]
    assert len(F.parse_lines("debezium", real, "d.json").changes) == 2
    # no metadata: each event is its own unit, nothing to wait for
    assert len(F.parse_lines("debezium", [deb("c", 1, 1, "9:9")], "d").changes) == 1


def gg(op, pos, id_, txind=None, xid=None):
    rec = {
        "table": "S.T",
        "op_type": op,
        "op_ts": "2024-01-01 00:00:01",
        "pos": pos,
        "primary_keys": ["ID"],
        "after": {"ID": id_},
        "before": {"ID": id_},
    }
    if txind is not None:
        rec["txind"] = txind
    if xid is not None:
        rec["xid"] = xid
    return json.dumps(rec)


def test_goldengate_transaction_indicator_without_end_is_refused():
    """GoldenGate: with the txind metacolumn (B/M/E/W), a transaction whose end record is missing at
    the end of the file raises with its xid and pos; a file starting in the middle of a transaction
    raises too; records without txind stand alone."""
    whole = [
        gg("I", "01", 1, "B", "x1"),
        gg("I", "02", 2, "M", "x1"),
        gg("U", "03", 2, "E", "x1"),
        gg("I", "04", 3, "W", "x2"),
    ]
    assert len(F.parse_lines("goldengate", whole, "g").changes) == 4
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines(
            "goldengate",
            whole + [gg("I", "05", 4, "B", "x3"), gg("I", "06", 5, "M", "x3")],
            "g.json",
        )
    assert (e.value.txid, e.value.position, e.value.line) == ("x3", "06", 5)
    with pytest.raises(IncompleteTransactionError, match="starts inside a transaction"):
        F.parse_lines(
            "goldengate", [gg("I", "07", 6, "M", "x4"), gg("I", "08", 7, "E", "x4")], "g2.json"
        )
    assert len(F.parse_lines("goldengate", [gg("I", "09", 8)], "g").changes) == 1


def test_cut_last_change_line_without_transaction_records_stops_the_run():
    """A wal2json v2 stream without B/C records whose last I line is cut raises naming the file, the
    line and the last whole LSN (old code: a 'not JSON' bad record; under the 1 % threshold the
    batch committed with that change dropped). A non-JSON line that is not the last stays a bad
    record."""
    whole = [change("I", "0/110", 1), change("I", "0/120", 2)]
    cut = change("I", "0/130", 3)[:60]  # cut inside the record, before its lsn value
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("wal2json", whole + [cut, "", "  "], "w.jsonl")
    assert (e.value.file, e.value.txid, e.value.position, e.value.line) == (
        "w.jsonl",
        None,
        "0/120",
        3,
    )
    assert "w.jsonl:3" in str(e.value) and "cut change record" in str(e.value)
    # the cut text still holds its whole lsn: that is the position
    cut_late = change("I", "0/130", 3)[:-20]
    assert '"lsn": "0/130"' in cut_late
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("wal2json", whole + [cut_late], "w.jsonl")
    assert (e.value.position, e.value.line) == ("0/130", 3)
    # a bad line in the middle is a bad record, as before
    s = F.parse_lines("wal2json", [whole[0], "{garbage", whole[1]], "w.jsonl")
    assert len(s.changes) == 2 and [b.source for b in s.bad] == ["w.jsonl:2"]


def test_cut_last_line_inside_an_open_wal2json_transaction_names_the_transaction():
    """A cut last line inside a B .. (no C) transaction names that transaction (xid, its last whole
    LSN, the line of its BEGIN)."""
    lines = [j(action="B", xid=41, lsn="0/40"), change("I", "0/41", 1), change("I", "0/42", 2)[:30]]
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("wal2json", lines, "o.jsonl")
    assert (e.value.txid, e.value.position, e.value.line) == (41, "0/41", 1)
    assert "last line (3) is cut" in str(e.value)


def test_cut_last_line_in_debezium_and_goldengate_without_boundaries_stops_the_run():
    """Debezium without transaction metadata and GoldenGate without txind have no end markers, but a
    cut last line is still a cut file: it raises naming the file, the line and the position (old
    code: quarantined, batch committed without the change). A bad line before the last is a bad
    record."""
    d_whole = [deb("c", 100, 1), deb("c", 101, 2)]
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("debezium", d_whole + [deb("c", 102, 3)[:-2]], "d.json")
    assert (e.value.file, e.value.txid, e.value.line) == ("d.json", None, 3)
    assert e.value.position == "102"  # source.lsn of the cut record, whole
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("debezium", d_whole + ['{"schema": {"type": "str'], "d.json")
    assert e.value.position == "00000000000000000101" and e.value.line == 3
    s = F.parse_lines("debezium", [d_whole[0], "not json", d_whole[1]], "d.json")
    assert len(s.changes) == 2 and len(s.bad) == 1
    g_whole = [gg("I", "01", 1), gg("I", "02", 2)]
    with pytest.raises(IncompleteTransactionError) as e:
        F.parse_lines("goldengate", g_whole + [gg("I", "03", 3)[:-10]], "g.json")
    assert (e.value.line, e.value.position) == (3, "03")
    with pytest.raises(IncompleteTransactionError) as e:  # open txind transaction
        F.parse_lines(
            "goldengate", [gg("I", "04", 4, "B", "x9"), '{"table": "S.T", "op_'], "g.json"
        )
    assert (e.value.txid, e.value.line, e.value.position) == ("x9", 1, "04")
