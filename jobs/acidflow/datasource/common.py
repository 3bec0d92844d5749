"""What the reader and the writer of the ``acid`` data source share: its options (checked
and lower-cased), the catalog settings its workers use, how they open the catalog and a lazy
heartbeat thread."""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime, timezone
from typing import Callable, Mapping

from acidflow.catalog import Catalog
from acidflow.catalog.base import is_embedded
from acidflow.catalog.records import TxnState
from acidflow.config import Settings, load_settings
from acidflow.errors import AcidflowError

NAME = "acid"
AGENT = "spark data source (acid)"
#: option keys (lower case): the table and catalog, the read options, the write options (with
#: Spark's ``checkpointLocation`` of a streaming write) -- one
#: set, since a temporary view's OPTIONS serve both its SELECTs and its INSERTs
OPTIONS = {
    "path",
    "table",
    "catalog",
    "warehouse",
    "asofwriteid",
    "asoftimestamp",
    "readoptimized",
    "splitbytes",
    "rowid",
    "filename",
    "columns",
    "fromwriteid",
    "towriteid",
    "fromtimestamp",
    "totimestamp",
    "compression",
    "striperows",
    "onexisting",
    "txnappid",
    "txnversion",
    "checkpointlocation",
    # the definition of a table a write creates (acidflow.datasource.create)
    "primarykey",
    "buckets",
    "clusteredby",
    "partitionby",
    "orderingcolumn",
    "bucketingversion",
}


class AcidDataSourceError(AcidflowError, ValueError):
    """Bad options of the ``acid`` data source (names the option and the table)."""


class TableOptionConflictError(AcidDataSourceError):
    """A write's table-definition option (``primaryKey``, ``buckets``, ``partitionBy``...)
    differs from the existing table's definition: the write is refused, nothing is changed
    (Delta Lake refuses a write whose partitioning differs from the table's the same way).

    Attributes:
        table: the table; option: the option's name as written (camelCase);
        table_value / given: the table's value and the option's, both as option text.
    """

    def __init__(self, table: str, option: str, table_value: str, given: str) -> None:
        self.table, self.option = table, option
        self.table_value, self.given = table_value, given
        super().__init__(
            f"acid data source, table {table}: option {option}={given!r} conflicts with the "
            f"existing table's {option}={table_value!r}; drop the option (it only applies "
            "when the write creates the table) or write to a table defined that way"
        )


# ---------------------------------------------------------------------------- options


def checked_options(options: Mapping[str, str]) -> dict[str, str]:
    """Options with lower-case keys (Spark's are case-insensitive).

    Raises:
        AcidDataSourceError: a key not in :data:`OPTIONS` (a typo would else be ignored).
    """
    out = {str(k).lower(): str(v) for k, v in options.items()}
    unknown = sorted(set(out) - OPTIONS)
    if unknown:
        raise AcidDataSourceError(
            f"acid data source: unknown option(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(OPTIONS))}"
        )
    return out


def table_name(opts: dict[str, str]) -> str:
    name = opts.get("table") or opts.get("path")
    if not name:
        raise AcidDataSourceError(
            "acid data source: name the table, load('db.table') / "
            "save('db.table') or option('table', 'db.table')"
        )
    return name


def int_option(opts: dict[str, str], key: str, table: str) -> int | None:
    if key not in opts:
        return None
    try:
        return int(opts[key])
    except ValueError:
        raise AcidDataSourceError(
            f"acid data source, table {table}: option {key}={opts[key]!r} is not an integer"
        ) from None


def timestamp_option(opts: dict[str, str], key: str, table: str) -> datetime | None:
    """An ISO 8601 time option (``2024-05-01T12:00:00``, ``2024-05-01 12:00:00+02:00``;
    naive = UTC), or None when absent.

    Raises:
        AcidDataSourceError: not such a time (names the option and the table).
    """
    if key not in opts:
        return None
    try:
        value = datetime.fromisoformat(opts[key].strip())
    except ValueError:
        raise AcidDataSourceError(
            f"acid data source, table {table}: option {key}={opts[key]!r} is not an ISO 8601 "
            "time (e.g. 2024-05-01T12:00:00, UTC unless it names an offset)"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def bool_option(opts: dict[str, str], key: str, table: str) -> bool:
    value = opts.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise AcidDataSourceError(
            f"acid data source, table {table}: option {key}={opts[key]!r} is not true/false"
        )
    return value == "true"


def resolve_settings(base: Settings | None, opts: dict[str, str]) -> Settings:
    """The catalog settings: ``base`` (captured by :func:`register`) or the environment's,
    with the ``catalog`` / ``warehouse`` options over them."""
    settings = base or load_settings(
        warehouse=opts.get("warehouse"), catalog_url=opts.get("catalog")
    )
    if "warehouse" in opts:
        settings = dataclasses.replace(settings, warehouse=opts["warehouse"])
    if "catalog" in opts:
        settings = dataclasses.replace(settings, catalog_url=opts["catalog"])
    return settings


def open_catalog(settings: Settings, *, planning: bool = False) -> Catalog:
    """The catalog of ``settings``.

    Args:
        planning: opened by the planning side (``schema()``, ``writer()``, ``streamWriter()``,
            in a Python worker of the driver): an embedded catalog
            (:func:`acidflow.catalog.base.is_embedded`, the default SQLite file) is created
            and migrated on first use, as the ``acidflow`` commands do; a server catalog is
            used as it is. Spark tasks never migrate (planning did).
    Raises:
        acidflow.catalog.errors.CatalogDatabaseError: the catalog cannot be used; a server
            catalog never initialised names its URL (password masked) and ``acidflow
            catalog init``.
    """
    return Catalog.from_settings(settings, migrate=planning and is_embedded(settings.catalog_url))


class Heartbeat:
    """A daemon thread calling ``beat(catalog)`` every ``period_s`` seconds (first after one
    period, so short tasks never connect) until ``beat`` returns False or :meth:`stop`."""

    def __init__(self, settings: Settings, beat: Callable[[Catalog], bool]) -> None:
        self.settings, self.beat = settings, beat
        self.period_s = max(1.0, settings.txn_timeout_s / 3.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="acid-heartbeat")

    def _run(self) -> None:
        catalog: Catalog | None = None
        while not self._stop.wait(self.period_s):
            try:
                catalog = catalog or open_catalog(self.settings)
                if not self.beat(catalog):
                    return
            except Exception:  # noqa: BLE001 - the next beat retries; expiry is the fallback
                pass

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()


def beat_txn(catalog: Catalog, txn_id: int) -> bool:
    """Heartbeat an open transaction; False (stop) once it is no longer open."""
    if catalog.get_transaction(txn_id).state != TxnState.OPEN:
        return False
    catalog.heartbeat(txn_id)
    return True
