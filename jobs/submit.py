"""The file ``spark-submit`` runs: ``spark-submit jobs/submit.py <subcommand> [args...]``.

Python puts this file's folder (``jobs/``) first on ``sys.path``, and that folder holds only the
``acidflow`` package and this file, so ``import acidflow`` finds the package beside it (or the
``--py-files`` zip, or the installed package) without any path edits. Subcommands and exit codes
are :func:`acidflow.entry.main`'s.
"""

from __future__ import annotations

import sys

from acidflow.entry import main

if __name__ == "__main__":
    sys.exit(main())
