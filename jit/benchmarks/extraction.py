"""Extraction time per kernel for cpu, cuda and both, on real and synthetic kernels.

Real: every kernel of the ``warp.examples`` modules that import without optional extras
(the ``benchmarks`` folder is left out: its modules run benchmarks when imported).
Synthetic: small kernels defined from source text, each in its own module, released after.
Time is wall-clock of ``extract_many`` per Warp module (build + code generation), the best
of ``--repeat`` runs after one warm-up run, divided by the number of concrete kernels.
Importing is not timed.

    python jit/benchmarks/extraction.py [--synthetic 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import time

from jit.code.harvest import modules as discover
from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import extract_many

SETTINGS = {"cpu": ("cpu",), "cuda": ("cuda",), "both": ("cpu", "cuda")}

TEMPLATE = """
import warp as wp


@wp.func
def f{i}(x: float, y: float):
    return {expr}


@wp.kernel
def k{i}(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range({loop}):
        s = s + f{i}(a[i], b[i] * float(j))
    out[i] = s
"""

EXPRS = ["x * y + 1.0", "wp.sin(x) * wp.cos(y)", "wp.sqrt(wp.abs(x)) - y", "wp.max(x, y) * 0.5",
         "wp.exp(-x * x) + y", "x / (1.0 + y * y)"]


def example_groups() -> list[list]:
    """Kernel groups (one per Warp module) of the importable warp.examples modules."""
    groups = []
    for source in discover.resolve_target("warp.examples"):
        if ".benchmarks." in source.name:
            continue
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                module, _ = discover.import_source(source)
        except (Exception, SystemExit):
            continue
        by_module: dict[int, list] = {}
        for kernel in discover.module_kernels(module):
            if wb.kernel_overloads(kernel):
                by_module.setdefault(id(wb.kernel_module(kernel)), []).append(kernel)
        groups += by_module.values()
    return groups


def time_groups(groups: list[list], devices: tuple[str, ...], repeat: int) -> tuple[int, float]:
    """(concrete kernels extracted, best total seconds); groups that fail are left out."""
    best, count = float("inf"), 0
    for _ in range(repeat):
        total, count = 0.0, 0
        for group in groups:
            start = time.perf_counter()
            try:
                count += len(extract_many(group, devices))
            except Exception:
                continue
            total += time.perf_counter() - start
        best = min(best, total)
    return count, best


def time_synthetic(n: int, devices: tuple[str, ...], seed: int = 0) -> tuple[int, float]:
    rng = random.Random(seed)
    total = 0.0
    for i in range(n):
        source = TEMPLATE.format(i=i, expr=rng.choice(EXPRS), loop=rng.randint(1, 4))
        handle, names = wb.define_one(source, f"jit_bench_{'_'.join(devices)}_{i}")
        start = time.perf_counter()
        extract_many([names[f"k{i}"]], devices)
        total += time.perf_counter() - start
        handle.release()
    return n, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--synthetic", type=int, default=200, help="synthetic kernels per setting")
    parser.add_argument("--repeat", type=int, default=3, help="runs over the examples; the best counts")
    args = parser.parse_args(argv)
    wb.init()
    groups = example_groups()
    time_groups(groups, SETTINGS["both"], 1)  # warm-up: Warp fills lazy caches on first use
    time_synthetic(20, SETTINGS["both"], seed=1)
    rows = []
    for name, devices in SETTINGS.items():
        rows.append(("warp.examples", name, *time_groups(groups, devices, args.repeat)))
        rows.append(("synthetic", name, *time_synthetic(args.synthetic, devices)))
    print(f"warp {wb.warp_version()}")
    print(f"{'kernels from':<15}{'device':<8}{'kernels':>9}{'total s':>10}{'ms/kernel':>11}")
    for source, device, count, seconds in rows:
        print(f"{source:<15}{device:<8}{count:>9}{seconds:>10.2f}{1000 * seconds / max(count, 1):>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
