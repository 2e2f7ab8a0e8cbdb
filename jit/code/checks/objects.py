"""Runtime objects a kernel queries through a ``wp.uint64`` handle, built from a small recipe.

A generator that writes a query kernel says how its object is made, and the recipe travels in
the launch description and in the io example, so every run and replay builds the same object:

- ``{"object": "hash_grid", "points": <array argument>, "cell_size": h}``: a ``wp.HashGrid``
  over the kernel's own point array (queries read the points back by index);
- ``{"object": "mesh", "radius": r}``: a closed, outward-wound triangle sphere of radius ``r``
  around the origin, ``wp.Mesh`` with a rigid spin as vertex velocities;
- ``{"object": "bvh", "count": n}``: a ``wp.Bvh`` over ``n`` boxes on a lattice in [-2, 2]^3.

The geometry is a function of the recipe alone (no random draw), so io examples stay small.
What it leaves out: volumes (``wp.Volume`` needs a NanoVDB grid) and structs holding arrays.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

KINDS = ("hash_grid", "mesh", "bvh")
GRID_DIM = 16  # hash grid cells per axis (the grid wraps, so any extent works)
RINGS, SEGMENTS = 8, 12  # the sphere's latitude rings and longitude segments
BOX_HALF = 0.3  # half the side of a BVH lattice box
SPIN = (0.0, 0.0, 0.5)  # angular velocity of the mesh's vertex velocities


def problem(recipe: dict, args: dict) -> str | None:
    """Why ``recipe`` cannot be built for a kernel whose arguments are ``args``, or None."""
    kind = recipe.get("object")
    if kind not in KINDS:
        return f"no recipe for a runtime object {kind!r}"
    if kind == "hash_grid":
        points = recipe.get("points")
        if points not in args:
            return f"the hash grid's points {points!r} are not an argument"
        if not float(recipe.get("cell_size", 0.0)) > 0.0:
            return "the hash grid's cell size is not positive"
    if kind == "mesh" and not float(recipe.get("radius", 1.0)) > 0.0:
        return "the mesh's radius is not positive"
    if kind == "bvh" and not int(recipe.get("count", 0)) > 0:
        return "the BVH has no items"
    return None


def build(recipe: dict, bound: dict, device: str):
    """The object of ``recipe`` on ``device``; ``bound`` holds the launch's Warp arrays by name."""
    kind = recipe["object"]
    if kind == "hash_grid":
        grid = wp.HashGrid(GRID_DIM, GRID_DIM, GRID_DIM, device=device)
        grid.build(bound[recipe["points"]], float(recipe["cell_size"]))
        return grid
    if kind == "mesh":
        points, triangles = sphere(float(recipe.get("radius", 1.0)))
        velocities = np.cross(np.asarray(SPIN, np.float32), points).astype(np.float32)
        return wp.Mesh(points=wp.array(points, dtype=wp.vec3, device=device),
                       indices=wp.array(triangles.ravel(), dtype=wp.int32, device=device),
                       velocities=wp.array(velocities, dtype=wp.vec3, device=device))
    lowers, uppers = boxes(int(recipe["count"]))
    return wp.Bvh(wp.array(lowers, dtype=wp.vec3, device=device), wp.array(uppers, dtype=wp.vec3, device=device))


def sphere(radius: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (float32, n x 3) and triangles (int32, m x 3, counter-clockwise seen from outside)
    of a latitude-longitude sphere: two poles and ``RINGS - 1`` rings of ``SEGMENTS`` vertices."""
    points = [(0.0, 0.0, radius)]
    for ring in range(1, RINGS):
        theta = math.pi * ring / RINGS
        for seg in range(SEGMENTS):
            phi = 2.0 * math.pi * seg / SEGMENTS
            points.append((radius * math.sin(theta) * math.cos(phi), radius * math.sin(theta) * math.sin(phi),
                           radius * math.cos(theta)))
    points.append((0.0, 0.0, -radius))
    south = len(points) - 1

    def at(ring: int, seg: int) -> int:  # ring 1..RINGS-1
        return 1 + (ring - 1) * SEGMENTS + seg % SEGMENTS

    triangles = []
    for seg in range(SEGMENTS):
        triangles.append((0, at(1, seg), at(1, seg + 1)))
        for ring in range(1, RINGS - 1):
            a, b = at(ring, seg), at(ring, seg + 1)
            c, d = at(ring + 1, seg), at(ring + 1, seg + 1)
            triangles += [(a, c, d), (a, d, b)]
        triangles.append((south, at(RINGS - 1, seg + 1), at(RINGS - 1, seg)))
    return np.asarray(points, np.float32), np.asarray(triangles, np.int32)


def boxes(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners (float32, count x 3) of ``count`` boxes on a lattice in [-2, 2]^3."""
    side = max(1, math.ceil(count ** (1.0 / 3.0)))
    axis = np.linspace(-2.0 + BOX_HALF, 2.0 - BOX_HALF, side) if side > 1 else np.zeros(1)
    centers = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)[:count]
    return (centers - BOX_HALF).astype(np.float32), (centers + BOX_HALF).astype(np.float32)
