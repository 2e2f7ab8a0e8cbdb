"""Property-check kernels of the ``property_checks`` family hold on their inputs: every kind, run on
the CPU with inputs drawn from its launch description, prints no failed ``wp.expect_*`` and stores
what NumPy computes. A kernel broken on purpose does print a failure, so the checks are not vacuous.

Warp prints a failed expect from C to the process's stdout, so the tests read file descriptor 1
(``capfd``) after flushing C's buffers.
"""

from __future__ import annotations

import ctypes
import math
import random
import re

import numpy as np
import pytest
import warp as wp

from jit.code.checks.execute import set_cpu_options
from jit.code.checks.launch import plan_from_metadata, random_values, run_outputs
from jit.code.extraction import warp_backend as wb
from jit.code.synthesis.categories import patterns_checks as PC
from jit.code.synthesis.generator import generate, metadata

PER_KIND = 3  # draws of each kind (its types and optional checks), plus one of each further variant
FAILED = "Error, expect_"


def doc_of(source: str) -> str:
    """A kernel's docstring on one line."""
    return " ".join(re.search(r'"""(.*?)"""', source, re.S).group(1).split())


def variant(source: str) -> str:
    """A kernel's docstring without its types and numbers: what differs between a kind's variants."""
    return re.sub(r"\d+|float\w*|u?int\w*|vec\w+|mat\w+|quat\w", "", doc_of(source))


def kernels(per_kind: int = PER_KIND, draws: int = 12) -> list[tuple[str, str, dict]]:
    """(kind, source, metadata) of the first ``per_kind`` draws of every kind and of any later draw
    of a variant not seen yet."""
    out = []
    for kind in sorted(PC.KINDS):
        seen: set[str] = set()
        for n in range(draws):
            kb = PC.build(kind, random.Random(f"{kind}:{n}"), f"{len(out):08x}")
            source = kb.source()
            if n < per_kind or variant(source) not in seen:
                seen.add(variant(source))
                out.append((kind, source, metadata(kb, source, "property_checks", 0, n, 0, "medium")))
    return out


def printed(capfd) -> str:
    ctypes.CDLL(None).fflush(None)  # C's stdout is buffered when it is not a terminal
    return capfd.readouterr().out


def launch_all(handle, items, capfd) -> list[tuple[str, str, object, dict, dict, str]]:
    """Launch every kernel once on the CPU: (kind, source, plan, inputs, outputs, what it printed)."""
    runs = []
    printed(capfd)
    for kind, source, meta in items:
        kernel = handle.namespace[re.search(r"^def (\w+)\(", source, re.MULTILINE).group(1)]
        plan = plan_from_metadata(kernel, meta)
        values = random_values(plan, np.random.default_rng(len(runs)))
        got = run_outputs(kernel, plan, values)
        runs.append((kind, source, plan, values, got, printed(capfd)))
    return runs


# ---------------------------------------------------------------------------------------------
# what NumPy says each kind stores


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate ``v`` by the unit quaternion ``q`` (x, y, z, w: Warp's order)."""
    u, w = q[..., :3], q[..., 3:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), aw * bw - np.sum(av * bv, -1, keepdims=True)], -1)


def literal(text: str) -> float:
    """``wp.int16(-20)`` or ``-1.5`` -> the number."""
    return float(re.sub(r"^wp\.\w+\((.*)\)$", r"\1", text.strip()))


def constant(source: str, base: str) -> str:
    return re.search(rf"^{base}_\w+ = wp\.constant\((.*)\)$", source, re.MULTILINE).group(1)


def stored_call(source: str) -> str:
    """The builtin whose result the kernel stores: ``log2_x = wp.log2(x)`` ... ``out[i] = log2_x`` -> ``log2``."""
    local = re.findall(r"\] = (\w+)$", source, re.MULTILINE)[-1]
    return re.search(rf"^\s*{local} = wp\.(\w+)\(", source, re.MULTILINE).group(1)


def factor(ins: list, source: str, name: str) -> np.ndarray:
    A = np.eye(ins[0].shape[-1]) + 0.25 * ins[0].astype(np.float64)
    if "wp.svd2(" in source:
        return np.linalg.svd(A, compute_uv=False)
    if "wp.qr3(" in source:  # Warp's R has a positive diagonal; NumPy's signs vary
        R = np.linalg.qr(A)[1]
        return R * np.sign(np.diagonal(R, axis1=1, axis2=2))[..., None]
    return 2.0 * np.trace(A, axis1=1, axis2=2)  # the eigenvalues of A + A^T sum to its trace


