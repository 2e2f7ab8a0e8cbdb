"""The one module that touches Warp's private code generator (``warp._src``).

Supported Warp: ``warp-lang >=1.19,<1.20`` (the range pinned in ``pyproject.toml``).
Everything else in the package goes through the small API below: start Warp quietly,
define kernels from source text, build a set of kernels for a device, and cut Warp's own
code generator output into per-kernel and per-function pieces. When Warp moves its
internals, this file is the only one to change.

What it leaves out: deciding which kernels to build (callers pass them), file I/O other
than Warp's own ahead-of-time compiler output, and any formatting of the generated text.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import hashlib
import json
import linecache
import multiprocessing.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import warp as wp
from warp._src import codegen as _codegen
from warp._src import context as _context
from warp._src import types as _types

from jit.code.records import DEFAULT_CUDA_ARCH  # noqa: E402,F401  (one definition, beside the record)

_init_lock = threading.Lock()
_initialised = False


def init() -> None:
    """Initialise Warp once, without its banner (CUDA driver absence is fine: NVRTC still works)."""
    global _initialised
    with _init_lock:
        if not _initialised:
            # Warp 1.19 replaced ``config.quiet`` with ``config.log_level``; keep warnings, drop the banner
            if hasattr(wp.config, "log_level"):
                wp.config.log_level = max(wp.config.log_level, wp.LOG_WARNING)
            else:
                wp.config.quiet = True
            with native_stderr_silenced():  # the native "no CUDA driver" notice; NVRTC still works
                wp.init()
            _own_pch_folders()
            _own_lto_compiles()
            _initialised = True


# ---------------------------------------------------------------------------------------------
# MathDx LTO code: compiled in a child process, one compile at a time per host and cache folder

LTO_COMPILERS = ("wp_cuda_compile_dot", "wp_cuda_compile_fft", "wp_cuda_compile_solver")
LTO_IN_PROCESS_ENV = "JIT_SYNTH_LTO_IN_PROCESS"  # "1": compile in the calling process, as Warp does
LTO_MARK = "jit-synth-lto-result:"

_lto_native: dict[str, Any] = {}  # Warp's own ctypes function of each of LTO_COMPILERS
_lto_in_child = True

# The child: only Warp (the caller's), initialised quietly; it makes the one native call and prints
# its result (and the value of each output argument) after a marker.
_LTO_CHILD = r"""
import ctypes, json, os, sys
request = json.loads(sys.stdin.read())
import warp as wp
if hasattr(wp.config, "log_level"):
    wp.config.log_level = max(wp.config.log_level, wp.LOG_WARNING)
else:
    wp.config.quiet = True
saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 2)
try:
    wp.init()
finally:
    os.dup2(saved, 2)
from warp._src import context
args, outs = [], {}
for i, a in enumerate(request["args"]):
    if isinstance(a, dict):
        outs[i] = ctypes.c_int(a["out"])
        args.append(ctypes.byref(outs[i]))
    else:
        args.append(os.fsencode(a) if isinstance(a, str) else a)
