"""The reference corpus: real Warp kernels from the installed ``warp-lang``'s examples and tests.

Every ``.py`` file under ``warp/examples`` and ``warp/tests`` of the installed distribution is
parsed with ``ast`` (never imported), and every function decorated ``@wp.kernel``,
``@wp.kernel(...)`` or ``@warp.kernel`` becomes a ``RealKernel``: its own source, and a
*context* that rebuilds it alone: the imports it needs, the module-level constants it reads,
the ``@wp.struct`` classes and ``@wp.func`` functions it uses (transitively, in file order),
then the kernel. A kernel is self-contained when every free name of that context
resolves to a Python builtin, an allowed import (Warp, NumPy, the standard library) or a
definition in the context; kernels defined inside a function or class (factory closures,
test bodies) never are.

The corpus is split by file into two halves, deterministically: the *seed* half is the only
one census tables and mutation may read, the *measure* half is only ever measured against.

What it leaves out: building the kernels with Warp (callers do that when they need it), and
kernels created by other decorators (``fem.integrand``, kernel factories).
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import importlib.metadata
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RealKernel", "REFERENCE_ROOTS", "WARP_LICENSE", "distribution", "half_of", "kernels",
           "kernels_of", "reference_files"]

REFERENCE_ROOTS = ("warp/examples", "warp/tests")
HALVES = ("seed", "measure")
_BUILTINS = frozenset(dir(builtins))
_STATIC_CALLERS = _BUILTINS | {"wp", "warp", "np", "numpy", "math"}
# imports a context may carry: Warp's public packages, NumPy and the standard library
# (test helpers such as warp.tests.unittest_utils are not part of a kernel's meaning)
_PRIVATE_WARP = ("warp.tests", "warp.examples", "warp._src")


@dataclass(frozen=True, slots=True)
class RealKernel:
    name: str              # the kernel function's name
    module: str            # "warp.tests.test_foo"
    path: str              # relative to the distribution root: "warp/tests/test_foo.py"
    line: int              # line of the ``def``
    source: str            # decorators + def, dedented
    context: str           # imports, constants, structs, functions, then the kernel
    self_contained: bool   # every free name of ``context`` resolves
    reason: str | None     # why not self-contained ("generic kernel" is noted too)
    half: str              # "seed" | "measure"
    generic: bool = False  # parameter annotations use ``Any``


def _warp_distribution() -> importlib.metadata.Distribution:
    return importlib.metadata.distribution("warp-lang")


def _license() -> str:
    meta = _warp_distribution().metadata
    for key in ("License-Expression", "License"):
        if meta.get(key):
            return meta[key].strip()
    for classifier in meta.get_all("Classifier") or ():
        if classifier.startswith("License ::"):
            return classifier.rsplit("::", 1)[-1].strip()
    return "unknown"


WARP_LICENSE: str = _license()


def distribution() -> dict:
    """Name, version and licence of the distribution the reference kernels come from."""
    return {"name": "warp-lang", "version": _warp_distribution().version, "license": WARP_LICENSE}


def _root() -> Path:
    return Path(str(_warp_distribution().locate_file("")))


def reference_files() -> list[tuple[str, Path]]:
    """(path relative to the distribution root, absolute path) of every reference file, sorted."""
    root = _root()
    out = []
    for folder in REFERENCE_ROOTS:
        for path in (root / folder).rglob("*.py"):
            out.append((path.relative_to(root).as_posix(), path))
    return sorted(out)


def half_of(relpath: str) -> str:
    """The half a file belongs to: the parity of the first byte of its path's SHA-1."""
    return HALVES[hashlib.sha1(relpath.encode()).digest()[0] & 1]


def kernels_of(text: str, relpath: str) -> list[RealKernel]:
    """The kernels of one module's text, as if it were the file ``relpath`` (raises SyntaxError)."""
    return sorted(_Module(relpath, text, ast.parse(text)).kernels(), key=lambda k: k.line)


@functools.cache
def _all_kernels() -> tuple[RealKernel, ...]:
    found: list[RealKernel] = []
    for rel, path in reference_files():
        try:
            found.extend(kernels_of(path.read_text(encoding="utf-8"), rel))
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
    return tuple(sorted(found, key=lambda k: (k.path, k.line)))


