"""Debezium writing Avro through a schema registry, end to end and for real: Apicurio Registry
2.4.2.Final (built from Maven Central by tools/apicurio/pom.xml, in-memory storage), a Kafka
Connect 4.3.0 worker whose key and value converter is Apicurio's AvroConverter
(tools/apicurio/converter/pom.xml), Debezium 3.6.1's PostgreSQL connector on a real PostgreSQL
table, the session's Kafka 4.3.0 broker. Each record's value is Apicurio's frame (magic byte 0,
8-byte global id) around Avro binary; the id's schema comes from the registry's REST API and the
datum decodes (tests/support/avro_binary.py) to Debezium's envelope with the row, once the
schemas it references (Debezium's ``Source`` record, an artifact of its own) are fetched too.
acidflow's Kafka source reads such topics (value format ``avro``, ``acidflow.sources.avro``):
Debezium's changes of a PostgreSQL table applied by ``drain`` leave an acid table equal to it."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import psycopg2
import pytest
from pyspark.sql import functions as F
from sqlalchemy.engine import make_url

from acidflow.cdc.apply import CdcOptions
from acidflow.cdc.kafka import KafkaOptions, drain
from acidflow.read.table import read_table
from tests.support.avro_binary import decode
from tests.support.kafka import debezium_postgres_config, require_kafka_spark_jars
from tests.support.postgres import create_database, drop_database, drop_replication_slot

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _require_apicurio():
    from devservers.apicurio import ApicurioArtifacts, ApicurioArtifactsMissing

    try:
        return ApicurioArtifacts.locate()
    except ApicurioArtifactsMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))


def _unescape(text: str) -> bytes:
    """Kafka's ``Bytes.toString`` back to bytes: printable ASCII as is, anything else (and the
    backslash) as ``\\xNN``."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text.startswith("\\x", i):
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        else:
            out.append(ord(text[i]))
            i += 1
    return bytes(out)


def consume_bytes(kafka, topic: str, *, max_messages: int, timeout_s: float = 60.0):
    """``(key, value)`` bytes of ``topic``'s records from the beginning (``None`` for null),
    with Kafka's console consumer and BytesDeserializer (binary-safe: its output escapes)."""
    null, sep = "<acidflow:null>", "<acidflow:sep>"
    cmd = [
        "java",
        "-Xmx256m",
        f"-Dlog4j2.configurationFile={kafka.workdir / 'log4j2.properties'}",
        "-cp",
        kafka.artifacts.classpath(),
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        kafka.bootstrap_servers,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        str(max_messages),
        "--timeout-ms",
        str(int(timeout_s * 1000)),
        "--formatter-property",
        "print.key=true",
        "--formatter-property",
        f"key.separator={sep}",
        "--formatter-property",
        f"null.literal={null}",
        "--formatter-property",
        "key.deserializer=org.apache.kafka.common.serialization.BytesDeserializer",
        "--formatter-property",
        "value.deserializer=org.apache.kafka.common.serialization.BytesDeserializer",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 60)
    lines = [line for line in done.stdout.splitlines() if sep in line]
    assert lines or done.returncode == 0, done.stderr
    out = []
    for line in lines:
        k, v = line.split(sep, 1)
        out.append((None if k == null else _unescape(k), None if v == null else _unescape(v)))
    return out


def _connect(url: str):
    u = make_url(url)
    return psycopg2.connect(
        host=u.host, port=u.port, user=u.username, dbname=u.database, password=u.password or ""
    )


@pytest.fixture
def apicurio(tmp_path: Path):
    from devservers.apicurio import start_apicurio

    arts = _require_apicurio()
    started = time.monotonic()
    reg = start_apicurio(tmp_path / "apicurio", artifacts=arts)
    reg.start_s = time.monotonic() - started  # type: ignore[attr-defined]
    try:
        yield reg
    finally:
        reg.stop()


def _avro_connect(kafka, apicurio, work_dir: Path):
    """A Kafka Connect worker on ``kafka`` whose key and value converter is Apicurio's
    AvroConverter writing to ``apicurio``."""
    from devservers.apicurio import avro_converter_properties
    from devservers.kafka import start_connect

    return start_connect(
        kafka,
        work_dir,
        extra_conf={
            "plugin.path": f"{kafka.artifacts.plugins_dir},{apicurio.artifacts.plugins_dir}",
            # Apicurio 2.4's converter jar has no ServiceLoader manifest: scan for it
            "plugin.discovery": "hybrid_warn",
            **avro_converter_properties(apicurio),
        },
    )


