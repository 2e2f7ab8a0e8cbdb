"""Generated kernels run on the CPU: outputs are finite, and match an independent NumPy reference.

The reference is a small interpreter of the generated *Python source* (its AST) with NumPy
values: float32 stays float32, integers follow C semantics (truncating division, ``%`` with
the dividend's sign), vectors/matrices/quaternions are arrays with Warp's operator meanings.
It shares nothing with Warp's code generator. Kernels calling a builtin the interpreter
does not implement are skipped, and each checked category must still have enough kernels.
"""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest
import warp as wp

from jit.code.extraction import warp_backend as wb
from jit.code.checks import execute
from jit.code.synthesis.generator import CATEGORIES, generate

# the typed builder's categories (other sources test their own kernels, some need runtime objects)
RUNNABLE = sorted(c for c in CATEGORIES if c != "geometry" and CATEGORIES[c].source in ("random", "realistic"))
REFERENCE = ("arithmetic", "math", "vector", "matrix")
PER_CATEGORY = 2
REFERENCE_SAMPLE = 20  # kernels generated per reference category (small ones)
MIN_CHECKED = 4  # of which at least this many must be within the interpreter's reach


# ---------------------------------------------------------------------------------------------
# inputs and launching


def make_struct(cls, fields: dict, rng, lo: float, hi: float, ns: dict):
    value = cls()
    for name, ft in fields.items():
        if isinstance(ft, dict):
            setattr(value, name, make_struct(ns[ft["dtype"]], ft["fields"], rng, lo, hi, ns))
            continue
        t = getattr(wp, ft)
        shape = getattr(t, "_shape_", ())
        if shape:
            setattr(value, name, t(*rng.uniform(lo, hi, size=int(np.prod(shape))).astype(np.float32).tolist()))
        elif "int" in ft:
            setattr(value, name, int(rng.integers(int(lo), int(hi) + 1)))
        else:
            setattr(value, name, float(rng.uniform(lo, hi)))
    return value


def make_arg(arg: dict, rng, ns: dict):
    lo, hi = arg["range"]
    name = arg["dtype"]
    if arg["kind"] == "scalar":
        return int(rng.integers(int(lo), int(hi) + 1)) if "int" in name else float(np.float32(rng.uniform(lo, hi)))
    if arg["kind"] == "struct":
        return make_struct(ns[name], arg["fields"], rng, lo, hi, ns)
    shape = tuple(arg["shape"])
    if "fields" in arg:
        items = [make_struct(ns[name], arg["fields"], rng, lo, hi, ns) for _ in range(int(np.prod(shape)))]
        if arg["role"] == "out":
            return wp.zeros(shape, dtype=ns[name], device="cpu")
        return wp.array(items, dtype=ns[name], device="cpu").reshape(shape)
    dtype = getattr(wp, name)
    if arg["role"] == "out":
        return wp.zeros(shape, dtype=dtype, device="cpu")
    scalar = getattr(dtype, "_wp_scalar_type_", dtype)
    full = shape + tuple(getattr(dtype, "_shape_", ()))
    data = rng.integers(int(lo), int(hi) + 1, size=full) if scalar in (wp.int32, wp.uint32) else rng.uniform(lo, hi, size=full)
    return wp.array(data.astype(wp.dtype_to_numpy(scalar)), dtype=dtype, shape=shape, device="cpu")


def launch(spec, ns: dict, seed: int = 0) -> tuple[list, list]:
    info = spec.metadata["launch"]
    rng = np.random.default_rng(seed)
    args = [make_arg(a, rng, ns) for a in info["args"]]
    before = [a.numpy().copy() if isinstance(a, wp.array) else a for a in args]
    if info.get("tiled"):
        wp.launch_tiled(ns[spec.name], dim=info["dim"], inputs=args, block_dim=info["block_dim"], device="cpu")
    else:
        wp.launch(ns[spec.name], dim=info["dim"], inputs=args, device="cpu")
    return before, args


