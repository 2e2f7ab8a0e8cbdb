"""Mutations that move code without changing what it computes: hoist, inline, reorder.

- ``hoist`` computes a subexpression one statement earlier into a local named by its role
  (``dist = wp.length(d)``, ``point = points[i]``, ``idx = i * 3 + 1``);
- ``inline`` puts a pure local read once, in the next statement, back into that statement;
- ``reorder`` swaps two adjacent statements that neither read what the other writes.

The same operations run in the same order on the same values, so a mutant's outputs are the
seed's bit for bit. Nothing moves out of a branch, across a short-circuit (``and``, ``or``,
``x if c else y``) or out of a tile call's shape and keyword arguments (they must stay
compile-time constants). What it leaves out: moves between functions (``helpers``).
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator

from jit.code.synthesis.mutate.syntax import (
    SIMPLE_STATEMENTS,
    arrays,
    base_name,
    blocks,
    body_nodes,
    effects,
    is_docstring,
    is_pure_call,
    is_tile_call,
    replace_node,
    tid_names,
    wp_attr,
)
from jit.code.synthesis.mutate.unit import Unit

HOIST_NAMES: dict[str, tuple[str, ...]] = {
    "length": ("dist", "length_v"),
    "length_sq": ("dist_sq", "len_sq"),
    "dot": ("proj", "dot_val"),
    "cross": ("axis", "perp"),
    "normalize": ("direction", "unit_dir"),
    "sqrt": ("root",),
    "sin": ("sin_t",),
    "cos": ("cos_t",),
    "exp": ("decay", "exp_val"),
    "min": ("lo", "min_val"),
    "max": ("hi", "max_val"),
    "abs": ("mag", "abs_val"),
    "clamp": ("clamped",),
    "transform_point": ("p_world", "x_world"),
    "transform_vector": ("v_world", "dir_world"),
    "quat_rotate": ("rotated", "v_world"),
    "quat_rotate_inv": ("v_local", "local"),
    "float": ("fx", "value"),
    "int": ("ix", "index"),
    "vec": ("vec", "offset"),
    "mat": ("mat", "basis"),
    "quat": ("rot", "q_rot"),
    "transform": ("xform", "tf"),
    "where": ("chosen", "selected"),
    "select": ("chosen", "selected"),
    "lerp": ("blended", "mixed"),
    "floor": ("floored",),
    "ceil": ("ceiled",),
    "cw_mul": ("weighted",),
    "mul": ("product",),
    "pow": ("powered",),
    "atan2": ("angle",),
    "acos": ("angle",),
    "log": ("log_val",),
}
BINOP_WORDS = {
    ast.Add: ("sum", "total"),
    ast.Sub: ("delta", "diff"),
    ast.Mult: ("scaled", "prod"),
    ast.Div: ("ratio", "frac"),
    ast.Mod: ("rem",),
    ast.FloorDiv: ("quot",),
}
INDEX_NAMES = ("idx", "offset", "base", "start", "slot")


def element_names(array: str) -> tuple[str, ...]:
    """Names for one element of ``array``: ``points`` -> ``point``, ``x`` -> ``xi``."""
    if len(array) > 3 and array.endswith("s") and not array.endswith("ss"):
        return (array[:-1], f"{array[:-1]}_i")
    if len(array) <= 2:
        return (f"{array}i", f"{array}_i")
    return (f"{array}_i", f"{array}_val")


def hoist_names(node: ast.expr) -> tuple[str, ...]:
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right):
            base = (
                node.left.id
                if isinstance(node.left, ast.Name)
                else (
                    node.left.value.id
                    if isinstance(node.left, ast.Subscript) and isinstance(node.left.value, ast.Name)
                    else "value"
                )
            )
            return (f"{base}_sq", "squared")
        words = BINOP_WORDS.get(type(node.op), ("tmp",))
        if isinstance(node.left, ast.Name) and len(node.left.id) <= 12:
            return tuple(f"{node.left.id}_{w}" for w in words) + words
        return words
    attr = wp_attr(node) or (node.func.id if isinstance(node.func, ast.Name) else "")
    if attr in ("int", "float", "int32", "float32", "float64") and node.args and isinstance(node.args[0], ast.Call):
        return hoist_names(node.args[0])  # a cast is named for what it converts
    for key in (attr, attr.rstrip("0123456789bdfhisu"), attr[:3], attr[:4], attr[:9]):
        if key in HOIST_NAMES:
            return HOIST_NAMES[key]
    return (f"{attr}_val",) if attr.isidentifier() else ("tmp", "val")


def expression_parts(stmt: ast.stmt) -> list[ast.expr]:
    """The expressions a statement evaluates before it acts (not targets, not nested bodies)."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return [stmt.value] if stmt.value is not None else []
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return [*stmt.value.args, *(k.value for k in stmt.value.keywords)]
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        return [stmt.value]
    if isinstance(stmt, ast.If):
        return [stmt.test]
    return []