ok = getattr(context.runtime.core, request["name"])(*args)
sys.stdout.flush()
print("\n" + request["mark"] + json.dumps({"ok": bool(ok), "outs": {i: v.value for i, v in outs.items()}}), flush=True)
"""


def _own_lto_compiles() -> None:
    """Compile Warp's MathDx LTO code (``tile_matmul``, ``tile_fft``, ``tile_cholesky`` and the
    solvers) in a short-lived child process, one compile at a time per host and LTO cache folder.

    Warp compiles the LTO code of a tile kernel while it generates the kernel's CUDA code, when
    its LTO cache lacks it: a GEMM's compile peaks at about 1.4 GiB, which stays in the process
    that asked (glibc keeps freed pages) and adds up when every worker compiles at once. The
    child (``python -c``, importing only Warp) makes the same native call with the same
    arguments; Warp's own code around it (cache check, temporary folder, rename into the cache,
    reading the file back) runs unchanged in the caller, so the generated code is the same. A
    lock around Warp's ``_build_lto_base`` lets one process compile at a time on the host; a
    process that waited finds the LTO in the cache when another process built the same one.
    Set ``JIT_SYNTH_LTO_IN_PROCESS=1`` to compile in the calling process, as Warp does.

    Warp 1.19 internals used: ``runtime.core.wp_cuda_compile_{dot,fft,solver}`` (ctypes functions
    whose arguments are bytes, ints, None and, for the FFT, ``byref(c_int)``), and in
    ``warp._src.build`` ``_build_lto_base``, ``get_lto_cache_dir``, ``hash_symbol`` and
    ``LTO_CACHE_KEY_LENGTH``. A Warp without one of them keeps that part in process; a call with
    an argument of another kind is made in process.
    """
    core = getattr(_context.runtime, "core", None)
    if core is None or os.environ.get(LTO_IN_PROCESS_ENV) == "1":
        return
    for name in LTO_COMPILERS:
        native = getattr(core, name, None)
        if native is not None and name not in _lto_native:
            _lto_native[name] = native
            setattr(core, name, functools.partial(_compile_lto, name))
    from warp._src import build as _build

    base = getattr(_build, "_build_lto_base", None)
    if base is not None and not getattr(base, "_jit_synth_serialised", False):
        _build._build_lto_base = _serialised(base)


@contextlib.contextmanager
def lto_compiled_in_process() -> Iterator[None]:
    """Compile LTO code in this process meanwhile (Warp's own behaviour), e.g. to compare."""
    global _lto_in_child
    saved, _lto_in_child = _lto_in_child, False
    try:
        yield
    finally:
        _lto_in_child = saved


def _compile_lto(name: str, *args):
    """Warp's native LTO compile ``name`` with ``args``, made by a child process."""
    native = _lto_native[name]
    if not _lto_in_child or not sys.executable:
        return native(*args)
    request, outs = [], {}
    for i, arg in enumerate(args):
        if isinstance(arg, bytes):
            request.append(os.fsdecode(arg))
        elif arg is None or isinstance(arg, (bool, int)):
            request.append(arg)
        elif isinstance(getattr(arg, "_obj", None), ctypes.c_int):  # ctypes.byref(c_int): an output
            outs[i] = arg._obj
            request.append({"out": arg._obj.value})
        else:  # an argument this does not know how to pass on (a newer Warp): compile here
            return native(*args)
    warp_root = os.path.dirname(os.path.dirname(os.path.abspath(wp.__file__)))  # this process's Warp
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (warp_root, os.environ.get("PYTHONPATH"))))}
    request = {"name": name, "args": request, "mark": LTO_MARK}
    done = subprocess.run([sys.executable, "-c", _LTO_CHILD], input=json.dumps(request), stdout=subprocess.PIPE,
                          text=True, check=False, env=env)
    text, _, result = done.stdout.rpartition("\n" + LTO_MARK)
    if text.strip():
        sys.stdout.write(text.strip("\n") + "\n")  # what the compiler printed, as it would have in-process
    if not result:
        raise RuntimeError(f"the child process compiling LTO code ended without a result (exit code {done.returncode})")
    result = json.loads(result)
    for i, value in result["outs"].items():
        outs[int(i)].value = value
    return result["ok"]


def _serialised(base):
    """Warp's ``_build_lto_base``, holding the host's LTO lock while it may compile."""

    @functools.wraps(base)
    def build(lto_symbol, compile_func, builder, extra_files=None):
        if not _lto_in_child or _lto_cached(lto_symbol, extra_files):
            return base(lto_symbol, compile_func, builder, extra_files)
        with _lto_lock():
            return base(lto_symbol, compile_func, builder, extra_files)

    build._jit_synth_serialised = True
    return build


def _lto_cached(symbol: str, extra_files) -> bool:
    """True if Warp's LTO cache has every file of ``symbol`` (Warp still checks them itself)."""
    from warp._src import build as _build

    try:
        stem = os.path.join(_build.get_lto_cache_dir(), _build.hash_symbol(symbol)[:_build.LTO_CACHE_KEY_LENGTH])
    except AttributeError:  # a Warp without these helpers: take the lock
        return False
    return all(os.path.exists(stem + ext) for ext in (".lto", *(extra_files or {})))


