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

.PHONY: format stress setup jvm-reader system-deps system-deps-wal2json system-deps-chromium system-deps-docker-compose system-deps-maven system-deps-kerberos hive-jars hadoop-aws trino-server kafka-jars kafka-spark-jars apicurio-jars hms kdc kafka connect lint test test-fast demo demo-hms demo-kafka lock clean bench bench-report bench-write-paths sample-data

# PostgreSQL 15 server binaries, as tools/devservers/postgres.py finds them ($$ACIDFLOW_PG_BINDIR).
PG_BINDIR ?= $(or $(ACIDFLOW_PG_BINDIR),/usr/lib/postgresql/15/bin)
WAL2JSON_SO := $(abspath $(PG_BINDIR)/../lib/wal2json.so)
WAL2JSON_PKG := postgresql-15-wal2json

setup: system-deps $(VENV)/.installed hive-jars hadoop-aws trino-server kafka-jars apicurio-jars jvm-reader

# System packages: the wal2json logical decoding output plugin (CDC source side, tests and
# 'make sample-data'), Chromium (headless screenshots of the Airflow UI page in the e2e test) and
# docker-compose (offline validation of docker-compose.yml in tests/deploy; no engine needed) and
# MIT Kerberos (the KDC of the Kerberos-secured metastore tests, 'make kdc'; libkrb5-dev for the
# gssapi package of requirements.txt, built from source: so before the venv).
# Idempotent: a file/command test when installed; apt-get only when missing and we are root.
system-deps: system-deps-wal2json system-deps-chromium system-deps-docker-compose system-deps-maven system-deps-kerberos

# $(call apt_install,<test that succeeds when installed>,<Debian package>,<who needs it>)
define apt_install
	@if $(1); then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "system-deps: $(2) is missing and we are not root; install it with" \
	       "'sudo apt-get install -y --no-install-recommends $(2)'. Skipping: $(3) need(s) it." >&2; \
	  exit 0; fi; \
	if ! command -v apt-get >/dev/null; then \
	  echo "system-deps: $(2) is missing and apt-get is not available; install it by hand" \
	       "($(3) need(s) it)." >&2; exit 0; fi; \
	echo "system-deps: installing $(2)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -q --no-install-recommends $(2) \
	  || { apt-get update -q && apt-get install -y -q --no-install-recommends $(2); }; \
	$(1) || { echo "system-deps: $(2) installed but the check '$(1)' still fails" >&2; exit 1; }
endef

system-deps-wal2json:
	$(call apt_install,test -f "$(WAL2JSON_SO)",$(WAL2JSON_PKG),the PostgreSQL CDC tests and 'make sample-data')

system-deps-chromium:
	$(call apt_install,command -v chromium >/dev/null,chromium,the Airflow UI page e2e test)

system-deps-docker-compose:
	$(call apt_install,command -v docker-compose >/dev/null,docker-compose,the docker-compose.yml validation test)

KRB5_CHECK := test -x /usr/sbin/krb5kdc && test -x /usr/sbin/kdb5_util && test -x /usr/sbin/kadmin.local && command -v kinit >/dev/null && command -v krb5-config >/dev/null
system-deps-kerberos:
	$(call apt_install,$(KRB5_CHECK),krb5-kdc krb5-admin-server krb5-user libkrb5-dev,the Kerberos metastore tests (tests/integration/test_hms_kerberos.py) and the gssapi build)

system-deps-maven:
	$(call apt_install,command -v mvn >/dev/null,maven,'make hive-jars' and 'make kafka-jars' (the Hive Metastore and Kafka tests; 'make hms' and 'make kafka'))

