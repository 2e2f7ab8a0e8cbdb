"""Which Warp builtins a kernel's Python calls: explicitly (``wp.name(...)``, type constructors
as the builtin Warp resolves them to) and through operators (``a + b`` -> ``add``).

The denominator of builtin coverage is every builtin the installed Warp has.
"""

from __future__ import annotations

import ast
import functools

from jit.code.extraction import warp_backend as wb

CONSTRUCTORS = {"vec": "vector", "mat": "matrix", "quat": "quaternion", "transform": "transformation",
                "spatial_vector": "vector", "spatial_matrix": "matrix"}
_CONSTRUCTOR_PREFIXES = sorted(CONSTRUCTORS, key=len, reverse=True)  # longest prefix first


@functools.cache
def warp_builtins() -> frozenset[str]:
    """Names of all of Warp's builtins (the denominator of coverage)."""
    return frozenset(wb.builtin_names())


def called_builtins(source: str | list[ast.AST]) -> list[str]:
    """Warp builtins a source (or its ``body_nodes``) calls explicitly as ``wp.name(...)``; type
    constructors count as the constructor builtin Warp resolves them to (``wp.vec3f(...)`` -> ``vector``)."""
    names = warp_builtins()
    found = set()
    for node in _nodes(source):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "wp":
            attr = node.func.attr
            if attr in names:
                found.add(attr)
            elif attr not in ("kernel", "func", "struct", "array"):
                found.add(constructor_builtin(attr) or attr)
    return sorted(n for n in found if n in names)


def body_nodes(source: str) -> list[ast.AST]:
    """AST nodes inside function bodies (annotations such as ``wp.array(...)`` are not calls)."""
    return [node for top in ast.parse(source).body if isinstance(top, ast.FunctionDef)
            for stmt in top.body for node in ast.walk(stmt)]


def _nodes(source: str | list[ast.AST]) -> list[ast.AST]:
    return body_nodes(source) if isinstance(source, str) else source


def constructor_builtin(attr: str) -> str | None:
    for prefix in _CONSTRUCTOR_PREFIXES:
        if attr.startswith(prefix):
            return CONSTRUCTORS[prefix]
    return None


_OPERATOR_BUILTINS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Mod: "mod",
                      ast.FloorDiv: "floordiv", ast.BitAnd: "bit_and", ast.BitOr: "bit_or",
                      ast.BitXor: "bit_xor", ast.LShift: "lshift", ast.RShift: "rshift",
                      ast.USub: "neg", ast.Invert: "invert", ast.Not: "unot"}


def called_operators(source: str | list[ast.AST]) -> list[str]:
    """Builtins reached through Python operators (``a + b`` -> ``add``), reported separately."""
    found = set()
    for node in _nodes(source):
        op = getattr(node, "op", None)
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.AugAssign)) and type(op) in _OPERATOR_BUILTINS:
            found.add(_OPERATOR_BUILTINS[type(op)])
    return sorted(found)
