"""The OCR programs on this machine: tesseract (its version and languages) and poppler's pdftoppm, and the
apt-get command that installs what a configuration lacks.

Ingestion reads scans with them and `assistant doctor` reports them; this package is the one both import.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import asdict, dataclass

DEFAULT_LANGUAGES = "eng+chi_sim"
TESSERACT_PACKAGE = "tesseract-ocr"
POPPLER_PACKAGE = "poppler-utils"
_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


def split_languages(spec: str) -> list[str]:
    """'eng+chi_sim' (tesseract's way; commas and spaces too) -> ['eng', 'chi_sim']."""
    return [part for part in re.split(r"[+,\s]+", spec.strip()) if part]


def language_package(language: str) -> str:
    """Debian's package of a tesseract language: chi_sim -> tesseract-ocr-chi-sim."""
    return f"{TESSERACT_PACKAGE}-{language.lower().replace('_', '-')}"


def _run(argv: list[str]) -> str:
    """What a program prints (stdout and stderr: tesseract writes its version to either), '' on failure."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (done.stdout or "") + (done.stderr or "")


@dataclass(frozen=True)
class OcrTools:
    """What was found: None for a program that is not there."""

    tesseract: str | None
    tesseract_version: str
    languages: tuple[str, ...]
    pdftoppm: str | None
    poppler_version: str

    def missing_languages(self, wanted: list[str]) -> list[str]:
        return [lang for lang in wanted if lang not in self.languages]

    def install_command(self, wanted: list[str], *, pdf: bool = True) -> str:
        """The apt-get command that installs what reading these languages needs and is missing ('' when
        nothing is); pdf: PDF pages too, which poppler renders to images first."""
        packages = []
        if self.tesseract is None:
            packages.append(TESSERACT_PACKAGE)
        packages += [language_package(lang) for lang in (wanted if self.tesseract is None else
                                                         self.missing_languages(wanted))]
        if pdf and self.pdftoppm is None:
            packages.append(POPPLER_PACKAGE)
        return f"apt-get install {' '.join(packages)}" if packages else ""

    def report(self, wanted: list[str]) -> dict:
        """The facts, and whether these languages can be read: status 'pass' or 'warn', and the fix."""
        missing = self.missing_languages(wanted) if self.tesseract else list(wanted)
        if self.tesseract is None or self.pdftoppm is None:
            absent = [name for name, path in (("tesseract", self.tesseract), ("poppler's pdftoppm", self.pdftoppm))
                      if path is None]
            status, saw = "warn", f"OCR is not installed ({' and '.join(absent)} missing): scanned PDFs and images are not read"
        elif missing:
            status, saw = "warn", f"OCR languages not installed: {', '.join(missing)} (text in them is not read)"
        else:
            status, saw = "pass", f"scanned PDF pages and images are read in {'+'.join(wanted)}"
        return {**asdict(self), "languages": list(self.languages), "configured": list(wanted), "missing": missing,
                "status": status, "saw": saw, "fix": self.install_command(wanted)}


def find_tools(command: str = "tesseract") -> OcrTools:
    """Look for tesseract (command: a name on PATH or a path) and pdftoppm, and ask them what they are."""
    tesseract = shutil.which(command)
    version, languages = "", ()
    if tesseract:
        found = _VERSION.search(_run([tesseract, "--version"]))
        version = found.group(1) if found else ""
        listed = _run([tesseract, "--list-langs"]).splitlines()
        languages = tuple(sorted(line.strip() for line in listed[1:] if line.strip() and " " not in line.strip()))
    pdftoppm = shutil.which("pdftoppm")
    poppler = ""
    if pdftoppm:
        found = _VERSION.search(_run([pdftoppm, "-v"]))
        poppler = found.group(1) if found else ""
    return OcrTools(tesseract, version, languages, pdftoppm, poppler)
