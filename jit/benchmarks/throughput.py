"""Pairs per second: the pipeline against the straightforward way, on the same kernels.

The straightforward way is what a simple tool does: for every kernel and every device, put
the kernel in its own Python module, build that module with Warp and take the generated
source, then write one JSON line. It runs here in this one process, on sources generated
beforehand: its rate is Warp's codegen alone (one module per kernel), the figure the pipeline
is held to. The time the generator took for those sources is printed beside it, with the rate
of the two together.

The pipeline is timed as a whole command (`python -m jit.code.synthesis.pipeline`, start-up,
generation, writing), on the same seed and count, so both see the same kernels.

    python jit/benchmarks/throughput.py --count 6000 --workers 2
    python jit/benchmarks/throughput.py --count 2000 --validate compile --baseline-count 100

``--profile N`` profiles N pairs made by one worker in this process (cProfile) and prints where
a worker's time goes: Warp's build and code generation (defining the module, building it,
generating the code of each kernel: ``build_batch``), the generator, the checks, the rest.

Memory: the pipeline's run is sampled as it goes (``jit/benchmarks/memory.py``: summed PSS of
the command and all its worker processes every 0.5 s), and the table gives its peak and the
peak of any one worker. --memory also runs --count/10 pairs to show how memory grows with the count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from jit.benchmarks.memory import Figures, sample_tree


def straightforward(seed: int, count: int, devices: tuple[str, ...], validate: str, out_path: str) -> tuple[float, float]:
    """(seconds of codegen, seconds of generation) for ``count`` kernels: the sources are generated
    first, then each gets one module and one build per device."""
    from jit.code.extraction import warp_backend as wb
    from jit.code.extraction.compile import compile_batch
    from jit.code.synthesis.generator import generate

    wb.init()
    generate(seed, 0)  # the generator's caches (census, seed kernels), as a pipeline worker warms them
    t0 = time.perf_counter()
    specs = [generate(seed, index) for index in range(count)]
    generation = time.perf_counter() - t0
    t0 = time.perf_counter()
    with open(out_path, "w") as out:
        for index, spec in enumerate(specs):
            record = {"python_source": spec.source}
            for device in devices:
                handle = wb.define([spec.source], f"straight_{index}_{device}")
                try:
                    kernel = handle.namespace[spec.name]
                    options = wb.resolve_options(handle.module, device)
                    build = wb.Build(handle.module, [kernel], options, device)
                    record[device] = build.module_source(device)
                    if validate == "compile":
                        compile_batch(handle.module, [kernel], device, optimization_level=None)
                finally:
                    handle.release()
            out.write(json.dumps(record) + "\n")
    return time.perf_counter() - t0, generation


# where a worker's time goes: (label, qualified function names whose cumulative time it is)
PROFILE_SHARES = (
    ("Warp's build and codegen (build_batch)", ("batch_generator.py", "build_batch")),
    ("generator (generate)", ("batch_generator.py", "_generate")),
    ("checks (semantic gate, validation)", ("checks/__init__.py", "apply")),
)


def profile(seed: int, count: int, tmp: str) -> None:
    """Print the shares of one in-process worker's time (cProfile)."""
    import cProfile
    import pstats

    from jit.code.synthesis import pipeline

    argv = ["--count", str(count), "--seed", str(seed), "--output", os.path.join(tmp, "profiled"), "--device", "both",
            "--workers", "1", "--validate", "none", "-q"]
    pipeline.main(["--count", "8", "--seed", str(seed), "--output", os.path.join(tmp, "warm"), "--workers", "1",
                   "--validate", "none", "-q"])  # imports and on-disk caches, as a warm worker has them
    profiler = cProfile.Profile()
    profiler.runcall(pipeline.main, argv)
    stats = pstats.Stats(profiler)
    cumulative = {(f, n): ct for (f, _, n), (_, _, _, ct, _) in stats.stats.items()}

    def seconds(file: str, name: str) -> float:
        return max((t for (f, n), t in cumulative.items() if f.endswith(file) and n == name), default=0.0)

    worker = seconds("batch_generator.py", "run_part")
    print(f"one worker, {count} pairs, profiled: {worker:.1f} s in run_part")
    shown = 0.0
    for label, (file, name) in PROFILE_SHARES:
        t = seconds(file, name)
        shown += t
        print(f"  {label}: {t:.1f} s ({100 * t / worker:.0f}%)")
    print(f"  the rest (dedup, records, writing): {worker - shown:.1f} s ({100 * (worker - shown) / worker:.0f}%)")


