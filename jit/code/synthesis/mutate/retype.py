"""Mutations of types: precision of the whole unit, and the width of its vectors.

- ``precision``: float32 <-> float64 everywhere at once (annotations, casts, constructors, module
  constants, and float literals, which Warp reads as float32 unless wrapped in ``wp.float64``).
  A seed lists the changes that were seen to build (``Seed.dtypes``); only those are drawn.
- ``width``: vec3 <-> vec2 or vec3 -> vec4, for units whose vector math does not depend on the
  width: no component access, no cross products, matrices or rotations, vectors only built as
  zero, and no integer arithmetic or loop count of the width itself (``slot // 3``, ``range(3)``:
  a layout of three per item). On inputs whose extra components are zero, the wider kernel gives the narrower one's
  outputs with zeros appended (``origin`` "padded" says which arguments changed).

What it leaves out: integer widths (an index type is not a precision), and half precision
(Warp's float16 arithmetic is not the float32 one rounded).
"""

from __future__ import annotations

import ast
import math
import random
import re

from jit.code.synthesis.mutate.syntax import call_name, is_constructor, is_float_literal, wp_attr, walk
from jit.code.synthesis.mutate.unit import Unit

F32_TO_F64 = {
    "float32": "float64",
    "vec2": "vec2d",
    "vec3": "vec3d",
    "vec4": "vec4d",
    "vec2f": "vec2d",
    "vec3f": "vec3d",
    "vec4f": "vec4d",
    "mat22": "mat22d",
    "mat33": "mat33d",
    "mat44": "mat44d",
    "mat22f": "mat22d",
    "mat33f": "mat33d",
    "mat44f": "mat44d",
    "quat": "quatd",
    "quatf": "quatd",
    "transform": "transformd",
    "transformf": "transformd",
    "spatial_vector": "spatial_vectord",
    "spatial_vectorf": "spatial_vectord",
    "spatial_matrix": "spatial_matrixd",
    "spatial_matrixf": "spatial_matrixd",
}
F64_TO_F32 = {
    "float64": "float32",
    "vec2d": "vec2",
    "vec3d": "vec3",
    "vec4d": "vec4",
    "mat22d": "mat22",
    "mat33d": "mat33",
    "mat44d": "mat44",
    "quatd": "quat",
    "transformd": "transform",
    "spatial_vectord": "spatial_vector",
    "spatial_matrixd": "spatial_matrix",
}


# names of buffers a renderer reads (vertex buffers, colours, images): float32 by what reads them
RENDER_BUFFER = re.compile(r"vbo|gfx|render|pixel|colou?r|rgb", re.IGNORECASE)


PRECISION_NAME = re.compile(r"(?:^|_)(?:float|double|half|f16|f32|f64|float16|float32|float64|fp16|fp32|fp64)(?:_|$)")


def precision_options(tree: ast.AST) -> tuple[str, ...]:
    """ "float64" if the unit uses only float32 types, "float32" if only float64 ones; nothing for
    a unit that fills a renderer's buffers."""
    if any(RENDER_BUFFER.search(n.arg) for n in walk(tree) if isinstance(n, ast.arg)):
        return ()
    # a function named for its precision (``adam_step_kernel_float``) keeps it
    if any(PRECISION_NAME.search(n.name) for n in walk(tree) if isinstance(n, ast.FunctionDef)):
        return ()
    attrs = {wp_attr(n) for n in walk(tree) if isinstance(n, ast.Attribute)}
    f32 = bool(attrs & set(F32_TO_F64)) or any(isinstance(n, ast.Name) and n.id == "float" for n in walk(tree))
    f64 = bool(attrs & set(F64_TO_F32))
    if f32 and not f64:
        return ("float64",)
    if f64 and not f32:
        return ("float32",)
    return ()


def wp_call(name: str, arg: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name("wp", ast.Load()), name, ast.Load()), [arg], [])


class _Rename(ast.NodeTransformer):
    """Warp type names by ``table``; the Python ``float`` to ``wp.<float_to>`` when given."""

    def __init__(self, table: dict[str, str], float_to: str | None = None):
        self.table, self.float_to = table, float_to

    def visit_Attribute(self, node):
        if wp_attr(node) in self.table:
            node.attr = self.table[node.attr]
        return self.generic_visit(node)

    def visit_Name(self, node):
        if self.float_to and node.id == "float" and isinstance(node.ctx, ast.Load):
            return ast.Attribute(ast.Name("wp", ast.Load()), self.float_to, ast.Load())
        return node


