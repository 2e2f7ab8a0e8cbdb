"""Helper functions: extract an expression into a ``@wp.func``, or inline one back into the kernel.

- ``extract``: the value of ``name = <expr>`` (or ``name += <expr>``) becomes a function named
  for what it computes (``compute_pressure``), taking the expression's variables as parameters
  typed from the unit's annotations and the values that flow into them (``types``); only a
  value whose name says what it is, computed by a few operations on two values or more;
- ``inline``: a function whose body is one ``return <expr>``, called once, is replaced at its
  call site in the kernel by that expression with the arguments put in; an argument that is
  not a plain name and is used twice is computed once into a local first.

Warp inlines functions when it generates code, so the arithmetic is the same either way. What it
leaves out: functions of several statements (their locals would need renaming on the way in),
and expressions reading arrays (an extracted function would need the array passed along).
"""

from __future__ import annotations

import ast
import copy
import random

from jit.code.synthesis.mutate.moves import expression_parts, hoist_names
from jit.code.synthesis.mutate.syntax import (
    replace_node,
    SIMPLE_STATEMENTS,
    blocks,
    call_name,
    is_docstring,
    is_pure_call,
    is_tile_call,
    wp_attr,
    walk,
)
from jit.code.synthesis.mutate.types import annotation_of, local_types, type_of
from jit.code.synthesis.mutate.unit import Unit

MIN_OPERATIONS = 4  # arithmetic and calls (casts aside) an extracted expression has at least
MIN_FREE = 2  # and the values it reads
NAME_FORMS = ("compute_{}", "eval_{}")
INCREMENT_FORMS = ("{}_term", "{}_contribution")  # for the value of ``name += <expr>``
# locals whose name says how a value is held, not what it is: no helper can be named after them
VAGUE = frozenset(
    {"tmp", "temp", "val", "value", "values", "res", "result", "out", "output", "ret", "acc", "accum", "sum",
     "total", "data", "x", "y", "z", "w", "t", "idx", "index", "offset", "count", "num"}
)
CASTS = frozenset({"float", "int", "float32", "float64", "float16", "int32", "int64", "uint32", "uint64", "bool"})


def extract_sites(unit: Unit) -> list[tuple[ast.stmt, str, list[str]]]:
    """(statement, target name, free names in order) of values that may become a function."""
    types = None  # worked out once a statement is worth a function (most are not)
    local = {a.arg for a in unit.kernel.args.args} | {
        n.id for n in walk(unit.kernel) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    out = []
    for body in blocks(unit.kernel):
        for stmt in body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 or isinstance(stmt, ast.AugAssign)):
                continue
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            value = stmt.value
            if (
                not isinstance(target, ast.Name)
                or not isinstance(value, (ast.BinOp, ast.Call))
                or id(stmt) in unit.touched
                or not extractable(value)
            ):
                continue
            # the kernel's own names (a local may shadow a builtin: ``dir``), in the order they are
            # written (a breadth-first walk would give ``((cell * n + i) * n + j) * n + k`` as k, n, j, i, cell)
            first: dict[str, tuple[float, float, int]] = {}
            for order, n in enumerate(walk(value)):
                if isinstance(n, ast.Name) and n.id in local:
                    at = (getattr(n, "lineno", float("inf")), getattr(n, "col_offset", float("inf")), order)
                    first[n.id] = min(first.get(n.id, at), at)
            free = sorted(first, key=first.get)
            if not worth_a_function(target.id, value, free):
                continue
            if types is None:
                types = local_types(unit.kernel, unit)
            if all(types.get(n) is not None for n in free):
                out.append((stmt, target.id, free))
    return out


def worth_a_function(target: str, value: ast.expr, free: list[str]) -> bool:
    """A helper a person would write: named after a value that says what it is (``stiffness``,
    not ``v`` or ``tmp``), computing more than a line's worth (``height - v - 1`` is not)."""
    stem = target.strip("_")
    operations = sum(
        isinstance(n, (ast.BinOp, ast.UnaryOp)) and not isinstance(getattr(n, "operand", None), ast.Constant)
        or isinstance(n, ast.Call) and call_name(n).rsplit(".", 1)[-1] not in CASTS
        for n in walk(value)
    )
    return (
        len(stem) >= 4
        and stem.lower() not in VAGUE
        and not stem[-1].isdigit()
        and operations >= MIN_OPERATIONS
        and len(free) >= MIN_FREE
    )


def extractable(value: ast.expr) -> bool:
    nodes = list(walk(value))
    for n in nodes:
        if isinstance(n, (ast.Subscript, ast.Attribute)) and wp_attr(n) is None:
            return False
        if isinstance(n, ast.Call) and (
            is_tile_call(n)
            or not (is_pure_call(n) or not wp_attr(n))
            or (wp_attr(n) or "").startswith(("static", "tid"))
        ):
            return False
        if isinstance(n, (ast.IfExp, ast.BoolOp, ast.Lambda, ast.NamedExpr)):
            return False
    return True


