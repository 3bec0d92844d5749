"""The ``acidflow`` package as a zip for ``spark-submit --py-files`` (what ``SparkSubmitOperator``
ships so executors on a cluster without our venv can import ``acidflow``).

The zip holds what executors and the job's driver run: every ``*.py`` of the package (and the
Alembic migration scripts) except the driver-side code in :data:`DRIVER_ONLY` (``acidflow.cli``:
the command line; ``acidflow.demo``: the demos and the local Airflow runner; and this module). It is rebuilt
only when a source file changed (its name carries a digest of the sources), written to a
temporary name and renamed, so concurrent tasks never see a partial zip.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
#: the folder that holds the package (``jobs/``): zip entries are relative to it
JOBS_DIR = PACKAGE_DIR.parent
DEFAULT_DIR = JOBS_DIR.parent / "build"
#: package-relative paths that stay on the machine that runs the CLI or Airflow
DRIVER_ONLY = ("cli/", "demo/", "jobszip.py")


def _sources() -> list[Path]:
    out: list[Path] = []
    for p in sorted(PACKAGE_DIR.rglob("*")):
        rel = p.relative_to(PACKAGE_DIR).as_posix()
        if rel.startswith(DRIVER_ONLY):
            continue
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".mako"):
            out.append(p)
    return out


def sources_digest() -> str:
    """SHA-256 (first 16 hex digits) over the relative names and contents of the sources."""
    h = hashlib.sha256()
    for p in _sources():
        h.update(str(p.relative_to(JOBS_DIR)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build_jobs_zip(dest_dir: str | os.PathLike[str] | None = None) -> Path:
    """Build (or reuse) ``<dest_dir>/acidflow-<digest>.zip`` with ``acidflow/`` at its root.

    Args:
        dest_dir: directory (default ``<repo>/build``, or ``ACIDFLOW_BUILD_DIR``).
    Returns:
        path of the zip.
    """
    dest = Path(dest_dir or os.environ.get("ACIDFLOW_BUILD_DIR") or DEFAULT_DIR)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / f"acidflow-{sources_digest()}.zip"
    if target.exists():
        return target
    tmp = dest / f".{target.name}.{os.getpid()}.tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for p in _sources():
            z.write(p, str(p.relative_to(JOBS_DIR)))
    os.replace(tmp, target)
    return target


if __name__ == "__main__":
    print(build_jobs_zip())
