"""acidflow.lineage: dataset names (OpenLineage naming) and the report a job hands to the
Airflow operator through ACIDFLOW_LINEAGE_FILE."""

from __future__ import annotations

import json

import pytest

from acidflow.lineage import (
    LINEAGE_ENV,
    file_dataset,
    read_lineage,
    report_lineage,
    table_asset_uri,
    table_dataset,
)


def test_dataset_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert file_dataset("land/0001.json") == {
        "namespace": "file",
        "name": str(tmp_path / "land/0001.json"),
    }
    assert file_dataset("file:///data/x.json") == {"namespace": "file", "name": "/data/x.json"}
    assert file_dataset("s3://bucket/landing/x.json.gz") == {
        "namespace": "s3://bucket",
        "name": "landing/x.json.gz",
    }
    assert table_dataset("cid", "app.users") == {
        "namespace": "acid://cid",
        "name": "app.users",
        "changed": True,
    }
    assert table_asset_uri("cid", "app.users") == "acid://cid/app.users"


def test_report_only_when_asked_and_merged(tmp_path):
    assert report_lineage("ingest", [], [], environ={}) is None
    target = tmp_path / "report.json"
    out = report_lineage(
        "cdc-upsert",
        [file_dataset("/l/1.json"), file_dataset("/l/1.json")],
        [
            table_dataset("c", "a.t", changed=False),
            table_dataset("c", "a.t", changed=True),
            table_dataset("c", "a.u", changed=False),
        ],
        environ={LINEAGE_ENV: str(target)},
    )
    assert out == target
    rep = read_lineage(target)
    assert rep["job"] == "cdc-upsert"
    assert rep["inputs"] == [{"namespace": "file", "name": "/l/1.json"}]
    assert [(o["name"], o["changed"]) for o in rep["outputs"]] == [("a.t", True), ("a.u", False)]
    assert not list(tmp_path.glob("*.tmp"))


def test_read_lineage_missing_empty_or_bad(tmp_path):
    assert read_lineage(tmp_path / "none.json") is None
    (tmp_path / "empty.json").write_text("")
    assert read_lineage(tmp_path / "empty.json") is None
    (tmp_path / "bad.json").write_text("{oops")
    with pytest.raises(ValueError, match="bad.json: not a lineage report"):
        read_lineage(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"inputs": []}))
    with pytest.raises(ValueError, match="needs inputs and outputs"):
        read_lineage(tmp_path / "other.json")