@contextlib.contextmanager
def _lto_lock() -> Iterator[None]:
    """A lock every process of this host holds while it compiles into the same LTO cache folder."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    from warp._src import build as _build

    folder = os.path.realpath(_build.get_lto_cache_dir())
    key = hashlib.sha256(folder.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"jit-synth-lto-{key}.lock")
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------------------
# precompiled headers: one folder per process and thread, removed when the process ends

PCH_PREFIX = "jit-synth-pch-"
_pch: dict[tuple[int, int], str] = {}
_pch_lock = threading.Lock()


def _own_pch_folders() -> None:
    """Make Warp put its precompiled headers (clang, and NVRTC before CUDA 13) in ``pch_folder()``.

    Warp keeps one temporary folder per thread and removes it at interpreter exit. A forked
    worker inherits the parent's folder (two processes writing the same .pch files), and a
    worker that ends with ``os._exit`` (multiprocessing, Ray) never removes its own: about
    10 MB left in the temp folder per worker. Ours are named by host and pid, removed when the
    process ends normally, and swept by the next process on the host once their pid is gone.
    """
    runtime = _context.runtime
    if runtime is not None and hasattr(runtime, "_get_or_create_pch_dir"):
        runtime._get_or_create_pch_dir = pch_folder


def pch_folder() -> str:
    """This process's (and thread's) precompiled-header folder, created on first use."""
    key = (os.getpid(), threading.get_ident())
    with _pch_lock:
        path = _pch.get(key)
        if path is None or not os.path.isdir(path):
            sweep_pch_folders()
            path = tempfile.mkdtemp(prefix=f"{PCH_PREFIX}{_host()}-{key[0]}-")
            _pch[key] = path
            atexit.register(_remove_own, path, key[0])  # normal interpreter exit
            multiprocessing.util.Finalize(None, _remove_own, args=(path, key[0]), exitpriority=0)  # pool worker exit
        return path


def sweep_pch_folders() -> int:
    """Remove this host's precompiled-header folders whose process has ended; how many."""
    prefix = f"{PCH_PREFIX}{_host()}-"
    removed = 0
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            removed += 1
    return removed


def _host() -> str:
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _remove_own(path: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked child inherits its parent's exit handlers
        shutil.rmtree(path, ignore_errors=True)


def silence_performance_notes() -> None:
    """Drop Warp's notes about slower code paths it picked for a kernel (e.g. tile_matmul's
    scalar GEMM). They speak to someone tuning their own kernel; for generated kernels they
    are noise. Errors and other warnings still print."""
    import warnings

    warnings.filterwarnings("ignore", message=r"tile_matmul\(\) operand .* cuBLASDx leading dimension")
    # reading a bfloat16 io example back as raw uint16 bits is what the io format stores
    warnings.filterwarnings("ignore", message=r"bfloat16 arrays are returned as np.uint16")


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    import sys

    try:
        fd = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):  # stderr replaced (e.g. captured by pytest)
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(devnull)


def warp_version() -> str:
    return wp.__version__


def cuda_device_available() -> bool:
    init()
    return wp.get_cuda_device_count() > 0


def nvrtc_available() -> bool:
    init()
    return bool(getattr(_context.runtime, "toolkit_version", None))


def mathdx_available() -> bool:
    """True if this Warp can compile MathDx LTO code (tile_matmul, tile_fft, tile_cholesky)."""
    init()
    core = getattr(_context.runtime, "core", None)
    return bool(core is not None and hasattr(core, "wp_is_mathdx_enabled") and core.wp_is_mathdx_enabled())


# ---------------------------------------------------------------------------------------------
# global config


_CONFIG_KEYS = (
    "enable_backward", "mode", "optimization_level", "line_directives", "verify_fp", "verify_cuda",
    "max_unroll", "enable_cpu_blocks", "verbose", "quiet", "cache_kernels", "kernel_cache_dir",
    "log_level", "ptx_target_arch", "enable_mathdx_gemm",
)


def config_snapshot() -> dict[str, Any]:
    return {key: getattr(wp.config, key) for key in _CONFIG_KEYS if hasattr(wp.config, key)}


@contextlib.contextmanager
def preserved_config() -> Iterator[None]:
    """Restore ``wp.config`` after code (e.g. an imported user module) changes it."""
    saved = config_snapshot()
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(wp.config, key, value)


# ---------------------------------------------------------------------------------------------
# kernels, functions and modules


def is_kernel(obj: Any) -> bool:
    return isinstance(obj, _context.Kernel)


