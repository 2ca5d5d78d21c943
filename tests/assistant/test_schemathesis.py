"""Schemathesis against the served OpenAPI schema: every operation, with an admin key, a read key for one
collection, and no key; no 5xx and no response that contradicts the schema (a few examples each, to
keep it short)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from assistant.app import create_app
from assistant.services import Services
from assistant.settings import Settings
from evals.local_server import serve_in_thread
from indexes.apikeys import create_key
from indexes.store import Store
from tests.support.stores import write_pages

KEYS: dict[str, str] = {}


@pytest.fixture(scope="module")
def api_schema(embedder, tmp_path_factory):
    data = tmp_path_factory.mktemp("schemathesis")
    root = data / "root"
    root.mkdir()
    app_settings = Settings(data_dir=data / "data", backend="echo", ingest={"allowed_roots": [str(root)]},
                            server={"rate_limit_per_minute": 0})
    from assistant.backends.factory import create_backend

    store = Store(app_settings.data_dir)
    write_pages(store, embedder, "handbook", {"travel.md": ("Travel", "Book flights 14 days ahead.")})
    write_pages(store, embedder, "private", {"plans.md": ("Plans", "The merger closes in May.")})
    KEYS["admin"] = create_key(store.engine, "admin", ["admin"], [])[1]
    KEYS["read"] = create_key(store.engine, "reader", ["read"], ["handbook"])[1]
    services = Services.assemble(app_settings, store, embedder, create_backend(app_settings))
    with serve_in_thread(create_app(app_settings, services)) as server:
        yield schemathesis.openapi.from_url(f"{server.url}/api/docs/openapi.json")
    store.close()


def test_no_server_error_and_no_schema_violation(api_schema):
    """Each operation's generated cases (a few each: the suite stays short), sent with each identity."""
    calls, operations = [], 0

    for result in api_schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                  database=None)
        def check(case) -> None:
            for who in ("admin", "read", "none"):
                headers = {"Authorization": f"Bearer {KEYS[who]}"} if who in KEYS else {}
                if case.method.upper() == "POST" and case.path.endswith("/documents"):
                    headers["X-Requested-By"] = "schemathesis"
                response = case.call_and_validate(headers=headers, timeout=30, checks=CHECKS)
                calls.append((case.method, case.path, who, response.status_code))

        check()
    statuses = sorted({c[3] for c in calls})
    print(f"schemathesis: {operations} operations, {len(calls)} requests, statuses {statuses}, 0 failures")
    assert operations >= 15 and not [c for c in calls if c[3] >= 500]


CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