def extract(unit: Unit, rng: random.Random) -> str | None:
    sites = extract_sites(unit)
    if not sites:
        return None
    stmt, target, free = rng.choice(sites)
    types = local_types(unit.kernel, unit)
    forms = INCREMENT_FORMS if isinstance(stmt, ast.AugAssign) else NAME_FORMS
    stem = rng.choice(forms).format(target.lstrip("_"))
    name = f"{stem}_{unit.suffix}" if unit.suffix else stem
    if name in unit.taken():
        return None
    unit.claim(name)
    args = ast.arguments([], [ast.arg(n, annotation_of(types[n])) for n in free], None, [], [], None, [])
    returns = type_of(stmt.value, types, unit)
    fn = ast.FunctionDef(
        name,
        args,
        [ast.Return(stmt.value)],
        [ast.Attribute(ast.Name("wp", ast.Load()), "func", ast.Load())],
        annotation_of(returns) if returns else None,
    )
    unit.tree.body.insert(unit.tree.body.index(unit.kernel), fn)
    stmt.value = ast.Call(ast.Name(name, ast.Load()), [ast.Name(n, ast.Load()) for n in free], [])
    unit.touched.add(id(stmt))
    return f"extract_func:{stem}"


# ---------------------------------------------------------------------------------------------
# inlining


def one_liners(unit: Unit) -> dict[str, ast.FunctionDef]:
    """Functions whose body is one ``return <expr>``, defined once, called by position only."""
    counts: dict[str, int] = {}
    for fn in unit.functions:
        counts[fn.name] = counts.get(fn.name, 0) + 1
    keyword_calls = {
        n.func.id
        for n in walk(unit.tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.keywords
    }
    out = {}
    for name, fn in unit.funcs.items():
        body = [s for s in fn.body if not is_docstring(s)]
        if (
            counts[name] == 1
            and name not in keyword_calls
            and len(body) == 1
            and isinstance(body[0], ast.Return)
            and body[0].value is not None
            and not fn.args.vararg
            and not fn.args.kwonlyargs
            and not fn.args.defaults
            and not any(is_tile_call(n) for n in walk(body[0]))
            and uses_every_parameter(fn, body[0].value)
        ):
            out[name] = fn
    return out


def uses_every_parameter(fn: ast.FunctionDef, expr: ast.expr) -> bool:
    """Inlining a function that ignores a parameter would drop the argument (and leave a kernel
    parameter that only fed it unread)."""
    read = {n.id for n in walk(expr) if isinstance(n, ast.Name)}
    return all(a.arg in read for a in fn.args.args)


def inline(unit: Unit, rng: random.Random) -> str | None:
    candidates = one_liners(unit)
    if not candidates:  # most units have none: no need to count the calls
        return None
    calls: dict[str, int] = {}
    for c in walk(unit.tree):
        if isinstance(c, ast.Call):
            calls[call_name(c)] = calls.get(call_name(c), 0) + 1
    # a helper called from several places is a helper for a reason: inlining it would repeat it
    called = [
        n
        for n in candidates
        if calls.get(n) == 1 and any(isinstance(c, ast.Call) and call_name(c) == n for c in walk(unit.kernel))
    ]
    if not called:
        return None
    name = rng.choice(sorted(called))
    fn = candidates[name]
    done = 0
    for body in list(blocks(unit.kernel)):
        at = 0
        while at < len(body):
            inserted, replaced = inline_in(unit, rng, body, at, fn)
            at += inserted + 1
            done += replaced
    unit.prune()  # the function may be unused now
    return f"inline_func:{name.removesuffix('_' + unit.suffix)}" if done else None


def inline_in(unit: Unit, rng: random.Random, body: list[ast.stmt], at: int, fn: ast.FunctionDef) -> tuple[int, int]:
    """Inline the calls of ``fn`` in the expressions of ``body[at]``: (statements inserted before
    it, calls replaced)."""
    stmt = body[at]
    inserted = replaced = 0
    for part in expression_parts(stmt):
        # innermost first: an inlined inner call is what the outer one's argument becomes
        for call in reversed([n for n in walk(part) if isinstance(n, ast.Call) and call_name(n) == fn.name]):
            expr = next(s for s in fn.body if isinstance(s, ast.Return)).value
            params = [a.arg for a in fn.args.args]
            uses = {p: sum(isinstance(n, ast.Name) and n.id == p for n in walk(expr)) for p in params}
            bound = {}
            for p, arg in zip(params, call.args):
                if plain(arg) or uses[p] <= 1:
                    bound[p] = arg
                elif isinstance(stmt, SIMPLE_STATEMENTS) and not short_circuited(part, call):
                    local = unit.fresh(rng, (p,) if p not in unit.taken() else hoist_names(arg) or (p,))
                    body.insert(at + inserted, ast.Assign([ast.Name(local, ast.Store())], arg))
                    inserted += 1
                    bound[p] = ast.Name(local, ast.Load())
                else:
                    return inserted, replaced
            replace_node(stmt, call, _Substitute(bound).visit(copy.deepcopy(expr)))
            replaced += 1
    return inserted, replaced


def plain(node: ast.expr) -> bool:
    """A value cheap and clear enough to write wherever a parameter is used: a name, a constant,
    a field or a component of a name (``p.x``, ``v[0]``)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name)
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and isinstance(node.slice, (ast.Name, ast.Constant))
    if isinstance(node, ast.UnaryOp):
        return plain(node.operand)
    return False


def short_circuited(root: ast.expr, target: ast.AST) -> bool:
    for n in walk(root):
        if isinstance(n, (ast.BoolOp, ast.IfExp)) and any(m is target for m in walk(n)):
            return True
    return False


class _Substitute(ast.NodeTransformer):
    def __init__(self, bound: dict[str, ast.expr]):
        self.bound = bound

    def visit_Name(self, node):
        if node.id in self.bound and isinstance(node.ctx, ast.Load):
            return copy.deepcopy(self.bound[node.id])
        return node


