"""Outputs: a kernel that writes nothing, or nothing that depends on what it reads."""

from __future__ import annotations

import ast
from collections import defaultdict

from jit.code.checks.semantic.reading import (
    Defect, IDENTITY_OF, _Function, _WRITES_FIRST, _callee, _known_pure, _local_targets, _root, _single_target,
    _writes,
)


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
