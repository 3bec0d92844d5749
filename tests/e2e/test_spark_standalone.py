"""End to end: the ``acid_cdc`` DAG submits ``cdc-upsert`` to a real Spark standalone cluster.

A master and a worker run on 127.0.0.1 (free ports, REST submission server off, private work,
log and conf dirs under the test's tmp dir) from a **clean environment**: no ``PYTHONPATH``, no
virtualenv on ``PATH``. The DAG runs with ``airflow dags test`` (``acidflow.demo.localairflow``) on a
private ``AIRFLOW_HOME`` whose ``spark_default`` points at the master, so the task goes through
``AcidflowSparkSubmitOperator`` -> ``SparkSubmitOperator`` -> ``spark-submit --master spark://...``
with the ``jobs`` zip in ``--py-files``. The driver-side shortcuts for small batches
(``ACIDFLOW_LOCAL_LOOKUP_BYTES``, ``ACIDFLOW_LOCAL_WRITE_ROWS``) are set to 0 so that the key
lookup and the writes run as Spark tasks on the worker, as they do for large batches.

Checked: the run succeeded; the table holds the expected rows (read with pyarrow through the
catalog); the master lists a finished application ``acidflow-cdc-upsert``; the worker's work dir
has that application's executor directory with its ``stderr``; and a probe application on the
same cluster shows what executors see: the venv's Python (``PYSPARK_PYTHON``), ``jobs`` imported
from the shipped zip (not from a checkout), no ``PYTHONPATH`` pointing at the repository.

Master and worker run in their own process groups and are killed at the end, also on failure.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.read import snapshot
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS
from tests.conftest import REPO

pytestmark = pytest.mark.slow

VENV_BIN = Path(sys.executable).parent
JAVA_HOME = os.environ.get("JAVA_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"
APP_NAME = "acidflow-cdc-upsert"
PROBE_NAME = "acidflow-standalone-probe"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _clean_env(tmp: Path) -> dict[str, str]:
    """What a Spark daemon on a dedicated host would have: Java, SPARK_HOME, loopback, private
    dirs. Deliberately no PYTHONPATH and no venv on PATH."""
    conf_dir = tmp / "spark-conf"
    conf_dir.mkdir(exist_ok=True)
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp),
        "LANG": "C.UTF-8",
        "JAVA_HOME": JAVA_HOME,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp / "spark-logs"),
        "SPARK_WORKER_DIR": str(tmp / "spark-work"),
        # the master's REST submission server would take the shared port 6066
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "SPARK_DAEMON_MEMORY": "512m",
    }


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


@contextmanager
def _standalone_cluster(tmp: Path, workers: int = 1, cores: int = 2, memory: str = "2g"):
    """Yield ``(master_url, master_json_url, worker_dir)`` (the first worker's dir; worker
    ``i > 0`` works in ``spark-work-<i>``) once ``workers`` workers of ``cores`` cores and
    ``memory`` are ALIVE; kill every process group on exit."""
    env = _clean_env(tmp)
    spark_class = str(_spark_home() / "bin" / "spark-class")
    port, ui = _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    json_url = f"http://127.0.0.1:{ui}/json"
    work_dir = Path(env["SPARK_WORKER_DIR"])
    work_dir.mkdir()
    Path(env["SPARK_LOG_DIR"]).mkdir()
    procs: list[subprocess.Popen] = []

    def start(name: str, args: list[str]) -> subprocess.Popen:
        log = open(tmp / f"{name}.log", "wb")
        p = subprocess.Popen(
            [spark_class, *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=tmp,
        )
        procs.append(p)
        return p

    def tail(name: str) -> str:
        path = tmp / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    try:
        master = start(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
        )
        started = []
        for i in range(workers):
            w_dir = work_dir if i == 0 else tmp / f"spark-work-{i}"
            w_dir.mkdir(exist_ok=True)
            w_name = "worker" if i == 0 else f"worker{i}"
            w = start(
                w_name,
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(_free_port()),
                    "--webui-port",
                    str(_free_port()),
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--work-dir",
                    str(w_dir),
                    master_url,
                ],
            )
            started.append((w, w_name))
        deadline = time.monotonic() + 90
        while True:
            for p, name in ((master, "master"), *started):
                if p.poll() is not None:
                    pytest.fail(f"Spark {name} exited with {p.returncode}:\n{tail(name)}")
            try:
                state = _get_json(json_url)
                alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) >= workers:
                    break
            except (OSError, ValueError):  # not up yet, or the UI still answers with HTML
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"{workers} ALIVE worker(s) did not register with the master within 90 s:\n"
                    f"master:\n{tail('master')}\nworker:\n{tail('worker')}"
                )
            time.sleep(1)
        yield master_url, json_url, work_dir
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


# ------------------------------------------------------------------------------- change files


def _col(name, typ, value):
    return {"name": name, "type": typ, "value": value}


def _row(id_, bal, note):
    return [
        _col("id", "integer", id_),
        _col("bal", "numeric(10,2)", bal),
        _col("note", "text", note),
    ]


def _txn(lsn_begin: str, lsn_commit: str, *changes: dict) -> list[dict]:
    pk = [{"name": "id", "type": "integer"}]
    out = [{"action": "B", "xid": 7, "lsn": lsn_begin}]
    out += [{"schema": "public", "table": "acc", "pk": pk, **c} for c in changes]
    out.append({"action": "C", "xid": 7, "lsn": lsn_commit, "nextlsn": lsn_commit})
    return out


def _write_landing(land: Path) -> None:
    """Two wal2json (format-version 2) batches: 3 inserts + 1 update, then a delete, an update
    and an insert. Net: id 1 -> 15 'upd2', id 3 -> 30 'c', id 4 -> 40 'd'; id 2 deleted."""
    land.mkdir(parents=True)
    b1 = _txn(
        "0/1000",
        "0/10F0",
        {"action": "I", "columns": _row(1, "10.00", "a")},
        {"action": "I", "columns": _row(2, "20.00", "b")},
        {"action": "I", "columns": _row(3, "30.00", "c")},
        {"action": "U", "columns": _row(1, "11.00", "upd")},
    )
    b2 = _txn(
        "0/2000",
        "0/20F0",
        {"action": "D", "identity": [_col("id", "integer", 2)]},
        {"action": "U", "columns": _row(1, "15.00", "upd2")},
        {"action": "I", "columns": _row(4, "40.00", "d")},
    )
    for name, lines in (("batch_0001.jsonl", b1), ("batch_0002.jsonl", b2)):
        (land / name).write_text("".join(json.dumps(x) + "\n" for x in lines))


# ---------------------------------------------------------------------------------- the probe

PROBE = textwrap.dedent(f"""
    import json, os, sys
    from pyspark.sql import SparkSession

    def where(_):
        import acidflow
        return json.dumps({{"package": acidflow.__file__, "python": sys.executable,
                            "pythonpath": os.environ.get("PYTHONPATH", ""), "cwd": os.getcwd()}})

    spark = SparkSession.builder.appName("{PROBE_NAME}").getOrCreate()
    seen = sorted(set(spark.sparkContext.parallelize(range(4), 2).map(where).collect()))
    spark.stop()
    print("PROBE " + json.dumps([json.loads(s) for s in seen]))
