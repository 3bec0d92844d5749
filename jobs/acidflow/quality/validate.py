"""Validation after commit: a table's expectation suite on its snapshot plus the ACID invariants.

:func:`validate` runs, for one table:

1. the GX suite (``acidflow.quality.gx``, expectations of scope ``both`` and ``snapshot``) on the
   visible rows of the current snapshot (pinned with ``reads.reader_snapshot`` while it runs);
2. the table checks the caller hands in (``checks``; the validate job ``acidflow.validation``
   passes ``acidflow.compactor.fsck.fsck_table``: missing metadata of committed directories,
   overlapping deltas, duplicate visible ROW__IDs, duplicate primary keys, orphan / aborted /
   open / obsolete directories);
3. ``acidflow.quality.invariants.check_table``: events sorted within each file, events in the bucket
   file their bucket property names, key index = last key of each stripe.

It fails when an expectation fails or a finding has severity ``error`` (orphans are warnings,
aborted/open/obsolete directories are info; both are reported, neither fails).
The report goes to ``<warehouse>/_quality/<table>/<run id>/validation.json`` next to the GX
``report.json`` / ``report.html`` of the same run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from acidflow.quality import gx, invariants
from acidflow.quality.findings import ERROR, Finding
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS

#: A table check: ``check(catalog, table name) -> findings`` (``acidflow.compactor.fsck.fsck_table``
#: has this shape).
TableCheck = Callable[[Any, str], list[Finding]]


@dataclass
class ValidationReport:
    """Outcome of :func:`validate`.

    Attributes:
        table: table name; run_id: report directory name; report_path: ``validation.json``;
        expectations: the suite's :class:`acidflow.quality.gx.GateResult` (None without a suite);
        findings: fsck and invariant findings (every severity); seconds: wall time.
    """

    table: str
    run_id: str
    report_path: str = ""
    expectations: Any | None = None
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def errors(self) -> list[Finding]:
        """Findings of severity ``error``."""
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def success(self) -> bool:
        """Every expectation passed and no finding is an error."""
        return not self.errors and (self.expectations is None or self.expectations.success)

    def summary(self) -> dict[str, Any]:
        """Short JSON-able summary: table, success, report, failed_expectations (lines),
        invariant_errors (``kind path: detail`` lines), warnings (count), suite (path or
        None)."""
        gx = self.expectations
        return {
            "table": self.table,
            "success": self.success,
            "report": self.report_path,
            "suite": gx.suite if gx else None,
            "expectations": len(gx.expectations) if gx else 0,
            "failed_expectations": [e.summary() for e in gx.failed] if gx else [],
            "invariant_errors": [
                f"{f.kind} {'/'.join(x for x in (f.partition, f.path) if x)}: {f.detail}"
                for f in self.errors
            ],
            "warnings": sum(1 for f in self.findings if f.severity != ERROR),
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything: the summary, the GX result summary, every finding."""
        return {
            **self.summary(),
            "run_id": self.run_id,
            "seconds": self.seconds,
            "gx": self.expectations.to_dict() if self.expectations else None,
            "findings": [f.to_dict() for f in self.findings],
        }


def validate(
    spark: Any,
    catalog: Any,
    table_name: str,
    *,
    suite_dir: str | None = None,
    checks: Sequence[TableCheck] = (),
) -> ValidationReport:
    """Validate one committed table (see module doc).

    Args:
        spark: SparkSession (the suite runs on a Spark DataFrame of the snapshot), or None
            (the snapshot is read with pyarrow in this process and checked with GX's pandas
            engine). File checks always run in this process with pyarrow.
        catalog: ``acidflow.catalog.Catalog``.
        table_name: ``<db>.<table>``.
        suite_dir: suites directory (None = ``acidflow.quality.gx.suite_dir_default()``).
        checks: table checks run after the suite, their findings first (in order), then the
            ACID invariants' (``acidflow.validation.validate`` passes the compactor's fsck).
    Returns:
        :class:`ValidationReport` (written to its ``report_path``).
    Raises:
        NoSuchTableError; acidflow.quality.gx.SuiteError for a broken suite file.
    """
    t0 = time.monotonic()
    table = catalog.get_table(table_name)
    run_id = gx.new_run_id("snapshot")
    report = ValidationReport(table.name, run_id)
    if gx.suite_path(suite_dir, table.name) is not None:
        with reads.reader_snapshot(catalog, table.name) as snap:
            data = snap.read(spark)
            report.expectations = gx.check(
                catalog,
                table.name,
                data,
                scope="snapshot",
                suite_dir=suite_dir,
                html="always",
                run_id=run_id,
            )
    findings: list[Finding] = []
    for check in checks:
        findings += check(catalog, table.name)
    report.findings = findings + invariants.check_table(catalog, table.name)
    report.seconds = round(time.monotonic() - t0, 3)
    report.report_path = gx.report_dir(catalog.warehouse, table.name, run_id) + "/validation.json"
    TableFS(catalog.warehouse).write_bytes(
        report.report_path, json.dumps(report.to_dict(), indent=1, default=str).encode()
    )
    return report
