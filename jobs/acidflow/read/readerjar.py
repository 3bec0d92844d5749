"""Where acidflow's JVM snapshot reader is (``jvm/acid-reader``, :mod:`acidflow.read.jvm`): one
home for the jar's path, read by :func:`acidflow.spark.session_conf` (the class path) and by
:func:`acidflow.read.engine.reader_setting` (the default executor). No pyspark here.
"""

from __future__ import annotations

import os
from pathlib import Path

#: where ``make jvm-reader`` leaves acidflow's JVM reader (repository root/.cache/jvm)
ACID_READER_JAR = (
    Path(__file__).resolve().parents[3] / ".cache" / "jvm" / "acidflow-acid-reader.jar"
)


def acid_reader_jar() -> str | None:
    """acidflow's JVM snapshot reader (``jvm/acid-reader``, a Spark DataSource V2,
    :mod:`acidflow.read.jvm`): ``$ACIDFLOW_ACID_READER_JAR`` or :data:`ACID_READER_JAR`, as
    an absolute path; None when not built."""
    path = Path(os.environ.get("ACIDFLOW_ACID_READER_JAR") or ACID_READER_JAR)
    return str(path.resolve()) if path.is_file() else None
