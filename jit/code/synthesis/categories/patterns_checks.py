"""Pattern family of property-check kernels: a kernel computes something from its inputs and
checks, with ``wp.expect_eq`` / ``wp.expect_near``, an identity or a semantic rule that must hold,
the way Warp's own test suite checks its builtins. Most kernels also store what they computed;
some only check.

This module holds the writer every kind uses, the registry of kinds (``@kind``, with a weight)
and the scalar kinds; ``patterns_checks_geometry`` adds the vector, matrix, quaternion,
transform and struct kinds to the same registry, and ``patterns_checks_math`` the math builtins
(hyperbolic and inverse trigonometric functions, logs, error functions, float classes, norms,
small factorisations, rigid-body velocity). Each kind compares two *different*
computations that must agree on every input its ranges allow:

- integers per type: wrap-around of unsigned sums, ``//`` (floors) against ``/`` and ``%``
  (truncate), bit identities, shifts, conversions between widths and to floats, min/max/clamp,
  ``abs`` and ``sign``, uint64 sort keys packed from two uint32 halves;
- conversions: small integers through every scalar type and back, written with typed
  constructors (``wp.uint64(x)``, ``wp.float16(x)``) as Warp's tests write them; float16
  widened to float32 and float64;
- floats: floor, ceil, trunc, round and rint, and float16/32/64 conversions;
- bool logic and conditionals, and ``wp.static`` loops over ``wp.constant`` module constants.

A tolerance is chosen for the dtype and the input range, and the kernel says why next to it.
Inputs are ranged so that the identity holds exactly where it is exact (no overflow, integers
below 2**24 in float32) and within tolerance where it is not; the docstring states the ranges a
check depends on, the same ranges the launch draws from. Every input element is read once (into
a local, or in place where it is used once), paired operands are named as a pair (``lhs``/``rhs``,
``first``/``second``), and a value written to an output is either checked or named in the
docstring ("... and write tanh"). What it leaves out: checks on literals only (they would
recompute a constant in every thread), bfloat16, and gradients.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.patterns import RoleParam, WrittenKernel, assigned_names, fmt
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.docs import NO_TEST_DOCSTRING, docstring, sentence
from jit.code.synthesis.quick_layout import split_commas
from jit.code.synthesis.stmt import INDENT, Param
from jit.code.synthesis.types import WType

FLOAT16 = WType("float16", "float", "float16")
INTS = {n: WType(n, "int", n) for n in ("int8", "int16", "int32", "int64")}
UINTS = {n: WType(n, "uint", n) for n in ("uint8", "uint16", "uint32", "uint64")}
BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
SUFFIX = {"float32": "f", "float64": "d"}
FLOATS = {"float16": FLOAT16, "float32": T.FLOAT32, "float64": T.FLOAT64}
VECS = {(n, s): WType(f"vec{n}{SUFFIX[s]}", "vec", s, (n,)) for n in (2, 3, 4) for s in ("float32", "float64")}
MATS = {(n, s): WType(f"mat{n}{n}{SUFFIX[s]}", "mat", s, (n, n)) for n in (2, 3, 4) for s in ("float32", "float64")}
QUATS = {s: WType(f"quat{SUFFIX[s]}", "quat", s, (4,)) for s in ("float32", "float64")}
SCALARS = {**INTS, **UINTS, **FLOATS}
TRANSFORMS = {s: WType(f"transform{SUFFIX[s]}", "transform", s, (7,)) for s in ("float32", "float64")}
TOLERANCE = {"float32": 1.0e-5, "float64": 1.0e-12}  # a few roundings of values of order one
NEAR = re.compile(r"^(\s*wp\.expect_near\(.*), ((?:wp\.\w+\()?[-\d.e]+\)?)\)$")  # its last argument


CheckKernel = WrittenKernel


# checks that keep their expects only, with no output: 205 of the 233 kernels of Warp's tests that call
# wp.expect_* store nothing to an array (a kernel whose checked local is read twice can drop its store)
EXPECT_ONLY = 0.85


class Writer:
    """Parameters, module constants, structs and body lines of one property-check kernel."""

    def __init__(self, rng: random.Random, suffix: str):
        self.rng, self.suffix = rng, suffix
        self.n = rng.choice((16, 32, 64, 128))
        self.tid = rng.choice(("i", "i", "tid"))
        self.plain = rng.random() < 0.6  # `float`, `wp.vec3` rather than `wp.float32`, `wp.vec3f`
        self.params: list[Param] = []
        self.constants: list[str] = []
        self.structs: list[tuple[WType, str]] = []
        self.lines: list[str] = []
        self.loads: list[tuple[str, str]] = []  # (local, array) bound by ``load``

    def name(self, base: str) -> str:
        return f"{base}_{self.suffix}"

    def spell(self, t: WType) -> str:
        """How a type is written: ``float``/``int`` or ``wp.float32``/``wp.int32``, ``wp.vec3`` or ``wp.vec3f``."""
        plain = self.plain
        if t.kind == "struct":
            return t.name
        if t is T.FLOAT32 or t.name == "float32":
            return "float" if plain else "wp.float32"
        if t.name == "int32":
            return "int" if plain else "wp.int32"
        if t.kind in ("vec", "mat", "quat", "transform") and t.scalar == "float32" and plain:
            return t.py[:-1]
        return t.py

    def array(self, name: str, t: WType, lo: float = -1.0, hi: float = 1.0, role: str = "in") -> str:
        """A 1D array of ``t`` over the launch; its inputs are drawn from [lo, hi] (quaternions unit)."""
        self.params.append(RoleParam(name, "array", t, 1, role, (lo, hi), (self.n,), spelled=self.spell(t)))
        return name

    def out(self, name: str, t: WType) -> str:
        return self.array(name, t, 0.0, 0.0, "out")

    def at(self, array: str) -> str:
        return f"{array}[{self.tid}]"

    def load(self, local: str, array: str) -> str:
        """``local = array[i]``: every input element is read once, into a local. ``finish`` may read
        it in place instead where the local is used exactly once."""
        if local == array:  # the local would shadow the parameter
            raise ValueError(f"{self.suffix}: local {local!r} named like its array")
        self.add(f"{local} = {self.at(array)}")
        self.loads.append((local, array))
        return local

    def constant(self, base: str, value: str) -> str:
        """A module-level constant, ``wp.constant(...)`` named with the kernel's suffix."""
        name = self.name(base)
        self.constants.append(f"{name} = wp.constant({value})")
        return name

    def struct(self, base: str, fields: list[tuple[str, WType]]) -> WType:
        t = WType(self.name(base), "struct", fields=tuple(fields))
        body = "\n".join(f"{INDENT}{n}: {self.spell(ft)}" for n, ft in fields)
        self.structs.append((t, f"@wp.struct\nclass {t.name}:\n{body}"))
        return t

    def typed(self, t: WType, value: float) -> str:
        """A literal of type ``t``, with float32 ones written ``wp.float32(0.5)`` in kernels that spell types out."""
        if t.name == "float32" and not self.plain:
            return f"wp.float32({fmt(value)})"
        return typed(t, value)

    def add(self, *lines: str) -> None:
        self.lines += lines

    def pick(self, *options):
        return self.rng.choice(options)

    def called(self, *fns: str) -> list[str]:
        """Those of the builtins ``fns`` the lines drawn so far call (comments aside), in the order given:
        a kernel is named only for builtins its drawn checks call."""
        code = "\n".join(line for line in self.lines if not line.lstrip().startswith("#"))
        return [fn for fn in fns if f"wp.{fn}(" in code]

    def checks(self, options: list[tuple[str, list[str]]], lo: int = 2, hi: int = 3, keep: int = 0) -> str:
        """Add the lines of ``lo`` to ``hi`` of ``options`` (``(what it checks, lines)``; the first ``keep``
        always), in their order; returns what the drawn checks check, as one clause for the purpose."""
        rest = options[keep:]
        count = self.rng.randint(max(lo - keep, 0), min(hi - keep, len(rest)))
        drawn = set(self.rng.sample(range(len(rest)), count))
        chosen = options[:keep] + [o for n, o in enumerate(rest) if n in drawn]
        for _, lines in chosen:
            self.add(*lines)
        return clause([what for what, _ in chosen])

    def expect_only(self, p: float = EXPECT_ONLY) -> bool:
        """Sometimes keep the checks only: drop the final store of a local the checks read anyway.
        Returns whether it did."""
        store = re.fullmatch(rf"(\w+)\[{self.tid}\] = (\w+)", self.lines[-1])
        if not store or self.rng.random() >= p:
            return False
        array, local = store.groups()
        if sum(len(re.findall(rf"\b{local}\b", line)) for line in self.lines[:-1]) >= 2:  # bound, then read
            self.lines.pop()
            self.params = [q for q in self.params if q.name != array]
            return True
        return False

    def inline_loads(self, p: float = 0.5) -> None:
        """Sometimes read an input in place, ``x[i]``, where its local is used once (never in a loop body)."""
        for local, array in self.loads:
            bind = self.lines.index(f"{local} = {self.at(array)}")
            word = re.compile(rf"(?<![\w.]){local}\b")
            uses = [(n, len(word.findall(line))) for n, line in enumerate(self.lines)
                    if n != bind and not line.lstrip().startswith("#") and word.search(line)]
            if not uses:
                raise ValueError(f"{self.suffix}: input {array!r} loaded but never used")
            if len(uses) == 1 and uses[0][1] == 1 and not self.lines[uses[0][0]].startswith(INDENT) \
                    and self.rng.random() < p:
                n = uses[0][0]
                self.lines[n] = word.sub(self.at(array), self.lines[n])
                del self.lines[bind]

    def finish(self, base: str, headline: str, detail: str) -> CheckKernel:
        """The kernel: a docstring (``headline``, which may end saying what it writes: "... and write
        tanh"); the record's purpose adds ``detail``."""
        name = self.name(base)
        self.inline_loads()
        seen: set[str] = set()  # a comment said once (two drawn checks may explain themselves alike)
        self.lines = [line for line in self.lines
                      if not line.lstrip().startswith("#") or not (line in seen or seen.add(line))]
        if self.expect_only():  # nothing is written
            headline = re.sub(r",? and write .*$", "", headline)
        if name.startswith("test_") and any(p.role != "in" for p in self.params):
            name = "check_" + name[len("test_"):]  # it stores results too: a check, not a test that only asserts
        lines = self.lines
        uses = sum(len(re.findall(rf"\b{self.tid}\b", line)) for line in lines)
        inline = uses == 1 and self.rng.random() < 0.7  # x[wp.tid()] when the index is read once
        if inline:
            lines = [re.sub(rf"\[{self.tid}\]", "[wp.tid()]", line) for line in lines]
        lines = [bare_comparands(line) for line in lines]
        if self.rng.random() < 0.35:  # the tolerance by keyword, as many of Warp's tests pass it
            lines = [NEAR.sub(r"\1, tolerance=\2)", line) if arguments(line) == 3 else line for line in lines]
        body = "\n".join(lines) + "\n".join(text for _, text in self.structs)
        self.constants = [c for c in self.constants if re.search(rf"\b{c.split(' = ')[0]}\b", body)]  # drawn checks only
        params = [p for p in self.params if p.role == "in"] + [p for p in self.params if p.role != "in"]
        clash = assigned_names(self.lines) & {p.name for p in params}
        if clash:  # a local shadowing a parameter: a bug in the kind, not a random event
            raise ValueError(f"{name}: locals {sorted(clash)} shadow parameters")
        sig = ", ".join(f"{p.name}: wp.array(dtype={p.spelled})" for p in params)
        head = [] if inline else [f"{INDENT}{self.tid} = wp.tid()"]
        purpose = sentence(headline) + " " + sentence(detail)
        # an interval, "[-1, 1]", is not broken across the docstring's lines
        # the summary, and below it what the checks check: a docstring naming only the first builtin of
        # several reads as one that does not match the code
        def whole(text: str) -> str:
            return re.sub(r"\[([^\]\s]+), ", "[\\1,\0", text)

        doc = docstring(whole(sentence(headline)), whole(sentence(detail)), rng=self.rng,
                        none=NO_TEST_DOCSTRING).replace("\0", " ")
        kernel = ["@wp.kernel", f"def {name}({sig}):", *([doc] if doc else []), *head,
                  *(INDENT + line if line else "" for line in lines)]
        parts = ["import warp as wp", "\n".join(self.constants), *(text for _, text in self.structs), "\n".join(kernel)]
        text = "\n\n\n".join(p for p in parts if p) + "\n"
        # checks are forward-only, as in Warp's tests (rounding, integers and expects have no useful adjoint)
        meta = {"deterministic": True, "needs_runtime_objects": False, "reason": None,
                "differentiable": False, "record": {"purpose": purpose}}
        return CheckKernel(name, text, params, [self.n], None, len(lines), [], [t for t, _ in self.structs], meta)


