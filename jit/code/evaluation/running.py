"""Build and run a prediction for one benchmark record: what happens inside the sandboxed child.

Per task:

- ``*2py`` (cuda2py, purpose2py): the predicted Python is defined as a Warp module, built for the
  CPU and its kernel launched on the inputs; parameters are matched by name, else by position.
- ``py2cpp``: Warp's module source for the record's own kernel (backward off, so the forward is
  the whole kernel) has the span from its first struct or helper to the end of the kernel's
  forward function replaced by the prediction; it is compiled with Warp's clang, loaded through
  Warp's ahead-of-time loader and launched with ``wp.launch`` like any kernel.
- ``py2cuda`` and ``py2cuda-adjoint``: the same splice into the CUDA module source (the adjoint
  task replaces the helpers and the backward kernel and keeps Warp's forward kernel), compiled
  with NVRTC; launched only where a GPU exists (``launch_cuda``).
- ``py2ptx``: nothing to build here.

Hash suffixes in a prediction (``scale_fb36e44b``) are replaced by those the same names have in
the build at hand, since Warp derives them from build options. Every function returns plain data (outputs as
NumPy arrays) or raises ``BuildError`` with the compiler's own message.
What it leaves out: the sandbox (``sandbox``), inputs and comparison (``score``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import tempfile

import numpy as np
import warp as wp

from jit.code.checks import launch as L
from jit.code.checks.execute import set_cpu_options
from jit.code.checks.gradient import Loss
from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import extract_many

PYTHON_TASKS = ("cuda2py", "purpose2py")
# task -> (device, does the prediction hold the backward kernel); py2cpp's module keeps Warp's
# backward kernel, which calls the predicted helper adjoints when gradients are checked
SPLICED = {"py2cpp": ("cpu", False), "py2cuda": ("cuda", False), "py2cuda-adjoint": ("cuda", True)}
HASHED = re.compile(r"\b([A-Za-z_]\w*?)_([0-9a-f]{8})(?![0-9A-Za-z])")  # scale_fb36e44b(_cpu_kernel_forward)
FENCE = re.compile(r"^\s*```[\w+-]*[ \t]*\n(.*?)\n?```\s*$", re.DOTALL)
_names = itertools.count()
POISON = "-ftrivial-auto-var-init=pattern"  # clang: uninitialised locals hold a fixed pattern
VARIANT = "__variant__"  # in an input set: the wider launch it is run with (1, 2, ...; 0 or none: the record's)


class BuildError(Exception):
    """The prediction does not build or compile; the message is the compiler's."""


class RunError(Exception):
    """The prediction built but cannot be launched as the benchmark launches the kernel."""


def unfenced(text: str) -> str:
    """A prediction without the Markdown code fence chat models put around code."""
    m = FENCE.match(text)
    return m.group(1) if m else text


@contextlib.contextmanager
def native_stderr(into: list):
    """Collect what native code (clang, NVRTC) prints on file descriptor 2 into ``into``."""
    with tempfile.TemporaryFile(mode="w+b") as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            into.append(f.read().decode("utf-8", "replace"))


def _module_name(tag: str) -> str:
    return f"jit_eval_{tag}_{os.getpid()}_{next(_names)}"


def _kernel_of(namespace: dict, name: str):
    kernel = namespace.get(name)
    if wb.is_kernel(kernel):
        return kernel
    kernels = [v for v in namespace.values() if wb.is_kernel(v)]
    if not kernels:
        raise BuildError("the prediction defines no @wp.kernel")
    return kernels[-1]


def positional(kernel, launch: dict) -> tuple[dict, dict]:
    """(the launch for ``kernel``'s parameter names, {kernel name: benchmark name}): by name when
    every name matches, else by position when the counts agree."""
    names = list(L.kernel_arg_types(kernel))
    described = [a["name"] for a in launch.get("args", [])]
    if set(names) == set(described):
        return launch, {n: n for n in names}
    if len(names) != len(described):
        raise RunError(f"the kernel takes {len(names)} parameters, the benchmark launches {len(described)}")
    mapping = dict(zip(described, names))
    args = [dict(a, name=mapping[a["name"]]) for a in launch["args"]]
    return dict(launch, args=args), {mine: theirs for theirs, mine in mapping.items()}


