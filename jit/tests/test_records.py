"""One record builder: the same kernel through generate, extract and trace gives the same code fields."""

from __future__ import annotations

import re
import subprocess
import sys

from jit.code.engine import writers
from jit.code.engine.plan import RunSpec
from jit.code.synthesis.batch_generator import build_batch, make_record
from jit.code.synthesis.generator import KernelSpec

SPRINGS = '''import warp as wp


@wp.struct
class Spring:
    rest: float
    stiffness: float


@wp.func
def spring_force(x_i: wp.vec3, x_j: wp.vec3, s: Spring) -> wp.vec3:
    d = x_j - x_i
    length = wp.length(d)
    return s.stiffness * (length - s.rest) * d / wp.max(length, 1.0e-6)


@wp.kernel
def accumulate_springs(
    x: wp.array(dtype=wp.vec3), edges: wp.array(dtype=wp.vec2i), springs: wp.array(dtype=Spring),
    f: wp.array(dtype=wp.vec3),
):
    e = wp.tid()
    force = spring_force(x[edges[e][0]], x[edges[e][1]], springs[e])
    wp.atomic_add(f, edges[e][0], force)
    wp.atomic_sub(f, edges[e][1], force)
'''
CODE = ("cpu_forward", "cpu_backward", "cpu_functions", "cuda_forward", "cuda_backward", "cuda_functions")
FILE_COMMENT = re.compile(r"^// \S+\.py:\d+$", re.M)  # Warp names the file a helper came from


def code(record: dict) -> dict:
    return {k: FILE_COMMENT.sub("// FILE", record[k]) for k in CODE}


def test_generate_extract_and_trace_spell_the_code_fields_alike(tmp_path):
    spec = KernelSpec("accumulate_springs", "test", SPRINGS, 0, 0, 0, {})
    items, rejected, handle, _ = build_batch([spec], ("cpu", "cuda"), True, "jit_test_one_builder")
    try:
        generated = make_record(spec, items[0][2], RunSpec(out=str(tmp_path))).to_dict()
    finally:
        handle.release()
    (tmp_path / "springs.py").write_text(SPRINGS)
    (tmp_path / "prog.py").write_text("import warp as wp\nimport springs\n\nwp.load_module(springs, device='cpu')\n")
    cli = [sys.executable, "-m", "jit.cli"]
    subprocess.run([*cli, "extract", str(tmp_path / "springs.py"), "-o", str(tmp_path / "ex"), "--validate", "none",
                    "--workers", "1", "-q"], check=True, cwd=tmp_path, timeout=300)
    subprocess.run([*cli, "trace", "-o", str(tmp_path / "tr"), "--validate", "none", "-q", "--", sys.executable,
                    "prog.py"], check=True, cwd=tmp_path, timeout=300)
    (extracted,) = writers.read_dataset(str(tmp_path / "ex"))
    (traced,) = writers.read_dataset(str(tmp_path / "tr"))
    assert not rejected and generated["cpu_functions"].count("spring_force") >= 2  # helper and its adjoint
    assert code(generated) == code(extracted) == code(traced)
