"""Data layout mutations: an array of structs <-> separate arrays, as real code switches between them.

- an array of structs whose elements are only reached through fields becomes one array per
  field the kernel uses (``particles[i].vel`` -> ``particle_vel[i]``);
- read-only arrays that name one thing's attributes (``instance_transforms[i]``,
  ``instance_scalings[i]``) and are read at the same index become the fields of one struct
  array (``instances[i].transform``, ``instances[i].scaling``).

The kernel computes the same values from the same numbers; only where they live changes, and
each new launch argument says which seed argument it holds (``Arg.origin``). What it leaves
out: splitting a vector array into one array per component (``points_x``, ``points_y``: Warp
code keeps vectors whole), packing arrays whose names share no owner (a struct named
``Record`` with fields ``a`` and ``b`` says nothing), arrays passed to functions, and arrays
indexed by anything but names and constants.
"""

from __future__ import annotations

import ast
import copy
import random
import re

from jit.code.synthesis.mutate.launch import Arg, describe
from jit.code.synthesis.mutate.names import singular
from jit.code.synthesis.mutate.syntax import array_annotation, is_docstring, replace_node, children, walk
from jit.code.synthesis.mutate.unit import Unit



def parents(fn: ast.FunctionDef) -> dict[int, ast.AST]:
    return {id(c): p for p in walk(fn) for c in children(p)}


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
        for n in walk(s)
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
    """Read-only float arrays of one owner (``instance_*``), all read only as ``a[i]`` at the same
    index ``i``, of one shape."""
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
            head = a.arg.split("_", 1)[0]  # arrays that describe one owner (``instance_*``)
            groups.setdefault((index, launch.shape, launch.range, head), []).append(a.arg)
    best = max((g for g in groups.values() if owner(g) is not None), key=len, default=[])
    return best[:4] if len(best) >= 2 else []


def pack(unit: Unit, names: list[str]) -> str | None:
    naming = struct_naming(unit, names)
    if naming is None:
        return None
    struct, plural, fields = naming
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


BOUNDS = {"lower", "upper", "lo", "hi", "min", "max", "bounds_lower", "bounds_upper"}


def owner(names: list[str]) -> str | None:
    """The thing arrays ``instance_transforms``, ``instance_scalings`` describe (``instance``),
    when they all name one."""
    heads = {n.split("_", 1)[0] for n in names}
    if len(heads) != 1 or not all("_" in n.strip("_") for n in names):
        return None
    head = singular(next(iter(heads)))
    return head if len(head) > 2 and head.isalpha() else None


def struct_naming(unit: Unit, names: list[str]) -> tuple[str, str, dict[str, str]] | None:
    """(struct class name with the unit's suffix, array name, field of each array), or None when
    the arrays name no common owner or the names are taken."""
    head = owner(names)
    if head is None:
        return None
    fields = {n: singular(n.split("_", 1)[1]) for n in names}
    if len(set(fields.values())) != len(fields) or not all(f.isidentifier() for f in fields.values()):
        return None
    struct = head.capitalize()
    if set(fields.values()) <= BOUNDS:  # only a box's corners: the owner's bounds, not the owner
        struct += "Bounds"
    struct = f"{struct}_{unit.suffix}" if unit.suffix else struct
    plural = f"{head}es" if head.endswith(("s", "x", "sh", "ch")) else f"{head}s"
    if struct.startswith(f"{head.capitalize()}Bounds"):
        plural = f"{head}_bounds"
    taken = unit.taken()
    if plural in taken or struct in taken:
        return None
    return unit.claim(struct), unit.claim(plural), fields


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
    options = [("split_struct", n) for n in splittable_structs(unit, up) if n not in named]
    group = [n for n in packable(unit, up) if n not in named]
    if len(group) >= 2 and owner(group) is not None:
        options.append(("pack", group))
    if not options:
        return None
    kind, target = rng.choice(options)
    if kind == "split_struct":
        return split_struct(unit, rng, target)
    return pack(unit, target)
