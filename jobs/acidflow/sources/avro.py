"""Avro keys and values written through a schema registry -> the JSON values Debezium's record
decoder reads (pure decoding; :class:`ApicurioRegistry` does the HTTP I/O).

Kafka Connect's Avro converter of Apicurio Registry 2.x
(``io.apicurio.registry.utils.converter.AvroConverter``) writes each record key and value as
Apicurio's frame around the Avro binary encoding of the datum: byte 0 is the magic byte ``0``,
bytes 1..8 the *global id* of the writer schema in the registry (big-endian, Apicurio's default
``DefaultIdHandler``, ids in the payload, not in headers). With
``apicurio.registry.id-handler=io.apicurio.registry.serde.Legacy4ByteIdHandler`` (Confluent's
wire format) the id takes 4 bytes: :func:`split_frame` tells the two apart by bytes 1..4, which
are all zero in an 8-byte frame (global ids below 2**32) and never in a 4-byte one (ids start
at 1). The id is read as a global id either way (Apicurio's default
``apicurio.registry.use-id``); content ids and ids in Kafka headers
(``apicurio.registry.headers.enabled``) are not supported.

The writer schema is fetched from Apicurio's REST API v2 by global id
(``GET /ids/globalIds/{id}``), with the artifacts it names by reference, recursively
(``GET /ids/globalIds/{id}/references``, then each referenced artifact version and its own
references): Debezium's envelope names its ``Source`` record, registered as an artifact of its
own. Global ids never change content, so each id's schema is fetched once per process
(:func:`avro_decoder` keeps one :class:`AvroDecoder` per registry URL).

A datum becomes exactly what Kafka Connect's JsonConverter with schemas would have written for
the same Connect record, ``{"schema": <Connect schema>, "payload": <value>}``
(:func:`connect_schema`, :func:`connect_payload`), so Debezium's one record decoder
(:func:`acidflow.sources.debezium.debezium_record`) applies its rules to both converters:

* the Connect schema comes back from the Avro schema as Confluent's and Apicurio's ``AvroData``
  maps it: records -> ``struct`` (fields in order), ``["null", T]`` -> ``T`` optional, int
  -> ``int32`` (``int8``/``int16`` from ``connect.type``), long -> ``int64``, float ->
  ``float32``, double -> ``float64``, enum -> ``string``, fixed -> ``bytes``, array, map; the
  ``connect.name``, ``connect.version``, ``connect.parameters`` and ``connect.doc`` properties
  the converter writes become the Connect schema's ``name``, ``version``, ``parameters`` and
  ``doc`` (``io.debezium.time.MicroTimestamp``, ``org.apache.kafka.connect.data.Decimal`` with
  its ``scale``, ``io.debezium.data.VariableScaleDecimal`` ...); an Avro logical type without
  ``connect.name`` names its Connect logical type (``decimal`` -> Decimal with ``scale`` and
  ``connect.decimal.precision``, ``date`` -> Date, ``time-millis`` -> Time,
  ``timestamp-millis`` -> Timestamp, ``time-micros`` / ``timestamp-micros`` -> Debezium's
  MicroTime / MicroTimestamp);
* the payload holds the datum's underlying values, as JsonConverter writes them: logical types
  are not applied (a date stays days since the epoch, a timestamp its epoch units), ``bytes``
  and ``fixed`` (decimals' unscaled two's-complement bytes included) become base64 text.

A union of more than one non-null branch (Confluent's ``io.confluent.connect.avro.Union``) and a
recursive record have no Connect schema here: such a record does not decode.

Errors: a record that does not decode (no frame, a global id the registry does not know, a
schema that is not Avro, a datum that does not match its schema) raises
:class:`~acidflow.sources.records.RecordError` (the Kafka source quarantines it with its topic,
partition and offset); a registry that cannot be reached, or that refuses the request (HTTP
401/403, 5xx), raises :class:`SchemaRegistryError`: no record can be judged without it.
"""

from __future__ import annotations

import base64
import functools
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlsplit, urlunsplit