def _launch_all(kernel, launch: dict, inputs: list[dict], grads: dict | None = None,
                variants: list[dict] = ()) -> list[dict]:
    """Every array after the launch (``arrays_after``) for each input set, keyed by the
    benchmark's names; with ``grads`` ({"weights": {output: array}, "wrt": [input, ...]}) also
    ``d/<input>``: the gradient of ``sum(weights * output)`` by Warp's backward kernel
    (``wp.Tape``). A set holding
    ``VARIANT: k`` is launched as ``variants[k - 1]`` (a wider launch of the benchmark's,
    ``variants``), weighted by ``grads["variant_weights"][k - 1]``."""
    launches = [launch, *variants]
    runs: dict[int, tuple] = {}

    def run_of(k: int):
        if k not in runs:
            mine, back = positional(kernel, launches[k])
            plan = L.plan_from_metadata(kernel, {"launch": mine})
            to_mine = {theirs: m for m, theirs in back.items()}
            loss = None
            if grads:
                weights = grads["weights"] if k == 0 else grads["variant_weights"][k - 1]
                by_name = {a.name: a for a in plan.args}
                loss = Loss(kernel, plan, [by_name[to_mine[n]] for n in weights],
                            [by_name[to_mine[n]] for n in grads["wrt"]],
                            {to_mine[n]: w for n, w in weights.items()})
            runs[k] = (plan, back, to_mine, loss)
        return runs[k]

    out = []
    for values in inputs:
        plan, back, to_mine, loss = run_of(int(values.get(VARIANT, 0)))
        values = {to_mine[k]: v for k, v in values.items() if k != VARIANT}
        got = {back[k]: v for k, v in arrays_after(kernel, plan, values).items()}
        if loss is not None:
            got.update({f"d/{back[k]}": v for k, v in loss.gradients(values).items()})
        out.append(got)
    return out


def arrays_after(kernel, plan, values: dict, device: str = "cpu") -> dict:
    """Every array argument after one launch, inputs too: a kernel may write where its launch
    says it only reads (through a ``wp.ref`` a native function stores into, say), and what it
    writes there is what it computes as much as its outputs are."""
    bound = L.launch(kernel, plan, values, device)
    return {a.name: bound[a.name].numpy().copy() for a in plan.args if a.is_array and a.build is None}


def variants_of(record: dict) -> list[dict]:
    """The benchmark's wider launches of the record's kernel (``variants``), in order."""
    return ((record.get("metadata") or {}).get("bench") or {}).get("launches") or []


def run_python(source: str, kernel_name: str, launch: dict, inputs: list[dict], grads: dict | None = None,
               variants: list[dict] = ()) -> list[dict]:
    """Outputs (and gradients) of the kernel a Python text defines, for each input set (*2py)."""
    try:
        handle = wb.define([source], _module_name("py"))
    except Exception as exc:  # noqa: BLE001  the prediction's own error
        raise BuildError(f"{type(exc).__name__}: {exc}") from None
    kernel = _kernel_of(handle.namespace, kernel_name)
    set_cpu_options(kernel.module, backward=bool(grads))
    log: list[str] = []
    try:
        with native_stderr(log):
            wp.load_module(kernel.module, device="cpu", block_dim=1)
    except Exception as exc:  # noqa: BLE001
        raise BuildError(f"{type(exc).__name__}: {exc}\n{''.join(log)[:4000]}".strip()) from None
    return _launch_all(kernel, launch, inputs, grads, variants)


_WARM = """import warp as wp


@wp.kernel
def jit_eval_warm(a: wp.array(dtype=float)):
    a[wp.tid()] = 1.0
"""


def warm_headers():
    """Build, in this process, the precompiled header of every CPU build here (Warp's own
    headers, ``set_cpu_options`` and one thread per block: the options of ``run_python``,
    ``run_cpp`` and the reference runs), for ``sandbox.contained(..., headers=)``; None when
    Warp keeps no precompiled headers."""
    from jit.code.evaluation.sandbox import Headers

    if not wp.config.use_precompiled_headers:
        return None
    handle = wb.define([_WARM], _module_name("warm"))
    saved = wp.config.kernel_cache_dir
    with tempfile.TemporaryDirectory() as cache:
        wp.config.kernel_cache_dir = cache  # a fresh cache: the module is compiled, not loaded
        try:
            kernel = handle.namespace["jit_eval_warm"]
            set_cpu_options(kernel.module, backward=False)
            with native_stderr([]):
                wp.load_module(kernel.module, device="cpu", block_dim=1)
                # and the header of the predictions' py2cpp builds (``poisoned``)
                flags = poisoned({"cpu_compiler_flags": wp.get_module_options(kernel.module)["cpu_compiler_flags"]})
                wp.set_module_options(flags, kernel.module)
                wp.load_module(kernel.module, device="cpu", block_dim=1)
        finally:
            wp.config.kernel_cache_dir = saved
            handle.release()
    folder = wb.pch_folder()
    return Headers(folder) if os.listdir(folder) else None


