"""Pieces with a purpose: small, tested computations that kernels are composed from.

``PIECES`` maps a name to a ``Piece`` (what it needs and gives, by role, and what it says),
one module per domain (integrators, forces, collisions, stencils, sampling, advection,
transforms, linalg, elasticity, sph, reductions, rays, emission); ``roles`` names what values
mean and the ranges random inputs of them take. ``Draft`` (``draft``) wires pieces into a kernel
and lays it out; ``kit`` holds the steps jobs share (index spaces, layouts, grids, colliders).
Importing the package imports every domain module, so the registry is complete. What it leaves
out: choosing jobs and pieces (``jit.code.synthesis.categories.composed_*``).
"""

from jit.code.synthesis.pieces.base import PIECES, Piece, Role, Style, Writer, giving, piece
from jit.code.synthesis.pieces.draft import Composed, Draft, Input
from jit.code.synthesis.pieces import (integrators, forces, collisions, stencils, sampling,  # noqa: F401
                                      advection, transforms, linalg, elasticity, sph, reductions, rays,
                                      emission)

__all__ = ["PIECES", "Piece", "Role", "Style", "Writer", "giving", "piece", "Composed", "Draft", "Input"]
