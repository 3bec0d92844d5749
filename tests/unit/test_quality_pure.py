"""Pure parts of the validation: suite parsing and scopes, GX result summaries, run ids, and the
per-event ACID invariants on arrays."""

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest

from acidflow.format.bucketing import encode_bucket_property
from acidflow.quality import gx
from acidflow.quality.invariants import check_bucket_file, check_key_index, check_sorted

REPO = Path(__file__).resolve().parents[2]


def test_parse_suite_and_scopes():
    doc = {
        "name": "db.t",
        "expectations": [
            {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "id"}},
            {
                "type": "expect_table_row_count_to_be_between",
                "kwargs": {"min_value": 1},
                "meta": {"acidflow_scope": "snapshot"},
            },
            {
                "type": "expect_column_values_to_be_between",
                "kwargs": {"column": "x", "min_value": 0},
                "meta": {"acidflow_scope": "staged"},
            },
        ],
    }
    s = gx.parse_suite(doc)
    assert [e["type"] for e in gx.select_expectations(s, "staged")] == [
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_between",
    ]
    assert [e["type"] for e in gx.select_expectations(s, "snapshot")] == [
        "expect_column_values_to_not_be_null",
        "expect_table_row_count_to_be_between",
    ]
    for bad, msg in [
        ([], "JSON object"),
        ({"expectations": []}, "name"),
        ({"name": "x", "expectations": {}}, "list"),
        ({"name": "x", "expectations": [{"kwargs": {}}]}, "type"),
        ({"name": "x", "expectations": [{"type": "expect_x", "kwargs": []}]}, "objects"),
        (
            {
                "name": "x",
                "expectations": [{"type": "expect_x", "meta": {"acidflow_scope": "later"}}],
            },
            "scope",
        ),
    ]:
        with pytest.raises(gx.SuiteError, match=msg):
            gx.parse_suite(bad, "f.json")


def test_repo_suites_parse_and_match_tables_yaml():
    import yaml

    conf = yaml.safe_load((REPO / "include" / "tables" / "pgbench.yaml").read_text())
    for t in conf["tables"]:
        name = f"{conf['database']}.{t['name']}"
        path = gx.suite_path(REPO / "include" / "expectations", name)
        assert path is not None, name
        suite = gx.load_suite(path)
        assert suite["name"] == name
        cols = [c["name"] for c in t["columns"]] + ["_cdc_position"]
        match = [
            e for e in suite["expectations"] if e["type"] == "expect_table_columns_to_match_set"
        ]
        assert match and match[0]["kwargs"]["column_set"] == cols
        for e in suite["expectations"]:
            c = e["kwargs"].get("column")
            assert c is None or c in cols, (name, c)


def test_outcomes_from_gx_result_and_summary():
    res = {
        "results": [
            {
                "success": False,
                "expectation_config": {
                    "type": "expect_column_values_to_be_between",
                    "kwargs": {"batch_id": "b", "column": "bal", "min_value": 0, "max_value": 9},
                },
                "result": {
                    "unexpected_count": 2,
                    "partial_unexpected_list": [10, 11, 12, 13, 14, 15],
                },
                "exception_info": {"raised_exception": False},
            },
            {
                "success": True,
                "expectation_config": {
                    "type": "expect_table_row_count_to_be_between",
                    "kwargs": {"min_value": 1},
                },
                "result": {"observed_value": 7},
            },
            {
                "success": False,
                "expectation_config": {
                    "type": "expect_column_values_to_not_be_null",
                    "kwargs": {"column": "nope"},
                },
                "result": {},
                "exception_info": {
                    "raised_exception": True,
                    "exception_message": "column nope not found\nmore",
                },
            },
        ]
    }
    out = gx.outcomes_from_result(res)
    assert [o.success for o in out] == [False, True, False]
    assert out[0].column == "bal" and out[0].unexpected_values == [10, 11, 12, 13, 14]
    assert "batch_id" not in out[0].kwargs
    assert out[0].summary() == (
        "expect_column_values_to_be_between(bal): 2 unexpected, e.g. [10, 11, 12, 13, 14]"
    )
    assert out[1].column == "" and out[1].summary().endswith("observed 7")
    assert out[2].summary() == (
        "expect_column_values_to_not_be_null(nope): could not run: column nope not found"
    )
    err = gx.QualityGateError("db.t", "/wh/_quality/db.t/r/report.json", [out[0].summary()])
    assert "report: /wh/_quality/db.t/r/report.json" in str(err) and "bal" in str(err)


def test_run_id_and_report_dir():
    rid = gx.new_run_id("staged", dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc))
    assert (
        rid.startswith("20240102T030405000006Z-staged-")
        and len(rid) == len("20240102T030405000006Z-staged-") + 6
    )
    assert gx.report_dir("s3://b/wh/", "db.t", rid) == f"s3://b/wh/_quality/db.t/{rid}"


def test_suite_path_lookup(tmp_path):
    (tmp_path / "db.T.json").write_text(json.dumps({"name": "db.T", "expectations": []}))
    assert gx.suite_path(tmp_path, "db.T") == tmp_path / "db.T.json"
    assert gx.suite_path(tmp_path, "db.t") == tmp_path / "db.T.json"
    assert gx.suite_path(tmp_path, "db.other") is None
    assert gx.suite_path(tmp_path / "missing", "db.t") is None


def test_check_sorted():
    o = np.array([1, 1, 1, 2])
    b = np.array([5, 5, 6, 0])
    assert check_sorted("", "f", o, b, np.array([0, 1, 0, 0])) == []
    f = check_sorted("", "f", o, b, np.array([0, 0, 0, 0]))  # repeated key
    assert f[0].kind == "unsorted_events" and "event 1 key (1, 5, 0)" in f[0].detail
    f = check_sorted("p", "f", np.array([2, 1]), np.array([0, 0]), np.array([0, 0]))
    assert f[0].severity == "error" and f[0].partition == "p"


def test_check_bucket_file():
    b0, b1 = encode_bucket_property(0), encode_bucket_property(1, 2)
    ops = np.array([2, 2, 0])
    assert check_bucket_file("", "f", 1, np.array([b1, b1, b1]), ops, check_inserts=True) == []
    f = check_bucket_file("", "f", 1, np.array([b0, b1, b0]), ops, check_inserts=True)
    assert f[0].kind == "wrong_bucket_file"
    assert f"bucket property {b0} (bucket 0): 1 delete and 1 insert" in f[0].detail
    # inserts not checked (unbucketed tables): only the delete counts
    assert check_bucket_file("", "f", 1, np.array([b1, b1, b0]), ops, check_inserts=False) == []


def test_check_key_index():
    assert check_key_index("", "f", [(1, 2, 3)], [(1, 2, 3)]) == []
    assert (
        "1 key index entries for 2 stripes"
        in check_key_index("", "f", [(1, 2, 3)], [(1, 2, 3), (1, 2, 9)])[0].detail
    )
    assert "stripe 0" in check_key_index("", "f", [(1, 2, 4)], [(1, 2, 3)])[0].detail
