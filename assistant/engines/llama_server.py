"""llama.cpp's `llama-server`, built from the llama.cpp source of the installed llama-cpp-python.

`assistant engine build llama-server` configures and builds that source with CMake: for the CPU, or with
CUDA for the given (or found) GPU architectures, refusing a toolkit that cannot build for them
(engines/cuda.py). Each build lives in the user's cache, one folder per llama.cpp version and variant,
with `bin/llama-server`, its log and `build.json` (what was built, with which flags and toolkit); the
`llama-server` backend runs the newest one (a CUDA build before a CPU one) unless told a binary.

The source is the llama-cpp-python sdist of the installed version, fetched by pip (its cache or the
package index, as at install time) and unpacked once; `--source` takes an unpacked sdist, a llama.cpp
checkout or a .tar.gz of either, for machines without an index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

from indexes.user_cache import user_cache_dir

from assistant.engines.cpu_flags import cpu_flags
from assistant.engines.cuda import BuildRefused, Toolkit, check_archs

BINARY = "llama-server"
BASE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF",
]  # fmt: skip


@dataclass
class Build:
    """One built llama-server: what `build.json` beside it records."""

    folder: str
    llama_cpp_python: str
    variant: str  # "cpu" or "cuda-sm70[-sm80...]"
    cuda_archs: list[int] = field(default_factory=list)
    cuda: str | None = None  # the toolkit's version, "12.4"
    nvcc: str | None = None
    cmake_flags: list[str] = field(default_factory=list)
    seconds: float = 0.0
    built_at: str = ""

    @property
    def binary(self) -> Path:
        return Path(self.folder) / "bin" / BINARY

    def to_dict(self) -> dict:
        return {**asdict(self), "binary": str(self.binary)}


def engines_dir() -> Path:
    """Where builds live: the user's cache dir (XDG), beside the joined packaged models."""
    return user_cache_dir() / "engines"


def llama_cpp_python_version(source: str | None = None) -> str:
    """The installed llama-cpp-python's version: it names the source to fetch and the build. With a
    `source` of its own, a machine without llama-cpp-python installed builds it as version "source"."""
    try:
        return version("llama_cpp_python")
    except PackageNotFoundError:
        if source:
            return "source"
        raise BuildRefused("llama-cpp-python is not installed: its version names the llama.cpp source to build; "
                           "pass --source with a llama.cpp checkout or sdist") from None  # fmt: skip


def variant_name(archs: list[int]) -> str:
    return "cuda-" + "-".join(f"sm{a}" for a in archs) if archs else "cpu"


def builds(root: Path | None = None) -> list[Build]:
    """The finished builds (their binary present), newest first."""
    found: list[Build] = []
    for record in (root or engines_dir()).glob(f"{BINARY}-*/build.json"):
        try:
            build = Build(**{k: v for k, v in json.loads(record.read_text()).items() if k != "binary"})
        except (OSError, ValueError, TypeError):
            continue
        if build.binary.is_file():
            found.append(build)
    return sorted(found, key=lambda b: b.built_at, reverse=True)


def preferred_build(root: Path | None = None) -> Build | None:
    """The build the backend runs: a CUDA one before a CPU one, the newest of each."""
    done = builds(root)
    return next((b for b in done if b.cuda_archs), None) or next(iter(done), None)


def find_binary(configured: str = "", root: Path | None = None) -> tuple[Path | None, Build | None]:
    """The llama-server to run and its build record: the configured path, else the preferred build, else
    llama-server on PATH (no record); (None, None) when there is none."""
    if configured:
        path = Path(configured).expanduser()
        record = next((b for b in builds(root) if b.binary == path), None)
        return path, record
    build = preferred_build(root)
    if build is not None:
        return build.binary, build
    on_path = shutil.which(BINARY)
    return (Path(on_path), None) if on_path else (None, None)


# --- the source -------------------------------------------------------------------------------------


def llama_cpp_tree(folder: Path) -> Path | None:
    """The llama.cpp tree in an unpacked sdist (vendor/llama.cpp), a checkout, or one folder below."""
    for candidate in (folder, folder / "vendor" / "llama.cpp", *sorted(folder.glob("*/")), *sorted(folder.glob("*/vendor/llama.cpp"))):
        if (candidate / "CMakeLists.txt").is_file() and (candidate / "tools" / "server").is_dir():
            return candidate
    return None


