"""Kernel -> the C++ (CPU) and CUDA C++ Warp generates for it, forward and backward.

``extract_ir(kernel, device)`` returns a ``KernelIR`` whose texts are verbatim pieces of the
translation unit Warp compiles when the kernel is launched on that device with default
options: CPU with block_dim 1, CUDA with the module's block_dim. Pieces come from Warp's code
generator itself (``warp_backend``), never from parsing the emitted text with braces.

``extract_many`` does the same for many kernels of one module at once, building each kernel
once for both devices where Warp allows it (kernels without tiles), which is what the
dataset pipeline uses. What it leaves out: finding kernels in files (``discover``) and
compiling the result (``compile``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from jit.code.extraction import warp_backend as wb

DEVICES = ("cpu", "cuda")
SOURCE_EXT = {"cpu": ".cpp", "cuda": ".cu"}


class ExtractionError(Exception):
    """A kernel whose code could not be extracted, with the reason."""

    def __init__(self, kernel: str, reason: str):
        super().__init__(f"{kernel}: {reason}")
        self.kernel = kernel
        self.reason = reason


@dataclass(slots=True)
class FunctionIR:
    name: str  # the @wp.func's key
    native_name: str  # its C++ name
    python_source: str
    forward: str
    adjoint: str | None


@dataclass(slots=True)
class KernelIR:
    kernel_name: str
    mangled_name: str
    device: str
    source_ext: str
    python_source: str
    forward: str
    backward: str | None
    functions: list[FunctionIR] = field(default_factory=list)
    structs: list[tuple[str, str]] = field(default_factory=list)  # (name, generated C++)
    args_struct: str = ""  # CPU: the wp_args_<name> struct the entry points take
    metadata: dict[str, Any] = field(default_factory=dict)

    def code(self) -> str:
        """Everything the kernel needs, in Warp's order: structs, helpers, kernel."""
        parts = [text for _, text in self.structs]
        parts += [f.forward for f in self.functions]
        parts += [f.adjoint for f in self.functions if f.adjoint]
        parts += [self.args_struct, self.forward, self.backward or ""]
        return "\n".join(p.strip("\n") for p in parts if p) + "\n"


def _check_device(device: str) -> None:
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; choose from {', '.join(DEVICES)}")


def extract_ir(kernel, device: str = "cpu", backward: bool = True, block_dim: int | None = None) -> KernelIR | list[KernelIR]:
    """Extract one kernel for one device; a generic kernel gives one KernelIR per overload.

    Raises ``ExtractionError`` for a kernel Warp cannot build, or a generic kernel
    without overloads.
    """
    irs = extract_many([kernel], (device,), backward=backward, block_dim=block_dim)
    out = [ir[device] for ir in irs]
    if kernel.is_generic:
        return out
    return out[0]


def extract_many(kernels: Sequence, devices: Iterable[str] = DEVICES, backward: bool = True,
                 block_dim: int | None = None, share_build: bool = True,
                 builds: dict | None = None) -> list[dict[str, KernelIR]]:
    """Extract kernels of one Warp module; one dict device -> KernelIR per concrete kernel.

    Generic kernels expand to their overloads, in registration order. The whole set is built
    in one ``ModuleBuilder``; if that fails, each kernel is built alone so that the failing
    one raises ``ExtractionError`` with Warp's message. If ``builds`` is a dict, it receives
    device -> ``Build`` for each device whose code one build of the whole set produced (to
    compile that device's module source without building again).
    """
    devices = tuple(devices)
    for d in devices:
        _check_device(d)
    wb.init()
    concrete = []
    for kernel in kernels:
        overloads = wb.kernel_overloads(kernel)
        if not overloads:
            raise ExtractionError(kernel.key, "generic kernel without overloads (add wp.overload(...) to extract it)")
        concrete.extend(overloads)
    if not concrete:
        return []
    module = wb.kernel_module(concrete[0])
    irs = {id(k): {} for k in concrete}
    used = []
    for device, build, options, group in _builds(module, concrete, devices, block_dim, share_build):
        used.append((device, build, len(group)))
        for kernel in group:
            irs[id(kernel)][device] = _kernel_ir(kernel, device, build, options, backward)
    # a build still describes its device only if no later build rewrote its kernels (tile kernels)
    if builds is not None and all(n == len(concrete) for _, _, n in used) and len({id(b) for _, b, _ in used}) == 1:
        builds.update({device: build for device, build, _ in used})
    return [irs[id(k)] for k in concrete]


