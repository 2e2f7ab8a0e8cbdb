"""The Warp types of a kernel's locals, as far as annotations and the values assigned tell.

An extracted ``@wp.func`` needs an annotation for every parameter, and Warp never converts
between types at a call, so a guessed type is worse than none: ``type_of`` answers only what
follows from annotations, literals, constructors, casts and builtins whose result type is that
of an argument, and gives None otherwise. Types are Warp's names (``float32``, ``vec3f``,
``vec3d``, a struct's class name); ``annotation_of`` spells one as code.
What it leaves out: generic functions, tiles, and locals assigned more than one type.
"""

from __future__ import annotations

import ast

import warp as wp

from jit.code.synthesis.mutate.syntax import array_annotation, call_name, dotted, tid_names, wp_attr, walk

SAME_AS_FIRST = frozenset(
    {
        "normalize",
        "abs",
        "neg",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "tanh",
        "sqrt",
        "cbrt",
        "exp",
        "log",
        "log2",
        "log10",
        "floor",
        "ceil",
        "round",
        "trunc",
        "min",
        "max",
        "clamp",
        "lerp",
        "cross",
        "cw_mul",
        "cw_div",
        "pow",
        "atan2",
        "sign",
        "smooth_normalize",
        "transpose",
        "inverse",
        "degrees",
        "radians",
        "mod",
        "step",
        "quat_inverse",
        "transform_inverse",
    }
)
COMPONENT_OF_FIRST = frozenset(
    {"length", "length_sq", "dot", "norm_l1", "norm_l2", "determinant", "trace", "norm_huber", "norm_pseudo_huber"}
)
SAME_AS_SECOND = frozenset({"transform_point", "transform_vector", "quat_rotate", "quat_rotate_inv"})
SPELLING = {
    "float32": "float",
    "int32": "int",
    "bool": "bool",
    "vec2f": "wp.vec2",
    "vec3f": "wp.vec3",
    "vec4f": "wp.vec4",
    "mat22f": "wp.mat22",
    "mat33f": "wp.mat33",
    "mat44f": "wp.mat44",
    "quatf": "wp.quat",
    "transformf": "wp.transform",
    "spatial_vectorf": "wp.spatial_vector",
    "spatial_matrixf": "wp.spatial_matrix",
}


def warp_name(node: ast.AST | None, unit) -> str | None:
    """Warp's name of the type an annotation or constructor names."""
    name = dotted(node) if node is not None else ""
    if name in ("float", "int", "bool"):
        return {"float": "float32", "int": "int32", "bool": "bool"}[name]
    if name in unit.structs:
        return name
    attr = wp_attr(node)
    cls = getattr(wp, attr, None) if attr else None
    return cls.__name__ if isinstance(cls, type) and hasattr(cls, "__name__") else None


def component(t: str | None) -> str | None:
    cls = getattr(wp, t, None) if t else None
    scalar = getattr(cls, "_wp_scalar_type_", None)
    return scalar.__name__ if scalar is not None else None


def is_scalar(t: str | None) -> bool:
    return (
        t is not None
        and component(t) is None
        and t
        in ("float16", "float32", "float64", "int32", "int64", "uint32", "int8", "uint8", "int16", "uint16", "uint64")
    )


def annotation_of(t: str) -> ast.expr:
    return ast.parse(SPELLING.get(t, t if "." in t or not hasattr(wp, t) else f"wp.{t}"), mode="eval").body


def local_types(fn: ast.FunctionDef, unit) -> dict[str, str | None]:
    """Name -> Warp type of a function's parameters and of locals assigned values of one known
    type (None: unknown or assigned several)."""
    env: dict[str, str | None] = {}
    for a in fn.args.args:
        if array_annotation(a.annotation) is None:
            env[a.arg] = warp_name(a.annotation, unit)
    for node in walk(fn):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and call_name(node.iter) == "range":
            _assign(env, node.target.id, "int32")
    for stmt in _in_order(fn.body):
        names = tid_names(stmt)
        if names:
            for n in names:
                _assign(env, n, "int32")
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            _assign(env, stmt.targets[0].id, type_of(stmt.value, env, unit))
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                for n in walk(t):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and not isinstance(stmt, ast.AugAssign):
                        env[n.id] = None
    return env


def _assign(env: dict, name: str, t: str | None) -> None:
    if name in env and env[name] != t:
        env[name] = None
    else:
        env[name] = t


def _in_order(body: list[ast.stmt]):
    for stmt in body:
        yield stmt
        for field in ("body", "orelse"):
            sub = getattr(stmt, field, None)
            if isinstance(sub, list) and not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                yield from _in_order(sub)


def type_of(node: ast.expr, env: dict, unit) -> str | None:
    if isinstance(node, ast.Constant):
        return {float: "float32", int: "int32", bool: "bool"}.get(type(node.value))
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.UnaryOp):
        return "bool" if isinstance(node.op, ast.Not) else type_of(node.operand, env, unit)
    if isinstance(node, (ast.Compare, ast.BoolOp)):
        return "bool"
    if isinstance(node, ast.BinOp):
        return binop_type(type_of(node.left, env, unit), type_of(node.right, env, unit), node.op)
    if isinstance(node, ast.Subscript):
        return subscript_type(node, env, unit)
    if isinstance(node, ast.Attribute):
        base = type_of(node.value, env, unit)
        if base in unit.structs:
            field = next(
                (
                    s.annotation
                    for s in unit.structs[base].body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == node.attr
                ),
                None,
            )
            return warp_name(field, unit) if array_annotation(field) is None else None
        return component(base) if node.attr in ("x", "y", "z", "w") else None
    if isinstance(node, ast.Call):
        return call_type(node, env, unit)
    return None


def binop_type(a: str | None, b: str | None, op: ast.operator) -> str | None:
    if a is None or b is None:
        return None
    if a == b:
        return a
    if isinstance(op, ast.Mult):  # scalar * vector, matrix * vector
        if is_scalar(a) and component(b) == a:
            return b
        if is_scalar(b) and component(a) == b:
            return a
        if a.startswith("mat") and b.startswith("vec") and component(a) == component(b):
            return b
    if isinstance(op, ast.Div) and is_scalar(b) and component(a) == b:
        return a
    return None


def subscript_type(node: ast.Subscript, env: dict, unit) -> str | None:
    if isinstance(node.value, ast.Name):
        arg = next((a for a in unit.kernel.args.args if a.arg == node.value.id), None)
        found = array_annotation(arg.annotation) if arg is not None else None
        if found is not None:
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return warp_name(found[0], unit) if len(index) == found[1] else None
    base = type_of(node.value, env, unit)
    if base is not None and base.startswith("vec") and not isinstance(node.slice, ast.Tuple):
        return component(base)
    return None


def call_type(node: ast.Call, env: dict, unit) -> str | None:
    name = call_name(node)
    attr = wp_attr(node)
    if isinstance(node.func, ast.Name) and node.func.id in unit.funcs:
        returns = unit.funcs[node.func.id].returns
        return warp_name(returns, unit) if returns is not None else None
    made = warp_name(node.func, unit) if name in ("float", "int", "bool") or attr else None
    if made is not None and attr not in SAME_AS_FIRST | COMPONENT_OF_FIRST | SAME_AS_SECOND:
        return made
    args = [type_of(a, env, unit) for a in node.args]
    if name in SAME_AS_FIRST and args:
        return args[0]
    if name in COMPONENT_OF_FIRST and args:
        return component(args[0])
    if name in SAME_AS_SECOND and len(args) > 1:
        return args[1]
    if name in ("select", "where") and len(args) == 3:
        return args[1] if args[1] == args[2] else None
    return None