def kernel_overloads(kernel) -> list:
    """The concrete kernels Warp compiles for ``kernel``: itself, or each registered overload."""
    if kernel.is_generic:
        return list(kernel.overloads.values())
    return [kernel]


def module_kernels(module) -> list:
    """The live kernels of a Warp module, in definition order."""
    return list(module.kernels.values())


def live_kernels(module) -> list:
    """Every kernel of a Warp module still referenced somewhere (factory and closure kernels too).

    Generic overloads are not listed (``kernel_overloads`` expands their parent). Order:
    the module's registry first, then the other live kernels by key.
    """
    listed = [k for k in module.kernels.values() if k.generic_parent is None]
    seen = {id(k) for k in listed}
    extra = [k for k in module._get_live_kernels() if k.generic_parent is None and id(k) not in seen]
    return listed + sorted(extra, key=lambda k: (k.key, k.func.__code__.co_firstlineno))


def defining_module(obj) -> str:
    """Name of the Python module whose source defines a kernel or function."""
    return obj.func.__module__


def overload_signature(kernel) -> str | None:
    """Warp's type signature of a generic kernel's overload, None for a plain kernel."""
    return kernel.sig if kernel.generic_parent is not None else None


def python_source(obj) -> str:
    """The source of a kernel or function as Warp parsed it."""
    return obj.adj.source


def argument_types(kernel) -> list[tuple[str, str]]:
    return [(arg.label, type_name(arg.type)) for arg in kernel.adj.args]


def type_name(t) -> str:
    return _types.type_repr(t)


@dataclass(slots=True)
class SourceModule:
    """A Warp module whose constructs were defined from source text (see ``define``)."""

    name: str
    namespace: dict
    filenames: list[str]
    key_counts: dict = None  # Warp's function-name counters before the definition (restored by release)

    @property
    def module(self):
        return _context.user_modules.get(self.name)

    def kernels(self) -> dict[str, Any]:
        return {k: v for k, v in self.namespace.items() if is_kernel(v)}

    def release(self) -> None:
        """Drop Warp's registry entry and the ``linecache`` lines, so definitions don't accumulate."""
        for filename in self.filenames:
            linecache.cache.pop(filename, None)
        # kernels defined with module="unique" live in Warp modules of their own
        names = [self.name] + [v.module.name for v in self.namespace.values()
                               if is_kernel(v) and v.module is not None and v.module.name != self.name]
        for name in dict.fromkeys(names):
            module = _context.user_modules.pop(name, None)
            if module is None:
                continue
            module.unload()  # drop loaded CPU code, so a reused name cannot resolve to old symbols
            module._detach_references()
            module.kernels.clear()
            # Warp numbers a function's C++ name by how often its key was defined in this process;
            # forgetting released keys keeps names (and so records) independent of what ran before.
            # A key that existed before (Warp's own wp.velocity_at_point is velocity_at_point_0) goes
            # back to its count, never below: a helper of that name must not become a second _0.
            before = self.key_counts or {}
            for key in module.functions:
                if key in before:
                    _context.function_key_counts[key] = before[key]
                else:
                    _context.function_key_counts.pop(key, None)
            module.functions.clear()
            module.structs.clear() if hasattr(module.structs, "clear") else None
        self.namespace.clear()


def define(sources: Iterable[str], module_name: str, filenames: Iterable[str] | None = None) -> SourceModule:
    """Execute Python sources (each ``import warp as wp`` + decorated definitions) into one module.

    Each source gets a ``linecache`` entry because Warp reads a decorated function's source
    through ``inspect``; ``SourceModule.release`` removes the entries and the module again.
    Names defined by one source are visible to the next, as in one file.
    """
    init()
    names = list(filenames) if filenames is not None else None
    namespace: dict[str, Any] = {"__name__": module_name}
    handle = SourceModule(module_name, namespace, [], dict(_context.function_key_counts))
    try:
        for i, source in enumerate(sources):
            filename = names[i] if names else f"<jit-synth:{module_name}:{i}>"
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            handle.filenames.append(filename)
            # dont_inherit: this module's `from __future__ import annotations` must not leak into
            # the source (string annotations break @wp.struct, which evaluates them in its module)
            exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    except BaseException:
        handle.release()
        raise
    return handle


