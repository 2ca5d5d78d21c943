"""A folder's files uploaded with their paths inside it: each part checked, none able to name a place outside
the collection's upload folder, and two `index.md` of different subfolders kept as two documents."""

from __future__ import annotations

import pytest
from litestar.exceptions import ValidationException

from assistant.security.uploads import MAX_DEPTH, MAX_PATH_BYTES, check_upload_name
from indexes.jobs import Jobs

UPLOAD = {"X-Requested-By": "test"}

ACCEPTED = {
    "notes.md": "notes.md",
    "a/index.md": "a/index.md",
    "handbook/policies/leave.md": "handbook/policies/leave.md",
    "员工手册/政策/报销.md": "员工手册/政策/报销.md",
    "cafe\u0301/menu.md": "caf\u00e9/menu.md",  # NFC in every part
}

ATTACKS = {  # the path -> the code it is refused with
    "../x": "upload_name_folder",
    "/etc/x": "upload_name_folder",
    "a/../../x": "upload_name_folder",
    "a/./b.md": "upload_name_folder",
    "C:\\x": "upload_name_folder",
    "C:x": "upload_name_folder",
    "c:/windows/x.md": "upload_name_folder",
    "a\\..\\x": "upload_name_folder",
    "a//b": "upload_name_folder",
    "a/": "upload_name_folder",
    "\\\\server\\share\\x": "upload_name_folder",
    "a/nul\x00/x.md": "upload_name_control",
    "a/b\x00.md": "upload_name_control",
    "a/line\nbreak.md": "upload_name_control",
    "a/\u202egpj.md": "upload_name_control",
    "a/%2e%2e/x.md": "upload_name_encoded",
    "a/.git/config": "upload_name_hidden",
    "a/ b/x.md": "upload_name_spaces",
    "a/b:c/x.md": "upload_name_unusable",
    "a/" + "b" * 201 + "/x.md": "upload_name_too_long",
    "/".join(["d"] * (MAX_DEPTH + 1)): "upload_name_too_long",
    "/".join(["d" * 99] * 11): "upload_name_too_long",  # each part short, the whole over MAX_PATH_BYTES
}


@pytest.mark.parametrize("sent, kept", ACCEPTED.items())
def test_a_path_inside_the_folder_is_kept_as_sent(sent, kept):
    assert check_upload_name(sent) == kept


@pytest.mark.parametrize("sent, code", ATTACKS.items(), ids=list(range(len(ATTACKS))))
def test_a_path_that_could_leave_the_folder_or_hide_is_refused_with_its_code(sent, code):
    with pytest.raises(ValidationException) as refused:
        check_upload_name(sent)
    assert refused.value.code == code, refused.value.detail  # type: ignore[attr-defined]
    assert refused.value.extra["name"] == sent[:80]  # the page names the path in its own words


def test_the_limits_are_what_the_refusals_say():
    assert len("/".join(["d" * 99] * 11).encode()) > MAX_PATH_BYTES
    assert check_upload_name("/".join(["d"] * MAX_DEPTH)).count("/") == MAX_DEPTH - 1


@pytest.fixture
def services(settings_factory, make_services):
    return make_services(settings_factory(ingest={"max_upload_mb": 1}))


def run_worker(services) -> int:
    from ingest.worker import Worker  # tests may import the worker; the server package never does

    return Worker(services.settings, services.store, embedder=services.embedder).run(once=True)


def part(path: str, text: str) -> tuple:
    return ("files", (path, text.encode(), "text/markdown"))


@pytest.mark.slow
async def test_two_index_files_of_a_folder_become_two_documents_named_by_path(client, services):
    r = await client.post("/api/collections/docs/documents", headers=UPLOAD, files=[
        part("uk/index.md", "# Leave\n\nIn the UK office annual leave is twenty-eight days.\n"),
        part("us/index.md", "# Leave\n\nIn the US office annual leave is fifteen days.\n")])
    assert r.status_code == 202, r.text
    assert r.json()["files"] == ["uk/index.md", "us/index.md"]
    uploads = services.settings.data_dir / "uploads" / "docs"
    assert sorted(p.relative_to(uploads).as_posix() for p in uploads.rglob("*.md")) == ["uk/index.md", "us/index.md"]
    assert run_worker(services) == 1
    docs = (await client.get("/api/collections/docs/documents")).json()["documents"]
    assert sorted(d["path"] for d in docs) == ["uk/index.md", "us/index.md"]

    # the same path again replaces its document; a file where a folder was, or a folder where a file was, is refused
    again = await client.post("/api/collections/docs/documents", headers=UPLOAD,
                              files=[part("uk/index.md", "# Leave\n\nIn the UK office annual leave is thirty days.\n")])
    assert again.status_code == 202 and run_worker(services) == 1
    docs = (await client.get("/api/collections/docs/documents")).json()["documents"]
    assert sorted(d["path"] for d in docs) == ["uk/index.md", "us/index.md"]
    clash = await client.post("/api/collections/docs/documents", headers=UPLOAD, files=[part("uk", "# x\n")])
    assert clash.status_code == 400 and clash.json()["code"] == "upload_name_folder", clash.text
    clash = await client.post("/api/collections/docs/documents", headers=UPLOAD,
                              files=[part("x/a.md", "# x\n"), part("x/a.md/b.md", "# y\n")])
    assert clash.status_code == 400 and clash.json()["code"] == "upload_name_twice", clash.text

    uk = next(d for d in docs if d["path"] == "uk/index.md")
    assert (await client.delete(f"/api/collections/docs/documents/{uk['id']}")).status_code == 200
    assert not (uploads / "uk" / "index.md").exists() and (uploads / "us" / "index.md").exists()


@pytest.mark.parametrize("sent", ["../x.md", "a/../../x.md", "/etc/x.md", "C:\\x.md", "a//b.md", "a/b\x00.md"])
async def test_an_attacking_path_writes_nothing_anywhere(client, services, sent):
    r = await client.post("/api/collections/docs/documents", headers=UPLOAD,
                          files=[part("ok/notes.md", "# Notes\n"), part(sent, "# Evil\n\nowned\n")])
    assert r.status_code == 400, (sent, r.text)
    data = services.settings.data_dir
    assert not [p for p in data.rglob("*") if p.is_file() and "uploads" in p.parts]
    assert not (data.parent / "x.md").exists() and not (data / "x.md").exists()
    assert Jobs(services.store.engine).list() == []
