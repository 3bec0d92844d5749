"""A real MIT Kerberos KDC on 127.0.0.1, for the tests and for a person.

:func:`start_kdc` lays out a realm in a work folder and runs MIT's ``krb5kdc`` on a free port:

* ``kdc.conf`` (``KRB5_KDC_PROFILE``): the realm's database, stash file, ACL and the port
  (UDP and TCP), AES-SHA1 keys only (what both MIT and Java 17's Kerberos accept by default);
* ``krb5.conf`` (``KRB5_CONFIG`` for MIT clients, ``-Djava.security.krb5.conf`` for a JVM):
  the realm with ``kdc = 127.0.0.1:<port>``, TCP only (``udp_preference_limit = 1``), no DNS
  (``dns_lookup_kdc``/``rdns``/``dns_canonicalize_hostname`` off), ``localhost`` in the realm;
* the database, made by ``kdb5_util create -s`` (a random master password, stashed);
* principals and keytabs made with ``kadmin.local`` (:meth:`Kdc.add_principal`,
  :meth:`Kdc.keytab`), e.g. ``hive/localhost@ACIDFLOW.TEST`` for a metastore and a user
  principal for a client.

The binaries are Debian's ``krb5-kdc`` and ``krb5-admin-server`` (``kdb5_util``, ``krb5kdc``,
``kadmin.local`` in ``/usr/sbin``) and ``krb5-user`` (``kinit``, ``klist``); ``make setup``
installs them. ``python -m devservers.kdc`` (``make kdc``) runs one in the foreground until
Ctrl-C and prints the ``KRB5_CONFIG`` to use; the test suite's ``kdc`` fixture
(``tests/conftest.py``) starts one per test session. A development tool: not part of the
shipped ``acidflow`` package.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from devservers.process import JvmServer, free_port, serve_foreground, tail

__all__ = [
    "DEFAULT_REALM",
    "KDC_TOOLS",
    "Kdc",
    "KdcStartError",
    "KerberosToolsMissing",
    "find_kdc_tools",
    "main",
    "start_kdc",
]

DEFAULT_REALM = "ACIDFLOW.TEST"
#: The MIT Kerberos programs the KDC needs (Debian packages krb5-kdc, krb5-admin-server,
#: krb5-user).
KDC_TOOLS = ("kdb5_util", "krb5kdc", "kadmin.local", "kinit", "klist")
_SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")


class KerberosToolsMissing(RuntimeError):
    """An MIT Kerberos program is not installed (names it and the Debian package)."""


class KdcStartError(RuntimeError):
    """``kdb5_util``, ``kadmin.local`` or ``krb5kdc`` failed or the KDC did not listen in
    time; the message names the command and carries its output or the KDC log's tail."""


def find_kdc_tools() -> dict[str, str]:
    """The paths of :data:`KDC_TOOLS` (``PATH`` first, then the sbin folders).

    Raises:
        KerberosToolsMissing: one is missing (names it and what installs it).
    """
    found: dict[str, str] = {}
    path = os.pathsep.join([os.environ.get("PATH", ""), *_SBIN])
    for tool in KDC_TOOLS:
        hit = shutil.which(tool, path=path)
        if hit is None:
            raise KerberosToolsMissing(
                f"MIT Kerberos program {tool!r} not found: run 'make setup' (or apt-get install"
                " krb5-kdc krb5-admin-server krb5-user)"
            )
        found[tool] = hit
    return found


