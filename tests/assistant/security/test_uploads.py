"""Uploads: hostile names refused with a reason before anything is written, all files of a request or
none, and a 2 GB chunked body cut off at the limit while it streams (on the real server)."""

from __future__ import annotations

import os
import select
import socket
import time

import pytest

from assistant.app import create_app
from evals.local_server import serve_in_thread
from indexes.jobs import Jobs

UPLOAD = {"X-Requested-By": "test"}
GOOD = ("files", ("notes.md", b"# Notes\n\nThe canteen opens at noon.\n", "text/markdown"))


@pytest.fixture
def services(settings_factory, make_services):
    return make_services(settings_factory(ingest={"max_upload_mb": 1}))


def written(services) -> list[str]:
    data = services.settings.data_dir
    return sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.is_file() and "uploads" in p.parts)


HOSTILE = {  # the name -> words of the reason, and the code the page says it by
    "../escape.md": ("names a folder", "upload_name_folder"),
    "..\\escape.md": ("names a folder", "upload_name_folder"),
    "%2e%2e%2fescape.md": ("percent-encoded", "upload_name_encoded"),
    "nul\x00byte.md": ("percent-encoded", "upload_name_encoded"),  # the client sends NUL as %00
    "a" * 400 + ".md": ("at most 200 bytes", "upload_name_too_long"),
    "invoice\u202egpj.md": ("right-to-left", "upload_name_control"),
    ".env": ("hidden", "upload_name_hidden"),
    "..": ("unusable", "upload_name_unusable"),
}


@pytest.mark.parametrize("name, reason", HOSTILE.items(), ids=list(range(len(HOSTILE))))
async def test_a_hostile_file_name_is_refused_and_nothing_is_written(client, services, name, reason):
    r = await client.post("/api/collections/docs/documents", headers=UPLOAD,
                          files=[GOOD, ("files", (name, b"# Evil\n\nowned\n", "text/markdown"))])
    assert r.status_code == 400, (name, r.status_code, r.text[:200])
    words, code = reason
    body = r.json()
    assert words in body["detail"] and body["code"] == code
    assert body["extra"]["name"]  # the page names the file in its own words
    assert written(services) == [] and Jobs(services.store.engine).list() == []


async def test_filename_star_is_validated_like_filename(client, services):
    boundary = "b0undary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"ok.md\"; "
            f"filename*=UTF-8''..%2F..%2Fescape.md\r\nContent-Type: text/markdown\r\n\r\n# x\r\n--{boundary}--\r\n").encode()
    r = await client.post("/api/collections/docs/documents", content=body,
                          headers={**UPLOAD, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    saved = written(services)
    assert r.status_code in (202, 400), r.text
    assert all(p.startswith("uploads/docs/") and "/" not in p.removeprefix("uploads/docs/") for p in saved)
    assert not (services.settings.data_dir.parent / "escape.md").exists()


async def test_duplicate_names_and_oversized_requests_write_nothing(client, services):
    r = await client.post("/api/collections/docs/documents", headers=UPLOAD, files=[GOOD, GOOD])
    assert r.status_code == 400 and "twice" in r.json()["detail"] and r.json()["code"] == "upload_name_twice"
    big = ("files", ("big.md", b"x" * (1024 * 1024 + 1), "text/markdown"))
    r = await client.post("/api/collections/docs/documents", headers=UPLOAD, files=[GOOD, big])
    assert r.status_code == 413 and r.json()["code"] == "upload_too_large" and r.json()["extra"] == {"limit_mb": 1.0}
    assert written(services) == []
    r = await client.post("/api/collections/docs/documents", headers=UPLOAD, files=[GOOD])
    assert r.status_code == 202 and written(services) == ["uploads/docs/notes.md"]


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024**2


def chunked_upload(url: str, total: int, block: int = 256 * 1024) -> tuple[int | None, int]:
    """POST a multipart body of `total` bytes with Transfer-Encoding: chunked over a raw socket, stopping
    as soon as the server answers: (status, bytes sent by then)."""
    host, port = url.removeprefix("http://").split(":")
    boundary = "xx"
    head = (f"POST /api/collections/docs/documents HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nX-Requested-By: test\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    part = f"--{boundary}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"big.md\"\r\n\r\n".encode()
    data = b"A" * block
    sent = 0
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + f"{len(part):x}\r\n".encode() + part + b"\r\n")
        try:
            while sent < total:
                sock.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                sent += len(data)
                if select.select([sock], [], [], 0)[0]:
                    break  # the server has answered
            reply = sock.recv(4096)
        except (BrokenPipeError, ConnectionResetError):
            reply = b""
    status = int(reply.split()[1]) if reply.startswith(b"HTTP/1.1") else None
    return status, sent


def test_a_2gb_chunked_upload_is_cut_off_while_streaming(services):
    """No Content-Length: the server counts the bytes as they come and answers 413 at the limit (1 MB),
    long before 2 GB, with its memory unchanged and nothing written."""
    with serve_in_thread(create_app(services.settings, services)) as server:
        rss_before = rss_mb()
        started = time.perf_counter()
        status, sent = chunked_upload(server.url, 2 * 1024**3)
        seconds = time.perf_counter() - started
        grown_mb = rss_mb() - rss_before
    print(f"2 GB chunked upload: {status} after {sent / 1024**2:.1f} MB sent, {seconds:.2f} s, server RSS +{grown_mb:.0f} MB")
    assert status == 413
    assert sent < 64 * 1024**2
    assert grown_mb < 200
    assert written(services) == []


@pytest.mark.parametrize("sent", ['C:\\evil.md', '\\\\server\\share\\evil.md', 'a"b.md', 'evil.md:stream', 'C:evil.md'])
async def test_a_name_the_multipart_parser_would_rewrite_is_refused_as_sent(client, services, sent):
    """The header as a raw client writes it: the parser would save `C:\\evil.md` as `evil.md` (replacing
    one) and `a"b.md` as `a`; the name is refused with its reason instead, and nothing is written."""
    boundary = "b0undary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{sent}\"\r\n"
            f"Content-Type: text/markdown\r\n\r\n# Evil\r\n--{boundary}--\r\n").encode()
    r = await client.post("/api/collections/docs/documents", content=body,
                          headers={**UPLOAD, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 400, r.text
    assert "names a folder" in r.json()["detail"] or "':'" in r.json()["detail"]
    assert written(services) == [] and Jobs(services.store.engine).list() == []


async def test_a_file_over_the_ingest_limit_is_refused_at_upload(settings_factory, make_services):
    """One size story: a file that ingestion would skip (over ingest.max_file_mb) is refused at upload
    with the reason, and nothing of it stays in uploads/; a zip is held to the limit member by member."""
    from litestar.testing import AsyncTestClient

    services = make_services(settings_factory(ingest={"max_upload_mb": 4, "max_file_mb": 1}))
    big = b"# Big\n\n" + b"word " * 300_000  # 1.5 MB
    async with AsyncTestClient(app=create_app(services.settings, services)) as client:
        r = await client.post("/api/collections/docs/documents", headers=UPLOAD,
                              files=[GOOD, ("files", ("big.md", big, "text/markdown"))])
        assert r.status_code == 413 and "max_file_mb" in r.json()["detail"] and "big.md" in r.json()["detail"]
        assert written(services) == [] and Jobs(services.store.engine).list() == []
        ok = await client.post("/api/collections/docs/documents", headers=UPLOAD, files=[GOOD])
        assert ok.status_code == 202 and written(services) == ["uploads/docs/notes.md"]
