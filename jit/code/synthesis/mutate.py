"""Seeded, type-correct mutations of real Warp kernels: a source of kernels that read like real code.

A *seed* is a kernel of the reference corpus's seed half (``reference.kernels("seed")``) whose
context (imports, constants, structs, helper functions, then the kernel) builds and compiles
alone with Warp for CPU and CUDA. A tile kernel builds at the block_dim its file launches it
with (``launch_block_dim``), and its mutants are launched with that one too.
``mutant_seeds.json`` lists the seeds (module, path, name, line, which whole-unit dtype change
also builds, block_dim of tile kernels); ``python -m jit.code.synthesis.mutate --rebuild-seeds``
remakes it.

``mutate(kernel, rng, suffix)`` parses the context with ``ast``, gives every module-level name
the item's suffix (many kernels share one Warp module), then applies mutations drawn with
``rng``. Each keeps Warp's types checking, judged from the AST alone:

- structural (they change the normalised token stream): swapping a builtin for one whose
  overloads accept the same arguments and return the same type (``sin``/``cos``, ``min``/``max``,
  ``length`` -> ``length_sq``...), swapping operators (``+``/``-``, ``<``/``<=``, ``and``/``or``,
  ``* c``/``/ c``), hoisting a subexpression into a local named by its role, inlining a local
  read once, swapping adjacent independent statements, a launch-bound guard, wrapping
  statements in a branch on a parameter or in a bounded loop;
- a float32 <-> float64 change of the whole unit, only for seeds where it was seen to build;
- cosmetic: renaming locals and kernel parameters to another name of the same role,
  perturbing float constants.

In tile code, builtins are never swapped between tile and scalar forms, nothing is hoisted out
of a tile call's keyword arguments or shape tuples (they must stay compile-time constants), and
no early-return guard is added (the block's threads must reach its tile operations together).

Structural mutations are applied until the mutant's normalised token 4-grams are less than
90% similar (Jaccard) to the seed's. What it leaves out: building the mutants (the pipeline
does, retrying a rejected item), launch inputs (mutants are not run), generic (``Any``)
kernels and kernels with native or custom-gradient functions.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import json
import keyword
import math
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from jit.code.analysis import reference
from jit.code.analysis.tokens import jaccard, norm_tokens, shingles

__all__ = ["Seed", "MutationError", "MUTATIONS", "SWAPS", "mutate", "seeds", "seed_weights", "seed_kernel",
           "rebuild_seeds"]

SEEDS_FILE = Path(__file__).with_name("mutant_seeds.json")
MAX_SIMILARITY = 0.9  # a mutant must be less similar than this to its seed
MIN_TARGET = 0.75  # each mutant aims below a similarity drawn from [MIN_TARGET, MAX_SIMILARITY)
MAX_STEPS = 60
LINE_WIDTH = 100


class MutationError(Exception):
    def __init__(self, kernel: str, reason: str):
        super().__init__(f"{kernel}: {reason}")
        self.kernel, self.reason = kernel, reason


# ---------------------------------------------------------------------------------------------
# what the AST tells about types and effects

# a builtin may become another when every overload of the first is one of the second (same
# argument and return types); ``test_mutate`` checks this against Warp's registry
SWAPS: dict[str, tuple[str, ...]] = {
    "sin": ("cos",), "cos": ("sin",), "asin": ("acos",), "acos": ("asin",),
    "sinh": ("cosh",), "cosh": ("sinh",), "tan": ("tanh", "atan"), "tanh": ("tan", "atan"), "atan": ("tan", "tanh"),
    "log": ("log2", "log10"), "log2": ("log", "log10"), "log10": ("log", "log2"),
    "floor": ("ceil", "round", "trunc"), "ceil": ("floor", "round", "trunc"),
    "round": ("floor", "ceil", "rint"), "trunc": ("floor", "ceil"), "rint": ("round",),
    "sqrt": ("cbrt",), "cbrt": ("sqrt",), "degrees": ("radians",), "radians": ("degrees",),
    "min": ("max",), "max": ("min",), "length": ("length_sq",),
    "atomic_add": ("atomic_sub",), "atomic_sub": ("atomic_add",),
    "atomic_min": ("atomic_max",), "atomic_max": ("atomic_min",),
    "transform_point": ("transform_vector",), "transform_vector": ("transform_point",),
    "quat_rotate": ("quat_rotate_inv",), "quat_rotate_inv": ("quat_rotate",),
}
PY_SWAPS = {"min": ("max",), "max": ("min",)}  # Python's min/max inside kernels are Warp's

PURE_GROUPS = ("Scalar Math", "Vector Math", "Quaternion Math", "Transformations", "Spatial Math")
PURE_UTILITY = ("select", "where", "lerp", "smoothstep", "len")
CONSTRUCTOR_PREFIXES = ("vec", "mat", "quat", "transform", "spatial_vector", "spatial_matrix",
                        "float", "int", "uint")
PY_PURE = ("min", "max", "abs", "float", "int", "round")
FLOAT_ANNOTATIONS = ("float", "float32", "float64")
INT_ANNOTATIONS = ("int", "int32", "int64")  # not uint64: those are handles (mesh, BVH, volume ids)
ID_ENDINGS = ("id", "ids", "seed", "index")


@functools.cache
def pure_builtins() -> frozenset[str]:
    """Warp builtins without side effects (safe to move, hoist, inline)."""
    from jit.code.extraction import warp_backend as wb

    return frozenset(n for n in wb.builtin_names()
                     if wb.builtin_group(n) in PURE_GROUPS or n in PURE_UTILITY)


def wp_attr(node: ast.AST) -> str | None:
    """``X`` for ``wp.X`` (called or not)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "wp":
        return node.attr
    return None


def is_constructor(attr: str | None) -> bool:
    return attr is not None and attr.startswith(CONSTRUCTOR_PREFIXES) and not attr.startswith("transform_")


