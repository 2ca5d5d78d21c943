"""`python -m llama_cpp.server` with the packaged GGUF on a loopback port: a real OpenAI-compatible replica."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from evals.local_server import free_port
from tests.support.wait import wait_until

MODEL_ALIAS = "gemma-3-270m"


class LlamaServer:
    """One replica; stop() and start() again keep its port, as a restarted server would."""

    def __init__(self, gguf: Path, log_dir: Path, port: int | None = None, threads: int = 1) -> None:
        self.gguf = gguf
        self.threads = threads
        self.port = port or free_port()
        self.log_path = log_dir / f"llama-server-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 120) -> "LlamaServer":
        cmd = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--host", "127.0.0.1",
            "--port", str(self.port), "--n_ctx", "2048", "--n_threads", str(self.threads), "--model_alias", MODEL_ALIAS,
            "--interrupt_requests", "False",  # its default cuts a streaming answer off when the next request comes
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        try:
            wait_until(self._answers, timeout=timeout_s, interval=0.2, ignoring=(httpx.HTTPError,),
                       what=f"llama_cpp.server answering /v1/models (log: {self.log_path})")
        except AssertionError:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}; see {self.log_path}")
        return httpx.get(f"{self.url}/models", timeout=2).status_code == 200

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
