"""Loop forms: unroll a short constant loop, or roll repeated statements into one.

- ``unroll``: ``for k in range(3): s += a[k]`` becomes the three statements with ``k`` a
  constant (Warp unrolls such loops itself, so the generated code hardly changes);
- ``roll``: three or more statements that differ only in the constant indices they use,
  counting up by one (``out[0] = v[0]``, ``out[1] = v[1]``, ...), become a ``for`` loop; adjacent
  loops so made over one range become one (``fuse``), where that stores the same values.

The same statements run in the same order either way. What it leaves out: loops that break,
continue or return, loops whose variable is read after them, and statements that bind locals
(a loop would change where the binding is visible).
"""

from __future__ import annotations

import ast
import copy
import random

from jit.code.synthesis.mutate.syntax import replace_node, SIMPLE_STATEMENTS, blocks, call_name, jumps, walk
from jit.code.synthesis.mutate.unit import Unit

MAX_UNROLL = 4
MIN_ROLL = 3
LOOP_NAMES = ("k", "c", "axis", "comp")


def constant_range(node: ast.expr, consts: dict[str, int]) -> range | None:
    if not (isinstance(node, ast.Call) and call_name(node) == "range" and 1 <= len(node.args) <= 2):
        return None
    values = []
    for a in node.args:
        if isinstance(a, ast.Constant) and type(a.value) is int:
            values.append(a.value)
        elif isinstance(a, ast.Name) and a.id in consts:
            values.append(consts[a.id])
        else:
            return None
    return range(*values)


def unroll_sites(unit: Unit) -> list[tuple[list, int, range]]:
    consts = unit.consts()
    out = []
    for fn in unit.functions:
        for body in blocks(fn):
            for at, stmt in enumerate(body):
                if not isinstance(stmt, ast.For) or stmt.orelse or not isinstance(stmt.target, ast.Name):
                    continue
                trips = constant_range(stmt.iter, consts)
                var = stmt.target.id
                if (
                    trips is None
                    or not 2 <= len(trips) <= MAX_UNROLL
                    or jumps(stmt.body)
                    or any(isinstance(n, (ast.For, ast.While)) for s in stmt.body for n in walk(s))
                ):
                    continue
                inside = {id(n) for s in stmt.body for n in walk(s)}
                reads_outside = any(
                    isinstance(n, ast.Name) and n.id == var and id(n) not in inside and n is not stmt.target
                    for n in walk(fn)
                )
                assigned = any(
                    isinstance(n, ast.Name) and n.id == var and not isinstance(n.ctx, ast.Load)
                    for s in stmt.body
                    for n in walk(s)
                )
                # a comparison of the counter would become one of two constants (``0 == 0``)
                compared = any(
                    isinstance(n, ast.Compare)
                    and any(isinstance(m, ast.Name) and m.id == var for m in walk(n))
                    for s in stmt.body
                    for n in walk(s)
                )
                if not reads_outside and not assigned and not compared:
                    out.append((body, at, trips))
    return out


class _Fix(ast.NodeTransformer):
    """The loop variable as the constant of one trip, and integer arithmetic on constants folded, as a
    person unrolling by hand writes ``1`` and ``2``, not ``(0 + 1) % 3`` and ``(0 + 2) % 3``."""

    FOLDED = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__,
              ast.Mod: int.__mod__}

    def __init__(self, name: str, value: int):
        self.name, self.value = name, value

    def visit_Name(self, node):
        return ast.Constant(self.value) if node.id == self.name and isinstance(node.ctx, ast.Load) else node

    def visit_BinOp(self, node):
        node = self.generic_visit(node)
        op = self.FOLDED.get(type(node.op))
        if (op and isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
                and type(node.left.value) is int and type(node.right.value) is int
                and not (isinstance(node.op, (ast.FloorDiv, ast.Mod)) and node.right.value == 0)):
            return ast.copy_location(ast.Constant(op(node.left.value, node.right.value)), node)
        return node


def unroll(unit: Unit, rng: random.Random) -> str | None:
    """Unroll the kernel's one short constant loop; with several, unrolling one would leave the
    kernel written two ways (one run spelled out beside a loop doing the same kind of thing)."""
    sites = unroll_sites(unit)
    if len(sites) != 1:
        return None
    body, at, trips = sites[0]
    loop = body[at]
    copies = [loop.body] + [copy.deepcopy(loop.body) for _ in trips[1:]]  # the first keeps the comments
    new = []
    for stmts, value in zip(copies, trips):
        new += [_Fix(loop.target.id, value).visit(s) for s in stmts]
    body[at : at + 1] = new
    unit.touched |= {id(s) for s in new}
    return f"unroll:{len(trips)}"


# ---------------------------------------------------------------------------------------------
# rolling


def template(stmt: ast.stmt) -> tuple[str, list[ast.Constant]] | None:
    """The statement's dump with its integer constants blanked, and those constants in order."""
    if not isinstance(stmt, SIMPLE_STATEMENTS) or any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) for n in walk(stmt)
    ):
        return None
    consts = [n for n in walk(stmt) if isinstance(n, ast.Constant) and type(n.value) is int]
    saved = [c.value for c in consts]
    for c in consts:
        c.value = -1
    text = ast.dump(stmt)
    for c, v in zip(consts, saved):
        c.value = v
    return text, consts


def in_index(stmt: ast.stmt) -> set[int]:
    """ids of the integer constants of a statement that sit in an index (``a[2]``, ``a[i, 0]``)."""
    return {
        id(n)
        for s in walk(stmt)
        if isinstance(s, ast.Subscript)
        for n in walk(s.slice)
        if isinstance(n, ast.Constant)
    }


