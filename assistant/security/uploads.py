"""Uploaded files: the body bounded while it streams in, every name checked before anything is written,
and all files of a request saved or none.

A hostile name is refused with its reason rather than quietly rewritten: a client that sent `../x`
or a right-to-left override should learn that it was not accepted.
"""

from __future__ import annotations

import re
import shutil
import unicodedata
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

from litestar.datastructures import UploadFile
from litestar.exceptions import ClientException, HTTPException, ValidationException

from indexes.no_space import is_no_space

from assistant.security.error_codes import coded

MB = 1024 * 1024
MAX_NAME_BYTES = 200
PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
STAGING_PREFIX = ".staging-"
QUOTED_VALUE = re.compile(r'"(.*?)"\s*(?:;|$)', re.DOTALL)  # up to the quote that ends the parameter
RAW_FILENAME = re.compile(r";\s*filename\s*=(.*)$", re.IGNORECASE | re.DOTALL)  # `filename*=` is another parameter


class PayloadTooLarge(ClientException):
    status_code = 413


def bounded_receive(receive: Callable[[], Awaitable[dict]], limit: int) -> Callable[[], Awaitable[dict]]:
    """The ASGI receive of a request whose body may not pass `limit` bytes, announced or not (chunked):
    past it, 413 while streaming, before the rest is read."""
    total = 0

    async def receive_bounded() -> dict:
        nonlocal total
        message = await receive()
        if message.get("type") == "http.request":
            total += len(message.get("body", b""))
            if total > limit:
                raise too_large(limit)
        return message

    return receive_bounded


def refused(detail: str, code: str, name: str, **values: Any) -> ValidationException:
    """A 400 for a file name, with its `code` and the name (shortened) in `extra` for the page's own words."""
    return coded(ValidationException(detail, extra={"name": name[:80], **values}), code)


def too_large(limit: int) -> PayloadTooLarge:
    return coded(PayloadTooLarge(f"upload larger than the limit of {limit / MB:.1f} MB", extra={"limit_mb": round(limit / MB, 1)}),
                 "upload_too_large")


def sent_name(upload: UploadFile) -> Any:
    """The file name as the client wrote it in the part's Content-Disposition, before the multipart
    parser's repairs (which cut `C:\\x.md` to `x.md` and `"a"b.md"` to `a`): those names are refused,
    not rewritten. The parsed name when the header cannot be read."""
    header = next((v for k, v in (upload.headers or {}).items() if k.lower() == "content-disposition"), "")
    found = RAW_FILENAME.search(header)
    if found is None:
        return upload.filename
    value = found[1].strip()
    quoted = QUOTED_VALUE.match(value)
    if quoted is not None:
        return quoted[1]
    return value.split(";", 1)[0].strip()


def check_upload_name(raw: Any) -> str:
    """The file name as given, when it is a plain name; else a 400 that says what is wrong with it."""
    name = raw if isinstance(raw, str) else ""
    shown = repr(name[:80])
    if not name or name in (".", ".."):
        raise refused(f"unusable file name {shown}", "upload_name_unusable", name)
    if "/" in name or "\\" in name:
        raise refused(f"file name {shown} names a folder: send the file's own name", "upload_name_folder", name)
    if '"' in name or ":" in name:
        raise refused(f"file name {shown} holds '\"' or ':', which name no plain file on every system",
                      "upload_name_unusable", name)
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        raise refused(f"file name {shown} holds control or invisible formatting characters "
                      "(NUL, line breaks, right-to-left overrides ...)", "upload_name_control", name)
    if PERCENT_ESCAPE.search(name):
        raise refused(f"file name {shown} is percent-encoded: send it decoded", "upload_name_encoded", name)
    if name.startswith("."):
        raise refused(f"file name {shown} starts with '.': hidden files are not ingested", "upload_name_hidden", name)
    if name != name.strip():
        raise refused(f"file name {shown} starts or ends with spaces", "upload_name_spaces", name)
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise refused(f"file name of {len(name)} characters: at most {MAX_NAME_BYTES} bytes", "upload_name_too_long", name,
                      length=len(name), limit=MAX_NAME_BYTES)
    return unicodedata.normalize("NFC", name)


def checked_names(files: list[UploadFile]) -> list[str]:
    names = [check_upload_name(sent_name(f)) for f in files]
    seen: set[str] = set()
    for n in names:
        if n.casefold() in seen:
            raise refused(f"the file name {n!r} is sent twice", "upload_name_twice", n)
        seen.add(n.casefold())
    return names


def save_all(files: list[UploadFile], names: list[str], folder: Path, limit: int, file_limit: int) -> list[Path]:
    """Write every file into a staging folder beside `folder`, then move them all in; on any failure
    nothing is left behind (a same-named earlier upload is replaced only on success).

    A file over `file_limit` (ingest.max_file_mb; a zip is unpacked and its members held to it instead) is
    refused here, as ingestion would skip it anyway; a full disk is a 507 that says so."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        staging = folder.parent / f"{STAGING_PREFIX}{folder.name}-{uuid.uuid4().hex}"
        staging.mkdir()
    except OSError as exc:
        raise no_space(exc) from None
    try:
        total = 0
        for upload, name in zip(files, names):
            size = 0
            with open(staging / name, "xb") as out:
                upload.file.seek(0)
                while chunk := upload.file.read(MB):
                    total += len(chunk)
                    size += len(chunk)
                    if total > limit:
                        raise too_large(limit)
                    if size > file_limit and not name.lower().endswith(".zip"):
                        raise coded(PayloadTooLarge(f"{name!r} is larger than {file_limit / MB:.1f} MB (ingest.max_file_mb): "
                                                    "ingestion would skip it", extra={"name": name[:80], "limit_mb": round(file_limit / MB, 1)}),
                                    "upload_file_too_large")
                    out.write(chunk)
        saved = []
        for name in names:
            target = folder / name
            (staging / name).replace(target)
            saved.append(target.resolve())
        return saved
    except OSError as exc:
        raise no_space(exc) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class InsufficientStorage(HTTPException):
    """507: the server's disk is full."""

    status_code = 507
    code = "no_space"


def no_space(exc: OSError) -> Exception:
    """A full disk as a 507 with the reason; any other OSError as it was."""
    if is_no_space(exc):
        return InsufficientStorage("the server's disk is full: nothing of this upload was kept; "
                                   "send it again once space is freed")
    return exc