def define_one(source: str, module_name: str) -> tuple[SourceModule, dict]:
    """Define ``source`` alone in a fresh module; returns the handle and the names it defined."""
    handle = define([source], module_name)
    return handle, {k: v for k, v in handle.namespace.items() if not k.startswith("__")}


# ---------------------------------------------------------------------------------------------
# building and code generation


def resolve_options(module, device: str, block_dim: int | None = None, arch: int = DEFAULT_CUDA_ARCH) -> dict:
    """Module options as Warp resolves them for a launch on ``device`` with ``block_dim``.

    CUDA launches use the given block_dim, else the module's. CPU launches run one thread
    per block (block_dim 1) unless ``wp.config.enable_cpu_blocks`` lets a launch ask for more,
    as ``wp.launch``/``wp.launch_tiled`` do.
    """
    if device == "cpu" and not (block_dim and wp.config.enable_cpu_blocks):
        block_dim = 1
    options = module.resolve_options(wp.config, block_dim)
    options["output_arch"] = None if device == "cpu" else arch
    return options


def uses_tiles(kernel) -> bool:
    """True if building ``kernel`` depends on block_dim/arch (tile code); needs one build per device.

    Tile types of local variables are inferred by a build: before the kernel has been built
    this only sees tile-typed arguments.
    """
    for obj in (kernel, *called_functions(kernel)):
        adj = obj.adj
        for var in (*adj.args, *getattr(adj, "variables", ())):
            t = _codegen.strip_reference(var.type)
            if _types.is_tile(t) or (hasattr(_types, "is_tile_stack") and _types.is_tile_stack(t)):
                return True
    return False


class Build:
    """Warp's ``ModuleBuilder`` for a set of kernels of one module under one set of options."""

    def __init__(self, module, kernels: Iterable, options: dict, target: str):
        self.module = module
        self.options = options
        self.target = target
        if module.has_unresolved_static_expressions:
            # as Module.get_module_hash does before hashing: a backend-neutral build of the
            # module's live kernels evaluates deferred wp.static() expressions, which the
            # kernel hashes (and so the mangled names) depend on
            _context.ModuleBuilder(module, options | {"output_arch": None})
            module.has_unresolved_static_expressions = False
        hasher = _context.ModuleHasher(list(kernels), options)
        self.builder = _context.ModuleBuilder(module, options, hasher=hasher, target=target)

    @property
    def kernels(self) -> list:
        return list(self.builder.kernels)

    def module_source(self, device: str, options: dict | None = None) -> str:
        """The full translation unit, exactly as Warp's ``Module`` would compile it."""
        if options is None or options is self.options:
            return self.builder.codegen(device)
        saved = self.builder.options
        self.builder.options = options
        try:
            return self.builder.codegen(device)
        finally:
            self.builder.options = saved

    def struct_code(self, kernel, device: str) -> list[tuple[str, str]]:
        """(struct name, generated C++) for user structs the kernel's arguments and variables use."""
        wanted = set()
        for var in (*kernel.adj.args, *kernel.adj.variables):
            _collect_structs(var.type, wanted)
        for func in called_functions(kernel):
            for var in (*func.adj.args, *func.adj.variables):
                _collect_structs(var.type, wanted)
        out, seen = [], set()
        for struct in self.builder.structs:
            if struct in wanted and struct.hash not in seen:
                seen.add(struct.hash)
                out.append((struct.key, _codegen.codegen_struct(struct)))
        return out


def _collect_structs(t, out: set) -> None:
    t = _codegen.strip_reference(t)
    if isinstance(t, _codegen.Struct):
        if t not in out:
            out.add(t)
            for var in t.vars.values():
                _collect_structs(var.type, out)
    elif _types.is_array(t):
        _collect_structs(t.dtype, out)


def mangled_name(kernel) -> str:
    return kernel.get_mangled_name()


