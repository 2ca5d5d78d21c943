"""The `llama-server` backend: llama.cpp's own batching server, run and watched by this process.

The in-process llama.cpp backend answers one question at a time, and its CUDA build can crash beside the
embedder in one process. llama-server batches every slot's answer in each step (continuous batching)
in a process of its own: started on a free loopback port in its own process group (engine_process.py),
its output in the server's log and in `DATA_DIR/logs/llama-server.log`,
with the model's every layer on the GPUs, the slots (-np) and the context per slot derived from the
GPUs' free memory and the GGUF's KV cache per token (gpu/plan.py) unless set, `--metrics` and
`/slots` on; restarted with backoff when it dies (answers in flight get an `error` event); stopped
with the server. It is spoken to through the OpenAI-compatible client (managed_server.py), which counts
prompts with its /apply-template and /tokenize and reads its context per slot from /props.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from assistant.backends.base import BackendError
from assistant.backends.engine_process import HOST, EngineProcess
from assistant.backends.llama_server_args import draft_file, speculative_args, split_args
from assistant.backends.managed_server import ManagedServerBackend

if TYPE_CHECKING:
    from assistant.settings import LlamaServerSettings, OpenAISettings, Settings

log = logging.getLogger(__name__)
CPU_SLOTS = 4  # without GPUs: a few answers at once share the cores without each crawling
DEFAULT_CTX_PER_SLOT = 4096


@dataclass(frozen=True)
class Launch:
    """Everything llama-server is started with, resolved once from the settings, the GGUF and the GPUs."""

    binary: str
    model: str
    alias: str
    slots: int
    ctx_per_slot: int
    gpu_layers: int
    why: str  # where the slots and the context came from
    threads: int | None = None  # -t; None = llama-server's own choice (a thread per core)
    build: dict[str, Any] | None = None  # the build record of the binary, when it was built here
    extra: list[str] = field(default_factory=list)
    split: list[str] = field(default_factory=list)  # -sm / -ts / -mg (llama_server_args.split_args)
    speculative: list[str] = field(default_factory=list)  # --spec-type / -md / draft sizes


def build_command(cfg: "LlamaServerSettings", launch: Launch, port: int, host: str = HOST) -> list[str]:
    """The full command line (pure: tested without starting anything)."""
    cmd = [
        launch.binary, "--model", launch.model, "--alias", launch.alias, "--host", host, "--port", str(port),
        "-np", str(launch.slots), "-c", str(launch.slots * launch.ctx_per_slot), "-ngl", str(launch.gpu_layers),
        "-fa", cfg.flash_attn, "--cont-batching", "--metrics", "--slots", "--no-webui", "--jinja",
    ]  # fmt: skip
    cmd += launch.split or split_args(cfg, [])
    if launch.threads:
        cmd += ["-t", str(launch.threads)]
    return cmd + launch.speculative + list(cfg.extra_args)


def model_file(settings: "Settings") -> Path:
    """The GGUF: llama_server.model, else the one the llamacpp backend would answer with (its model_path,
    else its packaged model)."""
    configured = settings.llama_server.model or settings.llamacpp.model_path
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise BackendError(f"the GGUF {path} is not a file (llama_server.model, else llamacpp.model_path)")
        return path
    from assistant.backends.llamacpp import packaged_model_path

    return packaged_model_path(settings.llamacpp.packaged_model)


def resolve_launch(settings: "Settings", free_gpu_bytes: list[int] | None = None) -> Launch:
    """The binary, the model and the slots: as set, else derived (`free_gpu_bytes`: the GPUs' free memory,
    read from the driver when None)."""
    from assistant.engines.llama_server import find_binary
    from assistant.gpu.gguf import GGUFError, read_model
    from assistant.gpu.plan import llama_server_slots, llama_server_threads

    cfg = settings.llama_server
    binary, build = find_binary(cfg.binary)
    if binary is None:
        raise BackendError("no llama-server to run: build one with `assistant engine build llama-server` "
                           "(--cuda-arch 70 for V100s) or set llama_server.binary")  # fmt: skip
    if not binary.is_file():
        raise BackendError(f"llama_server.binary {binary} is not a file")
    path = model_file(settings)
    try:
        gguf = read_model(path)
    except (GGUFError, OSError) as exc:
        raise BackendError(f"cannot read the GGUF {path}: {exc}") from None
    ctx = cfg.ctx_per_slot or min(DEFAULT_CTX_PER_SLOT, gguf.context_length or DEFAULT_CTX_PER_SLOT)
    if free_gpu_bytes is None:
        free_gpu_bytes = gpu_free_bytes()
    gpu_layers = cfg.gpu_layers if cfg.gpu_layers is not None else (999 if free_gpu_bytes else 0)
    if cfg.parallel:
        slots, why = cfg.parallel, "llama_server.parallel"
    elif free_gpu_bytes and gpu_layers:
        slots = llama_server_slots(gguf.file_bytes, gguf.kv_bytes_per_token(), ctx, free_gpu_bytes)
        why = (f"{slots} slots of {ctx} tokens fit in {len(free_gpu_bytes)} GPU(s)' free memory beside "
               f"{gguf.file_bytes / 1e9:.2f} GB of weights ({gguf.kv_bytes_per_token():,} KV bytes per token)")  # fmt: skip
    else:
        slots, why = CPU_SLOTS, f"{CPU_SLOTS} slots without GPUs"
    threads = cfg.threads
    if threads is None and free_gpu_bytes and gpu_layers >= gguf.layers:
        threads = llama_server_threads(os.cpu_count() or 1)
        why += f"; {threads} CPU threads, every layer being on the GPUs"
    split = split_args(cfg, free_gpu_bytes if gpu_layers else [])
    if len(free_gpu_bytes) > 1 and gpu_layers and not cfg.tensor_split and cfg.split_mode != "none":
        why += f"; split over {len(free_gpu_bytes)} GPUs by their free memory ({cfg.split_mode or 'layer'} mode)"
    speculative = speculative_args(cfg, draft_file(cfg), str(binary))
    if speculative:
        why += f"; speculative decoding ({cfg.spec_type})"
    return Launch(
        binary=str(binary), model=str(path), alias=cfg.alias or path.name.removesuffix(".gguf"), slots=slots,
        ctx_per_slot=ctx, gpu_layers=gpu_layers, why=why, threads=threads, build=build.to_dict() if build else None,
        split=split, speculative=speculative,
    )  # fmt: skip


def gpu_free_bytes() -> list[int]:
    """Each visible GPU's free memory (none without NVIDIA's driver)."""
    from assistant.gpu.probe import live_gpus

    gpus, _ = live_gpus([])
    return [g.memory_free_bytes for g in gpus if g.memory_free_bytes]


def slot_counts(listed: Any) -> dict[str, int] | None:
    """llama-server's GET /slots body as counts: total, busy (generating) and idle; None if not a list."""
    if not isinstance(listed, list):
        return None
    busy = sum(1 for s in listed if isinstance(s, dict) and s.get("is_processing"))
    return {"total": len(listed), "busy": busy, "idle": len(listed) - busy}


