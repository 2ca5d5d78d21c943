"""Liveness and readiness: is the store readable and the backend answering."""

from __future__ import annotations

import anyio
from litestar import Response, get
from sqlalchemy import text

from assistant.security.access import PUBLIC, Identity, scoped
from assistant.security.redaction import redact_text
from assistant.services import Services


async def backend_health(services: Services) -> dict:
    backend = services.backend
    if backend is None:
        return {"name": None, "ok": False, "detail": "no backend configured"}
    try:
        with anyio.fail_after(5):
            h = await backend.health()
        return {"name": backend.name, "ok": h.ok, "detail": redact_text(h.detail or ""), "model": h.model or backend.model,
                "context_window": backend.context_window}
    except Exception as exc:  # a broken backend must not break the health check
        return {"name": backend.name, "ok": False, "detail": redact_text(f"{type(exc).__name__}: {exc}")}


@get("/health", tags=["status"], opt=scoped(PUBLIC))
async def health(services: Services) -> Response[dict]:
    """200 when everything works; 503 with the reason when the store or the backend does not."""
    with services.store.engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    backend = await backend_health(services)
    status = "ok" if backend["ok"] else "degraded"
    return Response({"status": status, "backend": backend}, status_code=200 if backend["ok"] else 503)


@get("/api/status", tags=["status"], opt=scoped("read"))
async def status(services: Services, identity: Identity) -> dict:
    """The backend (name, model, context, health, requests in flight, a managed engine's slots), the
    search processes when there are some and, when present, each GPU."""
    from assistant.gpu.status import gpu_status

    backend = await backend_health(services)
    backend["in_flight"] = services.in_flight
    engine_status = getattr(services.backend, "engine_status", None)  # a managed engine's slots, busy and idle
    if engine_status is not None:
        backend["engine"] = await anyio.to_thread.run_sync(engine_status)
    gpus = await anyio.to_thread.run_sync(gpu_status)  # NVML, or nvidia-smi as a fallback: may block
    out = {"backend": backend, "gpus": gpus, "collections": sum(identity.can_use(c["name"]) for c in services.store.list_collections())}
    if services.retriever.processes is not None:  # retrieval.search_processes: how many are up, what they took
        out["search_processes"] = services.retriever.processes.status()
    return out