def is_cast(node: ast.Call) -> bool:
    """``float(x)``, ``wp.float64(x)``, ``wp.int32(x)``...: a scalar conversion."""
    name = wp_attr(node) or (node.func.id if isinstance(node.func, ast.Name) else "")
    return name.startswith(("float", "int", "uint", "bool"))


def is_pure_call(node: ast.Call) -> bool:
    attr = wp_attr(node)
    if attr is not None:
        return (attr in pure_builtins() or is_constructor(attr)) and attr != "tid"
    return isinstance(node.func, ast.Name) and node.func.id in PY_PURE


def base_name(node: ast.AST) -> str | None:
    """The variable a store target writes into: ``a`` for ``a[i].x``."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


@dataclass(slots=True)
class Effects:
    reads: set[str]
    writes: set[str]
    impure: bool


def effects(stmt: ast.stmt) -> Effects:
    """Names a statement reads and writes; calls with side effects write every name they are passed
    (Warp's out-parameters, arrays written by helper functions)."""
    reads, writes, impure = set(), set(), False
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else writes).add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            if (b := base_name(node)) is not None:
                writes.add(b)
        elif isinstance(node, ast.Call) and not is_pure_call(node) and wp_attr(node) != "tid":
            impure = True
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if (b := base_name(arg)) is not None:
                    writes.add(b)
    if isinstance(stmt, ast.AugAssign) and (b := base_name(stmt.target)) is not None:
        writes.add(b)
    return Effects(reads, writes, impure)


def blocks(fn: ast.FunctionDef) -> Iterator[list[ast.stmt]]:
    """Every statement list of a function (its body, branches, loop bodies), outermost first."""
    todo = [fn.body]
    while todo:
        body = todo.pop(0)
        yield body
        for stmt in body:
            for field in ("body", "orelse"):
                sub = getattr(stmt, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt) \
                        and not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                    todo.append(sub)


def body_nodes(fn: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's statements (not its signature or decorators)."""
    for stmt in fn.body:
        yield from ast.walk(stmt)


def loop_blocks(fn: ast.FunctionDef) -> Iterator[list[ast.stmt]]:
    """The statement lists inside a loop (at any depth)."""
    for node in body_nodes(fn):
        if isinstance(node, (ast.For, ast.While)):
            for sub in ast.walk(node):
                for field in ("body", "orelse"):
                    value = getattr(sub, field, None)
                    if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                        yield value


def jumps(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, (ast.Return, ast.Break, ast.Continue)) for s in stmts for n in ast.walk(s))


def is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def tid_target(stmt: ast.stmt) -> str | None:
    """``i`` for ``i = wp.tid()``."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
            and wp_attr(stmt.value) == "tid" and isinstance(stmt.value, ast.Call):
        return stmt.targets[0].id
    return None


def annotation_kind(ann: ast.AST | None) -> str | None:
    """"float" or "int" for a scalar parameter annotation, else None."""
    name = ann.id if isinstance(ann, ast.Name) else wp_attr(ann) if ann is not None else None
    if name in FLOAT_ANNOTATIONS:
        return "float"
    if name in INT_ANNOTATIONS:
        return "int"
    return None


def is_float_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is float


def is_tile_call(node: ast.AST) -> bool:
    attr = wp_attr(node) if isinstance(node, ast.Call) else None
    return attr is not None and (attr.startswith("tile") or attr == "untile")


def uses_tiles(tree: ast.AST) -> bool:
    return any(is_tile_call(n) for n in ast.walk(tree))


# ---------------------------------------------------------------------------------------------
# the unit being mutated


class Unit:
    """A seed's context as an AST, with its module-level names suffixed; ``render()`` gives the source."""

    def __init__(self, kernel: reference.RealKernel, suffix: str):
        self.tree = ast.parse(kernel.context)
        self.kernel_name = f"{kernel.name}_{suffix}"
        self.touched: set[int] = set()  # nodes a mutation made, left alone by later ones
        self.new_params: list[str] = []
        self.tiled = uses_tiles(self.tree)
        self._suffix_names(suffix)
        self.kernel = next(n for n in self.functions if n.name == self.kernel_name)
        for fn in self.functions:  # a definition in a module of its own would leave the shared one
            for i, dec in enumerate(fn.decorator_list):
                if isinstance(dec, ast.Call):
                    dec.keywords = [k for k in dec.keywords if k.arg not in ("module", "module_options")]
                    if not dec.args and not dec.keywords:
                        fn.decorator_list[i] = dec.func

    @property
    def functions(self) -> list[ast.FunctionDef]:
        return [n for n in self.tree.body if isinstance(n, ast.FunctionDef)]

    def _suffix_names(self, suffix: str) -> None:
        top: set[str] = set()
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                top.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    top |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        for node in self.tree.body:
            local = set() if not isinstance(node, ast.FunctionDef) else \
                {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)} | \
                {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and sub.id in top and sub.id not in local:
                    sub.id = f"{sub.id}_{suffix}"
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                node.name = f"{node.name}_{suffix}"

    def taken(self) -> set[str]:
        """Every identifier of the unit (a new name must be none of these)."""
        names = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[0])
        return names

    def fresh(self, rng: random.Random, options: tuple[str, ...]) -> str:
        """An unused name among ``options`` (else the first one with a number)."""
        taken = self.taken() | RESERVED
        free = [o for o in options if o not in taken]
        if free:
            return rng.choice(free)
        n = 2
        while f"{options[0]}{n}" in taken:
            n += 1
        return f"{options[0]}{n}"

    def add_param(self, name: str, annotation: str) -> None:
        self.kernel.args.args.append(ast.arg(name, ast.parse(annotation, mode="eval").body))
        self.new_params.append(name)

    def render(self) -> str:
        ast.fix_missing_locations(self.tree)
        imports = [ast.unparse(n) for n in self.tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        defs = [render_def(n) for n in self.tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
        return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(defs) + "\n"


RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"wp", "warp", "np", "math", "_"}


def render_def(node: ast.stmt) -> str:
    """A definition as source; a signature longer than a line puts one parameter per line."""
    text = ast.unparse(node)
    if not isinstance(node, ast.FunctionDef):
        return text
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("def "))
    if len(lines[at]) <= LINE_WIDTH:
        return text
    params = [ast.unparse(a) for a in node.args.args]
    ret = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    lines[at] = f"def {node.name}(\n" + "".join(f"    {p},\n" for p in params) + f"){ret}:"
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# structural mutations: each takes (unit, rng), changes the tree and says what it did, or
# returns None when the unit offers no place for it


