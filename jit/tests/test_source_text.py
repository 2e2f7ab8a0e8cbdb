"""``self_contained_source``: the text alone rebuilds a kernel whose Warp code is the original's."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import textwrap

import pytest

from jit.code.extraction import warp_backend as wb
from jit.code.extraction.source_text import comparable_code, rebuild_difference, self_contained_source

MODULE = textwrap.dedent('''\
    from typing import Any

    import numpy as np
    import warp as wp

    SCALE = wp.constant(2.5)
    OFFSET = wp.constant(wp.vec3(1.0, 2.0, 3.0))
    STEPS = 3
    vec5 = wp.types.vector(length=5, dtype=wp.float64)
    TABLE = np.arange(10_000, dtype=np.float32)


    @wp.struct
    class Inner:
        w: wp.float64


    @wp.struct
    class Particle:
        x: wp.vec3
        inner: Inner


    @wp.func
    def scaled(x: float):
        return x * SCALE


    @wp.func
    def scaled(x: wp.vec3):
        return x * SCALE + OFFSET


    @wp.func
    def twice(x: float):
        return scaled(scaled(x))


    @wp.func
    def smooth(x: float):
        return x * x


    @wp.func_grad(smooth)
    def adj_smooth(x: float, adj_ret: float):
        wp.adjoint[x] += 2.0 * x * adj_ret


    @wp.kernel
    def plain(a: wp.array(dtype=float), p: wp.array(dtype=Particle), v: vec5):
        i = wp.tid()
        for _ in range(STEPS):
            a[i] = twice(a[i]) + smooth(a[i]) + float(v[0] + p[i].inner.w)
        p[i].x = scaled(p[i].x)


    def make(k: float, dtype):
        @wp.func
        def inner(x: dtype):
            return x * dtype(k)

        @wp.kernel(enable_backward=False)
        def apply(a: wp.array(dtype=dtype)):
            i = wp.tid()
            a[i] = inner(a[i]) + dtype(wp.static(k * 2.0))

        return apply


    @wp.kernel
    def generic(a: wp.array(dtype=Any), b: Any):
        i = wp.tid()
        a[i] = a[i] + b


    def make_table_kernel():
        @wp.kernel
        def lookup(a: wp.array(dtype=float)):
            a[0] = wp.static(float(TABLE[17]))
            a[1] = float(wp.static(len(table)))

        table = [1, 2, 3]
        return lookup


    def make_fill(type):  # a parameter named like a builtin, as real factories do
        def fill(out: wp.array(dtype=type), value: type):
            out[wp.tid()] = value

        return wp.Kernel(fill, key=f"fill_{type.__name__}")
''')


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "kernels_src.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("jit_source_text_case", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    wb.init()
    import warp as wp

    yield {
        "plain": module.plain,
        "factory": module.make(3.0, wp.float64),
        "overload": wp.overload(module.generic, {"a": wp.array(dtype=wp.float32), "b": wp.float32}),
        "generic": module.generic,
        "table": module.make_table_kernel(),
        "shadowing": module.make_fill(wp.int32),
    }
    sys.modules.pop(spec.name, None)


@pytest.mark.parametrize("name", ["plain", "factory", "overload", "shadowing"])
def test_text_rebuilds_the_same_code(kernels, name):
    text, why = self_contained_source(kernels[name])
    assert why is None, why
    assert text.startswith("import warp as wp\n")
    assert rebuild_difference(kernels[name], text) is None


def test_text_contents(kernels):
    plain, _ = self_contained_source(kernels["plain"])
    # constants as literals, helpers callees first with both overloads, the custom gradient kept
    assert "SCALE = 2.5" in plain and "OFFSET = wp.vec3f(1.0, 2.0, 3.0)" in plain and "STEPS = 3" in plain
    assert plain.count("def scaled(") == 2 and plain.index("def scaled(") < plain.index("def twice(")
    assert "@wp.func_grad(smooth)" in plain and plain.index("class Inner") < plain.index("class Particle")
    assert "vec5 = wp.types.vector(length=5, dtype=wp.float64)" in plain
    factory, _ = self_contained_source(kernels["factory"])
    assert "def make(" in factory and "make__locals__apply = " in factory
    overload, _ = self_contained_source(kernels["overload"])
    assert "from typing import Any" in overload
    assert "wp.overload(generic, {'a': wp.array(dtype=wp.float32, ndim=1), 'b': wp.float32})" in overload


def test_reasons_when_not_self_contained(kernels):
    _, why = self_contained_source(kernels["generic"])
    assert "needs an overload" in why
    text, why = self_contained_source(kernels["table"])
    assert "TABLE" in why and "NumPy array of 10000 float32" in why
    assert rebuild_difference(kernels["table"], text) is not None


def test_the_check_sees_a_changed_constant(kernels):
    text, _ = self_contained_source(kernels["plain"])
    assert rebuild_difference(kernels["plain"], text.replace("SCALE = 2.5", "SCALE = 2.25")) == "rebuilt code differs"


def test_comparable_code_only_drops_places():
    code = "// x = f_3(y)   <L 12>\n// /a/b.py:40\nstatic void adj_f_3(\nvar = f_3(x) + f_30(x);\n"
    assert comparable_code(code, ["f_3"]) == (
        "// x = <func 0>(y)   <L>\n// <file>\nstatic void adj_<func 0>(\nvar = <func 0>(x) + f_30(x);\n")


@pytest.mark.parametrize("module_name", ["warp.examples.benchmarks.benchmark_sparse_marching_cubes",
                                         "warp.examples.core.example_fdtd_3d"])
def test_warps_own_kernels_rebuild(module_name):
    from jit.code.harvest.modules import Source, import_source, module_kernels

    module, _ = import_source(Source(module_name))
    concrete = [k for kernel in module_kernels(module) for k in wb.kernel_overloads(kernel)][:6]
    assert concrete
    for kernel in concrete:
        text, why = self_contained_source(kernel)
        assert why is None, (kernel.key, why)
        assert rebuild_difference(kernel, text) is None, kernel.key
