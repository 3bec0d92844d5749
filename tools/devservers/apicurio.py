"""Apicurio Registry 2.4.2.Final (a schema registry for Avro) on 127.0.0.1, and the Kafka Connect
settings with which Debezium writes Avro through it, for the tests and for a person.

The artifacts come from Maven Central through ``tools/apicurio/pom.xml`` (the registry: a Quarkus
application built from Apicurio's published ``apicurio-registry-app`` jar) and
``tools/apicurio/converter/pom.xml`` (Apicurio's Kafka Connect converters as a plugin folder),
into ``.cache/apicurio/`` at the repository root unless ``$ACIDFLOW_APICURIO_CACHE`` says
otherwise::

    target/acidflow-apicurio-registry-1-runner.jar   the registry (``java -jar``), with target/lib/
    plugins/apicurio-converter/                      Connect plugin: AvroConverter and its jars

Why 2.4.2.Final and not 3.x, and what the poms work around: ``tools/apicurio/pom.xml``'s header.

:func:`start_apicurio` runs the registry with its default storage (SQL on an in-memory H2
database: nothing on disk, empty at each start) on a free port; it is ready when
``GET /apis/registry/v2/system/info`` answers. :func:`avro_converter_properties` gives the Connect
worker properties that make keys and values Avro through that registry
(``io.apicurio.registry.utils.converter.AvroConverter``, schemas registered on first use).

Wire format of a record written so (Apicurio 2.x's default ``DefaultIdHandler``, the ids in the
payload, not in headers): byte 0 = magic ``0x00``, bytes 1..8 = the schema's *global id* as a
big-endian signed 64-bit integer, then the Avro binary encoding of the datum.
``GET /apis/registry/v2/ids/globalIds/<id>`` returns the writer schema (Avro JSON). The converter
registers Debezium's shared ``io.debezium.connector.postgresql.Source`` record as an artifact of
its own, which the envelope's schema names by reference only (``?dereference=true`` does not
inline it in 2.4.2): ``GET .../ids/globalIds/<id>/references`` lists those artifact versions
(:meth:`ApicurioServer.references` fetches them), and a decoder needs them all.
:func:`split_wire` splits a record so; :meth:`ApicurioServer.schema` fetches the schema.

``python -m devservers.apicurio`` runs the registry in the foreground until Ctrl-C. A development
tool: not part of the shipped ``acidflow`` package.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from devservers.process import JvmServer, cache_dir, free_port, serve_foreground, tail

__all__ = [
    "APICURIO_CACHE_ENV",
    "APICURIO_VERSION",
    "AVRO_CONVERTER",
    "ApicurioArtifacts",
    "ApicurioArtifactsMissing",
    "ApicurioServer",
    "ApicurioStartError",
    "avro_converter_properties",
    "default_cache_dir",
    "main",
    "split_wire",
    "start_apicurio",
]

APICURIO_VERSION = "2.4.2.Final"
APICURIO_CACHE_ENV = "ACIDFLOW_APICURIO_CACHE"
#: Apicurio's Avro converter for Kafka Connect (keys and values).
AVRO_CONVERTER = "io.apicurio.registry.utils.converter.AvroConverter"
#: The registry's JVM flags: a small heap (a test registry holds a few schemas).
JAVA_OPTIONS: tuple[str, ...] = ("-Xms64m", "-Xmx256m", "-Djava.awt.headless=true")
_RUNNER = "acidflow-apicurio-registry-1-runner.jar"
_CONVERTER_PLUGIN = "apicurio-converter"
#: Apicurio 2.x's payload header: magic byte 0, then an 8-byte global id.
_MAGIC = 0


class ApicurioArtifactsMissing(RuntimeError):
    """The registry or the converter plugin is not in the cache folder (named)."""


class ApicurioStartError(RuntimeError):
    """The registry failed or was not ready in time; the message names the log and carries its
    tail."""


def default_cache_dir() -> Path:
    """``$ACIDFLOW_APICURIO_CACHE`` or ``<repository root>/.cache/apicurio``."""
    env = os.environ.get(APICURIO_CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return cache_dir() / "apicurio"


@dataclass(frozen=True)
class ApicurioArtifacts:
    """The built registry and the converter plugin under ``root`` (layout: module doc)."""

    root: Path

    @property
    def runner_jar(self) -> Path:
        """The registry's runner jar (its dependencies are in ``lib/`` beside it)."""
        return self.root / "target" / _RUNNER

    @property
    def plugins_dir(self) -> Path:
        """A Connect ``plugin.path`` entry holding the converter plugin folder."""
        return self.root / "plugins"

    @property
    def converter_dir(self) -> Path:
        """The converter plugin folder."""
        return self.plugins_dir / _CONVERTER_PLUGIN

    def missing(self) -> list[Path]:
        """The expected files that are absent (empty when all are there)."""
        wanted = [
            self.runner_jar,
            self.converter_dir / f"apicurio-registry-utils-converter-{APICURIO_VERSION}.jar",
        ]
        return [p for p in wanted if not p.exists()]

    @classmethod
    def locate(cls, root: Path | None = None) -> "ApicurioArtifacts":
        """The artifacts under ``root`` (default :func:`default_cache_dir`).

        Raises:
            ApicurioArtifactsMissing: naming the first missing file and the fix.
        """
        found = cls((root or default_cache_dir()).resolve())
        gone = found.missing()
        if gone:
            raise ApicurioArtifactsMissing(
                f"Apicurio Registry {APICURIO_VERSION} artifacts not found in {found.root}"
                f" ({gone[0]} is missing): build them with Maven (tools/apicurio/pom.xml and"
                f" tools/apicurio/converter/pom.xml, commands in their headers) or set"
                f" ${APICURIO_CACHE_ENV}"
            )
        return found


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ApicurioStartError("no 'java' on PATH and none in $JAVA_HOME: Apicurio needs 17+")
    return found


