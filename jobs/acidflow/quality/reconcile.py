"""Reconciliation: does an acidflow table's snapshot hold exactly the rows of its source table?

Both sides are reduced to an order-independent digest (:mod:`acidflow.quality.digest`): every
row is type-normalised column by column with the source's notion of equality (an
:class:`Equality` the source carries: ``acidflow.sources.postgres.equality`` for PostgreSQL),
encoded canonically and hashed to 64 bits; the digest is the row count plus the sum of the row
hashes modulo 2**64. When the digests differ, a second pass maps each row's key (the primary
key; the whole row for keyless tables) to its row hashes on both sides and reports the first
differing keys in key order, and a third pass fetches those rows.

Only the source's columns are compared; acidflow columns named ``_cdc_*`` (bookkeeping of the
CDC apply) are excluded, other extra acidflow columns are ignored and listed. A source column
missing from the acidflow table is an error. The type of each column comes from the source
(PostgreSQL's ``format_type``) when known, else from the acidflow table's Hive type.

Sources: anything with the :class:`ReconcileSource` shape (columns, key, rows as a COPY CSV); the
caller picks one (``acidflow.sources.postgres``: ``PostgresSource`` for a live table read with
``COPY ... TO STDOUT WITH CSV HEADER``, ``SavedSource`` for a ``.csv.gz``/``.csv`` written by that
COPY with the column types and primary key from a ``manifest.json`` as
``tools/sample_data_pgbench.py`` writes it); this module imports no source package.
The acidflow side is read with ``acidflow.read.table.read_table``: in Spark when a session is given
(hashing runs on the executors with ``mapInArrow``), else in this process with pyarrow.
"""

from __future__ import annotations

import base64
import csv
import datetime as _dt
import decimal
import gzip
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

import pyarrow as pa
import pyarrow.csv as pacsv

from acidflow.errors import AcidflowError
from acidflow.quality.digest import Digest, row_hash
from acidflow.read import table as reads

BOOKKEEPING_PREFIX = "_cdc_"
DEFAULT_MAX_KEYS = 10


class ReconcileError(AcidflowError, ValueError):
    """Reconciliation cannot run: a source column is missing from the table, a saved source has
    no file, a value cannot be normalised (the message names table, column and value)."""


def _sort_key(key: tuple) -> tuple:
    out: list[tuple[int, Any, str]] = []
    for v in key:
        if v is None:
            out.append((0, 0, ""))
        elif isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
            out.append((1, v, ""))
        else:
            out.append((2, 0, repr(v)))
    return tuple(out)


# ------------------------------------------------------------------------------ batch scans


@dataclass(frozen=True)
class ScanSpec:
    """What to read from a batch: the batch's column names for the compared columns (in source
    order), their comparison kinds, and the positions of the key columns among them (empty for
    keyless tables: the whole row is the key)."""

    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    key_positions: tuple[int, ...]
    #: the source's canonical-value function (:attr:`Equality.canonical_value`)
    canonical: Callable[[Any, str], Any]
    where: str = "?"

    def rows(self, batch: pa.RecordBatch) -> Iterator[tuple]:
        """Canonical rows of an Arrow batch (columns looked up by name)."""
        cols = []
        for name, kind in zip(self.columns, self.kinds):
            values = batch.column(batch.schema.get_field_index(name)).to_pylist()
            try:
                cols.append([self.canonical(v, kind) for v in values])
            except (ValueError, TypeError, decimal.InvalidOperation) as exc:
                bad = next((v for v in values if _bad(self.canonical, v, kind)), None)
                raise ReconcileError(
                    f"{self.where}: column {name!r} ({kind}): cannot read value {bad!r}: {exc}"
                ) from exc
        return zip(*cols) if cols else iter(())

    def key(self, row: tuple) -> tuple:
        """The key of a canonical row (the whole row for keyless tables)."""
        return tuple(row[i] for i in self.key_positions) if self.key_positions else row


