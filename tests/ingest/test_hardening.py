"""Hostile folders: a link to a file outside the folder (also tracked in git), a checkout whose .git/config
names a command, a .git whose HEAD or gitdir/commondir names files outside, a watched folder swapped for a
link, a zip bomb, a file the parser cannot finish in time. Each is refused with a reason, nothing
outside the folder is read or run, and the worker goes on with the other files."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from indexes.jobs import Jobs
from ingest.gitrepo import commit_info
from ingest.pipeline import ingest_paths, sync_changes
from ingest.worker import Worker

pytestmark = pytest.mark.slow

SECRET = "ssh-private-key-canary-7731"


def run_job(settings, embedder, paths: list[str]) -> tuple[dict, dict, str]:
    """Run one job to its end: its progress, each file's (state, reason), and every stored chunk's text."""
    worker = Worker(settings, embedder=embedder)
    jobs = Jobs(worker.store.engine)
    job = jobs.enqueue(0, "hostile", {"paths": paths})
    try:
        assert worker.run(once=True) == 1
        info = jobs.progress(job.id)
        states = {f.path: (f.state, f.reason) for f in jobs.files(job.id, limit=1000)}
        with worker.store.engine.connect() as conn:
            texts = "\n".join(r[0] for r in conn.exec_driver_sql("SELECT text FROM chunk").fetchall())
    finally:
        worker.store.close()
    return info, states, texts


@pytest.fixture
def outside(tmp_path):
    home = tmp_path / "home" / ".ssh"
    home.mkdir(parents=True)
    (home / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    return home / "id_rsa"


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_links_out_of_the_folder_are_not_followed_in_a_folder_or_a_checkout(tmp_path, settings_factory, embedder, outside):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nThe night shift hands over at seven.\n")
    (folder / "inside-link.md").symlink_to(folder / "guide.md")  # a link inside the folder is read
    (folder / "key.md").symlink_to(outside)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "readme.md").write_text("# Readme\n\nBuild with make.\n")
    (repo / "notes.md").symlink_to(outside)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")

    info, states, texts = run_job(settings_factory(), embedder, [str(folder), str(repo)])
    assert info["status"] == "done"
    assert SECRET not in texts
    assert states["key.md"] == ("skipped", "link to a file outside the folder (not followed)")
    assert states["notes.md"] == ("skipped", "link to a file outside the folder (not followed)")
    assert states["guide.md"][0] == states["inside-link.md"][0] == states["readme.md"][0] == "done"


def test_a_checkouts_fsmonitor_command_never_runs(tmp_path, settings_factory, embedder):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "readme.md").write_text("# Readme\n\nDeploys happen on Tuesdays.\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    marker = tmp_path / "pwned"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    hooks = repo / ".git" / "hooks"
    for name in ("post-checkout", "post-index-change", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / name).chmod(0o755)

    info, states, _ = run_job(settings_factory(), embedder, [str(repo)])
    assert info["status"] == "done" and states["readme.md"][0] == "done"
    assert not marker.exists(), "a command named by the checkout's .git/config ran"


def stored_metadata(store, collection: str) -> str:
    """Every stored document's title, path, root and metadata (JSON) as one text, to search for leaked content."""
    docs = store.list_documents(store.require_collection(collection))
    return "\n".join(f"{d.title}\n{d.path}\n{d.root}\n{d.meta}" for d in docs)


def test_a_git_head_naming_a_file_outside_gives_no_commit(tmp_path, store, embedder):
    folder = tmp_path / "notes"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: ../../../../../../etc/passwd\n")
    (folder / "readme.md").write_text("# Readme\n\nThe archive closes at five.\n")
    passwd = [line for line in open("/etc/passwd").read().splitlines() if line.strip()]
    assert passwd

    assert commit_info(folder) is None
    report = ingest_paths(store, embedder, [folder], "hostile")
    assert report.files_ingested == 1 and report.git == {}
    stored = stored_metadata(store, "hostile") + json.dumps(report.git)
    assert not [line for line in passwd if line in stored]
    assert '"git"' not in stored


