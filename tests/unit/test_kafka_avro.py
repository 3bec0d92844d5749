"""Avro keys and values through a schema registry -> changes (acidflow.sources.avro with
acidflow.sources.kafka.decode_records): fastavro writes Apicurio-framed records of a
Debezium-like schema (the envelope's ``Source`` record a referenced artifact, as Apicurio's
converter registers it) and a small HTTP server answers Apicurio Registry 2.x's REST paths, so
the registry client's real HTTP code runs. Debezium writing through the real Apicurio:
tests/integration/test_apicurio.py."""

from __future__ import annotations

import base64
import io
import json
import socket
import threading
from collections import Counter
from datetime import date, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fastavro
import pytest

from acidflow.cdc.entry import _cdc_parser
from acidflow.cdc.kafka import KafkaOptions, kafka_options
from acidflow.sources.avro import (
    ApicurioRegistry,
    AvroDecoder,
    SchemaRegistryError,
    connect_schema,
    masked_url,
    registry_api_url,
    split_frame,
)
from acidflow.sources.kafka import KafkaRecord, decode_records
from acidflow.sources.records import RecordError
from tests.unit.test_cli_conventions import leaf_commands, options

T = "acf.public.items"
TX = "acf.transaction"
API = "/apis/registry/v2"

SOURCE = {
    "type": "record",
    "name": "Source",
    "namespace": "io.debezium.connector.postgresql",
    "fields": [
        {"name": "version", "type": "string"},
        {"name": "connector", "type": "string"},
        {"name": "db", "type": "string"},
        {"name": "ts_ms", "type": "long"},
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        {"name": "txId", "type": ["null", "long"], "default": None},
        {"name": "lsn", "type": ["null", "long"], "default": None},
    ],
    "connect.name": "io.debezium.connector.postgresql.Source",
}
DECIMAL = {
    "type": "bytes",
    "scale": 2,
    "precision": 10,
    "connect.version": 1,
    "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
    "connect.name": "org.apache.kafka.connect.data.Decimal",
    "logicalType": "decimal",
}
VALUE = {
    "type": "record",
    "name": "Value",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "small", "type": {"type": "int", "connect.type": "int16"}},
        {"name": "price", "type": ["null", DECIMAL], "default": None},
        {
            "name": "born",
            "type": [
                "null",
                {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"},
            ],
            "default": None,
        },
        {
            "name": "updated",
            "type": [
                "null",
                {
                    "type": "long",
                    "connect.version": 1,
                    "connect.name": "io.debezium.time.MicroTimestamp",
                },
            ],
            "default": None,
        },
        {"name": "blob", "type": ["null", "bytes"], "default": None},
    ],
    "connect.name": "acf.public.items.Value",
}
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "acf.public.items",
    "fields": [
        {"name": "before", "type": ["null", VALUE], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": "io.debezium.connector.postgresql.Source"},
        {
            "name": "transaction",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "block",
                    "namespace": "event",
                    "fields": [
                        {"name": "id", "type": "string"},
                        {"name": "total_order", "type": "long"},
                        {"name": "data_collection_order", "type": "long"},
                    ],
                    "connect.name": "event.block",
                },
            ],
            "default": None,
        },
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
    "connect.version": 2,
    "connect.name": "acf.public.items.Envelope",
}
KEY = {
    "type": "record",
    "name": "Key",
    "namespace": "acf.public.items",
    "fields": [{"name": "id", "type": "int"}],
    "connect.name": "acf.public.items.Key",
}
TXN = {
    "type": "record",
    "name": "TransactionMetadataValue",
    "namespace": "io.debezium.connector.common",
    "fields": [
        {"name": "status", "type": "string"},
        {"name": "id", "type": "string"},
        {"name": "event_count", "type": ["null", "long"], "default": None},
        {
            "name": "data_collections",
            "type": [
                "null",
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "ConnectDefault",
                        "namespace": "io.confluent.connect.avro",
                        "fields": [
                            {"name": "data_collection", "type": "string"},
                            {"name": "event_count", "type": "long"},
                        ],
                    },
                },
            ],
            "default": None,
        },
        {"name": "ts_ms", "type": "long"},
    ],
    "connect.name": "io.debezium.connector.common.TransactionMetadataValue",
}
VSD = {
    "type": "record",
    "name": "VariableScaleDecimal",
    "namespace": "io.debezium.data",
    "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
    "connect.doc": "Variable scaled decimal",
    "connect.version": 1,
    "connect.name": "io.debezium.data.VariableScaleDecimal",
}
AMOUNTS = {  # Debezium's envelope of a table with a numeric column without precision
    **ENVELOPE,
    "namespace": "acf.public.amounts",
    "connect.name": "acf.public.amounts.Envelope",
    "fields": [
        {
            "name": "before",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Value",
                    "fields": [
                        {"name": "id", "type": "int"},
                        {"name": "amount", "type": ["null", VSD], "default": None},
                    ],
                    "connect.name": "acf.public.amounts.Value",
                },
            ],
            "default": None,
        },
        *ENVELOPE["fields"][1:],
    ],
}
KEY_ID, ENV_ID, SRC_ID, TXN_ID, AMOUNTS_ID = 1, 2, 3, 4, 5
REF = {"groupId": None, "artifactId": "acf.Source", "version": "1", "name": SOURCE["name"]}


