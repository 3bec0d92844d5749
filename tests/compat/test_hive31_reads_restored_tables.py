"""Restored and rolled-back tables (acidflow.tableops.restore) read by Hive 3.1.3's own ACID
reader (``tests/compat/hive31.py``): exactly acidflow's snapshot, ROW__IDs included -- after a
restore by events, by a new base, on Spark and with pyarrow, and at the write ids before it
(Hive 3.1's reader refuses snapshots below an INSERT OVERWRITE base: it takes a base without
``_metadata_acid`` for a compacted one, so those are checked before the base restore).
"""

from __future__ import annotations

import pytest

from acidflow.compactor import cleaner
from acidflow.storage.retention import RETAIN_COMMITS
from acidflow.tableops.restore import restore, rollback
from tests.compat.hive31 import Hive31Oracle, require_hive31_tools, same_as_acidflow
from tests.support import history_tables as ht

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ARTIFACTS = require_hive31_tools()


@pytest.fixture(scope="module")
def hive31():
    with Hive31Oracle(ARTIFACTS) as oracle:
        yield oracle


@pytest.mark.parametrize(
    "shape", ["keyed_bucketed", "keyed_partitioned_unbucketed", "unkeyed_partitioned_bucketed"]
)
def test_hive31_reads_restored_tables_as_acidflow_does(spark, catalog, hive31, shape):
    ht.make_table(catalog, shape, **{RETAIN_COMMITS: "100"})
    ht.history(catalog, "db.h")
    r = restore(catalog, "db.h", 3, spark=spark, base_fraction=1e9)  # events, on Spark
    assert set(r.methods.values()) == {"events"}
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=3)
    same_as_acidflow(hive31, catalog, "db.h")
    for w in (2, 6):  # the snapshots before the restore (below a new base Hive 3.1 refuses)
        same_as_acidflow(hive31, catalog, "db.h", as_of_write_id=w)
    r = restore(catalog, "db.h", 5, base_fraction=0.0)  # a base, pyarrow
    assert set(r.methods.values()) == {"base"}
    same_as_acidflow(hive31, catalog, "db.h")
    rollback(catalog, "db.h", spark=spark)  # back to write id 7
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=3)
    same_as_acidflow(hive31, catalog, "db.h")
    same_as_acidflow(hive31, catalog, "db.h", as_of_write_id=8)
    # after a major compaction and clean (everything retained), Hive reads the current state
    ht.compact(catalog, "db.h", "major", spark=spark)
    cleaner.run_cleaner(catalog, reader_timeout_s=0)
    same_as_acidflow(hive31, catalog, "db.h")
    assert ht.values(catalog, "db.h", as_of_write_id=8) == ht.values(
        catalog, "db.h", as_of_write_id=5
    )
