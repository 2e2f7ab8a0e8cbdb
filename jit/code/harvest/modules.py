"""Kernels of existing Warp code (files, folders, packages) as a source of the dataset engine.

``ModuleKernels.resolve(targets)`` finds the modules; each part of the module list is imported in
a fresh process, and every concrete kernel it defines (each registered overload of a generic
kernel) becomes one record with its provenance. What it leaves out: the command line
(``jit.code.commands.extract`` describes what users see) and the engine's merge and writing.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import ExtractionError, KernelIR, extract_many
from jit.code.analysis.purpose import purpose_of
from jit.code.engine import source as engine_source
from jit.code.records import Pair, build_record, salted_id


class NoOverloads(ExtractionError):
    """A generic kernel with no registered overload: its argument types are only known at launch."""


class TargetNotFound(Exception):
    """TARGET is neither an existing path nor an importable module name."""


@dataclass(slots=True)
class Source:
    """A Python module to import: by package name, or by file path under a private name."""

    name: str
    path: Path | None = None


@dataclass(slots=True)
class Report:
    """What happened to a part's modules: kernels found and extracted, failures by reason."""

    found: int = 0
    extracted: int = 0
    failed: Counter = field(default_factory=Counter)
    skipped: int = 0  # generic kernels without overloads: no concrete code exists until a launch
    modules: int = 0
    import_failed: int = 0


# ---------------------------------------------------------------------------------------------
# finding modules and kernels


def resolve_target(target: str) -> list[Source]:
    """The modules TARGET names; raises ``TargetNotFound``."""
    path = Path(target)
    if path.is_file():
        if path.suffix != ".py":
            raise TargetNotFound(f"{target} is not a .py file")
        return [_file_source(path)]
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.py") if not any(part.startswith((".", "__pycache__"))
                                                                for part in p.relative_to(path).parts))
        return [_file_source(p) for p in files]
    if target.endswith(".py") or os.sep in target or not all(p.isidentifier() for p in target.split(".")):
        raise TargetNotFound(f"no such file or folder: {target}")
    try:
        spec = importlib.util.find_spec(target)
    except Exception as exc:  # a parent package failed to import
        raise TargetNotFound(f"cannot import {target}: {type(exc).__name__}: {exc}") from exc
    if spec is None:
        raise TargetNotFound(f"no such file, folder or module: {target}")
    sources = [Source(target)]
    if spec.submodule_search_locations:
        sources += [Source(name) for name in _submodules(target)]
    return sources


def _file_source(path: Path) -> Source:
    path = path.resolve()
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return Source(f"_jit_extract_{digest}_{stem}", path)


def _submodules(package: str) -> list[str]:
    """Every submodule of ``package``, namespace sub-folders (no ``__init__.py``) included.

    Found from the package's folders without importing anything but the package itself.
    """
    try:
        with wb.preserved_config(), contextlib.redirect_stdout(sys.stderr):
            root = importlib.import_module(package)
    except (Exception, SystemExit) as exc:
        raise TargetNotFound(f"cannot import {package}: {type(exc).__name__}: {_first_line(exc)}") from exc
    names: list[str] = []
    for folder in getattr(root, "__path__", []):
        names += _walk_folder(Path(folder), package + ".")
    return sorted(set(names))


def _walk_folder(folder: Path, prefix: str) -> list[str]:
    names = []
    for info in pkgutil.iter_modules([str(folder)]):
        names.append(prefix + info.name)
        if info.ispkg:
            names += _walk_folder(folder / info.name, prefix + info.name + ".")
    for sub in sorted(folder.iterdir()):
        if sub.is_dir() and sub.name.isidentifier() and not (sub / "__init__.py").exists() \
                and any(sub.rglob("*.py")):
            names += _walk_folder(sub, prefix + sub.name + ".")
    return names


def import_source(source: Source) -> tuple[ModuleType, dict]:
    """Import one module; returns it and the global wp.config changes its import made (undone)."""
    wb.init()
    # imported code may print; stdout is kept for the summary line
    with wb.preserved_config(), contextlib.redirect_stdout(sys.stderr):
        before = wb.config_snapshot()
        if source.path is None:
            module = importlib.import_module(source.name)
        else:
            module = sys.modules.get(source.name) or _import_file(source)
        after = wb.config_snapshot()
    changes = {k: v for k, v in after.items() if before.get(k) != v and k != "log_level"}
    return module, changes


