"""`assistant serve`: run the HTTP server."""

from __future__ import annotations

import argparse

from assistant.backends.registry import backend_names
from assistant.settings import Settings, VLLMSettings


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser("serve", help="run the server (web page + API)"))
    p.add_argument("--host", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to bind (default 8000)")
    p.add_argument("--backend", choices=backend_names(), help="LLM backend")
    p.add_argument("--model", help="model: a GGUF path for llamacpp and llama-server, a model folder for vllm, a model name for openai")
    p.add_argument("--tensor-parallel-size", type=int, help="vllm: GPUs one model is split over")
    p.add_argument("--preset", help="vllm: a GPU launch preset (see `assistant presets`); flags given here win")
    p.set_defaults(func=run, overrides=overrides)


def overrides(args: argparse.Namespace) -> dict:
    out: dict = {}
    server = {k: v for k, v in {"host": args.host, "port": args.port}.items() if v is not None}
    if server:
        out["server"] = server
    if args.backend:
        out["backend"] = args.backend
    if args.model:
        backend = args.backend or "llamacpp"
        section = {"llamacpp": "llamacpp", "vllm": "vllm", "llama-server": "llama_server"}.get(backend, "openai")
        out[section] = {"model_path": args.model} if backend == "llamacpp" else {"model": args.model}
    vllm: dict = {}
    if args.preset:
        from assistant.gpu.presets import get_preset, preset_settings

        try:
            preset = get_preset(args.preset)
        except KeyError as exc:
            raise SystemExit(f"assistant serve: {exc.args[0]}") from None
        if preset.backend != "vllm":
            raise SystemExit(f"assistant serve: the preset {preset.name} is for {preset.engine}, which runs on its own: "
                             f"start it with `{preset.command()}` in its environment, then serve with --backend openai "
                             "and openai.base_url pointing at it")  # fmt: skip
        vllm.update(preset_settings(args.preset, VLLMSettings.model_fields))
    vllm.update(out.get("vllm", {}))
    if args.tensor_parallel_size:
        vllm["tensor_parallel_size"] = args.tensor_parallel_size
    if vllm:
        out["vllm"] = vllm
    return out


def run(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from assistant.app import create_app

    from assistant.security.access import check_bind
    from assistant.security.slow_clients import uvicorn_options
    from assistant.commands.serve_worker import start_worker, stop_worker
    from indexes.db import make_engine

    engine = make_engine(settings.data_dir / "store.db")
    try:
        check_bind(settings, engine)  # another address without API keys: refused, saying how to make one
    finally:
        engine.dispose()
    app = create_app(settings)
    host, port = settings.server.host, settings.server.port
    print(f"assistant: serving on http://{host}:{port}/  (data: {settings.data_dir}, backend: {settings.backend})", flush=True)
    worker = start_worker(settings)
    try:
        uvicorn.run(app, host=host, port=port, log_level=settings.log_level.lower(), access_log=False,
                    **uvicorn_options(settings.server))
    finally:
        stop_worker(worker)
    return 0
