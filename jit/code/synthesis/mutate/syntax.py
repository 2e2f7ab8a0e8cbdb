"""What the AST of a kernel tells without building it: Warp calls, effects, blocks, the thread index.

Every mutation asks these questions before it moves code: is a call pure, which names a statement
reads and writes, which statement lists a function holds, which names ``wp.tid()`` binds. What it
leaves out: types (``retype`` and ``helpers`` read them from annotations), and Warp's own checks
(a mutant is built by the pipeline).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass

PURE_GROUPS = ("Scalar Math", "Vector Math", "Quaternion Math", "Transformations", "Spatial Math")
PURE_UTILITY = ("select", "where", "lerp", "smoothstep", "len")
CONSTRUCTOR_PREFIXES = (
    "vec",
    "mat",
    "quat",
    "transform",
    "spatial_vector",
    "spatial_matrix",
    "float",
    "int",
    "uint",
    "bool",
)
PY_PURE = ("min", "max", "abs", "float", "int", "round", "bool")
ARRAY_TYPES = ("array", "array1d", "array2d", "array3d", "array4d")
SIMPLE_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)


@functools.cache
def pure_builtins() -> frozenset[str]:
    """Warp builtins without side effects (safe to move, hoist, inline)."""
    from jit.code.extraction import warp_backend as wb

    return frozenset(n for n in wb.builtin_names() if wb.builtin_group(n) in PURE_GROUPS or n in PURE_UTILITY)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk``: the same nodes in the same order (breadth first, a node's children queued
    before it is yielded), in one generator where ``ast.walk`` runs two more per node. A mutant
    walks its unit tens of thousands of times: this was a third of its time."""
    todo = [node]
    for node in todo:  # a list grows under its own iterator: the queue
        todo += children(node)
        yield node


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes`` as a list, made without a generator per field."""
    out = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out += [v for v in value if isinstance(v, ast.AST)]
    return out


def wp_attr(node: ast.AST | None) -> str | None:
    """``X`` for ``wp.X`` (called or not)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("wp", "warp"):
        return node.attr
    return None


def call_name(node: ast.AST) -> str:
    """``X`` for ``wp.X(...)`` and for ``X(...)``, else ""."""
    if not isinstance(node, ast.Call):
        return ""
    return wp_attr(node) or (node.func.id if isinstance(node.func, ast.Name) else "")


def is_constructor(attr: str | None) -> bool:
    return attr is not None and attr.startswith(CONSTRUCTOR_PREFIXES) and not attr.startswith("transform_")


def is_pure_call(node: ast.Call) -> bool:
    attr = wp_attr(node)
    if attr is not None:
        return (attr in pure_builtins() or is_constructor(attr)) and attr != "tid"
    return isinstance(node.func, ast.Name) and node.func.id in PY_PURE


def is_tile_call(node: ast.AST) -> bool:
    attr = wp_attr(node) if isinstance(node, ast.Call) else None
    return attr is not None and (attr.startswith("tile") or attr == "untile")


def uses_tiles(tree: ast.AST) -> bool:
    return any(is_tile_call(n) for n in walk(tree))


def base_name(node: ast.AST) -> str | None:
    """The variable an access reaches into: ``a`` for ``a[i].x``."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def is_float_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is float


def is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


@dataclass(slots=True)
class Effects:
    reads: set[str]
    writes: set[str]
    impure: bool


def effects(stmt: ast.stmt) -> Effects:
    """Names a statement reads and writes; calls with side effects write every name they are passed
    (Warp's out-parameters, arrays written by helper functions)."""
    reads, writes, impure = set(), set(), False
    for node in walk(stmt):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else writes).add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            if (b := base_name(node)) is not None:
                writes.add(b)
        elif isinstance(node, ast.Call) and not is_pure_call(node) and wp_attr(node) != "tid":
            impure = True
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if (b := base_name(arg)) is not None:
                    writes.add(b)
    if isinstance(stmt, ast.AugAssign) and (b := base_name(stmt.target)) is not None:
        writes.add(b)
    return Effects(reads, writes, impure)


