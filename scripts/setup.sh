#!/usr/bin/env bash
# Create .venv in the repository root and install the product into it (idempotent).
#   scripts/setup.sh            the product
#   scripts/setup.sh test       the product and the test tools (pytest, Playwright, import-linter, Chromium)
set -euo pipefail
cd "$(dirname "$0")/.."

extras="gpu"
[[ "${1:-}" == "test" ]] && extras="gpu,test"

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: Python >= 3.11 is needed ($PYTHON is $("$PYTHON" --version 2>&1))" >&2
    exit 1
fi

# llama.cpp's native build (-march=native) compiles its AMX kernels on CPUs that list AMX, and in some
# virtual machines those CPUs list AMX while the first AMX instruction crashes the process. There the
# native instruction sets are named one by one instead, AMX left out (a few percent of prompt speed on
# bare metal; nothing for answers from GPUs).
llama_cmake_args() {
    local flags
    flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
    if [[ " $flags " != *" amx_tile "* ]]; then
        echo "-DLLAVA_BUILD=OFF"
        return
    fi
    local args="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    local flag option
    for flag in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI avx512f:AVX512 \
                avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
        option=${flag#*:}
        [[ " $flags " == *" ${flag%%:*} "* ]] && args+=" -DGGML_${option}=ON" || args+=" -DGGML_${option}=OFF"
    done
    echo "$args"
}

# Re-install only when the dependencies or the extras changed.
stamp=".venv/.installed-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)-${extras//,/-}"
if [[ ! -f "$stamp" ]]; then
    [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
    # torch==2.13.0 takes the CPU wheel; llama.cpp is built without the multimodal library (not needed).
    CMAKE_ARGS="${CMAKE_ARGS:-$(llama_cmake_args)}" .venv/bin/pip install --disable-pip-version-check -q \
        "torch==2.13.0" -e ".[${extras}]"
    # unstructured's PDF extra pulls a torchvision that cannot load beside this torch and breaks
    # transformers' imports; the fast PDF strategy never needs it.
    .venv/bin/pip uninstall -y -q torchvision 2>/dev/null || true
    rm -f .venv/.installed-*
    touch "$stamp"
fi

if [[ "$extras" == *test* ]] && [[ ! -x /usr/bin/chromium ]]; then
    if [[ $(id -u) == 0 ]]; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
            || echo "setup: could not install chromium; the browser tests will be skipped" >&2
    else
        echo "setup: /usr/bin/chromium is missing (apt-get install chromium); the browser tests will be skipped" >&2
    fi
fi
# The PostgreSQL tests start a throwaway cluster of Debian's postgresql-15 (initdb, pg_ctl).
if [[ "$extras" == *test* ]] && [[ ! -x /usr/lib/postgresql/15/bin/initdb ]]; then
    if [[ $(id -u) == 0 ]]; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null) \
            || echo "setup: could not install postgresql-15; the PostgreSQL tests will be skipped" >&2
    else
        echo "setup: PostgreSQL 15 is missing (apt-get install postgresql-15); its tests will be skipped" >&2
    fi
fi
echo "setup: .venv is ready ($(.venv/bin/python --version))"
