# acidflow: `make setup` builds .venv on a fresh machine (Python 3.11 + Java 17), `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
PYSPARK_VERSION := 4.3.0
export JAVA_HOME ?= $(shell dirname $$(dirname $$(readlink -f $$(command -v java))))
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup system-deps system-deps-wal2json system-deps-chromium system-deps-docker-compose test test-fast demo lock clean bench sample-data

# PostgreSQL 15 server binaries, as tests/support/postgres.py finds them ($$ACIDFLOW_PG_BINDIR).
PG_BINDIR ?= $(or $(ACIDFLOW_PG_BINDIR),/usr/lib/postgresql/15/bin)
WAL2JSON_SO := $(abspath $(PG_BINDIR)/../lib/wal2json.so)
WAL2JSON_PKG := postgresql-15-wal2json

setup: system-deps $(VENV)/.installed

# System packages: the wal2json logical decoding output plugin (CDC source side, tests and
# 'make sample-data'), Chromium (headless screenshots of the Airflow UI page in the e2e test) and
# docker-compose (offline validation of docker-compose.yml in tests/deploy; no engine needed).
# Idempotent: a file/command test when installed; apt-get only when missing and we are root.
system-deps: system-deps-wal2json system-deps-chromium system-deps-docker-compose

system-deps-wal2json:
	@if [ -f "$(WAL2JSON_SO)" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "system-deps: wal2json is missing ($(WAL2JSON_SO)) and we are not root; install it with" \
	       "'sudo apt-get install -y --no-install-recommends $(WAL2JSON_PKG)'." \
	       "Skipping: the PostgreSQL CDC tests and 'make sample-data' need it." >&2; exit 0; fi; \
	if ! command -v apt-get >/dev/null; then \
	  echo "system-deps: wal2json is missing ($(WAL2JSON_SO)) and apt-get is not available;" \
	       "install the wal2json output plugin for PostgreSQL 15 by hand." >&2; exit 0; fi; \
	echo "system-deps: installing $(WAL2JSON_PKG)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -q --no-install-recommends $(WAL2JSON_PKG) \
	  || { apt-get update -q && apt-get install -y -q --no-install-recommends $(WAL2JSON_PKG); }; \
	test -f "$(WAL2JSON_SO)" || { echo "system-deps: $(WAL2JSON_PKG) installed but $(WAL2JSON_SO) is missing" >&2; exit 1; }

system-deps-chromium:
	@if command -v chromium >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "system-deps: chromium is missing and we are not root; install it with" \
	       "'sudo apt-get install -y --no-install-recommends chromium'." \
	       "Skipping: the Airflow UI page e2e test needs it." >&2; exit 0; fi; \
	if ! command -v apt-get >/dev/null; then \
	  echo "system-deps: chromium is missing and apt-get is not available; install a" \
	       "headless Chromium by hand." >&2; exit 0; fi; \
	echo "system-deps: installing chromium"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -q --no-install-recommends chromium \
	  || { apt-get update -q && apt-get install -y -q --no-install-recommends chromium; }; \
	command -v chromium >/dev/null || { echo "system-deps: chromium installed but not on PATH" >&2; exit 1; }

system-deps-docker-compose:
	@if command -v docker-compose >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "system-deps: docker-compose is missing and we are not root; install it with" \
	       "'sudo apt-get install -y --no-install-recommends docker-compose'." \
	       "Skipping: the docker-compose.yml validation test needs it." >&2; exit 0; fi; \
	if ! command -v apt-get >/dev/null; then \
	  echo "system-deps: docker-compose is missing and apt-get is not available; install" \
	       "docker-compose (v1.29 or the 'docker compose' plugin) by hand." >&2; exit 0; fi; \
	echo "system-deps: installing docker-compose"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -q --no-install-recommends docker-compose \
	  || { apt-get update -q && apt-get install -y -q --no-install-recommends docker-compose; }; \
	command -v docker-compose >/dev/null || { echo "system-deps: docker-compose installed but not on PATH" >&2; exit 1; }

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv
	$(UV) pip install --python $(PY) -r requirements.txt
	$(UV) pip install --python $(PY) --no-deps -e .
	# The Spark provider pulls pyspark-client, which overwrites pyspark's Python files: put pyspark back.
	$(UV) pip install --python $(PY) --reinstall --no-deps pyspark==$(PYSPARK_VERSION)
	$(PY) -c "import pyspark, sys; v = pyspark.__version__; sys.exit(0 if v == '$(PYSPARK_VERSION)' else 'pyspark is ' + v + ', expected $(PYSPARK_VERSION)')"
	java -version 2>&1 | grep -q '"17' || (echo "Java 17 is required" >&2; exit 1)
	touch $@

test: setup
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not slow"

demo: setup
	$(VENV)/bin/acidflow demo

# Real wal2json change data from a private PostgreSQL 15 (pgbench), about a minute.
sample-data: setup
	PYTHONPATH=$(CURDIR) $(PY) tools/sample_data_pgbench.py --out include/sample_data/pgbench

bench: setup
	$(PY) bench/write_paths.py

lock:
	$(UV) pip compile --python $(PY) requirements.in -o requirements.txt

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