class LlamaServerProcess(EngineProcess):
    """One managed llama-server."""

    label = "llama-server"
    log = logging.getLogger("assistant.llama_server")

    def __init__(self, cfg: "LlamaServerSettings", launch: Launch, log_file: Path | None = None) -> None:
        super().__init__(cfg, log_file)
        self.cfg: LlamaServerSettings = cfg
        self.launch = launch

    def command(self) -> list[str]:
        return build_command(self.cfg, self.launch, self.port)

    def slots(self, timeout_s: float = 2.0) -> dict[str, Any] | None:
        """The engine's slots now (GET /slots): how many there are and how many are generating."""
        if not self.ready:
            return None
        try:
            r = httpx.get(f"{self.base_url}/slots", timeout=timeout_s)
            listed = r.json() if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        return slot_counts(listed)


class LlamaServerBackend(ManagedServerBackend):
    """A llama-server this process runs (or shares, when `process` is given) and talks to over HTTP."""

    name = "llama-server"
    tokenize_route = "llama-server"

    def __init__(self, settings: "Settings", process: LlamaServerProcess | None = None) -> None:
        self.cfg: LlamaServerSettings = settings.llama_server
        proc = process or LlamaServerProcess(self.cfg, resolve_launch(settings), settings.data_dir / "logs" / "llama-server.log")
        super().__init__(proc, process is None, self.cfg.prompt_style)
        self.launch = proc.launch

    def client_settings(self) -> "OpenAISettings":
        from assistant.settings import OpenAISettings

        return OpenAISettings(
            base_url=f"{self.process.base_url}/v1", model=self.launch.alias, context_window=self.launch.ctx_per_slot,
            timeout_s=self.cfg.timeout_s, max_connections=max(64, 2 * self.launch.slots),
            prompt_style=self.cfg.prompt_style, sampling=self.cfg.sampling,
        )  # fmt: skip

    @property
    def model(self) -> str:
        return self.launch.alias

    @property
    def fallback_context_window(self) -> int:
        return self.launch.ctx_per_slot

    def engine_status(self) -> dict[str, Any]:
        """What `/api/status` shows of the engine: its state, starts, slots busy and idle, and how its slots
        were chosen; no path of the server's and none of the engine's output (they may name files)."""
        proc: LlamaServerProcess = self.process  # type: ignore[assignment]
        return {"state": proc.state, "starts": proc.starts, "pid": proc.pid, "slots": proc.slots(), "launch": {
            "slots": self.launch.slots, "ctx_per_slot": self.launch.ctx_per_slot, "gpu_layers": self.launch.gpu_layers,
            "why": self.launch.why}}


def create_llama_server(settings: "Settings") -> LlamaServerBackend:
    """Start the managed llama-server and wait for it (or its first failure); later failures restart it."""
    backend = LlamaServerBackend(settings)
    log.info("llama-server: %s", backend.launch.why)
    backend.process.start()
    if not backend.process.wait_ready(settings.llama_server.start_timeout_s, give_up_on_exit=True):
        log.warning("llama-server is not ready yet: %s", backend.process.detail)
    return backend
