"""The semantic gate: defects a Warp reviewer sees in a kernel's Python source, found with `ast`.

``defects(source)`` reads every ``@wp.kernel`` and ``@wp.func`` of a module source and reports
code that compiles and runs but that no one would write on purpose:

- algebra that does nothing: ``x - x``, ``wp.max(v, v)`` (self-operation); ``x * 1.0``,
  ``x + 0.0``, ``wp.identity(n=3, dtype=float) * v`` (identity); ``wp.normalize(wp.normalize(v))``,
  ``-(-x)`` (double application); ``wp.select(c, a, a)``, ``a if c else a``,
  ``wp.clamp(x, a, a)`` (equal operands);
- a math builtin called on literals only, recomputed by every thread (per-thread constant);
  constructors, casts and literal arithmetic such as ``2.0 * wp.pi`` are fine;
- a value computed and never used, or overwritten before it is read (unused value);
- an element stored on every iteration of a loop, so only the last store counts
  (overwritten store);
- a parameter never read, or read only by tests whose branches do the same thing
  (parameter gates nothing);
- a kernel that reads its inputs but writes nothing that depends on them (output ignores
  inputs), or that writes nothing at all (no output). Fill kernels such as ``out[i] = 0.0``
  read nothing and pass.

Calibrated on Warp's own kernels, it lets pass what real code does on purpose: ``i * 3 + 0``
(an integer offset kept for symmetry), a scalar parameter the launch made redundant (a
``row_count`` next to the launch dimension), ``s * wp.identity(...)`` (a scaled identity), and
stubs (a body of ``pass``, ``raise`` or ``wp.tid()`` only: launch-overhead probes, abstract
helpers). It is syntactic and reads one function at a time: it leaves out full typing (a
little is inferred from annotations and constructors), module constants, what a called
``@wp.func`` does (assumed impure, with effects), and paths (a loop may run zero or more
times). When unsure it says nothing. The analysis is pure stdlib and never imports Warp; the
only import from this package is the registry's ``Check`` record, for ``CHECK`` at the end.
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

# The registry's record of a check (stdlib only, like everything here): the one import from
# this package, for the `CHECK` line at the end. The analysis itself never leaves this file.
from jit.code.checks.base import TEXT, Batch, Check


@dataclass(frozen=True, slots=True)
class Defect:
    kind: str    # short stable reason, e.g. "self-operation"
    line: int    # 1-based line in the source
    detail: str  # the offending code, e.g. "x - x"


KERNEL_DECORATORS = {"wp.kernel", "warp.kernel", "kernel"}
FUNC_DECORATORS = {"wp.func", "warp.func", "func"}

# Pure builtins whose value is a function of their arguments only: called on literals,
# they give a constant the thread could have been handed (or `wp.static` could have folded).
SCALAR_MATH = {"acos", "asin", "atan", "atan2", "cbrt", "cos", "cosh", "degrees", "erf", "erfc", "erfcinv",
               "erfinv", "exp", "isfinite", "isinf", "isnan", "log", "log10", "log2", "pow", "radians",
               "sin", "sinh", "sqrt", "tan", "tanh"}
SCALAR_RESULT = SCALAR_MATH | {"length", "length_sq", "dot", "ddot", "trace", "determinant", "norm_l1", "norm_l2"}
ELEMENTWISE = {"abs", "ceil", "clamp", "copysign", "floor", "frac", "max", "min", "nonzero", "rint", "round",
               "sign", "step", "trunc", "neg", "normalize", "lerp", "smoothstep"}
VECTOR_RESULT = {"cross", "quat_rotate", "quat_rotate_inv", "transform_point", "transform_vector"}
MATRIX_RESULT = {"identity", "outer", "skew", "diag", "quat_to_matrix", "transpose", "inverse"}
QUAT_RESULT = {"quat_identity", "quat_from_axis_angle", "quat_from_matrix", "quat_rpy",
               "quat_inverse", "quat_slerp"}
TRANSFORM_RESULT = {"transform_identity", "transform_inverse", "transform_multiply"}
MATH = (SCALAR_RESULT | ELEMENTWISE | VECTOR_RESULT | MATRIX_RESULT | QUAT_RESULT | TRANSFORM_RESULT
        | {"cw_div", "cw_mul", "get_diag", "quat_to_axis_angle", "add", "sub", "mul", "div", "mod"}
        ) - {"identity", "quat_identity", "transform_identity"}
CASTS = {"float", "int", "bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
         "uint8", "uint16", "uint32", "uint64", "half"}
_CONSTRUCTOR = re.compile(r"(vec|mat)\w*|vector|matrix|quat[hfd]?|transform[hfd]?"
                          r"|spatial_(vector|matrix)[hfd]?")
LITERAL_NAMES = {"pi", "e", "tau", "inf", "nan", "half_pi", "PI", "TAU"}
PY_BUILTINS = {"min", "max", "abs", "round", "pow", "float", "int", "bool", "len"}

# Calls whose result changes from call to call, or that change state: never "equal operands".
_IMPURE = re.compile(r"rand|atomic_|noise|pnoise|curlnoise|sample_|poisson|tile_|print"
                     r"|expect_|breakpoint|.*store|.*_next$|.*_inplace$")
# Builtins known to write nothing (besides pure math): a call to any other may be an output
# (`wp.dense_solve(n, A, L, b, x)` writes x), so it counts as one.
_READS_ONLY = re.compile(r"tid|rand|noise|pnoise|curlnoise|sample_|poisson|len|static|select|where"
                         r"|lower_bound|block_dim|(mesh|bvh|hash_grid|volume|texture)_\w*(query|eval|get"
                         r"|sample|lookup|point_id|to_index|to_world)\w*|tile_(load|zeros|ones|full|arange"
                         r"|sum|max|min|reduce|map|transpose|broadcast|view|astype|matmul|extract)$")
# Of the writing calls, those whose first argument is where they write.
_WRITES_FIRST = re.compile(r"atomic_|.*store|tile_atomic|tile_scatter")

SELF_CANCEL_OPS = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.BitXor, ast.BitAnd, ast.BitOr)
SELF_CANCEL_CALLS = {"min", "max", "sub", "div", "mod", "floordiv", "copysign", "cross",
                     "cw_div", "atan2", "bit_and", "bit_or", "bit_xor"}
# x != x and x == x are NaN tests, so only orderings count.
SELF_COMPARE_OPS = (ast.Lt, ast.Gt, ast.LtE, ast.GtE)
# Function -> positions of the two operands that must differ for the call to mean anything.
EQUAL_OPERANDS = {"select": (1, 2), "where": (1, 2), "clamp": (1, 2), "lerp": (0, 1),
                  "smoothstep": (0, 1), "quat_slerp": (0, 1)}
# f(f(x)) == f(x) (idempotent) or x (involution).
TWICE_IS_ONCE = {"normalize", "transpose", "abs", "floor", "ceil", "round", "rint", "trunc",
                 "sign", "frac", "nonzero", "inverse", "quat_inverse", "transform_inverse",
                 "neg"} | CASTS
# The identity of each kind, and what it leaves unchanged when multiplied by it.
IDENTITY_OF = {"identity": "matrix", "quat_identity": "quat", "transform_identity": "transform"}
IDENTITY_FIXES = {"matrix": {"matrix", "vector"}, "quat": {"quat"}, "transform": {"transform"}}
# Calls that apply their first argument to the second: an identity there does nothing.
APPLIES_FIRST = {"quat_rotate", "quat_rotate_inv", "transform_point", "transform_vector",
                 "transform_multiply"}


def defects(source: str) -> list[Defect]:
    """Every defect of every ``@wp.kernel`` and ``@wp.func`` in ``source``, in line order.
    Raises ``SyntaxError`` when the source does not parse."""
    found: list[Defect] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and (role := role_of(node)) and not is_stub(node):
            f = _Function(node, role)
            for rule in RULES:
                found += rule(f)
    return sorted(set(found), key=lambda d: (d.line, d.kind, d.detail))


def role_of(fn: ast.FunctionDef) -> str | None:
    """"kernel" or "func" for a function decorated as one, else None."""
    for decorator in fn.decorator_list:
        name = _dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)
        if name in KERNEL_DECORATORS:
            return "kernel"
        if name in FUNC_DECORATORS:
            return "func"
    return None


def is_stub(fn: ast.FunctionDef) -> bool:
    """A body that does nothing on purpose: ``pass``, a docstring, ``raise``, ``tid = wp.tid()``."""
    def idle(s: ast.stmt) -> bool:
        return (isinstance(s, (ast.Pass, ast.Raise))
                or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                or (isinstance(s, ast.Assign) and _local_targets(s) and _callee(s.value) == "tid"))
    return all(idle(s) for s in fn.body)


# --- reading the AST -----------------------------------------------------------------------

def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)):
        return f"{base}.{node.attr}"
    return None


def _callee(call: ast.AST) -> str | None:
    """``sqrt`` for ``wp.sqrt(...)``/``warp.sqrt(...)``, ``min`` for ``min(...)``; None for user code."""
    if not isinstance(call, ast.Call):
        return None
    f = call.func
    if isinstance(f, ast.Attribute) and (_dotted(f.value) or "").split(".")[0] in ("wp", "warp"):
        return f.attr   # `wp.types.vector(...)` too
    if isinstance(f, ast.Name) and f.id in PY_BUILTINS:
        return f.id
    return None


def _text(node: ast.AST, limit: int = 70) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _root(target: ast.AST) -> str | None:
    """``out`` for ``out[i].x``: the variable a subscript or attribute store writes into."""
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _known_pure(call: ast.AST) -> bool:
    """A math builtin, a cast or a constructor: no effect, same result for the same arguments."""
    name = _callee(call) or ""
    return name in MATH or name in CASTS or bool(_CONSTRUCTOR.fullmatch(name))


def _writes(call: ast.Call) -> bool:
    name = _callee(call)
    return name is None or not (_known_pure(call) or _READS_ONLY.fullmatch(name))


def _own_exprs(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions a statement evaluates itself, without the statements nested in it."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, ast.For):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, ast.With):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, ast.Try):
        return []
    return [stmt]


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, (ast.If, ast.For, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.With):
        return [stmt.body]
    if isinstance(stmt, ast.Try):
        return [stmt.body, stmt.orelse, stmt.finalbody] + [h.body for h in stmt.handlers]
    return []


def _flatten(body: list[ast.stmt], headers: tuple = ()) -> Iterator[tuple[ast.stmt, tuple]]:
    """Every statement with the tests and loop ranges that decide whether it runs."""
    for stmt in body:
        yield stmt, headers
        inner = headers + tuple(e for e in _own_exprs(stmt) if e is not stmt)
        for block in _blocks(stmt):
            yield from _flatten(block, inner)


def _local_targets(stmt: ast.stmt) -> list[ast.Name] | None:
    """The names an assignment to plain local variables binds, or None for any other statement."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
        target = stmt.target
    else:
        return None
    elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
    return elts if all(isinstance(e, ast.Name) for e in elts) else None


