"""Pattern family of tile kernels: block-level linear algebra and reductions, as Warp's tile
examples write them (``wp.launch_tiled``, one block of threads per tile).

Each kernel loads tiles with ``wp.tile_load`` from its block's part of the arrays (``wp.tid()`` is
the block index), computes with tile operations and stores with ``wp.tile_store`` or adds its
partial result with ``wp.tile_atomic_add``:

- blocked sums, dot products and squared norms of arrays, reduced per block then added atomically
  (or stored by the one block that covers a small array);
- a row-wise softmax (shifted by the row maximum) and a row-wise layer normalisation;
- a matrix-vector product, one block per row, with an optional bias and scale;
- ``y = a x + y`` over blocks of an array (``wp.tile_axpy`` in place, or written out);
- elementwise maps of a ``@wp.func`` over three tiles (blend, multiply-add, clamp to bounds), with an
  optional per-column bias broadcast down each tile;
- the sum or mean of a batch of stacked matrices, accumulated into ``wp.tile_zeros``;
- pointwise complex products of arrays kept as real and imaginary parts (spectra in a convolution);
- a blocked transpose of a matrix, each block moving one square tile;
- inclusive or exclusive prefix sums per block, with each block's total.

Tile sizes are module constants (``wp.constant``, now and then a plain int), named with the kernel's suffix
like every module-level name a generated kernel defines. What it leaves out: ``tile_matmul``
(its CUDA build links MathDx, far heavier than every other kernel), Cholesky and FFT.
"""

from __future__ import annotations

import random
import re

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.patterns import WrittenKernel
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.docs import docstring, sentence
from jit.code.synthesis.stmt import INDENT, Param

BLOCK_DIMS = (32, 64, 128)
NAMES = {  # kind -> the names a kernel of that kind takes
    "sum": ("sum_blocks", "block_sum", "reduce_sum", "mean", "average", "reduce_mean",
            "weighted_sum", "weighted_block_sum", "sum_weighted"),
    "dot": ("dot_product", "tile_dot", "inner_product", "weighted_dot", "weighted_inner_product", "tile_weighted_dot"),
    "norm": ("squared_norm", "norm_sq", "sum_of_squares"),
    "l1": ("l1_norm", "abs_sum", "sum_abs"),
    "softmax": ("softmax_rows", "row_softmax", "softmax"),
    "log_softmax": ("log_softmax", "log_softmax_rows", "row_log_softmax"),
    "layer_norm": ("layer_norm", "normalize_rows", "layernorm_forward"),
    "argmax": ("argmax_rows", "predict_labels", "row_argmax"),
    "argmin": ("argmin_rows", "nearest_candidate", "row_argmin"),
    "rms_norm": ("rms_norm", "rmsnorm_forward", "rms_normalize"),
    "matvec": ("matvec", "gemv", "mat_vec_mul"),
    "dense": ("dense_forward", "linear_layer", "fully_connected"),
    "axpy": ("axpy", "saxpy", "scaled_add", "axpby", "scaled_sum", "linear_combination"),  # the last: a x + b y
    "transpose": ("transpose", "transpose_tiled", "tile_transpose_matrix"),
    "symmetrize": ("symmetrize", "symmetric_part", "sym_part"),
    "scan": ("block_scan", "prefix_sum", "scan_blocks"),
    "running": tuple(f"{form}_{which}" for which in ("max", "min") for form in ("running", "scan", "block_running")),
    "lerp": ("blend_tiles", "lerp_fields", "mix_tiles"),
    "fma": ("fused_multiply_add", "scale_shift", "multiply_add"),
    "clip": ("clip_to_bounds", "clamp_tiles", "box_clamp"),
    "batch_mean": ("batch_mean", "average_frames", "mean_of_stack"),
    "batch_sum": ("batch_sum", "accumulate_frames", "sum_of_stack"),
    "complex_mul": ("complex_multiply", "spectrum_product", "pointwise_cmul"),
    "correlate": ("cross_spectrum", "correlate_spectra", "conj_multiply"),
}
# blocks (rows, columns) of square tiles: matrices of at most 576 values, so that a kernel's inputs and
# outputs together stay small enough to keep as a record's io example
GRIDS = {8: ((1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3)), 16: ((1, 1), (1, 2), (2, 1))}
ELEMENTWISE = {  # kind -> (helper name, its parameters, its body, what it computes, input ranges)
    "lerp": ("blend", ("a", "b", "t"), "a + t * (b - a)", "{a} + {t} ({b} - {a})",
             ((-1.0, 1.0), (-1.0, 1.0), (0.0, 1.0))),
    "fma": ("madd", ("x", "scale", "shift"), "x * scale + shift", "{x} * {scale} + {shift}",
            ((-1.0, 1.0), (0.5, 2.0), (-1.0, 1.0))),
    "clip": ("clip", ("x", "lower", "upper"), "wp.clamp(x, lower, upper)",
             "{x} clamped to [{lower}, {upper}]", ((-2.0, 2.0), (-1.0, -0.1), (0.1, 1.0))),
}


TileKernel = WrittenKernel