@dataclass
class Kdc(JvmServer):
    """A running ``krb5kdc`` (from :func:`start_kdc`); a context manager that stops it on exit.

    ``process`` is the KDC (not a JVM: :class:`JvmServer` only gives it ``stop`` / ``running``).
    """

    realm: str
    port: int
    workdir: Path
    log: Path
    tools: dict[str, str] = field(repr=False)
    process: "subprocess.Popen[bytes]" = field(repr=False)

    @property
    def krb5_conf(self) -> Path:
        """The client configuration (``KRB5_CONFIG``, Java's ``java.security.krb5.conf``)."""
        return self.workdir / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        """The KDC's own profile (``KRB5_KDC_PROFILE``)."""
        return self.workdir / "kdc.conf"

    def env(self) -> dict[str, str]:
        """The environment variables that point MIT Kerberos programs and libraries at this
        realm: ``KRB5_CONFIG`` and ``KRB5_KDC_PROFILE``."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def principal(self, name: str) -> str:
        """``name`` with ``@REALM`` appended unless it already names a realm."""
        return name if "@" in name else f"{name}@{self.realm}"

    def kadmin(self, query: str) -> str:
        """Run one ``kadmin.local -q <query>`` on the realm's database; returns its output.

        Raises:
            KdcStartError: kadmin.local failed or reported an error (names the query).
        """
        done = subprocess.run(
            [self.tools["kadmin.local"], "-r", self.realm, "-q", query],
            env=dict(os.environ, **self.env()),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        out = done.stdout + done.stderr
        # kadmin.local exits 0 on a failed query; MIT's messages read "<op>: <reason> while ..."
        if done.returncode != 0 or " while " in done.stderr:
            shown = re.sub(r"(-pw\s+)\S+", r"\1***", query)  # never print a password
            raise KdcStartError(f"kadmin.local -q {shown!r} failed ({done.returncode}): {out}")
        return out

    def add_principal(self, name: str, password: str | None = None) -> str:
        """Create principal ``name`` (``@REALM`` added when missing): with ``password``, or a
        random key (``-randkey``, for services and keytab-only users). Returns the full name."""
        full = self.principal(name)
        key = f"-pw {password}" if password is not None else "-randkey"
        self.kadmin(f"addprinc {key} {full}")
        return full

    def keytab(self, name: str, path: Path | None = None) -> Path:
        """Write principal ``name``'s keys to a keytab (default ``<workdir>/<name>.keytab``,
        ``/`` as ``_``), readable by the owner only. The principal's key is kept
        (``ktadd -norandkey``), so several keytabs of one principal all work. Returns it."""
        full = self.principal(name)
        out = path or self.workdir / f"{full.split('@')[0].replace('/', '_')}.keytab"
        self.kadmin(f"ktadd -norandkey -k {out} {full}")
        out.chmod(0o600)
        return out

    def kinit(self, principal: str, keytab: Path, ccache: Path) -> None:
        """``kinit -kt <keytab> <principal>`` into the credential cache file ``ccache``.

        Raises:
            KdcStartError: kinit failed (its message).
        """
        done = subprocess.run(
            [self.tools["kinit"], "-kt", str(keytab), "-c", f"FILE:{ccache}", principal],
            env=dict(os.environ, **self.env()),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if done.returncode != 0:
            raise KdcStartError(f"kinit {principal} from {keytab} failed: {done.stderr.strip()}")


def _krb5_conf(realm: str, port: int) -> str:
    return f"""\
# written by devservers.kdc
[libdefaults]
    default_realm = {realm}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    rdns = false
    dns_canonicalize_hostname = false
    udp_preference_limit = 1
    ticket_lifetime = 24h
    forwardable = true
    default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
    default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
    permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96

[realms]
    {realm} = {{
        kdc = 127.0.0.1:{port}
        admin_server = 127.0.0.1:{port}
    }}

[domain_realm]
    localhost = {realm}
    127.0.0.1 = {realm}
"""


def _kdc_conf(realm: str, port: int, workdir: Path) -> str:
    return f"""\
# written by devservers.kdc
[kdcdefaults]
    kdc_ports = {port}
    kdc_tcp_ports = {port}

