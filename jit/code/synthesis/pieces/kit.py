"""Shared steps of composed kernels: index spaces, data layouts, grids, colliders, materials.

A job (``categories.composed_*``) is written with these: how many items a launch covers and
whether a count guards it (``items``), how per-particle state is laid out (separate arrays or an
array of structs) and written back, how an edge or element finds its particles, how forces are
scattered to both ends, how a grid stencil reads its neighbours at the border (clamped,
periodic, or skipped), how a particle meets its colliders, how a neighbour loop runs, and how a
material's stress is wired from its strain. Each returns names for the kernel being drafted and,
where it changes what the kernel does, words for its purpose. What it leaves out: the jobs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from jit.code.synthesis import types as T
from jit.code.synthesis.pieces import roles as R
from jit.code.synthesis.pieces.base import INDENT, PIECES, Role, Style
from jit.code.synthesis.pieces.draft import Draft
from jit.code.synthesis.types import WType


# ---------------------------------------------------------------------------------------------
# drafts, words and index spaces


VEC4I = WType("vec4i", "vec", "int32", (4,))


# authors who write `float` and `wp.vec3`, not `wp.float32` and `wp.vec3f` (in Warp's examples, sim and
# fem code: `dtype=float` 246 times, `dtype=wp.float32` 19; `: float` 289, `: wp.float32` 6)
PLAIN = 0.93


def style(rng: random.Random, f64: float = 0.2, dim2: float = 0.3, dims: tuple[int, ...] = (2, 3)) -> Style:
    dim = 2 if 2 in dims and (3 not in dims or rng.random() < dim2) else 3
    return Style(rng.random() < f64, dim, rng.random() < PLAIN)


def draft(rng: random.Random, suffix: str, st: Style, groups: tuple[str, ...] = ()) -> Draft:
    """A draft whose uniform parameters go into a struct (one of ``groups``) a quarter of the time."""
    group = rng.choice(groups) if groups and rng.random() < 0.25 else None
    d = Draft(rng, suffix, st, group)
    d.w.in_place = rng.random() < 0.5
    return d


def says(name: str) -> str:
    return PIECES[name].says


def join(phrases: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    phrases = list(dict.fromkeys(p for p in phrases if p))
    if len(phrases) <= 1:
        return "".join(phrases)
    return ", ".join(phrases[:-1]) + " and " + phrases[-1]


def pick_weighted(rng: random.Random, names: list[str], k: int) -> list[str]:
    """Up to ``k`` distinct piece names drawn by their weights."""
    pool, chosen = list(names), []
    while pool and len(chosen) < k:
        name = rng.choices(pool, [PIECES[n].weight for n in pool])[0]
        pool.remove(name)
        chosen.append(name)
    return chosen


@dataclass(slots=True)
class Items:
    """The launch's index space: ``n`` items, launched as ``launch`` threads (more when guarded)."""

    n: int
    launch: int
    noun: str  # "particles", "springs"


# how often a family's count guard is drawn, of the rate it asks for: a reader takes a guard for
# redundant unless the launch is known to be rounded up, and Warp's examples launch exactly
GUARDS = 0.4


