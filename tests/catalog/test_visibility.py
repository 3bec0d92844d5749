"""The ``_v<T>`` visibility lookup a catalog hands its readers, the compactor and the cleaner
(``Catalog.visibility_lookup``): passed explicitly to ``acid_state``, no process-wide registry."""

from __future__ import annotations

from acidflow.catalog import SqlCatalog
from acidflow.format.layout import DirEntry, ValidWriteIdList
from acidflow.storage import state
from acidflow.storage.fs import TableFS


def test_local_warehouses_need_no_lookup(tmp_path):
    cat = SqlCatalog(f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    assert cat.visibility_lookup() is None


def test_object_store_lookup_answers_from_the_catalog(tmp_path):
    cat = SqlCatalog(f"sqlite:///{tmp_path / 'c.db'}", warehouse="s3://bucket/wh")
    lookup = cat.visibility_lookup()
    assert lookup is not None
    txn = cat.open_transaction()
    assert lookup(txn) == "open"
    cat.abort_transaction(txn, "test")
    assert lookup(txn) == "aborted"
    done = cat.open_transaction()
    cat.commit_transaction(done)
    assert lookup(done) == "committed"
    assert lookup(10**9) == "committed"  # a transaction this catalog never had (Hive 4 output)


def test_acid_state_uses_only_the_lookup_it_is_given(tmp_path):
    """A ``_v<T>`` base of an open T is invisible with the catalog's lookup and visible
    without one (Trino's reading), whatever other catalogs exist in the process."""
    cat = SqlCatalog(f"sqlite:///{tmp_path / 'c.db'}", warehouse="s3://bucket/wh")
    open_txn = cat.open_transaction()
    pdir = tmp_path / "t"
    for d in ("delta_0000001_0000001_0000", f"base_0000001_v{open_txn:07d}"):
        (pdir / d).mkdir(parents=True)
        (pdir / d / "bucket_00000").write_bytes(b"")
    entries = [
        DirEntry("delta_0000001_0000001_0000/bucket_00000", is_dir=False, size=0),
        DirEntry(f"base_0000001_v{open_txn:07d}/bucket_00000", is_dir=False, size=0),
    ]
    valid = ValidWriteIdList("db.t", 1)
    tfs = TableFS(str(pdir))
    without = state.acid_state(tfs, str(pdir), valid, entries=entries)
    assert without.base is not None and without.base.name.startswith("base_0000001_v")
    seen = state.acid_state(
        tfs, str(pdir), valid, entries=entries, txn_state=cat.visibility_lookup()
    )
    assert seen.base is None
    assert [d.name for d in seen.deltas] == ["delta_0000001_0000001_0000"]