def swap_builtin(unit: Unit, rng: random.Random) -> str | None:
    sites = []
    for node in (n for fn in unit.functions for n in body_nodes(fn)):
        if isinstance(node, ast.Call) and id(node) not in unit.touched:
            attr = wp_attr(node)
            if attr in SWAPS:
                sites.append((node, attr, SWAPS[attr]))
            elif isinstance(node.func, ast.Name) and node.func.id in PY_SWAPS:
                sites.append((node, node.func.id, PY_SWAPS[node.func.id]))
    if not sites:
        return None
    node, old, options = rng.choice(sites)
    new = rng.choice(options)
    if isinstance(node.func, ast.Name):
        node.func.id = new
    else:
        node.func.attr = new
    unit.touched.add(id(node))
    return f"swap_builtin:{old}->{new}"


COMPARE_SWAPS = {ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
                 ast.GtE: (ast.Gt, ast.LtE), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,)}
OP_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Lt: "<", ast.LtE: "<=",
              ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.And: "and", ast.Or: "or"}


def operator_sites(unit: Unit) -> list[tuple[ast.AST, str, type]]:
    """(node, field holding the operator, replacement operator type) for every swappable operator."""
    sites = []
    for fn in unit.functions:
        for node in body_nodes(fn):
            if id(node) in unit.touched:
                continue
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                sites.append((node, "op", ast.Sub if isinstance(node.op, ast.Add) else ast.Add))
            elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)) \
                    and is_float_literal(node.right) and node.right.value != 0.0:
                sites.append((node, "op", ast.Div if isinstance(node.op, ast.Mult) else ast.Mult))
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE_SWAPS:
                for new in COMPARE_SWAPS[type(node.ops[0])]:
                    sites.append((node, "ops", new))
            elif isinstance(node, ast.BoolOp):
                sites.append((node, "op", ast.Or if isinstance(node.op, ast.And) else ast.And))
    return sites


def swap_operator(unit: Unit, rng: random.Random) -> str | None:
    sites = operator_sites(unit)
    if not sites:
        return None
    node, field, new = rng.choice(sites)
    old = type(node.ops[0] if field == "ops" else node.op)
    if field == "ops":
        node.ops = [new()]
    else:
        node.op = new()
    unit.touched.add(id(node))
    return f"swap_operator:{OP_SYMBOLS[old]}->{OP_SYMBOLS[new]}"


HOIST_NAMES: dict[str, tuple[str, ...]] = {
    "length": ("dist", "d", "len_v"), "length_sq": ("dist_sq", "d2", "len_sq"), "dot": ("proj", "dp", "d"),
    "cross": ("axis", "perp", "c"), "normalize": ("dir", "n", "unit_dir"), "sqrt": ("root", "s"),
    "sin": ("s", "sin_t"), "cos": ("c", "cos_t"), "exp": ("decay", "e"), "min": ("lo", "m"),
    "max": ("hi", "m"), "abs": ("mag", "a"), "clamp": ("clamped",), "transform_point": ("p_world", "x_world"),
    "transform_vector": ("v_world", "dir_world"), "quat_rotate": ("rotated", "v_world"),
    "quat_rotate_inv": ("v_local", "local"), "float": ("fx", "value"), "int": ("ix", "index"),
    "vec": ("v", "vec", "offset"), "mat": ("m", "mat", "A"), "quat": ("q", "rot"), "transform": ("xform", "tf"),
}
BINOP_WORDS = {ast.Add: ("sum", "total"), ast.Sub: ("delta", "diff"), ast.Mult: ("scaled", "prod"),
               ast.Div: ("ratio", "frac"), ast.Mod: ("rem",), ast.FloorDiv: ("q",)}


INDEX_NAMES = ("idx", "offset", "base", "start", "slot")


def arrays(fn: ast.FunctionDef) -> set[str]:
    """Parameters annotated as Warp arrays (``wp.array[...]``, ``wp.array2d(dtype=...)``...)."""
    out = set()
    for a in fn.args.args:
        ann = a.annotation.value if isinstance(a.annotation, ast.Subscript) else \
            a.annotation.func if isinstance(a.annotation, ast.Call) else a.annotation
        if (wp_attr(ann) or "").startswith(("array", "indexedarray", "fabricarray")):
            out.add(a.arg)
    return out


def element_names(array: str) -> tuple[str, ...]:
    """Names for one element of ``array``: ``points`` -> ``point``, ``x`` -> ``xi``."""
    if len(array) > 3 and array.endswith("s") and not array.endswith("ss"):
        return (array[:-1], f"{array[:-1]}_val")
    if len(array) <= 2:
        return (f"{array}i", f"{array}_val")
    return (f"{array}_val", f"{array}_i")


def hoist_names(node: ast.expr) -> tuple[str, ...]:
    if isinstance(node, ast.BinOp):
        words = BINOP_WORDS.get(type(node.op), ("tmp",))
        if isinstance(node.left, ast.Name) and len(node.left.id) <= 12:
            return tuple(f"{node.left.id}_{w}" for w in words) + words
        return words
    attr = wp_attr(node) or (node.func.id if isinstance(node.func, ast.Name) else "")
    for key in (attr, attr.rstrip("0123456789bdfhisu"), attr[:3], attr[:4], attr[:9]):
        if key in HOIST_NAMES:
            return HOIST_NAMES[key]
    return ("tmp", "val")


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


