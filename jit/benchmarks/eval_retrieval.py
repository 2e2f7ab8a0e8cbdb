"""The retrieval baseline on a benchmark, per training set, task and tier: what a training set is worth.

For each training set and each task the benchmark serves, ``jit-synth eval --baseline retrieval``
(the nearest training record by prompt 4-grams, its answer with names mapped) is scored as any
model is, and its figures per tier are kept: exact, compiles, run-and-match (the tasks that run
on the CPU), chrF. A training set is a dataset folder, or ``seed-half``: the seed half of the
installed Warp's examples and tests (the half the mutants and the census read, never the
benchmark's), staged without test scaffolding as ``bench build`` stages the measure half and
extracted by ``jit-synth extract`` into ``--seed-half-dir`` (reused when it is there).

    python jit/benchmarks/eval_retrieval.py --bench out/bench --train out/train --train seed-half \\
        --output out/retrieval.json

Prints a Markdown table per training set. One process, fresh inputs from ``--seed``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from jit.code.evaluation import baselines, bench, score

TASKS = ("py2cpp", "cuda2py", "py2cuda", "py2cuda-adjoint", "purpose2py")
SHOWN = (("exact", "exact"), ("compiles", "compiles"), ("matches", "runs and matches"), ("chrf", "chrF"))


def seed_half(folder: str) -> str:
    """An `extract` dataset of the seed half's self-contained kernels in ``folder`` (built once)."""
    from jit.code.commands import bench as bench_command
    from jit.code.commands import extract
    from jit.code.engine import writers

    if os.path.isdir(folder) and writers.data_files(folder):
        return folder
    with tempfile.TemporaryDirectory(prefix="jit-seed-half-") as staged:
        kernels = os.path.join(staged, "kernels")
        bench_command.stage_reference(kernels, half="seed")
        status = extract.main([kernels, "--output", folder, "--workers", "1", "--validate", "compile",
                               "--overwrite", "-q"])
    if status:
        raise SystemExit(f"extracting the seed half failed (exit status {status})")
    return folder


def measure(records: dict, task: str, train: list[dict], seed: int) -> dict:
    todo = score.applicable(records, task)
    t0 = time.perf_counter()
    answers = baselines.retrieval(todo, task, train)
    looked_up = time.perf_counter() - t0
    _, result = score.evaluate(task, todo, answers, seed)
    return {"mode": result["mode"], "retrieval_seconds": round(looked_up, 1), "eval_seconds": result["seconds"],
            "tiers": {t: {k: f[k] for k, _ in SHOWN} | {"kernels": f["ids"]} for t, f in result["tiers"].items()}}


def table(name: str, figures: dict) -> str:
    lines = [f"**{name}**", "", "| task | tier | kernels | " + " | ".join(h for _, h in SHOWN) + " |",
             "|---|---|---|" + "---|" * len(SHOWN)]
    for task, result in figures.items():
        for tier, f in result["tiers"].items():
            cells = ["-" if f[k] is None else f"{f[k]:.1f}" for k, _ in SHOWN]
            lines.append(f"| {task} | {tier} | {f['kernels']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="benchmark folder (jit-synth bench build)")
    p.add_argument("--train", action="append", required=True,
                   help="a training dataset folder, or seed-half (several allowed)")
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--seed", type=int, default=0, help="seed of the fresh inputs (default 0)")
    p.add_argument("--seed-half-dir", default=os.path.join(tempfile.gettempdir(), "jit-synth-seed-half"),
                   help="where the seed half's extract dataset is built (default: in the temp folder)")
    p.add_argument("--output", help="JSON file for the figures")
    args = p.parse_args(argv)
    from jit.code.engine import writers

    _, records = bench.read(args.bench)
    out = {"bench": os.path.abspath(args.bench), "kernels": len(records), "seed": args.seed, "train": {}}
    for name in args.train:
        folder = seed_half(args.seed_half_dir) if name == "seed-half" else name
        train = list(writers.read_dataset(folder))
        figures = {}
        for task in args.tasks.split(","):
            if not score.applicable(records, task):
                continue
            try:
                figures[task] = measure(records, task, train, args.seed)
            except ValueError as exc:  # no training record has the task's fields (a purpose, say)
                print(name, task, f"not measured: {exc}", file=sys.stderr, flush=True)
                continue
            print(name, task, json.dumps(figures[task]["tiers"]["all"]), file=sys.stderr, flush=True)
        out["train"][name] = {"folder": os.path.abspath(folder), "records": len(train), "tasks": figures}
        print(table(f"{name} ({len(train)} records)", figures) + "\n")
        if args.output:  # after each training set: a long run keeps what it has
            writers.write_json(args.output, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