# Hive 3.1.3's standalone metastore, hive-exec and the Hadoop jars they need, pinned in
# tools/hive/pom.xml, fetched from Maven Central into .cache/hive/ (layout: the pom's header).
# Idempotent: a stamp file, re-fetched only when the pom changes (the old jars are removed first).
# A failed fetch fails the target when CI=true; elsewhere it warns and goes on, and the tests
# that need the metastore skip (tests/integration/test_hive_metastore.py).
HIVE_CACHE := $(CURDIR)/.cache/hive
HIVE_STAMP := $(HIVE_CACHE)/.fetched
# The Java side of the Hive 3.1.3 oracle and writer (tools/hive/java: acidflow.hive31.AcidRead,
# StreamWrite), compiled with javac against the fetched jars into .cache/hive/classes (see
# tests/compat/hive31.py). Same failure rule as the fetch: CI=true fails, elsewhere a warning.
HIVE_CLASSES := $(HIVE_CACHE)/classes
HIVE_CLASSES_STAMP := $(HIVE_CLASSES)/.compiled
HIVE_JAVA := $(wildcard tools/hive/java/acidflow/hive31/*.java)
hive-jars: $(HIVE_STAMP) $(HIVE_CLASSES_STAMP)

$(HIVE_STAMP): tools/hive/pom.xml
	@rm -rf $(HIVE_CACHE)/metastore $(HIVE_CACHE)/exec $(HIVE_CACHE)/streaming $(HIVE_CACHE)/src; \
	mkdir -p $(HIVE_CACHE); \
	start=$$(date +%s); \
	if command -v mvn >/dev/null \
	   && mvn -q -B -f tools/hive/pom.xml -Dhive.cache=$(HIVE_CACHE) \
	        dependency:copy-dependencies@metastore dependency:copy-dependencies@exec \
	        dependency:copy-dependencies@streaming \
	        dependency:unpack@metastore-src >$(HIVE_CACHE)/mvn.log 2>&1; then \
	  touch $@; \
	  echo "hive-jars: Hive artifacts in $(HIVE_CACHE) ($$(du -sh $(HIVE_CACHE) | cut -f1)," \
	       "$$(( $$(date +%s) - start ))s)"; \
	else \
	  msg="hive-jars: could not fetch the Hive artifacts of tools/hive/pom.xml with Maven"; \
	  command -v mvn >/dev/null || msg="$$msg (mvn is not installed: apt-get install maven)"; \
	  [ -f $(HIVE_CACHE)/mvn.log ] && tail -n 20 $(HIVE_CACHE)/mvn.log >&2; \
	  if [ "$$CI" = true ]; then echo "$$msg; CI=true: failing" >&2; exit 1; fi; \
	  echo "WARNING: $$msg; the Hive Metastore tests will skip (see $(HIVE_CACHE)/mvn.log)" >&2; \
	fi

$(HIVE_CLASSES_STAMP): $(HIVE_STAMP) $(HIVE_JAVA)
	@rm -rf $(HIVE_CLASSES); mkdir -p $(HIVE_CLASSES); \
	if [ -f $(HIVE_STAMP) ] && command -v javac >/dev/null \
	   && javac --release 17 -nowarn -encoding UTF-8 -d $(HIVE_CLASSES) \
	        -cp '$(HIVE_CACHE)/exec/*:$(HIVE_CACHE)/streaming/*:$(HIVE_CACHE)/metastore/*' \
	        $(HIVE_JAVA) >$(HIVE_CACHE)/javac.log 2>&1; then \
	  touch $@; echo "hive-jars: compiled tools/hive/java into $(HIVE_CLASSES)"; \
	else \
	  msg="hive-jars: could not compile tools/hive/java (the Hive 3.1.3 oracle)"; \
	  [ -f $(HIVE_CACHE)/javac.log ] && tail -n 20 $(HIVE_CACHE)/javac.log >&2; \
	  if [ "$$CI" = true ]; then echo "$$msg; CI=true: failing" >&2; exit 1; fi; \
	  echo "WARNING: $$msg; the Hive 3.1 oracle tests will skip" >&2; \
	fi

# acidflow's JVM snapshot reader (jvm/acid-reader: a Spark DataSource V2 in Java reading a Python
# read plan with ORC's Java reader, acidflow.read.jvm), built by Maven against Spark 4.2.0 with
# every dependency `provided` (PySpark's jars/ hold them) into .cache/jvm/ (acidflow.spark
# puts it on the driver's and executors' class path). The jar is its own stamp: rebuilt when
# the pom or a source under jvm/acid-reader/src is newer. A failed build removes the jar (reads
# fall back to the arrow executor) and fails the target when CI=true; elsewhere a warning.
JVM_CACHE := $(CURDIR)/.cache/jvm
JVM_READER_JAR := $(JVM_CACHE)/acidflow-acid-reader.jar
JVM_READER_SRC := jvm/acid-reader/pom.xml $(shell find jvm/acid-reader/src -type f 2>/dev/null)
jvm-reader: $(JVM_READER_JAR)

$(JVM_READER_JAR): $(JVM_READER_SRC)
	@mkdir -p $(JVM_CACHE); rm -f $@; \
	if command -v mvn >/dev/null \
	   && mvn -q -B -f jvm/acid-reader/pom.xml package >$(JVM_CACHE)/mvn.log 2>&1 \
	   && cp jvm/acid-reader/target/acidflow-acid-reader.jar $@.tmp && mv $@.tmp $@; then \
	  echo "jvm-reader: built $@"; \
	else \
	  msg="jvm-reader: could not build jvm/acid-reader with Maven"; \
	  command -v mvn >/dev/null || msg="$$msg (mvn is not installed: apt-get install maven)"; \
	  [ -f $(JVM_CACHE)/mvn.log ] && tail -n 20 $(JVM_CACHE)/mvn.log >&2; \
	  if [ "$$CI" = true ]; then echo "$$msg; CI=true: failing" >&2; exit 1; fi; \
	  echo "WARNING: $$msg; Spark reads use the arrow executor (see $(JVM_CACHE)/mvn.log)" >&2; \
	fi

# Hadoop's S3A connector for Spark on s3:// tables: hadoop-aws matching PySpark's Hadoop
# (3.5.0) and the AWS SDK v2 bundle, pinned in tools/hadoop-aws/pom.xml, fetched from Maven
# Central into .cache/hadoop-aws/ (acidflow.spark.get_spark puts them on spark.jars). Idempotent
# (a stamp file, re-fetched when the pom changes). A failed fetch fails the target when CI=true;
# elsewhere it warns and the Spark-on-S3 test skips.
HADOOP_AWS_CACHE := $(CURDIR)/.cache/hadoop-aws
HADOOP_AWS_STAMP := $(HADOOP_AWS_CACHE)/.fetched
hadoop-aws: $(HADOOP_AWS_STAMP)

$(HADOOP_AWS_STAMP): tools/hadoop-aws/pom.xml
	@rm -rf $(HADOOP_AWS_CACHE); mkdir -p $(HADOOP_AWS_CACHE); \
	start=$$(date +%s); \
	if command -v mvn >/dev/null \
	   && mvn -q -B -f tools/hadoop-aws/pom.xml -Dhadoop.aws.cache=$(HADOOP_AWS_CACHE) \
	        dependency:copy-dependencies@jars >$(HADOOP_AWS_CACHE)/mvn.log 2>&1 \
	   && test -s "$$(ls $(HADOOP_AWS_CACHE)/hadoop-aws-*.jar | head -n1)"; then \
	  touch $@; \
	  echo "hadoop-aws: $$(ls $(HADOOP_AWS_CACHE)/*.jar | wc -l) jars in $(HADOOP_AWS_CACHE)" \
	       "($$(du -sh $(HADOOP_AWS_CACHE) | cut -f1), $$(( $$(date +%s) - start ))s)"; \
	else \
	  msg="hadoop-aws: could not fetch the S3A jars of tools/hadoop-aws/pom.xml with Maven"; \
	  command -v mvn >/dev/null || msg="$$msg (mvn is not installed: apt-get install maven)"; \
	  [ -f $(HADOOP_AWS_CACHE)/mvn.log ] && tail -n 20 $(HADOOP_AWS_CACHE)/mvn.log >&2; \
	  if [ "$$CI" = true ]; then echo "$$msg; CI=true: failing" >&2; exit 1; fi; \
	  echo "WARNING: $$msg; Spark cannot read s3:// and the Spark-on-S3 test skips" >&2; \
	fi

# The Trino server (io.trino:trino-server tar.gz, version pinned in tools/trino/pom.xml) for the
# Trino-on-our-metastore test (tests/integration/test_trino.py): Maven copies the tar.gz from
# Maven Central, GNU tar unpacks it into .cache/trino/ (the archive's plugin folders are hard
# links, which Maven's own unpack turns into empty files), and every plugin but the Hive connector
# is removed (~820 MB download, ~110 MB kept). Trino 476 runs on Java 24+: devservers.trino
# uses $$ACIDFLOW_TRINO_JAVA_HOME, else /usr/lib/jvm/temurin-25-jdk-amd64. Idempotent (a stamp
# file, re-fetched when the pom changes). A failure fails the target when CI=true; elsewhere it
# warns and the Trino tests skip.
TRINO_CACHE := $(CURDIR)/.cache/trino
TRINO_STAMP := $(TRINO_CACHE)/.fetched
trino-server: $(TRINO_STAMP)

$(TRINO_STAMP): tools/trino/pom.xml
	@rm -rf $(TRINO_CACHE); mkdir -p $(TRINO_CACHE); \
	start=$$(date +%s); \
	if command -v mvn >/dev/null \
	   && mvn -q -B -f tools/trino/pom.xml -Dtrino.cache=$(TRINO_CACHE) \
	        dependency:copy@server >$(TRINO_CACHE)/mvn.log 2>&1 \
	   && tgz=$$(ls $(TRINO_CACHE)/trino-server-*.tar.gz) \
	   && size=$$(du -m $$tgz | cut -f1) \
	   && tar -xzf $$tgz -C $(TRINO_CACHE) \
	   && rm -f $$tgz \
	   && find $(TRINO_CACHE)/trino-server-*/plugin -mindepth 1 -maxdepth 1 ! -name hive \
	        -exec rm -rf {} + \
	   && rm -rf $(TRINO_CACHE)/trino-server-*/secrets-plugin \
	   && test -x $(TRINO_CACHE)/trino-server-*/bin/launcher \
	   && test -s "$$(ls $(TRINO_CACHE)/trino-server-*/plugin/hive/trino-hive-*.jar | head -n1)"; then \
	  touch $@; \
	  echo "trino-server: $$(ls -d $(TRINO_CACHE)/trino-server-*) (download $${size} MB," \
	       "kept $$(du -sh $(TRINO_CACHE) | cut -f1), $$(( $$(date +%s) - start ))s)"; \
	else \
	  msg="trino-server: could not fetch or unpack the Trino server of tools/trino/pom.xml"; \
	  command -v mvn >/dev/null || msg="$$msg (mvn is not installed: apt-get install maven)"; \
	  [ -f $(TRINO_CACHE)/mvn.log ] && tail -n 20 $(TRINO_CACHE)/mvn.log >&2; \
	  if [ "$$CI" = true ]; then echo "$$msg; CI=true: failing" >&2; exit 1; fi; \
	  echo "WARNING: $$msg; the Trino tests will skip (see $(TRINO_CACHE)/mvn.log)" >&2; \
	fi

# Apache Kafka 4.3.0 (the KRaft broker, its tools, Kafka Connect with JsonConverter) and Debezium
# 3.6.1.Final's PostgreSQL connector plugin, pinned in tools/kafka/pom.xml, fetched from Maven
# Central into .cache/kafka/ (layout: the pom's header; ~80 MB, a few seconds with a warm Maven
# repository). Idempotent: a stamp file, re-fetched only when the pom changes. A failed fetch
# fails the target when CI=true; elsewhere it warns and the Kafka tests skip
# (tests/integration/test_kafka_debezium.py).
KAFKA_CACHE := $(CURDIR)/.cache/kafka
KAFKA_STAMP := $(KAFKA_CACHE)/.fetched
kafka-jars: $(KAFKA_STAMP) kafka-spark-jars

# (spark/ is the next target's: kept when the broker's artifacts are fetched again)
$(KAFKA_STAMP): tools/kafka/pom.xml
	@rm -rf $(KAFKA_CACHE)/server $(KAFKA_CACHE)/plugins $(KAFKA_CACHE)/target $(KAFKA_CACHE)/mvn.log; \
	mkdir -p $(KAFKA_CACHE); \
	start=$$(date +%s); \
	if command -v mvn >/dev/null \
	   && mvn -q -B -f tools/kafka/pom.xml -Dkafka.cache=$(KAFKA_CACHE) \
	        dependency:copy-dependencies@server dependency:unpack@debezium-postgres \
	        >$(KAFKA_CACHE)/mvn.log 2>&1 \
	   && test -s "$$(ls $(KAFKA_CACHE)/server/kafka_2.13-*.jar | head -n1)" \
	   && test -s "$$(ls $(KAFKA_CACHE)/plugins/debezium-connector-postgres/debezium-connector-postgres-*.jar | head -n1)"; then \
	  touch $@; \
	  echo "kafka-jars: Kafka and Debezium artifacts in $(KAFKA_CACHE)" \
	       "($$(du -sh $(KAFKA_CACHE) | cut -f1), $$(( $$(date +%s) - start ))s)"; \
	else \
	  msg="kafka-jars: could not fetch the Kafka / Debezium artifacts of tools/kafka/pom.xml with Maven"; \
	  command -v mvn >/dev/null || msg="$$msg (mvn is not installed: apt-get install maven)"; \
	  [ -f $(KAFKA_CACHE)/mvn.log ] && tail -n 20 $(KAFKA_CACHE)/mvn.log >&2; \
	  if [ "$$CI" = true ]; then echo "$$msg; CI=true: failing" >&2; exit 1; fi; \
	  echo "WARNING: $$msg; the Kafka tests will skip (see $(KAFKA_CACHE)/mvn.log)" >&2; \
	fi

# Spark's Kafka connector (spark-sql-kafka-0-10_2.13 with kafka-clients, commons-pool2 and the
# token provider), pinned in tools/kafka/spark/pom.xml, into .cache/kafka/spark/ (acidflow's
# Kafka CDC, acidflow.spark.kafka_spark_jars). Same rules as above: a stamp, re-fetched when the
# pom changes; a failed fetch fails when CI=true, elsewhere a warning (the Kafka CDC tests skip).
KAFKA_SPARK_CACHE := $(KAFKA_CACHE)/spark
KAFKA_SPARK_STAMP := $(KAFKA_SPARK_CACHE)/.fetched
kafka-spark-jars: $(KAFKA_SPARK_STAMP)

$(KAFKA_SPARK_STAMP): tools/kafka/spark/pom.xml
	@rm -rf $(KAFKA_SPARK_CACHE); mkdir -p $(KAFKA_SPARK_CACHE); \
	if command -v mvn >/dev/null \
	   && mvn -q -B -f tools/kafka/spark/pom.xml -Dkafka.spark.cache=$(KAFKA_SPARK_CACHE) \
	        dependency:copy-dependencies@spark >$(KAFKA_SPARK_CACHE)/mvn.log 2>&1 \
	   && test -s "$$(ls $(KAFKA_SPARK_CACHE)/spark-sql-kafka-0-10_2.13-*.jar | head -n1)" \
	   && test -s "$$(ls $(KAFKA_SPARK_CACHE)/kafka-clients-*.jar | head -n1)"; then \
	  touch $@; \
	  echo "kafka-spark-jars: Spark's Kafka connector in $(KAFKA_SPARK_CACHE)"; \
	else \
	  msg="kafka-spark-jars: could not fetch Spark's Kafka connector of tools/kafka/spark/pom.xml with Maven"; \
	  command -v mvn >/dev/null || msg="$$msg (mvn is not installed: apt-get install maven)"; \
	  [ -f $(KAFKA_SPARK_CACHE)/mvn.log ] && tail -n 20 $(KAFKA_SPARK_CACHE)/mvn.log >&2; \
	  if [ "$$CI" = true ]; then echo "$$msg; CI=true: failing" >&2; exit 1; fi; \
	  echo "WARNING: $$msg; the Kafka CDC tests will skip (see $(KAFKA_SPARK_CACHE)/mvn.log)" >&2; \
	fi

# Apicurio Registry 2.4.2.Final (a schema registry for Avro, in-memory storage) built from Maven
# Central by tools/apicurio/pom.xml (a Quarkus app from Apicurio's published app jar; why 2.4.2
# and not 3.x: that pom's header), and Apicurio's Kafka Connect AvroConverter as a plugin folder
# (tools/apicurio/converter/pom.xml), into .cache/apicurio/ (devservers.apicurio,
# tests/integration/test_apicurio.py). Same rules as kafka-jars: a stamp, rebuilt when a pom or
# the app's stand-in sources change; a failure fails when CI=true, elsewhere a warning (the
# Avro test skips). -DskipExternalRepos=true: Central only (Apicurio's parent POM adds others).
APICURIO_CACHE := $(CURDIR)/.cache/apicurio
APICURIO_STAMP := $(APICURIO_CACHE)/.built
APICURIO_SRC := tools/apicurio/pom.xml tools/apicurio/converter/pom.xml \
	$(wildcard tools/apicurio/src/main/java/io/acidflow/tools/apicurio/*.java) \
	tools/apicurio/src/main/resources/application.properties
apicurio-jars: $(APICURIO_STAMP)

$(APICURIO_STAMP): $(APICURIO_SRC)
	@rm -rf $(APICURIO_CACHE); mkdir -p $(APICURIO_CACHE); \
	start=$$(date +%s); \
	if command -v mvn >/dev/null \
	   && mvn -q -B -f tools/apicurio/pom.xml -DskipExternalRepos=true \
	        -Dapicurio.cache=$(APICURIO_CACHE) package >$(APICURIO_CACHE)/mvn.log 2>&1 \
	   && mvn -q -B -f tools/apicurio/converter/pom.xml -DskipExternalRepos=true \
	        -Dapicurio.cache=$(APICURIO_CACHE) dependency:copy-dependencies@plugin \
	        >>$(APICURIO_CACHE)/mvn.log 2>&1 \
	   && test -s $(APICURIO_CACHE)/target/acidflow-apicurio-registry-1-runner.jar \
	   && test -s "$$(ls $(APICURIO_CACHE)/plugins/apicurio-converter/apicurio-registry-utils-converter-*.jar | head -n1)"; then \
	  touch $@; \
	  echo "apicurio-jars: Apicurio Registry and its Connect converter in $(APICURIO_CACHE)" \
	       "($$(du -sh $(APICURIO_CACHE) | cut -f1), $$(( $$(date +%s) - start ))s)"; \
	else \
	  msg="apicurio-jars: could not build Apicurio Registry / its converter (tools/apicurio) with Maven"; \
	  command -v mvn >/dev/null || msg="$$msg (mvn is not installed: apt-get install maven)"; \
	  [ -f $(APICURIO_CACHE)/mvn.log ] && tail -n 20 $(APICURIO_CACHE)/mvn.log >&2; \
	  if [ "$$CI" = true ]; then echo "$$msg; CI=true: failing" >&2; exit 1; fi; \
	  echo "WARNING: $$msg; the Avro / schema registry test will skip (see $(APICURIO_CACHE)/mvn.log)" >&2; \
	fi

# A Hive 3.1.3 metastore (thrift, DbTxnManager settings, Hive's compactor off) for a person, in
# the foreground until Ctrl-C: prints its thrift:// URL. Options: make hms HMS_ARGS="--port 9083"
# The servers are development tools (tools/devservers/, not part of the shipped package): tools/
# goes on PYTHONPATH for them.
DEVSERVERS := PYTHONPATH=$(CURDIR)/tools$${PYTHONPATH:+:$$PYTHONPATH}
hms: setup
	$(DEVSERVERS) $(PY) -m devservers.hms $(HMS_ARGS)

# An MIT Kerberos KDC (realm ACIDFLOW.TEST, a user principal 'acidflow' and hive/localhost with
# keytabs) for a person, in the foreground until Ctrl-C: prints the KRB5_CONFIG and keytabs.
# Options: make kdc KDC_ARGS="--port 8888 --dir /tmp/kdc"
kdc: setup
	$(DEVSERVERS) $(PY) -m devservers.kdc $(KDC_ARGS)

# A Kafka 4.3.0 broker (KRaft, one node) and a Kafka Connect worker with Debezium's PostgreSQL
# connector (JsonConverter with schemas; connectors added through its REST API) for a person, in
# the foreground until Ctrl-C: prints the bootstrap servers and the Connect REST URL.
# Options: make kafka KAFKA_ARGS="--port 9092 --connect-port 8083"
kafka: setup
	$(DEVSERVERS) $(PY) -m devservers.kafka $(KAFKA_ARGS)

# A Spark Connect server (PySpark's own jars, acidflow's session settings, its Python workers
# importing jobs/) on 127.0.0.1 for a person, in the foreground until Ctrl-C: prints its sc://
# URL (export SPARK_REMOTE=<url>; docs/spark-connect.md). Options: make connect CONNECT_ARGS="--port 15002"
connect: setup
	$(DEVSERVERS) $(PY) -m devservers.sparkconnect $(CONNECT_ARGS)

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

# Static checks, run by `make test` before the suite: the package layering (import-linter
# contracts in pyproject.toml [tool.importlinter]; jobs/ and plugins/ on PYTHONPATH so this
# checkout's acidflow and UI plugin packages are the ones read), then mypy on the acidflow
# packages and modules listed in [tool.mypy] (every one), then deptry: every import of
# jobs/ and plugins/ is a dependency pyproject.toml declares ([project] or an extra; no missing,
# unused or transitive-only one; [tool.deptry]).
lint: setup
	PYTHONPATH=jobs:plugins $(VENV)/bin/lint-imports --config pyproject.toml
	$(PY) -m mypy
	$(VENV)/bin/deptry jobs plugins
	$(VENV)/bin/ruff check $(RUFF_PATHS)
	$(VENV)/bin/ruff format --check $(RUFF_PATHS)

# `make format`: what `make lint` checks, applied
RUFF_PATHS := jobs plugins dags tests bench tools
format: setup
	$(VENV)/bin/ruff check --fix $(RUFF_PATHS)
	$(VENV)/bin/ruff format $(RUFF_PATHS)

test: setup lint
	$(PY) -m pytest -q --durations=25

test-fast: setup
	$(PY) -m pytest -q -m "not slow"

# make demo SPARK_MODE=connect: the same DAG runs with their Spark tasks on a Spark Connect
# server (make connect, started here on a free port and stopped at the end) instead of
# spark-submit. The default (SPARK_MODE empty or submit) is spark-submit.
SPARK_MODE ?= submit
demo: setup
ifeq ($(SPARK_MODE),connect)
	@set -e; dir=$$(mktemp -d -t acidflow-demo-connect.XXXXXX); \
	$(DEVSERVERS) $(PY) -m devservers.sparkconnect --dir $$dir > $$dir/connect.out 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null; rm -rf $$dir' EXIT; \
	for i in $$(seq 240); do grep -q '^Spark Connect server: sc://' $$dir/connect.out && break; \
	  kill -0 $$pid 2>/dev/null || { cat $$dir/connect.out; exit 1; }; sleep 1; done; \
	url=$$(sed -n 's/^Spark Connect server: \(sc:[^ ]*\).*/\1/p' $$dir/connect.out); \
	test -n "$$url" || { cat $$dir/connect.out; exit 1; }; \
	echo "Spark Connect server: $$url"; \
	$(VENV)/bin/acidflow demo --spark-remote $$url
else
	$(VENV)/bin/acidflow demo
endif

# make demo on a Hive 3.1.3 metastore (thrift:// catalog, docs/hms-catalog.md): starts one
# (make hms) on a free port with a fresh warehouse, runs the demo against it, prints what Hive
# sees (tables, write-id high watermarks), stops it and removes its folder.
demo-hms: setup
	@set -e; dir=$$(mktemp -d -t acidflow-demo-hms.XXXXXX); \
	$(DEVSERVERS) $(PY) -m devservers.hms --dir $$dir/hms > $$dir/hms.out 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null; rm -rf $$dir' EXIT; \
	for i in $$(seq 240); do grep -q ' metastore: thrift://' $$dir/hms.out && break; \
	  kill -0 $$pid 2>/dev/null || { cat $$dir/hms.out; exit 1; }; sleep 1; done; \
	url=$$(sed -n 's/^Hive .* metastore: \(thrift:[^ ]*\).*/\1/p' $$dir/hms.out); \
	test -n "$$url" || { cat $$dir/hms.out; exit 1; }; \
	echo "Hive metastore: $$url (warehouse $$dir/warehouse)"; \
	export ACIDFLOW_CATALOG_URL=$$url ACIDFLOW_WAREHOUSE=$$dir/warehouse; \
	$(VENV)/bin/acidflow demo; \
	$(PY) -c "from acidflow.catalog import load_catalog; print(*load_catalog().describe(), sep=chr(10))"

# The Kafka CDC demo (docs/kafka.md): a private PostgreSQL 15 under a pgbench workload ->
# Debezium -> Kafka -> acidflow's stream for a bounded time, then an acid_cdc Airflow run
# (source: kafka) picks up the rest; every table reconciled row for row with PostgreSQL; prints
# events/s and latency. PostgreSQL, Kafka, Connect and the warehouse live in a fresh temp folder,
# removed at the end (also on Ctrl-C). About 2-3 minutes. Options:
# make demo-kafka DEMO_KAFKA_ARGS="--workload-seconds 45 --stream-seconds 30 --rate 40"
demo-kafka: setup
	$(DEVSERVERS) $(PY) -m devservers.demo_kafka $(DEMO_KAFKA_ARGS)

# Real wal2json change data from a private PostgreSQL 15 (pgbench), about a minute.
sample-data: setup
	PYTHONPATH=$(CURDIR) $(PY) tools/sample_data_pgbench.py --out include/sample_data/pgbench

# Benchmarks (bench/README.md: what and how). Default: everything bench/RESULTS.md reports, about
# 90 minutes on 2 cores: every phase at N=1M/K=10k and N=10M/K=100k, the growth series of the
# K=10k upsert at N=1M, 3M, 10M, the initial load at 10M, S3 (moto) vs local disk at 1M/10k.
# Sizes as options, e.g. make bench BENCH_ARGS="--sizes 1000000:10000 --runs 3".
# Kafka phase (file path vs Kafka path, streaming latency; needs make kafka-jars):
# make bench BENCH_ARGS="--sizes --kafka 100000".
# Results: bench/results/*.json; then `make bench-report` writes bench/RESULTS.md.
BENCH_ARGS ?= --sizes 1000000:10000 3000000:10000 10000000:10000 10000000:100000 \
	--upsert-only 3000000:10000 10000000:10000 --load 10000000 --s3 1000000:10000 --runs 3
bench: setup
	PYTHONPATH=$(CURDIR) $(PY) -m bench.run $(BENCH_ARGS)
	PYTHONPATH=$(CURDIR) $(PY) -m bench.report --notes bench/NOTES.md

bench-report: setup
	PYTHONPATH=$(CURDIR) $(PY) -m bench.report --notes bench/NOTES.md

bench-write-paths: setup
	PYTHONPATH=$(CURDIR) $(PY) bench/write_paths.py

# The race harness of tests/integration/test_races.py, larger than in `make test`: 4 writers (one
# with its own Spark session), a CDC job and a compactor on one keyed table; prints rounds,
# commits, conflicts and duplicates (must be 0). Sizes: make stress STRESS="WRITERS=3 ROUNDS=20"
STRESS ?= WRITERS=4 SPARK_WRITERS=1 ROUNDS=30 KEYS=200 BATCH=20
stress: setup
	env $(addprefix ACIDFLOW_RACE_,$(STRESS)) $(PY) -m pytest -q -s -p no:cacheprovider \
	  tests/integration/test_races.py
	PYTHONPATH=jobs:plugins:. $(PY) -m bench.catalog_soak --batches $(or $(SOAK_BATCHES),1000)

lock:
	$(UV) pip compile --python $(PY) requirements.in -o requirements.txt

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
