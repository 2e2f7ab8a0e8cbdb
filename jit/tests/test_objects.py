"""Runtime objects built from recipes: the geometry is what it claims, and a query kernel whose
launch describes its object runs, records io and replays it bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from jit.code.checks import objects
from jit.code.checks.execute import make_io, replay_one
from jit.code.checks.launch import NotRunnable, plan_from_metadata, random_values, run_outputs

wp.init()


def test_sphere_is_closed_and_wound_outwards():
    points, tris = objects.sphere(1.5)
    assert np.allclose(np.linalg.norm(points, axis=1), 1.5, atol=1e-5)
    edges = {}
    for t in tris:
        for a, b in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0])):
            edges[(a, b)] = edges.get((a, b), 0) + 1
    # closed and consistently wound: every directed edge once, its reverse once
    assert all(n == 1 and edges.get((b, a)) == 1 for (a, b), n in edges.items())
    p0, p1, p2 = (points[tris[:, k]].astype(np.float64) for k in range(3))
    volume = np.sum(np.einsum("ij,ij->i", p0, np.cross(p1, p2))) / 6.0
    assert volume > 0.0  # outward normals enclose a positive volume
    assert volume == pytest.approx(4.0 / 3.0 * np.pi * 1.5**3, rel=0.2)


def test_boxes_are_disjoint_and_inside_the_domain():
    lowers, uppers = objects.boxes(20)
    assert lowers.shape == (20, 3) and np.all(uppers > lowers)
    assert lowers.min() >= -2.0 and uppers.max() <= 2.0
    centers = (lowers + uppers) / 2
    assert len({tuple(c) for c in centers.round(5)}) == 20


def test_recipes_are_checked_against_the_arguments():
    assert objects.problem({"object": "hash_grid", "points": "x", "cell_size": 0.5}, {"x": {}}) is None
    assert "points" in objects.problem({"object": "hash_grid", "points": "y", "cell_size": 0.5}, {"x": {}})
    assert objects.problem({"object": "volume"}, {})


@wp.kernel
def _neighbor_counts(grid: wp.uint64, x: wp.array(dtype=wp.vec3), radius: float, counts: wp.array(dtype=int)):
    tid = wp.tid()
    xi = x[tid]
    n = int(0)
    for j in wp.hash_grid_query(grid, xi, radius):
        if j != tid and wp.length(x[j] - xi) <= radius:
            n += 1
    counts[tid] = n


@wp.kernel
def _signed_distance(mesh: wp.uint64, x: wp.array(dtype=wp.vec3), d: wp.array(dtype=float)):
    tid = wp.tid()
    q = wp.mesh_query_point(mesh, x[tid], 10.0)
    if q.result:
        cp = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        d[tid] = wp.length(x[tid] - cp) * q.sign


@wp.kernel
def _box_hits(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), n: wp.array(dtype=int)):
    tid = wp.tid()
    query = wp.bvh_query_aabb(bvh, lo[tid], hi[tid])
    index = int(0)
    count = int(0)
    while wp.bvh_query_next(query, index):
        count += 1
    n[tid] = count


def _launch(args, dim=(48,)):
    return {"launch": {"dim": list(dim), "args": args, "runnable": True}}


def test_hash_grid_query_matches_brute_force_and_replays():
    meta = _launch([
        {"name": "grid", "kind": "handle", "build": {"object": "hash_grid", "points": "x", "cell_size": 0.6}},
        {"name": "x", "kind": "array", "role": "in", "shape": [48], "range": [-1.0, 1.0]},
        {"name": "radius", "kind": "scalar", "role": "in", "range": [0.6, 0.6]},
        {"name": "counts", "kind": "array", "role": "out", "shape": [48]},
    ])
    plan = plan_from_metadata(_neighbor_counts, meta)
    values = random_values(plan, np.random.default_rng(3))
    got = run_outputs(_neighbor_counts, plan, values)["counts"]
    x = values["x"].astype(np.float64)
    dist = np.linalg.norm(x[:, None] - x[None], axis=-1)
    want = (dist <= np.float32(0.6)).sum(1) - 1
    assert np.abs(got - want).max() <= 1 and np.count_nonzero(got != want) <= 2  # float32 ties only
    io = make_io(plan, values, {"counts": got})
    assert io["inputs"]["grid"] == {"dtype": "uint64", "build": {"object": "hash_grid", "points": "x",
                                                                  "cell_size": 0.6}}
    assert replay_one(_neighbor_counts, io) is None


def test_mesh_signed_distance_is_the_sphere_distance():
    meta = _launch([
        {"name": "mesh", "kind": "handle", "build": {"object": "mesh", "radius": 1.0}},
        {"name": "x", "kind": "array", "role": "in", "shape": [48], "range": [-2.0, 2.0]},
        {"name": "d", "kind": "array", "role": "out", "shape": [48]},
    ])
    plan = plan_from_metadata(_signed_distance, meta)
    values = random_values(plan, np.random.default_rng(4))
    got = run_outputs(_signed_distance, plan, values)["d"]
    want = np.linalg.norm(values["x"], axis=1) - 1.0  # negative inside: the sphere is wound outwards
    assert np.all(np.sign(got) == np.sign(want)) and np.allclose(got, want, atol=0.12)


def test_bvh_counts_match_box_overlaps():
    meta = _launch([
        {"name": "bvh", "kind": "handle", "build": {"object": "bvh", "count": 27}},
        {"name": "lo", "kind": "array", "role": "in", "shape": [48], "range": [-2.0, 0.0]},
        {"name": "hi", "kind": "array", "role": "in", "shape": [48], "range": [0.0, 2.0]},
        {"name": "n", "kind": "array", "role": "out", "shape": [48]},
    ])
    plan = plan_from_metadata(_box_hits, meta)
    values = random_values(plan, np.random.default_rng(5))
    got = run_outputs(_box_hits, plan, values)["n"]
    lowers, uppers = objects.boxes(27)
    lo, hi = values["lo"], values["hi"]
    want = np.all((lo[:, None] <= uppers[None]) & (hi[:, None] >= lowers[None]), axis=-1).sum(1)
    assert np.array_equal(got, want)


def test_a_handle_without_a_recipe_is_not_runnable():
    meta = _launch([{"name": "bvh", "kind": "handle"}, {"name": "lo", "kind": "array"},
                    {"name": "hi", "kind": "array"}, {"name": "n", "kind": "array", "role": "out"}])
    with pytest.raises(NotRunnable, match="runtime object handle"):
        plan_from_metadata(_box_hits, meta)
