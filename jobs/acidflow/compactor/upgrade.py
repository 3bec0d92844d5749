"""``acidflow table upgrade``: rewrite a table's ACID v1 (Hive 0.14-2.x) partitions into Hive 3
(v2) bases.

Hive 3's own upgrade path (the pre-upgrade tool of HIVE-19233) demands a major compaction of
every v1 table with the old Hive before the upgrade, because Hive 3 reads no in-place update
events; Trino reads v1 tables only after it. acidflow does that compaction itself, through its
normal transaction and compaction path:

1. the partitions holding v1 directories are found (``acidflow.read.acidv1.partition_is_v1``);
   none: nothing to do (the table is v2 already), said so in the report;
2. the rows the table shows now (ROW__IDs included) are digested
   (``acidflow.maintenance.verify.checksum_batches`` over ``read_table``, which reads the v1
   partitions with Hive 2.3's merge);
3. an empty transaction commits a new write id W on the table, so the new bases' name
   ``base_W`` lies above every v1 base and never clashes with one;
4. each v1 partition gets a manual major compaction, run now (``run_worker``): the compaction
   reads the partition as Hive 2.3 does, writes ``base_W`` with ``_orc_acid_version``, the
   ``hive.acid.version`` footer and ``_metadata_acid``, keeps every row's ROW__ID
   ``(originalTransaction, bucket, rowId)`` unchanged (as a Hive 2 major compaction before
   Hive 3's upgrade keeps them; Hive 3 reads the plain v1 bucket ids as ``BucketCodec`` V0),
   verifies its output and publishes it (the compaction's own crash safety: a temp directory
   renamed into place; the old directories stay until the cleaner removes them once no reader
   needs them);
5. the table's rows are digested again and must be the same.

A partition holding v1 and v2 directories together is refused by the compaction's read
(``acidflow.read.acidv1.MixedAcidVersionError``).
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from acidflow.catalog.base import Catalog
from acidflow.catalog.records import CompactionState, CompactionType
from acidflow.compactor.initiator import request_compaction
from acidflow.compactor.worker import run_worker
from acidflow.engine.transaction import Transaction
from acidflow.errors import AcidflowError
from acidflow.format import acidv1 as acidv1_rules
from acidflow.maintenance.verify import Checksum, checksum_batches
from acidflow.read import acidv1
from acidflow.read.table import read_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class UpgradeError(AcidflowError, RuntimeError):
    """``acidflow table upgrade`` failed (names the table, the partition and the reason)."""


@dataclass
class UpgradeReport:
    """What an upgrade did.

    Attributes:
        table: the table; partitions: the v1 partitions rewritten ('' = unpartitioned);
        write_id: the write id of the new bases (None when nothing was done);
        compactions: the compaction queue ids; before / after: the row digests;
        nothing_to_do: why nothing was done (the table is v2 already), else None.
    """

    table: str
    partitions: list[str] = field(default_factory=list)
    write_id: int | None = None
    compactions: list[int] = field(default_factory=list)
    before: Checksum | None = None
    after: Checksum | None = None
    nothing_to_do: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "table": self.table,
            "partitions": self.partitions,
            "write_id": self.write_id,
            "compactions": self.compactions,
            "before": self.before.to_dict() if self.before else None,
            "after": self.after.to_dict() if self.after else None,
            "nothing_to_do": self.nothing_to_do,
        }


def _v1_partitions(catalog: Catalog, name: str) -> list[str]:
    """:func:`acidflow.read.acidv1.v1_partitions` of a catalog table at its latest snapshot."""
    td = catalog.get_table(name)
    return acidv1.v1_partitions(
        td.location,
        len(td.partition_columns),
        catalog.valid_write_ids(td.name),
        txn_state=catalog.visibility_lookup(),
    )


def table_checksum(catalog: Catalog, name: str) -> Checksum:
    """Digest of the table's visible rows now: ``(ROW__ID, data columns, partition columns)``
    of every row (``checksum_batches``)."""
    td = catalog.get_table(name)
    rows: pa.Table = read_table(None, catalog, name, row_id=True)
    names = [c.name for c in td.columns] + [c.name for c in td.partition_columns]
    return checksum_batches(rows.to_batches(), names)


def upgrade_table(
    catalog: Catalog, name: str, *, spark: "SparkSession | None" = None
) -> UpgradeReport:
    """Rewrite the ACID v1 partitions of a catalog table into v2 bases (module doc).

    Args:
        catalog: the catalog; name: the table (``db.table``);
        spark: run the compactions' tasks in Spark (None: in this process).
    Returns:
        An :class:`UpgradeReport`; ``nothing_to_do`` set for a table without v1 directories.
    Raises:
        UpgradeError: a compaction failed (its error named) or the digests differ.
        acidflow.read.acidv1.MixedAcidVersionError: a partition holds v1 and v2 directories
            (raised while digesting the rows before anything is written).
        acidflow.catalog.NoSuchTableError: no such table.
    """
    td = catalog.get_table(name)
    report = UpgradeReport(td.name)
    report.partitions = _v1_partitions(catalog, td.name)
    if not report.partitions:
        report.nothing_to_do = "no ACID v1 directory: the table is in the Hive 3 (v2) layout"
        return report
    report.before = table_checksum(catalog, td.name)
    with Transaction(catalog, agent_info="acidflow table upgrade") as txn:
        report.write_id = txn.write_id(td.name)
    try:
        user = getpass.getuser()
    except Exception:  # pragma: no cover - no user name in the environment
        user = "acidflow"
    for ppath in report.partitions:
        info = request_compaction(
            catalog, td.name, ppath or None, CompactionType.MAJOR, requester=user
        )
        report.compactions.append(info.id)
        out = run_worker(spark, catalog, cq_id=info.id)
        if out is None or out.state == CompactionState.FAILED:
            reason = out.report.get("error") if out else "the entry could not be claimed"
            raise UpgradeError(
                f"table {td.name}: partition {ppath or '<unpartitioned>'}: compaction "
                f"{info.id} did not upgrade it: {reason}"
            )
    report.after = table_checksum(catalog, td.name)
    if report.after != report.before:
        raise UpgradeError(
            f"table {td.name}: rows differ after the upgrade: before {report.before.to_dict()}, "
            f"after {report.after.to_dict()} (the old directories are kept until the cleaner)"
        )
    left = _v1_partitions(catalog, td.name)
    if left:
        raise UpgradeError(f"table {td.name}: partitions {left} still read ACID v1 directories")
    if td.properties.get(acidv1_rules.ACID_VERSION_PROPERTY) == "1":
        catalog.set_table_properties(td.name, {acidv1_rules.ACID_VERSION_PROPERTY: "2"})  # writable
    return report