@pytest.fixture(scope="module")
def cpu_module():
    """Two small kernels per runnable category in one module, compiled once (forward only)."""
    yield from _forward_only_module(21, RUNNABLE, PER_CATEGORY, "test_gen_exec")


def _forward_only_module(seed: int, categories, per_category: int, name: str):
    """Small kernels of ``categories`` defined in one module without backward; yields (specs, namespace)."""
    specs = [generate(seed, i, categories=[c], complexity="small") for c in categories for i in range(per_category)]
    handle = wb.define([s.source for s in specs], name)
    handle.module.options["enable_backward"] = False
    yield specs, handle.namespace
    handle.release()


@pytest.mark.parametrize("category", RUNNABLE)
def test_runnable_categories_give_finite_outputs_on_cpu(cpu_module, category):
    specs, ns = cpu_module
    for spec in [s for s in specs if s.category == category]:
        assert spec.metadata["launch"]["runnable"]
        _, args = launch(spec, ns)
        outputs = [(a, v) for a, v in zip(spec.metadata["launch"]["args"], args) if a["role"] != "in"]
        assert outputs, spec.name
        for arg, value in outputs:
            for field in [f for f in execute.leaves(value.numpy()) if np.issubdtype(f.dtype, np.floating)]:
                assert np.isfinite(field).all(), (spec.name, arg["name"], spec.source)


def test_geometry_kernels_say_why_they_cannot_run():
    spec = generate(21, 0, categories=["geometry"])
    assert spec.metadata["launch"]["runnable"] is False
    assert spec.metadata["needs_runtime_objects"] is True
    assert "wp." in spec.metadata["launch"]["reason"]


# ---------------------------------------------------------------------------------------------
# the NumPy reference


class Unsupported(Exception):
    pass


class Val:
    """A vector, matrix or quaternion: kind + array (row-major for matrices)."""

    def __init__(self, kind: str, data: np.ndarray):
        self.kind, self.data = kind, data

    def copy(self) -> "Val":
        return Val(self.kind, self.data.copy())


SCALARS = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "uint32": np.uint32}


def type_of(name: str):
    """(kind, shape, numpy dtype) for a Warp type name such as vec3f, mat22d, quatf, float32."""
    if name in SCALARS:
        return "scalar", (), SCALARS[name]
    suffix = {"f": np.float32, "d": np.float64, "i": np.int32}
    for prefix, kind in (("vec", "vec"), ("mat", "mat"), ("quat", "quat")):
        if name.startswith(prefix) and name[-1] in suffix:
            digits = name[len(prefix):-1]
            shape = (4,) if kind == "quat" else (int(digits),) if kind == "vec" else (int(digits[0]), int(digits[1]))
            return kind, shape, suffix[name[-1]]
    raise Unsupported(name)


def c_div(a, b):
    if isinstance(a, (np.integer, int)) and isinstance(b, (np.integer, int)):
        if b == 0:
            raise Unsupported("int division by zero")
        q = abs(int(a)) // abs(int(b))
        return type(a)(q if (a >= 0) == (b >= 0) else -q)
    return a / b


def c_mod(a, b):
    return type(a)(np.fmod(a, b))


def lift(fn, *args):
    """Apply a scalar function elementwise over vector/matrix arguments (Warp's cw semantics)."""
    vals = [a for a in args if isinstance(a, Val)]
    if not vals:
        return fn(*args)
    kind = vals[0].kind
    arrays = [a.data if isinstance(a, Val) else a for a in args]
    out = np.vectorize(fn, otypes=[vals[0].data.dtype])(*arrays)
    return Val(kind, out)


def qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + bw * ax + ay * bz - by * az, aw * by + bw * ay + az * bx - bz * ax,
                     aw * bz + bw * az + ax * by - bx * ay, aw * bw - ax * bx - ay * by - az * bz], dtype=a.dtype)


