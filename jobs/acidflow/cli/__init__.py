"""The ``acidflow`` command line (Typer): driver-side only, never shipped to executors.

``acidflow.cli.app`` holds the top-level app and the table commands; the sub-apps live beside it
(``cdc``, ``pull``, ``compactor``, ``validate``, ``reconcile``). ``python -m acidflow.cli`` and the
``acidflow`` console script both call :func:`main`.
"""

from __future__ import annotations

from acidflow.cli.app import app, main

__all__ = ["app", "main"]
