"""``jit-synth bench build``: real kernels kept when they run with recorded io, by tier, with a card.

A handful of tiny kernels in one file stand in for real code: their recorded outputs are checked
against NumPy, their tiers against the features they were written with, and an exclusion set
with a planted renamed copy must drop exactly that kernel.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from jit.code.commands import bench as bench_command
from jit.code.engine import writers
from jit.code.evaluation import bench, tiers
from jit.code.records import content_id

KERNELS = '''\
import warp as wp


@wp.kernel
def double_values(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    """Double every value."""
    i = wp.tid()
    b[i] = 2.0 * a[i]


@wp.struct
class Spring:
    k: float
    rest: float


@wp.func
def stretch(x: float, s: Spring):
    return s.k * (x - s.rest)


@wp.kernel
def spring_forces(x: wp.array(dtype=float), s: Spring, f: wp.array(dtype=float)):
    i = wp.tid()
    f[i] = stretch(x[i], s) + stretch(x[i] * 0.5, s)


@wp.func
def weight(x: float):
    return 1.0 / (1.0 + x * x)


@wp.kernel
def windowed_sums(x: wp.array(dtype=float), width: int, out: wp.array(dtype=float)):
    i = wp.tid()
    total = float(0.0)
    for j in range(width):
        for m in range(2):
            total += weight(x[i]) * float(j + m)
        if total > 100.0:
            total = 100.0
    acc = float(0.0)
    k = int(0)
    while k < width:
        acc += x[i] * float(k)
        k += 1
    out[i] = total + acc


@wp.kernel
def nearest_points(mesh: wp.uint64, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_point(mesh, points[i], 1.0e6)
    out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    (root / "kernels.py").write_text(KERNELS)
    out = root / "bench"
    status = bench_command.main(["build", str(root / "kernels.py"), "--output", str(out), "-q"])
    assert status == 0
    info, records = bench.read(str(out))
    return root, out, info, {r["kernel_name"]: r for r in records.values()}


def test_kernels_that_run_are_kept_with_io_that_numpy_confirms(built):
    _, _, info, records = built
    assert sorted(records) == ["double_values", "spring_forces", "windowed_sums"]  # the mesh query needs a mesh
    assert info["rejects"] == {"no launch: needs a wp.Mesh": 1}
    io = records["double_values"]["io"]
    a = np.asarray(io["inputs"]["a"]["data"], np.float32)
    np.testing.assert_array_equal(np.asarray(io["outputs"]["b"]["data"], np.float32), 2.0 * a)
    io = records["spring_forces"]["io"]
    x = np.asarray(io["inputs"]["x"]["data"], np.float32)
    k, rest = (np.float32(io["inputs"]["s"]["data"][n]) for n in ("k", "rest"))
    np.testing.assert_allclose(io["outputs"]["f"]["data"], k * (x - rest) + k * (x * 0.5 - rest), rtol=1e-6)
    assert all(r["id"] == content_id(r["python_source"]) for r in records.values())
    assert records["double_values"]["validation"]["gradient"] == "passed"


def test_tiers_follow_size_and_constructs(built):
    _, _, info, records = built
    assert {n: r["metadata"]["bench"]["tier"] for n, r in records.items()} == {
        "double_values": "easy", "spring_forces": "medium", "windowed_sums": "hard"}
    feats = records["windowed_sums"]["metadata"]["bench"]["features"]
    assert feats == {"lines": 19, "loops": 3, "structs": 0, "helpers": 1, "tiles": 0, "queries": 0}
    assert info["tiers"] == {"easy": 1, "medium": 1, "hard": 1}


def test_features_count_what_the_text_holds():
    source = KERNELS.split("@wp.kernel\ndef nearest_points")[0]
    assert tiers.code_lines('import warp as wp\n\n# note\ndef f():\n    """doc\n    more"""\n    return 1\n') == 3
    feats = tiers.features(KERNELS)
    assert (feats["structs"], feats["helpers"], feats["loops"], feats["queries"]) == (1, 2, 3, 2)
    assert tiers.features(source)["queries"] == 0


def test_the_card_lists_tiers_and_tasks(built):
    _, out, info, records = built
    card = (out / "README.md").read_text()
    assert "3 real Warp kernels (1 easy, 1 medium, 1 hard)" in card
    assert "| py2cpp | 1 | 1 | 1 | 3 |" in card and "| purpose2py | 1 | 0 | 0 | 1 |" in card
    assert "| py2ptx | 0 | 0 | 0 | 0 |" in card  # no --emit-ptx
    assert info["tasks"]["cuda2py"] == {"easy": 1, "medium": 1, "hard": 1}
    assert json.loads((out / "bench.json").read_text())["count"] == 3


def test_a_dataset_folder_gives_the_same_benchmark(built, tmp_path):
    from jit.code.commands import extract

    root, out, _, records = built
    assert extract.main([str(root / "kernels.py"), "--output", str(tmp_path / "ds"), "--workers", "1", "-q"]) == 0
    assert bench_command.main(["build", str(tmp_path / "ds"), "--output", str(tmp_path / "again"), "-q"]) == 0
    _, again = bench.read(str(tmp_path / "again"))
    assert {r["kernel_name"]: (r["id"], r["io"]) for r in again.values()} == \
        {n: (r["id"], r["io"]) for n, r in records.items()}


def test_exclude_drops_exactly_the_planted_copy(built, tmp_path):
    _, _, _, records = built
    train = tmp_path / "train"
    train.mkdir()
    planted = records["spring_forces"]["python_source"].replace("spring_forces", "forces_of_springs")
    (train / "copy.py").write_text(planted.replace("stretch", "extension"))
    (train / "other.py").write_text("import warp as wp\n\n@wp.kernel\ndef other(a: wp.array(dtype=int)):\n"
                                    "    a[wp.tid()] = 7\n")
    info = bench.build(list(records.values()), str(tmp_path / "b"), excludes=[str(train)])
    _, kept = bench.read(str(tmp_path / "b"))
    assert sorted(r["kernel_name"] for r in kept.values()) == ["double_values", "windowed_sums"]
    assert info["excluded"] == {str(train): 1}


def test_usage_errors_are_one_line_and_write_nothing(tmp_path, capsys):
    assert bench_command.main(["build", "no_such_module_here", "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "SOURCE" in err
    assert not (tmp_path / "x").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    assert bench_command.main(["build", "--output", str(tmp_path / "full")]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert os.listdir(tmp_path / "full") == ["keep.txt"]
    assert bench_command.main(["build", "--output", str(tmp_path / "y"), "--exclude", str(tmp_path / "nothing")]) == 2
    assert not writers.data_files(str(tmp_path / "y"))


def test_two_workers_build_the_same_benchmark(tmp_path):
    source = tmp_path / "kernels"
    source.mkdir()
    head, tail = KERNELS.split("@wp.struct")
    (source / "first.py").write_text(head)
    (source / "second.py").write_text("import warp as wp\n\n\n@wp.struct" + tail.split("@wp.func\ndef weight")[0])
    built = {}
    for workers in ("1", "2"):
        out = tmp_path / f"bench-{workers}"
        assert bench_command.main(["build", str(source), "--output", str(out), "--workers", workers, "-q"]) == 0
        info = json.loads((out / "bench.json").read_text())
        info.pop("seconds")
        built[workers] = ([(out / f).read_bytes() for f in writers.data_files(str(out))], info)
    assert built["1"] == built["2"]
    assert built["1"][1]["count"] == 2