def quat_rotate(q: np.ndarray, x: np.ndarray, sign: int = 1) -> np.ndarray:
    two = q.dtype.type(2)
    c = two * q[3] * q[3] - q.dtype.type(1)
    d = two * (q[0] * x[0] + q[1] * x[1] + q[2] * x[2])
    cr = np.array([q[1] * x[2] - q[2] * x[1], q[2] * x[0] - q[0] * x[2], q[0] * x[1] - q[1] * x[0]], dtype=q.dtype)
    return x * c + q[:3] * d + sign * cr * q[3] * two


def mul(a, b):
    if not isinstance(a, Val) and not isinstance(b, Val):
        return a * b
    if not isinstance(a, Val):
        return Val(b.kind, b.data * a)
    if not isinstance(b, Val):
        return Val(a.kind, a.data * b)
    if a.kind == "mat" and b.kind == "mat":
        return Val("mat", matmul(a.data, b.data))
    if a.kind == "mat" and b.kind == "vec":
        return Val("vec", matmul(a.data, b.data))
    if a.kind == "vec" and b.kind == "mat":
        return Val("vec", matmul(a.data, b.data))
    if a.kind == "quat" and b.kind == "quat":
        return Val("quat", qmul(a.data, b.data))
    raise Unsupported(f"mul {a.kind} {b.kind}")


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(a.dtype) if a.dtype != np.int32 else a @ b


def reduce_minmax(fn, args):
    if len(args) == 1 and isinstance(args[0], Val):  # min/max over the components
        return fn(args[0].data)
    return lift(lambda x, y: x if (x < y if fn is np.min else x > y) else y, *args)


def wp_sign(x):
    return type(x)(-1 if x < 0 else 1)


def wp_round(x):
    return type(x)(math.copysign(math.floor(abs(x) + 0.5), x))


FUNCS = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sqrt": np.sqrt, "cbrt": np.cbrt, "exp": np.exp,
    "log": np.log, "log2": np.log2, "log10": np.log10, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "rint": np.rint, "round": wp_round, "sign": wp_sign, "abs": np.abs,
    "degrees": lambda x: x * type(x)(180.0 / math.pi), "radians": lambda x: x * type(x)(math.pi / 180.0),
    "frac": lambda x: x - np.trunc(x), "step": lambda x: type(x)(1 if x < 0 else 0),
    "nonzero": lambda x: type(x)(0 if x == 0 else 1), "erf": lambda x: type(x)(math.erf(x)),
    "erfc": lambda x: type(x)(math.erfc(x)), "isfinite": lambda x: np.bool_(np.isfinite(x)),
    "isnan": lambda x: np.bool_(np.isnan(x)), "isinf": lambda x: np.bool_(np.isinf(x)),
    "bit_count": lambda x: type(x)(bin(int(x) & 0xFFFFFFFF).count("1")),
}
FUNCS2 = {"atan2": np.arctan2, "pow": np.power, "copysign": np.copysign}


