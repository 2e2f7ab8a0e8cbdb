"""A seed's launch, read from its code: grid, array shapes, value ranges, roles.

The grid has one axis per name ``wp.tid()`` binds (none: one thread). Integer parameters get a
value from how they are used: compared with a thread index, a count equal to that axis of the
grid; named like a stride or extent, the grid's last extent; otherwise a small positive range
(it may divide). Arrays are sized so that every index the kernel can form (``bounds``) lies
inside them: grown until nothing reaches past an end, and cut to size along an axis whose
indices are fixed by the code alone. Then each integer array whose values become indices gets
the widest range that keeps them valid (an index array's values index the arrays it indexes).
Float inputs get [-2, 2]; ``verify`` narrows that to positive values when the kernel needs
them. Roles: an array the kernel writes is an output ("out"), or "inout" when it also reads it.
``differentiable`` says whether Warp's backward of a kernel can be checked at all.

What it leaves out: kernels that need a runtime object (a ``uint64`` passed to mesh, hash grid,
BVH or volume queries, textures): their launch has a reason instead, and they are not run.
"""

from __future__ import annotations

import ast

from jit.code.synthesis.mutate.bounds import Bounds
from jit.code.synthesis.mutate.launch import Arg, Launch, describe, handle_of
from jit.code.synthesis.mutate.syntax import arrays, base_name, call_name, thread_index, wp_attr, walk
from jit.code.synthesis.mutate.unit import Unit

GRIDS = {0: [1], 1: [32], 2: [8, 8], 3: [4, 4, 4], 4: [3, 3, 3, 2]}
TILE_GRIDS = {0: [1], 1: [2], 2: [2, 2], 3: [2, 2, 1], 4: [2, 1, 1, 1]}
DEFAULT_SIZE = 16  # along an axis no thread index runs over
TILED_SIZE = 32
MAX_ELEMENTS = 1 << 20  # an array larger than this is a sign the bounds ran away
ROUNDS = 8
MIN_SEARCH = 8  # the smallest value an index array may hold is looked for below this
FLOAT_RANGE = (-2.0, 2.0)
INT_RANGE = (1.0, 4.0)  # never 0: an integer may be a divisor in a helper
STRIDE_NAMES = ("width", "height", "depth", "stride", "nx", "ny", "nz", "cols", "rows", "dim")


def infer(unit: Unit, block_dim: int | None = None) -> Launch:
    kernel = unit.kernel
    found = thread_index(kernel)
    tids = found[1] if found else []
    dims = list((TILE_GRIDS if block_dim else GRIDS).get(len(tids), [2] * len(tids)))
    launch = Launch(dims, block_dim=block_dim)
    reason = None
    for a in kernel.args.args:
        described = describe(a.annotation, unit.structs)
        if described is None:
            reason = reason or f"parameter {a.arg} has a type a launch cannot be described for"
        elif described[1].name == "uint64" and (what := handle_of(kernel, a.arg, unit.funcs)):
            reason = reason or f"needs a {what} ({a.arg})"
        elif described[0] == "struct" and any(f.kind == "array" for _, f in described[1].fields):
            reason = reason or f"struct parameter {a.arg} holds arrays"
        launch.args.append(Arg(a.arg, origin=("arg", a.arg)))
    launch.reason = reason
    if reason is None:
        size_arrays(unit, launch, tids)
    assign_roles(unit, launch)
    return launch


def int_params(unit: Unit) -> list[str]:
    """The kernel's integer scalar parameters."""
    out = []
    for a in unit.kernel.args.args:
        d = describe(a.annotation, unit.structs)
        if d is not None and d[0] == "scalar" and d[1].kind in ("int", "uint"):
            out.append(a.arg)
    return out


def scalar_ranges(unit: Unit, tids: list[str], dims: list[int]) -> dict[str, tuple[int, int]]:
    """A value (range) for every integer parameter, from how the kernel uses it."""
    kernel = unit.kernel
    out = {}
    for name in int_params(unit):
        axis = compared_axis(kernel, name, tids)
        if axis is not None:
            out[name] = (dims[axis], dims[axis])
        elif name.lower().startswith(STRIDE_NAMES) or name.lower().endswith(STRIDE_NAMES):
            out[name] = (dims[-1], dims[-1])
        else:
            out[name] = (1, 4)
    return out


