"""Kernels a running program builds: run it unchanged and record each one (``jit-synth trace``).

``run_traced(["python", "sim.py", ...], devices, workdir)`` runs the program as a child of
this interpreter (``python SCRIPT``, ``python -m MODULE`` or ``pytest ...``), in the caller's
working directory, with its output passed through to the terminal. A ``sitecustomize`` in a
folder under ``workdir``, put first on ``PYTHONPATH``, waits for Warp to be imported and then
watches every ``Module.load``: each concrete kernel a load builds (module-level kernels,
factory closures, generic kernels instantiated by a launch, ``module="unique"`` kernels) is
extracted for the requested devices with the options that load resolved, and appended as one
flushed JSON line to ``workdir/records/kernels-<pid>.jsonl``. A program that crashes after
building kernels therefore still yields them, and processes the program starts are traced too.

A kernel is recorded once per (module, key, overload signature, content hash, options).
Code for the device the program built on uses the block_dim of that build; the other device
gets what a launch there would build by default (CPU: block_dim 1; CUDA: the build's
block_dim when the program built for CUDA, else the module's).

What it leaves out: the dataset (records are plain dicts with the fields of ``Pair``; the
engine deduplicates, validates and writes them) and the command line. Nothing is written
outside ``workdir`` except what the program itself writes (Warp's kernel cache included).
"""

from __future__ import annotations

import collections
import importlib.metadata
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ENV_DIR = "JIT_SYNTH_TRACE_DIR"  # where the child writes; its presence turns the hook on
ENV_DEVICES = "JIT_SYNTH_TRACE_DEVICES"
ENV_BACKWARD = "JIT_SYNTH_TRACE_BACKWARD"
TAIL_LINES = 40

# Runs at interpreter start-up in the traced program (and in every Python it starts). It must
# stay cheap and import nothing of ours until Warp's context module exists, then chain to the
# sitecustomize this one hides, if any.
_SITECUSTOMIZE = '''\
import os, sys

def _jit_synth_trace_setup():
    import importlib.abc, importlib.machinery
    here = os.path.dirname(os.path.abspath(__file__))

    class _WaitForWarp(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != "warp._src.context":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                sys.meta_path[:] = [f for f in sys.meta_path if f is not finder]
                from jit.code.extraction import trace
                trace.install(module)

            spec.loader.exec_module = exec_module
            return spec

    finder = _WaitForWarp()
    if os.environ.get("{env}"):
        sys.meta_path.insert(0, finder)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    me = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # the one this file hides
    except ImportError:
        sys.modules["sitecustomize"] = me

_jit_synth_trace_setup()
del _jit_synth_trace_setup
'''.replace("{env}", ENV_DIR)


@dataclass(slots=True)
class TraceResult:
    """What a traced run gave: records, the program's exit status and output tail, failures."""

    records: list[dict]
    exit_status: int
    output_tail: str
    captured: int = 0
    failed: Counter = field(default_factory=Counter)


# ---------------------------------------------------------------------------------------------
# the parent: run the program