def items(d: Draft, noun: str, sizes: tuple[int, ...], count_names: tuple[str, ...], guard: float = 0.15) -> Items:
    """Pick a size; sometimes (``guard`` times ``GUARDS``) the launch is rounded up to a multiple of 32
    and a count guards it."""
    n = d.rng.choice(sizes)
    d.item_shape = (n,)
    if d.rng.random() >= guard * GUARDS:
        return Items(n, n, noun)
    launch = -(-n // 32) * 32 + (32 if n % 32 == 0 else 0)
    count = d.count(count_names, n)
    d.w.add(f"if tid >= {count}:", f"{INDENT}return")
    return Items(n, launch, noun)


def total(d: Draft, terms: list[str], names: tuple[str, ...]) -> str:
    """The sum of several vectors as one local (or the single term)."""
    if len(terms) == 1:
        return terms[0]
    return d.w.let(names, " + ".join(terms))


@dataclass(slots=True)
class State:
    """How a job reads and writes per-particle state: separate arrays or one array of structs."""

    d: Draft
    fields: dict[str, tuple[str, str]]  # field -> (array or struct array, how to read it at tid)
    outputs: dict[str, str]
    aos: str | None = None
    local: str = ""  # the struct read at tid, when an array of structs

    def read(self, field: str) -> str:
        return self.fields[field][1]


def particle_state(d: Draft, names: dict[str, tuple[str, ...]], in_place: bool, aos: float = 0.2) -> State:
    """Arrays of the particles' positions and velocities (``names``: field -> array names), read
    into locals; in place (``inout``) or with separate output arrays."""
    st = d.style
    role = "inout" if in_place else "in"
    if d.rng.random() < aos and len(names) >= 2:
        t = d.struct(d.rng.choice(("Particle", "ParticleState")), [(f, st.wtype("vec")) for f in names])
        arr = d.array(("particles", "state"), t, role, -1.0, 1.0)
        local = d.w.let(("p", "particle"), f"{arr}[tid]")
        fields = {f: (arr, d.w.let(f, f"{local}.{f}")) for f in names}
        outputs = {}
        if in_place:  # the gradient check cannot restore a struct array the launch overwrote
            d.differentiable = False
        if not in_place:
            outputs["__struct__"] = d.array(("particles_out", "new_state"), t, "out", -1.0, 1.0)
        return State(d, fields, outputs, arr, local)
    fields, outputs = {}, {}
    for f, candidates in names.items():
        arr = d.array(candidates, "vec", role, -1.0, 1.0)
        fields[f] = (arr, d.w.let(f, f"{arr}[tid]"))
    if not in_place:
        for f, (arr, _) in fields.items():
            outputs[f] = d.array((f"{arr}_out", f"new_{arr}"), "vec", "out", -1.0, 1.0)
    return State(d, fields, outputs)


def store_state(s: State, values: dict[str, str]) -> None:
    """Write the new state of particle ``tid`` back (struct fields, in place, or to the outputs)."""
    w = s.d.w
    if s.aos:  # update the struct read at tid and write it back whole
        for f, value in values.items():
            w.add(f"{s.local}.{f} = {value}")
        w.add(f"{s.outputs.get('__struct__', s.aos)}[tid] = {s.local}")
        return
    for f, value in values.items():
        w.add(f"{s.outputs.get(f, s.fields[f][0])}[tid] = {value}")


# ---------------------------------------------------------------------------------------------
# edges and elements


def endpoints(d: Draft, n_particles: int, n_edges: int, noun: str = "edges") -> tuple[str, str]:
    """Read the two particle indices of item ``tid``, in one of the layouts people use; the arrays
    are named for what the items are (``noun``: springs, pairs, constraints, ...)."""
    w, hi = d.w, n_particles - 1
    one = noun[:-1] if noun.endswith("s") else noun
    layout = d.rng.choice(("flat", "vec2i", "pair", "table"))
    if layout == "flat":  # [i0, j0, i1, j1, ...]
        idx = d.array((f"{one}_indices", f"{one}_indices", "indices"), T.INT32, lo=0, hi=hi, shape=(2 * n_edges,))
        return w.let("i", f"{idx}[tid * 2]"), w.let("j", f"{idx}[tid * 2 + 1]")
    if layout == "vec2i":
        edges = d.array((noun, noun, f"{one}_particles"), T.VEC2I, lo=0, hi=hi)
        e = w.let(("e", one if one.isidentifier() and len(one) <= 8 else "e"), f"{edges}[tid]")
        return w.let("i", f"{e}[0]"), w.let("j", f"{e}[1]")
    if layout == "table":
        edges = d.array((noun, f"{one}_particles"), T.INT32, lo=0, hi=hi, shape=(n_edges, 2))
        return w.let("i", f"{edges}[tid, 0]"), w.let("j", f"{edges}[tid, 1]")
    a = d.array((f"{one}_i", f"{one}_a"), T.INT32, lo=0, hi=hi)
    b = d.array((f"{one}_j" if a.endswith("_i") else f"{one}_b",), T.INT32, lo=0, hi=hi)
    return w.let("i", f"{a}[tid]"), w.let("j", f"{b}[tid]")


def corner(stride: int, a: int) -> str:
    """The flat index of entry ``a`` of item ``tid`` in a packed index array."""
    return f"tid * {stride}" if a == 0 else f"tid * {stride} + {a}"


def scatter_pair(d: Draft, target: str, i: str, j: str, on_i: str, on_j: str | None = None,
                 calls: bool = False) -> None:
    """Add ``on_i`` at ``i`` and ``on_j`` (default ``-on_i``) at ``j``, atomically.

    ``+=`` on an array is atomic in Warp too; with ``calls`` it is always ``wp.atomic_add`` /
    ``wp.atomic_sub``, for kernels that scatter other values with those calls (one style per kernel).
    """
    w = d.w
    if on_j is None:
        style_ = d.rng.choice(("add_sub", "add_neg") if calls else ("add_sub", "add_neg", "augmented"))
        if style_ == "add_sub":
            w.add(f"wp.atomic_add({target}, {i}, {on_i})", f"wp.atomic_sub({target}, {j}, {on_i})")
        elif style_ == "add_neg":
            w.add(f"wp.atomic_add({target}, {i}, {on_i})", f"wp.atomic_add({target}, {j}, -{on_i})")
        else:
            w.add(f"{target}[{i}] += {on_i}", f"{target}[{j}] -= {on_i}")
    elif calls or d.rng.random() < 0.6:
        w.add(f"wp.atomic_add({target}, {i}, {on_i})", f"wp.atomic_add({target}, {j}, {on_j})")
    else:
        w.add(f"{target}[{i}] += {on_i}", f"{target}[{j}] += {on_j}")


def active_mask(d: Draft, noun: str) -> str:
    """Sometimes items can be switched off (torn springs, sleeping constraints): skip them."""
    if d.rng.random() >= 0.2:
        return ""
    mask = d.array(("active", f"{noun}_active", "enabled"), T.INT32, lo=0, hi=1)
    with d.w.block(f"if {mask}[tid] == 0"):
        d.skip()  # what a skipped item still writes (its per-item outputs) goes here
        d.w.add("return")
    return f"active {noun}"


# ---------------------------------------------------------------------------------------------
# colliders


COLLIDERS = {"ground": "ground_contact", "sphere": "sphere_contact", "box": "box_container", "sdf": "sdf_contact"}


RESPONSES = ("reflect_velocity", "coulomb_response", "inelastic_response")


def collide(d: Draft, x: str, v: str, colliders: list[str], response: str) -> tuple[str, str, str]:
    """Resolve contacts with each collider in turn; (x, v, what was done) after them."""
    w = d.w
    x, v = w.own(x, "x"), w.own(v, "v")
    shared = sum(c != "box" for c in colliders) > 1
    for c in colliders:
        if c == "box":
            out = d.use("box_container", inline=True, x=x, v=v)
            x, v = w.own(out["x"], "x"), w.own(out["v"], "v")
            continue
        bound = {}
        if c == "sphere" and d.style.dim == 2:  # in the plane the collider is a circle
            word = d.rng.choice(("circle", "collider"))  # one word for both
            bound["center"] = d.resolve(R.CENTER, names=(f"{word}_center",))
            bound["radius"] = d.resolve(R.SPHERE_RADIUS, names=(f"{word}_radius",))
        if c == "sdf":  # the collider's distance field, sampled where the particle is
            shape = grid_shape(d.rng, d.style.dim)
            bound["sdf"] = d.array(("sdf", "collider_sdf", "distance_field"), "scalar", shape=shape)
        hit = d.use(COLLIDERS[c], inline=True, x=x, **bound)
        with w.block(f"if {hit['depth']} > {w.lit(0.0)}"):
            d.use("project_out", inline=True, x=x, n=hit["n"], depth=hit["depth"])
            # two colliders share one response: a helper rather than the same lines twice
            in_place, w.in_place = w.in_place, True  # the branch updates the particle's velocity
            d.use(response, inline=not shared, v=v, n=hit["n"])
            w.in_place = in_place
    resolved = [c for c in colliders if c != "box"]
    text = ""
    if resolved:  # the response is said of the colliders it follows; the box walls bounce by their restitution
        named = [says(COLLIDERS[c]).replace("sphere", "circle") if c == "sphere" and d.style.dim == 2
                 else says(COLLIDERS[c]) for c in resolved]
        text = f"contacts with {join(named)} " \
               f"({says('project_out')} and {says(response)})"
    if "box" in colliders:
        text = f"{text} and {says('box_container')}" if text else f"contacts with {says('box_container')}"
    return x, v, text


EXCLUSIVE = {"ground": {"box", "sdf"}, "box": {"ground"}, "sphere": {"sdf"}, "sdf": {"ground", "sphere"}}


def pick_weighted_colliders(rng: random.Random) -> list[str]:
    """None, one or two distinct colliders, the ground the most often; never the ground and a box,
    whose floor is a ground of its own, and never an SDF (which keeps a particle's radius off its
    surface) beside a plane or sphere that treats particles as points."""
    pool, chosen = {"ground": 3, "sphere": 2, "box": 2, "sdf": 1}, []
    for _ in range(rng.choice((0, 1, 1, 1, 2))):
        if not pool:
            break
        name = rng.choices(list(pool), list(pool.values()))[0]
        chosen.append(name)
        for gone in {name} | EXCLUSIVE.get(name, set()):
            pool.pop(gone, None)
    return chosen


# ---------------------------------------------------------------------------------------------
# grids


BOUNDARIES = {
    "clamp": "neighbours past the border are clamped to it (zero-gradient boundary)",
    "periodic": "the grid wraps around (periodic boundary)",
    "interior": "border cells keep their value (fixed boundary)",
}


@dataclass(slots=True)
class Grid:
    """A regular grid the launch covers one thread per cell, and how its stencils read neighbours.

    Extents (``nx = field.shape[0]``: the array knows its size, no count parameter repeats it) and
    neighbour indices are written when a kernel first needs them, so a kernel that samples rather
    than differences has none.
    """

    d: Draft
    shape: tuple[int, ...]
    boundary: str
    first: str  # the first input array, whose shape the extents read
    _extents: list[str] | None = None
    _index: dict[str, tuple[str, ...]] | None = None

    @property
    def dim(self) -> int:
        return len(self.shape)

    @property
    def at(self) -> str:
        return ", ".join("ijk"[: self.dim])

    @property
    def extents(self) -> list[str]:
        if self._extents is None:
            names = (("nx", "width"), ("ny", "height"), ("nz", "depth"))[: self.dim]
            self._extents = [self.d.w.let(n[0], f"{self.first}.shape[{a}]") for a, n in enumerate(names)]
        return self._extents

    def read(self, arr: str, side: str | None = None) -> str:
        return f"{arr}[{', '.join(self.neighbour_index()[side]) if side else self.at}]"

    def neighbours(self, arr: str) -> dict[str, str]:
        return {side: self.read(arr, side) for side in SIDE_NAMES[self.dim]}

    def neighbour_index(self) -> dict[str, tuple[str, ...]]:
        if self._index is not None:
            return self._index
        w, axes = self.d.w, "ijk"[: self.dim]
        self._index = {}
        for a, c in enumerate(axes):
            if self.boundary == "clamp":
                n = self.extents[a]
                lo, hi = w.let(f"{c}m", f"wp.max({c} - 1, 0)"), w.let(f"{c}p", f"wp.min({c} + 1, {n} - 1)")
            elif self.boundary == "periodic":
                n = self.extents[a]
                lo, hi = w.let(f"{c}m", f"({c} - 1 + {n}) % {n}"), w.let(f"{c}p", f"({c} + 1) % {n}")
            else:  # interior cells only: the neighbours exist
                lo, hi = f"{c} - 1", f"{c} + 1"
            for side, value in zip(SIDE_NAMES[3][2 * a: 2 * a + 2], (lo, hi)):
                self._index[side] = tuple(value if b == a else axes[b] for b in range(self.dim))
        return self._index


SIDE_NAMES = {2: ("left", "right", "down", "up"), 3: ("left", "right", "down", "up", "back", "front")}


def grid(d: Draft, first: str | tuple[str, ...], dim: int, boundary: str | None = None, first_kind: str = "scalar",
         first_range: tuple[float, float] = (-1.0, 1.0)) -> tuple[Grid, str]:
    """The grid of a kernel over cells: its shape and first input array (``first``)."""
    rng = d.rng
    sizes = (8, 12, 16, 24, 32) if dim == 2 else (6, 8, 10, 12)
    shape = tuple(rng.choice(sizes) for _ in range(dim))
    d.item_shape, d.item = shape, ", ".join("ijk"[:dim])
    d.w.taken |= {"i", "j", "k"}  # the thread's cell
    arr = d.array(first, first_kind, lo=first_range[0], hi=first_range[1])
    boundary = boundary or rng.choice(tuple(BOUNDARIES))
    return Grid(d, shape, boundary, arr), arr


def grid_shape(rng: random.Random, dim: int) -> tuple[int, ...]:
    return tuple(rng.choice((8, 12, 16) if dim == 2 else (6, 8, 10)) for _ in range(dim))


def interior_guard(g: Grid, keep: list[tuple[str, str]]) -> None:
    """For the fixed boundary: border cells write ``keep`` (output, value: an input's value, or zero
    for a derivative the border has none of) and stop, so every output is written everywhere."""
    if g.boundary != "interior":
        return
    w = g.d.w
    axes = "ijk"[: g.dim]
    test = " or ".join(f"{c} == 0 or {c} == {n} - 1" for c, n in zip(axes, g.extents))
    with w.block(f"if {test}"):
        for out, value in keep:
            w.add(f"{out}[{g.at}] = {value}")
        w.add("return")


def solid_cells(d: Draft, g: Grid, out: str, value: str, free_surface: bool = False) -> str:
    """Sometimes a mask of cells held at ``value`` where nothing else happens: obstacles (a velocity
    held at zero), or with ``free_surface`` the air around a liquid (a pressure held at zero, which
    its neighbours read as the free-surface condition)."""
    if d.rng.random() >= 0.3:
        return ""
    names = ("air", "is_air", "empty_cell") if free_surface else ("solid", "obstacle", "cell_is_solid")
    mask = d.array(names, T.INT32, lo=0, hi=1)
    with d.w.block(f"if {g.read(mask)} != 0"):
        d.w.add(f"{out}[{g.at}] = {value}", "return")
    if free_surface:
        return "; air cells are held at zero pressure (a free surface)"
    return "; solid cells are held at zero"


def grid_purpose(g: Grid, what: str) -> str:
    return f"{what} on a {g.dim}D grid; {BOUNDARIES[g.boundary]}"


# ---------------------------------------------------------------------------------------------
# neighbours and materials


def neighbour_loop(d: Draft, n: int, x: str, reach: tuple[str, Role] | None = None,
                   point: str | None = None) -> tuple[str, str]:
    """Open a loop over particle ``tid``'s neighbours ``j`` (a hash-grid query, a fixed-width list, or
    all particles); returns (j, how). The caller writes the body one level deeper and closes it.

    ``reach``: (the expression, its role) of the distance within which neighbours count, the same
    for every particle. Then 3D float32 particles may query a ``wp.HashGrid`` built over their
    positions, with cells as large as the role's largest value (as Warp's examples build theirs),
    around ``point`` (the particle's position, as the caller read it); the body still tests the
    distance, since a query returns the particles of nearby cells."""
    w, rng = d.w, d.rng
    d.differentiable = False  # Warp's adjoint of run-time-length loops is not checked against differences
    if reach and d.style.dim == 3 and not d.style.f64 and rng.random() < 0.5:
        radius, role = reach
        grid = d.handle(("grid", "grid_id"), {"object": "hash_grid", "points": x, "cell_size": role.hi})
        w.add(f"for j in wp.hash_grid_query({grid}, {point or f'{x}[tid]'}, {radius}):")
        w.depth += 1
        w.taken.add("j")
        return "j", "over the neighbors a hash grid finds"
    if rng.random() < 0.5:
        width = rng.choice((8, 16))
        nbrs = d.array(("neighbors", "neighbor_list", "nbr"), T.INT32, lo=0, hi=n - 1, shape=(n, width))
        counts = d.array(("neighbor_count", "num_neighbors", "nbr_count"), T.INT32, lo=0, hi=width)
        slot = w.fresh("slot", "k", "s")
        w.comment("a full list may report more neighbours than it has room for",
                  "clamp to the list width: the count can exceed the capacity")
        w.add(f"for {slot} in range(wp.min({counts}[tid], {nbrs}.shape[1])):")
        w.depth += 1
        j = w.let("j", f"{nbrs}[tid, {slot}]")
        return j, "over a fixed-width neighbour list"
    w.add(f"for j in range({x}.shape[0]):")  # the positions say how many particles there are: no count to pass
    w.depth += 1
    w.taken.add("j")
    # brute force, O(N^2): fine for the small particle sets these kernels take; larger ones query a
    # wp.HashGrid (the patterns families do), which a composed kernel cannot build for itself
    return "j", "over all particle pairs (a brute-force pass for small particle sets; larger ones query a wp.HashGrid)"


STRESS_MODELS = ("linear_elastic_stress", "stvk_stress", "stable_neo_hookean_stress")


STRAINS = {"linear_elastic_stress": "small_strain", "stvk_stress": "green_strain"}


def material(d: Draft, per_item: bool, noun: str = "element") -> tuple[dict[str, str], str]:
    """Lame parameters (given, per element or for all, or from Young's modulus and Poisson's ratio)
    and how the purpose says where they come from."""
    if d.rng.random() < 0.35:
        # per element: converting moduli that are the same everywhere would redo it in every thread
        d.resolve(R.YOUNGS, per_item=True)
        return d.use("lame_parameters", inline=True), f" with {says('lame_parameters')} of each {noun}"
    return {"mu": d.resolve(R.MU, per_item=per_item), "lam": d.resolve(R.LAMBDA, per_item=per_item)}, ""


def stress(d: Draft, model: str, F: str, lame: dict[str, str]) -> tuple[str, str | None]:
    """The stress of ``model`` at ``F``; (P, the strain tensor it went through, if any)."""
    if model not in STRAINS:
        return d.use(model, F=F, **lame)["P"], None
    eps = d.use(STRAINS[model], F=F)["eps"]
    if model == "stvk_stress":
        return d.use(model, F=F, E=eps, **lame)["P"], eps
    return d.use(model, eps=eps, **lame)["P"], eps