def call_builtin(name: str, args: list, kwargs: dict):
    if name in FUNCS:
        if len(args) != 1:
            raise Unsupported(name)
        return lift(FUNCS[name], args[0])
    if name in FUNCS2:
        return lift(FUNCS2[name], *args)
    if name in ("min", "max"):
        return reduce_minmax(np.min if name == "min" else np.max, args)
    if name == "clamp":
        x, lo, hi = args
        return lift(lambda v, a, b: min(max(a, v), b), x, lo, hi)
    if name == "where":
        c, a, b = args
        return (a if c else b).copy() if isinstance(a, Val) else (a if c else b)
    if name == "lerp":
        a, b, t = args
        one = type(t)(1)
        return add(mul(a, one - t), mul(b, t))
    if name == "smoothstep":
        e0, e1, x = args
        t = min(max((x - e0) / (e1 - e0), type(x)(0)), type(x)(1))
        return t * t * (type(x)(3) - type(x)(2) * t)
    if name in SCALARS:
        return cast(name, args[0])
    if name == "identity":
        return Val("mat", np.eye(kwargs["n"], dtype=kwargs["dtype"]))
    vals = [a.data if isinstance(a, Val) else a for a in args]
    if name == "dot":
        return vals[0].dtype.type(np.dot(vals[0].astype(np.float64), vals[1].astype(np.float64))) if vals[0].dtype != np.int32 else np.int32(np.dot(vals[0], vals[1]))
    if name == "cross":
        return Val("vec", np.cross(vals[0], vals[1]).astype(vals[0].dtype))
    if name == "length":
        return vals[0].dtype.type(np.sqrt(np.sum(vals[0].astype(np.float64) ** 2)))
    if name == "length_sq":
        return vals[0].dtype.type(np.sum(vals[0] * vals[0]))
    if name == "normalize":
        n = np.sqrt(np.sum(vals[0].astype(np.float64) ** 2))
        return Val(args[0].kind, (vals[0] / n).astype(vals[0].dtype) if n > 0 else np.zeros_like(vals[0]))
    if name == "cw_mul":
        return Val(args[0].kind, vals[0] * vals[1])
    if name == "cw_div":
        return Val(args[0].kind, vals[0] / vals[1])
    if name == "outer":
        return Val("mat", np.outer(vals[0], vals[1]).astype(vals[0].dtype))
    if name in ("argmin", "argmax"):
        return np.uint32(np.argmin(vals[0]) if name == "argmin" else np.argmax(vals[0]))
    if name == "transpose":
        return Val("mat", vals[0].T.copy())
    if name == "determinant":
        return vals[0].dtype.type(np.linalg.det(vals[0].astype(np.float64)))
    if name == "inverse":
        return Val("mat", np.linalg.inv(vals[0].astype(np.float64)).astype(vals[0].dtype))
    if name == "trace":
        return vals[0].dtype.type(np.trace(vals[0]))
    if name == "diag":
        return Val("mat", np.diag(vals[0]))
    if name == "get_diag":
        return Val("vec", np.diag(vals[0]).copy())
    if name == "ddot":
        return vals[0].dtype.type(np.sum(vals[0].astype(np.float64) * vals[1]))
    if name == "skew":
        a = vals[0]
        z = a.dtype.type(0)
        return Val("mat", np.array([[z, -a[2], a[1]], [a[2], z, -a[0]], [-a[1], a[0], z]], dtype=a.dtype))
    if name == "quat_from_axis_angle":
        axis, angle = vals
        half = angle * type(angle)(0.5)
        return Val("quat", np.array([*(axis * np.sin(half)), np.cos(half)], dtype=axis.dtype))
    if name == "quat_rotate":
        return Val("vec", quat_rotate(vals[0], vals[1]))
    if name == "quat_rotate_inv":
        return Val("vec", quat_rotate(vals[0], vals[1], -1))
    if name == "quat_inverse":
        q = vals[0]
        return Val("quat", np.array([-q[0], -q[1], -q[2], q[3]], dtype=q.dtype))
    if name in ("norm_l1", "norm_l2"):
        v = vals[0].astype(np.float64)
        return vals[0].dtype.type(np.sum(np.abs(v)) if name == "norm_l1" else np.sqrt(np.sum(v * v)))
    raise Unsupported(name)


def cast(name: str, x):
    t = SCALARS[name]
    if isinstance(x, (np.floating, float)) and name in ("int32", "uint32"):
        return t(np.trunc(x))
    if name == "uint32":
        return np.uint32(int(x) & 0xFFFFFFFF)
    return t(x)


def add(a, b):
    if isinstance(a, Val):
        return Val(a.kind, a.data + (b.data if isinstance(b, Val) else b))
    if isinstance(b, Val):
        raise Unsupported("scalar + vector")
    return a + b


