"""Pattern family of property-check kernels: a kernel computes something from its inputs and
checks, with ``wp.expect_eq`` / ``wp.expect_near``, an identity or a semantic rule that must hold,
the way Warp's own test suite checks its builtins. Most kernels also store what they computed;
some only check.

Each kind compares two *different* computations that must agree on every input its ranges
allow:

- integers per type: wrap-around of unsigned sums, ``//`` (floors) against ``/`` and ``%``
  (truncate), bit identities, shifts, conversions between widths and to floats, min/max/clamp,
  ``abs`` and ``sign``, uint64 sort keys packed from two uint32 halves;
- conversions: small integers through every scalar type and back, written with typed
  constructors (``wp.uint64(x)``, ``wp.float16(x)``) as Warp's tests write them; float16
  widened to float32 and float64;
- floats: floor, ceil, trunc, round and rint, and float16/32/64 conversions;
- vectors (cross and dot products, normalisation), matrices (inverse, products, determinants,
  outer products, 2D/3D rotations and 4x4 rotation-translation matrices written from literals),
  quaternions (rotation round trips, axis-angle, composition, literal turns) and transforms;
- bool logic and conditionals, ``wp.static`` loops over ``wp.constant`` module constants, and
  nested ``@wp.struct`` fields.

A tolerance is chosen for the dtype and the input range, and the kernel says why next to it.
Inputs are ranged so that the identity holds exactly where it is exact (no overflow, integers
below 2**24 in float32) and within tolerance where it is not (well-conditioned matrices are built
in-kernel as the identity plus a small matrix). What it leaves out: checks on literals only (they
would recompute a constant in every thread), bfloat16, and gradients.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.patterns import (
    RoleParam,
    assigned_names,
    docstring,
    fmt,
    sentence,
)
from jit.code.synthesis.categories.registry import register
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


@dataclass
class CheckKernel:
    """A finished property-check kernel: its source as written, and what the metadata reads."""

    name: str
    text: str
    params: list[Param]
    dims: list[int]
    block_dim: int | None = None
    budget: int = 0
    funcs: list[str] = field(default_factory=list)
    structs: list = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def source(self, eliminate: bool = True) -> str:
        return self.text


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
        """``local = array[i]``, or ``array[i]`` read in place (always when the array has the local's name)."""
        if local == array or self.rng.random() < 0.15:
            return self.at(array)
        self.add(f"{local} = {self.at(array)}")
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

    def expect_only(self, p: float = 0.12) -> None:
        """Sometimes keep the checks only: drop the final store of a local the checks read anyway."""
        store = re.fullmatch(rf"(\w+)\[{self.tid}\] = (\w+)", self.lines[-1])
        if not store or self.rng.random() >= p:
            return
        array, local = store.groups()
        if sum(len(re.findall(rf"\b{local}\b", line)) for line in self.lines[:-1]) >= 2:  # bound, then read
            self.lines.pop()
            self.params = [q for q in self.params if q.name != array]

    def finish(self, base: str, headline: str, detail: str) -> CheckKernel:
        """The kernel: a one-line docstring (``headline``); the record's purpose adds ``detail``."""
        name = self.name(base)
        self.expect_only()
        lines = self.lines
        uses = sum(len(re.findall(rf"\b{self.tid}\b", line)) for line in lines)
        inline = uses == 1 and self.rng.random() < 0.7  # x[wp.tid()] when the index is read once
        if inline:
            lines = [re.sub(rf"\[{self.tid}\]", "[wp.tid()]", line) for line in lines]
        if self.rng.random() < 0.35:  # the tolerance by keyword, as many of Warp's tests pass it
            lines = [NEAR.sub(r"\1, tolerance=\2)", line) if arguments(line) == 3 else line for line in lines]
        params = [p for p in self.params if p.role == "in"] + [p for p in self.params if p.role != "in"]
        clash = assigned_names(self.lines) & {p.name for p in params}
        if clash:  # a local shadowing a parameter: a bug in the kind, not a random event
            raise ValueError(f"{name}: locals {sorted(clash)} shadow parameters")
        sig = ", ".join(f"{p.name}: wp.array(dtype={p.spelled})" for p in params)
        head = [] if inline else [f"{INDENT}{self.tid} = wp.tid()"]
        purpose = sentence(headline) + " " + sentence(detail)
        kernel = ["@wp.kernel", f"def {name}({sig}):", docstring(sentence(headline)), *head,
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


def unit_length(w: Writer, expr: str, f: WType, tol: str) -> str:
    """``expect_near(length, 1)``: in float32 a unit length is off by a few ulps, within the default 1e-6."""
    if f.name == "float32" and w.rng.random() < 0.7:
        return f"wp.expect_near(wp.length({expr}), {w.typed(f, 1.0)})"
    return f"wp.expect_near(wp.length({expr}), {w.typed(f, 1.0)}, {tol})"


def clause(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (empty for no parts)."""
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def tolerance(t: WType, scale: float = 1.0) -> str:
    return typed(FLOATS.get(t.scalar, t), TOLERANCE[t.scalar] * scale)


# ---------------------------------------------------------------------------------------------
# integers


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


def _int_division(w: Writer, rng: random.Random) -> CheckKernel:
    t = INTS[w.pick("int8", "int16", "int32", "int64")]
    hi = 120 if t.name == "int8" else w.pick(100, 1000)
    a = w.load("a", w.array(w.pick("numerators", "a", "values"), t, -hi, hi))
    if rng.random() < 0.6:
        d = w.load("d", w.array(w.pick("divisors", "d", "strides"), t, 1, 12))
        by = "a positive divisor"
    else:
        by = str(rng.randint(2, 9))
        d = w.typed(t, int(by))
    w.add("# / truncates toward zero and % takes the sign of the dividend",
          f"q = {a} / {d}", f"r = {a} % {d}",
          f"wp.expect_eq(q * {d} + r, {a})",
          "# // rounds toward negative infinity: one less than q when the remainder is negative",
          f"floored = {a} // {d}",
          f"wp.expect_eq(floored, q - {w.typed(t, 1)} if r < {w.typed(t, 0)} else q)")
    extra = [("the remainder is smaller than the divisor", [f"wp.expect_eq(wp.abs(r) < {d}, True)"]),
             ("% agrees with the floored quotient", [f"wp.expect_eq(r == {w.typed(t, 0)}, floored * {d} == {a})"]),
             ("negating the numerator negates / and %",
              [f"wp.expect_eq((-{a}) / {d}, -q)", f"wp.expect_eq((-{a}) % {d}, -r)"])]
    also = w.checks(extra, 1, 2)
    w.add(
          f"{w.at(w.out(w.pick('quotients', 'floored_out'), t))} = floored")
    if rng.random() < 0.6:
        w.add(f"{w.at(w.out(w.pick('remainders', 'rem'), t))} = r")
    return w.finish(w.pick("test_int_division", "check_floordiv_mod", "test_divmod_signed"),
                    f"Check {t.name} division and remainder rules for every signed input",
                    f"Dividing by {by}, / and % recover the numerator and // floors"
                    + (f"; it also checks that {also}" if also else ""))


def _bit_identities(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(*UINTS.values(), INTS["int32"], INTS["int64"])
    signed = t.kind == "int"
    hi = 2 ** min(BITS[t.name] - 1 if signed else BITS[t.name], 62) - 1
    a = w.load("a", w.array(w.pick("a", "lhs", "mask_a"), t, -hi - 1 if signed else 0, hi))
    b = w.load("b", w.array(w.pick("b", "rhs", "mask_b"), t, -hi - 1 if signed else 0, hi))
    options = [("De Morgan's law", [f"wp.expect_eq(~({a} & {b}), ~{a} | ~{b})"]),
               ("xor as or without and", [f"wp.expect_eq({a} ^ {b}, ({a} | {b}) & ~({a} & {b}))"]),
               ("that xor with the same mask twice restores the value", [f"wp.expect_eq(({a} ^ {b}) ^ {b}, {a})"])]
    if not signed:  # wrapping arithmetic: signed overflow is undefined
        options += [("the carry-save form of a sum",
                     [f"wp.expect_eq({a} + {b}, ({a} ^ {b}) + (({a} & {b}) << {w.typed(t, 1)}))"]),
                    ("that or less and is xor", [f"wp.expect_eq(({a} | {b}) - ({a} & {b}), {a} ^ {b})"])]
    what = w.checks(options, 2, 4)
    op = w.pick("^", "&", "|")
    w.add(f"{w.at(w.out({'^': 'toggled', '&': 'common', '|': 'merged'}[op], t))} = {a} {op} {b}")
    return w.finish(w.pick("test_bitwise_ops", "check_bit_identities", "test_bit_logic"),
                    f"Check bitwise identities on {t.name} masks for every input pair", f"It checks {what}")


def _shifts(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(*UINTS.values(), *INTS.values())
    bits, k = BITS[t.name], rng.randint(1, 4)
    if t.kind == "int":  # left shifts of negative values are undefined in C: signed kernels shift right only
        hi = 2 ** min(bits - 2, 40)
        x = w.load("x", w.array(w.pick("values", "x"), t, -hi, hi))
        w.add("# an arithmetic right shift floors, like //",
              f"shifted = {x} >> {w.typed(t, k)}", f"wp.expect_eq(shifted, {x} // {w.typed(t, 2**k)})",
              f"wp.expect_eq(shifted * {w.typed(t, 2**k)} + ({x} & {w.typed(t, 2**k - 1)}), {x})",
              f"{w.at(w.out(w.pick('halved', 'shifted_out'), t))} = shifted")
        return w.finish(w.pick("test_arithmetic_shift", "check_shift_right_signed"),
                        f"Check that a right shift of {t.name} values floors for every signed input",
                        f"Shifting by {k} matches // {2**k} and drops exactly the low {'bit' if k == 1 else f'{k} bits'}")
    x = w.load("x", w.array(w.pick("values", "x", "keys"), t, 0, 2 ** min(bits - k, 62) - 1))
    s = w.typed(t, k)
    if rng.random() < 0.3:
        s = w.constant(w.pick("SHIFT", "BITS"), s)
    w.add(f"shifted = {x} << {s}", f"# values below 2**{min(bits - k, 62)} lose no bit at the top")
    what = w.checks([("shifts back", [f"wp.expect_eq(shifted >> {s}, {x})"]),
                     (f"multiplies it by {2**k}", [f"wp.expect_eq(shifted, {x} * {w.typed(t, 2**k)})"]),
                     (f"clears the low {'bit' if k == 1 else f'{k} bits'}", [f"wp.expect_eq(shifted & {w.typed(t, 2**k - 1)}, {w.typed(t, 0)})"])])
    w.add(f"{w.at(w.out(w.pick('shifted_out', 'scaled'), t))} = shifted")
    return w.finish(w.pick("test_shift_left", "check_shift_roundtrip", "test_shift_ops"),
                    f"Check left shifts of {t.name} values by {k} for every input value", f"The shift {what}")


def _int_conversion(w: Writer, rng: random.Random) -> CheckKernel:
    variant = w.pick("widen", "narrow", "float")
    if variant == "widen":
        src = w.pick(INTS["int8"], INTS["int16"], UINTS["uint8"], UINTS["uint16"])
        wide = INTS["int64"] if src.name == "uint16" else w.pick(INTS["int32"], INTS["int64"])  # the square fits
        bits = BITS[src.name]
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if src.kind == "int" else (0, 2**bits - 1)
        x = w.load("x", w.array(w.pick("values", "x", "samples"), src, lo, hi))
        w.add(f"wide = {wide.py}({x})", f"wp.expect_eq({src.py}(wide), {x})",
              f"# the square fits in {wide.name} and is exact in float64 (below 2**53)",
              "square = wide * wide",
              f"wp.expect_eq(wp.float64(square), wp.float64({x}) * wp.float64({x}))",
              f"{w.at(w.out(w.pick('squares', 'squared'), wide))} = square")
        return w.finish(w.pick("test_widen_int", "check_int_widening"),
                        f"Check {src.name} to {wide.name} widening for every input value",
                        "The wide value converts back and squares exactly")
    if variant == "narrow":
        narrow = w.pick(UINTS["uint8"], UINTS["uint16"])
        bits = BITS[narrow.name]
        x = w.load("x", w.array(w.pick("values", "x", "ids"), INTS["int32"], 0, 2 ** (bits + 4)))
        w.add(f"low = {narrow.py}({x})", f"# narrowing keeps the low {bits} bits")
        if rng.random() < 0.6:  # the mask and modulus from a module constant, folded at compile time
            width = w.constant(w.pick("BITS", "WIDTH"), str(bits))
            mask, modulus = f"wp.static((1 << {width}) - 1)", f"wp.static(1 << {width})"
            if rng.random() < 0.5:
                w.add(f"mask = {mask}")
                mask = "mask"
        else:
            mask, modulus = str(2**bits - 1), str(2**bits)
        w.add(f"wp.expect_eq(wp.int32(low), {x} & {mask})",
              f"wp.expect_eq({w.pick('int', 'wp.int32')}(low), {x} % {modulus})")
        if rng.random() < 0.5:
            w.add(f"# {x} less its low bits is a multiple of 2**{bits}",
                  f"wp.expect_eq(({x} - wp.int32(low)) % {2**bits}, 0)")
        w.add(f"{w.at(w.out(w.pick('low_bits', 'truncated'), narrow))} = low")
        return w.finish(w.pick("test_narrow_int", "check_int_narrowing"),
                        f"Check int32 to {narrow.name} narrowing for every non-negative input",
                        f"The conversion keeps the low {bits} bits")
    f = w.pick(T.FLOAT32, T.FLOAT64)
    y = w.load("y", w.array(w.pick("values", "y", "coords"), f, -100.0, 100.0))
    n = w.load("n", w.array(w.pick("counts", "offsets"), INTS["int32"], -(2**24), 2**24))
    w.add(f"# integers up to 2**24 are exact in {f.name}",
          f"wp.expect_eq(wp.int32({f.py}({n})), {n})",
          "# converting to int truncates toward zero",
          f"k = wp.int32({y})", f"wp.expect_eq({f.py}(k), wp.trunc({y}))",
          f"{w.at(w.out(w.pick('truncated', 'whole'), INTS['int32']))} = k")
    return w.finish(w.pick("test_int_float_conversion", "check_float_to_int"),
                    f"Check conversions between int32 and {f.name} for every input value",
                    f"Integers up to 2**24 round-trip and {f.name} to int32 truncates")


def _minmax(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(*INTS.values(), *UINTS.values(), FLOAT16, T.FLOAT32, T.FLOAT64)
    is_int = t.kind in ("int", "uint")
    lo, hi = (0, 200) if t.kind == "uint" else (-100, 100) if is_int else (-4.0, 4.0)
    if t.name == "int8":  # a + b stays inside int8
        lo, hi = -60, 60
    a = w.load("a", w.array(w.pick("a", "x", "values"), t, lo, hi))
    if is_int:
        bounds = sorted(rng.sample(range(int(lo) + 10, int(hi) - 10), 2))
    else:
        bounds = [rng.choice((-2.0, -1.5, -1.0, -0.5, 0.0)), rng.choice((0.5, 1.0, 1.5, 2.0))]
    lower, upper = w.typed(t, bounds[0]), w.typed(t, bounds[1])
    w.add(f"clamped = wp.clamp({a}, {lower}, {upper})", "# clamp is a max then a min",
          f"wp.expect_eq(clamped, wp.min(wp.max({a}, {lower}), {upper}))")
    what = "wp.clamp against wp.max then wp.min"
    if rng.random() < 0.6:
        b = w.load("b", w.array(w.pick("b", "y", "others"), t, lo, hi))
        w.add("# min and max split a pair, so their sum is the pair's",
              f"wp.expect_eq(wp.min({a}, {b}) + wp.max({a}, {b}), {a} + {b})")
        what += " and that wp.min and wp.max split a pair"
        if t.kind != "uint" and rng.random() < 0.6:  # unsigned differences wrap
            w.add(f"wp.expect_eq(wp.max({a}, {b}) - wp.min({a}, {b}), wp.abs({a} - {b}))")
            what += ", whose spread is the absolute difference"
    w.add(f"{w.at(w.out(w.pick('limited', 'bounded'), t))} = clamped")
    return w.finish(w.pick("test_min_max", "check_clamp", "test_clamp_minmax"),
                    f"Check wp.clamp, wp.min and wp.max on {t.name} values for every input", f"It checks {what}")


def _abs_sign(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(*INTS.values(), T.FLOAT32, T.FLOAT64)
    lo, hi = (-100, 100) if t.kind == "int" else (-8.0, 8.0)  # never the most negative int, whose abs overflows
    x = w.load("x", w.array(w.pick("values", "offsets", "deltas"), t, lo, hi))
    w.add(f"magnitude = wp.abs({x})")
    what = w.checks([("wp.abs times wp.sign gives back the value",
                      ["# sign is -1 below zero and 1 otherwise", f"wp.expect_eq(magnitude * wp.sign({x}), {x})"]),
                     ("wp.abs is the larger of x and -x", [f"wp.expect_eq(magnitude, wp.max({x}, -{x}))"]),
                     ("wp.abs is never negative", [f"wp.expect_eq(magnitude >= {w.typed(t, 0)}, True)"])], 2, 3, keep=1)
    w.add(f"{w.at(w.out(w.pick('magnitudes', 'abs_values'), t))} = magnitude")
    return w.finish(w.pick("test_abs_sign", "check_abs"), f"Check wp.abs and wp.sign for every {t.name} input",
                    f"It checks that {what}")


def _type_roundtrip(w: Writer, rng: random.Random) -> CheckKernel:
    if rng.random() < 0.3:
        return _float_widening(w, rng)
    src = w.pick(INTS["int32"], INTS["int32"], INTS["int64"], INTS["int16"], UINTS["uint8"], UINTS["uint32"])
    x = w.load(w.pick("x", "value", "v"), w.array(w.pick("values", "ids", "counts"), src, 0, 126))
    back = "int" if src.name == "int32" and w.plain else src.py  # int() converts to int32 as Python spells it
    via = [t for name, t in SCALARS.items() if name != src.name]
    chosen = [via[k] for k in sorted(rng.sample(range(len(via)), rng.randint(5, len(via))))]
    w.add("# values in [0, 126] are exact in every integer and float type, float16 included")
    w.add(*(f"wp.expect_eq({back}({t.py}({x})), {x})" for t in chosen))
    direct = [t for t in chosen if t.name != "float64"]
    direct = rng.sample(direct, min(len(direct), rng.randint(1, 3)))
    w.add("# converting through float64 first changes nothing",
          *(f"wp.expect_eq({t.py}(wp.float64({x})), {t.py}({x}))" for t in direct))
    summed = rng.sample(chosen, rng.randint(1, 3))
    w.add("# adding one stays below 128, so the sum is the same in every type",
          *(f"wp.expect_eq({t.py}({x}) + {w.typed(t, 1)}, {t.py}({x} + {w.typed(src, 1)}))" for t in summed))
    kept = w.pick(*chosen)
    w.add(f"{w.at(w.out(w.pick('converted', 'as_' + kept.name), kept))} = {kept.py}({x})")
    names = clause([t.name for t in chosen])
    return w.finish(w.pick("test_type_conversions", "check_scalar_roundtrip", "test_int_conversions"),
                    f"Check that small {src.name} values convert to other scalar types and back for every input",
                    f"Values in [0, 126] round-trip exactly through {names}, converting through float64 first "
                    f"changes no {clause([t.name for t in direct])} value, and adding one commutes with converting "
                    f"to {clause([t.name for t in summed])}")


def _float_widening(w: Writer, rng: random.Random) -> CheckKernel:
    h = w.load(w.pick("h", "half"), w.array(w.pick("halves", "values_fp16", "samples"), FLOAT16, -4.0, 4.0))
    two = w.pick(2.0, 0.5, 4.0)
    w.add("# every float16 is exactly a float32 and a float64, so widening and narrowing back is exact",
          f"wp.expect_eq(wp.float16(wp.float32({h})), {h})",
          f"wp.expect_eq(wp.float16(wp.float64({h})), {h})",
          f"wp.expect_eq(wp.float64(wp.float32({h})), wp.float64({h}))")
    what = w.checks([(f"that scaling by {fmt(two)} is exact in every width",
                      ["# scaling by a power of two is exact in float16 for values below 4",
                       f"wp.expect_eq(wp.float32({h} * wp.float16({fmt(two)})), wp.float32({h}) * wp.float32({fmt(two)}))"]),
                     ("the sign of the widened value",
                      [f"wp.expect_eq(wp.float64(-{h}), -wp.float64({h}))"]),
                     ("the floor in both widths",
                      [f"wp.expect_eq(wp.float32(wp.floor({h})), wp.floor(wp.float32({h})))"])], 1, 3)
    wide = w.pick("float32", "float64")
    w.add(f"{w.at(w.out(w.pick('widened', 'wide'), FLOATS[wide]))} = wp.{wide}({h})")
    return w.finish(w.pick("test_float16_widening", "check_half_to_double"),
                    "Check float16 values widened to float32 and float64 for every input value",
                    f"The conversions are exact both ways, and it checks {what}")


def _key_packing(w: Writer, rng: random.Random) -> CheckKernel:
    u32, u64 = UINTS["uint32"], UINTS["uint64"]
    cell = w.load("cell", w.array(w.pick("cells", "cell_ids", "buckets"), u32, 0, 2**32 - 1))
    item = w.load("item", w.array(w.pick("items", "particle_ids", "ids"), u32, 0, 2**32 - 1))
    shift = "wp.uint64(32)"
    if rng.random() < 0.4:
        shift = w.constant(w.pick("KEY_SHIFT", "HIGH_SHIFT"), shift)
    w.add("# the cell in the high 32 bits and the item in the low 32: keys sort by cell, then item",
          f"key = (wp.uint64({cell}) << {shift}) | wp.uint64({item})",
          f"wp.expect_eq(key >> {shift}, wp.uint64({cell}))",
          f"wp.expect_eq(wp.uint32(key & wp.uint64(0xFFFFFFFF)), {item})")
    options = [("narrowing keeps the item", ["# narrowing to uint32 keeps the low half",
                                             f"wp.expect_eq(wp.uint32(key), {item})"]),
               ("the key is cell * 2**32 + item",
                [f"wp.expect_eq(key, wp.uint64({cell}) * wp.uint64(4294967296) + wp.uint64({item}))"]),
               ("bitwise or and addition agree on the disjoint halves",
                [f"wp.expect_eq(key, (wp.uint64({cell}) << {shift}) + wp.uint64({item}))"])]
    if rng.random() < 0.4:
        other_cell = w.load("other_cell", w.array(w.pick("next_cells", "other_cells"), u32, 0, 2**32 - 1))
        other_item = w.load("other_item", w.array(w.pick("next_items", "other_ids"), u32, 0, 2**32 - 1))
        options.insert(0, ("keys order by cell, then by item",
                           [f"other = (wp.uint64({other_cell}) << {shift}) | wp.uint64({other_item})",
                            f"wp.expect_eq(key < other, {cell} < {other_cell} or ({cell} == {other_cell} and {item} < {other_item}))"]))
        what = w.checks(options, 2, 3, keep=1)
    else:
        what = w.checks(options, 1, 3)
    w.add(f"{w.at(w.out(w.pick('keys', 'sort_keys'), u64))} = key")
    return w.finish(w.pick("test_pack_keys", "check_uint64_keys", "test_sort_key_packing"),
                    "Check uint64 sort keys packed from a uint32 cell and item for every input pair",
                    f"Both halves unpack exactly, and it checks that {what}")


# ---------------------------------------------------------------------------------------------
# floats


def _rounding(w: Writer, rng: random.Random) -> CheckKernel:
    t = w.pick(T.FLOAT32, T.FLOAT32, T.FLOAT64)
    positive = rng.random() < 0.4  # x - floor(x) is exact for x >= 0 (and rounds for x in (-1, 0))
    x = w.load("x", w.array(w.pick("values", "samples", "coords"), t, 0.0 if positive else -8.0, 8.0))
    zero, one, half = w.typed(t, 0.0), w.typed(t, 1.0), w.typed(t, 0.5)
    w.add(f"whole = wp.floor({x})")
    store = w.pick("floor", "round", "rint", "trunc")
    local = {"floor": "whole", "round": "rounded", "rint": "nearest", "trunc": "truncated"}[store]
    if store != "floor":
        w.add(f"{local} = wp.{store}({x})")

    def call(fn: str) -> str:  # the stored rounding is computed once
        return local if fn == store else f"wp.{fn}({x})"

    fraction = [("x less its floor lies in [0, 1) and adds back exactly",
                 ["# for x >= 0, x less its floor is exact and lies in [0, 1)", f"fraction = {x} - whole",
                  f"wp.expect_eq(fraction >= {zero} and fraction < {one}, True)",
                  f"wp.expect_eq(whole + fraction, {x})"])]
    what = w.checks([
        ("floor is minus the ceil of minus x", [f"wp.expect_eq(whole, -wp.ceil(-{x}))"]),
        *(fraction if positive else []),
        ("trunc is the signed floor of the magnitude",
         [f"wp.expect_eq({call('trunc')}, wp.sign({x}) * wp.floor(wp.abs({x})))"]),
        ("rint and round are within 1/2",
         ["# rint and round differ only on halves; both are within 1/2",
          f"wp.expect_near({call('rint')}, {x}, {half})", f"wp.expect_near({call('round')}, {x}, {half})"]),
        ("ceil is at most one above floor", [f"wp.expect_eq(wp.ceil({x}) - whole <= {one}, True)"])], keep=1)
    out = w.out({"floor": "floors", "round": "rounded_out", "rint": "nearest_out", "trunc": "truncated_out"}[store], t)
    w.add(f"{w.at(out)} = {local}")
    return w.finish(w.pick("test_rounding", "check_floor_ceil_trunc", "test_round_ops"),
                    f"Check rounding identities of {t.name} values for every {'non-negative ' if positive else ''}input",
                    f"It checks that {what}")


def _precision(w: Writer, rng: random.Random) -> CheckKernel:
    if rng.random() < 0.25:
        n = w.load("n", w.array(w.pick("counts", "ids", "a"), INTS["int32"], -1000, 1000))
        m = w.load("m", w.array(w.pick("offsets", "deltas", "b"), INTS["int32"], -1000, 1000))
        w.add("# integers up to 2048 are exact in float16, and so is the sum of two below 1024",
              f"half_n = wp.float16({n})", f"wp.expect_eq(wp.int32(half_n), {n})",
              f"total = half_n + wp.float16({m})", f"wp.expect_eq(wp.int32(total), {n} + {m})",
              f"{w.at(w.out(w.pick('sums', 'totals'), FLOAT16))} = total")
        return w.finish(w.pick("test_float16_integers", "check_half_integers"),
                        "Check that small integers are exact in float16 for every input pair",
                        "Integers below 1024 convert exactly and add without rounding")
    if rng.random() < 0.3:
        h = w.load("h", w.array(w.pick("halves", "weights_fp16", "a"), FLOAT16, -4.0, 4.0))
        g = w.load("g", w.array(w.pick("gains", "scales_fp16", "b"), FLOAT16, -4.0, 4.0))
        w.add("# the float32 product of two float16 values is exact (22 bits):",
              "# the float16 product is that value rounded once",
              f"wide = wp.float32({h}) * wp.float32({g})", f"wp.expect_eq(wp.float16(wide), {h} * {g})",
              f"wp.expect_eq(wp.float16(wp.float32({h})), {h})",
              f"{w.at(w.out(w.pick('products', 'wide_products'), T.FLOAT32))} = wide")
        return w.finish(w.pick("test_float16_product", "check_half_arithmetic"),
                        "Check float16 products against float32 for every input pair",
                        "A float16 product is the exact float32 product rounded once")
    x = w.load("x", w.array(w.pick("values", "samples"), T.FLOAT32, -4.0, 4.0))
    if rng.random() < 0.4:
        w.add(f"h = wp.float16({x})",
              "# float16 keeps 11 significant bits: below 4 it rounds by at most 2**-10",
              f"wp.expect_near(wp.float32(h), {x}, 0.001)",
              "# every float16 is a float32, so the round trip is exact",
              "wp.expect_eq(wp.float16(wp.float32(h)), h)",
              f"{w.at(w.out(w.pick('halves', 'packed'), FLOAT16))} = h")
        return w.finish(w.pick("test_float16_conversion", "check_half_roundtrip"),
                        "Check float32 to float16 conversion for every input value",
                        "Values below 4 convert within 2**-10 and back exactly")
    y = w.load("y", w.array(w.pick("scales", "weights"), T.FLOAT32, -4.0, 4.0))
    w.add("# the float64 product of two float32 values is exact (48 bits):",
          "# the float32 product is that value rounded once",
          f"exact = wp.float64({x}) * wp.float64({y})", f"wp.expect_eq(wp.float32(exact), {x} * {y})",
          f"wp.expect_eq(wp.float32(wp.float64({x})), {x})",
          f"{w.at(w.out(w.pick('products', 'exact_products'), T.FLOAT64))} = exact")
    return w.finish(w.pick("test_float64_product", "check_double_precision"),
                    "Check float32 products against float64 for every input pair",
                    "A float32 product is the exact float64 product rounded once")


# ---------------------------------------------------------------------------------------------
# vectors and matrices


def _vec_cross(w: Writer, rng: random.Random) -> CheckKernel:
    s = w.pick("float32", "float32", "float64")
    v, f = VECS[3, s], FLOATS[s]
    a = w.load("a", w.array(w.pick("a", "u", "edges_a"), v))
    b = w.load("b", w.array(w.pick("b", "rhs", "edges_b"), v))
    tol = tolerance(v, 10.0)
    w.add(f"c = wp.cross({a}, {b})", "# components in [-1, 1]: the products stay below 6, a few roundings each")
    what = w.checks([("is orthogonal to both factors",
                      [f"wp.expect_near(wp.dot(c, {a}), {w.typed(f, 0.0)}, {tol})",
                       f"wp.expect_near(wp.dot(c, {b}), {w.typed(f, 0.0)}, {tol})"]),
                     ("obeys Lagrange's identity",
                      ["# Lagrange's identity", f"ab = wp.dot({a}, {b})",
                       f"wp.expect_near(wp.length_sq(c), wp.length_sq({a}) * wp.length_sq({b}) - ab * ab, {tol})"]),
                     ("changes sign with the order of the factors",
                      [f"wp.expect_near(wp.cross({b}, {a}), -c, {tolerance(v)})"])])
    w.add(f"{w.at(w.out(w.pick('normals', 'crossed'), v))} = c")
    return w.finish(w.pick("test_cross_product", "check_cross_orthogonal", "test_vec_cross"),
                    f"Check cross product identities for every input pair of {v.name} vectors",
                    f"The cross product {what}")


def _vec_normalize(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(2, 3, 3, 4)
    v, f = VECS[n, s], FLOATS[s]
    x = w.load("v", w.array(w.pick("vectors", "directions", "dirs"), v, 0.25, 2.0))  # never the zero vector
    store = w.pick("unit", "length")
    w.add(f"unit = wp.normalize({x})", f"length = wp.length({x})",
          "# components in [0.25, 2]: lengths below 4, a few roundings each")
    what = w.checks([("have length 1", [unit_length(w, "unit", f, tolerance(f))]),
                     ("scale back to the input", [f"wp.expect_near(unit * length, {x}, {tolerance(f)})"]),
                     ("project the input onto its length", [f"wp.expect_near(wp.dot(unit, {x}), length, {tolerance(f)})"])])
    out = w.out("units" if store == "unit" else w.pick("lengths", "norms"), v if store == "unit" else f)
    w.add(f"{w.at(out)} = {store}")
    return w.finish(w.pick("test_normalize", "check_unit_vectors", "test_vec_normalize"),
                    f"Check wp.normalize of {v.name} vectors for every input vector", f"Normalized vectors {what}")


def _vec_dot(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(3, 3, 4)
    v, f = VECS[n, s], FLOATS[s]
    a = w.load("a", w.array(w.pick("a", "x", "lhs"), v))
    b = w.load("b", w.array(w.pick("b", "y", "rhs"), v))
    tol = tolerance(f)
    attrs = rng.random() < 0.5
    comps = " + ".join(f"{a}.{c} * {b}.{c}" if attrs else f"{a}[{k}] * {b}[{k}]" for k, c in zip(range(n), "xyzw"))
    w.add(f"d = wp.dot({a}, {b})", "# components in [-1, 1]: sums of a few products below 1")
    options = [("its component form", [f"wp.expect_near(d, {comps}, {tol})"]),
               ("wp.length_sq", [f"wp.expect_near(wp.length_sq({a}), wp.dot({a}, {a}), {tol})"]),
               ("the Cauchy-Schwarz bound",
                [f"wp.expect_eq(wp.abs(d) <= wp.length({a}) * wp.length({b}) + {tol}, True)"]),
               ("the sum of wp.cw_mul", [f"p = wp.cw_mul({a}, {b})",
                                         f"wp.expect_near({' + '.join(f'p[{k}]' for k in range(n))}, d, {tol})"])]
    if s == "float32":  # a vector of literal weights
        weights = [fmt(w.pick(0.1, 0.25, 0.5, 0.75, 1.5, 2.0)) for _ in range(n)]
        options.append(("a weighted sum with literal weights",
                        [f"weights = wp.vec{n}({', '.join(weights)})",
                         (f"wp.expect_near(wp.dot(weights, {a}), "
                          f"{' + '.join(f'{x} * {a}[{k}]' for k, x in enumerate(weights))}, {tol})")]))
    what = w.checks(options)
    w.add(f"{w.at(w.out(w.pick('dots', 'products'), f))} = d")
    return w.finish(w.pick("test_dot_product", "check_dot", "test_vec_dot"),
                    f"Check wp.dot of {v.name} vectors for every input pair", f"It compares wp.dot with {what}")


def _mat_inverse(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(2, 3, 3, 4)
    m, v, f = MATS[n, s], VECS[n, s], FLOATS[s]
    small = w.array(w.pick("perturbations", "offsets", "noise"), m)
    scale = {2: 0.25, 3: 0.15, 4: 0.1}[n]  # |scale * entries| summed over a row stays below 1/2
    eye_dtype = "float" if s == "float32" and rng.random() < 0.5 else f.py
    w.add(f"eye = wp.identity(n={n}, dtype={eye_dtype})",
          "# the identity plus a small matrix: singular values in [0.5, 1.5], condition number below 3",
          f"A = eye + {w.typed(f, scale)} * {w.at(small)}",
          "A_inv = wp.inverse(A)")
    tol = tolerance(f)
    options = [("the matrix times its inverse is the identity",
                [f"wp.expect_near({w.pick('A @ A_inv', 'wp.mul(A, A_inv)')}, eye, {tol})"]),
               ("the inverse times the matrix is the identity", [f"wp.expect_near(A_inv @ A, eye, {tol})"]),
               ("the determinants multiply to 1",
                [f"wp.expect_near(wp.determinant(A) * wp.determinant(A_inv), {w.typed(f, 1.0)}, {tol})"])]
    if rng.random() < 0.5:
        rhs = w.array(w.pick("rhs", "b", "loads"), v)
        options.insert(0, ("the inverse solves A x = b", [f"solution = A_inv @ {w.at(rhs)}",
                                                          f"wp.expect_near(A @ solution, {w.at(rhs)}, {tol})"]))
        what = w.checks(options, keep=1)
        w.add(f"{w.at(w.out(w.pick('solutions', 'x'), v))} = solution")
    else:
        what = w.checks(options)
        w.add(f"{w.at(w.out(w.pick('inverses', 'A_inv_out'), m))} = A_inv")
    return w.finish(w.pick("test_inverse", "check_mat_inverse", "test_inverse_identity"),
                    f"Check wp.inverse of a well-conditioned {n}x{n} matrix for every input perturbation",
                    f"It checks that {what}")


# (cos, sin) from Pythagorean triples: exact decimals, so the matrices are orthogonal to the last bit
ROTATIONS = ((0.6, 0.8), (0.8, 0.6), (0.28, 0.96), (0.96, 0.28), (0.352, 0.936), (0.936, 0.352), (0.6, -0.8),
             (0.28, -0.96))


def _mat_rotation(w: Writer, rng: random.Random) -> CheckKernel:
    c, s = w.pick(*ROTATIONS)
    n = w.pick(2, 3)
    v = VECS[n, "float32"]
    R = w.pick("R", "rot", "turn")
    x = w.load("p", w.array(w.pick("points", "positions"), v, -2.0, 2.0))
    axis = 2
    if n == 2:
        w.add(f"{R} = wp.mat22({fmt(c)}, {fmt(-s)}, {fmt(s)}, {fmt(c)})")
    else:  # about one of the axes: the plane of the other two turns
        axis = rng.randrange(3)
        j, k = [m for m in range(3) if m != axis]
        entries = [["0.0"] * 3 for _ in range(3)]
        entries[axis][axis], entries[j][j], entries[k][k] = "1.0", fmt(c), fmt(c)
        entries[j][k], entries[k][j] = fmt(-s), fmt(s)
        w.add(f"{R} = wp.mat33({', '.join(e for row in entries for e in row)})")
    w.add(f"rotated = {R} @ {x}", "# points below 3 from the origin: a few float32 roundings")
    options = [("keeps lengths", [f"wp.expect_near(wp.length(rotated), wp.length({x}), 1.0e-5)"]),
               ("is undone by its transpose", ["# a row vector times R applies the transpose, which undoes R",
                                               f"wp.expect_near(rotated @ {R}, {x}, 1.0e-5)"])]
    if n == 3:
        options.append((f"leaves {'xyz'[axis]} unchanged", [f"# {'xyz'[axis]} is the rotation axis",
                                                            f"wp.expect_eq(rotated[{axis}], {x}[{axis}])"]))
    if rng.random() < 0.4:
        other = w.load("q", w.array(w.pick("others", "targets"), v, -2.0, 2.0))
        options.insert(0, ("keeps dot products",
                           [f"wp.expect_near(wp.dot(rotated, {R} @ {other}), wp.dot({x}, {other}), 1.0e-5)"]))
        what = w.checks(options, 1, 3, keep=1)
    else:
        what = w.checks(options)
    w.add(f"{w.at(w.out(w.pick('rotated_points', 'out', 'turned'), v))} = rotated")
    return w.finish(w.pick("test_rotation_matrix", "check_mat_rotation", "test_mat_rotate"),
                    f"Check a {n}D rotation matrix written from literals for every input point",
                    f"The rotation {what}")


def _mat_homogeneous(w: Writer, rng: random.Random) -> CheckKernel:
    """A rotation about one axis and a translation as one 4x4 matrix, applied to homogeneous points."""
    c, s = w.pick(*ROTATIONS)
    axis = rng.randrange(3)
    j, k = [m for m in range(3) if m != axis]
    rows = [["0.0"] * 4 for _ in range(4)]
    rows[axis][axis], rows[j][j], rows[k][k], rows[3][3] = "1.0", fmt(c), fmt(c), "1.0"
    rows[j][k], rows[k][j] = fmt(-s), fmt(s)
    for r in range(3):
        rows[r][3] = fmt(w.pick(-1.5, -1.0, -0.5, 0.5, 1.0, 2.0))
    M = w.pick("M", "pose", "xform")
    x = w.load("p", w.array(w.pick("points", "positions"), VECS[3, "float32"], -2.0, 2.0))
    w.add(f"{M} = wp.mat44(", *(f"{INDENT}{', '.join(row)}," for row in rows), ")",
          f"h = {M} @ wp.vec4({x}[0], {x}[1], {x}[2], 1.0)",
          "moved = wp.vec3(*h[:3])",
          "# the last row is 0 0 0 1: a point stays a point")
    what = w.checks([
        ("keeps the homogeneous coordinate 1", ["wp.expect_eq(h[3], 1.0)"]),
        ("matches wp.transform_point", [f"wp.expect_near(wp.transform_point({M}, {x}), moved, 1.0e-5)"]),
        ("keeps distances from the translation",
         [f"offset = wp.vec3({M}[0, 3], {M}[1, 3], {M}[2, 3])",
          "# points below 4 from the origin: a few float32 roundings",
          f"wp.expect_near(wp.length(moved - offset), wp.length({x}), 1.0e-5)"]),
        (f"only shifts {'xyz'[axis]}", [f"# {'xyz'[axis]} is the rotation axis: it only moves by the translation",
                                        f"wp.expect_eq(moved[{axis}], {x}[{axis}] + {rows[axis][3]})"]),
        ("moves directions without the translation",
         [f"wp.expect_near(moved - wp.transform_vector({M}, {x}), wp.vec3({M}[0, 3], {M}[1, 3], {M}[2, 3]), 1.0e-5)"])],
        2, 4, keep=1)
    w.add(f"{w.at(w.out(w.pick('moved_points', 'out', 'world_points'), VECS[3, 'float32']))} = moved")
    return w.finish(w.pick("test_homogeneous_transform", "check_mat44_transform", "test_mat44_point"),
                    "Check a 4x4 rotation and translation written from literals for every input point",
                    f"The matrix {what}")


def _mat_product(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(2, 3, 3, 4)
    m, f = MATS[n, s], FLOATS[s]
    A = w.load("A", w.array(w.pick("lhs", "left"), m, -0.5, 0.5))
    B = w.load("B", w.array(w.pick("rhs", "right"), m, -0.5, 0.5))
    tol = tolerance(f)
    w.add(f"AB = {A} @ {B}", "# entries in [-1/2, 1/2]: products and determinants stay below 1")
    keep_det = rng.random() < 0.5  # store the determinant of the product, or the product itself
    det = "det_ab" if keep_det else "wp.determinant(AB)"
    if keep_det:
        w.add("det_ab = wp.determinant(AB)")
    what = w.checks([
        ("the transpose of a product is the product of transposes reversed",
         [f"wp.expect_near(wp.transpose(AB), wp.transpose({B}) @ wp.transpose({A}), {tol})"]),
        ("the determinant of a product is the product of determinants",
         [f"wp.expect_near({det}, wp.determinant({A}) * wp.determinant({B}), {tol})"]),
        ("the trace does not depend on the order", [f"wp.expect_near(wp.trace(AB), wp.trace({B} @ {A}), {tol})"]),
        ("wp.ddot is the trace of A^T B", [f"wp.expect_near(wp.ddot({A}, {B}), wp.trace(wp.transpose({A}) @ {B}), {tol})"])])
    if keep_det:
        w.add(f"{w.at(w.out(w.pick('dets', 'determinants'), f))} = det_ab")
    else:
        w.add(f"{w.at(w.out(w.pick('products', 'AB_out'), m))} = AB")
    return w.finish(w.pick("test_mat_product", "check_transpose_product", "test_determinant_product"),
                    f"Check identities of {m.name} matrix products for every input pair", f"It checks that {what}")


def _mat_outer(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(2, 3, 3, 4)
    v, m, f = VECS[n, s], MATS[n, s], FLOATS[s]
    a = w.load("a", w.array(w.pick("a", "u"), v))
    b = w.load("b", w.array(w.pick("b", "w"), v))
    tol = tolerance(f)
    w.add(f"M = wp.outer({a}, {b})")
    r, c = rng.randrange(n), rng.randrange(n)
    options = [("its entries", ["# each entry is one product, so it is exact",
                                f"wp.expect_eq(M[{r}, {c}], {a}[{r}] * {b}[{c}])"]),
               ("its transpose", [f"wp.expect_eq(wp.transpose(M), wp.outer({b}, {a}))"]),
               ("its trace", [f"wp.expect_near(wp.trace(M), wp.dot({a}, {b}), {tol})"])]
    if rng.random() < 0.5:
        x = w.load("c", w.array(w.pick("c", "x"), v))
        options.insert(0, ("its product with a vector", [f"applied = M @ {x}",
                                                          f"wp.expect_near(applied, {a} * wp.dot({b}, {x}), {tol})"]))
        what = w.checks(options, keep=1)
        w.add(f"{w.at(w.out(w.pick('applied_out', 'projected'), v))} = applied")
    else:
        what = w.checks(options)
        w.add(f"{w.at(w.out(w.pick('outers', 'M_out'), m))} = M")
    return w.finish(w.pick("test_outer_product", "check_outer"),
                    f"Check wp.outer of {v.name} vectors for every input pair", f"It checks {what}")


# ---------------------------------------------------------------------------------------------
# quaternions and transforms


def literal_turn(w: Writer, q: str, v: str, tol: str) -> list[str]:
    """Lines checking that a unit quaternion written from literals, (0, 0, sin, cos) on some axis,
    composed with ``q`` rotates ``v`` like the two rotations in turn (``r`` is ``q`` applied to ``v``)."""
    sin, cos = w.pick(*ROTATIONS)
    xyz = ["0.0", "0.0", "0.0"]
    xyz[w.rng.randrange(3)] = fmt(sin)
    spelled = "wp.quat" if w.plain else "wp.quatf"
    parts = ", ".join(xyz + [fmt(cos)])
    return ["# sin^2 + cos^2 = 1 exactly in decimals: a unit rotation written out",
            f"turn = {spelled}({parts})",
            f"wp.expect_near(wp.quat_rotate(turn * {q}, {v}), wp.quat_rotate(turn, r), {tol})"]


def _quat_rotate(w: Writer, rng: random.Random) -> CheckKernel:
    s = w.pick("float32", "float32", "float64")
    q = w.load("q", w.array(w.pick("rotations", "orientations"), QUATS[s]))  # drawn unit
    v = w.load("v", w.array(w.pick("vectors", "points"), VECS[3, s], -2.0, 2.0))
    tol = tolerance(FLOATS[s], 10.0)
    w.add(f"r = wp.quat_rotate({q}, {v})", "# unit rotations of vectors below 4: a few roundings of values below 4")
    what = w.checks([("wp.quat_rotate_inv undoes it", [f"wp.expect_near(wp.quat_rotate_inv({q}, r), {v}, {tol})"]),
                     ("it keeps lengths", [f"wp.expect_near(wp.length(r), wp.length({v}), {tol})"]),
                     ("it matches the rotation matrix", [f"wp.expect_near(wp.quat_to_matrix({q}) @ {v}, r, {tol})"]),
                     ("the inverse quaternion undoes it",
                      [f"wp.expect_near(wp.quat_rotate(wp.quat_inverse({q}), r), {v}, {tol})"]),
                     *([("a literal turn composes with it", literal_turn(w, q, v, tol))] if s == "float32" else [])])
    w.add(f"{w.at(w.out(w.pick('rotated', 'out'), VECS[3, s]))} = r")
    return w.finish(w.pick("test_quat_rotate", "check_quat_rotate_inv", "test_quat_roundtrip"),
                    f"Check wp.quat_rotate of {VECS[3, s].name} vectors for every input rotation",
                    f"It checks that {what}")


def _quat_axis_angle(w: Writer, rng: random.Random) -> CheckKernel:
    s = w.pick("float32", "float32", "float64")
    f = FLOATS[s]
    axes = w.array(w.pick("axes", "axis_dirs", "hinge_axes"), VECS[3, s], 0.2, 1.0)
    angles = w.array(w.pick("angles", "theta", "joint_angles"), f, 0.2, 3.0)
    w.add(f"axis = wp.normalize({w.at(axes)})", f"angle = {w.at(angles)}",
          "q = wp.quat_from_axis_angle(axis, angle)")
    loose, tight = tolerance(f, 10.0), tolerance(f)
    what = w.checks([("gives the axis and angle back",
                      ["recovered_axis, recovered_angle = wp.quat_to_axis_angle(q)",
                       "# angles in [0.2, 3]: sin(angle / 2) is at least 0.1, which divides the axis",
                       f"wp.expect_near(recovered_angle, angle, {loose})",
                       f"wp.expect_near(recovered_axis, axis, {loose})"]),
                     ("is unit", [unit_length(w, "q", f, tight)]),
                     ("fixes its axis", ["# a rotation leaves its own axis in place",
                                         f"wp.expect_near(wp.quat_rotate(q, axis), axis, {tight})"]),
                     ("has a matrix that fixes the axis",
                      [f"wp.expect_near(wp.quat_to_matrix(q) @ axis, axis, {tight})"]),
                     ("has a real part of cos(angle / 2)",
                      [f"wp.expect_near(q[3], wp.cos({w.typed(f, 0.5)} * angle), {tight})"])], keep=1)
    if rng.random() < 0.7:
        w.add(f"{w.at(w.out(w.pick('quats', 'rotations'), QUATS[s]))} = q")
    else:
        w.add(f"{w.at(w.out(w.pick('recovered', 'angles_out'), f))} = recovered_angle")
    return w.finish(w.pick("test_quat_axis_angle", "check_axis_angle_roundtrip"),
                    "Check quaternions built from an axis and angle for every input axis", f"The quaternion {what}")


def _quat_compose(w: Writer, rng: random.Random) -> CheckKernel:
    s = w.pick("float32", "float32", "float64")
    qt, f = QUATS[s], FLOATS[s]
    q1 = w.load("q1", w.array(w.pick("first", "q_a", "parent"), qt))
    q2 = w.load("q2", w.array(w.pick("second", "q_b", "child"), qt))
    v = w.load("v", w.array(w.pick("vectors", "points"), VECS[3, s], -2.0, 2.0))
    w.add(f"q = {w.pick(f'{q1} * {q2}', f'wp.mul({q1}, {q2})')}", "# unit rotations of vectors below 4")
    what = w.checks([
        ("rotates like its factors in turn",
         [(f"wp.expect_near(wp.quat_rotate(q, {v}), wp.quat_rotate({q1}, wp.quat_rotate({q2}, {v})), "
           f"{tolerance(f, 10.0)})")]),
        ("is unit", [unit_length(w, "q", f, tolerance(f))]),
        ("times its inverse is the identity",
         [f"wp.expect_near(q * wp.quat_inverse(q), wp.quat_identity(dtype={f.py}), {tolerance(f)})"]),
        ("has the product of its factors' matrices",
         [f"wp.expect_near(wp.quat_to_matrix(q), wp.quat_to_matrix({q1}) @ wp.quat_to_matrix({q2}), {tolerance(f)})"])],
        keep=1)
    w.add(f"{w.at(w.out(w.pick('composed', 'products'), qt))} = q")
    return w.finish(w.pick("test_quat_compose", "check_quat_product"),
                    f"Check products of {qt.name} rotations for every input pair", f"The product {what}")


def _transform_roundtrip(w: Writer, rng: random.Random) -> CheckKernel:
    tt, v = TRANSFORMS["float32"], VECS[3, "float32"]
    t = w.load("xform", w.array(w.pick("transforms", "poses", "xforms"), tt, -2.0, 2.0))
    x = w.load("x", w.array(w.pick("points", "local_points"), v, -2.0, 2.0))
    w.add(f"p = wp.transform_point({t}, {x})", "# points and translations below 4: world points below 8")
    options = [("the inverse transform takes points back",
                [f"wp.expect_near(wp.transform_point(wp.transform_inverse({t}), p), {x}, 1.0e-4)"]),
               ("a point is rotated then translated",
                [(f"wp.expect_near(p, wp.quat_rotate(wp.transform_get_rotation({t}), {x}) "
                  f"+ wp.transform_get_translation({t}), 1.0e-4)")]),
               ("vectors ignore the translation",
                [(f"wp.expect_near(wp.transform_vector({t}, {x}), "
                  f"wp.quat_rotate(wp.transform_get_rotation({t}), {x}), 1.0e-4)")])]
    if rng.random() < 0.5:
        other = w.load("other", w.array(w.pick("offsets", "parents"), tt, -2.0, 2.0))
        compose = w.pick(f"{t} * {other}", f"wp.transform_multiply({t}, {other})")
        options.insert(0, ("transforms compose",
                           [(f"wp.expect_near(wp.transform_point({compose}, {x}), "
                             f"wp.transform_point({t}, wp.transform_point({other}, {x})), 1.0e-4)")]))
        what = w.checks(options, keep=1)
    else:
        what = w.checks(options)
    w.add(f"{w.at(w.out(w.pick('world_points', 'out'), v))} = p")
    return w.finish(w.pick("test_transform_point", "check_transform_inverse", "test_transform_roundtrip"),
                    "Check wp.transform_point for every input transform and point", f"It checks that {what}")


# ---------------------------------------------------------------------------------------------
# bools, compile-time loops, structs


def _bool_logic(w: Writer, rng: random.Random) -> CheckKernel:
    a = w.load("a", w.array(w.pick("flags", "active"), T.BOOL))
    b = w.load("b", w.array(w.pick("masks", "visible"), T.BOOL))
    x = w.load("x", w.array(w.pick("values", "weights"), T.FLOAT32, -2.0, 2.0))
    what = w.checks([("wp.where against the conditional expression",
                      [f"wp.expect_eq(wp.where({a}, {x}, -{x}), {x} if {a} else -{x})"]),
                     ("De Morgan's law", ["# De Morgan", f"wp.expect_eq(not ({a} and {b}), (not {a}) or (not {b}))"]),
                     ("bools converted to 0 and 1",
                      [f"wp.expect_eq({a} != {b}, wp.int32({a}) + wp.int32({b}) == 1)"]),
                     ("a comparison against its negated complement", [f"wp.expect_eq({x} > 0.0, not ({x} <= 0.0))"]),
                     ("xor written with and, or and not",
                      [f"wp.expect_eq(({a} and not {b}) or ({b} and not {a}), {a} != {b})"]),
                     ("an int round trip of the flag", [f"wp.expect_eq(wp.bool(wp.int32({a})), {a})"]),
                     ("wp.min against a comparison", [f"wp.expect_eq(wp.min({x}, 0.0) == {x}, {x} <= 0.0)"])],
                    keep=1)
    if rng.random() < 0.5:
        w.add(f"{w.at(w.out(w.pick('counts', 'votes'), T.INT32))} = wp.int32({a}) + wp.int32({b})")
    else:
        w.add(f"{w.at(w.out(w.pick('selected', 'masked'), T.FLOAT32))} = wp.where({a} and {b}, {x}, 0.0)")
    return w.finish(w.pick("test_bool_logic", "check_bool_ops", "test_conditional_select"),
                    "Check bool logic and wp.where for every input pair of flags", f"It checks {what}")


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
                        f"Check {'halving' if halve else 'doubling'} in a wp.static loop for every input value",
                        "The loop equals one multiplication by the matching power of two")
    if variant == "components":
        n = w.pick(2, 3, 4)
        dim = w.constant(w.pick("DIM", "N_COMPONENTS"), str(n))
        v = w.load("v", w.array(w.pick("vectors", "samples"), VECS[n, "float32"], -2.0, 2.0))
        total, largest = w.pick("sum_sq", "norm_sq"), w.pick("largest", "peak")
        w.add(f"{total} = float(0.0)", f"{largest} = {v}[0]", f"for k in range(wp.static({dim})):",
              f"{INDENT}{total} += {v}[k] * {v}[k]", f"{INDENT}{largest} = wp.max({largest}, {v}[k])",
              f"# components in [-2, 2]: sums below {4 * n}, a few roundings each",
              f"wp.expect_near({total}, wp.length_sq({v}), 1.0e-5)",
              "# wp.max of a vector is its largest component",
              f"wp.expect_eq({largest}, wp.max({v}))",
              f"{w.at(w.out(w.pick('squared_norms', 'norms_sq'), T.FLOAT32))} = {total}")
        return w.finish(w.pick("test_static_components", "check_unrolled_components"),
                        f"Check a loop over vec{n} components unrolled with wp.static for every input vector",
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
              "# |x| <= 1 and coefficients up to 2: both forms are within a few roundings of values below 8",
              "wp.expect_near(horner, direct, 1.0e-5)",
              f"{w.at(w.out(w.pick('values_out', 'poly'), T.FLOAT32))} = horner")
        return w.finish(w.pick("test_static_horner", "check_polynomial_forms"),
                        "Check a cubic unrolled with wp.static for every input value",
                        "Horner's rule and the sum of powers give the same value")
    terms = w.constant(w.pick("TERMS", "N"), str(rng.randint(3, 6)))
    x = w.load("x", w.array(w.pick("ratios", "bases"), T.FLOAT32, 1.5, 2.0))  # away from 1, where the closed form divides by zero
    w.add("total = float(0.0)", "power = float(1.0)", f"for _ in range(wp.static({terms})):",
          f"{INDENT}total += power", f"{INDENT}power *= {x}",
          "# ratios in [1.5, 2]: the sum stays below 64 and x - 1 is exact",
          f"wp.expect_near(total, (power - 1.0) / ({x} - 1.0), 1.0e-4)",
          f"{w.at(w.out(w.pick('sums', 'totals'), T.FLOAT32))} = total")
    return w.finish(w.pick("test_geometric_sum", "check_static_series"),
                    "Check a geometric series summed in a wp.static loop for every input ratio",
                    "The sum matches its closed form")


def _struct_frames(w: Writer, rng: random.Random) -> CheckKernel:
    origin, rotation, scale = w.pick("origin", "position", "translation"), w.pick("rotation", "orientation"), \
        w.pick("scale", "size")
    frame_fields = [(origin, VECS[3, "float32"]), (rotation, QUATS["float32"])]
    if rng.random() < 0.75:  # a frame nested in a body: body.frame.origin
        frame = w.struct(w.pick("Frame", "Pose", "Transform"), frame_fields)
        member = w.pick("frame", "pose")
        body = w.struct(w.pick("Body", "Instance", "Shape"), [(member, frame), (scale, T.FLOAT32)])
        nested = "nested "
    else:
        body = w.struct(w.pick("Body", "Instance", "Shape"), [*frame_fields, (scale, T.FLOAT32)])
        member, nested = "", ""
    b = w.pick("body", "inst", "shape")
    at = f"{b}.{member}." if member else f"{b}."
    o, q, k = at + origin, at + rotation, f"{b}.{scale}"
    bodies = w.array(w.pick("bodies", "instances", "shapes"), body, 0.5, 2.0)
    x = w.load("x", w.array(w.pick("points", "local_points", "vertices"), VECS[3, "float32"], -1.0, 1.0))
    w.add(f"{b} = {w.at(bodies)}",
          f"world = wp.quat_rotate({q}, {x} * {k}) + {o}",
          "# scales and origins in [0.5, 2]: world points below 6")
    what = w.checks([("matches wp.transform_point",
                      [f"xform = wp.transform({o}, {q})",
                       f"wp.expect_near(wp.transform_point(xform, {x} * {k}), world, 1.0e-5)"]),
                     ("is undone by the inverse rotation and scale",
                      [f"local = wp.quat_rotate_inv({q}, world - {o}) / {k}", f"wp.expect_near(local, {x}, 1.0e-5)"]),
                     ("scales distances from the origin",
                      [f"wp.expect_near(wp.length(world - {o}), wp.length({x}) * {k}, 1.0e-5)"])], 1, 2)
    w.add(f"{w.at(w.out(w.pick('world_points', 'out', 'placed'), VECS[3, 'float32']))} = world")
    return w.finish(w.pick("test_struct_frames", "check_nested_struct_transform", "test_struct_placement"),
                    f"Check points placed through a {nested}struct frame for every input point",
                    f"The placement {what}")


KINDS = {"uint_wrap": _uint_wrap, "int_division": _int_division, "bit_identities": _bit_identities,
         "shifts": _shifts, "int_conversion": _int_conversion, "minmax": _minmax, "abs_sign": _abs_sign,
         "rounding": _rounding, "precision": _precision, "vec_cross": _vec_cross,
         "vec_normalize": _vec_normalize, "vec_dot": _vec_dot, "mat_inverse": _mat_inverse,
         "mat_rotation": _mat_rotation, "mat_homogeneous": _mat_homogeneous, "mat_product": _mat_product, "mat_outer": _mat_outer,
         "quat_rotate": _quat_rotate, "quat_axis_angle": _quat_axis_angle, "quat_compose": _quat_compose,
         "transform_roundtrip": _transform_roundtrip, "bool_logic": _bool_logic, "static_loop": _static_loop,
         "struct_frames": _struct_frames, "type_roundtrip": _type_roundtrip, "key_packing": _key_packing}


def build(kind: str, rng: random.Random, suffix: str) -> CheckKernel:
    kernel = KINDS[kind](Writer(rng, suffix), rng)
    kernel.meta["record"]["check_kind"] = kind
    return kernel


# integer arithmetic and conversions between scalar types are drawn more often: Warp's own tests
# check them type by type, where geometry kinds each stand for one builtin family
WEIGHTS = {"type_roundtrip": 2.5, "key_packing": 1.25, "int_conversion": 1.25, "int_division": 1.25,
           "uint_wrap": 1.25, "bit_identities": 1.25, "shifts": 1.25, "minmax": 1.25, "struct_frames": 1.25}


@register("property_checks", 1.0, source="patterns")
def property_checks(rng, name, suffix, complexity):
    kinds = sorted(KINDS)
    return build(rng.choices(kinds, [WEIGHTS.get(k, 1.0) for k in kinds])[0], rng, suffix)
