"""The main job on embedded defaults: real PostgreSQL change data (pgbench through a wal2json
slot, ``include/sample_data/pgbench``) applied to the four pgbench tables, then reconciled
against the source tables' saved final contents.

Steps: register the tables of ``include/tables/pgbench.yaml`` (bucketed by primary key),
apply every landing file in LSN order as one batch each (``jobs.cdc.apply``), reconcile every
table (``jobs.quality.reconcile``), print a summary. A second run skips every batch and leaves
the tables identical.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO / "include" / "sample_data" / "pgbench"
TABLES_YAML = REPO / "include" / "tables" / "pgbench.yaml"


@dataclass
class DemoSummary:
    """What the demo did.

    Attributes:
        batches: :class:`jobs.cdc.apply.BatchReport` per landing file.
        tables: per table ``{rows, high_watermark, deltas, delete_deltas, matches,
            differing_keys}``.
        seconds: wall time.
    """

    batches: list = field(default_factory=list)
    tables: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every table reconciled exactly."""
        return bool(self.tables) and all(t["matches"] for t in self.tables.values())


def run_demo(spark, catalog, sample_dir: Path = SAMPLE_DIR,
             tables_yaml: Path = TABLES_YAML) -> DemoSummary:
    """Apply the sample batches and reconcile (see module docstring).

    Raises:
        FileNotFoundError: no sample data; any batch error (its transaction is aborted).
    """
    from jobs.cdc.apply import CdcOptions, apply_path
    from jobs.cdc.tables import load_tables_config, with_position_column
    from jobs.quality.reconcile import SavedSource, reconcile
    from jobs.reads import acid_state_of

    t0 = time.monotonic()
    tables = load_tables_config(tables_yaml)
    for tdef in tables.values():
        catalog.create_table(with_position_column(tdef), if_not_exists=True)
    out = DemoSummary()
    out.batches = apply_path(spark, catalog, str(sample_dir / "landing"),
                             CdcOptions(fmt="wal2json", tables=tables, target_db="pgbench"))
    for source, tdef in sorted(tables.items()):
        res = reconcile(spark, catalog, tdef.name, SavedSource.from_dir(sample_dir, source))
        valid = catalog.valid_write_ids(tdef.name)
        state = acid_state_of(catalog.get_table(tdef.name).location, valid)
        out.tables[tdef.name] = {
            "rows": res.table_rows, "source_rows": res.source_rows,
            "high_watermark": valid.high_watermark,
            "base": state.base.name if state.base else "",
            "deltas": sum(1 for d in state.deltas if not d.is_delete),
            "delete_deltas": sum(1 for d in state.deltas if d.is_delete),
            "matches": res.matches, "differing_keys": res.differing_keys,
            "first_differing_keys": [str(k) for k in res.first_differing_keys[:3]]}
    out.seconds = time.monotonic() - t0
    return out
