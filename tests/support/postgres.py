"""A throwaway PostgreSQL cluster for tests: initdb + pg_ctl in a temporary folder, 127.0.0.1 only.

PostgreSQL refuses to run as root, so as root the cluster runs as the `postgres` system user that
Debian's package creates. Durability is switched off (fsync, full-page writes): the cluster is deleted
at the end and tests want speed, not crash safety of the test database itself.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from evals.local_server import free_port

BIN = Path(os.environ.get("ASSISTANT_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


def available() -> str | None:
    """None when a cluster can be made here, else the reason it cannot."""
    if not (BIN / "initdb").exists() or not (BIN / "pg_ctl").exists():
        return f"PostgreSQL is not installed ({BIN}/initdb and pg_ctl are missing; apt-get install postgresql-15)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run PostgreSQL as"
    return None


class PostgresCluster:
    """One cluster: `start()`, `create_database(name)` -> URL, `stop()` (which deletes it)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="assistant-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = "assistant"
        self._as: list[str] = []
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        result = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {result.stdout}\n{result.stderr}")

    def start(self) -> "PostgresCluster":
        self._run(str(BIN / "initdb"), "-D", str(self.data), "-U", self.user, "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8")
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
                   "-c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=200 "
                   "-c shared_buffers=128MB")
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w",
                  "-t", "60", "start")
        return self

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.root, ignore_errors=True)
