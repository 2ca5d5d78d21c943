"""Live per-GPU status for GET /api/status and `assistant status`.

`gpu_status()` reads NVML (or `nvidia-smi -q -x` when NVML is absent) and never raises: a machine
without GPUs, or a GPU that stops answering, yields an empty list and a log line, not a failed status
page. It blocks for milliseconds with NVML and up to a second with nvidia-smi, so async callers run
it in a worker thread.
"""

from __future__ import annotations

import logging
from typing import Any

from assistant.gpu.facts import Facts, GpuFacts
from assistant.gpu.hardware import SLOWING_REASONS

log = logging.getLogger(__name__)


def gpu_row(g: GpuFacts) -> dict[str, Any]:
    """One GPU's status as plain JSON-ready values."""
    used, total = g.memory_used_bytes, g.memory_total_bytes
    return {
        "index": g.index,
        "name": g.name,
        "uuid": g.uuid,
        "compute_capability": ".".join(map(str, g.compute_capability)) if g.compute_capability else None,
        "memory_used_bytes": used,
        "memory_total_bytes": total,
        "memory_used_pct": round(100 * used / total, 1) if used is not None and total else None,
        "utilization_pct": g.utilization_pct,
        "temperature_c": g.temperature_c,
        "sm_clock_mhz": g.sm_clock_mhz,
        "max_sm_clock_mhz": g.max_sm_clock_mhz,
        "power_w": round(g.power_w, 1) if g.power_w is not None else None,
        "power_limit_w": round(g.power_limit_w, 1) if g.power_limit_w is not None else None,
        "throttle_reasons": list(g.throttle_reasons),
        "slowed": any(r in SLOWING_REASONS for r in g.throttle_reasons),
    }


def gpu_status(facts: Facts | None = None) -> list[dict[str, Any]]:
    """Status of every NVIDIA GPU: from `facts` when given (recorded), else read live now."""
    if facts is not None:
        return [gpu_row(g) for g in facts.gpus]
    from assistant.gpu.probe import live_gpus

    try:
        gpus, _ = live_gpus([])
    except Exception:  # noqa: BLE001 - the status page must outlive a GPU that stops answering
        log.warning("GPU status unavailable", exc_info=True)
        return []
    return [gpu_row(g) for g in gpus]


class ServerRefused(Exception):
    """The server answered, and refused: a key is needed (401), or the key lacks the right (403)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def server_status(url: str, timeout_s: float = 2.0, key: str = "") -> dict[str, Any] | None:
    """A running server's /api/status (asked with `key` when given), None when nothing answers there;
    ServerRefused when it answers 401 or 403."""
    import httpx

    target = url.rstrip("/")
    if not target.endswith("/api/status"):
        target += "/api/status"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(target, timeout=timeout_s, headers=headers)
        if response.status_code in (401, 403):
            raise ServerRefused(response.status_code)
        response.raise_for_status()
        data = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    return data if isinstance(data, dict) else None
