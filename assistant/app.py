"""The app factory: settings in, a Litestar app out. Heavy objects are built in the lifespan."""

from __future__ import annotations

import gc
import logging
import sys
from contextlib import asynccontextmanager
from importlib.resources import files
from typing import AsyncIterator

from anyio import to_thread
from litestar import Litestar, Request, Response, Router, get
from litestar.config.cors import CORSConfig
from litestar.di import Provide
from litestar.exceptions import HTTPException
from litestar.logging import LoggingConfig
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin, YamlRenderPlugin
from litestar.response import File
from litestar.static_files import create_static_files_router

from indexes.store import StoreError

from assistant.security.access import PUBLIC, require_access, scoped
from assistant.backends.base import BackendBusy
from assistant.security.browser_defences import allow_own_inline_scripts, browser_defences, security_headers
from assistant.security.json_bounds import json_bounds
from assistant.security.limits import rate_limit
from assistant.security.redaction import redact_logs
from assistant.routes.ask import ask
from assistant.routes.collections import CollectionController, create_collection
from assistant.routes.conversations import ConversationController
from assistant.routes.deps import provide_identity, provide_services
from assistant.security.error_codes import code_of
from assistant.routes.errors import coded_error_response
from assistant.routes.feedback import TurnFeedbackController, export_feedback
from assistant.routes.health import health, status
from assistant.routes.ingestion import add_source, delete_collection, delete_document, upload_documents
from assistant.routes.jobs import JobController
from assistant.routes.mcp import mcp_mount
from assistant.routes.metrics import MetricsController, prometheus_config, provide_telemetry
from assistant.routes.v1 import openai_router
from assistant.routes.reading import chunk_in_context, document_file
from assistant.routes.search import search
from assistant.routes.summaries import summarize
from assistant.services import Services
from assistant.settings import Settings
from assistant.telemetry import Telemetry

log = logging.getLogger("assistant")


def web_dir():
    return files("web")


@get("/", include_in_schema=False, opt=scoped(PUBLIC))
async def index() -> File:
    return File(path=str(web_dir() / "index.html"), media_type="text/html", content_disposition_type="inline")


def log_server_errors(logger: logging.Logger, scope: dict, tb: list[str]) -> None:
    """Log unexpected failures with their traceback; a 4xx is the client's mistake, not ours."""
    exc = sys.exc_info()[1]
    if isinstance(exc, HTTPException) and exc.status_code < 500:
        return
    logger.error("Uncaught exception (%s %s):\n%s", scope.get("method", ""), scope.get("path", ""), "".join(tb))


def store_error_handler(_: Request, exc: StoreError) -> Response:
    return Response({"status_code": 400, "detail": str(exc), "code": code_of(400)}, status_code=400)


def busy_handler(_: Request, exc: BackendBusy) -> Response:
    return Response({"status_code": 429, "detail": str(exc), "code": code_of(429)}, status_code=429,
                    headers={"Retry-After": str(exc.retry_after)})


GIL_SWITCH_INTERVAL_S = 0.0005


def create_app(settings: Settings, services: Services | None = None) -> Litestar:
    """Build the app. `services` may be given (tests share one); otherwise the lifespan builds them."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        svc = services or await to_thread.run_sync(Services.build, settings)
        app.state.services = svc
        app.state.telemetry = telemetry = Telemetry(lambda: svc.store)
        svc.asking.metrics, svc.asking.on_busy = telemetry, telemetry.busy_rejections.inc
        await to_thread.run_sync(svc.check_indexes)
        await to_thread.run_sync(svc.embedder.embed_query, "warm up")  # the first question is not the slow one
        if svc.retriever.processes is not None:  # nor the first burst: every search process is loaded
            await to_thread.run_sync(svc.retriever.processes.start)
        # The models and modules loaded so far live as long as the server: leave them out of the cyclic
        # garbage collector's scans, which otherwise stall requests for a millisecond now and then.
        gc.freeze()
        # A thread that wants the GIL back (a retrieval returning from SQLite, FAISS or ONNX Runtime)
        # waits up to this interval while the event loop streams other answers: 5 ms by default, paid
        # at each of a search's dozen such returns.
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        try:
            yield
        finally:
            if services is None:
                await svc.aclose()

    redact_logs()  # no key, token or URL password in any log line
    mcp_routes, mcp_lifespans = mcp_mount(settings)  # the MCP tools at /mcp, unless server.mcp is off

    return Litestar(
        route_handlers=[
            index,
            create_static_files_router(path="/static", directories=[str(web_dir())], include_in_schema=False, opt=scoped(PUBLIC)),
            ask,
            search,
            health,
            status,
            CollectionController,
            chunk_in_context,
            document_file,
            create_collection,
            add_source,
            upload_documents,
            delete_document,
            delete_collection,
            JobController,
            ConversationController,
            TurnFeedbackController,
            export_feedback,
            *mcp_routes,
            openai_router,
            *([MetricsController] if settings.server.metrics else []),
            summarize,
        ],
        dependencies={
            "services": Provide(provide_services, sync_to_thread=False),
            "telemetry": Provide(provide_telemetry, sync_to_thread=False),
            "identity": Provide(provide_identity, sync_to_thread=False),
        },
        guards=[require_access],  # API keys, scopes and collections: assistant/security/access.py
        lifespan=[lifespan, *mcp_lifespans],
        middleware=[
            browser_defences(settings),  # Host, Origin, content types
            *([limit.middleware] if (limit := rate_limit(settings.server.rate_limit_per_minute)) else []),
            *([prometheus_config().middleware] if settings.server.metrics else []),
            json_bounds(),  # JSON bodies: nesting depth (400) and size (413), the /mcp mount's too
        ],
        before_send=[security_headers],  # every response, 404s and refusals included
        exception_handlers={  # every error body names a `code` (assistant/routes/errors.py)
            HTTPException: coded_error_response, 500: coded_error_response,
            StoreError: store_error_handler, BackendBusy: busy_handler,
        },
        cors_config=CORSConfig(allow_origins=settings.server.cors_origins) if settings.server.cors_origins else None,
        openapi_config=OpenAPIConfig(
            title="Local RAG assistant", version="0.1.0", path="/api/docs",
            render_plugins=[SwaggerRenderPlugin(  # served from web/vendor/: works offline, under the CSP
                js_url="/static/vendor/swagger-ui-bundle.js", css_url="/static/vendor/swagger-ui.css",
                standalone_preset_js_url="/static/vendor/swagger-ui-standalone-preset.js",
                favicon='<link rel="icon" type="image/svg+xml" href="/static/icon.svg">', style=""),
                YamlRenderPlugin()],
            openapi_router=Router(path="/api/docs", route_handlers=[], opt=scoped(PUBLIC),
                                  after_request=allow_own_inline_scripts)),
        logging_config=LoggingConfig(
            root={"level": settings.log_level.upper(), "handlers": ["queue_listener"]},
            log_exceptions="always",
            exception_logging_handler=log_server_errors,
        ),
    )
