"""Mutations that move code without changing what it computes: hoist and inline.

- ``hoist`` computes a subexpression one statement earlier into a local named for what it is
  (``d_len = wp.length(d)``, ``point = points[i]``, ``idx = i * 3 + 1``), where it is first
  computed, and reads the local wherever the block computed the value again;
- ``inline`` puts a pure local read once, in the next statement, back into that statement;

The same operations run in the same order on the same values, so a mutant's outputs are the
seed's bit for bit. None of them makes code less regular than it was: a value with siblings of
its shape (``wp.floor(uvw[0])`` among three) is not hoisted alone, and statements of a
parallel run are not folded into each other. What has no name that says what it is (a product,
a cast) stays where it is. Nothing moves out of a branch, across a short-circuit (``and``, ``or``,
``x if c else y``) or out of a tile call's shape and keyword arguments (they must stay
compile-time constants). What it leaves out: moves between functions (``helpers``), folding
a computation of several steps into one expression, and reordering statements (authors order
them on purpose: ``i`` before ``j``, the position before the velocity).
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable, Iterator

from jit.code.synthesis.mutate.syntax import (
    SIMPLE_STATEMENTS,
    arrays,
    blocks,
    effects,
    is_pure_call,
    is_tile_call,
    breaks_symmetry,
    parallel_run,
    replace_node,
    tid_names,
    wp_attr,
    children,
    walk,
)
from jit.code.synthesis.mutate.names import OWNERS, singular
from jit.code.synthesis.mutate.unit import RESERVED, Unit

# Warp builtins worth a local of their own, and how the local is named from the argument
# (``wp.length(d)`` -> ``d_len``): a value is hoisted only when it can be named for what it is
NAMED_CALLS: dict[str, tuple[str, ...]] = {
    "length": ("{}_len", "len_{}"),
    "length_sq": ("{}_len_sq",),
    "normalize": ("{}_dir", "{}_hat"),
    "sqrt": ("sqrt_{}",),
    "sin": ("sin_{}",),
    "cos": ("cos_{}",),
    "tan": ("tan_{}",),
    "exp": ("exp_{}",),
    "log": ("log_{}",),
    "abs": ("abs_{}",),
    "transpose": ("{}_t",),
    "inverse": ("{}_inv", "inv_{}"),
    "determinant": ("det_{}",),
    "quat_to_matrix": ("{}_mat", "rot"),
    "transform_get_translation": ("{}_pos", "{}_p"),
    "transform_get_rotation": ("{}_rot", "{}_q"),
    "transform_inverse": ("{}_inv",),
}
# a helper named for what it returns (``compute_pressure(...)`` -> ``pressure``)
VERB_PREFIXES = ("compute_", "get_", "eval_", "evaluate_", "calc_", "make_")
INDEX_NAMES = ("idx", "offset", "base", "start")
MAX_INLINED = 2  # operations of a local put back into the statement that reads it
MAX_FOLDED = 5  # operations of that statement once it holds the local's value
MAX_ARG_NAME = 12


def element_names(array: str, index: ast.expr) -> tuple[str, ...]:
    """Names for one element of ``array``: ``points`` -> ``point``, ``x[i]`` -> ``xi``,
    ``energy[e]`` -> ``energy_e``; none when nothing reads naturally (a 2D read, a long index)."""
    one = singular(array.lstrip("_"))
    if one != array.lstrip("_"):
        return (one,)
    head, _, field = array.partition("_")
    if field and singular(head) in OWNERS and field.isidentifier():
        return (field,)  # ``particle_v[i]`` -> ``v``
    if not isinstance(index, ast.Name) or "_" in array or len(array) > 8:
        return ()
    if len(array) <= 2:
        return (f"{array}{index.id}", f"{array}_{index.id}") if len(index.id) == 1 else ()
    return (f"{array}_{index.id}",) if len(index.id) == 1 else (f"{array}_i",) if index.id == "tid" else ()


def same_style(options: tuple[str, ...], index: str, taken) -> tuple[str, ...]:
    """Of ``xi`` and ``x_i``, the one spelled as the kernel's other element locals are (``yi``
    beside ``xi``, not beside ``x_i``); both when there is none to follow."""
    def styled(name: str, underscore: bool) -> bool:
        return re.fullmatch(rf"[a-z]{{1,2}}{'_' if underscore else ''}{re.escape(index)}", name) is not None

    for underscore in (False, True):
        if any(styled(t, underscore) for t in taken):
            return tuple(o for o in options if styled(o, underscore)) or options
    return options


def hoist_names(node: ast.expr, index: bool = False) -> tuple[str, ...]:
    """Names for a hoisted value, from what it is; empty when none would say it (a product
    called ``scaled``, a cast called ``fx``: better left where it is)."""
    if isinstance(node, ast.BinOp):
        return INDEX_NAMES if index and isinstance(node.op, (ast.Add, ast.Mult)) else ()
    if not isinstance(node, ast.Call):
        return ()
    attr = wp_attr(node)
    if attr is None:
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        name = name.rsplit("_", 1)[0] if re.search(r"_[0-9a-f]{8}$", name) else name  # a unit's suffix
        stem = next((name[len(p):] for p in VERB_PREFIXES if name.lstrip("_").startswith(p)), None)
        return (stem,) if stem and stem.isidentifier() and not stem[0].isdigit() else ()
    forms = NAMED_CALLS.get(attr)
    if not forms or not node.args:
        return ()
    arg = node.args[-1] if attr.startswith(("transform_get", "quat_to")) else node.args[0]
    if not (isinstance(arg, ast.Name) and len(arg.id) <= MAX_ARG_NAME) or len(node.args) > 1 and "{}" in forms[0]:
        return tuple(f for f in forms if "{}" not in f)
    return tuple(f.format(arg.id.lstrip("_")) for f in forms)


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


def hoistable(root: ast.expr, array_names: set[str]) -> Iterator[tuple[ast.expr, bool]]:
    """(subexpression, is it an array index) for the subexpressions of ``root`` that may be computed
    one statement earlier: pure calls, arithmetic and element reads of the arrays, not under a
    short-circuit."""
    todo = [(root, False)]
    while todo:
        node, index = todo.pop()
        if isinstance(node, (ast.BoolOp, ast.IfExp, ast.Lambda)):
            continue
        if isinstance(node, ast.Subscript):  # a whole element read only, never a view of it
            if (
                isinstance(node.value, ast.Name)
                and node.value.id in array_names
                and not any(isinstance(n, ast.Slice) for n in walk(node.slice))
            ):
                yield node, index
            todo.append((node.slice, True))
            continue
        if (
            isinstance(node, ast.Call)
            and is_pure_call(node)
            and (node.args or node.keywords)
            and not all(isinstance(a, ast.Constant) for a in node.args)
        ):
            yield node, index
        elif isinstance(node, ast.BinOp) and not (
            isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
        ):
            yield node, index
        if isinstance(node, ast.Call) and (wp_attr(node) or "").startswith(("static", "adjoint")):
            continue
        if is_tile_call(node):  # shape=, dtype=, axis=, storage= must stay compile-time constants
            todo.extend((a, index) for a in node.args if not isinstance(a, ast.Tuple))
            continue
        todo.extend(
            (c, index)
            for c in children(node)
            if isinstance(c, ast.expr) and c is not getattr(node, "func", None)
        )


def _stored(stmt: ast.stmt) -> Iterator[str]:
    """Names a statement binds: assignment and loop targets."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else \
        [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
    for target in targets:
        for n in walk(target):
            if isinstance(n, ast.Name):
                yield n.id