def kernel_code(kernel, device: str, options: dict) -> tuple[str, str, str | None]:
    """(preamble, forward, backward) of a built kernel as Warp's ``codegen_kernel`` emits them.

    The preamble is the CPU argument struct (empty on CUDA). Backward is None when
    backward is disabled for the kernel or module. The split point is the backward entry
    point's signature line, which Python comments (emitted as ``//`` lines) cannot forge.
    """
    text = _codegen.codegen_kernel(kernel, device=device, options=options)
    preamble = ""
    if device == "cpu":
        end = text.index("\n};\n") + len("\n};\n")
        preamble, text = text[:end], text[end:]
    enabled = (options | kernel.options)["enable_backward"]
    if not enabled:
        return preamble, text.strip("\n") + "\n", None
    cut = _backward_start(text, kernel, device)
    return preamble, text[:cut].strip("\n") + "\n", text[cut:].strip("\n") + "\n"


def _backward_start(text: str, kernel, device: str) -> int:
    name = kernel.get_mangled_name()
    if device == "cpu":
        anchor = f"\ntemplate <bool wp_linear_contiguous>\nstatic void {name}_cpu_kernel_backward(\n"
        pos = text.index(anchor) + 1
    else:
        suffix = f"void {_codegen.cuda_kernel_backward_name(kernel)}(\n"
        pos = text.index(suffix)
        pos = text.rindex("\n", 0, pos) + 1
    # a #line directive belongs to the function that follows it
    prev = text.rfind("\n", 0, pos - 1) + 1
    if text.startswith("#line", prev):
        pos = prev
    return pos


def kernel_entry_code(kernel, device: str, options: dict) -> str:
    """The CPU task loop and ``extern "C"`` entry points Warp adds around a kernel (empty on CUDA)."""
    return _codegen.codegen_module(kernel, device=device, options=options)


def called_functions(obj) -> list:
    """User ``@wp.func`` objects a kernel or function calls, transitively (callees first)."""
    order: list = []
    seen: set = set()

    def visit(adj):
        for func in getattr(adj, "called_user_functions", {}) or {}:
            if func in seen:
                continue
            seen.add(func)
            visit(func.adj)
            for extra in (func.custom_grad_func, func.custom_replay_func):
                if extra is not None and extra not in seen:
                    seen.add(extra)
                    visit(extra.adj)
                    order.append(extra)
            order.append(func)

    visit(obj.adj)
    return order


def function_code(build: Build, func, device: str, options: dict) -> tuple[str, str | None]:
    """(forward, adjoint) generated code of a user function; adjoint None where Warp emits none."""
    builder = build.builder
    saved = builder.options
    builder.options = options
    try:
        forward = builder._codegen_functions([func], device, forward_only=True)
        adjoint = None
        if not func.adj.uses_grad_call and (options.get("enable_backward", True) or func.adj.used_by_backward_kernel):
            adjoint = builder._codegen_functions([func], device, reverse_only=True) or None
    finally:
        builder.options = saved
    return forward, adjoint


def function_native_name(func) -> str:
    return func.native_func


def user_modules() -> dict:
    return _context.user_modules


def module_named(name: str):
    return _context.user_modules.get(name)


def kernel_module(kernel):
    return kernel.module


# ---------------------------------------------------------------------------------------------
# offline compilation


def compile_source(source: str, device: str, output_path: str, options: dict, *,
                   optimization_level: int | None = None) -> None:
    """Compile a full translation unit with Warp's bundled compilers; no GPU needed.

    CPU: Warp's clang to an object file. CUDA: NVRTC to PTX for ``options["output_arch"]``.
    ``options`` are resolved module options (see ``resolve_options``). Raises on failure.
    """
    init()

    from warp._src import build as _build

    runtime = _context.runtime
    if optimization_level is None:
        optimization_level = options["optimization_level"]
    if optimization_level is None:
        optimization_level = 2 if device == "cpu" else 3
    src_path = output_path + (".cpp" if device == "cpu" else ".cu")
    with open(src_path, "w", encoding="utf-8") as f:
        f.write(source)
    try:
        if device == "cpu":
            _build.build_cpu(
                output_path, src_path, mode=options["mode"], fast_math=options["fast_math"],
                verify_fp=options["verify_fp"], fuse_fp=options["fuse_fp"],
                extra_flags=options["cpu_compiler_flags"], optimization_level=optimization_level,
                use_precompiled_headers=options["use_precompiled_headers"],
                pch_dir=runtime.get_clang_pch_dir() if options["use_precompiled_headers"] else None,
                block_dim=options["block_dim"],
                enable_tiles_in_stack_memory=options["enable_tiles_in_stack_memory"],
            )
        else:
            _build.build_cuda(
                src_path, options["output_arch"], output_path, config=options["mode"],
                optimization_level=optimization_level, verify_fp=options["verify_fp"],
                fast_math=options["fast_math"], fuse_fp=options["fuse_fp"], lineinfo=False,
                ltoirs=[], fatbins=[], use_precompiled_headers=options["use_precompiled_headers"],
                pch_dir=runtime.get_nvrtc_pch_dir() if options["use_precompiled_headers"] else None,
            )
    finally:
        with contextlib.suppress(OSError):
            os.remove(src_path)


