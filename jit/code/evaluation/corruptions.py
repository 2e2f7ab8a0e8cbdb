"""Seeded corruptions of reference code: what a harness that scores by running must catch.

A wrong translation usually differs from the right one in a small way: an operator changed, a
statement dropped, an index shifted, a gradient term removed. ``corrupt(text, language, kind,
rng)`` makes one such change at a place drawn from ``rng`` (None when the text has no place for
that kind), so the tests and ``jit/benchmarks/eval_harness.py`` can check that such predictions
fail run-and-match. Only code a run can see is changed, as a wrong translation would change it:

- in generated code, a statement that acts (a store, an atomic, a call of a helper that does
  something, a branch) or whose value reaches one (``Liveness``). Warp emits values nothing
  reads (a shape tuple, an address a later load takes again) and wraps a negative tile index
  (``i < 0 ? i + n : i``) even for a thread index, which is never negative. Nor: a block its
  own constants rule out (an unrolled loop's ``continue`` for another index), a value handed back
  through ``ret_k`` to callers that never read it, an assignment of zero (a default construction,
  a part of one) to a vector or struct whose declaration already holds it, outside loops;
- an adjoint call that can change a gradient a run compares (``AdjointFlow``): not one whose
  adjoints reach only integers, constants or scalars (no float array's gradient), nor the
  ``adj_atomic_add`` of a struct of which the code holds no array;
- an operator whose swap changes the value: not ``x + 0`` for ``x - 0``, nor ``0 * x`` for ``0 / x``
  (real kernels write ``+ 0.0 * t`` to keep a value in the graph);
- in Python, not a struct field's store of zero right after the struct's construction.

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


def corrupt(text: str, language: str, kind: str, rng: random.Random, forward_only: bool = False,
            context: str = "") -> str | None:
    """``text`` with one ``kind`` of corruption, or None where it has none to make.

    ``forward_only`` keeps generated code's adjoint functions (``adj_*``) untouched: a run that
    compares no gradients never executes them, so a change there cannot be seen by running.
    ``context`` is the rest of the module's generated code the text is built with (Warp's backward
    kernel, for a forward): it is read, never changed.
    """
    if language == "python":
        return _python(text, kind, rng)
    if forward_only and kind == "gradient":
        return None
    return _generated(text, kind, rng, _adjoint_spans(text) if forward_only else [], context)


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
        structs = {c.name for c in tree.body if isinstance(c, ast.ClassDef)
                   and any(ast.unparse(d).endswith("struct") for d in c.decorator_list)}
        places = [(body, s) for n in nodes for body in _bodies(n) for k, s in enumerate(body)
                  if isinstance(s, (ast.Assign, ast.AugAssign, ast.Expr)) and len(body) > 1
                  and id(s) not in unseen and not _is_docstring(s) and _has_effect(s, loaded)
                  and not _zero_after_construction(body[:k], s, structs)]
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


def _zero_after_construction(before: list[ast.stmt], stmt: ast.stmt, structs: set[str]) -> bool:
    """``s.x = 0.0`` right after ``s = S()`` (a ``@wp.struct``, whose fields start at zero), with
    only other fields of ``s`` set to zero between: the store keeps the value the field holds."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute)
            and isinstance(stmt.targets[0].value, ast.Name) and _is_zero(stmt.value)):
        return False
    name = stmt.targets[0].value.id
    for prior in reversed(before):
        if isinstance(prior, ast.Assign) and len(prior.targets) == 1:
            target = prior.targets[0]
            if isinstance(target, ast.Name) and target.id == name:
                call = prior.value
                return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in structs \
                    and not call.args and not call.keywords
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == name \
                    and target.attr != stmt.targets[0].attr and _is_zero(prior.value):
                continue
        return False
    return False


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
    to hand to the adjoint of a sum or a cast (which never reads it) or to a product's, quotient's
    or power's for an adjoint no compared gradient needs (``AdjointFlow``), an adjoint call that
    changes no compared gradient, a value multiplied by zero, and the
    wrap of a negative index (``wp::where(i < 0, i + n, i)``) when ``i`` is a thread index, which
    a launch never makes negative. Zero temporaries (a constant ``0.0``, a product with one) are
    recorded so that ``x + 0`` is not swapped for the same ``x - 0``.
    """

    def __init__(self, text: str, context: str = ""):
        functions = _functions(text) or [("", 0, len(text))]  # a snippet: one body
        pure = _pure_helpers(text, functions)
        self.adjoints = AdjointFlow(text, context)
        self.live_lines: set[int] = set()  # start offsets of statements that can change outputs
        self.made_zero: set[int] = set()  # start offsets of assignments of a default construction or a part of one
        self.zero: dict[int, set[str]] = {}  # function start -> its zero temporaries
        self.spans = [(a, b) for _, a, b in functions]
        unread = _unread_returns(text, context)
        for name, a, b in functions:
            self._function(text, a, b, pure, {p for f, p in unread if f == name})

    def function_at(self, at: int) -> int | None:
        return next((a for a, b in self.spans if a <= at < b), None)

    def _function(self, text: str, start: int, end: int, pure: set[str], unread: set[str] = frozenset()) -> None:
        reads: dict[str, set[str]] = {}
        lines: list[tuple[int, str | None]] = []  # (offset, the temporary it assigns, or None: it acts)
        zero, tids, negative, roots = set(), set(), set(), set()
        made = set()  # temporaries holding a default construction, or a part of one: zero
        never = _never_run(text, start, end)
        for at, s in _statements(text[start:end], start):
            if any(a <= at < b for a, b in never):
                continue
            decl = _declaration(s)
            if decl:
                if decl.group(2) is not None and _ZERO.match(decl.group(2)):
                    zero.add(decl.group(1))
                continue
            temps = set(_TEMP.findall(s))
            if "builtin_tid" in s:
                tids |= temps
            d = _DEF.match(s)
            part = _PART_OF.match(d.group(2)) if d else None
            built = _BUILT.match(d.group(2)) if d else None
            if d and (_DEFAULT_MADE.match(d.group(2)) or part and part.group(1) in made
                      or built and set(_TEMP.findall(built.group(1))) <= zero | made):
                made.add(d.group(1))
                self.made_zero.add(at)
            else:  # anything else may change what it is given in place
                made -= temps
            if d is None or _acts(d.group(2), pure):
                if d is None and re.fullmatch(r"(\w+)\(.*\);", s) and not _acts(s, pure) and _HELPER_CALL.match(s):
                    continue  # a pure helper's call whose value nothing takes
                ret = re.match(r"^(ret_\w+) = var_\w+;$", s)
                if ret and ret.group(1) in unread:
                    continue  # a value handed back to callers that never read it
                adjoint = _ADJ_CALL.match(s)
                if adjoint and at not in self.adjoints.live_calls:
                    continue  # it changes no gradient a run compares: what it reads does not matter
                if _LINEAR_ADJOINT.match(s):
                    pass
                elif adjoint and adjoint.group(1) == "adj_mul" and len(args := _split_args(adjoint.group(2))) == 5:
                    live_adj = self.adjoints.live.get(start, set())
                    # adj_a += b * adj_ret, adj_b += a * adj_ret: a factor is read for the other's adjoint
                    roots |= ({args[1]} if args[2] in live_adj else set()) | ({args[0]} if args[3] in live_adj else set())
                elif adjoint and adjoint.group(1) == "adj_div" and len(args := _split_args(adjoint.group(2))) == 6:
                    # adj_a += adj_ret / b; a and the quotient are read only for adj_b
                    roots |= {args[1]} | ({args[0], args[2]} if args[4] in self.adjoints.live.get(start, set()) else set())
                elif adjoint and adjoint.group(1) == "adj_pow" and len(args := _split_args(adjoint.group(2))) == 6:
                    # adj_a += b * pow(a, b - 1) * adj_ret; the power is read only for adj_b
                    live_adj = self.adjoints.live.get(start, set())
                    roots |= ({args[0], args[1]} if args[3] in live_adj else set()) | \
                        ({args[0], args[2]} if args[4] in live_adj else set())
                else:
                    roots |= temps
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


# ``T()`` of a type (not a helper: Warp numbers those, ``falloff_0()``), and a part of a value
_DEFAULT_MADE = re.compile(r"^[\w:]+(?:<[^;]*>)?\(\)$(?<!_\d\(\))(?<!_\d\d\(\))")
_BUILT = re.compile(r"^wp::(?:vec_t|mat_t|quat_t|transform_t)<[^;]*>\(((?:var_\d+, )*var_\d+)\)$")  # from components
_PART_OF = re.compile(r"^wp::(?:transform_get_translation|transform_get_rotation|extract|copy|neg)\((var_\d+)(?:, [^()]*)?\)$")
# types whose default constructor sets every component to zero: Warp's vectors, matrices,
# quaternions and transforms, and structs (their fields are)
_ZEROED = re.compile(r"^(?:wp::)?(?:vec_t|mat_t|quat_t|transform_t|spatial_vector_t|spatial_matrix_t)<|^\w+_[0-9a-f]{8}$")
_LABEL = re.compile(r"^[ \t]*(\w+):;[ \t]*$", re.MULTILINE)
_DEFAULT = re.compile(r"^[ \t]*(var_\d+) = ([\w:]+(?:<[^;]*>)?)\(\);[ \t]*$", re.MULTILINE)


def _constructed(text: str, zeros: set[int] = frozenset()) -> set[int]:
    """Start offsets of the statements ``var_3 = T();`` whose temporary was declared ``T var_3;``,
    outside any loop: the declaration already ran the same default constructor, so dropping the
    assignment keeps the value (``wp.transform()``, a struct's ``S()``). In a loop it would not:
    the assignment resets what an earlier iteration changed. Also those of ``zeros`` (a part of
    a default construction, ``Liveness.made_zero``) whose temporary is declared with a type
    whose default constructor gives zero (a vector, a struct), outside any loop."""
    loops = []  # (start, end) of each loop: a label to the last goto back to it
    for m in _LABEL.finditer(text):
        back = text.rfind(f"goto {m.group(1)};")
        if back > m.start():
            loops.append((m.start(), back))
    starts = [a for _, a, _ in _functions(text)] or [0]
    out = set()
    for m in _DEFAULT.finditer(text):
        var, kind = m.groups()
        body = max((a for a in starts if a <= m.start()), default=0)  # the function it is in
        decl = re.compile(rf"^[ \t]*{re.escape(kind)} {var};[ \t]*$", re.MULTILINE).search(text, body, m.start())
        if decl and not any(a <= m.start() < b for a, b in loops):
            out.add(m.start())
    for at in zeros:
        var = re.match(r"[ \t]*(var_\d+) = ", text[at:])
        body = max((a for a in starts if a <= at), default=0)
        decl = var and re.compile(rf"^[ \t]*((?:const )?[\w:]+(?:<[^;]*>)?) {var.group(1)};[ \t]*$",
                                  re.MULTILINE).search(text, body, at)
        if decl and _ZEROED.match(decl.group(1).removeprefix("const ")) and not any(a <= at < b for a, b in loops):
            out.add(at)
    return out


_INT_TYPE = re.compile(r"^(?:wp::)?(?:u?int\d*|bool)$")
_HOLDER = re.compile(r"^(?:wp::)?(?:array_t|indexedarray_t|tile_\w+)<((?:wp::)?\w+)[,>]")  # its element type first
_ADJ_TYPED = re.compile(r"([\w:]+(?:<[^;()]*>)?)[ \t]*&?[ \t]*(adj_\w+)\b(?=[ \t]*(?:=|,|\)|;|\{))")


def _is_integer(kind: str) -> bool:
    """Whether a C++ type holds integers: a scalar, or an array or tile of them."""
    kind = kind.removeprefix("const ").strip()
    holder = _HOLDER.match(kind)
    return bool(_INT_TYPE.match(holder.group(1) if holder else kind))
_ADJ_ARG = re.compile(r"\badj_\w+\b")
_HELPER_NAME = re.compile(r"^adj_\w+_\d+$")


def _adjoint_types(text: str) -> list[tuple[int, dict[str, bool]]]:
    """(function end, {adjoint name: integer?}) per generated function: from its parameters
    (``wp::int32 & adj_idx``) and declarations (``wp::float32 adj_3 = {};``)."""
    out, head = [], 0
    for _, a, b in _functions(text):
        kinds = {m.group(2): _is_integer(m.group(1)) for m in _ADJ_TYPED.finditer(text, head, b)}
        out.append((b, kinds))
        head = b
    return out


def _call_kinds(text: str, types: list[tuple[int, dict[str, bool]]], m: re.Match) -> list[bool | None]:
    """Whether each adjoint argument of the call ``m`` is an integer (None: not known)."""
    kinds = next((k for end, k in types if m.start() < end), {})
    call = m.group(0)
    args = call[call.index("(") + 1:]
    # a helper's adjoint passed by name (``adj_f_0`` to ``adj_tile_map``) is a function, not a value
    return [kinds.get(name) for name in _ADJ_ARG.findall(args) if name in kinds or not _HELPER_NAME.match(name)]


def _mixes(text: str) -> bool:
    """Whether some adjoint call of ``text`` may pass an integer adjoint on to a float one: a
    call whose incoming adjoint (the last argument) is an integer's and which writes a float's
    (``adj_int32(x, adj_x, adj_ret)`` for a float ``x``), or one with an integer adjoint and an
    adjoint whose type is not known. A helper's adjoint is such a call too, whatever its body."""
    if not text:
        return False
    types = _adjoint_types(text)
    for m in _CPP_ADJ.finditer(text):
        kinds = _call_kinds(text, types, m)
        if any(k is None for k in kinds) and any(kinds):
            return True
        if kinds and kinds[-1] and any(k is False for k in kinds[:-1]):
            return True
    return False


_ADJ_CALL = re.compile(r"^(?:wp::)?(adj_\w+)\((.*)\);$")
_ADJ_SET = re.compile(r"^(adj_\w+) \+?= (.*);$")
_ADJ_NAME = re.compile(r"^adj_\w+$")
_ADJ_DECL = re.compile(r"^(?:const )?[\w:]+(?:<.*>)?[ \t&*]+adj_\w+[ \t]*(?:=[ \t]*\{\}|\{\}|= _wp_\w*args->\w+)?;$")
_FLOAT_ARRAY = re.compile(r"^(?:const )?(?:wp::)?(?:array_t|indexedarray_t)<")


def _split_args(args: str) -> list[str]:
    out, depth, at = [], 0, 0
    for n, ch in enumerate(args):
        depth += ch in "(<[{"
        depth -= ch in ")>]}"
        if ch == "," and depth == 0:
            out.append(args[at:n].strip())
            at = n + 1
    return out + [args[at:].strip()] if args.strip() else out


class AdjointFlow:
    """Which adjoint calls of generated code can change a gradient a run compares.

    A gradient a run compares is a float array's (the kernel's ``adj_<array>``). An adjoint call
    writes all the adjoints it is given but its incoming one (the last; a helper's adjoint: all
    but its ``adj_ret``) and reads the others (the incoming one, and a float one another
    statement writes: a builtin with several results has several incoming); ``adj_3 += adj_ret;``
    writes ``adj_3``. An adjoint is live
    when a live call reads it, and a call is live when it writes a live adjoint or a float
    array's. A helper's adjoint parameter is live when a call of the helper passes it a live
    adjoint; all are when no call is found or the helper is passed by name (to ``tile_map``),
    except integers' where no call may turn an integer adjoint into a float one (``_mixes``).
    An adjoint of unknown type, or one a statement uses some other way, is live. ``context`` is
    code built with the text (Warp's backward kernel): its calls count, its lines are not reported.
    """

    def __init__(self, text: str, context: str = ""):
        self.live_calls: set[int] = set()  # start offsets (in text) of live adjoint calls
        mixes = _mixes(text) or _mixes(context)
        funcs = []  # (source, is text, name, body start, body end, {adjoint: integer?}, [parameter names])
        for source, own in ((text, True), (context, False)) if context else ((text, True),):
            head = 0
            for name, a, b in _functions(source) or [("", 0, len(source))]:  # a snippet: one body
                declared = {m.group(2): m.group(1) for m in _ADJ_TYPED.finditer(source, head, b)}
                funcs.append((source, own, name, a, b, {x: _is_integer(t) for x, t in declared.items()},
                              _params(source[head:a], name), declared))
                head = b
        by_name = {f[2]: k for k, f in enumerate(funcs) if f[2]}
        calls = []  # (function, offset, adjoints read, adjoints written, callee, arguments)
        live: set[tuple[int, str]] = set()  # (function, adjoint)
        passed: set[int] = set()  # helpers passed by name
        unknown: set[tuple[int, int]] = set()  # calls whose adjoints are not plain names: live
        for k, (source, own, name, a, b, kinds, params, declared) in enumerate(funcs):
            for at, stmt in _statements(source[a:b], a):
                if _ADJ_DECL.match(stmt):
                    continue
                names = set(re.findall(r"\badj_\w+\b", stmt))
                call, assign = _ADJ_CALL.match(stmt), _ADJ_SET.match(stmt)
                if call:
                    args = _split_args(call.group(2))
                    passed |= {by_name[x] for x in args if x in by_name and x not in kinds}
                    adj = [x for x in args if _ADJ_NAME.match(x) and x not in by_name]
                    callee = by_name.get(call.group(1))
                    if not adj or any("adj_" in x and not _ADJ_NAME.match(x) for x in args):
                        unknown.add((k, at))  # ``wp::adj_atomic_add(&p->value, t.value)``: not read here
                        live |= {(k, x) for x in names}
                        continue
                    if callee is not None and len(funcs[callee][6]) == len(args):
                        writes = {x for p, x in zip(funcs[callee][6], args) if _ADJ_NAME.match(x)
                                  and p.startswith("adj_") and not p.startswith("adj_ret")}
                    else:
                        callee, writes = None, set(adj[:-1])
                    # it reads its incoming adjoint, and any other that some other statement
                    # writes (a builtin with several results, ``adj_svd3``, has several incoming)
                    calls.append((k, at, set(adj), writes, callee, args))
                    names -= set(adj) | set(by_name)
                elif assign:
                    calls.append((k, at, names - {assign.group(1)}, {assign.group(1)}, None, []))
                    names = set()
                live |= {(k, x) for x in names}  # used some other way
            live |= {(k, x) for x, t in declared.items() if not kinds[x] and _FLOAT_ARRAY.match(t)}  # a gradient
            live |= {(k, x) for x in set().union(*(c[2] for c in calls if c[0] == k)) if x not in kinds}  # not known
        writers: dict[tuple[int, str], set[int]] = {}
        for k, at, _, writes, _, _ in calls:
            for w in writes:
                writers.setdefault((k, w), set()).add(at)
        calls = [(k, at, {x for x in reads if x not in writes or writers[(k, x)] - {at}
                          and funcs[k][5].get(x) is not True}, writes, callee, args)
                 for k, at, reads, writes, callee, args in calls]
        called = {c[4] for c in calls if c[4] is not None}
        for k, f in enumerate(funcs):
            if f[2].startswith("adj_") and (k not in called or k in passed):
                live |= {(k, p) for p in f[6] if p.startswith("adj_") and not p.startswith("adj_ret")
                         and not (f[5].get(p) and not mixes)}
        changed = True
        while changed:
            changed = False
            for k, at, reads, writes, callee, args in calls:
                new = set()
                if callee is not None:  # a helper's parameter is live when what the caller passes is
                    new |= {(callee, p) for p, x in zip(funcs[callee][6], args) if (k, x) in live}
                if any((k, w) in live for w in writes) or (callee is not None and any(
                        (callee, p) in live and x in writes for p, x in zip(funcs[callee][6], args))):
                    new |= {(k, r) for r in reads}
                if new - live:
                    live |= new
                    changed = True
        for k, at, reads, writes, callee, args in calls:
            if funcs[k][1] and (any((k, w) in live for w in writes) or (callee is not None and any(
                    (callee, p) in live and x in writes for p, x in zip(funcs[callee][6], args)))):
                self.live_calls.add(at)
        self.live_calls |= {at for k, at in unknown if funcs[k][1] and not _unused_struct_atomic(funcs[k], text + context)}
        self.live = {f[3]: {x for kk, x in live if kk == k} for k, f in enumerate(funcs) if f[1]}


def _loops(source: str) -> list[tuple[int, int]]:
    """(start, end) of each loop of generated code: a label to the last goto back to it."""
    out = []
    for m in _LABEL.finditer(source):
        back = source.rfind(f"goto {m.group(1)};")
        if back > m.start():
            out.append((m.start(), back))
    return out


def _unread_returns(text: str, context: str = "") -> set[tuple[str, str]]:
    """(adjoint function, ``ret_k`` parameter) pairs whose value no caller reads: a helper's
    adjoint replays its forward and hands the results back through ``ret_k``, but where every
    call passes a temporary that its function does not mention after the call, outside any
    loop, what is handed back is never used. Calls are looked for in ``text`` and ``context``."""
    sources = [text, context] if context else [text]
    spans = {id(src): (_functions(src), _loops(src)) for src in sources}
    out = set()
    for name, a, b in _functions(text):
        if not name.startswith("adj_"):
            continue
        head = text.rfind(name + "(", 0, a)
        params = _params(text[head:a], name) if head >= 0 else []
        rets = [p for p in params if p.startswith("ret_")]
        if not rets:
            continue
        unread, sites = set(rets), 0
        for src in sources:
            functions, loops = spans[id(src)]
            for m in re.finditer(rf"(?<![\w:]){re.escape(name)}\(", src):
                if src.rfind("\n", 0, m.start()) == src.rfind("\n", 0, head) and src is text:
                    continue  # its own signature
                sites += 1
                close = src.find(");", m.end())
                args = _split_args(src[m.end():close])
                end = next((e for _, s0, e in functions if s0 <= m.start() < e), len(src))
                for p, arg in zip(params, args):
                    if p in unread and (not re.fullmatch(r"var_\d+", arg) or len(args) != len(params)
                                        or re.search(rf"\b{arg}\b", src[close:end])
                                        or any(x <= m.start() < y for x, y in loops)):
                        unread.discard(p)
        if sites:
            out |= {(name, p) for p in unread}
    return out


def _unused_struct_atomic(func: tuple, code: str) -> bool:
    """Whether a function is the ``adj_atomic_add(S* p, S t)`` Warp emits with a struct ``S``
    for the gradients of arrays and tiles of ``S``, in code that holds none: nothing calls it."""
    source, _, name, a = func[:4]
    head = source[max(0, source.rfind("\n", 0, max(0, a - 2)) - 400):a]
    m = re.search(r"adj_atomic_add\((\w+)\* p, \1 t\)", head)
    if name != "adj_atomic_add" or not m:
        return False
    return not re.search(rf"(?:array_t|tile_\w*)<(?:[^;]*[<,] *)?{m.group(1)}\b", code)


def _params(header: str, name: str) -> list[str]:
    """The parameter names of a generated function, from its signature."""
    at = header.rfind(name + "(") if name else -1
    if at < 0:
        return []
    inside = header[at + len(name) + 1:header.rfind(")")]
    return [re.findall(r"\w+", p)[-1] for p in _split_args(inside) if re.findall(r"\w+", p)]


_CONST = re.compile(r"^const [\w:]+ (var_\d+) = (-?[\d.]+|true|false);$")
_COMPARE = re.compile(r"^(var_\d+) = \((var_\d+) (==|!=|<|<=|>|>=) (var_\d+)\);$")
_SELECT = re.compile(r"^(var_\d+) = wp::where\((var_\d+), (var_\d+), (var_\d+)\);$")


def _never_run(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the blocks ``if (var_9) {`` of a function whose condition Warp's own
    constants decide to be false (an unrolled loop's ``if q == 2: continue`` for another q): a
    run never executes them. Conditions are followed through comparisons and ``wp::where``."""
    value: dict[str, float | bool] = {}
    out, depth, dead_from = [], 0, None
    at = start
    for line in text[start:end].splitlines(keepends=True):
        s = line.strip()
        c, cmp, sel = _CONST.match(s), _COMPARE.match(s), _SELECT.match(s)
        if c:
            value[c.group(1)] = {"true": True, "false": False}.get(c.group(2)) if c.group(2) in ("true", "false") \
                else float(c.group(2))
        elif cmp and cmp.group(2) in value and cmp.group(4) in value:
            a, b = value[cmp.group(2)], value[cmp.group(4)]
            value[cmp.group(1)] = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[cmp.group(3)]
        elif sel and sel.group(2) in value and (chosen := sel.group(3) if value[sel.group(2)] else sel.group(4)) in value:
            value[sel.group(1)] = value[chosen]
        elif re.match(r"^var_\d+ = ", s):
            value.pop(s.split(" ", 1)[0], None)
        if dead_from is None and (m := re.match(r"^if \((var_\d+)\) \{$", s)) and value.get(m.group(1)) is False:
            dead_from, depth = at, 0
        if dead_from is not None:
            depth += s.count("{") - s.count("}")
            if depth <= 0:
                out.append((dead_from, at + len(line)))
                dead_from = None
        at += len(line)
    return out


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


def _generated(text: str, kind: str, rng: random.Random, skip: list[tuple[int, int]], context: str = "") -> str | None:
    flow = Liveness(text, context)

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
        made = _constructed(text, flow.made_zero)
        places = [m for m in outside(_CPP_ASSIGN.finditer(text)) if "builtin_tid" not in m.group(0)
                  and " = _wp_args->" not in m.group(0) and not m.group(0).lstrip().startswith("const")
                  and m.start() not in made]
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
    # gradient: an adjoint call of the reverse pass dropped, one that can change a compared gradient
    places = [m for m in _CPP_ADJ.finditer(text) if m.start() in flow.adjoints.live_calls]
    if not places:
        return None
    m = rng.choice(places)
    return text[:m.start()] + text[m.end():]