def _bad(canonical: Callable[[Any, str], Any], v: Any, kind: str) -> bool:
    try:
        canonical(v, kind)
        return False
    except Exception:  # noqa: BLE001
        return True


def scan_digest(batches: Iterable[pa.RecordBatch], spec: ScanSpec) -> Digest:
    """Pass 1: the :class:`Digest` of all rows."""
    d = Digest()
    for b in batches:
        for row in spec.rows(b):
            d.add(row_hash(row))
    return d


def scan_keys(batches: Iterable[pa.RecordBatch], spec: ScanSpec) -> dict[tuple, list[int]]:
    """Pass 2: key -> row hashes (one per row with that key)."""
    out: dict[tuple, list[int]] = {}
    for b in batches:
        for row in spec.rows(b):
            out.setdefault(spec.key(row), []).append(row_hash(row))
    return out


def scan_rows(
    batches: Iterable[pa.RecordBatch], spec: ScanSpec, wanted: set[tuple]
) -> dict[tuple, list[tuple]]:
    """Pass 3: the rows whose key is in ``wanted``."""
    out: dict[tuple, list[tuple]] = {}
    for b in batches:
        for row in spec.rows(b):
            k = spec.key(row)
            if k in wanted:
                out.setdefault(k, []).append(row)
    return out


# ------------------------------------------------------------------------------ sources


def csv_batches(
    path: str | os.PathLike, columns: list[str] | None = None, block_size: int = 4 << 20
) -> Iterator[pa.RecordBatch]:
    """Record batches of all-string columns from a CSV written by PostgreSQL's
    ``COPY ... TO STDOUT WITH CSV HEADER`` (``.gz`` decompressed): an unquoted empty field is
    NULL, a quoted ``""`` the empty string; quoted values may span lines."""
    names = _csv_header(Path(path))
    if columns is not None and [n.lower() for n in names] != [c.lower() for c in columns]:
        raise ReconcileError(f"{path}: CSV header {names} does not match the columns {columns}")
    convert = pacsv.ConvertOptions(
        column_types={n: pa.string() for n in names},
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
    )
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=block_size),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=convert,
    )
    yield from reader


class Equality(Protocol):
    """A source's notion of equality: the comparison kind of each column and the canonical
    value both sides are normalised to (``acidflow.sources.postgres.equality`` for
    PostgreSQL). ``canonical_value`` must be a plain function (it travels to Spark tasks)."""

    def kind_of_source_type(self, type_name: str) -> str:
        """Comparison kind of a source column type (PostgreSQL: ``format_type``)."""
        ...

    def kind_of_hive_type(self, hive_type: str) -> str:
        """Comparison kind of an acidflow column, when the source's type is unknown."""
        ...

    def canonical_value(self, v: Any, kind: str) -> Any:
        """The value normalised for comparison (``ValueError`` when it cannot be read)."""
        ...


class ReconcileSource(Protocol):
    """What :func:`reconcile` needs of a source table: its columns and key, and its rows as a
    CSV in PostgreSQL's ``COPY ... TO STDOUT WITH CSV HEADER`` form (an unquoted empty field is
    NULL, ``""`` the empty string). ``str(source)`` names it in messages and results.

    The PostgreSQL implementations are ``acidflow.sources.postgres.snapshot.PostgresSource`` (a
    live table) and ``SavedSource`` (a saved COPY plus ``manifest.json``); this module imports
    neither, the caller hands one in.
    """

    @property
    def equality(self) -> Equality:
        """The source's :class:`Equality` (how its values compare with acidflow's)."""
        ...

    def describe_columns(self) -> tuple[list[tuple[str, str | None]] | None, list[str]]:
        """``(columns, primary key)``: columns as ``(name, PostgreSQL format_type or None when
        unknown)`` in CSV order, or None when the CSV header names them (types unknown); the
        primary key columns, empty when unknown or keyless."""
        ...

    def open_csv(self) -> tuple[Path, Callable[[], None]]:
        """The rows as a CSV file (``.gz`` allowed) and a function that removes what it made."""
        ...


