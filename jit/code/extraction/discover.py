"""Extract training pairs from existing Warp code: a .py file, a folder, or a package.

TARGET is a path to a .py file, a folder (searched recursively for .py files), or the
name of an importable module or package (every submodule is imported). Each kernel found
becomes one JSONL record per concrete kernel: a generic kernel gives one record per
registered overload (wp.overload). Fields: id, kernel_name, category ("extracted"),
python_source, cpu_forward, cpu_backward, cuda_forward, cuda_backward, cpu_functions,
cuda_functions, validation, metadata. Code for a device that was not requested is null;
a backward is null where Warp generates none (enable_backward=False).

  python_source    the user @wp.func helpers the kernel calls (callees first), then the kernel;
                   @wp.struct classes are not repeated there (their C++ is in <dev>_functions)
  <dev>_forward    the forward function; on CPU preceded by the wp_args_<kernel> struct
  <dev>_functions  the generated structs, helper forwards and helper adjoints it needs
  metadata         module, file, warp_version, args, helpers, overload signature, and per
                   device the mangled name and options (block_dim: 1 on CPU, the module's on CUDA)

The code is what Warp compiles when the kernel is launched with default launch options.
Global wp.config changes an imported module makes are listed in metadata.config_changes and
undone after its import, so they do not leak into the next module; what Warp copied into
the module's own options meanwhile (enable_backward, when its first kernel is defined)
stays, as it does in a real launch. A kernel belongs to the module whose source defines its
Python function: module-level kernels, and kernels made by factories at import time.
Files are imported by path under a private module name, so a file that imports its
siblings by plain name fails to import unless its folder is on the import path.

A module that fails to import, or a kernel that fails to extract, is reported on stderr
and skipped; the last line on stdout counts kernels found, extracted and failed by reason.
The output file is written under a temporary name and renamed when complete.
Exit status: 0 done, 1 nothing could be extracted, 2 bad TARGET or --device.

  jit-synth extract warp.examples --device both --output examples.jsonl
  jit-synth extract my_sim/ --device cuda --output my_sim.jsonl
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
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
from jit.code.dataset.records import DEVICE_CHOICES, Pair, content_id



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
    """What happened to a run: kernels found, records written, failures by reason."""

    found: int = 0
    extracted: int = 0
    failed: Counter = field(default_factory=Counter)
    skipped: int = 0  # generic kernels without overloads: no concrete code exists until a launch
    modules: int = 0
    import_failed: int = 0

    def summary(self) -> str:
        failed = sum(self.failed.values())
        reasons = ", ".join(f"{reason}: {n}" for reason, n in self.failed.most_common())
        line = (f"modules: {self.modules} imported, {self.import_failed} failed to import; "
                f"kernels: {self.found} found, {self.extracted} extracted, {failed} failed")
        line += f" ({reasons})" if reasons else ""
        if self.skipped:
            line += f", {self.skipped} skipped (generic kernel without overloads)"
        return line


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


def extract_module_kernels(kernels: list, devices: tuple[str, ...]) -> Iterator[tuple[object, dict | ExtractionError]]:
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
            irs = extract_many(concrete, devices)
        except Exception:
            for kernel in concrete:
                yield kernel, _extract_alone(kernel, devices)
        else:
            yield from zip(concrete, irs)


def _extract_alone(kernel, devices) -> dict | ExtractionError:
    try:
        return extract_many([kernel], devices)[0]
    except ExtractionError as exc:
        if "cuda" in devices and wb.uses_tiles(kernel) and "for cuda" in exc.reason:
            return _smaller_block(kernel, devices, exc)
        return exc
    except Exception as exc:
        return ExtractionError(kernel.key, f"{type(exc).__name__}: {exc}")


def _smaller_block(kernel, devices, error: ExtractionError) -> dict | ExtractionError:
    """A tile kernel that does not build at the module's block_dim on CUDA (e.g. ``tile_fft``
    needs a few elements per thread): its real launch passes a smaller ``block_dim``, so try
    halving it. The code is then what Warp compiles for a launch with that block_dim.
    """
    module_block_dim = wb.resolve_options(wb.kernel_module(kernel), "cuda")["block_dim"]
    block_dim = module_block_dim // 2
    while block_dim >= 1:
        try:
            cuda = extract_many([kernel], ("cuda",), block_dim=block_dim)[0]
        except ExtractionError:
            block_dim //= 2
            continue
        try:  # the other devices' code does not depend on the CUDA block_dim
            others = extract_many([kernel], [d for d in devices if d != "cuda"])[0] if len(devices) > 1 else {}
        except ExtractionError:
            return error
        cuda["cuda"].metadata["options"]["module_block_dim"] = module_block_dim
        return {d: (cuda if d == "cuda" else others)[d] for d in devices}
    return error


def make_pair(kernel, irs: dict[str, KernelIR], source: Source, config_changes: dict) -> Pair:
    """One dataset record from a concrete kernel's per-device IR."""
    first = next(iter(irs.values()))
    # overloads of a generic helper share one source: list it once
    helpers = dict.fromkeys(f.python_source.strip("\n") for f in first.functions if f.python_source.strip())
    python_source = "\n\n".join([*helpers, first.python_source.strip("\n")]) + "\n"
    signature = wb.overload_signature(kernel)
    pair_id = content_id(python_source)
    if signature is not None:  # overloads share the source; their argument types tell them apart
        pair_id = hashlib.sha256(f"{pair_id}:{signature}".encode()).hexdigest()[:20]
    pair = Pair(id=pair_id, kernel_name=first.kernel_name, category="extracted", python_source=python_source)
    for device, ir in irs.items():
        forward = ir.forward if not ir.args_struct else ir.args_struct.strip("\n") + "\n" + ir.forward
        setattr(pair, f"{device}_forward", forward)
        setattr(pair, f"{device}_backward", ir.backward)
        setattr(pair, f"{device}_functions", functions_code(ir))
    pair.metadata = {
        "module": source.name if source.path is None else source.path.stem,
        "file": _file_of(kernel, source),
        "warp_version": first.metadata["warp_version"],
        "args": first.metadata["args"],
        "helpers": [f.name for f in first.functions],
        "generic_parent": first.metadata["generic_parent"],
        "overload_signature": signature,
        "devices": {d: {"mangled_name": ir.mangled_name, "source_ext": ir.source_ext, **ir.metadata["options"]}
                    for d, ir in irs.items()},
        "config_changes": config_changes,
    }
    return pair