class Writer:
    """Parameters, module constants, helpers and body lines of one tile kernel."""

    def __init__(self, rng: random.Random, suffix: str):
        self.rng, self.suffix = rng, suffix
        self.params: list[Param] = []
        self.constants: list[str] = []
        self.funcs: list[str] = []
        self.lines: list[str] = []
        self.real = rng.choice((T.FLOAT32, T.FLOAT32, T.FLOAT32, T.FLOAT64))
        self.spell = "float" if self.real is T.FLOAT32 and rng.random() < 0.6 else self.real.py

    def use(self, t: T.WType) -> None:
        """Work in ``t`` (a kind whose tile operations Warp offers for fewer types)."""
        self.real = t
        plain = {"float32": "float", "int32": "int"}.get(t.name)
        self.spell = plain if plain and self.rng.random() < 0.6 else t.py

    def name(self, base: str) -> str:
        return f"{base}_{self.suffix}"

    def constant(self, base: str, value: int) -> str:
        """A module-level tile size, ``wp.constant`` or a plain int (both are compile-time in kernels)."""
        name = self.name(base)
        if not hasattr(self, "wrapped"):  # one author declares every size of a kernel the same way
            self.wrapped = self.rng.random() < 0.85  # mostly wp.constant, as Warp's tile examples declare them
        self.constants.append(f"{name} = wp.constant({value})" if self.wrapped else f"{name} = {value}")
        return name

    def array(self, name: str, shape: tuple[int, ...], role: str = "in", lo: float = -1.0, hi: float = 1.0) -> str:
        self.params.append(Param(name, "array", self.real, len(shape), role, (lo, hi), shape))
        return name

    def scalar(self, name: str, lo: float, hi: float) -> str:
        self.params.append(Param(name, "scalar", self.real, 0, "in", (lo, hi)))
        return name

    def annotation(self, p: Param) -> str:
        spell = self.spell if p.dtype == self.real else {"int32": "int"}.get(p.dtype.name, p.dtype.py)
        if p.kind == "scalar":
            return spell
        kind = "wp.array2d" if p.ndim == 2 else "wp.array"
        return f"{kind}(dtype={spell})"

    def add(self, *lines: str) -> None:
        self.lines += lines

    def index(self, name: str, expr: str, p: float = 0.5) -> str:
        """A block's offset, named as a local first (``start = i * TILE``) or written in place."""
        if self.rng.random() < p:
            self.add(f"{name} = {expr}")
            return name
        return expr

    def offsets(self, tile: str, p: float = 0.5, uses: int = 2) -> tuple[str, str]:
        """A 2D block's row and column offsets: both named as locals, or both written in place. Offsets
        read by more than two loads and stores are always named: computed once, not at every call."""
        if uses > 2 or self.rng.random() < p:
            self.add(f"row = i * {tile}", f"col = j * {tile}")
            return "row", "col"
        return f"i * {tile}", f"j * {tile}"

    def cast(self, expr: str) -> str:
        """``expr`` converted to the working float type, spelled as the kernel spells it."""
        return f"{self.spell}({expr})"

    def literal(self, value: float) -> str:
        text = repr(float(value))
        return text if self.real is T.FLOAT32 else f"{self.real.py}({text})"

    def finish(self, base: str, dims: list[int], block_dim: int, purpose: str, detail: str = "",
               differentiable: bool = True) -> TileKernel:
        name = self.name(base)
        tids = "i" if len(dims) == 1 else "i, j"
        sig = ", ".join(f"{p.name}: {self.annotation(p)}" for p in self.params)
        body = "\n".join(self.lines)
        used = any(re.search(rf"\b{t}\b", body) for t in tids.split(", "))  # a single block needs no index
        kernel = ["@wp.kernel", f"def {name}({sig}):", docstring(sentence(purpose), sentence(detail) if detail else ""),
                  f"{INDENT}{tids} = wp.tid()" if used else None, *(INDENT + line for line in self.lines)]
        kernel = [line for line in kernel if line is not None]
        parts = ["import warp as wp", "\n".join(self.constants), *self.funcs, "\n".join(kernel)]
        text = "\n\n\n".join(p for p in parts if p) + "\n"
        meta = {"deterministic": True, "needs_runtime_objects": False, "reason": None,
                "differentiable": differentiable, "record": {"purpose": sentence(purpose)}}
        return TileKernel(name, text, self.params, dims, block_dim, len(self.lines), self.funcs, [], meta)