def _single_target(stmt: ast.stmt) -> str | None:
    """``x`` for ``x = ...`` or ``x: T = ...`` (not ``x += ...``, not unpacking)."""
    targets = _local_targets(stmt)
    if targets and len(targets) == 1 and not isinstance(stmt, ast.AugAssign):
        return targets[0].id
    return None


def _type_kind(name: str | None) -> str | None:
    """scalar | vector | matrix | quat | transform for a Warp type or builtin name."""
    name = (name or "").rsplit(".", 1)[-1]
    if name in CASTS or name in SCALAR_RESULT:
        return "scalar"
    if re.fullmatch(r"vec\w*|vector|spatial_vector\w?", name) or name in VECTOR_RESULT:
        return "vector"
    if re.fullmatch(r"mat\w*|matrix|spatial_matrix\w?", name) or name in MATRIX_RESULT:
        return "matrix"
    if re.fullmatch(r"quat[hfd]?", name) or name in QUAT_RESULT:
        return "quat"
    if re.fullmatch(r"transform[hfd]?", name) or name in TRANSFORM_RESULT:
        return "transform"
    return None


def _annotation(node: ast.AST | None) -> tuple[int, str | None]:
    """(array dimensions, element kind) of a parameter annotation; 0 dimensions for a value."""
    if node is None:
        return 0, None
    base = node.func if isinstance(node, ast.Call) else node.value if isinstance(node, ast.Subscript) else node
    name = (_dotted(base) or "").rsplit(".", 1)[-1]
    match = re.fullmatch(r"(indexed|fabric)?array(\d)?d?", name)
    if not match:
        return 0, _type_kind(_dotted(node))
    dims, dtype = int(match.group(2) or 1), None
    if isinstance(node, ast.Subscript):
        dtype = node.slice
    for k in getattr(node, "keywords", []):
        if k.arg == "dtype":
            dtype = k.value
        elif k.arg == "ndim" and isinstance(k.value, ast.Constant):
            dims = k.value.value
    return dims, _type_kind(_dotted(dtype)) if dtype is not None else None


