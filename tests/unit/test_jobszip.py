"""The executor zip (``acidflow.jobszip``): what ``SparkSubmitOperator`` ships in ``--py-files``.

It must hold everything executors and the job's driver run (the format, the catalog client, the
jobs, the spark-submit entry, the Alembic migrations) and nothing of the driver-side command line
(``acidflow.cli``) nor of the demos (``acidflow.demo``: demos, local-Airflow helpers), and the
job modules must import from it without the CLI or the demos."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from acidflow import jobszip


def _run_from_zip(zip_path, code: str, cwd) -> subprocess.CompletedProcess:
    """``python -c code`` with only the zip on PYTHONPATH (the venv's libraries still there)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(zip_path)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _names(tmp_path) -> list[str]:
    path = jobszip.build_jobs_zip(tmp_path)
    with zipfile.ZipFile(path) as z:
        return z.namelist()


def test_zip_holds_what_executors_run(tmp_path):
    names = _names(tmp_path)
    for prefix in (
        "acidflow/__init__.py",
        "acidflow/entry.py",
        "acidflow/spark.py",
        "acidflow/config.py",
        "acidflow/format/",
        "acidflow/format/orc/",
        "acidflow/storage/",
        "acidflow/read/",
        "acidflow/engine/statements/",
        "acidflow/maintenance/",
        "acidflow/catalog/",
        "acidflow/cdc/",
        "acidflow/compactor/",
        "acidflow/quality/",
        "acidflow/ingest",
        "acidflow/catalog/sql/migrations/env.py",
        "acidflow/catalog/sql/migrations/versions/",
    ):
        assert any(n.startswith(prefix) for n in names), prefix
    assert all(n.startswith("acidflow/") for n in names)
    assert not any("__pycache__" in n for n in names)


def test_zip_leaves_the_driver_side_out(tmp_path):
    names = _names(tmp_path)
    assert jobszip.DRIVER_ONLY == ("cli/", "demo/", "jobszip.py")
    assert not [n for n in names if n.startswith(("acidflow/cli/", "acidflow/demo/"))]
    assert "acidflow/jobszip.py" not in names
    for gone in ("acidflow/demo.py", "acidflow/localairflow.py"):
        assert gone not in names


def test_zip_is_reused_while_sources_are_unchanged(tmp_path):
    first = jobszip.build_jobs_zip(tmp_path)
    assert jobszip.build_jobs_zip(tmp_path) == first
    assert first.name == f"acidflow-{jobszip.sources_digest()}.zip"
    assert [p.name for p in tmp_path.iterdir()] == [first.name]


def test_job_modules_import_from_the_zip_without_the_cli(tmp_path):
    zip_path = jobszip.build_jobs_zip(tmp_path)
    code = (
        "import sys, importlib, acidflow\n"
        f"assert acidflow.__file__.startswith({str(zip_path)!r}), acidflow.__file__\n"
        "import acidflow.entry\n"
        "for m in ('acidflow.cdc.entry', 'acidflow.compactor.entry', 'acidflow.ingest.entry',\n"
        "          'acidflow.validation'):\n"
        "    importlib.import_module(m)\n"
        "assert not [m for m in sys.modules if m.startswith(('acidflow.cli', 'acidflow.demo'))]\n"
        "assert 'acidflow.jobszip' not in sys.modules\n"
    )
    res = _run_from_zip(zip_path, code, tmp_path)
    assert res.returncode == 0, res.stderr


def test_a_sqlite_catalog_initialises_from_the_zip(tmp_path):
    """Alembic loads scripts from files only: imported from the zip, the catalog copies its
    migrations out once and creates (migrates) a new SQLite catalog."""
    zip_path = jobszip.build_jobs_zip(tmp_path / "build")
    db = tmp_path / "cat.db"
    code = (
        "import acidflow\n"
        f"assert acidflow.__file__.startswith({str(zip_path)!r}), acidflow.__file__\n"
        "from acidflow.catalog import Column, SqlCatalog, TableDef\n"
        "from acidflow.catalog.sql import db\n"
        f"cat = SqlCatalog('sqlite:///{db}', warehouse={str(tmp_path / 'wh')!r})\n"
        "cat.create_table(TableDef(name='s.t', columns=[Column('k', 'int')]), if_not_exists=True)\n"
        "print(cat.table_exists('s.t'), db.migrations_dir())\n"
    )
    for _ in range(2):  # the second process reuses the first one's copy
        res = _run_from_zip(zip_path, code, tmp_path)
        assert res.returncode == 0, res.stderr
        exists, where = res.stdout.split()
        assert exists == "True" and "acidflow-migrations-" in where
        assert sorted(p.name for p in (Path(where) / "versions").glob("0001_*.py"))
