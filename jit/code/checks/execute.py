"""Run generated kernels: a seeded input/output example per record, and a gradient check.

``execute_batch`` launches each runnable kernel of a validated batch on the CPU with seeded
random inputs (twice: the outputs must be finite and bitwise identical), stores the example as
the record's ``io`` and checks the backward kernel against central finite differences (``wp.Tape``).
Each kernel runs in a forked child with a time bound (``bounded``): one that never returns is
dropped as ``timeout``.
With a CUDA device and ``cuda`` among the run's devices it also launches on the GPU and compares
with the CPU. ``replay_records`` rebuilds kernels from ``python_source`` alone and checks that
their ``io`` inputs give exactly the stored outputs.

An io value is ``{"dtype": <Warp type name>, "shape": [...], "data": nested list}`` for an array
and ``{"dtype": ..., "data": value, list or {field: value}}`` for a scalar, vector or struct.

What it leaves out: compiling (``compile``), kernels that need runtime objects (mesh, volume,
bvh, hash grid: they keep ``validation.cpu = "compiled"`` with ``cpu_reason``), and generic kernels.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import warp as wp

from jit.code.extraction import warp_backend as wb
from jit.code.checks import bounded
from jit.code.checks.base import LIVE, Check

EXECUTE_SECONDS = 20.0  # bound on one kernel's execution and gradient check (runs take milliseconds)
MAX_IO_NUMBERS = 8192  # numbers in one io example; larger examples are not stored
GRAD_ELEMENTS = (4, 3)  # input elements checked: (chosen by |gradient|, chosen uniformly)
REPLAY_BATCH = 64
# CPU/CUDA agreement: per element within tolerance; a few elements may flip at a branch or a
# rounding step because the GPU's math functions differ from the CPU's in the last bits
CUDA_RTOL, CUDA_ATOL, CUDA_FLIPS = 1e-3, 1e-4, 0.05
# Warp names a loaded CPU object after its module and a per-module counter, and a released module's
# object stays loaded: a module name must never be used twice in a process
_module_numbers = itertools.count()


class NotRunnable(Exception):
    """A kernel this module cannot launch (runtime objects, generic or unknown arguments)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# what to launch


@dataclass(slots=True)
class Arg:
    name: str
    type: Any  # the kernel's annotation: a Warp array type, value type or struct
    role: str = "in"  # in | out | inout
    shape: tuple[int, ...] = ()
    range: tuple[float, float] = (-2.0, 2.0)

    @property
    def is_array(self) -> bool:
        return wp.types.is_array(self.type)

    @property
    def dtype(self):
        return self.type.dtype if self.is_array else self.type

    @property
    def is_output(self) -> bool:
        return self.is_array and self.role in ("out", "inout")

    @property
    def is_float(self) -> bool:
        return not _is_struct(self.dtype) and np.issubdtype(_numpy_dtype(self.dtype), np.floating)


@dataclass(slots=True)
class Plan:
    dim: list[int]
    block_dim: int | None
    args: list[Arg] = field(default_factory=list)

    def outputs(self) -> list[Arg]:
        return [a for a in self.args if a.is_output]


# Python's scalar types in annotations stand for these Warp types (as Warp itself reads them)
_PYTHON_SCALARS = {float: wp.float32, int: wp.int32, bool: wp.bool}


def kernel_arg_types(kernel) -> dict[str, Any]:
    """Argument name -> annotation, in signature order (annotations may be strings: evaluate them)."""
    hints = inspect.get_annotations(kernel.func, eval_str=True)
    names = list(inspect.signature(kernel.func).parameters)
    return {n: _PYTHON_SCALARS.get(hints[n], hints[n]) for n in names}


def plan_from_metadata(kernel, metadata: dict) -> Plan:
    """The launch the generator describes in ``metadata["launch"]``; raises NotRunnable."""
    launch = metadata.get("launch")
    if not launch:
        raise NotRunnable("no launch description")
    if not launch.get("runnable", True) or metadata.get("needs_runtime_objects"):
        raise NotRunnable(launch.get("reason") or metadata.get("needs_runtime_objects_reason")
                          or "needs runtime objects")
    described = {a["name"]: a for a in launch.get("args", [])}
    args = []
    for name, t in kernel_arg_types(kernel).items():
        info = described.get(name)
        if info is None:
            raise NotRunnable(f"argument {name} is not described")
        if info.get("kind") == "handle":
            raise NotRunnable(f"argument {name} is a runtime object handle")
        _check_type(name, t)
        shape = tuple(info.get("shape") or launch["dim"][: getattr(t, "ndim", 0)])
        args.append(Arg(name, t, info.get("role", "in"), shape, tuple(info.get("range") or (-2.0, 2.0))))
    return Plan(list(launch["dim"]), launch.get("block_dim"), args)


