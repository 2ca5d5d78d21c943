"""`assistant serve`: run the HTTP server."""

from __future__ import annotations

import argparse

from assistant.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = sub.add_parser("serve", help="run the server (web page + API)")
    add_common(p)
    p.add_argument("--host", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to bind (default 8000)")
    p.add_argument("--backend", choices=["llamacpp", "openai", "echo"], help="LLM backend")
    p.add_argument("--model", help="model: a GGUF path for llamacpp, a model name for openai")
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
        out["llamacpp" if backend == "llamacpp" else "openai"] = (
            {"model_path": args.model} if backend == "llamacpp" else {"model": args.model}
        )
    return out


def run(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from assistant.app import create_app

    app = create_app(settings)
    host, port = settings.server.host, settings.server.port
    print(f"assistant: serving on http://{host}:{port}/  (data: {settings.data_dir}, backend: {settings.backend})", flush=True)
    uvicorn.run(app, host=host, port=port, log_level=settings.log_level.lower(), access_log=False)
    return 0
