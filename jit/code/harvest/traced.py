"""Kernels a running program builds, as a source of the dataset engine.

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
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from jit.code.engine.source import Source  # light: the child's hook imports this module

ENV_DIR = "JIT_SYNTH_TRACE_DIR"  # where the child writes; its presence turns the hook on
ENV_DEVICES = "JIT_SYNTH_TRACE_DEVICES"
ENV_BACKWARD = "JIT_SYNTH_TRACE_BACKWARD"
ENV_COMPILE = "JIT_SYNTH_TRACE_COMPILE"  # CUDA archs to compile kernels whose text cannot rebuild them
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
                from jit.code.harvest import traced as trace
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


def run_traced(argv: list[str], devices: tuple[str, ...], workdir: Path, backward: bool = True,
               compile_archs: tuple[int, ...] = ()) -> TraceResult:
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
    env[ENV_COMPILE] = ",".join(str(a) for a in compile_archs)
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
# the source and the command


RECORDS_PER_PART = 64


@dataclass(frozen=True, slots=True)
class TracedKernels(Source):
    """A traced program run as a source of the dataset engine: item ``i`` is the ``i``-th kernel it built.

    ``record(run)`` runs the program once and writes its kernels to ``workdir/kernels.jsonl``
    (and ``workdir/program.json``); the parts then read that file. A ``--resume`` does not run
    the program again once ``program.json`` exists.
    """

    command: tuple[str, ...]
    workdir: str
    name = "trace"
    growable = False
    fresh_process = False

    def identity(self) -> dict:
        return {"command": list(self.command)}

    @property
    def kernels_file(self) -> str:
        return os.path.join(self.workdir, "kernels.jsonl")

    def program(self) -> dict:
        path = os.path.join(self.workdir, "program.json")
        if not os.path.exists(path):
            return {}
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def record(self, run) -> TraceResult:
        """Run the program under the hook (unless an earlier run of this command did)."""
        from jit.code.engine import writers

        if self.program():
            return None
        archs = run.archs if "compile" in (run.checks or (run.validate,)) else ()
        result = run_traced(list(self.command), run.devices, Path(self.workdir), run.backward, compile_archs=archs)
        lines = "".join(writers.dumps(r) + "\n" for r in _distinct(result.records))
        writers.write_atomic(self.kernels_file, lines)
        writers.write_json(os.path.join(self.workdir, "program.json"), {
            "command": list(self.command), "exit_status": result.exit_status, "kernels": result.captured,
            "failed": dict(result.failed), "output_tail": result.output_tail})
        return result

    def size(self, run) -> int:
        if not os.path.exists(self.kernels_file):
            return 0
        with open(self.kernels_file, encoding="utf-8") as f:
            return sum(1 for _ in f)

    def part_size(self, run) -> int:
        return RECORDS_PER_PART

    def warm(self, run) -> None:
        from jit.code.extraction import warp_backend as wb

        wb.init()
        wb.silence_performance_notes()

    def describe(self) -> dict:
        program = self.program()
        from jit.code.extraction import warp_backend as wb

        return {"warp_version": wb.warp_version(), "origin": "built by a running program (`jit-synth trace`)",
                "command": list(self.command), "program_exit_status": program.get("exit_status"),
                "kernels_built": program.get("kernels"), "trace_failures": program.get("failed", {})}

    def cleanup(self) -> None:
        from jit.code.extraction import warp_backend as wb

        wb.sweep_pch_folders()

    def run_part(self, run, part, progress=None):
        return run_part(self, run, part, progress)


def _distinct(records: list[dict]) -> list[dict]:
    """Records whose text is the same but whose code differs (a kernel built with other options)
    get ids that include their code, so the engine keeps each build once."""
    from jit.code.records import salted_id

    first: dict[str, str] = {}
    for r in records:
        code = r.get("cpu_forward") or r.get("cuda_forward") or ""
        if first.setdefault(r["id"], code) != code:
            r["metadata"]["id_salt"] = "code"
            r["id"] = salted_id(r["python_source"], code)
    return records


def run_part(source: TracedKernels, run, part, progress=None):
    """Read the part's recorded kernels, compile them when asked (rebuilt from their own text),
    and write the part."""
    import itertools
    import time

    from jit.code.engine import writers
    from jit.code.engine.run import PartStats

    t0 = time.perf_counter()
    stats = PartStats(part.number, part.start, part.stop)
    with open(source.kernels_file, encoding="utf-8") as f:
        records = [json.loads(line) for line in itertools.islice(f, part.start, part.stop)]
    keep = _checked(records, run, stats)
    out = writers.PartWriter(run.out, part.number)
    for row, r in enumerate(keep):
        out.add(row, r)
    stats.records = len(out)
    stats.seconds = time.perf_counter() - t0
    if progress is not None:
        progress.put((len(keep), len(records) - len(keep)))
    out.finish(stats.to_dict())
    return stats


def _checked(records: list[dict], run, stats) -> list[dict]:
    """The records that pass the run's checks, in order (``jit.code.checks``: with no live kernel
    here, the compile check rebuilds a record from its text, or trusts the program's own compile
    when the text cannot rebuild it); counts the others."""
    from jit.code import checks
    from jit.code.records import Pair

    batch = checks.Batch({str(i): Pair(**r) for i, r in enumerate(records)})
    failed = checks.apply(run, batch)
    for reason in failed.values():
        stats.rejects[reason] += 1
    return [pair.to_dict() for key, pair in batch.records.items() if key not in failed]


# ---------------------------------------------------------------------------------------------
# the child: the hook


_recorder = None


def install(context_module=None) -> None:
    """Start recording in this process (called by the sitecustomize once Warp's context exists)."""
    global _recorder
    if _recorder is not None or not os.environ.get(ENV_DIR):
        return
    devices = tuple(d for d in os.environ.get(ENV_DEVICES, "cpu").split(",") if d)
    _recorder = _Recorder(Path(os.environ[ENV_DIR]), devices, os.environ.get(ENV_BACKWARD, "1") == "1",
                          tuple(int(a) for a in os.environ.get(ENV_COMPILE, "").split(",") if a))
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

    def __init__(self, out_dir: Path, devices: tuple[str, ...], backward: bool, compile_archs: tuple[int, ...] = ()):
        self.compile_archs = compile_archs
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
        record = make_record(kernel, irs, options, device, block_dim, key)
        if self.compile_archs and record["metadata"]["self_contained"]:
            self.check_rebuild(kernel, record, irs)
        if self.compile_archs and not record["metadata"]["self_contained"]:
            # its text cannot rebuild it later: compile the live kernel now, as the program built it
            reason = self.compile_live(kernel, extract_block_dim)
            if reason:
                self.write({"failed": reason, "kernel": kernel.key})
                return
            record["validation"] = {d: "compiled" for d in self.devices}
        self.write(record)

    def check_rebuild(self, kernel, record: dict, irs: dict) -> None:
        """Does the record's text alone rebuild the kernel with the same code? If not, it is not
        self-contained after all (and is compiled here, while the kernel is alive)."""
        from jit.code.records import salted_id
        from jit.code.extraction.source_text import rebuild_difference

        device = "cpu" if "cpu" in irs else "cuda"
        why = rebuild_difference(kernel, record["python_source"], device, original=irs[device], backward=self.backward)
        if why is not None:
            meta = record["metadata"]
            meta["self_contained"], meta["self_contained_reason"], meta["id_salt"] = False, why, "code"
            record["id"] = salted_id(record["python_source"], record["cpu_forward"] or record["cuda_forward"] or "")

    def compile_live(self, kernel, block_dim) -> str | None:
        from jit.code.extraction import warp_backend as wb
        from jit.code.extraction.compile import compile_batch

        module = wb.kernel_module(kernel)
        for device in self.devices:
            for arch in (self.compile_archs if device == "cuda" else (None,)):
                extra = {} if arch is None else {"arch": arch}
                verdict, _ = compile_batch(module, [kernel], device, block_dim=block_dim if device == "cuda" else None,
                                           **extra)
                if verdict.get(kernel.key):
                    return f"compile failed on {device}"
        return None

    def write(self, item: dict) -> None:
        if self.file is None:
            self.file = open(self.path, "a", encoding="utf-8")
        self.file.write(json.dumps(item, ensure_ascii=False, default=str) + "\n")
        self.file.flush()


def _reason(exc) -> str:
    from jit.code.harvest.modules import failure_reason

    return failure_reason(exc)


def _options_key(options: dict) -> str:
    return json.dumps(options, sort_keys=True, default=str)


def make_record(kernel, irs: dict, options: dict, device: str, block_dim: int, key) -> dict:
    """One record (the fields of ``Pair``) for a traced kernel."""
    from jit.code.extraction import warp_backend as wb
    from jit.code.analysis.purpose import purpose_of
    from jit.code.harvest.modules import readable_source
    from jit.code.extraction.provenance import provenance
    from jit.code.records import build_record, salted_id

    first = next(iter(irs.values()))
    source, why = readable_source(kernel, first)
    pair = build_record(irs, first.kernel_name, "traced", source, {})
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
    purpose = purpose_of(source, pair.kernel_name)
    if purpose:
        pair.metadata["purpose"] = purpose
    if why is not None:  # the text may not tell this kernel from another one: its code does
        pair.metadata["id_salt"] = "code"
        pair.id = salted_id(source, pair.cpu_forward or pair.cuda_forward or "")
    return pair.to_dict()


def _module_name(func) -> str:
    """The module's import name; ``python -m pkg.mod`` runs it as ``__main__``."""
    spec = func.__globals__.get("__spec__") if func.__module__ == "__main__" else None
    return spec.name if spec is not None else func.__module__

