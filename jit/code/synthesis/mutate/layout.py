"""Data layout mutations: an array of structs <-> separate arrays, as real code switches between them.

- a vector array becomes one array per component (``points`` -> ``points_x``, ``points_y``...):
  reads build the vector back, stores write each component;
- an array of structs whose elements are only reached through fields becomes one array per
  field the kernel uses (``particles[i].vel`` -> ``particle_vel[i]``);
- read-only arrays read at the same index become the fields of one struct array
  (``x[i]``, ``v[i]`` -> ``particles[i].x``, ``particles[i].v``).

The kernel computes the same values from the same numbers; only where they live changes, and
each new launch argument says which seed argument it holds (``Arg.origin``). What it leaves
out: arrays passed to functions, updated atomically or with ``+=`` as whole vectors (a split
would change what the update means), and arrays indexed by anything but names and constants.
"""

from __future__ import annotations

import ast
import copy
import random
import re

from jit.code.synthesis.mutate.launch import Arg, describe
from jit.code.synthesis.mutate.moves import element_names, hoist_names
from jit.code.synthesis.mutate.syntax import replace_node, array_annotation, is_docstring, wp_attr
from jit.code.synthesis.mutate.unit import Unit

COMPONENTS = "xyzw"
STRUCT_NAMES = (("Element", "elements"), ("Sample", "samples"), ("Record", "records"))


def parents(fn: ast.FunctionDef) -> dict[int, ast.AST]:
    return {id(c): p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}


def simple_index(node: ast.expr) -> bool:
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return all(isinstance(p, (ast.Name, ast.Constant)) for p in parts)


def uses(unit: Unit, name: str, up: dict[int, ast.AST] | None = None) -> list[tuple[ast.Name, ast.AST, ast.AST]]:
    """(use, its parent, its grandparent) of every read of kernel parameter ``name`` (``up``:
    the kernel's ``parents``, when the caller has them)."""
    up = up if up is not None else parents(unit.kernel)
    return [
        (n, up.get(id(n)), up.get(id(up.get(id(n)))))
        for s in unit.kernel.body
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and n.id == name
    ]


def with_dtype(annotation: ast.AST, dtype: ast.expr) -> ast.AST:
    """A copy of an array annotation with another element type."""
    out = copy.deepcopy(annotation)
    if isinstance(out, ast.Subscript):
        out.slice = dtype
    else:
        kw = next((k for k in out.keywords if k.arg == "dtype"), None)
        if kw is not None:
            kw.value = dtype
        else:
            out.args[0] = dtype
    return out


def scalar_of(vector_attr: str) -> ast.expr:
    kind = vector_attr[-1] if vector_attr[-1] in "dh" else "f"
    if kind == "f":
        return ast.Name("float", ast.Load())
    return ast.Attribute(ast.Name("wp", ast.Load()), "float64" if kind == "d" else "float16", ast.Load())


# ---------------------------------------------------------------------------------------------
# a vector array -> one array per component


def splittable_vectors(unit: Unit, up: dict[int, ast.AST]) -> list[str]:
    out = []
    for a in unit.kernel.args.args:
        d = describe(a.annotation, unit.structs)
        if d is None or d[0] != "array" or d[1].kind != "vec" or d[1].scalar not in ("float32", "float64"):
            continue
        ndim, ok = d[2], True
        found = uses(unit, a.arg, up)
        for use, parent, grand in found:
            if isinstance(parent, ast.Attribute) and parent.attr == "shape":
                continue
            if not (
                isinstance(parent, ast.Subscript)
                and parent.value is use
                and simple_index(parent.slice)
                and len(parent.slice.elts if isinstance(parent.slice, ast.Tuple) else [0]) == ndim
            ):
                ok = False
            elif isinstance(parent.ctx, ast.Store):
                ok &= isinstance(grand, ast.Assign) and len(grand.targets) == 1
            else:
                ok &= not isinstance(grand, (ast.Subscript, ast.Attribute, ast.AugAssign))
        if ok and found:
            out.append(a.arg)
    return out


def split_vector(unit: Unit, rng: random.Random, name: str) -> str:
    arg = next(a for a in unit.kernel.args.args if a.arg == name)
    dtype_node = array_annotation(arg.annotation)[0]
    vec_attr = wp_attr(dtype_node)
    width = int(vec_attr[3])
    stem = "pos" if name == "x" and "pos_x" not in unit.taken() else name
    names = [unit.fresh(rng, (f"{stem}_{COMPONENTS[k]}",)) for k in range(width)]
    for use, parent, grand in uses(unit, name):
        if isinstance(parent, ast.Attribute):
            parent.value = ast.Name(names[0], ast.Load())
        elif isinstance(parent.ctx, ast.Load):
            parts = [ast.Subscript(ast.Name(n, ast.Load()), copy.deepcopy(parent.slice), ast.Load()) for n in names]
            call = ast.Call(ast.Attribute(ast.Name("wp", ast.Load()), vec_attr, ast.Load()), parts, [])
            replace_node(unit.kernel, parent, call)
        else:
            _split_store(unit, rng, grand, parent, names)
    at = unit.kernel.args.args.index(arg)
    unit.kernel.args.args[at : at + 1] = [ast.arg(n, with_dtype(arg.annotation, scalar_of(vec_attr))) for n in names]
    old = unit.launch.arg(name)
    seed_name = old.origin[1] if old.origin else name
    unit.launch.replace(
        name, [Arg(n, old.shape, old.range, old.role, ("component", seed_name, k)) for k, n in enumerate(names)]
    )
    return name


