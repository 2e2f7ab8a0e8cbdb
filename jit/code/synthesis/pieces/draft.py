"""A kernel being composed from pieces: its inputs, helpers, body, and the finished source.

``Draft.use(piece, **bound)`` wires one piece: inputs the caller binds are used as given, the
others become kernel inputs of the piece's roles (one value for all items, an array read per
item, or a field of a ``@wp.struct`` parameter group), and the piece writes its lines, inline or
as a ``@wp.func`` helper. ``finish`` lays the source out with ``layout.format_source`` and
returns an object the generator reads like a ``KernelBuilder`` (``source()``, ``params``,
``dims``, ``meta``...), whose ``meta["record"]["purpose"]`` says what the kernel is for.

Every input is described by its shape and a safe value range, so the kernel runs on random
input. The finished kernel reads as a person writes one: parameters run inputs, values, outputs;
one value takes a singular name and none is named as a helper, struct or Python builtin; a per-item
input is read once into a local, and a vector built from a magnitude (gravity) is built once. What
it leaves out: choosing a job and its pieces (``categories.composed_*``).
"""

from __future__ import annotations

import ast
import builtins
import random
import re
import textwrap
from dataclasses import dataclass

from jit.code.synthesis import types as T
from jit.code.synthesis.docs import docstring
from jit.code.synthesis.layout import format_source, merge_twins
from jit.code.synthesis.pieces.base import INDENT, PIECES, Piece, Role, Style, Writer, plural
from jit.code.synthesis.types import WType

# a vector of literals: ``wp.vec3f(0.0, 1.0, 0.0)``, ``wp.vec2d(wp.float64(0.0), wp.float64(1.0))``
LITERAL_VECTOR = re.compile(r"^\s+(?P<name>\w+) = (?P<value>wp\.vec\w*\((?:(?:wp\.float\d+\()?[-+]?[\d.e]+\)?(?:, )?)+\))$")
SKIP = "__skip_writes__"  # a placeholder line where a skipped item's writes go
OWNERS = ("particle_", "body_", "element_", "spring_")  # prefixes of per-item arrays in Warp's own code
PYTHON_BUILTINS = {n for n in dir(builtins) if n.islower() and not n.startswith("_")}
SUBSTEP_COUNTS = ("num_substeps", "substeps")
TIME_STEPS = ("dt", "delta_time", "time_step", "substep_dt", "sub_dt")  # the last of the values, as Warp orders them


@dataclass(slots=True)
class Input:
    """A kernel parameter as the generator's launch description reads it."""

    name: str
    kind: str  # array | scalar | struct | handle
    dtype: WType
    ndim: int = 1
    role: str = "in"  # in | out | inout
    value_range: tuple[float, float] = (-1.0, 1.0)
    shape: tuple[int, ...] | None = None
    spelled: str = ""
    field_ranges: dict[str, tuple[float, float]] | None = None  # a struct's fields, each its own range

    def annotation(self) -> str:
        if self.kind == "array":
            ndim = f", ndim={self.ndim}" if self.ndim > 1 else ""
            return f"wp.array(dtype={self.spelled}{ndim})"
        return self.spelled


@dataclass(slots=True)
class Composed:
    """A finished kernel, shaped as the generator expects a category's builder result."""

    name: str
    text: str
    params: list[Input]
    dims: list[int]
    funcs: list[str]
    structs: list[tuple[WType, str]]
    meta: dict
    budget: int
    block_dim: int | None = None

    def source(self) -> str:
        return self.text


@dataclass(slots=True)
class Uniform:
    """One value for all items: a plain parameter, or a field of the kernel's parameter struct."""

    name: str
    dtype: WType
    lo: float
    hi: float
    token: str
    grouped: bool = False
    value: str = ""  # how the body reads it: the name, or ``params.name``