def run_traced(argv: list[str], devices: tuple[str, ...], workdir: Path, backward: bool = True) -> TraceResult:
    """Run ``argv`` (``python SCRIPT ...``, ``python -m MODULE ...``, ``pytest ...``) and record its kernels."""
    workdir = Path(workdir).resolve()
    hook_dir, out_dir = workdir / "hook", workdir / "records"
    hook_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    (hook_dir / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook_dir), env.get("PYTHONPATH")) if p)
    env[ENV_DIR] = str(out_dir)
    env[ENV_DEVICES] = ",".join(devices)
    env[ENV_BACKWARD] = "1" if backward else "0"
    process = subprocess.Popen(child_command(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tail: collections.deque = collections.deque(maxlen=TAIL_LINES)
    pumps = [threading.Thread(target=_pump, args=(stream, sink, tail), daemon=True)
             for stream, sink in ((process.stdout, sys.stdout), (process.stderr, sys.stderr))]
    for pump in pumps:
        pump.start()
    status = process.wait()
    for pump in pumps:
        pump.join()
    records, failed = read_records(out_dir)
    return TraceResult(records, status, "".join(tail), len(records), failed)


def child_command(argv: list[str]) -> list[str]:
    """The program's command line run by this interpreter (so the hook and package are there)."""
    if not argv:
        raise ValueError("nothing to run: give a command such as: python script.py")
    program = Path(argv[0]).name
    if program.startswith("python"):
        return [sys.executable, *argv[1:]]
    if program in ("pytest", "py.test"):
        return [sys.executable, "-m", "pytest", *argv[1:]]
    raise ValueError(f"cannot trace {argv[0]!r}: run a Python program (python ..., python -m ..., pytest ...)")


def _pump(stream, sink, tail: collections.deque) -> None:
    """Copy a child's stream to ours as it comes, keeping the last lines."""
    target = getattr(sink, "buffer", None)
    for line in iter(stream.readline, b""):
        if target is not None:
            target.write(line)
            target.flush()
        else:
            sink.write(line.decode("utf-8", "replace"))
            sink.flush()
        tail.append(line.decode("utf-8", "replace"))
    stream.close()


def read_records(out_dir: Path) -> tuple[list[dict], Counter]:
    """Records and failure counts from every traced process; each kernel once, torn lines skipped."""
    records, seen, failed = [], set(), Counter()
    for path in sorted(Path(out_dir).glob("kernels-*.jsonl")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:  # the process died while writing this line
                    continue
                if "failed" in item:
                    failed[item["failed"]] += 1
                elif item["metadata"]["trace_key"] not in seen:
                    seen.add(item["metadata"]["trace_key"])
                    records.append(item)
    return records, failed


# ---------------------------------------------------------------------------------------------
# the child: the hook


_recorder = None


def install(context_module=None) -> None:
    """Start recording in this process (called by the sitecustomize once Warp's context exists)."""
    global _recorder
    if _recorder is not None or not os.environ.get(ENV_DIR):
        return
    devices = tuple(d for d in os.environ.get(ENV_DEVICES, "cpu").split(",") if d)
    _recorder = _Recorder(Path(os.environ[ENV_DIR]), devices, os.environ.get(ENV_BACKWARD, "1") == "1")
    # warp_backend imports warp, which is still importing this context module: defer to the first load
    context_module.Module.load = _first_load(context_module.Module, context_module.Module.load)


def _first_load(cls, original):
    def load(self, *args, **kwargs):
        from jit.code.extraction import warp_backend as wb

        cls.load = original
        wb.watch_module_loads(_recorder.on_load)
        return cls.load(self, *args, **kwargs)

    return load


class _Recorder:
    """Extracts and appends each kernel a load built; one instance per traced process."""

    def __init__(self, out_dir: Path, devices: tuple[str, ...], backward: bool):
        self.path = out_dir / f"kernels-{os.getpid()}.jsonl"
        self.devices = devices
        self.backward = backward
        self.seen: set = set()
        self.lock = threading.RLock()
        self.busy = False
        self.file = None

    def on_load(self, module, device: str, block_dim: int) -> None:
        with self.lock:
            if self.busy:  # a load caused by our own work
                return
            self.busy = True
            try:
                self.record_build(module, device, block_dim)
            except Exception as exc:  # never break the program we watch
                self.write({"failed": f"hook error: {type(exc).__name__}", "detail": str(exc)[:300]})
            finally:
                self.busy = False

    def record_build(self, module, device: str, block_dim: int) -> None:
        from jit.code.extraction import warp_backend as wb

        wb.attach()
        kernels, options = wb.loaded_build(module, block_dim)
        built_on = "cpu" if device == "cpu" else "cuda"
        # CPU launches build with block_dim 1: let the other device take its own default
        extract_block_dim = None if (built_on == "cpu" and block_dim == 1) else block_dim
        new = []
        for kernel in kernels:
            key = (*wb.kernel_identity(kernel), wb.kernel_hash(kernel), extract_block_dim, _options_key(options))
            if key not in self.seen:
                self.seen.add(key)
                new.append((kernel, key))
        if new:
            with wb.kernel_state_kept(kernels):
                for kernel, key in new:
                    self.record_kernel(kernel, key, options, device, block_dim, extract_block_dim)

    def record_kernel(self, kernel, key, options: dict, device: str, block_dim: int, extract_block_dim) -> None:
        from jit.code.extraction.ir_extractor import ExtractionError, extract_many

        try:
            irs = extract_many([kernel], self.devices, backward=self.backward, block_dim=extract_block_dim)[0]
        except ExtractionError as exc:
            self.write({"failed": _reason(exc), "kernel": kernel.key, "detail": exc.reason[:300]})
            return
        self.write(make_record(kernel, irs, options, device, block_dim, key))

    def write(self, item: dict) -> None:
        if self.file is None:
            self.file = open(self.path, "a", encoding="utf-8")
        self.file.write(json.dumps(item, ensure_ascii=False, default=str) + "\n")
        self.file.flush()


def _reason(exc) -> str:
    from jit.code.extraction.discover import failure_reason

    return failure_reason(exc)


def _options_key(options: dict) -> str:
    return json.dumps(options, sort_keys=True, default=str)


def make_record(kernel, irs: dict, options: dict, device: str, block_dim: int, key) -> dict:
    """One record (the fields of ``Pair``) for a traced kernel."""
    from jit.code.extraction import warp_backend as wb
    from jit.code.extraction.discover import functions_code
    from jit.code.extraction.source_text import self_contained_source
    from jit.code.dataset.records import Pair, content_id

    source, why = self_contained_source(kernel)
    first = next(iter(irs.values()))
    pair = Pair(id=content_id(source), kernel_name=first.kernel_name, category="traced", python_source=source)
    for dev, ir in irs.items():
        setattr(pair, f"{dev}_forward", ir.forward if not ir.args_struct else ir.args_struct.strip("\n") + "\n" + ir.forward)
        setattr(pair, f"{dev}_backward", ir.backward)
        setattr(pair, f"{dev}_functions", functions_code(ir))
    pair.validation = {dev: "generated" for dev in irs}
    func = wb.python_function(kernel)
    module = _module_name(func)
    pair.metadata = {
        "found_by": "trace",
        **provenance(module, func.__code__.co_filename),
        "module": module,
        "line": func.__code__.co_firstlineno,
        "device": device,
        "options": {k: options[k] for k in sorted(options)},
        "kernel_options": dict(kernel.options),
        "block_dim": block_dim,
        "overload": wb.overload_signature(kernel),
        "self_contained": why is None,
        "self_contained_reason": why,
        "warp_version": wb.warp_version(),
        "devices": {d: {"mangled_name": ir.mangled_name, **ir.metadata["options"]} for d, ir in irs.items()},
        "trace_key": "|".join(str(part) for part in key),
    }
    return pair.to_dict()


def _module_name(func) -> str:
    """The module's import name; ``python -m pkg.mod`` runs it as ``__main__``."""
    spec = func.__globals__.get("__spec__") if func.__module__ == "__main__" else None
    return spec.name if spec is not None else func.__module__


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