class _UnwrapFloat32(ast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        if wp_attr(node) == "float32" and len(node.args) == 1 and is_float_literal(node.args[0]):
            return node.args[0]  # a float32 literal needs no cast
        return node


def _wrap_literals(fn: ast.FunctionDef) -> None:
    """Float literals of a function body as float64 (Warp reads a bare one as float32), except
    the arguments of casts and of constructors made of literals only, which take their type from
    the call (``wp.vec3d(0.0, 1.0, 0.0)``); a literal beside float64 values is written as one
    (``wp.vec3d(wp.float64(0.0), x[1], x[2])``)."""
    protected = {
        id(a)
        for n in walk(fn)
        if isinstance(n, ast.Call)
        and (call_name(n) == "float" or (is_constructor(wp_attr(n)) and all(is_float_literal(a) for a in n.args)))
        for a in n.args
    }
    for stmt in fn.body:
        for parent in walk(stmt):
            for field, value in ast.iter_fields(parent):
                if is_float_literal(value) and id(value) not in protected:
                    setattr(parent, field, wp_call("float64", value))
                elif isinstance(value, list):
                    for i, item in enumerate(value):
                        if is_float_literal(item) and id(item) not in protected:
                            value[i] = wp_call("float64", item)


def float_constant(node: ast.stmt) -> ast.Call | ast.Assign | None:
    """The node holding the value of a module-level ``NAME = <float>`` (the assignment) or
    ``NAME = wp.constant(<float>)`` (the call)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    holder = (
        node.value
        if isinstance(node.value, ast.Call) and wp_attr(node.value) == "constant" and node.value.args
        else node
    )
    value = holder.args[0] if holder is not node else node.value
    try:
        result = eval(compile(ast.Expression(value), "<const>", "eval"), {"__builtins__": {}, "math": math})
    except Exception:
        return None
    return holder if type(result) is float else None


def change_precision(unit: Unit, target: str) -> str:
    if target == "float64":
        for node in unit.tree.body:
            holder = float_constant(node)
            if isinstance(holder, ast.Call):
                holder.args[0] = wp_call("float64", holder.args[0])
            elif holder is not None:
                holder.value = wp_call("float64", holder.value)
        for fn in unit.functions:
            _wrap_literals(fn)
        unit.tree = _Rename(F32_TO_F64, "float64").visit(unit.tree)
    else:
        unit.tree = _UnwrapFloat32().visit(_Rename(F64_TO_F32).visit(unit.tree))
    unit.kernel = next(n for n in unit.functions if n.name == unit.kernel_name)
    rename_precision_words(unit, target)
    return f"precision:{target}"


# the words that say a precision, in names (by ``_``-separated part) and in prose
NAME_WORDS = {
    "float64": {"float32": "float64", "f32": "f64", "fp32": "fp64"},
    "float32": {"float64": "float32", "f64": "f32", "fp64": "fp32", "double": "float"},
}
PROSE_WORDS = {
    "float64": {"float32": "float64", "f32": "f64", "fp32": "fp64", "single precision": "double precision",
                "single-precision": "double-precision", "32-bit float": "64-bit float"},
    "float32": {"float64": "float32", "f64": "f32", "fp64": "fp32", "double precision": "single precision",
                "double-precision": "single-precision", "64-bit float": "32-bit float"},
}


def renamed_identifier(name: str, words: dict[str, str]) -> str:
    """``scale_float32_kernel`` -> ``scale_float64_kernel``: every ``_``-separated part that says
    a precision, said the other way (a leading or trailing ``_`` kept)."""
    parts = name.split("_")
    # a leading ``double`` is the verb (``double_values``), not the type
    return "_".join(words[p.lower()] if p.lower() in words and (i or p != "double") else p for i, p in enumerate(parts))


def rename_precision_words(unit: Unit, target: str) -> None:
    """A retyped unit's names, docstrings and comments say its new precision: a kernel called
    ``..._float32`` that now reads float64 arrays would tell a reader something false."""
    words = NAME_WORDS[target]
    fields = {n.attr for n in walk(unit.tree) if isinstance(n, ast.Attribute)}  # struct fields stay
    renames = {}
    said: dict[str, str] = {}  # each identifier is read once, however often it is used
    for node in walk(unit.tree):
        for field in ("name", "id", "arg"):
            value = getattr(node, field, None)
            if isinstance(value, str) and not isinstance(node, ast.alias) and value not in fields:
                new = said.get(value)
                if new is None:
                    new = said[value] = renamed_identifier(value, words)
                if new != value:
                    renames[value] = new
    taken = unit.taken()
    renames = {old: new for old, new in renames.items() if new not in taken}
    for node in walk(unit.tree):
        for field in ("name", "id", "arg"):
            value = getattr(node, field, None)
            if isinstance(value, str) and value in renames and not isinstance(node, ast.alias):
                setattr(node, field, renames[value])
    for old, new in renames.items():
        unit.claim(new)
        unit.launch.rename(old, new)
        unit.rename_in_comments(old, new)
    if unit.kernel_name in renames:
        unit.kernel_name = renames[unit.kernel_name]
    prose = PROSE_WORDS[target]
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(prose, key=len, reverse=True)) + r")\b")
    for _, note in unit.notes.statements.values():
        note.comments = [pattern.sub(lambda m: prose[m.group(1)], c) for c in note.comments]
        if note.trailing:
            note.trailing = pattern.sub(lambda m: prose[m.group(1)], note.trailing)
    for node in [*unit.functions, *unit.structs.values()]:
        if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            doc = node.body[0].value
            if isinstance(doc.value, str):
                doc.value = pattern.sub(lambda m: prose[m.group(1)], doc.value)


def precision(unit: Unit, rng: random.Random, options: tuple[str, ...] = ()) -> str | None:
    return change_precision(unit, rng.choice(options)) if options else None


# ---------------------------------------------------------------------------------------------
# vector width

WIDTH_SAFE = frozenset(
    {
        "dot",
        "length",
        "length_sq",
        "normalize",
        "abs",
        "min",
        "max",
        "lerp",
        "cw_mul",
        "cw_div",
        "neg",
        "norm_l1",
        "norm_l2",
        "norm_huber",
        "norm_pseudo_huber",
        "smooth_normalize",
        "select",
        "where",
        "atomic_add",
        "atomic_sub",
        "tid",
        "sqrt",
        "exp",
        "log",
        "sin",
        "cos",
        "tan",
        "pow",
        "floor",
        "ceil",
        "clamp",
        "float",
        "int",
        "float32",
        "float64",
        "int32",
        "sign",
        "step",
        "nonzero",
        "isfinite",
        "isnan",
        "constant",
        "acos",
        "asin",
        "atan",
        "atan2",
        "tanh",
        "sinh",
        "cosh",
        "round",
        "trunc",
        "mod",
        "log2",
        "log10",
        "degrees",
        "radians",
        "leaky_max",
        "leaky_min",
    }
)
VEC = re.compile(r"^vec([234])([fdh]?)$")
WIDTHS = {"3": ("2", "4"), "2": ("3",)}


def width_change(unit: Unit) -> str | None:
    """The width the unit's float vectors can change from, if they can (not inside structs: a
    launch would have to pad a field)."""
    if unit.structs:
        return None
    widths = set()
    for node in walk(unit.tree):
        attr = wp_attr(node) if isinstance(node, (ast.Attribute, ast.Call)) else None
        if attr is None:
            continue
        m = VEC.match(attr)
        if m:
            widths.add(m.group(1))
            if isinstance(node, ast.Call) and not all(isinstance(a, ast.Constant) and a.value == 0 for a in node.args):
                return None  # a vector built from components knows its width
        elif attr.startswith(("vec", "mat", "quat", "transform", "spatial", "tile", "cross", "outer")) or (
            isinstance(node, ast.Call) and attr not in WIDTH_SAFE
        ):
            return None
        if isinstance(node, ast.Attribute) and node.attr in ("x", "y", "z", "w") and wp_attr(node) is None:
            return None
    for fn in unit.functions:
        array_names = {a.arg for a in fn.args.args if isinstance(a.annotation, (ast.Subscript, ast.Call))}
        for node in walk(fn):
            if isinstance(node, ast.Attribute) and node.attr in ("x", "y", "z", "w"):
                return None
            if (
                isinstance(node, ast.Subscript)
                and not (isinstance(node.value, ast.Name) and node.value.id in array_names)
                and not _is_annotation(node, fn)
            ):
                return None  # a component, or an element of a local
    if len(widths) != 1:
        return None
    old = widths.pop()
    if counts_in(unit, int(old)):
        return None
    return old


def counts_in(unit: Unit, n: int) -> bool:
    """True if integer arithmetic or a loop uses ``n`` (``slot // 3``, ``range(3)``): code laid out
    for vectors of ``n`` components (3 edges per corner of a cube), which another width breaks."""
    for node in walk(unit.tree):
        operands = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Call) and call_name(node) == "range":
            operands = list(node.args)
        if any(isinstance(o, ast.Constant) and type(o.value) is int and o.value == n for o in operands):
            return True
    return False


def _is_annotation(node: ast.AST, fn: ast.FunctionDef) -> bool:
    return any(node is sub for a in fn.args.args if a.annotation is not None for sub in walk(a.annotation))


def width(unit: Unit, rng: random.Random) -> str | None:
    old = width_change(unit)
    if old is None or old not in WIDTHS:
        return None
    new = rng.choice(WIDTHS[old])
    for node in walk(unit.tree):
        if isinstance(node, ast.Attribute) and (m := VEC.match(node.attr)) and wp_attr(node):
            node.attr = f"vec{new}{m.group(2)}"
        if isinstance(node, ast.Call) and (m := VEC.match(wp_attr(node) or "")):
            node.args = []
    vector_args = {
        a.arg
        for a in unit.kernel.args.args
        if a.annotation is not None
        and any(isinstance(n, ast.Attribute) and VEC.match(n.attr) for n in walk(a.annotation))
    }
    for arg in unit.launch.args:
        if arg.name in vector_args:
            arg.origin = ("padded", arg.origin[1] if arg.origin else arg.name)
    unit.rename_in_comments(f"vec{old}", f"vec{new}")
    return f"width:vec{old}->vec{new}"
