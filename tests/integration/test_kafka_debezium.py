"""The CDC stack acidflow will read from runs here, for real: a PostgreSQL 15 table, Debezium
3.6.1's PostgreSQL connector (pgoutput, transaction metadata on) in Kafka Connect 4.3.0, a Kafka
4.3.0 broker (KRaft), JSON envelopes with schemas. Two source transactions (three inserts; an
update and a delete) come out as Debezium change events with op c/u/d, before/after images,
``source.lsn`` / ``source.txId``, a tombstone after the delete, and BEGIN/END events with the
event counts on ``<prefix>.transaction``."""

from __future__ import annotations

import time
import uuid

import psycopg2
import pytest
from sqlalchemy.engine import make_url

from tests.support.kafka import debezium_postgres_config, json_records
from tests.support.postgres import create_database, drop_database, drop_replication_slot

pytestmark = pytest.mark.postgres


def _connect(url: str):
    u = make_url(url)
    return psycopg2.connect(
        host=u.host, port=u.port, user=u.username, dbname=u.database, password=u.password or ""
    )


def _wait_slot(conn, slot: str, timeout_s: float = 60.0) -> None:
    """Until Debezium's replication slot exists (with ``snapshot.mode=no_data`` the change
    stream starts at the slot's creation: rows written before it are not sent)."""
    deadline = time.monotonic() + timeout_s
    with conn.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            row = cur.fetchone()
            if row and row[0]:
                return
            time.sleep(0.25)
    raise AssertionError(f"replication slot {slot} not active within {timeout_s}s")


def _tx(conn, statements: list[str]) -> int:
    """Run ``statements`` in one transaction; returns its transaction id (``txid_current``,
    what Debezium reports as ``source.txId``)."""
    with conn.cursor() as cur:
        cur.execute("SELECT txid_current()")
        (txid,) = cur.fetchone()
        for sql in statements:
            cur.execute(sql)
    conn.commit()
    return int(txid)


@pytest.fixture
def cdc_source(postgres_url):
    """A fresh database on the session's PostgreSQL server and the names of a Debezium
    connector on it: ``(url, dbname, slot, suffix)``. Afterwards Debezium's replication slot
    (which it leaves behind, as in production: ``slot.drop.on.stop`` is off) and the database
    are dropped."""
    suffix = uuid.uuid4().hex[:8]
    dbname = f"kafka_cdc_{suffix}"
    slot = f"dbz_{suffix}"
    url = create_database(postgres_url, dbname)
    yield url, dbname, slot, suffix
    admin = _connect(postgres_url)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            drop_replication_slot(cur, slot)
    finally:
        admin.close()
    drop_database(postgres_url, dbname)


def test_debezium_postgres_envelopes_and_transaction_events(kafka, kafka_connect, cdc_source):
    url, dbname, slot, suffix = cdc_source
    prefix = f"acf{suffix}"
    conn = _connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE public.items (id int PRIMARY KEY, name text, qty int)")
            # full before-images for updates and deletes (the default identity gives only the key)
            cur.execute("ALTER TABLE public.items REPLICA IDENTITY FULL")
        conn.commit()
        assert "io.debezium.connector.postgresql.PostgresConnector" in (
            kafka_connect.connector_plugins()
        )
        name = f"pg-{suffix}"
        kafka_connect.create_connector(
            name,
            debezium_postgres_config(
                url, topic_prefix=prefix, tables=["public.items"], slot_name=slot
            ),
        )
        try:
            kafka_connect.wait_running(name)
            _wait_slot(conn, slot)
            tx1 = _tx(
                conn,
                [
                    "INSERT INTO public.items VALUES (1, 'apple', 1)",
                    "INSERT INTO public.items VALUES (2, 'pear', 2)",
                    "INSERT INTO public.items VALUES (3, 'plum', 3)",
                ],
            )
            tx2 = _tx(
                conn,
                [
                    "UPDATE public.items SET name = 'apple2', qty = 10 WHERE id = 1",
                    "DELETE FROM public.items WHERE id = 2",
                ],
            )
            data = json_records(kafka.consume(f"{prefix}.public.items", max_messages=6))
            txs = json_records(kafka.consume(f"{prefix}.transaction", max_messages=4))
        finally:
            kafka_connect.delete_connector(name)
    finally:
        conn.close()

    assert len(data) == 6, data
    keys = [k["payload"] if k else None for k, _ in data]
    assert keys == [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 1}, {"id": 2}, {"id": 2}]
    assert data[0][0]["schema"]["name"] == f"{prefix}.public.items.Key"
    # the tombstone after the delete: same key, null value
    assert data[5][1] is None
    envs = [v["payload"] for _, v in data[:5]]
    assert data[0][1]["schema"]["name"] == f"{prefix}.public.items.Envelope"
    assert [e["op"] for e in envs] == ["c", "c", "c", "u", "d"]
    assert [e["before"] for e in envs] == [
        None,
        None,
        None,
        {"id": 1, "name": "apple", "qty": 1},
        {"id": 2, "name": "pear", "qty": 2},
    ]
    assert [e["after"] for e in envs] == [
        {"id": 1, "name": "apple", "qty": 1},
        {"id": 2, "name": "pear", "qty": 2},
        {"id": 3, "name": "plum", "qty": 3},
        {"id": 1, "name": "apple2", "qty": 10},
        None,
    ]
    assert [e["source"]["txId"] for e in envs] == [tx1, tx1, tx1, tx2, tx2]
    assert all(e["source"]["table"] == "items" and e["source"]["db"] == dbname for e in envs)
    lsns = [e["source"]["lsn"] for e in envs]
    assert lsns == sorted(lsns) and len(set(lsns)) == 5, lsns
    assert [e["transaction"]["total_order"] for e in envs] == [1, 2, 3, 1, 2]

    assert len(txs) == 4, txs
    events = [v["payload"] for _, v in txs]
    assert [e["status"] for e in events] == ["BEGIN", "END", "BEGIN", "END"]
    # Debezium 3.6's PostgreSQL transaction id is "<txId>:<LSN>" with the LSN of the event at
    # hand: BEGIN carries the first change's, each change its own, END a later one. What stays
    # the same through one source transaction is the txId part (= source.txId).
    assert [e["id"].split(":")[0] for e in events] == [str(tx1)] * 2 + [str(tx2)] * 2
    assert [e["transaction"]["id"] for e in envs] == [
        f"{e['source']['txId']}:{e['source']['lsn']}" for e in envs
    ]
    assert events[0]["id"] == envs[0]["transaction"]["id"]
    assert events[2]["id"] == envs[3]["transaction"]["id"]
    assert events[0]["event_count"] is None and events[2]["event_count"] is None
    assert [events[1]["event_count"], events[3]["event_count"]] == [3, 2]
    assert events[1]["data_collections"] == [{"data_collection": "public.items", "event_count": 3}]
    assert events[3]["data_collections"] == [{"data_collection": "public.items", "event_count": 2}]
