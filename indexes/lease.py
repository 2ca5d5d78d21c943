"""The file queue of a job shared by many workers: files claimed under a lease, renewed by a heartbeat.

On PostgreSQL a claim is `SELECT ... FOR UPDATE SKIP LOCKED` inside an UPDATE: workers on any number
of hosts take disjoint batches without waiting for each other, and the lease times come from the
database's clock, so hosts need not agree on the time. On SQLite the same UPDATE runs under the
database's single write lock. A worker renews the leases of the files it holds while it works; one
that dies stops renewing, and once its leases run out its unfinished files are claimed by others.
A file is finished by recording its final state (indexes/jobs.py); final files are never claimed.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from indexes.jobs import sql_time
from indexes.models import utcnow

ACTIVE = "('parsing', 'embedding')"
CLAIMABLE = f"(state = 'pending' OR (state IN {ACTIVE} AND (lease_until IS NULL OR lease_until < {{now}})))"


class FileLeases:
    """Claim, renew and give back the files of shared jobs."""

    def __init__(self, engine: Engine, *, lease_s: float = 60.0) -> None:
        self.engine = engine
        self.lease_s = float(lease_s)
        self.postgres = engine.dialect.name == "postgresql"

    def _times(self) -> tuple[str, str, dict]:
        """SQL for now and for the end of a new lease, with their parameters (the database's clock on
        PostgreSQL; on SQLite, one host, Python's UTC in SQLAlchemy's stored form)."""
        if self.postgres:
            return "now()", "now() + make_interval(secs => :lease)", {"lease": self.lease_s}
        now = utcnow()
        return ":now", ":until", {"now": sql_time(now), "until": sql_time(now + timedelta(seconds=self.lease_s))}

    def claim(self, job_id: int, worker: str, n: int) -> list[tuple[str, int]]:
        """Up to n files of the job nobody holds (pending, or their lease ran out): (path, size) each,
        now leased to this worker in state 'parsing'."""
        now, until, params = self._times()
        lock = " FOR UPDATE SKIP LOCKED" if self.postgres else ""
        sql = (
            f"UPDATE ingestfile SET state = 'parsing', worker = :worker, lease_until = {until} "
            f"WHERE id IN (SELECT id FROM ingestfile WHERE job_id = :job AND {CLAIMABLE.format(now=now)} "
            f"ORDER BY id LIMIT :n{lock}) RETURNING path, size"
        )
        with self.engine.begin() as conn:
            rows = conn.execute(text(sql), {**params, "worker": worker, "job": job_id, "n": int(n)}).all()
        return [(r[0], int(r[1] or 0)) for r in rows]

    def renew(self, job_id: int, worker: str) -> int:
        """Extend the leases of the unfinished files this worker holds; returns how many it holds."""
        _, until, params = self._times()
        with self.engine.begin() as conn:
            return conn.execute(text(
                f"UPDATE ingestfile SET lease_until = {until} WHERE job_id = :job AND worker = :worker "
                f"AND state IN {ACTIVE}"), {**params, "job": job_id, "worker": worker}).rowcount

    def release(self, job_id: int, worker: str) -> int:
        """Give this worker's unfinished files back to the queue (a clean stop)."""
        with self.engine.begin() as conn:
            return conn.execute(text(
                f"UPDATE ingestfile SET state = 'pending', worker = NULL, lease_until = NULL "
                f"WHERE job_id = :job AND worker = :worker AND state IN {ACTIVE}"),
                {"job": job_id, "worker": worker}).rowcount

    def unfinished(self, job_id: int) -> int:
        """Files of the job not in a final state (pending, or held by a worker)."""
        with self.engine.connect() as conn:
            return int(conn.execute(text(
                f"SELECT count(*) FROM ingestfile WHERE job_id = :job AND (state = 'pending' OR state IN {ACTIVE})"),
                {"job": job_id}).scalar_one())