def pseudo_huber(v: np.ndarray, source: str) -> np.ndarray:
    delta = literal(re.search(r"pseudo = wp\.norm_pseudo_huber\(.*, ([^,]*)\)$", source, re.MULTILINE).group(1))
    return np.sqrt(delta * delta + np.sum(v * v, -1))


MATH = {  # kind -> what NumPy stores, from the inputs, the source and the output's name
    "hyperbolic_trig": lambda ins, source, name: np.tanh(ins[0].astype(np.float64)),
    "logs_roots": lambda ins, source, name: {"log2": np.log2, "log10": np.log10, "cbrt": np.cbrt}[
        stored_call(source)](ins[0].astype(np.float64)),
    "error_functions": lambda ins, source, name: np.vectorize(math.erf)(ins[0].astype(np.float64)),
    "float_signs": lambda ins, source, name: np.copysign(ins[0].astype(np.float64), ins[1]),
    "norms": lambda ins, source, name: np.sum(np.abs(ins[0].astype(np.float64)), -1)
    if stored_call(source) == "norm_l1" else pseudo_huber(ins[0].astype(np.float64), source),
    "mat_factor": factor,
    "spatial_velocity": lambda ins, source, name: np.cross(ins[0].astype(np.float64), ins[2]) + ins[1],
}