class Draft:
    """One kernel in the making (see the module docstring)."""

    def __init__(self, rng: random.Random, suffix: str, style: Style, group: str | None = None):
        self.rng = rng
        self.suffix = suffix
        self.style = style
        self.w = Writer(style, rng, chatty=rng.random() < 0.5, suffix=suffix)
        self.w.taken |= {"wp", "tid", "float", "int", "range", "min", "max", "abs", "len"}
        self.w.reserved |= PYTHON_BUILTINS  # a local named ``dir`` or ``sum`` hides the builtin
        self.inputs: list[Input] = []
        self.uniforms: dict[str, Uniform] = {}
        self.family_per_item: dict[str, bool] = {}  # family -> its values are per item
        self.resolved: dict[Role, str] = {}  # role -> expression of the kernel input bound to it
        self.families: dict[str, int] = {}  # role family -> position of the names it took
        self.structs: list[tuple[WType, str]] = []
        self.group = group  # struct type base name for uniform parameters, or None
        self.helpers = rng.random() < 0.35  # this author factors pieces into @wp.func helpers
        self.used: list[str] = []  # pieces, in order
        self.results: dict[str, str] = {}  # helper -> the name its body gives its result
        self.differentiable = True
        self.item = "tid"  # the index of per-item arrays of the launch's items
        self.item_shape: tuple[int, ...] = ()
        self.gather_at: int | None = None  # where per-item reads go (a line of the body), once known
        self.axis_values: list[str] = []  # vectors built from a magnitude (gravity along -y)
        self.skip_writes: list[str] = []  # what items skipped early (inactive, masked) still write
        self.objects: dict[str, dict] = {}  # handle parameter -> the recipe its runtime object is built from

    # ----- inputs

    def array(self, names: str | tuple[str, ...], dtype: WType | str, role: str = "in", lo: float = -1.0,
              hi: float = 1.0, shape: tuple[int, ...] | None = None) -> str:
        """An array parameter (``dtype`` a WType or a role kind); returns its name."""
        t = self.style.wtype(dtype) if isinstance(dtype, str) else dtype
        name = self.w.fresh(*((names,) if isinstance(names, str) else names))
        shape = shape or self.item_shape
        self.inputs.append(Input(name, "array", t, len(shape), role, (lo, hi), shape, self.style.spell(t)))
        return name

    def scalar(self, names: str | tuple[str, ...], dtype: WType | str = "scalar", lo: float = -1.0,
               hi: float = 1.0, groupable: bool = True) -> str:
        """A value for all items; with a parameter group, possibly a struct field (decided at the end)."""
        t = self.style.wtype(dtype) if isinstance(dtype, str) else dtype
        name = self.w.fresh(*((names,) if isinstance(names, str) else names))
        token = f"__uniform_{name}__"
        # every setting goes into the group, the time step too (each field keeps its own range)
        grouped = bool(self.group and groupable)
        self.uniforms[name] = Uniform(name, t, lo, hi, token, grouped)
        return token

    def handle(self, names: str | tuple[str, ...], recipe: dict) -> str:
        """A ``wp.uint64`` id of a runtime object, built for a run from ``recipe`` (``checks.objects``)."""
        name = self.w.fresh(*((names,) if isinstance(names, str) else names))
        self.inputs.append(Input(name, "handle", T.UINT64, 0, "in", (0.0, 0.0), None, "wp.uint64"))
        self.objects[name] = dict(recipe)
        return name

    def count(self, names: str | tuple[str, ...], n: int) -> str:
        """An ``int`` count parameter whose value is always ``n`` (a real count the caller passes)."""
        return self.scalar(names, T.INT32, n, n, groupable=False)

    def struct(self, base: str, fields: list[tuple[str, WType]]) -> WType:
        """A ``@wp.struct`` type named ``base_<suffix>``."""
        t = WType(f"{base}_{self.suffix}", "struct", fields=tuple(fields))
        body = "\n".join(f"{INDENT}{n}: {self.style.spell(ft)}" for n, ft in fields)
        self.structs.append((t, f"@wp.struct\nclass {t.name}:\n{body}"))
        return t

    def resolve(self, role: Role, per_item: bool | None = None, names: tuple[str, ...] = ()) -> str:
        """The kernel input bound to ``role``: made on first use, the same one after.

        ``names`` overrides the role's usual names (a body's inverse mass is not a particle's).
        """
        if role in self.resolved:
            return self.resolved[role]
        if per_item is None and role.family in self.family_per_item:  # a family's values vary together
            per_item = self.family_per_item[role.family]
        if per_item is None:
            per_item = bool(self.item_shape) and self.rng.random() < role.per_item
        if role.family:
            self.family_per_item.setdefault(role.family, per_item)
        if not role.names:
            raise ValueError(f"{role.name} is derived inside kernels: a job must bind it")
        pool = names or role.names
        if not per_item:  # one value for all items takes a singular name (``mass``, not ``masses``)
            pool = tuple(n for n in pool if not plural(n)) or pool
        if role.family and role.family in self.families:
            name = pool[min(self.families[role.family], len(pool) - 1)]
        else:
            name = self.rng.choice(pool)
            if role.family:
                self.families[role.family] = pool.index(name)
        if per_item:  # an array named for many (``masses``) or for its owner (``body_inv_mass``)
            owned = [n for n in pool if n.startswith(OWNERS)]
            arr = self.array((*[n for n in pool if plural(n)], *owned, name), role.kind, lo=role.lo, hi=role.hi)
            expr = f"{arr}[{self.item}]"
            if self.gather_at is not None:  # read once, into a local named for one item
                singles = [n for n in (name, *pool) if not plural(n) and n != arr]
                singles.sort(key=lambda n: n.startswith(OWNERS))
                local = self.w.fresh(*dict.fromkeys(singles), f"{arr}_i")
                self.w.lines.insert(self.gather_at, f"{local} = {expr}")
                self.w.owned.add(local)
                self.gather_at += 1
                expr = local
        elif role.axis >= 0 and self.rng.random() < 0.6:  # gravity as its magnitude along -y
            expr = self.style.axis(role.axis, self.scalar(name, lo=role.lo, hi=role.hi))
            self.axis_values.append(expr)
        else:
            expr = self.scalar(name, role.kind, role.lo, role.hi)
        self.resolved[role] = expr
        return expr

    # ----- pieces

    def gather_here(self) -> None:
        """Per-item inputs made from now on are read into locals at this point of the body."""
        self.gather_at = len(self.w.lines)

    def use(self, name: str, inline: bool | None = None, **bound: str) -> dict[str, str]:
        """Wire piece ``name``: bound inputs as given, the others resolved by role; its outputs."""
        p = PIECES[name]
        as_helper = (self.helpers if inline is None else not inline) and len(p.gives) == 1
        if as_helper:  # no value may be named as the helper it is passed to
            self.w.reserved.add(p.name)
        args = {k: bound[k] if k in bound else self.resolve(role) for k, role in p.needs.items()}
        self.used.append(name)
        self.differentiable &= p.smooth
        if as_helper:
            return self._call_helper(p, args)
        return p(self.w, **args)

    def _call_helper(self, p: Piece, args: dict[str, str]) -> dict[str, str]:
        fname = f"{p.name}_{self.suffix}"
        if fname not in self.w.funcs:
            sub = self.w.sub(set(p.needs) | {"wp"})
            sub.owned |= set(p.needs)  # a helper updates its arguments rather than copying them
            sub.nonzero |= {k for k, v in args.items() if v in self.w.nonzero}
            sub.shared |= {k for k, v in args.items() if self.w.uniform(v)}
            (give, result), = p(sub, **{k: k for k in p.needs}).items()
            if sum(not line.strip().startswith("#") for line in sub.lines) < 2:  # one line: not worth a function
                return p(self.w, **args)
            self.results[fname] = result
            sig = ", ".join(f"{k}: {self.style.type(role.kind)}" for k, role in p.needs.items())
            # no docstring: a piece's phrase describes what the kernel does with it ("orientations advanced
            # by their angular velocity"), which over a one-item helper reads as a fragment
            body = "\n".join([*sub.lines, f"{INDENT}return {result}"])
            self.w.funcs[fname] = f"@wp.func\ndef {fname}({sig}):\n{body}"
        (give, role), = p.gives.items()
        call = f"{fname}({', '.join(args[k] for k in p.needs)})"
        state = next((args[k] for k, r in p.needs.items() if r == role and self.w.mutable(args[k])), None)
        if state is not None and self.w.in_place and self.results[fname] in p.needs:
            return {give: self.w.update(state, call)}  # the helper updates a state: ``v = damp(v, ...)``
        return {give: self.w.let((self.results[fname], *_local_names(role)), call)}

    # ----- the finished kernel

    def finish(self, base: str, dims: list[int], purpose: str, doc: str = "", tids: list[str] | None = None,
               order: str = "roles") -> Composed:
        values = {*self.uniforms, *(p.name for p in self.inputs), *self.w.taken}
        if f"{base}_{self.suffix}" in self.w.funcs or base in values:  # a helper or a value took the name
            base += "_kernel"
        name = f"{base}_{self.suffix}"
        self._hoist_loop_constants()
        self._hoist_axis_values()
        self._fill_skips()
        params = self._parameters(order)
        body = self._substitute("\n".join(self.w.lines))
        tid = ", ".join(tids or ["tid"])
        sig = ", ".join(f"{p.name}: {p.annotation()}" for p in params)
        text = "\n".join(line for line in [
            "@wp.kernel",
            f"def {name}({sig}):",
            docstring(purpose, doc, self.rng),  # "": this author wrote none
            f"{INDENT}{tid} = wp.tid()",
            textwrap.indent(body, INDENT),
        ] if line)
        funcs = [self._substitute(f) for f in self.w.funcs.values()]
        funcs, text, generic = merge_twins(funcs, text)
        used = set(re.findall(r"[A-Za-z_]\w*", text + "\n".join(funcs)))
        structs = [(t, src) for t, src in self.structs if t.name in used]
        head = ["from typing import Any\n\nimport warp as wp"] if generic else ["import warp as wp"]
        parts = [*head, *(src for _, src in structs), *funcs, text]
        source = format_source("\n\n\n".join(parts) + "\n")
        check_reads(name, body, [p.name for p in params])
        named = self.w.reserved | {t.name.rsplit("_", 1)[0] for t, _ in structs} | {base}
        check_names(name, body, [p.name for p in params], named)
        meta = {
            "deterministic": True,
            "needs_runtime_objects": False,
            "reason": None,
            "differentiable": self.differentiable,
            "record": {"purpose": purpose, "pieces": list(dict.fromkeys(self.used))},
        }
        if self.objects:
            meta["objects"] = dict(self.objects)
        return Composed(name, source, params, list(dims), funcs, structs, meta, len(self.w.lines))

    def _parameters(self, order: str) -> list[Input]:
        """Arrays read, uniform values (plain or one struct), arrays written; or as first used."""
        grouped = [u for u in self.uniforms.values() if u.grouped]
        if len(grouped) < 2:  # a group of one is just a parameter
            for u in grouped:
                u.grouped = False
            grouped = []
        uniform: list[Input] = []
        if grouped:
            t = self.struct(self.group, [(u.name, u.dtype) for u in grouped])
            arg = self.w.fresh("params", "sim_params", "config")
            ranges = {u.name: (u.lo, u.hi) for u in grouped}
            span = (min(lo for lo, _ in ranges.values()), max(hi for _, hi in ranges.values()))
            uniform.append(Input(arg, "struct", t, 0, "in", span, None, t.name, ranges))
            for u in grouped:
                u.value = f"{arg}.{u.name}"
        plain = [u for u in self.uniforms.values() if not u.grouped]
        # counts first and the time step last (a substep count just before it), as Warp's own kernels
        # order them; else as first used
        plain.sort(key=lambda u: (0 if u.dtype == T.INT32 and u.lo == u.hi else 2 if u.name in SUBSTEP_COUNTS
                                  else 3 if u.name in TIME_STEPS else 1))
        for u in plain:
            uniform.append(Input(u.name, "scalar", u.dtype, 0, "in", (u.lo, u.hi), None, self.style.spell(u.dtype)))
        # a runtime object's id leads, as Warp's examples pass ``grid`` or ``mesh`` first
        handles = [p for p in self.inputs if p.kind == "handle"]
        if order != "roles":
            return handles + [p for p in self.inputs if p.kind != "handle"] + uniform
        # inputs, then parameters, then outputs: a state updated in place is an input, an
        # accumulator only added into (never read) is an output
        tree = ast.parse(textwrap.dedent("\n".join(self.w.lines)) or "pass")
        read = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                and isinstance(n.value, ast.Name)}
        body = "\n".join(self.w.lines)

        def accumulated(name: str) -> bool:
            return re.search(rf"wp\.atomic_\w+\({name},|\b{name}\[[^\]]*\] [-+]=", body) is not None

        # a state updated in place (read, or overwritten as a particle's velocity is on respawn) stays
        # with the inputs beside the rest of its state
        inputs = [p for p in self.inputs if p.kind != "handle" and (p.role == "in" or (
            p.role == "inout" and (p.name in read or not accumulated(p.name))))]
        # arrays of one index space together: the state gathered by index (particles) before the
        # arrays of the launch's own items (springs, elements), as Warp's sim kernels take them
        inputs.sort(key=lambda p: p.kind == "array" and re.search(rf"\b{p.name}\[{self.item}\b", body) is not None)
        return handles + inputs + uniform + [p for p in self.inputs if p not in inputs and p not in handles]

    def skip(self) -> None:
        """Mark where an item that is skipped returns: the writes of ``skip_writes`` go there."""
        self.w.add(SKIP)

    def _fill_skips(self) -> None:
        lines = []
        for line in self.w.lines:
            if line.strip() == SKIP:
                pad = line[: len(line) - len(SKIP)]
                lines += [pad + text for text in self.skip_writes]
            else:
                lines.append(line)
        self.w.lines = lines

    def _hoist_axis_values(self) -> None:
        """A vector built from a magnitude and read more than once, or read in a loop, is built once,
        before the statement holding its first use."""
        for expr in dict.fromkeys(self.axis_values):
            uses = [k for k, line in enumerate(self.w.lines) if expr in line]
            if not uses:
                continue
            at = top_statement(self.w.lines, uses[0])
            looped = self.w.lines[at].startswith(("for ", "while "))
            if sum(self.w.lines[k].count(expr) for k in uses) < 2 and not looped:
                continue
            while at > 0 and self.w.lines[at - 1].startswith("#"):  # and the comment that leads it
                at -= 1
            local = self.w.fresh("g", "gravity_vec", "g_vec")
            self.w.lines = [line.replace(expr, local) for line in self.w.lines]
            self.w.lines.insert(at, f"{local} = {expr}")

    def _hoist_loop_constants(self) -> None:
        """A literal vector assigned inside a top-level loop (``up = wp.vec3(0.0, 1.0, 0.0)``) is assigned
        once, before the loop, when nothing else assigns its name."""
        lines = self.w.lines
        k = 0
        while k < len(lines):
            m = LITERAL_VECTOR.match(lines[k])
            if not m or not lines[k].startswith(INDENT):
                k += 1
                continue
            top = top_statement(lines, k)
            assigned = sum(bool(re.match(rf"\s*{m['name']}\s*[-+*/]?=", line)) for line in lines)
            if not lines[top].startswith(("for ", "while ")) or assigned > 1:
                k += 1
                continue
            lines.insert(top, f"{m['name']} = {m['value']}")
            del lines[k + 1]
            k += 1

    def _substitute(self, text: str) -> str:
        for u in self.uniforms.values():
            text = text.replace(u.token, u.value if u.grouped else u.name)
        return text


def top_statement(lines: list[str], k: int) -> int:
    """The index of the top-level statement (unindented) that holds body line ``k``."""
    while k > 0 and lines[k].startswith(INDENT):
        k -= 1
    return k


def check_reads(name: str, body: str, params: list[str]) -> None:
    """Every parameter is read and every local assigned is read after: a miss is a composition bug."""
    tree = ast.parse(textwrap.dedent(body) or "pass")
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    stores = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    unread = sorted((set(params) | stores) - loads - {"_"})
    if unread:
        raise ValueError(f"{name}: {unread} are never read")


def check_names(name: str, body: str, params: list[str], helpers: set[str]) -> None:
    """No parameter or local is named as a helper or struct the kernel uses (read without its suffix)."""
    tree = ast.parse(textwrap.dedent(body) or "pass")
    names = set(params) | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    clash = sorted(names & helpers)
    if clash:
        raise ValueError(f"{name}: {clash} are named as helpers")


def _local_names(role: Role) -> tuple[str, ...]:
    short = {"vec": role.name.split()[-1][:1], "scalar": role.name.split()[-1]}.get(role.kind, "value")
    return (role.name.replace(" ", "_").replace("-", "_").lower(), short)