@dataclass
class DifferingKey:
    """One key whose rows differ.

    Attributes:
        key: ``{column: canonical value}`` (the primary key, or the whole row when keyless).
        kind: ``only_in_source``, ``only_in_table`` or ``values_differ`` (both sides have the
            key but different rows or a different number of rows).
        source_rows, table_rows: rows with that key on each side.
        source_values, table_values: those rows (``{column: canonical value}``), first of each.
    """

    key: dict[str, Any]
    kind: str
    source_rows: int
    table_rows: int
    source_values: dict[str, Any] | None = None
    table_values: dict[str, Any] | None = None

    def to_json(self) -> dict:
        """JSON-ready dict (decimals as text, bytes as ``\\x`` hex, dates ISO)."""
        return {k: _jsonable(v) for k, v in self.__dict__.items()}


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return "\\x" + v.hex()
    if isinstance(v, _dt.date):
        return v.isoformat()
    return v


@dataclass
class ReconcileResult:
    """The outcome of :func:`reconcile`.

    Attributes:
        table: acidflow table name.
        source: the source, as text.
        source_rows, table_rows: row counts.
        source_checksum, table_checksum: sums of the 64-bit row hashes mod 2**64.
        matches: counts and checksums equal.
        first_differing_keys: up to ``max_keys`` :class:`DifferingKey`, in key order, each side's
            differences included (empty when ``matches``).
        differing_keys: number of differing keys in all (0 when ``matches``).
        key_columns: the key compared by (empty: whole rows, keyless table).
        columns: the columns compared (source order); ``ignored_columns``: other acidflow
            columns that were not compared (``_cdc_*`` bookkeeping and columns not in the source).
    """

    table: str
    source: str
    source_rows: int
    table_rows: int
    source_checksum: int
    table_checksum: int
    matches: bool
    first_differing_keys: list[DifferingKey] = field(default_factory=list)
    differing_keys: int = 0
    key_columns: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    ignored_columns: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """JSON-ready dict; checksums as 16 hex digits."""
        d = dict(self.__dict__)
        d["source_checksum"] = f"{self.source_checksum:016x}"
        d["table_checksum"] = f"{self.table_checksum:016x}"
        d["first_differing_keys"] = [k.to_json() for k in self.first_differing_keys]
        return d


# ------------------------------------------------------------------------------ the table side


