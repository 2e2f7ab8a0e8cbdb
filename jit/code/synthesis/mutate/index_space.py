"""The index space a kernel runs over: a bounds guard on a real count.

``guard``: the launch is rounded up to a multiple of the block size, as CUDA-minded code does,
and the kernel returns early for threads past the real count: a new ``count: int`` parameter
holding it, or ``arr.shape[0]`` of an array the thread index runs over.

Each thread of the seed's grid does the same work in the mutant, so outputs are equal. What it
leaves out: tile kernels (their threads share tile operations: none may leave early), and
flattening a 2D or 3D grid into a 1D one (real code launches the grid it means; a flat index
split back with ``//`` and ``%`` reads as a machine's rewrite).
"""

from __future__ import annotations

import ast
import random

from jit.code.synthesis.mutate.launch import Arg
from jit.code.synthesis.mutate.names import OWNERS, singular
from jit.code.synthesis.mutate.syntax import arrays, thread_index, walk
from jit.code.synthesis.mutate.unit import Unit

BLOCK = 64
GENERIC_COUNTS = ("count", "n")


def guarded(fn: ast.FunctionDef, name: str) -> bool:
    """True if some top-level ``if`` already returns early on a test of ``name``."""
    return any(
        isinstance(s, ast.If)
        and isinstance(s.body[0], ast.Return)
        and any(isinstance(n, ast.Name) and n.id == name for n in walk(s.test))
        for s in fn.body
    )


def indexed_by(unit: Unit, index: str, size: int) -> list[str]:
    """Arrays of the kernel indexed by ``index`` in their first axis and ``size`` long there."""
    out = []
    for name in arrays(unit.kernel):
        arg = unit.launch.arg(name)
        if arg is None or not arg.shape or arg.shape[0] != size:
            continue
        for node in walk(unit.kernel):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
                first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
                if isinstance(first, ast.Name) and first.id == index:
                    out.append(name)
                    break
    return out


def count_names(unit: Unit, index: str, n: int) -> tuple[str, ...]:
    """Names for the count of what the threads run over, from the arrays they index: ``points``
    -> ``num_points``, ``particle_x`` -> ``num_particles``; else a plain ``count``. Integer arrays
    say something of each item (its ``rows``, ``cols``), not what the items are, and a name such
    as ``faces_per_vertex`` counts faces of a vertex: neither names the items. Arrays that name
    different owners leave the count generic."""
    ints = {a.arg for a in unit.kernel.args.args if a.annotation is not None
            and "int" in ast.unparse(a.annotation).replace("wp.array", "")}
    owners = []
    for name in indexed_by(unit, index, n):
        stem = name.strip("_")
        if name in ints or "_per_" in stem:
            continue
        if singular(stem) != stem and stem.isalpha() and singular(stem) in OWNERS:
            owners.append(f"num_{stem}")  # ``points``, ``vertices``
        elif singular(stem.split("_", 1)[0]) in OWNERS:
            owners.append(f"num_{plural(singular(stem.split('_', 1)[0]))}")
    owners = list(dict.fromkeys(owners))
    return tuple(owners) if len(owners) == 1 else GENERIC_COUNTS


def inputs_end(unit: Unit) -> str | None:
    """The last parameter before the first array the kernel writes: a new input goes there, with
    the other inputs, rather than after the outputs. When inputs follow an output already (``y``
    updated in place between ``x`` and ``a``), the new one goes last, not between two arrays."""
    names = [a.arg for a in unit.kernel.args.args]
    roles = {a.name: a.role for a in unit.launch.args}
    first_out = next((i for i, name in enumerate(names) if roles.get(name) in ("out", "inout")), None)
    if first_out is None or first_out == 0:
        return None
    if any(roles.get(name) == "in" for name in names[first_out:]):
        return names[-1]
    return names[first_out - 1]


def plural(word: str) -> str:
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else (
        word + "es" if word.endswith(("s", "x", "sh", "ch")) else word + "s"
    )


def documented_args(unit: Unit) -> bool:
    """The kernel's docstring lists its parameters (a new one would be missing from the list)."""
    doc = ast.get_docstring(unit.kernel) or ""
    return "Args:" in doc or ":param" in doc or "Parameters" in doc


def guard(unit: Unit, rng: random.Random) -> str | None:
    found = thread_index(unit.kernel)
    if unit.tiled or found is None or len(found[1]) != 1 or len(unit.launch.dim) != 1:
        return None
    at, (index,) = found
    if guarded(unit.kernel, index):
        return None
    n = unit.launch.dim[0]
    if documented_args(unit):  # a new parameter would be missing from the documented list
        return None
    # a count parameter, never an array's length: the launch is sized to the arrays, so a test of
    # their shape could not fire, while a rounded-up launch needs the real count
    bound = unit.fresh(rng, count_names(unit, index, n))
    unit.add_param(bound, "int", Arg(bound, (), (float(n), float(n)), "in", ("count", 0)), inputs_end(unit))
    node = ast.parse(f"if {index} >= {bound}:\n    return").body[0]
    unit.kernel.body.insert(at + 1, node)
    unit.touched.add(id(node))
    unit.launch.dim = [-(-n // BLOCK) * BLOCK]
    return f"guard:{bound}"
