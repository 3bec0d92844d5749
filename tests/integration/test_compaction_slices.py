"""``hive.compactor.max.num.delta`` (Hive 3.1 ``CompactorMR``): a partition with more current
deltas than the limit is compacted in minor slices first, each published as an ordinary
compaction under the entry's transaction, then the requested compaction runs over the result;
the rows stay the same, the cleaner removes what the slices and the final step replaced."""

from __future__ import annotations

import decimal
from pathlib import Path

import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.format.bucketing import encode_bucket_property
from tests.support import acidtables as at

B0 = encode_bucket_property(0, 0)
COLS = [Column("id", "int"), Column("name", "string"), Column("price", "decimal(10,2)")]
CFG = CompactorConfig(heartbeat_s=0, target_file_bytes=0)
LIMIT = {"compactorthreshold.hive.compactor.max.num.delta": "3"}


def row(i: int, tag: str = "a") -> tuple:
    return (i, f"{tag}{i}", decimal.Decimal(i) / 4)


def eight_deltas(catalog, name: str) -> None:
    """Write ids 1..7 leaving 8 current delta directories: inserts, an update (insert and
    delete delta of write id 3) and a delete (write id 5)."""
    catalog.create_table(TableDef(name=name, columns=COLS, properties=dict(LIMIT)))
    at.write(catalog, name, {0: [row(i) for i in range(4)]})  # w1
    at.write(catalog, name, {0: [row(i) for i in range(4, 8)]})  # w2
    at.write(catalog, name, {0: [row(1, "u")]}, [(1, B0, 1)])  # w3 update
    at.write(catalog, name, {0: [row(8)]})  # w4
    at.write(catalog, name, deletes=[(2, B0, 0), (1, B0, 2)])  # w5 delete
    at.write(catalog, name, {0: [row(9)]})  # w6
    at.write(catalog, name, {0: [row(10)]})  # w7


def listing(catalog, name: str) -> list[str]:
    loc = Path(catalog.get_table(name).location)
    return sorted(p.name for p in loc.iterdir() if not p.name.startswith((".", "_")))


ORIGINAL = [
    "delete_delta_0000003_0000003_0000",
    "delete_delta_0000005_0000005_0000",
    "delta_0000001_0000001_0000",
    "delta_0000002_0000002_0000",
    "delta_0000003_0000003_0000",
    "delta_0000004_0000004_0000",
    "delta_0000006_0000006_0000",
    "delta_0000007_0000007_0000",
]
SLICES = [
    "delete_delta_0000003_0000004",
    "delete_delta_0000005_0000007",
    "delta_0000001_0000002",
    "delta_0000003_0000004",
    "delta_0000005_0000007",
]


@pytest.mark.parametrize(
    ("kind", "final"),
    [
        ("minor", ["delete_delta_0000001_0000007", "delta_0000001_0000007"]),
        ("major", ["base_0000007"]),
    ],
)
def test_max_num_delta_compacts_in_slices(catalog, kind, final):
    """Limit 3 per table, 8 deltas: slices [w1, w2], [w3 (insert + delete), w4],
    [w5 delete, w6, w7] become minor compactions of their own, then the requested
    compaction reads their output; rows and older snapshots read the same; the cleaner
    leaves only the final directories."""
    name = "db.s"
    eight_deltas(catalog, name)
    assert listing(catalog, name) == ORIGINAL
    before = at.rows(catalog, name)
    before_at3 = at.rows(catalog, name, as_of_write_id=3)
    assert len(before) == 4 + 4 + 1 + 1 + 1 + 1 - 1 - 2

    info = initiator.request_compaction(catalog, name, None, kind)
    out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out and out.report
    assert [s["inputs"] for s in out.report["slices"]] == [
        ["delta_0000001_0000001_0000", "delta_0000002_0000002_0000"],
        [
            "delete_delta_0000003_0000003_0000",
            "delta_0000003_0000003_0000",
            "delta_0000004_0000004_0000",
        ],
        [
            "delete_delta_0000005_0000005_0000",
            "delta_0000006_0000006_0000",
            "delta_0000007_0000007_0000",
        ],
    ]
    assert sorted(out.report["inputs"]) == SLICES
    assert sorted(out.report["outputs"]) == final
    # the slices published as Hive names a minor compaction's output, next to the final one
    assert listing(catalog, name) == sorted(ORIGINAL + SLICES + final)
    assert at.rows(catalog, name) == before
    if kind == "minor":  # a base hides older snapshots (the suite retains no history)
        assert at.rows(catalog, name, as_of_write_id=3) == before_at3

    rep = cleaner.run_cleaner(catalog)
    assert rep.cleaned[info.id] and catalog.get_compaction(info.id).state == "succeeded"
    assert listing(catalog, name) == final
    assert at.rows(catalog, name) == before


def test_within_max_num_delta_compacts_in_one_go(catalog):
    """At most max.num.delta deltas (default 500): no slices, one minor compaction."""
    name = "db.one"
    catalog.create_table(TableDef(name=name, columns=COLS))
    for i in range(4):
        at.write(catalog, name, {0: [row(i)]})
    info = initiator.request_compaction(catalog, name, None, "minor")
    out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out and out.report
    assert "slices" not in out.report
    assert out.report["outputs"] == ["delta_0000001_0000004"]
