"""The root of acidflow's errors.

Every exception acidflow raises on purpose derives from :class:`AcidflowError`, so a caller can
catch all of them with one ``except AcidflowError`` (as pyiceberg's ``exceptions`` module does
for its own). Each class keeps the builtin base it always had (``ValueError``, ``RuntimeError``,
``LookupError``, ``FileExistsError``, ...), so ``except ValueError`` and the like still catch it::

    class DmlError(AcidflowError, ValueError): ...

A new error class must derive from :class:`AcidflowError`, directly or through another acidflow
error; ``tests/unit/test_errors.py`` walks the package and fails on one that does not.

This module imports nothing of acidflow, so every package (``acidflow.format`` included) may
import it.
"""

from __future__ import annotations

__all__ = ["AcidflowError"]


class AcidflowError(Exception):
    """Base class of every error acidflow raises on purpose.

    It adds no attributes and no ``__slots__``, so a subclass may also derive from any builtin
    exception, ``OSError`` subclasses included (``class X(AcidflowError, FileExistsError)``).
    """
