"""Optional backends ("extras"): without its extra a backend fails with one line that names it
(``acidflow._extras.require``), and ``import acidflow.catalog`` needs none of them. The missing
package is simulated with ``sys.modules[name] = None`` (Python's "import blocked" marker), so no
second venv is needed; the clean-venv check is the same with nothing simulated."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from acidflow import _extras
from acidflow.catalog import base
from tests.conftest import REPO

HMS_MESSAGE = (
    "the Hive Metastore catalog (thrift://) needs the 'hms' extra: pip install 'acidflow[hms]'"
)


def _without(monkeypatch: pytest.MonkeyPatch, *blocked: str, unload: str = "") -> None:
    """Block the ``blocked`` imports and drop the already imported ``unload*`` modules (so
    that they import again); monkeypatch puts everything back after the test."""
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)
    if unload:
        for name in [m for m in sys.modules if m == unload or m.startswith(unload + ".")]:
            monkeypatch.delitem(sys.modules, name)


def test_require_returns_the_module():
    import json

    assert _extras.require("json", "none", "JSON") is json


def test_require_names_the_extra_in_one_line(monkeypatch):
    _without(monkeypatch, "pymetastore")
    with pytest.raises(ImportError) as exc:
        _extras.require("pymetastore", "hms", "the Hive Metastore catalog (thrift://)")
    assert isinstance(exc.value, _extras.MissingExtraError)
    assert str(exc.value) == HMS_MESSAGE
    assert "\n" not in str(exc.value)
    assert exc.value.name == "pymetastore"
    assert exc.value.__suppress_context__  # the traceback shows this line only


def test_require_lets_a_broken_installed_package_through(monkeypatch, tmp_path):
    """An ImportError from inside an installed package (its own dependency missing) is a real
    error, not a missing extra: it goes up as it is."""
    (tmp_path / "brokenpkg_acidflow_test.py").write_text("import no_such_module_acidflow_test\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as exc:
        _extras.require("brokenpkg_acidflow_test", "x", "a test")
    assert not isinstance(exc.value, _extras.MissingExtraError)
    assert exc.value.name == "no_such_module_acidflow_test"


def test_thrift_url_without_the_hms_extra(monkeypatch):
    _without(monkeypatch, "pymetastore", unload="acidflow.catalog.hms")
    # the backend is registered by path until first use: resolve it again in this test
    monkeypatch.setitem(base._BACKENDS, "thrift", "acidflow.catalog.hms.catalog:make_hms_catalog")
    from acidflow.catalog import load_catalog

    with pytest.raises(_extras.MissingExtraError, match=r"^the Hive Metastore catalog") as exc:
        load_catalog("thrift://localhost:9083", warehouse="/tmp/unused-warehouse")
    assert str(exc.value) == HMS_MESSAGE


def test_hms_names_without_the_hms_extra(monkeypatch):
    """``from acidflow.catalog import HiveMetastoreCatalog`` (PEP 562) names the extra too."""
    import acidflow.catalog

    _without(monkeypatch, "thrift", unload="acidflow.catalog.hms")
    monkeypatch.delitem(vars(acidflow.catalog), "HiveMetastoreCatalog", raising=False)
    with pytest.raises(_extras.MissingExtraError) as exc:
        from acidflow.catalog import HiveMetastoreCatalog  # noqa: F401
    assert str(exc.value) == HMS_MESSAGE


def test_adopt_from_a_metastore_without_the_hms_extra(monkeypatch):
    from acidflow.tableops.adopt import table_from_metastore

    _without(monkeypatch, "pymetastore", unload="acidflow.catalog.hms")
    with pytest.raises(
        _extras.MissingExtraError,
        match=r"needs the 'hms' extra: "
        r"pip install 'acidflow\[hms\]'$",
    ):
        table_from_metastore("thrift://localhost:9083", "db.t")


def test_gx_without_the_quality_extra(monkeypatch):
    from acidflow.quality.gx import run_expectations

    _without(monkeypatch, "great_expectations")
    with pytest.raises(_extras.MissingExtraError) as exc:
        run_expectations(None, [], name="db.t")
    assert str(exc.value) == (
        "data quality suites (Great Expectations) needs the 'quality' "
        "extra: pip install 'acidflow[quality]'"
    )


def test_postgres_without_the_postgres_extra(monkeypatch):
    from acidflow.sources.postgres.connection import connect
    from acidflow.sources.postgres.slotlag import slot_lags

    _without(monkeypatch, "psycopg2")
    message = "a PostgreSQL source needs the 'postgres' extra: pip install 'acidflow[postgres]'"
    with pytest.raises(_extras.MissingExtraError) as exc:
        connect("postgresql://localhost/db")
    assert str(exc.value) == message
    with pytest.raises(_extras.MissingExtraError) as exc:
        slot_lags("postgresql://localhost/db", ["acidflow"])
    assert str(exc.value) == message


def test_s3_without_the_s3_extra(monkeypatch):
    from acidflow.storage.fs import TableFS

    _without(monkeypatch, "s3fs")
    with pytest.raises(_extras.MissingExtraError) as exc:
        TableFS("s3://bucket/warehouse/db.db/t")
    assert str(exc.value) == "tables on s3:// needs the 's3' extra: pip install 'acidflow[s3]'"


def test_catalog_import_loads_no_backend():
    """``import acidflow.catalog`` imports neither backend; the SQL one loads on first use."""
    code = (
        "import sys, acidflow.catalog\n"
        "print(sorted(m for m in ('pymetastore', 'thrift', 'sqlalchemy', 'alembic',"
        " 'pyarrow') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=f"{REPO / 'jobs'}{os.pathsep}{REPO / 'plugins'}"),
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