def functions_code(ir: KernelIR) -> str:
    """Generated structs, helper forwards and helper adjoints, in the order Warp emits them."""
    parts = [text for _, text in ir.structs]
    parts += [f.forward for f in ir.functions]
    parts += [f.adjoint for f in ir.functions if f.adjoint]
    return "\n".join(p.strip("\n") for p in parts if p.strip()) + ("\n" if parts else "")


def _file_of(kernel, source: Source) -> str | None:
    if source.path is not None:
        return str(source.path)
    code = getattr(kernel.func, "__code__", None)
    return code.co_filename if code is not None else None


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
# the command


def run_extract(sources: list[Source], devices: tuple[str, ...], output: Path, progress: bool = False,
                log=None) -> Report:
    """Import every source, extract its kernels and write the JSONL file (atomically)."""
    from tqdm import tqdm

    log = log or (lambda message: tqdm.write(message, file=sys.stderr))
    report = Report()
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp-{os.getpid()}")
    seen_ids: dict[str, str] = {}
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            for source in tqdm(sources, desc="modules", unit="mod", disable=not progress, file=sys.stderr):
                for pair in _source_pairs(source, devices, report, log):
                    pair.id = _unique_id(pair, seen_ids)
                    out.write(json.dumps(pair.to_dict(), ensure_ascii=False, default=str) + "\n")
        os.replace(tmp, output)
    finally:
        if tmp.exists():
            tmp.unlink()
    return report


def _source_pairs(source: Source, devices, report: Report, log) -> Iterator[Pair]:
    label = str(source.path) if source.path is not None else source.name
    try:
        module, changes = import_source(source)
    except (Exception, SystemExit) as exc:
        report.import_failed += 1
        log(f"import failed: {label}: {type(exc).__name__}: {_first_line(exc)}")
        return
    report.modules += 1
    emitted = set()
    for kernel, result in extract_module_kernels(module_kernels(module), devices):
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
        yield make_pair(kernel, result, source, changes)


def _unique_id(pair: Pair, seen: dict[str, str]) -> str:
    """Same source but different code (e.g. kernels a factory makes with other constants): tell apart."""
    code = pair.cpu_forward or pair.cuda_forward or ""
    first = seen.setdefault(pair.id, code)
    if first == code:
        return pair.id
    salted = hashlib.sha256(f"{pair.id}:{code}".encode()).hexdigest()[:20]
    seen.setdefault(salted, code)
    return salted


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def add_arguments(parser) -> None:
    parser.add_argument("target", metavar="TARGET",
                        help="a .py file, a folder of them, or an importable module/package name")
    parser.add_argument("--device", default="both", metavar="{cpu,cuda,both}",
                        help="which device's generated code to extract (default: both)")
    parser.add_argument("--output", "-o", required=True, type=Path, metavar="FILE.jsonl",
                        help="the JSONL file to write (replaced only when complete)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    parser.set_defaults(run=run)


def run(args, parser) -> int:
    devices = DEVICE_CHOICES.get(args.device)
    if devices is None:
        print(f"{parser.prog}: error: unknown --device {args.device!r} (choose cpu, cuda or both)", file=sys.stderr)
        return 2
    try:
        sources = resolve_target(args.target)
    except TargetNotFound as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    progress = not args.no_progress and sys.stderr.isatty()
    report = run_extract(sources, devices, args.output, progress=progress)
    print(report.summary())
    return 1 if report.found and not report.extracted else 0


def main(argv: list[str] | None = None) -> int:
    """``jit-synth extract`` on its own."""
    from jit import cli

    return cli.run_command("jit-synth extract", sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
