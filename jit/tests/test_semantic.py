"""The semantic gate: one hand-made kernel per defect kind, clean look-alikes, and Warp's own code."""

from __future__ import annotations

import textwrap

import pytest

from jit.benchmarks.semantic_gate import real_kernels
from jit.code.checks import CHECKS, Batch
from jit.code.checks.semantic import Defect, defects

HEADER = "import warp as wp\n\n"


def kernel(body: str, params: str = "a: wp.array(dtype=float), out: wp.array(dtype=float)") -> str:
    return HEADER + f"@wp.kernel\ndef k({params}):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ") + "\n"


VEC = "v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)"
MAT = "m: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.mat33)"

FLAGGED = [
    ("self-operation", kernel("i = wp.tid()\nx = a[i]\nout[i] = x - x")),
    ("self-operation", kernel("i = wp.tid()\nout[i] = wp.max(v[i], v[i])", VEC)),
    ("self-operation", kernel("i = wp.tid()\ny = a[i]\nout[i] = wp.copysign(y, y)")),
    ("identity", kernel("i = wp.tid()\nout[i] = a[i] * 1.0")),
    ("identity", kernel("i = wp.tid()\nout[i] = a[i] + 0.0")),
    ("identity", kernel("i = wp.tid()\nout[i] = wp.identity(n=3, dtype=float) * v[i]", VEC)),
    ("identity", kernel("i = wp.tid()\nidentity = wp.identity(n=3, dtype=float)\nout[i] = m[i] * identity", MAT)),
    ("identity", kernel("i = wp.tid()\nout[i] = wp.quat_rotate(wp.quat_identity(), v[i])", VEC)),
    ("double application", kernel("i = wp.tid()\nout[i] = wp.normalize(wp.normalize(v[i]))", VEC)),
    ("double application", kernel("i = wp.tid()\nout[i] = -(-a[i])")),
    ("double application", kernel("i = wp.tid()\nt = wp.transpose(m[i])\nout[i] = wp.transpose(t)", MAT)),
    ("equal operands", kernel("i = wp.tid()\nout[i] = wp.lerp(a[i], a[i], 0.5)")),
    ("equal operands", kernel("i = wp.tid()\nx = a[i]\nout[i] = wp.select(x > 0.0, x, x)")),
    ("equal operands", kernel("i = wp.tid()\nx = a[i]\nout[i] = wp.where(x > 0.0, x, x)")),
    ("equal operands", kernel("i = wp.tid()\nx = a[i]\nout[i] = x if i > 3 else x")),
    ("equal operands", kernel("i = wp.tid()\nout[i] = wp.clamp(a[i], 0.5, 0.5)")),
    ("equal operands", kernel("i = wp.tid()\nif a[i] > 0.0:\n    out[i] = 1.0\nelse:\n    out[i] = 1.0")),
    ("per-thread constant", kernel("i = wp.tid()\nout[i] = a[i] * wp.degrees(-0.97)")),
    ("per-thread constant", kernel("i = wp.tid()\nout[i] = a[i] * wp.length(wp.vec3(1.0, 2.0, 3.0))")),
    ("per-thread constant", kernel("i = wp.tid()\nroot2 = wp.sqrt(2.0)\nout[i] = a[i] * root2")),
    ("unused value", kernel("i = wp.tid()\nscaled = a[i] * 2.0\nout[i] = a[i]")),
    ("unused value", kernel("i = wp.tid()\nacc = float(0.0)\nfor j in range(4):\n    acc += a[j]\nout[i] = a[i]")),
    ("unused value", kernel("i = wp.tid()\nx = a[i]\nx = a[i] * 2.0\nout[i] = x")),
    ("unused value", kernel("i = wp.tid()\nwp.sqrt(a[i])\nout[i] = a[i]")),
    ("unused value", kernel("i = wp.tid()\nq = wp.hash_grid_query(g, wp.vec3(0.0), 1.0)\nj = int(0)\n"
                            "while wp.hash_grid_query_next(q, j):\n    pass\nout[i] = a[i]",
                            "g: wp.uint64, a: wp.array(dtype=float), out: wp.array(dtype=float)")),
    ("overwritten store", kernel("i = wp.tid()\nfor j in range(8):\n    out[i] = a[j]")),
    ("overwritten store", kernel("i = wp.tid()\nj = int(0)\nwhile j < 8:\n    out[i] = a[j]\n    j += 1")),
    ("parameter gates nothing", kernel("i = wp.tid()\nif flag:\n    out[i] = a[i]\nelse:\n    out[i] = a[i]",
                                       "a: wp.array(dtype=float), out: wp.array(dtype=float), flag: int")),
    ("parameter gates nothing", kernel("i = wp.tid()\nout[i] = a[i]\nif flag:\n    pass",
                                       "a: wp.array(dtype=float), out: wp.array(dtype=float), flag: int")),
    ("parameter gates nothing", kernel("i = wp.tid()\nout[i] = a[i]",
                                       "a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)")),
    ("output ignores inputs", kernel("i = wp.tid()\nx = a[i]\nif i > 2:\n    out[i] = 1.0\nelse:\n    out[i] = 2.0")),
    ("no output", kernel("i = wp.tid()\nx = a[i] * 2.0\ny = wp.sin(x)")),
]

