"""Selecting the seeds: ``python -m jit.code.synthesis.mutate --rebuild-seeds`` rewrites the list.

Candidates are the self-contained, concrete kernels of the reference corpus's seed half and of
Warp's library code. Each is stripped of test scaffolding and kept if it still computes
something, passes the dataset's semantic gate (no code a reviewer would call pointless), can
be mutated far enough from itself, is not a near copy of a seed kept before,
builds alone for CPU and CUDA (a tile kernel at the block_dim its file launches it with), and
runs with the launch read from its code (``infer``, ``verify``); a kernel that needs a mesh,
hash grid, BVH or volume is kept without a launch, at a small share of the draws. For each seed
the precision changes that build are recorded too.

Weights: the square root of a seed's token count (larger kernels offer more to mutate), times
a factor for where it comes from (examples and library code are what people write; tests
often exercise one builtin), times a factor for a docstring (a mutant's purpose is then its
author's words). Kernels of tests that only probe a feature are no seeds (``prepare``). What it leaves out: the mutations (``driver``).
"""

from __future__ import annotations

import ast
import math
import random
from collections.abc import Callable

from jit.code.analysis import reference
from jit.code.analysis.tokens import jaccard, norm_tokens
from jit.code.extraction import warp_backend as wb
from jit.code.synthesis.mutate import driver, retype, seed_list, verify
from jit.code.synthesis.mutate.infer import infer
from jit.code.synthesis.mutate.seed_list import Seed
from jit.code.synthesis.mutate.syntax import uses_tiles, wp_attr, walk
from jit.code.synthesis.mutate.unit import Unit

ORIGIN_WEIGHT = {"examples": 4.0, "_src": 2.5, "tests": 0.5}
DOCUMENTED = 1.5  # a kernel whose author said what it does gives mutants a purpose in their words
NOT_RUNNABLE_SHARE = 0.06  # of the total draw weight, at most
NEAR_COPY = 0.9  # a candidate this similar to a kept seed adds nothing
PROBES = 4
DEFAULT_BLOCK_DIM = 64
BLOCK_DIM_NAMES = ("TILE_THREADS", "BLOCK_DIM", "TILE_DIM", "NUM_THREADS", "TILE_SIZE", "BLOCK_SIZE")


# kernels that race by design: every triangle writes the outputs of the vertices it shares with its
# neighbors (the last writer wins), which readers take for a bug and a model should not learn
LEFT_OUT = frozenset({("warp/_src/render/utils.py", "solidify_mesh_kernel")})


def eligible(kernel: reference.RealKernel) -> bool:
    """Self-contained, concrete, no native or custom-gradient functions, not ``LEFT_OUT``, and (for
    the reference corpus) of the seed half."""
    if (kernel.path, kernel.name) in LEFT_OUT:
        return False
    if not kernel.self_contained or kernel.generic:
        return False
    if kernel.path.startswith(reference.REFERENCE_ROOTS) and kernel.half != "seed":
        return False
    attrs = {wp_attr(n) for n in walk(ast.parse(kernel.context)) if isinstance(n, ast.Attribute)}
    return not attrs & {"func_native", "func_grad", "func_replay"}


def candidates() -> list[reference.RealKernel]:
    found = [k for k in reference.kernels("seed") if eligible(k)]
    return found + [k for k in seed_list.library_kernels() if eligible(k)]