def _preorder(body: list[ast.stmt]) -> tuple[list[ast.AST], dict[int, tuple[int, int]]]:
    """All nodes in pre-order, and for each the slice of that list its subtree fills."""
    order, span, stack = [], {}, [(stmt, False) for stmt in reversed(body)]
    while stack:
        node, closing = stack.pop()
        if closing:
            span[id(node)] = (span[id(node)][0], len(order))
            continue
        span[id(node)] = (len(order), 0)
        order.append(node)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(list(ast.iter_child_nodes(node))))
    return order, span


class _Function:
    """One kernel or helper, with the facts the checks share."""

    def __init__(self, fn: ast.FunctionDef, role: str):
        self.fn, self.role = fn, role
        args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
        self.params = [a.arg for a in args]
        self.annotations = {a.arg: _annotation(a.annotation) for a in args}
        self.refs = {a.arg for a in args if isinstance(a.annotation, ast.Subscript)
                     and (_dotted(a.annotation.value) or "").endswith("ref")}
        self.flat = list(_flatten(fn.body))
        # Every node once, in pre-order, with where each subtree starts and ends: the checks walk
        # the same subtrees many times, and a slice is much cheaper than `ast.walk`.
        self._order, self._span = _preorder(fn.body)
        self.nodes = self._order
        self._memo: dict[tuple[str, int], object] = {}
        self._expressions: list[ast.AST] | None = None
        self.useful = None  # filled by _useful
        self.stores = stores = Counter(n.id for n in self.nodes
                                       if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        mutated = {_root(n) for n in self.nodes
                   if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store)}
        # A name handed to a call may come back changed (`wp.mesh_query_point(..., sign, face, u, v)`).
        mutated |= {a.id for n in self.nodes if isinstance(n, ast.Call) and not _known_pure(n)
                    for a in n.args if isinstance(a, ast.Name)}
        # Names bound exactly once, by a plain assignment: their value is known wherever they are read.
        self.once: dict[str, ast.expr] = {}
        for stmt, _ in self.flat:
            name = _single_target(stmt)
            if name and stores[name] == 1 and name not in mutated and name not in self.params:
                self.once[name] = stmt.value

    def walk(self, node: ast.AST) -> list[ast.AST]:
        """``node`` and everything under it, in pre-order (like ``ast.walk``, in another order)."""
        start, end = self._span[id(node)]
        return self._order[start:end]

    def _remember(self, fact: str, node: ast.AST, compute):
        key = (fact, id(node))
        if key not in self._memo:
            self._memo[key] = compute(node)
        return self._memo[key]

    def own_nodes(self, stmt: ast.stmt) -> list[ast.AST]:
        """Every node of the expressions ``stmt`` evaluates itself."""
        return self._remember("own", stmt, lambda s: [n for e in _own_exprs(s) for n in self.walk(e)])

    def loads(self, node: ast.AST) -> frozenset[str]:
        """Names read anywhere in ``node``."""
        return self._remember("loads", node, lambda x: frozenset(
            n.id for n in self.walk(x) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)))

    def key(self, node: ast.AST) -> str:
        """What two subtrees share when they are the same code (positions and ctx aside)."""
        return self._remember("key", node, ast.dump)

    def pure(self, node: ast.AST) -> bool:
        """No call that may return something else next time (random, atomics, user functions)."""
        return self._remember("pure", node, lambda x: not any(
            isinstance(n, ast.NamedExpr)
            or (isinstance(n, ast.Call) and ((name := _callee(n)) is None or _IMPURE.match(name)))
            for n in self.walk(x)))

    def jumps(self, node: ast.AST) -> bool:
        """``node`` holds a break, continue, return or raise."""
        return self._remember("jumps", node, lambda x: any(
            isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for n in self.walk(x)))

    def value(self, node: ast.AST) -> ast.AST:
        """What a name bound once stands for (followed a few steps), else the node itself."""
        for _ in range(4):
            if not (isinstance(node, ast.Name) and node.id in self.once):
                break
            node = self.once[node.id]
        return node

    def expressions(self) -> list[ast.AST]:
        """Expression nodes in pre-order, outside nested functions and ``wp.static(...)``."""
        if self._expressions is None:
            self._expressions, i = [], 0
            while i < len(self._order):
                node = self._order[i]
                if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ClassDef)) or _callee(node) == "static":
                    i = self._span[id(node)][1]
                    continue
                if isinstance(node, ast.expr):
                    self._expressions.append(node)
                i += 1
        return self._expressions

    def kind(self, node: ast.AST, depth: int = 0) -> str | None:
        """scalar | vector | matrix | quat | transform when the code shows it, else None."""
        node = self.value(node)
        if depth > 8:
            return None
        if isinstance(node, ast.Constant):
            return "scalar" if type(node.value) in (int, float) else None
        if isinstance(node, ast.Name):
            dims, kind = self.annotations.get(node.id, (1, None))
            return kind if dims == 0 else None
        if isinstance(node, ast.Subscript):
            return self._element_kind(node, depth)
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand, depth + 1)
        if isinstance(node, ast.BinOp):
            return _product_kind(node.op, self.kind(node.left, depth + 1), self.kind(node.right, depth + 1))
        name = _callee(node)
        if name in ELEMENTWISE and node.args:
            return self.kind(node.args[0], depth + 1)
        return _type_kind(name) if name else None

    def _element_kind(self, node: ast.Subscript, depth: int) -> str | None:
        indices = len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1
        if isinstance(node.value, ast.Name) and node.value.id in self.annotations:
            dims, kind = self.annotations[node.value.id]
            if dims:
                return kind if indices == dims else None
        inner = self.kind(node.value, depth + 1)
        if inner == "vector" or (inner == "matrix" and indices == 2):
            return "scalar"
        return "vector" if inner == "matrix" else None


