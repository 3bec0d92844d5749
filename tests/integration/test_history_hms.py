"""Retention, restore and rollback on the Hive Metastore backend (``thrift://``, a real Hive
3.1.3 metastore; commit records on the side catalog, write ids and their states in the
metastore): the same outcomes as on SQLite."""

from __future__ import annotations

import pytest

from acidflow.catalog import load_catalog
from acidflow.compactor import cleaner
from acidflow.format.layout import NotEnoughHistoryError
from acidflow.read import history
from acidflow.storage.retention import RETAIN_COMMITS, RETAIN_HOURS
from acidflow.tableops.restore import RestoreError, restore, rollback
from tests.support import history_tables as ht
from tests.support.hms import require_hive_artifacts, reset_metastore

pytestmark = [pytest.mark.slow]

ARTIFACTS = require_hive_artifacts()


@pytest.fixture
def catalog(hive_metastore, tmp_path):
    reset_metastore(hive_metastore.url)
    cat = load_catalog(hive_metastore.url, warehouse=str(tmp_path / "warehouse"))
    yield cat
    cat.close()


def test_retention_restore_and_rollback_on_the_metastore(catalog):
    ht.make_table(
        catalog, "keyed_partitioned_unbucketed", **{RETAIN_COMMITS: "100", RETAIN_HOURS: "0"}
    )
    assert ht.history(catalog, "db.h") == [1, 2, 3, 4, 5, 6]
    snaps = {w: ht.with_ids(catalog, "db.h", as_of_write_id=w) for w in range(0, 7)}
    ht.compact(catalog, "db.h", "major")
    cleaner.run_cleaner(catalog, reader_timeout_s=0)
    for w in range(0, 7):
        assert ht.with_ids(catalog, "db.h", as_of_write_id=w) == snaps[w], w
    assert (
        history.retained_range(catalog, "db.h").describe()
        == "write ids 0..6 retained (100 commits / 0 h)"
    )

    r = restore(catalog, "db.h", 2)
    assert r.write_id == 7
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=2)
    assert catalog.commit_records("db.h")[-1].stats["restored_to_write_id"] == 2
    rb = rollback(catalog, "db.h")
    assert (rb.to_write_id, rb.write_id) == (6, 8)
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=6)
    with pytest.raises(RestoreError, match="no such write id"):
        restore(catalog, "db.h", 99)

    catalog.set_table_properties("db.h", {RETAIN_COMMITS: "1"})
    with pytest.raises(RestoreError, match="outside history retention"):
        restore(catalog, "db.h", 5)
    ht.compact(catalog, "db.h", "major")
    cleaner.run_cleaner(catalog, reader_timeout_s=0)
    with pytest.raises(NotEnoughHistoryError, match="oldest write id still readable is"):
        ht.with_ids(catalog, "db.h", as_of_write_id=3)
