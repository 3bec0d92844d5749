"""History retention (acidflow.history.retain.commits / .hours) on real files and a real
catalog: after minor and major compactions and the cleaner, time travel and incremental reads
to every retained write id return what they returned before; the cleaner keeps the obsolete
directories they read (its queue entry stays ready for cleaning) and removes them once a lower
retention lets them go; beyond that, NotEnoughHistoryError names the oldest readable write id.
Partitioned and unpartitioned, bucketed and unbucketed, keyed and unkeyed tables."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from acidflow.compactor import cleaner
from acidflow.format.layout import NotEnoughHistoryError
from acidflow.read import history
from acidflow.read import table as reads
from acidflow.storage.retention import RETAIN_COMMITS, RETAIN_HOURS
from tests.support import history_tables as ht


def dirs(catalog, name: str = "db.h") -> set[str]:
    root = Path(catalog.get_table(name).location)
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_dir() and p.name.startswith(("base_", "delta_", "delete_delta_"))
    }


def snapshots(catalog, hwm: int, name: str = "db.h") -> dict[int, collections.Counter]:
    return {w: ht.with_ids(catalog, name, as_of_write_id=w) for w in range(0, hwm + 1)}


def two_majors(catalog, name: str = "db.h") -> tuple[list[int], dict[int, collections.Counter]]:
    """w1..w6, minor, w7, major (base_7), w8..w9, major (base_9): returns write ids and the
    snapshots at every write id taken before any compaction touched them."""
    wids = ht.history(catalog, name)
    before = snapshots(catalog, wids[-1], name)
    ht.compact(catalog, name, "minor")
    wids.append(ht.put(catalog, name, [20, 21], "e"))
    before[wids[-1]] = ht.with_ids(catalog, name)
    ht.compact(catalog, name, "major")
    wids.append(ht.drop(catalog, name, [1, 20]))
    before[wids[-1]] = ht.with_ids(catalog, name)
    wids.append(ht.put(catalog, name, [7, 22], "f"))
    before[wids[-1]] = ht.with_ids(catalog, name)
    ht.compact(catalog, name, "major")
    return wids, before


@pytest.mark.parametrize("shape", list(ht.SHAPES))
def test_time_travel_survives_compaction_and_clean_within_retention(catalog, shape):
    ht.make_table(catalog, shape, **{RETAIN_COMMITS: "100", RETAIN_HOURS: "0"})
    wids, before = two_majors(catalog)
    assert wids == list(range(1, 10))
    obsolete_before_clean = dirs(catalog)
    rep = cleaner.run_cleaner(catalog)

    # everything retained: the old base and the deltas snapshots 0..8 read stay (the small
    # deltas under the minor compaction's delta_1_6, and delta_7 under base_7, go); entries wait
    kept = dirs(catalog)
    assert kept < obsolete_before_clean
    leaves = {d.rsplit("/", 1)[-1] for d in kept}
    assert {
        "base_0000007",
        "base_0000009",
        "delta_0000001_0000006",
        "delete_delta_0000008_0000008_0000",
    } <= leaves
    assert rep.retained and not set(rep.retained) & set(rep.cleaned)
    for cq in rep.retained:
        entry = catalog.get_compaction(cq)
        assert entry.state == "ready for cleaning"
        assert entry.details["retained"] == rep.retained[cq]
        assert "history retention: write ids 0..9 retained" in entry.details["retained_until"]
    for w in range(0, 10):
        assert ht.with_ids(catalog, "db.h", as_of_write_id=w) == before[w], w

    # a second pass changes nothing
    cleaner.run_cleaner(catalog)
    assert dirs(catalog) == kept

    # lower retention to the last 2 commits (write ids 7..9): the next pass removes what
    # only snapshots 0..6 read, succeeds the entries, and 7..9 still read the same
    catalog.set_table_properties("db.h", {RETAIN_COMMITS: "2"})
    assert history.retained_range(catalog, "db.h").oldest == 7
    rep = cleaner.run_cleaner(catalog)
    assert rep.cleaned and all(
        catalog.get_compaction(cq).state == "succeeded" for cq in rep.cleaned
    )
    # base_7 and the delete delta of 8 are still read by snapshots 7 and 8
    assert rep.retained and all(
        set(v) == {"base_0000007", "delete_delta_0000008_0000008_0000"}
        for v in rep.retained.values()
    )
    left = dirs(catalog)
    assert left < kept
    assert not any(
        d.endswith(("delta_0000001_0000006", "delta_0000002_0000002_0000")) for d in left
    )
    for w in (7, 8, 9):
        assert ht.with_ids(catalog, "db.h", as_of_write_id=w) == before[w], w

    # beyond: Hive's message plus the oldest write id still readable (base_7's snapshot)
    assert history.oldest_readable_write_id(catalog, "db.h") == 7
    with pytest.raises(NotEnoughHistoryError) as err:
        ht.with_ids(catalog, "db.h", as_of_write_id=3)
    assert "Not enough history available for (3,x)" in str(err.value)
    assert str(err.value).endswith("the oldest write id still readable is 7")
    assert err.value.oldest_readable_write_id == 7

    # Hive's behaviour: retention 0 / 0 keeps only the current snapshot
    catalog.set_table_properties("db.h", {RETAIN_COMMITS: "0"})
    ht.put(catalog, "db.h", [30], "g")
    after = ht.with_ids(catalog, "db.h")
    ht.compact(catalog, "db.h", "major")
    rep = cleaner.run_cleaner(catalog)
    assert not rep.retained
    assert all(c.state == "succeeded" for c in catalog.list_compactions("db.h"))
    assert ht.with_ids(catalog, "db.h") == after
    left = dirs(catalog)  # one base per partition, nothing else
    assert all(d.split("/")[-1].startswith("base_") for d in left), left
    assert len({d.rsplit("/", 1)[0] if "/" in d else "" for d in left}) == len(left), left
    with pytest.raises(NotEnoughHistoryError, match="oldest write id still readable is 10"):
        ht.with_ids(catalog, "db.h", as_of_write_id=8)


@pytest.mark.default_retention
@pytest.mark.parametrize("shape", list(ht.SHAPES))
def test_default_retention_keeps_ten_commits(catalog, shape):
    ht.make_table(catalog, shape)
    wids, before = two_majors(catalog)
    cleaner.run_cleaner(catalog)
    rng = history.retained_range(catalog, "db.h")
    assert (rng.oldest, rng.newest) == (0, 9)  # 9 commits, all within 24 h
    assert rng.describe() == "write ids 0..9 retained (10 commits / 24 h)"
    for w in range(0, 10):
        assert ht.with_ids(catalog, "db.h", as_of_write_id=w) == before[w], w


def test_hours_bound_alone_retains_what_was_current_within_the_window(catalog):
    ht.make_table(catalog, "keyed_bucketed", **{RETAIN_COMMITS: "0", RETAIN_HOURS: "1"})
    wids, before = two_majors(catalog)
    cleaner.run_cleaner(catalog)
    for w in range(0, 10):  # all commits are minutes old
        assert ht.with_ids(catalog, "db.h", as_of_write_id=w) == before[w], w
    catalog.set_table_properties("db.h", {RETAIN_HOURS: "0"})
    rep = cleaner.run_cleaner(catalog)
    assert rep.cleaned and not rep.retained
    assert ht.with_ids(catalog, "db.h") == before[9]
    with pytest.raises(NotEnoughHistoryError, match="oldest write id still readable is 9"):
        ht.with_ids(catalog, "db.h", as_of_write_id=8)


def test_aborted_directories_go_at_once_even_when_retained(catalog):
    from tests.support import acidtables as at

    ht.make_table(catalog, "unkeyed_unpartitioned", **{RETAIN_COMMITS: "100"})
    ht.history(catalog, "db.h")
    at.write(catalog, "db.h", {0: [(99, "x")]}, end="abort")
    assert "delta_0000007_0000007_0000" in dirs(catalog)
    rep = cleaner.run_cleaner(catalog)
    assert rep.aborted == {"db.h": ["delta_0000007_0000007_0000"]}
    assert "delta_0000007_0000007_0000" not in dirs(catalog)


def test_bad_retention_values_are_refused_with_table_property_and_value(catalog):
    ht.make_table(catalog, "keyed_bucketed")
    with pytest.raises(
        ValueError,
        match=r"table db\.h: property acidflow\.history\.retain\."
        r"commits='-2' is not a number of commits",
    ):
        catalog.set_table_properties("db.h", {RETAIN_COMMITS: "-2"})
    with pytest.raises(
        ValueError,
        match=r"table db\.h: property acidflow\.history\.retain\."
        r"hours='soon'",
    ):
        catalog.set_table_properties("db.h", {RETAIN_HOURS: "soon"})
    assert RETAIN_COMMITS not in catalog.get_table("db.h").properties


def test_tables_yaml_refuses_a_bad_retention_value(tmp_path):
    from acidflow.tables_config import load_tables_config

    cfg = tmp_path / "t.yaml"
    cfg.write_text(
        "tables:\n  - name: db.y\n    columns: [{name: id, type: int}]\n"
        "    properties: {acidflow.history.retain.hours: '-1'}\n"
    )
    with pytest.raises(ValueError, match=r"db\.y.*acidflow\.history\.retain\.hours='-1'"):
        load_tables_config(str(cfg))


def test_describe_shows_the_retained_range(catalog, warehouse, monkeypatch):
    from acidflow.cli.app import app

    ht.make_table(catalog, "keyed_bucketed", **{RETAIN_COMMITS: "2", RETAIN_HOURS: "0"})
    ht.history(catalog, "db.h")
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", str(warehouse))
    monkeypatch.setenv("ACIDFLOW_CATALOG_URL", f"sqlite:///{warehouse / '_acidflow_catalog.db'}")
    res = CliRunner().invoke(app, ["describe", "db.h"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "write ids 4..6 retained (2 commits / 0 h)" in res.output


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("shape", ["keyed_bucketed", "keyed_partitioned_unbucketed"])
def test_incremental_reads_within_retention_after_compaction_and_clean(spark, catalog, shape):
    ht.make_table(catalog, shape, **{RETAIN_COMMITS: "4", RETAIN_HOURS: "0"})
    assert ht.history(catalog, "db.h") == list(range(1, 7))

    def incr(a: int, b: int) -> collections.Counter:
        df = reads.read_incremental(spark, catalog, "db.h", a, b)
        return collections.Counter((r["op"], r["write_id"], r["id"], r["v"]) for r in df.collect())

    pairs = [(a, b) for a in range(2, 7) for b in range(a, 7)]
    want = {p: incr(*p) for p in pairs}
    ht.compact(catalog, "db.h", "major")
    cleaner.run_cleaner(catalog, reader_timeout_s=0)  # Spark reads' registrations
    assert history.retained_range(catalog, "db.h").oldest == 2
    for p in pairs:
        assert incr(*p) == want[p], p
    # beyond retention, after the clean: the same error from an incremental read
    catalog.set_table_properties("db.h", {RETAIN_COMMITS: "0"})
    cleaner.run_cleaner(catalog, reader_timeout_s=0)  # Spark reads' registrations
    with pytest.raises(NotEnoughHistoryError, match="oldest write id still readable is 6"):
        incr(3, 6).most_common()


def test_a_base_without_the_history_file_keeps_hives_rule(catalog):
    # compacted while the table retained nothing (Hive's own compactions look the same): no
    # _acidflow_history, so reads below the base are refused although the deltas are there
    ht.make_table(catalog, "keyed_bucketed", **{RETAIN_COMMITS: "0", RETAIN_HOURS: "0"})
    ht.history(catalog, "db.h")
    ht.compact(catalog, "db.h", "major")
    root = Path(catalog.get_table("db.h").location)
    assert not (root / "_acidflow_history").exists()
    assert (root / "delta_0000001_0000001_0000").is_dir()
    catalog.set_table_properties("db.h", {RETAIN_COMMITS: "100"})
    with pytest.raises(NotEnoughHistoryError, match=r"Not enough history available for \(3,x\)"):
        ht.with_ids(catalog, "db.h", as_of_write_id=3)
    # with retention on, the first base of a partition records its complete history
    ht.make_table(catalog, "keyed_bucketed", name="db.g", **{RETAIN_COMMITS: "100"})
    ht.history(catalog, "db.g")
    ht.compact(catalog, "db.g", "major")
    groot = Path(catalog.get_table("db.g").location)
    assert json.loads((groot / "_acidflow_history").read_text()) == {"full_history_below": None}
    assert ht.with_ids(catalog, "db.g", as_of_write_id=3)