def loop_varying(fn: ast.FunctionDef) -> dict[int, set[str]]:
    """For the body of each loop of ``fn`` (by ``id``), the names that change from one iteration to
    the next: the loop's targets and every name stored inside it (found by statements, not by a
    walk of every expression: a mutant asks this on each hoist)."""
    out = {}
    for body in blocks(fn):
        for loop in body:
            if isinstance(loop, (ast.For, ast.While)):
                out[id(loop.body)] = {*_stored(loop), *(n for inner in blocks(loop) for s in inner for n in _stored(s))}
    return out


def invariant_in_loop(body: list, node: ast.expr, varying: dict[int, set[str]]) -> bool:
    """A value in a loop's body that no iteration changes: named there, it would be computed again in
    every iteration (``x_i = x[i]`` inside the ``j`` loop), so it is not hoisted."""
    if id(body) not in varying:
        return False
    return not {n.id for n in walk(node) if isinstance(n, ast.Name)} & varying[id(body)]


def hoist(unit: Unit, rng: random.Random) -> str | None:
    sites = []
    dump = Dumps()  # the tree stays as it is until a site is taken
    for fn in unit.functions:
        names = set(arrays(fn))
        varying = loop_varying(fn)
        for body in blocks(fn):
            for at, stmt in enumerate(body):
                for part in expression_parts(stmt):
                    # a statement's whole value is named already (or returned: ``v = ...; return v``
                    # adds a name that says nothing)
                    whole = part if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Return)) else None
                    sites += [
                        (body, at, stmt, node, index)
                        for node, index in hoistable(part, names)
                        if node is not whole and id(node) not in unit.touched and not named_later(body, at, node, dump)
                        and not invariant_in_loop(body, node, varying)
                    ]
    reads = ElementReads(unit.tree)
    while sites:  # the checks that read the whole block run for the drawn site only
        site = sites.pop(rng.randrange(len(sites)))
        body, at, stmt, node, index = site
        if isinstance(node, ast.Subscript):
            # ``dest_offset`` names ``dest_offsets[row]`` only when no other element is read (asked
            # only of a read that has a name: most have none, and asking walks the unit)
            options = element_names(node.value.id, node.slice)
            if options and reads.elsewhere(node):
                options = ()
        else:
            options = hoist_names(node, index)
            if index and options and not repeated(body, at, node):
                options = ()  # ``offset = row + 1`` says less than ``row + 1``
        taken = unit.taken()
        options = tuple(o for o in options if o not in taken and o not in RESERVED and o.isidentifier())
        if len(options) > 1 and isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name):
            options = same_style(options, node.slice.id, taken)
        if not options or breaks_symmetry(body, at, node) or left_behind(body, at, node):
            continue
        name = unit.claim(rng.choice(options))
        assign = ast.Assign([ast.Name(name, ast.Store())], node)
        replace_node(stmt, node, ast.Name(name, ast.Load()))
        body.insert(at, assign)
        unit.notes.lead(stmt, assign)  # the comment above a statement is about both lines now
        unit.touched |= {id(assign), id(node)}
        reuse(body, at + 1, node, name)
        return f"hoist:{name}"
    return None


