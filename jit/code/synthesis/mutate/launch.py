"""How a mutant is launched: grid, and per parameter its shape, value range and role.

A seed's launch is worked out once, when the seed list is rebuilt (``infer`` reads it from the
kernel's code, ``verify`` runs it), and stored in ``mutant_seeds.json``; a mutant starts from its
seed's and every mutation that touches parameters edits it (a renamed parameter, an array split
into components, a count added by a guard). Kinds and dtypes are never stored: they are read from
the mutant's own annotations, so a precision change needs no bookkeeping. ``params`` turns the
launch into the ``Param`` objects ``generator.metadata`` describes as ``metadata["launch"]``.
What it leaves out: choosing the values (the execute check draws them from the ranges).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

import warp as wp

from jit.code.synthesis import types as T
from jit.code.synthesis.mutate.syntax import array_annotation, dotted, wp_attr, walk
from jit.code.synthesis.stmt import Param

HANDLE_USERS = {  # part of a builtin's name -> the runtime object whose id a uint64 parameter holds
    "mesh_": "wp.Mesh",
    "hash_grid_": "wp.HashGrid",
    "bvh_": "wp.Bvh",
    "volume_": "wp.Volume",
    "texture": "wp.Texture",
    "tex": "wp.Texture",
}
_GENERIC_KINDS = {"vec_t": "vec", "mat_t": "mat", "quat_t": "quat", "transform_t": "transform"}


@dataclass(slots=True)
class Arg:
    name: str
    shape: tuple[int, ...] = ()  # arrays only
    range: tuple[float, float] = (-2.0, 2.0)
    role: str = "in"  # in | out | inout
    # how the seed's arguments give this one: ("arg", name), ("component", name, k),
    # ("field", name, field), ("packed", ((field, name), ...)), ("count", axis) or ("padded", name)
    origin: tuple = ()

    def to_dict(self) -> dict:
        row = {"name": self.name, "range": list(self.range), "role": self.role}
        if self.shape:
            row["shape"] = list(self.shape)
        return row


@dataclass(slots=True)
class Launch:
    dim: list[int]
    args: list[Arg] = field(default_factory=list)
    block_dim: int | None = None
    reason: str | None = None  # why it cannot run; None when it runs

    @classmethod
    def from_dict(cls, row: dict) -> Launch:
        args = [
            Arg(a["name"], tuple(a.get("shape", ())), tuple(a["range"]), a["role"], ("arg", a["name"]))
            for a in row.get("args", [])
        ]
        return cls(list(row["dim"]), args, row.get("block_dim"), row.get("reason"))

    def to_dict(self) -> dict:
        row = {"dim": list(self.dim), "args": [a.to_dict() for a in self.args]}
        if self.block_dim is not None:
            row["block_dim"] = self.block_dim
        if self.reason:
            row["reason"] = self.reason
        return row

    def copy(self) -> Launch:
        return copy.deepcopy(self)

    def arg(self, name: str) -> Arg | None:
        return next((a for a in self.args if a.name == name), None)

    def rename(self, old: str, new: str) -> None:
        if (a := self.arg(old)) is not None:
            a.name = new

    def replace(self, name: str, new: list[Arg]) -> None:
        at = next(i for i, a in enumerate(self.args) if a.name == name)
        self.args[at : at + 1] = new


# ---------------------------------------------------------------------------------------------
# types, from annotations


def value_type(node: ast.AST | None, structs: dict[str, ast.ClassDef]) -> T.WType | None:
    """The WType an annotation names (``float``, ``wp.vec3``, a struct of the unit), else None."""
    name = dotted(node) if node is not None else ""
    if name in ("float", "int", "bool"):
        return {"float": T.FLOAT32, "int": T.INT32, "bool": T.BOOL}[name]
    if name in structs:
        return struct_type(structs[name], structs)
    attr = wp_attr(node)
    cls = getattr(wp, attr, None) if attr else None
    if cls is None or not isinstance(cls, type):
        return None
    scalar = getattr(cls, "_wp_scalar_type_", None)
    if scalar is None:
        kind = scalar_kind(cls.__name__)
        return T.WType(cls.__name__, kind, cls.__name__) if kind else None
    generic = getattr(cls, "_wp_generic_type_str_", "")
    if generic not in _GENERIC_KINDS:
        return None
    return T.WType(cls.__name__, _GENERIC_KINDS[generic], scalar.__name__, tuple(cls._shape_))


def scalar_kind(name: str) -> str | None:
    if name in ("float16", "float32", "float64", "bfloat16"):
        return "float"
    if name.startswith("int"):
        return "int"
    if name.startswith("uint"):
        return "uint"
    return "bool" if name == "bool" else None


def struct_type(node: ast.ClassDef, structs: dict[str, ast.ClassDef]) -> T.WType:
    fields = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            t = value_type(stmt.annotation, structs)
            fields.append((stmt.target.id, t if t is not None else T.WType("array", "array")))
    return T.WType(node.name, "struct", fields=tuple(fields))


def describe(node: ast.AST | None, structs: dict[str, ast.ClassDef]) -> tuple[str, T.WType, int] | None:
    """(kind, element or value type, ndim) of a parameter annotation; None when it is not one a
    launch can be described for (``Any``, indexed arrays, textures)."""
    found = array_annotation(node)
    if found is not None:
        dtype = value_type(found[0], structs)
        return None if dtype is None else ("array", dtype, found[1])
    t = value_type(node, structs)
    if t is None:
        return None
    return ("struct" if t.kind == "struct" else "scalar"), t, 0


def handle_of(kernel: ast.FunctionDef, name: str, funcs: dict[str, ast.FunctionDef]) -> str | None:
    """The runtime object a ``uint64`` parameter identifies, from the builtins it is passed to
    (followed into the unit's functions)."""
    for node in walk(kernel):
        if not isinstance(node, ast.Call):
            continue
        passed = [i for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == name]
        if not passed:
            continue
        attr = wp_attr(node) or ""
        for part, what in HANDLE_USERS.items():
            if part in attr:  # ``wp.mesh_query_point``, ``wp.tile_bvh_query_aabb``...
                return what
        callee = funcs.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if callee is not None and callee is not kernel:
            inner = [a.arg for a in callee.args.args]
            for i in passed:
                if i < len(inner) and (found := handle_of(callee, inner[i], funcs)):
                    return found
    return None


def params(kernel: ast.FunctionDef, launch: Launch, structs: dict[str, ast.ClassDef]) -> list[Param]:
    """The kernel's parameters as ``generator.metadata`` describes them."""
    out = []
    for a in kernel.args.args:
        arg = launch.arg(a.arg) or Arg(a.arg)
        described = describe(a.annotation, structs)
        if described is None:
            out.append(Param(a.arg, "handle", T.WType(dotted(a.annotation) or "unknown", "handle", "uint64")))
            continue
        kind, dtype, ndim = described
        if kind == "scalar" and dtype.name == "uint64" and launch.reason:
            kind = "handle"
        out.append(
            Param(
                a.arg,
                kind,
                dtype,
                max(ndim, 1),
                arg.role,
                tuple(arg.range),
                tuple(arg.shape) if kind == "array" else None,
            )
        )
    return out
