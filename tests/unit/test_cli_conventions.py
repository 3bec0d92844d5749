"""The ``acidflow`` command's house rules, checked over every command Typer builds: commands
are module-level functions (no closures), ``--format`` is an output format, input formats are
``--input-format``, and every command that reports a result has ``--json``."""

from __future__ import annotations

from typing import Any

import typer.main

from acidflow.cli.app import app
from acidflow.cli.console import json_line

# Commands without --json, each for a reason: cat/dump print JSON lines already (cat: --format),
# ddl prints SQL, the demos print a narrative, quarantine-file one path.
NO_JSON = {"cat", "dump", "table ddl", "demo", "engine-demo", "cdc quarantine-file"}


def leaf_commands() -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(cmd: Any, path: str) -> None:
        if hasattr(cmd, "commands"):  # a group (Typer vendors its own click)
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}".strip())
        else:
            out[path] = cmd

    walk(typer.main.get_command(app), "")
    return out


def options(cmd: Any) -> dict[str, Any]:
    return {o: p for p in cmd.params for o in getattr(p, "opts", [])}


def test_every_command_is_a_module_level_function():
    commands = leaf_commands()
    assert len(commands) >= 30  # the whole tree was walked
    for path, cmd in commands.items():
        fn = cmd.callback
        assert fn is not None, path
        # Typer wraps the callback; the user's function is kept as __wrapped__
        user_fn = getattr(fn, "__wrapped__", fn)
        assert "<locals>" not in user_fn.__qualname__, f"{path}: {user_fn.__qualname__}"
        assert user_fn.__module__.startswith("acidflow.cli."), path


def test_format_means_output_and_json_is_everywhere():
    for path, cmd in leaf_commands().items():
        opts = options(cmd)
        if "--format" in opts:
            help_text = (getattr(opts["--format"], "help", "") or "").lower()
            assert help_text.startswith("output") or "jsonl" in help_text, path
            assert "wal2json" not in help_text and "parquet" not in help_text, path
        if path in NO_JSON:
            continue
        assert "--json" in opts, f"acidflow {path} has no --json"


def test_json_line_writes_what_json_lacks_as_spark_does():
    import datetime as dt
    import decimal
    import json

    line = json_line(
        {
            "nan": float("nan"),
            "inf": [float("inf"), float("-inf")],
            "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 6),
            "d": dt.date(9999, 12, 31),
            "dec": decimal.Decimal("12345678901234567890.123456789012345678"),
            "bin": b"\x00\xff",
        }
    )
    assert "\n" not in line and "NaN," not in line.replace('"NaN",', "")
    assert json.loads(line) == {
        "nan": "NaN",
        "inf": ["Infinity", "-Infinity"],
        "ts": "2024-01-02 03:04:05.000006",
        "d": "9999-12-31",
        "dec": "12345678901234567890.123456789012345678",
        "bin": "AP8=",
    }