""")


def _probe(master_url: str, tmp: Path, zip_path: Path) -> list[dict]:
    """What an executor's Python worker sees, with the same submission settings as the DAG."""
    script = tmp / "probe.py"
    script.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        {
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "JAVA_HOME": JAVA_HOME,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        }
    )
    res = subprocess.run(
        [
            str(VENV_BIN / "spark-submit"),
            "--master",
            master_url,
            "--name",
            PROBE_NAME,
            "--conf",
            "spark.ui.enabled=false",
            "--py-files",
            str(zip_path),
            str(script),
        ],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=180,
    )
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("PROBE ")]
    assert res.returncode == 0 and lines, (
        f"probe spark-submit failed (rc {res.returncode}):\n{res.stderr[-4000:]}"
    )
    return json.loads(lines[-1][len("PROBE ") :])


# ----------------------------------------------------------------------------------- the test


def test_acid_cdc_dag_on_standalone_cluster(tmp_path):
    from acidflow.cdc.changes import POSITION_COLUMN
    from acidflow.demo.localairflow import airflow_env, dags_test, migrate
    from acidflow.read.table import read_table

    t0 = time.monotonic()
    wh = tmp_path / "warehouse"
    wh.mkdir()
    land = tmp_path / "landing"
    _write_landing(land)
    build = tmp_path / "build"
    catalog_url = f"sqlite:///{wh / '_acidflow_catalog.db'}"

    timings: dict[str, float] = {}

    def lap(name: str) -> None:
        timings[name] = round(time.monotonic() - t0 - sum(timings.values()), 1)

    with _standalone_cluster(tmp_path) as (master_url, json_url, work_dir):
        lap("cluster up")
        env = airflow_env(
            tmp_path / "airflow",
            warehouse=str(wh),
            spark_master=master_url,
            extra={
                "ACIDFLOW_CATALOG_URL": catalog_url,
                "ACIDFLOW_BUILD_DIR": str(build),
                # tiny batches would otherwise be merged in the driver alone
                "ACIDFLOW_LOCAL_LOOKUP_BYTES": "0",
                "ACIDFLOW_LOCAL_WRITE_ROWS": "0",
            },
        )
        migrate(env)
        lap("db migrate")
        res = dags_test(
            "acid_cdc",
            env,
            timeout=600,
            conf={
                "source": "landing",
                "format": "wal2json",
                "input_path": str(land),
                "target_db": "deploy",
                "auto_create": True,
            },
        )
        lap("dags test")
        out = res.stdout + res.stderr
        assert res.returncode == 0, (
            f"airflow dags test failed (rc {res.returncode}):\n{out[-6000:]}"
        )
        assert "state=failed" not in out and "state=success" in out, out[-6000:]

        # --- the data
        cat = SqlCatalog(catalog_url, warehouse=str(wh))
        names = [t.name if hasattr(t, "name") else str(t) for t in cat.list_tables()]
        assert "deploy.acc" in names, names
        table = read_table(None, cat, "deploy.acc")
        got = {
            r["id"]: (str(r["bal"]), r["note"])
            for r in table.drop_columns([POSITION_COLUMN]).to_pylist()
        }
        assert got == {1: ("15.00", "upd2"), 3: ("30.00", "c"), 4: ("40.00", "d")}, got

        # --- it ran on the cluster's worker
        state = _get_json(json_url)
        apps = [a for a in state.get("completedapps", []) if a.get("name") == APP_NAME]
        assert apps, f"master lists no completed {APP_NAME}: {state.get('completedapps')}"
        app_id = apps[-1]["id"]
        app_dir = work_dir / app_id
        assert app_dir.is_dir(), f"worker work dir has no {app_id}: {sorted(os.listdir(work_dir))}"
        execs = [d for d in app_dir.iterdir() if d.is_dir() and d.name.isdigit()]
        assert execs, f"no executor dir under {app_dir}"
        stderr = execs[0] / "stderr"
        assert stderr.is_file() and stderr.stat().st_size > 0, stderr
        assert "Traceback" not in stderr.read_text(errors="replace")
        zips = sorted(build.glob("acidflow-*.zip"))
        assert len(zips) == 1, zips
        # spark-submit shipped the package zip to the executor's directory
        assert any((d / zips[0].name).is_file() for d in execs), [list(d.iterdir()) for d in execs]

        # --- what executors import (same cluster, same zip, same PYSPARK_PYTHON)
        seen = _probe(master_url, tmp_path, zips[0])
        lap("probe")
        assert all(s["python"] == sys.executable for s in seen), seen
        assert all(
            f"{zips[0].name}{os.sep}acidflow{os.sep}__init__.py" in s["package"] for s in seen
        ), seen
        # the checkout itself is not on the executors' path (the venv may live inside it)
        assert all(
            str(REPO) not in [os.path.abspath(p) for p in s["pythonpath"].split(os.pathsep) if p]
            for s in seen
        ), seen
        assert all(s["cwd"].startswith(str(work_dir)) for s in seen), seen
        assert any(a.get("name") == PROBE_NAME for a in _get_json(json_url)["completedapps"])
    lap("cluster down")
    print(f"standalone e2e: {time.monotonic() - t0:.1f} s {timings}")


