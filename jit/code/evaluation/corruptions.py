"""Seeded corruptions of reference code: what a harness that scores by running must catch.

A wrong translation usually differs from the right one in a small way: an operator changed, a
statement dropped, an index shifted, a gradient term removed. ``corrupt(text, language, kind,
rng)`` makes one such change at a place drawn from ``rng`` (None when the text has no place for
that kind), so the tests and ``jit/benchmarks/eval_harness.py`` can check that such predictions
fail run-and-match. Only code a run can see is changed, as a wrong translation would change it:

- in generated code, a statement that acts (a store, an atomic, a call of a helper that does
  something, a branch) or whose value reaches one (``Liveness``). Warp emits values nothing
  reads (a shape tuple, an address a later load takes again) and wraps a negative tile index
  (``i < 0 ? i + n : i``) even for a thread index, which is never negative;
- an operator whose swap changes the value: not ``x + 0`` for ``x - 0``, nor ``0 * x`` for ``0 / x``
  (real kernels write ``+ 0.0 * t`` to keep a value in the graph).

Python is changed through its syntax tree, C++ and CUDA through Warp's generated statement forms
(``var_3 = wp::add(var_1, var_2);``). A change may still be invisible on the inputs a run has (a
branch no input set takes, a value that is zero for every input drawn): that is what the
harness measures. What it leaves out: scoring.
"""

from __future__ import annotations

import ast
import random
import re

KINDS = ("operator", "statement", "index", "gradient")
_SWAP_OPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_CASTS = {"float", "int", "float16", "float32", "float64", "int8", "int16", "int32", "int64"}
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
    unseen = _in_noop_calls(tree, kernel)
    nodes = [n for n in ast.walk(kernel) if id(n) not in unseen]
    if kind == "operator":
        places = [n for n in nodes if isinstance(n, (ast.BinOp, ast.AugAssign)) and type(n.op) in _SWAP_OPS
                  and not _same_swapped(n)]
        if not places:
            return None
        node = rng.choice(places)
        node.op = _SWAP_OPS[type(node.op)]()
    elif kind == "statement":
        loaded = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        places = [(body, s) for n in nodes for body in _bodies(n) for s in body
                  if isinstance(s, (ast.Assign, ast.AugAssign, ast.Expr)) and len(body) > 1
                  and id(s) not in unseen and not _is_docstring(s) and _has_effect(s, loaded)]
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


def _in_noop_calls(tree: ast.Module, kernel: ast.FunctionDef) -> set[int]:
    """ids of the nodes in and under a call of a ``@wp.func`` whose body does nothing (``pass``):
    what such a call is given, and the statement that only makes it, change nothing."""
    noop = {f.name for f in tree.body if isinstance(f, ast.FunctionDef) and f is not kernel
            and any(ast.unparse(d).endswith("func") for d in f.decorator_list)
            and all(isinstance(s, ast.Pass) or _is_docstring(s) for s in f.body)}
    out = set()
    for node in ast.walk(kernel):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) in noop:
            out.update(id(n) for n in ast.walk(node))
    return out


def _has_effect(stmt: ast.stmt, loaded: set[str]) -> bool:
    """A store into an array or a value the kernel reads: dropping anything else changes nothing."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return len(names) < len(targets) or any(n in loaded for n in names)


def _same_swapped(node: ast.BinOp | ast.AugAssign) -> bool:
    """Whether swapping the operator keeps the value: ``x + 0`` and ``x - 0``, ``0 * x`` and ``0 / x``."""
    if isinstance(node.op, (ast.Add, ast.Sub)):
        return _is_zero(node.right if isinstance(node, ast.BinOp) else node.value)
    return isinstance(node, ast.BinOp) and _is_zero(node.left)


def _is_zero(node: ast.AST) -> bool:
    """A literal zero or a product with one: ``x + 0.0 * t`` and ``x - 0.0 * t`` are the same value."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and node.value == 0
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:  # float(0.0), wp.float32(0)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        return name in _CASTS and _is_zero(node.args[0])
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and (_is_zero(node.left) or _is_zero(node.right))


