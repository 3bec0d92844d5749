"""Warehouse ownership, exclusive directory creates and table locations, on real SQLite catalogs,
real ORC files and the real local / ``memory://`` filesystems (no Spark: the statements write Arrow
tables in this process)."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import pyarrow as pa
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.catalog.errors import TableLocationError, WarehouseOwnedError
from acidflow.catalog.warehouse import WAREHOUSE_MARKER, forget_checks, read_marker
from acidflow.engine.statements import changes
from acidflow.engine.transaction import Transaction
from acidflow.format.types import arrow_schema
from acidflow.maintenance.compaction import (
    VERIFIED_MARKER,
    CompactionError,
    finish_publish,
)
from acidflow.read import table as reads
from acidflow.storage.fs import CLAIM_FILE, DirectoryClaimedError, TableFS, new_claim
from acidflow.tables_config import load_tables_config


def accounts(name: str = "bank.accounts", **kwargs) -> TableDef:
    return TableDef(
        name=name,
        columns=[Column("id", "int"), Column("owner", "string")],
        primary_key=["id"],
        **kwargs,
    )


def write_rows(cat: SqlCatalog, name: str, rows: list[dict]) -> None:
    """One committed insert statement (split-update primitive, Arrow path)."""
    table = cat.get_table(name)
    data = pa.Table.from_pylist(
        rows, schema=arrow_schema([(c.name, c.hive_type) for c in table.columns])
    )
    none = pa.table(
        {
            "owid": pa.array([], pa.int64()),
            "bprop": pa.array([], pa.int32()),
            "rowid": pa.array([], pa.int64()),
        }
    )
    with Transaction(cat, heartbeat_s=0) as txn:
        changes.apply_row_changes(
            txn,
            name,
            data,
            none,
            counts={"rows_inserted": len(rows), "rows_updated": 0, "rows_deleted": 0},
        )


def read_rows(cat: SqlCatalog, name: str) -> list[dict]:
    got = reads.run_plan(None, reads.plan_table(cat, name))
    return sorted(got.select(["id", "owner"]).to_pylist(), key=lambda r: r["id"])


@pytest.fixture(autouse=True)
def _fresh_owner_cache():
    forget_checks()
    yield
    forget_checks()


# ---------------------------------------------------------------------------- ownership


def test_second_catalog_refuses_a_warehouse_another_catalog_owns(tmp_path):
    """A second catalog (another SQLite file) pointed at the same warehouse refuses to write there -
    create, write id - naming both catalogs and the warehouse; the first catalog's committed rows
    are untouched and reads still work."""
    wh = tmp_path / "wh"
    first = SqlCatalog(f"sqlite:///{tmp_path / 'one.db'}", warehouse=str(wh))
    second = SqlCatalog(f"sqlite:///{tmp_path / 'two.db'}", warehouse=str(wh))
    first.create_table(accounts())
    write_rows(first, "bank.accounts", [{"id": 1, "owner": "ann"}])
    marker = json.loads((wh / WAREHOUSE_MARKER).read_text())
    assert marker["catalog_id"] == first.catalog_id()
    assert marker["catalog_url"] == f"sqlite:///{tmp_path / 'one.db'}"
    assert first.catalog_id() != second.catalog_id()

    with pytest.raises(WarehouseOwnedError) as exc:
        second.create_table(accounts())
    msg = str(exc.value)
    for part in (first.catalog_id(), second.catalog_id(), str(wh), "one.db", "two.db"):
        assert part in msg
    assert not second.table_exists("bank.accounts")
    txn = second.open_transaction()
    with pytest.raises(WarehouseOwnedError):
        second.allocate_write_id(txn, "bank.accounts")
    with pytest.raises(WarehouseOwnedError):
        second.claim_compaction("w1")
    assert read_rows(first, "bank.accounts") == [{"id": 1, "owner": "ann"}]
    # the marker is written once: the first catalog's id is still there
    assert read_marker(str(wh))["catalog_id"] == first.catalog_id()
    # the cache is per (warehouse, catalog): the owner keeps writing
    write_rows(first, "bank.accounts", [{"id": 2, "owner": "bob"}])
    assert [r["id"] for r in read_rows(first, "bank.accounts")] == [1, 2]


def test_catalog_moved_away_mid_transaction_is_not_replaced_by_an_empty_one(tmp_path):
    """The owner's catalog file moved away while a transaction is open: a new process opening
    the same URL does not silently start an empty catalog beside the owned warehouse (which
    would show no tables and hand out write id 1 again); it is refused, naming both catalogs,
    and leaves no file behind. Put back, the catalog opens with its tables and history."""
    from acidflow.catalog.errors import NewCatalogOnOwnedWarehouseError

    wh, db = tmp_path / "wh", tmp_path / "cat.db"
    first = SqlCatalog(f"sqlite:///{db}", warehouse=str(wh))
    first.create_table(accounts())
    write_rows(first, "bank.accounts", [{"id": 1, "owner": "ann"}])
    owner_id = first.catalog_id()
    txn = first.open_transaction()
    first.close()
    db.rename(tmp_path / "moved.db")
    with pytest.raises(NewCatalogOnOwnedWarehouseError) as exc:
        SqlCatalog(f"sqlite:///{db}", warehouse=str(wh))
    assert isinstance(exc.value, WarehouseOwnedError)
    assert owner_id in str(exc.value) and str(db) in str(exc.value)
    assert "moved or deleted" in str(exc.value)
    assert not db.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["moved.db", "wh"]
    (tmp_path / "moved.db").rename(db)
    back = SqlCatalog(f"sqlite:///{db}", warehouse=str(wh))
    assert back.catalog_id() == owner_id
    assert read_rows(back, "bank.accounts") == [{"id": 1, "owner": "ann"}]
    assert txn in [t.txn_id for t in back.list_transactions(states=["open"])]
    # a brand-new warehouse still gets a brand-new catalog
    SqlCatalog(f"sqlite:///{tmp_path / 'other.db'}", warehouse=str(tmp_path / "wh2"))


def test_exclusive_create_refuses_to_replace_a_committed_delta(tmp_path):
    """With the ownership check bypassed, the second catalog's write id 1 would rewrite
    ``delta_0000001_0000001_0000`` in place; the exclusive directory create refuses, names the
    directory, and the first catalog's data is intact."""
    wh = tmp_path / "wh"
    first = SqlCatalog(f"sqlite:///{tmp_path / 'one.db'}", warehouse=str(wh))
    second = SqlCatalog(f"sqlite:///{tmp_path / 'two.db'}", warehouse=str(wh))
    first.create_table(accounts())
    write_rows(first, "bank.accounts", [{"id": 1, "owner": "ann"}, {"id": 2, "owner": "bob"}])
    delta = Path(first.get_table("bank.accounts").location) / "delta_0000001_0000001_0000"
    before = {p.name: p.read_bytes() for p in delta.iterdir()}
    assert "bucket_00000" in before and CLAIM_FILE in before

    second.check_warehouse_owner = lambda: None  # type: ignore[method-assign]  # bypassed
    second.create_table(accounts())
    with pytest.raises(DirectoryClaimedError) as exc:
        write_rows(second, "bank.accounts", [{"id": 1, "owner": "mallory"}])
    assert "delta_0000001_0000001_0000" in str(exc.value)
    assert "another writer or another catalog" in str(exc.value)
    assert {p.name: p.read_bytes() for p in delta.iterdir()} == before
    assert read_rows(first, "bank.accounts") == [
        {"id": 1, "owner": "ann"},
        {"id": 2, "owner": "bob"},
    ]
    assert second.list_transactions(["aborted"])  # the loser aborted, nothing visible