def hoistable(root: ast.expr, arrays: set[str]) -> Iterator[tuple[ast.expr, bool]]:
    """(subexpression, is it an array index) for the subexpressions of ``root`` that may be computed
    one statement earlier: pure calls, arithmetic and element reads of the ``arrays``
    (``p = points[i]``), not under a short-circuit (``and``/``or``, ``x if c else y``)."""
    todo = [(root, False)]
    while todo:
        node, index = todo.pop()
        if isinstance(node, (ast.BoolOp, ast.IfExp, ast.Lambda)):
            continue
        if isinstance(node, ast.Subscript):  # a whole element read only, never a view of it
            if isinstance(node.value, ast.Name) and node.value.id in arrays:
                yield node, index
            todo.append((node.slice, True))
            continue
        if isinstance(node, ast.Call) and is_pure_call(node) and (node.args or node.keywords) \
                and not (is_cast(node) and all(isinstance(a, ast.Constant) for a in node.args)):
            yield node, index
        elif isinstance(node, ast.BinOp) and not (isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)):
            yield node, index
        if isinstance(node, ast.Call) and not is_pure_call(node) and wp_attr(node) is not None \
                and wp_attr(node).startswith(("static", "adjoint")):
            continue
        if is_tile_call(node):  # shape=, dtype=, axis=, storage= must stay compile-time constants
            todo.extend((a, index) for a in node.args if not isinstance(a, ast.Tuple))
            continue
        todo.extend((c, index or (isinstance(node, ast.Subscript) and c is node.slice))
                    for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr) and c is not getattr(node, "func", None))


def hoist(unit: Unit, rng: random.Random) -> str | None:
    sites = []
    for fn in unit.functions:
        for body in blocks(fn):
            for at, stmt in enumerate(body):
                for part in expression_parts(stmt):
                    whole = part if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
                    sites += [(body, at, stmt, node, index) for node, index in hoistable(part, arrays(fn))
                              if node is not whole and id(node) not in unit.touched]
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
    return f"hoist:{name}"


def replace_node(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return


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
            if name in params or stores.get(name) != 1 or len(uses) != 1 or id(stmt) in unit.touched \
                    or tid_target(stmt) or effects(stmt).impure:
                continue
            following = body[at + 1]
            if any(uses[0] is n for part in expression_parts(following) for n in ast.walk(part)) \
                    and not is_base_of_access(following, uses[0]):
                sites.append((body, at, uses[0]))
    return sites


def is_base_of_access(tree: ast.AST, name: ast.Name) -> bool:
    """True if ``name`` is the object of ``name[...]``/``name.x`` (inlining would index an expression)."""
    return any(isinstance(n, (ast.Subscript, ast.Attribute)) and n.value is name for n in ast.walk(tree))


def inline(unit: Unit, rng: random.Random) -> str | None:
    sites = [s for fn in unit.functions for s in inline_sites(fn, unit)]
    if not sites:
        return None
    body, at, use = rng.choice(sites)
    stmt = body.pop(at)
    replace_node(body[at], use, stmt.value)
    unit.touched.add(id(stmt.value))
    return f"inline:{use.id}"


SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)


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
    if not (isinstance(a, SIMPLE) and isinstance(b, SIMPLE)) or is_docstring(a) or is_docstring(b):
        return False
    ea, eb = effects(a), effects(b)
    if ea.impure and eb.impure:
        return False
    for e in (ea, eb):
        e.reads |= {roots[n] for n in e.reads if n in roots}
        e.writes |= {roots[n] for n in e.writes if n in roots}
    return not (ea.writes & (eb.reads | eb.writes)) and not (eb.writes & ea.reads)


def reorder(unit: Unit, rng: random.Random) -> str | None:
    sites = [(body, at) for fn in unit.functions for body in blocks(fn) for at in range(len(body) - 1)
             if id(body[at]) not in unit.touched and id(body[at + 1]) not in unit.touched
             and independent(body[at], body[at + 1], aliases(fn))]
    if not sites:
        return None
    body, at = rng.choice(sites)
    body[at], body[at + 1] = body[at + 1], body[at]
    unit.touched |= {id(body[at]), id(body[at + 1])}
    return "reorder"


COUNT_NAMES = ("num_points", "num_particles", "num_elements", "count", "n", "num_items", "size")
FLAG_NAMES = ("enabled", "active", "apply_update", "use_correction", "do_update")
ITER_NAMES = ("num_iterations", "num_substeps", "iterations", "substeps")


def guard(unit: Unit, rng: random.Random) -> str | None:
    """``if i >= count: return`` after ``i = wp.tid()``, with a new ``count: int`` parameter; not in
    tile kernels, where threads leaving early would miss the block's shared tile operations."""
    if unit.tiled:
        return None
    body = unit.kernel.body
    for at, stmt in enumerate(body):
        index = tid_target(stmt)
        if index is None:
            continue
        if any(isinstance(s, ast.If) and any(isinstance(n, ast.Name) and n.id == index for n in ast.walk(s.test))
               and isinstance(s.body[0], ast.Return) for s in body):
            return None
        count = unit.fresh(rng, COUNT_NAMES)
        unit.add_param(count, "int")
        node = ast.parse(f"if {index} >= {count}:\n    return").body[0]
        body.insert(at + 1, node)
        unit.touched.add(id(node))
        return f"guard:{count}"
    return None


