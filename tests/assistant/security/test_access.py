"""API keys, scopes and collection allow-lists: keyless local use, revocation, the keys command, what a
read key sees. Every door × every identity is tested in test_access_matrix.py."""

from __future__ import annotations

import json

import pytest

from assistant.app import create_app
from indexes.apikeys import create_key
from indexes.conversations import create_conversation
from indexes.jobs import Jobs
from tests.support.stores import write_pages

CANARY = "zebracanary"

PAGES_A = {"handbook/travel.md": ("Travel", "Book flights through the travel desk at least 14 days before departure.")}
PAGES_B = {"secret/zebra-plans.md": ("Zebra plans", f"The {CANARY.upper()} merger closes in May; travel is frozen.")}


@pytest.fixture
def services(settings_factory, make_services, embedder, tmp_path):
    def fill(store):
        write_pages(store, embedder, "A", PAGES_A)
        write_pages(store, embedder, "B", PAGES_B)

    root = tmp_path / "roots"
    (root / "docs").mkdir(parents=True)
    return make_services(settings_factory(ingest={"allowed_roots": [str(root)]}), fill)


@pytest.fixture
def world(services, tmp_path):
    """Keys, and B's chunk, document, job and conversation (the admin's)."""
    engine = services.store.engine
    keys = {
        "read_A": create_key(engine, "reader", ["read"], ["A"])[1],
        "ingest_A": create_key(engine, "uploader", ["ingest"], ["A"])[1],
        "admin": create_key(engine, "admin", ["admin"], [])[1],
    }
    admin_id = 3
    b = services.store.get_collection("B")
    with services.store.session() as s:
        from sqlmodel import select

        from indexes.models import Chunk, Document

        doc_b = s.exec(select(Document).where(Document.collection_id == b.id)).first()
        chunk_b = s.exec(select(Chunk).where(Chunk.collection_id == b.id)).first()
    job = Jobs(engine).enqueue(b.id, "B", {"paths": [str(tmp_path / "roots" / "secret" / "zebra-plans.md")]}, owner_key=admin_id)
    conv = create_conversation(engine, "Zebra plans talk", ["B"], owner_key=admin_id)
    return {"keys": keys, "doc": doc_b.id, "chunk": chunk_b.id, "job": job.id, "conv": conv.id, "root": tmp_path / "roots"}


async def test_a_read_key_sees_its_collection_and_nothing_else(client, world):
    auth = {"Authorization": "Bearer " + world["keys"]["read_A"]}
    r = await client.get("/api/collections", headers=auth)
    assert [c["name"] for c in r.json()] == ["A"]
    r = await client.get("/api/search", params={"q": "flights", "collection": "A"}, headers=auth)
    assert r.status_code == 200 and r.json()["hits"]
    models = (await client.get("/v1/models", headers=auth)).json()["data"]
    assert "rag:A" in {m["id"] for m in models} and "rag:B" not in {m["id"] for m in models}


async def test_jobs_show_no_absolute_server_path(client, services, world):
    r = await client.get(f"/api/jobs/{world['job']}", headers={"Authorization": "Bearer " + world["keys"]["admin"]})
    assert r.status_code == 200
    assert str(world["root"]) not in r.text and str(services.settings.data_dir) not in r.text
    assert r.json()["params"]["paths"] == ["roots/secret/zebra-plans.md"]


async def test_keyless_on_loopback_until_a_key_exists(client, services):
    assert (await client.get("/api/collections")).status_code == 200
    # clients that always send a key (the openai package, editor plugins) work keyless too
    assert (await client.get("/api/collections", headers={"Authorization": "Bearer sk-placeholder"})).status_code == 200
    create_key(services.store.engine, "first", ["read"], ["*"])
    r = await client.get("/api/collections")
    assert r.status_code == 401 and "Bearer" in r.json()["detail"]
    assert (await client.get("/health")).status_code in (200, 503)  # liveness stays open


async def test_a_revoked_key_stops_working(client, services):
    from indexes.apikeys import revoke_key

    create_key(services.store.engine, "stays", ["read"], ["*"])  # the server is not keyless once the other goes
    row, secret = create_key(services.store.engine, "temp", ["read"], ["*"])
    auth = {"Authorization": f"Bearer {secret}"}
    assert (await client.get("/api/collections", headers=auth)).status_code == 200
    revoke_key(services.store.engine, str(row.id))
    assert (await client.get("/api/collections", headers=auth)).status_code == 401


def test_serve_refuses_another_address_without_keys(tmp_path):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "assistant.cli", "serve", "--host", "0.0.0.0", "--backend", "echo",
                          "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "assistant keys create" in run.stderr and "0.0.0.0" in run.stderr


def test_keys_command_shows_a_key_once_and_stores_its_hash(tmp_path, capsys):
    import subprocess
    import sys

    from assistant.cli import main

    def cli(*args) -> int:
        """The command in this process (the first call below runs it as a user would, in its own)."""
        try:
            return main(["keys", *args, "--data-dir", str(tmp_path)])
        except SystemExit as exc:  # argparse's refusals
            return int(exc.code)

    made = subprocess.run([sys.executable, "-m", "assistant.cli", "keys", "create", "ci", "--scope", "read", "--scope", "ask",
                           "--collection", "docs", "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    secret = made.stdout.split(": ", 1)[1].strip()
    assert secret.startswith("rag_")
    assert cli("list", "--json") == 0
    listed = capsys.readouterr().out
    keys = json.loads(listed)
    assert keys[0]["scopes"] == ["read", "ask"] and secret not in listed
    assert secret.encode() not in (tmp_path / "store.db").read_bytes()
    assert cli("create", "bad", "--scope", "read") == 2  # names no collection
    assert cli("revoke", "ci") == 0 and cli("revoke", "ci") == 1


async def test_a_fresh_invalid_token_per_request_shares_its_address_s_rate_limit(settings_factory, make_services):
    """Failed authentications count against the client's address, whatever token each one sent; a valid
    key from the same address keeps its own allowance."""
    from litestar.testing import AsyncTestClient

    settings = settings_factory(server={"rate_limit_per_minute": 5})
    services = make_services(settings)
    _, key = create_key(services.store.engine, "reader", ["read"], ["*"])
    async with AsyncTestClient(app=create_app(settings, services)) as client:
        statuses = [(await client.get("/api/collections", headers={"Authorization": f"Bearer rag_bad{i:04d}xyz"})).status_code
                    for i in range(8)]
        valid = await client.get("/api/collections", headers={"Authorization": f"Bearer {key}"})
    assert statuses[:5] == [401] * 5 and statuses[5:] == [429] * 3
    assert valid.status_code == 200
