"""Where a real kernel comes from: its distribution, version, licence and file.

``provenance(module_name, filename)`` looks the module's top-level package up among the
installed distributions (``importlib.metadata``) and gives the distribution's name, version and
licence, and the file relative to the distribution's root (else to the working directory). Code
outside any distribution (a script, a file target) gets None for those.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

_distributions: dict | None = None


def provenance(module_name: str, filename: str) -> dict:
    """Distribution, version, licence and file (relative to the distribution, or to the cwd)."""
    global _distributions
    if _distributions is None:
        _distributions = importlib.metadata.packages_distributions()
    top = module_name.split(".")[0]
    names = _distributions.get(top) if top != "__main__" else None
    info = {"distribution": None, "distribution_version": None, "license": None, "file": _relative(filename, os.getcwd())}
    if not names:
        return info
    dist = importlib.metadata.distribution(names[0])
    package = sys.modules.get(top)
    root = Path(package.__file__).resolve().parent.parent if getattr(package, "__file__", None) else None
    info.update(distribution=dist.metadata["Name"], distribution_version=dist.version, license=_license(dist))
    if root is not None:
        info["file"] = _relative(filename, root)
    return info


def _license(dist) -> str | None:
    meta = dist.metadata
    for key in ("License-Expression", "License"):
        value = meta.get(key)
        if value and value.strip() and value.strip().upper() != "UNKNOWN" and "\n" not in value.strip():
            return value.strip()
    classifiers = [c.split("::")[-1].strip() for c in (meta.get_all("Classifier") or []) if c.startswith("License ::")]
    return "; ".join(classifiers) or None


def _relative(filename: str, root) -> str:
    try:
        return str(Path(filename).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return filename
