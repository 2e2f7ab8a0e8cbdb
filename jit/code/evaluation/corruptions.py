"""Seeded corruptions of reference code: what a harness that scores by running must catch.

A wrong translation usually differs from the right one in a small way: an operator changed, a
statement dropped, an index shifted, a gradient term removed. ``corrupt(text, language, kind,
rng)`` makes one such change at a place drawn from ``rng`` (None when the text has no place for
that kind), so the tests and ``jit/benchmarks/eval_harness.py`` can check that such predictions
fail run-and-match. Only live code is changed: a statement whose value is read later, a store, a
call; Warp's generated code computes values nothing reads (a shape tuple, an address a later
load takes again), and changing those changes nothing any run could see. Python is changed through its syntax tree, C++ and CUDA through Warp's
generated statement forms (``var_3 = wp::add(var_1, var_2);``). What it leaves out: scoring.
"""

from __future__ import annotations

import ast
import random
import re

KINDS = ("operator", "statement", "index", "gradient")
_SWAP_OPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_SWAP_CALLS = {"add": "sub", "sub": "add", "mul": "div", "div": "mul", "min": "max", "max": "min"}
_CPP_CALL = re.compile(r"\bwp::(add|sub|mul|div|min|max)\(")
_CPP_ASSIGN = re.compile(r"^[ \t]*(var_\d+|wp::array_store|wp::atomic_add|wp::atomic_sub)\b.*;[ \t]*$", re.MULTILINE)
_CPP_INDEX = re.compile(r"\bwp::(address|array_store|atomic_add|atomic_sub)\((var_\w+), (var_\d+)")
_CPP_ADJ = re.compile(r"^[ \t]*(wp::adj_\w+|adj_\w+)\(.*\);[ \t]*$", re.MULTILINE)


def corrupt(text: str, language: str, kind: str, rng: random.Random, forward_only: bool = False) -> str | None:
    """``text`` with one ``kind`` of corruption, or None where it has none to make.

    ``forward_only`` keeps generated code's adjoint functions (``adj_*``) untouched: a run that
    compares no gradients never executes them, so a change there cannot be seen by running.
    """
    if language == "python":
        return _python(text, kind, rng)
    if forward_only and kind == "gradient":
        return None
    return _generated(text, kind, rng, _adjoint_spans(text) if forward_only else [])


_ADJOINT_HEAD = re.compile(r"^(?:static )?(?:CUDA_CALLABLE )?void adj_\w+\(", re.MULTILINE)


def _adjoint_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each generated adjoint function: its head to the first ``}`` line after it."""
    spans = []
    for m in _ADJOINT_HEAD.finditer(text):
        end = text.find("\n}", m.start())
        spans.append((m.start(), len(text) if end < 0 else end + 2))
    return spans


# ---------------------------------------------------------------------------------------------
# Python: in the kernel's body (the last @wp.kernel of the text)


def _kernel(tree: ast.Module) -> ast.FunctionDef | None:
    kernels = [n for n in tree.body if isinstance(n, ast.FunctionDef)
               and any("kernel" in ast.unparse(d) for d in n.decorator_list)]
    return kernels[-1] if kernels else None


def _python(text: str, kind: str, rng: random.Random) -> str | None:
    tree = ast.parse(text)
    kernel = _kernel(tree)
    if kernel is None:
        return None
    nodes = list(ast.walk(kernel))
    if kind == "operator":
        places = [n for n in nodes if isinstance(n, (ast.BinOp, ast.AugAssign)) and type(n.op) in _SWAP_OPS]
        if not places:
            return None
        node = rng.choice(places)
        node.op = _SWAP_OPS[type(node.op)]()
    elif kind == "statement":
        loaded = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        places = [(body, s) for n in nodes for body in _bodies(n) for s in body
                  if isinstance(s, (ast.Assign, ast.AugAssign, ast.Expr)) and len(body) > 1
                  and not _is_docstring(s) and _has_effect(s, loaded)]
        if not places:
            return None
        body, stmt = rng.choice(places)
        body.remove(stmt)
    elif kind == "index":
        places = [n for n in nodes if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                  and isinstance(n.slice, ast.Name)]
        if not places:
            return None
        node = rng.choice(places)
        node.slice = ast.BinOp(node.slice, ast.Add(), ast.Constant(1))
    else:
        return None  # the Python text has no gradient terms of its own
    return ast.unparse(tree) + "\n"


def _has_effect(stmt: ast.stmt, loaded: set[str]) -> bool:
    """A store into an array or a value the kernel reads: dropping anything else changes nothing."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return len(names) < len(targets) or any(n in loaded for n in names)


def _bodies(node: ast.AST):
    for field in ("body", "orelse"):
        body = getattr(node, field, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            yield body


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


# ---------------------------------------------------------------------------------------------
# Warp's generated C++ and CUDA


def _read_later(text: str, at: int, line: str) -> bool:
    """Whether the temporary a generated statement assigns is read later in its function (Warp
    emits values nothing reads, e.g. a shape tuple or an address a later load recomputes:
    changing those changes nothing a run can see). Stores and calls without a result count."""
    m = re.match(r"\s*(var_\d+)\s*=", line)
    if m is None:
        return True
    end = text.find("\n}", at)
    return re.search(rf"\b{m.group(1)}\b", text[at:len(text) if end < 0 else end]) is not None


def _generated(text: str, kind: str, rng: random.Random, skip: list[tuple[int, int]]) -> str | None:
    def outside(matches):
        live = []
        for m in matches:
            if any(a <= m.start() < b for a, b in skip):
                continue
            line_start, line_end = text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.start())
            line_end = len(text) if line_end < 0 else line_end
            if _read_later(text, line_end, text[line_start:line_end]):
                live.append(m)
        return live

    if kind == "operator":
        places = outside(_CPP_CALL.finditer(text))
        if not places:
            return None
        m = rng.choice(places)
        return text[:m.start(1)] + _SWAP_CALLS[m.group(1)] + text[m.end(1):]
    if kind == "statement":
        places = [m for m in outside(_CPP_ASSIGN.finditer(text)) if "builtin_tid" not in m.group(0)
                  and " = _wp_args->" not in m.group(0) and not m.group(0).lstrip().startswith("const")]
        if not places:
            return None
        m = rng.choice(places)
        return text[:m.start()] + text[m.end():]
    if kind == "index":
        places = outside(_CPP_INDEX.finditer(text))
        if not places:
            return None
        m = rng.choice(places)
        return text[:m.end(3)] + " + 1" + text[m.end(3):]
    places = list(_CPP_ADJ.finditer(text))  # gradient: an adjoint call of the reverse pass dropped
    if not places:
        return None
    m = rng.choice(places)
    return text[:m.start()] + text[m.end():]