def _reduce(w: Writer, rng: random.Random, kind: str) -> TileKernel:
    """A sum, dot product or norm of whole arrays: per-block partial sums, added atomically into one
    total or written one per block for a second pass; a block may reduce several tiles in a loop."""
    # several blocks, each at its own offset: a kernel that reads only the first block's tiles would be
    # right for a one-block launch alone, and race into its total on any other
    blocks, size = rng.choice((2, 4, 8)), rng.choice((32, 64))
    tile = w.constant(rng.choice(("TILE_SIZE", "TILE", "TILE_LEN")), size)
    per_block = rng.choice((1, 1, 2, 4))  # tiles a block reduces
    span = w.constant(rng.choice(("TILES_PER_BLOCK", "NUM_TILES")), per_block) if per_block > 1 else None
    n = blocks * size * per_block
    if kind == "dot":
        x, other = rng.choice((("a", "b"), ("x", "y")))
        w.array(x, (n,))
        w.array(other, (n,))
    else:
        x = w.array(rng.choice(("values", "x", "data")), (n,))
    weights = w.array(rng.choice(("weights", "w")), (n,), lo=0.0, hi=1.0) \
        if kind != "norm" and rng.random() < 0.3 else None
    mean = kind == "sum" and not weights and rng.random() < 0.3
    partials = not mean and rng.random() < 0.35  # one partial sum per block, for a second pass
    total = w.array(rng.choice(("partial_sums", "block_sums")), (blocks,), "out") if partials else \
        w.array(rng.choice(("total", "result", "out")), (1,), "out")
    loaded = 1 + (kind == "dot") + bool(weights)  # arrays loaded at one offset: named once if read twice
    ahead = []  # the offset's line, first in the loop over a block's tiles
    if span:  # the block's k-th tile: the sizes are module constants, their product needs no wp.static
        start = rng.choice((f"(i * {span} + k) * {tile}", f"i * {span} * {tile} + k * {tile}"))
    else:
        start = w.index("start", f"i * {tile}", 1.0 if loaded > 1 else 0.4)
    if span and loaded > 1:
        ahead = [f"offset = {start}"]
        start = "offset"
    at = f", offset={start}"
    loads = [f"{x}_tile = wp.tile_load({x}, shape={tile}{at})"]
    terms = f"{x}_tile"
    dotted = None  # wp.tile_dot gives the block's partial dot product directly
    if kind == "dot":
        loads.append(f"{other}_tile = wp.tile_load({other}, shape={tile}{at})")
        terms = f"wp.tile_map(wp.mul, {x}_tile, {other}_tile)"
        if not weights and rng.random() < 0.4:
            dotted = f"wp.tile_dot({x}_tile, {other}_tile)"
        purpose = f"Dot product of {x} and {other}"
    elif kind == "norm":
        squared = rng.random() < 0.6
        terms = f"wp.tile_map(wp.mul, {x}_tile, {x}_tile)" if squared else f"wp.tile_map(wp.abs, {x}_tile)"
        purpose = f"Squared norm of {x}" if squared else f"L1 norm of {x}"
        if not squared:
            kind = "l1"
    else:
        purpose = f"Sum of {x}"
    if weights:
        loads.append(f"{weights}_tile = wp.tile_load({weights}, shape={tile}{at})")
        terms = f"wp.tile_map(wp.mul, {terms}, {weights}_tile)"
        purpose += f" weighted elementwise by {weights}"
    reduce = f"wp.tile_sum({terms})" if rng.random() < 0.9 else f"wp.tile_reduce(wp.add, {terms})"
    reduce = dotted or reduce
    if span:
        w.add(f"partial = wp.tile_zeros(shape=1, dtype={w.spell})", f"for k in range({span}):",
              *(INDENT + line for line in ahead + loads), f"{INDENT}partial += {reduce}")
    else:
        w.add(*loads, f"partial = {reduce}")
    if mean:  # every block adds its share of the mean
        w.add(f"partial = partial * (1.0 / {w.cast(f'{x}.shape[0]')})" if w.real is T.FLOAT32 else
              f"partial = partial * ({w.real.py}(1.0) / {w.real.py}({x}.shape[0]))")
        purpose = f"Mean of {x}"
    covers = f"{per_block} tiles of {size} values" if span else f"a tile of {size} values"
    if partials:
        w.add(f"wp.tile_store({total}, partial, offset=i)")
        purpose += f": each block reduces {covers} and writes its partial sum to {total}[i]"
        detail = "A second pass adds the partial sums"
    else:
        w.add(f"wp.tile_atomic_add({total}, partial)")
        purpose += f": each block reduces {covers} and adds its partial {'share' if mean else 'sum'} to {total}[0]"
        detail = f"The caller zeroes {total} before the launch"  # a sentence, not a capitalized name
    # a weighted sum is a dot product with the weights: named for what it computes, not as a plain sum
    base = rng.choice(NAMES[kind][3:6] if mean else NAMES[kind][-3:] if weights else NAMES[kind][:3])
    # |x| has a kink at zero that a finite-difference gradient check steps across; Warp 1.19's adjoints
    # of tile_reduce and tile_dot disagree with finite differences on the CPU
    smooth = kind != "l1" and "tile_reduce" not in reduce and "tile_dot" not in reduce
    return w.finish(base, [blocks], rng.choice(BLOCK_DIMS), purpose, detail, differentiable=smooth)