def roll_sites(unit: Unit) -> list[tuple[list, int, int, list[int]]]:
    """(block, start, length, positions of the constants that count up) of rollable runs."""
    out = []
    for fn in unit.functions:
        for body in blocks(fn):
            at = 0
            while at < len(body):
                first = template(body[at])
                stop = at + 1
                while first and stop < len(body) and (t := template(body[stop])) and t[0] == first[0]:
                    stop += 1
                if first and stop - at >= MIN_ROLL:
                    counting = counting_positions(body[at:stop])
                    if counting:
                        out.append((body, at, stop - at, counting))
                at = stop
    return out


def counting_positions(run: list[ast.stmt]) -> list[int] | None:
    """Positions of the constants that go up by one from statement to statement (all in an index);
    None when some other constant changes too."""
    columns = list(zip(*[[c.value for c in template(s)[1]] for s in run]))
    indexed = [{id(c) for c in template(s)[1]} & in_index(s) for s in run]
    positions = []
    for p, values in enumerate(columns):
        if len(set(values)) == 1:
            continue
        if list(values) != list(range(values[0], values[0] + len(run))):
            return None
        if not all(id(template(s)[1][p]) in ids for s, ids in zip(run, indexed)):
            return None
        positions.append(p)
    return positions or None


def roll(unit: Unit, rng: random.Random) -> str | None:
    """Roll every run of the kernel into a loop (one loop variable for all): rolling one and not
    another would write the kernel two ways."""
    sites = roll_sites(unit)
    if not sites:
        return None
    var = unit.fresh(rng, LOOP_NAMES)
    # from the last run of each block to the first: rolling one keeps the starts of those before it
    for body, at, length, positions in sorted(sites, key=lambda site: -site[1]):
        roll_run(unit, var, body, at, length, positions)
    for body in {id(body): body for body, *_ in sites}.values():
        fuse(unit, body, var)
    return "roll:" + ",".join(str(site[2]) for site in sites)


def fuse(unit: Unit, body: list, var: str) -> None:
    """Adjacent rolled loops over the same range become one loop, as a person writes them (one
    ``for c in range(3)`` storing ``v0[c]``, ``v1[c]`` and ``v2[c]``, not three loops), when that
    keeps every value stored (``fusable``)."""
    at = 0
    while at + 1 < len(body):
        a, b = body[at], body[at + 1]
        if (id(a) in unit.touched and id(b) in unit.touched and isinstance(a, ast.For) and isinstance(b, ast.For)
                and ast.dump(a.iter) == ast.dump(b.iter) and unit.notes.note(b) is None and fusable(a, b, var)):
            a.body += b.body
            unit.notes.forget(b)
            del body[at + 1]
        else:
            at += 1


def _store(stmt: ast.stmt, var: str) -> tuple[str, str, int] | None:
    """(array, the index without its loop component, the loop component's offset) of a rolled store
    ``arr[..., var + k, ...] = value``; None for any other statement."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript)
            and isinstance(stmt.targets[0].value, ast.Name)):
        return None
    target = stmt.targets[0]
    parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
    looped = [k for k, e in enumerate(parts) if any(isinstance(n, ast.Name) and n.id == var for n in ast.walk(e))]
    if len(looped) != 1:
        return None
    e = parts[looped[0]]
    if isinstance(e, ast.Name):
        offset = 0
    elif (isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and isinstance(e.left, ast.Name)
          and isinstance(e.right, ast.Constant) and type(e.right.value) is int):
        offset = e.right.value
    else:
        return None
    rest = ", ".join("*" if k == looped[0] else ast.unparse(x) for k, x in enumerate(parts))
    return target.value.id, rest, offset


def fusable(a: ast.For, b: ast.For, var: str) -> bool:
    """True if running ``b``'s stores in ``a``'s iterations stores the same values: both loops only
    store into arrays, neither reads an array the other stores into, and two stores into one array
    either hit the same entry in the same iteration (same offset) or never meet (same other indices,
    offsets a range apart)."""
    stores = [[_store(s, var) for s in loop.body] for loop in (a, b)]
    if any(s is None for group in stores for s in group):
        return False
    size = len(range(*[c.value for c in a.iter.args]))
    for mine, other, theirs in ((a, stores[0], stores[1]), (b, stores[1], stores[0])):
        read = {n.id for s in mine.body for n in ast.walk(s.value) if isinstance(n, ast.Name)}
        if read & {arr for arr, _, _ in theirs}:
            return False
    for arr, rest, offset in stores[0]:
        for arr2, rest2, offset2 in stores[1]:
            if arr == arr2 and offset != offset2 and not (rest == rest2 and abs(offset - offset2) >= size):
                return False
    return True


def roll_run(unit: Unit, var: str, body: list, at: int, length: int, positions: list[int]) -> None:
    stmt = body[at]
    consts = template(stmt)[1]
    for p in positions:
        start = consts[p].value
        var_node = ast.Name(var, ast.Load())
        replacement = var_node if start == 0 else ast.BinOp(var_node, ast.Add(), ast.Constant(start))
        replace_node(stmt, consts[p], replacement)
    loop = ast.For(ast.Name(var, ast.Store()), ast.parse(f"range({length})", mode="eval").body, [stmt], [])
    for old in body[at + 1 : at + length]:
        unit.notes.forget(old)
    note = unit.notes.note(stmt)
    unit.notes.move(stmt, loop)
    if note is not None and note.trailing:  # a comment on the first line was about that line
        note.trailing = None
    body[at : at + length] = [loop]
    unit.touched.add(id(loop))