def hoistable(root: ast.expr, array_names: set[str]) -> Iterator[tuple[ast.expr, bool]]:
    """(subexpression, is it an array index) for the subexpressions of ``root`` that may be computed
    one statement earlier: pure calls, arithmetic and element reads of the arrays, not under a
    short-circuit."""
    todo = [(root, False)]
    while todo:
        node, index = todo.pop()
        if isinstance(node, (ast.BoolOp, ast.IfExp, ast.Lambda)):
            continue
        if isinstance(node, ast.Subscript):  # a whole element read only, never a view of it
            if isinstance(node.value, ast.Name) and node.value.id in array_names:
                yield node, index
            todo.append((node.slice, True))
            continue
        if (
            isinstance(node, ast.Call)
            and is_pure_call(node)
            and (node.args or node.keywords)
            and not all(isinstance(a, ast.Constant) for a in node.args)
        ):
            yield node, index
        elif isinstance(node, ast.BinOp) and not (
            isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
        ):
            yield node, index
        if isinstance(node, ast.Call) and (wp_attr(node) or "").startswith(("static", "adjoint")):
            continue
        if is_tile_call(node):  # shape=, dtype=, axis=, storage= must stay compile-time constants
            todo.extend((a, index) for a in node.args if not isinstance(a, ast.Tuple))
            continue
        todo.extend(
            (c, index)
            for c in ast.iter_child_nodes(node)
            if isinstance(c, ast.expr) and c is not getattr(node, "func", None)
        )


def hoist(unit: Unit, rng: random.Random) -> str | None:
    sites = []
    for fn in unit.functions:
        names = set(arrays(fn))
        for body in blocks(fn):
            for at, stmt in enumerate(body):
                for part in expression_parts(stmt):
                    whole = part if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
                    sites += [
                        (body, at, stmt, node, index)
                        for node, index in hoistable(part, names)
                        if node is not whole and id(node) not in unit.touched and not named_later(body, at, node)
                    ]
    if not sites:
        return None
    body, at, stmt, node, index = rng.choice(sites)
    if isinstance(node, ast.Subscript):
        options = element_names(node.value.id)
    else:
        options = INDEX_NAMES if index and isinstance(node, ast.BinOp) else hoist_names(node)
    name = unit.fresh(rng, options)
    assign = ast.Assign([ast.Name(name, ast.Store())], node)
    replace_node(stmt, node, ast.Name(name, ast.Load()))
    body.insert(at, assign)
    unit.touched |= {id(assign), id(node)}
    reuse(body, at + 1, node, name)
    return f"hoist:{name}"


def named_later(body: list[ast.stmt], at: int, node: ast.expr) -> bool:
    """A later statement of the block already gives the value a name: hoisting it again would
    read it twice under two names."""
    text = ast.dump(node)
    return any(isinstance(s, ast.Assign) and ast.dump(s.value) == text for s in body[at + 1:])


def reuse(body: list[ast.stmt], start: int, value: ast.expr, name: str) -> None:
    """Read ``name`` instead of computing ``value`` again in the statements from ``start``, as
    long as none of them writes what ``value`` reads (a person hoists a value once)."""
    text = ast.dump(value)
    reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    for stmt in body[start:]:
        # a statement that assigns exactly the value keeps it: reading the name there would only make
        # an alias (``x_i = xi``)
        whole = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        for part in expression_parts(stmt):
            for node, _ in list(hoistable(part, set())) + [
                (n, False) for n in ast.walk(part) if isinstance(n, ast.Subscript)
            ]:
                if node is not whole and ast.dump(node) == text and not under_short_circuit(part, node):
                    replace_node(stmt, node, ast.Name(name, ast.Load()))
        if not isinstance(stmt, SIMPLE_STATEMENTS) or effects(stmt).writes & (reads | {name}) or effects(stmt).impure:
            return


