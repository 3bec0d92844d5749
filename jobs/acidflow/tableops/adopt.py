"""``acidflow table adopt``: take an existing Hive full-ACID table into acidflow's catalog with
its write-id history (``Catalog.adopt_table``).

Two sources of the definition and the history:

* **a path**: the history from ``--hwm N [--open ids] [--aborted ids]`` or Hive's string form of
  a ``ValidWriteIdList`` (``db.t:5:9223372036854775807::4``, what ``hive.txn.valid.writeids``
  holds; :func:`history_from_options`); the columns from ``--columns "id bigint, name string"``
  or, without it, from the ORC files (the ``row`` struct of an event file, or an original
  file's columns; :func:`columns_from_files`) - writers that name the columns ``_col0``,
  ``_col1``... (Hive's own ORC writer for some statements) leave the names unknown, and then
  ``--columns`` is required;
* **a metastore** (``thrift://host:port``, :func:`table_from_metastore`): ``get_table`` gives the
  columns (with their comments), partition keys, buckets, location and parameters;
  ``get_open_txns`` + ``get_valid_write_ids`` give the table's ``ValidWriteIdList`` as a new Hive
  reader would take it. Tables that are not full ACID ORC are refused with the reason:
  ``transactional`` not ``true``, insert-only (``transactional_properties=insert_only``), an
  external table, a serde / input format other than ORC's, sort columns.

A location outside acidflow's warehouse is adopted as ``external`` (the table stays where Hive
put it; ``acidflow.external=true``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from acidflow._extras import require
from acidflow.catalog.base import Catalog
from acidflow.catalog.tabledef import Column, TableDef, normalize_table_name
from acidflow.catalog.warehouse import is_inside
from acidflow.errors import AcidflowError
from acidflow.format import acidv1 as acidv1_rules
from acidflow.format import partitions as parts
from acidflow.format.hivetypes import normalize_hive_type
from acidflow.format.layout import is_hidden, parse_delta
from acidflow.format.orc import files as acid_files
from acidflow.format.types import hive_type_from_arrow
from acidflow.format.writeids import ValidWriteIdList
from acidflow.read import acidv1
from acidflow.storage.fs import TableFS, join
from acidflow.tableops.ddl import COLUMN_COMMENT_PREFIX

#: Hive's placeholder column names (``_col0``, ``_col1`` ...): the real names are unknown.
PLACEHOLDER_NAME = re.compile(r"^_col[0-9]+$")
#: Metastore table parameters that describe Hive's statistics, not the table (not copied).
HIVE_STATS_PARAMS = frozenset(
    {
        "transient_lastDdlTime",
        "numFiles",
        "numRows",
        "rawDataSize",
        "totalSize",
        "COLUMN_STATS_ACCURATE",
        "numFilesErasureCoded",
        "last_modified_by",
        "last_modified_time",
    }
)


class TableOpsError(AcidflowError, ValueError):
    """Bad input to ``acidflow table adopt`` / ``convert`` (names the table, file or URL and
    the reason)."""


def split_top_level(text: str) -> list[str]:
    """Split ``"a int, b decimal(10,2), c map<string,int>"`` at the commas outside ``()``/``<>``."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in text:
        if c in "(<":
            depth += 1
        elif c in ")>":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    out.append("".join(cur))
    return [p.strip() for p in out if p.strip()]


def parse_columns(text: str, what: str = "--columns") -> list[Column]:
    """``"id bigint, name string"`` -> columns (Hive types normalised).

    Raises:
        TableOpsError: an entry without a type, or a bad type (names the entry).
    """
    cols = []
    for part in split_top_level(text):
        name, _, hive_type = part.partition(" ")
        if not hive_type.strip():
            raise TableOpsError(f"{what}: {part!r} needs a name and a Hive type ('id bigint')")
        try:
            cols.append(Column(name.strip().strip("`"), normalize_hive_type(hive_type.strip())))
        except ValueError as exc:
            raise TableOpsError(f"{what}: {part!r}: {exc}") from exc
    return cols