def reference(kind: str, source: str, plan, values: dict) -> dict[str, np.ndarray]:
    ins = [values[a.name] for a in plan.args if a.role == "in"]
    outs = plan.outputs()
    if not outs:  # a kernel that only checks
        return {}
    first = outs[0]
    if kind == "uint_wrap":
        v, bits = ins[0].astype(np.int64), np.dtype(ins[0].dtype).itemsize * 8
        if "negated" in source:
            return {first.name: (-v) % 2**bits}
        return {first.name: (v + int(re.search(r"wp\.uint\d+\((\d+)\)", source).group(1))) % 2**bits}
    if kind == "int_division":
        a = ins[0].astype(np.int64)
        d = ins[1].astype(np.int64) if len(ins) > 1 else int(re.search(r"floored = \w+ // (?:wp\.int\d+\()?(\d+)", source).group(1))
        want = {first.name: np.floor_divide(a, d)}
        if len(outs) > 1:
            want[outs[1].name] = np.fmod(a, d)
        return want
    if kind == "bit_identities":
        op = {"toggled": np.bitwise_xor, "common": np.bitwise_and, "merged": np.bitwise_or}[first.name]
        return {first.name: op(ins[0], ins[1])}
    if kind == "shifts":
        k = int(re.search(r"wp\.u?int\d+\((\d+)\)", source).group(1))
        x = ins[0]
        return {first.name: x >> k if "right" in source else (x.astype(np.uint64) << np.uint64(k)).astype(x.dtype)}
    if kind == "int_conversion":
        x = ins[0]
        if first.name in ("squares", "squared"):
            return {first.name: x.astype(np.int64) ** 2}
        if np.dtype(values[first.name].dtype).kind == "u":
            return {first.name: x & (2 ** (values[first.name].dtype.itemsize * 8) - 1)}
        return {first.name: np.trunc(x.astype(np.float64))}
    if kind == "minmax":
        line = next(s for s in source.splitlines() if "clamped = wp.clamp(" in s).strip()
        _, lo, hi = line[len("clamped = wp.clamp("):-1].split(", ")
        return {first.name: np.clip(ins[0].astype(np.float64), literal(lo), literal(hi))}
    if kind == "abs_sign":
        return {first.name: np.abs(ins[0])}
    if kind == "rounding":
        x = ins[0].astype(np.float64)
        half_away = np.sign(x) * np.floor(np.abs(x) + 0.5)
        return {first.name: {"floors": np.floor(x), "rounded_out": half_away, "nearest_out": np.rint(x),
                             "truncated_out": np.trunc(x)}[first.name]}
    if kind == "precision":
        if ins[0].dtype == np.int32:
            return {first.name: (ins[0] + ins[1]).astype(np.float16)}
        if ins[0].dtype == np.float16:
            return {first.name: ins[0].astype(np.float32) * ins[1].astype(np.float32)}
        if first.name in ("halves", "packed"):
            return {first.name: ins[0].astype(np.float16)}
        return {first.name: ins[0].astype(np.float64) * ins[1].astype(np.float64)}
    if kind == "vec_cross":
        return {first.name: np.cross(ins[0], ins[1])}
    if kind == "vec_normalize":
        length = np.linalg.norm(ins[0].astype(np.float64), axis=-1, keepdims=True)
        return {first.name: ins[0] / length if first.name == "units" else length[:, 0]}
    if kind == "vec_dot":
        return {first.name: np.sum(ins[0].astype(np.float64) * ins[1], -1)}
    if kind == "mat_inverse":
        n = ins[0].shape[-1]
        A = np.eye(n) + {2: 0.25, 3: 0.15, 4: 0.1}[n] * ins[0].astype(np.float64)
        if len(ins) > 1:
            return {first.name: np.linalg.solve(A, ins[1].astype(np.float64)[..., None])[..., 0]}
        return {first.name: np.linalg.inv(A)}
    if kind == "type_roundtrip":  # small values, exact in every type
        return {first.name: ins[0].astype(values[first.name].dtype)}
    if kind == "key_packing":
        return {first.name: (ins[0].astype(np.uint64) << np.uint64(32)) | ins[1].astype(np.uint64)}
    if kind == "mat_homogeneous":  # the matrix of an input pose, or of a rotation and a translation
        if len(ins) == 2:
            pose = ins[0].astype(np.float64)
            return {first.name: rotate(pose[:, 3:], ins[1].astype(np.float64)) + pose[:, :3]}
        return {first.name: rotate(ins[0].astype(np.float64), ins[2].astype(np.float64)) + ins[1]}
    if kind == "mat_rotation":
        line = next(s for s in source.splitlines() if re.search(r" = wp\.mat(22|33)\(", s))
        numbers = [float(x) for x in re.findall(r"-?\d+\.\d+", line)]
        n = int(len(numbers) ** 0.5)
        return {first.name: ins[0] @ np.array(numbers).reshape(n, n).T}
    if kind == "mat_product":
        AB = ins[0].astype(np.float64) @ ins[1]
        return {first.name: AB if values[first.name].ndim == 3 else np.linalg.det(AB)}
    if kind == "mat_outer":
        a, b = ins[0].astype(np.float64), ins[1].astype(np.float64)
        if len(ins) > 2:
            return {first.name: a * np.sum(b * ins[2], -1, keepdims=True)}
        return {first.name: a[:, :, None] * b[:, None, :]}
    if kind == "quat_rotate":
        return {first.name: rotate(ins[0].astype(np.float64), ins[1].astype(np.float64))}
    if kind == "quat_axis_angle":
        axis = ins[0] / np.linalg.norm(ins[0].astype(np.float64), axis=-1, keepdims=True)
        half = ins[1].astype(np.float64)[:, None] / 2.0
        if values[first.name].ndim == 1:  # the recovered angle
            return {first.name: ins[1]}
        return {first.name: np.concatenate([axis * np.sin(half), np.cos(half)], -1)}
    if kind == "quat_compose":
        return {first.name: quat_mul(ins[0].astype(np.float64), ins[1].astype(np.float64))}
    if kind == "transform_roundtrip":
        t = ins[0].astype(np.float64)
        return {first.name: rotate(t[:, 3:], ins[1].astype(np.float64)) + t[:, :3]}
    if kind == "bool_logic":
        a, b = ins[0], ins[1]
        if values[first.name].dtype.kind == "i":
            return {first.name: a.astype(np.int32) + b}
        return {first.name: np.where(a & b, ins[2], 0.0)}
    if kind == "static_loop":
        x = ins[0].astype(np.float64)
        for base in ("DOUBLINGS", "STEPS", "OCTAVES"):
            if f"{base}_" in source:
                return {first.name: x * (0.5 if "halving" in source else 2.0) ** int(constant(source, base))}
        if x.ndim == 2:  # a loop over a vector's components
            return {first.name: np.sum(x * x, -1)}
        if "DEGREE_" in source:
            coeffs = [float(c) for c in re.findall(r"-?\d+\.\d+", constant(source, "COEFFS" if "COEFFS_" in source else "POLY"))]
            return {first.name: sum(c * x**k for k, c in enumerate(coeffs))}
        terms = int(constant(source, "TERMS" if "TERMS_" in source else "N"))
        return {first.name: sum(x**k for k in range(terms))}
    if kind in MATH:
        return {first.name: MATH[kind](ins, source, first.name)}
    assert kind == "struct_frames"
    body = ins[0]
    frame = body[body.dtype.names[0]] if len(body.dtype.names) == 2 else body  # nested, or flat
    origin, rotation = (frame[n].astype(np.float64) for n in frame.dtype.names[:2])
    x = ins[1].astype(np.float64) * body[body.dtype.names[-1]][:, None]
    return {first.name: rotate(rotation, x) + origin}


