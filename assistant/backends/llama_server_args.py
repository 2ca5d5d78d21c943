"""The managed llama-server's command line beyond the slots: one model over several GPUs (-sm, -ts, -mg),
speculative decoding (a draft model, or the model's own MTP heads), and the flags passed as they are.

Kept apart from the process that runs it so that `assistant plan` prints the same flags the backend starts.
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.backends.base import BackendError
from assistant.gpu.plan import split_shares

if TYPE_CHECKING:
    from assistant.settings import LlamaServerSettings


def split_args(cfg: "LlamaServerSettings", free_gpu_bytes: list[int]) -> list[str]:
    """-sm, -ts and -mg: as set; with several GPUs and no tensor_split, -ts is each GPU's free memory (GiB), so
    a card already holding something gets less of the model."""
    args: list[str] = []
    if cfg.split_mode:
        args += ["-sm", cfg.split_mode]
    shares = cfg.tensor_split or (split_shares(free_gpu_bytes) if cfg.split_mode != "none" else None)
    if shares:
        args += ["-ts", ",".join(f"{share:g}" for share in shares)]
    if cfg.main_gpu is not None:
        args += ["-mg", str(cfg.main_gpu)]
    return args


def draft_file(cfg: "LlamaServerSettings") -> str | None:
    """The draft GGUF: a file, else a packaged model by name (joined once into the cache); None = no draft."""
    if not cfg.draft_model:
        return None
    path = Path(cfg.draft_model).expanduser()
    if path.is_file():
        return str(path)
    from assistant.backends.packaged_models import PACKAGED

    if cfg.draft_model in PACKAGED:
        from assistant.backends.llamacpp import packaged_model_path

        return str(packaged_model_path(cfg.draft_model))
    raise BackendError(f"llama_server.draft_model {cfg.draft_model!r} is neither a GGUF file nor a packaged model "
                       f"({', '.join(PACKAGED)})")  # fmt: skip


@lru_cache(maxsize=8)
def build_help(binary: str) -> str:
    """The binary's --help (what this build of llama-server accepts)."""
    try:
        done = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendError(f"cannot run {binary} --help: {exc}") from None
    return done.stdout + done.stderr


def speculative_args(cfg: "LlamaServerSettings", draft: str | None, binary: str | None = None) -> list[str]:
    """--spec-type, -md and the draft's sizes; nothing without a draft model. With `binary`, an MTP request is
    refused when that build has no MTP speculative decoding."""
    if draft is None:
        return []
    if cfg.spec_type == "draft-mtp" and binary is not None and "draft-mtp" not in build_help(binary):
        raise BackendError(f"{binary} has no MTP speculative decoding (its --help lists no draft-mtp): rebuild it "
                           "from a newer llama.cpp, or set llama_server.spec_type = draft-simple with a draft model")  # fmt: skip
    args = ["--spec-type", cfg.spec_type, "-md", draft]
    if cfg.draft_max is not None:
        args += ["--spec-draft-n-max", str(cfg.draft_max)]
    if cfg.draft_min is not None:
        args += ["--spec-draft-n-min", str(cfg.draft_min)]
    if cfg.draft_gpu_layers is not None:
        args += ["-ngld", str(cfg.draft_gpu_layers)]
    return args
