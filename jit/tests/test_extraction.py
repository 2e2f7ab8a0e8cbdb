"""extract_ir / extract_many against Warp's own output: the translation unit Warp writes
for a module (``wp.compile_aot_module``), Warp's own build, and offline compilers."""

from __future__ import annotations

import dataclasses
import linecache
import re
from pathlib import Path

import numpy as np
import pytest
import warp as wp

from jit.code.extraction import ExtractionError, KernelIR, extract_ir, extract_many
from jit.code.extraction import warp_backend as wb

SOURCE = '''
from typing import Any

import warp as wp


@wp.struct
class Pair2:
    x: float
    y: float


@wp.func
def inner(x: float):
    return x * x + 1.0  # a closing brace } must not end the function


@wp.func
def outer(x: float):
    return inner(x) - 0.5  # } and { in a trailing comment


@wp.kernel
def square_plus(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()  # } {{ }}}
    b[i] = outer(a[i])


@wp.kernel
def with_struct(p: wp.array(dtype=Pair2), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = p[i].x * p[i].y


@wp.kernel
def scale_generic(a: wp.array(dtype=Any), s: float):
    i = wp.tid()
    a[i] = a[i] * s


wp.overload(scale_generic, {"a": wp.array(dtype=float), "s": float})
wp.overload(scale_generic, {"a": wp.array(dtype=wp.vec3), "s": float})


@wp.kernel(enable_backward=False)
def no_grad(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.sin(a[i])
'''

NO_BACKWARD_MODULE = '''
import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.kernel
def doubled(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 2.0 * a[i]
'''

TILE_SOURCE = '''
import warp as wp

TILE = 8


@wp.kernel
def tile_mm(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    ta = wp.tile_load(a, shape=(TILE, TILE), offset=(i * TILE, 0))
    tb = wp.tile_load(b, shape=(TILE, TILE), offset=(0, j * TILE))
    tc = wp.tile_matmul(ta, tb)
    wp.tile_store(c, tc, offset=(i * TILE, j * TILE))
'''


def aot_source(module, device: str, tmp_path) -> str:
    """The translation unit Warp writes for ``module``, through its public API.

    CUDA: ``wp.compile_aot_module`` to PTX (the module's block_dim, as a CUDA launch uses).
    CPU: a real launch, whose build uses block_dim 1 like every CPU launch; Warp keeps the
    .cpp next to the object file in its kernel cache. (An ahead-of-time CPU build would use
    the module's block_dim instead, which is not what a launch compiles.)
    """
    if device == "cuda":
        folder = tmp_path / "aot_cuda"
        wp.compile_aot_module(module, arch=[wb.DEFAULT_CUDA_ARCH], module_dir=folder, use_ptx=True)
        files = list(folder.glob("*.cu"))
        assert len(files) == 1, files
        return files[0].read_text()
    kernel = next(k for k in wb.module_kernels(module) if not k.is_generic)
    args = [wp.zeros(1, dtype=arg.type.dtype, device="cpu") if hasattr(arg.type, "dtype") else arg.type(0)
            for arg in kernel.adj.args]
    wp.launch(kernel, dim=1, inputs=args, device="cpu")
    return launched_cpu_source(module)


def launched_cpu_source(module) -> str:
    """The .cpp Warp compiled for the module's last CPU launch (kept next to the object file)."""
    binary = Path(next(exe.binary_path for exe in module.execs.values() if exe.binary_path))
    return (binary.parent / (binary.name.split(".")[0] + ".cpp")).read_text()


def assert_contiguous(unit: str, *pieces: str) -> None:
    """Each piece occurs verbatim and the next one follows after whitespace only (nothing lost)."""
    pos = unit.index(pieces[0])
    for prev, piece in zip(pieces, pieces[1:]):
        end = pos + len(prev)
        pos = unit.index(piece, end)
        assert unit[end:pos].strip() == "", unit[end:pos]


@pytest.fixture(scope="module")
def sample():
    handle, names = wb.define_one(SOURCE, "jit_test_sample")
    yield handle, names
    handle.release()


