#!/usr/bin/env bash
# Prepare what `scripts/gpu-proof.sh` needs on a GPU machine that has no package registry:
#   src/llama.cpp.tar.gz   llama.cpp's source as vendored by the installed llama-cpp-python, trimmed
#                          (models, docs, media, benches, tests, examples, pocs, gguf-py dropped) plus
#                          the llama_cpp Python package of the same version
#   whl/*.whl              Python 3.12 wheels of the product's runtime needs the GPU image lacks
#   pieces/NAME.part-NN    the packaged GGUFs (--models, by default gemma-3-270m; each as NAME.gguf) and the
#                          MiniLM model directory in pieces of --piece-mb,
#   pieces/SHA256SUMS      with the sha256 of each whole file (checked after reassembly)
#   data.tar.gz            a collection `docs` ingested here with the product (this repo's docs/ and README)
#   whl/local_rag_assistant-*.whl  the product itself (its entry points register `bench`, `ingest`...)
#   calls/call-N/          the same files binned for transfers of at most --call-mb each
#
# usage: gpu-proof-pack.sh OUT_DIR [--piece-mb N] [--call-mb N] [--python PY] [--sdist FILE] [--models A,B]
#        gpu-proof-pack.sh trim SRC_DIR TARBALL       (the trimming step alone)
#        gpu-proof-pack.sh split FILE DIR [MB]        (the split step alone; gpu-proof.sh assemble joins)
set -euo pipefail

TRIM_DIRS=(models docs media benches tests examples pocs gguf-py)
# Runtime needs of the product missing from the GPU image's Python (3.12), pinned to what runs here.
WHEELS=(litestar litestar-htmx msgspec multidict multipart polyfactory faker rich-click sqlmodel SQLAlchemy
        greenlet pydantic pydantic-core pydantic-settings python-dotenv annotated-types typing-inspection
        openai jiter distro sniffio uvicorn faiss-cpu docutils diskcache
        mcp httpx-sse sse-starlette starlette python-multipart pyjwt jsonschema jsonschema-specifications
        referencing rpds-py alembic Mako onnx ml-dtypes protobuf
        mcp-types httpx2 httpcore2 truststore opentelemetry-api cryptography cffi pycparser)

die() { echo "gpu-proof-pack: $*" >&2; exit 2; }

trim() {  # trim SRC_DIR TARBALL: SRC_DIR holds vendor/llama.cpp (an unpacked llama-cpp-python sdist)
  local src=$1 tarball=$2
  [[ -d $src/vendor/llama.cpp ]] || die "trim: $src/vendor/llama.cpp not found (unpack the llama-cpp-python sdist)"
  local stage; stage=$(mktemp -d)
  cp -a "$src/vendor/llama.cpp" "$stage/llama.cpp"
  for d in "${TRIM_DIRS[@]}"; do rm -rf "${stage:?}/llama.cpp/$d"; done
  [[ -d $src/llama_cpp ]] && cp -a "$src/llama_cpp" "$stage/llama_cpp"
  mkdir -p "$(dirname "$tarball")"
  tar -C "$stage" -czf "$tarball" .
  rm -rf "$stage"
}

split_file() {  # split FILE DIR [MB]: DIR/NAME.part-00.. and the whole file's sha256 in DIR/SHA256SUMS
  local file=$1 dir=$2 mb=${3:-50}
  [[ -f $file ]] || die "split: no file $file"
  [[ $mb =~ ^[1-9][0-9]*$ ]] || die "split: MB must be a positive integer, not '$mb'"
  mkdir -p "$dir"
  local name; name=$(basename "$file")
  split -b "${mb}M" -d -a 2 "$file" "$dir/$name.part-"
  (cd "$(dirname "$file")" && sha256sum "$name") >>"$dir/SHA256SUMS"
}

