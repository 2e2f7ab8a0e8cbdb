"""A small on-disk cache for values that depend only on the installed Warp and this package's code.

Files live in ``$JIT_SYNTH_CACHE``, else ``$XDG_CACHE_HOME/warp-jit-synth``, else
``~/.cache/warp-jit-synth``. A key hashes Warp's version with the text of the modules the value
is computed by, so upgrading Warp or changing that code computes it again. A cache that cannot
be read or written only makes a run slower.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

V = TypeVar("V")


def cache_dir() -> Path:
    base = os.environ.get("JIT_SYNTH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "warp-jit-synth"
    )
    return Path(base)


def key(*modules) -> str:
    """A short hash of Warp's version and the source files of ``modules``."""
    h = hashlib.sha256(importlib.metadata.version("warp-lang").encode())
    for module in modules:
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


def cached(name: str, digest: str, make: Callable[[], V]) -> V:
    """The value stored under ``name``-``digest``, or ``make()`` stored there."""
    path = cache_dir() / f"{name}-{digest}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        pass
    value = make()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, suffix=".tmp") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(f.name, path)
    except OSError:
        pass
    return value
