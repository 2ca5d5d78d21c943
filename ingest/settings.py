"""The ingestion worker's settings section: what is read, how it is chunked, the worker that runs queued jobs.
The server's one Settings object composes it (the only thing of ingest/ the server imports)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class IngestSettings(BaseModel):
    """Ingestion: what is read, how it is chunked, and the worker that runs queued jobs."""

    chunk_tokens: int = Field(200, ge=16, description="target chunk size in embedder tokens")
    overlap_tokens: int = Field(32, ge=0, description="tokens repeated between consecutive chunks")
    max_file_mb: float = Field(50.0, gt=0, description="files larger than this are skipped with a reason")
    file_types: list[str] = Field(
        default_factory=list,
        description="file types accepted, by suffix ('.md', '.pdf') or by name for files without one ('makefile'); "
        "empty = every type the parser reads",
    )
    exclude: list[str] | None = Field(
        None,
        description="gitignore-style patterns left out of every folder; empty = the defaults for vendored and "
        "generated files (node_modules/, vendor/, build/, *.min.js, lock files, ...); [] = leave nothing out",
    )
    use_git: bool = Field(
        True, description="list git checkouts with `git ls-files` (honours .gitignore) and record the commit of each document"
    )
    parse_process: bool = Field(
        True, description="parse files in a child process, so parsing overlaps embedding instead of taking the "
        "interpreter from it; off = parse in a thread of the ingesting process"
    )
    embed_pool: int = Field(
        1024, ge=1, description="chunk texts pooled across files before one embedding call (sorted by length inside: less padding)"
    )
    allowed_roots: list[Path] = Field(
        default_factory=list,
        description="server-side folders that POST /api/collections/{name}/sources may ingest from (and below); empty = none",
    )
    max_upload_mb: float = Field(100.0, gt=0, description="largest upload request POST /api/collections/{name}/documents accepts (all its files)")
    parse_timeout_s: float = Field(
        120.0, gt=0, description="longest the parser process may spend on one file; then it is stopped and the file "
        "fails with that reason (the worker goes on)"
    )
    parse_memory_mb: int = Field(
        2048, ge=64, description="memory the parser process may take beyond its size at start; a file that needs "
        "more fails with that reason"
    )
    ocr_languages: str = Field(
        "eng+chi_sim", min_length=1, description="tesseract languages scanned PDF pages and PNG/JPEG/TIFF images are "
        "read in, joined by '+' (eng, chi_sim, chi_tra, jpn, ...: each needs its tesseract-ocr-LANG package); "
        "`assistant ingest --ocr-languages` sets them for a collection, which keeps them for its later jobs"
    )
    ocr_command: str = Field(
        "tesseract", min_length=1, description="the tesseract program OCR runs: a name on PATH or a path"
    )
    ocr_page_timeout_s: float = Field(
        60.0, ge=0, description="more time the parser process gets on a file for each page it reads through OCR "
        "(on top of parse_timeout_s)"
    )
    watch_debounce_ms: int = Field(
        400, ge=0, description="`assistant ingest --watch`: quiet time after a change before the batch of changes is applied"
    )
    worker_poll_s: float = Field(1.0, gt=0, description="how often an idle `assistant worker` looks for queued jobs")
    worker_stale_s: float = Field(
        60.0, gt=0, description="a running job whose worker has not sent a heartbeat for this long is taken over by another worker"
    )
    file_lease_s: float = Field(
        60.0, gt=0, description="workers sharing a job on PostgreSQL hold each claimed file this long, renewed by "
        "their heartbeat; a dead worker's files go to others once it runs out",
    )
    claim_files: int = Field(64, ge=1, le=4096, description="files a worker sharing a job claims at a time")
    run_worker: bool = Field(
        True, description="`assistant serve` runs one `assistant worker` process beside the server for queued ingestion jobs"
    )