class _Apicurio(BaseHTTPRequestHandler):
    """Apicurio Registry 2.x's read paths over a dict (``server.paths``); counts requests."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.hits[self.path] += 1  # type: ignore[attr-defined]
        body = self.server.paths.get(self.path)  # type: ignore[attr-defined]
        if body is None:
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b'{"error_code": 404, "message": "No artifact with ID"}')
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def registry():
    """An HTTP server answering Apicurio's REST paths for the schemas above:
    ``(server, url)``, the url being the converters' ``apicurio.registry.url``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Apicurio)
    server.hits = Counter()  # type: ignore[attr-defined]
    art = f"{API}/groups/default/artifacts/acf.Source/versions/1"
    server.paths = {  # type: ignore[attr-defined]
        f"{API}/ids/globalIds/{KEY_ID}": KEY,
        f"{API}/ids/globalIds/{KEY_ID}/references": [],
        f"{API}/ids/globalIds/{ENV_ID}": ENVELOPE,
        f"{API}/ids/globalIds/{ENV_ID}/references": [REF],
        f"{API}/ids/globalIds/{SRC_ID}": SOURCE,
        f"{API}/ids/globalIds/{TXN_ID}": TXN,
        f"{API}/ids/globalIds/{TXN_ID}/references": [],
        f"{API}/ids/globalIds/{AMOUNTS_ID}": AMOUNTS,
        f"{API}/ids/globalIds/{AMOUNTS_ID}/references": [REF],
        art: SOURCE,
        f"{art}/references": [],
    }
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}{API}"
    finally:
        server.shutdown()
        server.server_close()


_PARSED: dict = {}


def _framed(global_id: int, schema: dict, datum, *, id_bytes: int = 8) -> bytes:
    """What Apicurio's converter writes: magic byte 0, the global id, the Avro datum."""
    if id(schema) not in _PARSED:
        named: dict = {}
        if schema is ENVELOPE or schema is AMOUNTS:
            fastavro.parse_schema(SOURCE, named)
        _PARSED[id(schema)] = fastavro.parse_schema(schema, named)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _PARSED[id(schema)], datum)
    return b"\0" + global_id.to_bytes(id_bytes, "big") + buf.getvalue()


def _row(i: int, **kw) -> dict:
    row = {
        "id": i,
        "name": f"n{i}",
        "small": -3,
        "price": Decimal("12.34"),
        "born": 19000,  # days since 1970-01-01
        "updated": 1_700_000_000_123_456,  # microseconds since the epoch
        "blob": b"\x00\xff",
    }
    return {**row, **kw}


def _event(op: str, lsn: int, before=None, after=None, txid: int | None = None) -> dict:
    return {
        "before": before,
        "after": after,
        "source": {
            "version": "3.6.1.Final",
            "connector": "postgresql",
            "db": "src",
            "ts_ms": 1,
            "schema": "public",
            "table": "items",
            "txId": txid,
            "lsn": lsn,
        },
        "transaction": None
        if txid is None
        else {"id": f"{txid}:{lsn}", "total_order": 1, "data_collection_order": 1},
        "op": op,
        "ts_ms": 2,
    }


def _rec(offset: int, value: bytes | None, key_id: int | None = None, topic: str = T):
    key = None if key_id is None else _framed(KEY_ID, KEY, {"id": key_id})
    return KafkaRecord(topic, 0, offset, key, value)


def _decoder(url: str) -> AvroDecoder:
    return AvroDecoder(ApicurioRegistry(url))