# -------------------------------------------------------------- two workers share one bucket

SPLITS_NAME = "acidflow-standalone-splits"
SPLITS = textwrap.dedent(f"""
    import json, os, sys
    from pyspark.sql import SparkSession
    from acidflow import datasource

    spark = SparkSession.builder.appName("{SPLITS_NAME}").getOrCreate()
    datasource.register(spark)  # ACIDFLOW_WAREHOUSE / ACIDFLOW_CATALOG_URL of this driver
    df = (spark.read.format("acid").option("rowId", "true").option("fileName", "true")
          .option("splitBytes", sys.argv[2]).load("db.one_bucket"))

    def part(rows):
        # an executor's Python worker runs in that executor's directory
        # (<worker dir>/<app id>/<executor id>)
        yield json.dumps({{"cwd": os.getcwd(),
                           "rows": [r.asDict(recursive=True) for r in rows]}})

    parts = [json.loads(p) for p in df.rdd.mapPartitions(part).collect()]
    with open(sys.argv[1], "w") as f:
        json.dump({{"partitions": df.rdd.getNumPartitions(), "parts": parts}}, f)
    spark.stop()
""")


def _row_key(r: dict) -> tuple:
    rid = r[snapshot.ROW_ID]
    return (r["id"], r["v"], rid["writeid"], rid["bucketid"], rid["rowid"], r["INPUT__FILE__NAME"])


