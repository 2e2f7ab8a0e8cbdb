"""What to launch and with what: a kernel's arguments from its record (``Plan``), seeded random
values for them, the io format, and launching on a device.

An io value is ``{"dtype": <Warp type name>, "shape": [...], "data": nested list}`` for an array
and ``{"dtype": ..., "data": value, list or {field: value}}`` for a scalar, vector or struct.
A ``wp.uint64`` handle of a runtime object carries the recipe it is built from instead of a
value (``{"dtype": "uint64", "build": {...}}``, see ``objects``): the object is built at each
launch, so an io example replays anywhere. What it leaves out: deciding what a run keeps
(``execute``) and gradients (``gradient``).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import warp as wp

from jit.code.checks import objects


# CPU/CUDA agreement: per element within tolerance; a few elements may flip at a branch or a
# rounding step because the GPU's math functions differ from the CPU's in the last bits
CUDA_RTOL, CUDA_ATOL, CUDA_FLIPS = 1e-3, 1e-4, 0.05


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
    build: dict | None = None  # a runtime object's recipe (``objects``): the argument is its handle
    field_ranges: dict | None = None  # a struct's fields that take their own range: name -> (lo, hi)

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
    if not launch.get("runnable", True):
        raise NotRunnable(launch.get("reason") or metadata.get("needs_runtime_objects_reason")
                          or "needs runtime objects")
    described = {a["name"]: a for a in launch.get("args", [])}
    args = []
    for name, t in kernel_arg_types(kernel).items():
        info = described.get(name)
        if info is None:
            raise NotRunnable(f"argument {name} is not described")
        if info.get("kind") == "handle" and not info.get("build"):
            raise NotRunnable(f"argument {name} is a runtime object handle")
        _check_type(name, t)
        shape = tuple(info.get("shape") or launch["dim"][: getattr(t, "ndim", 0)])
        fields = {k: tuple(v) for k, v in (info.get("field_ranges") or {}).items()} or None
        args.append(Arg(name, t, info.get("role", "in"), shape, tuple(info.get("range") or (-2.0, 2.0)),
                        _recipe(name, info.get("build"), described), fields))
    return Plan(list(launch["dim"]), launch.get("block_dim"), args)


def _recipe(name: str, build: dict | None, described: dict) -> dict | None:
    if build is None:
        return None
    problem = objects.problem(build, described)
    if problem:
        raise NotRunnable(f"argument {name}: {problem}")
    return build


def plan_from_io(kernel, io: dict) -> Plan:
    """The launch an io example records (argument types come from the kernel itself)."""
    args = []
    for name, t in kernel_arg_types(kernel).items():
        if name not in io["inputs"]:
            raise NotRunnable(f"io has no input {name}")
        _check_type(name, t)
        role = "out" if name in io["outputs"] else "in"
        spec = io["inputs"][name]
        args.append(Arg(name, t, role, tuple(spec.get("shape", ())),
                        build=_recipe(name, spec.get("build"), io["inputs"])))
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


def random_value(rng: np.random.Generator, t, shape: tuple[int, ...], lo: float, hi: float,
                 fields: dict | None = None) -> np.ndarray:
    """Random numpy data for ``shape`` elements of type ``t``; quaternions (and rotations) are unit.
    A struct's fields take ``lo``..``hi`` unless ``fields`` gives one its own range."""
    if _is_struct(t):
        out = zeros(t, shape)
        for name, ft in _struct_fields(t).items():
            out[name] = random_value(rng, ft, shape, *(fields or {}).get(name, (lo, hi)))
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
    """Seeded values of every argument (a handle's value is a placeholder: its object is built at launch)."""
    out = {}
    for a in plan.args:
        shape = a.shape if a.is_array else ()
        if a.build is not None:
            out[a.name] = np.zeros((), np.uint64)
        else:
            out[a.name] = (zeros(a.dtype, shape) if a.role == "out"
                           else random_value(rng, a.dtype, shape, *a.range, fields=a.field_ranges))
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
    if arg.build is not None:
        spec["build"] = arg.build
        return spec
    if arg.is_array:
        spec["shape"] = list(arg.shape)
    spec["data"] = _data(value)
    return spec


def decode(arg: Arg, spec: dict) -> np.ndarray:
    if arg.build is not None:
        return np.zeros((), np.uint64)
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
    """Launch once with fresh copies of ``values``; returns the Warp arguments by name (a handle's
    entry is its runtime object, built after the arrays it is built from)."""
    bound = {a.name: to_warp(a, values[a.name], device, a.name in requires_grad) for a in plan.args
             if a.build is None}
    for a in plan.args:
        if a.build is not None:
            bound[a.name] = objects.build(a.build, bound, device)
    inputs = [bound[a.name].id if a.build is not None else bound[a.name] for a in plan.args]
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