def unpack(archive: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")  # the data filter refuses links and paths out of dest
    return dest


def source_tree(lcp_version: str, given: str | None, say: Callable[[str], None]) -> Path:
    """The llama.cpp source to build: `given` (a folder or a .tar.gz), else the installed version's sdist."""
    if given:
        path = Path(given).expanduser()
        if path.is_file():
            path = unpack(path, Path(tempfile.mkdtemp(prefix="llama-src-")))
        tree = llama_cpp_tree(path) if path.is_dir() else None
        if tree is None:
            raise BuildRefused(f"{given} holds no llama.cpp source (a CMakeLists.txt beside tools/server, or vendor/llama.cpp)")
        return tree
    cached = engines_dir() / "src" / f"llama_cpp_python-{lcp_version}"
    tree = llama_cpp_tree(cached) if cached.is_dir() else None
    if tree is not None:
        return tree
    say(f"fetching the llama-cpp-python {lcp_version} source with pip")
    with tempfile.TemporaryDirectory(prefix="llama-sdist-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
               "--no-binary", "llama-cpp-python", f"llama-cpp-python=={lcp_version}", "-d", tmp]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True)
        archives = sorted(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        if done.returncode != 0 or not archives:
            raise BuildRefused(
                f"pip could not fetch the llama-cpp-python {lcp_version} source ({done.stderr.strip()[-300:]}); "
                "on a machine without a package index pass --source with the sdist (.tar.gz) or a llama.cpp checkout"
            )
        shutil.rmtree(cached, ignore_errors=True)
        unpack(archives[0], cached.parent / f".{cached.name}.partial")
        os.replace(cached.parent / f".{cached.name}.partial", cached)
    tree = llama_cpp_tree(cached)
    if tree is None:
        raise BuildRefused(f"the llama-cpp-python {lcp_version} sdist holds no llama.cpp source")
    return tree


# --- the build --------------------------------------------------------------------------------------


def cmake_flags(archs: list[int], toolkit: Toolkit | None, cpuinfo: str | None = None) -> list[str]:
    """The CMake configuration: the server alone, static, for the CPU or with CUDA for `archs`."""
    flags = list(BASE_FLAGS) + cpu_flags(cpuinfo)
    if archs:
        assert toolkit is not None
        flags += ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={';'.join(str(a) for a in archs)}",
                  f"-DCMAKE_CUDA_COMPILER={toolkit.nvcc}"]  # fmt: skip
    return flags


def build_llama_server(
    archs: list[int], toolkit: Toolkit | None, jobs: int, source: str | None = None,
    root: Path | None = None, say: Callable[[str], None] = print,
) -> Build:
    """Configure and build llama-server into its cache folder; BuildRefused (with the log's end) on failure."""
    if archs:
        check_archs(toolkit, archs)
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise BuildRefused(f"{tool} is not installed: the build needs cmake and a C++ compiler (apt install cmake g++)")
    lcp = llama_cpp_python_version(source)
    tree = source_tree(lcp, source, say)
    variant = variant_name(archs)
    folder = (root or engines_dir()) / f"{BINARY}-{lcp}-{variant}"
    work = folder / "build"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "build.json").unlink(missing_ok=True)  # a failed rebuild leaves no record of a good one
    flags = cmake_flags(archs, toolkit)
    if shutil.which("ninja"):
        flags = ["-G", "Ninja", *flags]
    log_path = folder / "build.log"
    started = time.monotonic()
    say(f"building {BINARY} ({variant}, llama-cpp-python {lcp}) with {jobs} jobs; log: {log_path}")
    with log_path.open("w") as log:
        for step in (["cmake", "-S", str(tree), "-B", str(work), *flags],
                     ["cmake", "--build", str(work), "--target", BINARY, "-j", str(jobs)]):  # fmt: skip
            log.write("$ " + " ".join(step) + "\n")
            log.flush()
            if subprocess.run(step, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
                tail = log_path.read_text(errors="replace").splitlines()[-15:]
                raise BuildRefused(f"the build failed ({' '.join(step[:3])}): see {log_path}\n" + "\n".join(tail))
    (folder / "bin").mkdir(exist_ok=True)
    built = next(iter(sorted(work.glob(f"**/bin/{BINARY}"))), None)
    if built is None:
        raise BuildRefused(f"the build finished without a {BINARY} binary: see {log_path}")
    shutil.copy2(built, folder / "bin" / BINARY)
    record = Build(
        folder=str(folder), llama_cpp_python=lcp, variant=variant, cuda_archs=archs,
        cuda=f"{toolkit.version[0]}.{toolkit.version[1]}" if archs and toolkit else None,
        nvcc=toolkit.nvcc if archs and toolkit else None, cmake_flags=flags,
        seconds=round(time.monotonic() - started, 1), built_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )  # fmt: skip
    (folder / "build.json").write_text(json.dumps(record.to_dict(), indent=2))
    return record
