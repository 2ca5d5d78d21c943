"""Wiki exports as zips: a zip uploaded or given to ingestion is read as the folder it holds, Confluence and
Notion pages titled by their place in the wiki; zips that climb out, link out or bomb are refused whole,
with the reason as the job's failed file, and nothing of them is written."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from ingest import archives
from ingest.archives import ArchiveRefused, member_path, scan_path, unpack
from ingest.parse import parse
from ingest.pipeline import ingest_paths
from ingest.wiki import notion_name, place_in_wiki
from tests.support.wiki_exports import (
    LAPTOPS, VPN, bomb_zip, climbing_zip, confluence_files, linking_zip, notion_files, zip_of,
)

UPLOAD = {"X-Requested-By": "test"}  # what a multipart upload must send (assistant/security/browser_defences.py)
LAPTOPS_TITLE = "Team Wiki › Onboarding › Laptops"


def test_member_paths_that_leave_the_folder_are_refused():
    assert member_path("Team Wiki 0123/Onboarding.md") == "Team Wiki 0123/Onboarding.md"
    assert member_path("./a//b.md") == "a/b.md" and member_path("TEAM/") is None
    assert member_path("__MACOSX/._page.md") is None
    for bad in ("../x.md", "a/../../x.md", "a\\..\\x.md", "/etc/passwd", "C:/Windows/x.md", "\\\\server\\x.md"):
        with pytest.raises(ArchiveRefused):
            member_path(bad)


def test_notion_names_lose_their_ids():
    assert notion_name("Onboarding 4567456745674567456745674567abcd") == "Onboarding"
    assert notion_name("Tasks cdefcdefcdefcdefcdefcdefcdefcdef_all") == "Tasks"
    assert notion_name("Onboarding") is None and notion_name("notes 1234") is None


def pages(tmp_path: Path, files: dict[str, bytes], name: str) -> dict[str, str]:
    """rel path -> title of every page of a zip of these files, as the parser and the wiki rules give it."""
    zip_path = tmp_path / name
    zip_path.write_bytes(zip_of(files))
    found = scan_path(zip_path, tmp_path / "archives")
    assert not found.problems
    out = {}
    for f in found.files:
        data = f.abs_path.read_bytes()
        parsed = parse(f, data)
        place_in_wiki(f, parsed, data)
        out[f.rel_path] = parsed.title
    return out


def test_notion_pages_and_databases_are_titled_by_their_place(tmp_path):
    titles = pages(tmp_path, notion_files(), "Export-1a2b.zip")
    wiki = "Team Wiki 0123456789abcdef0123456789abcdef"  # the zip's own name is no part of the paths
    assert titles == {
        f"{wiki}.md": "Team Wiki",
        f"{wiki}/Onboarding 4567456745674567456745674567abcd.md": "Team Wiki › Onboarding",
        f"{wiki}/Onboarding 4567456745674567456745674567abcd/Laptops 89ab89ab89ab89ab89ab89ab89ab89ab.md": LAPTOPS_TITLE,
        f"{wiki}/Tasks cdefcdefcdefcdefcdefcdefcdefcdef.csv": "Team Wiki › Tasks",
        f"{wiki}/Tasks cdefcdefcdefcdefcdefcdefcdefcdef/Order laptop 1111222233334444555566667777aaaa.md":
            "Team Wiki › Tasks › Order laptop",
    }


def test_confluence_pages_are_titled_by_breadcrumbs_or_the_index(tmp_path):
    titles = pages(tmp_path, confluence_files(), "TEAM.zip")
    assert titles == {
        "TEAM/index.html": "Team Wiki",
        "TEAM/Onboarding_65538.html": "Team Wiki › Onboarding",
        "TEAM/Laptops_65540.html": LAPTOPS_TITLE,
        "TEAM/VPN_65541.html": "Team Wiki › Onboarding › VPN",  # no breadcrumbs: index.html's list
        "TEAM/attachments/65540/65543.txt": "65543.txt",  # not a page: its own name
    }  # the stylesheet and the chrome icons are left out


@pytest.mark.parametrize("make, reason", [
    (climbing_zip, "the archive member '../../outside.md' leads outside the archive ('..')"),
    (linking_zip, "the archive member 'secrets.md' is a symbolic link"),
    (bomb_zip, "over 100 times its size (a zip bomb?)"),
])
def test_unsafe_archives_are_refused_whole_and_write_nothing(tmp_path, make, reason):
    zip_path = tmp_path / "in" / "export.zip"
    zip_path.parent.mkdir()
    zip_path.write_bytes(make())
    found = scan_path(zip_path, tmp_path / "archives")
    assert not found.files and [(p.rel_path, p.state) for p in found.problems] == [("export.zip", "failed")]
    assert reason in found.problems[0].reason
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["export.zip"]


def test_limits_hold_while_unpacking_too(tmp_path, monkeypatch):
    """A directory that passes is still counted as it is written: the total limit stops the writing."""
    zip_path = tmp_path / "export.zip"
    zip_path.write_bytes(zip_of(notion_files()))
    monkeypatch.setattr(archives, "check_members", lambda archive, packed: [
        (info, info.filename) for info in archive.infolist()])  # a lying directory: nothing refused up front
    monkeypatch.setattr(archives, "MAX_UNPACKED_BYTES", 200)
    with pytest.raises(ArchiveRefused, match="unpacks to"):
        unpack(zip_path, tmp_path / "archives")
    assert not any(p.is_file() for p in (tmp_path / "archives").rglob("*"))


def test_the_same_zip_again_skips_its_pages_and_a_newer_one_drops_the_gone(tmp_path, store, embedder):
    """What `assistant ingest export.zip` does (ingest_paths), twice, then with a page deleted from the wiki."""
    zip_path = tmp_path / "export.zip"
    zip_path.write_bytes(zip_of(notion_files()))
    first = ingest_paths(store, embedder, [zip_path], "wiki", parse_process=False)
    assert (first.files_ingested, first.files_failed) == (5, 0)
    again = ingest_paths(store, embedder, [zip_path], "wiki", parse_process=False)
    assert (again.files_ingested, again.files_skipped) == (0, 5)
    newer = {k: v for k, v in notion_files().items() if "Order laptop" not in k}
    zip_path.write_bytes(zip_of(newer))
    third = ingest_paths(store, embedder, [zip_path], "wiki", parse_process=False)
    assert (third.files_ingested, third.files_skipped, third.files_removed) == (0, 4, 1)
    docs = store.list_documents(store.require_collection("wiki"))
    assert len(docs) == 4 and all(d.path.startswith("Team Wiki ") for d in docs)  # no "export/" before them
    assert len(list((store.data_dir / "archives" / "wiki").iterdir())) == 1  # one place per zip


def test_a_later_zip_holding_the_same_path_replaces_the_earlier_document(tmp_path, store, embedder):
    """A document is its collection and path: the path inside the zip, with nothing of the zip's name, so a
    second zip holding it replaces it, as uploading the file again would; within one run the second is
    refused with the reason."""
    first, second = tmp_path / "handbook-2025.zip", tmp_path / "handbook-2026.zip"
    first.write_bytes(zip_of({"handbook/leave.md": "# Leave\n\nTwenty days of leave a year.\n",
                              "handbook/travel.md": "# Travel\n\nBook trains for trips under four hours.\n"}))
    second.write_bytes(zip_of({"handbook/leave.md": "# Leave\n\nTwenty-five days of leave a year.\n"}))
    assert ingest_paths(store, embedder, [first], "hr", parse_process=False).files_ingested == 2
    later = ingest_paths(store, embedder, [second], "hr", parse_process=False)
    assert (later.files_ingested, later.files_removed) == (1, 0)
    docs = {d.path: d for d in store.list_documents(store.require_collection("hr"))}
    assert sorted(docs) == ["handbook/leave.md", "handbook/travel.md"]
    assert "Twenty-five" in (Path(docs["handbook/leave.md"].root) / "handbook/leave.md").read_text()
    # the first zip again puts its own version back; the second's other paths are left alone
    assert ingest_paths(store, embedder, [first], "hr", parse_process=False).files_ingested == 1
    docs = {d.path: d for d in store.list_documents(store.require_collection("hr"))}
    assert "Twenty days" in (Path(docs["handbook/leave.md"].root) / "handbook/leave.md").read_text()

    both = ingest_paths(store, embedder, [first, second], "both", parse_process=False)
    assert (both.files_ingested, both.files_failed) == (2, 1)
    assert "same path as a file under" in both.failures[0].reason


def run_worker(services) -> int:
    """What `assistant worker --once` does, in this process with the already-loaded embedder."""
    from ingest.worker import Worker

    return Worker(services.settings, services.store, embedder=services.embedder).run(once=True)


@pytest.fixture
def services(settings_factory, make_services):
    return make_services(settings_factory(ingest={"parse_process": False}))


async def upload(client, services, collection: str, name: str, data: bytes) -> dict:
    r = await client.post(f"/api/collections/{collection}/documents", files=[("files", (name, data, "application/zip"))],
                          headers=UPLOAD)
    assert r.status_code == 202, r.text
    assert run_worker(services) == 1
    return (await client.get(f"/api/jobs/{r.json()['job']}")).json()


@pytest.mark.slow
async def test_uploaded_exports_show_their_hierarchy_in_search_sources(client, services):
    notion = await upload(client, services, "wiki", "notion-export.zip", zip_of(notion_files()))
    confluence = await upload(client, services, "wiki", "confluence-export.zip", zip_of(confluence_files()))
    assert (notion["status"], notion["files_ingested"], notion["files_failed"]) == ("done", 5, 0)
    assert (confluence["status"], confluence["files_ingested"], confluence["files_failed"]) == ("done", 5, 0)

    hits = (await client.get("/api/search", params={"q": "which laptop do engineers receive", "collection": "wiki",
                                                    "k": 10})).json()["hits"]
    laptops = [h for h in hits if h["title"] == LAPTOPS_TITLE]
    assert {h["path"] for h in laptops} == {
        "Team Wiki 0123456789abcdef0123456789abcdef/Onboarding 4567456745674567456745674567abcd/"
        "Laptops 89ab89ab89ab89ab89ab89ab89ab89ab.md",
        "TEAM/Laptops_65540.html"}
    assert hits[0]["title"] == LAPTOPS_TITLE
    vpn = (await client.get("/api/search", params={"q": "hardware token VPN", "collection": "wiki"})).json()["hits"][0]
    assert vpn["title"] == "Team Wiki › Onboarding › VPN" and VPN[:20] in vpn["snippet"]
    # the source's link opens its page as exported
    page = await client.get(f"/api/documents/{laptops[0]['document_id']}/file")
    assert page.status_code == 200 and LAPTOPS in page.text

    r = await client.delete("/api/collections/wiki")
    assert r.status_code == 202 and not (services.settings.data_dir / "archives" / "wiki").exists()


@pytest.mark.slow
async def test_unsafe_uploads_fail_with_the_reason_in_the_job(client, services):
    climbing = await upload(client, services, "wiki", "climbing.zip", climbing_zip())
    assert climbing["status"] == "done" and climbing["files_failed"] == 1 and climbing["files_ingested"] == 0
    (error,) = climbing["errors"]
    assert error["path"] == "climbing.zip"
    assert error["reason"] == ("the archive member '../../outside.md' leads outside the archive ('..'): nothing of the "
                               "archive was unpacked")
    assert not any(p.name == "outside.md" for p in services.settings.data_dir.parent.rglob("*"))

    bomb = await upload(client, services, "wiki", "bomb.zip", bomb_zip())
    (error,) = bomb["errors"]
    assert error["path"] == "bomb.zip" and "zip bomb" in error["reason"] and bomb["files_ingested"] == 0
    docs = (await client.get("/api/collections/wiki/documents")).json()["documents"]
    assert sorted((d["path"], d["status"]) for d in docs) == [("bomb.zip", "failed"), ("climbing.zip", "failed")]
    with zipfile.ZipFile(services.settings.data_dir / "uploads" / "wiki" / "bomb.zip") as kept:
        assert kept.getinfo("zeros.txt").file_size == 64 * 1024 * 1024  # kept as uploaded, never unpacked