@pytest.fixture(scope="module")
def sample_unit(sample, tmp_path_factory):
    """device -> Warp's translation unit of the sample module, made once per device."""
    units = {}

    def unit(device: str) -> str:
        if device not in units:
            units[device] = aot_source(sample[0].module, device, tmp_path_factory.mktemp(f"aot_{device}"))
        return units[device]

    return unit


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_field_matches_warps_translation_unit(sample, sample_unit, device):
    handle, names = sample
    kernel = names["square_plus"]
    ir = extract_ir(kernel, device)
    unit = sample_unit(device)

    assert ir.kernel_name == "square_plus" == kernel.key
    assert re.fullmatch(r"square_plus_[0-9a-f]{8}", ir.mangled_name)
    assert f"{ir.mangled_name}_{device}_kernel_forward" in unit
    assert (ir.device, ir.source_ext) == (device, {"cpu": ".cpp", "cuda": ".cu"}[device])
    assert ir.python_source.strip() in SOURCE and ir.python_source.lstrip().startswith("@wp.kernel")
    assert "def square_plus(" in ir.python_source
    assert f"{ir.mangled_name}_{device}_kernel_forward(" in ir.forward
    assert f"{ir.mangled_name}_{device}_kernel_backward(" in ir.backward
    if device == "cpu":
        assert ir.args_struct.startswith(f"struct wp_args_{ir.mangled_name} {{")
        assert_contiguous(unit, ir.args_struct, ir.forward, ir.backward)
    else:
        assert ir.args_struct == ""
        assert_contiguous(unit, ir.forward, ir.backward)
    assert [f.name for f in ir.functions] == ["inner", "outer"]  # callees first
    for func in ir.functions:
        assert func.forward in unit and func.adjoint in unit
        assert f"adj_{func.native_name}(" in func.adjoint
        assert func.python_source.strip() in SOURCE
    assert ir.metadata["args"] == [{"name": "a", "type": "array(ndim=1, dtype=float32)"},
                                   {"name": "b", "type": "array(ndim=1, dtype=float32)"}]
    assert ir.metadata["warp_version"] == wp.__version__
    expected_block = 1 if device == "cpu" else wp.get_module_options(handle.module)["block_dim"]
    assert ir.metadata["options"]["block_dim"] == expected_block
    assert dataclasses.is_dataclass(ir) and isinstance(ir, KernelIR)


def test_struct_code_is_warps(sample, sample_unit):
    handle, names = sample
    ir = extract_ir(names["with_struct"], "cuda")
    unit = sample_unit("cuda")
    assert [name for name, _ in ir.structs] == ["Pair2"]
    assert ir.structs[0][1].strip() in unit
    assert ir.code().count("struct Pair2") == 1


def test_cuda_uses_thread_indexing_and_cpu_does_not(sample):
    irs = extract_many([sample[1]["square_plus"]])[0]
    cuda, cpu = irs["cuda"], irs["cpu"]
    for text in (cuda.forward, cuda.backward):
        assert "blockIdx" in text and "threadIdx" in text
        assert "__global__" in text
    for text in (cpu.forward, cpu.backward, cpu.args_struct):
        assert "blockIdx" not in text and "threadIdx" not in text and "__global__" not in text
    assert "task_index" in cpu.forward


def test_brace_in_comment_does_not_cut_code(sample, sample_unit):
    handle, names = sample
    ir = extract_ir(names["square_plus"], "cpu")
    assert "# } {{ }}}" in ir.forward
    assert any("} must not end" in f.forward for f in ir.functions)
    # the forward ends with the kernel body's closing brace, after the last statement
    assert ir.forward.rstrip().endswith("}")
    assert "wp::array_store(var_b" in ir.forward
    unit = sample_unit("cpu")
    assert_contiguous(unit, ir.args_struct, ir.forward, ir.backward)


def test_forward_equals_warps_output_with_backward_disabled(sample):
    module = sample[0].module
    kernel = sample[1]["square_plus"]
    for device in ("cpu", "cuda"):
        ir = extract_ir(kernel, device)
        options = wb.resolve_options(module, device)
        build = wb.Build(module, [kernel], options, device)
        unit = build.module_source(device, options | {"enable_backward": False})
        assert "_kernel_backward" not in unit
        assert ir.forward in unit
        assert ir.backward not in unit


