"""The deployment's init scripts, run for real against a private PostgreSQL 15 (no Docker):

* ``include/deploy/postgres-init.sh`` (what the postgres image runs from
  ``/docker-entrypoint-initdb.d``) creates both roles and databases, quotes names and passwords
  safely, and keeps each role out of the other's database; it refuses to run with a variable unset;
* ``include/deploy/airflow-init.sh`` (service ``airflow-init``) migrates the Airflow metadata
  database as the airflow role, writes the simple auth manager's passwords file from the
  environment (mode 600) and creates the acidflow catalog as the acidflow role.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.postgres

DEPLOY = REPO / "include" / "deploy"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def pg():
    from tests.support.postgres import PostgresCluster, require_postgres

    require_postgres()
    with PostgresCluster(dbname="postgres") as cluster:
        yield cluster


def _init_env(pg) -> dict[str, str]:
    return {
        "PATH": f"{Path(pg.tool_path('psql')).parent}{os.pathsep}/usr/bin:/bin",
        "PGHOST": pg.host,
        "PGPORT": str(pg.port),
        "POSTGRES_USER": "postgres",
        "AIRFLOW_DB_USER": "airflow",
        "AIRFLOW_DB_PASSWORD": "air'flow\"pw",
        "AIRFLOW_DB_NAME": "airflow",
        "ACIDFLOW_DB_USER": "acidflow",
        "ACIDFLOW_DB_PASSWORD": "acid-pw",
        "ACIDFLOW_DB_NAME": "acidflow_catalog",
        "HIVE_METASTORE_DB_USER": "hive",
        "HIVE_METASTORE_DB_PASSWORD": "hive-pw",
        "HIVE_METASTORE_DB_NAME": "metastore",
        "SOURCE_DB_USER": "cdc",
        "SOURCE_DB_PASSWORD": "cdc-pw",
        "SOURCE_DB_NAME": "source",
        "SOURCE_DB_PUBLICATION": "acidflow_cdc",
    }


@pytest.fixture(scope="module")
def databases(pg):
    res = subprocess.run(
        ["bash", str(DEPLOY / "postgres-init.sh")],
        env=_init_env(pg),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return pg


def test_postgres_init_refuses_missing_variable(pg):
    env = _init_env(pg)
    del env["ACIDFLOW_DB_PASSWORD"]
    res = subprocess.run(
        ["bash", str(DEPLOY / "postgres-init.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode != 0 and "ACIDFLOW_DB_PASSWORD is not set" in res.stderr


def test_postgres_init_creates_roles_and_databases(databases):
    pg = databases
    rows = dict(
        pg.execute(
            "SELECT d.datname, r.rolname FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba "
            "WHERE d.datname IN ('airflow', 'acidflow_catalog', 'metastore', 'source')"
        )
    )
    assert rows == {
        "airflow": "airflow",
        "acidflow_catalog": "acidflow",
        "metastore": "hive",
        "source": "cdc",
    }
    # only the CDC source role may replicate (Debezium's logical replication connection), and
    # the publication Debezium reads covers every table of the source database
    replicators = {r[0] for r in pg.execute("SELECT rolname FROM pg_roles WHERE rolreplication")}
    assert replicators - {"postgres"} == {"cdc"}
    assert pg.execute("SELECT pubname, puballtables FROM pg_publication", "source") == [
        ("acidflow_cdc", True)
    ]
    pw = dict(
        pg.execute(
            "SELECT rolname, rolpassword IS NOT NULL FROM pg_authid "
            "WHERE rolname IN ('airflow', 'acidflow')"
        )
    )
    assert pw == {"airflow": True, "acidflow": True}


def test_roles_cannot_enter_each_others_database(databases):
    import sqlalchemy as sa

    pg = databases
    base = f"postgresql+psycopg2://{{user}}@{pg.host}:{pg.port}/{{db}}"
    for user, own, other in (
        ("airflow", "airflow", "acidflow_catalog"),
        ("acidflow", "acidflow_catalog", "airflow"),
    ):
        eng = sa.create_engine(base.format(user=user, db=own))
        with eng.connect() as c:
            assert c.execute(sa.text("select current_user")).scalar() == user
        eng.dispose()
        eng = sa.create_engine(base.format(user=user, db=other))
        with pytest.raises(sa.exc.OperationalError, match="permission denied"):
            eng.connect().close()
        eng.dispose()


@pytest.mark.slow
def test_airflow_init(databases, tmp_path):
    pg = databases
    home = tmp_path / "airflow"
    pwfile = tmp_path / "auth" / "passwords.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ACIDFLOW_"))}
    env.update(
        {
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "PYTHONPATH": str(REPO),
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg2://airflow@{pg.host}:{pg.port}/airflow",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(pwfile),
            "AIRFLOW_ADMIN_USER": "ops",
            "AIRFLOW_ADMIN_PASSWORD": 's3cret-"quoted"',
            "ACIDFLOW_WAREHOUSE": str(tmp_path / "warehouse"),
            "ACIDFLOW_CATALOG_URL": f"postgresql+psycopg2://acidflow@{pg.host}:{pg.port}/acidflow_catalog",
            "PYTHONWARNINGS": "ignore",
        }
    )
    res = subprocess.run(
        ["bash", str(DEPLOY / "airflow-init.sh")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-5000:]
    assert "airflow-init: done" in res.stdout
    assert json.loads(pwfile.read_text()) == {"ops": 's3cret-"quoted"'}
    assert (pwfile.stat().st_mode & 0o777) == 0o600
    assert "s3cret" not in res.stdout + res.stderr  # the password is never printed

    tables = {
        r[0]: r[1]
        for r in pg.execute(
            "SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public'", "airflow"
        )
    }
    assert tables.get("dag_run") == "airflow" and "alembic_version" in tables
    catalog = {
        r[0]: r[1]
        for r in pg.execute(
            "SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public'",
            "acidflow_catalog",
        )
    }
    assert catalog and set(catalog.values()) == {"acidflow"}, catalog
    from acidflow.catalog import SqlCatalog, head_revision

    cat = SqlCatalog(
        env["ACIDFLOW_CATALOG_URL"], warehouse=env["ACIDFLOW_WAREHOUSE"], migrate=False
    )
    try:
        assert cat.current_revision() == head_revision()
    finally:
        cat.close()