def _product_kind(op: ast.operator, a: str | None, b: str | None) -> str | None:
    if isinstance(op, ast.Mult):
        if a == "scalar" or b == "scalar":
            return b if a == "scalar" else a
        return b if a == "matrix" and b in ("vector", "matrix") else None
    if isinstance(op, (ast.Add, ast.Sub)):
        return a if a == b or b is None else b if a is None else None
    return a if isinstance(op, ast.Div) and b == "scalar" else None


# --- algebra that does nothing --------------------------------------------------------------

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


# --- values nobody reads --------------------------------------------------------------------

def _unused_values(f: _Function) -> list[Defect]:
    useful, first, groups = _useful(f)
    # A name unpacked from a tuple is excused while one of its siblings is used.
    excused = {n for g in groups if any(m in useful for m in g) for n in g}
    found = [Defect("unused value", first[n].lineno, f"{n} = {_text(first[n].value)}")
             for n in first if n not in useful and n not in excused
             and n not in f.params and not n.startswith("_")]
    return found + _idle_expressions(f) + _idle_loops(f) + _overwritten_names(f)


def _useful(f: _Function) -> tuple[set[str], dict[str, ast.stmt], list[list[str]]]:
    """Names whose value reaches something that matters (a store, a call, a test, a return),
    the first pure assignment of every local, and the names unpacked together."""
    if f.useful is not None:
        return f.useful
    reads, roots, first, groups = defaultdict(set), set(), {}, []
    for stmt, _ in f.flat:
        targets = _local_targets(stmt)
        if targets is None:
            roots |= {n.id for n in f.own_nodes(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            continue
        names = [t.id for t in targets]
        # `old = wp.atomic_add(out, i, v)` runs for its effect: what it reads matters, and only
        # pure values can be unused.
        pure = f.pure(stmt.value)
        if not pure:
            roots |= f.loads(stmt.value)
        for name in names:
            reads[name] |= f.loads(stmt.value)
            if pure:
                first.setdefault(name, stmt)
        if len(names) > 1:
            groups.append(names)
    useful, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in useful:
            useful.add(name)
            todo.extend(reads.get(name, ()))
    f.useful = useful, first, groups
    return f.useful


def _idle_expressions(f: _Function) -> list[Defect]:
    """Statements that compute a value and drop it. Docstrings, calls with effects and a bare
    ``t[0]`` (real tile code reads an element to move a tile to shared memory) are fine."""
    found = []
    for stmt, _ in f.flat:
        if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, (ast.BinOp, ast.UnaryOp, ast.Compare,
                                                                        ast.BoolOp, ast.Call)):
            continue
        calls = [n for n in f.walk(stmt.value) if isinstance(n, ast.Call)]
        if all(_known_pure(c) for c in calls) and f.pure(stmt.value):
            found.append(Defect("unused value", stmt.lineno, _text(stmt.value)))
    return found


def _idle_loops(f: _Function) -> list[Defect]:
    """``while wp.bvh_query_next(query, i): pass``: a loop, and the query it walks, for nothing.
    A loop whose test writes (a spin lock on ``wp.atomic_cas``) waits on purpose and is fine."""
    found = []
    for stmt, _ in f.flat:
        if isinstance(stmt, (ast.For, ast.While)) and not stmt.orelse and _does_nothing(f, stmt.body, False):
            header = stmt.test if isinstance(stmt, ast.While) else stmt.iter
            if not any(isinstance(n, ast.Call) and _writes(n) for n in f.walk(header)):
                word = "while" if isinstance(stmt, ast.While) else "for"
                found.append(Defect("unused value", stmt.lineno, f"{word} {_text(header, 50)}: the loop does nothing"))
    return found


def _overwritten_names(f: _Function) -> list[Defect]:
    """``x = a`` followed, in the same block and before any read of ``x``, by ``x = b``."""
    found = []
    for block in [f.fn.body] + [b for stmt, _ in f.flat for b in _blocks(stmt)]:
        for i, stmt in enumerate(block):
            name = _single_target(stmt)
            if name and f.stores[name] > 1 and _overwritten_before_read(f, name, block[i + 1:]):
                found.append(Defect("unused value", stmt.lineno, f"{name} = {_text(stmt.value)} (overwritten)"))
    return found


def _overwritten_before_read(f: _Function, name: str, rest: list[ast.stmt]) -> bool:
    for stmt in rest:
        if _single_target(stmt) == name and name not in f.loads(stmt.value):
            return True
        if f.jumps(stmt) or any(isinstance(n, ast.Name) and n.id == name for n in f.walk(stmt)):
            return False
    return False


# --- stores only the last iteration keeps ---------------------------------------------------

def _overwritten_stores(f: _Function) -> list[Defect]:
    found = []
    for loop, _ in f.flat:
        if not isinstance(loop, (ast.For, ast.While)) or any(f.jumps(s) for s in loop.body):
            continue
        changing = _changed_in_loop(f, loop)
        for stmt in loop.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Subscript)):
                continue
            target = stmt.targets[0]
            base = _root(target)
            if (base and f.pure(target.slice)
                    and not (f.loads(target.slice) & changing) and _only_stored(f, base, target, loop)):
                found.append(Defect("overwritten store", stmt.lineno,
                                    f"{_text(target)} stored on every iteration of line {loop.lineno}"))
    return found


