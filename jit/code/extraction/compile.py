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
                             build=build)
    return verdict, ptx


def _compile_split(module, kernels, device, options, opt, tmp, verdict, want_ptx, build=None):
    if not kernels:  # nothing to blame: an empty half of a bisection
        return None
    error, ptx = _try_compile(module, kernels, device, options, opt, tmp, build=build)
    if error:  # the batch failed: bisect
        if len(kernels) == 1:
            verdict[kernels[0].key] = error
            return None
        mid = len(kernels) // 2
        _compile_split(module, kernels[:mid], device, options, opt, tmp, verdict, False)
        _compile_split(module, kernels[mid:], device, options, opt, tmp, verdict, False)
        return None
    over = static_shared_over_limit(ptx) if ptx else {}
    for k in kernels:
        used = max(over.get(f"{wb.mangled_name(k)}_cuda_kernel_{part}", 0) for part in ("forward", "backward"))
        verdict[k.key] = SHARED_REASON if used else None
    return ptx if want_ptx else None


def _try_compile(module, kernels, device, options, opt, tmp, build=None) -> tuple[str | None, str | None]:
    """(a short reason, None) on failure; else (None, None) for the CPU or (None, PTX text)."""
    options, flags = options
    try:
        if build is None:
            build = wb.Build(module, kernels, options, device)
        source = build.module_source(device, options)
    except Exception as exc:
        return f"codegen {device}: {type(exc).__name__}", None
    out = os.path.join(tmp, f"m{len(os.listdir(tmp))}" + (".o" if device == "cpu" else ".ptx"))
    try:
        wb.compile_source(source, device, out, flags, optimization_level=opt)
    except Exception as exc:
        return f"compile {device}: {_reason(exc)}", None
    if device == "cpu":
        return None, None
    with open(out, "rb") as f:  # kept to check what ptxas would refuse (static_shared_over_limit)
        return None, f.read().rstrip(b"\0").decode("utf-8", "replace")


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


# ---------------------------------------------------------------------------------------------
# static shared memory: what ptxas checks and PTX alone does not

SHARED_LIMIT = 48 * 1024  # bytes of static shared memory per block, on every architecture
SHARED_REASON = "cuda: over 48 KB of static shared memory (ptxas refuses it)"
_SHARED_DECL = re.compile(r"\.shared\s+(?:\.align\s+(\d+)\s+)?\.[a-z]+(\d+)\s+([\w$]+)(?:\[(\d+)\])?\s*;")
# literal-first patterns, so the regex engine can skip ahead (these scan ~20 MB of debug PTX)
_ENTRY_HEAD = re.compile(r"\.entry\s+([\w$]+)")
_FUNC_HEAD = re.compile(r"\.func\s+(?:\([^)]*\)\s*)?([\w$]+)")
_CALL = re.compile(r"call(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([\w$]+)")
_LINKAGE = {".visible", ".weak", ".extern"}


def _function_heads(ptx: str) -> list[tuple[int, int, str, str]]:
    """(start, end, entry|func, name) of every function header at the start of a line."""
    heads = []
    for kind, pattern in (("entry", _ENTRY_HEAD), ("func", _FUNC_HEAD)):
        for m in pattern.finditer(ptx):
            line_start = ptx.rfind("\n", 0, m.start()) + 1
            if set(ptx[line_start:m.start()].split()) <= _LINKAGE:
                heads.append((line_start, m.end(), kind, m.group(1)))
    return sorted(heads)


def _shared_sizes(ptx: str) -> dict[str, int]:
    """Module-scope static ``.shared`` variables -> bytes (rounded up to their alignment);
    dynamic (``.extern ... []``) shared memory has no size and is left out."""
    sizes = {}
    for align, bits, name, count in _SHARED_DECL.findall(ptx):
        size = max(1, int(bits) // 8) * (int(count) if count else 1)
        a = int(align) if align else 1
        sizes[name] = -(-size // a) * a
    return sizes


def static_shared_bytes(ptx: str) -> dict[str, int]:
    """Entry name -> bytes of static shared memory it uses: every ``.shared`` variable it
    references, directly or through the functions it calls (transitively).

    A kernel over ``SHARED_LIMIT`` compiles to PTX but ptxas refuses it ("uses too much shared
    data"), so it would never load on a GPU. Function bodies are the text from a ``.entry`` /
    ``.func`` header to the first closing brace in column 0 (how NVVM lays out PTX).
    """
    import bisect

    sizes = _shared_sizes(ptx)
    if not sizes:
        return {}
    heads = _function_heads(ptx)
    starts = [h[0] for h in heads]
    spans = []  # (kind, name, end of body or -1 for a prototype)
    for i, (_, head_end, kind, name) in enumerate(heads):
        limit = starts[i + 1] if i + 1 < len(heads) else len(ptx)
        open_at = ptx.find("\n{", head_end, limit)
        end = ptx.find("\n}", open_at, limit) if open_at >= 0 else -1
        spans.append((kind, name, limit if open_at >= 0 and end < 0 else end))

    def owner(pos: int) -> str | None:
        i = bisect.bisect_right(starts, pos) - 1
        return spans[i][1] if i >= 0 and pos < spans[i][2] else None

    uses: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for name in sizes:
        for m in re.finditer(re.escape(name) + r"(?![\w$])", ptx):
            f = owner(m.start())
            if f is not None:
                uses.setdefault(f, set()).add(name)
    for m in _CALL.finditer(ptx):
        f = owner(m.start())
        if f is not None:
            calls.setdefault(f, set()).add(m.group(1))
    out = {}
    for kind, name, end in spans:
        if kind != "entry" or end < 0:
            continue
        seen, stack, used = {name}, [name], set()
        while stack:
            f = stack.pop()
            used |= uses.get(f, set())
            for g in calls.get(f, ()):
                if g not in seen:
                    seen.add(g)
                    stack.append(g)
        out[name] = sum(sizes[v] for v in used)
    return out


def static_shared_over_limit(ptx: str) -> dict[str, int]:
    """Entries over ``SHARED_LIMIT`` (name -> bytes); cheap when the whole module fits."""
    if sum(_shared_sizes(ptx).values()) <= SHARED_LIMIT:
        return {}
    return {name: used for name, used in static_shared_bytes(ptx).items() if used > SHARED_LIMIT}
