#!/usr/bin/env bash
# The GPU path on a machine with an NVIDIA GPU and no package registry, from what
# scripts/gpu-proof-pack.sh prepared (PACK: llama.cpp.tar.gz, *.whl, *.part-NN + SHA256SUMS, data.tar.gz).
#
#   build     llama.cpp (shared libraries + llama-server) with CUDA for this GPU's compute capability
#   install   the carried wheels (the product's among them) into WORK/site
#   assemble  join the model pieces and check their sha256
#   run       llama-server (-np 64, every layer on the GPU, continuous batching, ctx 64 x 2048);
#             `assistant bench serve --concurrency 1,4,16,64` against it, the engine's /slots watched;
#             `assistant status --json` and `doctor --json`; the in-process llama.cpp on the GPU
#             (n_gpu_layers=-1) against the same GGUF on the CPU; everything under OUT
#   all       the four in order (the default)
#   engine    the product's own `assistant engine build llama-server` from the pack's source (after install)
#   managed   for each --models GGUF: `assistant ask` and --runs x `bench serve --concurrency 1,4,16,64` through
#             the llama-server backend (the assistant starts and watches the engine), `status --json` of a
#             running `assistant serve` (the engine's slots), `doctor --json`; everything under OUT/managed-pN.tar.gz
#             and OUT/managed-pN-summary.json, N the search processes (--search-processes N sets
#             retrieval.search_processes; 0 without it), so runs with and without them are kept apart;
#             --engine-cpus A-B: the engine's threads on those CPUs (its --cpu-range), ours on the rest
#   bursts    `assistant bench retrieval --bursts 1,4,16,64` on 20,000 synthetic chunks, searches taking turns in the
#             server's process and then with --search-processes N (default 8) worker processes: OUT/bursts-pN.json
#
# usage: gpu-proof.sh [STAGE] --pack DIR --out DIR [--work DIR] [--arch NN] [--jobs N] [--slots N]
#                     [--requests N] [--rounds N] [--max-tokens N] [--engine-args "FLAGS"] [--bench-sampling JSON]
#                     [--engine-cpus LIST] [--cmake-args "FLAGS"] [--models A,B] [--runs N] [--search-processes N]
#        (bench serve's requests, rounds and answer length; more llama-server flags; what both sides of the bench send
#         the engine, by default no prompt cache and every answer to max tokens: see docs/benchmarks.md;
#         --engine-cpus pins llama-server to those CPUs (taskset syntax, e.g. 0-7) and the server and the bench to the rest;
#         --cmake-args adds flags to llama.cpp's CMake configuration, e.g. "-DGGML_CUDA_FA=OFF")
#        gpu-proof.sh assemble-only PIECES_DIR DEST_DIR   (join + sha256 check, nothing else)
set -euo pipefail

die() { echo "gpu-proof: $*" >&2; exit 2; }
# shellcheck source=llama-cpu-flags.sh
source "$(dirname "${BASH_SOURCE[0]}")/llama-cpu-flags.sh"

assemble() {  # assemble PIECES DEST: every NAME in PIECES/SHA256SUMS joined from NAME.part-* and checked
  local pieces=$1 dest=$2
  [[ -f $pieces/SHA256SUMS ]] || die "assemble: $pieces/SHA256SUMS not found"
  mkdir -p "$dest"
  while read -r _ name; do
    compgen -G "$pieces/$name.part-*" >/dev/null || die "assemble: no pieces of $name in $pieces"
    cat $(ls "$pieces/$name".part-* | sort) >"$dest/$name"
  done <"$pieces/SHA256SUMS"
  (cd "$dest" && sha256sum --quiet -c "$pieces/SHA256SUMS") || die "assemble: sha256 mismatch"
}