def tolerance(got: np.ndarray, source: str) -> float:
    if got.dtype.kind in "iub":
        return 0.0
    if got.dtype == np.float16:
        return 0.0  # the same rounding of the same float32
    if got.dtype == np.float32 and "wp.eig3(" in source:
        return 5e-3  # eig3's float32 Jacobi sweeps stop early, as the kernel's own tolerance says
    return 1e-10 if got.dtype == np.float64 and "float64" in source else 2e-5


# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module():
    items = kernels()
    handle = wb.define([source for _, source, _ in items], "jit_synth_test_property_checks")
    set_cpu_options(handle.module, backward=False)
    yield handle, items
    handle.release()


def test_every_kind_holds_and_matches_numpy(module, capfd):
    handle, items = module
    for kind, source, plan, values, got, text in launch_all(handle, items, capfd):
        assert FAILED not in text, f"{text[:1000]}\n{source}"
        want = reference(kind, source, plan, values)
        assert set(want) == set(got), source
        for name, expected in want.items():
            tol = tolerance(got[name], source)
            np.testing.assert_allclose(got[name].astype(np.float64), np.asarray(expected, np.float64),
                                       rtol=tol, atol=tol, err_msg=f"{kind}: {name}\n{source}")


@pytest.mark.parametrize("kind, broken", [  # (pattern, replacement): a regular expression substitution
    ("mat_inverse", (r"wp\.inverse\(", "wp.transpose(")),  # the transpose inverts only orthogonal matrices
    ("int_division", (" // ", " / ")),  # / truncates where // floors: negative numerators differ
    ("uint_wrap", ("~", "")),  # without the inverse, negation or the headroom test are off
    ("key_packing", (" << ", " >> ")),  # the cell shifted out of the key instead of into its high half
    ("mat_homogeneous", (r"wp\.vec3\(h\[0\], h\[1\], h\[2\]\)", "wp.vec3(h[1], h[2], h[3])")),  # one component off
    ("hyperbolic_trig", (r"wp\.cosh\(", "wp.sinh(")),  # tanh is not sinh / sinh, cosh^2 - sinh^2 is not 0
    ("logs_roots", (r"(\w+) = wp\.(log2|log10|cbrt)\(", r"\1 = 1.5 * wp.\2(")),  # the stored value scaled
    ("error_functions", (r"e = wp\.erf\(", "e = wp.erfc(")),  # erfc is neither odd nor 1 - erfc
    ("float_classes", (r"wp\.isfinite\(", "wp.isinf(")),  # finite inputs are not infinite
    ("float_signs", (r"signed = wp\.copysign\((\w+), (\w+)\)", r"signed = wp.copysign(\2, \1)")),  # roles swapped
    ("norms", (r"(l1|pseudo) = wp\.", r"\1 = 1.5 * wp.")),  # the stored norm scaled
    ("spatial_velocity", (r"wp\.spatial_vector\(", "wp.spatial_vector(-")),  # the spin reversed in the twist
    ("rounding", (r"whole = wp\.floor\(", "whole = wp.ceil(")),  # the ceil of a non-integer is not its floor
    ("bool_logic", (r"wp\.where\(", "wp.where(not ")),  # the branches of every wp.where swapped
    ("vec_cross", (r"wp\.cross\(", "wp.cw_mul(")),  # a componentwise product is no cross product
    ("mat_product", (r"AB = (\w+) @", r"AB = 2.0 * \1 @")),  # the product scaled
    ("transform_roundtrip", (r"p = wp\.transform_point\(", "p = wp.transform_vector(")),  # the translation lost
    ("quat_rotate", (r"r = wp\.quat_rotate\(", "r = wp.quat_rotate_inv(")),  # the rotation undone
])
def test_broken_variants_print_failures(kind, broken, capfd):
    items = [(k, source, meta) for k, source, meta in kernels(2, 2) if k == kind]
    assert items and all(re.search(broken[0], source) for _, source, _ in items)
    items = [(k, re.sub(*broken, source), meta) for k, source, meta in items]
    handle = wb.define([source for _, source, _ in items], f"jit_synth_test_property_checks_{kind}")
    try:
        set_cpu_options(handle.module, backward=False)
        for _, source, _, _, _, text in launch_all(handle, items, capfd):
            assert FAILED in text, source
    finally:
        handle.release()