def plan_from_io(kernel, io: dict) -> Plan:
    """The launch an io example records (argument types come from the kernel itself)."""
    args = []
    for name, t in kernel_arg_types(kernel).items():
        if name not in io["inputs"]:
            raise NotRunnable(f"io has no input {name}")
        _check_type(name, t)
        role = "out" if name in io["outputs"] else "in"
        args.append(Arg(name, t, role, tuple(io["inputs"][name].get("shape", ()))))
    return Plan(list(io["dim"]), io.get("block_dim"), args)


def _check_type(name: str, t) -> None:
    dtype = t.dtype if wp.types.is_array(t) else t
    if _is_struct(dtype):
        for field_name, ft in _struct_fields(dtype).items():
            if wp.types.is_array(ft):
                raise NotRunnable(f"struct argument {name} has an array field {field_name}")
            _check_type(name, ft)
    elif not isinstance(dtype, type) or not (wp.types.type_is_value(dtype) or hasattr(dtype, "_wp_scalar_type_")):
        raise NotRunnable(f"argument {name} has no concrete value type")


# ---------------------------------------------------------------------------------------------
# values: numpy arrays (structured arrays for structs) <-> Warp arguments <-> io specs


def _is_struct(t) -> bool:
    return hasattr(t, "vars") and hasattr(t, "numpy_dtype")


def _struct_fields(t) -> dict[str, Any]:
    return {name: var.type for name, var in t.vars.items()}


def _numpy_dtype(t):
    if _is_struct(t):
        return np.dtype(t.numpy_dtype())
    return np.dtype(wp.dtype_to_numpy(getattr(t, "_wp_scalar_type_", t)))


def _components(t) -> tuple[int, ...]:
    return tuple(getattr(t, "_shape_", ()))


def type_name(t) -> str:
    """Warp's name of a value type (``float32``, ``vec3f``, ``mat33f``) or a struct's class name."""
    return t.cls.__name__ if _is_struct(t) else t.__name__


def zeros(t, shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape + _components(t), _numpy_dtype(t))


def random_value(rng: np.random.Generator, t, shape: tuple[int, ...], lo: float, hi: float) -> np.ndarray:
    """Random numpy data for ``shape`` elements of type ``t``; quaternions (and rotations) are unit."""
    if _is_struct(t):
        out = zeros(t, shape)
        for name, ft in _struct_fields(t).items():
            out[name] = random_value(rng, ft, shape, lo, hi)
        return out
    npt, full = _numpy_dtype(t), shape + _components(t)
    if npt == np.bool_:
        return rng.random(full) < 0.5
    if np.issubdtype(npt, np.integer):
        lo_i = max(math.ceil(lo), 0) if np.issubdtype(npt, np.unsignedinteger) else math.ceil(lo)
        return rng.integers(lo_i, max(lo_i, math.floor(hi)), size=full, endpoint=True).astype(npt)
    values = rng.uniform(lo, hi, full)
    if wp.types.type_is_quaternion(t):
        values = _unit(rng, shape)
    elif wp.types.type_is_transformation(t):
        values[..., 3:] = _unit(rng, shape)
    return values.astype(npt)


