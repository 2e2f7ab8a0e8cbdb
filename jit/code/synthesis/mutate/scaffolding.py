"""A test kernel without its test: the code that computes, kept; what only checks it, dropped.

Many kernels of Warp's tests compute something and then check it in place (``wp.expect_eq``,
``assert``, ``print``), take flags that only steer the check, or carry names and docstrings
that say "test". ``strip`` removes the checks, then what only they needed (locals no statement
reads, parameters the body never reads, branches left empty), drops the ``test_`` prefix of the
kernel's name, and docstrings and comments about testing. ``computes`` tells whether what is
left still does something: reads an input and writes memory. What it leaves out: judging
whether a kernel is worth mutating (``seeds``), and kernels whose checks are their purpose
(nothing is left of them, and ``computes`` says so).
"""

from __future__ import annotations

import ast
import re

from jit.code.synthesis.mutate.syntax import base_name, call_name, is_docstring, is_pure_call, wp_attr, walk

CHECKS = (
    "expect_eq",
    "expect_neq",
    "expect_near",
    "expect_lt",
    "expect_le",
    "expect_gt",
    "expect_ge",
    "print",
    "printf",
    "breakpoint",
)
TESTING = re.compile(r"\b(test(s|ed|ing)?|expect(ed|s)?|assert(s|ed|ion)?|verif(y|ies))\b", re.IGNORECASE)
WRITERS = ("atomic_", "tile_store", "tile_atomic", "array_store")


def is_check(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assert):
        return True
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and call_name(stmt.value) in CHECKS


def strip(tree: ast.Module, kernel: ast.FunctionDef) -> str | None:
    """Remove the checks from every function of ``tree``; None, or why what is left is not a kernel."""
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        if not drop_checks(fn.body):
            return f"a branch of {fn.name} holds only checks"
        drop_dead(fn)
        if fn.body and is_docstring(fn.body[0]) and TESTING.search(fn.body[0].value.value):
            fn.body.pop(0)
        if not fn.body:
            fn.body.append(ast.Pass())
    drop_unread_params(kernel)
    if kernel.name.startswith("test_") and len(kernel.name) > 5:
        kernel.name = kernel.name[5:]
    return None if computes(kernel) else "computes nothing once its checks are gone"


def drop_checks(body: list[ast.stmt]) -> bool:
    """Remove checks from a statement list (in place); False if a branch is left empty while its
    sibling is not (the condition would then need inverting)."""
    keep = []
    for stmt in body:
        if is_check(stmt):
            continue
        if isinstance(stmt, (ast.If, ast.For, ast.While)):
            had = bool(stmt.body), bool(stmt.orelse)
            if not (drop_checks(stmt.body) and drop_checks(stmt.orelse)):
                return False
            if not stmt.body and not stmt.orelse and all(had[:1]):
                continue  # a branch or loop that only checked
            if not stmt.body:
                return False
        keep.append(stmt)
    body[:] = keep
    return True


def drop_dead(fn: ast.FunctionDef) -> None:
    """Remove assignments to locals that nothing reads, until none is left."""
    while True:
        read = {n.id for n in walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        removed = False
        for body in _bodies(fn):
            keep = [s for s in body if not dead(s, read)]
            removed |= len(keep) != len(body)
            body[:] = keep
        if not removed:
            return


def dead(stmt: ast.stmt, read: set[str]) -> bool:
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [n for t in targets for n in walk(t) if isinstance(n, ast.expr)]
        if not all(isinstance(n, (ast.Name, ast.Tuple)) for n in names):
            return False
        value = stmt.value
        pure = value is None or all(
            is_pure_call(c) or wp_attr(c) == "tid" for c in walk(value) if isinstance(c, ast.Call)
        )
        return pure and not any(isinstance(n, ast.Name) and n.id in read for n in names)
    return False


def _bodies(fn: ast.FunctionDef):
    todo = [fn.body]
    while todo:
        body = todo.pop()
        yield body
        for stmt in body:
            for field in ("body", "orelse"):
                sub = getattr(stmt, field, None)
                if isinstance(sub, list) and not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                    todo.append(sub)


def drop_unread_params(kernel: ast.FunctionDef) -> None:
    read = {n.id for s in kernel.body for n in walk(s) if isinstance(n, ast.Name)}
    kernel.args.args = [a for a in kernel.args.args if a.arg in read]


def computes(kernel: ast.FunctionDef) -> bool:
    """True if the kernel writes memory and what it writes can depend on an input parameter."""
    params = {a.arg for a in kernel.args.args}
    writes = reads = False
    for node in (n for s in kernel.body for n in walk(s)):
        if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            writes |= base_name(node) in params
        elif isinstance(node, ast.Call) and (wp_attr(node) or "").startswith(WRITERS):
            writes = True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            writes |= any(isinstance(a, ast.Name) and a.id in params for a in node.args)  # a helper may write
    # an input: a parameter read for its value and never written (reading one's own output back
    # is how tests check a store, not a computation)
    written = {
        base_name(n)
        for s in kernel.body
        for n in walk(s)
        if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store)
    }
    written |= {
        n.args[0].id
        for s in kernel.body
        for n in walk(s)
        if isinstance(n, ast.Call)
        and (wp_attr(n) or "").startswith(WRITERS)
        and n.args
        and isinstance(n.args[0], ast.Name)
    }
    only_where = targets(kernel)
    reads = any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in params - written and id(n) not in only_where
        for s in kernel.body
        for n in walk(s)
    )
    return writes and reads