def under_short_circuit(root: ast.expr, target: ast.AST) -> bool:
    return any(isinstance(n, (ast.BoolOp, ast.IfExp)) and any(m is target for m in ast.walk(n)) for n in ast.walk(root))


def inline_sites(fn: ast.FunctionDef, unit: Unit) -> list[tuple[list, int, ast.Name]]:
    """(block, position, the one use) of ``t = pure expr`` whose only read is in the next statement."""
    loads: dict[str, list[ast.Name]] = {}
    stores: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads.setdefault(node.id, []).append(node)
            else:
                stores[node.id] = stores.get(node.id, 0) + 1
    params = {a.arg for a in fn.args.args}
    sites = []
    for body in blocks(fn):
        for at, stmt in enumerate(body[:-1]):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            name = stmt.targets[0].id
            uses = loads.get(name, [])
            if (
                name in params
                or stores.get(name) != 1
                or len(uses) != 1
                or id(stmt) in unit.touched
                or tid_names(stmt)
                or effects(stmt).impure
                or is_literal_cast(stmt.value)
            ):
                continue
            following = body[at + 1]
            if (
                any(uses[0] is n for part in expression_parts(following) for n in ast.walk(part))
                and not is_base_of_access(following, uses[0])
                and not in_tile_arguments(following, uses[0])
            ):
                sites.append((body, at, uses[0]))
    return sites


def is_literal_cast(node: ast.expr) -> bool:
    """``float(0.0)``, ``wp.float64(1.0)``: the local fixes a type a bare literal would not."""
    return isinstance(node, (ast.Constant, ast.Call)) and (
        isinstance(node, ast.Constant) or all(isinstance(a, ast.Constant) for a in node.args)
    )


def is_base_of_access(tree: ast.AST, name: ast.Name) -> bool:
    """True if ``name`` is the object of ``name[...]``/``name.x`` (inlining would index an expression)."""
    return any(isinstance(n, (ast.Subscript, ast.Attribute)) and n.value is name for n in ast.walk(tree))


def in_tile_arguments(tree: ast.AST, name: ast.Name) -> bool:
    return any(is_tile_call(n) and any(name is m for m in ast.walk(n)) for n in ast.walk(tree))


def inline(unit: Unit, rng: random.Random) -> str | None:
    sites = [s for fn in unit.functions for s in inline_sites(fn, unit)]
    if not sites:
        return None
    body, at, use = rng.choice(sites)
    stmt = body.pop(at)
    unit.notes.forget(stmt)
    replace_node(body[at], use, stmt.value)
    unit.touched.add(id(stmt.value))
    return f"inline:{use.id}"


def aliases(fn: ast.FunctionDef) -> dict[str, str]:
    """Locals that may be views of another variable (``row = values[i]``) -> the variable."""
    roots: dict[str, str] = {}
    for node in body_nodes(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Subscript, ast.Attribute)):
            base = base_name(node.value)
            for t in node.targets:
                if isinstance(t, ast.Name) and base is not None:
                    roots[t.id] = roots.get(base, base)
    return roots


def independent(a: ast.stmt, b: ast.stmt, roots: dict[str, str]) -> bool:
    """True if two adjacent simple statements may run in either order (a write through a view
    counts as a write to what it views)."""
    if (
        not (isinstance(a, SIMPLE_STATEMENTS) and isinstance(b, SIMPLE_STATEMENTS))
        or is_docstring(a)
        or is_docstring(b)
    ):
        return False
    ea, eb = effects(a), effects(b)
    if ea.impure or eb.impure:
        return False
    for e in (ea, eb):
        e.reads |= {roots[n] for n in e.reads if n in roots}
        e.writes |= {roots[n] for n in e.writes if n in roots}
    return not (ea.writes & (eb.reads | eb.writes)) and not (eb.writes & ea.reads)


def reorder(unit: Unit, rng: random.Random) -> str | None:
    sites = []
    for fn in unit.functions:
        roots = aliases(fn)
        sites += [
            (body, at)
            for body in blocks(fn)
            for at in range(len(body) - 1)
            if id(body[at]) not in unit.touched
            and id(body[at + 1]) not in unit.touched
            and independent(body[at], body[at + 1], roots)
        ]
    if not sites:
        return None
    body, at = rng.choice(sites)
    body[at], body[at + 1] = body[at + 1], body[at]
    unit.touched |= {id(body[at]), id(body[at + 1])}
    return "reorder"