def test_debezium_avro_through_apicurio_decodes_to_the_row(
    kafka, apicurio, postgres_url, tmp_path: Path
):
    from devservers.apicurio import APICURIO_VERSION, split_wire

    info = apicurio.system_info()
    assert info["version"] == APICURIO_VERSION
    print(f"Apicurio Registry {info['version']} ready in {apicurio.start_s:.1f}s")

    suffix = uuid.uuid4().hex[:8]
    dbname, slot, prefix = f"avro_cdc_{suffix}", f"dbz_{suffix}", f"acf{suffix}"
    url = create_database(postgres_url, dbname)
    connect = _avro_connect(kafka, apicurio, tmp_path / "connect")
    conn = _connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE public.items (id int PRIMARY KEY, name text, qty int)")
            cur.execute("ALTER TABLE public.items REPLICA IDENTITY FULL")
            cur.execute("INSERT INTO public.items VALUES (1, 'apple', 1)")
        conn.commit()
        name = f"pg-{suffix}"
        connect.create_connector(
            name,
            debezium_postgres_config(
                url,
                topic_prefix=prefix,
                tables=["public.items"],
                slot_name=slot,
                snapshot_mode="initial",
            ),
        )
        try:
            connect.wait_running(name)
            # the snapshot read of row 1 first; then a streamed update
            first = consume_bytes(kafka, f"{prefix}.public.items", max_messages=1)
            with conn.cursor() as cur:
                cur.execute("UPDATE public.items SET name = 'apple2', qty = 10 WHERE id = 1")
            conn.commit()
            records = consume_bytes(kafka, f"{prefix}.public.items", max_messages=2)
        finally:
            connect.delete_connector(name)
    finally:
        conn.close()
        connect.stop()
        admin = _connect(postgres_url)
        admin.autocommit = True
        try:
            with admin.cursor() as cur:
                drop_replication_slot(cur, slot)
        finally:
            admin.close()
        drop_database(postgres_url, dbname)

    assert len(first) == 1 and len(records) == 2, records
    decoded = []
    for key, value in records:
        kid, kbody = split_wire(key)
        vid, vbody = split_wire(value)
        key_schema, value_schema = apicurio.schema(kid), apicurio.schema(vid)
        value_refs = apicurio.references(vid)
        assert key_schema["name"] == "Key" and value_schema["name"] == "Envelope"
        decoded.append((decode(key_schema, kbody), decode(value_schema, vbody, value_refs)))
    print("decoded:", decoded)
    (k0, v0), (k1, v1) = decoded
    assert k0 == {"id": 1} and k1 == {"id": 1}
    assert v0["op"] == "r" and v0["before"] is None
    assert v0["after"] == {"id": 1, "name": "apple", "qty": 1}
    assert v1["op"] == "u"
    assert v1["before"] == {"id": 1, "name": "apple", "qty": 1}
    assert v1["after"] == {"id": 1, "name": "apple2", "qty": 10}
    assert v1["source"]["schema"] == "public" and v1["source"]["table"] == "items"
    assert isinstance(v1["source"]["lsn"], int) and isinstance(v1["source"]["txId"], int)
    assert v1["transaction"]["id"]


def _wait_slot(conn, slot: str, timeout_s: float = 90.0) -> None:
    """Until Debezium streams from its replication slot (the snapshot is done)."""
    deadline = time.monotonic() + timeout_s
    with conn.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            row = cur.fetchone()
            conn.commit()
            if row and row[0]:
                return
            time.sleep(0.25)
    raise AssertionError(f"replication slot {slot} not active within {timeout_s}s")


def _pg_items(conn) -> dict[int, tuple]:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT id, name, price, born, to_char(updated, 'YYYY-MM-DD HH24:MI:SS.US'), data, qty"
            " FROM public.items"
        )
        rows = cur.fetchall()
    conn.commit()
    return {r[0]: (*r[:5], None if r[5] is None else bytes(r[5]), r[6]) for r in rows}


def _acid_items(spark, catalog) -> dict[int, tuple]:
    if not catalog.table_exists("default.items"):
        return {}
    df = read_table(spark, catalog, "default.items").select(
        "id",
        "name",
        "price",
        "born",
        F.date_format("updated", "yyyy-MM-dd HH:mm:ss.SSSSSS").alias("updated"),
        "data",
        "qty",
    )
    return {
        r["id"]: (*r[:5], None if r["data"] is None else bytes(r["data"]), r["qty"])
        for r in df.collect()
    }


def _drain_until_equal(spark, catalog, options, kopts, conn, timeout_s: float = 120.0) -> list:
    """Drain the source until the acid table equals PostgreSQL's; the committed batches."""
    reports: list = []
    deadline = time.monotonic() + timeout_s
    while True:
        reports += [r for r in drain(spark, catalog, options, kopts) if r.batch_id]
        if _acid_items(spark, catalog) == _pg_items(conn):
            return reports
        assert time.monotonic() < deadline, (_acid_items(spark, catalog), _pg_items(conn))
        time.sleep(1)