[realms]
    {realm} = {{
        database_name = {workdir / "principal"}
        key_stash_file = {workdir / "stash"}
        acl_file = {workdir / "kadm5.acl"}
        max_life = 24h
        max_renewable_life = 7d
        master_key_type = aes256-cts-hmac-sha1-96
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{workdir / "kdc.log"}
"""


def _udp_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start_kdc(
    workdir: Path,
    *,
    realm: str = DEFAULT_REALM,
    port: int | None = None,
    timeout_s: float = 30.0,
) -> Kdc:
    """Create realm ``realm`` in ``workdir`` and start ``krb5kdc`` on 127.0.0.1 (module doc).

    Args:
        workdir: folder for the configuration, the database and ``kdc.log``; created.
        realm: the realm's name (upper case, by convention).
        port: the KDC's port (UDP and TCP); default a free one.
        timeout_s: how long the KDC may take to accept TCP connections.

    Returns:
        The running :class:`Kdc` (stop it, or use it as a context manager).

    Raises:
        KerberosToolsMissing: the MIT programs are not installed.
        KdcStartError: the database could not be made, or the KDC exited or did not listen.
    """
    tools = find_kdc_tools()
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if port is None:
        port = free_port()
        while not _udp_free(port):
            port = free_port()
    (workdir / "krb5.conf").write_text(_krb5_conf(realm, port))
    (workdir / "kdc.conf").write_text(_kdc_conf(realm, port, workdir))
    (workdir / "kadm5.acl").write_text(f"*/admin@{realm} *\n")
    env = dict(
        os.environ,
        KRB5_CONFIG=str(workdir / "krb5.conf"),
        KRB5_KDC_PROFILE=str(workdir / "kdc.conf"),
    )
    done = subprocess.run(
        [tools["kdb5_util"], "create", "-s", "-r", realm, "-P", secrets.token_hex(16)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        raise KdcStartError(
            f"kdb5_util create -s -r {realm} in {workdir} failed ({done.returncode}):"
            f" {done.stdout}{done.stderr}"
        )
    log = workdir / "kdc.log"
    out = workdir / "krb5kdc.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [tools["krb5kdc"], "-n", "-r", realm, "-P", str(workdir / "krb5kdc.pid")],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    kdc = Kdc(realm, port, workdir, log, tools, proc)
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise KdcStartError(
                f"krb5kdc for {realm} on port {port} exited with {proc.returncode};"
                f" {out}:\n{tail(out)}\n{log}:\n{tail(log)}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return kdc
        except OSError:
            pass
        if time.monotonic() > deadline:
            kdc.stop()
            raise KdcStartError(
                f"krb5kdc for {realm} did not listen on 127.0.0.1:{port} within"
                f" {timeout_s:.0f}s; {log}:\n{tail(log)}"
            )
        time.sleep(0.1)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m devservers.kdc`` / ``make kdc``: start a KDC with a user principal (and its
    keytab) and ``hive/localhost`` (the metastore's), print how to use them, serve until Ctrl-C.
    Returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m devservers.kdc",
        description="Run an MIT Kerberos KDC on 127.0.0.1 until Ctrl-C.",
    )
    ap.add_argument("--realm", default=DEFAULT_REALM)
    ap.add_argument("--port", type=int, default=None, help="KDC port (default: a free one)")
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--user", default="acidflow", help="a user principal to create, with a keytab")
    args = ap.parse_args(argv)
    tmp = None if args.dir else tempfile.mkdtemp(prefix="acidflow-kdc-")
    workdir = args.dir or Path(tmp or ".")
    try:
        kdc = start_kdc(workdir, realm=args.realm, port=args.port)
        user = kdc.add_principal(args.user)
        user_kt = kdc.keytab(user)
        hive = kdc.add_principal("hive/localhost")
        hive_kt = kdc.keytab(hive)
    except (KerberosToolsMissing, KdcStartError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"MIT Kerberos KDC for realm {kdc.realm} on 127.0.0.1:{kdc.port}\n"
        f"  export KRB5_CONFIG={kdc.krb5_conf}\n"
        f"  {user}: keytab {user_kt}  (kinit -kt {user_kt} {user})\n"
        f"  {hive}: keytab {hive_kt}\n  log: {kdc.log}   (Ctrl-C stops it)",
        flush=True,
    )
    try:
        return serve_foreground(kdc.process, kdc.log, "the KDC")
    finally:
        kdc.stop()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