# ---------------------------------------------------------------------------------------------
# a prediction spliced into Warp's module source


def _reference_build(record: dict, device: str, backward: bool, replace_backward: bool):
    """(kernel, module, options, module source, (start, end) of the span a prediction replaces,
    Warp's forward kernel text, {helper: its generated name}) for the record's own kernel, built
    with or without ``backward``; the span runs from the first struct or helper to the kernel's
    forward, or to its backward when ``replace_backward``."""
    handle = wb.define([record["python_source"]], _module_name("ref"))
    kernel = handle.namespace[record["kernel_name"]]
    module = kernel.module
    set_cpu_options(module, backward=backward)
    # the block_dim the record was extracted with (a tile kernel may need a smaller one)
    block_dim = 1 if device == "cpu" else ((record["metadata"].get("devices") or {}).get(device) or {}).get("block_dim")
    cuda = {"optimization_level": None, "fuse_fp": True}
    wp.set_module_options({"block_dim": block_dim} if device == "cpu" else
                          dict(cuda, block_dim=block_dim) if block_dim else cuda, module)
    builds: dict = {}
    ir = extract_many([kernel], (device,), backward=backward, builds=builds)[0][device]
    build = builds[device]
    source = build.module_source(device)
    pieces = [t for _, t in ir.structs] + [f.forward for f in ir.functions]
    pieces += [f.adjoint for f in ir.functions if f.adjoint and backward]
    pieces += [ir.args_struct, ir.forward] + ([ir.backward] if replace_backward else [])
    spans = [locate(source, p.strip("\n"), device) for p in pieces if p and p.strip()]
    span = (min(s for s, _ in spans), max(e for _, e in spans))
    helpers = {f.name.rsplit(".", 1)[-1]: f.native_name for f in ir.functions}
    return kernel, module, build.options, source, span, ir.forward, helpers


def struct_code_differs(record: dict) -> str | None:
    """Why the record's struct code is not what Warp compiles, or None. Warp's module emits more
    for a struct than the struct's code alone (operators a tile reduction needs, an ``add`` that
    sums): a record whose text lacks them would fail its own oracle."""
    for device in ("cpu", "cuda"):
        if not record.get(f"{device}_forward"):
            continue
        handle = wb.define([record["python_source"]], _module_name("check"))
        try:
            kernel = handle.namespace[record["kernel_name"]]
            builds: dict = {}
            ir = extract_many([kernel], (device,), backward=True, builds=builds)[0][device]
            source = builds[device].module_source(device)
            for name, text in ir.structs:
                if text.strip("\n") not in source:
                    return f"{device} code of struct {name.rsplit('_', 1)[0]} differs from what Warp compiles"
        finally:
            handle.release()
    return None


def locate(source: str, piece: str, device: str) -> tuple[int, int]:
    """Where a piece of extracted code sits in the module source. A struct's code may hold more
    operators there than alone, so a piece not found whole is found from its first line to the
    line that closes it as often as in the piece."""
    at = source.find(piece)
    if at >= 0:
        return at, at + len(piece)
    lines = piece.splitlines()
    # find it by its first line of code: a "// file:line" comment heads every helper alike
    first = next(n for n, line in enumerate(lines) if not line.lstrip().startswith(("//", "#line")))
    at = source.find("\n" + lines[first] + "\n") + 1
    if at <= 0:
        raise RuntimeError(f"Warp's {device} module source does not hold the record's {lines[first].strip()!r}")
    lead = "\n".join(lines[:first]) + "\n" if first else ""
    if lead and source[at - len(lead):at] == lead:
        at -= len(lead)
    end = at
    for _ in range(lines.count(lines[-1]) - lines[:first].count(lines[-1])):
        end = source.find("\n" + lines[-1] + "\n", end + 1)
        if end < 0:
            raise RuntimeError(f"Warp's {device} module source does not close {lines[first].strip()!r}")
    return at, end + 1 + len(lines[-1])


def rename_hashes(prediction: str, current: str) -> str:
    """Every hash-suffixed name of ``prediction`` (``scale_fb36e44b``) given the suffix the same
    name has in ``current``, the build at hand: a suffix says nothing a translation could know."""
    now = {}
    for m in HASHED.finditer(current):
        now.setdefault(m.group(1), m.group(0))
    return HASHED.sub(lambda m: now.get(m.group(1), m.group(0)), prediction)