def _builds(module, kernels, devices, block_dim, share_build) -> Iterator[tuple[str, wb.Build, dict, list]]:
    """(device, Build, options, kernels) groups, in order; the caller generates code before the next.

    A build writes its results (types, blocks, hashes) into the kernels' adjoints, so a
    group's code must be generated before another build overwrites them. Kernels without
    tiles build alike for every device and share the first build; tile kernels depend on
    block_dim/arch and are built again for each further device.
    """
    options = {d: wb.resolve_options(module, d, block_dim) for d in devices}
    first = devices[0]
    shared = _build(module, kernels, options[first], first)
    yield first, shared, options[first], list(kernels)
    # uses_tiles reads the types the first build inferred: it must run after that build
    tiled = {id(k) for k in kernels if not share_build or wb.uses_tiles(k)}
    plain = [k for k in kernels if id(k) not in tiled]
    tiles = [k for k in kernels if id(k) in tiled]
    for device in devices[1:]:
        if plain:
            yield device, shared, options[device], plain
        if tiles:
            yield device, _build(module, tiles, options[device], device), options[device], tiles


def _build(module, kernels, options, device) -> wb.Build:
    try:
        return wb.Build(module, kernels, options, device)
    except Exception as exc:
        if len(kernels) > 1:
            for kernel in kernels:  # find the culprit for a precise message
                _build(module, [kernel], options, device)
        name = kernels[0].key
        raise ExtractionError(name, f"Warp could not build it for {device}: {type(exc).__name__}: {exc}") from exc


def _kernel_ir(kernel, device: str, build: wb.Build, options: dict, backward: bool) -> KernelIR:
    try:
        args_struct, forward, reverse = wb.kernel_code(kernel, device, options)
        functions = []
        for func in wb.called_functions(kernel):
            fwd, adj = wb.function_code(build, func, device, options)
            functions.append(FunctionIR(func.key, wb.function_native_name(func), _source_of(func), fwd, adj))
        structs = build.struct_code(kernel, device)
    except Exception as exc:
        raise ExtractionError(kernel.key, f"code generation failed for {device}: {type(exc).__name__}: {exc}") from exc
    if not backward:
        reverse = None
        functions = [FunctionIR(f.name, f.native_name, f.python_source, f.forward, None) for f in functions]
    merged = options | kernel.options
    return KernelIR(
        kernel_name=kernel.key,
        mangled_name=wb.mangled_name(kernel),
        device=device,
        source_ext=SOURCE_EXT[device],
        python_source=_source_of(kernel),
        forward=forward,
        backward=reverse,
        functions=functions,
        structs=structs,
        args_struct=args_struct,
        metadata={
            "args": [{"name": n, "type": t} for n, t in wb.argument_types(kernel)],
            "warp_version": wb.warp_version(),
            "module": getattr(wb.kernel_module(kernel), "name", None),
            "options": {
                "block_dim": merged["block_dim"],
                "enable_backward": bool(merged["enable_backward"]),
                "mode": merged["mode"],
                "output_arch": merged.get("output_arch"),
            },
            "generic_parent": kernel.generic_parent.key if kernel.generic_parent is not None else None,
        },
    )


def _source_of(obj) -> str:
    try:
        return wb.python_source(obj)
    except Exception:  # native snippets have no Python body
        return ""
