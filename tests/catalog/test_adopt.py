"""``Catalog.adopt_table``: an existing Hive ACID table directory registered with its write-id
history, on every catalog backend of the suite. The contract (catalog/base.py): write ids
1..hwm allocated, open ones recorded as aborted, the next allocation hwm+1, ``valid_write_ids``
= the history with open turned aborted, commit records say "adopted", directories above the
high watermark refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from acidflow.catalog import TableDef, TableExistsError
from acidflow.format.layout import ValidWriteIdList
from acidflow.storage.adoption import AdoptionError
from tests.catalog.conftest import sales_table, sql_only

LONG_MAX = 9223372036854775807


def hive_dir(root: Path, *dirs: str) -> Path:
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
        (root / d / "bucket_00000").write_bytes(b"orc")
    return root


def adopted(catalog, root: Path, history: ValidWriteIdList, name: str = "sales.orders") -> TableDef:
    return catalog.adopt_table(sales_table(name, location=str(root), external=True), history)


def test_history_and_next_write_id(catalog, tmp_path):
    root = hive_dir(
        tmp_path / "orders",
        "ds=a/delta_0000002_0000002_0000",
        "ds=a/delete_delta_0000003_0000003_0000",
        "ds=b/delta_0000001_0000005",
        "ds=b/delta_0000007_0000007_0000",
    )
    hist = ValidWriteIdList("hive_db.orders", 9, open_write_ids=(7,), aborted_write_ids=(4,))
    table = adopted(catalog, root, hist)
    assert table.name == "sales.orders" and table.location == str(root)
    valid = catalog.valid_write_ids("sales.orders")
    assert valid == ValidWriteIdList("sales.orders", 9, (), (4, 7))
    assert valid.to_string() == f"sales.orders:9:{LONG_MAX}::4,7"
    # time travel inside Hive's history
    assert catalog.valid_write_ids("sales.orders", as_of_write_id=5) == ValidWriteIdList(
        "sales.orders", 5, (), (4,)
    )
    txn = catalog.open_transaction()
    assert catalog.allocate_write_id(txn, "sales.orders") == 10
    catalog.commit_transaction(txn)
    assert catalog.valid_write_ids("sales.orders") == ValidWriteIdList(
        "sales.orders", 10, (), (4, 7)
    )


@sql_only(
    "the metastore backend keeps adopted write ids in the metastore only; its side "
    "catalog records none (docs/hms-catalog.md, Known limits)"
)
def test_adopted_write_ids_are_recorded(catalog, tmp_path):
    """The SQL catalog records the adopted history: states, commit records naming the
    directories, Hive's deltas as compaction candidates, the open-at-adoption delta aborted."""
    root = hive_dir(
        tmp_path / "orders",
        "ds=a/delta_0000002_0000002_0000",
        "ds=a/delete_delta_0000003_0000003_0000",
        "ds=b/delta_0000001_0000005",
        "ds=b/delta_0000007_0000007_0000",
    )
    adopted(
        catalog,
        root,
        ValidWriteIdList("hive_db.orders", 9, open_write_ids=(7,), aborted_write_ids=(4,)),
    )
    states = {w: s for w, _t, s in catalog.write_id_states("sales.orders")}
    assert states == {
        1: "committed",
        2: "committed",
        3: "committed",
        4: "aborted",
        5: "committed",
        7: "aborted",
    }
    records = catalog.commit_records("sales.orders")
    assert [r.write_id for r in records] == [1, 2, 3, 5]
    assert {tuple(r.operations) for r in records} == {("adopted",)}
    assert records[0].stats["directories"] == ["ds=b/delta_0000001_0000005"]
    cands = {p: w for n, p, w in catalog.compaction_candidates() if n == "sales.orders"}
    assert cands == {"ds=a": 3, "ds=b": 7}
    assert catalog.aborted_write_ids("sales.orders", "ds=b") == [7]


@sql_only(
    "one row per directory on SQL; the metastore backend replays every write id and "
    "refuses histories above 10,000 (tests/integration/test_hms_catalog.py)"
)
def test_huge_high_watermark_costs_nothing(catalog, tmp_path):
    root = hive_dir(tmp_path / "t", "ds=x/delete_delta_10000001_10000001_0000")
    (root / "ds=x" / "000000_0").write_bytes(b"orc")
    adopted(catalog, root, ValidWriteIdList("x", 10_000_001))
    assert catalog.valid_write_ids("sales.orders").high_watermark == 10_000_001
    assert [w for w, _t, _s in catalog.write_id_states("sales.orders")] == [10_000_001]
    txn = catalog.open_transaction()
    assert catalog.allocate_write_id(txn, "sales.orders") == 10_000_002
    catalog.abort_transaction(txn)


def test_refusals(catalog, tmp_path):
    root = hive_dir(tmp_path / "orders", "ds=a/delta_0000006_0000006_0000")
    with pytest.raises(
        AdoptionError,
        match=r"ds=a/delta_0000006_0000006_0000 .* above the "
        r"high watermark 5",
    ):
        adopted(catalog, root, ValidWriteIdList("t", 5))
    assert not catalog.table_exists("sales.orders")
    with pytest.raises(AdoptionError, match="does not exist"):
        adopted(catalog, tmp_path / "missing", ValidWriteIdList("t", 5))
    (tmp_path / "file").write_text("x")
    with pytest.raises(AdoptionError, match="not a directory"):
        adopted(catalog, tmp_path / "file", ValidWriteIdList("t", 5))
    with pytest.raises(ValueError, match="unknown primary key"):
        catalog.adopt_table(
            TableDef(
                name="a.b",
                columns=[{"name": "x", "type": "int"}],
                primary_key=["nope"],
                location=str(root),
                external=True,
            ),
            ValidWriteIdList("t", 6),
        )
    adopted(catalog, root, ValidWriteIdList("t", 6))
    assert catalog.valid_write_ids("sales.orders").high_watermark == 6


@sql_only(
    "on the metastore backend, adopting a table the metastore has checks the history "
    "and keeps Hive's write ids (test_hms_catalog.py::test_adopt_seeds_the_write_id_history)"
)
def test_adopting_twice_is_refused(catalog, tmp_path):
    root = hive_dir(tmp_path / "orders", "ds=a/delta_0000006_0000006_0000")
    adopted(catalog, root, ValidWriteIdList("t", 6))
    with pytest.raises(TableExistsError):
        adopted(catalog, root, ValidWriteIdList("t", 6))