class Dumps:
    """``ast.dump`` of nodes of a tree that stays as it is, each node dumped once (a hoist compares
    every candidate with every later assignment of its block)."""

    def __init__(self):
        self._done: dict[int, tuple[ast.AST, str]] = {}  # the node is kept, so its id stays its own

    def __call__(self, node: ast.AST) -> str:
        found = self._done.get(id(node))
        if found is None:
            found = self._done[id(node)] = (node, ast.dump(node))
        return found[1]


class ElementReads:
    """The indices each array is read at in a tree, found in one walk and dumped once per array
    (a hoist asks for every drawn element read; walking the unit each time was most of its cost).
    Valid while the tree is unchanged."""

    def __init__(self, tree: ast.AST):
        self.tree = tree
        self._slices: dict[str, list[ast.expr]] | None = None
        self._texts: dict[str, set[str]] = {}

    def texts(self, array: str) -> set[str]:
        if self._slices is None:
            self._slices = {}
            for n in walk(self.tree):
                if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
                    self._slices.setdefault(n.value.id, []).append(n.slice)
        if array not in self._texts:
            self._texts[array] = {ast.dump(s) for s in self._slices.get(array, ())}
        return self._texts[array]

    def elsewhere(self, node: ast.Subscript) -> bool:
        """True if the array of ``node`` is read at another index somewhere in the tree."""
        return bool(self.texts(node.value.id) - {ast.dump(node.slice)})


def same_value(n: ast.AST, kind: type, text: str) -> bool:
    """``ast.dump(n) == text`` for the dump ``text`` of a node of type ``kind``: nodes of another
    type are told apart without dumping them (a dump starts with the node's type)."""
    return type(n) is kind and ast.dump(n) == text


def repeated(body: list[ast.stmt], at: int, node: ast.expr) -> bool:
    """True if the block computes ``node``'s value more than once from ``body[at]`` on."""
    kind, text = type(node), ast.dump(node)
    return sum(same_value(n, kind, text) for s in body[at:] for n in walk(s) if isinstance(n, ast.expr)) > 1


def left_behind(body: list[ast.stmt], at: int, node: ast.expr) -> bool:
    """True if hoisting ``node`` out of ``body[at]`` would leave the same value computed
    elsewhere in the block: before it, or after it where ``reuse`` stops (past a write to what it
    reads, a call with effects, or inside a nested block). A person names a value once, where it
    is first computed, and reads the name everywhere."""
    kind, text = type(node), ast.dump(node)
    if any(same_value(n, kind, text) for s in body[:at] for n in walk(s)):
        return True
    reads = {n.id for n in walk(node) if isinstance(n, ast.Name)}
    open_ = True
    for stmt in body[at:]:
        reached = set()
        if open_:
            for part in expression_parts(stmt):
                reached |= {id(n) for n in walk(part)} - short_circuit_ids(part)
        for n in walk(stmt):
            if n is not node and id(n) not in reached and isinstance(n, ast.expr) and same_value(n, kind, text):
                return True
        if not isinstance(stmt, SIMPLE_STATEMENTS) or effects(stmt).writes & reads or effects(stmt).impure:
            open_ = False
    return False


def named_later(body: list[ast.stmt], at: int, node: ast.expr, dump: Callable[[ast.AST], str] = ast.dump) -> bool:
    """A later statement of the block already gives the value a name: hoisting it again would
    read it twice under two names."""
    kind = type(node)
    later = [s.value for s in body[at + 1:] if isinstance(s, ast.Assign) and type(s.value) is kind]
    if not later:
        return False
    text = dump(node)
    return any(dump(v) == text for v in later)


