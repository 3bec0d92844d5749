"""Optional dependencies ("extras"): one place that turns a missing optional package into a
one-line error naming the extra that installs it.

acidflow's core (``pip install acidflow``) runs the SQL catalog, the readers and the Spark jobs;
a backend that needs more is an extra (``pyproject.toml`` ``[project.optional-dependencies]``):

- ``hms``: the Hive Metastore catalog (``thrift://``), also Kerberos-secured: pymetastore,
  thrift, thrift-sasl, pure-sasl, gssapi;
- ``quality``: data quality suites run by Great Expectations: great-expectations, pandas;
- ``postgres``: PostgreSQL sources (slot pulls, snapshots, slot lag): psycopg2-binary;
- ``metrics``: ``acidflow metrics --push``: the OpenTelemetry SDK and OTLP exporters.

The lazy import points call :func:`require` before they import the optional package, e.g.::

    require("pymetastore", "hms", "the Hive Metastore catalog (thrift://)")
"""

from __future__ import annotations

import importlib
from types import ModuleType

from acidflow.errors import AcidflowError


class MissingExtraError(AcidflowError, ImportError):
    """An optional package is not installed; the message names the extra that installs it."""


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import ``module`` or fail with one line that names the extra which installs it.

    Args:
        module: the importable name (``"pymetastore"``, ``"psycopg2"``).
        extra: acidflow's extra that installs it (``"hms"``).
        what: the feature that needs it, as the user knows it
            (``"the Hive Metastore catalog (thrift://)"``).
    Returns:
        The imported module.
    Raises:
        MissingExtraError: (an :class:`ImportError`) ``module`` cannot be imported:
            ``<what> needs the '<extra>' extra: pip install 'acidflow[<extra>]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        # only a missing `module` itself (or its package) means the extra is missing; an
        # ImportError raised from inside an installed package is a real error: let it through
        missing = exc.name
        if missing is not None and missing != module and not module.startswith(missing + "."):
            raise
        raise MissingExtraError(
            f"{what} needs the {extra!r} extra: pip install 'acidflow[{extra}]'", name=module
        ) from None
