"""Dead-code elimination for generated Warp functions, on their Python AST.

A statement is kept when it has an effect: it stores into an array (or a struct or view
reached from a parameter), calls a builtin that writes through its arguments or to memory
(``atomic_*``, ``svd3``, ``*_query_next``, random draws that advance their state, ``printf``,
``tile_store`` ...), returns, breaks or continues; or when it assigns a local that something
kept reads. Liveness is by name and flow-insensitive, computed to a fixed point, so the pass
never removes a value that an output, an index or a decision depends on. ``if``/``for``/``while``
statements with nothing kept inside (and a test without effect) go as a whole; a kept
statement whose effect is all that matters loses its dead target (``old = wp.atomic_add(...)``
becomes ``wp.atomic_add(...)``). The result is re-rendered with ``ast.unparse``.

A loop variable nothing reads is renamed ``_``.

A value overwritten later in the same block before anything reads it goes too, and so does an
assignment nothing after it can read (backward liveness, with branches and loops read as a
whole). What it leaves out: liveness along paths inside branches and loops, and proving a loop terminates (generated loops are
bounded by construction).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

# builtins that write through their arguments, to memory, or advance a random state
EFFECTS = frozenset({
    "printf", "print", "expect_eq", "expect_neq", "expect_near", "svd3", "svd2", "qr3", "eig3",
    "quat_to_axis_angle", "volume_sample_grad_f", "volume_sample_grad", "volume_store", "volume_store_f",
    "volume_store_v", "volume_store_i", "mesh_query_aabb_next", "bvh_query_next", "hash_grid_query_next",
    "tile_store", "tile_atomic_add", "tile_scatter_add", "tile_scatter_masked", "tile_assign", "array_store",
    "store", "randi", "randf", "randn", "randu", "poisson", "noise", "pnoise", "curlnoise", "sample_cdf",
    "breakpoint",
})
# builtins that write through trailing arguments only in their longer forms: name -> arguments of the pure form
OUTPUT_FORMS = {"mesh_query_point": 3, "mesh_query_point_no_sign": 3, "mesh_query_furthest_point_no_sign": 3,
                "mesh_query_point_sign_normal": 4, "mesh_query_point_sign_winding_number": 5,
                "mesh_query_ray": 4, "tile_matmul": 2}
EFFECT_PREFIXES = ("atomic_", "sample_unit_", "sample_triangle", "expect_")
KEEP_CALLS = frozenset({"tid"})  # ``i = wp.tid()`` stays even when ``i`` is unused


def eliminate(source: str, impure: Iterable[str] = ()) -> str:
    """``source`` (one or more functions) with dead code removed from every function, re-rendered."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            prune(node, frozenset(impure))
    return ast.unparse(tree)


def eliminate_body(lines: list[str], params: dict[str, str], impure: Iterable[str] = ()) -> list[str]:
    """Kernel body ``lines`` (indented once) with dead code removed; ``params`` maps each
    parameter to its annotation text (arrays and views of them are memory)."""
    sig = ", ".join(f"{n}: {a}" for n, a in params.items())
    tree = ast.parse(f"def _body({sig}):\n" + "\n".join(lines))
    fn = tree.body[0]
    prune(fn, frozenset(impure))
    return ["    " + line for line in ast.unparse(ast.Module(body=fn.body, type_ignores=[])).splitlines()]


def prune(fn: ast.FunctionDef, impure: frozenset[str] = frozenset()) -> None:
    """Remove dead statements of ``fn`` in place, to a fixed point."""
    arrays = {a.arg for a in fn.args.args if a.annotation is not None and "array" in ast.unparse(a.annotation)}
    params = {a.arg for a in fn.args.args}
    ctx = _Facts(params, arrays | _views(fn.body, arrays), impure)
    _drop_overwritten(fn.body, impure)
    while True:
        before = len(list(_walk_stmts(fn.body)))
        fn.body = _drop_unread_after(fn.body, set(), impure)
        live = _live(fn.body, ctx)
        body, changed = _sweep(fn.body, live, ctx)
        fn.body = body or [ast.Pass()]
        for stmt in _walk_stmts(fn.body):  # a compound statement kept for its test keeps a body
            if hasattr(stmt, "body") and not stmt.body:
                stmt.body = [ast.Pass()]
        if not changed and len(list(_walk_stmts(fn.body))) == before:
            break
    _unnamed_loops(fn.body, _loads(fn), inside=False)


