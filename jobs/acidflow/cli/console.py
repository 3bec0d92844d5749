"""The Rich consoles every ``acidflow`` command prints with: stdout at the terminal's width, or
160 columns when piped (so tables stay readable in logs and CI), and stderr for errors."""

import sys

from rich.console import Console

console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)