def test_two_workers_share_one_buckets_read(tmp_path):
    """A one-bucket table read through ``format("acid")`` with a small split target on a
    standalone cluster of two one-core workers: more partitions than buckets, tasks on both
    executors, and the rows (ROW__IDs, file names) of the unsplit pyarrow read."""
    wh = tmp_path / "warehouse"
    wh.mkdir()
    catalog_url = f"sqlite:///{wh / '_acidflow_catalog.db'}"
    cat = SqlCatalog(catalog_url, warehouse=str(wh))
    name = "db.one_bucket"
    cat.create_table(
        TableDef(
            name=name, columns=[Column("id", "bigint"), Column("v", "string")], primary_key=["id"]
        )
    )
    for ids, tag in ((range(6000), "a"), (range(0, 6000, 53), "u")):
        ids = list(ids)
        with Transaction(cat) as txn:
            txn.upsert(
                name,
                pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]}),
                stripe_rows=1024,
                compression="none",
            )
    plan = reads.plan_table(cat, name)
    assert len(plan.tasks) == 1
    want = snapshot.read_arrow(
        TableFS(plan.table_dir), plan, row_id=True, file_name=True, split_bytes=0
    ).to_pylist()
    cat.close()
    script = tmp_path / "splits.py"
    script.write_text(SPLITS)
    out = tmp_path / "splits.json"
    with _standalone_cluster(tmp_path, workers=2, cores=1, memory="1g") as (master_url, _, _):
        # the checkout on the path of the driver and the executors (not the jobs zip: the
        # planning side opens the SQLite catalog, whose migrations alembic cannot read from
        # a zip)
        jobs = str(REPO / "jobs")
        env = dict(os.environ)
        env.update(
            {
                "PYTHONPATH": jobs,
                "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable,
                "JAVA_HOME": JAVA_HOME,
                "SPARK_LOCAL_IP": "127.0.0.1",
                "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                "ACIDFLOW_WAREHOUSE": str(wh),
                "ACIDFLOW_CATALOG_URL": catalog_url,
            }
        )
        conf = {
            "spark.ui.enabled": "false",
            "spark.executor.cores": "1",
            "spark.executor.memory": "512m",
            "spark.cores.max": "2",
            "spark.executorEnv.PYTHONPATH": jobs,
            # the job starts once both executors registered (Spark's own wait, no sleep)
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        }
        res = subprocess.run(
            [str(VENV_BIN / "spark-submit"), "--master", master_url, "--name", SPLITS_NAME]
            + [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]
            + [str(script), str(out), "1"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        errors = "\n".join(ln for ln in res.stderr.splitlines() if " INFO " not in ln)
        assert res.returncode == 0, f"spark-submit failed:\n{res.stdout[-4000:]}\n{errors[-6000:]}"
    got = json.loads(out.read_text())
    assert got["partitions"] > len(plan.tasks), got["partitions"]
    executors = {p["cwd"] for p in got["parts"] if p["rows"]}
    assert len(executors) == 2, executors
    rows = [r for p in got["parts"] for r in p["rows"]]
    assert sorted(map(_row_key, rows)) == sorted(map(_row_key, want))
    assert len(rows) == 6000