# ---------------------------------------------------------------------------------------------
# the builtin registry (read-only), for generators that choose builtins by type


def builtin_names() -> list[str]:
    """Every builtin Warp registers (``wp.sin``, ``add``, ``tile_load``, ...), in registration order."""
    return list(_context.builtin_functions)


def builtin_group(name: str) -> str:
    return _context.builtin_functions[name].group


def _overloads(func) -> list:
    return list(getattr(func, "overloads", None) or [func])


def type_matches(concrete, template) -> bool:
    """True if concrete type ``concrete`` may bind to a parameter annotated ``template``."""
    if template is Any:
        return True
    try:
        return bool(_types.type_matches_template(concrete, template))
    except Exception:
        return False


def builtin_signatures(name: str, candidates: list) -> list[tuple[tuple, Any]]:
    """Concrete signatures of builtin ``name`` over the Warp types ``candidates``.

    Each item is (positional argument types, return type) for a call that passes only the
    parameters without defaults, with the return type from the overload's own ``value_func``.
    Overloads are tried in Warp's order; a combination keeps the first overload that accepts it.
    """
    import itertools

    seen: dict[tuple, Any] = {}
    for f in _overloads(_context.builtin_functions[name]):
        if f.variadic:
            continue
        required = [(p, t) for p, t in f.input_types.items() if p not in f.defaults]
        options = [[c for c in candidates if type_matches(c, t)] for _, t in required]
        for combo in itertools.islice(itertools.product(*options), 4000):
            if combo in seen or not _codegen.func_match_args(f, list(combo), {}):
                continue
            types = {p: c for (p, _), c in zip(required, combo)}
            for key in f.input_types:
                if key not in types:
                    default = f.defaults.get(key)
                    types[key] = None if default is None else _codegen.get_arg_type(default)
            try:
                result = f.value_func(types, {k: None for k in types})
            except Exception:
                continue
            seen[combo] = result
    return [(combo, result) for combo, result in seen.items() if result is not None]


# ---------------------------------------------------------------------------------------------
# reading kernels, functions and structs for self-contained source text


def is_user_function(obj: Any) -> bool:
    return isinstance(obj, _context.Function) and not obj.is_builtin() and obj.func is not None


def is_builtin_function(obj: Any) -> bool:
    return isinstance(obj, _context.Function) and obj.is_builtin()


def builtin_key(func) -> str:
    return func.key


def is_struct(obj: Any) -> bool:
    """True for a ``@wp.struct`` type (not an instance of one)."""
    return isinstance(obj, _codegen.Struct)


def struct_fields(struct) -> list[tuple[str, Any]]:
    return [(label, var.type) for label, var in struct.vars.items()]


def struct_class(struct) -> type:
    return struct.cls


def is_generic(kernel) -> bool:
    return bool(kernel.is_generic)


def generic_parent(kernel):
    """The generic kernel a concrete overload was made from; None for a plain kernel."""
    return kernel.generic_parent


def type_is_generic(t) -> bool:
    return bool(_types.type_is_generic(t))


def argument_type_objects(kernel) -> list[tuple[str, Any]]:
    """(name, Warp type object) of each kernel argument, as Warp resolved them."""
    return [(arg.label, arg.type) for arg in kernel.adj.args]


def python_function(obj):
    """The Python function a kernel or user function was made from."""
    return obj.func


def python_name(obj) -> str:
    return obj.cls.__name__ if is_struct(obj) else obj.func.__name__