def at_ends(plan, values: dict) -> dict:
    """The inputs with their first elements set to the ends of their declared ranges (and 0 inside them),
    every component alike or alternating: the identities must hold there too. Unit quaternions, transforms,
    structs and bools keep their drawn values."""
    for a in plan.args:
        v = values[a.name]
        if a.role != "in" or v.dtype.names is not None or v.dtype == np.bool_ or v.ndim == 0:
            continue
        if wp.types.type_is_quaternion(a.dtype) or wp.types.type_is_transformation(a.dtype):
            continue
        lo, hi = a.range
        flat = v.reshape(v.shape[0], -1).copy()
        comps = np.arange(flat.shape[1])
        rows = [np.full(flat.shape[1], lo), np.full(flat.shape[1], hi),
                np.where(comps % 2 == 0, lo, hi), np.where(comps % 2 == 0, hi, lo)]
        if lo < 0 < hi:
            rows.append(np.zeros(flat.shape[1]))
        for r, row in enumerate(rows[: flat.shape[0]]):
            flat[r] = row
        values[a.name] = flat.reshape(v.shape).astype(v.dtype)
    return values


def test_every_kind_holds_at_the_ends_of_its_ranges(module, capfd):
    handle, items = module
    printed(capfd)
    for kind, source, meta in items:
        kernel = handle.namespace[re.search(r"^def (\w+)\(", source, re.MULTILINE).group(1)]
        plan = plan_from_metadata(kernel, meta)
        run_outputs(kernel, plan, at_ends(plan, random_values(plan, np.random.default_rng(7))))
        text = printed(capfd)
        assert FAILED not in text, f"{text[:1000]}\n{source}"


PAIRS = (("a", "b"), ("lhs", "rhs"), ("left", "right"), ("x", "y"), ("u", "v"), ("first", "second"))


def test_inputs_are_read_once_and_paired_names_match():
    for kind in sorted(PC.KINDS):
        for n in range(40):
            kb = PC.build(kind, random.Random(f"names:{kind}:{n}"), "00000000")
            code = "\n".join(line for line in kb.source().splitlines() if not line.strip().startswith("#"))
            inputs = {p.name for p in kb.params if p.role == "in"}
            for name in inputs:  # every input element is read once, into a local or in place
                assert len(re.findall(rf"(?<![\w.]){name}\[", code)) == 1, f"{name} read twice\n{code}"
            families = {pair for pair in PAIRS for name in pair if name in inputs}
            assert len(families) <= 1, f"operands named from {families}\n{code}"


def test_stored_values_are_checked_or_said_to_be_written():
    for kind in sorted(PC.KINDS):
        for n in range(40):
            kb = PC.build(kind, random.Random(f"stores:{kind}:{n}"), "00000000")
            source = kb.source()
            lines = [line for line in source.splitlines() if not line.strip().startswith("#")]
            checked = {name for line in lines if "wp.expect_" in line for name in re.findall(r"\w+", line)}
            for _ in range(3):  # and what the checked locals are computed from
                checked |= {name for line in lines if (m := re.match(r"\s*(\w+) = (.*)$", line)) and m[1] in checked
                            for name in re.findall(r"\w+", m[2])}
            for p in kb.params:
                if p.role != "out":
                    continue
                value = next(line.split(" = ", 1)[1] for line in lines if re.match(rf"\s*{p.name}\[", line))
                ok = re.fullmatch(r"\w+", value) and value in checked
                assert ok or "write" in doc_of(source), f"{p.name} = {value} is neither checked nor said\n{source}"


def test_generated_records_carry_kind_and_purpose():
    kinds = set()
    for i in range(60):
        spec = generate(5, i, ["property_checks"])
        kinds.add(spec.metadata["check_kind"])
        doc = doc_of(spec.source)
        assert doc.startswith("Check") and doc.endswith(".") and spec.metadata["purpose"].startswith(doc)
        assert "wp.expect_" in spec.source and spec.metadata["launch"]["runnable"]
    assert len(kinds) > 15


