"""Import rules import-linter cannot check (it reads packages only; the DAG files and
``plugins/acidflow_plugin.py`` are single modules on Airflow's ``sys.path``). The package layering
itself is in ``pyproject.toml`` (``[tool.importlinter]``, run by ``make lint``).

* DAG files only wire tasks: they import acidflow only through the ``acidflow_airflow``
  package, which imports public names only (no ``acidflow.cli``, no module of the catalog's
  implementation, nothing whose name starts with ``_``; the rest of its rules are import-linter
  contracts);
* the plugin module imports only its UI package and Airflow;
* no module of the package, the DAGs or the plugin edits ``sys.path``;
* nothing shipped (the package, the DAGs, the plugin) imports the development servers
  (``tools/devservers``: the metastore and Trino of ``make hms`` and the tests).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAG_FILES = sorted((REPO / "dags").glob("*.py"))
AIRFLOW_PACKAGE = sorted((REPO / "jobs" / "acidflow_airflow").rglob("*.py"))
PLUGIN_MODULE = REPO / "plugins" / "acidflow_plugin.py"


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, imported names) of every import statement in ``path``, at any depth."""
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, [a.name for a in node.names]))
    return out


def _is_public_acidflow_import(module: str, names: list[str]) -> bool:
    parts = module.split(".")
    if parts[0] != "acidflow":
        return True
    if any(p.startswith("_") for p in parts) or any(n.startswith("_") for n in names):
        return False
    if parts[:2] == ["acidflow", "cli"]:
        return False
    return not (parts[:2] == ["acidflow", "catalog"] and len(parts) > 2)


def test_dag_files_found():
    assert {p.name for p in DAG_FILES} == {
        "acid_cdc.py",
        "acid_compaction.py",
        "acid_health.py",
        "acid_ingest.py",
    }
    assert {p.name for p in AIRFLOW_PACKAGE} >= {
        "__init__.py",
        "operator.py",
        "schedules.py",
        "notifiers.py",
        "health.py",
    }


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_dags_reach_acidflow_through_the_airflow_package(path):
    direct = [m for m, _ in _imports(path) if m.split(".")[0] == "acidflow"]
    assert not direct, f"{path.name} should reach acidflow through acidflow_airflow: {direct}"


@pytest.mark.parametrize("path", AIRFLOW_PACKAGE, ids=lambda p: p.name)
def test_airflow_package_imports_public_names_only(path):
    bad = [(m, n) for m, n in _imports(path) if not _is_public_acidflow_import(m, n)]
    assert not bad, f"{path.name} imports private or driver-only names: {bad}"


def test_plugin_module_imports_its_ui_package_and_airflow_only():
    roots = {m.split(".")[0] for m, _ in _imports(PLUGIN_MODULE)}
    assert roots <= {"__future__", "airflow", "acidflow_ui"}, roots


def _edits_sys_path(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            return True
    return False


def test_no_sys_path_edits():
    files = [
        *(REPO / "jobs").rglob("*.py"),
        *(REPO / "dags").glob("*.py"),
        *(REPO / "plugins").rglob("*.py"),
    ]
    assert files
    offenders = [str(p.relative_to(REPO)) for p in files if _edits_sys_path(p)]
    assert not offenders, offenders


def test_nothing_shipped_imports_the_devservers():
    files = [
        *(REPO / "jobs").rglob("*.py"),
        *(REPO / "dags").glob("*.py"),
        *(REPO / "plugins").rglob("*.py"),
    ]
    assert files
    offenders = [
        (str(p.relative_to(REPO)), m)
        for p in files
        for m, _ in _imports(p)
        if m.split(".")[0] == "devservers"
    ]
    assert not offenders, offenders
    assert (REPO / "tools" / "devservers" / "hms.py").is_file()
    assert not (REPO / "jobs" / "acidflow" / "cli" / "hms.py").exists()