def _drop_overwritten(body: list[ast.stmt], impure: frozenset[str]) -> None:
    """Remove ``x = e`` (``e`` without effect) from a block when the next statement of the same
    block that mentions ``x`` assigns it again without reading it, and nothing in between can
    leave the block (``return``, ``break``, ``continue``): the first value is never read."""
    keep = []
    for n, s in enumerate(body):
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                _drop_overwritten(inner, impure)
        name = _simple_assign(s)
        if name is None or has_effect(s.value, impure) or not _overwritten(name, body[n + 1:]):
            keep.append(s)
    body[:] = keep or [ast.Pass()]


def _drop_unread_after(body: list[ast.stmt], live_out: set[str], impure: frozenset[str]) -> list[ast.stmt]:
    """Backward liveness along the block: ``x = e`` or ``x op= e`` (``e`` without effect) goes when
    nothing after it can read ``x``. A branch may or may not run and a loop body runs again, so
    what a compound statement reads anywhere stays live before it; only what a plain statement
    assigns stops being live above it."""
    live = set(live_out)
    kept: list[ast.stmt] = []
    for s in reversed(body):
        name = _simple_assign(s) or _simple_aug(s)
        if name is not None and name not in live and not has_effect(s.value, impure):
            continue
        if isinstance(s, ast.If):
            s.body = _drop_unread_after(s.body, live, impure)  # an emptied branch is resolved by _sweep
            if s.orelse:
                s.orelse = _drop_unread_after(s.orelse, live, impure)
        elif isinstance(s, (ast.For, ast.While)):
            s.body = _drop_unread_after(s.body, live | _loads(s), impure)
        if name is not None and isinstance(s, ast.Assign):
            live.discard(name)
        live |= _loads(s)
        kept.append(s)
    return kept[::-1]


def _simple_aug(s: ast.stmt) -> str | None:
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
        return s.target.id
    return None


def _simple_assign(s: ast.stmt) -> str | None:
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        return s.targets[0].id
    return None


def _overwritten(name: str, rest: list[ast.stmt]) -> bool:
    for s in rest:
        if any(isinstance(n, (ast.Return, ast.Break, ast.Continue)) for n in ast.walk(s)):
            return False
        mentioned = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(s))
        if not mentioned:
            continue
        return _simple_assign(s) == name and name not in _loads(s.value)
    return False


def _unnamed_loops(body: list[ast.stmt], loaded: set[str], inside: bool) -> None:
    """``for j in range(n)`` whose ``j`` nothing reads becomes ``for _ in range(n)`` (not nested in another)."""
    for s in body:
        renamed = False
        if isinstance(s, ast.For) and isinstance(s.target, ast.Name) and s.target.id not in loaded and not inside:
            s.target = ast.Name("_", ast.Store())
            renamed = True
        for field in ("body", "orelse"):
            _unnamed_loops(getattr(s, field, []) or [], loaded, inside or renamed)


class _Facts:
    def __init__(self, params: set[str], memory: set[str], impure: frozenset[str]):
        self.params = params
        self.memory = memory  # names whose element or field stores reach memory (arrays, views, params)
        self.impure = impure


def _views(body: list[ast.stmt], arrays: set[str]) -> set[str]:
    """Locals that may alias an array: assigned a bare array or a partial index of one."""
    out: set[str] = set()
    for node in _walk_stmts(body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            root = root_name(value)
            if root in arrays | out and isinstance(value, (ast.Name, ast.Subscript, ast.Attribute)):
                out.add(node.targets[0].id)
    return out


def _walk_stmts(body: list[ast.stmt]):
    for s in body:
        yield s
        for field in ("body", "orelse"):
            yield from _walk_stmts(getattr(s, field, []) or [])


def root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def has_effect(node: ast.AST | None, impure: frozenset[str] = frozenset()) -> bool:
    """True if evaluating ``node`` writes anything: an effectful builtin or helper call."""
    if node is None:
        return False
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("wp", "warp"):
            name = f.attr
            if name in EFFECTS or name.startswith(EFFECT_PREFIXES) or name in KEEP_CALLS:
                return True
            if name in OUTPUT_FORMS and len(n.args) + len(n.keywords) > OUTPUT_FORMS[name]:
                return True
        elif isinstance(f, ast.Name) and f.id in impure:
            return True
        elif isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name) and f.value.id in ("wp", "warp")):
            return True  # a method call: unknown, keep it
    return False


