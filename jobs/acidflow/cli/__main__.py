"""``python -m acidflow.cli ...``: the ``acidflow`` command."""

from __future__ import annotations

from acidflow.cli.app import main

main()