class _TableSide:
    """Runs the scans over the acidflow snapshot: Spark (``mapInArrow`` on the executors) or a
    pyarrow table in this process."""

    def __init__(self, data: Any, spec: ScanSpec) -> None:
        self.data = data
        self.spec = spec
        self.is_spark = not isinstance(data, pa.Table)

    def _batches(self) -> list[pa.RecordBatch]:
        return self.data.to_batches()

    def digest(self) -> Digest:
        if not self.is_spark:
            return scan_digest(self._batches(), self.spec)
        spec = self.spec

        def task(it: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            d = scan_digest(it, spec)
            yield pa.RecordBatch.from_pydict({"rows": [d.rows], "checksum": [str(d.checksum)]})

        total = Digest()
        for r in self.data.mapInArrow(task, "rows long, checksum string").collect():
            total = total.merge(Digest(r["rows"], int(r["checksum"])))
        return total

    def keys(self) -> dict[tuple, list[int]]:
        if not self.is_spark:
            return scan_keys(self._batches(), self.spec)
        spec = self.spec

        def task(it: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for b in it:
                ks, hs = [], []
                for row in spec.rows(b):
                    ks.append(base64.b64encode(pickle.dumps(spec.key(row))).decode())
                    hs.append(str(row_hash(row)))
                yield pa.RecordBatch.from_pydict(
                    {"k": ks, "h": hs}, schema=pa.schema([("k", pa.string()), ("h", pa.string())])
                )

        out: dict[tuple, list[int]] = {}
        for r in self.data.mapInArrow(task, "k string, h string").toLocalIterator():
            out.setdefault(pickle.loads(base64.b64decode(r["k"])), []).append(int(r["h"]))
        return out

    def rows(self, wanted: set[tuple]) -> dict[tuple, list[tuple]]:
        if not self.is_spark:
            return scan_rows(self._batches(), self.spec, wanted)
        spec = self.spec

        def task(it: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            found = scan_rows(it, spec, wanted)
            ks, rs = [], []
            for k, rows in found.items():
                for row in rows:
                    ks.append(base64.b64encode(pickle.dumps(k)).decode())
                    rs.append(base64.b64encode(pickle.dumps(row)).decode())
            yield pa.RecordBatch.from_pydict(
                {"k": ks, "r": rs}, schema=pa.schema([("k", pa.string()), ("r", pa.string())])
            )

        out: dict[tuple, list[tuple]] = {}
        for r in self.data.mapInArrow(task, "k string, r string").collect():
            out.setdefault(pickle.loads(base64.b64decode(r["k"])), []).append(
                pickle.loads(base64.b64decode(r["r"]))
            )
        return out


# ------------------------------------------------------------------------------ reconcile


def diff_keys(
    source: dict[tuple, list[int]], table: dict[tuple, list[int]], max_keys: int
) -> tuple[list[tuple[tuple, str, int, int]], int]:
    """Compare key -> row-hash maps. Returns (the first ``max_keys`` differing keys in key order
    as ``(key, kind, source_rows, table_rows)``, the number of differing keys)."""
    differing = []
    for k in source.keys() | table.keys():
        s, t = source.get(k, []), table.get(k, [])
        if sorted(s) != sorted(t):
            kind = "only_in_table" if not s else "only_in_source" if not t else "values_differ"
            differing.append((k, kind, len(s), len(t)))
    differing.sort(key=lambda d: _sort_key(d[0]))
    return differing[:max_keys], len(differing)


def reconcile(
    spark: Any,
    catalog: Any,
    table_name: str,
    source: ReconcileSource,
    *,
    max_keys: int = DEFAULT_MAX_KEYS,
    key_columns: list[str] | None = None,
    as_of_write_id: int | None = None,
) -> ReconcileResult:
    """Compare the snapshot of an acidflow table with its source.

    Args:
        spark: SparkSession (hashing runs on the executors), or ``None`` to read the snapshot
            with pyarrow in this process.
        catalog: ``acidflow.catalog.Catalog``.
        table_name: acidflow table (``<db>.<table>``, e.g. ``pgbench.pgbench_accounts`` for the
            PostgreSQL table ``public.pgbench_accounts``).
        source: a :class:`ReconcileSource` (``acidflow.sources.postgres``: ``PostgresSource``
            for a live table, ``SavedSource`` for a saved COPY).
        max_keys: how many differing keys to report (with their rows).
        key_columns: compare by these columns (default: the source's primary key, else the
            acidflow table's, else whole rows).
        as_of_write_id: reconcile an older snapshot (time travel).
    Returns:
        :class:`ReconcileResult`.
    Raises:
        ReconcileError: a source column missing from the table, a key column not compared, an
            unreadable value, a saved source without its file.
        acidflow.catalog.errors.NoSuchTableError: no such acidflow table.
        whatever the source raises (``PostgresSource``: ``PullError`` when it cannot
            connect, ``LookupError`` for no such source table).
    """
    tdef = catalog.get_table(table_name)
    table_cols = {
        c.name.lower(): (c.name, c.hive_type)
        for c in list(tdef.columns) + list(getattr(tdef, "partition_columns", []) or [])
    }

    equality = source.equality
    described, src_pk = source.describe_columns()
    csv_path, cleanup = source.open_csv()
    try:
        src_columns: list[tuple[str, str | None]] = (
            described if described is not None else [(n, None) for n in _csv_header(Path(csv_path))]
        )
        names, kinds = [], []
        for n, pg_type in src_columns:
            tc = table_cols.get(n.lower())
            if tc is None:
                raise ReconcileError(
                    f"column {n!r} of source {source} is not in acidflow table "
                    f"{tdef.name} (columns: {[c[0] for c in table_cols.values()]})"
                )
            names.append(tc[0])
            kinds.append(
                equality.kind_of_source_type(pg_type)
                if pg_type
                else equality.kind_of_hive_type(tc[1])
            )
        compared = {n.lower() for n in names}
        ignored = [c[0] for c in table_cols.values() if c[0].lower() not in compared]
        keys = key_columns or src_pk or list(getattr(tdef, "primary_key", []) or [])
        lower = [n.lower() for n in names]
        try:
            key_pos = tuple(lower.index(k.lower()) for k in keys)
        except ValueError:
            raise ReconcileError(
                f"key columns {keys} of {tdef.name} are not all among the compared columns {names}"
            ) from None
        src_spec = ScanSpec(
            tuple(n for n, _ in src_columns),
            tuple(kinds),
            key_pos,
            equality.canonical_value,
            where=f"source {source}",
        )
        tbl_spec = ScanSpec(
            tuple(names),
            tuple(kinds),
            key_pos,
            equality.canonical_value,
            where=f"table {tdef.name}",
        )

        data = reads.read_table(spark, catalog, tdef.name, as_of_write_id=as_of_write_id)
        if spark is not None:
            data = data.select(*names)
        side = _TableSide(data, tbl_spec)

        def src_batches() -> Iterator[pa.RecordBatch]:
            return csv_batches(csv_path, [n for n, _ in src_columns])

        sd = scan_digest(src_batches(), src_spec)
        td = side.digest()
        key_names = [names[i] for i in key_pos] if key_pos else list(names)
        result = ReconcileResult(
            table=tdef.name,
            source=str(source),
            source_rows=sd.rows,
            table_rows=td.rows,
            source_checksum=sd.checksum,
            table_checksum=td.checksum,
            matches=(sd.rows, sd.checksum) == (td.rows, td.checksum),
            key_columns=[names[i] for i in key_pos],
            columns=names,
            ignored_columns=ignored,
        )
        if result.matches:
            return result
        first, total = diff_keys(scan_keys(src_batches(), src_spec), side.keys(), max_keys)
        wanted = {k for k, *_ in first}
        src_rows = scan_rows(src_batches(), src_spec, wanted) if wanted else {}
        tbl_rows = side.rows(wanted) if wanted else {}
        for k, kind, ns, nt in first:
            s, t = src_rows.get(k), tbl_rows.get(k)
            result.first_differing_keys.append(
                DifferingKey(
                    key=dict(zip(key_names, k)),
                    kind=kind,
                    source_rows=ns,
                    table_rows=nt,
                    source_values=dict(zip(names, s[0])) if s else None,
                    table_values=dict(zip(names, t[0])) if t else None,
                )
            )
        result.differing_keys = total
        return result
    finally:
        cleanup()


def _csv_header(path: Path) -> list[str]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        return next(csv.reader(fh))


def source_table_for(acidflow_table: str, schema: str = "public") -> str:
    """The PostgreSQL table of an acidflow table by the default mapping:
    ``<db>.<table>`` -> ``<schema>.<table>`` (``pgbench.pgbench_accounts`` ->
    ``public.pgbench_accounts``)."""
    return f"{schema}.{acidflow_table.split('.')[-1]}"


def acidflow_table_for(source_table: str, db: str) -> str:
    """The acidflow table of a PostgreSQL table by the default mapping:
    ``<schema>.<table>`` -> ``<db>.<table>``."""
    return f"{db}.{source_table.split('.')[-1]}"