STAGE=all
case ${1:-} in
  build|install|assemble|run|all|engine|managed|bursts) STAGE=$1; shift ;;
  assemble-only) [[ $# -eq 3 ]] || die "usage: assemble-only PIECES_DIR DEST_DIR"
    pieces=$(cd "$2" && pwd); assemble "$pieces" "$3"; exit 0 ;;
  ""|-h|--help) sed -n '2,24p' "$0"; exit 2 ;;
esac
PACK=""; OUT=""; WORK=/tmp/gpu-proof; ARCH=""; JOBS=$(nproc); SLOTS=64; REQUESTS=""; ROUNDS=""; MAX_TOKENS=""; ENGINE_ARGS=""; ENGINE_CPUS=""; CMAKE_ARGS=""; MODELS=gemma-3-270m; RUNS=3; SEARCH_PROCESSES=""
BENCH_SAMPLING='{"cache_prompt": false, "ignore_eos": true}'
while [[ $# -gt 0 ]]; do
  case $1 in
    --pack) PACK=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    --work) WORK=${2:?}; shift 2 ;;
    --arch) ARCH=${2:?}; shift 2 ;;
    --jobs) JOBS=${2:?}; shift 2 ;;
    --slots) SLOTS=${2:?}; shift 2 ;;
    --requests) REQUESTS=${2:?}; shift 2 ;;
    --rounds) ROUNDS=${2:?}; shift 2 ;;
    --max-tokens) MAX_TOKENS=${2:?}; shift 2 ;;
    --engine-args) ENGINE_ARGS=${2?}; shift 2 ;;
    --bench-sampling) BENCH_SAMPLING=${2:?}; shift 2 ;;
    --engine-cpus) ENGINE_CPUS=${2:?}; shift 2 ;;
    --cmake-args) CMAKE_ARGS=${2?}; shift 2 ;;
    --models) MODELS=${2:?}; shift 2 ;;
    --runs) RUNS=${2:?}; shift 2 ;;
    --search-processes) SEARCH_PROCESSES=${2:?}; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ -n $PACK && -d $PACK ]] || die "--pack DIR (made by gpu-proof-pack.sh) is required"
[[ -n $OUT ]] || die "--out DIR is required"
[[ -z $ARCH || $ARCH =~ ^[0-9]{2,3}$ ]] || die "--arch takes a compute capability without the dot, e.g. 70 or 90"
[[ $JOBS =~ ^[1-9][0-9]*$ && $SLOTS =~ ^[1-9][0-9]*$ && ${REQUESTS:-1} =~ ^[1-9][0-9]*$ && ${ROUNDS:-1} =~ ^[1-9][0-9]*$ \
   && ${MAX_TOKENS:-1} =~ ^[1-9][0-9]*$ && ${SEARCH_PROCESSES:-1} =~ ^[1-9][0-9]*$ ]] \
  || die "--jobs, --slots, --requests, --rounds, --max-tokens and --search-processes take positive integers"
[[ -z $CMAKE_ARGS || $CMAKE_ARGS =~ ^(-D[A-Za-z0-9_]+(:[A-Z]+)?=[^[:space:]]*[[:space:]]*)+$ ]] \
  || die "--cmake-args takes -DNAME=VALUE flags only"
[[ -z $ENGINE_CPUS || $ENGINE_CPUS =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] \
  || die "--engine-cpus takes a CPU list such as 0-7 or 0-3,8-11"
[[ $BENCH_SAMPLING == \{*\} ]] || die "--bench-sampling takes a JSON object, e.g. '{\"ignore_eos\": true}'"
PACK=$(cd "$PACK" && pwd); mkdir -p "$OUT" "$WORK"; OUT=$(cd "$OUT" && pwd)
BUILD=$WORK/build; SITE=$WORK/site; PY=${PYTHON:-python3}

build() {
  mkdir -p "$BUILD"; rm -f "$BUILD/.done" "$BUILD/.failed"
  trap '[[ -f $BUILD/.done ]] || touch "$BUILD/.failed"' EXIT  # `run` waits for one of the two
  command -v nvidia-smi >/dev/null || die "build: no nvidia-smi (an NVIDIA GPU and driver are needed)"
  command -v nvcc >/dev/null || die "build: no nvcc (a CUDA toolkit is needed)"
  [[ -n $ARCH ]] || ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
  rm -rf "$WORK/src"; mkdir -p "$WORK/src"; tar -C "$WORK/src" -xzf "$PACK/llama.cpp.tar.gz"
  # shellcheck disable=SC2207,SC2086  # lists of flags
  local flags=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$ARCH" -DBUILD_SHARED_LIBS=ON
               -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF
               -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF $(llama_cpu_flags) $CMAKE_ARGS)
  echo "cmake ${flags[*]}" | tee "$OUT/build-flags.txt"
  local t0=$SECONDS
  cmake -S "$WORK/src/llama.cpp" -B "$BUILD" "${flags[@]}" >"$OUT/build.log" 2>&1
  cmake --build "$BUILD" --target llama-server llama -j "$JOBS" >>"$OUT/build.log" 2>&1
  echo "built in $((SECONDS - t0)) s for sm_$ARCH" | tee -a "$OUT/build-flags.txt"
  touch "$BUILD/.done"
}