def function_overloads(func) -> list:
    """Every definition registered under a user function's key (generic and concrete), in source order."""
    found = {id(f): f for f in (*func.user_templates.values(), *func.user_overloads.values())} or {id(func): func}
    return sorted(found.values(), key=lambda f: (f.func.__code__.co_filename, f.func.__code__.co_firstlineno))


def custom_gradients(func) -> list:
    """The ``@wp.func_grad`` / ``@wp.func_replay`` definitions attached to a user function."""
    out = []
    for overload in function_overloads(func):
        for extra in (overload.custom_grad_func, overload.custom_replay_func):
            if extra is not None and extra.func is not None and extra not in out:
                out.append(extra)
    return out


def is_array_type(t) -> bool:
    return isinstance(t, _types.array_types) or isinstance(t, getattr(_types, "_ArrayAnnotationBase", ()))


def array_type_parts(t) -> tuple[str, Any, int]:
    """(``wp`` class name, dtype, ndim) of an array type or annotation."""
    cls = getattr(t, "_concrete_cls", None) or type(t)
    return cls.__name__, t.dtype, t.ndim


def composite_type_parts(t) -> tuple[str, tuple, Any] | None:
    """(kind, shape, scalar type) of a vector/matrix/quaternion/transformation type, else None."""
    generic = getattr(t, "_wp_generic_type_str_", None)
    kind = {"vec_t": "vector", "mat_t": "matrix", "quat_t": "quaternion", "transform_t": "transformation"}.get(generic)
    if kind is None:
        return None
    return kind, tuple(t._shape_), t._wp_scalar_type_


def is_warp_value(value) -> bool:
    """A vector, matrix, quaternion or Warp scalar instance (something ``wp.constant`` accepts)."""
    return _types.is_value(value) and not isinstance(value, (bool, int, float))


def flat_components(value) -> list:
    """The Python numbers that rebuild a Warp value with its type's constructor."""
    if composite_type_parts(type(value)) is not None:
        return [float(x) if isinstance(x, float) else x for x in _flatten(value)]
    return [value.value]


def _flatten(value) -> list:
    out = []
    for item in value:
        out += _flatten(item) if hasattr(item, "__len__") else [item]
    return out


# ---------------------------------------------------------------------------------------------
# watching a running program's module builds (``jit-synth trace``)


def attach() -> None:
    """Use the Warp a running program initialised, without changing its config or banner."""
    global _initialised
    with _init_lock:
        _initialised = True


def watch_module_loads(callback) -> None:
    """Call ``callback(module, device_name, block_dim)`` after every successful ``Module.load``.

    Every launch, ``wp.load_module`` and ``wp.force_load`` goes through ``Module.load``; a
    load that finds its code in the kernel cache still hashes (and so resolves) its kernels.
    """
    original = _context.Module.load
    if getattr(original, "_jit_synth_watched", False):
        return

    def load(self, device, block_dim=None, *args, **kwargs):
        result = original(self, device, block_dim, *args, **kwargs)
        if result is not None:
            active = block_dim if block_dim is not None else self.options["block_dim"]
            callback(self, str(_context.runtime.get_device(device)), active)
        return result

    load._jit_synth_watched = True
    _context.Module.load = load


def loaded_build(module, block_dim: int) -> tuple[list, dict]:
    """(concrete kernels, resolved options) of the build ``Module.load`` just used for ``block_dim``."""
    hasher = module.hashers[block_dim]
    return list(hasher.get_unique_kernels()), dict(module.resolved_options[block_dim])


def kernel_hash(kernel) -> str | None:
    return kernel.hash.hex() if kernel.hash is not None else None


@contextlib.contextmanager
def kernel_state_kept(kernels: Iterable) -> Iterator[None]:
    """Restore kernels' hashes after an extra build, so a running program's launches see its own."""
    saved = [(k, k._hash, k._mangled_name) for k in kernels]
    try:
        yield
    finally:
        for kernel, h, name in saved:
            kernel._hash, kernel._mangled_name = h, name


def kernel_identity(kernel) -> tuple[str, str, str | None]:
    """(module name, key, overload signature) of a concrete kernel."""
    return kernel.module.name, kernel.key, overload_signature(kernel)


def module_option_changes(module) -> dict:
    """Module options that differ from a fresh module's under the current config."""
    fresh = _context.Module(None).options
    return {k: v for k, v in module.options.items() if fresh.get(k) != v}
