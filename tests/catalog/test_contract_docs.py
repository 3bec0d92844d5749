"""The catalog's contract is documented once: on the roles (``acidflow.catalog.api``) and the
facade (``acidflow.catalog.base.Catalog``). A backend's method (``SqlCatalog``,
``HiveMetastoreCatalog`` and their parts) carries no copy of it - no docstring, so that
``inspect.getdoc`` / ``help()`` find the contract, or a one-line "SQL: ..." / "Hive: ..." note
of what is backend-specific - and the contract's ``Raises:`` names what the backends raise."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from acidflow.catalog import Catalog, Column, HiveMetastoreCatalog, SqlCatalog, TableDef
from acidflow.catalog.errors import AcidflowError
from acidflow.catalog.hms.tablerole import MetastoreTables
from acidflow.catalog.sql.adopt import SqlAdoption
from acidflow.catalog.sql.batches import SqlBatches
from acidflow.catalog.sql.compactions import SqlCompactions
from acidflow.catalog.sql.datafiles import SqlDataFiles
from acidflow.catalog.sql.locks import SqlLocks
from acidflow.catalog.sql.purge import SqlHistoryPurge
from acidflow.catalog.sql.readers import SqlReaders
from acidflow.catalog.sql.schemahistory import SqlSchemaHistory
from acidflow.catalog.sql.tables import SqlTables
from acidflow.catalog.sql.txns import SqlTransactions
from acidflow.catalog.sql.writeids import SqlWriteIds
from acidflow.format.layout import ValidWriteIdList
from tests.catalog.conftest import plain_table

#: every contract method: the roles' abstract methods, plus the facade's ``close``
CONTRACT = sorted(Catalog.__abstractmethods__ | {"close"})

BACKENDS = [SqlCatalog, HiveMetastoreCatalog]

#: the classes that implement role methods (the backends and the parts they are wired from)
IMPLEMENTERS = [
    *BACKENDS,
    MetastoreTables,
    SqlTables,
    SqlAdoption,
    SqlSchemaHistory,
    SqlTransactions,
    SqlWriteIds,
    SqlLocks,
    SqlBatches,
    SqlCompactions,
    SqlReaders,
    SqlDataFiles,
    SqlHistoryPurge,
]


def contract_doc(name: str) -> str:
    """The contract's docstring of ``name`` (on the role or the facade)."""
    for base in Catalog.__mro__:
        fn = vars(base).get(name)
        if fn is not None and fn.__doc__:
            return inspect.cleandoc(fn.__doc__)
    raise AssertionError(f"{name}: the contract has no docstring")


def raises_section(name: str) -> str:
    doc = contract_doc(name)
    return doc.split("Raises:", 1)[1] if "Raises:" in doc else ""


def own_methods(cls: type) -> list[tuple[str, Callable[..., Any]]]:
    """The contract methods ``cls`` defines itself with a body (not forwarded ones)."""
    return [
        (name, fn)
        for name in CONTRACT
        if inspect.isfunction(fn := vars(cls).get(name))
        and not getattr(fn, "__isabstractmethod__", False)
    ]


def _words(text: str) -> set[str]:
    return {" ".join(line.split()) for line in text.splitlines() if len(line.split()) > 3}


def test_every_contract_method_is_documented():
    for name in CONTRACT:
        doc = contract_doc(name)
        assert len(doc) > 20, name


@pytest.mark.parametrize("cls", IMPLEMENTERS, ids=lambda c: c.__name__)
def test_implementations_carry_no_copy_of_the_contract(cls):
    """A backend method's docstring is absent or a note of at most two lines starting with
    the backend's name, sharing no line with the contract."""
    for name, fn in own_methods(cls):
        if fn.__doc__ is None:
            continue
        note = inspect.cleandoc(fn.__doc__)
        where = f"{cls.__name__}.{name}"
        assert len(note.splitlines()) <= 2, f"{where} repeats the contract: {note!r}"
        assert note.startswith(("SQL: ", "Hive: ")), f"{where}: not a backend note: {note!r}"
        assert not _words(note) & _words(contract_doc(name)), f"{where} copies the contract"


@pytest.mark.parametrize("cls", BACKENDS, ids=lambda c: c.__name__)
def test_help_on_a_backend_method_shows_the_contract(cls):
    """``inspect.getdoc`` (``help()``, Sphinx) of a backend method without a note - its own or
    a forwarded part's - is the contract's docstring."""
    for name in CONTRACT:
        impl = getattr(cls, name)
        assert impl is not getattr(Catalog, name), name
        if impl.__doc__ is None:
            assert inspect.getdoc(impl) == contract_doc(name), f"{cls.__name__}.{name}"


