"""Drawing and applying mutations: one mutant of one seed from one random source.

A mutant draws a plan, each kind with its own chance, and applies it in a fixed order: types
first (precision, vector width), then layout, a bounds guard, helper functions, loop forms and
code motion, and renaming last, so that each kind sees the unit as the earlier ones left it.
Then, until the mutant's normalised token 4-grams are less similar to its seed's than a target
drawn per mutant (below ``MAX_SIMILARITY``), repeatable kinds are applied again. A seed that
cannot get that far raises ``MutationError``.

Every kind keeps what the kernel computes (see each module); ``test_mutate`` runs seed and
mutant on the same inputs for each kind, and the dataset's execute check runs every mutant.
What it leaves out: choosing the seed (``seed_list``), and building the mutant (the pipeline).
"""

from __future__ import annotations

import ast
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass

from jit.code.analysis.tokens import jaccard, norm_tokens, shingles
from jit.code.synthesis.mutate import helpers, index_space, layout, loops, moves, names, retype, scaffolding
from jit.code.synthesis.mutate.launch import Launch
from jit.code.synthesis.mutate.unit import Unit

MAX_SIMILARITY = 0.9  # a mutant must be less similar than this to its seed
MIN_TARGET = 0.75  # each mutant aims below a similarity drawn from [MIN_TARGET, MAX_SIMILARITY)
MAX_EXTRA = 24  # extra applications of repeatable kinds before giving up


class MutationError(Exception):
    def __init__(self, kernel: str, reason: str):
        super().__init__(f"{kernel}: {reason}")
        self.kernel, self.reason = kernel, reason


@dataclass(frozen=True, slots=True)
class Kind:
    apply: Callable[[Unit, random.Random], str | None]
    chance: float  # of being in a mutant's plan
    repeatable: bool = False  # applied again while the mutant is too close to its seed
    extra: bool = True  # may be drawn again after the plan to move the mutant away from its seed


# in the order they are applied
MUTATIONS: dict[str, Kind] = {
    "precision": Kind(retype.precision, 0.35),
    "width": Kind(retype.width, 0.4),
    "layout": Kind(layout.layout, 0.5),
    # real Warp code guards ``wp.tid()`` against a count rarely (0.1% of the measure half's
    # kernels, 16% of Newton's): only a mutant's plan adds one, never the distance loop
    "guard": Kind(index_space.guard, 0.06, extra=False),
    "inline_func": Kind(helpers.inline, 0.4),
    "extract_func": Kind(helpers.extract, 0.45, True),
    "unroll": Kind(loops.unroll, 0.35),
    "roll": Kind(loops.roll, 0.5),
    "hoist": Kind(moves.hoist, 0.7, True),
    "inline": Kind(moves.inline, 0.35, True),
}


@dataclass(slots=True)
class Mutant:
    source: str
    kernel_name: str
    applied: list[str]
    unit: Unit

    @property
    def launch(self) -> Launch:
        return self.unit.launch


def fingerprint(text: str) -> set[str]:
    return shingles(norm_tokens(text), 4)


def unformatted(text: str) -> str:
    """A source as ``Unit.measured`` writes it: mutants are measured in this form, since a
    formatter's wrapping adds tokens (parentheses, trailing commas) of its own."""
    tree = ast.parse(text)
    kernel = next(
        n.name
        for n in reversed(tree.body)
        if isinstance(n, ast.FunctionDef) and any("kernel" in ast.unparse(d) for d in n.decorator_list)
    )
    return Unit(text, kernel).measured()


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the normalised token 4-grams of two sources, unformatted."""
    return jaccard(fingerprint(unformatted(a)), fingerprint(unformatted(b)))


def mutate(
    text: str,
    kernel: str,
    launch: Launch | None,
    rng: random.Random,
    suffix: str,
    dtypes: tuple[str, ...] = (),
    base: set[str] | None = None,
    layout: bool = True,
) -> Mutant:
    """A mutant of the seed ``text`` (whose kernel is ``kernel``), renamed with ``suffix``.

    ``dtypes``: the precision changes known to build for this seed; ``base``: the
    ``fingerprint`` of the seed's ``unformatted`` text when the caller has it already;
    ``layout``: lay the source out with black (the generator does it for every kernel).
    """
    unit = Unit(text, kernel, suffix, launch)
    bases = [base if base is not None else fingerprint(unformatted(text))]
    applied: list[str] = []

    def apply(name: str) -> str | None:
        desc = run(unit, name, rng, dtypes)
        if desc is not None:
            applied.append(desc)
            if name == "precision":
                # every mutant that retypes a seed retypes it the same way: distance counts from there
                bases.append(retyped_fingerprint(text, kernel, desc.split(":")[1]))
        return desc

    plan = [k for k, kind in MUTATIONS.items() if rng.random() < kind.chance]
    for name in plan:
        apply(name)
    target = rng.uniform(MIN_TARGET, MAX_SIMILARITY)
    extra = [k for k, kind in MUTATIONS.items() if kind.extra and (kind.repeatable or k not in plan)]
    measure = Measure()
    reached = False  # below the target, so below MAX_SIMILARITY too
    for step in range(MAX_EXTRA):
        # measuring costs a render: after the plan, then after every second extra mutation
        if step % 2 == 0 and len(applied) >= 2 and measure.far_enough(unit, bases, target):
            reached = True
            break
        if not extra:
            break
        name = rng.choices(extra, [MUTATIONS[k].chance for k in extra])[0]
        if apply(name) is None or not MUTATIONS[name].repeatable:
            extra.remove(name)
    if not reached and not measure.far_enough(unit, bases, MAX_SIMILARITY):
        raise MutationError(kernel, "too close to its seed after every applicable mutation")
    applied += names.rename(unit, rng)
    scaffolding.drop_foreign(unit)
    return Mutant(unit.render(layout), unit.kernel_name, applied, unit)


def run(unit: Unit, name: str, rng: random.Random, dtypes: tuple[str, ...]) -> str | None:
    if name == "precision":
        return retype.precision(unit, rng, dtypes)
    return MUTATIONS[name].apply(unit, rng)


@functools.lru_cache(maxsize=1024)
def retyped_fingerprint(text: str, kernel: str, target: str) -> frozenset[str]:
    """The seed retyped to ``target``, fingerprinted (the same for every mutant that retypes it)."""
    unit = Unit(text, kernel)
    retype.change_precision(unit, target)
    return frozenset(fingerprint(unit.measured()))


def far_enough(unit: Unit, bases: list[set[str]], limit: float) -> bool:
    return Measure().far_enough(unit, bases, limit)


@dataclass(slots=True)
class Measure:
    """The fingerprint of one unit, taken again only when its text changed: a third of the
    measures of a mutant found the text of the one before (the mutations since found no site)."""

    text: str | None = None
    mine: set[str] | None = None

    def far_enough(self, unit: Unit, bases: list[set[str]], limit: float) -> bool:
        text = unit.measured()
        if text != self.text:
            self.text, self.mine = text, fingerprint(text)
        return all(jaccard(base, self.mine) < limit for base in bases)
