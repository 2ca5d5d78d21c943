"""Uploaded files: the body bounded while it streams in, every name checked before anything is written,
and all files of a request saved or none.

A hostile name is refused with its reason rather than quietly rewritten: a client that sent `../x`
or a right-to-left override should learn that it was not accepted. A folder's files come with their path
inside it (`a/index.md`), each part checked like a file name, so that two `index.md` of different
subfolders stay two documents; nothing can name a place outside the collection's upload folder.
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
MAX_NAME_BYTES = 200  # one part of a path
MAX_PATH_BYTES = 1000  # the whole relative path
MAX_DEPTH = 32  # parts of a path
DRIVE = re.compile(r"^[A-Za-z]:")  # `C:x` / `C:\\x`: a Windows drive, not a relative path
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
    """The file's path as given (`notes.md`, or `a/b/notes.md` for a folder's file), when it names a place
    inside the upload folder; else a 400 that says what is wrong with it. NFC-normalised."""
    name = raw if isinstance(raw, str) else ""
    shown = repr(name[:80])
    if not name or name in (".", ".."):
        raise refused(f"unusable file name {shown}", "upload_name_unusable", name)
    if "\\" in name:
        raise refused(f"file name {shown} names a folder with '\\': send a folder's files with '/' between its names",
                      "upload_name_folder", name)
    if name.startswith("/") or DRIVE.match(name):
        raise refused(f"file name {shown} names a folder from the top of a disk: send the path inside the folder",
                      "upload_name_folder", name)
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise refused(f"file name {shown} names a folder by '..', '.' or an empty part: send the path inside the folder",
                      "upload_name_folder", name)
    if len(parts) > MAX_DEPTH or len(name.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise refused(f"file path of {len(name)} characters and {len(parts)} folders: at most {MAX_PATH_BYTES} bytes "
                      f"and {MAX_DEPTH} folders", "upload_name_too_long", name, length=len(name), limit=MAX_PATH_BYTES)
    return "/".join(check_part(p, shown, name) for p in parts)


def check_part(part: str, shown: str, name: str) -> str:
    """One folder or file name of a path, checked as a plain name; `shown` and `name` are the whole path."""
    if '"' in part or ":" in part:
        raise refused(f"file name {shown} holds '\"' or ':', which name no plain file on every system",
                      "upload_name_unusable", name)
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in part):
        raise refused(f"file name {shown} holds control or invisible formatting characters "
                      "(NUL, line breaks, right-to-left overrides ...)", "upload_name_control", name)
    if PERCENT_ESCAPE.search(part):
        raise refused(f"file name {shown} is percent-encoded: send it decoded", "upload_name_encoded", name)
    if part.startswith("."):
        raise refused(f"file name {shown} starts with '.': hidden files are not ingested", "upload_name_hidden", name)
    if part != part.strip():
        raise refused(f"file name {shown} starts or ends with spaces", "upload_name_spaces", name)
    if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise refused(f"file name of {len(part)} characters: at most {MAX_NAME_BYTES} bytes", "upload_name_too_long", name,
                      length=len(part), limit=MAX_NAME_BYTES)
    return unicodedata.normalize("NFC", part)


def checked_names(files: list[UploadFile]) -> list[str]:
    """Every file's checked path; one path sent twice (case aside), or as a file and as a folder, is refused."""
    names = [check_upload_name(sent_name(f)) for f in files]
    seen: set[str] = set()
    for n in names:
        if n.casefold() in seen:
            raise refused(f"the file name {n!r} is sent twice", "upload_name_twice", n)
        seen.add(n.casefold())
    folders = {"/".join(n.casefold().split("/")[:k]) for n in names for k in range(1, n.count("/") + 1)}
    for n in names:
        if n.casefold() in folders:
            raise refused(f"the file name {n!r} is sent twice: as a file and as a folder", "upload_name_twice", n)
    return names


def inside(folder: Path, name: str) -> Path:
    """`folder / name`, checked to stay inside `folder` once links are resolved (a checked name cannot leave
    it; this holds even if a link was put in the upload folder by other means)."""
    target = folder / name
    if not target.parent.resolve().is_relative_to(folder.resolve()):
        raise refused(f"file name {name!r} names a folder outside the upload", "upload_name_folder", name)
    return target


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
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
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
        targets = []
        for name in names:  # every place checked before any file is moved in
            target = folder / name
            for above in reversed(Path(name).parents[:-1]):
                if (folder / above).exists() and not (folder / above).is_dir():
                    raise refused(f"file name {name!r} names a folder where a file {str(above)!r} was uploaded",
                                  "upload_name_folder", name)
            if target.is_dir():
                raise refused(f"file name {name!r} is a folder of files uploaded before", "upload_name_folder", name)
            targets.append(inside(folder, name))
        for name, target in zip(names, targets):
            target.parent.mkdir(parents=True, exist_ok=True)
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
