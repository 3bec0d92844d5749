"""devservers.trino without a JVM: the etc/ folder it writes for Trino 476 (one-process
coordinator + worker, the Hive connector on a thrift:// metastore with Hadoop's file system for
file: locations) and its errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from devservers import trino


def _props(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line)


def test_write_etc_lays_out_a_single_node_server(tmp_path):
    etc = trino.write_etc(
        tmp_path / "etc",
        port=18080,
        metastore_url="thrift://127.0.0.1:9083",
        data_dir=tmp_path / "data",
        heap="768M",
    )
    config = _props(etc / "config.properties")
    assert config == {
        "coordinator": "true",
        "node-scheduler.include-coordinator": "true",
        "http-server.http.port": "18080",
        "discovery.uri": "http://127.0.0.1:18080",
    }
    node = _props(etc / "node.properties")
    assert node["node.data-dir"] == str(tmp_path / "data")
    assert node["node.internal-address"] == "127.0.0.1" and node["node.environment"] == "acidflow"
    jvm = (etc / "jvm.config").read_text().splitlines()
    assert "-Xmx768M" in jvm and "-XX:+ExitOnOutOfMemoryError" in jvm
    hive = _props(etc / "catalog" / "hive.properties")
    assert hive == {
        "connector.name": "hive",
        "hive.metastore.uri": "thrift://127.0.0.1:9083",
        "fs.hadoop.enabled": "true",
        "hive.non-managed-table-writes-enabled": "true",
    }


def test_catalog_extra_keys_come_last_and_win():
    props = trino.hive_catalog_properties(
        "thrift://h:1", {"fs.hadoop.enabled": "false", "hive.max-partitions-per-writers": "7"}
    )
    assert props["fs.hadoop.enabled"] == "false"
    assert list(props)[-1] == "hive.max-partitions-per-writers"


@pytest.mark.parametrize("url", ["http://127.0.0.1:9083", "thrift://127.0.0.1", "127.0.0.1:9083"])
def test_a_non_thrift_metastore_url_is_refused_by_name(url):
    with pytest.raises(ValueError, match="thrift://host:port") as err:
        trino.hive_catalog_properties(url)
    assert repr(url) in str(err.value)


def test_missing_server_names_the_folder_and_the_make_target(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "launcher").write_text("#!/bin/sh\n")
    with pytest.raises(trino.TrinoMissing) as err:
        trino.locate_trino(tmp_path)
    assert str(tmp_path / "plugin" / "hive") in str(err.value)
    assert "make trino-server" in str(err.value)


def test_missing_java_names_the_folder_and_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(trino.TRINO_JAVA_HOME_ENV, str(tmp_path / "jdk"))
    with pytest.raises(trino.TrinoMissing, match="ACIDFLOW_TRINO_JAVA_HOME") as err:
        trino.trino_java_home()
    assert str(tmp_path / "jdk") in str(err.value)


def test_default_home_is_the_repository_cache(monkeypatch):
    monkeypatch.delenv(trino.TRINO_HOME_ENV, raising=False)
    home = trino.default_trino_home()
    assert home.parts[-3:] == (".cache", "trino", f"trino-server-{trino.TRINO_VERSION}")
    monkeypatch.setenv(trino.TRINO_HOME_ENV, "/opt/trino")
    assert trino.default_trino_home() == Path("/opt/trino")


def test_query_error_carries_trinos_name_and_the_sql():
    err = trino.TrinoQueryError(
        "SELECT 1/0", {"errorName": "DIVISION_BY_ZERO", "message": "Division by zero"}
    )
    assert err.error_name == "DIVISION_BY_ZERO" and err.trino_message == "Division by zero"
    assert str(err) == "Trino DIVISION_BY_ZERO: Division by zero -- in: SELECT 1/0"