def _changed_in_loop(f: _Function, loop: ast.AST) -> set[str]:
    """Names a loop may change: assigned, written into, or handed to a call (``query_next``)."""
    changed = set()
    for n in f.walk(loop):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            changed.add(n.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            changed.add(_root(n))
        elif isinstance(n, ast.Call) and not _known_pure(n):
            changed |= {a.id for a in n.args if isinstance(a, ast.Name)}
    return changed


def _only_stored(f: _Function, base: str, target: ast.Subscript, loop: ast.AST) -> bool:
    """The loop mentions ``base`` only as this very element being stored to."""
    key = f.key(target.slice)
    stores = [n for n in f.walk(loop) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
              and isinstance(n.value, ast.Name) and n.value.id == base]
    mentions = sum(isinstance(n, ast.Name) and n.id == base for n in f.walk(loop))
    return mentions == len(stores) and all(f.key(s.slice) == key for s in stores)


# --- parameters that change nothing ---------------------------------------------------------

def _idle_parameters(f: _Function) -> list[Defect]:
    loads = defaultdict(list)
    for n in f.nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads[n.id].append(id(n))
    gated = _names_in_idle_tests(f)
    found = []
    for name in f.params:
        if name.startswith("_"):
            continue
        # Helpers keep unused parameters to fit a signature; real kernels keep scalar sizes
        # the launch dimension made redundant. An array or vector nobody reads is neither.
        if not loads[name] and f.role == "kernel" and f.annotations[name] != (0, "scalar"):
            found.append(Defect("parameter gates nothing", f.fn.lineno, f"{name} is never read"))
        elif loads[name] and all(i in gated for i in loads[name]):
            found.append(Defect("parameter gates nothing", f.fn.lineno,
                                f"{name} only decides between branches that do the same"))
    return found


def _does_nothing(f: _Function, block: list[ast.stmt], last: bool) -> bool:
    """Empty, ``pass``, values nobody reads, or a bare ``return`` with nothing after it to skip."""
    useful, first, _ = _useful(f)

    def idle(s: ast.stmt) -> bool:
        if isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)):
            return True
        if last and isinstance(s, ast.Return) and s.value is None:
            return True
        targets = _local_targets(s)
        return bool(targets) and all(t.id in first and t.id not in useful and t.id not in f.params
                                     for t in targets) and f.pure(s.value)
    return all(idle(s) for s in block)


