"""Offline compilation of a batch of kernels: CPU with Warp's clang, CUDA with NVRTC to PTX.

No GPU or CUDA driver is needed. A batch is compiled as one translation unit (the module
source Warp itself would compile); if that fails, the batch is bisected so that only the
kernels that fail on their own are reported. The compilers run at their cheapest setting that
still parses, type-checks and lowers every function to machine code or PTX: clang at -O0 with
Warp's precompiled headers, NVRTC in debug mode at level 1 (level 0 is unsafe from CUDA 13.1
on) without them (see ``compile_batch``). When PTX is wanted for the dataset, NVRTC runs with
Warp's release defaults instead, so the PTX is what Warp would load.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence

from jit.code.extraction import warp_backend as wb

CHEAP = {"cpu": ("release", 0), "cuda": ("debug", 1)}


def compile_batch(module, kernels: Sequence, device: str, arch: int = wb.DEFAULT_CUDA_ARCH,
                  optimization_level: int | None = None, want_ptx: bool = False,
                  build: wb.Build | None = None, block_dim: int | None = None) -> tuple[dict[str, str | None], str | None]:
    """Compile ``kernels`` (of one Warp module) for ``device``.

    Returns ({kernel key: None if it compiled else the reason}, PTX text of the whole batch or
    None). PTX is kept only when ``want_ptx`` and only for the batch that compiled whole.
    ``build``: an existing build of exactly these kernels whose state is valid for ``device``
    (see ``extract_many(builds=...)``), to skip building them again. ``block_dim``: the launch
    block size the code is for (tile kernels), else the module's.
    """
    options = wb.resolve_options(module, device, block_dim, arch=arch)
    flags = dict(options)  # the source is generated with the launch options; only compiler flags change
    if optimization_level is not None:
        opt = optimization_level
    elif want_ptx:
        opt = None  # Warp's own default: the PTX a launch would load
    else:
        flags["mode"], opt = CHEAP[device]
    if device == "cpu":  # generated code trips clang's style warnings (e.g. tautological compares)
        flags["cpu_compiler_flags"] = (flags.get("cpu_compiler_flags") or "") + " -w"
    else:  # NVRTC's automatic PCH: ~80 MB per compile in /tmp, never removed by pool workers; saves 0.45 s a batch
        flags["use_precompiled_headers"] = False
    verdict: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory(prefix="jit-synth-cc-") as tmp:
        ptx = _compile_split(module, list(kernels), device, (options, flags), opt, tmp, verdict, want_ptx,
                             top=True, build=build)
    return verdict, ptx


def _compile_split(module, kernels, device, options, opt, tmp, verdict, want_ptx, top=False, build=None):
    error = _try_compile(module, kernels, device, options, opt, tmp, keep=want_ptx and top, build=build)
    if error is None or isinstance(error, tuple):
        for k in kernels:
            verdict[k.key] = None
        return error[1] if isinstance(error, tuple) else None
    if len(kernels) == 1:
        verdict[kernels[0].key] = error
        return None
    mid = len(kernels) // 2
    _compile_split(module, kernels[:mid], device, options, opt, tmp, verdict, False)
    _compile_split(module, kernels[mid:], device, options, opt, tmp, verdict, False)
    return None


def _try_compile(module, kernels, device, options, opt, tmp, keep: bool, build=None):
    """None (or (None, ptx) when keep) on success, else a short reason."""
    options, flags = options
    try:
        if build is None:
            build = wb.Build(module, kernels, options, device)
        source = build.module_source(device, options)
    except Exception as exc:
        return f"codegen {device}: {type(exc).__name__}"
    out = os.path.join(tmp, f"m{len(os.listdir(tmp))}" + (".o" if device == "cpu" else ".ptx"))
    try:
        wb.compile_source(source, device, out, flags, optimization_level=opt)
    except Exception as exc:
        return f"compile {device}: {_reason(exc)}"
    if keep and device == "cuda":
        with open(out, "rb") as f:
            return None, f.read().rstrip(b"\0").decode("utf-8", "replace")
    return None


def _reason(exc: Exception) -> str:
    return str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__


_ENTRY = re.compile(r"^\.(?:visible|weak)?\s*\.entry\s+(\w+)\s*\(", re.M)


def ptx_entries(ptx: str) -> dict[str, str]:
    """Entry name -> its PTX text (``.entry`` header to the closing brace of its body).

    PTX bodies nest braces for scoped call sequences; comments are ``//`` to end of line,
    so braces are counted on code only.
    """
    entries = {}
    for m in _ENTRY.finditer(ptx):
        depth, pos, started = 0, m.start(), False
        for line_end in _lines_from(ptx, m.start()):
            line = ptx[pos:line_end].split("//", 1)[0]
            depth += line.count("{") - line.count("}")
            started = started or "{" in line
            pos = line_end
            if started and depth == 0:
                break
        entries[m.group(1)] = ptx[m.start():pos].strip("\n") + "\n"
    return entries


def _lines_from(text: str, start: int):
    pos = start
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl + 1
        yield end
        pos = end


def kernel_ptx(ptx: str, mangled_name: str) -> str | None:
    """The forward and backward entries of one kernel in a batch's PTX."""
    entries = ptx_entries(ptx)
    picked = [entries[n] for n in (f"{mangled_name}_cuda_kernel_forward", f"{mangled_name}_cuda_kernel_backward")
              if n in entries]
    return "\n".join(picked) if picked else None