def test_claim_dir_is_exclusive_on_local_disk_and_memory(tmp_path):
    """A statement directory is created exclusively - the same claim (sibling tasks of one
    statement) shares it, any other claim or an unclaimed existing directory is refused - on local
    disk and on an fsspec store (``memory://``)."""
    for root in (str(tmp_path / "t"), "memory://wh-claims/t"):
        tfs = TableFS(root)
        d = f"{root}/delta_0000001_0000001_0000"
        mine, other = new_claim(write_id=1), new_claim(write_id=1)
        assert tfs.claim_dir(d, mine) is True
        assert tfs.claim_dir(d, mine) is False
        with pytest.raises(DirectoryClaimedError, match="delta_0000001_0000001_0000"):
            tfs.claim_dir(d, other)
        tfs.write_bytes(f"{root}/delta_0000002_0000002_0000/bucket_00000", b"old data")
        with pytest.raises(DirectoryClaimedError):
            tfs.claim_dir(f"{root}/delta_0000002_0000002_0000", mine)
        assert tfs.read_bytes(f"{root}/delta_0000002_0000002_0000/bucket_00000") == b"old data"
        with pytest.raises(FileExistsError):
            tfs.create_exclusive(f"{d}/{CLAIM_FILE}", b"x")
    fsspec.filesystem("memory").rm("/wh-claims", recursive=True)