def test_debezium_avro_records_decode_like_json_ones(registry):
    server, url = registry
    recs = [
        _rec(0, _framed(ENV_ID, ENVELOPE, _event("r", 10, after=_row(1))), 1),
        _rec(1, _framed(ENV_ID, ENVELOPE, _event("c", 11, after=_row(2, name=None))), 2),
        _rec(2, _framed(ENV_ID, ENVELOPE, _event("u", 12, _row(1), _row(1, price=None))), 1),
        _rec(3, _framed(ENV_ID, ENVELOPE, _event("d", 13, before=_row(2))), 2),  # before only
        _rec(4, None, 2),  # the tombstone after the delete
    ]
    b = decode_records("debezium", recs, end_offsets={T: {"0": 5}}, decoder=_decoder(url))
    assert not b.stream.bad
    assert [(c.op, c.table, c.position) for c in b.stream.changes] == [
        ("I", "public.items", f"{10:020d}"),
        ("I", "public.items", f"{11:020d}"),
        ("U", "public.items", f"{12:020d}"),
        ("D", "public.items", f"{13:020d}"),
    ]
    first = b.stream.changes[0].after
    assert first == {
        "id": 1,
        "name": "n1",
        "small": -3,
        "price": Decimal("12.34"),
        "born": date(2022, 1, 8),
        "updated": datetime(2023, 11, 14, 22, 13, 20, 123456),
        "blob": b"\x00\xff",
    }
    assert b.stream.changes[1].after["name"] is None
    assert b.stream.changes[2].before == first
    assert b.stream.changes[2].after["price"] is None
    assert b.stream.changes[3].after is None and b.stream.changes[3].before["id"] == 2
    table = b.stream.tables["public.items"]
    assert table.typed and table.primary_key == ["id"]
    assert table.columns == {
        "id": "int",
        "name": "string",
        "small": "smallint",
        "price": "decimal(10,2)",
        "born": "date",
        "updated": "timestamp",
        "blob": "binary",
    }


def test_the_envelope_is_what_json_converter_writes(registry):
    _, url = registry
    value = _framed(ENV_ID, ENVELOPE, _event("c", 11, after=_row(2)))
    env = _decoder(url).decode(value)
    after = env["payload"]["after"]
    assert after["price"] == base64.b64encode((1234).to_bytes(2, "big")).decode()
    assert after["blob"] == "AP8=" and after["born"] == 19000
    schema = env["schema"]
    assert schema["type"] == "struct" and schema["name"] == "acf.public.items.Envelope"
    assert schema["version"] == 2 and schema["optional"] is False
    fields = {f["field"]: f for f in schema["fields"]}
    # `after` names the record `before` defines: the whole struct again, as JsonConverter has it
    assert fields["after"] == fields["before"] | {"field": "after"}
    assert fields["after"]["optional"] is True
    cols = {f["field"]: f for f in fields["after"]["fields"]}
    assert cols["id"] == {"type": "int32", "optional": False, "field": "id"}
    assert cols["small"]["type"] == "int16"
    assert cols["price"] == {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "field": "price",
    }
    assert cols["updated"]["name"] == "io.debezium.time.MicroTimestamp"
    assert cols["updated"]["type"] == "int64"
    src = fields["source"]  # from the referenced artifact
    assert src["name"] == "io.debezium.connector.postgresql.Source" and not src["optional"]
    assert {f["field"]: f["type"] for f in src["fields"]}["lsn"] == "int64"
    assert fields["transaction"]["name"] == "event.block"


def test_plain_avro_logical_types_name_connect_ones():
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {
                "name": "d",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1},
            },
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}},
            {"name": "m", "type": {"type": "map", "values": "double"}},
            {"name": "a", "type": {"type": "array", "items": "E"}},
        ],
    }
    c = {f["field"]: f for f in connect_schema(schema)["fields"]}
    assert c["d"]["name"] == "org.apache.kafka.connect.data.Decimal"
    assert c["d"]["parameters"] == {"scale": "1", "connect.decimal.precision": "5"}
    assert c["day"]["name"] == "org.apache.kafka.connect.data.Date"
    assert c["ms"]["name"] == "org.apache.kafka.connect.data.Timestamp"
    assert c["us"]["name"] == "io.debezium.time.MicroTimestamp"
    assert c["e"]["type"] == "string"
    assert c["m"]["values"] == {"type": "float64", "optional": False}
    assert c["a"]["items"] == {"type": "string", "optional": False}
    with pytest.raises(RecordError, match="union"):
        connect_schema({**schema, "fields": [{"name": "u", "type": ["null", "int", "string"]}]})
    with pytest.raises(RecordError, match="not defined"):
        connect_schema({**schema, "fields": [{"name": "x", "type": "io.debezium.Missing"}]})