def test_generic_kernel_gives_one_ir_per_overload(sample, sample_unit):
    handle, names = sample
    irs = extract_ir(names["scale_generic"], "cuda")
    assert len(irs) == 2
    assert len({ir.mangled_name for ir in irs}) == 2
    dtypes = [ir.metadata["args"][0]["type"] for ir in irs]
    assert dtypes == ["array(ndim=1, dtype=float32)", "array(ndim=1, dtype=vec3f)"]
    assert all(ir.metadata["generic_parent"] == "scale_generic" for ir in irs)
    unit = sample_unit("cuda")
    for ir in irs:
        assert_contiguous(unit, ir.forward, ir.backward)


def test_generic_kernel_without_overloads_is_an_extraction_error(define):
    names = define("from typing import Any\nimport warp as wp\n\n@wp.kernel\n"
                   "def g(a: wp.array(dtype=Any)):\n    a[wp.tid()] = a[wp.tid()]\n")
    with pytest.raises(ExtractionError) as err:
        extract_ir(names["g"], "cpu")
    assert err.value.kernel == "g" and "overload" in err.value.reason


def test_backward_off_per_kernel_module_and_call(sample, sample_unit, define):
    handle, names = sample
    unit = sample_unit("cuda")
    ir = extract_ir(names["no_grad"], "cuda")
    assert ir.backward is None
    assert f"{ir.mangled_name}_cuda_kernel_backward" not in unit
    assert ir.forward in unit

    module_off = define(NO_BACKWARD_MODULE)["doubled"]
    for device in ("cpu", "cuda"):
        off = extract_ir(module_off, device)
        assert off.backward is None and off.metadata["options"]["enable_backward"] is False
        assert "_kernel_forward" in off.forward

    assert extract_ir(names["square_plus"], "cpu", backward=False).backward is None


def test_tile_kernel_block_dims(define, tmp_path):
    kernel = define(TILE_SOURCE)["tile_mm"]
    irs = extract_many([kernel])[0]
    assert wb.uses_tiles(kernel)  # known once built: tile types are inferred by the build
    separate = extract_many([kernel], share_build=False)[0]
    assert {d: dataclasses.asdict(ir) for d, ir in irs.items()} == \
        {d: dataclasses.asdict(ir) for d, ir in separate.items()}
    module_block_dim = wp.get_module_options(kernel.module)["block_dim"]
    assert irs["cpu"].metadata["options"]["block_dim"] == 1
    assert irs["cuda"].metadata["options"]["block_dim"] == module_block_dim
    unit = aot_source(kernel.module, "cuda", tmp_path)  # Warp's own CUDA build: module block_dim
    assert_contiguous(unit, irs["cuda"].forward, irs["cuda"].backward)
    assert f"#define WP_TILE_BLOCK_DIM {module_block_dim}\n" in unit
    # CPU: the code of a real CPU launch (block_dim 1), which also gives NumPy's answer
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 8), dtype=np.float32), rng.random((8, 16), dtype=np.float32)
    c = wp.zeros((16, 16), dtype=float, device="cpu")
    wp.launch_tiled(kernel, dim=[2, 2], inputs=[wp.array(a, device="cpu"), wp.array(b, device="cpu"), c],
                    device="cpu", block_dim=1)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)
    cpu_unit = launched_cpu_source(kernel.module)
    assert "#define WP_TILE_BLOCK_DIM 1\n" in cpu_unit
    assert_contiguous(cpu_unit, irs["cpu"].args_struct, irs["cpu"].forward, irs["cpu"].backward)


STATIC_SOURCE = """
import warp as wp


@wp.kernel
def scaled(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * wp.static(FACTOR * 2.0)


FACTOR = 1.5
"""


def test_deferred_static_expression_gets_warps_mangled_name(define, tmp_path):
    """wp.static() of a name defined later is evaluated before Warp hashes the module; the
    kernel's hash (in every symbol name) must come out as in Warp's own build."""
    kernel = define(STATIC_SOURCE)["scaled"]
    irs = extract_many([kernel])[0]
    unit = aot_source(kernel.module, "cuda", tmp_path)
    assert f"{irs['cuda'].mangled_name}_cuda_kernel_forward" in unit
    assert_contiguous(unit, irs["cuda"].forward, irs["cuda"].backward)
    assert "3.0" in irs["cpu"].forward  # FACTOR * 2.0, evaluated at build time