def compared_axis(kernel: ast.FunctionDef, name: str, tids: list[str]) -> int | None:
    """The grid axis whose thread index is compared with ``name`` (``if i >= n: return``)."""
    for node in walk(kernel):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            sides = [node.left, node.comparators[0]]
            names = [s.id for s in sides if isinstance(s, ast.Name)]
            if name in names:
                for t in names:
                    if t in tids and t != name:
                        return tids.index(t)
    return None


def size_arrays(unit: Unit, launch: Launch, tids: list[str]) -> None:
    """Shapes for the arrays and ranges for the integers, so that every index stays in bounds."""
    kernel = unit.kernel
    ndims = arrays(kernel)
    ints = scalar_ranges(unit, tids, launch.dim)
    int_arrays = [a.arg for a in kernel.args.args if a.arg in ndims and element_is_int(a.annotation, unit)]
    shapes = {name: default_shape(nd, launch.dim, tids, launch.block_dim is not None) for name, nd in ndims.items()}
    values = {**ints, **{name: (0, 0) for name in int_arrays}}
    bounds = Bounds(kernel, unit.funcs, unit.consts(), ndims, shapes, values)
    grow(bounds, tids, launch.dim)  # an index it cannot bound is left to the verifying run
    fit_exact(bounds, tids, launch.dim)
    grow(bounds, tids, launch.dim)  # what other arrays' sizes read of the ones just fitted
    for name in int_arrays:
        values[name] = widest(bounds, name, tids, launch.dim)
    for arg in launch.args:
        if arg.name in ndims:
            arg.shape = tuple(shapes[arg.name])
            arg.range = tuple(float(v) for v in values[arg.name]) if arg.name in int_arrays else FLOAT_RANGE
        elif arg.name in ints:
            arg.range = tuple(float(v) for v in ints[arg.name])
        else:
            arg.range = FLOAT_RANGE