def _names_in_idle_tests(f: _Function) -> set[int]:
    """Ids of the Name nodes read by tests whose outcome changes nothing."""
    tests = []
    for stmt, _ in f.flat:
        if isinstance(stmt, ast.If):
            last = stmt is f.fn.body[-1]
            if (_same_block(f, stmt.body, stmt.orelse)
                    or (_does_nothing(f, stmt.body, last) and _does_nothing(f, stmt.orelse, last))):
                tests.append(stmt.test)
    for node in f.expressions():
        if isinstance(node, ast.IfExp) and _same(f, node.body, node.orelse):
            tests.append(node.test)
        elif _equal_operands(f, node) and _callee(node) in ("select", "where"):
            tests.append(node.args[0])
    return {id(n) for t in tests for n in f.walk(t) if isinstance(n, ast.Name)}


# --- outputs --------------------------------------------------------------------------------

def _output_defects(f: _Function) -> list[Defect]:
    outputs = _outputs(f)
    if not outputs:
        return [Defect("no output", f.fn.lineno, f"{f.fn.name} writes nothing")]
    targets = [n for out, _, _ in outputs for n in _destination_names(out)]
    destinations = {id(n) for n in targets} | _view_sources(f, {n.id for n in targets})
    read = {n.id for n in f.nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id in f.params and id(n) not in destinations}
    if not read:
        return []   # a fill kernel: it reads nothing, so it cannot ignore what it reads
    tainted = _tainted(f)
    escapes = any(f.loads(stmt.test) & tainted and f.jumps(stmt)
                  for stmt, _ in f.flat if isinstance(stmt, (ast.If, ast.While)))
    if escapes or any(f.loads(e) & tainted for _, sources, headers in outputs for e in sources + list(headers)):
        return []
    return [Defect("output ignores inputs", f.fn.lineno,
                   f"{f.fn.name} reads {', '.join(sorted(read))} but writes constants")]