def _raised_names(fn: Callable[..., Any]) -> set[str]:
    """Names of the exception classes ``fn``'s body raises itself (``raise X(...)``)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")
            if name[:1].isupper():  # a class, not a variable holding an error
                found.add(name)
    return found


@pytest.mark.parametrize("cls", IMPLEMENTERS, ids=lambda c: c.__name__)
def test_contract_names_what_the_implementations_raise(cls):
    for name, fn in own_methods(cls):
        section = raises_section(name)
        for exc in _raised_names(fn):
            assert re.search(rf"\b{exc}\b", section), (
                f"{cls.__name__}.{name} raises {exc}; the contract's Raises: does not name it"
            )


def _probes(cat: Catalog, table: str, committed: int, other: Catalog) -> dict[str, Any]:
    """Calls that must fail, per contract method (unknown ids and tables, bad arguments,
    finished transactions, a warehouse another catalog owns)."""
    missing = "no_db.no_table"
    v = ValidWriteIdList(missing, 0, [], [], None)
    outside = TableDef(name="default.outside", columns=[Column("id", "int")], location="/elsewhere")
    return {
        "get_table": lambda: cat.get_table(missing),
        "drop_table": lambda: cat.drop_table(missing),
        "set_table_properties": lambda: cat.set_table_properties(table, {"transactional": "f"}),
        "add_columns": lambda: cat.add_columns(missing, [Column("x", "int")]),
        "set_primary_key": lambda: cat.set_primary_key(table, ["nope"]),
        "schema_history": lambda: cat.schema_history(missing),
        "alter_schema": lambda: cat.alter_schema(committed, table, [], change={"op": "x"}),
        "create_table": lambda: cat.create_table(outside),
        "adopt_table": lambda: other.adopt_table(plain_table("default.adopted"), v),
        "heartbeat": lambda: cat.heartbeat(committed),
        "allocate_write_id": lambda: cat.allocate_write_id(committed, table),
        "add_component": lambda: cat.add_component(committed, table, None, "insert"),
        "add_write_keys": lambda: cat.add_write_keys(committed, table, {}),
        "commit_transaction": lambda: cat.commit_transaction(10**9),
        "abort_transaction": lambda: cat.abort_transaction(committed),
        "get_transaction": lambda: cat.get_transaction(10**9),
        "list_transactions": lambda: cat.list_transactions(["bogus"]),
        "valid_write_ids": lambda: cat.valid_write_ids(table, as_of_write_id=-1),
        "compactor_valid_write_ids": lambda: cat.compactor_valid_write_ids(missing),
        "write_id_states": lambda: cat.write_id_states(missing),
        "commit_records": lambda: cat.commit_records(missing),
        "acquire_lock": lambda: cat.acquire_lock(committed, table, None, "exclusive"),
        "release_locks": lambda: cat.release_locks(10**9),
        "register_batch": lambda: cat.register_batch(committed, "b-1", "load"),
        "add_tombstones": lambda: cat.add_tombstones(committed, table, [("[1]", "1")]),
        "enqueue_compaction": lambda: cat.enqueue_compaction(table, None, "bogus"),
        "get_compaction": lambda: cat.get_compaction(10**9),
        "list_compactions": lambda: cat.list_compactions(states=["bogus"]),
        "claim_compaction": lambda: other.claim_compaction("worker-1"),
        "heartbeat_compaction": lambda: cat.heartbeat_compaction(10**9),
        "update_compaction": lambda: cat.update_compaction(10**9),
        "mark_compaction_ready_for_cleaning": lambda: cat.mark_compaction_ready_for_cleaning(
            10**9, 1
        ),
        "mark_compaction_succeeded": lambda: cat.mark_compaction_succeeded(10**9),
        "mark_compaction_failed": lambda: cat.mark_compaction_failed(10**9, "boom"),
        "register_reader": lambda: cat.register_reader(missing),
    }


def test_contract_names_what_the_backend_raises(catalog, tmp_path):
    """Each failing call raises a class (or a base class) its contract's ``Raises:`` names."""
    # another catalog on the same warehouse, opened before the first write claims it (a new
    # catalog opened on a warehouse another one owns is refused at open)
    side = f"sqlite:///{tmp_path / 'other.db'}"
    other: Catalog = (
        HiveMetastoreCatalog(catalog.url, side_url=side, warehouse=catalog.warehouse)
        if isinstance(catalog, HiveMetastoreCatalog)
        else SqlCatalog(side, warehouse=catalog.warehouse)
    )
    table = catalog.create_table(plain_table()).name
    committed = catalog.open_transaction()
    catalog.commit_transaction(committed)
    catalog.check_warehouse_owner()
    try:
        for name, call in _probes(catalog, table, committed, other).items():
            with pytest.raises(Exception) as caught:
                call()
            section = raises_section(name)
            named = [
                c.__name__
                for c in type(caught.value).__mro__
                if c not in (AcidflowError, Exception, BaseException, object)
                and re.search(rf"\b{c.__name__}\b", section)
            ]
            assert named, f"{name} raised {caught.value!r}; its Raises: is {section!r}"
    finally:
        other.close()