CLEAN = [
    kernel("i = wp.tid()\nx = a[i]\nout[i] = x * x + x"),
    kernel("i = wp.tid()\nx = a[i]\nif x != x:\n    out[i] = 0.0"),  # a NaN test
    kernel("i = wp.tid()\ns = wp.rand_init(7, i)\nout[i] = wp.randf(s) - wp.randf(s)", "out: wp.array(dtype=float)"),
    kernel("i = wp.tid()\nout[3 * i + 0] = a[i]\nout[3 * i + 1] = a[i]"),  # an integer offset kept for symmetry
    kernel("i = wp.tid()\nout[i] = (a[i] * wp.identity(n=3, dtype=float))[0, 0]"),  # a scaled identity
    kernel("i = wp.tid()\nout[i] = v[i] + wp.vec3(0.0, -9.8, 0.0)", VEC),
    kernel("i = wp.tid()\nout[i] = a[i] * 2.0 * wp.pi + wp.float32(1.0)"),
    kernel("i = wp.tid()\nout[i] = a[i] * wp.static(wp.sqrt(2.0))"),
    kernel("i = wp.tid()\nout[i] = wp.normalize(v[i]) + wp.normalize(v[i] * 2.0)", VEC),
    kernel("i = wp.tid()\nout[i] = wp.select(a[i] > 0.0, a[i], -a[i])"),
    kernel("i = wp.tid()\nout[i] = 0.0", "out: wp.array(dtype=float)"),  # a zero fill, as real code has
    kernel("i = wp.tid()\nout[i] = value", "out: wp.array(dtype=float), value: float"),
    kernel("i = wp.tid()\nif i >= n:\n    return\nout[i] = 0.0", "out: wp.array(dtype=float), n: int"),
    kernel("i = wp.tid()\nfor j in range(8):\n    out[i] += a[j]"),
    kernel("i = wp.tid()\nfor j in range(8):\n    out[i * 8 + j] = a[j]"),
    kernel("i = wp.tid()\nfor j in range(8):\n    if a[j] > 0.0:\n        out[i] = a[j]\n        break"),
    kernel("i = wp.tid()\nq, r = wp.qr3(m[i])\nout[i] = q", MAT),  # r unpacked and dropped
    kernel("i = wp.tid()\nx = float(0.0)\nif a[i] > 0.0:\n    x = a[i]\nout[i] = x"),
    kernel("i = wp.tid()\nif flag:\n    out[i] = a[i]\nelse:\n    out[i] = -a[i]",
           "a: wp.array(dtype=float), out: wp.array(dtype=float), flag: int"),
    kernel("i = wp.tid()\nout[i] = a[i]",  # a size the launch dimension made redundant
           "a: wp.array(dtype=float), out: wp.array(dtype=float), count: int"),
    kernel("i = wp.tid()\nwp.atomic_add(out, 0, a[i])"),
    kernel("i = wp.tid()\nold = wp.atomic_add(out, 0, a[i])"),  # kept for the effect, value dropped
    kernel("i = wp.tid()\nwp.atomic_add(out, 0, 1.0) if a[i] > 0.0 else wp.atomic_add(out, 1, 1.0)"),
    kernel("i = wp.tid()\nwp.expect_eq(a[i], 1.0)", "a: wp.array(dtype=float)"),
    kernel("col = out[:, 1]\ncol[0] = 5.0", "out: wp.array2d(dtype=float)"),  # a fill through a view
    kernel("while wp.atomic_cas(lock, 0, 0, 1) == 1:\n    pass\nlock[0] = 0", "lock: wp.array(dtype=int)"),
    kernel("i = wp.tid()\nsign = float(0.0)\nface = int(0)\nu = float(0.0)\nv = float(0.0)\n"
           "wp.mesh_query_point(m, p[i], 1.0e6, sign, face, u, v)\nout[i] = wp.sign(sign)",
           "m: wp.uint64, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)"),  # sign comes back written
    HEADER + "@wp.func\ndef bump(x: wp.ref[float], a: float):\n    x = a + 1.0\n",
    kernel("pass", "a: wp.array(dtype=float)"),  # a stub, as launch-overhead benchmarks have
    HEADER + "@wp.func\ndef helper(x: float, unused: float):\n    return x * 2.0\n",
    HEADER + textwrap.dedent("""
        @wp.kernel
        def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
                      inv_mass: wp.array(dtype=float), gravity: wp.vec3, dt: float):
            tid = wp.tid()
            v_new = v[tid] + (f[tid] * inv_mass[tid] + gravity * wp.step(-inv_mass[tid])) * dt
            x[tid] = x[tid] + v_new * dt
            v[tid] = v_new
        """),
    HEADER + textwrap.dedent("""
        @wp.kernel
        def springs(x: wp.array(dtype=wp.vec3), idx: wp.array(dtype=int), rest: wp.array(dtype=float),
                    ke: float, f: wp.array(dtype=wp.vec3)):
            tid = wp.tid()
            i = idx[tid * 2 + 0]
            j = idx[tid * 2 + 1]
            d = x[j] - x[i]
            length = wp.length(d)
            fs = d * (ke * (length - rest[tid]) / wp.max(length, 1.0e-6))
            wp.atomic_add(f, i, fs)
            wp.atomic_sub(f, j, fs)
        """),
]