@dataclass
class ApicurioServer(JvmServer):
    """A running registry (from :func:`start_apicurio`); a context manager that stops it."""

    host: str
    port: int
    workdir: Path
    log: Path
    artifacts: ApicurioArtifacts
    process: "subprocess.Popen[bytes]" = field(repr=False)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self.host}:{self.port}"

    @property
    def api_url(self) -> str:
        """The REST API v2 root (``.../apis/registry/v2``): the converters'
        ``apicurio.registry.url``."""
        return f"{self.url}/apis/registry/v2"

    def system_info(self) -> dict[str, Any]:
        """``GET /system/info``: name, version, build time."""
        info: dict[str, Any] = requests.get(f"{self.api_url}/system/info", timeout=10).json()
        return info

    def schema(self, global_id: int) -> Any:
        """The schema registered under ``global_id`` (``GET /ids/globalIds/<id>``), parsed
        (Avro schemas are JSON). It may name types it does not define: :meth:`references`.

        Raises:
            ApicurioStartError: the registry does not know the id (HTTP status and message).
        """
        resp = requests.get(f"{self.api_url}/ids/globalIds/{global_id}", timeout=10)
        if resp.status_code != 200:
            raise ApicurioStartError(
                f"schema {global_id}: HTTP {resp.status_code} {resp.text[:200]}"
            )
        return resp.json()

    def references(self, global_id: int) -> list[Any]:
        """The schemas that the schema of ``global_id`` names by reference, recursively
        (``GET /ids/globalIds/<id>/references``, then each referenced artifact version's content
        and references), parsed, each once."""
        out: list[Any] = []
        seen: set[tuple[str, str, str]] = set()
        todo: list[dict[str, Any]] = requests.get(
            f"{self.api_url}/ids/globalIds/{global_id}/references", timeout=10
        ).json()
        while todo:
            ref = todo.pop()
            group = ref.get("groupId") or "default"
            key = (group, ref["artifactId"], ref["version"])
            if key in seen:
                continue
            seen.add(key)
            base = (
                f"{self.api_url}/groups/{group}/artifacts/{ref['artifactId']}"
                f"/versions/{ref['version']}"
            )
            out.append(requests.get(base, timeout=10).json())
            todo.extend(requests.get(f"{base}/references", timeout=10).json())
        return out


