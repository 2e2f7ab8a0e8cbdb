"""The roles values play in simulation kernels, with the ranges random inputs of them take.

A range is *safe*: any value in it keeps every piece that reads the role finite and
meaningful (time steps small enough that ``drag * dt < 1``, masses positive, restitution in
[0, 1]). Names are what authors call an input of the role. What it leaves out: roles that only
one piece uses are declared next to it.
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role

# state of particles and bodies
POSITION = Role("position", "vec", -1.0, 1.0, ("x", "positions", "particle_x", "particle_q"))
VELOCITY = Role("velocity", "vec", -1.0, 1.0, ("v", "velocities", "particle_v", "particle_qd"))
ACCELERATION = Role("acceleration", "vec", -2.0, 2.0, ("a", "accelerations"))
FORCE = Role("force", "vec", -1.0, 1.0, ("f", "forces", "particle_f", "f_ext"))
CORRECTION = Role("position correction", "vec", -0.1, 0.1, ("delta", "deltas", "corrections"))
MASS = Role("mass", "scalar", 0.5, 2.0, ("mass", "masses", "particle_mass"), per_item=0.7)
INV_MASS = Role("inverse mass", "scalar", 0.0, 2.0, ("inv_mass", "particle_inv_mass", "inv_masses"), per_item=0.8)
RADIUS = Role("particle radius", "scalar", 0.05, 0.2, ("radius", "particle_radius", "radii"), per_item=0.4)
SPEED = Role("speed", "scalar", 0.0, 2.0, ("speed",))
ENERGY = Role("energy", "scalar", 0.0, 1.0, ("energy",))

# time and global parameters
TIME_STEP = Role("time step", "scalar", 0.001, 0.01, ("dt", "delta_time", "time_step"))
GRAVITY = Role("gravity", "vec", -9.81, -1.0, ("gravity",), axis=1)
MAX_SPEED = Role("speed limit", "scalar", 1.0, 10.0, ("max_speed", "speed_limit"))

# forces and their coefficients
DRAG = Role("drag coefficient", "scalar", 0.0, 1.0, ("drag", "drag_coefficient", "k_drag", "drag_coefficients"), per_item=0.1)
# a per-step factor, exp(-k dt) of a damping rate k, is the same for every item: the caller computes it
# once per step (rates up to 2 at steps up to 0.01 keep it above 0.98)
DAMPING_FACTOR = Role("per-step damping factor", "scalar", 0.9, 1.0, ("damping_factor", "velocity_decay", "decay_factor"))
WIND = Role("wind velocity", "vec", -2.0, 2.0, ("wind", "wind_velocity", "air_velocity"))
STIFFNESS = Role("spring stiffness", "scalar", 10.0, 100.0, ("stiffness", "ke", "spring_stiffness"), per_item=0.4,
                 family="spring")
SPRING_DAMPING = Role("spring damping", "scalar", 0.0, 1.0, ("damping", "kd", "spring_damping"), per_item=0.3,
                      family="spring")
# springs and constraints carry their own rest lengths (one shared length is a special case)
REST_LENGTH = Role("rest length", "scalar", 0.1, 1.0, ("rest_length", "rest_lengths", "spring_rest_length"),
                   per_item=1.0)
# one per particle (its rest or target position): a tether of every particle to one shared point reads
# as no job a simulation has
ANCHOR = Role("anchor position", "vec", -1.0, 1.0, ("anchors", "anchor_positions", "rest_positions", "anchor"), per_item=1.0)
ANCHOR_STIFFNESS = Role("tether stiffness", "scalar", 1.0, 20.0, ("tether_stiffness", "k_anchor", "pin_stiffness"))
# XPBD's time-scaled compliance alpha / dt^2: the caller divides once per step, not every thread
# (compliances up to 1e-5 at steps of 3 ms and more keep it below about 1)
SCALED_COMPLIANCE = Role("time-scaled compliance", "scalar", 0.0, 1.0, ("alpha_tilde", "scaled_compliance"),
                         per_item=0.3)
RELAXATION = Role("relaxation factor", "scalar", 0.2, 1.0, ("relaxation", "stiffness", "omega"))
CONTACT_STIFFNESS = Role("contact stiffness", "scalar", 100.0, 1000.0, ("contact_ke", "k_contact", "contact_stiffness"),
                         family="contact")
CONTACT_DAMPING = Role("contact damping", "scalar", 0.0, 10.0, ("contact_kd", "k_damping", "contact_damping"),
                       family="contact")
BUOYANCY = Role("fluid density", "scalar", 0.5, 1.5, ("fluid_density", "rho_fluid"))
VOLUME = Role("volume", "scalar", 0.01, 0.1, ("volume", "particle_volume", "volumes"), per_item=1.0)  # one buoyancy for all would be a constant

# colliders
RESTITUTION = Role("restitution", "scalar", 0.0, 1.0, ("restitution", "bounce", "coefficient_of_restitution"))
FRICTION = Role("friction coefficient", "scalar", 0.0, 1.0, ("friction", "mu", "friction_coefficient"))
GROUND = Role("ground height", "scalar", -1.0, 0.0, ("ground", "ground_height", "floor_y"))
CENTER = Role("collider center", "vec", -0.5, 0.5, ("sphere_center", "collider_center", "center"))
SPHERE_RADIUS = Role("collider radius", "scalar", 0.2, 1.0, ("sphere_radius", "collider_radius"))
BOX_LOWER = Role("box lower corner", "vec", -1.0, -0.6, ("box_lower", "bounds_min", "domain_lower"), family="box")
BOX_UPPER = Role("box upper corner", "vec", 0.6, 1.0, ("box_upper", "bounds_max", "domain_upper"), family="box")
PLANE_NORMAL = Role("plane normal", "vec", -1.0, 1.0, ("plane_normal", "normal"))
PLANE_OFFSET = Role("plane offset", "scalar", -1.0, 0.0, ("plane_offset", "plane_d"))

# grids
GRID_VALUE = Role("grid value", "scalar", -1.0, 1.0, ("field", "phi", "values", "u", "temperature", "density"))
GRID_VECTOR = Role("grid velocity", "vec", -1.0, 1.0, ("velocity", "vel", "u"))
CELL_SIZE = Role("cell size", "scalar", 0.05, 0.2, ("dx", "cell_size", "h"))
INV_CELL_SIZE = Role("inverse cell size", "scalar", 5.0, 20.0, ("inv_dx", "inv_cell_size"))
DIFFUSIVITY = Role("diffusivity", "scalar", 0.0, 0.1, ("diffusivity", "kappa", "nu", "alpha"))
DECAY_FACTOR = Role("per-step decay factor", "scalar", 0.9, 1.0, ("decay_factor", "dissipation_factor", "fade_factor"))
GRID_POINT = Role("grid-space point", "vec", 0.0, 1.0, ("p", "sample_point"))

# rigid bodies and transforms
QUATERNION = Role("orientation", "quat", -1.0, 1.0, ("q", "rotations", "body_q", "orientations"))
ANGULAR_VELOCITY = Role("angular velocity", "vec3", -2.0, 2.0, ("omega", "angular_velocity", "body_w"))
TRANSFORM = Role("transform", "transform", -1.0, 1.0, ("body_transform", "xform", "transforms"))
LOCAL_POINT = Role("body-local point", "vec3", -0.5, 0.5, ("local_points", "offsets", "body_points"))
LINEAR_VELOCITY = Role("linear velocity", "vec3", -1.0, 1.0, ("body_v", "linear_velocity", "com_velocity"))
TORQUE = Role("torque", "vec3", -1.0, 1.0, ("torque", "body_torque", "tau"))
POINT3 = Role("point", "vec3", -1.0, 1.0, ("points", "p"))
DIRECTION3 = Role("direction", "vec3", -1.0, 1.0, ("directions", "d"))

# continuum mechanics
DISPLACEMENT_GRAD = Role("displacement gradient", "mat", -0.2, 0.2, ("grad_u", "displacement_gradient", "H"))
DEF_GRAD = Role("deformation gradient", "mat", -0.2, 0.2, ("F", "deformation_gradient", "def_grad"))
STRESS = Role("first Piola-Kirchhoff stress", "mat", -1.0, 1.0, ("P", "stress"))
REST_INV = Role("inverse rest shape", "mat", -2.0, 2.0, ("inv_rest", "Dm_inv", "rest_shape_inv"))
MU = Role("shear modulus", "scalar", 10.0, 100.0, ("mu", "k_mu", "lame_mu"), per_item=0.3, family="lame")
LAMBDA = Role("Lame lambda", "scalar", 10.0, 100.0, ("lam", "k_lambda", "lame_lambda"), per_item=0.3, family="lame")
YOUNGS = Role("Young's modulus", "scalar", 100.0, 1000.0, ("youngs_modulus", "young"), per_item=0.5,
               family="moduli")
POISSON = Role("Poisson ratio", "scalar", 0.1, 0.45, ("poisson_ratio", "nu"), per_item=0.5,
               family="moduli")
REST_VOLUME = Role("rest volume", "scalar", 0.01, 0.1, ("rest_volume", "element_volume", "rest_area"), per_item=1.0)
MATRIX = Role("matrix", "mat33", -1.0, 1.0, ("A", "matrices"))
SPD_MATRIX = Role("symmetric positive definite matrix", "mat33", -1.0, 1.0, ("A", "K"))
VECTOR3 = Role("right-hand side", "vec3", -1.0, 1.0, ("b", "rhs"))

# particle fluids
SMOOTHING_LENGTH = Role("smoothing length", "scalar", 0.2, 0.5, ("h", "smoothing_length", "kernel_radius"))
DENSITY = Role("density", "scalar", 0.5, 2.0, ("rho", "densities", "particle_rho"))
REST_DENSITY = Role("rest density", "scalar", 0.5, 1.5, ("rest_density", "rho0"))
GAS_CONSTANT = Role("gas stiffness", "scalar", 1.0, 10.0, ("gas_constant", "k_pressure", "stiffness"))
PRESSURE = Role("pressure", "scalar", 0.0, 5.0, ("pressure", "pressures", "particle_p"))
VISCOSITY = Role("viscosity", "scalar", 0.0, 0.5, ("viscosity", "mu"))
