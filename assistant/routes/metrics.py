"""GET /metrics: Litestar's Prometheus support (request series per route) plus the app's own series."""

from __future__ import annotations

from typing import Any

from anyio import to_thread
from litestar import Request, Response, get
from litestar.datastructures import State
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController
from prometheus_client import CONTENT_TYPE_LATEST

from assistant.security.access import scoped
from assistant.telemetry import HTTP_PREFIX, Telemetry


def prometheus_config() -> PrometheusConfig:
    """Requests, latency and errors per route template (`/api/collections/{name}`, not each name)."""
    return PrometheusConfig(
        app_name="assistant", prefix=HTTP_PREFIX, group_path=True, exclude_unhandled_paths=True, exclude=["^/static/"]
    )


class MetricsController(PrometheusController):
    """Litestar's controller, rendering this app's registry instead of the process-wide one."""

    path = "/metrics"
    opt = scoped("metrics")  # an admin key, or a key made only to scrape

    @get(include_in_schema=False)
    async def get(self, request: Request[Any, Any, Any]) -> Response:
        telemetry: Telemetry = request.app.state.telemetry
        body = await to_thread.run_sync(telemetry.exposition)  # reads the store
        return Response(body, status_code=200, media_type=CONTENT_TYPE_LATEST)


def provide_telemetry(state: State) -> Telemetry:
    return state.telemetry