def kernels(half: str | None = None) -> list[RealKernel]:
    """The reference kernels (of one half, or all), sorted by (path, line)."""
    if half is not None and half not in HALVES:
        raise ValueError(f"unknown half {half!r}; valid: {', '.join(HALVES)}")
    return [k for k in _all_kernels() if half is None or k.half == half]


# ---------------------------------------------------------------------------------------------
# parsing one module


def _is_warp(node: ast.AST, attrs: tuple[str, ...]) -> bool:
    """``wp.<attr>`` / ``warp.<attr>``, called or not."""
    if isinstance(node, ast.Call):
        node = node.func
    return (isinstance(node, ast.Attribute) and node.attr in attrs
            and isinstance(node.value, ast.Name) and node.value.id in ("wp", "warp"))


def is_kernel_def(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any(_is_warp(d, ("kernel",)) for d in node.decorator_list)


def _is_func(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any(
        _is_warp(d, ("func", "func_native")) for d in node.decorator_list)


def _is_struct(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and any(_is_warp(d, ("struct",)) for d in node.decorator_list)


def free_names(node: ast.AST) -> set[str]:
    """Names a definition loads but does not bind itself (parameters, stores, inner defs)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (loaded if isinstance(sub.ctx, ast.Load) else bound).add(sub.id)
        elif isinstance(sub, ast.arg):
            bound.add(sub.arg)
        elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)) and sub is not node:
            bound.add(sub.name)
    if isinstance(node, ast.ClassDef):  # fields are annotations, not bindings
        bound -= {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return loaded - bound


def _is_generic(fn: ast.FunctionDef) -> bool:
    for arg in fn.args.args + fn.args.kwonlyargs:
        for sub in ast.walk(arg.annotation) if arg.annotation else ():
            if (isinstance(sub, ast.Name) and sub.id == "Any") or (isinstance(sub, ast.Attribute) and sub.attr == "Any"):
                return True
    return False


def _segment(lines: list[str], node: ast.AST) -> str:
    """A definition's text with its decorators, its own indentation removed (string bodies kept)."""
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
    out = [line[len(indent):] if line.startswith(indent) else line for line in lines[first - 1: node.end_lineno]]
    return "\n".join(out).rstrip() + "\n"


def _static_value(value: ast.AST) -> bool:
    """A module-level value a context may copy: no calls except Warp/NumPy/math/builtin ones."""
    for sub in ast.walk(value):
        if isinstance(sub, ast.Call):
            root = sub.func
            while isinstance(root, ast.Attribute):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in _STATIC_CALLERS):
                return False
        elif isinstance(sub, (ast.Lambda, ast.Await, ast.Yield, ast.NamedExpr)):
            return False
    return True


def _import_ok(module: str) -> bool:
    top = module.split(".")[0]
    if top == "warp":
        return not module.startswith(_PRIVATE_WARP)
    return top == "numpy" or top in sys.stdlib_module_names


@dataclass(slots=True)
class _Def:
    kind: str                    # "import" | "const" | "struct" | "func" | "other"
    line: int
    text: str                    # what the context writes for it
    node: ast.AST | None = None  # whose free names it needs (found when first visited)
    _needs: set[str] | None = None

    @property
    def needs(self) -> set[str]:
        if self._needs is None:
            self._needs = free_names(self.node) if self.node is not None else set()
        return self._needs


class _Module:
    """The module-level definitions of one file, and the kernels found in it."""

    def __init__(self, rel: str, text: str, tree: ast.Module):
        self.rel, self.tree = rel, tree
        self.lines = text.splitlines()
        self.module = rel[:-3].replace("/", ".").removesuffix(".__init__")
        self.defs: dict[str, list[_Def]] = {}
        self.submodules: list[str] = []
        for stmt in tree.body:
            self._collect(stmt)

    def _add(self, name: str, d: _Def) -> None:
        self.defs.setdefault(name, []).append(d)

    def _collect(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                bound = a.asname or a.name.split(".")[0]
                if bound == "warp" and not a.asname and "." in a.name and _import_ok(a.name):
                    self.submodules.append(f"import {a.name}")  # makes wp.<sub> importable: always kept
                text = f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                self._add(bound, _Def("import" if _import_ok(a.name) else "other", stmt.lineno, text))
        elif isinstance(stmt, ast.ImportFrom):
            ok = stmt.level == 0 and _import_ok(stmt.module or "")
            for a in stmt.names:
                text = f"from {stmt.module} import {a.name}" + (f" as {a.asname}" if a.asname else "")
                self._add(a.asname or a.name, _Def("import" if ok else "other", stmt.lineno, text))
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            single = len(targets) == 1 and isinstance(targets[0], ast.Name)
            kind = "const" if single and _static_value(stmt.value) else "other"
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        self._add(n.id, _Def(kind, stmt.lineno, _segment(self.lines, stmt), stmt.value))
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            kind = "struct" if _is_struct(stmt) else "func" if _is_func(stmt) else "other"
            self._add(stmt.name, _Def(kind, stmt.lineno, _segment(self.lines, stmt), stmt))

    def kernels(self) -> list[RealKernel]:
        return [self._kernel(node, nested) for node, nested in _kernel_nodes(self.tree)]

    def _resolve(self, name: str, before: int) -> list[_Def] | None:
        """The definitions a name refers to: every ``@wp.func`` overload, else the last binding
        before ``before`` (else the first after it, as Warp resolves names at build time)."""
        found = self.defs.get(name)
        if not found:
            return None
        funcs = [d for d in found if d.kind == "func"]
        if funcs and all(d.kind == "func" for d in found):
            return funcs
        earlier = [d for d in found if d.line < before]
        return [earlier[-1] if earlier else found[0]]

    def _kernel(self, node: ast.FunctionDef, nested: str | None) -> RealKernel:
        source = _segment(self.lines, node)
        chosen: dict[int, _Def] = {}
        problems: list[str] = []
        self._visit(free_names(node), node.lineno, chosen, problems, set())
        # file order is a dependency order: the module ran top to bottom, and Warp functions
        # resolve the names they call only when the kernel is built
        defs = sorted(chosen.values(), key=lambda d: d.line)
        context = _context_text(self.submodules + [d.text for d in defs if d.kind == "import"],
                                [d for d in defs if d.kind != "import"], source)
        reasons = ([f"defined inside a {nested}"] if nested else []) + problems
        generic = _is_generic(node)
        self_contained = not reasons
        if generic:
            reasons.append("generic kernel")
        return RealKernel(node.name, self.module, self.rel, node.lineno, source, context,
                          self_contained, "; ".join(reasons) or None, half_of(self.rel), generic)

    def _visit(self, names: set[str], before: int, chosen: dict, problems: list[str], seen: set[str]) -> None:
        """Add the definitions ``names`` need, transitively, to ``chosen``."""
        for name in sorted(names - seen):
            seen.add(name)
            defs = self._resolve(name, before)
            if defs is None:
                if name not in _BUILTINS:
                    problems.append(f"unresolved name {name}")
                continue
            for d in defs:
                if d.kind == "other":
                    problems.append(f"uses {name}, which is not a constant, struct, Warp function or allowed import")
                    continue
                chosen.setdefault(id(d), d)
                self._visit(d.needs, d.line, chosen, problems, seen)


def _context_text(imports: list[str], defs: list[_Def], source: str) -> str:
    """Imports, then definitions in dependency order (constants grouped), then the kernel."""
    text = "\n".join(dict.fromkeys(["import warp as wp", *imports])) + "\n"
    previous = "import"
    for d in defs:
        text += ("" if d.kind == previous == "const" else "\n\n") + d.text
        previous = d.kind
    return text + "\n\n" + source


def _kernel_nodes(tree: ast.Module):
    """(kernel FunctionDef, None | what it is nested in: "function", "class", "block")."""
    for stmt in tree.body:
        if is_kernel_def(stmt):
            yield stmt, None
        else:
            yield from _nested(stmt, "function" if isinstance(stmt, ast.FunctionDef) else
                               "class" if isinstance(stmt, ast.ClassDef) else "block")


def _nested(node: ast.AST, inside: str):
    for child in _child_statements(node):
        if is_kernel_def(child):
            yield child, inside
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _nested(child, "class" if isinstance(child, ast.ClassDef) else "function")
        else:
            yield from _nested(child, inside)


def _child_statements(node: ast.AST):
    """Statements directly under ``node`` (bodies, else and finally blocks, handlers, match cases):
    a kernel definition is a statement, so expressions need no search."""
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, name, None) or ():
            if isinstance(child, (ast.excepthandler, ast.match_case)):
                yield from _child_statements(child)
            elif isinstance(child, ast.stmt):
                yield child