def _loads(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _target_names(targets: list[ast.expr]) -> tuple[set[str], bool]:
    """(local names written, whether a write reaches memory-like roots is decided by the caller)."""
    names = set()
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
        root = root_name(t)
        if root is not None and not isinstance(t, ast.Name):
            names.add(root)
    return names, False


def _stmt_targets(s: ast.stmt) -> list[ast.expr]:
    if isinstance(s, ast.Assign):
        return list(s.targets)
    if isinstance(s, (ast.AugAssign, ast.AnnAssign)):
        return [s.target]
    return []


def _writes_memory(targets: list[ast.expr], ctx: _Facts) -> bool:
    for t in targets:
        if isinstance(t, (ast.Subscript, ast.Attribute)) and root_name(t) in ctx.memory | ctx.params:
            return True
        if isinstance(t, (ast.Tuple, ast.List)) and _writes_memory(list(t.elts), ctx):
            return True
    return False


def _essential(s: ast.stmt, live: set[str], ctx: _Facts) -> bool:
    """Whether ``s`` must stay given the names known to be live."""
    if isinstance(s, (ast.Return, ast.Break, ast.Continue, ast.Raise, ast.Assert, ast.Global, ast.Nonlocal)):
        return True
    if isinstance(s, ast.Expr):
        return has_effect(s.value, ctx.impure)
    targets = _stmt_targets(s)
    if targets:
        names, _ = _target_names(targets)
        value = getattr(s, "value", None)
        return bool(names & live) or _writes_memory(targets, ctx) or has_effect(value, ctx.impure) \
            or any(t for t in targets if root_name(t) is None)
    if isinstance(s, ast.If):
        return has_effect(s.test, ctx.impure) or _any_essential(s.body + s.orelse, live, ctx)
    if isinstance(s, ast.While):
        return has_effect(s.test, ctx.impure) or _any_essential(s.body + s.orelse, live, ctx)
    if isinstance(s, ast.For):
        return has_effect(s.iter, ctx.impure) or _any_essential(s.body + s.orelse, live, ctx)
    if isinstance(s, ast.Pass):
        return False
    return True  # anything else (with, try, nested defs): keep


def _any_essential(body: list[ast.stmt], live: set[str], ctx: _Facts) -> bool:
    return any(_essential(s, live, ctx) for s in body)


def _live(body: list[ast.stmt], ctx: _Facts) -> set[str]:
    """Names read by kept statements, to a fixed point."""
    live: set[str] = set()
    while True:
        grown = set(live)
        _mark(body, grown, ctx)
        if grown == live:
            return live
        live = grown


def _mark(body: list[ast.stmt], live: set[str], ctx: _Facts) -> None:
    for s in body:
        if not _essential(s, live, ctx):
            continue
        if isinstance(s, (ast.If, ast.While)):
            live |= _loads(s.test)
            _mark(s.body + s.orelse, live, ctx)
        elif isinstance(s, ast.For):
            live |= _loads(s.iter)
            _mark(s.body + s.orelse, live, ctx)
        else:
            live |= _loads(s)
            if isinstance(s, ast.AugAssign):  # x += e reads x
                live |= _target_names([s.target])[0]


def _sweep(body: list[ast.stmt], live: set[str], ctx: _Facts) -> tuple[list[ast.stmt], bool]:
    out: list[ast.stmt] = []
    changed = False
    for s in body:
        if isinstance(s, ast.Pass) and len(body) > 1:
            changed = True
            continue
        if not _essential(s, live, ctx) and not isinstance(s, ast.Pass):
            changed = True
            continue
        if isinstance(s, (ast.If, ast.For, ast.While)):
            s_body, c1 = _sweep(s.body, live, ctx)
            s_else, c2 = _sweep(s.orelse, live, ctx)
            changed |= c1 or c2
            s.body, s.orelse = s_body, s_else
            if isinstance(s, ast.If) and not s.body and s.orelse:  # if c: pass else: x  ->  if not c: x
                s.test = ast.UnaryOp(ast.Not(), s.test)
                s.body, s.orelse = s.orelse, []
            s.body = s.body or [ast.Pass()]
        elif _stmt_targets(s) and not isinstance(s, ast.AugAssign):
            s, dropped = _drop_dead_target(s, live, ctx)
            changed |= dropped
        out.append(s)
    return out, changed


def _drop_dead_target(s: ast.stmt, live: set[str], ctx: _Facts) -> tuple[ast.stmt, bool]:
    """``x = effect(...)`` with ``x`` dead -> ``effect(...)``."""
    targets = _stmt_targets(s)
    value = getattr(s, "value", None)
    if value is None or not all(isinstance(t, ast.Name) for t in targets):
        return s, False
    if any(t.id in live for t in targets) or not has_effect(value, ctx.impure):
        return s, False
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in KEEP_CALLS:
        return s, False
    return ast.copy_location(ast.Expr(value), s), True
