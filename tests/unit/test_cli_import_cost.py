"""The ``acidflow`` command imports what a command uses, when it runs: building the Typer app
and rendering every help page (``acidflow --help``, ``acidflow <group> --help``, ``acidflow
<command> --help``) imports none of the heavy dependencies. A structural check (which modules
are loaded), not a timing test."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO

#: what a help page must not import: the metastore's generated thrift code, DuckDB, Spark,
#: Great Expectations, SQLAlchemy's ORM, pyarrow
HEAVY = ("pymetastore", "duckdb", "pyspark", "great_expectations", "sqlalchemy.orm", "pyarrow")

_SCRIPT = """
import json, sys
import typer
from typer.testing import CliRunner
from acidflow.cli.app import app

def paths(command, prefix):
    yield prefix
    if hasattr(command, "commands"):  # a group (typer vendors its own click)
        for name, sub in command.commands.items():
            yield from paths(sub, prefix + [name])

runner = CliRunner()
shown, failed = [], []
for path in paths(typer.main.get_command(app), []):
    result = runner.invoke(app, [*path, "--help"])
    (shown if result.exit_code == 0 and "Usage" in result.output else failed).append(path)
print(json.dumps({"shown": shown, "failed": failed,
                  "heavy": sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)}))
"""


def test_help_pages_import_no_heavy_dependency():
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'jobs'}{os.pathsep}{REPO / 'plugins'}")
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(HEAVY)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["failed"] == []
    shown = {" ".join(p) for p in doc["shown"]}
    # the top level, the groups and a command of each kind were rendered
    assert {"", "cdc", "show", "table", "cdc apply", "compact", "table adopt"} <= shown
    assert doc["heavy"] == [], f"help imports {doc['heavy']}"
