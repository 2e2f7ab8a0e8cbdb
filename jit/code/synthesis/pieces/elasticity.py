"""Continuum mechanics of elements: deformation gradients, constitutive models, nodal forces.

A triangle (2D) or tetrahedron (3D) has edge vectors ``Ds`` from its first vertex; with the
inverse of its rest edge matrix ``Dm^-1`` the deformation gradient is ``F = Ds Dm^-1``. A
constitutive model gives the first Piola-Kirchhoff stress ``P(F)``; the nodal forces are the
columns of ``-V0 P Dm^-T`` (and minus their sum on the first vertex, so they sum to zero).
Models that need ``log J`` (neo-Hookean) are only fed deformation gradients near the identity
(``I + grad u``); the others are finite for any ``F``, inverted elements included, and so is the
von Mises measure of their stress (it divides by ``|J|`` clamped away from zero). What it
leaves out: matrices in general (``linalg``).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role, Writer, piece
from jit.code.synthesis.pieces.roles import (DEF_GRAD, DISPLACEMENT_GRAD, LAMBDA, MU, POISSON, POSITION,
                                             REST_INV, REST_VOLUME, STRESS, YOUNGS)

NEAR_IDENTITY = Role("deformation gradient near identity", "mat")  # derived: I + grad u
ENERGY_DENSITY = Role("strain energy density", "scalar")
VON_MISES = Role("von Mises stress", "scalar")
EDGE_MATRIX = Role("edge matrix", "mat")
STRAIN_TENSOR = Role("strain tensor", "mat")


def _eye(w: Writer) -> str:
    """The identity, built once however many pieces of the body use it."""
    return w.once(("I", "eye", "identity"), f"wp.identity(n={w.style.dim}, dtype={w.style.s})")


def _trace(w: Writer, m: str) -> str:
    return w.once((f"tr_{m.lower()}" if m.isidentifier() and len(m) <= 6 else "tr", "trace"), f"wp.trace({m})")


@piece("deformation_from_displacement", needs={"H": DISPLACEMENT_GRAD}, gives={"F": NEAR_IDENTITY},
       says="deformation gradients from displacement gradients")
def deformation_from_displacement(w: Writer, H):
    return {"F": w.let(("F", "def_grad"), f"{_eye(w)} + {H}")}


@piece("edge_matrix_tri", needs={"x0": POSITION, "x1": POSITION, "x2": POSITION}, gives={"Ds": EDGE_MATRIX},
       says="the deformed edge matrix of a triangle", dims=(2,))
def edge_matrix_tri(w: Writer, x0, x1, x2):
    return {"Ds": w.let(("Ds", "edges"), f"wp.matrix_from_cols({x1} - {x0}, {x2} - {x0})")}


@piece("edge_matrix_tet", needs={"x0": POSITION, "x1": POSITION, "x2": POSITION, "x3": POSITION},
       gives={"Ds": EDGE_MATRIX}, says="the deformed edge matrix of a tetrahedron", dims=(3,))
def edge_matrix_tet(w: Writer, x0, x1, x2, x3):
    return {"Ds": w.let(("Ds", "edges"), f"wp.matrix_from_cols({x1} - {x0}, {x2} - {x0}, {x3} - {x0})")}


@piece("deformation_gradient", needs={"Ds": EDGE_MATRIX, "Dm_inv": REST_INV}, gives={"F": DEF_GRAD},
       says="the deformation gradient")
def deformation_gradient(w: Writer, Ds, Dm_inv):
    return {"F": w.let(("F", "def_grad"), f"{Ds} @ {Dm_inv}")}


@piece("lame_parameters", needs={"E": YOUNGS, "nu": POISSON}, gives={"mu": MU, "lam": LAMBDA},
       says="Lame parameters from Young's modulus and Poisson's ratio")
def lame_parameters(w: Writer, E, nu):
    one, two = w.lit(1.0), w.lit(2.0)
    # said whoever writes it: the caller's nu must stay below 0.5
    w.add("# " + w.pick("valid for 0 <= nu < 0.5: at 0.5 the material is incompressible and lam unbounded",
                        "the caller keeps nu below 0.5 (incompressible): lam grows without bound there"))
    mu = w.let(("mu", "k_mu"), f"{E} / ({two} * ({one} + {nu}))")
    lam = w.let(("lam", "k_lambda"), f"{E} * {nu} / (({one} + {nu}) * ({one} - {two} * {nu}))")
    return {"mu": mu, "lam": lam}


@piece("small_strain", needs={"F": DEF_GRAD}, gives={"eps": STRAIN_TENSOR}, says="the small-strain tensor")
def small_strain(w: Writer, F):
    Ft = w.once(("F_t", "FT"), f"wp.transpose({F})")
    return {"eps": w.let(("strain", "eps"), f"{w.lit(0.5)} * ({F} + {Ft}) - {_eye(w)}")}


@piece("green_strain", needs={"F": DEF_GRAD}, gives={"eps": STRAIN_TENSOR}, says="the Green-Lagrange strain")
def green_strain(w: Writer, F):
    Ft = w.once(("F_t", "FT"), f"wp.transpose({F})")
    return {"eps": w.let(("E", "green_strain"), f"{w.lit(0.5)} * ({Ft} @ {F} - {_eye(w)})")}


@piece("linear_elastic_stress", needs={"eps": STRAIN_TENSOR, "mu": MU, "lam": LAMBDA}, gives={"P": STRESS},
       says="small-strain linear elasticity")
def linear_elastic_stress(w: Writer, eps, mu, lam):
    tr = _trace(w, eps)
    return {"P": w.let(("P", "stress"), f"{w.lit(2.0)} * {mu} * {eps} + {lam} * {tr} * {_eye(w)}")}


@piece("stvk_stress", needs={"F": DEF_GRAD, "E": STRAIN_TENSOR, "mu": MU, "lam": LAMBDA}, gives={"P": STRESS},
       says="the St. Venant-Kirchhoff model")
def stvk_stress(w: Writer, F, E, mu, lam):
    tr = _trace(w, E)
    S = w.let(("S", "pk2"), f"{w.lit(2.0)} * {mu} * {E} + {lam} * {tr} * {_eye(w)}")
    return {"P": w.let(("P", "stress"), f"{F} @ {S}")}


@piece("quadratic_energy_density", needs={"eps": STRAIN_TENSOR, "mu": MU, "lam": LAMBDA},
       gives={"psi": ENERGY_DENSITY}, says="the strain energy density")
def quadratic_energy_density(w: Writer, eps, mu, lam):
    tr = _trace(w, eps)
    psi = f"{mu} * wp.ddot({eps}, {eps}) + {w.lit(0.5)} * {lam} * {tr} * {tr}"
    return {"psi": w.let(("psi", "energy_density"), psi)}


def cofactor(w: Writer, F: str) -> str:
    """J F^-T, written without the inverse so it stays finite for degenerate elements."""
    if w.style.dim == 2:
        return w.let(("dJdF", "cof"), f"{w.style.m}({F}[1, 1], -{F}[1, 0], -{F}[0, 1], {F}[0, 0])")
    cols = [w.let((f"c{a}", f"col{a}"), f"{w.style.type('vec')}({F}[0, {a}], {F}[1, {a}], {F}[2, {a}])")
            for a in range(3)]
    return w.let(("dJdF", "cof"), f"wp.matrix_from_cols(wp.cross({cols[1]}, {cols[2]}), wp.cross({cols[2]}, "
                                  f"{cols[0]}), wp.cross({cols[0]}, {cols[1]}))")


@piece("stable_neo_hookean_stress", needs={"F": DEF_GRAD, "mu": MU, "lam": LAMBDA}, gives={"P": STRESS},
       says="the stable neo-Hookean model", weight=1.5)
def stable_neo_hookean_stress(w: Writer, F, mu, lam):
    J = w.once(("J", "det_f"), f"wp.determinant({F})")
    w.comment("lam * (J - alpha) with the rest-stable shift alpha = 1 + mu / lam (Smith et al. 2018),")
    w.comment("multiplied out so that lam = 0 needs no division")
    dJdF = cofactor(w, F)
    return {"P": w.let(("P", "stress"), f"{mu} * {F} + ({lam} * ({J} - {w.lit(1.0)}) - {mu}) * {dJdF}")}


@piece("neo_hookean_stress", needs={"F": NEAR_IDENTITY, "mu": MU, "lam": LAMBDA}, gives={"P": STRESS},
       says="the compressible neo-Hookean model")
def neo_hookean_stress(w: Writer, F, mu, lam):
    J = w.once(("J", "det_f"), f"wp.determinant({F})")
    F_inv_t = w.let(("F_inv_t", "FinvT"), f"wp.transpose(wp.inverse({F}))")
    return {"P": w.let(("P", "stress"), f"{mu} * ({F} - {F_inv_t}) + {lam} * wp.log({J}) * {F_inv_t}")}


@piece("element_forces", needs={"P": STRESS, "Dm_inv": REST_INV, "volume": REST_VOLUME},
       gives={"H": EDGE_MATRIX}, says="nodal elastic forces")
def element_forces(w: Writer, P, Dm_inv, volume):
    others = "1 and 2" if w.style.dim == 2 else "1 to 3"
    w.comment(f"the columns are the forces on vertices {others}; vertex 0 takes minus their sum",
              f"the matrix's columns act on vertices {others}, and vertex 0 balances them")
    return {"H": w.let(("H", "forces"), f"-{volume} * {P} @ wp.transpose({Dm_inv})")}


@piece("von_mises_stress", needs={"P": STRESS, "F": DEF_GRAD}, gives={"s": VON_MISES},
       says="the von Mises equivalent stress", dims=(3,))
def von_mises_stress(w: Writer, P, F):
    w.comment("of the Cauchy stress sigma = P F^T / det(F), from its deviatoric part")
    J = w.once(("J", "det_f"), f"wp.determinant({F})")
    Ft = w.once(("F_t", "FT"), f"wp.transpose({F})")
    # inverted (J < 0) and flattened (J = 0) elements happen, and the stress models here stay finite
    # for them: von Mises does not see the sign of sigma, so |J| serves for an inverted element, and
    # clamped away from zero it gives a flat one a large but finite measure instead of inf or NaN
    w.add("# von Mises ignores the sign of sigma: divide by |J|, kept away from 0 for flattened elements")
    J_abs = w.let(("J_abs", "abs_j"), f"wp.max(wp.abs({J}), {w.lit(1.0e-6)})")
    sigma = w.let(("sigma", "cauchy"), f"{P} @ {Ft} / {J_abs}")
    dev = w.let(("dev", "s_dev"), f"{sigma} - {_eye(w)} * (wp.trace({sigma}) / {w.lit(3.0)})")
    return {"s": w.let(("von_mises", "sigma_vm"), f"wp.sqrt({w.lit(1.5)} * wp.ddot({dev}, {dev}))")}