def targets(kernel: ast.FunctionDef) -> set[int]:
    """ids of the parameter names that only say where a write goes or how large an array is:
    ``out`` in ``out[i] = x``, ``wp.atomic_add(out, i, x)``, ``wp.tile_store(out, t)``, ``a.shape``."""
    out = set()
    for node in (n for s in kernel.body for n in walk(s)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            out.add(id(node.value))
        elif isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name):
            out.add(id(node.value))
        elif (
            isinstance(node, ast.Call)
            and (wp_attr(node) or "").startswith(WRITERS)
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            out.add(id(node.args[0]))
    return out


def testing_comment(text: str) -> bool:
    return bool(TESTING.search(text))


# ---------------------------------------------------------------------------------------------
# kernels of tests that only probe a feature

PROBE_WORDS = frozenset(
    {"noop", "probe", "dummy", "trivial", "eager", "generic", "use", "check", "foo", "bar", "baz", "repro", "slow", "spin", "sleep"}
)
# what a test's docstring says when it states the property checked, not what the kernel computes
CLAIM = re.compile(r"\b(must|should|ensures?|regression|repro(duces?)?|bug|issue)\b", re.IGNORECASE)
NOT_COMPUTING = frozenset(
    {"tid", "tile_load", "tile_store", "float", "int", "float32", "float64", "float16", "int32", "uint32", "int64"}
)


def probe(kernel: ast.FunctionDef) -> str | None:
    """Why a kernel of Warp's tests reads as a test probe rather than code that computes
    something, or None: a name that says it (``noop_kernel``, ``..._use_float32``), results
    stored at fixed slots (``out[0] = ...``, ``out[1] = ...``), or nothing computed between
    load and store (a copy)."""
    words = set(kernel.name.lower().split("_"))
    if words & PROBE_WORDS or kernel.name.startswith("op_") or re.search(r"(kernel|_)\d+$|^gh\d", kernel.name):
        return "named as a probe"
    for node in (n for s in kernel.body for n in walk(s)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if all(isinstance(i, ast.Constant) for i in index):
                return "stores results at fixed slots"
    work = sum(
        isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.AugAssign))
        or isinstance(n, ast.Call) and call_name(n) not in NOT_COMPUTING
        for s in kernel.body
        for n in walk(s)
    )
    return None if work else "computes nothing between load and store"


def test_name(name: str) -> str:
    """The name a test's kernel would have in code that is not a test: ``_kernel`` dropped
    (``conditional_counter_kernel`` -> ``conditional_counter``)."""
    return name[: -len("_kernel")] if name.endswith("_kernel") and len(name) > len("_kernel") + 3 else name


def claims(doc: str) -> bool:
    """A test's docstring states what the test checks (``... must not depend on ...``)."""
    return bool(CLAIM.search(doc))


# ---------------------------------------------------------------------------------------------
# words about code the module does not hold

CODE_NAME = re.compile(r"`+([A-Za-z_][\w.]*)`+|\b(_?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)\b|\b(_[A-Za-z]\w*)\b")


def foreign(text: str, known: set[str]) -> bool:
    """True if ``text`` names code the module does not define: another function of the seed's
    file (``As _match_vertex_buckets``), a caller's tape. Warp's own names (``wp.``) are known."""
    import warp as wp

    for m in CODE_NAME.finditer(text):
        name = next(g for g in m.groups() if g)
        if name.startswith(("wp.", "warp.")) or name.split(".")[0] in known or hasattr(wp, name):
            continue
        if len(name) <= 4 and not name.startswith("_"):  # a symbol of a formula (``d_A``), not code
            continue
        return True
    return False


def drop_foreign(unit) -> None:
    """Leave out the docstring paragraphs and comments of a seed that speak of code outside the
    mutant's module: a reader of the module could not tell what they mean."""
    known = unit.taken()
    body = unit.kernel.body
    if body and is_docstring(body[0]):
        paragraphs = [p for p in re.split(r"\n\s*\n", body[0].value.value.strip())]
        kept = []
        for p in paragraphs:
            if foreign(p, known):
                break  # later paragraphs lean on the ones before
            kept.append(p)
        if not kept:
            body.pop(0)
            if not body:
                body.append(ast.Pass())
        elif len(kept) < len(paragraphs):
            body[0].value.value = "\n\n".join(kept)
    for _, note in unit.notes.statements.values():
        note.comments = [c for c in note.comments if not foreign(c, known)]
        if note.trailing and foreign(note.trailing, known):
            note.trailing = None