def _unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    q = rng.standard_normal(shape + (4,))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def random_values(plan: Plan, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for a in plan.args:
        shape = a.shape if a.is_array else ()
        out[a.name] = zeros(a.dtype, shape) if a.role == "out" else random_value(rng, a.dtype, shape, *a.range)
    return out


def to_warp(arg: Arg, value: np.ndarray, device: str, requires_grad: bool = False):
    if arg.is_array:
        return wp.array(value, dtype=arg.dtype, device=device, requires_grad=requires_grad)
    return _value(arg.dtype, value)


def _value(t, value: np.ndarray):
    if _is_struct(t):
        instance = t()
        for name, ft in _struct_fields(t).items():
            setattr(instance, name, _value(ft, value[name]))
        return instance
    if _components(t):
        return t(*np.asarray(value).ravel().tolist())
    return np.asarray(value).item()


def leaves(value: np.ndarray) -> list[np.ndarray]:
    """The plain (non-structured) arrays of a value: itself, or its struct fields recursively."""
    if value.dtype.names is None:
        return [value]
    return [leaf for name in value.dtype.names for leaf in leaves(value[name])]


def _data(value: np.ndarray):
    if value.dtype.names is None:
        return value.tolist()
    return {name: _data(value[name]) for name in value.dtype.names}


def encode(arg: Arg, value: np.ndarray) -> dict:
    spec: dict[str, Any] = {"dtype": type_name(arg.dtype)}
    if arg.is_array:
        spec["shape"] = list(arg.shape)
    spec["data"] = _data(value)
    return spec


def decode(arg: Arg, spec: dict) -> np.ndarray:
    return _decode(arg.dtype, spec["data"], tuple(spec.get("shape", ())) if arg.is_array else ())


def _decode(t, data, shape: tuple[int, ...]) -> np.ndarray:
    if _is_struct(t):
        out = zeros(t, shape)
        for name, ft in _struct_fields(t).items():
            out[name] = _decode(ft, data[name], shape)
        return out
    return np.asarray(data, dtype=_numpy_dtype(t)).reshape(shape + _components(t))


# ---------------------------------------------------------------------------------------------
# launching


def launch(kernel, plan: Plan, values: dict, device: str, requires_grad=frozenset()) -> dict[str, Any]:
    """Launch once with fresh copies of ``values``; returns the Warp arguments by name."""
    bound = {a.name: to_warp(a, values[a.name], device, a.name in requires_grad) for a in plan.args}
    inputs = [bound[a.name] for a in plan.args]
    if plan.block_dim:
        wp.launch_tiled(kernel, dim=plan.dim, inputs=inputs, block_dim=plan.block_dim, device=device)
    else:
        wp.launch(kernel, plan.dim, inputs=inputs, device=device)
    return bound


def read_outputs(plan: Plan, bound: dict) -> dict[str, np.ndarray]:
    return {a.name: bound[a.name].numpy().copy() for a in plan.outputs()}


def run_outputs(kernel, plan: Plan, values: dict, device: str = "cpu") -> dict[str, np.ndarray]:
    return read_outputs(plan, launch(kernel, plan, values, device))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality (struct padding bytes aside)."""
    la, lb = leaves(a), leaves(b)
    return len(la) == len(lb) and all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
                                      for x, y in zip(la, lb))


def agree(cpu: np.ndarray, other: np.ndarray) -> bool:
    """True if ``other`` (e.g. CUDA) matches ``cpu`` within tolerance, allowing a few flipped elements."""
    if cpu.dtype.names is not None:
        return all(agree(x, y) for x, y in zip(leaves(cpu), leaves(other)))
    if cpu.shape != other.shape:
        return False
    a, b = cpu.astype(np.float64).ravel(), other.astype(np.float64).ravel()
    scale = max(1.0, float(np.max(np.abs(a), initial=0.0)))
    close = np.isclose(b, a, rtol=CUDA_RTOL, atol=CUDA_ATOL * scale) | (a == b)
    return int(np.count_nonzero(~close)) <= max(1, int(CUDA_FLIPS * a.size))


def item_rng(spec) -> np.random.Generator:
    """The input generator of one generated kernel, from its seed, index and attempt."""
    return np.random.default_rng([spec.seed % 2**63, spec.index, getattr(spec, "attempt", 0)])


# ---------------------------------------------------------------------------------------------
# during generation


@dataclass(slots=True)
class Job:
    name: str
    kernel: Any
    plan: Plan
    record: Any
    values: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    loss: Any = None  # the gradient check's Loss, when it ran
    grads: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Item:
    """What execution needs of a record: its key in the batch, kernel name, text, metadata and the
    seed, index and attempt its inputs are drawn from."""

    name: str  # the record's key in its batch (dicts of results are keyed by it)
    kernel_name: str
    source: str
    metadata: dict
    seed: int
    index: int
    attempt: int

    @classmethod
    def of(cls, key: str, record) -> Item:
        meta = record.metadata or {}
        return cls(key, record.kernel_name, record.python_source, meta, int(meta.get("seed", 0)),
                   int(meta.get("index", 0)), int(meta.get("attempt", 0)))


def execute_check(run, batch) -> dict[str, str]:
    """Run each live kernel of a batch on the CPU with inputs drawn from its record's seed, check
    its gradients, keep an io example; fills ``io`` and ``validation``. Records without a launch
    description (real code) are kept with the reason in ``validation["cpu_reason"]``."""
    items = [Item.of(key, record) for key, record in batch.records.items() if key in batch.kernels]
    return execute_batch(run, items, {i.name: batch.kernels[i.name] for i in items}, batch.records)


def execute_batch(run, specs: list, live: dict, records: dict) -> dict[str, str]:
    """Execute the kernels of one batch (``specs``: ``Item``s, ``live``: their kernels by key, all
    of one Warp module, which Warp compiles once for the CPU). Returns {key: reason} to drop."""
    failed: dict[str, str] = {}
    kernels, handles = cpu_build(specs, live, run.backward, failed)
    cuda = "cuda" in run.devices and wb.cuda_device_available()
    runs = []
    try:
        for spec in specs:
            if spec.name in failed:
                continue
            record = records[spec.name]
            record.validation["cpu"] = "compiled"  # Warp just built it with clang
            try:
                runs.append((spec, Job(spec.name, kernels[spec.name],
                                       plan_from_metadata(kernels[spec.name], spec.metadata), record)))
            except NotRunnable as exc:
                record.validation["cpu_reason"] = exc.reason
        jobs = _run_bounded(runs, run.backward, failed)
        if cuda and jobs:
            for spec, job in jobs:  # they are known to finish: run again here for the CUDA comparison
                execute_one(job, item_rng(spec), spec.metadata, run.backward)
            failed.update(cuda_check([job for _, job in jobs]))
    finally:
        for handle in handles:
            handle.release()
    return failed


def _run_bounded(runs: list, backward: bool, failed: dict) -> list:
    """Execute each (spec, job) in a forked child with a time bound; the ones that passed.

    A launch that never returns (seen in Warp's backward of some ``while`` loops) is killed after
    ``EXECUTE_SECONDS`` and its record dropped as ``timeout``; the batch goes on.
    """
    calls = [functools.partial(_execute_reported, job, spec, backward) for spec, job in runs]
    passed = []
    for (spec, job), (status, value) in zip(runs, bounded.run_bounded(calls, EXECUTE_SECONDS)):
        if status == bounded.TIMEOUT:
            failed[spec.name] = "timeout"
        elif status == "error":  # a launch inside the gradient check, say: drop the record, not the batch
            failed[spec.name] = f"execution failed: {value}"
        else:
            reason, job.record.io, validation = value
            job.record.validation.update(validation)
            if reason:
                failed[spec.name] = reason
            else:
                passed.append((spec, job))
    return passed


def _execute_reported(job: Job, spec, backward: bool) -> tuple[str | None, dict | None, dict]:
    """``execute_one`` in the child, returning what the parent's record needs."""
    reason = execute_one(job, item_rng(spec), spec.metadata, backward)
    return reason, job.record.io, dict(job.record.validation)


def set_cpu_options(module, backward: bool = True) -> None:
    """Build options of every CPU execution (generation and replay alike, so replays are bitwise).

    A generic target without FP contraction makes results depend on IEEE arithmetic and libm only,
    not on the host's vector units; -O0 halves the compile time, which dominates execution.
    """
    wp.set_module_options({"optimization_level": 0, "cpu_compiler_flags": "-w", "fuse_fp": False,
                           "enable_backward": backward}, module)


def cpu_build(specs: list, kernels: dict, backward: bool, failed: dict) -> tuple[dict, list]:
    """Load the batch's module on the CPU; ({name: live kernel}, handles of extra modules to release).

    The batch module may also hold kernels the build dropped: if it does not load, the sources
    are defined again in fresh modules, bisected so that only the kernels that fail are reported.
    """
    if not specs:
        return {}, []
    module = kernels[specs[0].name].module
    set_cpu_options(module, backward)
    if _loads(module):
        return {s.name: kernels[s.name] for s in specs}, []
    live: dict[str, Any] = {}
    handles: list = []
    _bisect(specs, f"{module.name}_x{next(_module_numbers)}", backward, live, handles, failed)
    return live, handles


def _bisect(specs: list, name: str, backward: bool, live: dict, handles: list, failed: dict) -> None:
    try:
        handle = wb.define([s.source for s in specs], name)
    except Exception as exc:
        for s in specs:
            failed[s.name] = f"cpu define failed: {type(exc).__name__}"
        return
    handles.append(handle)
    set_cpu_options(handle.module, backward)
    if _loads(handle.module):
        live.update({s.name: handle.namespace[s.kernel_name] for s in specs})
    elif len(specs) == 1:
        failed[specs[0].name] = "cpu compile failed"
    else:
        mid = len(specs) // 2
        _bisect(specs[:mid], name + "a", backward, live, handles, failed)
        _bisect(specs[mid:], name + "b", backward, live, handles, failed)


def _loads(module) -> bool:
    try:
        wp.load_module(module, device="cpu", block_dim=1)  # the block_dim CPU launches resolve to
        return True
    except Exception:
        return False


def execute_one(job: Job, rng: np.random.Generator, metadata: dict, backward: bool = True) -> str | None:
    """Run one kernel on the CPU, store its io example and gradient verdict; a reason to drop it, or None."""
    kernel, plan, record = job.kernel, job.plan, job.record
    job.values = values = random_values(plan, rng)
    try:
        first = run_outputs(kernel, plan, values)
        second = run_outputs(kernel, plan, values)
    except Exception as exc:
        return f"cpu launch failed: {type(exc).__name__}"
    if not all(np.all(np.isfinite(v)) for out in first.values() for v in leaves(out) if v.dtype.kind == "f"):
        return "non-finite output"
    if not all(same_bits(first[k], second[k]) for k in first):
        return "non-deterministic output"
    job.outputs = first
    if sum(v.size for out in (*values.values(), *first.values()) for v in leaves(out)) <= MAX_IO_NUMBERS:
        record.io = make_io(plan, values, first)
    record.validation["cpu"] = "executed"
    if not backward:
        return None
    verdict, why = gradient_check(job, metadata.get("differentiable_outputs", []), rng)
    record.validation["gradient"] = verdict
    if why:
        record.validation["gradient_reason"] = why
    return "gradient check failed" if verdict == "failed" else None


def cuda_check(jobs: list[Job]) -> dict[str, str]:
    """Launch the CPU-executed kernels on CUDA with the same inputs; outputs and gradients must agree."""
    # the CPU build options (-O0, no contraction) are not for NVRTC: back to the defaults
    for module in {id(j.kernel.module): j.kernel.module for j in jobs}.values():
        wp.set_module_options({"optimization_level": None, "fuse_fp": True}, module)
    failed = {}
    for job in jobs:
        try:
            got = run_outputs(job.kernel, job.plan, job.values, "cuda")
            grads = job.loss.gradients(job.values, "cuda") if job.grads else {}
        except Exception as exc:
            failed[job.name] = f"cuda launch failed: {type(exc).__name__}"
            continue
        if not all(agree(job.outputs[k], got[k]) for k in job.outputs):
            failed[job.name] = "cuda output differs from cpu"
        elif not all(agree(job.grads[k], grads[k]) for k in job.grads):
            failed[job.name] = "cuda gradient differs from cpu"
        else:
            job.record.validation["cuda"] = "executed"
    return failed


def make_io(plan: Plan, values: dict, outputs: dict) -> dict:
    io: dict[str, Any] = {"device": "cpu", "dim": list(plan.dim)}
    if plan.block_dim:
        io["block_dim"] = plan.block_dim
    io["inputs"] = {a.name: encode(a, values[a.name]) for a in plan.args}
    io["outputs"] = {a.name: encode(a, outputs[a.name]) for a in plan.outputs()}
    return io


# ---------------------------------------------------------------------------------------------
# gradient check


@dataclass(slots=True)
class Loss:
    """``sum(w * out)`` over the differentiable outputs, with random weights ``w``."""

    kernel: Any
    plan: Plan
    outputs: list[Arg]
    wrt: list[Arg]  # the inputs it is differentiated by
    weights: dict[str, np.ndarray]

    def __call__(self, values: dict) -> tuple[float, dict[str, np.ndarray]]:
        outs = run_outputs(self.kernel, self.plan, values)
        total = sum(float(np.sum(self.weights[a.name].astype(np.float64) * outs[a.name])) for a in self.outputs)
        return total, outs

    def gradients(self, values: dict, device: str = "cpu") -> dict[str, np.ndarray]:
        """d loss / d input by Warp's backward kernel (``wp.Tape``)."""
        names = {a.name for a in self.wrt} | {a.name for a in self.outputs}
        tape = wp.Tape()
        with tape:
            bound = launch(self.kernel, self.plan, values, device, requires_grad=names)
        for a in self.outputs:  # the adjoint replays the forward on the inputs, not on the results
            if a.role == "inout":
                bound[a.name].assign(values[a.name])
        seeds = {bound[a.name]: wp.array(self.weights[a.name], dtype=a.dtype, device=device) for a in self.outputs}
        tape.backward(grads=seeds)
        return {a.name: bound[a.name].grad.numpy().copy() for a in self.wrt}


def make_loss(kernel, plan: Plan, differentiable: list[str], rng: np.random.Generator,
              values: dict) -> Loss | str:
    """The loss of the gradient check, or why there is none."""
    outputs = [a for a in plan.outputs() if a.name in differentiable and a.is_float]
    wrt = [a for a in plan.args if a.is_array and a.role == "in" and a.is_float]
    if not outputs:
        return "no differentiable outputs"
    if not wrt:
        return "no float array inputs"
    weights = {a.name: rng.standard_normal(values[a.name].shape).astype(values[a.name].dtype) for a in outputs}
    return Loss(kernel, plan, outputs, wrt, weights)


def gradient_check(job: Job, differentiable: list[str], rng: np.random.Generator) -> tuple[str, str | None]:
    """("passed" | "failed" | "skipped", reason): backward vs central differences at a few elements.

    The difference quotient is taken at steps h and h/2 and extrapolated (Richardson); an element
    whose two quotients disagree sits at a kink or a jump, and is not used. Only inputs with role
    "in" are perturbed (an inout array is both an input and a result).
    """
    loss = make_loss(job.kernel, job.plan, differentiable, rng, job.values)
    if isinstance(loss, str):
        return "skipped", loss
    try:
        grads = loss.gradients(job.values)
    except Exception as exc:
        return "failed", f"backward raised {type(exc).__name__}"
    _, base_outs = loss(job.values)
    checked = unreliable = 0
    for name, index in _elements(grads, rng):
        fd, spread, tol = _difference(loss, job.values, name, index, base_outs)
        if fd is None or abs(spread) > 0.1 * abs(fd) + tol:
            unreliable += 1
            continue
        ad = float(grads[name].flat[index])
        if abs(ad - fd) > tol + abs(spread) + 1e-2 * max(abs(ad), abs(fd)):
            return "failed", None
        checked += abs(fd) > tol or abs(ad) > tol
    if checked:
        job.loss, job.grads = loss, grads
        return "passed", None
    return "skipped", "finite differences unreliable" if unreliable else "zero gradient"


def _elements(grads: dict[str, np.ndarray], rng: np.random.Generator) -> list[tuple[str, int]]:
    """Input elements to check: some where the backward says the gradient is large, some at random."""
    flat = [(name, i, abs(float(g.flat[i]))) for name, g in grads.items() for i in range(g.size)]
    by_size, at_random = GRAD_ELEMENTS
    nonzero = [e for e in flat if e[2] > 0]
    chosen: list[tuple[str, int]] = []
    if nonzero:
        p = np.array([e[2] for e in nonzero]) + 1e-12
        picks = rng.choice(len(nonzero), size=min(by_size, len(nonzero)), replace=False, p=p / p.sum())
        chosen += [nonzero[k][:2] for k in picks]
    rest = [e[:2] for e in flat if e[:2] not in chosen]
    if rest:
        chosen += [rest[k] for k in rng.choice(len(rest), size=min(at_random, len(rest)), replace=False)]
    return chosen


def _difference(loss: Loss, values: dict, name: str, index: int, base_outs: dict):
    """(extrapolated quotient, h vs h/2 difference, noise tolerance); quotient None if not finite."""
    x = values[name]
    x0 = float(x.flat[index])
    f32 = x.dtype == np.float32
    h = (1e-2 if f32 else 1e-5) * max(1.0, abs(x0))
    quotients, noise = [], 0.0
    for step in (h, h / 2):
        lossv = []
        for sign in (1, -1):
            moved = dict(values)
            moved[name] = x.copy()
            moved[name].flat[index] = x0 + sign * step
            value, outs = loss(moved)
            lossv.append(value)
            noise = max(noise, _rounding(loss, outs, base_outs))
        dx = float(np.float64(x0 + step).astype(x.dtype)) - float(np.float64(x0 - step).astype(x.dtype))
        quotients.append((lossv[0] - lossv[1]) / dx)
    q1, q2 = quotients
    if not (math.isfinite(q1) and math.isfinite(q2)):
        return None, 0.0, 0.0
    tol = 8.0 * noise / h + 1e-6
    return (4.0 * q2 - q1) / 3.0, q1 - q2, tol


def _rounding(loss: Loss, outs: dict, base: dict) -> float:
    """Rounding noise of the loss: about 64 ulp of every output element that moved."""
    total = 0.0
    for a in loss.outputs:
        moved = outs[a.name] != base[a.name]
        ulp = 64 * np.finfo(outs[a.name].dtype).eps
        total += float(np.sum(np.abs(loss.weights[a.name][moved] * outs[a.name][moved]))) * ulp
    return total


# ---------------------------------------------------------------------------------------------
# replay (the validate command)


def replay_records(records: list[dict]) -> dict[str, str]:
    """Rebuild kernels from ``python_source`` alone and launch their ``io`` inputs on the CPU.

    Records are batched into shared Warp modules (without clashing top-level names).
    Returns {record id: "io replay mismatch" | "io replay failed: ..."} for the bad ones.
    """
    wb.init()
    bad: dict[str, str] = {}
    for group in _groups(records):
        bad.update(_replay_group(group, f"jit_synth_replay_{next(_module_numbers)}_{os.getpid()}"))
    return bad


def _groups(records: list[dict]) -> list[list[dict]]:
    groups: list[tuple[list[dict], set[str]]] = []
    for record in records:
        names = _top_level_names(record["python_source"])
        for group, used in groups:
            if len(group) < REPLAY_BATCH and not names & used:
                group.append(record)
                used |= names
                break
        else:
            groups.append(([record], set(names)))
    return [g for g, _ in groups]


def _top_level_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _replay_group(group: list[dict], module_name: str) -> dict[str, str]:
    try:
        handle = wb.define([r["python_source"] for r in group], module_name)
    except Exception as exc:
        if len(group) == 1:
            return {group[0]["id"]: f"io replay failed: {type(exc).__name__}"}
        return _one_by_one(group, module_name)
    try:
        set_cpu_options(handle.module, backward=False)  # the forward code is the same either way
        if not _loads(handle.module):
            if len(group) == 1:
                return {group[0]["id"]: "io replay failed: cpu build"}
            return _one_by_one(group, module_name)
        bad = {}
        for record in group:
            reason = replay_one(handle.namespace.get(record["kernel_name"]), record["io"])
            if reason:
                bad[record["id"]] = reason
        return bad
    finally:
        handle.release()


def _one_by_one(group: list[dict], module_name: str) -> dict[str, str]:
    bad = {}
    for n, record in enumerate(group):
        bad.update(_replay_group([record], f"{module_name}_{n}"))
    return bad


def replay_one(kernel, io: dict) -> str | None:
    """Launch ``kernel`` on ``io["inputs"]``; None if it reproduces ``io["outputs"]`` bit for bit."""
    if not wb.is_kernel(kernel):
        return "io replay failed: python_source does not define kernel_name"
    try:
        plan = plan_from_io(kernel, io)
        values = {a.name: decode(a, io["inputs"][a.name]) for a in plan.args}
        got = run_outputs(kernel, plan, values)
        want = {a.name: decode(a, io["outputs"][a.name]) for a in plan.outputs()}
    except NotRunnable as exc:
        return f"io replay failed: {exc.reason}"
    except Exception as exc:
        return f"io replay failed: {type(exc).__name__}"
    if set(want) != set(io["outputs"]) or not all(same_bits(got[k], want[k]) for k in want):
        return "io replay mismatch"
    return None


CHECK = Check("execute", LIVE, "runs on the CPU with seeded inputs (time-bounded), gradients checked, io example kept",
              execute_check)