case ${1:-} in
  trim) [[ $# -eq 3 ]] || die "usage: trim SRC_DIR TARBALL"; trim "$2" "$3"; exit 0 ;;
  split) [[ $# -ge 3 && $# -le 4 ]] || die "usage: split FILE DIR [MB]"; split_file "$2" "$3" "${4:-50}"; exit 0 ;;
  ""|-h|--help) sed -n '2,17p' "$0"; exit 2 ;;
esac

OUT=$1; shift
PIECE_MB=50; CALL_MB=55; PY=${PYTHON:-python3}; SDIST=; MODELS=gemma-3-270m
while [[ $# -gt 0 ]]; do
  case $1 in
    --piece-mb) PIECE_MB=${2:?}; shift 2 ;;
    --call-mb) CALL_MB=${2:?}; shift 2 ;;
    --python) PY=${2:?}; shift 2 ;;
    --sdist) SDIST=${2:?}; [[ -f $SDIST ]] || die "--sdist: no file $SDIST"; shift 2 ;;
    --models) MODELS=${2:?}; [[ $MODELS =~ ^[a-z0-9.,-]+$ ]] || die "--models takes packaged model names, comma-separated"; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ $PIECE_MB =~ ^[1-9][0-9]*$ && $CALL_MB =~ ^[1-9][0-9]*$ ]] || die "--piece-mb and --call-mb take positive integers"
(( PIECE_MB <= CALL_MB )) || die "--piece-mb must not exceed --call-mb"
REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"/{src,whl,pieces,calls}
OUT=$(cd "$OUT" && pwd)

echo "== llama.cpp source (the installed llama-cpp-python's version)"
LCP_VERSION=$("$PY" -c 'import importlib.metadata as m; print(m.version("llama_cpp_python"))')
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# --no-binary for this one package only: `:all:` would also build its build tools from source.
[[ -n $SDIST ]] || "$PY" -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$LCP_VERSION" -d "$tmp"
tar -C "$tmp" -xzf "${SDIST:-$(ls "$tmp"/llama_cpp_python-*.tar.gz)}"
trim "$(ls -d "$tmp"/llama_cpp_python-*/)" "$OUT/src/llama.cpp.tar.gz"
echo "$LCP_VERSION" >"$OUT/src/VERSION"

echo "== Python 3.12 wheels"
specs=()
for w in "${WHEELS[@]}"; do
  v=$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$w" 2>/dev/null) || { echo "  (not installed here: $w)"; continue; }
  specs+=("$w==$v")
done
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$OUT/whl" "${specs[@]}"

echo "== models in pieces of ${PIECE_MB} MB"
rm -f "$OUT/pieces/"*
for name in ${MODELS//,/ }; do
  GGUF=$("$PY" -c 'import sys; from assistant.backends.llamacpp import packaged_model_path; print(packaged_model_path(sys.argv[1]))' "$name")
  cp "$GGUF" "$tmp/$name.gguf"
  split_file "$tmp/$name.gguf" "$OUT/pieces" "$PIECE_MB"
  rm -f "$tmp/$name.gguf"
done
MINILM=$("$PY" -c 'from indexes.embedding.embedder import default_model_path; print(default_model_path())')
tar -C "$MINILM" -cf "$tmp/minilm.tar" .
split_file "$tmp/minilm.tar" "$OUT/pieces" "$PIECE_MB"

echo "== a collection ingested here (docs/ and README.md)"
rm -rf "$OUT/data" "$tmp/docs"; mkdir -p "$tmp/docs"
cp -r "$REPO/docs" "$tmp/docs/docs"; cp "$REPO/README.md" "$tmp/docs/"
ASSISTANT_DATA_DIR="$OUT/data" HF_HUB_OFFLINE=1 "$PY" -m assistant.cli ingest "$tmp/docs" --collection docs >/dev/null
tar -C "$OUT" -czf "$OUT/src/data.tar.gz" data
"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$OUT/whl" "$REPO"
cp "$REPO/scripts/gpu-proof.sh" "$REPO/scripts/llama-cpu-flags.sh" "$OUT/src/"

echo "== binned for transfers of at most ${CALL_MB} MB"
rm -rf "$OUT/calls"; mkdir -p "$OUT/calls"
n=1; used=0; limit=$((CALL_MB * 1024 * 1024))
while IFS= read -r f; do
  size=$(stat -c %s "$f")
  if (( used > 0 && used + size > limit )); then n=$((n + 1)); used=0; fi
  mkdir -p "$OUT/calls/call-$n"
  ln "$f" "$OUT/calls/call-$n/$(basename "$f")" 2>/dev/null || cp "$f" "$OUT/calls/call-$n/"
  used=$((used + size))
done < <(for d in src whl pieces; do find "$OUT/$d" -type f ! -name SHA256SUMS | sort; done)  # the source first: it builds while the rest travels
cp "$OUT/pieces/SHA256SUMS" "$OUT/calls/call-$n/"
for d in "$OUT"/calls/call-*; do echo "  $(basename "$d"): $(du -sh "$d" | cut -f1)"; done
