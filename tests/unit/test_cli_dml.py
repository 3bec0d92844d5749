"""``acidflow update --set`` parsing (pure)."""

from __future__ import annotations

import pytest
import typer

from acidflow.cli.dml import parse_assignments


def test_parse_assignments():
    assert parse_assignments(["v='a=b'", " amt = amt + 1 "]) == {"v": "'a=b'", "amt": "amt + 1"}
    for bad, why in (
        (["v"], "col=expr"),
        (["=1"], "col=expr"),
        (["v="], "col=expr"),
        (["v=1", "V=2"], "twice"),
    ):
        with pytest.raises(typer.BadParameter, match=why):
            parse_assignments(bad)