def test_bad_frames_are_quarantined_with_topic_partition_offset(registry):
    _, url = registry
    good = _framed(ENV_ID, ENVELOPE, _event("c", 11, after=_row(1)))
    recs = [
        _rec(0, json.dumps(_event("c", 10, after={"id": 9})).encode()),  # JSON, not Avro
        _rec(1, b"\0" + (99).to_bytes(8, "big") + good[9:]),  # a global id nobody registered
        _rec(2, good[:-3]),  # cut short
        _rec(3, good + b"\x02\x04"),  # bytes left over
        _rec(4, good, 1),
    ]
    b = decode_records("debezium", recs, end_offsets={T: {"0": 5}}, decoder=_decoder(url))
    assert [c.source for c in b.stream.changes] == [f"{T}/0:4 lsn 11"]
    reasons = [bad.reason for bad in b.stream.bad]
    assert [bad.source for bad in b.stream.bad] == [f"{T}/0:{i}" for i in range(4)]
    for i, reason in enumerate(reasons):
        assert reason.startswith(f"Kafka topic {T} partition 0 offset {i}: "), reason
    assert "magic byte 0" in reasons[0]
    assert f"global id 99 is not in schema registry {url}" in reasons[1]
    assert "does not match its writer schema" in reasons[2]
    assert "byte(s) left after the Avro datum" in reasons[3]
    raw = b.stream.bad[2].raw
    assert raw.startswith("base64:") and base64.b64decode(raw[7:]) == good[:-3]


def test_confluent_4_byte_frames_decode_too(registry):
    _, url = registry
    value = _framed(ENV_ID, ENVELOPE, _event("c", 11, after=_row(1)), id_bytes=4)
    assert split_frame(value) == (ENV_ID, 5)
    assert split_frame(_framed(ENV_ID, ENVELOPE, _event("c", 11, after=_row(1)))) == (ENV_ID, 9)
    b = decode_records(
        "debezium", [_rec(0, value, 1)], end_offsets={T: {"0": 1}}, decoder=_decoder(url)
    )
    assert not b.stream.bad and b.stream.changes[0].after["price"] == Decimal("12.34")


def test_each_global_id_is_fetched_once(registry):
    server, url = registry
    dec = _decoder(url)
    for n in range(2):  # two batches of one stream
        recs = [
            _rec(i, _framed(ENV_ID, ENVELOPE, _event("c", i, after=_row(i))), i) for i in range(3)
        ]
        decode_records("debezium", recs, end_offsets={T: {"0": 3}}, decoder=dec)
    assert server.hits[f"{API}/ids/globalIds/{ENV_ID}"] == 1
    assert server.hits[f"{API}/ids/globalIds/{KEY_ID}"] == 1
    assert server.hits[f"{API}/groups/default/artifacts/acf.Source/versions/1"] == 1


def test_an_id_the_registry_does_not_know_yet_is_asked_again(registry):
    """A 404 quarantines the record but is not kept: once the registry knows the id (a replica
    caught up, a restart), the next batch decodes it."""
    server, url = registry
    dec = _decoder(url)
    new_id = 4242
    rec = _rec(0, _framed(new_id, ENVELOPE, _event("c", 1, after=_row(1))), 1)
    first = decode_records("debezium", [rec], end_offsets={T: {"0": 1}}, decoder=dec)
    assert len(first.stream.bad) == 1 and "global id 4242" in first.stream.bad[0].reason
    server.paths[f"{API}/ids/globalIds/{new_id}"] = ENVELOPE
    server.paths[f"{API}/ids/globalIds/{new_id}/references"] = [REF]
    again = decode_records("debezium", [rec], end_offsets={T: {"0": 1}}, decoder=dec)
    assert not again.stream.bad and len(again.stream.changes) == 1
    assert server.hits[f"{API}/ids/globalIds/{new_id}"] == 2


def test_registry_messages_mask_a_password_in_the_url():
    assert masked_url("http://u:s3cret@h:8080/apis/registry/v2") == (
        "http://u:***@h:8080/apis/registry/v2"
    )
    assert masked_url("http://h:8080/apis/registry/v2") == "http://h:8080/apis/registry/v2"
    reg = ApicurioRegistry("http://u:s3cret@127.0.0.1:9/apis/registry/v2", timeout=0.5)
    with pytest.raises(SchemaRegistryError) as info:
        reg.writer_schema(1)
    assert "s3cret" not in str(info.value) and "u:***@127.0.0.1:9" in str(info.value)


