"""`assistant engine build llama-server` and `assistant engine list`: the engines the llama-server backend runs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import partial

from assistant.settings import Settings
from assistant.commands import fail as failed

fail = partial(failed, command="assistant engine")


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = sub.add_parser("engine", help="build and list the inference engines the assistant manages (llama-server)")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    b = add_common(verbs.add_parser(
        "build", help="build llama.cpp's llama-server from the installed llama-cpp-python's source"))
    b.add_argument("engine", choices=["llama-server"], help="the engine to build")
    kind = b.add_mutually_exclusive_group()
    kind.add_argument("--cpu", action="store_true", help="a CPU build (the default when no NVIDIA GPU is found)")
    kind.add_argument("--cuda-arch", action="append", metavar="CC",
                      help="a CUDA build for this compute capability (70, 7.0 or sm_70); repeat for several; "
                      "default: the GPUs found")  # fmt: skip
    b.add_argument("--nvcc", help="the CUDA compiler to use (default: $CUDACXX, PATH, /usr/local/cuda/bin/nvcc)")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compile jobs (default: every core)")
    b.add_argument("--source", help="llama.cpp source: an unpacked llama-cpp-python sdist, a checkout, or a .tar.gz "
                   "of either (default: the installed version's sdist, through pip)")  # fmt: skip
    b.add_argument("--force", action="store_true", help="build again when this version and variant is built already")
    b.add_argument("--json", action="store_true", help="print the build's record as JSON")
    b.set_defaults(func=run_build)
    ls = add_common(verbs.add_parser("list", help="the llama-server builds, newest first, and the one the backend runs"))
    ls.add_argument("--json", action="store_true", help="print one JSON object")
    ls.set_defaults(func=run_list)



def found_archs() -> list[int]:
    """The compute capabilities of the GPUs found (none without NVIDIA's driver)."""
    from assistant.engines.cuda import gpu_archs
    from assistant.gpu.probe import live_gpus

    return gpu_archs(live_gpus([])[0])


def run_build(args: argparse.Namespace, settings: Settings) -> int:
    from assistant.engines.cuda import BuildRefused, build_warnings, find_toolkit, parse_arch
    from assistant.engines.llama_server import build_llama_server, builds, llama_cpp_python_version, variant_name

    if args.jobs < 1:
        return fail("--jobs takes a positive number")
    try:
        archs = sorted({parse_arch(a) for a in args.cuda_arch}) if args.cuda_arch else ([] if args.cpu else found_archs())
    except ValueError as exc:
        return fail(str(exc))
    toolkit = find_toolkit(args.nvcc) if archs else None
    if args.nvcc and archs and toolkit is None:
        return fail(f"--nvcc {args.nvcc} is not a working nvcc")
    if archs and toolkit is not None:
        print(f"assistant engine: {toolkit.label} for {', '.join(f'sm_{a}' for a in archs)}")
        for warning in build_warnings(toolkit, archs):
            print(f"assistant engine: warning: {warning}", file=sys.stderr)
    elif not archs:
        print("assistant engine: a CPU build" + ("" if args.cpu else " (no NVIDIA GPU found; --cuda-arch builds for one)"))
    try:
        existing = next((b for b in builds() if b.variant == variant_name(archs)
                         and b.llama_cpp_python == llama_cpp_python_version(args.source)), None)  # fmt: skip
        if existing is not None and not args.force:
            record = existing
            print(f"assistant engine: {record.binary} is built already ({record.variant}); --force builds it again")
        else:
            record = build_llama_server(archs, toolkit, args.jobs, args.source, say=lambda m: print(f"assistant engine: {m}", flush=True))
            print(f"assistant engine: built {record.binary} in {record.seconds:.0f} s")
    except BuildRefused as exc:
        return fail(str(exc))
    if args.json:
        print(json.dumps(record.to_dict(), indent=2))
    return 0


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    from assistant.engines.llama_server import builds, find_binary

    binary, _ = find_binary(settings.llama_server.binary)
    done = [b.to_dict() for b in builds()]
    if args.json:
        print(json.dumps({"builds": done, "runs": str(binary) if binary else None}, indent=2))
        return 0
    for b in done:
        archs = ", ".join(f"sm_{a}" for a in b["cuda_archs"]) or "CPU"
        print(f"{b['binary']}  {archs}  llama-cpp-python {b['llama_cpp_python']}  built {b['built_at']} in {b['seconds']:.0f} s")
    print(f"the llama-server backend runs: {binary or 'nothing (assistant engine build llama-server)'}")
    return 0