def typed(t: WType, value: float) -> str:
    """A literal of type ``t``: ``wp.uint8(200)``, ``wp.float64(0.5)``; a float32 is a plain ``0.5``."""
    if t.kind in ("int", "uint"):
        return f"{t.py}({int(value)})"
    return fmt(value) if t.name == "float32" else f"{t.py}({fmt(value)})"


CAST_LITERAL = re.compile(r"wp\.float32\((-?\d+\.\d*(?:e-?\d+)?)\)")


def bare_comparands(line: str) -> str:
    """A float32 literal passed whole to ``wp.expect_eq`` / ``wp.expect_near`` is written plain (``1.0``,
    not ``wp.float32(1.0)``): a float literal is a float32 in a kernel, so the cast is needless there."""
    head = re.match(r"(\s*wp\.expect_(?:eq|near)\()(.*)\)$", line)
    if not head:
        return line
    args = [CAST_LITERAL.sub(r"\1", a) if CAST_LITERAL.fullmatch(a.strip()) else a
            for a in split_commas(head.group(2))]
    return head.group(1) + ",".join(args) + ")"


def arguments(line: str) -> int:
    """How many arguments the outermost call on a line takes (0 when it has no call)."""
    depth, count = 0, 0
    for ch in line:
        if ch in "([":
            depth += 1
            count += depth == 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 1:
            count += 1
    return count



