"""``airflow dags test`` for each DAG on embedded defaults (SQLite metadata, Spark local[2]
through SparkSubmitOperator), checking what the runs did to the tables."""

import json

import pytest

from acidflow.catalog import SqlCatalog
from acidflow.demo.localairflow import airflow_env, dags_test, migrate
from acidflow.read.table import read_table

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@pytest.fixture(scope="module")
def af(tmp_path_factory):
    root = tmp_path_factory.mktemp("dags_run")
    wh = root / "warehouse"
    env = airflow_env(root / "airflow", warehouse=str(wh))
    migrate(env)
    cat = SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=str(wh))
    return env, cat, root


def ok(result):
    text = result.stdout + result.stderr
    assert result.returncode == 0 and "state=success" in text, text[-5000:]
    return text


def gg(op, pos, after=None, before=None):
    return json.dumps(
        {
            "table": "SHOP.CUST",
            "op_type": op,
            "op_ts": "2024-01-01 00:00:00",
            "current_ts": "2024-01-01 00:00:00",
            "pos": pos,
            "primary_keys": ["ID"],
            "before": before,
            "after": after,
        }
    )


def test_acid_ingest_loads_its_data_interval(af):
    env, cat, _ = af
    text = ok(dags_test("acid_ingest", env, logical_date="2024-01-02"))
    rows = read_table(None, cat, "sales.orders").to_pylist()
    assert len(rows) == 40 and {r["ds"] for r in rows} == {"2024-01-02"}
    assert "task_id=validate" in text
    rec = cat.commit_records("sales.orders")[-1]
    assert rec.stats["data_interval"].startswith("2024-01-02T00:00:00")


def run_cdc_dag(env, cat, root, **extra_conf):
    """Three GoldenGate files through acid_cdc, then the same run again (all skipped); returns
    the second run's output."""
    land = root / "landing"
    land.mkdir()
    for i in range(3):
        (land / f"batch-{i}.json").write_text(
            "\n".join(
                [
                    gg("I", f"{i}0", {"ID": 10 * i + 1, "NAME": "a", "AGE": i}),
                    gg("I", f"{i}1", {"ID": 10 * i + 2, "NAME": "b", "AGE": i}),
                    gg(
                        "U",
                        f"{i}2",
                        {"ID": 10 * i + 1, "NAME": "a2", "AGE": 100 + i},
                        {"ID": 10 * i + 1},
                    ),
                ]
            )
            + "\n"
        )
    conf = {
        "format": "goldengate",
        "input_path": str(land),
        "target_db": "shop",
        "auto_create": True,
        "tables_config": str(root / "no-config.yaml"),
        **extra_conf,
    }
    (root / "no-config.yaml").write_text("tables: []\n")
    first = ok(dags_test("acid_cdc", env, conf=conf))
    got = {r["id"]: r["age"] for r in read_table(None, cat, "shop.cust").to_pylist()}
    assert got == {1: 100, 2: 0, 11: 101, 12: 1, 21: 102, 22: 2}
    assert [b.state for b in cat.list_batches("cdc")] == ["committed"] * 3

    # a retry of the whole DAG run changes nothing (every batch is skipped)
    hwm = cat.valid_write_ids("shop.cust").high_watermark
    text = ok(dags_test("acid_cdc", env, conf=conf))
    assert '"status": "skipped"' in text
    assert cat.valid_write_ids("shop.cust").high_watermark == hwm
    return first + text


def test_acid_cdc_then_acid_compaction(af):
    env, cat, root = af
    run_cdc_dag(env, cat, root)
    hwm = cat.valid_write_ids("shop.cust").high_watermark
    got = {r["id"]: r["age"] for r in read_table(None, cat, "shop.cust").to_pylist()}

    # dry run: plan only
    cat.set_table_properties(
        "shop.cust", {"compactorthreshold.hive.compactor.delta.num.threshold": "1"}
    )
    ok(dags_test("acid_compaction", env, conf={"table_filter": "shop.*", "dry_run": True}))
    assert cat.list_compactions("shop.cust") == []
    ok(dags_test("acid_compaction", env, conf={"table_filter": "shop.*"}))
    (c,) = cat.list_compactions("shop.cust")
    assert (c.state, c.highest_write_id) == ("succeeded", hwm)
    after = {r["id"]: r["age"] for r in read_table(None, cat, "shop.cust").to_pylist()}
    assert after == got


def test_acid_cdc_on_spark_connect(spark_connect, tmp_path):
    """spark_mode=connect: acid_cdc's Spark tasks run jobs/submit.py --remote on the Connect
    server of an Airflow connection of type spark_connect, no spark-submit."""
    wh = tmp_path / "warehouse"
    env = airflow_env(tmp_path / "airflow", warehouse=str(wh))
    migrate(env)
    env["AIRFLOW_CONN_ACIDFLOW_CONNECT"] = json.dumps(
        {"conn_type": "spark_connect", "host": spark_connect.host, "port": spark_connect.port}
    )
    cat = SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=str(wh))
    text = run_cdc_dag(
        env, cat, tmp_path, spark_mode="connect", spark_connect_conn_id="acidflow_connect"
    )
    assert f"acidflow cdc-upsert on Spark Connect {spark_connect.url}/" in text
    assert f"acidflow validate on Spark Connect {spark_connect.url}/" in text
    assert "Spark-Submit cmd" not in text