def test_avro_transaction_topic_keeps_whole_transactions(registry):
    _, url = registry

    def marker(status: str, count: int | None) -> bytes:
        cols = (
            None if count is None else [{"data_collection": "public.items", "event_count": count}]
        )
        return _framed(
            TXN_ID,
            TXN,
            {
                "status": status,
                "id": "7:100",
                "event_count": count,
                "data_collections": cols,
                "ts_ms": 1,
            },
        )

    recs = [
        _rec(0, _framed(ENV_ID, ENVELOPE, _event("c", 100, after=_row(1), txid=7)), 1),
        _rec(1, _framed(ENV_ID, ENVELOPE, _event("c", 101, after=_row(2), txid=7)), 2),
        _rec(0, marker("BEGIN", None), topic=TX),
        _rec(1, marker("END", 2), topic=TX),
    ]
    dec = _decoder(url)
    whole = decode_records(
        "debezium", recs, end_offsets={T: {"0": 2}, TX: {"0": 2}}, transaction_topic=TX, decoder=dec
    )
    assert whole.transactions == 1 and len(whole.stream.changes) == 2 and not whole.stream.bad
    # the END not read yet: the transaction waits, its records stay for the next batch
    part = decode_records(
        "debezium",
        recs[:3],
        end_offsets={T: {"0": 2}, TX: {"0": 1}},
        transaction_topic=TX,
        decoder=dec,
    )
    assert part.waiting == ["7"] and not part.stream.changes
    assert part.end_offsets == {T: {"0": 0}, TX: {"0": 0}}


def test_an_unreachable_registry_is_an_error_not_a_bad_record():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}{API}"
    value = _framed(ENV_ID, ENVELOPE, _event("c", 11, after=_row(1)))
    with pytest.raises(SchemaRegistryError) as exc:
        decode_records(
            "debezium", [_rec(7, value)], end_offsets={T: {"0": 8}}, decoder=_decoder(url)
        )
    assert f"schema registry {url} cannot be reached" in str(exc.value)
    assert f"topic {T} partition 0 offset 7" in str(exc.value)
    assert isinstance(exc.value, ConnectionError)


def test_avro_settings():
    assert registry_api_url("http://h:8080/") == f"http://h:8080{API}"
    assert registry_api_url(f"http://h:8080{API}/") == f"http://h:8080{API}"
    k = kafka_options(
        "s", "b:9092", topics="t", value_format="avro", schema_registry_url="http://h"
    )
    assert (k.value_format, k.schema_registry_url) == ("avro", "http://h")
    assert kafka_options("s", "b:9092", topics="t").value_format == "json"
    with pytest.raises(ValueError, match="schema registry URL"):
        KafkaOptions("s", "b:9092", topics=["t"], value_format="avro")
    with pytest.raises(ValueError, match="schema registry URL"):
        KafkaOptions("s", "b:9092", topics=["t"], schema_registry_url="http://h")
    with pytest.raises(ValueError, match="value format"):
        KafkaOptions("s", "b:9092", topics=["t"], value_format="protobuf")
    with pytest.raises(ValueError, match="debezium only"):
        decode_records("goldengate", [], end_offsets={}, decoder=_decoder("http://h"))


def test_the_commands_take_the_value_format_and_the_registry():
    a = _cdc_parser().parse_args(
        ["--kafka-value-format", "avro", "--schema-registry-url", f"http://h:8080{API}"]
    )
    assert (a.kafka_value_format, a.schema_registry_url) == ("avro", f"http://h:8080{API}")
    assert _cdc_parser().parse_args([]).kafka_value_format == "json"
    with pytest.raises(SystemExit):
        _cdc_parser().parse_args(["--kafka-value-format", "protobuf"])
    stream = options(leaf_commands()["cdc stream"])
    assert stream["--value-format"].default == "json"
    assert stream["--schema-registry-url"].default == ""


def test_variable_scale_decimals_keep_their_digits(registry):
    _, url = registry
    amount = {"scale": 3, "value": (-123456).to_bytes(3, "big", signed=True)}
    ev = _event("c", 11, after={"id": 1, "amount": amount})
    ev["source"]["table"] = "amounts"
    recs = [
        _rec(0, _framed(AMOUNTS_ID, AMOUNTS, ev), 1, topic="acf.public.amounts"),
        _rec(
            1,
            _framed(AMOUNTS_ID, AMOUNTS, {**ev, "after": {"id": 2, "amount": None}}),
            2,
            topic="acf.public.amounts",
        ),
    ]
    b = decode_records(
        "debezium", recs, end_offsets={"acf.public.amounts": {"0": 2}}, decoder=_decoder(url)
    )
    assert not b.stream.bad
    assert [c.after for c in b.stream.changes] == [
        {"id": 1, "amount": "-123.456"},
        {"id": 2, "amount": None},
    ]
    assert b.stream.tables["public.amounts"].columns == {"id": "int", "amount": "string"}
