"""Integer intervals of a kernel's index expressions, by walking its code once per guess.

``Bounds(...).run()`` interprets a kernel over intervals: the thread index spans the launch
grid, a ``range`` loop variable its range, an integer parameter the range chosen for it, an
element of an integer array the range of that array's values. Branches narrow what they test
(``if i > 0:`` guards ``a[i - 1]``), paths that return drop out, and calls to the unit's
``@wp.func`` functions are followed. Every array access is recorded with the interval of each
index, which is what ``infer`` sizes arrays from. What it leaves out: floats (an index computed
from one is unknown, and the run in ``verify`` decides), and loop-carried integers (unknown).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from jit.code.synthesis.mutate.intervals import Interval, arith, clip, join, join_envs
from jit.code.synthesis.mutate.syntax import call_name, wp_attr, children, walk

MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class View:
    """An array, or a slice of one whose first ``dim`` indices are taken (``row = a[i]``)."""

    array: str
    dim: int = 0


@dataclass(frozen=True, slots=True)
class Shape:
    array: str


@dataclass(slots=True)
class Access:
    array: str
    dim: int
    span: Interval


@dataclass(slots=True)
class Bounds:
    kernel: ast.FunctionDef
    funcs: dict[str, ast.FunctionDef]
    consts: dict[str, int]
    ndims: dict[str, int]  # array parameter -> ndim
    shapes: dict[str, list[int]]
    values: dict[str, Interval]  # integer arrays and scalars -> their values' range
    tiles: dict[str, tuple] = field(default_factory=dict)  # local tile -> its shape
    accesses: list[Access] = field(default_factory=list)
    _returns: list = field(default_factory=list)
    _depth: int = 0

    def run(self, tids: list[str], dims: list[int]) -> list[Access]:
        env = {name: span for name, span in self.values.items() if name not in self.ndims}
        env.update({name: View(name) for name in self.ndims})
        env.update({t: (0, d - 1) for t, d in zip(tids, dims)})
        self.accesses = []
        self.block(self.kernel.body, env)
        return self.accesses

    # statements ----------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt], env: dict | None) -> dict | None:
        for stmt in stmts:
            if env is None:
                return None
            env = self.stmt(stmt, dict(env))
        return env

    def stmt(self, s: ast.stmt, env: dict) -> dict | None:
        if isinstance(s, ast.Assign):
            if wp_attr(s.value) == "tid" and isinstance(s.value, ast.Call):
                return env  # the grid's names are bound by ``run``
            value = self.eval(s.value, env)
            for target in s.targets:
                self.bind(target, value, s.value, env)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.bind(s.target, self.eval(s.value, env), s.value, env)
        elif isinstance(s, ast.AugAssign):
            value = self.eval(s.value, env)
            if isinstance(s.target, ast.Name):
                env[s.target.id] = arith(s.op, env.get(s.target.id), value)
            else:
                self.eval(s.target, env)
        elif isinstance(s, ast.Expr):
            self.eval(s.value, env)
        elif isinstance(s, ast.If):
            yes, no = self.narrow(s.test, env)
            return join_envs(self.block(s.body, yes), self.block(s.orelse, no))
        elif isinstance(s, ast.For):
            return self.loop_for(s, env)
        elif isinstance(s, ast.While):
            return self.loop_while(s, env)
        elif isinstance(s, ast.Return):
            self._returns.append(self.eval(s.value, env) if s.value is not None else None)
            return None
        elif isinstance(s, (ast.Break, ast.Continue)):
            return None
        return env

    def bind(self, target: ast.expr, value, node: ast.expr, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            if isinstance(node, ast.Call) and (shape := self.tile_shape(node, env)) is not None:
                self.tiles[target.id] = shape
        elif isinstance(target, ast.Tuple):
            for t in target.elts:
                self.bind(t, None, t, env)
        else:
            self.eval(target, env)

    def carried(self, body: list[ast.stmt], env: dict) -> dict:
        """``env`` with every name the body assigns and that lived before it forgotten."""
        out = dict(env)
        for node in (n for s in body for n in walk(s)):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id in out:
                out[node.id] = None
        return out

    def loop_for(self, s: ast.For, env: dict) -> dict:
        span = self.range_of(s.iter, env)
        before = self.carried(s.body, env)
        inner = dict(before)
        if isinstance(s.target, ast.Name):
            if span is not None and span[1] < span[0]:
                return env  # the loop never runs
            inner[s.target.id] = span
        after = self.block(s.body, inner)
        return join_envs(before, after) or before

    def loop_while(self, s: ast.While, env: dict) -> dict:
        before = self.carried(s.body, env)
        yes, no = self.narrow(s.test, before)
        self.block(s.body, yes)
        return no

    def range_of(self, node: ast.expr, env: dict) -> Interval:
        if not (isinstance(node, ast.Call) and call_name(node) == "range" and node.args):
            self.eval(node, env)
            return None
        spans = [self.eval(a, env) for a in node.args]
        if any(not isinstance(x, tuple) for x in spans):
            return None
        if len(spans) == 1:
            return 0, spans[0][1] - 1
        step = spans[2] if len(spans) > 2 else (1, 1)
        if step[0] > 0:
            return spans[0][0], spans[1][1] - 1
        if step[1] < 0:
            return spans[1][0] + 1, spans[0][1]
        return None

    # conditions ----------------------------------------------------------------------------

    def narrow(self, test: ast.expr, env: dict | None) -> tuple[dict | None, dict | None]:
        """(env where ``test`` holds, env where it does not); None for a side no value reaches."""
        if env is None:
            return None, None
        self.eval(test, env)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            no, yes = self.narrow(test.operand, env)
            return yes, no
        if isinstance(test, ast.BoolOp):
            if isinstance(test.op, ast.And):
                yes = env
                for v in test.values:
                    yes = self.narrow(v, yes)[0]
                return yes, env
            no = env
            for v in test.values:
                no = self.narrow(v, no)[1]
            return env, no
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self.compare(test.left, test.ops[0], test.comparators[0], env)
        return env, env

    def compare(self, left: ast.expr, op: ast.cmpop, right: ast.expr, env: dict) -> tuple[dict, dict]:
        yes, no = dict(env), dict(env)
        flipped = {
            ast.Lt: ast.Gt,
            ast.Gt: ast.Lt,
            ast.LtE: ast.GtE,
            ast.GtE: ast.LtE,
            ast.Eq: ast.Eq,
            ast.NotEq: ast.NotEq,
        }
        negated = {
            ast.Lt: ast.GtE,
            ast.GtE: ast.Lt,
            ast.Gt: ast.LtE,
            ast.LtE: ast.Gt,
            ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq,
        }
        for name, other, kind in ((left, right, type(op)), (right, left, flipped.get(type(op)))):
            if kind is None or not isinstance(name, ast.Name) or not isinstance(env.get(name.id), tuple):
                continue
            bound = self.eval(other, env)
            if not isinstance(bound, tuple):
                continue
            yes[name.id] = clip(yes[name.id], kind, bound)
            no[name.id] = clip(no[name.id], negated[kind], bound)
        empty = [e for e in (yes, no) if any(isinstance(v, tuple) and v[0] > v[1] for v in e.values())]
        return (None if yes in empty else yes), (None if no in empty else no)

    # expressions ---------------------------------------------------------------------------

    def eval(self, node: ast.expr | None, env: dict):
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return (int(node.value), int(node.value)) if type(node.value) in (int, bool) else None
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            return (self.consts[node.id],) * 2 if node.id in self.consts else None
        if isinstance(node, ast.BinOp):
            return arith(node.op, self.eval(node.left, env), self.eval(node.right, env))
        if isinstance(node, ast.UnaryOp):
            inner = self.eval(node.operand, env)
            if isinstance(node.op, ast.USub) and isinstance(inner, tuple):
                return -inner[1], -inner[0]
            return inner if isinstance(node.op, ast.UAdd) else (0, 1) if isinstance(node.op, ast.Not) else None
        if isinstance(node, (ast.Compare, ast.BoolOp)):
            for child in children(node):
                if isinstance(child, ast.expr):
                    self.eval(child, env)
            return 0, 1
        if isinstance(node, ast.IfExp):
            yes, no = self.narrow(node.test, env)
            sides = [self.eval(branch, e) for branch, e in ((node.body, yes), (node.orelse, no)) if e is not None]
            return join(*sides) if len(sides) == 2 else sides[0] if sides else None
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, env)
            return Shape(base.array) if isinstance(base, View) and node.attr == "shape" and base.dim == 0 else None
        if isinstance(node, ast.Subscript):
            return self.subscript(node, env)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        for child in children(node):
            if isinstance(child, ast.expr):
                self.eval(child, env)
        return None

    def subscript(self, node: ast.Subscript, env: dict):
        base = self.eval(node.value, env)
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        spans = [self.eval(i, env) for i in index]
        if isinstance(base, Shape):
            k = spans[0]
            if isinstance(k, tuple) and k[0] == k[1] and k[0] < len(self.shapes[base.array]):
                return (self.shapes[base.array][k[0]],) * 2
            return None
        if not isinstance(base, View):
            return None
        ndim = self.ndims[base.array]
        for k, span in enumerate(spans[: ndim - base.dim]):
            self.accesses.append(Access(base.array, base.dim + k, span if isinstance(span, tuple) else None))
        taken = base.dim + len(spans)
        if taken < ndim:
            return View(base.array, taken)
        return self.values.get(base.array)

    def call(self, node: ast.Call, env: dict):
        name = call_name(node)
        args = [self.eval(a, env) for a in node.args]
        kwargs = {k.arg: self.eval(k.value, env) for k in node.keywords}
        attr = wp_attr(node) or ""
        if attr.startswith("atomic_") and args and isinstance(args[0], View):
            view = args[0]
            for k, span in enumerate(args[1 : 1 + self.ndims[view.array] - view.dim]):
                self.accesses.append(Access(view.array, view.dim + k, span if isinstance(span, tuple) else None))
            return self.values.get(view.array)
        if attr in ("tile_load", "tile_store", "tile_atomic_add") and args and isinstance(args[0], View):
            self.tile_access(node, args, kwargs, env)
            return None
        if name in ("min", "max") and len(args) == 2 and all(isinstance(a, tuple) for a in args):
            pick = min if name == "min" else max
            return pick(args[0][0], args[1][0]), pick(args[0][1], args[1][1])
        if name == "clamp" and len(args) == 3:
            lo, hi = args[1], args[2]
            return (lo[0], hi[1]) if isinstance(lo, tuple) and isinstance(hi, tuple) else None
        if name in ("int", "int32", "int64", "uint32") and len(args) == 1:
            inner = node.args[0]
            if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Div):
                # ``int(n / k)`` of non-negative integers truncates like ``n // k``
                a, b = self.eval(inner.left, env), self.eval(inner.right, env)
                if isinstance(a, tuple) and a[0] >= 0:
                    return arith(ast.FloorDiv(), a, b)
            return args[0] if isinstance(args[0], tuple) else None
        if name == "abs" and len(args) == 1 and isinstance(args[0], tuple):
            lo, hi = args[0]
            return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
        if name == "len" and len(args) == 1 and isinstance(args[0], View):
            return (self.shapes[args[0].array][args[0].dim],) * 2
        if name in ("select", "where") and len(args) == 3:
            return join(args[1], args[2]) if isinstance(args[1], tuple) and isinstance(args[2], tuple) else None
        if isinstance(node.func, ast.Name) and node.func.id in self.funcs:
            return self.user_call(self.funcs[node.func.id], args)
        return None

    def user_call(self, fn: ast.FunctionDef, args: list) -> Interval:
        if self._depth >= MAX_DEPTH:
            return None
        env = {p.arg: a for p, a in zip(fn.args.args, args)}
        saved, self._returns = self._returns, []
        self._depth += 1
        try:
            self.block(fn.body, env)
            found = self._returns
        finally:
            self._depth -= 1
            self._returns = saved
        spans = [r for r in found if isinstance(r, tuple)]
        if not spans or len(spans) < len(found):
            return None
        out = spans[0]
        for s in spans[1:]:
            out = join(out, s)
        return out

    # tiles ---------------------------------------------------------------------------------

    def tile_shape(self, node: ast.Call, env: dict) -> tuple | None:
        attr = wp_attr(node) or ""
        if attr in ("tile_load", "tile_zeros", "tile_ones", "tile_full", "tile_empty"):
            given = next((k.value for k in node.keywords if k.arg == "shape"), None)
            if given is None and node.args:
                given = (
                    node.args[1]
                    if attr == "tile_load" and len(node.args) > 1
                    else node.args[0] if attr != "tile_load" else None
                )
            return self.const_shape(given, env)
        if attr in ("tile_map", "tile_neg") and node.args:
            last = node.args[-1]
            return self.tiles.get(last.id) if isinstance(last, ast.Name) else None
        if attr == "tile_transpose" and node.args and isinstance(node.args[0], ast.Name):
            shape = self.tiles.get(node.args[0].id)
            return tuple(reversed(shape)) if shape else None
        return None

    def const_shape(self, node: ast.expr | None, env: dict) -> tuple | None:
        parts = node.elts if isinstance(node, ast.Tuple) else [node] if node is not None else []
        spans = [self.eval(p, env) for p in parts]
        if not spans or any(not isinstance(s, tuple) or s[0] != s[1] for s in spans):
            return None
        return tuple(s[0] for s in spans)

    def tile_access(self, node: ast.Call, args: list, kwargs: dict, env: dict) -> None:
        view: View = args[0]
        attr = wp_attr(node)
        if attr == "tile_load":
            shape = self.tile_shape(node, env)
        else:
            stored = node.args[1] if len(node.args) > 1 else None
            shape = self.tiles.get(stored.id) if isinstance(stored, ast.Name) else None
        offset_node = next((k.value for k in node.keywords if k.arg == "offset"), None)
        offsets = (
            offset_node.elts if isinstance(offset_node, ast.Tuple) else [offset_node] if offset_node is not None else []
        )
        ndim = self.ndims[view.array]
        for k in range(ndim):
            start = self.eval(offsets[k], env) if k < len(offsets) else (0, 0)
            extent = shape[k] if shape is not None and k < len(shape) else None
            span = None if not isinstance(start, tuple) or extent is None else (start[0], start[1] + extent - 1)
            self.accesses.append(Access(view.array, k, span))
