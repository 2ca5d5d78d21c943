"""The product's folder in the user's cache dir (XDG), like pip's and Hugging Face's: joined packaged
models, built engines and exported query encoders each keep a folder of their own under it."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "assistant"
