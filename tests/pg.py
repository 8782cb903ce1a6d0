"""A throwaway PostgreSQL server for the store tests: initdb into a temporary folder and
pg_ctl on a free local port, as a non-root user (Debian's `postgres` when we run as root).

Binaries are found under /usr/lib/postgresql/*/bin (or PG_BIN). When none are installed the
PostgreSQL tests skip, unless JUDGE_REQUIRE_POSTGRES=1 (CI), where they fail loudly.

pg_ctl detaches the server, so it would outlive a test session killed before its teardown
(a CI timeout, an OOM kill). A watchdog process waits on a pipe only the starting process
writes to: when that pipe breaks without a "stopped" word, it stops the server
(`-m immediate`) and removes its folder.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path


def find_bin() -> Path | None:
    env = os.environ.get("PG_BIN")
    if env and (Path(env) / "initdb").exists():
        return Path(env)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_WATCHDOG = """
import shutil, subprocess, sys
*stop, root = sys.argv[1:]
if sys.stdin.buffer.read(1) != b"s":  # the pipe broke: the test process died
    subprocess.run(stop, capture_output=True, check=False)
    shutil.rmtree(root, ignore_errors=True)
"""


@dataclass
class PgServer:
    bin: Path
    datadir: Path
    port: int
    user: str
    run_as: list[str]
    watchdog: subprocess.Popen[bytes] | None = None

    def _stop_command(self) -> list[str]:
        return [*self.run_as, str(self.bin / "pg_ctl"), "-D", str(self.datadir), "-m",
                "immediate", "stop"]

    def watch(self) -> None:
        """Start the watchdog that stops the server if this process dies first."""
        self.watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, *self._stop_command(), str(self.datadir.parent)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)  # not stopped by a Ctrl-C; holds none of our pipes

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/postgres"

    def url(self, dbname: str) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; returns its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={self.user} "
                             "dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        subprocess.run(self._stop_command(), capture_output=True, check=False)
        shutil.rmtree(self.datadir.parent, ignore_errors=True)
        if self.watchdog is not None and self.watchdog.stdin is not None:
            try:
                self.watchdog.stdin.write(b"s")
                self.watchdog.stdin.close()
            except OSError:
                pass
            self.watchdog.wait(timeout=30)
            self.watchdog = None


def start_server() -> PgServer:
    """Start a server; raises RuntimeError with the reason when that is impossible."""
    pg_bin = find_bin()
    if pg_bin is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    run_as: list[str] = []
    user = pwd.getpwuid(os.getuid()).pw_name
    root = Path(tempfile.mkdtemp(prefix="judge-pg-"))
    if os.getuid() == 0:  # postgres refuses to run as root
        user = "postgres"
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise RuntimeError("running as root and there is no 'postgres' user") from None
        os.chown(root, entry.pw_uid, entry.pw_gid)
        run_as = ["runuser", "-u", user, "--"]
    datadir = root / "data"
    port = free_port()

    def run(*args: str) -> None:
        proc = subprocess.run([*run_as, *args], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {proc.stderr.strip() or proc.stdout.strip()}")

    server = PgServer(bin=pg_bin, datadir=datadir, port=port, user=user, run_as=run_as)
    try:
        run(str(pg_bin / "initdb"), "-D", str(datadir), "-U", user, "--auth=trust",
            "-E", "UTF8", "--no-sync")
        opts = (f"-p {port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
                "-c shared_buffers=64MB")
        server.watch()  # before the server starts: no moment when a kill would orphan it
        run(str(pg_bin / "pg_ctl"), "-D", str(datadir), "-o", opts, "-l", str(root / "log"),
            "-w", "-t", "60", "start")
    except BaseException:
        server.stop()
        raise
    return server


if __name__ == "__main__":  # start one by hand: python tests/pg.py
    srv = start_server()
    print(srv.create_database("manual"))
    input("PostgreSQL is running; press Enter to stop it. ")
    srv.stop()