def avro_converter_properties(
    registry: ApicurioServer, *, keys: bool = True, values: bool = True
) -> dict[str, str]:
    """Kafka Connect worker properties that make record keys and/or values Avro through
    ``registry`` (Apicurio's ``AvroConverter``, each record's schema registered as an artifact
    on first use and found again by content afterwards). The worker's ``plugin.path`` must also
    list ``artifacts.plugins_dir`` and its ``plugin.discovery`` must scan
    (``hybrid_warn``): Apicurio 2.4's converter jar has no ServiceLoader manifest."""
    props: dict[str, str] = {}
    for side, wanted in (("key", keys), ("value", values)):
        if not wanted:
            continue
        props[f"{side}.converter"] = AVRO_CONVERTER
        props[f"{side}.converter.apicurio.registry.url"] = registry.api_url
        props[f"{side}.converter.apicurio.registry.auto-register"] = "true"
        props[f"{side}.converter.apicurio.registry.find-latest"] = "true"
    return props


def split_wire(value: bytes) -> tuple[int, bytes]:
    """A record value written by Apicurio 2.x's serializer/converter -> ``(global id, Avro
    body)`` (format: module doc).

    Raises:
        ValueError: too short, or not starting with the magic byte 0.
    """
    if len(value) < 9 or value[0] != _MAGIC:
        raise ValueError(
            f"not an Apicurio-framed Avro value (magic byte 0 + 8-byte global id): {value[:9]!r}"
        )
    (global_id,) = struct.unpack(">q", value[1:9])
    return int(global_id), value[9:]


def start_apicurio(
    work_dir: Path,
    *,
    port: int | None = None,
    artifacts: ApicurioArtifacts | None = None,
    extra_conf: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
) -> ApicurioServer:
    """Start the registry on 127.0.0.1 (in-memory storage; module doc).

    Args:
        work_dir: folder for ``apicurio.log``; created if needed.
        port: the HTTP port; default a free one.
        artifacts: default :meth:`ApicurioArtifacts.locate`.
        extra_conf: more Quarkus / Apicurio properties, as ``-D`` system properties.
        timeout_s: how long it may take until ``/system/info`` answers.

    Raises:
        ApicurioArtifactsMissing: nothing built.
        ApicurioStartError: the JVM exited or did not answer within ``timeout_s``.
    """
    arts = artifacts or ApicurioArtifacts.locate()
    work_dir = work_dir.resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    props = {
        "quarkus.http.host": "127.0.0.1",
        "quarkus.http.port": str(port),
        # the app's access log, Sentry and OIDC stay quiet or off
        "quarkus.http.access-log.enabled": "false",
        **(extra_conf or {}),
    }
    log = work_dir / "apicurio.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                _java(),
                *JAVA_OPTIONS,
                *(f"-D{k}={v}" for k, v in props.items()),
                "-jar",
                str(arts.runner_jar),
            ],
            cwd=work_dir,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = ApicurioServer("127.0.0.1", port, work_dir, log, arts, proc)
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise ApicurioStartError(
                f"Apicurio Registry on port {port} exited with {proc.returncode} before it was"
                f" ready; {log}:\n{tail(log)}"
            )
        try:
            if requests.get(f"{server.api_url}/system/info", timeout=2).status_code == 200:
                return server
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise ApicurioStartError(
                f"Apicurio Registry {server.url} did not answer within {timeout_s:.0f}s;"
                f" {log}:\n{tail(log)}"
            )
        time.sleep(0.25)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m devservers.apicurio``: start the registry, print its URL, serve until
    Ctrl-C (or SIGTERM), then stop it. Returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m devservers.apicurio",
        description=f"Run Apicurio Registry {APICURIO_VERSION} on 127.0.0.1 until Ctrl-C.",
    )
    ap.add_argument("--port", type=int, default=None, help="HTTP port (default: a free one)")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="acidflow-apicurio-")
    try:
        started = time.monotonic()
        try:
            reg = start_apicurio(Path(tmp), port=args.port)
        except (ApicurioArtifactsMissing, ApicurioStartError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        try:
            print(
                f"Apicurio Registry {APICURIO_VERSION}: {reg.api_url}"
                f"  (started in {time.monotonic() - started:.1f}s)\n  log: {reg.log}"
                "   (Ctrl-C stops it)",
                flush=True,
            )
            return serve_foreground(reg.process, reg.log, "Apicurio Registry")
        finally:
            reg.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
