"""The kernel generator: interface, replayability, self-contained sources, builds per category."""

from __future__ import annotations

import ast
import json

import pytest

from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import extract_many
from jit.code.synthesis import expr as E
from jit.code.synthesis.batch_generator import launch_block_dim
from jit.code.synthesis.generator import CATEGORIES, KernelSpec, called_builtins, generate

BASE = ("arithmetic", "math", "vector", "matrix", "control_flow", "atomic")


def test_registry_has_the_required_categories():
    assert len(CATEGORIES) >= 12
    for name in (*BASE, "function", "struct", "quaternion", "random", "multidim", "reduction", "tile", "geometry"):
        assert name in CATEGORIES
        assert CATEGORIES[name].weight > 0


def test_same_seed_and_index_give_the_same_kernel_in_any_order():
    forward = [generate(7, i) for i in range(12)]
    backward = [generate(7, i) for i in reversed(range(12))][::-1]
    assert [s.source for s in forward] == [s.source for s in backward]
    assert [s.metadata for s in forward] == [s.metadata for s in backward]
    assert generate(7, 3).source != generate(8, 3).source
    assert generate(7, 3, attempt=1).source != generate(7, 3).source


def test_spec_fields_and_metadata_are_json():
    spec = generate(0, 5, categories=["vector"], complexity="small")
    assert isinstance(spec, KernelSpec)
    assert (spec.category, spec.seed, spec.index, spec.attempt) == ("vector", 0, 5, 0)
    assert spec.name.startswith("vector_") and spec.name in spec.source
    json.dumps(spec.metadata)
    meta = spec.metadata
    assert meta["seed"] == 0 and meta["index"] == 5
    assert meta["lines"] == spec.source.count("\n")
    assert meta["builtins"] == called_builtins(spec.source)
    launch = meta["launch"]
    assert 1 <= len(launch["dim"]) <= 3 and launch["runnable"] is True
    for arg in launch["args"]:
        assert arg["kind"] in ("array", "scalar", "struct", "handle") and arg["role"] in ("in", "out", "inout")


def test_unknown_category_names_the_valid_ones():
    with pytest.raises(ValueError, match="arithmetic"):
        generate(0, 0, categories=["nope"])
    with pytest.raises(ValueError):
        generate(0, 0, complexity="huge")


def test_categories_restrict_the_choice():
    chosen = {generate(1, i, categories=["math", "tile"]).category for i in range(20)}
    assert chosen == {"math", "tile"}


@pytest.mark.parametrize("source,ratio", [("random", 1.5), ("realistic", 1.2)])
def test_complexity_spans_sizes(source, ratio):
    small = sum(generate(2, i, complexity="small", sources=[source]).metadata["lines"] for i in range(30))
    large = sum(generate(2, i, complexity="large", sources=[source]).metadata["lines"] for i in range(30))
    assert large > ratio * small
    assert generate(2, 0, complexity=30, sources=["random"]).metadata["statements"] == 30


