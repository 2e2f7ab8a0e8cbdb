"""Algebra that does nothing: self-operations, identities, double applications, equal operands,
and math builtins recomputed per thread on literals."""

from __future__ import annotations

import ast

from jit.code.checks.semantic.reading import (
    APPLIES_FIRST, CASTS, Defect, EQUAL_OPERANDS, IDENTITY_FIXES, IDENTITY_OF, LITERAL_NAMES, MATH,
    SELF_CANCEL_CALLS, SELF_CANCEL_OPS, SELF_COMPARE_OPS, TWICE_IS_ONCE, _CONSTRUCTOR, _Function, _callee,
    _dotted, _text,
)


def _algebra(f: _Function) -> list[Defect]:
    found, inside_constant = [], set()
    for node in f.expressions():
        kind = _self_operation(f, node) or _identity(f, node) or _double(f, node) or _equal_operands(f, node)
        if kind:
            found.append(Defect(kind, node.lineno, _text(node)))
        if id(node) not in inside_constant and _per_thread_constant(f, node):
            found.append(Defect("per-thread constant", node.lineno, _text(node)))
            inside_constant.update(id(n) for n in f.walk(node))
    return found + _equal_branches(f)


def _equal_branches(f: _Function) -> list[Defect]:
    """``if c: A else: A``, the statement form of ``a if c else a``."""
    return [Defect("equal operands", stmt.lineno, f"if {_text(stmt.test, 50)}: same code in both branches")
            for stmt, _ in f.flat if isinstance(stmt, ast.If) and stmt.orelse
            and _same_block(f, stmt.body, stmt.orelse)]


def _same_block(f: _Function, a: list[ast.stmt], b: list[ast.stmt]) -> bool:
    return len(a) == len(b) and all(f.key(x) == f.key(y) for x, y in zip(a, b))


def _same(f: _Function, a: ast.AST, b: ast.AST) -> bool:
    return f.key(a) == f.key(b) and f.pure(a)


def _self_operation(f: _Function, node: ast.AST) -> str | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, SELF_CANCEL_OPS):
        pair = (node.left, node.right)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], SELF_COMPARE_OPS):
        pair = (node.left, node.comparators[0])
    elif isinstance(node, ast.BoolOp):
        keys = [f.key(v) for v in node.values]
        return "self-operation" if len(set(keys)) < len(keys) and f.pure(node) else None
    elif _callee(node) in SELF_CANCEL_CALLS and len(node.args) == 2 and not node.keywords:
        pair = tuple(node.args)
    else:
        return None
    return "self-operation" if _same(f, *pair) else None


def _number(node: ast.AST, wanted: float, types: tuple = (int, float)) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in types and node.value == wanted


def _identity_kind(f: _Function, node: ast.AST) -> str | None:
    return IDENTITY_OF.get(_callee(f.value(node)) or "")


def _is_zero(f: _Function, node: ast.AST) -> bool:
    # Only a float 0.0 or a zero vector: real code writes `3 * i + 0` next to `3 * i + 1`.
    node = f.value(node)
    if _CONSTRUCTOR.fullmatch(_callee(node) or ""):
        return not node.keywords and all(_number(a, 0) for a in node.args)
    return _number(node, 0, (float,))


def _identity(f: _Function, node: ast.AST) -> str | None:
    if isinstance(node, ast.BinOp):
        op, left, right = type(node.op), node.left, node.right
    elif _callee(node) in ("mul", "add", "sub", "div") and len(node.args) == 2 and not node.keywords:
        op = {"mul": ast.Mult, "add": ast.Add, "sub": ast.Sub, "div": ast.Div}[_callee(node)]
        left, right = node.args
    elif _callee(node) in APPLIES_FIRST and len(node.args) == 2:
        return "identity" if _identity_kind(f, node.args[0]) else None
    else:
        return None
    hit = ((op is ast.Mult and (_is_one(f, left, right) or _is_one(f, right, left)))
           or (op is ast.Add and (_is_zero(f, left) or _is_zero(f, right)))
           or (op is ast.Sub and _is_zero(f, right))
           or (op in (ast.Div, ast.FloorDiv, ast.Pow) and _number(right, 1)))
    return "identity" if hit else None


def _is_one(f: _Function, one: ast.AST, other: ast.AST) -> bool:
    """``one * other == other``: a literal 1, or an identity of the kind ``other`` is.
    A scalar times ``wp.identity()`` is a scaled identity, so the other side's kind must show."""
    kind = _identity_kind(f, one)
    return _number(one, 1) or (kind is not None and f.kind(other) in IDENTITY_FIXES[kind])


def _double(f: _Function, node: ast.AST) -> str | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not, ast.Invert)):
        inner = f.value(node.operand)
        same = isinstance(inner, ast.UnaryOp) and type(inner.op) is type(node.op)
    elif _callee(node) in TWICE_IS_ONCE and len(node.args) == 1:
        inner = f.value(node.args[0])
        same = (isinstance(inner, ast.Call) and len(inner.args) == 1
                and f.key(inner.func) == f.key(node.func))
    else:
        return None
    return "double application" if same else None


def _equal_operands(f: _Function, node: ast.AST) -> str | None:
    if isinstance(node, ast.IfExp):
        return "equal operands" if _same(f, node.body, node.orelse) else None
    where = EQUAL_OPERANDS.get(_callee(node) or "")
    if where and len(node.args) == 3 and not node.keywords and _same(f, node.args[where[0]], node.args[where[1]]):
        return "equal operands"
    return None


def _literal(f: _Function, node: ast.AST, depth: int = 0) -> bool:
    """A number in the source, or arithmetic, constructors and math builtins of such numbers."""
    node = f.value(node)
    if depth > 6:
        return False
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.UnaryOp):
        return _literal(f, node.operand, depth + 1)
    if isinstance(node, ast.BinOp):
        return _literal(f, node.left, depth + 1) and _literal(f, node.right, depth + 1)
    if isinstance(node, ast.Attribute):
        return node.attr in LITERAL_NAMES and _dotted(node.value) in ("wp", "warp", "math")
    name = _callee(node) or ""
    literal_call = _CONSTRUCTOR.fullmatch(name) or name in CASTS or name in MATH
    return bool(literal_call) and _literal_args(f, node, depth)


def _literal_args(f: _Function, call: ast.Call, depth: int = 0) -> bool:
    values = call.args + [k.value for k in call.keywords if k.arg != "dtype"]
    return all(_literal(f, v, depth + 1) for v in values)


def _per_thread_constant(f: _Function, node: ast.AST) -> bool:
    return _callee(node) in MATH and bool(node.args) and _literal_args(f, node)
