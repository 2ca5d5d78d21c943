"""A folder mixing every kind of bad file: the job finishes, each bad file is listed with its reason,
everything else is indexed."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from indexes.jobs import Jobs
from ingest.worker import Worker
from tests.conftest import shared_path

pytestmark = pytest.mark.slow


def test_bad_files_are_listed_and_the_rest_indexed(tmp_path, settings_factory, embedder):
    root = tmp_path / "mixed"
    root.mkdir()
    good = {
        "guide.md": "# Guide\n\nThe night shift hands over to the day shift at seven.\n",
        "notes.txt": "Inventory is counted on the last Friday of each month.\n",
        "café menu — spécial.md": "# Menu\n\nSoup of the day is served until two.\n",
        "日本語.txt": "会議は毎週月曜日の午前十時に始まります。\n",
    }
    for name, body in good.items():
        (root / name).write_text(body)
    shutil.copyfile(shared_path("corpora", "messy-docs", "password.pdf"), root / "locked.pdf")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj <</Type /Catalog>> garbage \x00\xff endobj\n")
    (root / "empty.md").write_bytes(b"")
    (root / "blob.dat").write_bytes(bytes(range(256)) * 8)
    (root / "latin1.txt").write_bytes("Le café est fermé le dimanche à Genève.\n".encode("latin-1"))
    noise = random.Random(1)
    (root / "noise.txt").write_bytes(bytes(noise.randrange(1, 256) for _ in range(2000)))  # no NUL, yet not text
    (root / "huge.txt").write_text("word " * 30_000)
    os.symlink(root / "loop-a", root / "loop-b")
    os.symlink(root / "loop-b", root / "loop-a")
    os.symlink(root / "gone.md", root / "dangling.md")
    os.mkfifo(root / "fifo")
    locked = root / "secret.md"
    locked.write_text("# Secret\n\nOnly readable by its owner.\n")
    locked.chmod(0o000)  # unreadable, except to root
    weird = os.fsencode(root) + b"/odd-\xff-name\nwith newline.md"
    with open(weird, "wb") as fh:
        fh.write(b"# Odd\n\nA page whose name is not valid UTF-8 and holds a newline.\n")

    settings = settings_factory(ingest={"max_file_mb": 0.1})
    worker = Worker(settings, embedder=embedder)
    jobs = Jobs(worker.store.engine)
    job = jobs.enqueue(0, "mixed", {"paths": [str(root)]})
    try:
        assert worker.run(once=True) == 1
        info = jobs.progress(job.id)
        states = {f.path: (f.state, f.reason) for f in jobs.files(job.id, limit=1000)}
    finally:
        worker.store.close()

    assert info["status"] == "done", info
    as_root = os.geteuid() == 0
    expect = {
        "locked.pdf": ("failed", "password-protected or encrypted PDF"),
        "empty.md": ("skipped", "empty file"),
        "blob.dat": ("skipped", "binary file (unsupported type .dat)"),
        "loop-a": ("failed", "symbolic link loop"),
        "loop-b": ("failed", "symbolic link loop"),
        "dangling.md": ("failed", "broken symbolic link (its target does not exist)"),
        "fifo": ("skipped", "not a regular file (FIFO)"),
        "latin1.txt": ("done", "not UTF-8: read as cp1252"),
    }
    for path, want in expect.items():
        assert states[path] == want, (path, states[path])
    assert states["broken.pdf"][0] == "failed" and states["broken.pdf"][1].startswith("damaged or invalid PDF")
    assert states["noise.txt"][0] == "failed" and "not valid UTF-8" in states["noise.txt"][1]
    assert states["huge.txt"][0] == "failed" and states["huge.txt"][1].startswith("file too large")
    # root reads any file; anyone else gets a reason
    assert states["secret.md"] == (("done", None) if as_root else ("failed", "cannot read the file (Permission denied)"))
    for name in good:
        assert states[name] == ("done", None), name
    assert states["odd-\\xff-name\nwith newline.md"] == ("done", None)
    assert info["files_total"] == len(states) == 17
    assert {e["path"] for e in info["errors"]} == {p for p, (s, _) in states.items() if s == "failed"}
    # each reason also as a code and its values, for the page to say in its reader's language
    codes = {e["path"]: (e["code"], e["values"]) for e in info["errors"] + info["skipped"]}
    assert codes["locked.pdf"] == ("pdf_encrypted", {}) and codes["empty.md"] == ("empty_file", {})
    assert codes["blob.dat"] == ("binary_file", {"type": ".dat"}) and codes["fifo"] == ("not_a_file", {"what": "FIFO"})
    assert codes["loop-a"] == ("link_loop", {}) and codes["dangling.md"] == ("link_broken", {})
    assert codes["broken.pdf"][0] == "pdf_damaged" and codes["noise.txt"][0] == "not_text"
    assert codes["huge.txt"][0] == "file_too_large" and codes["huge.txt"][1]["limit_mb"] == "0.1"
    assert all(code != "other" for code, _ in codes.values()), codes