def preorder(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes in source order (a store target before the value of the next statement)."""
    yield node
    for child in ast.iter_child_nodes(node):
        yield from preorder(child)


def wrappable_ranges(fn: ast.FunctionDef, unit: Unit, accept: Callable) -> list[tuple[list, int, int]]:
    """(block, start, stop) of statement runs that may move under a branch or loop: no jumps, and
    nothing first defined inside is read outside. ``accept(run, defined_before)`` filters them."""
    order = {id(n): i for i, n in enumerate(preorder(fn))}
    params = {a.arg for a in fn.args.args}
    names = [n for n in preorder(fn) if isinstance(n, ast.Name)]
    out = []
    for body in blocks(fn):
        for start in range(len(body)):
            for stop in range(start + 1, min(start + 4, len(body)) + 1):
                run = body[start:stop]
                if jumps(run) or any(is_docstring(s) or tid_target(s) or id(s) in unit.touched for s in run):
                    break
                first = order[id(run[0])]
                inner = {id(n) for s in run for n in ast.walk(s)}
                before = params | {n.id for n in names if not isinstance(n.ctx, ast.Load) and order[id(n)] < first}
                fresh = {n.id for n in names if id(n) in inner and not isinstance(n.ctx, ast.Load)} - before
                if any(n.id in fresh and id(n) not in inner for n in names) or rebinds(run, before):
                    continue
                if accept(body, run, before):
                    out.append((body, start, stop))
    return out


def branch_condition(unit: Unit, fn: ast.FunctionDef, rng: random.Random) -> str | None:
    """A test on a variable: a scalar parameter, or (kernels) a new flag or count parameter."""
    options = []
    for a in fn.args.args:
        kind = annotation_kind(a.annotation)
        if kind == "float":
            options.append(f"{a.arg} {rng.choice(('>', '!='))} 0.0")
        elif kind == "int" and a.arg not in unit.new_params and not a.arg.endswith(ID_ENDINGS):
            options.append(f"{a.arg} {rng.choice(('>', '!='))} 0")
    if fn is unit.kernel:
        options.append("flag")
    if not options:
        return None
    choice = rng.choice(options)
    if choice == "flag":
        flag = unit.fresh(rng, FLAG_NAMES)
        unit.add_param(flag, "int")
        return flag
    return choice


def rebinds(run: list[ast.stmt], before: set[str]) -> bool:
    """True if a run gives an earlier variable a value not computed from itself (``sub = arr[2:]``):
    it may be of another type, which Warp refuses in a branch or loop; ``x = x * s`` is kept."""
    for stmt in run:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                if any(isinstance(t, ast.Name) and t.id in before and t.id not in reads for t in node.targets):
                    return True
    return False


def wrap(unit: Unit, rng: random.Random, header: Callable, accept: Callable) -> str | None:
    """Put a run of statements under the compound statement ``header(fn)`` (e.g. ``"if flag:"``)."""
    sites = [(fn, *r) for fn in unit.functions for r in wrappable_ranges(fn, unit, accept)]
    if not sites:
        return None
    fn, body, start, stop = rng.choice(sites)
    text = header(fn)
    if text is None:
        return None
    node = ast.parse(f"{text}\n    pass").body[0]
    node.body = body[start:stop]
    body[start:stop] = [node]
    unit.touched.add(id(node))
    return text


def wrap_branch(unit: Unit, rng: random.Random) -> str | None:
    def header(fn):
        test = branch_condition(unit, fn, rng)
        return None if test is None else f"if {test}:"
    text = wrap(unit, rng, header, lambda body, run, before: True)
    return text and f"wrap_branch:{text}"


def carries_state(run: list[ast.stmt], before: set[str]) -> bool:
    """True if a run accumulates (``+=``, an atomic, a local updated from its old value), so
    repeating it means something; a plain store would only be repeated."""
    for s in run:
        if isinstance(s, ast.AugAssign):
            return True
        if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id in before for t in s.targets):
            return True
        if any(isinstance(n, ast.Call) and (wp_attr(n) or "").startswith("atomic_") for n in ast.walk(s)):
            return True
    return False


def wrap_loop(unit: Unit, rng: random.Random) -> str | None:
    def header(fn):
        if fn is unit.kernel and rng.random() < 0.5:
            trips = unit.fresh(rng, ITER_NAMES)
            unit.add_param(trips, "int")
        else:
            trips = str(rng.choice((2, 3, 4)))
        return f"for _ in range({trips}):"
    in_loops = {id(b) for fn in unit.functions for b in loop_blocks(fn)}
    text = wrap(unit, rng, header, lambda body, run, before: id(body) not in in_loops and carries_state(run, before))
    return text and f"wrap_loop:{text}"


MUTATIONS: dict[str, tuple[Callable[[Unit, random.Random], str | None], float]] = {
    "swap_builtin": (swap_builtin, 1.0),
    "swap_operator": (swap_operator, 1.0),
    "hoist": (hoist, 1.0),
    "inline": (inline, 0.7),
    "reorder": (reorder, 0.8),
    "guard": (guard, 0.4),
    "wrap_branch": (wrap_branch, 0.3),
    "wrap_loop": (wrap_loop, 0.3),
}
# control added around real statements: each at most once, and at most two of them (more reads
# like vandalism, not code)
CONTROL = ("guard", "wrap_branch", "wrap_loop")
MAX_CONTROL = 2


# ---------------------------------------------------------------------------------------------
# dtype: float32 <-> float64 across the whole unit

F32_TO_F64 = {"float32": "float64", "vec2": "vec2d", "vec3": "vec3d", "vec4": "vec4d", "vec2f": "vec2d",
              "vec3f": "vec3d", "vec4f": "vec4d", "mat22": "mat22d", "mat33": "mat33d", "mat44": "mat44d",
              "mat22f": "mat22d", "mat33f": "mat33d", "mat44f": "mat44d", "quat": "quatd", "quatf": "quatd",
              "transform": "transformd", "transformf": "transformd", "spatial_vector": "spatial_vectord",
              "spatial_vectorf": "spatial_vectord", "spatial_matrix": "spatial_matrixd",
              "spatial_matrixf": "spatial_matrixd"}
F64_TO_F32 = {"float64": "float32", "vec2d": "vec2", "vec3d": "vec3", "vec4d": "vec4", "mat22d": "mat22",
              "mat33d": "mat33", "mat44d": "mat44", "quatd": "quat", "transformd": "transform",
              "spatial_vectord": "spatial_vector", "spatial_matrixd": "spatial_matrix"}


def dtype_options(tree: ast.AST) -> tuple[str, ...]:
    """The dtype changes a unit admits: to "float64" if it uses only float32 types, to "float32"
    if only float64 ones."""
    attrs = {wp_attr(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    f32 = bool(attrs & set(F32_TO_F64)) or any(isinstance(n, ast.Name) and n.id == "float" for n in ast.walk(tree))
    f64 = bool(attrs & set(F64_TO_F32))
    if f32 and not f64:
        return ("float64",)
    if f64 and not f32:
        return ("float32",)
    return ()


class _ToFloat64(ast.NodeTransformer):
    """float32 types -> float64 ones; ``float`` -> ``wp.float64``; float literals in arithmetic
    wrapped in ``wp.float64(...)`` (Warp types a bare literal as float32)."""

    def visit_Attribute(self, node):
        if wp_attr(node) in F32_TO_F64:
            node.attr = F32_TO_F64[node.attr]
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == "float" and isinstance(node.ctx, ast.Load):
            return ast.Attribute(ast.Name("wp", ast.Load()), "float64", ast.Load())
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        attr = wp_attr(node)
        keep = is_constructor(attr) or attr == "float64"
        node.args = [a if keep or not is_float_literal(a) else as_f64(a) for a in node.args]
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        node.left = as_f64(node.left) if is_float_literal(node.left) else node.left
        node.right = as_f64(node.right) if is_float_literal(node.right) else node.right
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        node.comparators = [as_f64(c) if is_float_literal(c) else c for c in node.comparators]
        return node


def as_f64(node: ast.expr) -> ast.expr:
    return ast.Call(ast.Attribute(ast.Name("wp", ast.Load()), "float64", ast.Load()), [node], [])


class _ToFloat32(ast.NodeTransformer):
    def visit_Attribute(self, node):
        if wp_attr(node) in F64_TO_F32:
            node.attr = F64_TO_F32[node.attr]
        return self.generic_visit(node)


def change_dtype(unit: Unit, target: str) -> str:
    unit.tree = (_ToFloat64() if target == "float64" else _ToFloat32()).visit(unit.tree)
    unit.kernel = next(n for n in unit.functions if n.name == unit.kernel_name)
    return f"dtype:{target}"


# ---------------------------------------------------------------------------------------------
# cosmetic mutations: names by role, constants

ROLE_GROUPS: tuple[tuple[str, ...], ...] = (
    ("tid", "i", "idx", "index", "thread_id"), ("x", "p", "pos", "position", "point"),
    ("v", "vel", "velocity"), ("f", "force"), ("m", "mass"), ("inv_mass", "inv_m", "w"),
    ("n", "normal", "nrm"), ("d", "dist", "distance"), ("q", "rot", "rotation"), ("r", "radius"),
    ("c", "center", "centre"), ("out", "output", "result", "res"), ("src", "source", "inp", "input_values"),
    ("dst", "dest", "target"), ("values", "vals", "data"), ("value", "val"), ("count", "num", "total_count"),
    ("counter", "cnt"), ("dir", "direction", "ray_dir"), ("lower", "lo", "lower_bound"),
    ("upper", "hi", "upper_bound"), ("scale", "factor", "s"), ("offset", "shift"), ("color", "col", "rgb"),
    ("err", "error", "residual"), ("grad", "gradient", "g"), ("sum", "acc", "accum"), ("loss", "cost"),
    ("points", "positions", "pts"), ("indices", "ids", "idxs"), ("state", "rng_state", "rng"),
    ("seed", "rng_seed"), ("mesh_id", "mesh"), ("bvh_id", "bvh"), ("face", "face_index", "tri"),
    ("eps", "epsilon", "tol"), ("t", "time"), ("arr", "array_in", "buf"),
    ("width", "nx"), ("height", "ny"), ("depth", "nz"), ("max_dist", "max_distance"),
    ("normal_vel", "vn"), ("tangent_vel", "vt"),
)
ROLE_OF = {name: group for group in ROLE_GROUPS for name in group}
CONSTANT_FACTORS = (0.5, 0.75, 0.8, 1.25, 1.5, 2.0)


def rename_by_role(unit: Unit, rng: random.Random, p: float = 0.5) -> list[str]:
    """Rename some locals (and the kernel's parameters) to another name of their role."""
    done = []
    for fn in unit.functions:
        params = {a.arg for a in fn.args.args}
        stores = sorted({n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})
        names = sorted(set(stores) | (params - set(unit.new_params))) if fn is unit.kernel else sorted(set(stores) - params)
        tids = {tid_target(st) for body in blocks(fn) for st in body} - {None}
        for old in names:
            group = ROLE_OF.get(old)
            # a one-letter name says little of its role: only the thread index is sure
            if group is None or (len(old) == 1 and old not in tids) or rng.random() >= p:
                continue
            taken = unit.taken() | RESERVED
            options = [g for g in group if g != old and g not in taken]
            if options:
                new = rng.choice(options)
                rename_in(fn, old, new)
                done.append(f"rename:{old}->{new}")
    return done


def rename_in(fn: ast.FunctionDef, old: str, new: str) -> None:
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == old:
            node.id = new
        elif isinstance(node, ast.arg) and node.arg == old:
            node.arg = new


def perturb_constants(unit: Unit, rng: random.Random, p: float = 0.35) -> list[str]:
    """Scale some float literals of function bodies by a round factor (0.0 and 1.0 mostly stay:
    they are often structural, an axis or an identity)."""
    done = []
    for fn in unit.functions:
        for stmt in fn.body:
            for node in ast.walk(stmt):
                if not is_float_literal(node) or rng.random() >= p:
                    continue
                if node.value in (0.0, 1.0) and rng.random() < 0.85 or not math.isfinite(node.value):
                    continue
                base = node.value if node.value != 0.0 else 0.1
                new = float(f"{base * rng.choice(CONSTANT_FACTORS):.2g}")
                if new != node.value:
                    done.append(f"constant:{node.value!r}->{new!r}")
                    node.value = new
    return done


# ---------------------------------------------------------------------------------------------
# the driver


def similarity(a: str, b: str) -> float:
    return jaccard(shingles(norm_tokens(a), 4), shingles(norm_tokens(b), 4))


def mutate(kernel: reference.RealKernel, rng: random.Random, suffix: str,
           dtypes: tuple[str, ...] = ()) -> tuple[str, str, list[str]]:
    """A mutant of ``kernel``: (source, kernel name, mutations applied, in order).

    ``dtypes`` are the whole-unit dtype changes known to build for this seed. Raises
    ``MutationError`` when the structural mutations run out before the mutant is less than
    ``MAX_SIMILARITY`` similar to the seed.
    """
    unit = Unit(kernel, suffix)
    applied: list[str] = []
    bases = [shingles(norm_tokens(kernel.context), 4)]
    if dtypes and rng.random() < 0.3:
        applied.append(change_dtype(unit, rng.choice(dtypes)))
        # distance counts from the retyped seed too: every mutant that retypes a seed retypes it
        # the same way, so the change alone would leave those mutants alike
        bases.append(shingles(norm_tokens(unit.render()), 4))
    # a target below the limit, drawn per mutant, so two mutants of one seed rarely end up alike
    target = rng.uniform(MIN_TARGET, MAX_SIMILARITY)
    structural = apply_structural(unit, rng, bases, target)
    if not far_enough(unit, bases):
        raise MutationError(kernel.name, "too close to its seed after every applicable mutation")
    applied += structural + rename_by_role(unit, rng) + perturb_constants(unit, rng)
    return unit.render(), unit.kernel_name, applied


def far_enough(unit: Unit, bases: list[set[str]], limit: float = MAX_SIMILARITY) -> bool:
    mine = shingles(norm_tokens(unit.render()), 4)
    return all(jaccard(base, mine) < limit for base in bases)


def apply_structural(unit: Unit, rng: random.Random, bases: list[set[str]], target: float) -> list[str]:
    """Structural mutations drawn by weight: at least a few, then until the unit is far enough."""
    applied: list[str] = []
    kinds = dict(MUTATIONS)
    wanted = rng.randint(2, 4)
    for _ in range(MAX_STEPS):
        if not kinds or (len(applied) >= wanted and far_enough(unit, bases, target)):
            break
        names = sorted(kinds)
        kind = rng.choices(names, [kinds[n][1] for n in names])[0]
        desc = kinds[kind][0](unit, rng)
        if desc is not None:
            applied.append(desc)
        if desc is None or kind in CONTROL:
            del kinds[kind]
        if sum(a.split(":")[0] in CONTROL for a in applied) >= MAX_CONTROL:
            kinds = {k: v for k, v in kinds.items() if k not in CONTROL}
    return applied


# ---------------------------------------------------------------------------------------------
# seeds


@dataclass(frozen=True, slots=True)
class Seed:
    module: str
    path: str
    name: str
    line: int
    dtypes: tuple[str, ...] = ()  # whole-unit dtype changes that build too
    block_dim: int | None = None  # launch block size of a tile kernel, None for the module default

    def to_dict(self) -> dict:
        row = {"module": self.module, "path": self.path, "name": self.name, "line": self.line,
               "dtypes": list(self.dtypes)}
        if self.block_dim is not None:
            row["block_dim"] = self.block_dim
        return row


@functools.cache
def seeds() -> tuple[Seed, ...]:
    """The committed seed list, restricted to kernels the installed Warp still has."""
    rows = json.loads(SEEDS_FILE.read_text())["seeds"]
    index = _seed_index()
    found = tuple(Seed(r["module"], r["path"], r["name"], r["line"], tuple(r.get("dtypes", ())), r.get("block_dim"))
                  for r in rows)
    found = tuple(s for s in found if (s.path, s.name, s.line) in index)
    if not found:
        raise MutationError("-", f"no seed of {SEEDS_FILE.name} is in this Warp; run --rebuild-seeds")
    return found


@functools.cache
def _seed_index() -> dict[tuple[str, str, int], reference.RealKernel]:
    return {(k.path, k.name, k.line): k for k in reference.kernels("seed")}


def seed_kernel(seed: Seed) -> reference.RealKernel:
    return _seed_index()[(seed.path, seed.name, seed.line)]


def eligible(kernel: reference.RealKernel) -> bool:
    """A candidate seed: self-contained, concrete types, no native or custom-gradient functions,
    and it does something (writes memory or calls something other than ``wp.tid``). Tile kernels
    and ``wp.static`` expressions are candidates: the build at rebuild time decides."""
    if not kernel.self_contained or kernel.generic:
        return False
    tree = ast.parse(kernel.context)
    attrs = {wp_attr(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    if attrs & {"func_native", "func_grad", "func_replay"}:
        return False
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel.name)
    return any((isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store))
               or (isinstance(n, ast.Call) and not is_pure_call(n) and wp_attr(n) != "tid") for n in body_nodes(fn))


DEFAULT_BLOCK_DIM = 64
BLOCK_DIM_NAMES = ("TILE_THREADS", "BLOCK_DIM", "TILE_DIM", "NUM_THREADS", "TILE_SIZE", "BLOCK_SIZE")


def int_constants(tree: ast.Module) -> dict[str, int]:
    """Module-level ``NAME = 64`` and ``NAME = wp.constant(64)``."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value.args[0] if isinstance(node.value, ast.Call) and wp_attr(node.value) == "constant" \
                and node.value.args else node.value
            if isinstance(value, ast.Constant) and type(value.value) is int:
                out[node.targets[0].id] = value.value
    return out


def launched_block_dims(tree: ast.Module) -> list[tuple[str | None, int]]:
    """(launched kernel's name, block_dim) of every launch in a file whose ``block_dim=`` is a
    literal or a module-level constant."""
    constants = int_constants(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        given = next((k.value for k in node.keywords if k.arg == "block_dim"), None)
        value = given.value if isinstance(given, ast.Constant) else \
            constants.get(given.id) if isinstance(given, ast.Name) else None
        if type(value) is not int or value < 1:
            continue
        target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "kernel"), None)
        name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
        out.append((name, value))
    return out


def launch_block_dim(kernel: reference.RealKernel) -> int | None:
    """The block_dim a tile kernel's file launches it with (its own launch, else the file's most
    common one, else a constant like ``TILE_THREADS``, else 64); None for other kernels."""
    if not uses_tiles(ast.parse(kernel.context)):
        return None
    path = dict(reference.reference_files()).get(kernel.path)
    tree = ast.parse(path.read_text(encoding="utf-8")) if path is not None else ast.Module([], [])
    launches = launched_block_dims(tree)
    own = [v for name, v in launches if name == kernel.name]
    for values in (own, [v for _, v in launches]):
        if values:
            return max(sorted(set(values)), key=values.count)
    constants = int_constants(tree)
    return next((constants[n] for n in BLOCK_DIM_NAMES if n in constants), DEFAULT_BLOCK_DIM)


@functools.cache
def seed_weights() -> tuple[float, ...]:
    """Draw weights of ``seeds()``: the square root of a seed's token count, so that larger kernels
    (more places to mutate, fewer mutants alike) come up more often than one-liners."""
    return tuple(math.sqrt(len(norm_tokens(seed_kernel(s).context))) for s in seeds())


def mutable(kernel: reference.RealKernel, tries: int = 4) -> bool:
    """True if structural mutations can take the kernel far enough from itself (not a one-liner)."""
    for t in range(tries):
        try:
            mutate(kernel, random.Random(f"probe:{t}"), "probe")
            return True
        except MutationError:
            pass
    return False


@dataclass(slots=True)
class _Candidate:  # what build_batch needs of a spec
    name: str
    source: str


def builds(sources: dict[str, str], tag: str, block_dim: int | None = None) -> set[str]:
    """Names of the kernels (name -> source, one module) that build and compile for CPU and CUDA
    when launched with ``block_dim`` (None: the module's)."""
    from jit.code.extraction.compile import compile_batch
    from jit.code.synthesis.batch_generator import build_batch

    specs = [_Candidate(n, s) for n, s in sources.items()]
    items, _, handle, made = build_batch(specs, ("cpu", "cuda"), True, f"jit_mutant_seeds_{tag}", block_dim)
    if handle is None:
        return set()
    try:
        ok = {spec.name for spec, _, _ in items}
        kernels = [k for _, k, _ in items]
        if not kernels:
            return set()
        for device in ("cpu", "cuda"):
            verdict, _ = compile_batch(handle.module, kernels, device, build=made.get(device), block_dim=block_dim)
            ok -= {name for name, reason in verdict.items() if reason}
        return ok
    finally:
        handle.release()


def rebuild_seeds(path: Path = SEEDS_FILE, batch: int = 48, log=print) -> list[Seed]:
    """Select the seed-half kernels that build (tile kernels at their launch block_dim), and the
    dtype changes that build for them."""
    by_dim: dict[int | None, list[reference.RealKernel]] = {}
    for k in reference.kernels("seed"):
        if eligible(k) and mutable(k):
            by_dim.setdefault(launch_block_dim(k), []).append(k)
    log(f"{sum(map(len, by_dim.values()))} eligible seed-half kernels")
    chosen: list[Seed] = []
    for block_dim in sorted(by_dim, key=lambda b: -1 if b is None else b):
        candidates = by_dim[block_dim]
        for start in range(0, len(candidates), batch):
            chosen += build_seeds(candidates[start:start + batch], f"{block_dim or 0}_{start}", block_dim)
            log(f"  block_dim {block_dim}: {start + batch}/{len(candidates)}: {len(chosen)} seeds")
    chosen.sort(key=lambda s: (s.path, s.line))
    dist = reference.distribution()
    rows = ",\n".join(json.dumps(s.to_dict(), separators=(",", ":")) for s in chosen)  # one seed a line
    path.write_text(f'{{"distribution": {json.dumps(dist)},\n"seeds": [\n{rows}\n]}}\n')
    return chosen


def build_seeds(group: list[reference.RealKernel], tag: str, block_dim: int | None) -> list[Seed]:
    """The kernels of ``group`` that build alone, each with the dtype changes that build too."""
    units = {f"{k.name}_s{tag}_{i}": (k, Unit(k, f"s{tag}_{i}")) for i, k in enumerate(group)}
    good = builds({n: u.render() for n, (_, u) in units.items()}, f"b{tag}", block_dim)
    variants = {}
    for n in sorted(good):
        k, unit = units[n]
        for target in dtype_options(unit.tree):
            variant = Unit(k, f"{n.rsplit('_s', 1)[1]}_{target}")
            change_dtype(variant, target)
            variants[variant.kernel_name] = (n, target, variant.render())
    dtype_ok = builds({v: src for v, (_, _, src) in variants.items()}, f"d{tag}", block_dim) if variants else set()
    out = []
    for n in sorted(good, key=lambda n: (units[n][0].path, units[n][0].line)):
        k = units[n][0]
        targets = tuple(t for v, (owner, t, _) in sorted(variants.items()) if owner == n and v in dtype_ok)
        out.append(Seed(k.module, k.path, k.name, k.line, targets, block_dim))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jit.code.synthesis.mutate", description=__doc__.split("\n")[0])
    p.add_argument("--rebuild-seeds", action="store_true", help=f"rewrite {SEEDS_FILE.name} from the installed Warp")
    p.add_argument("--show", type=int, metavar="N", help="print N mutants (run seed 0) with their seed kernel and mutations")
    args = p.parse_args(argv)
    if args.rebuild_seeds:
        found = rebuild_seeds()
        print(f"wrote {len(found)} seeds to {SEEDS_FILE}")
    if args.show:
        for i in range(args.show):
            rng = random.Random(f"0:{i}:0")
            seed = rng.choices(seeds(), seed_weights())[0]
            source, name, applied = mutate(seed_kernel(seed), rng, f"{i:08x}", seed.dtypes)
            print(f"# {seed.path}:{seed.line} {seed.name}\n# {applied}\n{source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
