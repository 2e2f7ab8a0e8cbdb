"""Reading a Warp function's AST for the semantic gate: what a name holds, what a call does,
which statements run where; the constants that say which builtins are math, casts or writes."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass


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
