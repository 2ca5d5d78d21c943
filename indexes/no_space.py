"""A full disk, recognised whichever layer met it: an OSError (ENOSPC, EDQUOT) from a file write, or
SQLite's "database or disk is full" through SQLAlchemy. Ingestion and uploads answer it with a reason
of their own, so that a user learns the disk is full rather than reading a stack trace."""

from __future__ import annotations

import errno

# How a file stopped by a full disk is failed (jobs.reason_kind reads it as `no_space`).
NO_SPACE_REASON = "no space left on the server's disk: free some, then retry the job"


def is_no_space(exc: BaseException | None) -> bool:
    """Whether `exc`, or an exception it was raised from, says the disk is full."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "database or disk is full" in str(exc) or "No space left on device" in str(exc):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False