import fastavro
import requests

from acidflow.errors import AcidflowError
from acidflow.sources.records import RecordError

__all__ = [
    "API_PATH",
    "ApicurioRegistry",
    "AvroDecoder",
    "FramedRecord",
    "SchemaRegistryError",
    "UnknownSchemaError",
    "WriterSchema",
    "avro_decoder",
    "connect_payload",
    "connect_schema",
    "masked_url",
    "registry_api_url",
    "split_frame",
    "writer_schema",
]

#: the path of Apicurio Registry's REST API v2 (its converters' ``apicurio.registry.url`` ends so)
API_PATH = "/apis/registry/v2"
_MAGIC = 0
_PRIMITIVES = {
    "int": "int32",
    "long": "int64",
    "float": "float32",
    "double": "float64",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
#: Avro logical type -> the Connect logical type it names when ``connect.name`` is absent
_LOGICAL = {
    "decimal": _DECIMAL,
    "date": "org.apache.kafka.connect.data.Date",
    "time-millis": "org.apache.kafka.connect.data.Time",
    "timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "time-micros": "io.debezium.time.MicroTime",
    "timestamp-micros": "io.debezium.time.MicroTimestamp",
}
_NAMED = ("record", "error", "enum", "fixed")
_CONTAINERS = (*_NAMED, "array", "map")
#: what fastavro raises on a datum that does not match its schema
_DATUM_ERRORS = (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError)


class SchemaRegistryError(AcidflowError, ConnectionError):
    """The schema registry cannot be reached or refuses to answer (not a bad record: nothing
    can be decoded without it). The message names the registry URL, the record (topic,
    partition, offset) being decoded and the reason."""


class FramedRecord(Protocol):
    """What :class:`AvroDecoder` reads of a Kafka record
    (:class:`acidflow.sources.kafka.KafkaRecord` is one)."""

    @property
    def key(self) -> bytes | None: ...

    @property
    def value(self) -> bytes | None: ...

    @property
    def where(self) -> str: ...


@dataclass(frozen=True)
class WriterSchema:
    """One writer schema of the registry, ready to decode.

    Attributes:
        global_id: its global id.
        parsed: the schema parsed by fastavro without its logical types (so datums keep their
            underlying values), the referenced schemas' named types included.
        connect: the Connect schema JsonConverter would have written (:func:`connect_schema`).
        has_bytes: whether a datum may hold bytes (then :func:`connect_payload` encodes them).
    """

    global_id: int
    parsed: Any
    connect: dict[str, Any]
    has_bytes: bool


def split_frame(data: bytes) -> tuple[int, int]:
    """The global id of an Apicurio frame and the offset of its Avro body (module docstring:
    the 8-byte id of Apicurio's default id handler, or the 4-byte id of its
    ``Legacy4ByteIdHandler``, Confluent's wire format).

    Args:
        data: a record key or value as written by the converter.
    Returns:
        ``(global id, offset of the Avro datum in data)``.
    Raises:
        RecordError: too short, or the first byte is not the magic byte 0.
    """
    if len(data) < 5 or data[0] != _MAGIC:
        raise RecordError(
            "not an Avro record of a schema registry (magic byte 0 and the schema's global id"
            f" expected): starts with {bytes(data[:9])!r}"
        )
    if data[1:5] != b"\0\0\0\0":  # a 4-byte id (never 0), else the high half of an 8-byte one
        return int.from_bytes(data[1:5], "big"), 5
    if len(data) < 9:
        raise RecordError(f"Avro record frame cut short: {bytes(data)!r}")
    return int.from_bytes(data[1:9], "big", signed=True), 9


def _fullname(name: str, ns: str | None) -> str:
    return name if "." in name or not ns else f"{ns}.{name}"


def _own_ns(schema: dict[str, Any], ns: str | None) -> tuple[str, str | None]:
    """``(full name, namespace)`` of a named type defined in namespace ``ns``."""
    name = str(schema["name"])
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    own = schema.get("namespace", ns)
    return _fullname(name, own), (own or None)


def _collect(schema: Any, ns: str | None, names: dict[str, tuple[Any, str | None]]) -> None:
    """Note the named types ``schema`` defines (a referenced schema's), by full name."""
    if isinstance(schema, list):
        for branch in schema:
            _collect(branch, ns, names)
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if isinstance(kind, (list, dict)):
        _collect(kind, ns, names)
        return
    if kind in _NAMED:
        full, ns = _own_ns(schema, ns)
        names.setdefault(full, (schema, ns))
    if kind in ("record", "error"):
        for f in schema.get("fields") or []:
            _collect(f.get("type"), ns, names)
    if kind == "array":
        _collect(schema.get("items"), ns, names)
    if kind == "map":
        _collect(schema.get("values"), ns, names)


def connect_schema(schema: Any, references: Sequence[Any] = ()) -> dict[str, Any]:
    """The Connect schema (JsonConverter's ``schema`` JSON) of an Avro schema written by a
    Kafka Connect Avro converter (module docstring).

    Args:
        schema: the Avro schema (parsed JSON).
        references: the schemas it names by reference (parsed JSON), any order.
    Returns:
        the Connect schema: ``{"type": "struct", "fields": [...], "optional": false, "name": ...}``.
    Raises:
        RecordError: a type that is not defined, a union of several non-null branches, a
            recursive record, or something that is not an Avro schema.
    """
    names: dict[str, tuple[Any, str | None]] = {}
    for ref in references:
        _collect(ref, None, names)
    try:
        return _to_connect(schema, names, None, frozenset())
    except (KeyError, TypeError, AttributeError) as e:
        raise RecordError(f"not an Avro schema: {type(e).__name__} {e}") from None


def _to_connect(
    s: Any, names: dict[str, tuple[Any, str | None]], ns: str | None, stack: frozenset[str]
) -> dict[str, Any]:
    if isinstance(s, list):
        others = [b for b in s if b != "null"]
        if len(others) != 1 or len(s) != 2:
            raise RecordError(f"Avro union {s!r} is not one type or null: not supported")
        return {**_to_connect(others[0], names, ns, stack), "optional": True}
    if isinstance(s, str):
        if s in _PRIMITIVES:
            return {"type": _PRIMITIVES[s], "optional": False}
        found = names.get(_fullname(s, ns)) or names.get(s)
        if found is None:
            raise RecordError(f"Avro type {s!r} is not defined (a reference not in the registry?)")
        return _to_connect(found[0], names, found[1], stack)
    if not isinstance(s, dict):
        raise RecordError(f"not an Avro schema: {s!r}")
    kind = s["type"]
    if isinstance(kind, (list, dict)) or (kind not in _PRIMITIVES and kind not in _CONTAINERS):
        return _to_connect(kind, names, ns, stack)  # {"type": <a schema or a name>}
    out: dict[str, Any]
    if kind in _PRIMITIVES:
        out = {"type": s.get("connect.type") or _PRIMITIVES[kind], "optional": False}
    elif kind in ("record", "error"):
        full, own = _own_ns(s, ns)
        names.setdefault(full, (s, own))
        if full in stack:
            raise RecordError(f"recursive Avro record {full}: no Connect schema")
        fields = [
            {**_to_connect(f["type"], names, own, stack | {full}), "field": f["name"]}
            for f in s["fields"]
        ]
        out = {"type": "struct", "fields": fields, "optional": False, "name": full}
    elif kind in ("enum", "fixed"):
        full, own = _own_ns(s, ns)
        names.setdefault(full, (s, own))
        out = {"type": "string" if kind == "enum" else "bytes", "optional": False}
    elif kind == "array":
        out = {"type": "array", "items": _to_connect(s["items"], names, ns, stack)}
        out["optional"] = False
    else:  # map
        values = _to_connect(s["values"], names, ns, stack)
        out = {"type": "map", "keys": {"type": "string", "optional": False}, "values": values}
        out["optional"] = False
    logical = _LOGICAL.get(str(s.get("logicalType")))
    name = s.get("connect.name") or logical
    if name:
        out["name"] = name
    if "connect.version" in s:
        out["version"] = s["connect.version"]
    elif logical and not s.get("connect.name"):
        out["version"] = 1
    params = dict(s.get("connect.parameters") or {})
    if name == _DECIMAL:  # a plain Avro decimal: its scale and precision
        params.setdefault("scale", str(s.get("scale", 0)))
        if "precision" in s:
            params.setdefault("connect.decimal.precision", str(s["precision"]))
    if params:
        out["parameters"] = params
    if s.get("connect.doc"):
        out["doc"] = s["connect.doc"]
    return out


def connect_payload(datum: Any) -> Any:
    """A datum read without logical types as JsonConverter writes its value: bytes (``bytes``,
    ``fixed``, the unscaled bytes of a decimal) as base64 text, everything else as it is.

    Args:
        datum: what fastavro read (dicts, lists, scalars, bytes).
    Returns:
        the JSON-ready value.
    """
    if isinstance(datum, bytes):
        return base64.b64encode(datum).decode("ascii")
    if isinstance(datum, dict):
        return {k: connect_payload(v) for k, v in datum.items()}
    if isinstance(datum, list):
        return [connect_payload(v) for v in datum]
    return datum


def _plain(s: Any) -> Any:
    """``s`` without ``logicalType`` properties: fastavro then returns the underlying values
    (what JsonConverter writes), not dates, datetimes and Decimals."""
    if isinstance(s, list):
        return [_plain(b) for b in s]
    if not isinstance(s, dict):
        return s
    out = {k: v for k, v in s.items() if k != "logicalType"}
    kind = out.get("type")
    if isinstance(kind, (list, dict)):
        out["type"] = _plain(kind)
    elif kind in ("record", "error"):
        out["fields"] = [{**f, "type": _plain(f.get("type"))} for f in s.get("fields") or []]
    elif kind == "array":
        out["items"] = _plain(s.get("items"))
    elif kind == "map":
        out["values"] = _plain(s.get("values"))
    return out


def _has_bytes(s: Any, seen: set[int] | None = None) -> bool:
    seen = set() if seen is None else seen
    if isinstance(s, str):
        return s == "bytes"
    if isinstance(s, list):
        return any(_has_bytes(b, seen) for b in s)
    if not isinstance(s, dict) or id(s) in seen:
        return False
    seen.add(id(s))
    kind = s.get("type")
    if kind in ("bytes", "fixed"):
        return True
    parts: list[Any] = [kind] if isinstance(kind, (list, dict)) else []
    parts += [f.get("type") for f in s.get("fields") or []]
    parts += [s.get("items"), s.get("values")]
    return any(_has_bytes(p, seen) for p in parts if p is not None)


def writer_schema(global_id: int, schema: Any, references: Sequence[Any] = ()) -> WriterSchema:
    """A :class:`WriterSchema` of an Avro schema and the schemas it references.

    Args:
        global_id: the schema's global id (in messages).
        schema: the Avro schema (parsed JSON).
        references: the referenced schemas, each after the ones it references itself.
    Returns:
        the :class:`WriterSchema`.
    Raises:
        RecordError: not an Avro schema fastavro parses, or no Connect schema
            (:func:`connect_schema`).
    """
    named: dict[str, Any] = {}
    try:
        for ref in references:
            fastavro.parse_schema(_plain(ref), named)
        parsed = fastavro.parse_schema(_plain(schema), named)
    except (fastavro.schema.SchemaParseException, ValueError, TypeError, KeyError) as e:
        raise RecordError(f"schema of global id {global_id} is not Avro: {e}") from None
    connect = connect_schema(schema, references)
    # references can hold bytes too (a named type used by the schema): look through them all
    has = _has_bytes(schema) or any(_has_bytes(r) for r in references)
    return WriterSchema(global_id, parsed, connect, has)


class UnknownSchemaError(RecordError):
    """The registry does not know a global id or artifact (HTTP 404): the record is
    quarantined, and the answer is not kept (a registry replica or a restart may know it)."""


def masked_url(url: str) -> str:
    """``url`` with the password of its user info (``http://user:secret@host``) masked."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def registry_api_url(url: str) -> str:
    """Apicurio's REST API v2 root of ``url``: the converters' ``apicurio.registry.url``
    (``http://host:8080/apis/registry/v2``) as it is, a bare ``http://host:8080`` with
    :data:`API_PATH` appended."""
    root = url.strip().rstrip("/")
    return root if root.endswith(API_PATH) else root + API_PATH


class ApicurioRegistry:
    """Writer schemas by global id from Apicurio Registry 2.x's REST API (module docstring),
    each fetched once (a schema, or a schema that does not parse, is kept; an id the registry
    does not know is asked again next time).

    Args:
        url: the registry (``apicurio.registry.url``, or its host root).
        timeout: seconds per HTTP request.
        session: the ``requests`` session to use (default a new one).
    """

    def __init__(
        self, url: str, *, timeout: float = 10.0, session: requests.Session | None = None
    ) -> None:
        self.url = registry_api_url(url)
        #: the URL as messages show it (a password in it masked)
        self.shown = masked_url(self.url)
        self.timeout = timeout
        self.session = session or requests.Session()
        self._schemas: dict[int, WriterSchema | RecordError] = {}
        self._artifacts: dict[tuple[str, str, str], tuple[Any, list[Any]]] = {}

    def writer_schema(self, global_id: int, where: str = "") -> WriterSchema:
        """The writer schema of ``global_id`` with its references.

        Args:
            global_id: from the record's frame.
            where: the record being decoded (topic, partition, offset), for messages.
        Returns:
            the :class:`WriterSchema`.
        Raises:
            RecordError: the registry does not know the id (HTTP 404), or its schema is not
                Avro / has no Connect schema.
            SchemaRegistryError: the registry cannot be reached or refuses the request.
        """
        got = self._schemas.get(global_id)
        if got is None:
            try:
                schema = self._get(f"/ids/globalIds/{global_id}", where, f"global id {global_id}")
                refs = self._get(
                    f"/ids/globalIds/{global_id}/references", where, "", missing_ok=True
                )
                got = writer_schema(global_id, schema, self._references(refs or [], where))
            except UnknownSchemaError:
                raise  # not kept: a registry replica or a restart may know it soon
            except RecordError as e:
                got = e
            self._schemas[global_id] = got
        if isinstance(got, RecordError):
            raise RecordError(str(got))
        return got

    def _references(self, refs: list[Any], where: str) -> list[Any]:
        """The contents of ``refs`` (Apicurio ``ArtifactReference`` objects) and of what they
        reference, each after the ones it references (fastavro needs names defined first)."""
        out: list[Any] = []
        done: set[tuple[str, str, str]] = set()

        def visit(ref: Any, path: tuple[tuple[str, str, str], ...]) -> None:
            if not isinstance(ref, dict) or "artifactId" not in ref:
                raise RecordError(
                    f"schema registry {self.shown}: not an artifact reference {ref!r}"
                )
            key = (
                str(ref.get("groupId") or "default"),
                str(ref["artifactId"]),
                str(ref["version"]),
            )
            if key in done or key in path:
                return
            content, nested = self._artifact(key, where)
            for sub in nested:
                visit(sub, (*path, key))
            done.add(key)
            out.append(content)

        for ref in refs:
            visit(ref, ())
        return out

    def _artifact(self, key: tuple[str, str, str], where: str) -> tuple[Any, list[Any]]:
        if key not in self._artifacts:
            group, artifact, version = (quote(k, safe="") for k in key)
            base = f"/groups/{group}/artifacts/{artifact}/versions/{version}"
            what = f"artifact {key[0]}/{key[1]} version {key[2]}"
            content = self._get(base, where, what)
            nested = self._get(f"{base}/references", where, "", missing_ok=True) or []
            self._artifacts[key] = (content, list(nested))
        return self._artifacts[key]

    def _get(self, path: str, where: str, what: str, *, missing_ok: bool = False) -> Any:
        """``GET`` ``path`` of the API as JSON; 404: None when ``missing_ok``, else a
        RecordError naming ``what``."""
        url, shown = self.url + path, self.shown + path
        at = f" (decoding Kafka {where})" if where else ""
        try:
            resp = self.session.get(url, timeout=self.timeout)
        except requests.RequestException as e:
            raise SchemaRegistryError(
                f"schema registry {self.shown} cannot be reached{at}: GET {shown}: {e}"
            ) from e
        if resp.status_code == 404:
            if missing_ok:
                return None
            raise UnknownSchemaError(f"{what} is not in schema registry {self.shown} (HTTP 404)")
        if resp.status_code != 200:
            raise SchemaRegistryError(
                f"schema registry {self.shown} answered HTTP {resp.status_code}{at}: GET {shown}:"
                f" {resp.text[:200]}"
            )
        try:
            return resp.json()
        except ValueError:
            raise RecordError(
                f"{what or path} in schema registry {self.shown} is not JSON: {resp.text[:100]!r}"
            ) from None


class AvroDecoder:
    """Framed Avro keys and values -> JsonConverter envelopes (module docstring).

    Args:
        registry: where writer schemas come from (:class:`ApicurioRegistry`).
    """

    def __init__(self, registry: ApicurioRegistry) -> None:
        self.registry = registry

    def decode(self, data: bytes, where: str = "") -> dict[str, Any]:
        """``{"schema": <Connect schema>, "payload": <value>}`` of one framed datum.

        Args:
            data: the key or value bytes.
            where: the record (topic, partition, offset), for messages.
        Returns:
            the envelope JsonConverter with schemas would have written.
        Raises:
            RecordError: no frame, an unknown global id, a schema that is not Avro, a datum
                that does not match its writer schema (cut short, bytes left over ...).
            SchemaRegistryError: the registry cannot be reached.
        """
        global_id, start = split_frame(data)
        ws = self.registry.writer_schema(global_id, where)
        buf = io.BytesIO(data)
        buf.seek(start)
        try:
            datum = fastavro.schemaless_reader(buf, ws.parsed, None)
        except _DATUM_ERRORS as e:
            raise RecordError(
                f"Avro datum does not match its writer schema (global id {global_id}):"
                f" {type(e).__name__} {e}"
            ) from None
        left = len(data) - buf.tell()
        if left:
            raise RecordError(
                f"{left} byte(s) left after the Avro datum of global id {global_id}: not written"
                " with that schema"
            )
        payload = connect_payload(datum) if ws.has_bytes else datum
        return {"schema": ws.connect, "payload": payload}

    def value(self, rec: FramedRecord) -> Any:
        """The record's value as JsonConverter's envelope, None for a null value (a tombstone).

        Raises:
            RecordError, SchemaRegistryError: see :meth:`decode`.
        """
        return None if rec.value is None else self.decode(rec.value, rec.where)

    def key(self, rec: FramedRecord) -> Any:
        """The record's key as JsonConverter's envelope, or None when absent or not a framed
        Avro datum (as with JSON, the key only names the primary key columns).

        Raises:
            SchemaRegistryError: the registry cannot be reached.
        """
        if rec.key is None:
            return None
        try:
            return self.decode(rec.key, rec.where)
        except RecordError:
            return None

    def raw(self, rec: FramedRecord) -> str:
        """The value as a quarantine record keeps it: ``base64:<the bytes>`` (binary)."""
        return "" if rec.value is None else "base64:" + base64.b64encode(rec.value).decode()


@functools.lru_cache(maxsize=16)
def avro_decoder(registry_url: str) -> AvroDecoder:
    """The process's :class:`AvroDecoder` of a registry (one per URL: its schemas are fetched
    once, across the batches of a stream).

    Args:
        registry_url: ``apicurio.registry.url`` (or the registry's host root).
    Returns:
        the decoder.
    """
    return AvroDecoder(ApicurioRegistry(registry_url))