def rename_helpers(prediction: str, helpers: dict[str, str]) -> str:
    """Helper calls numbered as in the build at hand (``falloff_1`` -> ``falloff_0``): Warp numbers
    a helper by how often its name was defined in the process that generated the code."""
    for name, native in helpers.items():
        prediction = re.sub(rf"\b(adj_)?{re.escape(name)}_\d+\b", rf"\g<1>{native}", prediction)
    return prediction


def spliced(task: str, record: dict, prediction: str, backward: bool = False):
    """(kernel, module, options, source with the prediction in place of Warp's code)."""
    device, replace_backward = SPLICED[task]
    kernel, module, options, source, (start, end), forward, helpers = _reference_build(
        record, device, backward or replace_backward, replace_backward)
    text = rename_helpers(rename_hashes(prediction, source[start:end]), helpers)
    if task == "py2cuda-adjoint":  # the adjoint replaces helpers and backward; Warp's forward stays
        text = text.rstrip("\n") + "\n\n" + forward
    return kernel, module, options, source[:start] + text + source[end:]


def _compile(source: str, device: str, path: str, options: dict) -> None:
    log: list[str] = []
    try:
        with native_stderr(log):
            wb.compile_source(source, device, path, options)
    except Exception as exc:  # noqa: BLE001  the compiler's failure is the prediction's
        raise BuildError(f"{''.join(log).strip()[:4000] or exc}") from None


def poisoned(options: dict) -> dict:
    """Build options that fill every local variable the code leaves uninitialised with a pattern
    (NaN for a float, -1 for an integer): what such a variable holds is then the same on every
    build, and never a harmless leftover, so a dropped assignment shows in the outputs."""
    return dict(options, cpu_compiler_flags=f"{options.get('cpu_compiler_flags') or ''} {POISON}".strip())


def run_cpp(record: dict, prediction: str, inputs: list[dict], grads: dict | None = None) -> list[dict]:
    """Outputs of Warp's launch of the kernel whose C++ forward (and helper adjoints) is the
    prediction (py2cpp); with ``grads``, Warp's backward kernel runs on the predicted helpers."""
    kernel, module, options, source = spliced("py2cpp", record, prediction, backward=bool(grads))
    folder = os.path.abspath("aot")
    with native_stderr([]):
        artifacts = wp.compile_aot_module(module, "cpu", module_dir=folder)  # Warp's meta and object file
    _compile(source, "cpu", str(artifacts[0]), poisoned(options))  # the prediction's object file in its place
    wp.load_aot_module(module, "cpu", module_dir=folder)
    return _launch_all(kernel, record["metadata"]["launch"], inputs, grads, variants_of(record))


def compile_cuda(task: str, record: dict, prediction: str, arch: int = wb.DEFAULT_CUDA_ARCH) -> str:
    """Compile the CUDA module with the prediction in place with NVRTC; the PTX file's path."""
    if not wb.nvrtc_available():
        raise RunError("NVRTC is not available in this Warp build")
    # built as records are extracted, with the module's backward on: the tile library calls a
    # build declares (libmathdx solvers, say) depend on it, even for a kernel without backward
    _, _, options, source = spliced(task, record, prediction, backward=True)
    options = dict(options, output_arch=arch)
    path = os.path.abspath(f"module.sm{arch}.ptx")
    _compile(source, "cuda", path, options)
    return path


def launch_cuda(record: dict, prediction: str, inputs: list[dict]) -> list[dict]:
    """py2cuda on a GPU: the spliced module compiled by NVRTC for the device, loaded and launched."""
    kernel, module, options, source = spliced("py2cuda", record, prediction)
    device = wp.get_device("cuda:0")
    folder = os.path.abspath("aot_cuda")
    artifacts = wp.compile_aot_module(module, device, module_dir=folder, use_ptx=True)
    _compile(source, "cuda", str(artifacts[0]), dict(options, output_arch=device.arch))
    wp.load_aot_module(module, device, module_dir=folder, use_ptx=True)
    launches = [record["metadata"]["launch"], *variants_of(record)]
    out = []
    for values in inputs:
        mine, back = positional(kernel, launches[int(values.get(VARIANT, 0))])
        plan = L.plan_from_metadata(kernel, {"launch": mine})
        values = {m: values[theirs] for m, theirs in back.items()}
        out.append({back[k]: v for k, v in arrays_after(kernel, plan, values, "cuda").items()})
    return out


def as_arrays(outputs: list[dict]) -> list[dict]:
    return [{k: np.asarray(v) for k, v in o.items()} for o in outputs]
