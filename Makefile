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

.PHONY: setup test test-fast demo lock clean bench

setup: $(VENV)/.installed

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

bench: setup
	$(PY) bench/write_paths.py

lock:
	$(UV) pip compile --python $(PY) requirements.in -o requirements.txt

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
