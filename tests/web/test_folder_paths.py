"""A folder picked in the documents view keeps its subfolders: two `index.md` in different subfolders are two
documents, each listed by its path inside the folder. Headless Chromium against the real server (echo backend,
a worker beside it); the picker hands the page the files with their `webkitRelativePath`."""

from __future__ import annotations

import pytest

from tests.web.test_pages import JOB_TIMEOUT_MS, open_documents

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser


def test_a_folder_with_two_index_files_in_subfolders_is_listed_by_path(page, tmp_path):
    folder = tmp_path / "site"
    for sub, text in (("uk", "In the UK office annual leave is twenty-eight days."),
                      ("us", "In the US office annual leave is fifteen days.")):
        (folder / sub).mkdir(parents=True)
        (folder / sub / "index.md").write_text(f"# Leave\n\n{text}\n", encoding="utf-8")
    open_documents(page, "offices")
    page.set_input_files("#pick-folder", folder)  # what the "Add a folder" picker hands the page
    # the server's earlier jobs are listed too: the upload's own card comes first once it is made
    expect(page.locator(".job").first.locator(".job-facts")).to_have_text("2 ingested", timeout=JOB_TIMEOUT_MS)
    expect(page.locator(".job").first).to_have_attribute("data-status", "done")
    rows = page.locator("#document-rows tr")
    expect(rows).to_have_count(2)
    paths = page.locator("#document-rows .doc-path").evaluate_all(
        "cells => cells.map(c => (c.querySelector('.doc-file') || c.querySelector('.doc-title')).textContent)")
    assert sorted(paths) == ["uk/index.md", "us/index.md"], paths
    expect(page.locator("#docs-status")).not_to_have_class("error")