def test_shared_build_is_byte_identical_to_per_device_builds():
    """Sharing one build between CPU and CUDA must not change a byte, over real kernels."""
    from jit.code.harvest import modules as discover

    names = ["warp.examples.core.example_fluid", "warp.examples.core.example_sph",
             "warp.examples.core.example_wave", "warp.examples.core.example_dem",
             "warp.examples.core.example_fdtd_3d", "warp.examples.optim.example_navier_stokes_perturbation",
             "warp.examples.geometry.example_isosurface", "warp.examples.tile.example_tile_matmul",
             "warp.examples.tile.example_tile_nbody"]
    compared = 0
    for name in names:
        module, _ = discover.import_source(discover.Source(name))
        kernels = discover.module_kernels(module)
        shared = extract_many(kernels, share_build=True)
        alone = extract_many(kernels, share_build=False)
        for a, b in zip(shared, alone, strict=True):
            for device in ("cpu", "cuda"):
                assert dataclasses.asdict(a[device]) == dataclasses.asdict(b[device]), (name, device)
                compared += 1
    assert compared >= 40


def test_no_registry_or_linecache_growth():
    template = "import warp as wp\n\n@wp.kernel\ndef k{i}(a: wp.array(dtype=float)):\n    a[wp.tid()] = float({i})\n"

    def cycle(i):
        handle, names = wb.define_one(template.format(i=i), f"jit_growth_{i}")
        extract_many([names[f"k{i}"]])
        handle.release()

    cycle(1000)  # warm-up: Warp's own lazily created entries
    modules, lines = len(wb.user_modules()), len(linecache.cache)
    for i in range(300):
        cycle(i)
    assert len(wb.user_modules()) == modules
    assert len(linecache.cache) == lines


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_extracted_code_compiles_offline(sample, device, tmp_path):
    handle, names = sample
    kernels = [names["square_plus"], names["no_grad"], names["with_struct"]]
    irs = [extract_ir(k, device) for k in kernels]
    options = wb.resolve_options(handle.module, device)
    warp_unit = wb.Build(handle.module, kernels, options, device).module_source(device)
    unit = _first_piece_prelude(warp_unit, irs) + "\n".join(ir.code() for ir in irs)
    if device == "cpu":
        unit += "\n".join(wb.kernel_entry_code(k, "cpu", options) for k in kernels)
    out = str(tmp_path / "unit")
    if device == "cuda":
        if not wb.nvrtc_available():
            pytest.skip("NVRTC not available in this Warp build")
        wb.compile_source(unit, "cuda", out + ".ptx", options)
        ptx = (tmp_path / "unit.ptx").read_bytes().rstrip(b"\0").decode()
        for ir in irs:
            assert f".entry {ir.mangled_name}_cuda_kernel_forward" in ptx
    else:
        wb.compile_source(unit, "cpu", out + ".o", options)
        assert (tmp_path / "unit.o").stat().st_size > 0


def _first_piece_prelude(warp_unit: str, irs: list[KernelIR]) -> str:
    """Warp's headers and macros: everything before the first generated struct, function or kernel."""
    starts = []
    for ir in irs:
        for piece in [t for _, t in ir.structs] + [f.forward for f in ir.functions] + [ir.args_struct or ir.forward]:
            starts.append(warp_unit.index(piece.strip("\n")))
    return warp_unit[:min(starts)]


@pytest.mark.cuda
def test_cuda_and_cpu_launches_agree_with_numpy(sample):
    kernel = sample[1]["square_plus"]
    x = np.linspace(-2.0, 2.0, 1000, dtype=np.float32)
    expected = (x * x + 1.0) - 0.5
    for device in ("cpu", "cuda:0"):
        a = wp.array(x, dtype=float, device=device)
        b = wp.zeros_like(a)
        wp.launch(kernel, dim=len(x), inputs=[a, b], device=device)
        np.testing.assert_allclose(b.numpy(), expected, rtol=1e-6)