def int_constants(tree: ast.Module) -> dict[str, int]:
    """Module-level ``NAME = 64`` and ``NAME = wp.constant(64)``."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = (
                node.value.args[0]
                if isinstance(node.value, ast.Call) and wp_attr(node.value) == "constant" and node.value.args
                else node.value
            )
            if isinstance(value, ast.Constant) and type(value.value) is int:
                out[node.targets[0].id] = value.value
    return out


def launched_block_dims(tree: ast.Module) -> list[tuple[str | None, int]]:
    """(launched kernel's name, block_dim) of every launch in a file whose ``block_dim=`` is a
    literal or a module-level constant."""
    constants = int_constants(tree)
    out = []
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        given = next((k.value for k in node.keywords if k.arg == "block_dim"), None)
        value = (
            given.value
            if isinstance(given, ast.Constant)
            else constants.get(given.id) if isinstance(given, ast.Name) else None
        )
        if type(value) is not int or value < 1:
            continue
        target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "kernel"), None)
        name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
        out.append((name, value))
    return out


def launch_block_dim(kernel: reference.RealKernel) -> int | None:
    """The block_dim a tile kernel's file launches it with (its own launch, else the file's most
    common one, else a constant like ``TILE_THREADS``, else 64); None for other kernels."""
    if not uses_tiles(ast.parse(kernel.context)):
        return None
    tree = ast.parse((seed_list.distribution_root() / kernel.path).read_text(encoding="utf-8"))
    launches = launched_block_dims(tree)
    own = [v for name, v in launches if name == kernel.name]
    for values in (own, [v for _, v in launches]):
        if values:
            return max(sorted(set(values)), key=values.count)
    constants = int_constants(tree)
    return next((constants[n] for n in BLOCK_DIM_NAMES if n in constants), DEFAULT_BLOCK_DIM)


def mutable(text: str, name: str, block_dim: int | None) -> bool:
    """True if the mutations can take the kernel far enough from itself (not a one-liner)."""
    launch = infer(Unit(text, name), block_dim)  # the mutations that edit a launch need one
    for t in range(PROBES):
        try:
            driver.mutate(
                text,
                name,
                launch,
                random.Random(f"probe:{t}"),
                "probe",
                retype.precision_options(ast.parse(text)),
                layout=False,
            )
            return True
        except driver.MutationError:
            pass
    return False


def rebuild_seeds(path=seed_list.SEEDS_FILE, batch: int = 40, log: Callable = print) -> list[Seed]:
    prepared = select(log)
    by_dim: dict[int | None, list] = {}
    for item in prepared:
        by_dim.setdefault(item["block_dim"], []).append(item)
    chosen: list[Seed] = []
    for block_dim in sorted(by_dim, key=lambda b: -1 if b is None else b):
        group = by_dim[block_dim]
        for start in range(0, len(group), batch):
            chosen += build_and_run(group[start : start + batch], f"{block_dim or 0}_{start}", block_dim, log)
            log(f"  block_dim {block_dim}: {min(start + batch, len(group))}/{len(group)}: {len(chosen)} seeds")
    chosen = balance(sorted(chosen, key=lambda s: (s.path, s.line)))
    write(path, chosen)
    return chosen


def select(log: Callable) -> list[dict]:
    """Prepared candidates that compute, can be mutated and are not near copies of each other."""
    out, kept, reasons = [], [], {}
    for k in candidates():
        made = seed_list.prepare(k)
        if isinstance(made, str):
            reasons[made] = reasons.get(made, 0) + 1
            continue
        name, text = made
        defects = semantic_defects(text)
        if defects:
            reasons[f"semantic: {defects[0].kind}"] = reasons.get(f"semantic: {defects[0].kind}", 0) + 1
            continue
        tokens = norm_tokens(text)
        print_ = driver.fingerprint(text)
        if any(abs(len(t) - len(tokens)) < 0.2 * len(tokens) and jaccard(f, print_) >= NEAR_COPY for t, f in kept):
            reasons["near copy of another seed"] = reasons.get("near copy of another seed", 0) + 1
            continue
        block_dim = launch_block_dim(k)
        if not mutable(text, name, block_dim):
            reasons["cannot be mutated far enough"] = reasons.get("cannot be mutated far enough", 0) + 1
            continue
        kept.append((tokens, print_))
        out.append({"kernel": k, "name": name, "text": text, "tokens": len(tokens), "block_dim": block_dim})
    log(f"{len(out)} candidates; left out: {reasons}")
    return out


def semantic_defects(text: str) -> list:
    """What the dataset's semantic gate finds in a prepared seed (``x * 1.0`` written to test an
    identity, a value computed for a check that is gone): its mutants would be rejected too.
    Imported here only, when the list is rebuilt: mutating never depends on the checks."""
    from jit.code.checks.semantic import defects

    return defects(text)


def build_and_run(group: list[dict], tag: str, block_dim: int | None, log: Callable) -> list[Seed]:
    """The items of ``group`` that build for CPU and CUDA and run (or need runtime objects)."""
    units = {}
    for i, item in enumerate(group):
        unit = Unit(item["text"], item["name"], f"s{tag}_{i}")
        unit.launch = infer(unit, block_dim)
        units[unit.kernel_name] = (item, unit)
    good = builds({n: u.render() for n, (_, u) in units.items()}, f"b{tag}", block_dim)
    dtypes = precision_builds({n: units[n] for n in good}, tag, block_dim)
    runnable = [
        verify.Candidate(n, n, units[n][1].render(), units[n][1].launch)
        for n in sorted(good)
        if not units[n][1].launch.reason
    ]
    ran = verify.verify(runnable) if runnable else {}
    out = []
    for n in sorted(good):
        item, unit = units[n]
        launch = ran.get(n, unit.launch)
        if isinstance(launch, str):
            log(f"    {item['kernel'].path}:{item['kernel'].name}: {launch}")
            continue
        launch.block_dim = block_dim
        row = launch.to_dict()
        k = item["kernel"]
        weight = seed_weight(k.path, item["text"], item["name"])
        out.append(Seed(k.module, k.path, k.name, k.line, item["name"], dtypes.get(n, ()), block_dim, row, weight))
    return out


def seed_weight(path: str, text: str, name: str) -> float:
    """The square root of a seed's token count, times its origin's factor, times ``DOCUMENTED``
    when its kernel has a docstring."""
    kernel = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    documented = DOCUMENTED if ast.get_docstring(kernel) else 1.0
    return math.sqrt(len(norm_tokens(text))) * ORIGIN_WEIGHT.get(path.split("/")[1], 1.0) * documented


def builds(sources: dict[str, str], tag: str, block_dim: int | None) -> set[str]:
    """Names of the kernels (name -> source, one module) that build and compile for CPU and CUDA."""
    from jit.code.extraction.compile import compile_batch

    try:
        handle = wb.define(list(sources.values()), f"jit_mutant_seeds_{tag}")
    except Exception:
        ok = set()
        for n, s in sources.items():
            ok |= builds({n: s}, f"{tag}_{n}", block_dim) if len(sources) > 1 else set()
        return ok
    try:
        kernels = [handle.namespace[n] for n in sources]
        ok = {k.key for k in kernels}
        for device in ("cpu", "cuda"):
            verdict, _ = compile_batch(handle.module, kernels, device, block_dim=block_dim)
            ok -= {key for key, reason in verdict.items() if reason}
        return {n for n, k in zip(sources, kernels) if k.key in ok}
    finally:
        handle.release()


def precision_builds(units: dict, tag: str, block_dim: int | None) -> dict[str, tuple[str, ...]]:
    variants = {}
    for n, (item, unit) in units.items():
        for target in retype.precision_options(unit.tree):
            variant = Unit(item["text"], item["name"], f"{unit.suffix}_{target}")
            retype.change_precision(variant, target)
            variants[variant.kernel_name] = (n, target, variant.render())
    ok = builds({v: src for v, (_, _, src) in variants.items()}, f"d{tag}", block_dim) if variants else set()
    out: dict[str, tuple[str, ...]] = {}
    for v, (n, target, _) in sorted(variants.items()):
        if v in ok:
            out[n] = out.get(n, ()) + (target,)
    return out


def balance(chosen: list[Seed]) -> list[Seed]:
    """Seeds without a launch get at most ``NOT_RUNNABLE_SHARE`` of the draws."""
    runs = sum(s.weight for s in chosen if s.runnable)
    idle = sum(s.weight for s in chosen if not s.runnable)
    cap = NOT_RUNNABLE_SHARE * runs / (1 - NOT_RUNNABLE_SHARE)
    if idle <= cap or not idle:
        return chosen
    scale = cap / idle
    return [
        (
            s
            if s.runnable
            else Seed(s.module, s.path, s.name, s.line, s.kernel, s.dtypes, s.block_dim, s.launch, s.weight * scale)
        )
        for s in chosen
    ]


def write(path, chosen: list[Seed]) -> None:
    import json

    dist = reference.distribution()
    rows = ",\n".join(json.dumps(s.to_dict(), separators=(",", ":")) for s in chosen)  # one seed a line
    path.write_text(f'{{"distribution": {json.dumps(dist)},\n"seeds": [\n{rows}\n]}}\n')