def default_shape(ndim: int, dims: list[int], tids: list[str], tiled: bool) -> list[int]:
    """An array's size before its indices are known: the grid's along the grid's axes (a tile
    kernel's grid counts tiles, so its arrays start at a few tiles' size)."""
    if tiled:
        return [TILED_SIZE] * ndim
    base = dims if tids else [DEFAULT_SIZE]
    return [base[k] if k < len(base) else DEFAULT_SIZE // 2 for k in range(ndim)]


def fit_exact(bounds: Bounds, tids: list[str], dims: list[int]) -> None:
    """An array axis whose indices are all known and depend neither on array sizes nor on values
    read from arrays (``out[0]``, ``m[i, k]`` for ``k in range(3)``) is exactly as long as they need."""
    saved_values, saved_shapes = dict(bounds.values), {n: list(s) for n, s in bounds.shapes.items()}
    read_from = [name for name in bounds.ndims if name in bounds.values]
    for name in read_from:  # an index read from an array is not fixed: vary the values too
        bounds.values[name] = (0, 1 << 16)
    first = bounds.run(tids, dims)
    for shape in bounds.shapes.values():
        shape[:] = [2 * d + 3 for d in shape]
    for name in read_from:
        bounds.values[name] = (0, 1 << 15)
    second = bounds.run(tids, dims)
    bounds.values.update(saved_values)
    bounds.shapes.update(saved_shapes)
    fixed: dict[tuple[str, int], int] = {}
    moving = set()
    same_path = len(first) == len(second)
    for a, b in zip(first, second):
        key = (a.array, a.dim)
        if not same_path or a.span is None or a.span != b.span or a.span[0] < 0:
            moving.add(key)
        else:
            fixed[key] = max(fixed.get(key, 0), a.span[1] + 1)
    for (array, dim), size in fixed.items():
        if (array, dim) not in moving and same_path:
            bounds.shapes[array][dim] = size


def element_is_int(annotation: ast.AST, unit: Unit) -> bool:
    d = describe(annotation, unit.structs)
    return d is not None and d[1].kind in ("int", "uint")


def grow(bounds: Bounds, tids: list[str], dims: list[int]) -> bool:
    """Enlarge ``bounds.shapes`` until every known index fits; False if some index is unknown,
    can be negative, or keeps growing."""
    for _ in range(ROUNDS):
        changed, safe = False, True
        for access in bounds.run(tids, dims):
            if access.span is None or access.span[0] < 0:
                safe = False
                continue
            shape = bounds.shapes[access.array]
            if access.span[1] >= shape[access.dim]:
                shape[access.dim] = access.span[1] + 1
                changed = True
        if any(_size(s) > MAX_ELEMENTS for s in bounds.shapes.values()):
            return False
        if not changed:
            return safe
    return False


def widest(bounds: Bounds, name: str, tids: list[str], dims: list[int]) -> tuple[int, int]:
    """The widest [lo, hi] for the values of integer array ``name`` that keeps every index that
    depends on them inside the (now fixed) shapes; ``INT_RANGE`` when no index depends on them."""

    def ok(a) -> bool:
        return a.span is None or (a.span[0] >= 0 and a.span[1] < bounds.shapes[a.array][a.dim])

    def fits(lo: int, hi: int) -> bool:
        bounds.values[name] = (lo, hi)
        return all(ok(a) or (a.array, a.dim) in failing for a in bounds.run(tids, dims))

    first = bounds.run(tids, dims)
    base = [a.span for a in first]
    failing = {(a.array, a.dim) for a in first if not ok(a)}  # not this array's doing
    bounds.values[name] = (0, 1 << 16)
    if [a.span for a in bounds.run(tids, dims)] == base:
        bounds.values[name] = (int(INT_RANGE[0]), int(INT_RANGE[1]))
        return bounds.values[name]
    low = next((v for v in range(MIN_SEARCH) if fits(v, v)), 0)  # ``idx[i] - 1`` needs values from 1
    # values an index could take at most: the longest axis (a count compared with the thread index)
    lo, hi = low, max(low, max([d for shape in bounds.shapes.values() for d in shape] + dims))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(low, mid) else (lo, mid - 1)
    bounds.values[name] = (low, lo)
    return low, lo


def _size(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def assign_roles(unit: Unit, launch: Launch) -> None:
    written, read = writes_and_reads(unit.kernel, unit.funcs, set(arrays(unit.kernel)))
    for arg in launch.args:
        if arg.name in written:
            arg.role = "inout" if arg.name in read else "out"


def writes_and_reads(
    fn: ast.FunctionDef, funcs: dict[str, ast.FunctionDef], names: set[str], depth: int = 0
) -> tuple[set[str], set[str]]:
    """Which of the arrays ``names`` a function writes, and which it reads (an accumulation with
    ``+=`` reads; an atomic whose result is unused does not)."""
    written, read = set(), set()
    for stmt in fn.body:
        for node in walk(stmt):
            if (
                isinstance(node, (ast.Subscript, ast.Attribute))
                and isinstance(node.ctx, ast.Store)
                and (b := base_name(node)) in names
            ):
                written.add(b)  # ``a[i] = v``, ``a[i].x = v``, ``a[i][0] = v``
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and (b := base_name(node)) in names
                and not stored_through(stmt, node)
            ):
                read.add(b)
            elif isinstance(node, ast.AugAssign) and (b := base_name(node.target)) in names:
                read.add(b)
            elif isinstance(node, ast.Call):
                _call_effects(node, stmt, funcs, names, written, read, depth)
    return written, read


def stored_through(stmt: ast.stmt, node: ast.Subscript) -> bool:
    """True if ``node`` is only the element a component store writes into (``a[i]`` in
    ``a[i].x = v``), which is no read of ``a``."""
    return is_written_through(stmt, node)


def _call_effects(node: ast.Call, stmt: ast.stmt, funcs, names, written, read, depth) -> None:
    attr = wp_attr(node) or ""
    passed = [(i, a.id) for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id in names]
    if not passed:
        return
    if attr.startswith(("atomic_", "tile_atomic")) and passed[0][0] == 0:
        written.add(passed[0][1])
        if not (isinstance(stmt, ast.Expr) and stmt.value is node):
            read.add(passed[0][1])
    elif attr in ("tile_store", "array_store") and passed[0][0] == 0:
        written.add(passed[0][1])
    elif isinstance(node.func, ast.Name) and node.func.id in funcs and depth < 4:
        callee = funcs[node.func.id]
        inner = {callee.args.args[i].arg: n for i, n in passed if i < len(callee.args.args)}
        w, r = writes_and_reads(callee, funcs, set(inner), depth + 1)
        written |= {inner[n] for n in w}
        read |= {inner[n] for n in r}
    else:
        read |= {n for _, n in passed}


def differentiable(kernel: ast.FunctionDef) -> bool:
    """Whether Warp's backward of the kernel can be trusted against finite differences: not when
    it is built without one (``enable_backward=False``), takes half precision arrays (their
    differences round to nothing), reads an array element after storing into that array (the
    backward replays reads on the inputs), or stores at an index read from data (two threads
    may overwrite one element; ``+=`` and atomics accumulate instead), or keeps a running
    extreme in a loop (``tracks_extreme``)."""
    for dec in kernel.decorator_list:
        if isinstance(dec, ast.Call) and any(
            k.arg == "enable_backward" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in dec.keywords
        ):
            return False
    if any(
        isinstance(n, ast.Attribute) and n.attr in ("float16", "bfloat16")
        for a in kernel.args.args
        for n in walk(a.annotation or ast.Pass())
    ):
        return False
    if tracks_extreme(kernel):
        return False
    names = set(arrays(kernel))
    from_data = data_derived(kernel)
    stored: set[str] = set()
    for stmt in _in_order(kernel.body):
        accesses = [
            n
            for n in walk(stmt)
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in names
        ]
        # a statement reads before it stores: ``a[i] = a[i] + 1.0`` reads the input
        if any(isinstance(n.ctx, ast.Load) and n.value.id in stored for n in accesses):
            return False
        for node in accesses:
            if isinstance(stmt, ast.AugAssign) and base_name(stmt.target) == node.value.id:
                stored.add(node.value.id)  # accumulated: a later read would see the sum
            elif isinstance(node.ctx, ast.Store) or is_written_through(stmt, node):
                index = {n.id for n in walk(node.slice) if isinstance(n, ast.Name)}
                if index & from_data or any(isinstance(n, ast.Subscript) for n in walk(node.slice)):
                    return False
                stored.add(node.value.id)
    return True


def is_written_through(stmt: ast.stmt, node: ast.Subscript) -> bool:
    """``a[i]`` in ``a[i].x = v`` or ``a[i][0] = v``: a store into part of the element."""
    return isinstance(stmt, ast.Assign) and any(
        isinstance(t, (ast.Attribute, ast.Subscript)) and t.value is node for t in stmt.targets
    )


def tracks_extreme(kernel: ast.FunctionDef) -> bool:
    """True for a running minimum or maximum kept by a branch in a loop of unknown length
    (``if d > best: best = d``): Warp's backward of such a loop does not follow the branch the
    forward took (seen on Warp's own brute-force closest-point kernels)."""
    for loop in walk(kernel):
        if not isinstance(loop, (ast.For, ast.While)) or (isinstance(loop, ast.For) and static_range(loop.iter)):
            continue
        inside = {id(n) for s in loop.body for n in walk(s)}
        before = {
            n.id
            for n in walk(kernel)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in inside
        }
        for branch in (n for s in loop.body for n in walk(s) if isinstance(n, ast.If)):
            tested = {n.id for n in walk(branch.test) if isinstance(n, ast.Name)} & before
            assigned = {
                n.id
                for s in branch.body
                for n in walk(s)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            if tested & assigned:
                return True
    return False


def static_range(node: ast.expr) -> bool:
    """``range`` over literal bounds: Warp unrolls it."""
    return call_name(node) == "range" and all(isinstance(a, ast.Constant) for a in node.args)


def data_derived(kernel: ast.FunctionDef) -> set[str]:
    """Locals whose value comes from an array element or an atomic's result (directly or
    through other locals)."""
    out: set[str] = set()
    for _ in range(3):
        for node in walk(kernel):
            if isinstance(node, ast.Assign):
                value_names = {n.id for n in walk(node.value) if isinstance(n, ast.Name)}
                reads = any(
                    isinstance(n, ast.Subscript) or (wp_attr(n) or "").startswith("atomic_")
                    for n in walk(node.value)
                )  # an atomic returns what it found in memory
                if reads or value_names & out:
                    out |= {
                        n.id
                        for t in node.targets
                        if isinstance(t, (ast.Name, ast.Tuple))
                        for n in walk(t)
                        if isinstance(n, ast.Name)
                    }
    return out


def _in_order(body: list[ast.stmt]):
    """Statements in source order, nested ones after their parent's header."""
    for stmt in body:
        yield stmt if not hasattr(stmt, "body") else _header(stmt)
        for field in ("body", "orelse"):
            sub = getattr(stmt, field, None)
            if isinstance(sub, list):
                yield from _in_order(sub)


def _header(stmt: ast.stmt) -> ast.AST:
    """What a compound statement evaluates itself (its test or iterable)."""
    return getattr(stmt, "test", None) or getattr(stmt, "iter", None) or ast.Pass()