install_wheels() {
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$PACK"/*.whl
  # llama-cpp-python's Python package; its native libraries are the build's (copied in by `run`).
  rm -rf "$WORK/pysrc" "$SITE/llama_cpp"; mkdir -p "$WORK/pysrc"
  tar -C "$WORK/pysrc" -xzf "$PACK/llama.cpp.tar.gz" ./llama_cpp
  cp -a "$WORK/pysrc/llama_cpp" "$SITE/llama_cpp"
}

assemble_models() {
  assemble "$PACK" "$WORK"
  rm -rf "$WORK/minilm" "$WORK/data"; mkdir -p "$WORK/minilm"
  tar -C "$WORK/minilm" -xf "$WORK/minilm.tar"
  tar -C "$WORK" -xzf "$PACK/data.tar.gz"
}

http_ok() { "$PY" -c 'import sys, httpx; sys.exit(httpx.get(sys.argv[1], timeout=2).status_code != 200)' "$1" 2>/dev/null; }

run_proof() {
  cd "$WORK"  # not a checkout: `python -m assistant.cli` must import the installed product
  until [[ -f $BUILD/.done ]]; do [[ -f $BUILD/.failed ]] && die "the build failed: see $OUT/build.log"; sleep 5; done
  mkdir -p "$SITE/llama_cpp/lib"; find "$BUILD" -name 'lib*.so*' -exec cp -a {} "$SITE/llama_cpp/lib/" \;
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} LLAMA_CPP_LIB_PATH=$BUILD/bin HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  export ASSISTANT_DATA_DIR=$WORK/data ASSISTANT_EMBEDDER_MODEL_PATH=$WORK/minilm PYTHONUNBUFFERED=1
  { nvidia-smi; nvcc --version | tail -2; "$PY" --version; lscpu; } >"$OUT/environment.txt" 2>&1 || true
  # With --engine-cpus the engine and our processes do not share cores (on 16 cores, 8 + 8 made both
  # sides slower: docs/benchmarks.md, run 8; it is for machines with many more cores than that).
  local engine_pin=() ours_pin=()
  if [[ -n $ENGINE_CPUS ]]; then
    local rest
    rest=$("$PY" -c 'import os, sys
mine = set()
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-"); mine.update(range(int(a), int(b or a) + 1))
print(",".join(str(c) for c in sorted(os.sched_getaffinity(0) - mine)))' "$ENGINE_CPUS")
    [[ -n $rest ]] || die "--engine-cpus $ENGINE_CPUS leaves no CPU for the server and the bench"
    engine_pin=(taskset -c "$ENGINE_CPUS"); ours_pin=(taskset -c "$rest")
    echo "engine on CPUs $ENGINE_CPUS; server and bench on $rest" | tee -a "$OUT/environment.txt"
  fi
  local port=8089 ctx=$((SLOTS * 2048))
  # shellcheck disable=SC2086  # ENGINE_ARGS is a list of flags
  "${engine_pin[@]}" "$BUILD/bin/llama-server" -m "$WORK/gemma-3-270m.gguf" -ngl 99 -np "$SLOTS" -c "$ctx" --cont-batching --metrics \
    --host 127.0.0.1 --port $port --alias gemma-3-270m $ENGINE_ARGS >"$OUT/llama-server.log" 2>&1 &
  ENGINE_PID=$!
  local server=$ENGINE_PID
  trap 'kill $ENGINE_PID 2>/dev/null || true' EXIT
  until http_ok "http://127.0.0.1:$port/health"; do
    kill -0 $server 2>/dev/null || die "llama-server stopped; see $OUT/llama-server.log"; sleep 0.5
  done
  export ASSISTANT_BACKEND=openai ASSISTANT_OPENAI_BASE_URL=http://127.0.0.1:$port/v1 ASSISTANT_OPENAI_PROMPT_STYLE=completion
  # The engine's slots, watched for the whole bench: the most requests it held at once, and that moment's view.
  "$PY" - "$port" "$OUT/slots-peak.json" <<'PYEOF' &
import json, sys, time, httpx
port, path = sys.argv[1], sys.argv[2]
best, seen = -1, None
while True:
    try:
        slots = httpx.get(f"http://127.0.0.1:{port}/slots", timeout=5).json()
    except Exception:
        break
    busy = sum(1 for s in slots if s.get("is_processing"))
    if busy > best:
        best, seen = busy, slots
        json.dump({"max_processing_at_once": best, "slots": len(slots), "at": time.time(),
                   "view": [{"id": s.get("id"), "is_processing": s.get("is_processing"), "n_ctx": s.get("n_ctx")} for s in seen]},
                  open(path, "w"), indent=1)
    time.sleep(0.05)
PYEOF
  local watcher=$!
  # Both sides ask the engine the same way (the bench sends the server's sampling settings on the direct
  # side too): with no prompt cache, no request finds another's prompt in a slot (with 64 slots which slot
  # serves a request depends on arrival order, and the two sides' orders differ); every answer runs to
  # max tokens, so both sides generate the same number of tokens whatever the text.
  ASSISTANT_OPENAI_SAMPLING=$BENCH_SAMPLING \
  "${ours_pin[@]}" "$PY" -m assistant.cli bench serve --collection docs --concurrency 1,4,16,64 ${REQUESTS:+--requests $REQUESTS} \
    ${ROUNDS:+--rounds $ROUNDS} ${MAX_TOKENS:+--max-tokens $MAX_TOKENS} --json --out "$OUT" \
    >"$OUT/bench-serve.stdout.json" 2>"$OUT/bench-serve.stderr.log" || echo "bench serve failed: see bench-serve.stderr.log"
  # `assistant serve` against the same engine, so that status shows the live server's backend too.
  "${ours_pin[@]}" "$PY" -m assistant.cli serve --port 8010 >"$OUT/assistant-serve.log" 2>&1 &
  local assistant=$!
  for _ in $(seq 120); do http_ok http://127.0.0.1:8010/health && break; sleep 0.5; done
  "$PY" -m assistant.cli status --json --url http://127.0.0.1:8010 >"$OUT/status.json" 2>"$OUT/status.stderr.log" || echo "status: exit $?"
  kill $assistant 2>/dev/null || true
  "$PY" -m assistant.cli doctor --json >"$OUT/doctor.json" 2>"$OUT/doctor.stderr.log" || echo "doctor: exit $?"
  "$PY" -c 'import sys, httpx; print(httpx.get(sys.argv[1]).text)' "http://127.0.0.1:$port/props" >"$OUT/llama-server-props.json" || true
  kill $server $watcher 2>/dev/null || true; wait $server 2>/dev/null || true
  # The in-process backend: the product answers with every layer on the GPU, then llama.cpp's own log
  # and tokens/s for the same GGUF with every layer on the GPU and with none.
  ASSISTANT_BACKEND=llamacpp ASSISTANT_LLAMACPP_MODEL_PATH=$WORK/gemma-3-270m.gguf ASSISTANT_LLAMACPP_N_GPU_LAYERS=-1 \
    "$PY" -X faulthandler -m assistant.cli ask --collection docs "How do I install it?" >"$OUT/inprocess-answer.txt" 2>&1 \
    && echo "(exit 0)" >>"$OUT/inprocess-answer.txt" || echo "ask: exit $?" | tee -a "$OUT/inprocess-answer.txt"
  "$PY" - "$WORK/gemma-3-270m.gguf" >"$OUT/inprocess-gpu-vs-cpu.json" 2>"$OUT/inprocess-llama.log" <<'PYEOF'
import json, sys, time
from llama_cpp import Llama
prompt = "The history of the printing press begins"
out = {}
for name, layers in (("gpu", -1), ("cpu", 0)):
    llm = Llama(model_path=sys.argv[1], n_gpu_layers=layers, n_ctx=2048, n_threads=8, verbose=True, seed=7)
    llm(prompt, max_tokens=8)  # warm-up
    t = time.perf_counter(); r = llm(prompt, max_tokens=256, temperature=0.0); dt = time.perf_counter() - t
    n = r["usage"]["completion_tokens"]
    out[name] = {"n_gpu_layers": layers, "completion_tokens": n, "seconds": round(dt, 3), "tok_s": round(n / dt, 1)}
    print(f"=== {name}: {out[name]}", file=sys.stderr, flush=True)
    del llm
out["gpu_over_cpu"] = round(out["gpu"]["tok_s"] / out["cpu"]["tok_s"], 2)
print(json.dumps(out, indent=1))
PYEOF
  grep -E "offload|CUDA0|using device" "$OUT/inprocess-llama.log" | head -20 >"$OUT/inprocess-offload.txt" || true
  echo "== results in $OUT"; ls -la "$OUT"
}