def sub(a, b):
    if isinstance(a, Val):
        return Val(a.kind, a.data - (b.data if isinstance(b, Val) else b))
    return a - b


def binop(op, a, b):
    if isinstance(op, ast.Add):
        return add(a, b)
    if isinstance(op, ast.Sub):
        return sub(a, b)
    if isinstance(op, ast.Mult):
        return mul(a, b)
    if isinstance(op, ast.Div):
        if isinstance(b, Val):
            if isinstance(a, Val):
                raise Unsupported("vec / vec")
            return Val(b.kind, a / b.data)
        return Val(a.kind, a.data / b) if isinstance(a, Val) else c_div(a, b)
    if isinstance(a, Val) or isinstance(b, Val):
        if isinstance(op, ast.Mod):
            return lift(c_mod, a, b)
        raise Unsupported(type(op).__name__)
    if isinstance(op, ast.Mod):
        return c_mod(a, b)
    if isinstance(op, ast.FloorDiv):
        return type(a)(np.floor(a / b)) if isinstance(a, np.floating) else type(a)(int(a) // int(b))
    table = {ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or, ast.BitXor: np.bitwise_xor,
             ast.LShift: np.left_shift, ast.RShift: np.right_shift}
    return type(a)(table[type(op)](a, b))


class Interpreter:
    """Runs one kernel thread by thread over NumPy copies of its inputs."""

    def __init__(self, source: str, kernel_name: str):
        tree = ast.parse(source)
        self.funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.kernel = self.funcs.pop(kernel_name)

    def run(self, dims: list[int], arrays: dict) -> None:
        for tid in np.ndindex(*dims):
            env = dict(arrays)
            env["__tid__"] = tuple(np.int32(t) for t in tid)
            try:
                self.block(self.kernel.body, env)
            except _Return:
                pass

    def iteration(self, body, env) -> bool:
        """Run one loop iteration; False when it ends the loop (``break``)."""
        try:
            self.block(body, env)
        except _Continue:
            pass
        except _Break:
            return False
        return True

    def block(self, stmts, env):
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s, env):
        if isinstance(s, ast.Assign):
            value = self.expr(s.value, env)
            self.store(s.targets[0], value.copy() if isinstance(value, Val) else value, env)
        elif isinstance(s, ast.AugAssign):
            current = self.expr(s.target, env)
            self.store(s.target, binop(s.op, current, self.expr(s.value, env)), env)
        elif isinstance(s, ast.If):
            self.block(s.body if self.expr(s.test, env) else s.orelse, env)
        elif isinstance(s, ast.For):
            bounds = [int(self.expr(a, env)) for a in s.iter.args]
            for k in range(*bounds):
                env[s.target.id] = np.int32(k)
                if not self.iteration(s.body, env):
                    break
        elif isinstance(s, ast.While):
            while self.expr(s.test, env):
                if not self.iteration(s.body, env):
                    break
        elif isinstance(s, ast.Return):
            raise _Return(self.expr(s.value, env) if s.value is not None else None)
        elif isinstance(s, ast.Continue):
            raise _Continue()
        elif isinstance(s, ast.Break):
            raise _Break()
        elif isinstance(s, ast.Pass):
            pass
        else:
            raise Unsupported(type(s).__name__)

    def store(self, target, value, env):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple):  # i, j = wp.tid()
            for t, v in zip(target.elts, value):
                env[t.id] = v
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value, env)
            idx = self.index(target.slice, env)
            if isinstance(base, Val):
                base.data[idx] = value
            else:  # an output array element
                base.data[idx] = value.data if isinstance(value, Val) else value
        else:
            raise Unsupported(type(target).__name__)

    def index(self, node, env):
        if isinstance(node, ast.Tuple):
            return tuple(int(self.expr(e, env)) for e in node.elts)
        return int(self.expr(node, env))

    def expr(self, n, env):
        if isinstance(n, ast.Constant):
            v = n.value
            return np.bool_(v) if isinstance(v, bool) else np.int32(v) if isinstance(v, int) else np.float32(v)
        if isinstance(n, ast.Name):
            return env[n.id]
        if isinstance(n, ast.BinOp):
            return binop(n.op, self.expr(n.left, env), self.expr(n.right, env))
        if isinstance(n, ast.UnaryOp):
            v = self.expr(n.operand, env)
            if isinstance(n.op, ast.Not):
                return np.bool_(not v)
            if isinstance(n.op, ast.USub):
                return Val(v.kind, -v.data) if isinstance(v, Val) else -v
            if isinstance(n.op, ast.Invert):
                return ~v
            raise Unsupported("unary")
        if isinstance(n, ast.Compare):
            a, b = self.expr(n.left, env), self.expr(n.comparators[0], env)
            ops = {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b, ast.Eq: a == b, ast.NotEq: a != b}
            return np.bool_(ops[type(n.ops[0])])
        if isinstance(n, ast.BoolOp):
            vals = [bool(self.expr(v, env)) for v in n.values]
            return np.bool_(all(vals) if isinstance(n.op, ast.And) else any(vals))
        if isinstance(n, ast.Subscript):
            base = self.expr(n.value, env)
            idx = self.index(n.slice, env)
            if isinstance(base, tuple):  # a.shape[d]
                return base[idx]
            if isinstance(base, Val):
                item = base.data[idx]
                return Val("vec", item.copy()) if isinstance(item, np.ndarray) else item
            item = base.data[idx]  # array element: a value copy
            return item if base.kind == "scalar" else Val(base.kind, item.copy())
        if isinstance(n, ast.Attribute):
            base = self.expr(n.value, env)
            if n.attr == "shape":
                return base.shape
            if isinstance(base, Val) and n.attr in "xyzw":
                return base.data["xyzw".index(n.attr)]
            raise Unsupported(f".{n.attr}")
        if isinstance(n, ast.Call):
            return self.call(n, env)
        raise Unsupported(type(n).__name__)

    def call(self, n, env):
        args = [self.expr(a, env) for a in n.args]
        kwargs = {k.arg: self.kw(k.value) for k in n.keywords}
        f = n.func
        if isinstance(f, ast.Name):
            if f.id == "float":
                return np.float32(args[0])
            if f.id == "int":
                return np.int32(args[0])
            if f.id in self.funcs:
                return self.user_call(self.funcs[f.id], args)
            raise Unsupported(f.id)
        name = f.attr
        if name == "tid":
            tid = env["__tid__"]
            return tid[0] if len(tid) == 1 else tid
        try:
            kind, shape, dtype = type_of(name)
        except Unsupported:
            return call_builtin(name, args, kwargs)
        if kind == "scalar":
            return cast(name, args[0])
        if kind in ("vec", "mat", "quat") and (not args or len(args) == 1 and not isinstance(args[0], Val)):
            fill = dtype(args[0]) if args else dtype(0)
            data = np.full(shape, fill, dtype=dtype)
            return Val(kind, data)
        if all(not isinstance(a, Val) for a in args):
            return Val(kind, np.array(args, dtype=dtype).reshape(shape))
        raise Unsupported(f"{name} from vectors")

    def kw(self, node):
        if isinstance(node, ast.Attribute):  # dtype=wp.float32
            return SCALARS[node.attr]
        return ast.literal_eval(node)

    def user_call(self, fn, args):
        env = {a.arg: (v.copy() if isinstance(v, Val) else v) for a, v in zip(fn.args.args, args)}
        try:
            self.block(fn.body, env)
        except _Return as r:
            return r.value
        raise Unsupported("function without return")


