"""Mutations of the index space a kernel runs over: a bounds guard, and a flattened grid.

- ``guard``: the launch is rounded up to a multiple of the block size, as CUDA-minded code
  does, and the kernel returns early for threads past the real count: a new ``count: int``
  parameter holding it, or ``arr.shape[0]`` of an array the thread index runs over.
- ``flatten``: a 2D or 3D grid becomes a 1D one; the kernel recovers its indices from the flat
  one (``i = tid // width``, ``j = tid % width``) with the extents read from an array's shape
  or passed as parameters.

Each thread of the seed's grid does the same work in the mutant, so outputs are equal. What it
leaves out: tile kernels (their threads share tile operations: none may leave early, and the
block's shape is the grid's).
"""

from __future__ import annotations

import ast
import random

from jit.code.synthesis.mutate.launch import Arg
from jit.code.synthesis.mutate.syntax import arrays, thread_index
from jit.code.synthesis.mutate.unit import Unit

BLOCK = 64
COUNT_NAMES = ("num_points", "num_elements", "count", "n", "num_items", "size")
FLAT_NAMES = ("tid", "index", "flat_index", "linear_index")
EXTENT_NAMES = {1: ("width", "num_cols", "ncols"), 2: ("nz", "depth", "dim_z")}
MIDDLE_NAMES = ("ny", "height", "dim_y")


def guarded(fn: ast.FunctionDef, name: str) -> bool:
    """True if some top-level ``if`` already returns early on a test of ``name``."""
    return any(
        isinstance(s, ast.If)
        and isinstance(s.body[0], ast.Return)
        and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(s.test))
        for s in fn.body
    )


def indexed_by(unit: Unit, index: str, size: int) -> list[str]:
    """Arrays of the kernel indexed by ``index`` in their first axis and ``size`` long there."""
    out = []
    for name in arrays(unit.kernel):
        arg = unit.launch.arg(name)
        if arg is None or not arg.shape or arg.shape[0] != size:
            continue
        for node in ast.walk(unit.kernel):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
                first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
                if isinstance(first, ast.Name) and first.id == index:
                    out.append(name)
                    break
    return out


def guard(unit: Unit, rng: random.Random) -> str | None:
    found = thread_index(unit.kernel)
    if unit.tiled or found is None or len(found[1]) != 1 or len(unit.launch.dim) != 1:
        return None
    at, (index,) = found
    if guarded(unit.kernel, index):
        return None
    n = unit.launch.dim[0]
    by_shape = indexed_by(unit, index, n)
    if by_shape and rng.random() < 0.4:
        bound = f"{rng.choice(by_shape)}.shape[0]"
    else:
        bound = unit.fresh(rng, COUNT_NAMES)
        unit.add_param(bound, "int", Arg(bound, (), (float(n), float(n)), "in", ("count", 0)))
    node = ast.parse(f"if {index} >= {bound}:\n    return").body[0]
    unit.kernel.body.insert(at + 1, node)
    unit.touched.add(id(node))
    unit.launch.dim = [-(-n // BLOCK) * BLOCK]
    return f"guard:{bound}"


def flatten(unit: Unit, rng: random.Random) -> str | None:
    found = thread_index(unit.kernel)
    if unit.tiled or found is None or len(found[1]) not in (2, 3) or len(unit.launch.dim) != len(found[1]):
        return None
    at, names = found
    dims = list(unit.launch.dim)
    extents = {axis: extent(unit, rng, axis, dims) for axis in range(1, len(dims))}
    flat = unit.fresh(rng, FLAT_NAMES)
    used = {n.id for n in ast.walk(unit.kernel) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    lines = [f"{flat} = wp.tid()"]
    if len(dims) == 2:
        w = extents[1]
        parts = {0: f"{flat} // {w}", 1: f"{flat} % {w}"}
    else:
        ny, nz = extents[1], extents[2]
        parts = {0: f"{flat} // ({ny} * {nz})", 1: f"({flat} // {nz}) % {ny}", 2: f"{flat} % {nz}"}
    lines += [f"{name} = {parts[k]}" for k, name in enumerate(names) if name in used]
    new = ast.parse("\n".join(lines)).body
    unit.kernel.body[at : at + 1] = new
    unit.touched |= {id(s) for s in new}
    unit.launch.dim = [dims[0] * (dims[1] * (dims[2] if len(dims) == 3 else 1))]
    return f"flatten:{len(dims)}d"


def extent(unit: Unit, rng: random.Random, axis: int, dims: list[int]) -> str:
    """How the kernel knows the grid's extent along ``axis``: an array's shape, else a parameter."""
    ndims = arrays(unit.kernel)
    same = [
        n
        for n, nd in ndims.items()
        if nd == len(dims) and unit.launch.arg(n) is not None and list(unit.launch.arg(n).shape) == dims
    ]
    if same and rng.random() < 0.6:
        return f"{rng.choice(same)}.shape[{axis}]"
    options = EXTENT_NAMES[axis] if axis == len(dims) - 1 else MIDDLE_NAMES
    name = unit.fresh(rng, options)
    unit.add_param(name, "int", Arg(name, (), (float(dims[axis]),) * 2, "in", ("count", axis)))
    return name