def _top_level_names(source: str) -> list[str]:
    return [n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def test_module_level_names_carry_the_item_hash_and_no_parameter_is_unused():
    for i in range(40):
        spec = generate(3, i)
        suffix = spec.name.rsplit("_", 1)[1]
        assert spec.source.startswith("import warp as wp\n")
        for name in _top_level_names(spec.source):
            assert name.endswith(suffix), name
        kernel = [n for n in ast.parse(spec.source).body if isinstance(n, ast.FunctionDef)][-1]
        used = {n.id for stmt in kernel.body for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        for arg in kernel.args.args:
            assert arg.arg in used, (spec.name, arg.arg)


def test_builtin_table_comes_from_warps_registry():
    table = E.signatures()
    names = {s.name for sigs in table.values() for s in sigs}
    assert {"sin", "cross", "determinant", "quat_rotate", "transform_point", "spatial_dot"} <= names
    assert len(names) >= 90
    known = set(wb.builtin_names())
    assert names <= known


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_every_category_builds_for_cpu_and_cuda(category):
    specs = [generate(11, i, categories=[category], complexity=cx) for i, cx in enumerate(("small", "medium", "large"))]
    irs = build_per_block_dim(specs, f"test_gen_build_{category}")
    assert len(irs) == 3
    for ir in irs:
        assert ir["cpu"].forward and ir["cuda"].forward


def build_per_block_dim(specs, module_name: str) -> list:
    """Extract specs for both devices, those launched with a block_dim of their own (tile kernels)
    in a module of that block_dim, the rest together, as the pipeline builds them."""
    groups: dict = {}
    for spec in specs:
        groups.setdefault(launch_block_dim(spec), []).append(spec)
    irs = []
    for n, (block_dim, group) in enumerate(groups.items()):
        handle = wb.define([s.source for s in group], f"{module_name}_{n}")
        try:
            kernels = handle.kernels()
            assert sorted(kernels) == sorted(s.name for s in group)
            irs += extract_many([kernels[s.name] for s in group], ("cpu", "cuda"), block_dim=block_dim)
        finally:
            handle.release()
    return irs


def test_sources_share_one_module():
    specs = [generate(12, i) for i in range(30)]
    assert len(build_per_block_dim(specs, "test_gen_shared")) == 30


def test_geometry_kernels_keep_to_one_shared_query_stack():
    """Mesh and BVH overlap queries each take 32 KB of CUDA shared memory: never both in a kernel."""
    both = 0
    for i in range(300):
        src = generate(5, i, categories=["geometry"]).source
        mesh = "wp.mesh_query_aabb(" in src or "wp.mesh_query_sphere(" in src
        bvh = "wp.bvh_query_" in src
        both += mesh and bvh
    assert both == 0


def test_names_come_from_the_vocabulary_unique_and_without_digits():
    import re
    import random as _random

    from jit.code.synthesis.names import Namer

    namer = Namer(_random.Random(0), {"tid"})
    taken = [namer.local("vec3f", "normalize") for _ in range(40)] + [namer.array("float32", "in") for _ in range(20)]
    assert len(set(taken)) == len(taken) and "tid" not in taken
    assert not any(re.search(r"\d$", n) for n in taken)
    assert taken[0] in ("n", "normal", "dir")  # a normalize() result is named as a direction


def test_realistic_kernels_use_no_generator_style_identifiers_and_no_constant_tests():
    import re

    generator_style = re.compile(r"^[A-Za-z]+[0-9]+$")
    for i in range(60):
        spec = generate(4, i, sources=["realistic"])
        assert spec.metadata["source"] == "realistic"
        tree = ast.parse(spec.source)
        kernel = [n for n in tree.body if isinstance(n, ast.FunctionDef)][-1]
        names = {n.id for n in ast.walk(kernel) if isinstance(n, ast.Name)} | {a.arg for a in kernel.args.args}
        assert not [n for n in names if generator_style.match(n)], spec.source
        for node in ast.walk(kernel):
            if isinstance(node, (ast.If, ast.While, ast.IfExp)):
                assert any(isinstance(m, ast.Name) and m.id != "wp" for m in ast.walk(node.test)), spec.source


def test_synthesized_kernels_are_not_left_as_bare_copies():
    from jit.code.synthesis.generator import too_small

    assert too_small("import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=float), b: wp.array(dtype=float)):\n"
                     "    i = wp.tid()\n    b[i] = a[i]\n")
    specs = [generate(5, i, sources=["random", "realistic"]) for i in range(150)]
    small = [s.name for s in specs if too_small(s.source)]
    assert len(small) <= 2, small  # a redraw can still come out small, rarely


def test_subscript_array_spelling_builds_the_same_kernel():
    """``wp.array[T]`` is the same annotation as ``wp.array(dtype=T)``: Warp reads the same argument types."""
    import warp as wp

    from jit.code.extraction import warp_backend as wb
    from jit.code.synthesis.layout import subscript_arrays

    specs = [generate(23, i, complexity="small") for i in range(24)]
    plain = [s for s in specs if "wp.array(dtype=" in s.source][:6]
    assert plain
    for n, spec in enumerate(plain):
        spelled = subscript_arrays(spec.source)
        assert "wp.array(dtype=" not in spelled or "(dtype=wp.types" in spelled
        types = []
        for k, text in enumerate((spec.source, spelled)):
            handle = wb.define([text], f"jit_synth_test_subscript_{n}_{k}")
            try:
                kernel = handle.namespace[spec.name]
                types.append({a: (getattr(t, "dtype", t), getattr(t, "ndim", 0), wp.types.is_array(t))
                              for a, t in kernel.adj.arg_types.items()})
            finally:
                handle.release()
        assert types[0] == types[1], spec.name
    share = sum("wp.array[" in s.source or "wp.array2d[" in s.source for s in specs if s.metadata["source"] != "mutants")
    assert 0 < share < len(specs)  # both spellings occur
