#!/usr/bin/env bash
# Install what the tests need and run the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
WORKERS="${TEST_WORKERS:-2}"  # parallel pytest workers, see below
[[ $WORKERS =~ ^[1-9][0-9]*$ ]] || { echo "test: TEST_WORKERS takes a positive number, not '$WORKERS'" >&2; exit 2; }
started=$SECONDS
# vLLM lives in its own environment, as in real deployments; its tests skip with the reason without it.
# It is set up beside the product's .venv (mostly downloads and unpacking, while llama.cpp compiles).
vllm_log=$(mktemp)
scripts/setup-vllm.sh >"$vllm_log" 2>&1 &
vllm_setup=$!
scripts/setup.sh test
wait "$vllm_setup" || echo "test: the vLLM environment could not be set up; the vLLM tests will skip" >&2
cat "$vllm_log"; rm -f "$vllm_log"
echo "test: set up in $((SECONDS - started)) s"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DO_NOT_TRACK=1
# llama-server for the engine tests: built from the installed llama-cpp-python's source once per machine and
# version (a finished build is kept in the user's cache), at the lowest CPU priority beside the first tests.
engine_log=$(mktemp)
nice -n 19 .venv/bin/assistant engine build llama-server --cpu --jobs "$(nproc)" >"$engine_log" 2>&1 &
engine_build=$!

# The browser tests run in a pytest process of their own: Playwright's synchronous API leaves an event
# loop behind that would break the async tests collected after them.
# Each part runs its test files on TEST_WORKERS parallel workers (pytest-xdist; default 2, 1 = none), a
# file to a worker so that a module's fixtures (a vLLM server, an ingested collection) are built once;
# --durations shows where the time went.
parallel=()
(( WORKERS > 1 )) && parallel=(-n "$WORKERS" --dist loadfile)
pytest_part() {
    local rc=0
    .venv/bin/python -m pytest "${parallel[@]}" --durations=25 "$@" || rc=$?
    if [[ $rc == 5 ]]; then
        echo "test: pytest collected no tests for this selection ($*)" >&2
        rc=0
    fi
    return $rc
}
set +e
started=$SECONDS
pytest_part -m "not browser and not engine" "$@"
rest=$?
echo "test: the tests without a browser or an engine took $((SECONDS - started)) s"
started=$SECONDS
pytest_part -m browser "$@"
browser=$?
echo "test: the browser tests took $((SECONDS - started)) s"
# The engine tests (vLLM, llama-server) run alone, on one worker: an engine pins its threads to every core,
# and a test process beside it starved vLLM until its model step timed out (300 s) on a 2-core machine.
started=$SECONDS
wait "$engine_build" || echo "test: llama-server could not be built; its tests will skip:" >&2
cat "$engine_log"; rm -f "$engine_log"
echo "test: waited $((SECONDS - started)) s for the llama-server build"
parallel=()
pytest_part -m engine "$@"
engine=$?
echo "test: the engine tests took $((SECONDS - started)) s"
set -e
(( rest == 0 && browser == 0 && engine == 0 ))