def reuse(body: list[ast.stmt], start: int, value: ast.expr, name: str) -> None:
    """Read ``name`` instead of computing ``value`` again in the statements from ``start``, as
    long as none of them writes what ``value`` reads (a person hoists a value once)."""
    kind, text = type(value), ast.dump(value)
    reads = {n.id for n in walk(value) if isinstance(n, ast.Name)}
    for stmt in body[start:]:
        # a statement that assigns exactly the value keeps it: reading the name there would only make
        # an alias (``x_i = xi``)
        whole = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        for part in expression_parts(stmt):
            for node, _ in list(hoistable(part, set())) + [
                (n, False) for n in walk(part) if isinstance(n, ast.Subscript)
            ]:
                if node is not whole and same_value(node, kind, text) and not under_short_circuit(part, node):
                    replace_node(stmt, node, ast.Name(name, ast.Load()))
        if not isinstance(stmt, SIMPLE_STATEMENTS) or effects(stmt).writes & (reads | {name}) or effects(stmt).impure:
            return


def under_short_circuit(root: ast.expr, target: ast.AST) -> bool:
    return id(target) in short_circuit_ids(root)


def short_circuit_ids(root: ast.expr) -> set[int]:
    """The ids of the nodes of ``root`` that may not be evaluated: the short-circuits (``and``,
    ``or``, ``x if c else y``) and everything under them."""
    return {id(m) for n in walk(root) if isinstance(n, (ast.BoolOp, ast.IfExp)) for m in walk(n)}


def inline_sites(fn: ast.FunctionDef, unit: Unit) -> list[tuple[list, int, ast.Name]]:
    """(block, position, the one use) of ``t = pure expr`` whose only read is in the next statement."""
    loads: dict[str, list[ast.Name]] = {}
    stores: dict[str, int] = {}
    for node in walk(fn):
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
            if (
                name in params
                or stores.get(name) != 1
                or len(uses) != 1
                or id(stmt) in unit.touched
                or tid_names(stmt)
                or effects(stmt).impure
                or is_literal_cast(stmt.value)
            ):
                continue
            following = body[at + 1]
            # the checks are pure: the one that compares neighbouring statements' shapes, the
            # dearest, runs last
            if operations(stmt.value) > MAX_INLINED or operations(following) + operations(stmt.value) > MAX_FOLDED:
                continue  # a named step of a longer computation keeps its name
            if not (
                any(uses[0] is n for part in expression_parts(following) for n in walk(part))
                and not is_base_of_access(following, uses[0])
                and not in_tile_arguments(following, uses[0])
            ):
                continue
            if len(parallel_run(body, at)) > 1 or len(parallel_run(body, at + 1)) > 1:
                continue  # one of parallel statements folded into another reads as a slip
            sites.append((body, at, uses[0]))
    return sites


def operations(node: ast.AST) -> int:
    """Arithmetic, comparisons and calls in ``node``."""
    return sum(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call)) for n in walk(node))


def is_literal_cast(node: ast.expr) -> bool:
    """``float(0.0)``, ``wp.float64(1.0)``: the local fixes a type a bare literal would not."""
    return isinstance(node, (ast.Constant, ast.Call)) and (
        isinstance(node, ast.Constant) or all(isinstance(a, ast.Constant) for a in node.args)
    )


def symmetric_use(stmt: ast.stmt, use: ast.Name) -> bool:
    """True if the expression around ``use`` has siblings of its shape in ``stmt``
    (``wp.int32(ck)`` next to ``wp.int32(ci)``, ``wp.int32(cj)``): inlining one would leave
    the others named."""
    up = {id(c): p for p in walk(stmt) for c in children(p)}
    node = up.get(id(use))
    while node is not None and node is not stmt:
        if breaks_symmetry([stmt], 0, node):
            return True
        node = up.get(id(node))
    return False


def is_base_of_access(tree: ast.AST, name: ast.Name) -> bool:
    """True if ``name`` is the object of ``name[...]``/``name.x`` (inlining would index an expression)."""
    return any(isinstance(n, (ast.Subscript, ast.Attribute)) and n.value is name for n in walk(tree))


def in_tile_arguments(tree: ast.AST, name: ast.Name) -> bool:
    return any(is_tile_call(n) and any(name is m for m in walk(n)) for n in walk(tree))


def inline(unit: Unit, rng: random.Random) -> str | None:
    sites = [s for fn in unit.functions for s in inline_sites(fn, unit)]
    while sites:
        body, at, use = sites.pop(rng.randrange(len(sites)))
        if not symmetric_use(body[at + 1], use):
            break
    else:
        return None
    stmt = body.pop(at)
    unit.notes.forget(stmt)
    replace_node(body[at], use, stmt.value)
    unit.touched.add(id(stmt.value))
    return f"inline:{use.id}"