class _Return(Exception):
    def __init__(self, value=None):
        self.value = value


class _Continue(Exception):
    pass


class _Break(Exception):
    pass


class Arr:
    """A kernel array: element kind and a NumPy copy (element components are trailing axes)."""

    def __init__(self, arg: dict, data: np.ndarray):
        self.kind, _, dtype = type_of(arg["dtype"])
        self.data = np.array(data, dtype=dtype)
        self.shape = tuple(np.int32(d) for d in arg["shape"])


@pytest.fixture(scope="module")
def reference_module():
    yield from _forward_only_module(31, REFERENCE, REFERENCE_SAMPLE, "test_gen_reference")


def reference_outputs(spec, inputs: list) -> dict | None:
    """Output arrays computed by the interpreter, or None when a construct is out of its reach."""
    interp = Interpreter(spec.source, spec.name)
    arrays = {}
    try:
        for arg, value in zip(spec.metadata["launch"]["args"], inputs):
            if arg["kind"] == "array":
                arrays[arg["name"]] = Arr(arg, value)
            elif arg["kind"] == "scalar":
                arrays[arg["name"]] = type_of(arg["dtype"])[2](value)
            else:
                return None
        with np.errstate(all="ignore"):
            interp.run(spec.metadata["launch"]["dim"], arrays)
    except (Unsupported, KeyError):
        return None
    return {a["name"]: arrays[a["name"]].data for a in spec.metadata["launch"]["args"] if a["role"] != "in"}