def pipeline_command(seed, count, workers, validate, out, extra=()) -> list[str]:
    return [sys.executable, "-m", "jit.code.synthesis.pipeline", "--count", str(count), "--seed", str(seed),
            "--output", out, "--device", "both", "--workers", str(workers), "--validate", validate,
            "--shard-size", str(max(50, min(1000, count // max(workers, 1) // 2 or 1))), "-q", *extra]


def run_pipeline(seed, count, workers, validate, tmp) -> tuple[float, Figures]:
    """(seconds, memory figures) for the whole pipeline command, its processes sampled as it runs."""
    out = os.path.join(tmp, f"ds_{count}_{workers}_{validate}")
    t0 = time.perf_counter()
    memory = sample_tree(subprocess.Popen(pipeline_command(seed, count, workers, validate, out)))
    seconds = time.perf_counter() - t0
    if memory.returncode:
        raise subprocess.CalledProcessError(memory.returncode, "pipeline")
    return seconds, memory


def memory_cell(m: Figures) -> str:
    return f"peak {m.peak_pss:.0f} MiB summed PSS (driver {m.driver_peak_pss:.0f}, largest worker {m.worker_peak_pss:.0f})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=6000)
    p.add_argument("--baseline-count", type=int, default=None,
                   help="kernels for the straightforward way (default: same as --count); its rate is per pair")
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--validate", choices=("none", "compile"), default="none")
    p.add_argument("--memory", action="store_true", help="also measure --count/10 pairs, to compare peak memory")
    p.add_argument("--profile", type=int, metavar="N", help="only profile N pairs made by one worker in this process")
    args = p.parse_args(argv)
    if args.profile:
        with tempfile.TemporaryDirectory() as tmp:
            profile(args.seed, args.profile, tmp)
        return 0

    base_n = args.baseline_count or args.count
    with tempfile.TemporaryDirectory() as tmp:
        pipe_s, pipe_mem = run_pipeline(args.seed, args.count, args.workers, args.validate, tmp)
        base_s, gen_s = straightforward(args.seed, base_n, ("cpu", "cuda"), args.validate, os.path.join(tmp, "base.jsonl"))
        pipe_rate, base_rate = args.count / pipe_s, base_n / base_s
        print(f"machine: {os.cpu_count()} cores; validate={args.validate}; devices=cpu+cuda, forward+backward")
        print(f"straightforward (1 process, module+build per kernel per device): {base_n} pairs in {base_s:.1f} s "
              f"= {base_rate:.1f} pairs/s; generating their sources took {gen_s:.1f} s more "
              f"({base_n / (base_s + gen_s):.1f} pairs/s with it, ratio {pipe_rate * (base_s + gen_s) / base_n:.2f}x)")
        print(f"pipeline (whole command, {args.workers} workers): {args.count} pairs in {pipe_s:.1f} s "
              f"= {pipe_rate:.1f} pairs/s; {memory_cell(pipe_mem)}")
        print(f"ratio against codegen alone: {pipe_rate / base_rate:.2f}x")
        if args.memory:
            small = max(1, args.count // 10)
            _, small_mem = run_pipeline(args.seed, small, args.workers, args.validate, tmp)
            print(f"pipeline, {small} pairs: {memory_cell(small_mem)}; "
                  f"ratio of peaks {pipe_mem.peak_pss / max(small_mem.peak_pss, 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