class _SiblingAfter:
    """The real fsspec filesystem of task B, unchanged, except that right after B's
    ``n``-th look at the store (``exists`` / ``ls`` / ``isdir`` / ``info``) the sibling task A
    runs to completion: a deterministic interleaving of two tasks of one statement."""

    LOOKS = ("exists", "ls", "isdir", "info")

    def __init__(self, real, n: int, sibling) -> None:
        self._real, self._n, self._sibling, self.looks = real, n, sibling, 0

    def __getattr__(self, name):
        attr = getattr(self._real, name)
        if name not in self.LOOKS:
            return attr

        def look(*args, **kwargs):
            result = attr(*args, **kwargs)
            self.looks += 1
            if self.looks == self._n:
                self._sibling()
            return result

        return look


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_sibling_tasks_share_a_claimed_directory_on_fsspec(n):
    """The fsspec branch of ``TableFS.claim_dir``: two tasks of one statement write into the same
    ``delta_W_W_S`` (one bucket file each). Task B looks at the store, then task A claims the
    directory and writes its bucket file, then B goes on: B must recognise the statement's own claim
    and write next to A (on the old code B raised ``DirectoryClaimedError(owner=None)`` when A ran
    right after B's first look). Every interleaving point is tried on the real ``memory://``
    store."""
    root = f"memory://wh-siblings-{n}/t"
    d = f"{root}/delta_0000001_0000001_0000"
    claim = new_claim(write_id=1, statement_id=0)
    task_a, task_b = TableFS(root), TableFS(root)
    created: dict[str, bool] = {}

    def run_a() -> None:
        created["a"] = task_a.claim_dir(d, claim, what="task A")
        task_a.write_bytes(f"{d}/bucket_00000", b"rows of bucket 0")

    task_b.fs = _SiblingAfter(task_b.fs, n, run_a)
    try:
        created["b"] = task_b.claim_dir(d, claim, what="task B")
        task_b.write_bytes(f"{d}/bucket_00001", b"rows of bucket 1")
        if "a" not in created:  # B made no n-th look before claiming: A comes second
            run_a()
        assert sorted(created.values()) == [False, True]  # exactly one task created it
        assert task_a.read_bytes(f"{d}/bucket_00000") == b"rows of bucket 0"
        assert task_a.read_bytes(f"{d}/bucket_00001") == b"rows of bucket 1"
        assert json.loads(task_a.read_bytes(f"{d}/{CLAIM_FILE}")) == json.loads(claim)
        # a third task of another statement (or catalog) is still refused, naming the owner
        with pytest.raises(DirectoryClaimedError) as e:
            TableFS(root).claim_dir(d, new_claim(write_id=1, statement_id=0))
        assert e.value.owner is not None and json.loads(e.value.owner) == json.loads(claim)
    finally:
        fsspec.filesystem("memory").rm(f"/wh-siblings-{n}", recursive=True)


def test_fsspec_claim_dir_waits_for_a_half_written_claim_and_refuses_unclaimed_files():
    """The fsspec branch of ``TableFS.claim_dir``: a directory whose claim file a sibling has
    created but not yet filled (a store that shows a file while it is written) is waited for, as on
    local disk, then shared; a directory with files but no claim (Hive's, an older acidflow's) or
    another statement's claim is refused, its files untouched."""
    import threading

    root = "memory://wh-halfclaim/t"
    tfs = TableFS(root)
    claim = new_claim(write_id=3, statement_id=0)
    d = f"{root}/delta_0000003_0000003_0000"
    tfs.write_bytes(f"{d}/{CLAIM_FILE}", b"")  # created, content not there yet
    tfs.write_bytes(f"{d}/bucket_00000", b"sibling rows")
    filler = threading.Timer(0.3, tfs.write_bytes, (f"{d}/{CLAIM_FILE}", claim.encode()))
    filler.start()
    try:
        assert tfs.claim_dir(d, claim) is False
    finally:
        filler.join()
    with pytest.raises(DirectoryClaimedError) as e:
        tfs.claim_dir(d, new_claim(write_id=3, statement_id=0))
    assert json.loads(e.value.owner) == json.loads(claim)
    hive = f"{root}/delta_0000004_0000004_0000"
    tfs.write_bytes(f"{hive}/bucket_00000", b"hive rows")
    with pytest.raises(DirectoryClaimedError, match="delta_0000004_0000004_0000") as e:
        tfs.claim_dir(hive, claim)
    assert e.value.owner is None
    assert tfs.read_bytes(f"{hive}/bucket_00000") == b"hive rows"
    assert not tfs.exists(f"{hive}/{CLAIM_FILE}")
    fsspec.filesystem("memory").rm("/wh-halfclaim", recursive=True)