def _import_file(source: Source) -> ModuleType:
    spec = importlib.util.spec_from_file_location(source.name, source.path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[source.name] = module  # Warp looks the module up here (and so do dataclasses)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(source.name, None)
        raise
    return module


def module_kernels(module: ModuleType) -> list:
    """Kernels whose Python function ``module`` defines: module-level ones and factory-made ones."""
    name = module.__name__
    found: dict[int, object] = {}
    warp_modules = []
    for obj in vars(module).values():
        # an overload kept in a variable (x = wp.overload(...)) comes through its generic parent
        if wb.is_kernel(obj) and wb.defining_module(obj) == name and wb.overload_signature(obj) is None:
            found.setdefault(id(obj), obj)
            warp_modules.append(wb.kernel_module(obj))
    registered = wb.module_named(name)
    if registered is not None:
        warp_modules.insert(0, registered)
    seen_modules: set[int] = set()
    for warp_module in warp_modules:
        if id(warp_module) in seen_modules:
            continue
        seen_modules.add(id(warp_module))
        for kernel in wb.live_kernels(warp_module):
            if wb.defining_module(kernel) == name:
                found.setdefault(id(kernel), kernel)
    return list(found.values())


# ---------------------------------------------------------------------------------------------
# kernels -> records


def extract_module_kernels(kernels: list, devices: tuple[str, ...], backward: bool = True) -> Iterator[tuple[object, dict | ExtractionError]]:
    """(kernel, {device: KernelIR}) per concrete kernel, or (kernel, ExtractionError) for a failure.

    Kernels of one Warp module are built together; if that fails, one by one, so a bad
    kernel does not take its neighbours down.
    """
    groups: dict[int, list] = {}
    for kernel in kernels:
        groups.setdefault(id(wb.kernel_module(kernel)), []).append(kernel)
    for group in groups.values():
        concrete = []
        for kernel in group:
            overloads = wb.kernel_overloads(kernel)
            if not overloads:
                yield kernel, NoOverloads(kernel.key, "generic kernel without overloads")
            concrete += overloads
        if not concrete:
            continue
        try:
            irs = extract_many(concrete, devices, backward=backward)
        except Exception:
            for kernel in concrete:
                yield kernel, _extract_alone(kernel, devices, backward)
        else:
            yield from zip(concrete, irs)


def _extract_alone(kernel, devices, backward: bool = True) -> dict | ExtractionError:
    try:
        return extract_many([kernel], devices, backward=backward)[0]
    except ExtractionError as exc:
        if "cuda" in devices and wb.uses_tiles(kernel) and "for cuda" in exc.reason:
            return _smaller_block(kernel, devices, exc, backward)
        return exc
    except Exception as exc:
        return ExtractionError(kernel.key, f"{type(exc).__name__}: {exc}")


def _smaller_block(kernel, devices, error: ExtractionError, backward: bool = True) -> dict | ExtractionError:
    """A tile kernel that does not build at the module's block_dim on CUDA (e.g. ``tile_fft``
    needs a few elements per thread): its real launch passes a smaller ``block_dim``, so try
    halving it. The code is then what Warp compiles for a launch with that block_dim.
    """
    module_block_dim = wb.resolve_options(wb.kernel_module(kernel), "cuda")["block_dim"]
    block_dim = module_block_dim // 2
    while block_dim >= 1:
        try:
            cuda = extract_many([kernel], ("cuda",), block_dim=block_dim, backward=backward)[0]
        except ExtractionError:
            block_dim //= 2
            continue
        try:  # the other devices' code does not depend on the CUDA block_dim
            others = extract_many([kernel], [d for d in devices if d != "cuda"], backward=backward)[0] if len(devices) > 1 else {}
        except ExtractionError:
            return error
        cuda["cuda"].metadata["options"]["module_block_dim"] = module_block_dim
        return {d: (cuda if d == "cuda" else others)[d] for d in devices}
    return error


def make_pair(kernel, irs: dict[str, KernelIR], source: Source, config_changes: dict) -> Pair:
    """One dataset record from a concrete kernel's per-device IR, with its provenance."""
    from jit.code.extraction.provenance import provenance

    first = next(iter(irs.values()))
    python_source, why = readable_source(kernel, first)
    pair = build_record(irs, first.kernel_name, "extracted", python_source, {})
    func = wb.python_function(kernel)
    module = source.name if source.path is None else source.path.stem
    filename = str(source.path) if source.path is not None else func.__code__.co_filename
    pair.metadata = {
        "found_by": "module",
        **provenance(module if source.path is None else "", filename),
        "module": module,
        "line": func.__code__.co_firstlineno,
        "warp_version": first.metadata["warp_version"],
        "args": first.metadata["args"],
        "helpers": [f.name for f in first.functions],
        "generic_parent": first.metadata["generic_parent"],
        "overload": wb.overload_signature(kernel),
        "self_contained": why is None,
        "self_contained_reason": why,
        "devices": {d: {"mangled_name": ir.mangled_name, "source_ext": ir.source_ext, **ir.metadata["options"]}
                    for d, ir in irs.items()},
        "config_changes": config_changes,
    }
    purpose = purpose_of(python_source, pair.kernel_name)
    if purpose:
        pair.metadata["purpose"] = purpose
    if why is not None:  # the text may not tell this kernel from another one: its code does
        pair.metadata["id_salt"] = "code"
        pair.id = salted_id(python_source, pair.cpu_forward or pair.cuda_forward or "")
    return pair


def readable_source(kernel, ir: KernelIR) -> tuple[str, str | None]:
    """``self_contained_source`` of the kernel; when its best attempt is not even valid Python (a
    value with no Python text), the helpers' and the kernel's own source text instead."""
    import ast

    from jit.code.extraction.source_text import self_contained_source

    text, why = self_contained_source(kernel)
    try:
        ast.parse(text)
        return text, why
    except SyntaxError:
        helpers = dict.fromkeys(f.python_source.strip("\n") for f in ir.functions if f.python_source.strip())
        return "\n\n".join(["import warp as wp", *helpers, ir.python_source.strip("\n")]) + "\n", why


def failure_reason(error: ExtractionError) -> str:
    """A short, countable reason: the failure kind without the kernel-specific message."""
    reason = error.reason
    if reason.startswith("Warp could not build it for"):
        device = reason.split(":")[0].rsplit(" ", 1)[-1]
        kind = reason.split(":")[1].strip()
        return f"build failed on {device} ({kind})"
    if reason.startswith("code generation failed"):
        return "code generation failed"
    return reason.split(":")[0]


# ---------------------------------------------------------------------------------------------
# the source


MODULES_PER_PART = 4


@dataclass(frozen=True, slots=True)
class ModuleKernels(engine_source.Source):
    """Module extraction as a source of the dataset engine: item ``i`` is the ``i``-th module."""

    targets: tuple[str, ...]
    modules: tuple[tuple[str, str | None], ...]  # (import name, file path or None)
    name = "extract"
    growable = False
    fresh_process = True

    @classmethod
    def resolve(cls, targets: list[str]) -> "ModuleKernels":
        """Raises ``TargetNotFound``; a module named by two targets is imported once."""
        modules: dict[tuple[str, str | None], None] = {}
        for target in targets:
            for source in resolve_target(target):
                modules[(source.name, None if source.path is None else str(source.path))] = None
        return cls(tuple(targets), tuple(modules))

    def identity(self) -> dict:
        return {"targets": list(self.targets)}

    def size(self, run) -> int:
        return len(self.modules)

    def part_size(self, run) -> int:
        return MODULES_PER_PART

    def warm(self, run) -> None:
        wb.init()
        wb.silence_performance_notes()

    def describe(self) -> dict:
        return {"warp_version": wb.warp_version(), "origin": "found by importing modules (`jit-synth extract`)",
                "targets": list(self.targets), "modules": len(self.modules)}

    def cleanup(self) -> None:
        wb.sweep_pch_folders()

    def run_part(self, run, part, progress=None):
        return run_part(self, run, part, progress)


def run_part(source: ModuleKernels, run, part, progress=None):
    """Import the part's modules, extract (and validate) their kernels, write the part."""
    import time

    from jit.code.engine import writers
    from jit.code.engine.run import PartStats

    wb.init()
    wb.silence_performance_notes()
    t0 = time.perf_counter()
    stats = PartStats(part.number, part.start, part.stop)
    report = Report()
    out = writers.PartWriter(run.out, part.number)
    seen_ids: dict[str, str] = {}
    row = 0
    for name, path in source.modules[part.start:part.stop]:
        module_source = Source(name, None if path is None else Path(path))
        # the order Warp keeps a module's factory kernels in can vary between processes: sort by
        # where they are defined and then by content, so every worker count gives the same records
        found = sorted(_source_pairs(module_source, run.devices, report, _log, run.backward),
                       key=lambda f: (f[1].metadata["line"], f[1].kernel_name, f[1].id,
                                      f[1].cpu_forward or f[1].cuda_forward or ""))
        irs = {id(kernel): ir for kernel, _, ir in found}
        pairs = [(kernel, pair) for kernel, pair, _ in found]
        rejects_before = sum(stats.rejects.values())
        pairs = _checked(pairs, run, stats)
        if run.validate != "none":  # a compiler ran: the text must give the same code
            for kernel, pair in pairs:
                check_self_contained(kernel, pair, irs[id(kernel)], run.backward)
        for kernel, pair in pairs:
            pair.id = _unique_id(pair, seen_ids)
            out.add(row, pair.to_dict())
            row += 1
        if progress is not None:
            progress.put((len(pairs), sum(stats.rejects.values()) - rejects_before))
    for reason, n in report.failed.items():
        stats.rejects[reason] += n
    stats.rejects["import failed"] += report.import_failed
    stats.rejects["generic kernel without overloads"] += report.skipped
    stats.rejects = +stats.rejects
    stats.records = len(out)
    stats.counts = {"modules_imported": report.modules, "modules_failed": report.import_failed,
                   "kernels_found": report.found}
    stats.seconds = time.perf_counter() - t0
    out.finish(stats.to_dict())
    return stats


def check_self_contained(kernel, pair: Pair, irs: dict[str, KernelIR], backward: bool) -> None:
    """Rebuild the kernel from the record's text alone; if that does not give the same code, the
    text is not self-contained after all: say why and let the id include the code."""
    from jit.code.extraction.source_text import rebuild_difference

    meta = pair.metadata
    if not meta.get("self_contained"):
        return
    device = "cpu" if "cpu" in irs else "cuda"
    why = rebuild_difference(kernel, pair.python_source, device, original=irs[device], backward=backward)
    if why is not None:
        meta["self_contained"], meta["self_contained_reason"] = False, why
        meta["id_salt"] = "code"
        pair.id = salted_id(pair.python_source, pair.cpu_forward or pair.cuda_forward or "")


def _log(message: str) -> None:
    print(f"[jit-synth extract] {message}", file=sys.stderr, flush=True)


def _checked(pairs: list, run, stats) -> list:
    """The (kernel, pair)s that pass the run's checks (``jit.code.checks``); counts the others."""
    from jit.code import checks

    batch = checks.Batch({str(i): pair for i, (_, pair) in enumerate(pairs)},
                         {str(i): kernel for i, (kernel, _) in enumerate(pairs)})
    failed = checks.apply(run, batch)
    for reason in failed.values():
        stats.rejects[reason] += 1
    return [p for i, p in enumerate(pairs) if str(i) not in failed]


def _source_pairs(source: Source, devices, report: Report, log,
                  backward: bool = True) -> Iterator[tuple[object, Pair, dict[str, KernelIR]]]:
    label = str(source.path) if source.path is not None else source.name
    try:
        module, changes = import_source(source)
    except (Exception, SystemExit) as exc:
        report.import_failed += 1
        log(f"import failed: {label}: {type(exc).__name__}: {_first_line(exc)}")
        return
    report.modules += 1
    emitted = set()
    for kernel, result in extract_module_kernels(module_kernels(module), devices, backward):
        if isinstance(result, dict):
            # a kernel defined twice with the same content (and hash): Warp compiles it once
            key = (wb.kernel_module(kernel).name, *(ir.mangled_name for ir in result.values()))
            if key in emitted:
                continue
            emitted.add(key)
        if isinstance(result, NoOverloads):
            report.skipped += 1
            log(f"kernel skipped: {label}: {result.kernel}: generic, no wp.overload registered")
            continue
        report.found += 1
        if isinstance(result, ExtractionError):
            report.failed[failure_reason(result)] += 1
            log(f"kernel failed: {label}: {result.kernel}: {_first_line(result)}")
            continue
        report.extracted += 1
        yield kernel, make_pair(kernel, result, source, changes), result


def _unique_id(pair: Pair, seen: dict[str, str]) -> str:
    """Same id but different code within a part: tell apart by the code (``records.salted_id``)."""
    code = pair.cpu_forward or pair.cuda_forward or ""
    first = seen.setdefault(pair.id, code)
    if first == code:
        return pair.id
    pair.metadata["id_salt"] = "code"
    salted = salted_id(pair.python_source, code)
    seen.setdefault(salted, code)
    return salted


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
