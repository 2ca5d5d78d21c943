"""A `.zip` given to ingestion is read as the folder it holds (wiki exports: Confluence, Notion).

A zip named as a path to ingest (`assistant ingest export.zip`, an uploaded file, a server-side path) is
unpacked under `<data_dir>/archives/<collection>/<key>/`, the key a hash of the zip's own path, and that
folder is scanned like any other, so each file is named by its path inside the zip (no prefix of the zip's
own name): the same zip ingested again lands in the same place, so its unchanged pages are skipped by hash
and pages gone from a newer export are removed. A document is its collection and path, so a later zip (or
file) holding a path an earlier zip held replaces that document, as uploading a file again does. A zip
whose bytes did not change is not unpacked again. Zips found inside a folder are not opened. Besides
the usual exclusions, a Confluence export's stylesheet and chrome icons are left out (EXPORT_CHROME).

Nothing is written unless the whole archive is safe: it is refused, with the reason as the zip's own
failed file in the job, when
- its directory announces more than MAX_MEMBERS members, more than MAX_UNPACKED_BYTES unpacked, or a
  ratio of unpacked to packed bytes above MAX_RATIO (a zip bomb), limits held again while unpacking,
  where the bytes written are counted (a directory can lie);
- a member's path is absolute, names a drive, or climbs out with `..`; a member is a symbolic link or
  encrypted.
It is unpacked into a staging folder beside its place, then moved there in one rename.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import uuid
import zipfile
from pathlib import Path
from typing import Iterable

from ingest.sources import DEFAULT_EXCLUDE, Scan, SourceFile, SourceProblem, display_name, resolve_root, scan

MAX_MEMBERS = 50_000
MAX_UNPACKED_BYTES = 4 * 1024**3
MAX_RATIO = 100  # unpacked / packed bytes of the whole archive; text exports compress 3-15x
MARKER = ".unpacked-from"  # hidden (scans skip it): the sha256 of the zip these files came from
STAGING = ".staging-"
JUNK = ("__MACOSX/",)  # folders archivers add beside the content
# What a Confluence export holds besides its pages: its stylesheet and the icons of its page chrome.
EXPORT_CHROME = ("**/styles/site.css", "**/images/icons/")
DRIVE = re.compile(r"^[A-Za-z]:")
CHUNK = 1024 * 1024


class ArchiveRefused(ValueError):
    """An archive that is not unpacked; the message says why."""


def is_archive(path: Path) -> bool:
    return path.suffix.lower() == ".zip" and path.is_file()


def archives_dir(data_dir: str | os.PathLike[str], collection: str) -> Path:
    """Where a collection's archives are unpacked."""
    return Path(data_dir) / "archives" / collection


def scan_path(path: str | os.PathLike[str], archives: Path | None, *, use_git: bool = True,
              exclude: Iterable[str] | None = None, root: str | os.PathLike[str] | None = None) -> Scan:
    """`sources.scan` of a path, a zip (with `archives`, where to unpack it) scanned as the folder it holds;
    a refused zip is one failed file with the reason. A plain file inside `root` (an upload folder) is named
    by its path under it, so that a folder's uploaded files keep their subfolders."""
    base = resolve_root(path)
    if root is not None and base.is_file() and not (archives is not None and is_archive(base)):
        top = resolve_root(root)
        if base.is_relative_to(top):
            info = base.stat()
            rel = display_name(base.relative_to(top).as_posix())
            return Scan(top, False, files=[SourceFile(base, rel, top, info.st_size, info.st_mtime)])
    if archives is None or not is_archive(base):
        return scan(path, use_git=use_git, exclude=exclude)
    try:
        root = unpack(base, archives)
    except ArchiveRefused as exc:
        return Scan(base.parent, False, problems=[SourceProblem(base.name, base.parent, str(exc))])
    patterns = (*(DEFAULT_EXCLUDE if exclude is None else tuple(exclude)), *EXPORT_CHROME)
    return scan(root, use_git=False, gitignore=False, exclude=patterns)


