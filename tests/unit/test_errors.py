"""Every exception class acidflow defines derives from :class:`acidflow.AcidflowError`, and the
ones that always had a builtin base (``ValueError``, ``RuntimeError``, ...) keep it, so an
existing ``except ValueError`` still catches them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import acidflow
from acidflow import AcidflowError

#: modules not walked: ``__main__`` runs a command line on import, the migrations are Alembic's
SKIPPED_PREFIXES = ("acidflow.catalog.sql.migrations",)


def _acidflow_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(acidflow.__path__, "acidflow."):
        if info.name.rsplit(".", 1)[-1] == "__main__" or info.name.startswith(SKIPPED_PREFIXES):
            continue
        names.append(info.name)
    return sorted(names)


def _exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for name in _acidflow_modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name:
                found.append(obj)
    return found


def test_the_walk_finds_the_error_classes():
    names = {f"{c.__module__}.{c.__qualname__}" for c in _exception_classes()}
    assert "acidflow.catalog.errors.CatalogError" in names
    assert "acidflow.engine.statements.dml.DmlError" in names
    assert "acidflow.format.layout.NotEnoughHistoryError" in names
    assert len(names) > 40


def test_every_error_class_derives_from_acidflow_error():
    strays = [
        f"{c.__module__}.{c.__qualname__}"
        for c in _exception_classes()
        if not issubclass(c, AcidflowError)
    ]
    assert not strays, f"error classes without the AcidflowError root: {strays}"


def test_acidflow_error_is_exported_from_the_package():
    from acidflow.errors import AcidflowError as defined

    assert AcidflowError is defined
    assert "AcidflowError" in acidflow.__all__
    assert issubclass(AcidflowError, Exception)


@pytest.mark.parametrize(
    ("module", "name", "builtin"),
    [
        ("acidflow.catalog.errors", "WriteConflictError", Exception),
        ("acidflow.catalog.errors", "TableLocationError", ValueError),
        ("acidflow.engine.statements.dml", "DmlError", ValueError),
        ("acidflow.engine.statements.merge", "CardinalityViolationError", ValueError),
        ("acidflow.maintenance.compaction", "CompactionError", RuntimeError),
        ("acidflow.sources.postgres.snapshot", "SnapshotNotFoundError", LookupError),
        ("acidflow.storage.fs", "DirectoryClaimedError", FileExistsError),
    ],
)
def test_errors_keep_their_builtin_base(module, name, builtin):
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, AcidflowError)
    assert issubclass(cls, builtin)


def test_a_catalog_error_still_catches_as_before():
    from acidflow.catalog.errors import (
        CatalogError,
        TxnAbortedError,
        WriteConflictError,
    )
    from acidflow.engine.statements.dml import DmlError

    with pytest.raises(ValueError):
        raise DmlError("bad statement")
    with pytest.raises(AcidflowError):
        raise DmlError("bad statement")
    with pytest.raises(TxnAbortedError) as caught:
        raise WriteConflictError(7, 5, 12, "db.accounts", "ds=2024-01-01", "update", "delete")
    assert isinstance(caught.value, CatalogError) and isinstance(caught.value, AcidflowError)
    assert not isinstance(caught.value, ValueError)  # it never was one
    assert caught.value.txn_id == 7 and caught.value.other_txn_id == 5


def test_an_os_error_subclass_keeps_errno_and_message():
    import errno

    from acidflow.storage.fs import DirectoryClaimedError

    with pytest.raises(FileExistsError) as caught:
        raise DirectoryClaimedError("/warehouse/t/delta_1_1", "txn 5")
    err = caught.value
    assert isinstance(err, AcidflowError)
    assert err.errno == errno.EEXIST and err.directory == "/warehouse/t/delta_1_1"
    assert "claimed by txn 5" in str(err)
