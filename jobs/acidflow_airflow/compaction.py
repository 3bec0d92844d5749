"""``acid_compaction``'s catalog-only steps: the commands of the initiator and the cleaner for
the DAG's params (``dry_run``, ``table_filter``), chosen in Python for ``@task.bash`` tasks."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from acidflow_airflow.operator import cli_command

#: what the cleaner's task prints instead of cleaning in a dry run
DRY_RUN_CLEAN = "dry run: nothing to clean"


def initiate_command(params: Mapping[str, Any]) -> str:
    """``jobs/submit.py compact --initiate [--dry-run] --table-filter <pattern>``; it prints the
    queued compaction ids as JSON on its last line (the task's XCom)."""
    args = ["jobs/submit.py", "compact", "--initiate"]
    if params.get("dry_run"):
        args.append("--dry-run")
    return cli_command(*args, "--table-filter", str(params.get("table_filter") or ""))


def clean_command(params: Mapping[str, Any]) -> str:
    """``jobs/submit.py clean``; in a dry run a command that only says it cleans nothing."""
    if params.get("dry_run"):
        return f"echo {shlex.quote(DRY_RUN_CLEAN)}"
    return cli_command("jobs/submit.py", "clean")


def worker_args(queued: str | None) -> list[list[str]]:
    """``compact --worker --id N`` arguments for each queued id (the initiator's last line, a
    JSON list).

    Raises:
        ValueError: the line is not a JSON list of ids (quotes it).
    """
    try:
        ids = json.loads(queued or "[]")
    except json.JSONDecodeError as exc:
        raise ValueError(f"the initiator's last line is not JSON ({exc}): {queued!r}") from None
    if not isinstance(ids, list):
        raise ValueError(f"the initiator's last line is not a JSON list of ids: {queued!r}")
    return [["--worker", "--id", str(i)] for i in ids]