@pytest.mark.parametrize("outside", ["/etc", "tmp"])
def test_a_gitdir_file_whose_commondir_is_outside_gives_no_commit(tmp_path, store, embedder, outside):
    if outside == "tmp":  # a folder of the attacker's choosing, with a recognisable content
        common = tmp_path / "elsewhere"
        common.mkdir()
        (common / "hostname").write_text(SECRET + "\n")
    else:
        common = Path(outside)
    secret = (common / "hostname").read_text().strip() if (common / "hostname").is_file() else ""
    if not secret:
        pytest.skip(f"{common}/hostname is absent or empty here")
    gitdir = tmp_path / "gitdir"
    gitdir.mkdir()
    (gitdir / "commondir").write_text(f"{common}\n")
    (gitdir / "HEAD").write_text("ref: hostname\n")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / ".git").write_text(f"gitdir: {gitdir}\n")
    (folder / "readme.md").write_text("# Readme\n\nThe archive closes at five.\n")

    assert commit_info(folder) is None
    report = ingest_paths(store, embedder, [folder], "hostile")
    assert report.files_ingested == 1 and report.git == {}
    stored = stored_metadata(store, "hostile")
    assert '"git"' not in stored
    if outside == "tmp":
        assert SECRET not in stored


def test_a_watched_folder_swapped_for_a_link_is_not_read(tmp_path, store, embedder):
    swap = tmp_path / "swap"
    swap.mkdir()
    (swap / "passwd").write_text("# Passwd\n\nHarmless notes about the password policy.\n")
    ingest_paths(store, embedder, [swap], "swap")
    root = str(swap.resolve())
    os.rename(swap, tmp_path / "moved")
    swap.symlink_to("/etc")

    # what a watcher of the folder hands over: the root as ingested, the file that changed under it
    report = sync_changes(store, embedder, root, "swap", ["passwd"], [])
    assert report.files_ingested == 0
    assert [(i.path, "replaced by a link" in i.reason) for i in report.ignored] == [("passwd", True)]
    with store.engine.connect() as conn:
        texts = "\n".join(r[0] for r in conn.exec_driver_sql("SELECT text FROM chunk").fetchall())
    first = open("/etc/passwd").readline().strip()
    assert first not in texts and first not in stored_metadata(store, "swap")


def zip_bomb(path, uncompressed_mb: int) -> None:
    """A .docx-shaped zip whose one entry expands to uncompressed_mb of zeros (a few hundred KB on disk)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("word/document.xml", "w", force_zip64=True) as entry:
            block = b"\0" * (1024 * 1024)
            for _ in range(uncompressed_mb):
                entry.write(block)


def test_a_zip_bomb_is_refused_and_the_other_files_are_ingested(tmp_path, settings_factory, embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    zip_bomb(folder / "report.docx", 300)
    (folder / "guide.md").write_text("# Guide\n\nBadges are renewed each spring.\n")
    assert (folder / "report.docx").stat().st_size < 2 * 1024 * 1024

    info, states, texts = run_job(settings_factory(), embedder, [str(folder)])
    assert info["status"] == "done"
    state, reason = states["report.docx"]
    assert state == "failed" and "zip bomb" in reason and "300 MB" in reason
    assert states["guide.md"][0] == "done" and "Badges" in texts


def test_a_file_the_parser_cannot_finish_in_time_fails_and_the_next_run_goes_on(tmp_path, settings_factory, embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\n" + "The canteen opens at noon. " * 400 + "\n")
    info, states, _ = run_job(settings_factory(ingest={"parse_timeout_s": 0.001}), embedder, [str(folder)])
    assert info["status"] == "done"
    assert states["guide.md"][0] == "failed" and "took longer than 0.001 s" in states["guide.md"][1]
    info, states, texts = run_job(settings_factory(), embedder, [str(folder)])
    assert states["guide.md"] == ("done", None) and "canteen" in texts


def test_a_file_that_needs_more_than_the_parser_memory_limit_fails_with_the_reason(tmp_path, settings_factory, embedder):
    from ingest.parse_pool import ParsePool

    # The limit is set in a parser process once, at its first file: start from a new one.
    for pid in ParsePool.shared().child_pids():
        os.kill(pid, 9)
    folder = tmp_path / "docs"
    folder.mkdir()
    paragraph = "The canteen opens at noon and closes at three; the menu changes every week. "
    (folder / "huge.md").write_text("".join(f"# Part {i}\n\n{paragraph * 40}\n\n" for i in range(8000)))
    info, states, texts = run_job(settings_factory(ingest={"parse_memory_mb": 64}), embedder, [str(folder)])
    assert info["status"] == "done"
    state, reason = states["huge.md"]
    assert state == "failed" and ("memory limit (64 MB)" in reason or "crashed" in reason), reason
    assert "canteen" not in texts
    for pid in ParsePool.shared().child_pids():  # the next test's parser runs without this limit
        os.kill(pid, 9)