@pytest.mark.parametrize("category", REFERENCE)
def test_cpu_results_match_the_numpy_reference(reference_module, category):
    specs, ns = reference_module
    checked = 0
    for spec in [s for s in specs if s.category == category]:
        before, args = launch(spec, ns, seed=spec.index)
        expected = reference_outputs(spec, before)
        if expected is None:
            continue
        checked += 1
        for arg, value in zip(spec.metadata["launch"]["args"], args):
            if arg["role"] == "in":
                continue
            got = value.numpy()
            want = np.asarray(expected[arg["name"]], dtype=got.dtype)
            assert np.allclose(got, want, rtol=1e-3, atol=1e-3), (spec.name, arg["name"], got, want, spec.source)
    assert checked >= MIN_CHECKED, f"only {checked} {category} kernels within the reference's reach"


def test_reference_interpreter_known_answers():
    """The interpreter itself, on a hand-written kernel with hand-computed results."""
    source = """import warp as wp


@wp.kernel
def known(a: wp.array(dtype=wp.float32), m: wp.array(dtype=wp.mat22f), out: wp.array(dtype=wp.vec2f), k: wp.array(dtype=wp.int32)):
    i = wp.tid()
    v = wp.vec2f(a[i], 2.0)
    w = m[i] * v
    for t in range(3):
        if t == 1:
            continue
        w += wp.vec2f(1.0)
    out[i] = w
    k[i] = (-7 / 2) + (-7 % 3) * 10 + (7 // 2) * 100
"""
    args = [{"name": "a", "kind": "array", "dtype": "float32", "shape": [2], "role": "in"},
            {"name": "m", "kind": "array", "dtype": "mat22f", "shape": [2], "role": "in"},
            {"name": "out", "kind": "array", "dtype": "vec2f", "shape": [2], "role": "out"},
            {"name": "k", "kind": "array", "dtype": "int32", "shape": [2], "role": "out"}]
    mats = np.array([[[1, 2], [3, 4]], [[0, 1], [1, 0]]], dtype=np.float32)
    inputs = [np.array([1.0, -1.0], dtype=np.float32), mats, np.zeros((2, 2), np.float32), np.zeros(2, np.int32)]
    arrays = {a["name"]: Arr(a, v) for a, v in zip(args, inputs)}
    Interpreter(source, "known").run([2], arrays)
    np.testing.assert_allclose(arrays["out"].data, [[1 + 4 + 2, 3 + 8 + 2], [2 + 2, -1 + 2]])
    assert arrays["k"].data.tolist() == [-3 - 10 + 300] * 2  # C: -7/2 = -3, -7%3 = -1
