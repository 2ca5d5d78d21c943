"""`assistant engine build llama-server`: the CMake flags, the build records, the source, the refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from assistant.engines.cpu_flags import cpu_flags
from assistant.engines.cuda import BuildRefused, Toolkit, find_toolkit
from assistant.engines.llama_server import (BINARY, builds, cmake_flags, find_binary, llama_cpp_tree,
                                            preferred_build, source_tree)
from tests.conftest import REPO
from tests.support.llama_engine import write_build

AMX_CPU = "processor : 0\nflags : fpu sse avx avx2 fma f16c bmi2 avx512f avx512_bf16 amx_tile amx_int8\n"


def test_cpus_listing_amx_build_without_it_naming_their_instruction_sets():
    flags = cpu_flags(AMX_CPU)
    assert flags[:4] == ["-DGGML_NATIVE=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"]
    assert "-DGGML_AVX2=ON" in flags and "-DGGML_AVX512_BF16=ON" in flags and "-DGGML_AVX_VNNI=OFF" in flags
    assert cpu_flags("flags : fpu avx avx2\n") == [], "no AMX: the native build"


def test_the_shell_script_and_python_agree_on_this_cpu():
    shell = subprocess.run(["bash", "-c", "source scripts/llama-cpu-flags.sh; llama_cpu_flags"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert shell == cpu_flags()


def test_cmake_flags_build_the_server_alone_static_and_with_cuda_for_the_archs():
    cpu = cmake_flags([], None, cpuinfo="")
    assert "-DLLAMA_BUILD_SERVER=ON" in cpu and "-DBUILD_SHARED_LIBS=OFF" in cpu and not any("CUDA" in f for f in cpu)
    gpu = cmake_flags([70, 80], Toolkit("/opt/cuda-12.4/bin/nvcc", (12, 4)), cpuinfo="")
    assert "-DGGML_CUDA=ON" in gpu and "-DCMAKE_CUDA_ARCHITECTURES=70;80" in gpu
    assert "-DCMAKE_CUDA_COMPILER=/opt/cuda-12.4/bin/nvcc" in gpu


def test_the_backend_runs_a_cuda_build_before_a_cpu_one_and_skips_unfinished_ones(tmp_path):
    write_build(tmp_path, "cpu", [], "2026-12-03T10:00:00")
    write_build(tmp_path, "cuda-sm70", [70], "2026-12-01T10:00:00")
    write_build(tmp_path, "cuda-sm90", [90], "2026-12-02T10:00:00", binary=False)
    assert [b.variant for b in builds(tmp_path)] == ["cpu", "cuda-sm70"], "newest first, no binary no build"
    assert preferred_build(tmp_path).variant == "cuda-sm70"
    binary, build = find_binary("", tmp_path)
    assert build.variant == "cuda-sm70" and binary == build.binary
    given, known = find_binary(str(tmp_path / "elsewhere" / BINARY), tmp_path)
    assert given == tmp_path / "elsewhere" / BINARY and known is None, "a configured binary wins"


def test_the_source_is_found_in_an_sdist_or_a_checkout_and_refused_elsewhere(tmp_path):
    tree = tmp_path / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"
    (tree / "tools" / "server").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("project(llama.cpp)\n")
    assert llama_cpp_tree(tmp_path) == tree and llama_cpp_tree(tree) == tree
    assert source_tree("0.3.36", str(tmp_path), print) == tree
    (tmp_path / "other" / "docs").mkdir(parents=True)
    with pytest.raises(BuildRefused, match="holds no llama.cpp source"):
        source_tree("0.3.36", str(tmp_path / "other"), print)


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assistant.cli", "engine", *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, **(env or {})}, timeout=120)  # fmt: skip


def test_the_build_command_refuses_bad_input_before_building_anything(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    done = cli("build", "llama-server", "--cuda-arch", "abc", env=env)
    assert done.returncode == 2 and "--cuda-arch takes a compute capability" in done.stderr
    done = cli("build", "llama-server", "--cpu", "--jobs", "0", env=env)
    assert done.returncode == 2 and "--jobs takes a positive number" in done.stderr
    done = cli("build", "llama-server", "--cuda-arch", "90", "--nvcc", str(tmp_path / "nvcc"), env=env)
    assert done.returncode == 2 and "is not a working nvcc" in done.stderr
    done = cli("build", "llama-server", "--cpu", "--source", str(tmp_path / "none"), env=env)
    assert done.returncode == 2 and "holds no llama.cpp source" in done.stderr
    assert not (tmp_path / "assistant" / "engines").exists() or not any((tmp_path / "assistant" / "engines").glob("*/build.json"))


def test_the_build_command_refuses_cuda_13_for_v100s_with_this_machines_nvcc(tmp_path):
    toolkit = find_toolkit()
    if toolkit is None or toolkit.version[0] < 13:
        pytest.skip(f"needs a CUDA 13 nvcc to be refused ({toolkit.label if toolkit else 'no nvcc here'})")
    done = cli("build", "llama-server", "--cuda-arch", "70", env={"XDG_CACHE_HOME": str(tmp_path)})
    assert done.returncode == 2 and f"CUDA {toolkit.version[0]}.{toolkit.version[1]}" in done.stderr
    assert "cannot build for sm_70" in done.stderr and "Install CUDA 12.8" in done.stderr


def test_engine_list_says_what_the_backend_runs(tmp_path):
    write_build(tmp_path / "assistant" / "engines", "cpu", [], "2026-12-03T10:00:00")
    done = cli("list", "--json", env={"XDG_CACHE_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [b["variant"] for b in listed["builds"]] == ["cpu"] and listed["runs"].endswith(f"bin/{BINARY}")
