"""The ``acidflow`` command (Typer + Rich): the top-level app, its groups, and :func:`main`.

Every command is a module-level function in the module of its concern, taking the invocation's
:class:`acidflow.cli.context.CliContext` (the catalog, opened once from ``ACIDFLOW_CATALOG_URL``
/ ``ACIDFLOW_WAREHOUSE``, see ``acidflow.config``) through ``typer.Context``; each module's
``register`` attaches its commands here. Reads run in this process with pyarrow (no JVM
start); writes and jobs run in Spark. Output conventions (``--json``, ``--format``) are in
:mod:`acidflow.cli.console`.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from acidflow.cli import browse as browse_cli
from acidflow.cli import catalog as catalog_cli
from acidflow.cli import cdc as cdc_cli
from acidflow.cli import compactor as compactor_cli
from acidflow.cli import demo as demo_cli
from acidflow.cli import dml as dml_cli
from acidflow.cli import health as health_cli
from acidflow.cli import history as history_cli
from acidflow.cli import metrics as metrics_cli
from acidflow.cli import pull as pull_cli
from acidflow.cli import reconcile as reconcile_cli
from acidflow.cli import savepoint as savepoint_cli
from acidflow.cli import show as show_cli
from acidflow.cli import table as table_cli
from acidflow.cli import timeline as timeline_cli
from acidflow.cli import validate as validate_cli
from acidflow.cli.console import err
from acidflow.sparkmode import REMOTE_ENV

app = typer.Typer(
    help="acidflow: Hive 3 full-ACID tables on Spark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
cdc_app = typer.Typer(
    help="Change data capture: apply change files, pull from PostgreSQL.", no_args_is_help=True
)
app.add_typer(cdc_app, name="cdc")


@app.callback()
def _root(
    spark_remote: Optional[str] = typer.Option(
        None,
        "--spark-remote",
        help="a Spark Connect server (sc://host:port) for the commands that run Spark; "
        "default $SPARK_REMOTE, else a local session (docs/spark-connect.md)",
    ),
) -> None:
    """acidflow: Hive 3 full-ACID tables on Spark."""
    if spark_remote:
        os.environ[REMOTE_ENV] = spark_remote  # acidflow.spark.get_spark reads it


browse_cli.register(app)
show_cli.register(app)
cdc_cli.register(app, cdc_app)
pull_cli.register(cdc_app)
reconcile_cli.register(app)
validate_cli.register(app)
compactor_cli.register(app)
catalog_cli.register(app)
table_cli.register(app)
health_cli.register(app)
metrics_cli.register(app)
timeline_cli.register(app)
dml_cli.register(app)
history_cli.register(app)
savepoint_cli.register(app)
demo_cli.register(app)


def main() -> None:
    """Console-script entry point; errors print one clear line and exit 1."""
    try:
        app()
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
        # one line (no wrapping at the console width), the message taken literally
        err.print(f"[red]error:[/] {type(exc).__name__}: ", end="")
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