def _softmax(w: Writer, rng: random.Random) -> TileKernel:
    rows, cols = rng.choice((4, 8, 16)), rng.choice((32, 64))
    width = w.constant(rng.choice(("ROW_SIZE", "N", "NUM_CLASSES")), cols)
    x = w.array(rng.choice(("logits", "scores", "x")), (rows, cols))
    temperature = w.scalar("temperature", 0.5, 2.0) if rng.random() < 0.35 else None
    log = rng.random() < 0.35
    y = w.array(rng.choice(("log_probs", "log_p", "out")) if log else rng.choice(("probs", "y", "out")), (rows, cols), "out")
    view = rng.random() < 0.5  # a row view x[i], or a (1, N) tile at offset (i, 0)
    shape = f"({width},)" if view else f"(1, {width})"
    w.add(f"row = wp.tile_load({x}[i], shape={width})" if view else
          f"row = wp.tile_load({x}, shape=(1, {width}), offset=(i, 0))")
    if temperature:
        w.add(f"row = row * (1.0 / {temperature})" if w.real is T.FLOAT32 else
              f"row = row * ({w.real.py}(1.0) / {temperature})")
    w.add("# subtract the row maximum so that exp cannot overflow", "row_max = wp.tile_max(row)")
    if log:  # log-probabilities: the shifted logits less the log of their exponentials' sum
        w.add(f"shifted = row - wp.tile_broadcast(row_max, shape={shape})",
              "total = wp.tile_sum(wp.tile_map(wp.exp, shifted))")
        result = f"shifted - wp.tile_broadcast(wp.tile_map(wp.log, total), shape={shape})"
    else:
        w.add(f"e = wp.tile_map(wp.exp, row - wp.tile_broadcast(row_max, shape={shape}))", "total = wp.tile_sum(e)")
        result = f"e / wp.tile_broadcast(total, shape={shape})"
    w.add(f"wp.tile_store({y}[i], {result})" if view else f"wp.tile_store({y}, {result}, offset=(i, 0))")
    detail = f"It divides the logits by {temperature} first" if temperature else ""
    what = "Log-softmax" if log else "Softmax"
    return w.finish(rng.choice(NAMES["log_softmax" if log else "softmax"]), [rows], rng.choice(BLOCK_DIMS),
                    f"{what} of each row of {x}, one block per row", detail)


def _argmax(w: Writer, rng: random.Random) -> TileKernel:
    """The index of each row's largest (or smallest) value, one block per row."""
    w.use(T.FLOAT32)
    rows, cols = rng.choice((4, 8, 16)), rng.choice((32, 64))
    width = w.constant(rng.choice(("NUM_CLASSES", "N", "ROW_SIZE")), cols)
    largest = rng.random() < 0.6
    x = w.array(rng.choice(("logits", "scores")) if largest else rng.choice(("distances", "costs")), (rows, cols))
    labels = w.array(rng.choice(("labels", "predicted")) if largest else rng.choice(("nearest", "best_index")),
                     (rows,), "out")
    labels_param = w.params[-1]
    w.params[-1] = type(labels_param)(labels_param.name, "array", T.INT32, 1, "out", (0.0, 0.0), (rows,))
    spread = w.array(rng.choice(("spread", "value_range")), (rows,), "out") if rng.random() < 0.4 else None
    pick = "wp.tile_argmax" if largest else "wp.tile_argmin"
    w.add(f"row = wp.tile_load({x}[i], shape={width})", f"{labels}[i] = wp.tile_extract({pick}(row), 0)")
    if spread:
        w.add(f"{spread}[i] = wp.tile_extract(wp.tile_max(row), 0) - wp.tile_extract(wp.tile_min(row), 0)")
    what = "largest value (its predicted class)" if largest else "smallest value (the nearest candidate)"
    detail = f"It writes each row's range, max minus min, to {spread}" if spread else ""
    return w.finish(rng.choice(NAMES["argmax" if largest else "argmin"]), [rows], rng.choice(BLOCK_DIMS),
                    f"Index of each row's {what} in {x}, one block per row", detail, differentiable=False)


def _layer_norm(w: Writer, rng: random.Random) -> TileKernel:
    w.use(T.FLOAT32)  # tile_broadcast of a float64 reduction has no overload in Warp 1.19
    rows, cols = rng.choice((4, 8, 16)), rng.choice((32, 64))
    width = w.constant(rng.choice(("FEATURES", "N", "DIM")), cols)
    x = w.array(rng.choice(("x", "features", "inputs")), (rows, cols))
    rms = rng.random() < 0.35  # RMS normalisation: no mean subtracted
    affine = rng.random() < 0.5
    # the scale and shift named in one convention: gamma and beta, or weight and bias
    scale_name, shift_name = rng.choice((("gamma", "beta"), ("weight", "bias")))
    gamma = w.array(scale_name, (cols,), lo=0.5, hi=1.5) if affine or rms else None
    beta = w.array(shift_name, (cols,)) if affine and not rms else None
    eps = w.scalar("eps", 1.0e-5, 1.0e-5) if rng.random() < 0.5 else "1.0e-5"
    y = w.array(rng.choice(("y", "normalized", "out")), (rows, cols), "out")
    inv_n = f"1.0 / {w.cast(width)}"
    w.add(f"row = wp.tile_load({x}[i], shape={width})")
    if rms:
        w.add(f"mean_sq = wp.tile_sum(wp.tile_map(wp.mul, row, row)) * ({inv_n})",
              "# eps keeps a zero row finite",
              f"inv_rms = 1.0 / wp.sqrt(wp.tile_extract(mean_sq, 0) + {eps})",
              f"normed = wp.tile_map(wp.mul, row * inv_rms, wp.tile_load({gamma}, shape={width}))")
    else:
        w.add(f"mean = wp.tile_sum(row) * ({inv_n})",
              f"centered = row - wp.tile_broadcast(mean, shape=({width},))",
              f"var = wp.tile_sum(wp.tile_map(wp.mul, centered, centered)) * ({inv_n})",
              "# eps keeps a constant row finite",
              f"inv_std = 1.0 / wp.sqrt(wp.tile_extract(var, 0) + {eps})",
              "normed = centered * inv_std")
        if affine:
            w.add(f"normed = wp.tile_map(wp.mul, normed, wp.tile_load({gamma}, shape={width})) "
                  f"+ wp.tile_load({beta}, shape={width})")
    w.add(f"wp.tile_store({y}[i], normed)")
    if rms:
        return w.finish(rng.choice(NAMES["rms_norm"]), [rows], rng.choice(BLOCK_DIMS),
                        f"RMS normalisation of each row of {x}, scaled per feature by {gamma}, one block per row")
    detail = f"It scales by {gamma} and shifts by {beta} per feature" if affine else ""
    return w.finish(rng.choice(NAMES["layer_norm"]), [rows], rng.choice(BLOCK_DIMS),
                    f"Layer normalisation of each row of {x} to zero mean and unit variance, one block per row", detail)