def clause(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (empty for no parts)."""
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def interval(lo: float, hi: float) -> str:
    """``[-1, 1]``, ``[0.125, 8]``: an input range as a docstring states it."""
    def number(v: float) -> str:
        return str(int(v)) if float(v).is_integer() else f"{v:g}"
    return f"[{number(lo)}, {number(hi)}]"


def tolerance(t: WType, scale: float = 1.0) -> str:
    return typed(FLOATS.get(t.scalar, t), TOLERANCE[t.scalar] * scale)


KINDS: dict[str, Callable[[Writer, random.Random], CheckKernel]] = {}
# integer arithmetic and conversions between scalar types take larger weights: Warp's own tests
# check them type by type, where a geometry kind stands for one builtin family
WEIGHTS: dict[str, float] = {}


def kind(name: str, weight: float = 1.0):
    """Register a kind: a function of a ``Writer`` and the item's random source that returns a kernel."""

    def wrap(make):
        KINDS[name], WEIGHTS[name] = make, weight
        return make

    return wrap


# ---------------------------------------------------------------------------------------------
# integers


@kind("uint_wrap", 1.25)
def _uint_wrap(w: Writer, rng: random.Random) -> CheckKernel:
    t = UINTS[w.pick("uint8", "uint16", "uint32")]
    bits = BITS[t.name]
    v = w.load(w.pick("value", "v"), w.array(w.pick("values", "x", "counters"), t, 0, 2**bits - 1))
    if rng.random() < 0.5:
        offset = rng.randint(2 ** min(bits - 1, 30), min(2**bits - 1, 2**31 - 1))  # literals stay int32
        off = w.typed(t, offset)
        if rng.random() < 0.4:
            off = w.constant(w.pick("OFFSET", "BIAS"), off)
        out = w.out(w.pick("shifted", "sums", "wrapped"), t)
        w.add(f"total = {v} + {off}",
              f"# unsigned addition wraps modulo 2**{bits}: subtracting the offset undoes it",
              f"wp.expect_eq(total - {off}, {v})",
              "# the sum wraps, coming out smaller than the value, exactly when the value exceeds ~offset",
              f"wp.expect_eq(total < {v}, {v} > ~{off})",
              f"{w.at(out)} = total")
        return w.finish(w.pick("test_unsigned_wrap", "check_uint_wraparound", "test_uint_add_wrap"),
                        f"Check that {t.name} addition wraps modulo 2**{bits} for every input value",
                        f"Adding {offset} wraps exactly when the value exceeds its headroom, and subtracting it "
                        "restores the value")
    out = w.out(w.pick("negated_out", "complement"), t)
    w.add(f"negated = {w.typed(t, 0)} - {v}",
          "# two's complement: the negation is the bitwise inverse plus one",
          f"wp.expect_eq(~{v} + {w.typed(t, 1)}, negated)",
          f"wp.expect_eq({v} + negated, {w.typed(t, 0)})",
          f"{w.at(out)} = negated")
    return w.finish(w.pick("test_unsigned_negate", "check_uint_negation"),
                    f"Check two's complement negation of {t.name} values for every input value",
                    "The wrapped negation is the bitwise inverse plus one and sums with the value to zero")


@kind("int_division", 1.25)
def _int_division(w: Writer, rng: random.Random) -> CheckKernel:
    t = INTS[w.pick("int8", "int16", "int32", "int64")]

    def lit(value: int) -> str:  # a plain literal is an int32: other widths need the cast to match
        return str(value) if t.name == "int32" else w.typed(t, value)

    hi = 120 if t.name == "int8" else w.pick(100, 1000)
    a = w.load("a", w.array(w.pick("numerators", "dividends", "values"), t, -hi, hi))
    # a worked example only with the kernel's own divisor (none for an array of divisors)
    example = ""
    if rng.random() < 0.6:
        d = w.load("d", w.array(w.pick("divisors", "denominators"), t, 1, 12))
        by, over = "a positive divisor", "divisors in [1, 12]"
    else:
        by = str(rng.randint(2, 9))
        d, over = lit(int(by)), f"the divisor {by}"
        example = f" (-{int(by) + 1} // {by} is -2 where / gives -1)"
    w.add("# / truncates toward zero and % keeps the dividend's sign, as in C",
          f"q = {a} / {d}", f"r = {a} % {d}",
          f"wp.expect_eq(q * {d} + r, {a})",
          f"# Warp's // floors, as Python's does{example}:",
          "# the floored quotient is one less than q when the remainder is negative",
          f"floored = {a} // {d}",
          f"wp.expect_eq(floored, q - {lit(1)} if r < {lit(0)} else q)")
    extra = [("the remainder is smaller than the divisor", [f"wp.expect_eq(wp.abs(r) < {d}, True)"]),
             ("% is zero exactly when the floored quotient divides evenly",
              [f"wp.expect_eq(r == {lit(0)}, floored * {d} == {a})"]),
             ("negating the numerator negates / and %",
              [f"wp.expect_eq((-{a}) / {d}, -q)", f"wp.expect_eq((-{a}) % {d}, -r)"])]
    also = w.checks(extra, 1, 2)
    w.add(f"{w.at(w.out(w.pick('quotients', 'floored_out'), t))} = floored")
    if rng.random() < 0.6:
        w.add(f"{w.at(w.out(w.pick('remainders', 'rem'), t))} = r")
    return w.finish(w.pick("test_int_division", "check_floordiv_mod", "test_divmod_signed"),
                    f"Check {t.name} division and remainder rules for numerators in [-{hi}, {hi}] and {over}",
                    f"Dividing by {by}, / and % recover the numerator and // floors"
                    + (f"; it also checks that {also}" if also else ""))


@kind("bit_identities", 1.25)
def _bit_identities(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(*UINTS.values(), INTS["int32"], INTS["int64"])
    signed = t.kind == "int"
    hi = 2 ** min(BITS[t.name] - 1 if signed else BITS[t.name], 62) - 1
    first, second = w.pick(("lhs", "rhs"), ("mask_a", "mask_b"), ("bits_a", "bits_b"))
    a = w.load("a", w.array(first, t, -hi - 1 if signed else 0, hi))
    b = w.load("b", w.array(second, t, -hi - 1 if signed else 0, hi))
    options = [("De Morgan's law", [f"wp.expect_eq(~({a} & {b}), ~{a} | ~{b})"]),
               ("xor as or with the common bits cleared", [f"wp.expect_eq({a} ^ {b}, ({a} | {b}) & ~({a} & {b}))"]),
               ("that xor with the same mask twice restores the value", [f"wp.expect_eq(({a} ^ {b}) ^ {b}, {a})"])]
    if not signed:  # wrapping arithmetic: signed overflow is undefined
        options += [("the carry-save form of a sum",
                     [f"wp.expect_eq({a} + {b}, ({a} ^ {b}) + (({a} & {b}) << {w.typed(t, 1)}))"]),
                    ("that or less and is xor", [f"wp.expect_eq(({a} | {b}) - ({a} & {b}), {a} ^ {b})"])]
    what = w.checks(options, 2, 4)
    op = w.pick("^", "&", "|")
    w.add(f"{w.at(w.out({'^': 'toggled', '&': 'common', '|': 'merged'}[op], t))} = {a} {op} {b}")
    return w.finish(w.pick("test_bitwise_ops", "check_bit_identities", "test_bit_logic"),
                    f"Check bitwise identities on {t.name} masks for every input pair and write their "
                    f"{ {'^': 'xor', '&': 'bitwise and', '|': 'bitwise or'}[op]}", f"It checks {what}")


@kind("shifts", 1.25)
def _shifts(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(*UINTS.values(), *INTS.values())
    bits, k = BITS[t.name], rng.randint(1, 4)
    if t.kind == "int":  # left shifts of negative values are undefined in C: signed kernels shift right only
        hi = 2 ** min(bits - 2, 40)
        x = w.load("x", w.array(w.pick("values", "numbers", "codes"), t, -hi, hi))
        w.add("# an arithmetic right shift floors, like //",
              f"shifted = {x} >> {w.typed(t, k)}", f"wp.expect_eq(shifted, {x} // {w.typed(t, 2**k)})",
              f"wp.expect_eq(shifted * {w.typed(t, 2**k)} + ({x} & {w.typed(t, 2**k - 1)}), {x})",
              f"{w.at(w.out(w.pick('shifted_out', 'quotients'), t))} = shifted")
        return w.finish(w.pick("test_arithmetic_shift", "check_shift_right_signed"),
                        f"Check that a right shift of {t.name} values floors for every signed input",
                        f"Shifting by {k} matches // {2**k} and drops exactly the low {'bit' if k == 1 else f'{k} bits'}")
    top = min(bits - k, 62)
    x = w.load("x", w.array(w.pick("values", "keys", "codes"), t, 0, 2**top - 1))
    s = w.typed(t, k)
    if rng.random() < 0.3:
        s = w.constant(w.pick("SHIFT", "BITS"), s)
    w.add(f"shifted = {x} << {s}", f"# values below 2**{top} lose no bit at the top")
    what = w.checks([("shifts back", [f"wp.expect_eq(shifted >> {s}, {x})"]),
                     (f"multiplies it by {2**k}", [f"wp.expect_eq(shifted, {x} * {w.typed(t, 2**k)})"]),
                     (f"clears the low {'bit' if k == 1 else f'{k} bits'}", [f"wp.expect_eq(shifted & {w.typed(t, 2**k - 1)}, {w.typed(t, 0)})"])])
    w.add(f"{w.at(w.out(w.pick('shifted_out', 'scaled'), t))} = shifted")
    names = ("test_shift_left", "test_shift_ops") + (("check_shift_roundtrip",) if "shifts back" in what else ())
    return w.finish(w.pick(*names),
                    f"Check left shifts by {k} of {t.name} values below 2**{top}", f"The shift {what}")


@kind("int_conversion", 1.25)
def _int_conversion(w: Writer, rng: random.Random) -> CheckKernel:
    variant = w.pick("widen", "narrow", "float")
    if variant == "widen":
        src = w.pick(INTS["int8"], INTS["int16"], UINTS["uint8"], UINTS["uint16"])
        wide = INTS["int64"] if src.name == "uint16" else w.pick(INTS["int32"], INTS["int64"])  # the square fits
        bits = BITS[src.name]
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if src.kind == "int" else (0, 2**bits - 1)
        x = w.load("x", w.array(w.pick("values", "samples", "codes"), src, lo, hi))
        w.add(f"wide = {wide.py}({x})", f"wp.expect_eq({src.py}(wide), {x})",
              f"# the square fits in {wide.name} and is exact in float64 (below 2**53)",
              "square = wide * wide",
              f"wp.expect_eq(wp.float64(square), wp.float64({x}) * wp.float64({x}))",
              f"{w.at(w.out(w.pick('squares', 'squared'), wide))} = square")
        return w.finish(w.pick("test_widen_int", "check_int_widening"),
                        f"Check {src.name} to {wide.name} widening for every {src.name} value",
                        "The wide value converts back and squares exactly")
    if variant == "narrow":
        narrow = w.pick(UINTS["uint8"], UINTS["uint16"])
        bits = BITS[narrow.name]
        x = w.load("x", w.array(w.pick("values", "samples", "codes"), INTS["int32"], 0, 2 ** (bits + 4)))
        w.add(f"low = {narrow.py}({x})", f"# narrowing keeps the low {bits} bits")
        if rng.random() < 0.7:  # the mask and modulus from a module constant, folded at compile time
            width = w.constant(w.pick("BITS", "WIDTH"), str(bits))
            mask, modulus = f"wp.static((1 << {width}) - 1)", f"wp.static(1 << {width})"
            if rng.random() < 0.6:
                w.add(f"mask = {mask}")
                mask = "mask"
        else:
            mask, modulus = str(2**bits - 1), str(2**bits)
        w.add(f"wp.expect_eq(wp.int32(low), {x} & {mask})",
              f"# for a non-negative value, % keeps the low bits too",
              f"wp.expect_eq({w.pick('int', 'wp.int32')}(low), {x} % {modulus})")
        if rng.random() < 0.5:
            w.add(f"# {x} less its low bits is a multiple of 2**{bits}",
                  f"wp.expect_eq(({x} - wp.int32(low)) % {2**bits}, 0)")
        w.add(f"{w.at(w.out(w.pick('low_bits', 'truncated'), narrow))} = low")
        return w.finish(w.pick("test_narrow_int", "check_int_narrowing"),
                        f"Check int32 to {narrow.name} narrowing for every input in [0, 2**{bits + 4}]",
                        f"The conversion keeps the low {bits} bits")
    f = w.pick(T.FLOAT32, T.FLOAT64)
    y = w.load("y", w.array(w.pick("values", "samples", "coords"), f, -100.0, 100.0))
    n = w.load("n", w.array(w.pick("counts", "offsets"), INTS["int32"], -(2**24), 2**24))
    w.add(f"# integers up to 2**24 in magnitude are exact in {f.name}",
          f"wp.expect_eq(wp.int32({f.py}({n})), {n})",
          "# converting to int truncates toward zero",
          f"k = wp.int32({y})", f"wp.expect_eq({f.py}(k), wp.trunc({y}))",
          f"{w.at(w.out(w.pick('truncated', 'whole'), INTS['int32']))} = k")
    return w.finish(w.pick("test_int_float_conversion", "check_float_to_int"),
                    f"Check conversions between int32 and {f.name} for integers in [-2**24, 2**24] and "
                    "values in [-100, 100]",
                    f"Integers up to 2**24 round-trip and {f.name} to int32 truncates")


@kind("minmax", 1.25)
def _minmax(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(*INTS.values(), *UINTS.values(), FLOAT16, T.FLOAT32, T.FLOAT64)
    is_int = t.kind in ("int", "uint")
    lo, hi = (0, 200) if t.kind == "uint" else (-100, 100) if is_int else (-4.0, 4.0)
    if t.name == "int8":  # a + b and a - b stay inside int8
        lo, hi = -60, 60
    pair = rng.random() < 0.6
    first, second = w.pick(("lhs", "rhs"), ("x", "y"), ("values", "others")) if pair else (w.pick("values", "samples"), "")
    a = w.load("a", w.array(first, t, lo, hi))
    if is_int:  # round bounds, as a test author picks them, well apart
        tens = range(int(lo) // 10 + 1, int(hi) // 10)
        bounds = [10 * b for b in sorted(rng.sample(tens, 2))]
        if bounds[1] - bounds[0] < 20:
            bounds = [10 * tens[0], 10 * tens[-1]]
    else:
        bounds = [rng.choice((-2.0, -1.5, -1.0, -0.5, 0.0)), rng.choice((0.5, 1.0, 1.5, 2.0))]
    lower, upper = w.typed(t, bounds[0]), w.typed(t, bounds[1])
    w.add(f"clamped = wp.clamp({a}, {lower}, {upper})", "# clamp is a max then a min",
          f"wp.expect_eq(clamped, wp.min(wp.max({a}, {lower}), {upper}))")
    what = "wp.clamp against wp.max then wp.min"
    if pair:
        b = w.load("b", w.array(second, t, lo, hi))
        w.add("# min and max split a pair, so their sum is the pair's",
              f"wp.expect_eq(wp.min({a}, {b}) + wp.max({a}, {b}), {a} + {b})")
        what += " and that wp.min and wp.max split a pair"
        if t.kind != "uint" and rng.random() < 0.6:  # unsigned differences wrap
            w.add(f"wp.expect_eq(wp.max({a}, {b}) - wp.min({a}, {b}), wp.abs({a} - {b}))")
            what += ", whose spread is the absolute difference"
    w.add(f"{w.at(w.out(w.pick('limited', 'bounded'), t))} = clamped")
    return w.finish(w.pick("test_min_max", "check_clamp", "test_clamp_minmax") if pair else w.pick("test_clamp", "check_clamp"),
                    f"Check wp.clamp, wp.min and wp.max on {t.name} values in {interval(lo, hi)}", f"It checks {what}")


@kind("abs_sign")
def _abs_sign(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(*INTS.values(), T.FLOAT32, T.FLOAT64)
    lo, hi = (-100, 100) if t.kind == "int" else (-8.0, 8.0)  # never the most negative int, whose abs overflows
    x = w.load("x", w.array(w.pick("values", "numbers", "deltas"), t, lo, hi))
    w.add(f"magnitude = wp.abs({x})")
    what = w.checks([("wp.abs times wp.sign gives back the value",
                      ["# sign is -1 below zero and 1 otherwise", f"wp.expect_eq(magnitude * wp.sign({x}), {x})"]),
                     ("wp.abs is the larger of x and -x", [f"wp.expect_eq(magnitude, wp.max({x}, -{x}))"]),
                     ("wp.abs is never negative", [f"wp.expect_eq(magnitude >= {w.typed(t, 0)}, True)"])], 2, 3, keep=1)
    w.add(f"{w.at(w.out(w.pick('magnitudes', 'abs_values'), t))} = magnitude")
    return w.finish(w.pick("test_abs_sign", "check_abs"),
                    f"Check wp.abs and wp.sign for every {t.name} input in {interval(lo, hi)}",
                    f"It checks that {what}")


@kind("type_roundtrip", 2.5)
def _type_roundtrip(w: Writer, rng: random.Random) -> CheckKernel:
    if rng.random() < 0.3:
        return _float_widening(w, rng)
    src = w.pick(INTS["int32"], INTS["int32"], INTS["int64"], INTS["int16"], UINTS["uint8"], UINTS["uint32"])
    x = w.load(w.pick("x", "value", "v"), w.array(w.pick("values", "samples", "counts"), src, 0, 126))
    back = "int" if src.name == "int32" and w.plain else src.py  # in a kernel, int is wp.int32
    via = [t for name, t in SCALARS.items() if name != src.name]
    chosen = [via[k] for k in sorted(rng.sample(range(len(via)), rng.randint(5, len(via))))]
    w.add("# values in [0, 126] are exact in every integer and float type"
          + (", float16 included" if any(t.name == "float16" for t in chosen) else ""))
    w.add(*(f"wp.expect_eq({back}({t.py}({x})), {x})" for t in chosen))
    via_int = w.pick(*(t for t in chosen if t.kind != "float"), UINTS["uint64"])
    w.add("# in a kernel int() is wp.int32: any scalar converts, truncated toward zero into 32 bits",
          f"wp.expect_eq(int({via_int.py}({x})), {x if src.name == 'int32' else f'int({x})'})")
    direct = [t for t in chosen if t.name != "float64"]
    direct = rng.sample(direct, min(len(direct), rng.randint(1, 3)))
    w.add("# converting through float64 first changes nothing",
          *(f"wp.expect_eq({t.py}(wp.float64({x})), {t.py}({x}))" for t in direct))
    summed = rng.sample(chosen, rng.randint(1, 3))
    one = "1" if src.name == "int32" else w.typed(src, 1)  # a plain literal is an int32
    w.add("# adding one stays below 128, so the sum is the same in every type",
          *(f"wp.expect_eq({t.py}({x}) + {w.typed(t, 1)}, {t.py}({x} + {one}))" for t in summed))
    kept = w.pick(*chosen)
    w.add(f"{w.at(w.out(w.pick('converted', 'as_' + kept.name), kept))} = {kept.py}({x})")
    names = clause([t.name for t in chosen])
    return w.finish(w.pick("test_type_conversions", "check_scalar_roundtrip", "test_int_conversions"),
                    f"Check that {src.name} values in [0, 126] convert to other scalar types and back, and write "
                    f"them as {kept.name}",
                    f"They round-trip exactly through {names}, converting through float64 first "
                    f"changes no {clause([t.name for t in direct])} value, and adding one commutes with converting "
                    f"to {clause([t.name for t in summed])}")


def _float_widening(w: Writer, rng: random.Random) -> CheckKernel:
    h = w.load(w.pick("h", "half"), w.array(w.pick("halves", "values_fp16", "samples"), FLOAT16, -4.0, 4.0))
    two = w.pick(2.0, 4.0)  # scaling up: halving a float16 subnormal would round
    w.add("# every float16 is exactly a float32 and a float64, so widening and narrowing back is exact",
          f"wp.expect_eq(wp.float16(wp.float32({h})), {h})",
          f"wp.expect_eq(wp.float16(wp.float64({h})), {h})",
          f"wp.expect_eq(wp.float64(wp.float32({h})), wp.float64({h}))")
    what = w.checks([(f"that scaling by {fmt(two)} is exact in every width",
                      [f"# |h| <= 4 scaled by {fmt(two)} stays at most {4 * two:g}: exact in float16, subnormals included",
                       f"wp.expect_eq(wp.float32({h} * wp.float16({fmt(two)})), wp.float32({h}) * wp.float32({fmt(two)}))"]),
                     ("the sign of the widened value",
                      [f"wp.expect_eq(wp.float64(-{h}), -wp.float64({h}))"]),
                     ("the floor in both widths",
                      [f"wp.expect_eq(wp.float32(wp.floor({h})), wp.floor(wp.float32({h})))"])], 1, 3)
    wide = w.pick("float32", "float64")
    w.add(f"{w.at(w.out(w.pick('widened', 'wide'), FLOATS[wide]))} = wp.{wide}({h})")
    return w.finish(w.pick("test_float16_widening", "check_half_to_double"),
                    f"Check float16 values in [-4, 4] widened to float32 and float64, and write them as {wide}",
                    f"The conversions are exact both ways, and it checks {what}")


@kind("key_packing", 1.25)
def _key_packing(w: Writer, rng: random.Random) -> CheckKernel:
    u32, u64 = UINTS["uint32"], UINTS["uint64"]
    cells, items = w.pick(("cells", "items"), ("cell_ids", "particle_ids"), ("buckets", "ids"))
    cell = w.load("cell", w.array(cells, u32, 0, 2**32 - 1))
    item = w.load("item", w.array(items, u32, 0, 2**32 - 1))
    shift = "wp.uint64(32)"
    if rng.random() < 0.4:
        shift = w.constant(w.pick("KEY_SHIFT", "HIGH_SHIFT"), shift)
    w.add("# the cell in the high 32 bits and the item in the low 32: keys sort by cell, then item",
          f"key = (wp.uint64({cell}) << {shift}) | wp.uint64({item})",
          f"wp.expect_eq(key >> {shift}, wp.uint64({cell}))",
          f"wp.expect_eq(wp.uint32(key & wp.uint64(0xFFFFFFFF)), {item})")
    options = [("the key is cell * 2**32 + item",
                [f"wp.expect_eq(key, wp.uint64({cell}) * wp.uint64(4294967296) + wp.uint64({item}))"]),
               ("bitwise or and addition agree on the disjoint halves",
                [f"wp.expect_eq(key, (wp.uint64({cell}) << {shift}) + wp.uint64({item}))"])]
    options = [options[rng.randrange(2)]]  # both say the halves are disjoint: one of them
    if rng.random() < 0.4:
        next_cells, next_items = w.pick(("next_cells", "next_items"), ("other_cells", "other_items"))
        other_cell = w.load("other_cell", w.array(next_cells, u32, 0, 2**32 - 1))
        other_item = w.load("other_item", w.array(next_items, u32, 0, 2**32 - 1))
        options.insert(0, ("keys order by cell, then by item",
                           [f"other = (wp.uint64({other_cell}) << {shift}) | wp.uint64({other_item})",
                            f"wp.expect_eq(key < other, {cell} < {other_cell} or ({cell} == {other_cell} and {item} < {other_item}))"]))
        what = w.checks(options, 1, 2, keep=1)
    else:
        what = w.checks(options, 0, 1)
    w.add(f"{w.at(w.out(w.pick('keys', 'sort_keys'), u64))} = key")
    return w.finish(w.pick("test_pack_keys", "check_uint64_keys", "test_sort_key_packing"),
                    "Check uint64 sort keys packed from a uint32 cell and item for every input pair",
                    f"Both halves unpack exactly, and it checks that {what}" if what else "Both halves unpack exactly")


# ---------------------------------------------------------------------------------------------
# floats


@kind("rounding")
def _rounding(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(T.FLOAT32, T.FLOAT32, T.FLOAT64)
    positive = rng.random() < 0.4  # x - floor(x) is exact for x >= 0 (and rounds for x in (-1, 0))
    lo = 0.0 if positive else -8.0
    x = w.load("x", w.array(w.pick("values", "samples", "coords"), t, lo, 8.0))
    zero, one, half = w.typed(t, 0.0), w.typed(t, 1.0), w.typed(t, 0.5)
    w.add(f"whole = wp.floor({x})")
    store = w.pick("floor", "round", "rint", "trunc")
    local = {"floor": "whole", "round": "rounded", "rint": "nearest", "trunc": "truncated"}[store]
    if store != "floor":
        w.add(f"{local} = wp.{store}({x})")

    def call(fn: str) -> str:  # the stored rounding is computed once
        return local if fn == store else f"wp.{fn}({x})"

    near = "# x less a nearest integer is exact and at most 1/2: it rounds to the nearest integer"
    checks = {
        "floor": ("floor is minus the ceil of minus x", [f"wp.expect_eq(whole, -wp.ceil(-{x}))"]),
        "bracket": ("floor brackets x from below", [f"wp.expect_eq(whole <= {x} and {x} < whole + {one}, True)"]),
        "fraction": ("x less its floor lies in [0, 1) and adds back exactly",
                     ["# for x >= 0, x less its floor is exact and lies in [0, 1)", f"fraction = {x} - whole",
                      f"wp.expect_eq(fraction >= {zero} and fraction < {one}, True)",
                      f"wp.expect_eq(whole + fraction, {x})"]),
        "trunc": ("trunc is the signed floor of the magnitude",
                  [f"wp.expect_eq({call('trunc')}, wp.sign({x}) * wp.floor(wp.abs({x})))"]),
        "round": ("round is within 1/2 of x and odd",
                  [near, f"wp.expect_near({call('round')}, {x}, {half})",
                   "# round takes halves away from zero, the same on both sides",
                   f"wp.expect_eq(wp.round(-{x}), -{call('round')})"]),
        "rint": ("rint is within 1/2 of x and odd",
                 [near, f"wp.expect_near({call('rint')}, {x}, {half})",
                  "# rint takes halves to the even neighbour, the same on both sides",
                  f"wp.expect_eq(wp.rint(-{x}), -{call('rint')})"]),
        "ceil": ("ceil is at most one above floor", [f"wp.expect_eq(wp.ceil({x}) - whole <= {one}, True)"]),
    }
    pool = ["bracket", "trunc", "round", "rint", "ceil"] + (["fraction"] if positive else [])
    kept = ["floor", store if store != "floor" else w.pick(*(["bracket", "fraction"] if positive else ["bracket"]))]
    rest = [k for k in pool if k not in kept]
    what = w.checks([checks[k] for k in kept + rest], 2, 4, keep=len(kept))
    written = {"floor": "floors", "round": "rounded values", "rint": "nearest integers", "trunc": "truncations"}[store]
    out = w.out({"floor": "floors", "round": "rounded_out", "rint": "nearest_out", "trunc": "truncated_out"}[store], t)
    w.add(f"{w.at(out)} = {local}")
    fns = w.called("floor", "ceil", "trunc", "round", "rint")  # floor and ceil always
    names = ["test_rounding", "check_" + "_".join(fns) if len(fns) <= 3 else "test_rounding_identities"]
    if "round" in fns:
        names.append("test_round_ops")
    return w.finish(w.pick(*names),
                    f"Check rounding identities of {t.name} values in {interval(lo, 8.0)} and write their {written}",
                    f"It checks that {what}")


@kind("precision")
def _precision(w: Writer, rng: random.Random) -> CheckKernel:
    if rng.random() < 0.25:
        first, second = w.pick(("counts", "offsets"), ("lhs", "rhs"), ("a", "b"))
        n = w.load("n", w.array(first, INTS["int32"], -1000, 1000))
        m = w.load("m", w.array(second, INTS["int32"], -1000, 1000))
        w.add("# integers up to 2048 are exact in float16, and so is the sum of two below 1024",
              f"half_n = wp.float16({n})", f"wp.expect_eq(wp.int32(half_n), {n})",
              f"total = half_n + wp.float16({m})", f"wp.expect_eq(wp.int32(total), {n} + {m})",
              f"{w.at(w.out(w.pick('sums', 'totals'), FLOAT16))} = total")
        return w.finish(w.pick("test_float16_integers", "check_half_integers"),
                        "Check that integers in [-1000, 1000] and their pairwise sums are exact in float16",
                        "Integers below 1024 convert exactly and add without rounding")
    if rng.random() < 0.3:
        first, second = w.pick(("lhs", "rhs"), ("a", "b"), ("x", "y"))
        h = w.load("h", w.array(first, FLOAT16, -4.0, 4.0))
        g = w.load("g", w.array(second, FLOAT16, -4.0, 4.0))
        w.add("# the float32 product of two float16 values is exact (22 bits):",
              "# the float16 product is that value rounded once",
              f"wide = wp.float32({h}) * wp.float32({g})", f"wp.expect_eq(wp.float16(wide), {h} * {g})",
              f"wp.expect_eq(wp.float16(wp.float32({h})), {h})",
              f"{w.at(w.out(w.pick('products', 'wide_products'), T.FLOAT32))} = wide")
        return w.finish(w.pick("test_float16_product", "check_half_arithmetic"),
                        "Check float16 products against float32 for every input pair",
                        "A float16 product is the exact float32 product rounded once")
    if rng.random() < 0.4:
        x = w.load("x", w.array(w.pick("values", "samples"), T.FLOAT32, -4.0, 4.0))
        w.add(f"h = wp.float16({x})",
              "# float16 keeps 11 significant bits: below 4 it rounds by at most 2**-10",
              f"wp.expect_near(wp.float32(h), {x}, 0.001)",
              "# every float16 is a float32, so the round trip is exact",
              "wp.expect_eq(wp.float16(wp.float32(h)), h)",
              f"{w.at(w.out(w.pick('halves', 'packed'), FLOAT16))} = h")
        return w.finish(w.pick("test_float16_conversion", "check_half_roundtrip"),
                        "Check float32 to float16 conversion for every input in [-4, 4]",
                        "Values below 4 convert within 2**-10 and back exactly")
    first, second = w.pick(("lhs", "rhs"), ("a", "b"), ("values", "scales"))
    x = w.load("x", w.array(first, T.FLOAT32, -4.0, 4.0))
    y = w.load("y", w.array(second, T.FLOAT32, -4.0, 4.0))
    w.add("# the float64 product of two float32 values is exact (48 bits):",
          "# the float32 product is that value rounded once",
          f"exact = wp.float64({x}) * wp.float64({y})", f"wp.expect_eq(wp.float32(exact), {x} * {y})",
          f"wp.expect_eq(wp.float32(wp.float64({x})), {x})",
          f"{w.at(w.out(w.pick('products', 'exact_products'), T.FLOAT64))} = exact")
    return w.finish(w.pick("test_float64_product", "check_double_precision"),
                    "Check float32 products against float64 for every input pair",
                    "A float32 product is the exact float64 product rounded once")


# ---------------------------------------------------------------------------------------------
# bools, compile-time loops, structs


@kind("bool_logic")
def _bool_logic(w: Writer, rng: random.Random) -> CheckKernel:
    first, second = w.pick(("flags_a", "flags_b"), ("p", "q"), ("lhs", "rhs"))
    a = w.load("a", w.array(first, T.BOOL))
    b = w.load("b", w.array(second, T.BOOL))
    x = w.load("x", w.array(w.pick("values", "samples"), T.FLOAT32, -2.0, 2.0))
    count = rng.random() < 0.5
    if count:  # how many of the two flags are true
        w.add(f"count = wp.int32({a}) + wp.int32({b})")
        first_check = ("the count of true flags against != and the and operator",
                       ["# a bool converts to 0 or 1: exactly one flag is true when they differ",
                        f"wp.expect_eq({a} != {b}, count == 1)", f"wp.expect_eq({a} and {b}, count == 2)"])
        where = ("wp.where against the conditional expression",
                 [f"wp.expect_eq(wp.where({a}, {x}, -{x}), {x} if {a} else -{x})"])
    else:  # x where both flags are true, 0 elsewhere
        w.add(f"selected = wp.where({a} and {b}, {x}, 0.0)")
        first_check = ("wp.where on both flags against the conditional expression",
                       [f"wp.expect_eq(selected, {x} if {a} and {b} else 0.0)"])
        where = ("wp.where on one flag against its negation",
                 [f"wp.expect_eq(wp.where({a}, {x}, -{x}), -wp.where(not {a}, {x}, -{x}))"])
    what = w.checks([first_check, where,
                     ("De Morgan's law", ["# De Morgan", f"wp.expect_eq(not ({a} and {b}), (not {a}) or (not {b}))"]),
                     ("xor written with and, or and not",
                      [f"wp.expect_eq(({a} and not {b}) or ({b} and not {a}), {a} != {b})"]),
                     ("an int round trip of a flag", [f"wp.expect_eq(wp.bool(wp.int32({a})), {a})"])],
                    2, 4, keep=2 if count else 1)  # the count needs the where check to read x
    if count:
        w.add(f"{w.at(w.out(w.pick('counts', 'true_counts'), T.INT32))} = count")
        headline = "Check bool logic and wp.where for every pair of flags and write how many of the two are true"
    else:
        w.add(f"{w.at(w.out(w.pick('selected_out', 'masked'), T.FLOAT32))} = selected")
        headline = "Check bool logic and wp.where for every pair of flags and write the value where both are true"
    return w.finish(w.pick("test_bool_logic", "check_bool_ops", "test_conditional_where"), headline,
                    f"It checks {what}")


@kind("static_loop")
def _static_loop(w: Writer, rng: random.Random) -> CheckKernel:
    variant = w.pick("doubling", "horner", "geometric", "components")
    if variant == "doubling":
        steps = w.constant(w.pick("STEPS", "DOUBLINGS", "OCTAVES"), str(rng.randint(2, 6)))
        x = w.load("x", w.array(w.pick("values", "samples"), T.FLOAT32, -4.0, 4.0))
        halve = rng.random() < 0.4
        acc = w.pick("scaled", "acc")
        step = w.pick(f"{acc} = {acc} * 0.5", f"{acc} *= 0.5") if halve else \
            w.pick(f"{acc} = {acc} * 2.0", f"{acc} *= 2.0", f"{acc} += {acc}")
        power = f"0.5**{steps}" if halve else f"2.0**{steps}"
        w.add(f"{acc} = {x}", f"for _ in range(wp.static({steps})):", f"{INDENT}{step}",
              f"# {'halving' if halve else 'doubling'} is exact, so the loop and one multiplication agree bit for bit",
              f"wp.expect_eq({acc}, {x} * wp.static({power}))",
              f"{w.at(w.out(w.pick('scaled_out', 'halved' if halve else 'doubled'), T.FLOAT32))} = {acc}")
        return w.finish(w.pick("test_static_loop", "check_unrolled_scaling"),
                        f"Check {'halving' if halve else 'doubling'} in a wp.static loop for every input in [-4, 4]",
                        "The loop equals one multiplication by the matching power of two")
    if variant == "components":
        n = w.pick(2, 3, 4)
        dim = w.constant(w.pick("DIM", "N_COMPONENTS"), str(n))
        v = w.load("v", w.array(w.pick("vectors", "samples"), VECS[n, "float32"], -2.0, 2.0))
        total, largest = w.pick("sum_sq", "norm_sq"), w.pick("largest", "peak")
        w.add(f"{total} = float(0.0)", f"{largest} = {v}[0]", f"for k in range(wp.static({dim})):",
              f"{INDENT}{total} += {v}[k] * {v}[k]", f"{INDENT}{largest} = wp.max({largest}, {v}[k])",
              f"# components in [-2, 2]: sums of at most {4 * n}, a few roundings each",
              f"wp.expect_near({total}, wp.length_sq({v}), 1.0e-5)",
              "# wp.max of a vector is its largest component",
              f"wp.expect_eq({largest}, wp.max({v}))",
              f"{w.at(w.out(w.pick('squared_norms', 'norms_sq'), T.FLOAT32))} = {total}")
        return w.finish(w.pick("test_static_components", "check_unrolled_components"),
                        f"Check a loop over the components of vec{n} vectors in [-2, 2] unrolled with wp.static",
                        "Its sum of squares matches wp.length_sq and its running maximum matches wp.max")
    if variant == "horner":
        coeffs = [fmt(w.pick(1.0, 0.5, -0.5, 0.25, -0.25, 0.125, 2.0)) for _ in range(4)]
        c = w.constant(w.pick("COEFFS", "POLY"), f"wp.vec4({', '.join(coeffs)})")
        degree = w.constant("DEGREE", "3")
        x = w.load("x", w.array(w.pick("t", "samples"), T.FLOAT32, -1.0, 1.0))
        w.add(f"horner = {c}[{degree}]", f"for k in range(wp.static({degree})):",
              f"{INDENT}horner = horner * {x} + {c}[{degree} - 1 - k]",
              "power = float(1.0)", "direct = float(0.0)", f"for k in range(wp.static(len({c}))):",
              f"{INDENT}direct += {c}[k] * power", f"{INDENT}power *= {x}",
              f"# |x| <= 1 and |coefficients| <= {max(abs(float(c)) for c in coeffs):g}: both forms sum four terms"
              f" of at most that size, a few roundings apart",
              "wp.expect_near(horner, direct, 1.0e-5)",
              f"{w.at(w.out(w.pick('values_out', 'poly'), T.FLOAT32))} = horner")
        return w.finish(w.pick("test_static_horner", "check_polynomial_forms"),
                        "Check a cubic unrolled with wp.static for every input in [-1, 1]",
                        "Horner's rule and the sum of powers give the same value")
    count = rng.randint(3, 6)
    terms = w.constant(w.pick("TERMS", "N"), str(count))
    x = w.load("x", w.array(w.pick("ratios", "bases"), T.FLOAT32, 1.5, 2.0))  # away from 1, where the closed form divides by zero
    w.add("total = float(0.0)", "power = float(1.0)", f"for _ in range(wp.static({terms})):",
          f"{INDENT}total += power", f"{INDENT}power *= {x}",
          f"# ratios in [1.5, 2]: the sum is at most {2 ** count - 1} and x - 1 is exact",
          f"wp.expect_near(total, (power - 1.0) / ({x} - 1.0), 1.0e-4)",
          f"{w.at(w.out(w.pick('sums', 'totals'), T.FLOAT32))} = total")
    return w.finish(w.pick("test_geometric_sum", "check_static_series"),
                    "Check a geometric series summed in a wp.static loop for every input ratio in [1.5, 2]",
                    "The sum matches its closed form")


def build(which: str, rng: random.Random, suffix: str) -> CheckKernel:
    kernel = KINDS[which](Writer(rng, suffix), rng)
    kernel.meta["record"]["check_kind"] = which
    return kernel


@register("property_checks", 6.0, source="patterns")  # Warp's own tests check their results this way
def property_checks(rng, name, suffix, complexity):
    kinds = sorted(KINDS)
    return build(rng.choices(kinds, [WEIGHTS[k] for k in kinds])[0], rng, suffix)
