"""Batch ingest: landing files (CSV, JSON lines, Parquet) of one data interval loaded into a
full-ACID table once (``job``), and its spark-submit subcommand (``entry``).

``from acidflow.ingest import ingest`` is the job's function. This package and ``acidflow.cdc``
do not import each other; what they share (bad records and their quarantine, the tables config)
lives below both (``acidflow.sources.records``, ``acidflow.quarantine``,
``acidflow.tables_config``).
"""

from __future__ import annotations

from acidflow.ingest.job import (
    FILE_FORMATS,
    MODES,
    ExistingKeysError,
    IngestReport,
    LandingFileError,
    RerunPlan,
    ingest,
    landing_files,
    plan_rerun,
)
from acidflow.ingest.landing import UnreadableFile, check_landing_file

__all__ = [
    "FILE_FORMATS",
    "MODES",
    "ExistingKeysError",
    "IngestReport",
    "LandingFileError",
    "RerunPlan",
    "UnreadableFile",
    "check_landing_file",
    "ingest",
    "landing_files",
    "plan_rerun",
]