def _matvec(w: Writer, rng: random.Random) -> TileKernel:
    rows, cols = rng.choice((4, 8, 16, 32)), rng.choice((32, 64))
    width = w.constant(rng.choice(("COLS", "N", "TILE_N")), cols)
    a = w.array(rng.choice(("A", "matrix", "weights")), (rows, cols))
    x = w.array(rng.choice(("x", "v", "inputs")), (cols,))
    bias = w.array(rng.choice(("b", "bias")), (rows,)) if rng.random() < 0.4 else None
    alpha = w.scalar(rng.choice(("alpha", "scale")), 0.5, 2.0) if rng.random() < 0.3 else None
    activation = rng.choice((None, None, "wp.tanh", "relu"))
    if activation == "relu":
        activation = w.name("relu")
        w.funcs.append(f"@wp.func\ndef {activation}(x: {w.spell}):\n{INDENT}return wp.max(x, {w.literal(0.0)})")
    y = w.array(rng.choice(("y", "out", "result")), (rows,), "out")
    # the row's value, a one-element tile: named for what it holds, never ``dot`` (the builtin wp.dot)
    acc = rng.choice(("acc", f"{y}_tile", "row_value"))
    w.add(f"row = wp.tile_load({a}[i], shape={width})", f"{x}_tile = wp.tile_load({x}, shape={width})",
          f"{acc} = wp.tile_sum(wp.tile_map(wp.mul, row, {x}_tile))")
    if alpha:
        w.add(f"{acc} = {acc} * {alpha}")
    if bias:
        w.add(f"{acc} = {acc} + wp.tile_load({bias}, shape=1, offset=i)")
    if activation:
        w.add(f"{acc} = wp.tile_map({activation}, {acc})")
    w.add(f"wp.tile_store({y}, {acc}, offset=i)")
    product = (f"{alpha} {a} {x}" if alpha else f"{a} {x}") + (f" + {bias}" if bias else "")
    if activation:
        fn = "tanh" if activation == "wp.tanh" else "relu"
        purpose = f"Dense layer {y} = {fn}({product}), one block per output row"
    else:
        purpose = f"Matrix-vector product {y} = {product}, one block per row"
    return w.finish(rng.choice(NAMES["dense" if activation else "matvec"]), [rows], rng.choice(BLOCK_DIMS), purpose,
                    differentiable=activation is None or activation == "wp.tanh")  # relu has a kink at zero


def _axpy(w: Writer, rng: random.Random) -> TileKernel:
    two_d = rng.random() < 0.4  # matrices in square tiles on a 2D launch, or vectors in 1D tiles
    blocks = [rng.choice((1, 2, 3)), rng.choice((1, 2, 3))] if two_d else [rng.choice((2, 4, 8))]
    size = rng.choice((8, 16)) if two_d else rng.choice((32, 64))
    tile = w.constant(rng.choice(("TILE_SIZE", "TILE", "BLOCK")), size)
    shape = (blocks[0] * size, blocks[1] * size) if two_d else (blocks[0] * size,)
    alpha = w.scalar(rng.choice(("alpha", "a", "scale")), -2.0, 2.0)
    beta = w.scalar("beta", -2.0, 2.0) if alpha == "alpha" and rng.random() < 0.4 else None
    w.array("x", shape)
    in_place = rng.random() < 0.5
    y = w.array("y", shape, "inout" if in_place else "in")
    out = y if in_place else w.array(rng.choice(("z", "out")), shape, "out")
    y_term = f"{beta} * y_tile" if beta else "y_tile"
    if two_d:  # two loads and a store at the block's offsets
        row, col = w.offsets(tile, uses=3)
        at = f"shape=({tile}, {tile}), offset=({row}, {col})"
    else:
        at = f"shape={tile}, offset={w.index('start', f'i * {tile}')}"
    w.add(f"x_tile = wp.tile_load(x, {at})", f"y_tile = wp.tile_load(y, {at})")
    if not beta and rng.random() < 0.5:  # y_tile += alpha * x_tile in place
        w.add(f"wp.tile_axpy({alpha}, x_tile, y_tile)", f"wp.tile_store({out}, y_tile, offset={at.split('offset=')[1]})")
    else:
        w.add(f"wp.tile_store({out}, {alpha} * x_tile + {y_term}, offset={at.split('offset=')[1]})")
    combination = f"{alpha} x + {beta} y" if beta else f"{alpha} x + y"
    over = f"{size} x {size} tiles of matrices" if two_d else f"tiles of {size} values"
    purpose = f"Scaled addition {out} = {combination} over {over}" + (", in place" if in_place else "")
    names = NAMES["axpy"][3:] if beta else NAMES["axpy"][:3]
    return w.finish(rng.choice(names), blocks, rng.choice(BLOCK_DIMS), purpose)