def unpack(zip_path: Path, archives: Path) -> Path:
    """The folder holding the zip's content (its members' own paths), unpacked now unless the same bytes were."""
    target = archives / hashlib.sha256(str(zip_path).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    digest = file_sha256(zip_path)
    if (target / MARKER).is_file() and (target / MARKER).read_text().strip() == digest:
        return target
    archives.mkdir(parents=True, exist_ok=True)
    staging = archives / f"{STAGING}{uuid.uuid4().hex}"
    try:
        extract(zip_path, staging)
        (staging / MARKER).write_text(digest)
        replace_folder(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def replace_folder(new: Path, target: Path) -> None:
    """Put `new` at `target`, the old folder moved aside first and removed after (two renames)."""
    old = target.with_name(f"{STAGING}old-{uuid.uuid4().hex}")
    if target.exists():
        target.rename(old)
    try:
        new.rename(target)
    except OSError:
        if not target.exists() and old.exists():
            old.rename(target)  # the rename failed for another reason: the previous content stays
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def member_path(name: str) -> str | None:
    """A member's path as '/'-separated parts to write, None for a folder or archiver junk; ArchiveRefused
    for one that would land outside the folder."""
    path = name.replace("\\", "/")
    if path.startswith("/") or DRIVE.match(path):
        raise ArchiveRefused(f"the archive member {name!r} has an absolute path: nothing of the archive was unpacked")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveRefused(f"the archive member {name!r} leads outside the archive ('..'): nothing of the archive "
                             "was unpacked")
    if not parts or path.endswith("/") or any(path.startswith(j) for j in JUNK):
        return None
    return "/".join(parts)


def check_members(archive: zipfile.ZipFile, packed_size: int) -> list[tuple[zipfile.ZipInfo, str]]:
    """Every member to write with its path, once the whole directory has passed the checks."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ArchiveRefused(f"the archive holds {len(infos)} members; at most {MAX_MEMBERS} are unpacked")
    declared = sum(max(i.file_size, 0) for i in infos)
    check_size(declared, packed_size)
    out = []
    for info in infos:
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise ArchiveRefused(f"the archive member {info.filename!r} is a symbolic link: links are not unpacked "
                                 "(nothing of the archive was)")
        if info.flag_bits & 0x1:
            raise ArchiveRefused(f"the archive member {info.filename!r} is encrypted: export it without a password")
        path = member_path(info.filename)
        if path is not None:
            out.append((info, path))
    return out


def check_size(unpacked: int, packed: int) -> None:
    mb = 1024 * 1024
    if unpacked > MAX_UNPACKED_BYTES:
        raise ArchiveRefused(f"the archive unpacks to {unpacked / mb:.0f} MB; at most {MAX_UNPACKED_BYTES / mb:.0f} MB "
                             "(a zip bomb?)")
    if unpacked > MAX_RATIO * max(packed, 1):
        raise ArchiveRefused(f"the archive unpacks to {unpacked / mb:.0f} MB from {packed / mb:.1f} MB, over {MAX_RATIO} "
                             "times its size (a zip bomb?)")


def extract(zip_path: Path, folder: Path) -> None:
    """Every member under folder, checked first and counted while written; ArchiveRefused otherwise."""
    packed = zip_path.stat().st_size
    try:
        with zipfile.ZipFile(zip_path) as archive:
            members = check_members(archive, packed)
            folder.mkdir(parents=True)
            written = 0
            for info, path in members:
                out = folder / path
                out.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(out, "wb") as dst:
                    while block := src.read(CHUNK):
                        written += len(block)
                        check_size(written, packed)
                        dst.write(block)
    except ArchiveRefused:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
        raise ArchiveRefused(f"damaged or unsupported zip ({exc})") from None
    except OSError as exc:
        raise ArchiveRefused(f"cannot unpack the archive ({exc.strerror or exc})") from None