@pytest.mark.parametrize("kind", sorted(PC.KINDS))
def test_kinds_are_reproducible(kind):
    a = PC.build(kind, random.Random(1), "00ff00ff")
    b = PC.build(kind, random.Random(1), "00ff00ff")
    assert a.source() == b.source() and a.meta == b.meta


def test_expected_float32_literals_are_written_plain():
    """A float32 literal compared whole in ``wp.expect_eq`` / ``wp.expect_near`` is a plain ``1.0``: the
    literal already is a float32 in a kernel, a ``wp.float32(1.0)`` cast there is needless."""
    cast = re.compile(r"wp\.float32\(-?\d+\.\d*(e-?\d+)?\)")
    for kind in sorted(PC.KINDS):
        for n in range(30):
            source = PC.build(kind, random.Random(f"plain:{kind}:{n}"), "00000000").source()
            for line in source.splitlines():
                m = re.match(r"\s*wp\.expect_(?:eq|near)\((.*)\)$", line)
                if not m:
                    continue
                depth, start, args = 0, 0, []
                for k, ch in enumerate(m[1]):
                    depth += ch in "([" and 1 or ch in ")]" and -1 or 0
                    if ch == "," and depth == 0:
                        args.append(m[1][start:k])
                        start = k + 1
                args.append(m[1][start:])
                assert not any(cast.fullmatch(a.strip()) for a in args), f"{line}\n{source}"


def test_error_function_docstrings_name_the_inverses_checked():
    """The docstring names each inverse the kernel checks, and only those; every comment on a check
    stands on its own."""
    shapes = set()
    for n in range(60):
        kb = PC.build("error_functions", random.Random(f"erf:{n}"), "00000000")
        source, doc = kb.source(), doc_of(kb.source())
        code = "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))
        used = {f for f in ("erfinv", "erfcinv") if f"wp.{f}(" in code}
        named = {f for f in ("erfinv", "erfcinv") if re.search(rf"\b{f}\b", doc)}
        assert used == named, (used, named, source)
        assert ("inverse" in kb.name) <= bool(used), source
        assert ("inverses" in kb.name) <= (len(used) == 2), source  # a plural name checks both
        assert {f for f in ("erfinv", "erfcinv") if f in kb.name} <= used, source
        assert "cdf" not in source, source  # the output holds erf, not a distribution function
        assert " too" not in source, source
        shapes.add(frozenset(used))
    assert len(shapes) >= 3, shapes


def test_struct_arrays_are_named_for_their_struct():
    """An array of ``Body`` structs is ``bodies`` and its element ``body`` (``Shape``: ``shapes``, ``shape``)."""
    for n in range(40):
        kb = PC.build("struct_frames", random.Random(f"frames:{n}"), "00000000")
        source = kb.source()
        array = next(p for p in kb.params if p.role == "in" and p.dtype.kind == "struct")
        struct = array.dtype.name.rsplit("_", 1)[0]
        one = {"Body": "body", "Instance": "instance", "Shape": "shape"}[struct]
        assert array.name == {"body": "bodies"}.get(one, one + "s"), source
        assert re.search(rf"\b{one} = {array.name}\[", source), source


def test_comments_agree_with_the_checks():
    """The float16 remark stands only where a float16 conversion is checked; the bool checks test
    the flags, not a comparison against its own complement; the scaled point is computed once."""
    for n in range(60):
        source = PC.build("type_roundtrip", random.Random(f"types:{n}"), "00000000").source()
        if "float16 included" in source:
            assert "wp.float16(" in source, source
        source = PC.build("bool_logic", random.Random(f"bools:{n}"), "00000000").source()
        assert "<= 0.0))" not in source, source
        source = PC.build("struct_frames", random.Random(f"frames:{n}"), "00000000").source()
        assert len(re.findall(r"\bx \* ", source)) <= 1, source
        source = PC.build("int_division", random.Random(f"div:{n}"), "00000000").source()
        if "wp.array(dtype=int)" in source or "wp.array[int]" in source or "dtype=wp.int32" in source:
            assert "wp.int32(" not in source.split('"""')[-1], source  # plain int32 literals