def _transpose(w: Writer, rng: random.Random) -> TileKernel:
    size = rng.choice((8, 16))
    tile = w.constant(rng.choice(("TILE", "TILE_DIM", "BLOCK")), size)
    if rng.random() < 0.35:  # the symmetric part of a square matrix: tile (i, j) and tile (j, i)
        nb = rng.choice((1, 2, 3))
        a = w.array(rng.choice(("a", "matrix", "A")), (nb * size, nb * size))
        b = w.array(rng.choice(("sym", "symmetric", "out")), (nb * size, nb * size), "out")
        shared = ', storage="shared"' if rng.random() < 0.5 else ""  # the tile read transposed
        w.add(f"a_ij = wp.tile_load({a}, shape=({tile}, {tile}), offset=(i * {tile}, j * {tile}))")
        if shared:
            w.add("# block (j, i) is read transposed: from shared memory, not registers")
        w.add(f"a_ji = wp.tile_load({a}, shape=({tile}, {tile}), offset=(j * {tile}, i * {tile}){shared})",
              f"wp.tile_store({b}, 0.5 * (a_ij + wp.tile_transpose(a_ji)), offset=(i * {tile}, j * {tile}))"
              if w.real is T.FLOAT32 else
              f"wp.tile_store({b}, {w.literal(0.5)} * (a_ij + wp.tile_transpose(a_ji)), "
              f"offset=(i * {tile}, j * {tile}))")
        return w.finish(rng.choice(NAMES["symmetrize"]), [nb, nb], rng.choice(BLOCK_DIMS),
                        "Symmetric part (A + A^T) / 2 of the square matrix" + ("" if a == "matrix" else f" {a}")
                        + f", one {size} x {size} tile per block")
    bi, bj = rng.choice((1, 2, 3)), rng.choice((1, 2, 3))
    a = w.array(rng.choice(("a", "src", "matrix")), (bi * size, bj * size))
    b = w.array(rng.choice(("b", "dst", "transposed")), (bj * size, bi * size), "out")
    scale = w.scalar(rng.choice(("alpha", "scale")), -2.0, 2.0) if rng.random() < 0.3 else None
    if scale:  # the scalar before the output, as callers pass it
        w.params.insert(len(w.params) - 2, w.params.pop())
    row, col = w.offsets(tile)
    shared = ', storage="shared"' if rng.random() < 0.4 else ""  # a transpose reads across the tile
    w.add(f"t = wp.tile_load({a}, shape=({tile}, {tile}), offset=({row}, {col}){shared})")
    moved = "wp.tile_transpose(t) * " + scale if scale else "wp.tile_transpose(t)"
    if rng.random() < 0.4:
        w.add(f"t_t = {moved}")
        moved = "t_t"
    w.add(f"wp.tile_store({b}, {moved}, offset=({col}, {row}))")
    what = f"{scale} times the transpose of {a}" if scale else f"the transpose of {a}"
    return w.finish(rng.choice(NAMES["transpose"]), [bi, bj],
                    rng.choice(BLOCK_DIMS), f"Write {what} into {b}, each block moving one {size} x {size} tile")


def _running(w: Writer, rng: random.Random) -> TileKernel:
    """A running maximum or minimum within each block, and optionally each block's extreme."""
    w.use(T.FLOAT32)
    blocks, size = rng.choice((2, 4, 8)), rng.choice((32, 64))
    tile = w.constant(rng.choice(("TILE_SIZE", "SCAN_SIZE", "BLOCK")), size)
    which = rng.choice(("max", "min"))
    x = w.array(rng.choice(("values", "signal", "x")), (blocks * size,))
    y = w.array(rng.choice((f"running_{which}", f"cum{which}")), (blocks * size,), "out")
    extremes = w.array(f"block_{which}", (blocks,), "out") if rng.random() < 0.5 else None
    w.add(f"t = wp.tile_load({x}, shape={tile}, offset=i * {tile})", f"s = wp.tile_scan_{which}_inclusive(t)",
          f"wp.tile_store({y}, s, offset=i * {tile})")
    if extremes:
        w.add(f"{extremes}[i] = s[{tile} - 1]")
    word = "maximum" if which == "max" else "minimum"
    names = (f"running_{which}", f"scan_{which}", f"block_running_{which}")  # the name says which extreme
    return w.finish(rng.choice(names), [blocks], rng.choice(BLOCK_DIMS),
                    f"Running {word} of {x} within each block of {size} values",
                    f"It writes each block's {word} to {extremes}" if extremes else "", differentiable=False)