def test_debezium_avro_through_apicurio_applies_to_an_acid_table(
    spark, catalog, kafka, apicurio, postgres_url, tmp_path: Path
):
    """Debezium writes a PostgreSQL table's snapshot and changes (inserts, updates, a key
    change, deletes; decimals, dates, timestamps, bytea, NULLs; transaction metadata) as Avro
    through Apicurio; acidflow drains the topics with value format avro and its table ends
    equal to PostgreSQL's, with nothing quarantined."""
    require_kafka_spark_jars()
    suffix = uuid.uuid4().hex[:8]
    dbname, slot, prefix = f"avro_acid_{suffix}", f"dbz_{suffix}", f"acf{suffix}"
    url = create_database(postgres_url, dbname)
    connect = _avro_connect(kafka, apicurio, tmp_path / "connect")
    conn = _connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "CREATE TABLE public.items (id int PRIMARY KEY, name text, price numeric(10,2),"
                " born date, updated timestamp, data bytea, qty smallint)"
            )
            cur.execute("ALTER TABLE public.items REPLICA IDENTITY FULL")
            cur.execute(
                "INSERT INTO public.items VALUES (1, 'apple', 1.50, '2024-02-29',"
                " '2024-03-01 12:34:56.789012', '\\x00ff', 1)"
            )
        conn.commit()
        name = f"pg-{suffix}"
        connect.create_connector(
            name,
            debezium_postgres_config(
                url,
                topic_prefix=prefix,
                tables=["public.items"],
                slot_name=slot,
                snapshot_mode="initial",
            ),
        )
        try:
            connect.wait_running(name)
            _wait_slot(conn, slot)
            options = CdcOptions(fmt="debezium", auto_create=True, quarantine_threshold=0.5)
            kopts = KafkaOptions(
                source="avro",
                bootstrap_servers=kafka.bootstrap_servers,
                topics=[f"{prefix}.public.items"],
                transaction_topic=f"{prefix}.transaction",
                value_format="avro",
                schema_registry_url=apicurio.api_url,
            )
            with conn.cursor() as cur:  # one source transaction of three inserts
                cur.execute(
                    "INSERT INTO public.items VALUES"
                    " (2, 'pear', -12345678.99, '1969-12-31', '1960-01-01 00:00:00', NULL, -2),"
                    " (3, NULL, NULL, NULL, NULL, '\\x', 3),"
                    " (4, 'plum', 0.01, '2000-01-01', '2038-01-19 03:14:08.5', '\\xdeadbeef', 4)"
                )
            conn.commit()
            inserted = _drain_until_equal(spark, catalog, options, kopts, conn)
            with conn.cursor() as cur:  # updates and a delete in one transaction
                cur.execute(
                    "UPDATE public.items SET price = 2.25, updated = '2024-03-02 00:00:00.000001'"
                    " WHERE id = 1"
                )
                cur.execute("DELETE FROM public.items WHERE id = 2")
            conn.commit()
            with conn.cursor() as cur:  # a key change; values set to NULL
                cur.execute("UPDATE public.items SET id = 30 WHERE id = 3")
                cur.execute("UPDATE public.items SET name = NULL, data = NULL WHERE id = 4")
            conn.commit()
            changed = _drain_until_equal(spark, catalog, options, kopts, conn)
        finally:
            connect.delete_connector(name)
    finally:
        conn.close()
        connect.stop()
        admin = _connect(postgres_url)
        admin.autocommit = True
        try:
            with admin.cursor() as cur:
                drop_replication_slot(cur, slot)
        finally:
            admin.close()
        drop_database(postgres_url, dbname)

    assert set(_acid_items(spark, catalog)) == {1, 4, 30}
    reports = inserted + changed
    print("applied:", [(r.batch_id, r.tables) for r in reports])
    assert inserted and changed and all(r.status == "applied" for r in reports), reports
    assert sum(r.quarantined for r in reports) == 0
    stats = [s for r in changed for s in r.tables.values()]
    assert sum(s.get("rows_updated", 0) for s in stats) >= 2  # ids 1 and 4
    assert sum(s.get("rows_deleted", 0) for s in stats) >= 2  # ids 2 and 3 (now 30)
    schema = read_table(spark, catalog, "default.items").schema
    types = {f.name: f.dataType.simpleString() for f in schema.fields}
    assert types["price"] == "decimal(10,2)" and types["born"] == "date"
    assert types["updated"] == "timestamp_ntz" and types["data"] == "binary"
    assert types["qty"] == "smallint"
