"""Renaming by role: a local or kernel parameter takes another name that says the same thing.

``positions`` may become ``points``, ``vel`` ``velocity``, ``tid`` ``i``: groups of names a
reader takes for one role. One-letter names are left alone unless they hold the thread index
(``x`` may be a position or a coordinate, ``n`` a normal or a count), and so are the indices of
a 2D or 3D grid (``i, j``) and names of a family (``nx, ny, nz``): renaming one alone breaks the set. A renamed kernel
parameter renames its launch argument, and comments that mention a renamed name follow it.
What it leaves out: struct fields and module-level names (the suffix already renames those).
"""

from __future__ import annotations

import ast
import random
import re

from jit.code.synthesis.mutate.syntax import array_annotation, blocks, is_docstring, tid_names, walk
from jit.code.synthesis.mutate.unit import RESERVED, Unit

ROLE_GROUPS: tuple[tuple[str, ...], ...] = (
    ("tid", "i", "idx", "index"),
    ("x", "p", "pos", "position", "point"),
    ("v", "vel", "velocity"),
    ("f", "force"),
    ("m", "mass"),
    ("inv_mass", "inv_m"),
    ("n", "normal"),
    ("d", "dist", "distance"),
    ("q", "rot", "rotation"),
    ("r", "radius"),
    ("c", "center"),
    ("out", "output", "result", "res"),
    ("src", "source"),
    ("dst", "dest"),
    ("values", "vals", "data"),
    ("value", "val"),
    ("counter", "cnt"),
    ("dir", "direction"),
    ("lower", "lo", "lower_bound"),
    ("upper", "hi", "upper_bound"),
    ("scale", "factor"),
    ("color", "rgb"),
    ("err", "error"),
    ("grad", "gradient"),
    ("sum", "acc", "accum", "total"),
    ("loss", "cost"),
    ("points", "positions"),
    ("indices", "ids"),
    ("state", "rng_state", "rng"),
    ("seed", "rng_seed"),
    ("mesh_id", "mesh"),
    ("bvh_id", "bvh"),
    ("face", "face_index", "tri"),
    ("eps", "epsilon"),  # a tolerance is another thing
    ("max_dist", "max_distance"),
    ("normal_vel", "vn"),
    ("tangent_vel", "vt"),
    ("vertices", "verts"),
    ("velocities", "vels"),
    ("forces", "f_ext"),
    ("masses", "mass_arr"),
    ("weights", "w_arr"),
)
# things arrays hold one of per element (``particle_x``, ``num_particles``)
OWNERS = frozenset(
    {"particle", "point", "body", "vertex", "vert", "edge", "face", "tri", "triangle", "cell", "node", "element",
     "instance", "contact", "shape", "env", "row", "col", "column", "block", "ray", "query", "joint", "spring",
     "voxel", "pixel", "sample", "item", "agent", "atom", "bond", "link", "mesh", "sphere", "box", "tet", "quad",
     "segment", "line", "param", "record", "entry", "key", "bucket", "tile", "corner", "grain"}
)
ROLE_OF = {name: group for group in ROLE_GROUPS for name in group}
THREAD_INDEX = ROLE_GROUPS[0]


def rename(unit: Unit, rng: random.Random, p: float = 0.5) -> list[str]:
    """Rename some locals (and the kernel's parameters) to another name of their role."""
    done = []
    for fn in unit.functions:
        params = {a.arg for a in fn.args.args}
        stores = {n.id for n in walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        names = sorted(stores | params) if fn is unit.kernel else sorted(stores - params)
        arrays = {a.arg for a in fn.args.args if array_annotation(a.annotation) is not None}
        tids = {t for body in blocks(fn) for st in body for t in (tid_names(st) or ())}
        # ``i, j = wp.tid()``: renaming one index of a grid alone would break the pair
        grid = {t for body in blocks(fn) for st in body if len(tid_names(st) or ()) > 1 for t in tid_names(st)}
        words = {w for n in stores | params for w in n.split("_")[:-1] + n.split("_")[1:] if n != w}
        for old in names:
            group = ROLE_OF.get(old)
            # a one-letter name says little of its role: only the thread index is sure; and a
            # name of the thread index's group is renamed only if it holds the thread index
            if (
                group is None
                or (old in arrays and not old.endswith("s"))  # an array of faces is no ``face_index``
                or old in grid
                or old in words  # ``data`` of ``data_i``: the derived name would stop saying it
                or (len(old) == 1 and old not in tids)
                or (group is THREAD_INDEX) != (old in tids)
                or rng.random() >= p
            ):
                continue
            taken = unit.taken() | RESERVED
            options = [g for g in group if g != old and g not in taken and (len(g) > 1 or old in tids)]
            if options:
                new = unit.claim(rng.choice(options))
                rename_in(fn, old, new)
                if fn is unit.kernel and old in params:
                    unit.launch.rename(old, new)
                if old in params:
                    rename_in_docstring(fn, old, new)
                unit.rename_in_comments(old, new, fn)
                done.append(f"rename:{old}->{new}")
    return done


def rename_in(fn: ast.FunctionDef, old: str, new: str) -> None:
    for node in walk(fn):
        if isinstance(node, ast.Name) and node.id == old:
            node.id = new
        elif isinstance(node, ast.arg) and node.arg == old:
            node.arg = new


def rename_in_docstring(fn: ast.FunctionDef, old: str, new: str) -> None:
    """A docstring that documents parameter ``old`` documents ``new``: where it quotes it as code
    (```old```) or lists it (``old: ...``); a word of its prose stays a word (``points`` in
    "the points of the mesh")."""
    if fn.body and is_docstring(fn.body[0]):
        doc = fn.body[0].value
        doc.value = re.sub(rf"(?<=`){re.escape(old)}(?=`)", new, doc.value)
        doc.value = re.sub(rf"(?m)^(\s*){re.escape(old)}(?=\s*(\(.*\))?:)", rf"\g<1>{new}", doc.value)


def singular(word: str) -> str:
    """``scalings`` -> ``scaling``, ``vertices`` -> ``vertex``, ``masses`` -> ``mass``; a word
    that is not a plural comes back as it is."""
    for plural, one in (("ices", "ex"), ("ies", "y"), ("sses", "ss"), ("shes", "sh"), ("ches", "ch")):
        if word.endswith(plural) and len(word) > len(plural) + 1:
            return word[: -len(plural)] + one
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word
