"""Fixtures for the web page tests: the real server in a subprocess, and headless Chromium.

The server is started exactly as a user would: `assistant ingest` a few Markdown files, then
`assistant serve` (and `assistant worker`) on a free port of 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from evals.local_server import free_port
from tests.support.wait import wait_until

CHROMIUM = Path("/usr/bin/chromium")
ANSWER_TIMEOUT_MS = 60_000  # the first question also warms the embedder up on a shared CPU
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

DOCS = {
    "sourdough.md": """# Sourdough bread

## Starter
A sourdough starter is a mix of flour and water that wild yeast and lactic bacteria ferment.
Feed the starter every twelve hours with equal weights of flour and water.

## Bulk fermentation
After mixing, the dough ferments for four to six hours at room temperature.
Stretch and fold the dough every thirty minutes during the first two hours.
""",
    "bicycle.md": """# Bicycle maintenance

## Chain
Clean the chain with a dry rag and lubricate it every three hundred kilometres.
A worn chain stretches and wears the cassette; measure it with a chain checker.

## Tyres
Check the tyre pressure every week. Road tyres run at six to eight bar.
""",
    "solar.md": """# Solar panels

## Orientation
In the northern hemisphere, panels facing south at an angle close to the latitude collect the most energy.

## Cleaning
Rinse the panels with water twice a year; dust and pollen reduce their output.
""",
}


ARCHIVE = {
    "minutes.md": """# Meeting minutes

The committee agreed to move the spring fair to the second Saturday of May.
""",
}


def assistant_command() -> list[str]:
    """The `assistant` console script of the running interpreter's environment."""
    script = Path(sys.executable).with_name("assistant")
    if script.exists():
        return [str(script)]
    found = shutil.which("assistant")
    if found is None:
        pytest.skip("the `assistant` command is not installed (pip install -e .)")
    return [found]


def ingest(cmd: list[str], folder: Path, collection: str, data: Path, env: dict) -> None:
    out = subprocess.run(
        [*cmd, "ingest", str(folder), "--collection", collection, "--data-dir", str(data)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, f"ingest failed:\n{out.stdout}\n{out.stderr}"


def write_folder(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def running_server(root: Path, data: Path, env: dict, *, worker: bool = False) -> Iterator[str]:
    """`assistant serve` on a free 127.0.0.1 port (and `assistant worker` beside it); its base URL."""
    cmd = assistant_command()
    port = free_port()
    log_path = root / "server.log"
    procs: list[subprocess.Popen] = []
    with log_path.open("w") as log:
        procs.append(subprocess.Popen([*cmd, "serve", "--data-dir", str(data), "--port", str(port)],
                                      env=env, stdout=log, stderr=subprocess.STDOUT))
        if worker:
            procs.append(subprocess.Popen([*cmd, "worker", "--data-dir", str(data), "--exit-with-parent"],
                                          env=env, stdout=log, stderr=subprocess.STDOUT))
        base = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            if procs[0].poll() is not None:
                pytest.fail(f"the server exited with {procs[0].returncode}:\n{log_path.read_text()}")
            return httpx.get(f"{base}/health", timeout=2).status_code == 200

        try:
            try:
                wait_until(healthy, timeout=180, interval=0.2, ignoring=(httpx.TransportError,),
                           what="the server answering /health")
            except AssertionError as exc:
                pytest.fail(f"{exc}\n{log_path.read_text()}")
            yield base
        finally:
            for proc in reversed(procs):
                stop(proc)


def base_env(**extra: str) -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


@contextmanager
def served(tmp_path_factory, name: str, collections: dict[str, dict[str, str]], *, worker: bool = False,
           **env: str) -> Iterator[str]:
    """`assistant serve` (and a worker) over collections ingested from these files (collection -> file name
    -> text), with these settings in the environment of both; its base URL."""
    root = tmp_path_factory.mktemp(name)
    data = root / "data"
    full_env = base_env(**env)
    for collection, files in collections.items():
        ingest(assistant_command(), write_folder(root / collection, files), collection, data, full_env)
    with running_server(root, data, full_env, worker=worker) as base:
        yield base


def ask_in_new_chat(page, question: str):
    """Ask on the page as it is, in a new conversation; the turn's locator once its answer is complete."""
    from playwright.sync_api import expect

    page.click("#new-chat")
    expect(page.locator(".turn")).to_have_count(0)
    page.fill("#question", question)
    page.press("#question", "Enter")
    turn = page.locator(".turn").last
    expect(turn.locator(".answer-block > .answer")).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    expect(turn.locator(".timings")).to_be_visible()  # the done event arrived
    return turn


@pytest.fixture(scope="session")
def live_server(tmp_path_factory) -> Iterator[str]:
    """Base URL of a real server (echo backend) over two collections, `docs` (three Markdown files) and
    `archive`, with an ingestion worker beside it; server-side folders under the test session's
    temporary folder may be added."""
    with served(tmp_path_factory, "web", {"docs": DOCS, "archive": ARCHIVE}, worker=True,
                ASSISTANT_BACKEND="echo",
                ASSISTANT_ECHO_DELAY_S="0.05",  # words arrive one by one, as from a model
                ASSISTANT_INGEST_ALLOWED_ROOTS=json.dumps([str(tmp_path_factory.getbasetemp())])) as base:
        yield base


def artifacts_dir(tmp_path_factory) -> Path:
    """Where screenshots go: $ASSISTANT_ARTIFACTS when set, else a folder of the test session."""
    folder = Path(os.environ["ASSISTANT_ARTIFACTS"]) if os.environ.get("ASSISTANT_ARTIFACTS") else (
        tmp_path_factory.getbasetemp() / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, driven by Playwright without any browser download."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


# What the sec side sends with the page; the page must work under it.
CSP = "default-src 'self'"


def expected_failure(text: str) -> bool:
    """Chromium logs every 4xx answer as a console error; tests provoke some on purpose."""
    return text.startswith("Failed to load resource: the server responded with a status of 4")


def strict_page(browser, base_url: str, **context_args):
    """A fresh context on base_url whose page is served under CSP; (page, errors, context)."""
    context = browser.new_context(base_url=base_url, **{"viewport": {"width": 1200, "height": 900}, **context_args})
    context.route(f"{base_url}/", lambda route: route.fulfill(
        response=(resp := route.fetch()), headers={**resp.headers, "content-security-policy": CSP}))
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" and not expected_failure(msg.text) else None)
    pg.set_default_timeout(15_000)
    return pg, errors, context


@contextmanager
def checked_page(browser, base_url: str, **context_args):
    """strict_page's page (its context made with context_args) for the length of a fixture: its context
    closed after, and a failure when the page logged an error (a CSP violation is one)."""
    pg, errors, context = strict_page(browser, base_url, **context_args)
    yield pg
    context.close()
    assert not errors, f"errors on the page: {errors}"


@pytest.fixture
def page(browser, live_server):
    """A fresh browser context (empty localStorage) on the served page, under a strict
    Content-Security-Policy; fails on page errors and console errors (a CSP violation is one)."""
    with checked_page(browser, live_server) as pg:
        yield pg
