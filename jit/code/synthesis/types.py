"""The Warp value types the kernel generator composes programs from.

A ``WType`` names a Warp type (``float32``, ``vec3f``, ``mat33f``, ``quatf``, a user struct, ...)
and knows how to spell it in Python source and how to write a literal of it. The generator
works only with these types; ``warp_type`` maps one to the real Warp class when Warp's
builtin registry is asked what a call returns. What it leaves out: arrays (a kernel
parameter is an array *of* a WType, see ``stmt``) and choosing types (``expr``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import warp as wp


@dataclass(frozen=True, slots=True)
class WType:
    name: str  # Warp's name: "float32", "vec3f", or the struct's class name
    kind: str  # int | uint | float | bool | vec | mat | quat | transform | spatial | smat | struct
    scalar: str = "float32"  # component type
    shape: tuple[int, ...] = ()
    fields: tuple[tuple[str, "WType"], ...] = ()  # structs only

    @property
    def py(self) -> str:
        """How the type is spelled in a kernel's source."""
        return self.name if self.kind == "struct" else f"wp.{self.name}"

    @property
    def is_scalar(self) -> bool:
        return self.kind in ("int", "uint", "float", "bool")

    @property
    def is_float(self) -> bool:
        return self.scalar in ("float32", "float64") and self.kind not in ("bool", "struct")

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self) -> str:
        return self.name


INT32 = WType("int32", "int", "int32")
UINT32 = WType("uint32", "uint", "uint32")
UINT64 = WType("uint64", "uint", "uint64")  # the id of a runtime object (mesh, BVH, hash grid)
FLOAT32 = WType("float32", "float", "float32")
FLOAT64 = WType("float64", "float", "float64")
BOOL = WType("bool", "bool", "bool")
VEC2F = WType("vec2f", "vec", "float32", (2,))
VEC3F = WType("vec3f", "vec", "float32", (3,))
VEC4F = WType("vec4f", "vec", "float32", (4,))
VEC3D = WType("vec3d", "vec", "float64", (3,))
VEC2I = WType("vec2i", "vec", "int32", (2,))
VEC3I = WType("vec3i", "vec", "int32", (3,))
MAT22F = WType("mat22f", "mat", "float32", (2, 2))
MAT33F = WType("mat33f", "mat", "float32", (3, 3))
MAT44F = WType("mat44f", "mat", "float32", (4, 4))
MAT33D = WType("mat33d", "mat", "float64", (3, 3))
QUATF = WType("quatf", "quat", "float32", (4,))
TRANSFORMF = WType("transformf", "transform", "float32", (7,))
SPATIAL_VECTORF = WType("spatial_vectorf", "spatial", "float32", (6,))
SPATIAL_MATRIXF = WType("spatial_matrixf", "smat", "float32", (6, 6))

VALUE_TYPES = (INT32, UINT32, FLOAT32, FLOAT64, BOOL, VEC2F, VEC3F, VEC4F, VEC3D, VEC2I, VEC3I,
               MAT22F, MAT33F, MAT44F, MAT33D, QUATF, TRANSFORMF, SPATIAL_VECTORF, SPATIAL_MATRIXF)
BY_NAME = {t.name: t for t in VALUE_TYPES}
SCALARS = {"int32": INT32, "uint32": UINT32, "float32": FLOAT32, "float64": FLOAT64, "bool": BOOL}
FLOAT_TYPES = tuple(t for t in VALUE_TYPES if t.is_float)
FLOAT32_TYPES = tuple(t for t in FLOAT_TYPES if t.scalar == "float32")


def warp_type(t: WType):
    """The Warp class of a value type (structs have none here: they are defined by the source)."""
    return getattr(wp, t.name)


def from_warp(cls) -> WType | None:
    """The WType of a Warp class, if it is one the generator knows."""
    for t in VALUE_TYPES:
        if warp_type(t) is cls:
            return t
    return None


def component_type(t: WType) -> WType:
    return SCALARS[t.scalar]


def scalar_literal(rng: random.Random, t: WType, lo: float = -2.0, hi: float = 2.0) -> str:
    """A literal of scalar type ``t`` in [lo, hi]; float64/uint32 are spelled with their constructor."""
    if t.kind == "bool":
        return rng.choice(("True", "False"))
    if t.kind in ("int", "uint"):
        lo_i = 0 if t.kind == "uint" else int(lo * 4)
        value = str(rng.randint(lo_i, max(lo_i + 1, int(hi * 4))))
        return value if t.kind == "int" else f"wp.uint32({value})"
    value = f"{rng.uniform(lo, hi):.{rng.choice((1, 2, 3))}f}"
    return value if t.scalar == "float32" else f"wp.float64({value})"

