"""Real Airflow processes for end-to-end tests: ``api-server``, ``scheduler`` and
``dag-processor`` on 127.0.0.1 with a private ``AIRFLOW_HOME`` and LocalExecutor, each in its own process group (``setsid``) so that stopping kills every child (executor workers,
spark-submit, log servers)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from acidflow.demo.localairflow import airflow_env, migrate

BIN = Path(sys.executable).parent
PASSWORD = "acidflow-e2e-admin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AirflowServices:
    """Start/stop the Airflow services; REST helpers with a JWT from ``POST /auth/token``."""

    def __init__(
        self,
        root: Path,
        warehouse: Path,
        services=("api-server", "scheduler", "dag-processor"),
        metadata_url: str | None = None,
        retry_delay_s: int = 15,
    ):
        """``metadata_url``: SQLAlchemy URL of the Airflow metadata database (default SQLite in
        the home; a shared deployment uses PostgreSQL, which has no writer lock between the
        scheduler, the task supervisors and the CLI). ``retry_delay_s``: the tasks' retry delay
        (``[core] default_task_retry_delay``; 300 s by default, too long for a test)."""
        self.root, self.services = Path(root), services
        self.home = self.root / "airflow_home"
        self.home.mkdir(parents=True, exist_ok=True)
        pw_file = self.home / "simple_auth_manager_passwords.json.generated"
        pw_file.write_text(json.dumps({"admin": PASSWORD}))
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = airflow_env(
            self.home,
            warehouse=str(warehouse),
            extra={
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(pw_file),
                "AIRFLOW__API_AUTH__JWT_SECRET": "acidflow-e2e-jwt-secret-0123456789abcdef",
                "AIRFLOW__API__SECRET_KEY": "acidflow-e2e-secret-key",
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(self.port),
                "AIRFLOW__API__BASE_URL": self.base,
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base}/execution/",
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(free_port()),
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
                "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": str(retry_delay_s),
            },
        )
        if metadata_url:
            self.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = metadata_url
        self.procs: list[subprocess.Popen] = []
        self._token: str | None = None

    # -- life cycle ---------------------------------------------------------------------------
    def __enter__(self) -> "AirflowServices":
        migrate(self.env)
        try:
            for name in self.services:
                log = open(self.root / f"{name}.log", "wb")
                args = [str(BIN / "airflow"), name]
                if name == "api-server":
                    args += ["--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
                self.procs.append(
                    subprocess.Popen(
                        ["setsid", *args], env=self.env, stdout=log, stderr=subprocess.STDOUT
                    )
                )
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def logs(self, tail: int = 3000) -> str:
        return "\n".join(
            f"--- {n}\n" + (self.root / f"{n}.log").read_text(errors="replace")[-tail:]
            for n in self.services
            if (self.root / f"{n}.log").exists()
        )

    def wait_healthy(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for p in self.procs:
                if p.poll() is not None:
                    raise AssertionError(f"an Airflow service exited:\n{self.logs()}")
            try:
                status, body = self.request("GET", "/api/v2/monitor/health", auth=False)
                if status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"api-server not healthy after {timeout} s\n{self.logs()}")
            time.sleep(1)

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in self.procs:
                try:
                    os.killpg(p.pid, sig)  # setsid: pid == process group id
                except ProcessLookupError:
                    pass
            for p in self.procs:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    pass

    # -- REST ---------------------------------------------------------------------------------
    def token(self) -> str:
        if self._token is None:
            status, body = self.request(
                "POST", "/auth/token", {"username": "admin", "password": PASSWORD}, auth=False
            )
            assert status in (200, 201), body
            self._token = json.loads(body)["access_token"]
        return self._token

    def request(
        self, method: str, path: str, payload=None, auth: bool = True, timeout: float = 30
    ) -> tuple[int, str]:
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token()}"
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def wait_dag(self, dag_id: str, timeout: float = 180) -> dict:
        """Wait until the dag-processor has parsed ``dag_id``; returns its API record."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, body = self.request("GET", f"/api/v2/dags/{dag_id}")
            if status == 200:
                return json.loads(body)
            time.sleep(2)
        raise AssertionError(f"DAG {dag_id} not parsed after {timeout} s\n{self.logs()}")

    def wait_runs(
        self,
        dag_id: str,
        run_ids: list[str] | None = None,
        *,
        count: int | None = None,
        run_type: str | None = None,
        timeout: float = 600,
    ) -> list[dict]:
        """Wait until the given runs (or ``count`` runs, of ``run_type`` if given) reached a
        final state; returns them. Raises AssertionError with every run's task states and the
        services' logs after ``timeout`` seconds (keep it below pytest's timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, body = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=100")
            assert status == 200, body
            runs = json.loads(body)["dag_runs"]
            if run_ids is not None:
                runs = [r for r in runs if r["dag_run_id"] in run_ids]
            if run_type is not None:
                runs = [r for r in runs if r["run_type"] == run_type]
            done = [r for r in runs if r["state"] in ("success", "failed")]
            want = len(run_ids) if run_ids is not None else count
            if want is not None and len(done) >= want and len(done) == len(runs):
                return runs
            time.sleep(3)
        raise AssertionError(
            f"runs of {dag_id} not finished after {timeout} s\n"
            f"{self.describe_runs(dag_id)}\n{self.logs()}"
        )

    def describe_runs(self, dag_id: str) -> str:
        """One line per run of ``dag_id`` with its type, state and its tasks' states and tries
        (for failure messages)."""
        status, body = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=100")
        if status != 200:
            return f"dagRuns: HTTP {status} {body[:500]}"
        lines = []
        for r in json.loads(body)["dag_runs"]:
            _, tb = self.request(
                "GET", f"/api/v2/dags/{dag_id}/dagRuns/{r['dag_run_id']}/taskInstances"
            )
            try:
                tis = ", ".join(
                    f"{t['task_id']}[{t['map_index']}]={t['state']}/try{t['try_number']}"
                    for t in json.loads(tb)["task_instances"]
                )
            except (ValueError, KeyError):
                tis = tb[:300]
            lines.append(f"{r['dag_run_id']} {r['run_type']} {r['state']}: {tis}")
        return "\n".join(lines)
