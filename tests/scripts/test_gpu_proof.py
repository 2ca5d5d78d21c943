"""The CPU-side parts of scripts/gpu-proof-pack.sh and scripts/gpu-proof.sh: argument checks, the
trimming of llama.cpp's source, and splitting a file into pieces and joining them with a sha256 check."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
PACK, PROOF = SCRIPTS / "gpu-proof-pack.sh", SCRIPTS / "gpu-proof.sh"


def sh(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", *map(str, args)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "script, args, message",
    [
        (PACK, ["out", "--piece-mb", "0"], "positive integers"),
        (PACK, ["out", "--piece-mb", "60", "--call-mb", "50"], "must not exceed"),
        (PACK, ["out", "--bogus"], "unknown argument"),
        (PACK, ["out", "--sdist", "/nonexistent.tar.gz"], "no file"),
        (PACK, ["trim", "only-one"], "usage: trim"),
        (PROOF, ["run", "--out", "o"], "--pack DIR"),
        (PROOF, ["build", "--pack", ".", "--out", "o", "--arch", "9.0"], "compute capability"),
        (PROOF, ["run", "--pack", ".", "--out", "o", "--slots", "x"], "positive integers"),
        (PROOF, ["run", "--pack", ".", "--out", "o", "--requests", "0"], "positive integers"),
        (PROOF, ["run", "--pack", ".", "--out", "o", "--rounds", "-1"], "positive integers"),
        (PROOF, ["managed", "--pack", ".", "--out", "o", "--search-processes", "0"], "positive integers"),
        (PROOF, ["run", "--pack", ".", "--out", "o", "--bench-sampling", "ignore_eos"], "JSON object"),
        (PROOF, ["run", "--pack", ".", "--out", "o", "--engine-cpus", "0-3;rm"], "CPU list"),
        (PROOF, ["run", "--pack", ".", "--out", "o", "--engine-cpus", "all"], "CPU list"),
        (PROOF, ["build", "--pack", ".", "--out", "o", "--cmake-args", "-DX=1; rm -rf /"], "-DNAME=VALUE"),
        (PROOF, ["build", "--pack", ".", "--out", "o", "--cmake-args", "--fresh"], "-DNAME=VALUE"),
    ],
)
def test_bad_arguments_are_refused_with_a_reason(tmp_path, script, args, message):
    r = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and message in r.stderr


def test_no_arguments_print_the_usage():
    for script in (PACK, PROOF):
        r = sh(script)
        assert r.returncode == 2 and "usage:" in r.stdout


def test_trim_drops_what_the_build_does_not_need(tmp_path):
    src = tmp_path / "llama_cpp_python-0.3.36"
    keep = ["CMakeLists.txt", "ggml/src/ggml.c", "src/llama.cpp", "tools/server/server.cpp", "common/common.cpp"]
    drop = ["models/ggml-vocab.gguf", "docs/build.md", "media/logo.png", "benches/b.txt", "tests/t.cpp",
            "examples/e.cpp", "pocs/p.cpp", "gguf-py/gguf/__init__.py"]  # fmt: skip
    for rel in keep + drop:
        f = src / "vendor/llama.cpp" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(rel)
    (src / "llama_cpp").mkdir()
    (src / "llama_cpp/llama_cpp.py").write_text("# bindings")
    r = sh(PACK, "trim", src, tmp_path / "out/llama.cpp.tar.gz")
    assert r.returncode == 0, r.stderr
    with tarfile.open(tmp_path / "out/llama.cpp.tar.gz") as t:
        names = {n.removeprefix("./") for n in t.getnames()}
    assert {f"llama.cpp/{rel}" for rel in keep} <= names
    assert "llama_cpp/llama_cpp.py" in names
    assert not [n for n in names for d in ("models", "docs", "media", "benches", "tests", "examples", "pocs", "gguf-py")
                if n.startswith(f"llama.cpp/{d}")]  # fmt: skip


def test_trim_needs_an_unpacked_sdist(tmp_path):
    r = sh(PACK, "trim", tmp_path, tmp_path / "x.tar.gz")
    assert r.returncode == 2 and "vendor/llama.cpp not found" in r.stderr


def test_split_then_assemble_gives_the_same_bytes_and_checks_them(tmp_path):
    whole = tmp_path / "model.gguf"
    whole.write_bytes(os.urandom(2 * 1024 * 1024 + 123))
    pieces = tmp_path / "pieces"
    assert sh(PACK, "split", whole, pieces, "1").returncode == 0
    assert sorted(p.name for p in pieces.iterdir()) == [
        "SHA256SUMS", "model.gguf.part-00", "model.gguf.part-01", "model.gguf.part-02"]  # fmt: skip
    assert max(p.stat().st_size for p in pieces.glob("*.part-*")) == 1024 * 1024
    r = sh(PROOF, "assemble-only", pieces, tmp_path / "joined")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "joined/model.gguf").read_bytes() == whole.read_bytes()

    damaged = bytearray((pieces / "model.gguf.part-01").read_bytes())
    damaged[10] ^= 0xFF
    (pieces / "model.gguf.part-01").write_bytes(bytes(damaged))
    r = sh(PROOF, "assemble-only", pieces, tmp_path / "joined2")
    assert r.returncode == 2 and "sha256 mismatch" in r.stderr


def test_assemble_names_a_missing_piece(tmp_path):
    pieces = tmp_path / "pieces"
    pieces.mkdir()
    (pieces / "SHA256SUMS").write_text("0" * 64 + "  model.gguf\n")
    r = sh(PROOF, "assemble-only", pieces, tmp_path / "out")
    assert r.returncode == 2 and "no pieces of model.gguf" in r.stderr


def test_a_build_that_cannot_run_leaves_a_mark_for_the_run_stage(tmp_path):
    """`run` waits for the build started beside it; a build that stops must say so, or `run` would wait forever."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if shutil.which("nvidia-smi", path=env["PATH"]):
        pytest.skip("this machine has an NVIDIA driver")
    r = subprocess.run(["bash", str(PROOF), "build", "--pack", str(tmp_path), "--out", str(tmp_path / "out"),
                        "--work", str(tmp_path / "work")], capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert r.returncode == 2 and "nvidia-smi" in r.stderr
    assert (tmp_path / "work/build/.failed").exists() and not (tmp_path / "work/build/.done").exists()


def test_llama_cpu_flags_leave_amx_out_only_where_the_cpu_lists_it():
    """The CUDA build of gpu-proof.sh and the CPU build of setup.sh take the same CPU flags."""
    flags = Path("/proc/cpuinfo").read_text().split("\nflags", 1)[-1].split("\n", 1)[0].split()
    r = subprocess.run(["bash", "-c", f"source {SCRIPTS}/llama-cpu-flags.sh; llama_cpu_flags"],
                       capture_output=True, text=True, timeout=30)  # fmt: skip
    assert r.returncode == 0, r.stderr
    if "amx_tile" in flags:
        assert {"-DGGML_NATIVE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_TILE=OFF"} <= set(r.stdout.split())
        assert ("-DGGML_AVX2=ON" in r.stdout) == ("avx2" in flags)
    else:
        assert r.stdout.strip() == ""
