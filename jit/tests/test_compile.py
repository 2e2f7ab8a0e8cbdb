"""Offline compilation: the real compilers' verdict, bisection, PTX cutting, and `validate DIR`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from jit.code.extraction import warp_backend as wb
from jit.code.extraction.compile import SHARED_REASON, compile_batch, kernel_ptx, ptx_entries
from jit.code.extraction.ir_extractor import extract_many
from jit.code.synthesis import pipeline
from jit.code.commands import validate
from jit.code.engine import writers
from jit.code.synthesis.generator import generate

GOOD = """
import warp as wp

@wp.kernel
def good_{n}(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = wp.sin(a[i]) * {n}.0
"""

# Warp builds this (a native snippet is opaque to it); only the C++ compiler can reject it
BROKEN = """
import warp as wp

@wp.func_native("return x +* 2.0f;")
def broken_f(x: float) -> float: ...

@wp.kernel
def broken_k(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = broken_f(a[i])
"""


@pytest.fixture()
def batch():
    handle = wb.define([GOOD.format(n=n) for n in range(3)] + [BROKEN], "test_compile_batch")
    yield handle, [handle.namespace[f"good_{n}"] for n in range(3)] + [handle.namespace["broken_k"]]
    handle.release()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_bisection_drops_only_the_broken_kernel(batch, device):
    handle, kernels = batch
    verdict, _ = compile_batch(handle.module, kernels, device)
    assert {k for k, reason in verdict.items() if reason} == {"broken_k"}
    assert verdict["broken_k"].startswith(f"compile {device}")


QUERIES = """
import warp as wp

@wp.kernel
def both_stacks(mesh: wp.uint64, bvh: wp.uint64, out: wp.array(dtype=int)):
    i = wp.tid()
    p = wp.vec3f(float(i), 0.0, 0.0)
    q = wp.mesh_query_aabb(mesh, p - wp.vec3f(1.0), p + wp.vec3f(1.0))
    j = int(0)
    n = int(0)
    while wp.mesh_query_aabb_next(q, j):
        n += 1
    r = wp.bvh_query_ray(bvh, p, wp.vec3f(1.0, 0.0, 0.0))
    while wp.bvh_query_next(r, j):
        n += 1
    out[i] = n

@wp.kernel
def one_stack(bvh: wp.uint64, out: wp.array(dtype=int)):
    i = wp.tid()
    p = wp.vec3f(float(i), 0.0, 0.0)
    q = wp.bvh_query_aabb(bvh, p - wp.vec3f(1.0), p + wp.vec3f(1.0))
    j = int(0)
    n = int(0)
    while wp.bvh_query_next(q, j):
        n += 1
    r = wp.bvh_query_ray(bvh, p, wp.vec3f(1.0, 0.0, 0.0))
    while wp.bvh_query_next(r, j):
        n += 1
    out[i] = n
"""


def test_static_shared_memory_over_the_limit_is_refused_as_ptxas_does(tmp_path):
    """A mesh and a BVH overlap query each reserve a 32 KB shared stack (at block_dim 256):
    together they compile to PTX but ptxas refuses them, so validation must refuse them too."""
    handle = wb.define([QUERIES], "test_compile_shared")
    try:
        kernels = [handle.namespace["both_stacks"], handle.namespace["one_stack"]]
        verdict, _ = compile_batch(handle.module, kernels, "cuda")
        assert verdict["one_stack"] is None
        assert verdict["both_stacks"] == SHARED_REASON
        # the truth: ptxas (NVRTC to CUBIN) refuses one kernel and accepts the other, alone
        for kernel, loads in ((kernels[0], False), (kernels[1], True)):
            options = wb.resolve_options(handle.module, "cuda", None)
            source = wb.Build(handle.module, [kernel], options, "cuda").module_source("cuda")
            flags = dict(options, use_precompiled_headers=False)
            out = str(tmp_path / f"{kernel.key}.cubin")
            if loads:
                wb.compile_source(source, "cuda", out, flags)
                assert os.path.getsize(out) > 0
            else:
                with pytest.raises(Exception):
                    wb.compile_source(source, "cuda", out, flags)
    finally:
        handle.release()


def test_static_shared_bytes_follows_calls():
    ptx = """
.shared .align 4 .b8 big[40000];
.shared .align 8 .u64 word;
.extern .shared .align 16 .b8 dyn[];
.func (.param .b32 r) helper(.param .b32 a);
.func (.param .b32 r) helper(.param .b32 a)
{
    mov.u64 %rd1, big; // a comment with a } brace
}
.visible .entry uses_helper(.param .u64 p)
{
    { call.uni (retval0), helper, (param0); }
    st.shared.u64 [word], %rd2;
}
.visible .entry plain(.param .u64 p)
{
    st.shared.u64 [word], %rd2;
}
"""
    from jit.code.extraction.compile import static_shared_bytes

    assert static_shared_bytes(ptx) == {"uses_helper": 40008, "plain": 8}


def test_ptx_names_each_kernel(batch):
    handle, kernels = batch
    verdict, ptx = compile_batch(handle.module, kernels[:3], "cuda", want_ptx=True)
    assert not any(verdict.values())
    assert ptx.lstrip().startswith("//") and ".version" in ptx
    entries = ptx_entries(ptx)
    for k in kernels[:3]:
        text = kernel_ptx(ptx, k.get_mangled_name())
        assert f".entry {k.get_mangled_name()}_cuda_kernel_forward(" in text
        assert f".entry {k.get_mangled_name()}_cuda_kernel_backward(" in text
        assert text.count(".entry") == 2
    # each cut entry is balanced and ends with its closing brace
    for text in entries.values():
        code = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
        assert code.count("{") == code.count("}") and code.rstrip().endswith("}")


def test_shared_build_source_equals_per_device_builds():
    specs = [s for s in (generate(11, i) for i in range(24)) if not s.metadata["launch"].get("block_dim")]
    handle = wb.define([s.source for s in specs], "test_compile_shared", [f"{s.name}.py" for s in specs])
    try:
        kernels = [handle.namespace[s.name] for s in specs]
        builds: dict = {}
        extract_many(kernels, ("cpu", "cuda"), builds=builds)
        assert set(builds) == {"cpu", "cuda"}
        for device in ("cpu", "cuda"):
            options = wb.resolve_options(handle.module, device)
            fresh = wb.Build(handle.module, kernels, options, device).module_source(device)
            assert builds[device].module_source(device, options) == fresh
    finally:
        handle.release()


@pytest.fixture(scope="module")
def compiled_dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "ds"
    argv = ["--count", "6", "--output", str(out), "--seed", "2", "--workers", "1", "--validate", "compile",
            "--emit-ptx", "--categories", "arithmetic,vector,matrix", "-q"]
    assert pipeline.main(argv) == 0
    return out


def test_compile_validated_records(compiled_dataset):
    records = list(writers.read_dataset(str(compiled_dataset)))
    assert len(records) == 6
    for r in records:
        assert r["validation"] == {"cpu": "compiled", "cuda": "compiled"}
        mangled = r["cuda_forward"].split("void ", 1)[1].split("_cuda_kernel_forward", 1)[0]
        assert f".entry {mangled}_cuda_kernel_forward(" in r["cuda_ptx"]
    stats = json.loads((compiled_dataset / "stats.json").read_text())
    assert stats["validation"]["cpu=compiled"] == 6


def test_validate_passes_then_fails(compiled_dataset, tmp_path, capsys):
    assert validate.main([str(compiled_dataset)]) == 0
    # a kernel broken behind its id: python_source no longer compiles for CPU or CUDA
    bad = shutil.copytree(compiled_dataset, tmp_path / "broken")
    shard = writers.data_files(str(bad))[0]
    lines = open(shard).read().splitlines()
    record = json.loads(lines[0])
    record["python_source"] = record["python_source"].replace("i = wp.tid()", "i = wp.tid()\n    q = undefined_name", 1)
    from jit.code.records import content_id

    record["id"] = content_id(record["python_source"])
    lines[0] = json.dumps(record)
    open(shard, "w").write("\n".join(lines) + "\n")
    capsys.readouterr()
    assert validate.main([str(bad)]) == 1
    assert record["id"] in capsys.readouterr().out

    torn = shutil.copytree(compiled_dataset, tmp_path / "torn")
    shard = writers.data_files(str(torn))[0]
    text = open(shard).read()
    open(shard, "w").write(text[: len(text) - 40])
    assert validate.main([str(torn), "--no-compile"]) == 1
    assert "torn or unparseable line" in capsys.readouterr().out


def test_validate_bad_input(tmp_path):
    assert validate.main([str(tmp_path / "missing")]) == 2
    assert validate.main([str(tmp_path)]) == 2
    assert os.listdir(tmp_path) == []


def test_workers_leave_no_compiler_caches_behind(tmp_path):
    """Precompiled headers of pool workers (which end with os._exit) are removed by the run."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "ds"
    env = dict(os.environ, TMPDIR=str(scratch))
    cmd = [sys.executable, "-m", "jit.code.synthesis.pipeline", "--count", "4", "--shard-size", "2", "--workers", "2",
           "--validate", "compile", "--categories", "arithmetic", "--output", str(out), "-q"]
    subprocess.run(cmd, env=env, check=True, timeout=600)
    assert len(list(writers.read_dataset(str(out)))) == 4
    left = [n for n in os.listdir(scratch) if "pch" in n]
    assert left == [], left


def test_sweep_removes_folders_of_ended_processes(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    host = wb._host()
    dead = 4_194_000  # a pid no process has (checked below)
    while wb._alive(dead):
        dead += 1
    stale = tmp_path / f"{wb.PCH_PREFIX}{host}-{dead}-x"
    mine = tmp_path / f"{wb.PCH_PREFIX}{host}-{os.getpid()}-y"
    other_host = tmp_path / f"{wb.PCH_PREFIX}elsewhere-{dead}-z"
    for d in (stale, mine, other_host):
        d.mkdir()
        (d / "a.pch").write_bytes(b"x")
    assert wb.sweep_pch_folders() == 1
    assert not stale.exists() and mine.exists() and other_host.exists()