def blocks(fn: ast.FunctionDef) -> Iterator[list[ast.stmt]]:
    """Every statement list of a function (its body, branches, loop bodies), outermost first."""
    todo = [fn.body]
    while todo:
        body = todo.pop(0)
        yield body
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                continue
            for field in ("body", "orelse"):
                sub = getattr(stmt, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    todo.append(sub)


def body_nodes(fn: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's statements (not its signature or decorators)."""
    for stmt in fn.body:
        yield from walk(stmt)


def jumps(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, (ast.Return, ast.Break, ast.Continue)) for s in stmts for n in walk(s))


def tid_names(stmt: ast.stmt) -> list[str] | None:
    """``["i"]`` for ``i = wp.tid()``, ``["i", "j"]`` for ``i, j = wp.tid()``, else None."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.value, ast.Call)
        and wp_attr(stmt.value) == "tid"
    ):
        return None
    target = stmt.targets[0]
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]
    return None


def thread_index(fn: ast.FunctionDef) -> tuple[int, list[str]] | None:
    """(position in the body, names) of the kernel's ``wp.tid()`` statement at its top level."""
    for at, stmt in enumerate(fn.body):
        names = tid_names(stmt)
        if names is not None:
            return at, names
    return None


def replace_node(tree: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    for parent in walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return True
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return True
    return False


def array_annotation(ann: ast.AST | None) -> tuple[ast.AST, int] | None:
    """(dtype node, ndim) of ``wp.array[X]``, ``wp.array2d[X]``, ``wp.array(dtype=X, ndim=2)``..."""
    if isinstance(ann, ast.Subscript) and wp_attr(ann.value) in ARRAY_TYPES:
        return ann.slice, array_ndim(wp_attr(ann.value), None)
    if isinstance(ann, ast.Call) and wp_attr(ann) in ARRAY_TYPES:
        kw = {k.arg: k.value for k in ann.keywords}
        dtype = kw.get("dtype", ann.args[0] if ann.args else None)
        if dtype is None:
            return None
        nd = kw.get("ndim")
        return dtype, array_ndim(wp_attr(ann), nd.value if isinstance(nd, ast.Constant) else None)
    return None


def array_ndim(kind: str, given: int | None) -> int:
    if kind[-2:-1].isdigit():
        return int(kind[-2])
    return given or 1


def arrays(fn: ast.FunctionDef) -> dict[str, int]:
    """Parameters annotated as Warp arrays -> their ndim."""
    out = {}
    for a in fn.args.args:
        found = array_annotation(a.annotation)
        if found is not None:
            out[a.arg] = found[1]
    return out


def dotted(node: ast.AST) -> str:
    """``wp.vec3`` -> "wp.vec3", ``float`` -> "float" (else "")."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def shape(node: ast.AST) -> str:
    """The form of an expression or statement with its names, constants and fields blanked:
    ``rotation[0, 0] * s[0]`` and ``rotation[1, 0] * s[0]`` have one shape. Warp's own names
    stay (``wp.floor(u)`` and ``wp.ceil(u)`` differ), and so does the array an element is read
    from (``a[i]`` and ``b[i]`` play two roles, ``a[0]`` and ``a[1]`` one)."""
    if isinstance(node, ast.Subscript):
        base = node.value.id if isinstance(node.value, ast.Name) else shape(node.value)
        return f"{base}[{shape(node.slice)}]"
    if isinstance(node, ast.Name):
        return "N"
    if isinstance(node, ast.Constant):
        return "C"
    if isinstance(node, ast.Attribute):
        return f"wp.{node.attr}" if wp_attr(node) else f"A({shape(node.value)})"
    if isinstance(node, ast.expr_context):
        return ""
    inner = ",".join(shape(c) for c in children(node))
    return f"{type(node).__name__}({inner})"


def parallel_run(body: list[ast.stmt], at: int) -> list[ast.stmt]:
    """The statements around ``body[at]`` of its own shape, next to each other (``c00 = t[y0, x0]``,
    ``c10 = t[y0, x1]``...): a change to one of them alone would break the pattern."""
    form = shape(body[at])
    start = at
    while start > 0 and shape(body[start - 1]) == form:
        start -= 1
    stop = at + 1
    while stop < len(body) and shape(body[stop]) == form:
        stop += 1
    return body[start:stop]


def breaks_symmetry(body: list[ast.stmt], at: int, node: ast.AST) -> bool:
    """True if ``node``, in ``body[at]``, has siblings of its shape but another value in that
    statement or its parallel run: naming or moving it alone would single out one term of a
    symmetric expression (``scaled = rotation[1, 0] * s[0]`` among nine others)."""
    form, text = shape(node), ast.dump(node)
    for stmt in parallel_run(body, at):
        for n in walk(stmt):
            if (
                n is not node
                and isinstance(n, ast.expr)
                and not isinstance(getattr(n, "ctx", None), ast.Store)
                and shape(n) == form
                and ast.dump(n) != text
            ):
                return True
    return False
