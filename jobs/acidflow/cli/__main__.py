"""``python -m acidflow.cli ...``: the ``acidflow`` command."""
from __future__ import annotations

import sys

from acidflow.cli.app import main

sys.exit(main())