def test_compaction_publish_never_replaces_an_existing_directory(tmp_path):
    """Publishing a compaction's verified output under a name that exists (another writer's) is
    refused; the existing directory is left as it was."""
    pdir = tmp_path / "t"
    tmp = pdir / ".compact_tmp_7"
    (tmp / "base_0000005").mkdir(parents=True)
    (tmp / "base_0000005" / "bucket_00000").write_bytes(b"new")
    (tmp / VERIFIED_MARKER).write_text(json.dumps({"outputs": ["base_0000005"]}))
    (pdir / "base_0000005").mkdir()
    (pdir / "base_0000005" / "bucket_00000").write_bytes(b"theirs")
    tfs = TableFS(str(pdir))
    with pytest.raises(CompactionError, match="base_0000005"):
        finish_publish(tfs, str(pdir), str(tmp))
    assert (pdir / "base_0000005" / "bucket_00000").read_bytes() == b"theirs"
    (pdir / "base_0000005" / "bucket_00000").unlink()
    (pdir / "base_0000005").rmdir()
    assert finish_publish(tfs, str(pdir), str(tmp)) == ["base_0000005"]
    assert (pdir / "base_0000005" / "bucket_00000").read_bytes() == b"new"


# ---------------------------------------------------------------------------- locations


def test_relative_location_reads_the_same_rows_from_any_cwd(tmp_path, monkeypatch):
    """A relative ``location`` in the tables YAML is relative to the warehouse, so the table reads
    the same rows whichever directory a command runs from."""
    wh = tmp_path / "wh"
    cfg = tmp_path / "tables.yaml"
    cfg.write_text(
        "database: bank\n"
        "tables:\n"
        "  - name: accounts\n"
        "    location: data/accounts\n"
        "    columns: [{name: id, type: int}, {name: owner, type: string}]\n"
        "    primary_key: [id]\n"
    )
    url = f"sqlite:///{tmp_path / 'cat.db'}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    cat = SqlCatalog(url, warehouse=str(wh))
    (tdef,) = load_tables_config(cfg).values()
    created = cat.create_table(tdef)
    assert created.location == str(wh / "data" / "accounts")
    write_rows(cat, "bank.accounts", [{"id": 1, "owner": "ann"}])
    assert not (tmp_path / "a" / "data").exists()
    monkeypatch.chdir(tmp_path / "b")
    again = SqlCatalog(url, warehouse=str(wh))
    assert read_rows(again, "bank.accounts") == [{"id": 1, "owner": "ann"}]


def test_locations_outside_the_warehouse_are_refused_unless_external(tmp_path):
    """``..`` may not leave the warehouse; an absolute location outside it needs ``external: true``
    (stored as ``acidflow.external=true``); the error names the table, the location and the
    warehouse."""
    wh = tmp_path / "wh"
    cat = SqlCatalog(f"sqlite:///{tmp_path / 'cat.db'}", warehouse=str(wh))
    with pytest.raises(TableLocationError) as exc:
        cat.create_table(accounts(location="../escape"))
    assert "bank.accounts" in str(exc.value) and "../escape" in str(exc.value)
    assert str(wh) in str(exc.value)
    with pytest.raises(TableLocationError, match="outside the warehouse"):
        cat.create_table(accounts(location=str(tmp_path / "elsewhere")))
    with pytest.raises(TableLocationError, match="outside the warehouse"):
        cat.create_table(accounts(location=f"{wh}/../elsewhere"))
    assert not cat.table_exists("bank.accounts")
    inside = cat.create_table(accounts("bank.a2", location=f"{wh}/x/../custom"))
    assert inside.location == str(wh / "custom")
    ext = cat.create_table(accounts(location=str(tmp_path / "elsewhere"), external=True))
    assert ext.location == str(tmp_path / "elsewhere")
    assert ext.external and ext.properties["acidflow.external"] == "true"
    assert cat.get_table("bank.accounts").external
    write_rows(cat, "bank.accounts", [{"id": 3, "owner": "cy"}])
    assert read_rows(cat, "bank.accounts") == [{"id": 3, "owner": "cy"}]
    with pytest.raises(TableLocationError):
        cat.create_table(accounts("bank.a3", location="s3://bucket/x"))


def test_tables_yaml_external_key(tmp_path):
    """``external: true`` in the tables YAML reaches the catalog."""
    cfg = tmp_path / "tables.yaml"
    cfg.write_text(
        "tables:\n"
        "  - name: bank.ext\n"
        f"    location: {tmp_path / 'outside'}\n"
        "    external: true\n"
        "    columns: [{name: id, type: int}]\n"
    )
    (tdef,) = load_tables_config(cfg).values()
    assert tdef.external
    cat = SqlCatalog(f"sqlite:///{tmp_path / 'cat.db'}", warehouse=str(tmp_path / "wh"))
    assert cat.create_table(tdef).location == str(tmp_path / "outside")