def _bodies(node: ast.AST):
    for field in ("body", "orelse"):
        body = getattr(node, field, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            yield body


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


# ---------------------------------------------------------------------------------------------
# Warp's generated C++ and CUDA

_TEMP = re.compile(r"\bvar_\d+\b")
_DEF = re.compile(r"^(var_\d+) = (.*);$")
_DECL = re.compile(r"^(?!return\b|goto\b)(?:const )?[\w:]+(?:<.*>)?[ *&]+(var_\w+)(?: = (.*))?;$")
_ZERO = re.compile(r"^-?0(?:\.0*)?f?$")
# right-hand sides whose statement acts whatever reads its value: a store, an atomic, a random
# draw (it advances its state), a call of a helper (Warp numbers them: ``falloff_0``)
_ACTS = re.compile(r"\bwp::(?:atomic_\w+|array_store|assign\w*|rand\w*|tile_store\w*|tile_atomic\w*|print\w*)\(")
_HELPER_CALL = re.compile(r"(?<!::)\b(\w+_\d+)\(")  # Warp numbers helpers: falloff_0
_CONTROL = re.compile(r"^(?:if \(.*\) (?:\{|goto \w+;)|\} else \{|else \{|goto \w+;|\w+:;|return(?: .*)?;|"
                      r"(?:for|while) \(.*\) \{|break;|continue;)$")
# adjoints of sums, negations, copies and casts: Warp passes them the primal values, which they never read
_LINEAR_ADJOINT = re.compile(r"^wp::adj_(?:add|sub|neg|copy|float\d*|int\d*|uint\d*)\((?:[^()]|\([^()]*\))*\);$")
_PASS_ON = re.compile(r"^wp::(?:copy|neg|float\d*|int\d*|uint\d*)\((var_\d+)\)$")  # zero in, zero out


def _functions(text: str) -> list[tuple[str, int, int]]:
    """(name, start, end) of each generated function: its body runs from a ``{`` line to the next
    line that starts at the margin (``}``, or a native snippet's last line)."""
    out = []
    for m in re.finditer(r"^\{\n", text, re.MULTILINE):
        head = m.start()
        while head > 0:  # back over the indented parameter lines to the signature's first line
            head = text.rfind("\n", 0, head - 1) + 1
            if text[head:head + 1] not in (" ", "\t"):
                break
        name = re.search(r"(\w+)\(", text[head:m.start()])
        end = re.compile(r"^\S.*$", re.MULTILINE).search(text, m.end())
        out.append((name.group(1) if name else "", m.end(), end.end() if end else len(text)))
    return out


def _statements(body: str, at: int):
    """(offset, statement) of each line of code in a body: no comments, braces or blank lines."""
    for line in body.splitlines(keepends=True):
        s = line.strip()
        if s and not s.startswith(("//", "#")) and s not in ("{", "}"):
            yield at, s
        at += len(line)


def _declaration(s: str) -> re.Match | None:
    return None if s.startswith("var_") else _DECL.match(s)


def _acts(code: str, pure: set[str]) -> bool:
    """Whether evaluating ``code`` does something besides giving a value: a store, an atomic, a
    random draw (it advances its state), a call of a helper that is not pure."""
    return bool(_ACTS.search(code)) or any(name not in pure for name in _HELPER_CALL.findall(code))


def _pure_helpers(text: str, functions: list[tuple[str, int, int]]) -> set[str]:
    """Helpers that only compute a value: every statement declares, assigns a temporary without
    acting, branches or returns (a write through a pointer parameter or native code is none of
    these). A pure helper called for nothing, or whose value is not used, changes nothing."""
    pure = {name for name, _, _ in functions if _HELPER_CALL.fullmatch(name + "(")}
    changed = True
    while changed:
        changed = False
        for name, a, b in functions:
            if name in pure and not all(_declaration(s) or _CONTROL.match(s) or (_DEF.match(s) and not _acts(s, pure))
                                        for _, s in _statements(text[a:b], a)):
                pure.discard(name)
                changed = True
    return pure


class Liveness:
    """Which statements of Warp's generated code can change what a run sees.

    Per function: a statement acts (a store, an atomic, a call of a helper that is not pure, a
    branch, a return) or assigns a temporary; a temporary is live when an acting statement reads
    it, directly or through live temporaries. Not live: a value nothing reads, a call of a pure
    helper (``_pure_helpers``) whose value nothing reads, a primal value an adjoint replays only
    to hand to the adjoint of a sum or a cast (which never reads it), a value multiplied by zero, and the
    wrap of a negative index (``wp::where(i < 0, i + n, i)``) when ``i`` is a thread index, which
    a launch never makes negative. Zero temporaries (a constant ``0.0``, a product with one) are
    recorded so that ``x + 0`` is not swapped for the same ``x - 0``.
    """

    def __init__(self, text: str):
        functions = _functions(text) or [("", 0, len(text))]  # a snippet: one body
        pure = _pure_helpers(text, functions)
        self.live_lines: set[int] = set()  # start offsets of statements that can change outputs
        self.zero: dict[int, set[str]] = {}  # function start -> its zero temporaries
        self.spans = [(a, b) for _, a, b in functions]
        for _, a, b in functions:
            self._function(text, a, b, pure)

    def function_at(self, at: int) -> int | None:
        return next((a for a, b in self.spans if a <= at < b), None)

    def _function(self, text: str, start: int, end: int, pure: set[str]) -> None:
        reads: dict[str, set[str]] = {}
        lines: list[tuple[int, str | None]] = []  # (offset, the temporary it assigns, or None: it acts)
        zero, tids, negative, roots = set(), set(), set(), set()
        for at, s in _statements(text[start:end], start):
            decl = _declaration(s)
            if decl:
                if decl.group(2) is not None and _ZERO.match(decl.group(2)):
                    zero.add(decl.group(1))
                continue
            temps = set(_TEMP.findall(s))
            if "builtin_tid" in s:
                tids |= temps
            d = _DEF.match(s)
            if d is None or _acts(d.group(2), pure):
                if d is None and re.fullmatch(r"(\w+)\(.*\);", s) and not _acts(s, pure) and _HELPER_CALL.match(s):
                    continue  # a pure helper's call whose value nothing takes
                roots |= set() if _LINEAR_ADJOINT.match(s) else temps
                lines.append((at, None))
                continue
            var, rhs = d.groups()
            used = set(_TEMP.findall(rhs))
            where = re.match(r"^wp::where\((var_\d+), (var_\d+), (var_\d+)\)$", rhs)
            if where and where.group(1) in negative and where.group(3) in tids:
                used = {where.group(3)}  # the thread index itself: i < 0 and i + n are never used
            test = re.match(r"^\((var_\d+) < (var_\d+)\)$", rhs)
            if test and test.group(1) in tids and test.group(2) in zero:
                negative.add(var)
            mul = re.match(r"^wp::mul\((var_\w+), (var_\w+)\)$", rhs)
            passed = _PASS_ON.match(rhs)
            if mul and (mul.group(1) in zero or mul.group(2) in zero):
                zero.add(var)
                used = set()  # zero whatever the other factor is
            elif passed and passed.group(1) in zero:
                zero.add(var)
            reads.setdefault(var, set()).update(used)
            lines.append((at, var))
        live, todo = set(), list(roots)
        while todo:
            var = todo.pop()
            if var not in live:
                live.add(var)
                todo.extend(reads.get(var, ()))
        self.live_lines.update(at for at, var in lines if var is None or var in live)
        self.zero[start] = zero


def _zero_operand(text: str, m: re.Match, zero: set[str]) -> bool:
    """Whether the swap keeps the value: ``wp::add(x, 0)`` and ``wp::sub(x, 0)``, ``wp::mul(0, x)``
    and ``wp::div(0, x)``."""
    if m.group(1) not in ("add", "sub", "mul", "div"):
        return False
    depth, at = 0, m.end()
    for n, ch in enumerate(text[at:at + 400]):
        depth += ch == "("
        if ch == ")" and depth == 0:
            args = [a.strip() for a in text[at:at + n].split(",")]
            return len(args) == 2 and args[1 if m.group(1) in ("add", "sub") else 0] in zero
        depth -= ch == ")"
    return False


def _generated(text: str, kind: str, rng: random.Random, skip: list[tuple[int, int]]) -> str | None:
    flow = Liveness(text)

    def outside(matches):
        live = []
        for m in matches:
            if any(a <= m.start() < b for a, b in skip):
                continue
            if text.rfind("\n", 0, m.start()) + 1 in flow.live_lines:
                live.append(m)
        return live

    if kind == "operator":
        places = [m for m in outside(_CPP_CALL.finditer(text))
                  if not _zero_operand(text, m, flow.zero.get(flow.function_at(m.start()), set()))]
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