def _scan(w: Writer, rng: random.Random) -> TileKernel:
    if rng.random() < 0.3:
        return _running(w, rng)
    counts = rng.random() < 0.5  # integer counts to offsets (as stream compaction needs) or float values
    w.use(T.INT32 if counts else T.FLOAT32)  # Warp's tile scans take float32, int32 and uint32
    blocks, size = rng.choice((2, 4, 8)), rng.choice((32, 64))
    tile = w.constant(rng.choice(("TILE_SIZE", "SCAN_SIZE", "BLOCK")), size)
    x = w.array(rng.choice(("counts", "sizes")) if counts else rng.choice(("values", "x")), (blocks * size,),
                lo=0 if counts else -1.0, hi=4 if counts else 1.0)
    inclusive = rng.random() < 0.5
    # an exclusive scan of counts gives each item's start; an inclusive one, each item's end
    names = (("ends", "cumulative_counts") if inclusive else ("offsets", "starts")) if counts else ("prefix", "y")
    y = w.array(rng.choice(names), (blocks * size,), "out")
    totals = w.array(rng.choice(("block_totals", "block_sums")), (blocks,), "out") if rng.random() < 0.6 else None
    scan = "wp.tile_scan_inclusive" if inclusive else "wp.tile_scan_exclusive"
    start = w.index("start", f"i * {tile}")
    w.add(f"t = wp.tile_load({x}, shape={tile}, offset={start})", f"s = {scan}(t)",
          f"wp.tile_store({y}, s, offset={start})")
    if totals:
        last = f"s[{tile} - 1]" if inclusive else f"s[{tile} - 1] + t[{tile} - 1]"
        if not inclusive:
            w.add("# the exclusive scan leaves out the block's last value")
        w.add(f"{totals}[i] = {last}")
    kind = "inclusive" if inclusive else "exclusive"
    purpose = f"{kind.capitalize()} prefix sums of {x} within each block of {size} values"
    detail = f"It writes each block's total to {totals}" if totals else ""
    return w.finish(rng.choice(NAMES["scan"]), [blocks], rng.choice(BLOCK_DIMS),
                    purpose, detail, differentiable=False)


def _elementwise(w: Writer, rng: random.Random) -> TileKernel:
    """One ``@wp.func`` of three values mapped over three tiles of a matrix, plus an optional per-column
    bias broadcast down each tile; each block handles one square tile."""
    w.use(T.FLOAT32)
    kind = rng.choice(sorted(ELEMENTWISE))
    helper, args, body, says, ranges = ELEMENTWISE[kind]
    fn = w.name(helper)
    why = "# tile_map applies a function to each element: the helper clamps one value with wp.clamp\n" if kind == "clip" else ""
    w.funcs.append(f"{why}@wp.func\ndef {fn}({', '.join(f'{a}: {w.spell}' for a in args)}):\n{INDENT}return {body}")
    size = rng.choice((8, 16))
    bi, bj = rng.choice(GRIDS[size])
    tile = w.constant(rng.choice(("TILE", "TILE_DIM", "BLOCK")), size)
    shape = (bi * size, bj * size)
    names = {"lerp": (("a", "b", "t"), ("src", "dst", "alpha")), "fma": (("x", "scale", "shift"), ("x", "gain", "offset")),
             "clip": (("x", "lower", "upper"), ("values", "lo", "hi"))}[kind]
    arrays = [w.array(name, shape, lo=lo, hi=hi) for name, (lo, hi) in zip(rng.choice(names), ranges)]
    bias = w.array(rng.choice(("bias", "column_bias")), (bj * size,)) if rng.random() < 0.4 else None
    out = w.array(rng.choice(("out", "output", "y")), shape, "out")
    # three loads and a store at one block offset: computed once, as row and column locals or one tuple
    if not bias and rng.random() < 0.4:
        w.add(f"block_offset = (i * {tile}, j * {tile})")  # not `offset`: an input may be called that
        where = "block_offset"
    else:
        row, col = w.offsets(tile, uses=4)
        where = f"({row}, {col})"
    at = f"shape=({tile}, {tile}), offset={where}"
    tiles = [f"{a}_tile" for a in arrays]
    w.add(*(f"{t} = wp.tile_load({a}, {at})" for t, a in zip(tiles, arrays)),
          f"result = wp.tile_map({fn}, {', '.join(tiles)})")
    if bias:
        w.add("# one bias per column, the same for every row of the tile",
              f"result += wp.tile_broadcast(wp.tile_load({bias}, shape={tile}, offset={col}), shape=({tile}, {tile}))")
    w.add(f"wp.tile_store({out}, result, offset={where})")
    what = says.format(**dict(zip(args, arrays)))
    said = "" if not bias else " plus a bias per column" + ("" if bias == "bias" else f" ({bias})")
    purpose = f"Elementwise {out} = {what}{said}"
    return w.finish(rng.choice(NAMES[kind]), [bi, bj], rng.choice(BLOCK_DIMS),
                    purpose + f", one {size} x {size} tile per block", differentiable=kind != "clip")


