"""MathDx LTO code of tile kernels is compiled in a child process, and the generated CUDA is the same.

A kernel with a tile_matmul and a tile_fft, built with an empty LTO cache: once as the package does it
(each native compile made by a child process, never by this one), once in this process as Warp
does it. A GEMM and an FFT compile each time, 20-40 s on two cores; skipped without NVRTC or MathDx.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import warp as wp

from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import extract_many

SOURCE = '''import warp as wp

wp.set_module_options({"enable_backward": False})  # no adjoint GEMMs to compile

TILE = wp.constant(8)

@wp.kernel
def lto_kernel(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float),
               x: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f)):
    i, j = wp.tid()
    ta = wp.tile_load(a, shape=(TILE, TILE))
    tb = wp.tile_load(b, shape=(TILE, TILE))
    wp.tile_store(c, wp.tile_matmul(ta, tb))
    tx = wp.tile_load(x, shape=(2, 64))
    wp.tile_fft(tx)
    wp.tile_store(y, tx)
'''

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (wb.nvrtc_available() and wb.mathdx_available()), reason="needs Warp's NVRTC and MathDx"),
    pytest.mark.skipif(os.environ.get(wb.LTO_IN_PROCESS_ENV) == "1", reason="LTO compiles in a child switched off"),
]


class Spy:
    """Stands in for Warp's native LTO compile functions in this process and counts the calls."""

    def __init__(self):
        self.calls: list[tuple[str, int]] = []

    def __enter__(self):
        self.saved = dict(wb._lto_native)
        for name, native in self.saved.items():
            wb._lto_native[name] = self.wrap(name, native)
        return self

    def wrap(self, name, native):
        def call(*args):
            self.calls.append((name, os.getpid()))
            return native(*args)
        return call

    def __exit__(self, *exc):
        wb._lto_native.update(self.saved)


def extract(cache_dir) -> dict:
    saved = wp.config.kernel_cache_dir
    wp.config.kernel_cache_dir = str(cache_dir)  # Warp's LTO cache is its "lto" folder
    handle, names = wb.define_one(SOURCE, "jit_lto_child")  # the module name is in the metadata
    try:
        irs = extract_many([names["lto_kernel"]], devices=("cuda",), backward=False, block_dim=32)[0]
    finally:
        handle.release()
        wp.config.kernel_cache_dir = saved
    return dataclasses.asdict(irs["cuda"])


def lto_files(cache_dir) -> dict[str, bytes]:
    """Name -> content of the files in Warp's LTO cache (the shared-memory .meta files compared by content)."""
    folder = cache_dir / "lto"
    files = sorted(folder.iterdir()) if folder.is_dir() else []
    return {p.name: p.read_bytes() if p.suffix == ".meta" else b"" for p in files}


def test_lto_compiled_in_a_child_gives_the_same_cuda(tmp_path):
    child, here = tmp_path / "child", tmp_path / "here"
    with Spy() as spy:
        in_child = extract(child)
    assert spy.calls == [], "an LTO compile ran in this process"
    # GEMM code, and FFT code with the .meta file holding its shared memory size
    written = lto_files(child)
    kinds = [os.path.splitext(name)[1] for name in written]
    assert ".lto" in kinds and ".meta" in kinds, written
    with Spy() as spy, wb.lto_compiled_in_process():
        in_process = extract(here)
    assert {name for name, _ in spy.calls} == {"wp_cuda_compile_dot", "wp_cuda_compile_fft"}
    assert len(spy.calls) == kinds.count(".lto")
    assert {pid for _, pid in spy.calls} == {os.getpid()}
    assert lto_files(here) == written
    assert in_child == in_process
    assert "dot_" in in_child["forward"] and "fft_" in in_child["forward"]