def _split_store(unit: Unit, rng: random.Random, stmt: ast.Assign, target: ast.Subscript, names: list[str]) -> None:
    for body in _bodies(unit.kernel):
        if stmt in body:
            at = body.index(stmt)
            value = stmt.value
            new = []
            if not isinstance(value, ast.Name):
                options = hoist_names(value) if isinstance(value, (ast.Call, ast.BinOp)) else ()
                local = unit.fresh(rng, options if options and options[0] != "tmp" else element_names(target.value.id))
                new.append(ast.Assign([ast.Name(local, ast.Store())], value))
                value = ast.Name(local, ast.Load())
            for k, n in enumerate(names):
                comp = ast.Subscript(ast.Name(value.id, ast.Load()), ast.Constant(k), ast.Load())
                new.append(
                    ast.Assign([ast.Subscript(ast.Name(n, ast.Load()), copy.deepcopy(target.slice), ast.Store())], comp)
                )
            body[at : at + 1] = new
            return


def _bodies(fn: ast.FunctionDef):
    for node in ast.walk(fn):
        for field in ("body", "orelse"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield value


# ---------------------------------------------------------------------------------------------
# an array of structs -> one array per field


def splittable_structs(unit: Unit, up: dict[int, ast.AST]) -> list[str]:
    out = []
    for a in unit.kernel.args.args:
        d = describe(a.annotation, unit.structs)
        if d is None or d[0] != "array" or d[1].kind != "struct":
            continue
        fields = {f for f, t in d[1].fields if t.kind != "array"}
        found = uses(unit, a.arg, up)
        ok = bool(found)
        for use, parent, grand in found:
            ok &= (
                isinstance(parent, ast.Subscript)
                and parent.value is use
                and simple_index(parent.slice)
                and isinstance(grand, ast.Attribute)
                and grand.value is parent
                and grand.attr in fields
            )
        if ok:
            out.append(a.arg)
    return out


def split_struct(unit: Unit, rng: random.Random, name: str) -> str:
    from jit.code.synthesis.mutate.infer import writes_and_reads

    arg = next(a for a in unit.kernel.args.args if a.arg == name)
    struct = unit.structs[array_annotation(arg.annotation)[0].id]
    field_types = {s.target.id: s.annotation for s in struct.body if isinstance(s, ast.AnnAssign)}
    used = []
    for use, parent, grand in uses(unit, name):
        if grand.attr not in used:
            used.append(grand.attr)
    used.sort(key=list(field_types).index)
    stem = name[:-1] if len(name) > 3 and name.endswith("s") else name
    taken = unit.taken()
    names = {f: unit.claim(f"{stem}_{f}" if f"{stem}_{f}" not in taken else f"{name}_{f}") for f in used}
    for use, parent, grand in uses(unit, name):
        new = ast.Subscript(ast.Name(names[grand.attr], ast.Load()), parent.slice, grand.ctx)
        replace_node(unit.kernel, grand, new)
    at = unit.kernel.args.args.index(arg)
    unit.kernel.args.args[at : at + 1] = [
        ast.arg(names[f], with_dtype(arg.annotation, copy.deepcopy(field_types[f]))) for f in used
    ]
    old = unit.launch.arg(name)
    seed_name = old.origin[1] if old.origin else name
    written, read = writes_and_reads(unit.kernel, unit.funcs, set(names.values()))
    new_args = []
    for f in used:
        n = names[f]
        role = ("inout" if n in read else "out") if n in written else "in"
        new_args.append(Arg(n, old.shape, old.range, role, ("field", seed_name, f)))
    unit.launch.replace(name, new_args)
    return f"layout:split {name}"


# ---------------------------------------------------------------------------------------------
# arrays read at one index -> one array of structs


def packable(unit: Unit, up: dict[int, ast.AST]) -> list[str]:
    """Read-only float arrays, all read only as ``a[i]`` at the same index ``i``, of one shape."""
    groups: dict[tuple, list[str]] = {}
    for a in unit.kernel.args.args:
        d = describe(a.annotation, unit.structs)
        launch = unit.launch.arg(a.arg)
        if (
            d is None
            or d[0] != "array"
            or d[2] != 1
            or launch is None
            or launch.role != "in"
            or d[1].kind == "struct"
            or d[1].scalar not in ("float32", "float64")
        ):
            continue
        index = None
        for use, parent, grand in uses(unit, a.arg, up):
            if not (
                isinstance(parent, ast.Subscript)
                and parent.value is use
                and isinstance(parent.slice, ast.Name)
                and isinstance(parent.ctx, ast.Load)
                and not isinstance(grand, (ast.Subscript, ast.Attribute))
            ):
                index = None
                break
            if index not in (None, parent.slice.id):
                index = None
                break
            index = parent.slice.id
        if index is not None:
            groups.setdefault((index, launch.shape, launch.range), []).append(a.arg)
    best = max(groups.values(), key=len, default=[])
    return best[:4] if len(best) >= 2 else []


def pack(unit: Unit, rng: random.Random, names: list[str]) -> str:
    struct, plural, fields = struct_naming(unit, rng, names)
    args = {a.arg: a for a in unit.kernel.args.args}
    body = [
        ast.AnnAssign(ast.Name(fields[n], ast.Store()), copy.deepcopy(array_annotation(args[n].annotation)[0]), None, 1)
        for n in names
    ]
    cls = ast.ClassDef(struct, [], [], body, [ast.Attribute(ast.Name("wp", ast.Load()), "struct", ast.Load())])
    unit.tree.body.insert(unit.tree.body.index(unit.kernel), cls)
    for n in names:
        for use, parent, grand in uses(unit, n):
            new = ast.Attribute(
                ast.Subscript(ast.Name(plural, ast.Load()), parent.slice, ast.Load()), fields[n], ast.Load()
            )
            replace_node(unit.kernel, parent, new)
    first = args[names[0]]
    packed = ast.arg(plural, with_dtype(first.annotation, ast.Name(struct, ast.Load())))
    unit.kernel.args.args = [packed if a is first else a for a in unit.kernel.args.args if a.arg not in names[1:]]
    old = [unit.launch.arg(n) for n in names]
    origin = tuple((fields[n], a.origin[1] if a.origin else n) for n, a in zip(names, old))
    unit.launch.replace(names[0], [Arg(plural, old[0].shape, old[0].range, "in", ("packed", origin))])
    for n in names[1:]:
        unit.launch.args = [a for a in unit.launch.args if a.name != n]
    return f"layout:pack {','.join(names)}"


def struct_naming(unit: Unit, rng: random.Random, names: list[str]) -> tuple[str, str, dict[str, str]]:
    """(struct class name with the unit's suffix, array name, field of each array)."""
    heads = {n.split("_", 1)[0] for n in names}
    taken = unit.taken()
    if len(heads) == 1 and all("_" in n for n in names) and len(next(iter(heads))) > 2:
        head = next(iter(heads))
        struct, plural = head.capitalize(), f"{head}s" if not head.endswith("s") else head
        fields = {n: n.split("_", 1)[1] for n in names}
    else:
        struct, plural = rng.choice(STRUCT_NAMES)
        fields = {n: n for n in names}
    struct = f"{struct}_{unit.suffix}" if unit.suffix else struct
    while plural in taken or struct in taken:
        plural, struct = plural + "_in", struct + "In"
    return unit.claim(struct), unit.claim(plural), fields


def element_type(unit: Unit, name: str) -> str:
    arg = next(a for a in unit.kernel.args.args if a.arg == name)
    return ast.dump(array_annotation(arg.annotation)[0])


def documented(unit: Unit) -> set[str]:
    """Parameters the kernel's docstring names (a layout change would leave it wrong)."""
    body = unit.kernel.body
    if not (body and is_docstring(body[0])):
        return set()
    doc = body[0].value.value
    return {a.arg for a in unit.kernel.args.args if re.search(rf"\b{re.escape(a.arg)}\b", doc)}


def layout(unit: Unit, rng: random.Random) -> str | None:
    if unit.tiled:
        return None
    named, up = documented(unit), parents(unit.kernel)
    vectors = [n for n in splittable_vectors(unit, up) if n not in named]
    options = [("split_vector", n) for n in vectors]
    options += [("split_struct", n) for n in splittable_structs(unit, up) if n not in named]
    group = [n for n in packable(unit, up) if n not in named]
    if len(group) >= 2:
        options.append(("pack", group))
    if not options:
        return None
    kind, target = rng.choice(options)
    if kind == "split_vector":  # every vector array of that type: one layout for the whole kernel
        same = [n for n in vectors if element_type(unit, n) == element_type(unit, target)]
        return "layout:split " + ",".join(split_vector(unit, rng, n) for n in same)
    if kind == "split_struct":
        return split_struct(unit, rng, target)
    return pack(unit, rng, target)