@pytest.mark.parametrize("kind,source", FLAGGED, ids=[f"{k}-{n}" for n, (k, _) in enumerate(FLAGGED)])
def test_defect_is_flagged_with_its_kind(kind, source):
    found = defects(source)
    assert kind in {d.kind for d in found}, (source, found)
    assert all(isinstance(d, Defect) and d.line >= 1 and d.detail for d in found)


@pytest.mark.parametrize("source", CLEAN, ids=[str(n) for n in range(len(CLEAN))])
def test_clean_kernel_is_not_flagged(source):
    assert defects(source) == []


def test_line_and_detail_point_at_the_code():
    found = defects(kernel("i = wp.tid()\nx = a[i]\nout[i] = x - x"))
    assert found == [Defect("self-operation", 7, "x - x")]


def test_decorator_forms_and_plain_functions():
    body = "(a: wp.array(dtype=float), out: wp.array(dtype=float)):\n    i = wp.tid()\n    out[i] = a[i] - a[i]\n"
    for decorator in ("@wp.kernel", "@wp.kernel(enable_backward=False)", "@warp.kernel", "@kernel", "@wp.func"):
        assert defects(HEADER + f"{decorator}\ndef k{body}"), decorator
    assert defects(HEADER + f"def k{body}") == []


def test_registered_check_drops_flagged_records_with_the_kind_as_reason():
    records = {"bad": {"python_source": kernel("i = wp.tid()\nout[i] = a[i] * 1.0")},
               "good": {"python_source": CLEAN[0]}, "broken": {"python_source": "def k(:"}}
    failed = CHECKS["semantic"].run(None, Batch(records))
    assert failed == {"bad": "semantic: identity", "broken": "semantic: python_source does not parse"}


def test_real_warp_kernels_are_rarely_flagged():
    kernels, _ = real_kernels(("examples", "fem", "_src/fem"))
    flagged = [(k.path, k.name, k.defects) for k in kernels if k.defects]
    assert len(kernels) >= 200
    assert len(flagged) / len(kernels) <= 0.008, flagged
