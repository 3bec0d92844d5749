"""One Kafka protocol request on a plain socket: ``Metadata`` (version 4), enough for
:mod:`devservers.kafka` to know that a broker is up and has registered itself, without a Python
Kafka client. Wire format: Kafka's protocol guide (size-prefixed big-endian frames, request
header v1, non-flexible versions: int16-length strings, int32-count arrays)."""

from __future__ import annotations

import socket
import struct

__all__ = ["metadata"]


def _string(buf: bytes, at: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">h", buf, at)
    at += 2
    if n < 0:
        return None, at
    return buf[at : at + n].decode(), at + n


def metadata(host: str, port: int, timeout_s: float = 5.0) -> tuple[str | None, list[str]]:
    """Send one Kafka protocol ``Metadata`` request (version 4, no topics) to ``host:port``
    and read the answer.

    Returns:
        The cluster id and the brokers the answer lists, as ``host:port`` strings (empty while
        the node has not registered itself as a broker).

    Raises:
        OSError: the connection failed, was closed, or timed out.
        struct.error: the answer was shorter than a Metadata v4 answer.
    """
    client_id = b"acidflow-devservers"
    # request header v1: api_key=3 (Metadata), api_version=4, correlation id, client id; then
    # the body: topics = an empty array (no topic; -1, null, would ask for all of them) and
    # allow_auto_topic_creation = false
    body = struct.pack(">hhih", 3, 4, 7, len(client_id)) + client_id
    body += struct.pack(">i?", 0, False)
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        head = _recv(sock, 4)
        (size,) = struct.unpack(">i", head)
        buf = _recv(sock, size)
    # response: correlation id, throttle_time_ms, brokers [node_id, host, port, rack],
    # cluster_id, controller_id, topics
    at = 8
    (count,) = struct.unpack_from(">i", buf, at)
    at += 4
    brokers = []
    for _ in range(count):
        at += 4  # node id
        bhost, at = _string(buf, at)
        (bport,) = struct.unpack_from(">i", buf, at)
        at += 4
        _rack, at = _string(buf, at)
        brokers.append(f"{bhost}:{bport}")
    cluster_id, at = _string(buf, at)
    return cluster_id, brokers


def _recv(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection mid-answer")
        data += chunk
    return data