engine_build() {  # the product's build command, from the pack's source, in the background of the transfers
  mkdir -p "$WORK"; rm -f "$WORK/.engine-done" "$WORK/.engine-failed"
  cd "$WORK"  # not a checkout: from one, `python -m` would mix the checkout's modules with the installed product's
  [[ -n $ARCH ]] || ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} XDG_CACHE_HOME=$WORK/cache
  if "$PY" -m assistant.cli engine build llama-server --cuda-arch "$ARCH" --source "$PACK/llama.cpp.tar.gz" --jobs "$JOBS" \
       --json >"$WORK/engine-build.txt" 2>&1; then touch "$WORK/.engine-done"; else touch "$WORK/.engine-failed"; fi
}

managed() {  # every model through the llama-server backend: ask, bench serve x RUNS, status, doctor
  cd "$WORK"
  until [[ -f $WORK/.engine-done ]]; do [[ -f $WORK/.engine-failed ]] && die "the engine build failed: $(tail -5 "$WORK/engine-build.txt")"; sleep 5; done
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} XDG_CACHE_HOME=$WORK/cache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  export ASSISTANT_DATA_DIR=$WORK/data ASSISTANT_EMBEDDER_MODEL_PATH=$WORK/minilm PYTHONUNBUFFERED=1 ASSISTANT_BACKEND=llama-server
  [[ -z $SEARCH_PROCESSES ]] || export ASSISTANT_RETRIEVAL_SEARCH_PROCESSES=$SEARCH_PROCESSES
  # --engine-cpus: the engine's compute threads on those CPUs (llama-server's own --cpu-range), the server,
  # its search processes and the bench on the rest (taskset; the engine is their child and re-pins itself).
  local ours_pin=() engine_pin=()
  if [[ -n $ENGINE_CPUS ]]; then
    [[ $ENGINE_CPUS =~ ^[0-9]+-[0-9]+$ ]] || die "managed: --engine-cpus takes one range, e.g. 0-3"
    local rest; rest=$("$PY" -c 'import os, sys
a, b = map(int, sys.argv[1].split("-"))
print(",".join(str(c) for c in sorted(os.sched_getaffinity(0) - set(range(a, b + 1)))))' "$ENGINE_CPUS")
    [[ -n $rest ]] || die "--engine-cpus $ENGINE_CPUS leaves no CPU for the server and the bench"
    ours_pin=(taskset -c "$rest"); engine_pin=("--cpu-range" "$ENGINE_CPUS" "--cpu-range-batch" "$ENGINE_CPUS")
  fi
  # shellcheck disable=SC2086  # ENGINE_ARGS is a list of flags
  export ASSISTANT_LLAMA_SERVER_EXTRA_ARGS=$("$PY" -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "${engine_pin[@]}" $ENGINE_ARGS)
  local tag=p${SEARCH_PROCESSES:-0}
  local res=$WORK/managed-$tag; mkdir -p "$res"
  echo "search processes ${SEARCH_PROCESSES:-0}; ours on ${ours_pin[*]:-every CPU}; engine flags $ASSISTANT_LLAMA_SERVER_EXTRA_ARGS" >"$res/pinning.txt"
  { nvidia-smi; nvcc --version | tail -2; "$PY" --version; lscpu; } >"$res/environment.txt" 2>&1 || true
  cp "$WORK/engine-build.txt" "$res/"; find "$WORK/cache" -name build.log -exec cp {} "$res/engine-build.log" \; || true
  for name in ${MODELS//,/ }; do
    [[ -f $WORK/$name.gguf ]] || die "no $WORK/$name.gguf: assemble the pack's pieces first"
    local style=chat; [[ $name == gemma-3-270m ]] && style=completion  # a base model without a chat template
    rm -rf "$res/$name"-*  # this model's results of an earlier invocation
    export ASSISTANT_LLAMA_SERVER_MODEL=$WORK/$name.gguf ASSISTANT_LLAMA_SERVER_PROMPT_STYLE=$style
    "${ours_pin[@]}" "$PY" -m assistant.cli ask --collection docs "How do I install it?" >"$res/$name-ask.txt" 2>&1 || echo "ask: exit $?" >>"$res/$name-ask.txt"
    for r in $(seq "$RUNS"); do
      ASSISTANT_LLAMA_SERVER_SAMPLING=$BENCH_SAMPLING "${ours_pin[@]}" "$PY" -m assistant.cli bench serve --collection docs --concurrency 1,4,16,64 \
        ${REQUESTS:+--requests $REQUESTS} ${ROUNDS:+--rounds $ROUNDS} ${MAX_TOKENS:+--max-tokens $MAX_TOKENS} --json \
        --out "$res/$name-run$r" >"$res/$name-run$r.stdout.json" 2>"$res/$name-run$r.stderr.log" || echo "bench serve $name run $r failed"
    done
    "${ours_pin[@]}" "$PY" -m assistant.cli serve --port 8010 >"$res/$name-serve.log" 2>&1 &
    local assistant=$!
    for _ in $(seq 240); do http_ok http://127.0.0.1:8010/health && break; sleep 0.5; done
    "$PY" -m assistant.cli status --json --url http://127.0.0.1:8010 >"$res/$name-status.json" 2>&1 || echo "status: exit $?"
    kill $assistant 2>/dev/null || true; wait $assistant 2>/dev/null || true
  done
  "$PY" -m assistant.cli doctor --json >"$res/doctor.json" 2>"$res/doctor.stderr.log" || echo "doctor: exit $?"
  tar -C "$WORK" -czf "$OUT/managed-$tag.tar.gz" "managed-$tag"
  "$PY" - "$res" "${MODELS//,/ }" >"$OUT/managed-$tag-summary.json" <<'PYEOF' || echo "the summary failed: the runs are in managed-$tag.tar.gz"
import json, os, statistics, sys
from pathlib import Path
res, models = Path(sys.argv[1]), sys.argv[2].split()
out = {"search_processes": int(os.environ.get("ASSISTANT_RETRIEVAL_SEARCH_PROCESSES") or 0)}
for name in models:
    runs = [json.loads(p.read_text()) for p in sorted(res.glob(f"{name}-run*/bench-serve.json"))]
    levels = {}
    for run in runs:
        for lv in run["levels"]:
            levels.setdefault(lv["concurrency"], []).append(lv)
    out[name] = {str(c): {"runs": len(lvs), "ratio_median": statistics.median(lv["ratio"] for lv in lvs),
                          "ratios": [lv["ratio"] for lv in lvs],
                          "server_added_ttft_ms_p50_median": statistics.median(
                              [lv["server_added_ttft_ms_p50"] for lv in lvs if lv["server_added_ttft_ms_p50"] is not None] or [0]),
                          "server_added_ttft_ms_p50": [lv["server_added_ttft_ms_p50"] for lv in lvs],
                          "overhead_ms_p50": [lv["ours"].get("server_overhead_ms_p50") for lv in lvs],
                          "retrieve_ms_p50": [lv["ours"].get("retrieve_ms_p50") for lv in lvs],
                          "prompt_ms_p50": [lv["ours"].get("prompt_ms_p50") for lv in lvs],
                          "early_count_ms_p50": [lv["ours"].get("early_count_ms_p50") for lv in lvs],
                          "check_ms_p50": [lv["ours"].get("check_ms_p50") for lv in lvs],
                          "ours_tok_s": [lv["ours"]["tok_s"] for lv in lvs], "direct_tok_s": [lv["direct"]["tok_s"] for lv in lvs],
                          "engine_peak_running": [lv["ours"]["engine"]["peak_running"] for lv in lvs]}
                 for c, lvs in sorted(levels.items())}
print(json.dumps(out, indent=1))
PYEOF
  echo "== results in $OUT"; ls -la "$OUT"
}

bursts() {  # retrieval alone: bursts of searches taking turns here, then with search processes
  cd "$WORK"
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} XDG_CACHE_HOME=$WORK/cache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  export ASSISTANT_DATA_DIR=$WORK/data ASSISTANT_EMBEDDER_MODEL_PATH=$WORK/minilm PYTHONUNBUFFERED=1
  for p in 0 "${SEARCH_PROCESSES:-8}"; do
    ASSISTANT_RETRIEVAL_SEARCH_PROCESSES=$p "$PY" -m assistant.cli bench retrieval --chunks 20000 --queries 50 \
      --bursts 1,4,16,64 --keep "$WORK/bursts" --json >"$OUT/bursts-p$p.json" 2>"$OUT/bursts-p$p.stderr.log" \
      || echo "bench retrieval with $p search processes failed: see bursts-p$p.stderr.log"
  done
}

case $STAGE in
  bursts) bursts ;;
  engine) engine_build ;;
  managed) managed ;;
  build) build ;;
  install) install_wheels ;;
  assemble) assemble_models ;;
  run) run_proof ;;
  all) build; install_wheels; assemble_models; run_proof ;;
esac