def _outputs(f: _Function) -> list[tuple[ast.AST, list[ast.AST], tuple]]:
    """(statement or call, the expressions its written value comes from, its headers)."""
    value_locals = _value_locals(f)
    out = []
    for stmt, headers in f.flat:
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, (ast.Subscript, ast.Attribute)) and _root(t) not in value_locals:
                    out.append((stmt, [stmt.value] + _index_exprs(t), headers))
                elif _bound(t) & f.refs:   # `x = a` into a `wp.ref[float]` parameter writes the caller's
                    out.append((stmt, [stmt.value], headers))
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            out.append((stmt, [stmt.value], headers))
        nodes = f.own_nodes(stmt)
        # `wp.atomic_add(r, 0, 1) if x > 0.0 else ...`: tests inside the expression decide too.
        inner_tests = [n.test if isinstance(n, ast.IfExp) else n for n in nodes
                       if isinstance(n, (ast.IfExp, ast.BoolOp))]
        for call in (n for n in nodes if isinstance(n, ast.Call) and _writes(n)):
            out.append((call, _call_sources(call) + inner_tests, headers))
    return out


def _index_exprs(target: ast.AST) -> list[ast.AST]:
    """The indices along ``out[i].v[j]``: where a store goes depends on them too."""
    found = []
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        if isinstance(target, ast.Subscript):
            found.append(target.slice)
        target = target.value
    return found