def _batch(w: Writer, rng: random.Random) -> TileKernel:
    """The sum or mean of a batch of matrices stacked along the rows, accumulated tile by tile."""
    count, size = rng.choice((2, 3, 4)), rng.choice((8, 16))
    bi, bj = rng.choice(GRIDS[size])
    rows = bi * size
    tile = w.constant(rng.choice(("TILE", "TILE_DIM")), size)
    frames = w.constant(rng.choice(("FRAMES", "BATCH", "NUM_MATRICES")), count)
    # the height of one stacked matrix: a constant of its own only where it differs from the tile
    # (several row blocks); otherwise read from the output, so the offsets hold for any launch
    fixed = bi > 1 and rng.random() < 0.5
    height = w.constant(rng.choice(("ROWS", "HEIGHT")), rows) if fixed else "height"
    stack = w.array(rng.choice(("stack", "frames", "batch")), (count * rows, bj * size))
    mean = rng.random() < 0.5
    out = w.array(rng.choice(("mean", "average")) if mean else rng.choice(("total", "summed")), (rows, bj * size), "out")
    if not fixed:
        w.add(f"height = {out}.shape[0]  # rows of each stacked matrix")
    row, col = w.offsets(tile, uses=3)
    # the sum starts from the first matrix (no zeroed tile to add it to) and goes on from the second
    w.add(f"acc = wp.tile_load({stack}, shape=({tile}, {tile}), offset=({row}, {col}))",
          f"for k in range(1, {frames}):",
          f"{INDENT}acc += wp.tile_load({stack}, shape=({tile}, {tile}), offset=(k * {height} + {row}, {col}))")
    if mean:
        w.add(f"acc = acc * (1.0 / {w.cast(frames)})" if w.real is T.FLOAT32 else
              f"acc = acc * ({w.real.py}(1.0) / {w.real.py}({frames}))")
    w.add(f"wp.tile_store({out}, acc, offset=({row}, {col}))")
    what = "Mean" if mean else "Sum"
    # the sizes are the module constants': the docstring does not repeat them
    return w.finish(rng.choice(NAMES["batch_mean" if mean else "batch_sum"]), [bi, bj], rng.choice(BLOCK_DIMS),
                    f"{what} of the matrices stacked along the rows of {stack}, one square tile per block")


def _complex_mul(w: Writer, rng: random.Random) -> TileKernel:
    """The pointwise product of two complex arrays kept as separate real and imaginary parts (as an
    FFT convolution multiplies spectra), or the product with the second conjugated (a cross-correlation)."""
    blocks, size = rng.choice((2, 4, 8)), rng.choice((32, 64))
    tile = w.constant(rng.choice(("TILE_SIZE", "TILE", "BINS")), size)
    a, b = rng.choice((("a", "b"), ("x", "h"), ("signal", "kernel")))
    n = blocks * size
    a_re, a_im, b_re, b_im = (w.array(f"{name}_{part}", (n,)) for name in (a, b) for part in ("re", "im"))
    out = rng.choice(("c", "y", "product"))
    c_re, c_im = w.array(f"{out}_re", (n,), "out"), w.array(f"{out}_im", (n,), "out")
    conj = rng.random() < 0.35
    start = w.index("start", f"i * {tile}", 0.6)
    parts = ("ar", "ai", "br", "bi")
    w.add(*(f"{p} = wp.tile_load({arr}, shape={tile}, offset={start})"
            for p, arr in zip(parts, (a_re, a_im, b_re, b_im))))
    if conj:
        w.add(f"# {a} times the conjugate of {b}: (ar + i ai)(br - i bi)",
              "real = wp.tile_map(wp.mul, ar, br) + wp.tile_map(wp.mul, ai, bi)",
              "imag = wp.tile_map(wp.mul, ai, br) - wp.tile_map(wp.mul, ar, bi)")
    else:
        w.add("# (ar + i ai)(br + i bi) = (ar br - ai bi) + i (ai br + ar bi)",
              "real = wp.tile_map(wp.mul, ar, br) - wp.tile_map(wp.mul, ai, bi)",
              "imag = wp.tile_map(wp.mul, ai, br) + wp.tile_map(wp.mul, ar, bi)")
    w.add(f"wp.tile_store({c_re}, real, offset={start})", f"wp.tile_store({c_im}, imag, offset={start})")
    what = f"{a} times the conjugate of {b}" if conj else f"{a} times {b}"
    return w.finish(rng.choice(NAMES["correlate" if conj else "complex_mul"]), [blocks], rng.choice(BLOCK_DIMS),
                    f"Multiply complex values pointwise, {out} = {what}, real and imaginary parts in separate arrays, "
                    f"one tile of {size} values per block")


KINDS = {"sum": lambda w, rng: _reduce(w, rng, "sum"), "dot": lambda w, rng: _reduce(w, rng, "dot"),
         "norm": lambda w, rng: _reduce(w, rng, "norm"), "softmax": _softmax, "layer_norm": _layer_norm,
         "argmax": _argmax,
         "matvec": _matvec, "axpy": _axpy, "transpose": _transpose, "scan": _scan, "elementwise": _elementwise,
         "batch": _batch, "complex_mul": _complex_mul}
# kinds that read several tiles and write one or two are drawn more often, as Warp's tile code
# mostly combines tiles rather than reducing one
WEIGHTS = {"elementwise": 1.5, "batch": 1.25, "complex_mul": 1.25, "axpy": 1.25, "transpose": 1.25}


def build(kind: str, rng: random.Random, suffix: str) -> TileKernel:
    return KINDS[kind](Writer(rng, suffix), rng)


@register("tile_blocks", 4.0, source="patterns")
def tile_blocks(rng, name, suffix, complexity):
    kinds = sorted(KINDS)
    return build(rng.choices(kinds, [WEIGHTS.get(k, 1.0) for k in kinds])[0], rng, suffix)
