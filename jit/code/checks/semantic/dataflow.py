"""Values nobody reads, stores only the last loop iteration keeps, parameters that change nothing."""

from __future__ import annotations

import ast
from collections import defaultdict

from jit.code.checks.semantic.algebra import (
    _equal_operands, _same, _same_block,
)
from jit.code.checks.semantic.reading import (
    Defect, _Function, _blocks, _callee, _known_pure, _local_targets, _root, _single_target, _text, _writes,
)


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
