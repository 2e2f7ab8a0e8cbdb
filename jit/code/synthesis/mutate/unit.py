"""The unit being mutated: a seed's source as an AST, its notes and its launch, renamed for one item.

A unit is the whole text a kernel needs to build alone (imports, constants, structs, functions,
then the kernel). Every module-level name gets the item's suffix, since many kernels share one
Warp module; mutations then edit ``tree`` and, when they touch parameters, ``launch``.
``render`` gives the source back with the seed's comments, after dropping definitions nothing
uses any more and adding any import a mutation made necessary. What it leaves out: the
mutations themselves (one module per kind) and choosing them (``driver``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import keyword
import random
import re

from jit.code.synthesis.mutate import source
from jit.code.synthesis.mutate.launch import Arg, Launch
from jit.code.synthesis.mutate.syntax import uses_tiles, wp_attr, walk

RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"wp", "warp", "np", "math", "_"}
# modules a kernel's source may use by these names, and the import that binds each
KNOWN_IMPORTS = {
    "math": "import math",
    "np": "import numpy as np",
    "numpy": "import numpy",
    "wp": "import warp as wp",
    "warp": "import warp",
}

# subpackages ``import warp`` does not load (Warp 1.19)
WARP_SUBPACKAGES = frozenset({"autograd", "fem", "geometry", "optim", "render", "sparse"})


class Unit:
    def __init__(self, text: str, kernel: str, suffix: str = "", launch: Launch | None = None):
        self.tree = ast.parse(text)
        self.notes = source.notes(self.tree, text)
        self.kernel_name = f"{kernel}_{suffix}" if suffix else kernel
        self.suffix = suffix
        self.launch = launch.copy() if launch is not None else Launch([1])
        self.touched: set[int] = set()  # nodes a mutation made, left alone by later ones
        self.tiled = tiled(text)
        self._taken: set[str] | None = None
        if suffix:
            self._suffix_names(suffix)
        self.kernel = next(n for n in self.functions if n.name == self.kernel_name)
        if launch is None:  # not described: every parameter as it comes, one thread
            self.launch.args = [Arg(a.arg, origin=("arg", a.arg)) for a in self.kernel.args.args]
        for fn in self.functions:  # a definition in a module of its own would leave the shared one
            for i, dec in enumerate(fn.decorator_list):
                if isinstance(dec, ast.Call):
                    dec.keywords = [k for k in dec.keywords if k.arg not in ("module", "module_options")]
                    if not dec.args and not dec.keywords:
                        fn.decorator_list[i] = dec.func

    # what is in it --------------------------------------------------------------------------

    @property
    def functions(self) -> list[ast.FunctionDef]:
        return [n for n in self.tree.body if isinstance(n, ast.FunctionDef)]

    @property
    def funcs(self) -> dict[str, ast.FunctionDef]:
        """The ``@wp.func`` functions by name (the kernel excluded)."""
        return {n.name: n for n in self.functions if n is not self.kernel}

    @property
    def structs(self) -> dict[str, ast.ClassDef]:
        return {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}

    def consts(self) -> dict[str, int]:
        """Module-level integer constants (``N = 64``, ``N = wp.constant(64)``, ``M = 2 * N``)."""
        out: dict[str, int] = {}
        for node in self.tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            value = node.value
            if isinstance(value, ast.Call) and wp_attr(value) == "constant" and value.args:
                value = value.args[0]
            try:
                result = eval(compile(ast.Expression(value), "<const>", "eval"), {"__builtins__": {}}, dict(out))
            except Exception:
                continue
            if type(result) is int:
                out[node.targets[0].id] = result
        return out

    def taken(self) -> set[str]:
        """Every identifier of the unit (a new name must be none of these). Read from the tree
        once; a mutation that introduces a name ``claim``s it (``fresh`` does)."""
        if self._taken is None:
            names = set()
            for node in walk(self.tree):
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif isinstance(node, ast.arg):
                    names.add(node.arg)
                elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.alias):
                    names.add(node.asname or node.name.split(".")[0])
            self._taken = names
        return self._taken

    def claim(self, name: str) -> str:
        self.taken().add(name)
        return name

    def fresh(self, rng: random.Random, options: tuple[str, ...]) -> str:
        """An unused name among ``options`` (else the first one with a number), now taken."""
        taken = self.taken()
        free = [o for o in options if o not in taken and o not in RESERVED]
        if free:
            return self.claim(rng.choice(free))
        n = 2
        while f"{options[0]}{n}" in taken:
            n += 1
        return self.claim(f"{options[0]}{n}")

    # editing --------------------------------------------------------------------------------

    def add_param(self, name: str, annotation: str, arg: Arg, after: str | None = None) -> None:
        """A new kernel parameter (after ``after``, else last) and its launch argument."""
        node = ast.arg(name, ast.parse(annotation, mode="eval").body)
        names = [a.arg for a in self.kernel.args.args]
        at = names.index(after) + 1 if after in names else len(names)
        self.kernel.args.args.insert(at, node)
        order = [a.name for a in self.launch.args]
        self.launch.args.insert(order.index(after) + 1 if after in order else len(order), arg)

    def rename_in_comments(self, old: str, new: str, scope: ast.AST | None = None) -> None:
        """A comment that names ``old`` names ``new`` now. A name that is also a word (``width``)
        is renamed only where the comment quotes it as code (```width```)."""
        if "_" in old or any(c.isdigit() for c in old):
            word = re.compile(rf"\b{re.escape(old)}\b")
        else:
            word = re.compile(rf"(?<=`){re.escape(old)}(?=`)")
        ids = None if scope is None else {id(n) for n in walk(scope)}
        for key, (_, note) in self.notes.statements.items():
            if ids is None or key in ids:
                note.comments = [word.sub(new, c) for c in note.comments]
                note.trailing = word.sub(new, note.trailing) if note.trailing else note.trailing

    def _suffix_names(self, suffix: str) -> None:
        top: set[str] = set()
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                top.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    top |= {n.id for n in walk(t) if isinstance(n, ast.Name)}
        for node in self.tree.body:
            used = [n for n in walk(node) if isinstance(n, ast.Name)]  # one walk finds the locals and the uses
            local = (
                set()
                if not isinstance(node, ast.FunctionDef)
                else {a.arg for a in walk(node.args) if isinstance(a, ast.arg)}
                | {n.id for n in used if isinstance(n.ctx, ast.Store)}
            )
            for sub in used:
                if sub.id in top and sub.id not in local:
                    sub.id = f"{sub.id}_{suffix}"
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                node.name = f"{node.name}_{suffix}"

    # output ---------------------------------------------------------------------------------

    def prune(self) -> None:
        """Drop module-level definitions nothing reaches from the kernel any more."""
        defs: dict[str, list[ast.stmt]] = {}
        for node in self.tree.body:
            for name in defined(node):
                defs.setdefault(name, []).append(node)  # overloads of a function share a name
        needed, todo = set(), [self.kernel]
        while todo:
            node = todo.pop()
            if id(node) in needed:
                continue
            needed.add(id(node))
            used = {n.id for n in walk(node) if isinstance(n, ast.Name)}
            todo += [d for n in used for d in defs.get(n, ())]
        self.tree.body = [n for n in self.tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) or id(n) in needed]

    def complete_imports(self) -> None:
        """Drop imports nothing reads (``from typing import Any`` of a seed's file, ``import
        warp.optim``), and add the import of every known module the source reads but does not
        import."""
        used = {n.id for n in walk(self.tree) if isinstance(n, ast.Name)}
        kept = []
        for node in self.tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.names[0].name != "*":
                node.names = [a for a in node.names if (a.asname or a.name.split(".")[0]) in used | {"wp"}]
                if not node.names:
                    self.notes.forget(node)
                    continue
            kept.append(node)
        self.tree.body = kept
        bound = {
            a.asname or a.name.split(".")[0]
            for n in self.tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
        }
        used = {n.id for n in walk(self.tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        missing = [KNOWN_IMPORTS[m] for m in sorted(used & KNOWN_IMPORTS.keys() - bound)]
        # ``wp.geometry.X``: a subpackage ``import warp`` does not load needs its own import
        subpackages = {n.attr for n in walk(self.tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                       and n.value.id in ("wp", "warp") and n.attr in WARP_SUBPACKAGES}
        imported = {a.name for n in self.tree.body if isinstance(n, ast.Import) for a in n.names}
        missing += [f"import warp.{sub}" for sub in sorted(subpackages) if f"warp.{sub}" not in imported]
        at = sum(isinstance(n, (ast.Import, ast.ImportFrom)) for n in self.tree.body)
        for text in missing:
            self.tree.body.insert(at, ast.parse(text).body[0])

    def render(self, layout: bool = True) -> str:
        self.prune()
        self.complete_imports()
        return source.render(self.tree, self.notes, layout)

    def measured(self) -> str:
        """The text similarity is measured on: what ``render`` gives before layout, without
        comments (tokens drop them) and without the imports a mutation may add. (A mutation
        that leaves a definition unused prunes the unit itself.)"""
        return source.plain(self.tree)


@functools.lru_cache(maxsize=4096)
def tiled(text: str) -> bool:
    """Whether a source calls tile functions: read once per seed (every mutant of it parses it again)."""
    return uses_tiles(ast.parse(text))


def defined(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)]
    return []