def parse_ids(text: str | None, what: str) -> list[int]:
    """``"3,4"`` -> ``[3, 4]``; empty or None -> ``[]``.

    Raises:
        TableOpsError: not comma-separated integers (names the option).
    """
    if not text:
        return []
    try:
        return sorted(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise TableOpsError(f"{what}: expected comma-separated write ids, got {text!r}") from None


def history_from_options(
    table: str,
    *,
    hwm: int | None,
    open_ids: Sequence[int] = (),
    aborted_ids: Sequence[int] = (),
    valid_write_ids: str | None = None,
) -> ValidWriteIdList:
    """The adopted history from the command's options: either ``hwm`` (+ open, aborted) or
    Hive's string form (``<table>:<hwm>:<minOpen>:<open>:<aborted>``), not both.

    Raises:
        TableOpsError: neither or both given, a malformed string, ids outside 1..hwm.
    """
    if (hwm is None) == (valid_write_ids is None):
        raise TableOpsError(
            f"table {table}: give either --hwm (with --open/--aborted) or --valid-write-ids"
        )
    if valid_write_ids is not None:
        if open_ids or aborted_ids:
            raise TableOpsError("--open/--aborted go with --hwm; --valid-write-ids carries them")
        try:
            parsed = ValidWriteIdList.from_string(valid_write_ids)
        except ValueError as exc:
            raise TableOpsError(f"--valid-write-ids: {exc}") from exc
        if not valid_write_ids.strip():
            raise TableOpsError("--valid-write-ids is empty")
        return parsed
    assert hwm is not None
    if hwm < 0:
        raise TableOpsError(f"--hwm must be >= 0, got {hwm}")
    try:
        history = ValidWriteIdList(table, hwm, open_ids, aborted_ids)
    except ValueError as exc:
        raise TableOpsError(f"table {table}: {exc}") from exc
    bad = [w for w in history.invalid_write_ids if not 1 <= w <= hwm]
    if bad:
        raise TableOpsError(f"table {table}: --open/--aborted ids {bad} are not in 1..{hwm}")
    return history


def partition_names_from_dirs(location: str) -> list[str]:
    """Partition column names read off the ``key=value`` directory levels under ``location``
    (each level where every visible entry is such a directory), without reading any file;
    ``[]`` for a flat or missing directory."""
    tfs = TableFS(location)
    names: list[str] = []
    level = location
    while True:
        entries = [(n, is_dir) for n, is_dir in tfs.list_dir(level) if not is_hidden(n)]
        if not entries or not all(
            is_dir and parts.is_partition_dir_name(n) for n, is_dir in entries
        ):
            return names
        names.append(parts.unescape(entries[0][0].split("=", 1)[0]).lower())
        level = join(level, entries[0][0])


def sample_data_file(location: str) -> str | None:
    """A data file to take the schema from: the first file of an insert delta, base or original
    file, else of a delete delta (its ``row`` struct is typed too); hidden paths skipped."""
    tfs = TableFS(location)
    first_delete: str | None = None
    for entry in tfs.list_recursive(location):
        comps = entry.path.split("/")
        if entry.is_dir or any(is_hidden(c) for c in comps) or entry.size == 0:
            continue
        deltas = [parse_delta(c) for c in comps[:-1]]
        if any(d is not None and d.is_delete for d in deltas):
            first_delete = first_delete or join(location, entry.path)
            continue
        return join(location, entry.path)
    return first_delete


def columns_from_files(
    table: str, location: str, partition_columns: Sequence[str] = ()
) -> list[Column]:
    """The data columns written in the table's ORC files (module doc).

    Raises:
        TableOpsError: no data file; a file that is not ORC; placeholder names (``_col0``...):
            pass ``--columns``.
    """
    path = sample_data_file(location)
    if path is None:
        raise TableOpsError(
            f"table {table}: no ORC data file under {location} to read the "
            "columns from; pass --columns"
        )
    try:
        info = acid_files.file_info(TableFS(location), path)
    except acid_files.AcidFileError as exc:
        raise TableOpsError(f"table {table}: {exc}") from exc
    fields = list(info.row_schema)
    if any(PLACEHOLDER_NAME.match(f.name) for f in fields):
        raise TableOpsError(
            f"table {table}: {path} names its columns {[f.name for f in fields]} (Hive's "
            "placeholders): the real names are not in the files; pass --columns "
            "'name type, ...'"
        )
    skip = set(partition_columns)
    return [
        Column(f.name, hive_type_from_arrow(f.type)) for f in fields if f.name.lower() not in skip
    ]


def local_path(location: str) -> str:
    """A metastore location as acidflow addresses it: ``file:/x`` and ``file:///x`` -> ``/x``;
    other URLs unchanged."""
    if location.startswith("file://"):
        return location[len("file://") :] or "/"
    if location.startswith("file:"):
        return location[len("file:") :]
    return location


@dataclass
class MetastoreTable:
    """What :func:`table_from_metastore` read: the definition and the history."""

    table: TableDef
    history: ValidWriteIdList
    url: str


def table_from_metastore(url: str, name: str, *, as_name: str | None = None) -> MetastoreTable:
    """Read a table's definition and ``ValidWriteIdList`` from a Hive metastore (module doc).

    Args:
        url: ``thrift://host:port``; name: ``db.table`` in the metastore;
        as_name: the name in acidflow's catalog (default the same).
    Raises:
        MetastoreUnreachableError: the metastore does not answer (names the URL).
        TableOpsError: unknown table; not full ACID ORC (names the reason).
        acidflow._extras.MissingExtraError: the ``hms`` extra is not installed.
    """
    require("pymetastore", "hms", "adopting a table from a Hive metastore (--metastore)")
    # deferred: the metastore's thrift client is the optional 'hms' extra (checked above);
    # adoption from a path needs none of it
    from pymetastore.hive_metastore.ttypes import (
        ClientCapabilities,
        ClientCapability,
        GetTableRequest,
        GetValidWriteIdsRequest,
        NoSuchObjectException,
    )
    from thrift.Thrift import TException

    from acidflow.catalog.hms.client import (
        hms_client,
        to_valid_write_ids,
        valid_txn_list,
    )

    full = normalize_table_name(name)
    db, tbl = full.split(".")
    with hms_client(url) as client:
        # thrift exceptions are caught inside the block: they are immutable and cannot pass
        # through a contextmanager's __exit__ (it sets __traceback__)
        try:
            # Hive's own client declares INSERT_ONLY_TABLES; without it the metastore refuses
            # to describe an insert-only table at all
            t = client.get_table_req(
                GetTableRequest(
                    dbName=db,
                    tblName=tbl,
                    capabilities=ClientCapabilities([ClientCapability.INSERT_ONLY_TABLES]),
                )
            ).table
        except NoSuchObjectException:
            raise TableOpsError(f"table {full} is not in the metastore {url}") from None
        except TException as exc:
            raise TableOpsError(
                f"table {full}: the metastore {url} answered "
                f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"
            ) from None
        refuse = _not_full_acid_orc(t)
        if refuse:
            raise TableOpsError(f"table {full} in the metastore {url} cannot be adopted: {refuse}")
        try:
            txns = valid_txn_list(client.get_open_txns())
            resp = client.get_valid_write_ids(
                GetValidWriteIdsRequest(fullTableNames=[full], validTxnList=txns)
            )
        except TException as exc:
            raise TableOpsError(
                f"table {full}: the metastore {url} gave no ValidWriteIdList: "
                f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"
            ) from None
        (ids,) = resp.tblValidWriteIds
        history = to_valid_write_ids(ids)
    params: dict[str, Any] = dict(t.parameters or {})
    props = {
        k: str(v)
        for k, v in params.items()
        if k not in HIVE_STATS_PARAMS and k not in ("EXTERNAL",)
    }
    cols = [Column(c.name, c.type) for c in t.sd.cols]
    pcols = [Column(c.name, c.type) for c in (t.partitionKeys or [])]
    for c in [*t.sd.cols, *(t.partitionKeys or [])]:
        if c.comment:
            props[COLUMN_COMMENT_PREFIX + c.name.lower()] = c.comment
    buckets = t.sd.numBuckets if t.sd.numBuckets and t.sd.numBuckets > 0 else 0
    table = TableDef(
        name=as_name or full,
        columns=cols,
        partition_columns=pcols,
        bucket_columns=[c.lower() for c in (t.sd.bucketCols or [])] if buckets else [],
        num_buckets=buckets,
        bucketing_version=int(params.get("bucketing_version", 2)),
        properties=props,
        location=local_path(t.sd.location),
    )
    return MetastoreTable(table, history, url)


def _not_full_acid_orc(t: Any) -> str:
    """Why Hive's table ``t`` is not a full-ACID ORC table, or ``""``."""
    # deferred: the 'hms' extra, loaded already by table_from_metastore, the only caller
    from acidflow.catalog.hms.client import ORC_INPUT, ORC_OUTPUT, ORC_SERDE

    params = {k.lower(): str(v).lower() for k, v in (t.parameters or {}).items()}
    if params.get("transactional") != "true":
        return "it is not transactional (TBLPROPERTIES 'transactional' is not 'true')"
    if params.get("transactional_properties", "default") != "default":
        return (
            f"it is an insert-only transactional table (transactional_properties="
            f"{params['transactional_properties']!r}), not full ACID"
        )
    if (t.tableType or "").upper() == "EXTERNAL_TABLE" or params.get("external") == "true":
        return "it is an external table (Hive's transactional tables are managed)"
    serde = t.sd.serdeInfo.serializationLib if t.sd.serdeInfo else None
    if serde != ORC_SERDE or t.sd.inputFormat != ORC_INPUT or t.sd.outputFormat != ORC_OUTPUT:
        return (
            f"it is not stored as ORC (serde {serde}, input format {t.sd.inputFormat}, "
            f"output format {t.sd.outputFormat})"
        )
    if t.sd.sortCols:
        return "it is sorted (SORTED BY); Hive's full-ACID tables cannot be"
    return ""


def with_location_rule(table: TableDef, catalog: Catalog) -> TableDef:
    """``table`` marked ``external`` when its location lies outside the catalog's warehouse
    (an adopted or converted table stays where it is)."""
    if table.location and not is_inside(table.location, catalog.warehouse):
        table.external = True
        table.properties["acidflow.external"] = "true"
    return table


def adopt(catalog: Catalog, table: TableDef, history: ValidWriteIdList) -> TableDef:
    """``catalog.adopt_table`` with the location rule of :func:`with_location_rule`; a table
    whose partitions hold ACID v1 directories (Hive 0.14-2.x) is marked with
    :data:`acidflow.format.acidv1.ACID_VERSION_PROPERTY` = "1": readable, refused by writers
    until ``acidflow table upgrade``.

    Raises:
        what :meth:`Catalog.adopt_table` raises.
    """
    adopted = catalog.adopt_table(with_location_rule(table, catalog), history)
    if acidv1.v1_partitions(
        adopted.location,
        len(adopted.partition_columns),
        catalog.valid_write_ids(adopted.name),
        txn_state=catalog.visibility_lookup(),
    ):
        adopted = catalog.set_table_properties(
            adopted.name, {acidv1_rules.ACID_VERSION_PROPERTY: "1"}
        )
    return adopted