def _call_sources(call: ast.Call) -> list[ast.AST]:
    """A call's arguments, less the array a known store or atomic writes into."""
    args = call.args + [k.value for k in call.keywords]
    name = _callee(call)
    return args[1:] if name and _WRITES_FIRST.match(name) else args


def _destination_names(out: ast.AST) -> list[ast.Name]:
    """The Name nodes naming where an output goes (``out`` in ``out[i] = v``)."""
    if isinstance(out, ast.Call):
        known_store = len(_call_sources(out)) < len(out.args) + len(out.keywords)
        targets = out.args[:1] if known_store else []
    elif isinstance(out, ast.Return):
        targets = []
    else:
        targets = out.targets if isinstance(out, ast.Assign) else [out.target]
    names = []
    for t in targets:
        while isinstance(t, (ast.Subscript, ast.Attribute)):
            t = t.value
        if isinstance(t, ast.Name):
            names.append(t)
    return names


def _view_sources(f: _Function, written: set[str]) -> set[int]:
    """Ids of the names a written local is a view of (``column = out[:, 1]; column[0] = 5.0``)."""
    return {id(n) for stmt, _ in f.flat if _single_target(stmt) in written - set(f.params)
            for n in f.walk(stmt.value) if isinstance(n, ast.Name)}


def _value_locals(f: _Function) -> set[str]:
    """Locals that hold vectors, matrices or scalars: writing into one writes no memory."""
    values = defaultdict(list)
    for stmt, _ in f.flat:
        for t in _local_targets(stmt) or []:
            values[t.id].append(stmt.value)
    return {name for name, vs in values.items() if name not in f.params and all(
        isinstance(v, (ast.Constant, ast.BinOp, ast.UnaryOp)) or _known_pure(v) or _callee(v) in IDENTITY_OF
        for v in vs)}


def _tainted(f: _Function) -> set[str]:
    """Names whose value may depend on a parameter, through data or through control."""
    facts = []
    for stmt, headers in f.flat:
        control = frozenset().union(*(f.loads(h) for h in headers))
        reads, binds = frozenset(), set()
        if isinstance(stmt, ast.For):
            reads, binds = f.loads(stmt.iter), {n.id for n in f.walk(stmt.target) if isinstance(n, ast.Name)}
        elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            reads = f.loads(stmt)
            binds = {n for t in targets for n in _bound(t)}
        facts.append((reads | control, binds))
        # A call may write into the names it is handed (`wp.hash_grid_query_next(query, i)`).
        for call in (n for n in f.own_nodes(stmt) if isinstance(n, ast.Call)):
            names = {a.id for a in call.args if isinstance(a, ast.Name)}
            if names:
                facts.append((f.loads(call) | control, names))
    tainted = set(f.params)
    changed = True
    while changed:
        changed = False
        for reads, binds in facts:
            if binds - tainted and reads & tainted:
                tainted |= binds
                changed = True
    return tainted


def _bound(target: ast.AST) -> set[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_bound(e) for e in target.elts))
    root = _root(target)
    return {root} if root else set()


RULES = (_algebra, _unused_values, _overwritten_stores, _idle_parameters, _output_defects)


# --- the gate as a registered check ---------------------------------------------------------


def semantic_check(run, batch: Batch) -> dict[str, str]:
    """{key: reason} for the records with a defect; the reason is the first defect's kind, a
    short stable string, so the run's stats count kinds rather than kernels."""
    failed = {}
    for key, record in batch.records.items():
        source = record["python_source"] if isinstance(record, dict) else record.python_source
        try:
            found = defects(source)
        except (SyntaxError, ValueError):
            failed[key] = "semantic: python_source does not parse"
            continue
        except RecursionError:
            failed[key] = "semantic: expressions nested too deep to read"
            continue
        if found:
            failed[key] = f"semantic: {found[0].kind}"
    return failed


CHECK = Check("semantic", TEXT, "no code a reviewer rejects on sight: x - x, x * 1.0, unused values, "
              "constants computed per thread, parameters that gate nothing, outputs that ignore inputs",
              semantic_check)
