"""What the metastore, Trino and Kafka servers share: the repository's cache folder, a free TCP port,
the tail of a log, stopping a server process, and serving one in the foreground until Ctrl-C
(or SIGTERM)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Self

#: The repository root (``tools/devservers/process.py`` -> ``tools`` -> the root).
REPO_ROOT = Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    """``<repository root>/.cache``: where ``make hive-jars`` and ``make trino-server`` put
    their artifacts."""
    return REPO_ROOT / ".cache"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of the log at ``path``, or ``(no log)`` when it cannot be
    read."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


def stop_process(process: "subprocess.Popen[bytes]", timeout_s: float = 30.0) -> None:
    """SIGTERM ``process`` (a JVM's shutdown hooks then run), SIGKILL it after ``timeout_s``
    seconds. Idempotent: nothing happens once it has exited."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout_s)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve_foreground(
    process: "subprocess.Popen[bytes]",
    log: Path,
    name: str,
    companions: Sequence[tuple["subprocess.Popen[bytes]", Path, str]] = (),
) -> int:
    """Wait while the started server ``process`` (and every ``(process, log, name)`` of
    ``companions``, e.g. the broker under a Kafka Connect worker) runs, until Ctrl-C or SIGTERM
    (both stop the wait). The caller stops the servers afterwards.

    Returns:
        0 after Ctrl-C / SIGTERM; 1 when a server exited by itself (its exit status and the
        tail of its log are printed to stderr).
    """
    signal.signal(signal.SIGTERM, _interrupt)
    watched = [(process, log, name), *companions]
    try:
        while True:
            for proc, proc_log, proc_name in watched:
                if proc.poll() is not None:
                    print(
                        f"error: {proc_name} exited ({proc.returncode});"
                        f" {proc_log}:\n{tail(proc_log)}",
                        file=sys.stderr,
                    )
                    return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        print(f"stopping {name}", flush=True)
        return 0


class JvmServer:
    """What every dev server here shares (the metastore, Trino, the Kafka broker, Connect): a
    ``process`` attribute holding the JVM, :meth:`running`, :meth:`stop` and use as a context
    manager that stops it on exit. The servers are dataclasses that inherit this."""

    process: "subprocess.Popen[bytes]"

    def running(self) -> bool:
        """True while the JVM has not exited."""
        return self.process.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM the JVM (its shutdown hooks run: the metastore closes its thrift server,
        Trino shuts down gracefully, the broker does a controlled shutdown, Connect commits its
        connectors' offsets), SIGKILL after ``timeout_s`` seconds. Idempotent."""
        stop_process(self.process, timeout_s)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
